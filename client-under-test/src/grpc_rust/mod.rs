//! grpc-rust's XdsClient (the crates.io crate `xds-client` 0.1.0-alpha.4,
//! from the tonic repository) behind the client-under-test interface.
//!
//! The crate is a watch-level client: ADS stream management, subscriptions,
//! version/nonce, ACK/NACK, a does-not-exist timer. It has no bootstrap
//! parser, no resource types of its own, no LDS->RDS->CDS->EDS cascade, no
//! gRPC validation and no CSDS, so this adapter supplies:
//!
//! - the bootstrap: parsed with the reference client's parser; the crate
//!   gets every `xds_servers` entry in order (`ClientConfig::with_servers`,
//!   which the crate documents as gRFC A71 fallback; its worker connects
//!   only to the first, `src/client/worker.rs:668`, so the fallback
//!   scenarios are its known failures, not n/a) and the node (id,
//!   cluster, locality, metadata). It has no place for server features.
//!   Channel credentials, per server: `insecure`, or gRFC A65's `tls`,
//!   which becomes what the crate's own `TonicTransportBuilder` takes for
//!   TLS (`with_tls_config_factory`: a tonic `ClientTlsConfig` made on
//!   every connection attempt, here from the bootstrap's certificate
//!   files).
//! - resource types ([`Resource`] impls) for the four types. They only
//!   protobuf-decode the entry and take its name; `validate` accepts
//!   everything, because the crate does no validation and anything more
//!   here would be our semantics, not the client's. So a NACK only ever
//!   comes from an entry that is not a decodable protobuf of the type.
//!   LDS/CDS are "all resources required in SotW", RDS/EDS are not, as the
//!   crate's documentation prescribes.
//! - the transport: [`HarnessTransportBuilder`], the crate's
//!   [`TransportBuilder`] over the harness's byte streams (in memory or
//!   TCP), with the same tonic endpoint settings as the crate's own
//!   `TonicTransportBuilder` (eager connect, 10 s connect timeout, HTTP/2
//!   keepalive 30 s / 10 s). Like that builder it opens a new channel (so a
//!   new connection) on every call, i.e. for every stream attempt.
//! - the runtime: the crate's `TokioRuntime` (`tokio::spawn`,
//!   `tokio::time::sleep`), so it runs on the harness's virtual clock.
//!
//! Watcher events map one to one: a value is `Changed` (summarised with the
//! reference client's decoder so timelines compare across clients),
//! `Err(ResourceDoesNotExist)` is `DoesNotExist`, any other `Err` is a
//! `ResourceError`, `AmbientError` is `AmbientError`. The crate's errors
//! carry no gRPC code except stream errors; the code used for the others is
//! the one the crate itself pairs with them (`INVALID_ARGUMENT` for
//! validation and decode errors, as in its NACKs; `UNAVAILABLE` for
//! connection errors), and the message is the crate's `Display` text.
//!
//! Channels: `dial` and `rpc` go through grpc-rust's xDS channel, the
//! crate `tonic-xds` (`grpc_rust/channel.rs`), which has an XdsClient of its own and
//! runs on real time only.
//!
//! CSDS: the crate has none. Every XdsClient of a run (the watch client and
//! each tonic-xds channel's) reports gRFC A78's resource gauge to one
//! [`ResourceGauge`] (`counts.rs`), which the harness reads as
//! [`crate::Capabilities::resource_counts`].
//!
//! Not tunable from the harness: `rng_seed` (the crate's backoff jitter uses
//! `rand::rng()`, so reconnect times vary by ±20 % from run to run) and
//! `clock_epoch` (no CSDS).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::service::status::v3::ClientStatusResponse;
use envoy_types::pb::google::protobuf::Any;
use hyper_util::rt::TokioIo;
use prost::Message;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, Uri};
use xds_client::message::MetadataValue;
use xds_client::resource::TypeUrl;
use xds_client::{
    ClientConfig, Locality, Node, ProstCodec, Resource, ResourceEvent, ResourceWatcher,
    ServerConfig, TokioRuntime, TonicTransport, TransportBuilder, XdsClient,
};
use xds_reference_client::bootstrap::{ChannelCreds, NodeConfig, TlsCreds};
use xds_reference_client::{Bootstrap, XdsServerConfig};
use xds_vocabulary::transport::{BoxIo, TcpTransport, XdsTransportFactory};
use xds_vocabulary::{ResourceType, XdsError};

