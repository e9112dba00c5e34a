//! `applies_to`: a rule that binds only gRPC clients (or only proxies) is
//! n/a on any other client, with the scenario's reason, and is played, and
//! can fail, on the clients it binds. The clients are the reference client
//! as it is (a gRPC client) and claiming to be a proxy, as Envoy is.

use std::sync::Arc;

use xds_client_under_test::broken::Broken;
use xds_client_under_test::{Capabilities, ClientUnderTest, ReferenceClient};
use xds_conformance::scenario::load_str;
use xds_conformance_reports::Verdict;

#[path = "support/play_one.rs"]
mod play_one;
use play_one::play_one;

/// A scenario whose one expectation no client meets (a name never
/// served is never `changed`), so a run that is played fails.
fn scenario(applies_to: &str) -> xds_conformance::scenario::Scenario {
    load_str(
        "applies-to.yaml",
        &format!(
            "description: d\n{applies_to}servers:\n  main:\n    resources:\n      \
             - cluster: {{name: c1}}\nsteps:\n  - watch: {{type: CDS, name: c2}}\n  \
             - expect: {{watcher: {{type: CDS, name: c2, event: changed}}, within: 1s}}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn grpc_client() -> Box<dyn ClientUnderTest> {
    Box::new(ReferenceClient::new())
}

fn proxy() -> Box<dyn ClientUnderTest> {
    let claims = Arc::new(|caps: Capabilities| Capabilities {
        proxy: true,
        grpc_bootstrap: false,
        ..caps
    });
    let pass = Arc::new(|_: &xds_client_under_test::broken::Command<'_>| None);
    Box::new(Broken::new(ReferenceClient::new(), "proxy", pass).claiming(claims))
}

const GRPC_ONLY: &str =
    "applies_to: {clients: grpc, because: \"gRFC A57 describes gRPC's XdsClient\"}\n";

#[test]
fn a_grpc_rule_is_na_on_a_proxy_with_its_reason() {
    let outcome = play_one(&scenario(GRPC_ONLY), &proxy, "proxy");
    let Verdict::NotApplicable { reason } = &outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert!(reason.contains("binds gRPC clients only"), "{reason}");
    assert!(
        reason.contains("gRFC A57 describes gRPC's XdsClient"),
        "{reason}"
    );
    // The matrix groups it under the rule, as it groups a lacking
    // capability.
    assert_eq!(outcome.missing, ["a rule for gRPC clients only"]);
}

#[test]
fn a_grpc_rule_is_played_on_a_grpc_client_and_can_fail() {
    let outcome = play_one(&scenario(GRPC_ONLY), &grpc_client, "reference");
    assert!(
        matches!(outcome.verdict, Verdict::Fail { .. }),
        "{:?}",
        outcome.verdict
    );
}

#[test]
fn a_proxy_rule_is_na_on_a_grpc_client_and_played_on_a_proxy() {
    let rule = "applies_to: {clients: proxy, because: \"Envoy's listener docs\"}\n";
    let on_grpc = play_one(&scenario(rule), &grpc_client, "reference").verdict;
    assert!(
        matches!(on_grpc, Verdict::NotApplicable { .. }),
        "{on_grpc:?}"
    );
    let on_proxy = play_one(&scenario(rule), &proxy, "proxy").verdict;
    assert!(matches!(on_proxy, Verdict::Fail { .. }), "{on_proxy:?}");
}

#[test]
fn without_applies_to_every_client_is_bound() {
    for (client, name) in [(grpc_client as fn() -> _, "reference"), (proxy, "proxy")] {
        let verdict = play_one(&scenario(""), &client, name).verdict;
        assert!(
            matches!(verdict, Verdict::Fail { .. }),
            "{name}: {verdict:?}"
        );
    }
}

/// A client that claims a Kuma zone and nothing else, as kuma-cp does.
fn kds_only_zone() -> Box<dyn ClientUnderTest> {
    let claims = Arc::new(|_: Capabilities| Capabilities {
        kds_zone: true,
        ..Capabilities::default()
    });
    let pass = Arc::new(|_: &xds_client_under_test::broken::Command<'_>| None);
    Box::new(Broken::new(ReferenceClient::new(), "kuma", pass).claiming(claims))
}

#[test]
fn a_zone_that_speaks_kds_alone_is_told_it_lacks_xds_before_whom_a_rule_binds() {
    for applies_to in ["", GRPC_ONLY] {
        let outcome = play_one(&scenario(applies_to), &kds_only_zone, "kuma");
        let Verdict::NotApplicable { reason } = &outcome.verdict else {
            panic!("{applies_to:?}: {:?}", outcome.verdict);
        };
        assert_eq!(
            reason,
            &format!("the client lacks {}", xds_conformance::runner::KDS_ONLY),
            "{applies_to:?}"
        );
    }
}
