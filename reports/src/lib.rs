//! Report renderers of xds-conformance: JUnit XML for CI systems and a
//! Markdown summary for people, from the results of one run.
//!
//! It must not know how results were produced (scenario files, runner,
//! clients): it renders the [`RunReport`] it is given.

mod escape;
pub mod matrix;
mod matrix_glance;
pub mod matrix_html;
mod matrix_lacks;
pub mod matrix_md;
#[cfg(test)]
mod matrix_sample;
pub mod matrix_write;
pub mod paths;
pub mod spec_tally;
pub mod specs;
pub mod svg;
mod whole;

pub use matrix_html::{matrix_html, matrix_html_in};
pub use matrix_md::matrix_markdown;
pub use matrix_write::write_matrix;
pub use svg::{timeline_svg, timeline_svg_marked};
pub use whole::{check_writable, write_whole};

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use quick_junit::{
    NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite,
};

/// One run: every scenario against one client.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunReport {
    pub client: String,
    pub results: Vec<ScenarioReport>,
    pub wall_duration: Duration,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioReport {
    /// e.g. `a46/nack-keeps-valid-resources`.
    pub name: String,
    pub description: String,
    pub spec: Vec<String>,
    /// The scenario file.
    pub source: String,
    pub verdict: Verdict,
    /// Virtual (scenario) time covered.
    pub virtual_duration: Duration,
    pub wall_duration: Duration,
    /// The rendered timeline, one event per line.
    pub timeline: String,
    /// Tries that failed before the one reported (a real-time run retried,
    /// see [`Verdict::Flaky`]), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_tries: Vec<FailedTry>,
    /// What the run showed before the client's expectations were held to
    /// it, where an entry changed the verdict (a failure made a known
    /// failure, a pass made a FAIL): what `--update-expectations` reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Verdict>,
}

/// A try of a run that failed, kept when the run was tried again.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FailedTry {
    /// FAIL or ERROR, with its message.
    pub verdict: Verdict,
    pub wall_duration: Duration,
    /// Its rendered timeline.
    pub timeline: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Verdict {
    Pass,
    /// An expectation did not hold.
    Fail {
        message: String,
    },
    /// The client cannot run this scenario (a missing capability).
    NotApplicable {
        reason: String,
    },
    /// Passed through an alternative the scenario allows and marks as a
    /// divergence between clients.
    Divergent {
        note: String,
    },
    /// Failed as the scenario records for this client, with the reason.
    KnownFailure {
        reason: String,
        message: String,
    },
    /// The run itself broke (bad bootstrap, crashed client, ...).
    Error {
        message: String,
    },
    /// The run was stopped by SIGINT/SIGTERM before it finished, or never
    /// started.
    Interrupted {
        message: String,
    },
    /// A real-time run that failed and then passed when tried again, as
    /// cargo-nextest reports a retried test: it does not fail the gate,
    /// and the failed tries are kept with their timelines
    /// ([`ScenarioReport::failed_tries`]).
    Flaky {
        /// The first failed try's message.
        message: String,
        /// The try that passed (2 for a pass on the first retry).
        passed_on: u32,
    },
}

impl Verdict {
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail { .. } => "FAIL",
            Verdict::NotApplicable { .. } => "n/a",
            Verdict::Divergent { .. } => "divergent",
            Verdict::KnownFailure { .. } => "known failure",
            Verdict::Error { .. } => "ERROR",
            Verdict::Interrupted { .. } => "interrupted",
            Verdict::Flaky { .. } => "flaky",
        }
    }

    /// What it says beyond its label: a failure's message, an n/a's
    /// reason, a divergence's note; a known failure's or a flaky run's
    /// failure message. Empty for a pass.
    pub fn detail(&self) -> &str {
        match self {
            Verdict::Pass => "",
            Verdict::Fail { message }
            | Verdict::Error { message }
            | Verdict::Interrupted { message }
            | Verdict::KnownFailure { message, .. }
            | Verdict::Flaky { message, .. } => message,
            Verdict::NotApplicable { reason } => reason,
            Verdict::Divergent { note } => note,
        }
    }

    /// Whether this verdict should fail a CI gate.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Verdict::Fail { .. } | Verdict::Error { .. } | Verdict::Interrupted { .. }
        )
    }
}

impl RunReport {
    pub fn count(&self, label: &str) -> usize {
        self.results
            .iter()
            .filter(|r| r.verdict.label() == label)
            .count()
    }

