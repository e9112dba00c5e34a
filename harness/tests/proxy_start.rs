//! A client that connects as soon as it starts (Envoy) starts at the
//! first step that is not a server's; a proxy's `dial` is no action (it
//! subscribes from its start), so what the client sent from its start on
//! belongs to the next action, however the race between its start and
//! the script goes. Envoy's `a57/channel-keeps-serving-across-a-server-
//! restart` failed, then passed on its retry, when its EDS ACK reached the
//! server before the harness recorded the dial step: the mark of its start
//! was dropped after the dial, and the `rpc` after it looked only at what
//! followed the `rpc`.
//!
//! The client is the reference client claiming to be such a proxy; its
//! LDS request goes out at the dial, and the `wait` after it makes sure
//! the request is on the timeline before the next action.

use std::sync::Arc;

use xds_client_under_test::broken::Broken;
use xds_client_under_test::{Capabilities, ClientUnderTest, ReferenceClient};
use xds_conformance::scenario::load_str;
use xds_conformance_reports::Verdict;

#[path = "support/play_one.rs"]
mod play_one;
use play_one::play_one;

fn play(steps: &str) -> Verdict {
    let scenario = load_str(
        "proxy-start.yaml",
        &format!(
            "description: d\nservers:\n  main:\n    resources:\n      \
             - listener: {{name: svc, routes_to: c1}}\nsteps:\n{steps}"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let factory = || {
        let claims = Arc::new(|caps: Capabilities| Capabilities {
            proxy: true,
            connects_at_start: true,
            ..caps
        });
        let pass = Arc::new(|_: &xds_client_under_test::broken::Command<'_>| None);
        Box::new(Broken::new(ReferenceClient::new(), "proxy", pass).claiming(claims))
            as Box<dyn ClientUnderTest>
    };
    play_one(&scenario, &factory, "proxy").verdict
}

#[test]
fn the_first_action_after_a_proxys_dial_owns_what_it_sent_since_its_start() {
    let verdict = play(
        "  - dial: xds:///svc\n  - wait: 1s\n  \
         - set_resources: {resources: [{cluster: {name: c9}}]}\n  \
         - expect: {request: {type: LDS, kind: initial}}\n",
    );
    assert!(matches!(verdict, Verdict::Pass), "{verdict:?}");
}

#[test]
fn after_an_expectation_the_next_action_looks_only_ahead() {
    // The expectation took the start's request; what follows the next
    // action is all the next expectation sees.
    let verdict = play(
        "  - dial: xds:///svc\n  - expect: {request: {type: LDS, kind: initial}}\n  \
         - set_resources: {resources: [{cluster: {name: c9}}]}\n  \
         - expect: {request: {type: LDS, kind: initial}, within: 1s}\n",
    );
    assert!(matches!(verdict, Verdict::Fail { .. }), "{verdict:?}");
}
