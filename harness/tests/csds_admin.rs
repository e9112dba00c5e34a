//! `csds` checks read off Envoy's admin API (`projection::csds_admin`),
//! end to end on a real Envoy (installed into `.peers/` on first use, as
//! for the peer matrix). Each rule of the projection reads true where
//! Envoy did what the check says, and fails the run where it did not:
//!
//! - ACKED at a version: the config dump shows the resource accepted at
//!   that version;
//! - NACKED: a rejection counter moved while the responses of the type
//!   named only that resource (here, a Cluster whose update Envoy
//!   rejects);
//! - DOES_NOT_EXIST: a Cluster the dump showed is gone from it (deleted);
//! - a rejection the counters cannot attribute (two Clusters served), or
//!   a Cluster the dump never showed, makes the run not applicable, never
//!   a pass.
//!
//! Envoy runs on real time. What a run waits for and must see (Envoy's
//! start and first ACK, its NACK, a deletion in the dump) has a window of
//! 60 s: the run goes on as soon as it comes, so the window only guards a
//! hang and a busy machine only slows the test (5 s and 3 s windows made
//! the verdict a race with Envoy's start under load). The windows of the
//! checks that must fail or be not applicable stay short: they end the
//! same way however late Envoy is. A check the counters cannot attribute
//! is not applicable only at its window's end (it might still show), so
//! that one run takes its 60 s.

use xds_client_under_test::ClientUnderTest;
use xds_conformance::runner::{RunOutcome, run_scenario};
use xds_conformance::scenario::load_str;
use xds_conformance::suite::client_factory;
use xds_conformance_reports::Verdict;

/// The scenario's resources, then `steps`: a Cluster `c1` Envoy accepts at
/// version 1, whose next update Envoy rejects (CLUSTER_PROVIDED load
/// balancing on an EDS cluster).
fn scenario(name: &str, steps: &str) -> xds_conformance::scenario::Scenario {
    let text = format!(
        "description: d\nprotocols: [sotw]\nbackends: {{b1: {{}}}}\nservers:\n  primary:\n    \
         resources:\n      - listener: {{ name: svc, routes_to: c1, domains: [svc] }}\n      \
         - cluster: {{ name: c1, eds_service_name: e1 }}\n      \
         - endpoints: {{ name: e1, addresses: [\"backend:b1\"] }}\nsteps:\n{steps}"
    );
    load_str(name, &text).unwrap_or_else(|e| panic!("{e}"))
}

const REJECTED_UPDATE: &str = "  - set_resources:\n      server: primary\n      resources:\n        \
     - listener: { name: svc, routes_to: c1, domains: [svc] }\n        \
     - proto:\n            \"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n            \
     name: c1\n            type: EDS\n            lb_policy: CLUSTER_PROVIDED\n            \
     eds_cluster_config: { service_name: e1, eds_config: { ads: {}, resource_api_version: V3 } }\n        \
     - endpoints: { name: e1, addresses: [\"backend:b1\"] }\n  \
     - expect: { request: { type: CDS, kind: nack }, within: 60s }\n";

fn on_envoy(scenario: &xds_conformance::scenario::Scenario) -> RunOutcome {
    let factory = client_factory("envoy").expect("Envoy's adapter");
    run_scenario(scenario, &|| factory() as Box<dyn ClientUnderTest>)
}

