//! The zone's one task: it owns the store, runs one connection at a time,
//! and waits Kuma's backoff between them (Kuma's `resilientComponent`
//! around its mux client). Any end of either RPC ends the connection,
//! a clean EOF too (Kuma reads it as an error); so does a response the
//! zone cannot read. After each end it subscribes afresh on a new
//! connection.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use xds_vocabulary::XdsError;
use xds_vocabulary::kds::KdsRpc;

use super::backoff::KumaBackoff;
use super::connection::{Arrived, Connection, Headers, Stalled};
use super::global_to_zone::{GlobalToZone, Unreadable, first_node};
use super::store::ZoneStore;
use super::zone_to_global::{Reaction, ZoneToGlobal};
use super::{Command, KdsZoneConfig, ZoneObserver};
use crate::backoff::SplitMix64;
use crate::observer::{CallService, ClientEvent, LogLevel};
use crate::transport::tls::TlsDefects;
use crate::transport::{ConnectionState, XdsTransport, XdsTransportFactory};

/// The features the zone claims in its `features` headers, as Kuma 2.14's
/// zone does on every RPC of its connection (`pkg/kds/mux/client.go:124-129`):
/// `hash-suffix` tells the global to take the zone's names as they come
/// (they are hash-suffixed, `super::zone_to_global`), `zone-ping-health`
/// that the zone pings `GlobalKDSService/HealthCheck` on each connection
/// (`super::connection`), so the global may end the streams of a zone
/// whose pings stop.
pub const HEADER_FEATURES: [&str; 2] = ["zone-ping-health", "hash-suffix"];

/// The features in the node metadata of a stream's first requests, Kuma
/// 2.14's list (`pkg/kds/v2/client/stream.go:198-206`): `hash-suffix` asks
/// the global to hash-suffix the names it sends (the zone takes any name);
/// the others only widen what the zone accepts.
pub const NODE_FEATURES: [&str; 5] = [
    "zone-token",
    "hash-suffix",
    "hg-mz-selector",
    "producer-policy-flow",
    "optional-top-level-target-ref",
];

/// What the broken zone without Kuma's features claims (the reference's
/// list before it advertised them).
const WITHOUT_KUMA_FEATURES: [&str; 3] = [
    "hg-mz-selector",
    "producer-policy-flow",
    "optional-top-level-target-ref",
];

