//! The client-under-test interface of xds-conformance: what the harness
//! asks of an xDS client (start from a bootstrap, watch, cancel, dial,
//! dump CSDS, shut down) and what it hears back (watcher notifications,
//! dial updates, the client's own events), plus the adapters that drive
//! real clients through it.
//!
//! It must not know about scenario files, timelines, verdicts or fake
//! servers: an adapter only translates between this interface and a client.

pub mod broken;
mod child;
pub mod connect;
mod containment;
pub mod driven;
pub mod envoy;
/// For the fuzz targets in `fuzz/` and their corpus replay test only.
#[doc(hidden)]
pub mod fuzzing;
pub mod grpc_rust;
mod guardian;
pub mod http1;
pub mod kuma;
mod logged;
mod process;
mod reference;
mod starting;
pub mod summary;

pub use child::remove_temp_files;
pub use containment::RUN_MARK;
pub use driven::driven;
pub use envoy::{EnvoyClient, EnvoyLogging};
pub use grpc_rust::GrpcRustClient;
pub use kuma::KumaZoneClient;
pub use process::{
    AdapterCapabilities, AdapterHello, AdapterLine, AdapterManifest, Driver, EventProblem,
    LineError, LogLevelName, PROTOCOL_VERSION, ProcessClient, ProcessError, ProcessTimeouts,
    event_line, parse_line,
};
pub use reference::ReferenceClient;
/// The reference client's deliberate defects by name, each with the
/// `Defects` that [`ReferenceClient::with_defects`] takes: the harness's
/// tests of the scenarios and its `run --defect NAME` play them.
pub use xds_reference_client::defect;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use std::time::Duration;

use xds_vocabulary::kds::{KdsName, KdsResource, ZoneStoreChange};
use xds_vocabulary::transport::{DataPlaneConnector, XdsTransportFactory};
use xds_vocabulary::{ClientBootstrap, ClientEvent, ResourceType, XdsError};

/// An RPC under way: resolves to how it ended.
pub type PendingRpc =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<RpcOutcome, ClientError>> + Send>>;

