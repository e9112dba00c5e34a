//! The suite as a Rust client's own tests: every scenario a test of its
//! `cargo test`, named by its run ID, held to the client's expectations
//! file, optionally compared with stored timelines.
//!
//! ```no_run
//! // tests/conformance.rs of the client's crate, with `harness = false`.
//! use xds_client_under_test::{ClientUnderTest, ReferenceClient};
//! use xds_conformance::testing::Conformance;
//!
//! fn main() {
//!     Conformance::new(|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>)
//!         .expectations(concat!(env!("CARGO_MANIFEST_DIR"), "/expectations.yaml"))
//!         .run()
//! }
//! ```
//!
//! Each run is a test, named by its run ID as the CLI's reports and
//! expectations name it (`a27/ack-fields`, `a27/ack-fields@delta`).
//! `cargo test --test conformance -- a46/ own/` runs two folders;
//! `cargo nextest run --partition hash:1/2` shards it. A run the client
//! cannot play (a capability it does not claim) or that its expectations
//! skip is an ignored test (the reasons are listed after the tests); a
//! known failure passes; a run its expectations say fails and that passes
//! fails. A failure's message stands alone: it cites timeline lines as
//! `#N`, and the timeline it prints is numbered so.
//!
//! # Writing a client for in-process, virtual-time runs
//!
//! The runner plays each scenario on a current-thread tokio runtime whose
//! clock is paused: a scenario's 15 s timers pass in microseconds and its
//! timeline is the same on every run. A client that claims
//! [`Capabilities::virtual_time`](xds_client_under_test::Capabilities)
//! must therefore:
//! - spawn its tasks on the current runtime (`tokio::spawn`) and wait
//!   with tokio's timers (`tokio::time::sleep`, `Instant`), never with
//!   `std::thread::sleep`, `std::time::Instant` or threads of its own
//!   that wait: the clock only moves when every task is idle;
//! - reach the fake servers and backends through the transport it is
//!   started with ([`ClientEnvironment::transport`](xds_client_under_test::ClientEnvironment)):
//!   `Transport::InMemory { xds, data_plane }` gives byte streams by
//!   `server_uri` and by endpoint address. A tonic client connects with
//!   [`xds_client_under_test::connect::tonic_channel`];
//! - take its randomness (backoff jitter) from `rng_seed`, and its wall
//!   clock for CSDS timestamps from `clock_epoch`.
//!
//! A client that cannot (a separate process, real threads) runs in real
//! time over TCP instead: don't claim `virtual_time`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use libtest_mimic::{Arguments, Failed, Trial};
use xds_client_under_test::ClientUnderTest;
use xds_conformance_reports::Verdict;

use crate::expectations::Expectations;
use crate::runner::{RunOutcome, not_applicable};
use crate::scenario::{Scenario, load_file};
use crate::schedule::SharedFactory;
use crate::suite::discover;

/// The scenarios this crate was built beside (`scenarios/` of its
/// repository), when they are there (a path or git dependency).
pub fn bundled_scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// The suite, for one client, as a test binary's tests.
pub struct Conformance {
    factory: Arc<SharedFactory>,
    scenarios: Vec<PathBuf>,
    expectations: Expectations,
    snapshots: Option<PathBuf>,
}

impl Conformance {
    /// Every scenario of [`bundled_scenarios`] on clients made by
    /// `factory` (a fresh one per run).
    pub fn new(factory: impl Fn() -> Box<dyn ClientUnderTest> + Send + Sync + 'static) -> Self {
        Conformance {
            factory: Arc::new(factory),
            scenarios: vec![bundled_scenarios()],
            expectations: Expectations::default(),
            snapshots: None,
        }
    }