/// How long a connection may take to hear the global (gRPC's minimum
/// connect timeout).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
enum Ended {
    /// An RPC ended (OK: the global closed it cleanly, which Kuma counts
    /// as an error too).
    #[error("{0} ended: {1}")]
    Rpc(KdsRpc, tonic::Status),
    /// The zone dropped the connection over a response it cannot read.
    #[error("GlobalToZoneSync: {0}")]
    Unreadable(#[from] Unreadable),
    #[error(transparent)]
    Stalled(#[from] Stalled),
    /// A health ping failed (other than UNIMPLEMENTED).
    #[error("zone health check request failed: {0}")]
    HealthCheck(tonic::Status),
    /// The global never spoke on the connection (a blackhole).
    #[error("connection attempt timed out before receiving SETTINGS frame")]
    ConnectTimeout,
    /// The zone was stopped.
    #[error("the zone stopped")]
    Stopped,
}

impl Ended {
    fn status(&self) -> XdsError {
        match self {
            Ended::Rpc(_, status) | Ended::HealthCheck(status) => {
                XdsError::new(status.code(), status.message())
            }
            Ended::ConnectTimeout => XdsError::new(tonic::Code::Unavailable, self.to_string()),
            other => XdsError::new(tonic::Code::Cancelled, other.to_string()),
        }
    }
}

/// The next refresh tick; never, without an interval.
async fn next_tick(ticks: &mut Option<Interval>) {
    match ticks {
        Some(ticks) => {
            ticks.tick().await;
        }
        None => std::future::pending().await,
    }
}

pub(crate) struct Worker {
    config: KdsZoneConfig,
    transport: Arc<dyn XdsTransportFactory>,
    observer: Arc<dyn ZoneObserver>,
    commands: mpsc::UnboundedReceiver<Command>,
    store: ZoneStore,
    rng: SplitMix64,
    backoff: KumaBackoff,
    headers: Arc<Headers>,
}

/// One connection's state.
struct Live {
    connection: Connection,
    global_to_zone: GlobalToZone,
    zone_to_global: ZoneToGlobal,
    /// A response or a request of the global arrived.
    heard: bool,
    /// With a refresh interval: its ticks, from the global's first
    /// request on `ZoneToGlobalSync` (Kuma's watchdog starts there:
    /// `pkg/util/xds/v3/watchdog_callbacks.go:157-186`, a tick at once and
    /// then each interval, `pkg/util/watchdog/watchdog.go:46-84`,
    /// reconciling every type the zone provides,
    /// `pkg/kds/v2/server/components.go:127-134`).
    ticks: Option<Interval>,
    /// What the last tick published: `ZoneToGlobalSync` answers from it
    /// (go-control-plane answers a watch from the snapshot the last tick
    /// set). `None`: from the store itself.
    published: Option<ZoneStore>,
}

impl Worker {
    pub fn new(
        config: KdsZoneConfig,
        transport: Arc<dyn XdsTransportFactory>,
        observer: Arc<dyn ZoneObserver>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> Self {
        let mut store = ZoneStore::new(config.limits);
        // Checked by `KdsZone::start`: no name is empty, and no global
        // resource is held yet.
        let _ = store.put_zone(config.resources.clone());
        let headers = Arc::new(Headers {
            client_id: (!config.defects.no_client_id_header).then(|| config.zone.clone()),
            features: if config.defects.no_kuma_features {
                Vec::new()
            } else {
                HEADER_FEATURES.iter().map(|f| f.to_string()).collect()
            },
            node_features: if config.defects.no_kuma_features {
                WITHOUT_KUMA_FEATURES
                    .iter()
                    .map(|f| f.to_string())
                    .collect()
            } else {
                NODE_FEATURES.iter().map(|f| f.to_string()).collect()
            },
            version: super::REFERENCE_VERSION.to_string(),
        });
        Worker {
            rng: SplitMix64::new(config.rng_seed),
            backoff: KumaBackoff::new(),
            store,
            headers,
            config,
            transport,
            observer,
            commands,
        }
    }

    fn server(&self) -> String {
        self.config.global.server_uri.clone()
    }

    fn emit(&self, event: ClientEvent) {
        self.observer.on_client_event(event);
    }

    fn log(&self, level: LogLevel, message: String) {
        self.emit(ClientEvent::Log { level, message });
    }

    pub async fn run(mut self) {
        loop {
            let started = Instant::now();
            let (ended, heard) = self.connect().await;
            if let Ended::Stopped = ended {
                return;
            }
            self.backoff.ended_after(started.elapsed());
            let delay = if self.config.defects.no_reconnect_backoff {
                Duration::ZERO
            } else {
                self.backoff.next_delay(&mut self.rng)
            };
            self.emit(ClientEvent::AdsCallFinished {
                server: self.server(),
                service: CallService::Kds,
                status: ended.status(),
                seen_response: heard,
            });
            self.emit(ClientEvent::RetryScheduled {
                server: self.server(),
                service: CallService::Kds,
                delay,
            });
            if self.wait(delay).await.is_err() {
                return;
            }
        }
    }

    /// Waits out the backoff, still taking commands (the zone's own
    /// resources change while it is disconnected too). Err: stopped.
    async fn wait(&mut self, delay: Duration) -> Result<(), ()> {
        let deadline = tokio::time::sleep(delay);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut deadline => return Ok(()),
                command = self.commands.recv() => match command {
                    None => return Err(()),
                    // Without a connection a command cannot fail.
                    Some(command) => { let _ = self.command(command, None); }
                },
            }
        }
    }

    /// One connection, from its start to its end.
    async fn connect(&mut self) -> (Ended, bool) {
        self.emit(ClientEvent::AdsCallStarted {
            server: self.server(),
            service: CallService::Kds,
        });
        let transport = XdsTransport::new(
            self.transport.clone(),
            &self.config.global,
            TlsDefects::default(),
        );
        let mut state = transport.state.clone();
        let (arrived_tx, mut arrived) = mpsc::channel(Connection::ARRIVED_QUEUE);
        // Room for every type's subscription and one reply more each: the
        // zone answers each message before it reads the next.
        let types = self
            .config
            .consumed_types
            .len()
            .max(self.config.provided_types.len());
        let connection = Connection::open(
            transport.channel.clone(),
            self.headers.clone(),
            2 * types + 16,
            arrived_tx,
            !self.config.defects.no_zone_to_global_sync,
            !self.config.defects.no_health_pings,
        );
        drop(transport);
        let mut live = Live {
            connection,
            global_to_zone: GlobalToZone::new(
                &self.config.zone,
                &self.config.consumed_types,
                self.config.defects,
            ),
            zone_to_global: ZoneToGlobal::new(
                &self.config.zone,
                &self.config.provided_types,
                self.config.defects,
            ),
            heard: false,
            ticks: None,
            published: None,
        };
        let node = first_node(
            &self.config.zone,
            &self.config.global.server_uri,
            &self.headers.node_features,
            self.config.rng_seed,
        );
        let mut connected = false;
        // A global that never speaks would hold the zone forever: gRPC's
        // connect timeout (grpc-go's, under Kuma's dial) ends the attempt.
        let connect_deadline = tokio::time::sleep(CONNECT_TIMEOUT);
        tokio::pin!(connect_deadline);
        let ended = 'live: {
            for request in live.global_to_zone.subscriptions(&node) {
                if let Err(stalled) = live
                    .connection
                    .requests
                    .send(KdsRpc::GlobalToZoneSync, request)
                {
                    break 'live stalled.into();
                }
            }
            loop {
                tokio::select! {
                    () = &mut connect_deadline, if !connected => break 'live Ended::ConnectTimeout,
                    changed = state.changed(), if !connected => {
                        if changed.is_ok() && *state.borrow_and_update() == ConnectionState::Ready {
                            connected = true;
                            self.emit(ClientEvent::Connected { server: self.server(), connected: true });
                        }
                    }
                    command = self.commands.recv() => match command {
                        None => break 'live Ended::Stopped,
                        Some(command) => {
                            if let Err(ended) = self.command(command, Some(&mut live)) {
                                break 'live ended;
                            }
                        }
                    },
                    () = next_tick(&mut live.ticks) => {
                        if let Err(ended) = self.refreshed(&mut live) {
                            break 'live ended;
                        }
                    }
                    message = arrived.recv() => match message {
                        // The pumps hold senders until they report their end.
                        None => break 'live Ended::Stopped,
                        Some(message) => {
                            if let Err(ended) = self.arrived(message, &mut live) {
                                break 'live ended;
                            }
                        }
                    },
                }
            }
        };
        if let Ended::Unreadable(_) | Ended::Stalled(_) | Ended::ConnectTimeout = &ended {
            self.log(
                LogLevel::Error,
                format!("KDS: closing the connection to the global: {ended}"),
            );
        }
        let heard = live.heard;
        // Cancels both RPCs.
        drop(live);
        if connected {
            self.emit(ClientEvent::Connected {
                server: self.server(),
                connected: false,
            });
        }
        (ended, heard)
    }

