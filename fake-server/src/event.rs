//! What a fake server records: every connection, stream, request, response,
//! fault and store change, stamped with the (possibly virtual) time it
//! happened and the name of the server it happened on.
//!
//! Events are plain data so a harness can keep them, compare them and render
//! them into a timeline without knowing anything about the server's insides.

use std::collections::BTreeMap;
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use xds_vocabulary::kds::KdsRpc;
use xds_vocabulary::{AdsProtocol, RequestKind};

use crate::fault::Fault;
use crate::handshake::KdsHandshake;
use crate::subscribed::{SubscribedNames, WILDCARD};

/// How a stream the client half-closed is recorded (code `Ok`): it sent
/// END_STREAM (hyper reads a reset with NO_ERROR alike).
pub const CLIENT_HALF_CLOSED: &str = "client half-closed its side";

/// How a stream the client cancelled is recorded (code `CANCELLED`): it
/// sent RST_STREAM(CANCEL), which tonic's decoder would read as the end
/// of the stream (see `cancel`).
pub const CLIENT_CANCELLED: &str = "client cancelled the stream (RST_STREAM CANCEL)";

/// One recorded event.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded<E> {
    /// When it happened: `tokio::time::Instant::now()`, so under paused time
    /// this is virtual time and runs are deterministic.
    pub at: tokio::time::Instant,
    /// The name of the server that recorded it.
    pub server: String,
    /// What happened.
    pub event: E,
}

/// Everything a fake ADS server can observe or do.
// `RequestReceived` carries the client's `Node` inline (~500 bytes). Boxing it
// would make every match on recorded requests clumsier for the harness, and a
// test recording holds at most thousands of events.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ServerEvent {
    /// A transport connection was accepted (ids count from 1 per server).
    ConnectionAccepted { connection: u64 },
    /// A connection attempt was refused because the server refuses
    /// connections. Only the in-memory transport can observe this: on TCP a
    /// refusing server has no listening socket, so the kernel refuses.
    ConnectionRefused { address: String },
    /// The server side of a connection went away.
    ConnectionClosed { connection: u64 },
    /// A TLS server finished the handshake on a connection;
    /// `client_certificate`: the client presented a certificate, which
    /// the server verified.
    TlsEstablished {
        connection: u64,
        client_certificate: bool,
    },
    /// A TLS server's handshake on a connection failed (the connection is
    /// closed next).
    TlsFailed {
        connection: u64,
        failure: TlsFailure,
    },
    /// An ADS stream of `protocol` was opened, on `connection` when the
    /// transport tells which one.
    StreamOpened {
        stream: u64,
        connection: Option<u64>,
        protocol: AdsProtocol,
        /// How long after the server's last stream ended this one opened,
        /// when no other stream was open: a client's retry delay as the
        /// server sees it (gRFC A57's backoff between stream attempts).
        /// `None` for the server's first stream, and for one opened beside
        /// another. Not part of the timeline's text: runs differ in it.
        after_close: Option<std::time::Duration>,
    },
    /// A stream of Kuma's `KDSSyncService` was opened: which RPC, and what
    /// the zone said of itself in its gRPC headers. Its requests and
    /// responses are recorded as an ADS stream's are on
    /// `GlobalToZoneSync`, and as [`ServerEvent::KdsRequestSent`] and
    /// [`ServerEvent::KdsResponseReceived`] on `ZoneToGlobalSync`; it ends
    /// with [`ServerEvent::StreamClosed`].
    KdsStreamOpened {
        stream: u64,
        connection: Option<u64>,
        rpc: KdsRpc,
        handshake: KdsHandshake,
    },
    /// A zone pinged `GlobalKDSService/HealthCheck`, with these headers
    /// (Kuma's zone does on each connection when it advertises
    /// `zone-ping-health`). Answered as Kuma's global answers by default:
    /// no interval.
    KdsHealthCheck { handshake: KdsHandshake },
    /// On a `ZoneToGlobalSync` stream, the server (the global) sent a
    /// `DeltaDiscoveryRequest`: a subscription, an ACK or a NACK. Its
    /// `kind` relates it to the responses the zone sent before;
    /// `delta.subscription` is what the global subscribes to after it.
    KdsRequestSent {
        stream: u64,
        request: RecordedRequest,
    },
    /// On a `ZoneToGlobalSync` stream, the zone sent a
    /// `DeltaDiscoveryResponse` (names, versions, removed names, bodies as
    /// a server's recorded responses keep them).
    KdsResponseReceived {
        stream: u64,
        response: RecordedResponse,
    },
    /// A stream ended. `by_client` is true when the client ended its side
    /// (code `Ok`, message [`CLIENT_HALF_CLOSED`]), cancelled it (code
    /// `Cancelled`, message [`CLIENT_CANCELLED`]) or lost it (the code
    /// tonic reported); false when
    /// the server closed it with `code`/`message`. `kds`: the KDS RPC it
    /// was (None: an ADS stream), so that a KDS timeline names its streams
    /// as it opened them.
    StreamClosed {
        stream: u64,
        code: tonic::Code,
        message: String,
        by_client: bool,
        kds: Option<KdsRpc>,
    },
    /// A `DiscoveryRequest` or `DeltaDiscoveryRequest` was decoded on a
    /// stream.
    RequestReceived {
        stream: u64,
        request: RecordedRequest,
    },
    /// A `DiscoveryResponse` or `DeltaDiscoveryResponse` was handed to a
    /// stream's transport.
    ResponseSent {
        stream: u64,
        response: RecordedResponse,
    },
    /// A response was built and counted as sent, but lost on its way
    /// (`fault::DropResponses`): the client never gets it.
    ResponseDropped {
        stream: u64,
        response: RecordedResponse,
    },
    /// A fault was applied to the server.
    FaultApplied { fault: Fault },
    /// The resource store changed for one type. `updated` are the names set
    /// (added or replaced), `removed` the names that existed and were removed;
    /// both sorted.
    ResourcesChanged {
        type_url: String,
        version: String,
        updated: Vec<String>,
        removed: Vec<String>,
    },
}

