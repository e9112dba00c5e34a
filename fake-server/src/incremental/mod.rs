//! Incremental xDS, whichever service carries it: what a delta request
//! means for a stream's subscription and for what the client holds, what
//! auto mode answers, and scripted delta responses. Delta ADS
//! (`DeltaAggregatedResources`, the `delta` module) and Kuma's
//! `GlobalToZoneSync` (the `kds` module) are both this, each on its own wire:
//! each protocol's per-stream state implements [`IncrementalStream`], and
//! this module reads and changes it through that. Responses leave through
//! the shared egress path.
//!
//! Not a protocol itself: a helper the incremental protocols stand on, on
//! the stream core, knowing none of them.

pub(crate) mod rules;

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, Resource,
};
use envoy_types::pb::google::protobuf::Any;
use tonic::Status;

use crate::config::{ScriptedDeltaResponse, ScriptedResourceError};
use crate::event::{RecordedRequest, ServerEvent};
use crate::outbox::Refused;
use crate::state::State;
use crate::stream::{Outgoing, Protocol, Sender, StreamKind};
use rules::{DeltaType, WILDCARD};

/// A stream whose server side sends `DeltaDiscoveryResponse`s (delta ADS,
/// KDS's `GlobalToZoneSync`): what is its own (which RPC it is, how its
/// opening is recorded, its wire); the rest of being a
/// [`Protocol`] is the same for all of them, here.
pub(crate) trait DeltaWire: std::any::Any + Send {
    fn kind(&self) -> StreamKind;
    fn opened(&self, stream: u64, connection: Option<u64>) -> ServerEvent;
    fn responses(&self) -> &Sender<DeltaDiscoveryResponse>;
}

impl<T: DeltaWire> Protocol for T {
    fn kind(&self) -> StreamKind {
        DeltaWire::kind(self)
    }

    fn opened(&self, stream: u64, connection: Option<u64>) -> ServerEvent {
        DeltaWire::opened(self, stream, connection)
    }

    fn is_open(&self) -> bool {
        !self.responses().is_closed()
    }

    fn transmit(&self, response: Outgoing) -> Result<(), Refused> {
        match response {
            Outgoing::Delta(response) => self.responses().send(response),
            Outgoing::Sotw(_) => Err(Refused::Gone),
        }
    }

    fn end(&self, status: Status) {
        self.responses().end(status);
    }

    fn abort(&self, status: Status) {
        self.responses().abort(status);
    }
}

/// A protocol whose streams follow the incremental rules: its per-stream
/// state keeps, per type URL, what the rules track.
pub(crate) trait IncrementalStream: Protocol {
    /// Whether the first request of a type is answered even when there is
    /// nothing to send and the client claimed no versions: Kuma's global
    /// answers every type's first request (the zone takes the first
    /// response of a type as its full sync), where delta ADS answers only
    /// claims.
    const ANSWERS_EVERY_FIRST_REQUEST: bool;

    fn types_mut(&mut self) -> &mut BTreeMap<String, DeltaType>;

    /// A request arrived on the stream, before the rules read it: a
    /// server that reads something of the client's from it (a Kuma global,
    /// the features in the node of a stream's first request) does so here.
    fn request_arrived(&mut self, _request: &DeltaDiscoveryRequest) {}

    /// A stored entry as auto mode sends it on this stream, and the name it
    /// goes under: as stored, unless the protocol's server rewrites what it
    /// sends (a Kuma global stamps its origin and hash-suffixes names).
    /// The third part: a name this one was sent under before and no longer
    /// is, which the client is told is removed.
    fn auto_resource(
        &mut self,
        _type_url: &str,
        name: &str,
        entry: &Any,
    ) -> (String, Any, Option<String>) {
        (name.to_string(), entry.clone(), None)
    }

    /// The name auto mode's removal of the stored `name` goes under: the
    /// one its resource was last sent under.
    fn auto_removed(&mut self, _type_url: &str, name: &str) -> String {
        name.to_string()
    }
}

impl State {
    /// Records a decoded delta request on a stream of protocol `P`,
    /// applies it to the stream's subscription and, in auto mode, answers
    /// it if the rules say so.
    pub fn on_incremental_request<P: IncrementalStream>(
        &mut self,
        stream_id: u64,
        request: DeltaDiscoveryRequest,
    ) {
        let Some((core, protocol)) = self
            .streams
            .get_mut(&stream_id)
            .and_then(|s| s.split_mut::<P>())
        else {
            return;
        };
        let (kind, first) = core
            .entry(request.type_url.clone())
            .or_default()
            .on_request(&request.response_nonce, request.error_detail.is_some());
        protocol.request_arrived(&request);
        let delta = protocol
            .types_mut()
            .entry(request.type_url.clone())
            .or_default();
        delta.apply(&request, first);
        if first && P::ANSWERS_EVERY_FIRST_REQUEST {
            delta.owe_an_answer();
        }
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
        self.incremental_auto_respond::<P>(stream_id, &request.type_url, only.as_ref());
    }

    /// Auto mode's answer for one stream of protocol `P` and type, if one
    /// is owed and the rules give one; `only`: the names that may have
    /// changed.
    pub fn incremental_auto_respond<P: IncrementalStream>(
        &mut self,
        stream_id: u64,
        type_url: &str,
        only: Option<&BTreeSet<String>>,
    ) {
        if !self.owes_auto_answer(stream_id, type_url) {
            return;
        }
        let Some(protocol) = self
            .streams
            .get_mut(&stream_id)
            .and_then(|s| s.protocol_mut::<P>())
        else {
            return;
        };
        let delta = protocol
            .types_mut()
            .entry(type_url.to_string())
            .or_default();
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
        let mut removed: Vec<String> = decision
            .removed
            .iter()
            .map(|name| protocol.auto_removed(type_url, name))
            .collect();
        let resources: Vec<Resource> = decision
            .send
            .iter()
            .map(|(resource, version)| {
                let (name, entry, renamed) =
                    protocol.auto_resource(type_url, &resource.name, &resource.entry);
                removed.extend(renamed);
                Resource {
                    name,
                    version: version.clone(),
                    resource: Some(entry),
                    ..Default::default()
                }
            })
            .collect();
        let names = resources.iter().map(|r| r.name.clone()).collect();
        let response = DeltaDiscoveryResponse {
            system_version_info: store.version(type_url),
            resources,
            type_url: type_url.to_string(),
            removed_resources: removed,
            ..Default::default()
        };
        self.send(stream_id, Outgoing::Delta(response), None, names);
    }

    /// Sends a scripted delta response to every open stream of protocol
    /// `P`; returns how many got it. Auto mode's bookkeeping is left
    /// alone: a scripted send is a one-off, not a new baseline.
    pub fn send_incremental_scripted<P: IncrementalStream>(
        &mut self,
        response: &ScriptedDeltaResponse,
    ) -> usize {
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
            .filter(|(_, s)| s.protocol_ref::<P>().is_some())
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