mod channel;
mod counts;

use channel::Channels;
pub use channel::with_plaintext_schemes;
pub use counts::ResourceGauge;

/// What grpc-rust is expected to fail in this project's scenarios, and
/// why (the harness's expectations format): in-process, it has no adapter
/// folder to keep the file in, so the file travels in the binary.
pub const EXPECTATIONS: &str = include_str!("expectations.yaml");

/// Where [`EXPECTATIONS`] comes from, for messages.
pub const EXPECTATIONS_FILE: &str = "client-under-test/src/grpc_rust/expectations.yaml";

use crate::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, EventSink, ObservedEvent,
    RpcOutcome, RpcRequest, Transport, WatchStacks, WatcherNotification,
};

/// The `user_agent_name` this adapter puts in the node (the crate requires
/// one and has no default).
pub const USER_AGENT_NAME: &str = "grpc-rust xds-client";
/// The `user_agent_version` this adapter puts in the node.
pub const USER_AGENT_VERSION: &str = "0.1.0-alpha.4";

/// The crate's own `TonicTransportBuilder` defaults, kept for our builder.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// grpc-rust's `xds-client` driven through [`ClientUnderTest`].
#[derive(Default)]
pub struct GrpcRustClient {
    started: Option<Started>,
    watches: WatchStacks<JoinHandle<()>>,
}

struct Started {
    client: XdsClient,
    /// tonic-xds channels; `None` on the in-memory transport, which
    /// tonic-xds cannot use.
    channels: Option<Channels>,
    events: EventSink,
    /// Cuts the transport the crate was given (see [`Cutoff`]).
    cutoff: Cutoff,
    /// gRFC A78's resource gauge of every XdsClient of the run.
    gauge: Arc<ResourceGauge>,
}

impl GrpcRustClient {
    pub fn new() -> Self {
        Self::default()
    }

    fn started(&self) -> Result<&Started, ClientError> {
        self.started
            .as_ref()
            .ok_or_else(|| ClientError::Failed("client not started".into()))
    }

    fn channels(&mut self) -> Result<&mut Channels, ClientError> {
        let started = self
            .started
            .as_mut()
            .ok_or_else(|| ClientError::Failed("client not started".into()))?;
        started.channels.as_mut().ok_or_else(|| {
            ClientError::Unsupported(
                "channels on the in-memory transport (tonic-xds dials its xDS server over TCP only)"
                    .into(),
            )
        })
    }
}

/// What the crate's [`ClientConfig`] is made of, from a bootstrap.
#[derive(Clone, Debug)]
pub struct CrateConfig {
    /// The `xds_servers` entries, in priority order (never empty).
    pub servers: Vec<XdsServerConfig>,
    pub node: Node,
}

impl CrateConfig {
    /// Parses a bootstrap (with the reference client's parser: the crate
    /// has none).
    pub fn from_bootstrap_json(json: &str) -> Result<Self, ClientError> {
        let bootstrap =
            Bootstrap::from_json(json).map_err(|e| ClientError::Failed(e.to_string()))?;
        if bootstrap.xds_servers.is_empty() {
            return Err(ClientError::Failed("bootstrap has no xds_servers".into()));
        }
        Ok(Self {
            servers: bootstrap.xds_servers,
            node: node(bootstrap.node.as_ref()),
        })
    }

    /// The crate's configuration, with its defaults (retry policy, 30 s
    /// resource timeout) untouched.
    pub fn client_config(&self) -> ClientConfig {
        let servers = self
            .servers
            .iter()
            .map(|server| ServerConfig::new(server.server_uri.clone()))
            .collect();
        ClientConfig::with_servers(self.node.clone(), servers)
    }
}

