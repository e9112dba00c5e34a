//! Auto mode's SotW rules: when a stream gets a response, and what it
//! carries, so that a fake server behaves like a normal SotW control plane.
//!
//! Kept as pure functions of (subscription, store, what the stream was last
//! sent) so the rules can be read and tested without any transport.
//!
//! - LDS and CDS are full-state: `*`, or an empty name list in the first
//!   request of the type on a stream (the protocol's legacy wildcard, kept
//!   while later requests stay empty), subscribes to every resource of the
//!   type; an empty list after named ones unsubscribes from everything. A
//!   response carries every existing
//!   subscribed resource, because the client takes absence as deletion. It is
//!   sent when some subscribed resource is new or changed since the stream's
//!   last send, or one the stream was sent and still subscribes to is gone.
//! - Every other type (RDS, EDS, ...) is incremental: an empty name list
//!   subscribes to nothing, and a response carries only the subscribed
//!   resources that are new or changed. SotW cannot say "deleted" for these.
//! - The first wildcard request of a full-state type on a stream is
//!   answered even when nothing exists (an empty response), as
//!   go-control-plane's caches answer it ("We want to respond immediately
//!   for the first wildcard request in a stream, even if the response is
//!   empty; otherwise, envoy won't complete initialization"): Envoy asks
//!   for Listeners only once its wildcard CDS request is answered.
//! - Otherwise nothing is sent: no resend for a NACK, for a request that
//!   changes nothing, or for a pure unsubscription.
//!
//! Either way, afterwards the stream counts as having been sent exactly the
//! existing subscribed resources, so a resource that is unsubscribed (or
//! deleted) and later comes back is sent again.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::google::protobuf::Any;

use xds_vocabulary::resource_type::is_full_state;

use crate::resource::ServedResource;

/// A SotW stream's state for one resource type.
#[derive(Default)]
pub(crate) struct SotwType {
    pub subscription: Subscription,
    /// What auto mode last sent (or counts as sent), by name.
    pub sent: BTreeMap<String, Any>,
    /// Auto mode has answered this type on the stream.
    pub answered: bool,
}

/// The names a stream subscribes to for one type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Subscription {
    /// Every resource of the type (full-state types only).
    pub wildcard: bool,
    /// The wildcard comes from empty lists alone (legacy), not from `*`.
    legacy: bool,
    pub names: BTreeSet<String>,
}

impl Subscription {
    /// The subscription a SotW request states (each request restates all of
    /// it); `previous` is the stream's subscription before it, `None` for
    /// the first request of the type on the stream.
    pub fn from_request(
        type_url: &str,
        resource_names: &[String],
        previous: Option<&Subscription>,
    ) -> Self {
        let full_state = is_full_state(type_url);
        let legacy = full_state && resource_names.is_empty() && previous.is_none_or(|p| p.legacy);
        let wildcard = legacy || (full_state && resource_names.iter().any(|n| n == "*"));
        Self {
            wildcard,
            legacy,
            names: resource_names
                .iter()
                .filter(|name| !(full_state && *name == "*"))
                .cloned()
                .collect(),
        }
    }

    pub fn covers(&self, name: &str) -> bool {
        self.wildcard || self.names.contains(name)
    }
}

/// What auto mode does for one stream and type on a trigger.
#[derive(Debug, PartialEq)]
pub(crate) struct Decision {
    /// The resources to send, in name order; `None`: send nothing.
    pub respond: Option<Vec<ServedResource>>,
    /// What the stream counts as having been sent afterwards.
    pub sent: BTreeMap<String, Any>,
}

