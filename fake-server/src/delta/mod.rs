//! Incremental ADS (`DeltaAggregatedResources`): what a request means for
//! a stream's subscription and for what the client holds, what auto mode
//! answers, and scripted responses. Responses leave through the shared
//! egress path, like SotW's.
//!
//! A sibling of the other protocols on the stream core (`crate::stream`):
//! its per-stream state ([`DeltaStream`]) rides on each stream as a
//! `stream::Protocol`, which only this module looks inside.

pub(crate) mod rules;

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, Resource,
};
use tonic::Status;
use xds_vocabulary::AdsProtocol;

use crate::config::{ScriptedDeltaResponse, ScriptedResourceError};
use crate::event::{RecordedRequest, ServerEvent};
use crate::outbox::Refused;
use crate::state::State;
use crate::stream::{Outgoing, Protocol, Sender};
use rules::{DeltaType, WILDCARD};

/// A delta stream's own state: its wire and, per type URL, what its rules
/// track.
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

impl Protocol for DeltaStream {
    fn name(&self) -> AdsProtocol {
        AdsProtocol::Delta
    }

    fn is_open(&self) -> bool {
        !self.responses.is_closed()
    }

    fn transmit(&self, response: Outgoing) -> Result<(), Refused> {
        match response {
            Outgoing::Delta(response) => self.responses.send(response),
            Outgoing::Sotw(_) => Err(Refused::Gone),
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
    /// Records a decoded delta request, applies it to the stream's
    /// subscription and, in auto mode, answers it if the rules say so.
    pub fn on_delta_request(&mut self, stream_id: u64, request: DeltaDiscoveryRequest) {
        let Some((core, DeltaStream { types, .. })) =
            self.streams.get_mut(&stream_id).and_then(|s| s.split_mut())
        else {
            return;
        };
        let (kind, first) = core
            .entry(request.type_url.clone())
            .or_default()
            .on_request(&request.response_nonce, request.error_detail.is_some());
        let delta = types.entry(request.type_url.clone()).or_default();
        delta.apply(&request, first);
        // What the request changed, unless it changes what a wildcard
        // covers (or is the first): then everything is looked at.
        let names = request
            .resource_names_subscribe
            .iter()
            .chain(&request.resource_names_unsubscribe);
        let only: Option<BTreeSet<String>> =
            (!first && !names.clone().any(|n| n == WILDCARD)).then(|| names.cloned().collect());
        let subscription = delta.subscription.names.clone();
        self.record(ServerEvent::RequestReceived {
            stream: stream_id,
            request: RecordedRequest::delta(&request, kind, subscription),
        });
        if self.limit_reached(stream_id) {
            return;
        }
        self.delta_auto_respond(stream_id, &request.type_url, only.as_ref());
    }

    /// Auto mode's answer for one delta stream and type, if one is owed
    /// and the rules give one; `only`: the names that may have changed.
    pub fn delta_auto_respond(
        &mut self,
        stream_id: u64,
        type_url: &str,
        only: Option<&BTreeSet<String>>,
    ) {
        if !self.owes_auto_answer(stream_id, type_url) {
            return;
        }
        let Some(DeltaStream { types, .. }) = self
            .streams
            .get_mut(&stream_id)
            .and_then(|s| s.protocol_mut())
        else {
            return;
        };
        let delta = types.entry(type_url.to_string()).or_default();
        let store = &self.store;
        let version_of = |name: &str| {
            store
                .resource_version(type_url, name)
                .unwrap_or_default()
                .to_string()
        };
        let Some(decision) = delta.decide(store.resources(type_url), version_of, only) else {
            return;
        };
        delta.sent(&decision);
        let names = decision.send.iter().map(|(r, _)| r.name.clone()).collect();
        let response = DeltaDiscoveryResponse {
            system_version_info: store.version(type_url),
            resources: decision
                .send
                .iter()
                .map(|(resource, version)| Resource {
                    name: resource.name.clone(),
                    version: version.clone(),
                    resource: Some(resource.entry.clone()),
                    ..Default::default()
                })
                .collect(),
            type_url: type_url.to_string(),
            removed_resources: decision.removed,
            ..Default::default()
        };
        self.send(stream_id, Outgoing::Delta(response), None, names);
    }

    /// Sends a scripted response to every open delta stream; returns how
    /// many got it. As with SotW, auto mode's bookkeeping is left alone.
    pub fn send_delta_scripted(&mut self, response: &ScriptedDeltaResponse) -> usize {
        let type_url = &response.type_url;
        let system_version_info = response
            .system_version_info
            .clone()
            .unwrap_or_else(|| self.store.version(type_url));
        let resources: Vec<Resource> = response
            .resources
            .iter()
            .map(|r| Resource {
                name: r.name.clone(),
                version: r.version.clone().unwrap_or_else(|| {
                    self.store
                        .resource_version(type_url, &r.name)
                        .map_or_else(|| system_version_info.clone(), str::to_string)
                }),
                resource: r.entry.clone(),
                ttl: r
                    .ttl
                    .map(|ttl| envoy_types::pb::google::protobuf::Duration {
                        seconds: i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
                        nanos: i32::try_from(ttl.subsec_nanos()).unwrap_or(0),
                    }),
                ..Default::default()
            })
            .collect();
        let names: Vec<String> = response.resources.iter().map(|r| r.name.clone()).collect();
        let ids: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| s.protocol.name() == AdsProtocol::Delta)
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter(|&id| {
                let message = DeltaDiscoveryResponse {
                    system_version_info: system_version_info.clone(),
                    resources: resources.clone(),
                    type_url: type_url.clone(),
                    removed_resources: response.removed.clone(),
                    resource_errors: response
                        .resource_errors
                        .iter()
                        .map(ScriptedResourceError::to_proto)
                        .collect(),
                    ..Default::default()
                };
                self.send(
                    id,
                    Outgoing::Delta(message),
                    response.nonce.clone(),
                    names.clone(),
                )
            })
            .count()
    }
}