#[test]
fn acked_and_nacked_read_off_the_admin_api_and_can_fail() {
    // What Envoy did: accepted version 1, rejected the next update.
    let right = scenario(
        "right.yaml",
        &format!(
            "  - expect: {{ csds: {{ type: CDS, name: c1, status: ACKED, version: \"1\" }}, within: 60s }}\n\
             {REJECTED_UPDATE}  - expect: {{ csds: {{ type: CDS, name: c1, status: NACKED }}, within: 60s }}\n"
        ),
    );
    let outcome = on_envoy(&right);
    assert_eq!(outcome.verdict, Verdict::Pass, "{}", outcome.timeline);

    // What it did not: a version it never had fails, at that check.
    let wrong_version = scenario(
        "wrong-version.yaml",
        "  - expect: { csds: { type: CDS, name: c1, status: ACKED, version: \"2\" }, within: 2s }\n",
    );
    let Verdict::Fail { message } = on_envoy(&wrong_version).verdict else {
        panic!("a version Envoy never had passed")
    };
    assert!(message.contains("wrong-version.yaml:11:5:"), "{message}");

    // Accepted is not rejected, and rejected is not accepted.
    let not_nacked = scenario(
        "not-nacked.yaml",
        "  - expect: { csds: { type: CDS, name: c1, status: ACKED }, within: 60s }\n  \
         - expect: { csds: { type: CDS, name: c1, status: NACKED }, within: 1s }\n",
    );
    let Verdict::Fail { message } = on_envoy(&not_nacked).verdict else {
        panic!("an accepted Cluster read as NACKED")
    };
    assert!(message.contains("not-nacked.yaml:12:5:"), "{message}");
    let still_acked = scenario(
        "still-acked.yaml",
        &format!(
            "  - expect: {{ csds: {{ type: CDS, name: c1, status: ACKED }}, within: 60s }}\n\
             {REJECTED_UPDATE}  - expect: {{ csds: {{ type: CDS, name: c1, status: NACKED }}, within: 60s }}\n  \
             - expect: {{ csds: {{ type: CDS, name: c1, status: ACKED }}, within: 1s }}\n"
        ),
    );
    let Verdict::Fail { message } = on_envoy(&still_acked).verdict else {
        panic!("a Cluster whose last update was rejected read as ACKED")
    };
    assert!(message.contains("still-acked.yaml:25:5:"), "{message}");
}

#[test]
fn a_rejection_of_one_of_two_clusters_is_not_applicable() {
    let two = scenario(
        "two.yaml",
        &format!(
            "  - expect: {{ csds: {{ type: CDS, name: c1, status: ACKED }}, within: 60s }}\n\
             {}  - expect: {{ csds: {{ type: CDS, name: c1, status: NACKED }}, within: 60s }}\n",
            // Its NACK waits for c2 to warm: the counter says enough.
            REJECTED_UPDATE
                .replace(
                    "        - endpoints: { name: e1",
                    "        - cluster: { name: c2, eds_service_name: e1 }\n        - endpoints: { name: e1"
                )
                .replace("  - expect: { request: { type: CDS, kind: nack }, within: 60s }\n", "")
        ),
    );
    let outcome = on_envoy(&two);
    let Verdict::NotApplicable { reason } = outcome.verdict else {
        panic!("{:?}\n{}", outcome.verdict, outcome.timeline)
    };
    assert!(reason.contains("2 CDS resources (c1, c2)"), "{reason}");
}

#[test]
fn a_deleted_cluster_does_not_exist_and_one_never_dumped_is_not_applicable() {
    // c1 shown accepted, then deleted: gone from the dump.
    let deleted = scenario(
        "deleted.yaml",
        "  - expect: { csds: { type: CDS, name: c1, status: ACKED }, within: 60s }\n  \
         - remove_resources: { type: CDS, names: [c1] }\n  \
         - expect: { csds: { type: CDS, name: c1, status: DOES_NOT_EXIST }, within: 60s }\n",
    );
    let outcome = on_envoy(&deleted);
    assert_eq!(outcome.verdict, Verdict::Pass, "{}", outcome.timeline);

    // Still served, and in the dump: it exists, and the check fails.
    let still_there = scenario(
        "still-there.yaml",
        "  - expect: { csds: { type: CDS, name: c1, status: ACKED }, within: 60s }\n  \
         - expect: { csds: { type: CDS, name: c1, status: DOES_NOT_EXIST }, within: 1s }\n",
    );
    let Verdict::Fail { message } = on_envoy(&still_there).verdict else {
        panic!("a Cluster in the dump read as DOES_NOT_EXIST")
    };
    assert!(message.contains("still-there.yaml:12:5:"), "{message}");

    // A Cluster no server has: Envoy says nothing of it.
    let never = scenario(
        "never.yaml",
        "  - expect: { csds: { type: CDS, name: c1, status: ACKED }, within: 60s }\n  \
         - expect: { csds: { type: CDS, name: c9, status: DOES_NOT_EXIST }, within: 1s }\n",
    );
    let outcome = on_envoy(&never);
    let Verdict::NotApplicable { reason } = outcome.verdict else {
        panic!("{:?}\n{}", outcome.verdict, outcome.timeline)
    };
    assert!(
        reason.contains("CDS c9 was never in the config dump"),
        "{reason}"
    );
}
