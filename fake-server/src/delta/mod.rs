//! Incremental ADS (`DeltaAggregatedResources`): the incremental rules
//! (`crate::incremental`) on the ADS wire. Responses leave through the
//! shared egress path, like SotW's.
//!
//! A sibling of the other protocols on the stream core (`crate::stream`):
//! its per-stream state ([`DeltaStream`]) rides on each stream as a
//! `stream::Protocol`, which only this module and the incremental rules
//! (through `IncrementalStream`) look inside.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use xds_vocabulary::AdsProtocol;

use crate::config::ScriptedDeltaResponse;
use crate::event::ServerEvent;
use crate::incremental::rules::DeltaType;
use crate::incremental::{DeltaWire, IncrementalStream};
use crate::state::State;
use crate::stream::{Sender, StreamKind};

/// A delta stream's own state: its wire and, per type URL, what the
/// incremental rules track.
pub(crate) struct DeltaStream {
    responses: Sender<DeltaDiscoveryResponse>,
    pub types: BTreeMap<String, DeltaType>,
}

impl DeltaStream {
    pub fn new(responses: Sender<DeltaDiscoveryResponse>) -> Self {
        Self {
            responses,
            types: BTreeMap::new(),
        }
    }
}

impl DeltaWire for DeltaStream {
    fn kind(&self) -> StreamKind {
        StreamKind::Ads(AdsProtocol::Delta)
    }

    fn opened(&self, stream: u64, connection: Option<u64>) -> ServerEvent {
        ServerEvent::StreamOpened {
            stream,
            connection,
            protocol: AdsProtocol::Delta,
            // Set by the state, which knows the server's other streams.
            after_close: None,
        }
    }

    fn responses(&self) -> &Sender<DeltaDiscoveryResponse> {
        &self.responses
    }
}

impl IncrementalStream for DeltaStream {
    const ANSWERS_EVERY_FIRST_REQUEST: bool = false;

    fn types_mut(&mut self) -> &mut BTreeMap<String, DeltaType> {
        &mut self.types
    }
}

impl State {
    /// A delta ADS request (see `State::on_incremental_request`).
    pub fn on_delta_request(&mut self, stream_id: u64, request: DeltaDiscoveryRequest) {
        self.on_incremental_request::<DeltaStream>(stream_id, request);
    }

    /// Auto mode's answer for one delta ADS stream and type.
    pub fn delta_auto_respond(
        &mut self,
        stream_id: u64,
        type_url: &str,
        only: Option<&BTreeSet<String>>,
    ) {
        self.incremental_auto_respond::<DeltaStream>(stream_id, type_url, only);
    }

    /// Sends a scripted response to every open delta ADS stream; returns
    /// how many got it.
    pub fn send_delta_scripted(&mut self, response: &ScriptedDeltaResponse) -> usize {
        self.send_incremental_scripted::<DeltaStream>(response)
    }
}
