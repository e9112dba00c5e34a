//! `ZoneToGlobalSync`: the zone is the delta server, the global its
//! client. Kuma's zone runs go-control-plane's delta server here
//! (`pkg/kds/mux/client.go:219-245`); the reference keeps its rules:
//!
//! - the global's `*` subscription to a type is answered at once with
//!   every zone-origin resource of the type (an empty response if none);
//! - nonces count per stream, "1", "2", ...; `system_version_info` is
//!   empty;
//! - after that, a response carries only what changed since the last one
//!   of the type (resources whose version changed, names removed): the
//!   zone remembers what it sent, as go-control-plane's subscription
//!   state does;
//! - a type has at most one response the global has not answered: the
//!   next goes after its ACK or NACK (go-control-plane answers a watch
//!   once, and opens the next one on the next request). So changes made
//!   meanwhile travel together, and the queue to the global is bounded by
//!   the number of types;
//! - a NACK is logged; what was sent counts as sent, so nothing goes again
//!   until the type changes.
//!
//! What goes is what Kuma's zone mappers make of a resource
//! (`pkg/kds/context/context.go:101-114` at v2.14.3; KDS-FACTS 4.5, 4.6):
//! - a resource labelled `kuma.io/kds-sync: disabled` does not go (and is
//!   removed from the global if it went before);
//! - it carries the zone's labels (`kuma.io/origin: zone`, `kuma.io/zone:
//!   <zone>`, over the given ones), without
//!   `kuma.io/deletion-grace-period-started-at`;
//! - its name is hash-suffixed (`kds::hash_suffixed` over its mesh, its
//!   display name and its zone), with the name it was given as
//!   `kuma.io/display-name`; the delta name is `<suffixed>.<mesh>`;
//! - an insight's subscriptions go with their `generation` zeroed, so a
//!   change of the generation alone changes nothing;
//! - its version is a stable hash of that content.
//!
//! Bounds: the state is per provided type (a fixed list: requests for
//! other types are ignored) and holds one version per zone-origin
//! resource. Named (non-`*`) subscriptions are not served: Kuma's global
//! subscribes `*` only.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, Resource,
};
use envoy_types::pb::google::protobuf::Any;
use xds_vocabulary::kds::spec::{self, Unpacked};
use xds_vocabulary::kds::zone::labels;
use xds_vocabulary::kds::{self, KdsName, hash_suffixed, kuma_resource, types};

use super::global_to_zone::WILDCARD;
use super::store::{Entry, ZoneStore};
use crate::observer::LogLevel;
use crate::profile::ZoneDefects;

/// What the zone knows of one type on the stream.
#[derive(Debug, Default)]
struct Served {
    subscribed: bool,
    /// The nonce of the response the global has not answered yet.
    awaiting: Option<String>,
    /// What the global was last told: the zone's name of each resource ->
    /// its version and the name it went under.
    sent: BTreeMap<KdsName, Sent>,
}

#[derive(Debug)]
struct Sent {
    version: String,
    wire_name: KdsName,
}

/// The label a zone deletes a resource with, after a grace period: the
/// zone's own bookkeeping, not for the global (Kuma's
/// `dataplane_helpers.go:101-103`).
const DELETION_GRACE: &str = "kuma.io/deletion-grace-period-started-at";
/// `disabled` keeps a resource from the global (`resource.go:307-316`).
const KDS_SYNC: &str = "kuma.io/kds-sync";
/// A Kubernetes zone's namespace label, hashed into names when present.
const NAMESPACE: &str = "k8s.kuma.io/namespace";
/// The types whose spec has `subscriptions` of `DiscoverySubscription`.
const INSIGHTS: [&str; 3] = [
    types::DATAPLANE_INSIGHT,
    types::ZONE_INGRESS_INSIGHT,
    types::ZONE_EGRESS_INSIGHT,
];

/// What the zone sends and logs after a request or a change.
#[derive(Debug, Default)]
pub(crate) struct Reaction {
    pub responses: Vec<DeltaDiscoveryResponse>,
    pub logs: Vec<(LogLevel, String)>,
}

pub(crate) struct ZoneToGlobal {
    zone: String,
    provided: BTreeSet<String>,
    types: BTreeMap<String, Served>,
    /// The last nonce given on this stream.
    nonce: u64,
    defects: ZoneDefects,
}

impl ZoneToGlobal {
    pub fn new(zone: &str, provided: &[String], defects: ZoneDefects) -> Self {
        ZoneToGlobal {
            zone: zone.to_string(),
            provided: provided.iter().cloned().collect(),
            types: BTreeMap::new(),
            nonce: 0,
            defects,
        }
    }

