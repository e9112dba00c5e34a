//! Auto mode's incremental rules (delta ADS and KDS's
//! `GlobalToZoneSync` alike): what a delta stream subscribes to, which
//! version of each resource the client holds, and what a good control
//! plane sends it. Pure functions of (subscription, what the client holds,
//! store), so the rules can be read and tested without any transport.
//!
//! Subscriptions (Envoy's `xds_protocol`, "How the client specifies what
//! resources to return", and its delta example):
//! - `resource_names_subscribe` adds names, `resource_names_unsubscribe`
//!   removes them; `*` in either list starts or ends a wildcard, for any
//!   type (Kuma's KDS subscribes `*` to its own types).
//! - The first request of LDS or CDS on a stream with both lists empty is
//!   the legacy wildcard. It survives later subscriptions to names; only
//!   unsubscribing `*` ends it.
//! - Only the first request of a type on a stream carries
//!   `initial_resource_versions`: the versions the client holds. They are
//!   taken as they are; a name held but not covered by the subscription
//!   (Envoy lists wildcard members there) is simply not sent.
//!
//! What is sent:
//! - Each covered resource that exists and whose version differs from what
//!   the client holds (or that it does not hold), as its own `Resource`.
//! - `removed_resources`: covered names the client holds that no longer
//!   exist. Names subscribed that never existed are not announced (as
//!   go-control-plane; the client's does-not-exist timer decides), so a
//!   delta client meets the same timers as a SotW one.
//! - A subscription to a name sends it again even if the client holds its
//!   version ("the server *must* still provide those resources"), except
//!   in the first request of a stream, where `initial_resource_versions`
//!   says what the client already has.
//! - Unsubscribing a name while a wildcard covers it resends it, or removes
//!   it if it is gone (the spec's exception: the client cannot otherwise
//!   know whether to keep it).
//! - The first request of a type on a stream that claims versions gets an
//!   answer even when every claim is current: an empty response, which
//!   tells the client its claims hold (go-control-plane answers an empty
//!   first wildcard request likewise). Without it a client reconnecting
//!   to an unchanged server would never hear from it, and could not tell
//!   a working stream from a silent one.
//! - The first wildcard request of a type on a stream is answered even
//!   when nothing exists, for the same reason (go-control-plane: "We want
//!   to respond immediately for the first wildcard request in a stream,
//!   even if the response is empty; otherwise, envoy won't complete
//!   initialization").
//! - Nothing for a NACK, an ACK, or a request that changes nothing new. The
//!   client counts as holding what was sent, NACKed or not (as
//!   go-control-plane): a rejected resource goes again when it changes.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryRequest;
use xds_vocabulary::resource_type::is_full_state;

use crate::resource::ServedResource;
use crate::subscribed::SubscribedNames;
pub(crate) use crate::subscribed::WILDCARD;

/// A delta stream's state for one resource type.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct DeltaType {
    pub subscription: DeltaSubscription,
    /// What the server takes the client to hold, by name: `Some(version)`,
    /// or `None` for "it may hold something: tell it" (set when a wildcard
    /// covers a name the client just unsubscribed).
    pub held: BTreeMap<String, Option<String>>,
    /// The stream's first request claimed versions and has had no answer.
    answer_owed: bool,
}

/// What a delta stream subscribes to for one type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeltaSubscription {
    /// The names and the wildcard, as each recorded request shows them.
    pub names: SubscribedNames,
    /// The wildcard is the legacy one (an empty first request), and no
    /// name was subscribed since.
    legacy: bool,
}

impl DeltaSubscription {
    pub fn covers(&self, name: &str) -> bool {
        self.names.covers(name)
    }
}