/// What a client can be asked to do; a scenario needing more is "not
/// applicable" to it, never "failed". (Its JSON Schema is what the
/// harness's reference docs list.)
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Capabilities {
    /// A resource-level watch API (most clients only offer channels).
    pub watch: bool,
    /// No watch API, but a scenario's watch of a Cluster or an endpoint
    /// resource can be observed through a channel whose config makes the
    /// client's XdsClient watch exactly that resource: the harness serves
    /// that config from a scaffold server ([`WatchProjection`]) and the
    /// client reports what the channel's own watcher of the resource hears.
    pub projected_watch: bool,
    /// A watch can be started from inside a watcher's callback
    /// (`watch_in_callback`).
    pub watch_in_callback: bool,
    /// A watcher can hold the ADS stream's next read (gRPC's
    /// ReadDelayHandle): `hold_reads` / `release_reads`.
    pub read_flow_control: bool,
    /// Channel-level "dial `xds:///target`".
    pub dial: bool,
    /// Data-plane RPCs on a dialled channel.
    pub rpc: bool,
    /// An RPC can be started and left running while other commands go on
    /// (`rpc: {background: true}`).
    pub background_rpc: bool,
    /// Reports the config a dial resolved to (clusters, endpoints); real
    /// gRPC clients don't expose it — they are observed through RPCs,
    /// channel states, CSDS and the wire instead.
    pub dial_config: bool,
    /// Its CSDS view can be read (polled at every checkpoint).
    pub csds: bool,
    /// No CSDS, but gRFC A78's `grpc.xds_client.resources` gauge: how many
    /// resources each XdsClient caches, per type and cache state, without
    /// names. A scenario's `csds` checks are observed through it where it
    /// tells the checked resource apart exactly (the harness's
    /// `projection::csds_counts` says where).
    pub resource_counts: bool,
    /// A real ClientStatusDiscoveryService answers requests the harness
    /// writes (`csds_request` steps: `node_matchers`); Envoy's admin API
    /// only stands in for one.
    pub csds_service: bool,
    /// Reports [`ClientEvent`]s (call lifecycle, backoff, timers); its log
    /// lines are `logs`, below.
    pub client_events: bool,
    /// The levels (`info`, `warning`, `error`) of its own log it reports
    /// as `ClientEvent::Log` lines, each line with the level the client
    /// gave it, none of them debug output or traces. A log check at a
    /// level not listed (a check at no level: any level not listed) is
    /// not applicable to it: a trace line could meet it whether the client
    /// logged or not. In that order, without repeats.
    pub logs: Vec<String>,
    /// xDS-enabled servers (gRFC A36): `serve` and serving-status events.
    pub serve: bool,
    /// Incremental (delta) xDS.
    pub delta: bool,
    /// Runs in-process on the harness's virtual clock.
    pub virtual_time: bool,
    /// Its channels (dial, RPCs) reach the xDS server over real TCP only,
    /// though its watches can run on virtual time: a scenario that dials
    /// or sends RPCs is played on real time (grpc-rust's tonic-xds).
    pub channels_need_real_time: bool,
    /// Reports a dialled channel's connectivity states (gRPC channels do;
    /// a proxy has no channels).
    pub channel_states: bool,
    /// Starts from a gRPC bootstrap file a scenario gives verbatim
    /// (every gRPC client; Envoy has a bootstrap format of its own).
    pub grpc_bootstrap: bool,
    /// gRFC A47 authorities and listener resource name templates.
    pub authorities: bool,
    /// Subscribes to Listeners and Clusters by name. Envoy always asks for
    /// all of them (the wildcard, `names: []`), so a scenario expecting a
    /// named LDS or CDS request cannot be played on it. An adapter of a
    /// client that subscribes only by wildcard declares it `false` (every
    /// other adapter has it without saying).
    pub named_lds_cds: bool,
    /// Its watch API has a wildcard watch: a watch of `*` watches every
    /// resource of a Listener or Cluster type, as api/xds_protocol.rst's
    /// wildcard subscription does. gRPC's XdsClients have none: gRFC A27
    /// has gRPC request "one specific resource by name", and their watch
    /// APIs take a name, `*` being a name like any other; so a scenario
    /// that watches `*` is not applicable to them, rather than failed by a
    /// rule that does not bind them.
    pub wildcard_watch: bool,
    /// A proxy (Envoy): served Listeners are sockets and RPCs go through
    /// them. The harness renders the compact gRPC forms for it (a gRPC
    /// api_listener becomes a socket Listener on a free port; clusters
    /// speak HTTP/2 upstream) and sends `xds:///svc` RPCs to the port of the
    /// Listener named `svc`, with authority `svc`.
    pub proxy: bool,
    /// Connects to its xDS servers as soon as it starts, before any watch
    /// or dial (Envoy): the runner starts it after the scenario's leading
    /// server steps (faults, resources), at its first step that is not
    /// one, and what it sends from its start on counts as that step's.
    pub connects_at_start: bool,
    /// Reports what its admin API shows (Envoy's `/config_dump`, `/stats`)
    /// as [`ObservedEvent::Admin`].
    pub admin: bool,
    /// Takes environment variables a scenario sets for it (`client: {env:
    /// ...}`, e.g. gRFC A71's `GRPC_EXPERIMENTAL_XDS_FALLBACK`) at its
    /// start. A client in its own process has them in its environment; an
    /// in-process client has them only if it reads
    /// [`ClientEnvironment::env`] instead of the harness's own
    /// environment, which every run in the process shares.
    pub env: bool,
    /// Environment variables a scenario may set that this client does not
    /// read, each with why: the switches of a temporary protection a gRFC
    /// names, which this release has removed, behaving as the protection's
    /// last stage (gRFC A71's `GRPC_EXPERIMENTAL_XDS_FALLBACK`: grpc-go and
    /// C-core 1.85 fall back with nothing to turn it off). A rule about
    /// the switch's other settings does not bind such a client: a scenario
    /// that sets one is not applicable to it. Declared by its adapter
    /// (`adapter.json`'s `env_not_read`), with the source line as the why;
    /// empty for a client that reads every variable a scenario can set.
    pub env_not_read: BTreeMap<String, String>,
    /// Plays a Kuma zone control plane against its global over KDS
    /// (`kuma.mesh.v1alpha1.KDSSyncService`): a scenario with a `zone`
    /// section. It reports what it stores as [`ObservedEvent::Zone`] and
    /// takes zone-origin resources ([`ClientUnderTest::zone_set`]).
    pub kds_zone: bool,
    /// Named behaviour profiles it accepts.
    pub profiles: Vec<String>,
}

impl Capabilities {
    /// A Kuma zone that speaks KDS alone (kuma-cp): it claims
    /// [`kds_zone`](Self::kds_zone) and is started neither from a gRPC
    /// bootstrap nor as a proxy, so it speaks no ADS, and a scenario
    /// without a `zone` has nothing for it to play.
    pub fn kds_only(&self) -> bool {
        self.kds_zone && !self.grpc_bootstrap && !self.proxy
    }
}

