//! Scenarios: the file format engineers write (`file`), and the checked,
//! ready-to-run form the runner plays (this module's types).
//!
//! Loading goes file text -> `file::ScenarioFile` (serde, located syntax
//! errors) -> `Scenario` (names resolved, resources built into wire
//! entries, durations parsed, matchers compiled; located semantic errors).

pub mod duration;
pub mod file;
mod load;
pub mod proto_json;
mod resources;
mod schema;

pub use load::{ScenarioError, load_file, load_str};
pub use schema::scenario_schema;

use std::collections::BTreeMap;
use std::time::Duration;

use xds_fake_server::ServedResource;
use xds_vocabulary::{LogLevel, RequestKind, ResourceType};

/// The address of the `index`-th backend in resources, in the RFC 2544
/// benchmarking range (valid IPs that no real network uses). Runs over real
/// TCP rewrite them to the backends' actual addresses.
pub fn backend_address(index: usize) -> String {
    format!("198.18.{}.{}:8080", index / 250, index % 250 + 1)
}

/// A source position, for error messages and failure reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u64,
    pub column: u64,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A checked scenario, ready to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// e.g. `a46/nack-keeps-valid-resources`.
    pub name: String,
    pub description: String,
    /// Spec tags: `A27`, `A46`, ...
    pub spec: Vec<String>,
    /// Selection tags (`--skip-tag`).
    pub tags: Vec<String>,
    /// In declaration order (the default bootstrap lists them in this order).
    pub servers: Vec<ServerDef>,
    /// Data-plane backends, in declaration order; backend `i` listens at
    /// [`backend_address`]`(i)`.
    pub backends: Vec<String>,
    pub bootstrap: BootstrapPlan,
    pub client: ClientPlan,
    pub steps: Vec<StepDef>,
    /// Client name -> why it is known to fail this scenario.
    pub known_failures: BTreeMap<String, String>,
    /// Compare the timeline against a stored snapshot.
    pub snapshot: bool,
    /// Clients whose timeline is not compared with a snapshot, and why.
    pub no_snapshot_for: BTreeMap<String, String>,
    pub source: String,
}

#[derive(Clone, Debug)]
pub struct ServerDef {
    pub name: String,
    pub scripted: bool,
    pub server_features: Vec<String>,
    /// Resources the server holds when the scenario starts.
    pub resources: Vec<ServedResource>,
    pub max_connection_age: Option<xds_fake_server::MaxConnectionAge>,
}

#[derive(Clone, Debug)]
pub enum BootstrapPlan {
    /// Generated from the servers: the listed ones (default: all, in
    /// order) as top-level `xds_servers`, plus node and authorities.
    Generated {
        servers: Vec<String>,
        node_id: String,
        node_cluster: String,
        locality: (String, String, String),
        client_default_listener_resource_name_template: Option<String>,
        server_listener_resource_name_template: Option<String>,
        /// name -> (servers, listener template)
        authorities: BTreeMap<String, (Vec<String>, Option<String>)>,
    },
    /// Given verbatim; `${server:NAME}` is replaced by that server's URI.
    Json(String),
}

#[derive(Clone, Debug, Default)]
pub struct ClientPlan {
    /// Seed of the client's backoff jitter.
    pub seed: u64,
    /// Named client profile (`reference`, `grpc-go-retry`, ...); None = default.
    pub profile: Option<String>,
}

#[derive(Clone, Debug)]
pub struct StepDef {
    pub location: Location,
    pub step: Step,
}

#[derive(Clone, Debug)]
pub enum Step {
    Watch {
        resource_type: ResourceType,
        name: String,
    },
    CancelWatch {
        resource_type: ResourceType,
        name: String,
    },
    Dial {
        target: String,
    },
    Serve {
        address: String,
    },
    Rpc {
        target: String,
        method: String,
        timeout: Duration,
        wait_for_ready: bool,
        count: u32,
        /// Repeat until an RPC ends with this code (see `RpcSpec::until`).
        until: Option<tonic::Code>,
    },
    SetResources {
        server: String,
        resources: Vec<ServedResource>,
        version: Option<String>,
    },
    RemoveResources {
        server: String,
        resource_type: ResourceType,
        names: Vec<String>,
        version: Option<String>,
    },
    SendResponse {
        server: String,
        resource_type: ResourceType,
        version: Option<String>,
        nonce: Option<String>,
        resources: Vec<ServedResource>,
    },
    CloseStream {
        server: String,
        code: tonic::Code,
        message: String,
    },
    RefuseConnections {
        server: String,
    },
    AcceptConnections {
        server: String,
    },
    /// Any other fault verb: `hang`, `resume`, `close_streams_after`,
    /// `keep_streams`.
    Fault {
        server: String,
        fault: xds_fake_server::fault::Fault,
    },
    Wait(Duration),
    Expect {
        matcher: Matcher,
        window: Window,
    },
    ExpectNone {
        matcher: Matcher,
        duration: Duration,
    },
}

