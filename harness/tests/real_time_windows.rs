//! On real time an `at: t` window allows the client up to the real-time
//! lateness (300 ms) plus how late the script itself ran. After an
//! `expect_none`, whose window the harness holds 300 ms shorter than
//! written, the script's lateness must be read at that window's nominal
//! end: read when the harness got there, a script late by more than
//! 300 ms left the client no allowance at all (a grpc-go run whose
//! process started 0.43 s into the scenario failed
//! `a71/fallback-after-the-connect-timeout` with its fallback 20.006 s
//! after the watch).
//!
//! The client is the reference client on real time, its `watch` made
//! 400 ms late (as a slow process start makes it); the server delays
//! its response, which plays a client answering late by a known amount.

use std::sync::Arc;
use std::time::Duration;

use xds_client_under_test::broken::{Broken, Command};
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::runner::RunMode;
use xds_conformance::scenario::load_str;
use xds_conformance_reports::Verdict;

#[path = "support/play_one.rs"]
mod play_one;
use play_one::play_one;

/// Plays "the response comes `delay_ms` after the watch; expected at 2 s"
/// with the watch step `late_ms` late.
fn play(late_ms: u64, delay_ms: u64) -> Verdict {
    let scenario = load_str(
        "late-script.yaml",
        &format!(
            "description: d\nservers:\n  main:\n    resources:\n      - cluster: {{name: c1}}\n\
             steps:\n  - delay_responses: {{by: {delay_ms}ms}}\n  \
             - watch: {{type: CDS, name: c1}}\n  \
             - expect_none: {{watcher: {{type: CDS, name: c1, event: changed}}, for: 1.9s}}\n  \
             - expect: {{watcher: {{type: CDS, name: c1, event: changed}}, at: 2s}}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let factory = move || {
        let rule = Arc::new(move |command: &Command<'_>| {
            if matches!(command, Command::Watch(..)) {
                std::thread::sleep(Duration::from_millis(late_ms));
            }
            None
        });
        Box::new(Broken::new(ReferenceClient::new(), "late", rule).on_real_time())
            as Box<dyn ClientUnderTest>
    };
    let outcome = play_one(&scenario, &factory, "late");
    assert_eq!(outcome.mode, RunMode::RealTime);
    outcome.verdict
}

#[test]
fn a_client_within_the_allowance_passes_after_a_late_step() {
    // Script 400 ms late, client 100 ms late: allowed 300 + 400 ms.
    let verdict = play(400, 2100);
    assert!(matches!(verdict, Verdict::Pass), "{verdict:?}");
}

#[test]
fn a_client_past_the_allowance_still_fails_after_a_late_step() {
    // Script 400 ms late, client 450 ms late.
    let verdict = play(400, 2450);
    assert!(matches!(verdict, Verdict::Fail { .. }), "{verdict:?}");
}

#[test]
fn a_client_within_the_allowance_passes_on_time() {
    let verdict = play(0, 2100);
    assert!(matches!(verdict, Verdict::Pass), "{verdict:?}");
}
