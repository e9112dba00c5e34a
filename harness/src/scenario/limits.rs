//! What a scenario may ask for, and how long a run may take.
//!
//! A CI gate must finish. Two clocks bound a run: the scenario's own
//! (virtual on in-process runs, real on real clients) and the wall clock
//! (a run that does not move its clock: a client flooding the harness, a
//! process that never answers). Both have defaults a user would pick, a
//! scenario may raise them (`limits:`), the command line overrides both.
//!
//! The loader also rejects what can never run or never be met: a script
//! whose waits and windows add up past its time limit, counts past what
//! any scenario needs, an `at` window the script has already passed, and
//! expectations about a
//! resource never watched, a target never dialled, RPCs never sent.

use std::time::Duration;

use crate::check::duration::format_duration_in_units as format_duration;
use crate::check::{Problem, Reachable};
use crate::step::{ScriptClock, StepDef};

/// How long a run may take, on each clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The scenario's own time: the script's waits and windows, virtual on
    /// in-process runs (where they cost microseconds), real on real ones.
    pub virtual_time: Duration,
    /// Real time for one run, whatever its clock.
    pub wall_time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            virtual_time: DEFAULT_VIRTUAL_TIME,
            wall_time: DEFAULT_WALL_TIME,
        }
    }
}

/// Ten minutes of scenario time: the longest scenario here needs about
/// two (a 15 s timer, backoff, a 120 s wait); real clients live it in
/// real time, so more is rarely a test and usually a typo.
pub const DEFAULT_VIRTUAL_TIME: Duration = Duration::from_secs(10 * 60);

/// Five minutes of real time per run: the slowest real-client run here
/// takes 30 s (grpcio, a 15 s timer twice).
pub const DEFAULT_WALL_TIME: Duration = Duration::from_secs(5 * 60);

/// The most a file may raise either limit to (the command line may go
/// further): a day of virtual time (the longest any value may be), an
/// hour of real time.
pub const MAX_VIRTUAL_TIME: Duration = crate::check::MAX_DURATION;
pub const MAX_WALL_TIME: Duration = Duration::from_secs(3600);

/// The largest scenario file read: the largest here is 3 KB; a file of
/// megabytes is generated or an accident, and would be copied into
/// error messages and reports.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Steps in one file.
pub const MAX_STEPS: usize = 10_000;

pub use crate::check::MAX_COUNT;

fn at(step: &StepDef, message: String) -> Problem {
    Problem::at_position(step.location.line, step.location.column, message)
}

/// Checks the script against the time it may take: the most scenario
/// time the steps can use (every wait in full, every window to its end,
/// every RPC to its deadline) must fit in `limits.virtual_time`; each
/// step's kind says what it adds (`Kind::advance`), and an `at` window
/// must lie ahead of the least time the steps before it surely took.
///
/// Each step learns when it is due (`StepDef::scheduled`).
pub(crate) fn check_timing(steps: &mut [StepDef], limits: &Limits) -> Result<(), Problem> {
    let mut clock = ScriptClock::default();
    for step in steps {
        step.scheduled = clock.least;
        step.step
            .advance(&mut clock)
            .map_err(|message| at(step, message))?;
        if clock.most > limits.virtual_time {
            return Err(at(
                step,
                format!(
                    "by this step the script may take up to {} of scenario time, more than its \
                     limit of {} (raise it with `limits: {{virtual_time: ...}}` in the file, \
                     or --virtual-limit)",
                    format_duration(clock.most),
                    format_duration(limits.virtual_time)
                ),
            ));
        }
    }
    Ok(())
}

