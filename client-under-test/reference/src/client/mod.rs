//! The XdsClient: watch resources, cancel watches, dump state for CSDS.
//! The handle is cheap to clone; all work happens on one worker task.

pub(crate) mod ads;
mod cache;
#[cfg(test)]
mod tests;
mod worker;

pub use worker::WatchId;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use envoy_types::pb::envoy::service::status::v3::ClientConfig;
use tokio::sync::{mpsc, oneshot};

use crate::bootstrap::Bootstrap;
use crate::observer::ClientObserver;
use crate::profile::ClientProfile;
use crate::resource::{DecodeContext, ResourceType};
use crate::transport::tls::TlsDefects;
use crate::transport::{TcpTransport, XdsTransportFactory};
use crate::watcher::ResourceWatcher;
use ads::channel::TonicChannels;
use worker::{Command, Shared, Worker};

/// Everything an XdsClient is made from.
pub struct XdsClientConfig {
    pub bootstrap: Bootstrap,
    pub transport: Arc<dyn XdsTransportFactory>,
    pub profile: ClientProfile,
    /// Seed of the backoff jitter.
    pub rng_seed: u64,
    /// gRFC A71: the data-plane target this client serves (CSDS
    /// `client_scope`), or `#server` for xDS-enabled servers.
    pub client_scope: String,
    /// Wall-clock time the client starts at, for CSDS timestamps.
    pub clock_epoch: SystemTime,
    pub observer: Option<Arc<dyn ClientObserver>>,
    pub user_agent_name: String,
    pub user_agent_version: String,
}

impl XdsClientConfig {
    /// A client over TCP with the reference profile.
    pub fn new(bootstrap: Bootstrap) -> Self {
        XdsClientConfig {
            bootstrap,
            transport: Arc::new(TcpTransport),
            profile: ClientProfile::default(),
            rng_seed: 0,
            client_scope: String::new(),
            clock_epoch: SystemTime::now(),
            observer: None,
            user_agent_name: "xds-conformance reference client".to_string(),
            user_agent_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

#[derive(Clone)]
pub struct XdsClient {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    next_watch: Arc<AtomicU64>,
    scope: Arc<str>,
}

impl std::fmt::Debug for XdsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdsClient")
            .field("client_scope", &self.scope)
            .finish()
    }
}

impl XdsClient {
    /// Starts the client's worker on the current tokio runtime. The worker
    /// stops when the last handle is dropped.
    pub fn start(config: XdsClientConfig) -> XdsClient {
        let defects = config.profile.defects;
        let tls = TlsDefects {
            accepts_any_server: defects.tls_accepts_any_server,
            no_identity: defects.tls_no_identity,
        };
        let channels = Arc::new(TonicChannels(config.transport.clone(), tls));
        Self::start_with_channels(config, channels)
    }

    /// [`Self::start`] with ADS channels from `channels` rather than tonic
    /// over `config.transport` (unit tests script them message by message).
    pub(crate) fn start_with_channels(
        config: XdsClientConfig,
        channels: Arc<dyn ads::channel::AdsChannelFactory>,
    ) -> XdsClient {
        let mut node = config
            .bootstrap
            .node_proto(&config.user_agent_name, &config.user_agent_version);
        if config.profile.defects.claims_no_client_features {
            node.client_features.clear();
        }
        let scope: Arc<str> = config.client_scope.clone().into();
        let decode = DecodeContext {
            certificate_providers: config.bootstrap.certificate_providers.clone(),
            broken_rule: config.profile.defects.broken_validation,
        };
        let shared = Arc::new(Shared {
            decode,
            bootstrap: config.bootstrap,
            profile: config.profile,
            channels,
            observer: config.observer,
            client_scope: config.client_scope,
            node,
            epoch: config.clock_epoch,
            start: tokio::time::Instant::now(),
            cancelled: Default::default(),
        });
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let (calls_tx, calls_rx) = mpsc::unbounded_channel();
        let worker = Worker::new(shared.clone(), config.rng_seed, calls_tx);
        tokio::spawn(worker.run(commands_rx, calls_rx));
        XdsClient {
            commands: commands_tx,
            shared,
            next_watch: Arc::new(AtomicU64::new(1)),
            scope,
        }
    }

    pub fn client_scope(&self) -> &str {
        &self.scope
    }

    /// The rules this client breaks on purpose (none but in tests).
    pub(crate) fn defects(&self) -> crate::profile::Defects {
        self.shared.profile.defects
    }

    /// Starts watching a resource. Events reach `watcher` on the client's
    /// task; a cached value is delivered at once.
    pub fn watch(
        &self,
        resource_type: ResourceType,
        name: impl Into<String>,
        watcher: Arc<dyn ResourceWatcher>,
    ) -> WatchId {
        let id = WatchId(self.next_watch.fetch_add(1, Ordering::Relaxed));
        let _ = self.commands.send(Command::Watch {
            id,
            resource_type,
            name: name.into(),
            watcher,
        });
        id
    }

    /// Stops a watch. The last watch of a resource unsubscribes it; the last
    /// one on a server closes the ADS stream.
    /// Its watcher is not called after this returns.
    pub fn cancel_watch(&self, id: WatchId) {
        self.shared
            .cancelled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(id);
        let _ = self.commands.send(Command::Cancel { id });
    }

    /// The client's state as CSDS reports it.
    pub async fn dump(&self) -> Option<ClientConfig> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Dump { reply }).ok()?;
        rx.await.ok()
    }
}
