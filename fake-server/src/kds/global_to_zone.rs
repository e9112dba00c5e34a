//! `GlobalToZoneSync`: delta xDS from the global to a zone, on the
//! incremental rules; auto mode labels and names what it sends as a real
//! global does.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::google::protobuf::value::Kind;
use xds_vocabulary::kds::zone::labels;
use xds_vocabulary::kds::{self, KdsRpc, features, metadata, types};

use crate::config::ScriptedDeltaResponse;
use crate::event::ServerEvent;
use crate::handshake::KdsHandshake;
use crate::incremental::rules::DeltaType;
use crate::incremental::{DeltaWire, IncrementalStream};
use crate::state::State;
use crate::stream::{Sender, StreamKind};

/// A `GlobalToZoneSync` stream's own state: its wire, the zone's headers
/// and, per Kuma type, what the incremental rules track.
pub(crate) struct GlobalToZone {
    responses: Sender<DeltaDiscoveryResponse>,
    handshake: KdsHandshake,
    types: BTreeMap<String, DeltaType>,
    /// Whether auto mode hash-suffixes names on this stream: the node of
    /// the stream's first request lists `hash-suffix` in its `features`
    /// metadata (`None` until a request arrives).
    hash_suffix: Option<bool>,
    /// The name each resource was last sent under, by type and stored
    /// name: its removal goes under that name (the labels hashed into it
    /// are gone with the resource).
    sent_as: BTreeMap<(String, String), String>,
}

impl GlobalToZone {
    pub fn new(responses: Sender<DeltaDiscoveryResponse>, handshake: KdsHandshake) -> Self {
        Self {
            responses,
            handshake,
            types: BTreeMap::new(),
            hash_suffix: None,
            sent_as: BTreeMap::new(),
        }
    }
}

/// Whether `request`'s node lists `feature` in its `features` metadata, as
/// Kuma's global reads a zone's features (`getFeatures`,
/// `pkg/kds/v2/reconcile/snapshot_generator.go:158-164` at v2.14.3): a
/// request without a node has none.
fn node_has_feature(request: &DeltaDiscoveryRequest, feature: &str) -> bool {
    let Some(Kind::ListValue(list)) = request
        .node
        .as_ref()
        .and_then(|node| node.metadata.as_ref())
        .and_then(|fields| fields.fields.get(metadata::FEATURES))
        .and_then(|value| value.kind.as_ref())
    else {
        return false;
    };
    list.values
        .iter()
        .any(|v| matches!(&v.kind, Some(Kind::StringValue(s)) if s == feature))
}

impl DeltaWire for GlobalToZone {
    fn kind(&self) -> StreamKind {
        StreamKind::Kds(KdsRpc::GlobalToZoneSync)
    }

    fn opened(&self, stream: u64, connection: Option<u64>) -> ServerEvent {
        ServerEvent::KdsStreamOpened {
            stream,
            connection,
            rpc: KdsRpc::GlobalToZoneSync,
            handshake: self.handshake.clone(),
        }
    }

    fn responses(&self) -> &Sender<DeltaDiscoveryResponse> {
        &self.responses
    }
}

impl IncrementalStream for GlobalToZone {
    const ANSWERS_EVERY_FIRST_REQUEST: bool = true;

    fn types_mut(&mut self) -> &mut BTreeMap<String, DeltaType> {
        &mut self.types
    }

    /// Kuma's global builds a stream's snapshots for the node of the
    /// stream's first request (its watchdog is made from that request,
    /// `pkg/util/xds/v3/watchdog_callbacks.go:99-116`; the node's features
    /// are read per snapshot, `snapshot_generator.go:140-164`).
    fn request_arrived(&mut self, request: &DeltaDiscoveryRequest) {
        if self.hash_suffix.is_none() {
            self.hash_suffix = Some(node_has_feature(request, features::HASH_SUFFIX));
        }
    }

    /// A real global's mappers, in Kuma's order
    /// (`pkg/kds/context/context.go:78-98` at v2.14.3; KDS-FACTS 4.8):
    /// the first stamps `kuma.io/origin: global` on every resource, whatever
    /// label it had (other zones' resources go out as the global's); the
    /// last renames every resource of a type that is not `SkipKDSHash`, for
    /// a zone whose node lists `hash-suffix`, to `<display name>-<hash>`
    /// with `kuma.io/display-name` (`HashSuffixMapper(true, kuma.io/zone,
    /// k8s.kuma.io/namespace)`). The delta name follows the new name. An
    /// entry that is no `KumaResource` (an `undecodable` one) goes as it is.
    fn auto_resource(
        &mut self,
        type_url: &str,
        name: &str,
        entry: &Any,
    ) -> (String, Any, Option<String>) {
        let Ok(mut resource) = kds::unpack(entry) else {
            return (name.to_string(), entry.clone(), None);
        };
        resource
            .meta
            .get_or_insert_with(Default::default)
            .labels
            .insert(
                labels::ORIGIN.to_string(),
                labels::ORIGIN_GLOBAL.to_string(),
            );
        let wire = if self.hash_suffix == Some(true) && !types::skips_kds_hash(type_url) {
            resource.hash_suffix().to_string()
        } else {
            name.to_string()
        };
        // A resource whose hashed labels changed goes under a new name: a
        // real global's snapshot no longer holds the old one, so the zone
        // is told it is removed.
        let replaced = self
            .sent_as
            .insert((type_url.to_string(), name.to_string()), wire.clone())
            .filter(|before| *before != wire);
        (wire, kds::pack(&resource), replaced)
    }

    fn auto_removed(&mut self, type_url: &str, name: &str) -> String {
        self.sent_as
            .remove(&(type_url.to_string(), name.to_string()))
            .unwrap_or_else(|| name.to_string())
    }
}

impl State {
    /// A zone's request on `GlobalToZoneSync` (see
    /// `State::on_incremental_request`).
    pub fn on_kds_zone_request(&mut self, stream_id: u64, request: DeltaDiscoveryRequest) {
        self.on_incremental_request::<GlobalToZone>(stream_id, request);
    }

    /// Auto mode's answer for one `GlobalToZoneSync` stream and type.
    pub fn kds_auto_respond(
        &mut self,
        stream_id: u64,
        type_url: &str,
        only: Option<&BTreeSet<String>>,
    ) {
        self.incremental_auto_respond::<GlobalToZone>(stream_id, type_url, only);
    }

    /// Sends a scripted response to every open `GlobalToZoneSync` stream;
    /// returns how many got it.
    pub fn send_kds_scripted_response(&mut self, response: &ScriptedDeltaResponse) -> usize {
        self.send_incremental_scripted::<GlobalToZone>(response)
    }
}
