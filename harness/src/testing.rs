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
//! `cargo test --test conformance -- a46/` runs a folder; `cargo nextest
//! run --partition hash:1/2` shards it. A scenario the client cannot play
//! (a capability it does not claim) or that its expectations skip is an
//! ignored test, with why; a known failure passes; a run its expectations
//! say fails and that passes fails.
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
use std::sync::Arc;

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

    /// A test per scenario file, named by its ID.
    pub fn trials(self) -> Vec<Trial> {
        self.cases()
            .into_iter()
            .map(|case| {
                let trial = Trial::test(case.name, case.test);
                match case.skipped {
                    // libtest-mimic shows no reason for an ignored test:
                    // the kind carries it.
                    Some(reason) => trial.with_ignored_flag(true).with_kind(reason),
                    None => trial,
                }
            })
            .collect()
    }

    /// The tests, before libtest-mimic gets them.
    fn cases(self) -> Vec<Case> {
        let files = discover(&self.scenarios).unwrap_or_else(|e| panic!("{e}"));
        let caps = (self.factory)().capabilities();
        let shared = Arc::new(self);
        files
            .into_iter()
            .map(|path| match load_file(&path) {
                Err(e) => {
                    let message = e.to_string();
                    Case {
                        name: path.display().to_string(),
                        skipped: None,
                        test: Box::new(move || Err(message.into())),
                    }
                }
                Ok(scenario) => {
                    let skipped = not_applicable(&scenario, &caps).or_else(|| {
                        scenario
                            .variants()
                            .iter()
                            .find_map(|v| shared.expectations.skip(&v.name))
                    });
                    let suite = shared.clone();
                    Case {
                        name: scenario.name.clone(),
                        skipped,
                        test: Box::new(move || suite.play(&scenario)),
                    }
                }
            })
            .collect()
    }

    /// Runs the tests as a test binary's `main` does, and exits.
    pub fn run(self) -> ! {
        libtest_mimic::run(&Arguments::from_args(), self.trials()).exit()
    }

    fn play(&self, scenario: &Scenario) -> Result<(), Failed> {
        let factory = self.factory.clone();
        let runs = crate::differential::run_variants(scenario, &move || factory());
        for (run, outcome) in runs {
            let verdict = self.expectations.apply(&run.name, outcome.verdict.clone());
            if let Some(message) = failure(&verdict) {
                return Err(format!(
                    "{} ({}): {}\n\n{message}\n\ntimeline:\n{}",
                    run.name,
                    run.source,
                    verdict.label(),
                    outcome.timeline
                )
                .into());
            }
            if let Some(dir) = &self.snapshots
                && verdict == Verdict::Pass
                && run.snapshot
            {
                compare_snapshot(dir, &run, &outcome)?;
            }
        }
        Ok(())
    }
}

/// One test: its name, why it is not run (if it is not), and the test.
struct Case {
    name: String,
    skipped: Option<String>,
    test: Box<dyn FnOnce() -> Result<(), Failed> + Send>,
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
        assert_eq!(conclusion(suite()), (1, 1, 1));
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
        assert_eq!(conclusion(suite().expectations(&file)), (2, 0, 1));
        std::fs::write(&file, "a46/wrong-type-url: {expect: fail, reason: stale}\n")
            .expect("write");
        assert_eq!(conclusion(suite().expectations(&file)), (0, 2, 1));
    }
}