fn node(config: Option<&NodeConfig>) -> Node {
    let mut node = Node::new(USER_AGENT_NAME, USER_AGENT_VERSION);
    let Some(config) = config else {
        return node;
    };
    if !config.id.is_empty() {
        node = node.with_id(config.id.clone());
    }
    if !config.cluster.is_empty() {
        node = node.with_cluster(config.cluster.clone());
    }
    if let Some((region, zone, sub_zone)) = &config.locality {
        node = node.with_locality(Locality {
            region: region.clone(),
            zone: zone.clone(),
            sub_zone: sub_zone.clone(),
        });
    }
    if let Some(metadata) = &config.metadata {
        node = node.with_metadata(
            metadata
                .iter()
                .map(|(k, v)| (k.clone(), metadata_value(v)))
                .collect(),
        );
    }
    node
}

fn metadata_value(value: &Value) -> MetadataValue {
    match value {
        Value::Null => MetadataValue::Null,
        Value::Bool(b) => MetadataValue::Bool(*b),
        Value::Number(n) => MetadataValue::Number(n.as_f64().unwrap_or_default()),
        Value::String(s) => MetadataValue::String(s.clone()),
        Value::Array(items) => MetadataValue::Array(items.iter().map(metadata_value).collect()),
        Value::Object(fields) => MetadataValue::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), metadata_value(v)))
                .collect::<HashMap<_, _>>(),
        ),
    }
}

// ---------------------------------------------------------------------------
// Resource types

/// A proto type the adapter watches through the crate.
pub trait WatchedProto: Message + Default + Send + Sync + 'static {
    const RESOURCE_TYPE: ResourceType;
    const TYPE_URL: &'static str;
    fn resource_name(&self) -> &str;
}

impl WatchedProto for Listener {
    const RESOURCE_TYPE: ResourceType = ResourceType::Listener;
    const TYPE_URL: &'static str = "type.googleapis.com/envoy.config.listener.v3.Listener";
    fn resource_name(&self) -> &str {
        &self.name
    }
}

impl WatchedProto for RouteConfiguration {
    const RESOURCE_TYPE: ResourceType = ResourceType::RouteConfiguration;
    const TYPE_URL: &'static str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
    fn resource_name(&self) -> &str {
        &self.name
    }
}

impl WatchedProto for Cluster {
    const RESOURCE_TYPE: ResourceType = ResourceType::Cluster;
    const TYPE_URL: &'static str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
    fn resource_name(&self) -> &str {
        &self.name
    }
}

impl WatchedProto for ClusterLoadAssignment {
    const RESOURCE_TYPE: ResourceType = ResourceType::ClusterLoadAssignment;
    const TYPE_URL: &'static str =
        "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
    fn resource_name(&self) -> &str {
        &self.cluster_name
    }
}

/// The crate's view of one resource of type `P`: decoded, not validated.
#[derive(Debug)]
pub struct Watched<P> {
    pub name: String,
    /// The entry's bytes as received.
    pub bytes: Bytes,
    _proto: PhantomData<fn() -> P>,
}

/// [`Resource::Message`] of [`Watched`]: the decoded proto and its bytes.
#[derive(Debug)]
pub struct Decoded<P> {
    pub proto: P,
    pub bytes: Bytes,
}

impl<P: WatchedProto> Resource for Watched<P> {
    type Message = Decoded<P>;

    const TYPE_URL: TypeUrl = TypeUrl::new(P::TYPE_URL);

    const ALL_RESOURCES_REQUIRED_IN_SOTW: bool = matches!(
        P::RESOURCE_TYPE,
        ResourceType::Listener | ResourceType::Cluster
    );

    fn deserialize(bytes: Bytes) -> xds_client::Result<Self::Message> {
        let proto = P::decode(bytes.clone())?;
        Ok(Decoded { proto, bytes })
    }

    fn name(message: &Self::Message) -> &str {
        message.proto.resource_name()
    }

