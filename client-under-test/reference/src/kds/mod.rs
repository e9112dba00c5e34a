//! A Kuma zone control plane's side of KDS (`kuma.mesh.v1alpha1.KDSSyncService`),
//! as Kuma v2.14.3 behaves (facts in `client-under-test/adapters/kuma/KDS-FACTS.md`,
//! source lines in `pkg/kds/...`).
//!
//! One connection to the global carries both RPCs (`connection`):
//! - `GlobalToZoneSync` (`global_to_zone`): the zone subscribes `*` to
//!   every type it consumes and stores what the global sends (`store`):
//!   a type's first response on a stream is a full sync, invalid resources
//!   ([`validate`]) are NACKed while their valid siblings are stored, and
//!   an undecodable resource or an unknown type ends the whole connection.
//! - `ZoneToGlobalSync` (`zone_to_global`): the roles reversed; the zone
//!   answers the global's requests from its own (zone-origin) resources,
//!   labelled with its zone, and then sends only what changed.
//!
//! Any end of either RPC ends the connection; the next one starts after
//! Kuma's backoff ([`backoff`]). Everything runs on one task
//! (`worker`), so a seed gives the same run on tokio's paused clock.
//!
//! Like the rest of the crate it knows no harness: what it stores is told
//! to a [`ZoneObserver`], its zone-origin resources come from
//! [`KdsZone::put`] and [`KdsZone::remove`].

pub mod backoff;
mod connection;
mod global_to_zone;
mod store;
pub mod validate;
mod worker;
mod zone_to_global;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use xds_vocabulary::kds::{KdsName, KdsResource, ZoneStoreChange, types};

use crate::bootstrap::XdsServerConfig;
use crate::observer::ClientEvent;
use crate::profile::ZoneDefects;
use crate::transport::XdsTransportFactory;

pub use store::StoreLimits;

/// The version the zone gives in its `version` header and node metadata.
pub const REFERENCE_VERSION: &str = concat!("xds-reference-", env!("CARGO_PKG_VERSION"));

/// The largest message the zone takes or sends: Kuma's
/// `KUMA_MULTIZONE_ZONE_KDS_MAX_MSG_SIZE` default (10 MiB), the same
/// bound as the fake global's `MAX_KDS_MESSAGE`. Each response the store
/// reads is at most this big; [`StoreLimits`] bound what it keeps.
pub const MAX_MESSAGE: usize = 10 << 20;

/// How a zone starts.
#[derive(Clone, Debug, PartialEq)]
pub struct KdsZoneConfig {
    /// The zone's name: its `client-id` header, `node.id`, and the
    /// `kuma.io/zone` label of its own resources.
    pub zone: String,
    /// The global control plane (a bootstrap's first xDS server).
    pub global: XdsServerConfig,
    /// The types it subscribes to on `GlobalToZoneSync`, in this order
    /// (Kuma's order is random at each start; the reference's is fixed so
    /// runs repeat).
    pub consumed_types: Vec<String>,
    /// The types it serves on `ZoneToGlobalSync`; a request for another
    /// type is logged and ignored.
    pub provided_types: Vec<String>,
    /// Zone-origin resources it holds from the start.
    pub resources: Vec<KdsResource>,
    /// Seeds the backoff jitter.
    pub rng_seed: u64,
    /// How often the zone publishes its own resources to the global, as
    /// Kuma's zone does on the tick of its KDS refresh interval
    /// (`KUMA_MULTIZONE_ZONE_KDS_REFRESH_INTERVAL`, 1 s by default): a
    /// tick at the global's first `ZoneToGlobalSync` request, then one
    /// each interval, each sending what changed since the last. `None`:
    /// each change goes at once.
    pub refresh_interval: Option<Duration>,
    pub defects: ZoneDefects,
    pub limits: StoreLimits,
}

impl KdsZoneConfig {
    /// Kuma's types both ways, no resources, seed 0, no defects.
    pub fn new(zone: impl Into<String>, global: XdsServerConfig) -> Self {
        KdsZoneConfig {
            zone: zone.into(),
            global,
            consumed_types: types::GLOBAL_TO_ZONE
                .iter()
                .map(|t| t.to_string())
                .collect(),
            provided_types: types::ZONE_TO_GLOBAL
                .iter()
                .map(|t| t.to_string())
                .collect(),
            resources: Vec::new(),
            rng_seed: 0,
            refresh_interval: None,
            defects: ZoneDefects::default(),
            limits: StoreLimits::default(),
        }
    }
}

