//! Named Listener and Cluster requests, observed on a client that always
//! subscribes to every Listener and Cluster (Envoy).
//!
//! The xDS protocol allows both: "Envoy will always use wildcard mode for
//! Listener and Cluster resources. However, other xDS clients (such as
//! gRPC clients that use xDS) may specify explicit resource names for these
//! resource types" (envoyproxy/envoy `api/xds_protocol.rst`, "How the
//! client specifies what resources to return", "Client Behavior"). A
//! scenario written for a gRPC client expects requests naming the Listener
//! and Clusters it needs; such a client sends the wildcard request of the
//! type instead, which asks for those and for every other one.
//!
//! So an `expect` (or `any_of` alternative) of a request naming Listeners
//! or Clusters is read, on such a client, as a request of the same type,
//! kind, version and nonce whose subscription is the wildcard, and is met
//! only as a recorded **divergence** (never a pass): the wildcard cannot
//! say which resources the client wanted, nor when it began to want them.
//! What cannot be read that way stays not applicable:
//! - a request known only by the names it leaves subscribed (no kind
//!   but `ack`, no version, nonce or error): it records a change of
//!   subscription (a route now naming `c2`), which a wildcard client never
//!   sends, since its wildcard already asks for every Cluster. Only a
//!   request a response or a new stream causes (an initial request, an ACK
//!   or NACK of a given version or nonce) has a wildcard counterpart;
//! - `expect_none` of such a request (a wildcard request is no evidence
//!   that the client did not ask for a name);
//! - a request inside `in_order` (a sequence has no alternative to carry
//!   the divergence);
//! - `delta_request` matchers (they check what only delta requests say:
//!   `resource_names_subscribe` and `initial_resource_versions` by name).

use std::borrow::Cow;

use xds_client_under_test::Capabilities;
use xds_vocabulary::{RequestKind, ResourceType};

use crate::matcher::request::RequestMatcher;
use crate::matcher::{Alternative, Matcher};
use crate::scenario::Scenario;
use crate::step::Step;

/// The divergence a projected request records.
pub const DIVERGENCE: &str = "the client subscribes to every Listener and Cluster (a wildcard \
     request) where the scenario expects a request naming them; the xDS protocol allows both \
     (api/xds_protocol.rst: \"Envoy will always use wildcard mode for Listener and Cluster \
     resources\")";

/// `scenario` as a client without named Listener and Cluster
/// subscriptions is held to it: borrowed unchanged when nothing is
/// projected (or the client names them).
pub fn project<'a>(scenario: &'a Scenario, caps: &Capabilities) -> Cow<'a, Scenario> {
    if caps.named_lds_cds || !scenario.steps.iter().any(|s| expects_named(&s.step)) {
        return Cow::Borrowed(scenario);
    }
    let mut projected = scenario.clone();
    for def in &mut projected.steps {
        if let Step::Expect(expect) = &mut def.step {
            expect.matcher = projected_matcher(&expect.matcher);
        }
    }
    Cow::Owned(projected)
}

/// Whether `step` is an `expect` with a request this module projects.
fn expects_named(step: &Step) -> bool {
    match step {
        Step::Expect(expect) => match &expect.matcher {
            Matcher::Request(m) => names_listeners_or_clusters(m),
            Matcher::AnyOf(alternatives) => alternatives.iter().any(
                |a| matches!(&a.matcher, Matcher::Request(m) if names_listeners_or_clusters(m)),
            ),
            _ => false,
        },
        _ => false,
    }
}

/// A request matcher naming Listeners or Clusters (the wildcard `*` is
/// not a name) that a wildcard client has a counterpart of: one a
/// response or a new stream causes, not a change of subscription.
fn names_listeners_or_clusters(m: &RequestMatcher) -> bool {
    matches!(
        m.resource_type,
        Some(ResourceType::Listener | ResourceType::Cluster)
    ) && m
        .names
        .as_ref()
        .is_some_and(|names| names.iter().any(|n| n != "*"))
        && !records_a_subscription_change(m)
}

/// Whether a request is known only by the names it leaves subscribed: no
/// kind (or `ack`, which a SotW subscription change is, carrying the last
/// nonce), no version, no nonce, no error.
fn records_a_subscription_change(m: &RequestMatcher) -> bool {
    matches!(m.kind, None | Some(RequestKind::Ack))
        && m.version.is_none()
        && m.nonce.is_none()
        && m.error_code.is_none()
        && m.error_contains.is_empty()
}

