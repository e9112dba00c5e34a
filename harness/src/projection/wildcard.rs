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
//! - `expect_none` of such a request (a wildcard request is no evidence
//!   that the client did not ask for a name);
//! - a request inside `in_order` (a sequence has no alternative to carry
//!   the divergence);
//! - `delta_request` matchers (they check what only delta requests say:
//!   `resource_names_subscribe` and `initial_resource_versions` by name).

use std::borrow::Cow;

use xds_client_under_test::Capabilities;
use xds_vocabulary::ResourceType;

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
/// not a name).
fn names_listeners_or_clusters(m: &RequestMatcher) -> bool {
    matches!(
        m.resource_type,
        Some(ResourceType::Listener | ResourceType::Cluster)
    ) && m
        .names
        .as_ref()
        .is_some_and(|names| names.iter().any(|n| n != "*"))
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
    fn a_client_naming_its_subscriptions_sees_the_scenario_as_written() {
        let scenario = load_str("s.yaml", SCENARIO).unwrap();
        let caps = Capabilities {
            named_lds_cds: true,
            ..Capabilities::default()
        };
        assert!(matches!(project(&scenario, &caps), Cow::Borrowed(_)));
    }
}