/// Why a TLS handshake failed, as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsFailure {
    /// The server requires a client certificate and the client sent none.
    NoClientCertificate,
    /// The client's certificate did not verify (rustls's reason, e.g.
    /// `UnknownIssuer`).
    ClientCertificateRejected(String),
    /// The client ended the handshake with this alert, e.g. `UnknownCA` or
    /// `BadCertificate` when it does not trust the server's certificate.
    AlertFromClient(String),
    /// The client closed the connection in the middle of the handshake,
    /// without an alert (how some TLS stacks refuse a certificate).
    ClosedByClient,
    /// Anything else (bytes that are not TLS, a connection lost in the
    /// middle), as rustls or the transport put it.
    Other(String),
}

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsFailure::NoClientCertificate => f.write_str("the client sent no certificate"),
            TlsFailure::ClientCertificateRejected(reason) => {
                write!(f, "the client certificate was rejected ({reason})")
            }
            TlsFailure::AlertFromClient(alert) => write!(f, "the client sent alert {alert}"),
            TlsFailure::ClosedByClient => {
                f.write_str("the client closed the connection without an alert")
            }
            TlsFailure::Other(what) => f.write_str(what),
        }
    }
}

/// The parts of a request a conformance check looks at, in terms both
/// protocols share, plus what only a delta request says.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    pub type_url: String,
    /// SotW: as sent, in the client's order. Delta: empty (see
    /// [`RecordedRequest::subscription`]).
    pub resource_names: Vec<String>,
    /// SotW only (delta requests have no version).
    pub version_info: String,
    pub response_nonce: String,
    /// `(code, message)` of `error_detail` when the client NACKed.
    pub error_detail: Option<(i32, String)>,
    pub node: Option<Node>,
    pub kind: RequestKind,
    /// What a delta request itself said; `None` for SotW.
    pub delta: Option<RecordedDeltaRequest>,
}

/// The fields only a `DeltaDiscoveryRequest` has, and what it left the
/// stream subscribed to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedDeltaRequest {
    pub subscribe: Vec<String>,
    pub unsubscribe: Vec<String>,
    pub initial_resource_versions: BTreeMap<String, String>,
    /// The stream's subscription to the type after this request, as the
    /// server keeps it. Shared with the server's state: an ACK on a stream
    /// subscribed to 100,000 names costs no copy of them, a change only
    /// the paths it changed ([`SubscribedNames::change_bytes`]).
    pub subscription: SubscribedNames,
}

impl RecordedDeltaRequest {
    /// The bytes this request's subscription took beyond the previous
    /// request's on its stream (an upper bound; 0 when it changed
    /// nothing).
    pub fn subscription_bytes(&self) -> usize {
        let added = self
            .subscribe
            .iter()
            .map(String::as_str)
            .filter(|n| *n != WILDCARD);
        self.subscription
            .change_bytes(added, self.unsubscribe.len())
    }
}

