//! `GlobalToZoneSync`: the zone subscribes and stores what the global
//! sends (Kuma's `pkg/kds/v2/client/stream.go` and `kds_client.go`).
//!
//! - Each consumed type's first request: `type_url` the bare type,
//!   `resource_names_subscribe: ["*"]`, no nonce, `node` with the zone as
//!   `id` and Kuma's four metadata keys. All go out before any answer.
//! - An ACK is `{type_url, response_nonce, node.id}` and nothing else.
//! - A NACK adds `resource_names_subscribe: ["*"]` and an `error_detail`
//!   naming each rejected resource and why; the valid resources of the
//!   response are stored all the same.
//! - A resource that does not decode as a `KumaResource`, a spec that does
//!   not decode as Kuma encodes it (a typed `Any` of the type's message,
//!   or JSON), or a response of a type the zone does not consume, is no
//!   NACK: it ends the connection ([`Unreadable`]).
//! - A response of a type Kuma registers is read even if the zone never
//!   subscribed to it; of a type zones may create, only resources
//!   labelled `kuma.io/origin: global` are taken, the others skipped
//!   without a NACK (Kuma's `PrefilterBy`).
//! - A resource is stored under the name it came with: a 2.14 global
//!   hash-suffixes names (`<name>-<hash>`, the given one in
//!   `kuma.io/display-name`) for a zone whose node lists `hash-suffix`,
//!   and removes it under that name ("Since renaming is happening on the
//!   KDS Server, KDS Client doesn't need to know anything about hashes",
//!   Kuma's MADR 029).
//! - A type's first response on a stream is a full sync (see
//!   `super::store`); Kuma counts it as first until it ACKs or NACKs it,
//!   which the zone does before it reads on, so "first" is per stream.

use std::collections::{BTreeSet, HashMap};

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::protobuf::{ListValue, Struct, Value, value::Kind};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use xds_vocabulary::kds::spec::Unpacked;
use xds_vocabulary::kds::zone::labels;
use xds_vocabulary::kds::{
    self, KdsName, KdsNameError, KumaResource, ZoneStoreChange, metadata, types,
};

use super::store::{Incoming, SpecValue, Sync, ZoneStore};
use super::validate::{self, Spec};
use crate::profile::ZoneDefects;

/// The subscription to every resource of a type.
pub(crate) const WILDCARD: &str = "*";

/// A response the zone cannot read: the connection ends, with no NACK.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unreadable {
    /// Kuma's words (`registry.NewList` of an unknown type).
    #[error("invalid resource type {0:?}")]
    UnknownType(String),
    #[error("{kuma_type} resource #{index}: {reason}")]
    Undecodable {
        kuma_type: String,
        index: usize,
        reason: String,
    },
}

/// What the zone answers a response with, and what it changed.
#[derive(Debug)]
pub(crate) struct Handled {
    pub reply: DeltaDiscoveryRequest,
    pub changes: Vec<ZoneStoreChange>,
    /// The NACK's message, when the reply is one.
    pub nack: Option<String>,
}

/// One `GlobalToZoneSync` stream's state.
pub(crate) struct GlobalToZone {
    zone: String,
    consumed: Vec<String>,
    /// The types whose first response on this stream was applied.
    synced: BTreeSet<String>,
    defects: ZoneDefects,
}

impl GlobalToZone {
    pub fn new(zone: &str, consumed: &[String], defects: ZoneDefects) -> Self {
        GlobalToZone {
            zone: zone.to_string(),
            consumed: consumed.to_vec(),
            synced: BTreeSet::new(),
            defects,
        }
    }

    /// The stream's first requests, one per consumed type, in order.
    pub fn subscriptions(&self, node: &Node) -> Vec<DeltaDiscoveryRequest> {
        let names = if self.defects.subscribes_without_wildcard {
            Vec::new()
        } else {
            vec![WILDCARD.to_string()]
        };
        let types = if self.defects.subscribes_to_one_type {
            1
        } else {
            usize::MAX
        };
        self.consumed
            .iter()
            .take(types)
            .map(|kuma_type| DeltaDiscoveryRequest {
                node: Some(node.clone()),
                type_url: kuma_type.clone(),
                resource_names_subscribe: names.clone(),
                ..Default::default()
            })
            .collect()
    }