    /// A request of the global: a subscription, an ACK or a NACK.
    pub fn on_request(&mut self, request: &DeltaDiscoveryRequest, store: &ZoneStore) -> Reaction {
        let mut reaction = Reaction::default();
        let kuma_type = &request.type_url;
        if !self.provided.contains(kuma_type) {
            reaction.logs.push((
                LogLevel::Warning,
                format!("ZoneToGlobalSync: the global asked for {kuma_type:?}, a type this zone does not provide; ignored"),
            ));
            return reaction;
        }
        let served = self.types.entry(kuma_type.clone()).or_default();
        let named: Vec<&String> = request
            .resource_names_subscribe
            .iter()
            .filter(|n| *n != WILDCARD)
            .collect();
        if !named.is_empty() {
            reaction.logs.push((
                LogLevel::Warning,
                format!(
                    "ZoneToGlobalSync: {kuma_type}: named subscriptions are not served (only *): {named:?}"
                ),
            ));
        }
        if request
            .resource_names_unsubscribe
            .iter()
            .any(|n| n == WILDCARD)
        {
            *served = Served::default();
            return reaction;
        }
        let subscribes = request
            .resource_names_subscribe
            .iter()
            .any(|n| n == WILDCARD);
        // Any request opens the type's next response (go-control-plane
        // creates a new watch on each), whatever nonce it names.
        served.awaiting = None;
        let mut answer_even_if_empty = false;
        if subscribes && !served.subscribed {
            served.subscribed = true;
            answer_even_if_empty = true;
        }
        if let Some(detail) = &request.error_detail {
            reaction.logs.push((
                LogLevel::Warning,
                format!(
                    "ZoneToGlobalSync: the global NACKed {kuma_type} (nonce {:?}): {}",
                    request.response_nonce, detail.message
                ),
            ));
            if self.defects.resends_after_nack {
                served.sent.clear();
            }
        }
        // Defects::zone.answers_only_changes: the subscription itself is
        // left unanswered.
        let unanswered = answer_even_if_empty && self.defects.answers_only_changes;
        if served.subscribed && !unanswered {
            let kuma_type = kuma_type.clone();
            reaction
                .responses
                .extend(self.respond(&kuma_type, store, answer_even_if_empty));
        }
        reaction
    }

    /// The zone-origin resources of `changed` types changed: the global
    /// hears of it where it subscribed and is not owed an answer.
    pub fn on_change(&mut self, changed: &BTreeSet<String>, store: &ZoneStore) -> Reaction {
        let mut reaction = Reaction::default();
        for kuma_type in changed {
            let ready = self
                .types
                .get(kuma_type)
                .is_some_and(|s| s.subscribed && s.awaiting.is_none());
            if ready {
                reaction
                    .responses
                    .extend(self.respond(kuma_type, store, false));
            }
        }
        reaction
    }

    /// The response that brings the global up to date on `kuma_type`, if
    /// anything changed (or `always`).
    fn respond(
        &mut self,
        kuma_type: &str,
        store: &ZoneStore,
        always: bool,
    ) -> Option<DeltaDiscoveryResponse> {
        // Versions of everything (the global must hear of removals and
        // changes), but the wire form only of what changed: with 10,000
        // Dataplanes and one change, packing all of them dominated.
        let current: BTreeMap<&KdsName, (String, &Entry)> = store
            .zone_origin(kuma_type)
            .filter(|(_, entry)| {
                self.defects.ignores_kds_sync_label
                    || entry.labels.get(KDS_SYNC).map(String::as_str) != Some("disabled")
            })
            .map(|(name, entry)| (name, (self.version_of(kuma_type, name, entry), entry)))
            .collect();
        let sent = &self.types.get(kuma_type)?.sent;
        let went = |name: &KdsName| sent.get(name).map(|s| &s.version);
        let changed = current
            .iter()
            .any(|(name, (version, _))| went(name) != Some(version));
        let removed: Vec<String> = sent
            .iter()
            .filter(|(name, _)| !current.contains_key(name))
            .map(|(_, sent)| sent.wire_name.to_string())
            .collect();
        if !changed && removed.is_empty() && !always {
            return None;
        }
        let sends_every = self.defects.sends_every_zone_resource;
        let resources = current
            .iter()
            .filter(|(name, (version, _))| sends_every || went(name) != Some(version))
            .map(|(name, (version, entry))| self.wire(kuma_type, name, version, entry))
            .collect();
        let now_sent = current
            .iter()
            .map(|(name, (version, entry))| {
                let sent = Sent {
                    version: version.clone(),
                    wire_name: self.wire_name(name, entry),
                };
                ((*name).clone(), sent)
            })
            .collect();
        let served = self.types.get_mut(kuma_type)?;
        served.sent = now_sent;
        self.nonce += 1;
        let nonce = self.nonce.to_string();
        served.awaiting = Some(nonce.clone());
        Some(DeltaDiscoveryResponse {
            type_url: kuma_type.to_string(),
            system_version_info: String::new(),
            nonce,
            resources,
            removed_resources: removed,
            ..Default::default()
        })
    }