    /// These scenario files and folders instead (your own, or a subset).
    pub fn scenarios<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.scenarios = paths.into_iter().map(Into::into).collect();
        self
    }

    /// Holds the runs to the client's expectations file (see
    /// [`crate::expectations`]). Panics, saying where, if it does not load:
    /// a test binary has no better place to say so.
    pub fn expectations(mut self, file: impl AsRef<Path>) -> Self {
        self.expectations = Expectations::load(file.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        self
    }

    /// Compares each run's timeline with an insta snapshot in `dir`
    /// (named by the run ID, `/` as `__`; `cargo insta review` accepts new
    /// ones). Virtual-time runs only: real time is not reproducible to
    /// the line.
    pub fn snapshots(mut self, dir: impl Into<PathBuf>) -> Self {
        self.snapshots = Some(dir.into());
        self
    }

    /// A test per run: the run ID (`a27/ack-fields`, and
    /// `a27/ack-fields@delta` for a file's delta run), as the CLI's
    /// reports and expectations name it. The runs of one file are played
    /// together, once, by whichever of their tests comes first (the
    /// protocols are compared), unless one is not run.
    pub fn trials(self) -> Vec<Trial> {
        self.cases()
            .into_iter()
            .map(|case| Trial::test(case.name, case.test).with_ignored_flag(case.skipped.is_some()))
            .collect()
    }

    /// The tests, before libtest-mimic gets them.
    fn cases(self) -> Vec<Case> {
        let files = discover(&self.scenarios).unwrap_or_else(|e| panic!("{e}"));
        let caps = (self.factory)().capabilities();
        let shared = Arc::new(self);
        let mut cases = Vec::new();
        for path in files {
            let scenario = match load_file(&path) {
                Ok(scenario) => scenario,
                Err(e) => {
                    let message = e.to_string();
                    cases.push(Case {
                        name: path.display().to_string(),
                        skipped: None,
                        test: Box::new(move || Err(message.into())),
                    });
                    continue;
                }
            };
            let file = Arc::new(File {
                scenario,
                runs: OnceLock::new(),
            });
            for (index, variant) in file.scenario.variants().iter().enumerate() {
                let skipped = not_applicable(variant, &caps)
                    .or_else(|| shared.expectations.skip(&variant.name));
                let (suite, file) = (shared.clone(), file.clone());
                cases.push(Case {
                    name: variant.name.clone(),
                    skipped,
                    test: Box::new(move || suite.play(&file, index)),
                });
            }
        }
        cases
    }

    /// Runs the tests as a test binary's `main` does, and exits. Takes
    /// libtest's arguments, several filters too (`-- a46/ own/`: a run
    /// matching any is run), and lists why each ignored run is not run.
    pub fn run(self) -> ! {
        let (arguments, filters) = arguments(std::env::args().collect());
        let cases = self.cases();
        let selected = |name: &str| {
            let matches = |f: &String| {
                if arguments.exact {
                    name == f
                } else {
                    name.contains(f.as_str())
                }
            };
            (filters.is_empty() || filters.iter().any(matches))
                && !arguments.skip.iter().any(|s| {
                    if arguments.exact {
                        name == s
                    } else {
                        name.contains(s.as_str())
                    }
                })
        };
        let mut why_ignored = Vec::new();
        let mut trials = Vec::new();
        for case in cases.into_iter().filter(|c| selected(&c.name)) {
            if let Some(reason) = &case.skipped {
                why_ignored.push(format!("{}: {reason}", case.name));
            }
            trials
                .push(Trial::test(case.name, case.test).with_ignored_flag(case.skipped.is_some()));
        }
        let listing = arguments.list;
        let conclusion = libtest_mimic::run(&arguments, trials);
        if !listing && !why_ignored.is_empty() && !arguments.ignored && !arguments.include_ignored {
            println!("ignored runs, and why:");
            for line in why_ignored {
                println!("    {line}");
            }
        }
        conclusion.exit()
    }

    /// The test of the `index`th run of `file`: its verdict, held to the
    /// expectations, then to its snapshot.
    fn play(&self, file: &File, index: usize) -> Result<(), Failed> {
        let runs = file.runs.get_or_init(|| {
            let factory = self.factory.clone();
            crate::schedule::run_expecting(&file.scenario, &move || factory(), &self.expectations)
        });
        let Some((run, outcome)) = runs.get(index) else {
            return Err(format!("{}: run {index} was not played", file.scenario.name).into());
        };
        if let Some(message) = failure(&outcome.verdict) {
            return Err(format!(
                "{} ({}): {}\n\n{message}\n\ntimeline (#N: line N of the timeline below):\n{}",
                run.name,
                run.source,
                outcome.verdict.label(),
                numbered(&outcome.timeline)
            )
            .into());
        }
        if let Some(dir) = &self.snapshots
            && outcome.verdict == Verdict::Pass
            && run.snapshot
        {
            compare_snapshot(dir, run, outcome)?;
        }
        Ok(())
    }
}