    /// Stores what `response` carries, and says what to answer.
    pub fn on_response(
        &mut self,
        response: DeltaDiscoveryResponse,
        store: &mut ZoneStore,
    ) -> Result<Handled, Unreadable> {
        let kuma_type = response.type_url.clone();
        // Kuma looks the type up in its registry, not in what the zone
        // subscribed to (KDS-FACTS 4.7): a registered type is read and
        // stored like any other.
        let readable = self.consumed.contains(&kuma_type)
            || (types::registered(&kuma_type)
                && !self.defects.unsubscribed_type_drops_the_connection);
        if !readable {
            if self.defects.nack_on_undecodable {
                let message = format!("invalid resource type {kuma_type:?}");
                return Ok(Handled {
                    reply: self.nack(&response, &message),
                    changes: Vec::new(),
                    nack: Some(message),
                });
            }
            return Err(Unreadable::UnknownType(kuma_type));
        }
        let provided_by_zone = types::provided_by_zone(&kuma_type);
        let mut errors: Vec<String> = Vec::new();
        let mut incoming = Vec::new();
        let mut invalid = BTreeSet::new();
        for (index, entry) in response.resources.iter().enumerate() {
            let decoded = match &entry.resource {
                Some(any) => kds::unpack(any).map_err(|e| e.to_string()),
                None => Err("a Resource without a body".to_string()),
            };
            let resource = match decoded {
                Ok(resource) => resource,
                Err(reason) if self.defects.nack_on_undecodable => {
                    errors.push(format!("{kuma_type} resource #{index}: {reason}"));
                    continue;
                }
                Err(reason) => {
                    return Err(Unreadable::Undecodable {
                        kuma_type,
                        index,
                        reason,
                    });
                }
            };
            let name = if self.defects.stores_by_display_name {
                display_name(&resource)
            } else {
                resource.kds_name()
            };
            // The spec is decoded as Kuma's `FromAny` decodes it; a spec
            // that does not decode ends the connection like an envelope
            // that does not (Kuma's `toResources` fails `Receive`).
            let value = match validate::decode(&kuma_type, &resource) {
                Ok(Unpacked::Object(spec)) => SpecValue::Object(spec),
                Ok(Unpacked::Opaque) => SpecValue::of(&kuma_type, resource.spec.as_ref()),
                Err(reason) if self.defects.nack_on_undecodable => {
                    errors.push(format!("{kuma_type} resource #{index}: {reason}"));
                    continue;
                }
                Err(reason) => {
                    return Err(Unreadable::Undecodable {
                        kuma_type,
                        index,
                        reason: reason.to_string(),
                    });
                }
            };
            let no_rules = Spec::new();
            let spec = match &value {
                SpecValue::Object(spec) => spec,
                SpecValue::Other(_) => &no_rules,
            };
            let value = if self.defects.stores_invalid {
                Ok(value)
            } else {
                validate::check(
                    &kuma_type,
                    &resource,
                    spec,
                    !self.defects.policy_specs_unchecked,
                )
                .map(|()| value)
            };
            // Kuma's `PrefilterBy` (KDS-FACTS 4.1): of a type zones may
            // create, a resource not labelled as the global's is the
            // zone's own business: left out of the sync, not stored and no
            // error (the response is still ACKed). It runs after
            // validation, as Kuma validates the whole response first.
            if value.is_ok()
                && provided_by_zone
                && !self.defects.no_origin_prefilter
                && locally_originated(&resource)
            {
                continue;
            }
            match value {
                Ok(value) => incoming.push(Incoming {
                    name,
                    resource,
                    value,
                }),
                Err(why) => {
                    errors.push(format!("{kuma_type} {name}: {why}"));
                    invalid.insert(name);
                }
            }
        }
        let removed: Vec<KdsName> = response
            .removed_resources
            .iter()
            .filter_map(|text| removed_name(text))
            .collect();
        // Defects::zone.reads_state_of_the_world: every response is a full
        // sync.
        let full_sync =
            self.synced.insert(kuma_type.clone()) || self.defects.reads_state_of_the_world;
        // A type zones cannot create (Mesh) is the global's: its copy
        // replaces the zone's, and a full sync deletes zone-made ones too
        // ("we prefer global over zone", KDS-FACTS 4.2).
        let global_wins = (!provided_by_zone && !self.defects.mesh_kept_over_global)
            || self.defects.global_overwrites_zone_origin;
        let applied = store.apply_global(
            &kuma_type,
            incoming,
            &invalid,
            &removed,
            Sync {
                full: full_sync,
                global_wins,
            },
            &self.defects,
        );
        for (name, why) in &applied.rejected {
            errors.push(format!("{kuma_type} {name}: {why}"));
        }
        let nack = (!errors.is_empty()).then(|| errors.join("; "));
        let reply = match &nack {
            None => self.ack(&response),
            Some(message) => self.nack(&response, message),
        };
        Ok(Handled {
            reply,
            changes: applied.changes,
            nack,
        })
    }

