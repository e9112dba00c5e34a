//! Real-time runs tried again: a run that fails and then passes is FLAKY
//! (and does not fail the gate), with its failed try kept; one that fails
//! every try is FAIL, with its earlier tries kept; a virtual-time run is
//! never tried again (it would fail the same way).
//!
//! The client is the reference client, made to run on real time (it
//! claims no virtual time, as an external client), and broken for its
//! first N instances: it drops every watch, so an expected watcher event
//! never comes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use xds_client_under_test::broken::{Broken, Command};
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::expectations::Expectations;
use xds_conformance::runner::RunMode;
use xds_conformance::scenario::{Scenario, load_str};
use xds_conformance::schedule::{HeldTo, no_progress, run_all};
use xds_conformance_reports::Verdict;

fn scenario() -> Scenario {
    load_str(
        "retried.yaml",
        "description: d\nservers:\n  main:\n    resources:\n      - cluster: {name: c1}\n\
         steps:\n  - watch: {type: CDS, name: c1}\n  \
         - expect: {watcher: {type: CDS, name: c1, event: changed}, within: 2s}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Plays the scenario with `retries`, the first `broken` clients broken;
/// returns the one run's outcome and how many clients were made.
fn play(
    retries: u32,
    broken: usize,
    real_time: bool,
) -> (xds_conformance::runner::RunOutcome, usize) {
    let made = Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    let factory = move || {
        let drop_watches = counter.fetch_add(1, Ordering::SeqCst) < broken;
        let rule = Arc::new(move |command: &Command<'_>| {
            matches!(command, Command::Watch(..) if drop_watches).then_some(Ok(()))
        });
        let client = Broken::new(ReferenceClient::new(), "tried", rule);
        Box::new(if real_time {
            client.on_real_time()
        } else {
            client
        }) as Box<dyn ClientUnderTest>
    };
    let scenario = scenario();
    let mut runs = run_all(
        &[&scenario],
        &factory,
        1,
        retries,
        "tried",
        HeldTo::expectations(&Expectations::default()),
        &no_progress,
    );
    let (_, outcome) = runs.remove(0).remove(0);
    (outcome, made.load(Ordering::SeqCst))
}

/// Only the first try is broken. A correct try fails too when a busy
/// machine makes its `changed` later than the window: such a try is told
/// apart by its own timeline (its watch reached the server), and the run
/// passes on the try after it, so the test has tries to spare and decides
/// on the timelines, not on how fast a try was.
#[test]
fn a_real_time_run_that_fails_then_passes_is_flaky_with_its_failed_try() {
    let (outcome, made) = play(4, 1, true);
    assert_eq!(outcome.mode, RunMode::RealTime);
    let Verdict::Flaky { message, passed_on } = &outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert!(message.contains("watcher"), "{message}");
    assert!(!outcome.verdict.is_failure());
    // Every try before the passing one is kept, and none after it ran.
    assert_eq!(outcome.failed_tries.len() + 1, *passed_on as usize);
    assert_eq!(*passed_on as usize, made);
    let failed = &outcome.failed_tries[0];
    assert!(matches!(failed.verdict, Verdict::Fail { .. }));
    // The broken try's own timeline: no watch reached the server.
    assert!(
        !failed.timeline.contains("DiscoveryRequest CDS"),
        "{}",
        failed.timeline
    );
    // Any later failed try was a correct client the machine made late:
    // its watch reached the server. On an idle machine there is none.
    for late in &outcome.failed_tries[1..] {
        assert!(
            late.timeline.contains("DiscoveryRequest CDS"),
            "{}",
            late.timeline
        );
    }
    // The reported run is the passing one.
    assert!(
        outcome.timeline.contains("DiscoveryRequest CDS"),
        "{}",
        outcome.timeline
    );
}

#[test]
fn a_run_that_fails_every_try_fails_with_its_earlier_tries_kept() {
    let (outcome, made) = play(1, usize::MAX, true);
    assert!(
        matches!(outcome.verdict, Verdict::Fail { .. }),
        "{:?}",
        outcome.verdict
    );
    assert_eq!(made, 2, "one try and one retry");
    assert_eq!(
        outcome.failed_tries.len(),
        1,
        "the try before the reported one"
    );
}

#[test]
fn no_retries_and_virtual_time_are_never_tried_again() {
    let (outcome, made) = play(0, 1, true);
    assert!(matches!(outcome.verdict, Verdict::Fail { .. }));
    assert_eq!((made, outcome.failed_tries.len()), (1, 0));
    let (outcome, made) = play(2, 1, false);
    assert_eq!(outcome.mode, RunMode::Virtual);
    assert!(matches!(outcome.verdict, Verdict::Fail { .. }));
    assert_eq!((made, outcome.failed_tries.len()), (1, 0));
}