/// Rejects expectations that nothing in the script could cause: a
/// watcher event of a resource never watched (by name or by `*`), a dial
/// update of a target never dialled (by a `dial` or an `rpc` step), an
/// RPC result of a target no `rpc` step called. Each step's kind says
/// what it makes reachable (`Kind::reach`); `expect_none` may name
/// anything: saying that something does not happen is its point.
pub(crate) fn check_reachable(steps: &[StepDef]) -> Result<(), Problem> {
    let mut reach = Reachable::default();
    for step in steps {
        step.step
            .reach(&mut reach)
            .map_err(|message| at(step, message))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::{LoadOptions, load_str, load_str_with};

    fn error(text: &str) -> String {
        match load_str("t.yaml", text) {
            Ok(_) => panic!("loaded: {text}"),
            Err(e) => format!("{}:{}: {}", e.line, e.column, e.message),
        }
    }

    const HEAD: &str = "description: d\nservers: {main: {}}\n";

    #[test]
    fn a_script_longer_than_its_limit_is_rejected_where_it_crosses_it() {
        let e = error(&format!("{HEAD}steps:\n  - wait: 9m\n  - wait: 2m\n"));
        assert!(
            e.starts_with("5:5: by this step the script may take up to 11m"),
            "{e}"
        );
        // Raised in the file, it loads.
        let raised =
            format!("{HEAD}limits: {{virtual_time: 20m}}\nsteps:\n  - wait: 9m\n  - wait: 2m\n");
        let scenario = load_str("t.yaml", &raised).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(scenario.limits.virtual_time.as_secs(), 1200);
    }

    #[test]
    fn windows_and_rpcs_count_to_their_end() {
        let e = error(&format!(
            "{HEAD}steps:\n  - rpc: {{target: xds:///s, timeout: 1s, count: 700}}\n"
        ));
        assert!(
            e.contains("up to 11m40s") || e.contains("up to 700s"),
            "{e}"
        );
        let e = error(&format!(
            "{HEAD}steps:\n  - watch: {{type: CDS, name: c}}\n  - expect: {{watcher: {{type: CDS, name: c}}, within: 11m}}\n"
        ));
        assert!(e.starts_with("5:5: by this step"), "{e}");
    }

    #[test]
    fn values_past_any_limit_are_rejected_at_the_value() {
        let e = error(&format!("{HEAD}steps:\n  - wait: 25h\n"));
        assert_eq!(
            e,
            "4:11: wait: 25h is longer than any scenario may run (at most 24h)"
        );
        let e = error(&format!(
            "{HEAD}steps:\n  - rpc: {{target: xds:///s, count: 4294967295}}\n"
        ));
        assert!(
            e.contains("rpc: count: 4294967295 is more than the 10000 allowed"),
            "{e}"
        );
        let e = error(&format!("{HEAD}limits: {{wall_time: 2h}}\nsteps: []\n"));
        assert!(
            e.contains("limits.wall_time: must be more than 0s and at most 1h"),
            "{e}"
        );
    }

    #[test]
    fn an_at_window_already_passed_can_never_be_met() {
        let e = error(&format!(
            "{HEAD}steps:\n  - watch: {{type: CDS, name: c}}\n  - wait: 20s\n  - expect: {{watcher: {{type: CDS, name: c}}, at: 15s}}\n"
        ));
        assert!(
            e.starts_with(
                "6:5: expect: `at: 15s` can never be met: the steps before it wait at least 20s"
            ),
            "{e}"
        );
    }

    #[test]
    fn expectations_nothing_in_the_script_could_cause_are_rejected() {
        let e = error(&format!(
            "{HEAD}steps:\n  - watch: {{type: CDS, name: c1}}\n  - expect: {{watcher: {{type: CDS, name: c2}}}}\n"
        ));
        assert!(
            e.contains("no watch step before it watches CDS `c2`"),
            "{e}"
        );
        let e = error(&format!(
            "{HEAD}steps:\n  - expect: {{dial: {{target: xds:///a}}}}\n"
        ));
        assert!(
            e.contains("no dial or rpc step before it dials `xds:///a`"),
            "{e}"
        );
        let e = error(&format!(
            "{HEAD}steps:\n  - dial: xds:///a\n  - expect: {{rpc: {{target: xds:///a}}}}\n"
        ));
        assert!(e.contains("no rpc step before it calls `xds:///a`"), "{e}");
        // A wildcard watch covers every name; expect_none may name anything.
        load_str(
            "t.yaml",
            &format!(
                "{HEAD}steps:\n  - watch: {{type: CDS, name: \"*\"}}\n  - expect: {{watcher: {{type: CDS, name: c9}}}}\n  - expect_none: {{watcher: {{type: LDS, name: l}}, for: 1s}}\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_misspelt_client_name_is_caught_with_a_suggestion() {
        let clients = ["reference", "grpcio"].map(String::from);
        let options = LoadOptions {
            clients: Some(&clients),
            rules: None,
        };
        let error = |text: &str| match load_str_with("t.yaml", text, options) {
            Ok(_) => panic!("loaded: {text}"),
            Err(e) => format!("{}:{}: {}", e.line, e.column, e.message),
        };
        // Without a list of clients, any name goes: the loader does not
        // know which clients exist.
        load_str(
            "t.yaml",
            &format!("{HEAD}known_failures: {{grpcoi: why}}\nsteps: []\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let e = error(&format!(
            "{HEAD}known_failures: {{grpcoi: why}}\nsteps: []\n"
        ));
        assert!(
            e.starts_with("3:17: known_failures: unknown client `grpcoi` (did you mean `grpcio`?)"),
            "{e}"
        );
        let e = error(&format!(
            "{HEAD}no_snapshot_for: {{nobody: why}}\nsteps: []\n"
        ));
        assert!(
            e.contains("no_snapshot_for: unknown client `nobody`; known clients:"),
            "{e}"
        );
    }
}