    fn arrived(&mut self, message: Arrived, live: &mut Live) -> Result<(), Ended> {
        match message {
            Arrived::Ended(rpc, status) => Err(Ended::Rpc(rpc, status)),
            Arrived::HealthCheckFailed(status) => Err(Ended::HealthCheck(status)),
            Arrived::Response(response) => {
                live.heard = true;
                let kuma_type = response.type_url.clone();
                let handled = live.global_to_zone.on_response(response, &mut self.store)?;
                for change in handled.changes {
                    self.observer.on_store_change(change);
                }
                if let Some(message) = &handled.nack {
                    self.log(
                        LogLevel::Warning,
                        format!("GlobalToZoneSync: NACK of {kuma_type}: {message}"),
                    );
                }
                live.connection
                    .requests
                    .send(KdsRpc::GlobalToZoneSync, handled.reply)?;
                // A broken zone's full sync may have deleted its own
                // resources: the global hears of it as of any change (on
                // the next tick, with a refresh interval).
                if self.refresh_interval().is_some() {
                    return Ok(());
                }
                let reaction = live
                    .zone_to_global
                    .on_change(&BTreeSet::from([kuma_type]), &self.store);
                self.react(reaction, live)
            }
            Arrived::Request(request) => {
                live.heard = true;
                self.start_ticking(live);
                let answers_from = live.published.as_ref().unwrap_or(&self.store);
                let reaction = live.zone_to_global.on_request(&request, answers_from);
                self.react(reaction, live)
            }
        }
    }

