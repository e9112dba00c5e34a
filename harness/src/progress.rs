//! Live progress of `run` and `matrix`: a line per run as it finishes
//! (verdict, scenario, client, and the reason of anything but a pass), and
//! on a terminal a bar per client under the lines. Not on a terminal (CI,
//! a pipe) the lines alone, so logs read the same as the screen.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use xds_conformance_reports::Verdict;
use xds_vocabulary::cut::{cut, printable};

use crate::schedule::Finished;

/// How much of a reason a progress line shows.
const REASON_WIDTH: usize = 160;

/// Prints progress; share it with the workers as a `&dyn Fn` through
/// [`Progress::report`].
pub struct Progress {
    bars: Option<Bars>,
}

struct Bars {
    multi: MultiProgress,
    per_client: Mutex<BTreeMap<String, ProgressBar>>,
}

impl Progress {
    /// Bars when stdout is a terminal, plain lines otherwise.
    pub fn new() -> Progress {
        let bars = std::io::stdout().is_terminal().then(|| Bars {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stdout()),
            per_client: Mutex::default(),
        });
        Progress { bars }
    }

    /// Tells of one finished run.
    pub fn report(&self, finished: &Finished<'_>) {
        let line = line(finished);
        let Some(bars) = &self.bars else {
            println!("{line}");
            return;
        };
        let mut per_client = bars.per_client.lock().unwrap_or_else(|e| e.into_inner());
        let bar = per_client
            .entry(finished.client.to_string())
            .or_insert_with(|| {
                let bar = bars.multi.add(ProgressBar::new(finished.total as u64));
                bar.set_style(
                    ProgressStyle::with_template("{prefix:>12} [{bar:40}] {pos}/{len} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                bar.set_prefix(finished.client.to_string());
                bar
            });
        bar.set_position(finished.done as u64);
        // Above the bars, so the lines stay when the bars go.
        let _ = bars.multi.println(line);
    }

    /// Removes the bars (the lines stay).
    pub fn finish(&self) {
        if let Some(bars) = &self.bars {
            let per_client = bars.per_client.lock().unwrap_or_else(|e| e.into_inner());
            for bar in per_client.values() {
                bar.finish_and_clear();
            }
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

/// `[  12/289] pass          a46/...   reference    0.0s  reason`.
pub fn line(finished: &Finished<'_>) -> String {
    let verdict = &finished.outcome.verdict;
    let reason = match verdict {
        Verdict::Pass => "",
        Verdict::NotApplicable { reason } | Verdict::KnownFailure { reason, .. } => reason,
        Verdict::Divergent { note } => note,
        Verdict::Fail { message }
        | Verdict::Error { message }
        | Verdict::Interrupted { message }
        | Verdict::Flaky { message, .. } => message.lines().next().unwrap_or(""),
    };
    let reason = if reason.is_empty() {
        String::new()
    } else {
        // A client's message may carry escape sequences: shown, not obeyed.
        format!("  {}", printable(&cut(reason, REASON_WIDTH)))
    };
    format!(
        "[{:>4}/{}] {:<13} {:<58} {:<10} {:>8.1}s{reason}",
        finished.done,
        finished.total,
        verdict.label(),
        finished.scenario.name,
        finished.client,
        finished.outcome.wall_duration.as_secs_f64(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::RunOutcome;
    use crate::scenario::load_str;

    #[test]
    fn a_line_says_the_verdict_and_the_reason_of_anything_but_a_pass() {
        let scenario = load_str(
            "a46/x.yaml",
            "description: d\nservers: {main: {}}\nsteps: []\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let finished = |verdict| {
            let outcome = RunOutcome::not_run(verdict);
            line(&Finished {
                client: "grpcio",
                scenario: &scenario,
                outcome: &outcome,
                done: 3,
                total: 40,
            })
        };
        let pass = finished(Verdict::Pass);
        assert!(pass.starts_with("[   3/40] pass "), "{pass}");
        assert!(pass.trim_end().ends_with("0.0s"), "{pass}");
        let na = finished(Verdict::NotApplicable {
            reason: "the client lacks incremental (delta) xDS".into(),
        });
        assert!(na.contains("n/a") && na.ends_with("the client lacks incremental (delta) xDS"));
        let fail = finished(Verdict::Fail {
            message: format!("expected X\n{}", "timeline ".repeat(100)),
        });
        assert!(fail.ends_with("  expected X"), "{fail}");
        let long = finished(Verdict::Error {
            message: "y".repeat(500),
        });
        assert!(long.ends_with("[... 340 more bytes]"), "{long}");
    }
}
