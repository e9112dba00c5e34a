//! The per-stream core every ADS protocol shares: where a stream's
//! responses go, how many it was sent, and per resource type whether the
//! client asked for it and which nonces it was sent. What a subscription
//! means is each protocol's own business (its per-type state is carried
//! here, but read and changed only by its protocol module).

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryResponse, DiscoveryResponse};
use prost::Message;
use tokio::sync::oneshot;
use tonic::Status;
use xds_vocabulary::{AdsProtocol, RequestKind};

use crate::delta::rules::DeltaType;
use crate::event::{
    RecordedDeltaResource, RecordedDeltaResponse, RecordedResourceError, RecordedResponse,
    recorded_body,
};
use crate::outbox::{Outbox, Refused};
use crate::sotw::rules::SotwType;

/// Where a stream's responses go (see `outbox`).
pub(crate) type Sender<T> = Outbox<T>;

/// One open ADS stream, of either protocol.
pub(crate) struct Stream {
    /// Never sent on: dropping it (when the stream leaves the server's map)
    /// tells the stream's request reader the server is done with it.
    _stop_reader: oneshot::Sender<()>,
    /// Responses sent on this stream, scripted ones included.
    pub responses_sent: u32,
    /// Per type URL, what every protocol tracks.
    pub types: BTreeMap<String, TypeCore>,
    pub protocol: Protocol,
}

/// What every protocol tracks about one resource type on one stream.
#[derive(Default)]
pub(crate) struct TypeCore {
    /// The client has sent a request for this type (auto mode only pushes
    /// store changes to types the stream asked for).
    pub requested: bool,
    /// Every nonce sent for this type on this stream, scripted ones included.
    pub nonces: BTreeSet<String>,
}

impl TypeCore {
    /// A request of this type arrived: how it relates to the responses
    /// sent before it, and whether it is the first of the type on the
    /// stream.
    pub fn on_request(&mut self, nonce: &str, has_error: bool) -> (RequestKind, bool) {
        let kind = RequestKind::classify(nonce, has_error, |n| self.nonces.contains(n));
        let first = !std::mem::replace(&mut self.requested, true);
        (kind, first)
    }
}

/// The protocol a stream speaks, with its wire and its per-type state.
pub(crate) enum Protocol {
    Sotw {
        responses: Sender<DiscoveryResponse>,
        types: BTreeMap<String, SotwType>,
    },
    Delta {
        responses: Sender<DeltaDiscoveryResponse>,
        types: BTreeMap<String, DeltaType>,
    },
}

impl Protocol {
    pub fn name(&self) -> AdsProtocol {
        match self {
            Protocol::Sotw { .. } => AdsProtocol::Sotw,
            Protocol::Delta { .. } => AdsProtocol::Delta,
        }
    }
}

/// A response on its way to one stream, before the egress path gives it a
/// nonce.
pub(crate) enum Outgoing {
    Sotw(DiscoveryResponse),
    Delta(DeltaDiscoveryResponse),
}

impl Outgoing {
    pub fn type_url(&self) -> &str {
        match self {
            Outgoing::Sotw(r) => &r.type_url,
            Outgoing::Delta(r) => &r.type_url,
        }
    }

    pub fn set_nonce(&mut self, nonce: String) {
        match self {
            Outgoing::Sotw(r) => r.nonce = nonce,
            Outgoing::Delta(r) => r.nonce = nonce,
        }
    }

    /// What the recording keeps of it. `names` are the served entries'
    /// names, which a SotW response does not carry for undecodable entries.
    pub fn recorded(&self, names: Vec<String>) -> RecordedResponse {
        match self {
            Outgoing::Sotw(r) => RecordedResponse {
                type_url: r.type_url.clone(),
                version_info: r.version_info.clone(),
                nonce: r.nonce.clone(),
                resource_names: names,
                encoded_len: r.encoded_len(),
                delta: None,
                resource_errors: r
                    .resource_errors
                    .iter()
                    .map(RecordedResourceError::from_proto)
                    .collect(),
                bodies: r.resources.iter().map(|e| recorded_body(Some(e))).collect(),
            },
            Outgoing::Delta(r) => RecordedResponse {
                type_url: r.type_url.clone(),
                version_info: r.system_version_info.clone(),
                nonce: r.nonce.clone(),
                resource_names: names,
                encoded_len: r.encoded_len(),
                delta: Some(RecordedDeltaResponse {
                    resources: r
                        .resources
                        .iter()
                        .map(|resource| RecordedDeltaResource {
                            version: resource.version.clone(),
                            ttl: resource
                                .ttl
                                .as_ref()
                                .map(|t| duration_from_proto(t.seconds, t.nanos)),
                            body: resource.resource.is_some(),
                        })
                        .collect(),
                    removed_resources: r.removed_resources.clone(),
                }),
                bodies: r
                    .resources
                    .iter()
                    .map(|e| recorded_body(e.resource.as_ref()))
                    .collect(),
                resource_errors: r
                    .resource_errors
                    .iter()
                    .map(RecordedResourceError::from_proto)
                    .collect(),
            },
        }
    }
}

/// A protobuf Duration as a std one (negative ones as zero).
fn duration_from_proto(seconds: i64, nanos: i32) -> std::time::Duration {
    std::time::Duration::new(
        u64::try_from(seconds).unwrap_or(0),
        u32::try_from(nanos).unwrap_or(0),
    )
}

impl Stream {
    pub fn new(protocol: Protocol, stop_reader: oneshot::Sender<()>) -> Self {
        Self {
            _stop_reader: stop_reader,
            responses_sent: 0,
            types: BTreeMap::new(),
            protocol,
        }
    }

    /// Whether the client side is still there to take responses.
    pub fn is_open(&self) -> bool {
        match &self.protocol {
            Protocol::Sotw { responses, .. } => !responses.is_closed(),
            Protocol::Delta { responses, .. } => !responses.is_closed(),
        }
    }

    /// Puts `response` on the wire; refused if the stream is gone (or
    /// speaks another protocol) or its client is too far behind.
    pub fn transmit(&self, response: Outgoing) -> Result<(), Refused> {
        match (&self.protocol, response) {
            (Protocol::Sotw { responses, .. }, Outgoing::Sotw(r)) => responses.send(r),
            (Protocol::Delta { responses, .. }, Outgoing::Delta(r)) => responses.send(r),
            _ => Err(Refused::Gone),
        }
    }

    /// Ends the response stream with `status` in the trailers, after what
    /// is queued. If the client is already gone there is nobody to tell.
    pub fn end(&self, status: Status) {
        match &self.protocol {
            Protocol::Sotw { responses, .. } => responses.end(status),
            Protocol::Delta { responses, .. } => responses.end(status),
        }
    }

    /// Drops what is queued and ends the response stream with `status`.
    pub fn abort(&self, status: Status) {
        match &self.protocol {
            Protocol::Sotw { responses, .. } => responses.abort(status),
            Protocol::Delta { responses, .. } => responses.abort(status),
        }
    }

    /// Whether the client asked for anything yet.
    pub fn asked_anything(&self) -> bool {
        self.types.values().any(|t| t.requested)
    }

    /// The types the client asked for, in type URL order.
    pub fn requested_types(&self) -> impl Iterator<Item = &str> {
        self.types
            .iter()
            .filter(|(_, t)| t.requested)
            .map(|(type_url, _)| type_url.as_str())
    }
}