/// One bucket of gRFC A78's `grpc.xds_client.resources` gauge.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceCountKey {
    /// The XdsClient's `grpc.target` (one XdsClient per channel target in
    /// gRPC; CSDS calls it the client scope).
    pub target: String,
    /// `grpc.xds.authority` (gRFC A47; empty for the default one).
    pub authority: String,
    /// `grpc.xds.resource_type`: a type URL.
    pub type_url: String,
    /// `grpc.xds.cache_state`: `requested`, `does_not_exist`, `acked`,
    /// `nacked` or `nacked_but_cached`.
    pub cache_state: String,
}

/// The gauge's last value per bucket (see [`Capabilities::resource_counts`]).
pub type ResourceCounts = BTreeMap<ResourceCountKey, i64>;

/// How the client reaches the fake servers and the backends.
#[derive(Clone)]
pub enum Transport {
    /// In-process byte streams (virtual time): to xDS servers by
    /// `server_uri`, to backends by endpoint address.
    InMemory {
        xds: Arc<dyn XdsTransportFactory>,
        data_plane: Arc<dyn DataPlaneConnector>,
    },
    /// Real TCP to the addresses in the bootstrap and in EDS.
    Tcp,
}

/// Receives everything the client reports, in order.
pub type EventSink = Arc<dyn Fn(ObservedEvent) + Send + Sync>;

/// Everything a client starts from.
#[derive(Clone)]
pub struct ClientEnvironment {
    /// The bootstrap as data; each client renders its own format.
    pub bootstrap: ClientBootstrap,
    /// For a client with [`Capabilities::projected_watch`] in a scenario
    /// with watches: the channel through which each watch is observed.
    pub projection: Option<WatchProjection>,
    pub transport: Transport,
    /// Seed for anything random in the client (backoff jitter).
    pub rng_seed: u64,
    /// A named behaviour profile; None = the client's default.
    pub profile: Option<String>,
    /// Wall-clock time at start, so CSDS timestamps are deterministic.
    pub clock_epoch: SystemTime,
    pub events: EventSink,
    /// A KDS run: the client plays this zone, its global being the
    /// bootstrap's first server (see [`Capabilities::kds_zone`]).
    pub zone: Option<ZoneSettings>,
    /// Environment variables the scenario sets for the client (`client:
    /// {env: ...}`; see [`Capabilities::env`]): a process adapter gets
    /// them in its environment, an in-process client reads them here.
    pub env: BTreeMap<String, String>,
}

/// A Kuma zone's start (KDS runs).
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneSettings {
    /// The zone's name: its `client-id` header and `node.id`.
    pub name: String,
    /// Zone-origin resources it holds from the start (Dataplanes, ...).
    pub resources: Vec<KdsResource>,
    /// How often it publishes its own resources to the global (Kuma's
    /// KDS refresh interval); `None`: the zone's default (the reference
    /// zone: each change at once; kuma-cp: 1 s).
    pub refresh_interval: Option<Duration>,
}

/// Where a client without a watch API observes a scenario's watches: a
/// channel to `target` whose `:authority` picks the virtual host that
/// routes to the watched resource (see `harness/src/projection.rs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchProjection {
    /// The channel target every projected watch dials, e.g.
    /// `xds://xds-conformance-scaffold/watches`.
    pub target: String,
    /// The watched resource -> the authority of its channel.
    pub authorities: BTreeMap<(ResourceType, String), String>,
}

/// What the harness observes from a client.
#[derive(Clone, Debug, PartialEq)]
pub enum ObservedEvent {
    Watcher {
        resource_type: ResourceType,
        name: String,
        notification: WatcherNotification,
    },
    Dial {
        target: String,
        update: DialNotification,
    },
    /// A dialled channel's connectivity state changed.
    ChannelState {
        target: String,
        state: ConnectivityState,
    },
    /// An xDS-enabled server's serving status changed (gRFC A36).
    ServingStatus {
        /// The listening address, `ip:port`.
        address: String,
        /// Ok: SERVING; Err: NOT_SERVING, and why.
        status: Result<(), XdsError>,
    },
    Client(ClientEvent),
    /// A Kuma zone's store changed (KDS runs): what it holds from its
    /// global, as a watcher's notifications tell what an xDS client holds.
    Zone(ZoneStoreChange),
    /// What a proxy's admin API shows changed (Envoy: `/config_dump`,
    /// `/stats`); the analogue of CSDS for a client without it.
    Admin(AdminObservation),
}