    fn validate(message: Self::Message) -> xds_client::Result<Self> {
        Ok(Self {
            name: message.proto.resource_name().to_string(),
            bytes: message.bytes,
            _proto: PhantomData,
        })
    }
}

impl<P: WatchedProto> Watched<P> {
    /// A one-line description in the reference client's style, when the
    /// reference decoder accepts the resource; otherwise a generic one.
    pub fn summary(&self) -> String {
        let any = Any {
            type_url: P::TYPE_URL.to_string(),
            value: self.bytes.to_vec(),
        };
        match crate::summary::of_entry(P::RESOURCE_TYPE, &any) {
            Ok(summary) => summary,
            Err(e) => format!(
                "{} {:?} ({} bytes, accepted unvalidated; the reference client would reject it: {e})",
                P::RESOURCE_TYPE.short_name(),
                self.name,
                self.bytes.len()
            ),
        }
    }
}

// ---------------------------------------------------------------------------
// Events

/// The harness's view of one event of the crate's watcher.
pub fn notification<P: WatchedProto>(event: &ResourceEvent<Watched<P>>) -> WatcherNotification {
    match event {
        ResourceEvent::ResourceChanged {
            result: Ok(resource),
            ..
        } => WatcherNotification::Changed {
            summary: resource.summary(),
        },
        ResourceEvent::ResourceChanged {
            result: Err(xds_client::Error::ResourceDoesNotExist),
            ..
        } => WatcherNotification::DoesNotExist,
        ResourceEvent::ResourceChanged { result: Err(e), .. } => {
            WatcherNotification::ResourceError(xds_error(e))
        }
        ResourceEvent::AmbientError { error, .. } => {
            WatcherNotification::AmbientError(xds_error(error))
        }
    }
}

/// The crate's error as a gRPC status (see the module docs for the codes).
pub fn xds_error(error: &xds_client::Error) -> XdsError {
    use xds_client::Error;
    let code = match error {
        Error::Stream(status) => status.code(),
        Error::Connection(_) | Error::StreamClosed => tonic::Code::Unavailable,
        Error::Validation(_) | Error::Decode(_) => tonic::Code::InvalidArgument,
        Error::ResourceDoesNotExist => tonic::Code::NotFound,
        _ => tonic::Code::Unknown,
    };
    XdsError::new(code, error.to_string())
}

/// Forwards every event of `watcher` to `sink`, releasing the crate's
/// flow-control token after the sink returns.
async fn pump<P: WatchedProto>(
    mut watcher: ResourceWatcher<Watched<P>>,
    name: String,
    sink: EventSink,
) {
    while let Some(event) = watcher.next().await {
        // A wildcard watch (the empty name) hears of many resources: a
        // value names its own; an error of one does not say whose, and is
        // told as the wildcard's.
        let name = match (&event, name.as_str()) {
            (
                ResourceEvent::ResourceChanged {
                    result: Ok(resource),
                    ..
                },
                "",
            ) => resource.name.clone(),
            (_, "") => "*".to_string(),
            (_, named) => named.to_string(),
        };
        sink(ObservedEvent::Watcher {
            resource_type: P::RESOURCE_TYPE,
            name,
            notification: notification(&event),
        });
        drop(event);
    }
}

async fn start_watch<P: WatchedProto>(
    client: &XdsClient,
    name: &str,
    sink: EventSink,
) -> JoinHandle<()> {
    // The watch command is queued before this returns, so commands reach
    // the crate's worker in the order the harness gave them.
    let watcher = client.watch::<Watched<P>>(name).await;
    tokio::spawn(pump(watcher, name.to_string(), sink))
}

// ---------------------------------------------------------------------------
// Transport

/// Ends the connections of a [`HarnessTransportBuilder`] and refuses new
/// ones, when set or dropped. The crate cannot be stopped (its worker holds
/// a sender of its own command channel, so it outlives every handle), so
/// this is how the adapter takes the client off the network at shutdown.
#[derive(Debug)]
pub struct Cutoff(watch::Sender<bool>);

impl Cutoff {
    pub fn cut(&self) {
        self.0.send_replace(true);
    }
}