    fn ack(&self, response: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
        DeltaDiscoveryRequest {
            type_url: response.type_url.clone(),
            response_nonce: if self.defects.ack_without_nonce {
                String::new()
            } else {
                response.nonce.clone()
            },
            node: Some(self.bare_node()),
            ..Default::default()
        }
    }

    /// Kuma sends code 0 and its validator's message only; the reference
    /// says INVALID_ARGUMENT and names each resource, its message still
    /// holding Kuma's words for the rule.
    fn nack(&self, response: &DeltaDiscoveryResponse, message: &str) -> DeltaDiscoveryRequest {
        DeltaDiscoveryRequest {
            type_url: response.type_url.clone(),
            response_nonce: response.nonce.clone(),
            node: Some(self.bare_node()),
            resource_names_subscribe: vec![WILDCARD.to_string()],
            error_detail: Some(RpcStatus {
                code: tonic::Code::InvalidArgument as i32,
                message: message.to_string(),
                details: Vec::new(),
            }),
            ..Default::default()
        }
    }

    fn bare_node(&self) -> Node {
        Node {
            id: self.zone.clone(),
            ..Default::default()
        }
    }
}

/// The broken zone's key for `resource`: its `kuma.io/display-name` (the
/// name before a global hash-suffixed it), else its name.
fn display_name(resource: &KumaResource) -> KdsName {
    let name = resource.kds_name();
    match resource
        .meta
        .as_ref()
        .and_then(|meta| meta.labels.get(labels::DISPLAY_NAME))
    {
        Some(display) if !display.is_empty() => KdsName::new(display.clone(), name.mesh),
        _ => name,
    }
}

/// Whether a resource is the zone's own as Kuma's prefilter reads its
/// labels (`IsLocallyOriginated`): no `kuma.io/origin`, or `zone`.
fn locally_originated(resource: &KumaResource) -> bool {
    let origin = resource
        .meta
        .as_ref()
        .and_then(|meta| meta.labels.get(labels::ORIGIN));
    origin.is_none_or(|origin| origin == labels::ORIGIN_ZONE)
}

/// A `removed_resources` entry as Kuma reads it (`stream.go:286-299`): split
/// at the last `.`; without one, a global-scoped name. An empty name can
/// name nothing the zone holds.
fn removed_name(text: &str) -> Option<KdsName> {
    match KdsName::parse(text) {
        Ok(name) => Some(name),
        Err(KdsNameError::NoMeshSeparator(_)) => Some(KdsName::global(text)),
        Err(KdsNameError::EmptyName(_)) => None,
    }
}

/// The node of a stream's first requests: Kuma's four metadata keys, with
/// small values (`stream.go:176-213`).
pub(crate) fn first_node(zone: &str, global_uri: &str, features: &[String], seed: u64) -> Node {
    let string = |s: &str| Value {
        kind: Some(Kind::StringValue(s.to_string())),
    };
    let object = |fields: Vec<(&str, Value)>| Value {
        kind: Some(Kind::StructValue(Struct {
            fields: fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<HashMap<_, _>>(),
        })),
    };
    let version = object(vec![(
        "kumaCp",
        object(vec![
            ("version", string(super::REFERENCE_VERSION)),
            ("gitTag", string("none")),
            ("gitCommit", string("none")),
            ("buildDate", string("none")),
        ]),
    )]);
    let config = serde_json::json!({
        "mode": "zone",
        "multizone": {"zone": {"name": zone, "globalAddress": global_uri}},
    })
    .to_string();
    let features = Value {
        kind: Some(Kind::ListValue(ListValue {
            values: features.iter().map(|f| string(f)).collect(),
        })),
    };
    // Kuma's is `<hostname>-<4 hex>`; the reference has no host, and its
    // hex comes from the seed so a run repeats.
    let control_plane_id = format!("{zone}-reference-{:04x}", seed & 0xffff);
    Node {
        id: zone.to_string(),
        metadata: Some(Struct {
            fields: HashMap::from([
                (metadata::VERSION.to_string(), version),
                (metadata::CONFIG.to_string(), string(&config)),
                (metadata::FEATURES.to_string(), features),
                (
                    metadata::CONTROL_PLANE_ID.to_string(),
                    string(&control_plane_id),
                ),
            ]),
        }),
        ..Default::default()
    }
}