    /// `3 pass, 1 divergent, 0 known failure, 2 n/a, 0 FAIL, 0 ERROR`
    /// (and `, 1 flaky` or `, 4 interrupted` when a run was).
    pub fn counts_line(&self) -> String {
        let mut line = format!(
            "{} pass, {} divergent, {} known failure, {} n/a, {} FAIL, {} ERROR",
            self.count("pass"),
            self.count("divergent"),
            self.count("known failure"),
            self.count("n/a"),
            self.count("FAIL"),
            self.count("ERROR")
        );
        for label in ["flaky", "interrupted"] {
            let n = self.count(label);
            if n > 0 {
                line.push_str(&format!(", {n} {label}"));
            }
        }
        line
    }

    pub fn failed(&self) -> bool {
        self.results.iter().any(|r| r.verdict.is_failure())
    }
}

/// Timeline file of a scenario, relative to the report directory.
pub fn timeline_path(scenario: &str) -> PathBuf {
    PathBuf::from("timelines").join(format!("{}.txt", scenario.replace(['/', '\\'], "__")))
}

/// Timeline file of a failed try (`try` counts from 1), beside
/// [`timeline_path`].
pub fn try_timeline_path(scenario: &str, try_number: usize) -> PathBuf {
    PathBuf::from("timelines").join(format!(
        "{}.try{try_number}.txt",
        scenario.replace(['/', '\\'], "__")
    ))
}

/// JUnit XML: one test suite per spec tag's first entry would split a
/// scenario across suites, so: one suite per client, one case per scenario,
/// its spec tags as properties, its timeline as system-out.
pub fn junit_xml(run: &RunReport) -> String {
    let mut report = Report::new("xds-conformance");
    let mut suite = TestSuite::new(format!("xds-conformance ({})", run.client));
    suite.set_time(run.wall_duration);
    for r in &run.results {
        let status = match &r.verdict {
            Verdict::Pass => TestCaseStatus::success(),
            Verdict::Fail { message } => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(first_line(message))
                    .set_description(cut(message, MAX_MESSAGE));
                s
            }
            Verdict::Error { message } => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(first_line(message))
                    .set_description(cut(message, MAX_MESSAGE));
                s
            }
            Verdict::Interrupted { message } => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_type("interrupted")
                    .set_message(first_line(message))
                    .set_description(cut(message, MAX_MESSAGE));
                s
            }
            Verdict::NotApplicable { reason } => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(cut(reason, MAX_LINE));
                s
            }
            // A divergence the scenario allows passes.
            Verdict::Divergent { .. } => TestCaseStatus::success(),
            // Passed when tried again: a success with its failed tries as
            // <flakyFailure>/<flakyError>, as nextest writes it.
            Verdict::Flaky { .. } => {
                let mut s = TestCaseStatus::success();
                for failed in &r.failed_tries {
                    let (kind, message) = match &failed.verdict {
                        Verdict::Error { message } => (NonSuccessKind::Error, message.as_str()),
                        Verdict::Fail { message } => (NonSuccessKind::Failure, message.as_str()),
                        other => (NonSuccessKind::Failure, other.label()),
                    };
                    let mut rerun = TestRerun::new(kind);
                    rerun
                        .set_time(failed.wall_duration)
                        .set_message(first_line(message))
                        .set_description(cut(message, MAX_MESSAGE))
                        .set_system_out(cut_keeping_end(&failed.timeline, MAX_JUNIT_TIMELINE));
                    s.add_rerun(rerun);
                }
                s
            }
            // A recorded known failure does not fail the gate.
            Verdict::KnownFailure { reason, message } => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!("known failure: {reason}"))
                    .set_description(cut(message, MAX_MESSAGE));
                s
            }
        };
        let mut case = TestCase::new(r.name.as_str(), status);
        case.set_classname(r.spec.first().map(String::as_str).unwrap_or("scenario"));
        case.set_time(r.wall_duration);
        case.add_property(Property::new("spec", r.spec.join(",")));
        if let Verdict::Divergent { note } = &r.verdict {
            case.add_property(Property::new("divergence", note.as_str()));
        }
        case.add_property(Property::new(
            "virtual_seconds",
            format!("{:.3}", r.virtual_duration.as_secs_f64()),
        ));
        case.add_property(Property::new("source", r.source.as_str()));
        case.set_system_out(cut_keeping_end(&r.timeline, MAX_JUNIT_TIMELINE));
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- JUnit serialization failed: {e} -->\n"))
}

/// The first line of a message, cut to [`MAX_LINE`].
fn first_line(s: &str) -> String {
    cut(s.lines().next().unwrap_or(""), MAX_LINE).into_owned()
}

/// What one failure message may take in a report. Messages quote the
/// client (its stderr, an event) and a scenario file; a few KB explain any
/// failure, megabytes only bury it.
pub const MAX_MESSAGE: usize = 64 << 10;