    /// The labels a zone-origin resource goes to the global with.
    fn wire_labels(&self, name: &KdsName, entry: &Entry) -> BTreeMap<String, String> {
        let mut wire_labels = entry.labels.clone();
        if !self.defects.keeps_deletion_grace_label {
            wire_labels.remove(DELETION_GRACE);
        }
        if !self.defects.no_zone_labels {
            wire_labels.insert(labels::ORIGIN.to_string(), labels::ORIGIN_ZONE.to_string());
            wire_labels.insert(labels::ZONE.to_string(), self.zone.clone());
        }
        if !self.defects.no_hash_suffix {
            wire_labels
                .entry(labels::DISPLAY_NAME.to_string())
                .or_insert_with(|| name.name.clone());
        }
        wire_labels
    }

    /// The name a zone-origin resource goes under: hash-suffixed over its
    /// mesh, display name and zone (and namespace), as Kuma's zone's
    /// `HashSuffixMapper(false, kuma.io/zone, k8s.kuma.io/namespace)` does.
    fn wire_name(&self, name: &KdsName, entry: &Entry) -> KdsName {
        if self.defects.no_hash_suffix {
            return name.clone();
        }
        let wire_labels = self.wire_labels(name, entry);
        let display = wire_labels
            .get(labels::DISPLAY_NAME)
            .map_or(name.name.as_str(), String::as_str);
        let values: Vec<&str> = [labels::ZONE, NAMESPACE]
            .iter()
            .filter_map(|label| wire_labels.get(*label).map(String::as_str))
            .collect();
        KdsName::new(hash_suffixed(&name.mesh, display, &values), &name.mesh)
    }

    /// The spec as it goes: an insight's subscriptions without their
    /// `generation` ("periodically increased by the status sink"; Kuma's
    /// `MapInsightResourcesZeroGeneration`, `context.go:169-192`). `None`:
    /// the spec as stored.
    fn wire_spec(&self, kuma_type: &str, entry: &Entry) -> Option<(Any, String)> {
        if self.defects.sends_insight_generation || !INSIGHTS.contains(&kuma_type) {
            return None;
        }
        let Ok(Unpacked::Object(mut object)) = spec::unpack(kuma_type, entry.spec.as_ref()?) else {
            return None;
        };
        let subscriptions = object.get_mut("subscriptions")?.as_array_mut()?;
        for subscription in subscriptions.iter_mut() {
            if let Some(fields) = subscription.as_object_mut() {
                fields.remove("generation");
            }
        }
        let packed = spec::pack(kuma_type, &object).ok()?;
        Some((packed, spec::canonical(&serde_json::Value::Object(object))))
    }

    /// A zone-origin resource's version: a hash of what the global gets.
    fn version_of(&self, kuma_type: &str, name: &KdsName, entry: &Entry) -> String {
        let canonical = match self.wire_spec(kuma_type, entry) {
            Some((_, canonical)) => canonical,
            None => entry.canonical.clone(),
        };
        version(
            &self.wire_name(name, entry),
            &self.wire_labels(name, entry),
            &canonical,
        )
    }

    /// A zone-origin resource as the global gets it.
    fn wire(&self, kuma_type: &str, name: &KdsName, version: &str, entry: &Entry) -> Resource {
        let wire_name = self.wire_name(name, entry);
        let spec = match self.wire_spec(kuma_type, entry) {
            Some((packed, _)) => Some(packed),
            None => entry.spec.clone(),
        };
        let resource = kuma_resource(&wire_name, self.wire_labels(name, entry), spec);
        Resource {
            name: wire_name.to_string(),
            version: version.to_string(),
            resource: Some(kds::pack(&resource)),
            ..Default::default()
        }
    }
}