/// Hears what the zone does, on its task, in order.
pub trait ZoneObserver: Send + Sync + 'static {
    /// What the zone stores from its global changed.
    fn on_store_change(&self, change: ZoneStoreChange);
    /// The connection's lifecycle (`AdsCallStarted`, `Connected`,
    /// `AdsCallFinished`, `RetryScheduled`, with the global's `server_uri`
    /// as `server` and `CallService::Kds`) and log lines (NACKs sent and received, dropped
    /// connections, requests ignored).
    fn on_client_event(&self, event: ClientEvent);
}

/// Why a zone did not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    /// The zone's name cannot travel in a gRPC header.
    #[error("the zone name {0:?} is not a valid header value")]
    BadZoneName(String),
    /// A zone-origin resource without a name.
    #[error("a {kuma_type} without a name")]
    EmptyName { kuma_type: String },
    /// The global's resource of that name is held: a zone cannot hold its
    /// own under the same key (Kuma's API refuses to change a global-origin
    /// resource on a zone).
    #[error("{kuma_type} {name} is the global's: a zone cannot replace or remove it")]
    GlobalOrigin { kuma_type: String, name: KdsName },
    /// The zone's task is gone (shut down).
    #[error("the zone is shut down")]
    Stopped,
}

/// What the handle asks of the zone's task.
pub(crate) enum Command {
    Put(Vec<KdsResource>, oneshot::Sender<Result<(), ZoneError>>),
    Remove {
        kuma_type: String,
        names: Vec<KdsName>,
        reply: oneshot::Sender<Result<(), ZoneError>>,
    },
    Stored(oneshot::Sender<Vec<KdsResource>>),
}

/// A running zone. Dropping it (or [`KdsZone::shutdown`]) stops it: both
/// RPCs are cancelled and the connection goes.
pub struct KdsZone {
    commands: mpsc::UnboundedSender<Command>,
    task: JoinHandle<()>,
}

impl KdsZone {
    /// Starts the zone: it connects to `config.global` through `transport`
    /// at once, and again after every end, until it is stopped.
    pub fn start(
        config: KdsZoneConfig,
        transport: Arc<dyn XdsTransportFactory>,
        observer: Arc<dyn ZoneObserver>,
    ) -> Result<KdsZone, ZoneError> {
        if http::HeaderValue::from_str(&config.zone).is_err() || config.zone.is_empty() {
            return Err(ZoneError::BadZoneName(config.zone));
        }
        if let Some(bad) = config.resources.iter().find(|r| r.key().name.is_empty()) {
            return Err(ZoneError::EmptyName {
                kuma_type: bad.kuma_type.clone(),
            });
        }
        let (commands, receiver) = mpsc::unbounded_channel();
        let worker = worker::Worker::new(config, transport, observer, receiver);
        Ok(KdsZone {
            commands,
            task: tokio::spawn(worker.run()),
        })
    }

    /// Adds or replaces zone-origin resources; the global hears of each
    /// that changed (an equal one is no change).
    pub async fn put(&self, resources: Vec<KdsResource>) -> Result<(), ZoneError> {
        self.ask(|reply| Command::Put(resources, reply))
            .await
            .and_then(|r| r)
    }

    /// Deletes zone-origin resources of `kuma_type` (names it does not
    /// hold are no change); the global hears of the removals.
    pub async fn remove(&self, kuma_type: &str, names: &[KdsName]) -> Result<(), ZoneError> {
        self.ask(|reply| Command::Remove {
            kuma_type: kuma_type.to_string(),
            names: names.to_vec(),
            reply,
        })
        .await
        .and_then(|r| r)
    }

    /// Everything the zone holds, both origins, by type then name (the
    /// zone-origin ones as given, without the labels KDS adds).
    pub async fn stored(&self) -> Result<Vec<KdsResource>, ZoneError> {
        self.ask(Command::Stored).await
    }

    /// Stops the zone: both RPCs are cancelled.
    pub fn shutdown(self) {
        // Drop does it.
    }

    async fn ask<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, ZoneError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(command(reply))
            .map_err(|_| ZoneError::Stopped)?;
        answer.await.map_err(|_| ZoneError::Stopped)
    }
}

impl Drop for KdsZone {
    fn drop(&mut self) {
        // The task owns the connection: aborting it drops both RPCs'
        // pumps, which cancels the RPCs (RST_STREAM CANCEL).
        self.task.abort();
    }
}