/// One line of a report: a JUnit message attribute, a reason in a table.
pub const MAX_LINE: usize = 1000;

/// A timeline in JUnit's system-out: CI systems load the whole XML; the
/// timeline file beside it has more.
pub const MAX_JUNIT_TIMELINE: usize = 1 << 20;

/// A timeline file: the end is kept (the run stops where it failed).
pub const MAX_TIMELINE_FILE: usize = 16 << 20;

use xds_vocabulary::cut::{cut, cut_keeping_end};

/// A Markdown summary: totals, then a table of every scenario.
pub fn markdown(run: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# xds-conformance: {}\n", run.client);
    let _ = writeln!(
        out,
        "{} scenarios: {} pass, {} flaky, {} divergent, {} known failure, {} fail, {} error, {} not applicable, {} interrupted. Wall time {:.3}s.\n",
        run.results.len(),
        run.count("pass"),
        run.count("flaky"),
        run.count("divergent"),
        run.count("known failure"),
        run.count("FAIL"),
        run.count("ERROR"),
        run.count("n/a"),
        run.count("interrupted"),
        run.wall_duration.as_secs_f64()
    );
    out.push_str("| scenario | spec | verdict | virtual | wall | timeline |\n");
    out.push_str("|---|---|---|---:|---:|---|\n");
    for r in &run.results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3}s | {:.1}ms | [timeline]({}) |",
            escape::md_inline(&r.name),
            escape::md_inline(&r.spec.join(", ")),
            r.verdict.label(),
            r.virtual_duration.as_secs_f64(),
            r.wall_duration.as_secs_f64() * 1000.0,
            escape::url_path(&timeline_path(&r.name).display().to_string())
        );
    }
    let problems: Vec<&ScenarioReport> = run
        .results
        .iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .collect();
    if !problems.is_empty() {
        out.push_str("\n## Not passing\n");
        for r in problems {
            let detail = match &r.verdict {
                Verdict::Fail { message }
                | Verdict::Error { message }
                | Verdict::Interrupted { message } => message,
                Verdict::NotApplicable { reason } => reason,
                Verdict::Divergent { note } => note,
                Verdict::KnownFailure { reason, message } => &format!("{reason}\n\n{message}"),
                Verdict::Flaky { message, passed_on } => &format!(
                    "passed on try {passed_on}, failed on {} other (timelines: {}); the first \
                     failure:\n\n{message}",
                    r.failed_tries.len(),
                    (1..=r.failed_tries.len())
                        .map(|n| try_timeline_path(&r.name, n).display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Verdict::Pass => continue,
            };
            let _ = writeln!(
                out,
                "\n### {} ({})\n\n{}",
                escape::md_inline(&r.name),
                r.verdict.label(),
                escape::md_code_block(&cut(detail.trim_end(), MAX_MESSAGE))
            );
        }
    }
    out
}

/// Writes `junit.xml`, `summary.md` and one timeline file per scenario into
/// `dir`; returns the paths written.
pub fn write_all(run: &RunReport, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir.join("timelines"))?;
    let mut written = Vec::new();
    let mut write = |path: PathBuf, text: &str| -> io::Result<()> {
        write_whole(&path, text.as_bytes())?;
        written.push(path);
        Ok(())
    };
    // The timelines first: `summary.md` and JUnit link them, and a run
    // stopped while writing must not leave a summary linking files that
    // are not there.
    for r in &run.results {
        write(
            dir.join(timeline_path(&r.name)),
            &cut_keeping_end(&r.timeline, MAX_TIMELINE_FILE),
        )?;
        for (n, failed) in r.failed_tries.iter().enumerate() {
            write(
                dir.join(try_timeline_path(&r.name, n + 1)),
                &cut_keeping_end(&failed.timeline, MAX_TIMELINE_FILE),
            )?;
        }
    }
    write(dir.join("junit.xml"), &junit_xml(run))?;
    write(dir.join("summary.md"), &markdown(run))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RunReport {
        let case = |name: &str, verdict| ScenarioReport {
            name: name.to_string(),
            description: "d".into(),
            spec: vec!["A46".into()],
            source: format!("scenarios/{name}.yaml"),
            verdict,
            virtual_duration: Duration::from_millis(15_000),
            wall_duration: Duration::from_micros(2_500),
            timeline: "   0.000s  primary  <- DiscoveryRequest CDS\n".into(),
            failed_tries: Vec::new(),
            observed: None,
        };
        RunReport {
            client: "reference".into(),
            results: vec![
                case("a46/pass", Verdict::Pass),
                case(
                    "a46/fail",
                    Verdict::Fail {
                        message: "expected X\nwithin 1s".into(),
                    },
                ),
                case(
                    "a46/na",
                    Verdict::NotApplicable {
                        reason: "needs watch API".into(),
                    },
                ),
                case(
                    "a46/err",
                    Verdict::Error {
                        message: "client crashed".into(),
                    },
                ),
                ScenarioReport {
                    failed_tries: vec![FailedTry {
                        verdict: Verdict::Fail {
                            message: "expected Y within 1s\nsaw nothing".into(),
                        },
                        wall_duration: Duration::from_millis(1_200),
                        timeline: "   0.000s  primary  <- DiscoveryRequest CDS (try 1)\n".into(),
                    }],
                    ..case(
                        "a46/flaky",
                        Verdict::Flaky {
                            message: "expected Y within 1s\nsaw nothing".into(),
                            passed_on: 2,
                        },
                    )
                },
            ],
            wall_duration: Duration::from_millis(12),
        }
    }

    #[test]
    fn junit_has_one_case_per_scenario_with_status() {
        let xml = junit_xml(&sample());
        insta::assert_snapshot!(xml);
    }

    #[test]
    fn markdown_summarises_and_details_problems() {
        let md = markdown(&sample());
        insta::assert_snapshot!(md);
    }

    #[test]
    fn failure_flags_ci() {
        let mut run = sample();
        assert!(run.failed());
        run.results.retain(|r| {
            matches!(
                r.verdict,
                Verdict::Pass | Verdict::NotApplicable { .. } | Verdict::Flaky { .. }
            )
        });
        assert_eq!(run.results.len(), 3);
        assert!(!run.failed(), "a flaky run does not fail the gate");
    }

    #[test]
    fn writes_files() {
        let dir = std::env::temp_dir().join(format!("xds-reports-test-{}", std::process::id()));
        let written = write_all(&sample(), &dir).unwrap();
        // JUnit, summary, five timelines and the flaky run's failed try.
        assert_eq!(written.len(), 8);
        assert!(
            std::fs::read_to_string(dir.join("timelines/a46__flaky.try1.txt"))
                .unwrap()
                .contains("(try 1)")
        );
        assert!(
            std::fs::read_to_string(dir.join("timelines/a46__pass.txt"))
                .unwrap()
                .contains("DiscoveryRequest")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A client can hand the harness any amount of text (its stderr in a
    /// crash message, a flood of events on the timeline): reports stay
    /// bounded and say what was cut.
    #[test]
    fn reports_are_bounded_whatever_the_input() {
        let mut run = sample();
        let huge = "x".repeat(8 << 20);
        for r in &mut run.results {
            r.timeline = format!("{huge}\nlast event\n");
            if let Verdict::Fail { message } | Verdict::Error { message } = &mut r.verdict {
                *message = format!("{huge}\nsecond line");
            }
        }
        run.results[0].timeline = format!("{}\nthe end\n", "y".repeat(MAX_TIMELINE_FILE * 2));
        let junit = junit_xml(&run);
        let per_case = MAX_JUNIT_TIMELINE + 2 * MAX_MESSAGE + MAX_LINE + 4096;
        assert!(
            junit.len() < run.results.len() * per_case,
            "{}",
            junit.len()
        );
        assert!(junit.contains("more bytes]") && junit.contains("last event"));
        let md = markdown(&run);
        assert!(
            md.len() < run.results.len() * (MAX_MESSAGE + 4096),
            "{}",
            md.len()
        );
        let dir = std::env::temp_dir().join(format!("xds-reports-cap-{}", std::process::id()));
        write_all(&run, &dir).unwrap();
        let timeline = std::fs::read_to_string(dir.join("timelines/a46__pass.txt")).unwrap();
        assert!(timeline.len() < MAX_TIMELINE_FILE + 100);
        assert!(timeline.starts_with("[... ") && timeline.ends_with("the end\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A message is the client's text: in the summary it stays inside its
    /// code block whatever it holds, and names stay in their cell.
    #[test]
    fn a_message_cannot_break_out_of_the_summary() {
        let mut run = sample();
        run.results[1].verdict = Verdict::Fail {
            message: "saw ```\n# Injected heading\n```` and \u{1b}[31m".into(),
        };
        let md = markdown(&run);
        let block = md
            .split("### a46/fail (FAIL)\n\n")
            .nth(1)
            .expect("the failure's section");
        assert!(block.starts_with("`````\n"), "{block}");
        let end = block[6..].find("\n`````").expect("the block ends") + 6;
        assert!(block[..end].contains("# Injected heading"));
        assert!(!md.contains('\u{1b}'), "{md}");
    }
}
