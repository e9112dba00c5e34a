//! `GlobalToZoneSync`: delta xDS from the global to a zone, on the
//! incremental rules; auto mode labels what it sends as a real global
//! does.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::protobuf::Any;
use xds_vocabulary::kds::zone::labels;
use xds_vocabulary::kds::{self, KdsRpc};

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
}

impl GlobalToZone {
    pub fn new(responses: Sender<DeltaDiscoveryResponse>, handshake: KdsHandshake) -> Self {
        Self {
            responses,
            handshake,
            types: BTreeMap::new(),
        }
    }
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

    /// A real global's first mapper stamps `kuma.io/origin: global` on
    /// every resource it sends, whatever label it had: other zones'
    /// resources go out as the global's (Kuma v2.14.3,
    /// `pkg/kds/context/context.go:78-81`; KDS-FACTS 4.8). An entry that
    /// is no `KumaResource` (an `undecodable` one) goes as it is.
    fn auto_entry(&self, entry: &Any) -> Any {
        match kds::unpack(entry) {
            Ok(mut resource) => {
                resource
                    .meta
                    .get_or_insert_with(Default::default)
                    .labels
                    .insert(
                        labels::ORIGIN.to_string(),
                        labels::ORIGIN_GLOBAL.to_string(),
                    );
                kds::pack(&resource)
            }
            Err(_) => entry.clone(),
        }
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