/// A scenario file and its runs, played once for all its tests.
struct File {
    scenario: Scenario,
    runs: OnceLock<crate::schedule::ScenarioRuns>,
}

/// One test: its name, why it is not run (if it is not), and the test.
struct Case {
    name: String,
    skipped: Option<String>,
    test: Box<dyn FnOnce() -> Result<(), Failed> + Send>,
}

/// libtest's arguments without their filters, and the filters: libtest
/// takes several (`cargo test -- a46/ own/`), libtest-mimic one.
fn arguments(args: Vec<String>) -> (Arguments, Vec<String>) {
    /// The options that take a value.
    const VALUED: &[&str] = &[
        "--test-threads",
        "--logfile",
        "--skip",
        "--color",
        "--format",
        "-Z",
    ];
    let mut rest = Vec::new();
    let mut filters = Vec::new();
    let mut args = args.into_iter();
    rest.extend(args.next());
    while let Some(arg) = args.next() {
        if VALUED.contains(&arg.as_str()) {
            rest.push(arg);
            rest.extend(args.next());
        } else if arg.starts_with('-') {
            rest.push(arg);
        } else {
            filters.push(arg);
        }
    }
    (Arguments::from_iter(rest), filters)
}

/// A timeline with each line's number, as failure messages cite them
/// (`#15`).
fn numbered(timeline: &str) -> String {
    timeline
        .lines()
        .enumerate()
        .map(|(i, line)| format!("#{:<4}{line}\n", i + 1))
        .collect()
}

/// What fails a test: FAIL, ERROR, an interrupt.
fn failure(verdict: &Verdict) -> Option<&str> {
    match verdict {
        Verdict::Fail { message }
        | Verdict::Error { message }
        | Verdict::Interrupted { message } => Some(message),
        _ => None,
    }
}