/// What a request leaves its stream subscribed to, read alike for both
/// protocols: a SotW request's names, a delta request's resulting
/// subscription.
#[derive(Clone, Copy, Debug)]
pub enum Subscription<'a> {
    Sotw(&'a [String]),
    Delta(&'a SubscribedNames),
}

impl<'a> Subscription<'a> {
    pub fn len(&self) -> usize {
        match self {
            Subscription::Sotw(names) => names.len(),
            Subscription::Delta(set) => set.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The names in the order the request gave them (SotW) or sorted with
    /// `*` first (delta).
    pub fn iter(&self) -> SubscriptionIter<'a> {
        match *self {
            Subscription::Sotw(names) => SubscriptionIter::Sotw(names.iter()),
            Subscription::Delta(set) => SubscriptionIter::Delta(set.iter()),
        }
    }
}

impl<S: AsRef<str>> PartialEq<[S]> for Subscription<'_> {
    fn eq(&self, other: &[S]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b.as_ref())
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for Subscription<'_> {
    fn eq(&self, other: &[S; N]) -> bool {
        self == &other[..]
    }
}

/// [`Subscription::iter`]'s iterator.
#[derive(Clone)]
pub enum SubscriptionIter<'a> {
    Sotw(std::slice::Iter<'a, String>),
    Delta(crate::subscribed::Iter<'a>),
}

impl<'a> Iterator for SubscriptionIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match self {
            SubscriptionIter::Sotw(names) => names.next().map(String::as_str),
            SubscriptionIter::Delta(names) => names.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            SubscriptionIter::Sotw(names) => names.size_hint(),
            SubscriptionIter::Delta(names) => names.size_hint(),
        }
    }
}

impl ExactSizeIterator for SubscriptionIter<'_> {}

impl RecordedRequest {
    /// What the stream subscribes to after this request: a SotW request's
    /// names (each restates the subscription); a delta request's
    /// resulting subscription. Both protocols read alike through it.
    pub fn subscription(&self) -> Subscription<'_> {
        match &self.delta {
            Some(delta) => Subscription::Delta(&delta.subscription),
            None => Subscription::Sotw(&self.resource_names),
        }
    }

    /// Records a SotW `request` as classified by `kind`.
    pub fn new(request: &DiscoveryRequest, kind: RequestKind) -> Self {
        Self {
            type_url: request.type_url.clone(),
            resource_names: request.resource_names.clone(),
            version_info: request.version_info.clone(),
            response_nonce: request.response_nonce.clone(),
            error_detail: error_detail(request.error_detail.as_ref()),
            node: request.node.as_ref().map(bounded_node),
            kind,
            delta: None,
        }
    }

    /// Records a delta `request`, after which the stream subscribes to
    /// `subscription`.
    pub fn delta(
        request: &DeltaDiscoveryRequest,
        kind: RequestKind,
        subscription: SubscribedNames,
    ) -> Self {
        Self {
            type_url: request.type_url.clone(),
            resource_names: Vec::new(),
            version_info: String::new(),
            response_nonce: request.response_nonce.clone(),
            error_detail: error_detail(request.error_detail.as_ref()),
            node: request.node.as_ref().map(bounded_node),
            kind,
            delta: Some(RecordedDeltaRequest {
                subscribe: request.resource_names_subscribe.clone(),
                unsubscribe: request.resource_names_unsubscribe.clone(),
                initial_resource_versions: request
                    .initial_resource_versions
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                subscription,
            }),
        }
    }
}

/// How large a recorded node may be. A node is the client's to send, in
/// the first request of every stream, and a scenario's bootstrap chooses
/// its id: a node of a megabyte sent on every reconnect must not make every
/// recorded request a megabyte. Real nodes are a few hundred bytes.
pub const MAX_RECORDED_NODE: usize = 64 << 10;

/// What one string field of a node over [`MAX_RECORDED_NODE`] keeps.
const MAX_NODE_FIELD: usize = 4 << 10;

/// How many client features or metadata fields a node over
/// [`MAX_RECORDED_NODE`] keeps.
const MAX_NODE_ENTRIES: usize = 64;