/// One change seen through a proxy's admin API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminObservation {
    /// A resource as the config dump shows it.
    Resource {
        resource_type: ResourceType,
        name: String,
        /// None where the dump shows none (Envoy: endpoints).
        version: Option<String>,
        state: AdminResourceState,
        /// What the dump says beyond that: the endpoint addresses of a
        /// ClusterLoadAssignment, the details of a rejected Listener.
        detail: String,
    },
    /// A counter or gauge changed (`cluster_manager.cds.update_rejected`).
    Stat { name: String, value: u64 },
}

/// A resource's state in a config dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AdminResourceState {
    /// In use (Envoy: `dynamic_active_clusters`, a Listener's
    /// `active_state`, a route config or endpoint entry).
    Active,
    /// Accepted, waiting for its dependencies (a cluster's endpoints, a
    /// listener's routes) before it is used.
    Warming,
    /// The last update of it was rejected (Envoy shows this for Listeners
    /// only: `error_state`).
    Rejected,
    /// Removed, finishing what it was doing (a Listener's connections).
    Draining,
    /// No longer in the dump.
    Removed,
}

impl AdminResourceState {
    pub fn name(self) -> &'static str {
        match self {
            AdminResourceState::Active => "active",
            AdminResourceState::Warming => "warming",
            AdminResourceState::Rejected => "rejected",
            AdminResourceState::Draining => "draining",
            AdminResourceState::Removed => "removed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            AdminResourceState::Active,
            AdminResourceState::Warming,
            AdminResourceState::Rejected,
            AdminResourceState::Draining,
            AdminResourceState::Removed,
        ]
        .into_iter()
        .find(|state| state.name() == s)
    }
}

/// gRPC channel connectivity states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConnectivityState {
    Idle,
    Connecting,
    Ready,
    TransientFailure,
    Shutdown,
}

impl ConnectivityState {
    pub fn name(self) -> &'static str {
        match self {
            ConnectivityState::Idle => "IDLE",
            ConnectivityState::Connecting => "CONNECTING",
            ConnectivityState::Ready => "READY",
            ConnectivityState::TransientFailure => "TRANSIENT_FAILURE",
            ConnectivityState::Shutdown => "SHUTDOWN",
        }
    }

    pub const ALL: [ConnectivityState; 5] = [
        ConnectivityState::Idle,
        ConnectivityState::Connecting,
        ConnectivityState::Ready,
        ConnectivityState::TransientFailure,
        ConnectivityState::Shutdown,
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
    }
}

pub use xds_vocabulary::data_plane::BACKEND_METHOD;

/// One unary RPC on a dialled channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcRequest {
    pub target: String,
    /// Full method path, default [`BACKEND_METHOD`].
    pub method: String,
    pub timeout: Duration,
    pub wait_for_ready: bool,
    /// For a proxy ([`Capabilities::proxy`]): `target` is the address of
    /// the Listener serving the scenario's target, and this the authority
    /// to send (the route's domain).
    pub authority: Option<String>,
}

/// How an RPC ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcOutcome {
    pub code: tonic::Code,
    pub message: String,
    /// The backend that answered (its name), when the RPC succeeded.
    pub backend: Option<String>,
}

/// A watcher notification, in terms any client can report.
#[derive(Clone, Debug, PartialEq)]
pub enum WatcherNotification {
    /// A new value; `summary` is a one-line description of it.
    Changed {
        summary: String,
    },
    ResourceError(XdsError),
    AmbientError(XdsError),
    AmbientErrorCleared,
    DoesNotExist,
}

/// A dial update, in terms any client can report.
#[derive(Clone, Debug, PartialEq)]
pub enum DialNotification {
    /// The config a channel would use: per cluster, its endpoint addresses
    /// (aggregate clusters list their leaves' addresses) or its error.
    Config {
        summary: String,
        clusters: BTreeMap<String, Result<Vec<String>, XdsError>>,
    },
    /// The error RPCs on the channel would fail with.
    Error(XdsError),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The client cannot do this (see [`Capabilities`]).
    #[error("not supported by this client: {0}")]
    Unsupported(String),
    /// The client refused or failed the command.
    #[error("client error: {0}")]
    Failed(String),
    /// The client process died; its last stderr lines.
    #[error("client crashed: {reason}\n{stderr_tail}")]
    Crashed { reason: String, stderr_tail: String },
}

/// The watches an adapter holds, per resource, most recent last: the
/// interface cancels "the most recent watcher of the resource".
#[derive(Debug)]
pub(crate) struct WatchStacks<T>(std::collections::BTreeMap<(ResourceType, String), Vec<T>>);