fn compare_snapshot(dir: &Path, run: &Scenario, outcome: &RunOutcome) -> Result<(), Failed> {
    let name = run.name.replace('/', "__");
    // insta reports a mismatch by panicking, after printing its diff.
    let compared = std::panic::catch_unwind(|| {
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(dir);
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.set_description(run.description.trim());
        // The header names the scenario the timeline is of.
        settings.set_input_file(&run.source);
        settings.bind(|| insta::assert_snapshot!(name.as_str(), outcome.snapshot()));
    });
    compared.map_err(|_| {
        format!(
            "{} ({}): the timeline does not match {}/{name}.snap (the diff is above; \
             `cargo insta review` to accept)",
            run.name,
            run.source,
            dir.display()
        )
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use xds_client_under_test::ReferenceClient;

    fn root() -> PathBuf {
        crate::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace")
            .to_path_buf()
    }

    /// (passed, failed, skipped): each test run as libtest-mimic would
    /// run it (called here, so nothing prints past the test's capture).
    fn conclusion(conformance: Conformance) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for case in conformance.cases() {
            match case.skipped {
                Some(_) => counts.2 += 1,
                None if (case.test)().is_ok() => counts.0 += 1,
                None => counts.1 += 1,
            }
        }
        counts
    }

    fn suite() -> Conformance {
        Conformance::new(|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>).scenarios(
            [
                root().join("scenarios/a46/wrong-type-url.yaml"),
                root().join(
                    "harness/tests/hostile/outcome-expectation-never-met-ends-in-virtual-time.yaml",
                ),
                root().join("scenarios/envoy/endpoints-move.yaml"),
            ],
        )
    }

    #[test]
    fn a_failing_run_fails_its_test_and_the_rest_are_passed_or_ignored() {
        // envoy/endpoints-move's two runs (SotW and delta) are n/a.
        assert_eq!(conclusion(suite()), (1, 1, 2));
    }

    #[test]
    fn a_test_per_run_named_by_its_run_id_and_skipped_per_run() {
        let both = || {
            Conformance::new(|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>)
                .scenarios([root().join("scenarios/a27/ack-fields.yaml")])
        };
        let names: Vec<String> = both().cases().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["a27/ack-fields", "a27/ack-fields@delta"]);
        assert_eq!(conclusion(both()), (2, 0, 0));
        // Skipping the delta run skips it alone: the SotW run still runs.
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("e.yaml");
        std::fs::write(
            &file,
            "a27/ack-fields@delta: {expect: skip, reason: hangs}\n",
        )
        .expect("write");
        let cases = both().expectations(&file).cases();
        let skipped: Vec<(&str, bool)> = cases
            .iter()
            .map(|c| (c.name.as_str(), c.skipped.is_some()))
            .collect();
        assert_eq!(
            skipped,
            [("a27/ack-fields", false), ("a27/ack-fields@delta", true)]
        );
        assert_eq!(conclusion(both().expectations(&file)), (1, 0, 1));
    }

    #[test]
    fn a_failure_stands_alone_citing_lines_of_the_timeline_it_prints() {
        let failing =
            Conformance::new(|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>)
                .scenarios([root().join(
                    "harness/tests/hostile/outcome-expectation-never-met-ends-in-virtual-time.yaml",
                )]);
        let case = failing.cases().into_iter().next().expect("one run");
        let message = (case.test)()
            .expect_err("it fails")
            .message()
            .unwrap_or_default()
            .to_string();
        // The message cites #10, and the timeline it prints has line 10.
        assert!(message.contains("#10"), "{message}");
        assert!(
            message.contains("#10  ")
                && message.contains("watcher CDS never-served: does not exist"),
            "{message}"
        );
        let cited = message
            .lines()
            .find(|l| l.starts_with("#10 "))
            .expect("line 10 is printed");
        assert!(cited.contains("does not exist"), "{cited}");
    }

    #[test]
    fn trials_are_named_by_run_id_alone_with_no_reason_as_their_kind() {
        // libtest-mimic prints a trial's kind before its name, padded to the
        // longest: a reason there padded every name to ~70 columns.
        let trials = suite().trials();
        let names: Vec<&str> = trials.iter().map(|t| t.name()).collect();
        assert!(names.contains(&"envoy/endpoints-move@delta"), "{names:?}");
        assert!(trials.iter().all(|t| t.kind().is_empty()));
        assert_eq!(trials.iter().filter(|t| t.has_ignored_flag()).count(), 2);
    }

    #[test]
    fn several_filters_are_taken_as_libtest_takes_them() {
        let args = |a: &[&str]| arguments(a.iter().map(|s| s.to_string()).collect());
        let (parsed, filters) = args(&[
            "t",
            "a46/",
            "--skip",
            "x",
            "own/",
            "--exact",
            "--test-threads",
            "2",
        ]);
        assert_eq!(filters, ["a46/", "own/"]);
        assert_eq!(parsed.skip, ["x"]);
        assert!(parsed.exact);
        assert_eq!(parsed.test_threads, Some(2));
        assert_eq!(parsed.filter, None);
    }

    #[test]
    fn expectations_turn_a_known_failure_into_a_pass_and_a_stale_one_into_a_failure() {
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("e.yaml");
        std::fs::write(
            &file,
            "outcome-expectation-never-met-ends-in-virtual-time: {expect: fail, reason: known}\n",
        )
        .expect("write");
        assert_eq!(conclusion(suite().expectations(&file)), (2, 0, 2));
        std::fs::write(&file, "a46/wrong-type-url: {expect: fail, reason: stale}\n")
            .expect("write");
        assert_eq!(conclusion(suite().expectations(&file)), (0, 2, 2));
    }
}