/// `node` as recorded: whole if it is at most [`MAX_RECORDED_NODE`] bytes
/// encoded; else its string fields cut (with the cut marker), its first
/// client features and small metadata fields kept, with how many were
/// left out said in the last feature and under the metadata key
/// `xds-conformance.left_out`, and the rest (extensions, listening
/// addresses, a structured build version) left out.
pub fn bounded_node(node: &Node) -> Node {
    use envoy_types::pb::envoy::config::core::v3::node::UserAgentVersionType;
    use envoy_types::pb::google::protobuf::{Struct, Value, value::Kind};
    use prost::Message;
    if node.encoded_len() <= MAX_RECORDED_NODE {
        return node.clone();
    }
    let cut = |text: &str| xds_vocabulary::cut::cut(text, MAX_NODE_FIELD).into_owned();
    let mut client_features: Vec<String> = node
        .client_features
        .iter()
        .take(MAX_NODE_ENTRIES)
        .map(|f| cut(f))
        .collect();
    if node.client_features.len() > MAX_NODE_ENTRIES {
        client_features.push(format!(
            "[... {} more features]",
            node.client_features.len() - MAX_NODE_ENTRIES
        ));
    }
    let metadata = node.metadata.as_ref().map(|metadata| {
        let mut fields: std::collections::HashMap<String, Value> = metadata
            .fields
            .iter()
            .filter(|(key, value)| key.len() + value.encoded_len() <= MAX_NODE_FIELD)
            .take(MAX_NODE_ENTRIES)
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let left_out = metadata.fields.len() - fields.len();
        if left_out > 0 {
            fields.insert(
                "xds-conformance.left_out".into(),
                Value {
                    kind: Some(Kind::StringValue(format!("{left_out} fields"))),
                },
            );
        }
        Struct { fields }
    });
    Node {
        id: cut(&node.id),
        cluster: cut(&node.cluster),
        user_agent_name: cut(&node.user_agent_name),
        user_agent_version_type: match &node.user_agent_version_type {
            Some(UserAgentVersionType::UserAgentVersion(version)) => {
                Some(UserAgentVersionType::UserAgentVersion(cut(version)))
            }
            _ => None,
        },
        locality: node.locality.as_ref().map(|l| {
            envoy_types::pb::envoy::config::core::v3::Locality {
                region: cut(&l.region),
                zone: cut(&l.zone),
                sub_zone: cut(&l.sub_zone),
            }
        }),
        client_features,
        metadata,
        ..Default::default()
    }
}

/// `(code, message)` of a request's `error_detail`.
fn error_detail(status: Option<&envoy_types::pb::google::rpc::Status>) -> Option<(i32, String)> {
    status.map(|status| (status.code, status.message.clone()))
}

/// The parts of a response a conformance check looks at, in terms both
/// protocols share, plus what only a delta response says.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedResponse {
    pub type_url: String,
    /// SotW: `version_info`; delta: `system_version_info`.
    pub version_info: String,
    pub nonce: String,
    /// `ServedResource::name` of each entry, in the order sent (duplicates
    /// kept: a scripted response may repeat a resource on purpose).
    pub resource_names: Vec<String>,
    /// The encoded message's size in bytes (its gRPC frame adds 5).
    pub encoded_len: usize,
    /// What a delta response itself said; `None` for SotW.
    pub delta: Option<RecordedDeltaResponse>,
    /// Its `resource_errors` (xRFC TP3), in order.
    pub resource_errors: Vec<RecordedResourceError>,
    /// One per entry of `resource_names`: the entry as sent (SotW: the
    /// `Any` in `resources`, maybe a `Resource` wrapper; delta: the
    /// `Resource`'s body), so that what a server last said of a resource
    /// can be compared with what the client's watchers heard (the chaos
    /// invariant `eventually-consistent`). `None` for an entry without a
    /// body or over [`MAX_RECORDED_BODY`] bytes: a recording holds what it
    /// needs, not every byte a scenario sends.
    pub bodies: Vec<Option<Any>>,
}

impl RecordedResponse {
    /// A SotW response as recorded; `names`: its entries' names.
    pub fn sotw(r: &DiscoveryResponse, names: Vec<String>) -> Self {
        RecordedResponse {
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
        }
    }

    /// A delta response as recorded, whoever sent it (the server on a
    /// delta stream, a zone on KDS's `ZoneToGlobalSync`); `names`: its
    /// resources' names.
    pub fn delta(r: &DeltaDiscoveryResponse, names: Vec<String>) -> Self {
        RecordedResponse {
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
        }
    }
}

/// A protobuf Duration as a std one (negative ones as zero).
fn duration_from_proto(seconds: i64, nanos: i32) -> Duration {
    Duration::new(
        u64::try_from(seconds).unwrap_or(0),
        u32::try_from(nanos).unwrap_or(0),
    )
}

