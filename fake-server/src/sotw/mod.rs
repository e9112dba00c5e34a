//! State-of-the-world ADS (`StreamAggregatedResources`): what a request
//! means for a stream's subscription, what auto mode answers, and scripted
//! responses. Responses leave through the shared egress path.
//!
//! A sibling of the other protocols on the stream core (`crate::stream`):
//! its per-stream state ([`SotwStream`]) rides on each stream as a
//! `stream::Protocol`, which only this module looks inside.

pub(crate) mod rules;

use std::collections::BTreeMap;

use envoy_types::pb::envoy::service::discovery::v3::{
    DiscoveryRequest, DiscoveryResponse, ResourceError,
};
use tonic::Status;
use xds_vocabulary::AdsProtocol;

use crate::config::{ScriptedResourceError, ScriptedResponse};
use crate::event::{RecordedRequest, ServerEvent};
use crate::outbox::Refused;
use crate::resource::ServedResource;
use crate::state::State;
use crate::stream::{Outgoing, Protocol, Sender, StreamKind};
use rules::{SotwType, Subscription};

/// A SotW stream's own state: its wire and, per type URL, what its rules
/// track.
pub(crate) struct SotwStream {
    responses: Sender<DiscoveryResponse>,
    pub types: BTreeMap<String, SotwType>,
}

impl SotwStream {
    pub fn new(responses: Sender<DiscoveryResponse>) -> Self {
        Self {
            responses,
            types: BTreeMap::new(),
        }
    }
}

impl Protocol for SotwStream {
    fn kind(&self) -> StreamKind {
        StreamKind::Ads(AdsProtocol::Sotw)
    }

    fn opened(&self, stream: u64, connection: Option<u64>) -> ServerEvent {
        ServerEvent::StreamOpened {
            stream,
            connection,
            protocol: AdsProtocol::Sotw,
            // Set by the state, which knows the server's other streams.
            after_close: None,
        }
    }

    fn is_open(&self) -> bool {
        !self.responses.is_closed()
    }

    fn transmit(&self, response: Outgoing) -> Result<(), Refused> {
        match response {
            Outgoing::Sotw(response) => self.responses.send(response),
            Outgoing::Delta(_) => Err(Refused::Gone),
        }
    }

    fn end(&self, status: Status) {
        self.responses.end(status);
    }

    fn abort(&self, status: Status) {
        self.responses.abort(status);
    }
}

impl State {
    /// Records a decoded request, updates the stream's subscription and, in
    /// auto mode, answers it if the rules say so.
    pub fn on_sotw_request(&mut self, stream_id: u64, request: DiscoveryRequest) {
        let Some((core, SotwStream { types, .. })) =
            self.streams.get_mut(&stream_id).and_then(|s| s.split_mut())
        else {
            return;
        };
        let (kind, first) = core
            .entry(request.type_url.clone())
            .or_default()
            .on_request(&request.response_nonce, request.error_detail.is_some());
        let sotw = types.entry(request.type_url.clone()).or_default();
        let previous = (!first).then_some(&sotw.subscription);
        sotw.subscription =
            Subscription::from_request(&request.type_url, &request.resource_names, previous);
        self.record(ServerEvent::RequestReceived {
            stream: stream_id,
            request: RecordedRequest::new(&request, kind),
        });
        if self.limit_reached(stream_id) {
            return;
        }
        self.sotw_auto_respond(stream_id, &request.type_url);
    }

    /// Auto mode's answer for one SotW stream and type, if one is owed and
    /// the rules give one.
    pub fn sotw_auto_respond(&mut self, stream_id: u64, type_url: &str) {
        if !self.owes_auto_answer(stream_id, type_url) {
            return;
        }
        let Some(SotwStream { types, .. }) = self
            .streams
            .get_mut(&stream_id)
            .and_then(|s| s.protocol_mut())
        else {
            return;
        };
        let sotw = types.entry(type_url.to_string()).or_default();
        let decision = rules::decide(
            type_url,
            &sotw.subscription,
            self.store.resources(type_url),
            &sotw.sent,
            sotw.answered,
        );
        sotw.sent = decision.sent;
        sotw.answered |= decision.respond.is_some();
        if let Some(resources) = decision.respond {
            let version = self.store.version(type_url);
            self.send_sotw(stream_id, type_url, version, None, &resources, Vec::new());
        }
    }

    /// Sends a scripted response to every open SotW stream; returns how
    /// many got it. Auto mode's bookkeeping is left alone: a scripted send
    /// is a one-off, not a new baseline.
    pub fn send_sotw_scripted(&mut self, response: &ScriptedResponse) -> usize {
        let version = response
            .version_info
            .clone()
            .unwrap_or_else(|| self.store.version(&response.type_url));
        let ids: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| s.protocol.kind() == StreamKind::Ads(AdsProtocol::Sotw))
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter(|&id| {
                self.send_sotw(
                    id,
                    &response.type_url,
                    version.clone(),
                    response.nonce.clone(),
                    &response.resources,
                    response
                        .resource_errors
                        .iter()
                        .map(ScriptedResourceError::to_proto)
                        .collect(),
                )
            })
            .count()
    }

    fn send_sotw(
        &mut self,
        stream_id: u64,
        type_url: &str,
        version_info: String,
        nonce: Option<String>,
        resources: &[ServedResource],
        resource_errors: Vec<ResourceError>,
    ) -> bool {
        let response = DiscoveryResponse {
            version_info,
            resources: resources.iter().map(|r| r.entry.clone()).collect(),
            type_url: type_url.to_string(),
            resource_errors,
            ..Default::default()
        };
        let names = resources.iter().map(|r| r.name.clone()).collect();
        self.send(stream_id, Outgoing::Sotw(response), nonce, names)
    }
}