impl<T> Default for WatchStacks<T> {
    fn default() -> Self {
        WatchStacks(Default::default())
    }
}

impl<T> WatchStacks<T> {
    pub(crate) fn push(&mut self, resource_type: ResourceType, name: &str, watch: T) {
        self.0
            .entry((resource_type, name.to_string()))
            .or_default()
            .push(watch);
    }

    /// The most recent watch of the resource.
    pub(crate) fn last(&self, resource_type: ResourceType, name: &str) -> Option<&T> {
        self.0
            .get(&(resource_type, name.to_string()))
            .and_then(|stack| stack.last())
    }

    pub(crate) fn pop(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<T, ClientError> {
        self.0
            .get_mut(&(resource_type, name.to_string()))
            .and_then(Vec::pop)
            .ok_or_else(|| ClientError::Failed(format!("no watch on {resource_type} {name}")))
    }

    /// The resources watched now (a stack its cancels emptied is not).
    pub(crate) fn watched(&self) -> impl Iterator<Item = (ResourceType, &str)> {
        self.0
            .iter()
            .filter(|(_, stack)| !stack.is_empty())
            .map(|((resource_type, name), _)| (*resource_type, name.as_str()))
    }

    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> {
        std::mem::take(&mut self.0).into_values().flatten()
    }
}

/// An xDS client the harness can drive.
///
/// Every command is a required method, even those behind a capability
/// (`watch_in_callback`, `hold_reads`, `serve`, `start_rpc`,
/// `csds_request`): a client without the capability answers
/// [`ClientError::Unsupported`] on purpose, and one that claims it cannot
/// forget to implement it. A scenario needing a capability the client
/// does not claim is not applicable and never reaches the method.
#[async_trait::async_trait]
pub trait ClientUnderTest: Send {
    fn name(&self) -> &str;
    fn capabilities(&self) -> Capabilities;
    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError>;
    /// Adds a watcher for the resource.
    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError>;
    /// Arms the most recent watcher of `of`: inside its next callback, it
    /// starts a watch of `resource_type` `name` (a client must not
    /// deadlock on that). That watch is not cancelled.
    async fn watch_in_callback(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        of: (ResourceType, &str),
    ) -> Result<(), ClientError>;
    /// `hold`: from now on the most recent watcher of the resource keeps
    /// the read handle of every notification (the stream reads nothing
    /// more meanwhile); not `hold`: it lets go of them and stops.
    async fn hold_reads(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        hold: bool,
    ) -> Result<(), ClientError>;
    /// Removes the most recent watcher of the resource.
    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError>;
    /// Starts resolving `target` as a channel would.
    async fn dial(&mut self, target: &str) -> Result<(), ClientError>;
    /// Starts an xDS-enabled server listening on `address` (`ip:port`):
    /// it watches its Listener through the client scope `#server` and
    /// reports [`ObservedEvent::ServingStatus`].
    async fn serve(&mut self, address: &str) -> Result<(), ClientError>;
    /// Sends one RPC on the channel to `request.target` (dialling it first
    /// if needed) and reports how it ended.
    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError>;
    /// Starts one RPC like [`ClientUnderTest::rpc`] and returns at once:
    /// the future is how it ends, while other commands go on (see
    /// [`Capabilities::background_rpc`]).
    async fn start_rpc(&mut self, request: &RpcRequest) -> Result<PendingRpc, ClientError>;
    /// The client's CSDS view: one ClientConfig per client scope.
    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError>;
    /// gRFC A78's resource counts (see [`Capabilities::resource_counts`]).
    async fn resource_counts(&mut self) -> Result<ResourceCounts, ClientError>;
    /// Sends `request` to the client's CSDS service: its response, or the
    /// gRPC status it answered with (see [`Capabilities::csds_service`]).
    async fn csds_request(
        &mut self,
        request: ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, XdsError>, ClientError>;
    /// A KDS zone ([`Capabilities::kds_zone`]): adds or replaces these
    /// zone-origin resources, which it then syncs to its global.
    async fn zone_set(&mut self, resources: Vec<KdsResource>) -> Result<(), ClientError>;
    /// A KDS zone: deletes these zone-origin resources of `kuma_type`.
    async fn zone_remove(&mut self, kuma_type: &str, names: &[KdsName]) -> Result<(), ClientError>;
    /// The client's peak resident set size so far, in bytes, when it can be
    /// told apart from the harness's own (a client in its own process);
    /// None otherwise. Read before [`ClientUnderTest::shutdown`].
    fn peak_rss_bytes(&self) -> Option<u64> {
        None
    }
    async fn shutdown(&mut self);
}