/// The crate's [`TransportBuilder`] over the harness's byte streams.
#[derive(Clone)]
pub struct HarnessTransportBuilder {
    factory: Arc<dyn XdsTransportFactory>,
    cut: watch::Receiver<bool>,
    /// TLS to each server that has gRFC A65 `tls` channel credentials, by
    /// `server_uri`; a server not here is plaintext.
    tls: BTreeMap<String, TlsCreds>,
}

impl HarnessTransportBuilder {
    pub fn new(factory: Arc<dyn XdsTransportFactory>) -> (Self, Cutoff) {
        let (tx, rx) = watch::channel(false);
        (
            Self {
                factory,
                cut: rx,
                tls: BTreeMap::new(),
            },
            Cutoff(tx),
        )
    }

    /// For `transport`: the in-memory network, or TCP to `server_uri`.
    pub fn for_transport(transport: &Transport) -> (Self, Cutoff) {
        let factory: Arc<dyn XdsTransportFactory> = match transport {
            Transport::InMemory { xds, .. } => xds.clone(),
            Transport::Tcp => Arc::new(TcpTransport),
        };
        Self::new(factory)
    }

    /// Secures the channel to each server as its `channel_creds` say.
    pub fn with_channel_creds(mut self, servers: &[XdsServerConfig]) -> Self {
        self.tls = servers
            .iter()
            .filter_map(|server| match &server.channel_creds {
                ChannelCreds::Insecure => None,
                ChannelCreds::Tls(tls) => Some((server.server_uri.clone(), tls.clone())),
            })
            .collect();
        self
    }

    fn is_cut(&self) -> bool {
        *self.cut.borrow() || self.cut.has_changed().is_err()
    }
}

impl std::fmt::Debug for HarnessTransportBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessTransportBuilder")
            .finish_non_exhaustive()
    }
}

impl TransportBuilder for HarnessTransportBuilder {
    type Transport = TonicTransport;

    async fn build(&self, server: &ServerConfig) -> xds_client::Result<TonicTransport> {
        if self.is_cut() {
            return Err(xds_client::Error::Connection("client shut down".into()));
        }
        let target = server.uri().to_string();
        // The URI only sets :authority (and, over TLS, the name the
        // server's certificate must match); the connector decides where
        // bytes go. tonic handshakes for an `https` URI.
        let tls = self.tls.get(server.uri());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let endpoint = Endpoint::from_shared(format!("{scheme}://{}", authority_of(server.uri())))
            .map_err(|e| xds_client::Error::Connection(e.to_string()))?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        // As the crate's own builder does with a TLS config factory: made
        // on every attempt, so the files are read afresh each time.
        let endpoint = match tls {
            Some(tls) => endpoint
                .tls_config(tonic_tls_config(tls)?)
                .map_err(|e| xds_client::Error::TlsConfig(Box::new(e)))?,
            None => endpoint,
        };
        let factory = self.factory.clone();
        let cut = self.cut.clone();
        let connector = tower::service_fn(move |_uri: Uri| {
            let factory = factory.clone();
            let target = target.clone();
            let cut = cut.clone();
            async move {
                let io = factory.connect(&target).await?;
                Ok::<_, io::Error>(TokioIo::new(CuttableIo::new(io, cut)))
            }
        });
        let channel = endpoint
            .connect_with_connector(connector)
            .await
            .map_err(|e| xds_client::Error::Connection(error_chain(&e)))?;
        Ok(TonicTransport::from_channel(channel))
    }
}

/// tonic's client TLS settings for A65 `tls` credentials: the roots, and
/// the identity for mTLS.
fn tonic_tls_config(tls: &TlsCreds) -> xds_client::Result<ClientTlsConfig> {
    let read = |path: &std::path::Path| {
        xds_vocabulary::files::read_regular(path, 1 << 20).map_err(|e| {
            xds_client::Error::TlsConfig(format!("cannot read {}: {e}", path.display()).into())
        })
    };
    let ca = tls.ca_certificate_file.as_deref().ok_or_else(|| {
        // A65 would take the system's roots; this build of tonic has none.
        xds_client::Error::TlsConfig("no ca_certificate_file (no system roots here)".into())
    })?;
    let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca)?));
    if let Some((certificate, key)) = &tls.identity {
        config = config.identity(Identity::from_pem(read(certificate)?, read(key)?));
    }
    Ok(config)
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        message.push_str(": ");
        message.push_str(&e.to_string());
        source = e.source();
    }
    message
}