/// When an expected event must have happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// At most this long after the step starts.
    Within(Duration),
    /// Exactly at this virtual time since the scenario started (ms precision).
    At(Duration),
}

/// A predicate over timeline events. Every `Some` field must match.
#[derive(Clone, Debug, PartialEq)]
pub enum Matcher {
    Request(RequestMatcher),
    Response(ResponseMatcher),
    Watcher(WatcherMatcher),
    Dial(DialMatcher),
    Csds(CsdsMatcher),
    ServerEvent(ServerEventMatcher),
    Client(ClientEventMatcher),
    Rpc(RpcMatcher),
    Channel(ChannelMatcher),
    Serving(ServingMatcher),
    /// Any alternative will do; some mark a divergence.
    AnyOf(Vec<Alternative>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Alternative {
    pub matcher: Matcher,
    /// Set for an alternative that is a recorded divergence.
    pub divergence: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RpcMatcher {
    pub target: Option<String>,
    pub code: Option<tonic::Code>,
    pub backend: Option<String>,
    pub contains: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChannelMatcher {
    pub target: Option<String>,
    pub state: xds_client_under_test::ConnectivityState,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServingMatcher {
    pub address: Option<String>,
    /// SERVING (true) or NOT_SERVING.
    pub serving: bool,
    pub code: Option<tonic::Code>,
    pub contains: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMatcher {
    pub server: Option<String>,
    pub resource_type: Option<ResourceType>,
    /// Exact set of resource_names (order ignored).
    pub names: Option<Vec<String>>,
    pub version: Option<String>,
    pub nonce: Option<String>,
    pub kind: Option<RequestKind>,
    pub error_code: Option<i32>,
    /// Substrings error_detail.message must all contain.
    pub error_contains: Vec<String>,
    /// Whether the request carries a node.
    pub node: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResponseMatcher {
    pub server: Option<String>,
    pub resource_type: Option<ResourceType>,
    pub names: Option<Vec<String>>,
    pub version: Option<String>,
    pub nonce: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatcherEventKind {
    Changed,
    ResourceError,
    AmbientError,
    AmbientErrorCleared,
    DoesNotExist,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WatcherMatcher {
    pub resource_type: Option<ResourceType>,
    pub name: Option<String>,
    pub event: Option<WatcherEventKind>,
    pub code: Option<tonic::Code>,
    /// Substring of the error message, or of the resource summary.
    pub contains: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DialMatcher {
    pub target: Option<String>,
    /// true: a config; false: an error.
    pub resolved: Option<bool>,
    pub code: Option<tonic::Code>,
    pub contains: Option<String>,
    /// cluster -> its endpoint addresses (exact, order ignored); an empty
    /// list matches a cluster in error or without endpoints.
    pub clusters: Option<BTreeMap<String, Vec<String>>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsdsStatus {
    Requested,
    Acked,
    Nacked,
    DoesNotExist,
    /// gRFC A88: the server sent an error for the resource (xRFC TP3).
    ReceivedError,
    /// gRFC A88: the timer fired under `resource_timer_is_transient_error`.
    Timeout,
    /// Not in the client's CSDS dump at all.
    Absent,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CsdsMatcher {
    pub resource_type: Option<ResourceType>,
    pub name: Option<String>,
    pub status: Option<CsdsStatus>,
    pub version: Option<String>,
    pub error_contains: Option<String>,
    pub client_scope: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEventKind {
    ConnectionAccepted,
    ConnectionRefused,
    ConnectionClosed,
    StreamOpened,
    StreamClosed,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerEventMatcher {
    pub server: Option<String>,
    pub event: ServerEventKind,
    /// For stream_closed.
    pub code: Option<tonic::Code>,
    pub by_client: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEventKind {
    AdsCallStarted,
    AdsCallFinished,
    RetryScheduled,
    ServerStatus,
    Connected,
    ResourceTimerStarted,
    SubscriptionSent,
    FallbackStarted,
    FellForward,
    Log,
}

/// Matches the reference client's own events (see
/// `xds_vocabulary::ClientEvent`); such scenarios need a client
/// that reports them.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientEventMatcher {
    pub event: ClientEventKind,
    pub server: Option<String>,
    /// For retry_scheduled: the delay, ms precision.
    pub delay: Option<Duration>,
    /// For log.
    pub level: Option<LogLevel>,
    /// Substring of the rendered event.
    pub contains: Option<String>,
}
