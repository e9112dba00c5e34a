//! The scenarios catch clients that break the rules: the reference client
//! with one rule deliberately broken (`Defects`) must fail the scenario
//! that proves that rule, at the expectation that checks it. A scenario
//! that passes on a broken client proves nothing.

use rstest::rstest;
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_file;
use xds_conformance_reports::Verdict;
use xds_reference_client::Defects;

fn defect(name: &str) -> Defects {
    let mut d = Defects::default();
    match name {
        "timer_while_connecting" => d.timer_while_connecting = true,
        "timer_from_watch" => d.timer_from_watch = true,
        "silent_stream_failures" => d.silent_stream_failures = true,
        "backoff_never_resets" => d.backoff_never_resets = true,
        "error_after_good_stream" => d.error_after_good_stream = true,
        "no_connect_timeout" => d.no_connect_timeout = true,
        "deletions_always_drop" => d.deletions_always_drop = true,
        other => panic!("unknown defect {other}"),
    }
    d
}

#[rstest]
#[case::timer_while_held(
    "timer_while_connecting",
    "a57/requests-held-before-the-handshake-start-no-timer",
    ":20:5:"
)]
#[case::timer_while_refused(
    "timer_from_watch",
    "a57/does-not-exist-timer-needs-a-connected-stream",
    ":17:5:"
)]
#[case::timer_in_backoff(
    "timer_from_watch",
    "a57/watch-during-backoff-waits-for-the-stream",
    ":21:5:"
)]
#[case::timer_across_streams(
    "timer_from_watch",
    "a57/timer-cancelled-when-the-stream-fails",
    ":24:5:"
)]
#[case::silent_uncached(
    "silent_stream_failures",
    "a57/stream-closed-before-response-uncached",
    ":19:5:"
)]
#[case::silent_cached(
    "silent_stream_failures",
    "a57/stream-closed-before-response-cached",
    ":28:5:"
)]
#[case::error_after_response(
    "error_after_good_stream",
    "a57/stream-closed-after-response-is-not-an-error",
    ":21:5:"
)]
#[case::backoff("backoff_never_resets", "a57/backoff-growth-and-reset", ":32:5:")]
#[case::blackhole(
    "no_connect_timeout",
    "a57/blackhole-times-out-the-connection-attempt",
    ":22:5:"
)]
#[case::channel_backoff(
    "backoff_never_resets",
    "a57/channel-backoff-growth-and-reset",
    ":60:5:"
)]
#[case::channel_blackhole(
    "no_connect_timeout",
    "a57/channel-blackhole-times-out-the-connection-attempt",
    ":30:5:"
)]
#[case::a53_ignored_deletion(
    "deletions_always_drop",
    "a53/ignored-listener-deletion-keeps-the-value",
    ":22:5:"
)]
#[case::a88_kept_deletion(
    "deletions_always_drop",
    "a88/deletion-is-an-ambient-not-found",
    ":21:5:"
)]
fn a_broken_rule_fails_its_scenario(
    #[case] defect_name: &str,
    #[case] scenario: &str,
    #[case] failing_at: &str,
) {
    let path = format!(
        "{}/../scenarios/{scenario}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let scenario = load_file(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{e}"));

    let good = run_scenario(&scenario, &|| {
        Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
    });
    assert_eq!(good.verdict, Verdict::Pass, "{}", good.timeline);

    let defects = defect(defect_name);
    let broken = run_scenario(&scenario, &|| {
        Box::new(ReferenceClient::with_defects(defects)) as Box<dyn ClientUnderTest>
    });
    match &broken.verdict {
        Verdict::Fail { message } => assert!(
            message.contains(failing_at),
            "{defect_name}: failed elsewhere than {failing_at}: {message}"
        ),
        other => panic!(
            "{defect_name} on {}: expected FAIL, got {other:?}\n{}",
            scenario.name, broken.timeline
        ),
    }
}