fn authority_of(server_uri: &str) -> String {
    let s = server_uri
        .trim_start_matches("dns:///")
        .trim_start_matches("http://");
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:[]".contains(c))
    {
        s.to_string()
    } else {
        "xds-server".to_string()
    }
}

/// A connection that fails (and lets go of its byte stream) once its
/// [`Cutoff`] is set or dropped.
struct CuttableIo {
    inner: Option<BoxIo>,
    cut: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl CuttableIo {
    fn new(inner: BoxIo, mut cut: watch::Receiver<bool>) -> Self {
        Self {
            inner: Some(inner),
            cut: Box::pin(async move {
                // Err: the Cutoff was dropped, which cuts too.
                let _ = cut.wait_for(|cut| *cut).await;
            }),
        }
    }

    /// The live stream, or None once cut. Polling the cut registers the
    /// caller's waker, so a pending read or write wakes up when it happens.
    fn live(&mut self, cx: &mut Context<'_>) -> Option<&mut BoxIo> {
        if self.inner.is_some() && self.cut.as_mut().poll(cx).is_ready() {
            self.inner = None;
        }
        self.inner.as_mut()
    }
}

fn cut_error() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "client shut down")
}

impl AsyncRead for CuttableIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.live(cx) {
            Some(io) => Pin::new(io).poll_read(cx, buf),
            None => Poll::Ready(Err(cut_error())),
        }
    }
}

impl AsyncWrite for CuttableIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.live(cx) {
            Some(io) => Pin::new(io).poll_write(cx, buf),
            None => Poll::Ready(Err(cut_error())),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.live(cx) {
            Some(io) => Pin::new(io).poll_flush(cx),
            None => Poll::Ready(Err(cut_error())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.live(cx) {
            Some(io) => Pin::new(io).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    // Passed on whole, as a socket takes them: a TLS stack's last write
    // before it gives up (its alert) is one vectored write, of which the
    // default would pass on only the first buffer.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.live(cx) {
            Some(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            None => Poll::Ready(Err(cut_error())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.as_ref().is_some_and(|io| io.is_write_vectored())
    }
}

/// Builds the crate's client as the adapter does, for `transport`,
/// reporting its A78 resource gauge to `gauge`.
pub fn build_client(
    config: &CrateConfig,
    transport: &Transport,
    gauge: Arc<ResourceGauge>,
) -> (XdsClient, Cutoff) {
    let (builder, cutoff) = HarnessTransportBuilder::for_transport(transport);
    let builder = builder.with_channel_creds(&config.servers);
    let client = XdsClient::builder(config.client_config(), builder, ProstCodec, TokioRuntime)
        .with_metrics_recorder(gauge)
        .build();
    (client, cutoff)
}

// ---------------------------------------------------------------------------
// The adapter

#[async_trait::async_trait]
impl ClientUnderTest for GrpcRustClient {
    fn name(&self) -> &str {
        "grpc-rust"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            watch: true,
            projected_watch: false,
            dial: true,
            rpc: true,
            dial_config: false,
            csds: false,
            resource_counts: true,
            csds_service: false,
            watch_in_callback: false,
            read_flow_control: false,
            background_rpc: false,
            client_events: false,
            logs: Vec::new(),
            serve: false,
            delta: false,
            virtual_time: true,
            channels_need_real_time: true,
            channel_states: false,
            grpc_bootstrap: true,
            authorities: true,
            named_lds_cds: true,
            wildcard_watch: true,
            proxy: false,
            connects_at_start: false,
            admin: false,
            kds_zone: false,
            // An in-process crate reads the process's environment, which
            // every run in the harness shares: a run cannot set its own.
            env: false,
            env_not_read: BTreeMap::new(),
            profiles: Vec::new(),
        }
    }

    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        if let Some(profile) = &env.profile {
            return Err(ClientError::Unsupported(format!(
                "profile \"{profile}\" (grpc-rust has none)"
            )));
        }
        let config = CrateConfig::from_bootstrap_json(&env.bootstrap.grpc_json())?;
        let gauge = ResourceGauge::new();
        let (client, cutoff) = build_client(&config, &env.transport, gauge.clone());
        let channels = matches!(env.transport, Transport::Tcp)
            .then(|| Channels::new(&env.bootstrap.grpc_json(), gauge.clone()));
        self.started = Some(Started {
            client,
            channels,
            events: env.events,
            cutoff,
            gauge,
        });
        Ok(())
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        let started = self.started()?;
        let client = &started.client;
        let sink = started.events.clone();
        // xds-client's wildcard watch is the empty name
        // (`WatcherSubscription::from_name` in its client/worker.rs); `*`
        // would be a watch of a resource named `*`.
        let watched = if name == "*" { "" } else { name };
        let task = match resource_type {
            ResourceType::Listener => start_watch::<Listener>(client, watched, sink).await,
            ResourceType::RouteConfiguration => {
                start_watch::<RouteConfiguration>(client, watched, sink).await
            }
            ResourceType::Cluster => start_watch::<Cluster>(client, watched, sink).await,
            ResourceType::ClusterLoadAssignment => {
                start_watch::<ClusterLoadAssignment>(client, watched, sink).await
            }
        };
        self.watches.push(resource_type, name, task);
        Ok(())
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        let task = self.watches.pop(resource_type, name)?;
        stop(task).await;
        Ok(())
    }

    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        self.channels()?.dial(target)
    }

    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.channels()?.rpc(request).await
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        Err(ClientError::Unsupported(
            "csds (grpc-rust's xds-client has none; its A78 resource gauge stands in)".into(),
        ))
    }