impl DeltaType {
    /// Applies a request; `first`: the stream's first request of the type.
    pub fn apply(&mut self, request: &DeltaDiscoveryRequest, first: bool) {
        let subscription = &mut self.subscription;
        if first
            && is_full_state(&request.type_url)
            && request.resource_names_subscribe.is_empty()
            && request.resource_names_unsubscribe.is_empty()
        {
            subscription.names.set_wildcard(true);
            subscription.legacy = true;
        }
        for name in &request.resource_names_subscribe {
            subscription.legacy = false;
            if name == WILDCARD {
                subscription.names.set_wildcard(true);
            } else {
                subscription.names.insert(name);
                if !first {
                    // Resent even if the client holds it (see the module).
                    self.held.remove(name);
                }
            }
        }
        for name in &request.resource_names_unsubscribe {
            if name == WILDCARD {
                subscription.names.set_wildcard(false);
                subscription.legacy = false;
            } else if subscription.names.remove(name) {
                if subscription.names.wildcard() {
                    self.held.insert(name.clone(), None);
                } else {
                    self.held.remove(name);
                }
            }
        }
        if first {
            for (name, version) in &request.initial_resource_versions {
                self.held.insert(name.clone(), Some(version.clone()));
            }
            // A first wildcard request is answered even when nothing
            // exists, as go-control-plane does (see the SotW rules).
            self.answer_owed =
                !request.initial_resource_versions.is_empty() || self.subscription.names.wildcard();
        }
    }

    /// Owes the client an answer even if there is nothing to send (an
    /// empty response); see `IncrementalStream::ANSWERS_EVERY_FIRST_REQUEST`.
    pub fn owe_an_answer(&mut self) {
        self.answer_owed = true;
    }

    /// What to send given the store's resources of the type and their
    /// versions; `None` when nothing is owed. `only`: the names that may
    /// have changed (a store change's, a request's), so an update costs
    /// what changed, not what the type holds; `None` looks at everything.
    pub fn decide<'a>(
        &self,
        stored: Option<&'a BTreeMap<String, ServedResource>>,
        version_of: impl Fn(&str) -> String,
        only: Option<&BTreeSet<String>>,
    ) -> Option<DeltaDecision<'a>> {
        let mut decision = DeltaDecision::default();
        let mut consider = |name: &str, resource: Option<&'a ServedResource>| {
            if !self.subscription.covers(name) {
                return;
            }
            match resource {
                Some(resource) => {
                    let version = version_of(name);
                    if self.held.get(name) != Some(&Some(version.clone())) {
                        decision.send.push((resource, version));
                    }
                }
                None if self.held.contains_key(name) => decision.removed.push(name.to_string()),
                None => {}
            }
        };
        match only {
            Some(names) => {
                for name in names {
                    consider(name, stored.and_then(|s| s.get(name)));
                }
            }
            None => {
                for (name, resource) in stored.into_iter().flatten() {
                    consider(name, Some(resource));
                }
                for name in self.held.keys() {
                    if !stored.is_some_and(|s| s.contains_key(name)) {
                        consider(name, None);
                    }
                }
            }
        }
        (!decision.send.is_empty() || !decision.removed.is_empty() || self.answer_owed)
            .then_some(decision)
    }

    /// The client now holds what `decision` sent.
    pub fn sent(&mut self, decision: &DeltaDecision<'_>) {
        self.answer_owed = false;
        for (resource, version) in &decision.send {
            self.held
                .insert(resource.name.clone(), Some(version.clone()));
        }
        for name in &decision.removed {
            self.held.remove(name);
        }
    }
}