/// A stable hash of a resource's content (64-bit FNV-1a, 16 hex digits):
/// the same content has the same version in every run and build. Kuma's
/// is a sha256; any stable hash does, as only changes are compared.
fn version(name: &KdsName, labels: &BTreeMap<String, String>, canonical_spec: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes.iter().chain([&0xffu8]) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    feed(name.to_string().as_bytes());
    for (key, value) in labels {
        feed(key.as_bytes());
        feed(value.as_bytes());
    }
    feed(canonical_spec.as_bytes());
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use envoy_types::pb::google::rpc::Status as RpcStatus;
    use xds_vocabulary::kds::spec;
    use xds_vocabulary::kds::{KdsResource, types};

    use super::*;
    use crate::kds::StoreLimits;

    const DP: &str = types::DATAPLANE;

    fn dataplane(name: &str, port: u64) -> KdsResource {
        let spec = serde_json::json!({"networking": {"inbound": [{"port": port}]}});
        KdsResource {
            kuma_type: DP.into(),
            resource: kuma_resource(
                &KdsName::new(name, "default"),
                BTreeMap::from([("team".to_string(), "a".to_string())]),
                Some(spec::pack(DP, spec.as_object().expect("object")).expect("packs")),
            ),
        }
    }

    fn subscribe(kuma_type: &str) -> DeltaDiscoveryRequest {
        DeltaDiscoveryRequest {
            type_url: kuma_type.into(),
            resource_names_subscribe: vec!["*".into()],
            ..Default::default()
        }
    }

    fn ack(response: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
        DeltaDiscoveryRequest {
            type_url: response.type_url.clone(),
            response_nonce: response.nonce.clone(),
            ..Default::default()
        }
    }

    fn zone(defects: ZoneDefects) -> ZoneToGlobal {
        let provided: Vec<String> = types::ZONE_TO_GLOBAL
            .iter()
            .map(|t| t.to_string())
            .collect();
        ZoneToGlobal::new("zone-1", &provided, defects)
    }

    fn names(response: &DeltaDiscoveryResponse) -> Vec<&str> {
        response.resources.iter().map(|r| r.name.as_str()).collect()
    }

    fn changed() -> BTreeSet<String> {
        BTreeSet::from([DP.to_string()])
    }

    #[test]
    fn a_subscription_gets_everything_then_only_changes_after_each_ack() {
        let mut store = ZoneStore::new(StoreLimits::default());
        store
            .put_zone(vec![dataplane("dp-1", 80), dataplane("dp-2", 80)])
            .expect("put");
        let mut z2g = zone(ZoneDefects::default());
        let first = z2g.on_request(&subscribe(DP), &store).responses;
        assert_eq!(first.len(), 1);
        assert_eq!(
            names(&first[0]),
            [
                "dp-1-dff6z597w47d46xx.default",
                "dp-2-xw6954dw4969cdfz.default"
            ]
        );
        assert_eq!(first[0].nonce, "1");
        assert_eq!(first[0].system_version_info, "");
        let body = kds::unpack(first[0].resources[0].resource.as_ref().expect("body"))
            .expect("a KumaResource");
        let wire_labels = body.meta.expect("meta").labels;
        assert_eq!(wire_labels["kuma.io/origin"], "zone");
        assert_eq!(wire_labels["kuma.io/zone"], "zone-1");
        assert_eq!(wire_labels["team"], "a");
        let empty = z2g
            .on_request(&subscribe(types::ZONE_INGRESS), &store)
            .responses;
        assert_eq!(empty[0].nonce, "2");
        assert!(empty[0].resources.is_empty());

        // A change while the first is unanswered waits for the ACK.
        store.put_zone(vec![dataplane("dp-1", 81)]).expect("put");
        assert!(z2g.on_change(&changed(), &store).responses.is_empty());
        let after_ack = z2g.on_request(&ack(&first[0]), &store).responses;
        assert_eq!(names(&after_ack[0]), ["dp-1-dff6z597w47d46xx.default"]);
        assert_eq!(after_ack[0].nonce, "3");
        assert_ne!(
            after_ack[0].resources[0].version,
            first[0].resources[0].version
        );

        // Removal, then an unchanged put: nothing.
        assert!(
            z2g.on_request(&ack(&after_ack[0]), &store)
                .responses
                .is_empty()
        );
        store
            .remove_zone(DP, &[KdsName::new("dp-2", "default")])
            .expect("remove");
        let removal = z2g.on_change(&changed(), &store).responses;
        assert!(removal[0].resources.is_empty());
        assert_eq!(
            removal[0].removed_resources,
            ["dp-2-xw6954dw4969cdfz.default"]
        );
        z2g.on_request(&ack(&removal[0]), &store);
        store.put_zone(vec![dataplane("dp-1", 81)]).expect("put");
        assert!(z2g.on_change(&changed(), &store).responses.is_empty());
    }

    #[test]
    fn versions_are_stable_hashes_of_content() {
        let mut a = ZoneStore::new(StoreLimits::default());
        a.put_zone(vec![dataplane("dp-1", 80)]).expect("put");
        let mut b = ZoneStore::new(StoreLimits::default());
        b.put_zone(vec![dataplane("dp-1", 80)]).expect("put");
        let version = |store: &ZoneStore| {
            zone(ZoneDefects::default())
                .on_request(&subscribe(DP), store)
                .responses[0]
                .resources[0]
                .version
                .clone()
        };
        assert_eq!(version(&a), version(&b));
        assert_eq!(version(&a).len(), 16);
    }

    #[test]
    fn a_nack_is_logged_and_nothing_goes_until_the_next_change() {
        let mut store = ZoneStore::new(StoreLimits::default());
        store.put_zone(vec![dataplane("dp-1", 80)]).expect("put");
        let nack = |response: &DeltaDiscoveryResponse| DeltaDiscoveryRequest {
            error_detail: Some(RpcStatus {
                code: 3,
                message: "bad dp".into(),
                details: vec![],
            }),
            ..ack(response)
        };
        let mut z2g = zone(ZoneDefects::default());
        let first = z2g.on_request(&subscribe(DP), &store).responses;
        let reaction = z2g.on_request(&nack(&first[0]), &store);
        assert!(reaction.responses.is_empty());
        assert!(
            reaction.logs[0].1.contains("NACKed Dataplane"),
            "{:?}",
            reaction.logs
        );
        store.put_zone(vec![dataplane("dp-2", 80)]).expect("put");
        assert_eq!(
            names(&z2g.on_change(&changed(), &store).responses[0]),
            ["dp-2-xw6954dw4969cdfz.default"]
        );

        let mut broken = zone(ZoneDefects {
            resends_after_nack: true,
            ..Default::default()
        });
        let first = broken.on_request(&subscribe(DP), &store).responses;
        let resent = broken.on_request(&nack(&first[0]), &store).responses;
        assert_eq!(
            names(&resent[0]),
            [
                "dp-1-dff6z597w47d46xx.default",
                "dp-2-xw6954dw4969cdfz.default"
            ]
        );
    }

    #[test]
    fn broken_zones_resend_everything_or_leave_out_their_labels() {
        let mut store = ZoneStore::new(StoreLimits::default());
        store
            .put_zone(vec![dataplane("dp-1", 80), dataplane("dp-2", 80)])
            .expect("put");
        let mut every = zone(ZoneDefects {
            sends_every_zone_resource: true,
            ..Default::default()
        });
        let first = every.on_request(&subscribe(DP), &store).responses;
        every.on_request(&ack(&first[0]), &store);
        store.put_zone(vec![dataplane("dp-1", 81)]).expect("put");
        let change = every.on_change(&changed(), &store).responses;
        assert_eq!(
            names(&change[0]),
            [
                "dp-1-dff6z597w47d46xx.default",
                "dp-2-xw6954dw4969cdfz.default"
            ]
        );

        let mut unlabelled = zone(ZoneDefects {
            no_zone_labels: true,
            ..Default::default()
        });
        let first = unlabelled.on_request(&subscribe(DP), &store).responses;
        let body = kds::unpack(first[0].resources[0].resource.as_ref().expect("body"))
            .expect("a KumaResource");
        assert_eq!(
            body.meta.expect("meta").labels,
            BTreeMap::from([
                ("kuma.io/display-name".to_string(), "dp-1".to_string()),
                ("team".to_string(), "a".to_string())
            ])
        );
    }

    #[test]
    fn other_types_and_named_subscriptions_are_ignored_and_logged() {
        let store = ZoneStore::new(StoreLimits::default());
        let mut z2g = zone(ZoneDefects::default());
        let other = z2g.on_request(&subscribe(types::MESH), &store);
        assert!(other.responses.is_empty() && other.logs.len() == 1);
        let named = DeltaDiscoveryRequest {
            type_url: DP.into(),
            resource_names_subscribe: vec!["dp-1.default".into()],
            ..Default::default()
        };
        let reaction = z2g.on_request(&named, &store);
        assert!(reaction.responses.is_empty() && reaction.logs.len() == 1);
        assert!(z2g.types.len() == 1, "one provided type tracked");
    }
}