fn projected_matcher(matcher: &Matcher) -> Matcher {
    match matcher {
        Matcher::Request(m) if names_listeners_or_clusters(m) => {
            Matcher::AnyOf(vec![Alternative {
                matcher: Matcher::Request(as_wildcard(m)),
                divergence: Some(DIVERGENCE.to_string()),
            }])
        }
        Matcher::AnyOf(alternatives) => Matcher::AnyOf(
            alternatives
                .iter()
                .map(|a| match &a.matcher {
                    Matcher::Request(m) if names_listeners_or_clusters(m) => Alternative {
                        matcher: Matcher::Request(as_wildcard(m)),
                        divergence: Some(match &a.divergence {
                            Some(note) => format!("{note}; {DIVERGENCE}"),
                            None => DIVERGENCE.to_string(),
                        }),
                    },
                    _ => a.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn as_wildcard(m: &RequestMatcher) -> RequestMatcher {
    RequestMatcher {
        names: None,
        wildcard: true,
        ..m.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    const SCENARIO: &str = "description: d\nservers:\n  primary:\n    resources:\n      \
        - cluster: { name: c1 }\nsteps:\n  - watch: { type: CDS, name: c1 }\n  \
        - expect: { request: { type: CDS, names: [c1], kind: initial } }\n  \
        - expect_none: { request: { type: CDS, names: [c2] }, for: 1s }\n  \
        - expect: { request: { type: EDS, names: [c1] } }\n";

    fn wildcard_client() -> Capabilities {
        Capabilities {
            named_lds_cds: false,
            ..Capabilities::default()
        }
    }

    #[test]
    fn a_named_cluster_request_becomes_a_wildcard_one_met_as_a_divergence() {
        let scenario = load_str("s.yaml", SCENARIO).unwrap();
        let projected = project(&scenario, &wildcard_client());
        let Step::Expect(expect) = &projected.steps[1].step else {
            panic!()
        };
        let Matcher::AnyOf(alternatives) = &expect.matcher else {
            panic!("{:?}", expect.matcher)
        };
        let [
            Alternative {
                matcher: Matcher::Request(m),
                divergence: Some(note),
            },
        ] = &alternatives[..]
        else {
            panic!("{alternatives:?}")
        };
        assert!(m.wildcard && m.names.is_none(), "{m:?}");
        assert_eq!(m.kind, Some(xds_vocabulary::RequestKind::Initial));
        assert_eq!(note, DIVERGENCE);
        // `expect_none` and other types are left as written.
        assert!(matches!(&projected.steps[2].step, Step::ExpectNone(e)
            if matches!(&e.matcher, Matcher::Request(m) if m.names.as_deref() == Some(&["c2".to_string()][..]))));
        assert!(matches!(&projected.steps[3].step, Step::Expect(e)
            if matches!(&e.matcher, Matcher::Request(m) if !m.wildcard)));
    }

    #[test]
    fn a_request_known_only_by_its_subscription_is_left_as_written() {
        for request in [
            "{ type: CDS, names: [c1, c2] }",
            "{ type: CDS, names: [c1, c2], kind: ack }",
        ] {
            let text = format!(
                "description: d\nservers:\n  primary: {{}}\nsteps:\n  \
                 - watch: {{ type: CDS, name: c1 }}\n  - expect: {{ request: {request} }}\n"
            );
            let scenario = load_str("s.yaml", &text).unwrap();
            assert!(
                matches!(project(&scenario, &wildcard_client()), Cow::Borrowed(_)),
                "{request}"
            );
        }
        // With the version it ACKs, it is the wildcard ACK's counterpart.
        let text = "description: d\nservers:\n  primary: {}\nsteps:\n  \
                    - watch: { type: CDS, name: c1 }\n  \
                    - expect: { request: { type: CDS, names: [c1], kind: ack, version: \"1\" } }\n";
        let scenario = load_str("s.yaml", text).unwrap();
        assert!(matches!(
            project(&scenario, &wildcard_client()),
            Cow::Owned(_)
        ));
    }

    #[test]
    fn a_client_naming_its_subscriptions_sees_the_scenario_as_written() {
        let scenario = load_str("s.yaml", SCENARIO).unwrap();
        let caps = Capabilities {
            named_lds_cds: true,
            ..Capabilities::default()
        };
        assert!(matches!(project(&scenario, &caps), Cow::Borrowed(_)));
    }
}