/// What one auto-mode delta response carries.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct DeltaDecision<'a> {
    /// Resources with their versions, in name order.
    pub send: Vec<(&'a ServedResource, String)>,
    pub removed: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::google::protobuf::Any;
    use xds_vocabulary::ResourceType;

    const CDS: &str = ResourceType::Cluster.type_url();
    const EDS: &str = ResourceType::ClusterLoadAssignment.type_url();

    fn request(type_url: &str, subscribe: &[&str], unsubscribe: &[&str]) -> DeltaDiscoveryRequest {
        DeltaDiscoveryRequest {
            type_url: type_url.into(),
            resource_names_subscribe: subscribe.iter().map(|s| s.to_string()).collect(),
            resource_names_unsubscribe: unsubscribe.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn store(type_url: &str, names: &[&str]) -> BTreeMap<String, ServedResource> {
        names
            .iter()
            .map(|name| {
                let entry = Any {
                    type_url: type_url.into(),
                    value: name.as_bytes().to_vec(),
                };
                (
                    name.to_string(),
                    ServedResource::raw(type_url, *name, entry),
                )
            })
            .collect()
    }

    fn sent_names(decision: &Option<DeltaDecision<'_>>) -> (Vec<String>, Vec<String>) {
        decision.as_ref().map_or((vec![], vec![]), |d| {
            (
                d.send.iter().map(|(r, _)| r.name.clone()).collect(),
                d.removed.clone(),
            )
        })
    }

    #[test]
    fn looking_only_at_changed_names_gives_what_a_full_look_gives() {
        let stored = store(CDS, &["a", "b", "c"]);
        let mut t = DeltaType::default();
        t.apply(&request(CDS, &["a", "b", "gone"], &[]), true);
        t.held.insert("gone".into(), Some("1".into()));
        let changed: BTreeSet<String> =
            ["b".to_string(), "gone".to_string(), "c".to_string()].into();
        let d = t.decide(Some(&stored), |_| "1".into(), Some(&changed));
        assert_eq!(
            sent_names(&d),
            (vec!["b".to_string()], vec!["gone".to_string()]),
            "c is not subscribed; a is not among the changed"
        );
    }

    #[test]
    fn legacy_wildcard_survives_a_subscription_until_star_is_unsubscribed() {
        let mut t = DeltaType::default();
        t.apply(&request(CDS, &[], &[]), true);
        assert_eq!(t.subscription.names, ["*"]);
        t.apply(&request(CDS, &["a"], &[]), false);
        assert_eq!(t.subscription.names, ["*", "a"]);
        t.apply(&request(CDS, &[], &["*"]), false);
        assert_eq!(t.subscription.names, ["a"]);
        t.apply(&request(CDS, &[], &["a"]), false);
        assert!(t.subscription.names.is_empty(), "no longer a wildcard");
    }

    #[test]
    fn an_empty_first_request_is_a_wildcard_only_for_lds_and_cds() {
        let mut t = DeltaType::default();
        t.apply(&request(EDS, &[], &[]), true);
        assert!(!t.subscription.names.wildcard());
        let mut t = DeltaType::default();
        t.apply(&request(EDS, &["*"], &[]), true);
        assert!(
            t.subscription.names.wildcard(),
            "explicit * works for any type"
        );
    }

    #[test]
    fn the_first_wildcard_request_is_answered_even_when_nothing_exists() {
        for subscribe in [&[][..], &["*"][..]] {
            let mut t = DeltaType::default();
            t.apply(&request(CDS, subscribe, &[]), true);
            let first = t.decide(None, |_| "1".into(), None);
            assert_eq!(sent_names(&first), (vec![], vec![]), "{subscribe:?}");
            t.sent(first.as_ref().unwrap());
            assert_eq!(t.decide(None, |_| "1".into(), None), None, "once");
        }
        // Names alone are not the wildcard: nothing exists, nothing is sent.
        let mut t = DeltaType::default();
        t.apply(&request(CDS, &["x"], &[]), true);
        assert_eq!(t.decide(None, |_| "1".into(), None), None);
    }

    #[test]
    fn only_new_or_changed_resources_travel() {
        let stored = store(CDS, &["a", "b", "c"]);
        let mut t = DeltaType::default();
        t.apply(&request(CDS, &["*"], &[]), true);
        let first = t.decide(Some(&stored), |_| "1".into(), None);
        assert_eq!(sent_names(&first).0, ["a", "b", "c"]);
        t.sent(first.as_ref().unwrap());
        assert_eq!(t.decide(Some(&stored), |_| "1".into(), None), None);
        let version = |name: &str| if name == "b" { "2".into() } else { "1".into() };
        assert_eq!(sent_names(&t.decide(Some(&stored), version, None)).0, ["b"]);
    }

    #[test]
    fn reconnecting_with_initial_versions_sends_only_differences() {
        let stored = store(CDS, &["a", "b"]);
        let mut t = DeltaType::default();
        let mut first = request(CDS, &["a", "b", "gone"], &[]);
        first.initial_resource_versions = [("a", "1"), ("b", "0"), ("gone", "1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        t.apply(&first, true);
        assert_eq!(
            sent_names(&t.decide(Some(&stored), |_| "1".into(), None)),
            (vec!["b".to_string()], vec!["gone".to_string()])
        );
    }

    #[test]
    fn current_claims_get_an_empty_answer_once() {
        let stored = store(CDS, &["a"]);
        let mut t = DeltaType::default();
        let mut first = request(CDS, &["a"], &[]);
        first.initial_resource_versions = [("a".to_string(), "1".to_string())].into();
        t.apply(&first, true);
        let d = t.decide(Some(&stored), |_| "1".into(), None);
        assert_eq!(sent_names(&d), (vec![], vec![]));
        assert!(d.is_some(), "an empty response answers the claims");
        t.sent(d.as_ref().unwrap());
        assert_eq!(t.decide(Some(&stored), |_| "1".into(), None), None);
    }

    #[test]
    fn resubscribing_resends_and_unsubscribing_forgets() {
        let stored = store(EDS, &["a"]);
        let mut t = DeltaType::default();
        t.apply(&request(EDS, &["a"], &[]), true);
        let d = t.decide(Some(&stored), |_| "1".into(), None);
        t.sent(d.as_ref().unwrap());
        t.apply(&request(EDS, &["a"], &[]), false);
        assert_eq!(
            sent_names(&t.decide(Some(&stored), |_| "1".into(), None)).0,
            ["a"]
        );
        let d = t.decide(Some(&stored), |_| "1".into(), None);
        t.sent(d.as_ref().unwrap());
        t.apply(&request(EDS, &[], &["a"]), false);
        assert_eq!(
            t.decide(Some(&stored), |_| "2".into(), None),
            None,
            "unsubscribed: nothing"
        );
        assert!(t.held.is_empty());
    }

    #[test]
    fn unsubscribing_under_a_wildcard_resends_or_removes() {
        let stored = store(CDS, &["a"]);
        let mut t = DeltaType::default();
        t.apply(&request(CDS, &["*", "a", "b"], &[]), true);
        t.held.insert("a".into(), Some("1".into()));
        t.held.insert("b".into(), Some("1".into()));
        t.apply(&request(CDS, &[], &["a", "b"]), false);
        assert_eq!(
            sent_names(&t.decide(Some(&stored), |_| "1".into(), None)),
            (vec!["a".to_string()], vec!["b".to_string()])
        );
    }

    #[test]
    fn a_deletion_is_named_once_and_a_never_existing_name_never() {
        let mut t = DeltaType::default();
        t.apply(&request(CDS, &["a", "never"], &[]), true);
        let stored = store(CDS, &["a"]);
        let d = t.decide(Some(&stored), |_| "1".into(), None);
        assert_eq!(sent_names(&d), (vec!["a".to_string()], vec![]));
        t.sent(d.as_ref().unwrap());
        let empty = store(CDS, &[]);
        let d = t.decide(Some(&empty), |_| "2".into(), None);
        assert_eq!(sent_names(&d), (vec![], vec!["a".to_string()]));
        t.sent(d.as_ref().unwrap());
        assert_eq!(t.decide(Some(&empty), |_| "2".into(), None), None);
    }
}