    async fn resource_counts(&mut self) -> Result<crate::ResourceCounts, ClientError> {
        Ok(self.started()?.gauge.snapshot())
    }

    async fn zone_set(
        &mut self,
        _resources: Vec<xds_vocabulary::kds::KdsResource>,
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported("a Kuma zone (KDS)".into()))
    }

    async fn zone_remove(
        &mut self,
        _kuma_type: &str,
        _names: &[xds_vocabulary::kds::KdsName],
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported("a Kuma zone (KDS)".into()))
    }

    async fn shutdown(&mut self) {
        let tasks: Vec<_> = self.watches.drain().collect();
        for task in tasks {
            stop(task).await;
        }
        if let Some(mut started) = self.started.take() {
            if let Some(channels) = started.channels.as_mut() {
                channels.close();
            }
            drop(started.client);
            started.cutoff.cut();
        }
    }

    async fn watch_in_callback(
        &mut self,
        _resource_type: ResourceType,
        _name: &str,
        _of: (ResourceType, &str),
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(
            "watches started from a watcher's callback".into(),
        ))
    }

    async fn hold_reads(
        &mut self,
        _resource_type: ResourceType,
        _name: &str,
        _hold: bool,
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(
            "read flow control (a watcher holding the next read)".into(),
        ))
    }

    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!("serve {address}")))
    }

    async fn start_rpc(&mut self, _request: &RpcRequest) -> Result<crate::PendingRpc, ClientError> {
        Err(ClientError::Unsupported("RPCs in the background".into()))
    }

    async fn csds_request(
        &mut self,
        _request: envoy_types::pb::envoy::service::status::v3::ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, xds_vocabulary::XdsError>, ClientError> {
        Err(ClientError::Unsupported("a CSDS service".into()))
    }
}

/// Stops a watch: drops its [`ResourceWatcher`] (which unsubscribes) before
/// returning.
async fn stop(task: JoinHandle<()>) {
    task.abort();
    // Err(cancelled) is the expected outcome; a pump never panics.
    let _ = task.await;
}