/// The largest entry body a recorded response keeps. Chaos schedules'
/// resources are a few hundred bytes; a scenario that sends megabytes
/// keeps its names only.
pub const MAX_RECORDED_BODY: usize = 4096;

/// `body` as a recording keeps it (see [`RecordedResponse::bodies`]).
pub fn recorded_body(body: Option<&Any>) -> Option<Any> {
    body.filter(|any| any.value.len() + any.type_url.len() <= MAX_RECORDED_BODY)
        .cloned()
}

/// One of a response's `resource_errors`.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedResourceError {
    /// `None`: sent without a `resource_name`.
    pub name: Option<String>,
    /// `error_detail`'s code and message; `None`: sent without one.
    pub status: Option<(i32, String)>,
}

impl RecordedResourceError {
    pub fn from_proto(
        error: &envoy_types::pb::envoy::service::discovery::v3::ResourceError,
    ) -> Self {
        RecordedResourceError {
            name: error.resource_name.as_ref().map(|n| n.name.clone()),
            status: error_detail(error.error_detail.as_ref()),
        }
    }
}

/// The fields only a `DeltaDiscoveryResponse` has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedDeltaResponse {
    /// One per entry of `resource_names`, in the same order.
    pub resources: Vec<RecordedDeltaResource>,
    pub removed_resources: Vec<String>,
}

/// A delta response's `Resource`, apart from its name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedDeltaResource {
    pub version: String,
    pub ttl: Option<Duration>,
    /// False for a `Resource` without a body (a TTL heartbeat, or a
    /// scripted oddity).
    pub body: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::google::rpc::Status;

    #[test]
    fn a_huge_node_is_recorded_cut_with_what_was_left_out_said() {
        use envoy_types::pb::google::protobuf::{Struct, Value, value::Kind};
        use prost::Message;
        let small = Node {
            id: "client-1".into(),
            ..Default::default()
        };
        assert_eq!(bounded_node(&small), small);
        let string = |s: String| Value {
            kind: Some(Kind::StringValue(s)),
        };
        let huge = Node {
            id: "i".repeat(900_000),
            cluster: "c".into(),
            client_features: (0..100).map(|i| format!("feature-{i}")).collect(),
            metadata: Some(Struct {
                fields: [
                    ("small".to_string(), string("v".into())),
                    ("big".to_string(), string("x".repeat(100_000))),
                ]
                .into_iter()
                .collect(),
            }),
            ..Default::default()
        };
        let recorded = bounded_node(&huge);
        assert!(
            recorded.encoded_len() <= MAX_RECORDED_NODE,
            "{}",
            recorded.encoded_len()
        );
        assert!(
            recorded.id.ends_with("[... 895904 more bytes]"),
            "{}",
            &recorded.id[4090..]
        );
        assert_eq!(recorded.cluster, "c");
        assert_eq!(recorded.client_features.len(), MAX_NODE_ENTRIES + 1);
        assert_eq!(
            recorded.client_features.last().unwrap(),
            "[... 36 more features]"
        );
        let fields = &recorded.metadata.as_ref().unwrap().fields;
        assert!(fields.contains_key("small") && !fields.contains_key("big"));
        assert_eq!(
            fields["xds-conformance.left_out"],
            string("1 fields".into())
        );
    }

    #[test]
    fn a_recorded_body_is_kept_up_to_its_bound() {
        let any = |len: usize| Any {
            type_url: "t".into(),
            value: vec![0; len],
        };
        assert_eq!(recorded_body(Some(&any(10))), Some(any(10)));
        assert_eq!(
            recorded_body(Some(&any(MAX_RECORDED_BODY - 1))),
            Some(any(MAX_RECORDED_BODY - 1))
        );
        assert_eq!(recorded_body(Some(&any(MAX_RECORDED_BODY))), None);
        assert_eq!(recorded_body(None), None);
    }

    fn request(nonce: &str, error: bool) -> DiscoveryRequest {
        DiscoveryRequest {
            response_nonce: nonce.into(),
            error_detail: error.then(|| Status {
                code: 3,
                message: "bad".into(),
                details: vec![],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn recorded_request_keeps_the_error_detail() {
        let recorded = RecordedRequest::new(&request("1", true), RequestKind::Nack);
        assert_eq!(recorded.error_detail, Some((3, "bad".to_string())));
        assert_eq!(recorded.response_nonce, "1");
    }
}
