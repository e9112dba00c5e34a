//! The client-under-test interface of xds-conformance: what the harness
//! asks of an xDS client (start from a bootstrap, watch, cancel, dial,
//! dump CSDS, shut down) and what it hears back (watcher notifications,
//! dial updates, the client's own events), plus the adapters that drive
//! real clients through it.
//!
//! It must not know about scenario files, timelines, verdicts or fake
//! servers: an adapter only translates between this interface and a client.

mod reference;

pub use reference::ReferenceClient;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use envoy_types::pb::envoy::service::status::v3::ClientStatusResponse;
use xds_reference_client::{ClientEvent, ResourceType, XdsError, XdsTransportFactory};

/// What a client can be asked to do; a scenario needing more is "not
/// applicable" to it, never "failed".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// A resource-level watch API (most clients only offer channels).
    pub watch: bool,
    /// Channel-level "dial `xds:///target`".
    pub dial: bool,
    pub csds: bool,
    /// Reports [`ClientEvent`]s (call lifecycle, backoff, timers, logs).
    pub client_events: bool,
    /// gRFC A71 fallback across servers.
    pub fallback: bool,
    /// Incremental (delta) xDS.
    pub delta: bool,
    /// Runs in-process on the harness's virtual clock.
    pub virtual_time: bool,
    /// Named behaviour profiles it accepts.
    pub profiles: Vec<String>,
}

/// How the client reaches the fake servers.
#[derive(Clone)]
pub enum Transport {
    /// In-process byte streams (virtual time).
    InMemory(Arc<dyn XdsTransportFactory>),
    /// Real TCP to the addresses in the bootstrap.
    Tcp,
}

/// Receives everything the client reports, in order.
pub type EventSink = Arc<dyn Fn(ObservedEvent) + Send + Sync>;

/// Everything a client starts from.
#[derive(Clone)]
pub struct ClientEnvironment {
    pub bootstrap_json: String,
    pub transport: Transport,
    /// Seed for anything random in the client (backoff jitter).
    pub rng_seed: u64,
    /// A named behaviour profile; None = the client's default.
    pub profile: Option<String>,
    /// Wall-clock time at start, so CSDS timestamps are deterministic.
    pub clock_epoch: SystemTime,
    pub events: EventSink,
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
    Client(ClientEvent),
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

/// An xDS client the harness can drive.
#[async_trait::async_trait]
pub trait ClientUnderTest: Send {
    fn name(&self) -> &str;
    fn capabilities(&self) -> Capabilities;
    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError>;
    /// Adds a watcher for the resource.
    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError>;
    /// Removes the most recent watcher of the resource.
    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError>;
    /// Starts resolving `target` as a channel would.
    async fn dial(&mut self, target: &str) -> Result<(), ClientError>;
    /// The client's CSDS view: one ClientConfig per client scope.
    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError>;
    async fn shutdown(&mut self);
}
