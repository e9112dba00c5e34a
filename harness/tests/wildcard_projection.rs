//! Requests naming Listeners and Clusters, read on a client that always
//! subscribes to all of them (`projection::wildcard`), end to end through
//! the runner on the reference client presented as such a client
//! (`named_lds_cds: false`):
//!
//! - a client that does subscribe by wildcard meets the check only as a
//!   divergence, never a pass;
//! - a client that names the Cluster after all fails it, as does a
//!   wildcard request of the wrong kind;
//! - an `expect_none` of a named request stays not applicable;
//! - so does a request known only by the names it leaves subscribed (a
//!   change of subscription): a correct wildcard client never sends one,
//!   and reading it as a new wildcard request failed a correct Envoy.

use std::sync::Arc;

use xds_client_under_test::broken::Broken;
use xds_client_under_test::{Capabilities, ClientUnderTest, ReferenceClient};
use xds_conformance::projection::wildcard::DIVERGENCE;
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance_reports::Verdict;

/// The reference client, claiming to subscribe to Listeners and Clusters
/// only by wildcard (as Envoy does); what it sends is what it is told to
/// watch.
fn wildcard_only() -> Box<dyn ClientUnderTest> {
    Box::new(
        Broken::new(ReferenceClient::new(), "wildcard-only", Arc::new(|_| None)).claiming(
            Arc::new(|caps| Capabilities {
                named_lds_cds: false,
                ..caps
            }),
        ),
    )
}

/// A server holding Clusters `c1` and `c2`; the client watches `watched`,
/// then the scenario expects what a gRPC client naming `c1` sends.
fn run(watched: &str, expectation: &str) -> Verdict {
    let text = format!(
        "description: d\nprotocols: [sotw]\nservers:\n  primary:\n    resources:\n      \
         - cluster: {{ name: c1 }}\n      - cluster: {{ name: c2 }}\nsteps:\n  \
         - watch: {{ type: CDS, name: \"{watched}\" }}\n{expectation}"
    );
    let scenario = load_str("wildcard.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
    run_scenario(&scenario, &wildcard_only).verdict
}

const NAMED_INITIAL_AND_ACK: &str = "  \
    - expect: { request: { type: CDS, names: [c1], kind: initial } }\n  \
    - expect: { request: { type: CDS, names: [c1], version: \"1\", kind: ack } }\n";

#[test]
fn a_wildcard_request_meets_a_named_one_only_as_a_divergence() {
    match run("*", NAMED_INITIAL_AND_ACK) {
        Verdict::Divergent { note } => assert_eq!(note, DIVERGENCE),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_client_that_names_the_cluster_after_all_fails() {
    let verdict = run("c1", NAMED_INITIAL_AND_ACK);
    let Verdict::Fail { message } = &verdict else {
        panic!("{verdict:?}")
    };
    assert!(
        message.contains("wildcard.yaml:10:5") && message.contains("names=* (wildcard)"),
        "{message}"
    );
}

#[test]
fn a_wildcard_request_of_another_kind_fails() {
    let verdict = run(
        "*",
        "  - expect: { request: { type: CDS, names: [c1], kind: nack } }\n",
    );
    assert!(matches!(verdict, Verdict::Fail { .. }), "{verdict:?}");
}

#[test]
fn an_expect_none_of_a_named_request_is_not_applicable() {
    let verdict = run(
        "*",
        "  - expect_none: { request: { type: CDS, names: [c2] }, for: 1s }\n",
    );
    match verdict {
        Verdict::NotApplicable { reason } => {
            assert!(
                reason.contains("named Listener and Cluster subscriptions"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

/// A route change makes a gRPC client ask for `c2` too: a request known
/// only by its names. A wildcard client asks for nothing new (its
/// wildcard has every Cluster): not applicable, not a failure of the
/// correct client (it was read as "a new wildcard request", which never
/// comes).
#[test]
fn a_subscription_change_is_not_applicable_on_a_wildcard_client() {
    for expectation in [
        "  - watch: { type: CDS, name: c2 }\n  \
         - expect: { request: { type: CDS, names: [c1, c2] } }\n",
        "  - watch: { type: CDS, name: c2 }\n  \
         - expect: { request: { type: CDS, names: [c1, c2], kind: ack } }\n",
    ] {
        let verdict = run("*", expectation);
        match verdict {
            Verdict::NotApplicable { reason } => assert!(
                reason.contains("named Listener and Cluster subscriptions"),
                "{reason}"
            ),
            other => panic!("{expectation}: {other:?}"),
        }
    }
}
