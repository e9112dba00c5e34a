//! The per-stream core every ADS protocol shares: where a stream's
//! responses go, how many it was sent, and per resource type whether the
//! client asked for it and which nonces it was sent. What a subscription
//! means is each protocol's own business: its per-stream state is carried
//! here behind the [`Protocol`] trait, and read and changed only by its
//! protocol module (`sotw`, `delta`, `kds`), which finds it again with
//! [`Stream::protocol_mut`]. The core imports no protocol, so a protocol
//! is a sibling module that stands on it, not a case the core lists.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryResponse, DiscoveryResponse};
use tokio::sync::oneshot;
use tonic::Status;
use xds_vocabulary::kds::KdsRpc;
use xds_vocabulary::{AdsProtocol, RequestKind};

use crate::event::{RecordedResponse, ServerEvent};
use crate::outbox::{Outbox, Refused};

/// Where a stream's responses go (see `outbox`).
pub(crate) type Sender<T> = Outbox<T>;

/// One open ADS stream, of any protocol.
pub(crate) struct Stream {
    /// Never sent on: dropping it (when the stream leaves the server's map)
    /// tells the stream's request reader the server is done with it.
    _stop_reader: oneshot::Sender<()>,
    /// Responses sent on this stream, scripted ones included.
    pub responses_sent: u32,
    /// Per type URL, what every protocol tracks.
    pub types: BTreeMap<String, TypeCore>,
    /// The protocol it speaks: its wire and its own per-stream state.
    pub protocol: Box<dyn Protocol>,
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

/// The protocol a stream speaks, as the core sees it: its name and its
/// wire. Each protocol module implements it on its own per-stream state
/// (the response sender and what its rules track per type), so the core
/// carries that state without knowing it. `Any`: only so the protocol's
/// module can find its own state again ([`Stream::protocol_mut`]).
pub(crate) trait Protocol: Any + Send {
    /// Which RPC the stream is.
    fn kind(&self) -> StreamKind;

    /// How the stream's opening is recorded (each service says what it
    /// knows of its stream: KDS streams carry the zone's headers).
    fn opened(&self, stream: u64, connection: Option<u64>) -> ServerEvent;

    /// Whether the client side is still there to take responses.
    fn is_open(&self) -> bool;

    /// Puts `response` on the wire; refused if the stream is gone (or
    /// `response` is of another protocol) or its client is too far behind.
    fn transmit(&self, response: Outgoing) -> Result<(), Refused>;

    /// Ends the response stream with `status` in the trailers, after what
    /// is queued.
    fn end(&self, status: Status);

    /// Drops what is queued and ends the response stream with `status`.
    fn abort(&self, status: Status);
}

/// Which RPC a stream is: what auto mode's dispatch after a store change
/// (`respond`) and the fault verbs pick streams by. A name, not a
/// protocol: the core imports none of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKind {
    Ads(AdsProtocol),
    Kds(KdsRpc),
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
            Outgoing::Sotw(r) => RecordedResponse::sotw(r, names),
            Outgoing::Delta(r) => RecordedResponse::delta(r, names),
        }
    }
}

impl Stream {
    pub fn new(protocol: impl Protocol, stop_reader: oneshot::Sender<()>) -> Self {
        Self {
            _stop_reader: stop_reader,
            responses_sent: 0,
            types: BTreeMap::new(),
            protocol: Box::new(protocol),
        }
    }

    /// The KDS RPC the stream is, if it is one (how its end is recorded).
    pub fn kds_rpc(&self) -> Option<KdsRpc> {
        match self.protocol.kind() {
            StreamKind::Kds(rpc) => Some(rpc),
            StreamKind::Ads(_) => None,
        }
    }

    /// The protocol's own state, if the stream speaks protocol `P`.
    pub fn protocol_ref<P: Protocol>(&self) -> Option<&P> {
        (self.protocol.as_ref() as &dyn Any).downcast_ref()
    }

    /// The protocol's own state, if the stream speaks protocol `P`.
    pub fn protocol_mut<P: Protocol>(&mut self) -> Option<&mut P> {
        (self.protocol.as_mut() as &mut dyn Any).downcast_mut()
    }

    /// What the core tracks per type and the protocol's own state, if the
    /// stream speaks protocol `P`: both at once, as a request changes
    /// both.
    pub fn split_mut<P: Protocol>(&mut self) -> Option<(&mut BTreeMap<String, TypeCore>, &mut P)> {
        let protocol = (self.protocol.as_mut() as &mut dyn Any).downcast_mut()?;
        Some((&mut self.types, protocol))
    }

    /// Whether the client side is still there to take responses.
    pub fn is_open(&self) -> bool {
        self.protocol.is_open()
    }

    /// Puts `response` on the wire; refused if the stream is gone (or
    /// speaks another protocol) or its client is too far behind.
    pub fn transmit(&self, response: Outgoing) -> Result<(), Refused> {
        self.protocol.transmit(response)
    }

    /// Ends the response stream with `status` in the trailers, after what
    /// is queued. If the client is already gone there is nobody to tell.
    pub fn end(&self, status: Status) {
        self.protocol.end(status);
    }

    /// Drops what is queued and ends the response stream with `status`.
    pub fn abort(&self, status: Status) {
        self.protocol.abort(status);
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