/// Applies the rules for `type_url` given the store's resources of that type
/// and what the stream was last sent.
pub(crate) fn decide(
    type_url: &str,
    subscription: &Subscription,
    stored: Option<&BTreeMap<String, ServedResource>>,
    sent: &BTreeMap<String, Any>,
    answered: bool,
) -> Decision {
    let existing: Vec<&ServedResource> = stored
        .into_iter()
        .flat_map(|resources| resources.values())
        .filter(|resource| subscription.covers(&resource.name))
        .collect();
    let is_new_or_changed =
        |resource: &ServedResource| sent.get(&resource.name) != Some(&resource.entry);

    let respond = if is_full_state(type_url) {
        let changed = existing.iter().any(|r| is_new_or_changed(r));
        let deleted = sent.keys().any(|name| {
            subscription.covers(name)
                && !stored.is_some_and(|resources| resources.contains_key(name))
        });
        let first_wildcard = subscription.wildcard && !answered;
        (changed || deleted || first_wildcard)
            .then(|| existing.iter().map(|r| (*r).clone()).collect())
    } else {
        let changed: Vec<ServedResource> = existing
            .iter()
            .filter(|r| is_new_or_changed(r))
            .map(|r| (*r).clone())
            .collect();
        (!changed.is_empty()).then_some(changed)
    };

    Decision {
        respond,
        sent: existing
            .into_iter()
            .map(|resource| (resource.name.clone(), resource.entry.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use xds_vocabulary::ResourceType;

    const LISTENER: &str = ResourceType::Listener.type_url();
    const ROUTE_CONFIGURATION: &str = ResourceType::RouteConfiguration.type_url();
    const CLUSTER: &str = ResourceType::Cluster.type_url();
    const CLUSTER_LOAD_ASSIGNMENT: &str = ResourceType::ClusterLoadAssignment.type_url();

    fn entry(value: u8) -> Any {
        Any {
            type_url: "t".into(),
            value: vec![value],
        }
    }

    fn store(type_url: &str, items: &[(&str, u8)]) -> BTreeMap<String, ServedResource> {
        items
            .iter()
            .map(|(name, value)| {
                (
                    name.to_string(),
                    ServedResource::raw(type_url, *name, entry(*value)),
                )
            })
            .collect()
    }

    fn sent(items: &[(&str, u8)]) -> BTreeMap<String, Any> {
        items
            .iter()
            .map(|(name, value)| (name.to_string(), entry(*value)))
            .collect()
    }

    fn names(decision: &Decision) -> Option<Vec<&str>> {
        decision
            .respond
            .as_ref()
            .map(|resources| resources.iter().map(|r| r.name.as_str()).collect())
    }

    fn sub(type_url: &str, names: &[&str]) -> Subscription {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        Subscription::from_request(type_url, &names, None)
    }

    #[test]
    fn empty_list_after_names_unsubscribes_but_keeps_a_legacy_wildcard() {
        let named = sub(CLUSTER, &["c"]);
        let after_names = Subscription::from_request(CLUSTER, &[], Some(&named));
        assert!(!after_names.wildcard && after_names.names.is_empty());
        let legacy = sub(CLUSTER, &[]);
        assert!(Subscription::from_request(CLUSTER, &[], Some(&legacy)).wildcard);
        let star = sub(CLUSTER, &["*"]);
        assert!(!Subscription::from_request(CLUSTER, &[], Some(&star)).wildcard);
    }

    #[rstest]
    #[case::lds_empty(LISTENER, &[], true)]
    #[case::cds_star(CLUSTER, &["*", "c"], true)]
    #[case::lds_named(LISTENER, &["l"], false)]
    #[case::rds_empty(ROUTE_CONFIGURATION, &[], false)]
    #[case::eds_star(CLUSTER_LOAD_ASSIGNMENT, &["*"], false)]
    fn wildcard_only_for_full_state_types(
        #[case] type_url: &str,
        #[case] names: &[&str],
        #[case] wildcard: bool,
    ) {
        assert_eq!(sub(type_url, names).wildcard, wildcard);
    }

    #[test]
    fn full_state_sends_everything_subscribed_when_one_changes() {
        let stored = store(LISTENER, &[("a", 1), ("b", 2), ("c", 3)]);
        let decision = decide(
            LISTENER,
            &sub(LISTENER, &["a", "b"]),
            Some(&stored),
            &sent(&[("a", 1), ("b", 1)]),
            true,
        );
        assert_eq!(names(&decision), Some(vec!["a", "b"]));
        assert_eq!(decision.sent, sent(&[("a", 1), ("b", 2)]));
    }

    #[test]
    fn full_state_wildcard_covers_all() {
        let stored = store(CLUSTER, &[("a", 1), ("b", 1)]);
        let decision = decide(CLUSTER, &sub(CLUSTER, &[]), Some(&stored), &sent(&[]), true);
        assert_eq!(names(&decision), Some(vec!["a", "b"]));
    }

    #[test]
    fn full_state_deletion_sends_the_rest() {
        let stored = store(LISTENER, &[("a", 1)]);
        let decision = decide(
            LISTENER,
            &sub(LISTENER, &["a", "b"]),
            Some(&stored),
            &sent(&[("a", 1), ("b", 1)]),
            true,
        );
        assert_eq!(names(&decision), Some(vec!["a"]));
        assert_eq!(decision.sent, sent(&[("a", 1)]));
    }

    #[test]
    fn full_state_deletion_of_the_last_resource_sends_an_empty_response() {
        let decision = decide(
            CLUSTER,
            &sub(CLUSTER, &[]),
            Some(&store(CLUSTER, &[])),
            &sent(&[("a", 1)]),
            true,
        );
        assert_eq!(names(&decision), Some(vec![]));
    }

    #[test]
    fn full_state_pure_unsubscription_sends_nothing_but_forgets() {
        let stored = store(LISTENER, &[("a", 1), ("b", 1)]);
        let decision = decide(
            LISTENER,
            &sub(LISTENER, &["a"]),
            Some(&stored),
            &sent(&[("a", 1), ("b", 1)]),
            true,
        );
        assert_eq!(decision.respond, None);
        assert_eq!(decision.sent, sent(&[("a", 1)]));
    }

    #[test]
    fn full_state_nothing_existing_nothing_sent() {
        let decision = decide(LISTENER, &sub(LISTENER, &["x"]), None, &sent(&[]), true);
        assert_eq!(decision.respond, None);
    }

    #[test]
    fn the_first_wildcard_request_is_answered_even_when_nothing_exists() {
        // Envoy waits for this answer before it asks for Listeners.
        let first = decide(CLUSTER, &sub(CLUSTER, &[]), None, &sent(&[]), false);
        assert_eq!(names(&first), Some(vec![]));
        let star = decide(CLUSTER, &sub(CLUSTER, &["*"]), None, &sent(&[]), false);
        assert_eq!(names(&star), Some(vec![]));
        // Once: an answered stream hears again only of changes.
        let again = decide(CLUSTER, &sub(CLUSTER, &[]), None, &sent(&[]), true);
        assert_eq!(again.respond, None);
        // Names alone are not the wildcard: nothing exists, nothing is sent.
        let named = decide(CLUSTER, &sub(CLUSTER, &["x"]), None, &sent(&[]), false);
        assert_eq!(named.respond, None);
    }

    #[test]
    fn incremental_sends_only_new_or_changed() {
        let stored = store(ROUTE_CONFIGURATION, &[("a", 1), ("b", 2), ("c", 1)]);
        let decision = decide(
            ROUTE_CONFIGURATION,
            &sub(ROUTE_CONFIGURATION, &["a", "b", "c"]),
            Some(&stored),
            &sent(&[("a", 1), ("b", 1)]),
            true,
        );
        assert_eq!(names(&decision), Some(vec!["b", "c"]));
        assert_eq!(decision.sent, sent(&[("a", 1), ("b", 2), ("c", 1)]));
    }

    #[test]
    fn incremental_empty_names_mean_nothing() {
        let stored = store(CLUSTER_LOAD_ASSIGNMENT, &[("a", 1)]);
        let decision = decide(
            CLUSTER_LOAD_ASSIGNMENT,
            &sub(CLUSTER_LOAD_ASSIGNMENT, &[]),
            Some(&stored),
            &sent(&[]),
            true,
        );
        assert_eq!(decision.respond, None);
        assert!(decision.sent.is_empty());
    }

    #[test]
    fn incremental_deletion_is_silent_and_forgotten() {
        let stored = store(CLUSTER_LOAD_ASSIGNMENT, &[("a", 1)]);
        let decision = decide(
            CLUSTER_LOAD_ASSIGNMENT,
            &sub(CLUSTER_LOAD_ASSIGNMENT, &["a", "b"]),
            Some(&stored),
            &sent(&[("a", 1), ("b", 1)]),
            true,
        );
        assert_eq!(decision.respond, None);
        assert_eq!(decision.sent, sent(&[("a", 1)]));
    }
}