    /// The refresh interval the zone keeps (a broken zone ignores it).
    fn refresh_interval(&self) -> Option<Duration> {
        self.config
            .refresh_interval
            .filter(|_| !self.config.defects.ignores_refresh_interval)
    }

    /// The global's first request starts the ticks; the first publishes at
    /// once.
    fn start_ticking(&self, live: &mut Live) {
        let Some(period) = self.refresh_interval() else {
            return;
        };
        if live.ticks.is_some() {
            return;
        }
        live.published = Some(self.store.zone_origin_copy());
        let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
        // A Go ticker drops the ticks a busy receiver misses.
        ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
        live.ticks = Some(ticks);
    }

    /// A tick: the zone publishes its own resources as they are now, and
    /// the global hears what changed since it last heard (one response
    /// per type, whatever number of changes it carries).
    fn refreshed(&self, live: &mut Live) -> Result<(), Ended> {
        let provided: BTreeSet<String> = self.config.provided_types.iter().cloned().collect();
        let published = live.published.insert(self.store.zone_origin_copy());
        let reaction = live.zone_to_global.on_change(&provided, published);
        self.react(reaction, live)
    }

    fn react(&self, reaction: Reaction, live: &mut Live) -> Result<(), Ended> {
        for (level, message) in reaction.logs {
            self.log(level, message);
        }
        for response in reaction.responses {
            live.connection
                .responses
                .send(KdsRpc::ZoneToGlobalSync, response)?;
        }
        Ok(())
    }

    /// Does what the handle asks; with a connection, the global hears of
    /// the zone's changes.
    fn command(&mut self, command: Command, live: Option<&mut Live>) -> Result<(), Ended> {
        let changed = match command {
            Command::Put(resources, reply) => {
                let result = self.store.put_zone(resources);
                let changed = result.as_ref().cloned().unwrap_or_default();
                let _ = reply.send(result.map(|_| ()));
                changed
            }
            Command::Remove {
                kuma_type,
                names,
                reply,
            } => {
                let result = self.store.remove_zone(&kuma_type, &names);
                let changed = match result {
                    Ok(true) => BTreeSet::from([kuma_type]),
                    _ => BTreeSet::new(),
                };
                let _ = reply.send(result.map(|_| ()));
                changed
            }
            Command::Stored(reply) => {
                let _ = reply.send(self.store.snapshot());
                BTreeSet::new()
            }
        };
        match live {
            // With a refresh interval the change goes on the next tick.
            Some(live) if !changed.is_empty() && self.refresh_interval().is_none() => {
                let reaction = live.zone_to_global.on_change(&changed, &self.store);
                self.react(reaction, live)
            }
            _ => Ok(()),
        }
    }
}
