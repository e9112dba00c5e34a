//! The reference client behind the client-under-test interface. Watches
//! go to one XdsClient; each dial gets its own per-target XdsClient and
//! xDS-enabled servers share one scoped `#server`, as gRFC A71 has gRPC
//! do, so CSDS shows one `client_scope` per target.
//!
//! A KDS run's zone (`ClientEnvironment::zone`) is the reference's
//! `KdsZone`, its global the bootstrap's first server.

use std::collections::BTreeMap;
use std::sync::Arc;

use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use tokio::sync::watch;
use xds_reference_client::dataplane::DataPlane;
use xds_reference_client::environment::xds_fallback;
use xds_reference_client::kds::{KdsZone, KdsZoneConfig, ZoneObserver};
use xds_reference_client::name::ResourceName;
use xds_reference_client::read_delay::ReadDelayHandle;
use xds_reference_client::resolver::{self, ClusterConfig, Dial, DialUpdate};
use xds_reference_client::server::{self, SERVER_CLIENT_SCOPE, Serve, ServingStatus};
use xds_reference_client::{
    Bootstrap, ClientProfile, DataErrorHandling, Defects, ResourceWatcher, RetryAfterGoodStream,
    WatchId, WatcherEvent, XdsClient, XdsClientConfig,
};
use xds_vocabulary::kds::ZoneStoreChange;
use xds_vocabulary::transport::{DataPlaneConnector, TcpTransport, XdsTransportFactory};
use xds_vocabulary::{ClientEvent, ResourceType, XdsError};

use crate::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, ConnectivityState,
    DialNotification, ObservedEvent, PendingRpc, RpcOutcome, RpcRequest, Transport, WatchStacks,
    WatcherNotification,
};

/// Profiles the reference client accepts.
pub const PROFILES: &[&str] = &[
    "reference",
    "immediate-retry-after-good-stream",
    "a88",
    "wait-for-ready",
];

/// The scope of the client that serves resource-level watches.
const WATCH_SCOPE: &str = "";

#[derive(Default)]
pub struct ReferenceClient {
    /// Deliberate A57 violations (tests of the scenarios only).
    defects: Defects,
    started: Option<Started>,
    watches: WatchStacks<(WatchId, Arc<Observed>)>,
    dials: BTreeMap<String, DialState>,
    /// The XdsClient of every xDS-enabled server, once one is started.
    server_client: Option<XdsClient>,
    /// xDS-enabled servers by listening address.
    servers: BTreeMap<String, Serve>,
    /// Why no XdsClient can be made (a bootstrap that does not validate):
    /// the process runs on, as a gRPC application does; its xDS channels
    /// fail and CSDS reports no client.
    bootstrap_error: Option<String>,
}

/// One dialled target: its per-target XdsClient, the resolver, and the
/// latest update (RPCs wait on it).
struct DialState {
    client: XdsClient,
    _dial: Dial,
    latest: watch::Receiver<Option<DialUpdate>>,
}

struct Started {
    bootstrap: Bootstrap,
    env: ClientEnvironment,
    profile: ClientProfile,
    transport: Arc<dyn XdsTransportFactory>,
    watch_client: XdsClient,
    /// The watch client has had a watch: only then is it an XdsClient
    /// CSDS reports (gRPC creates its clients on first use, gRFC A71).
    watch_client_used: bool,
    data_plane: Arc<DataPlane>,
    /// A KDS run's zone (`ClientEnvironment::zone`), its global the
    /// bootstrap's first server.
    zone: Option<KdsZone>,
}

impl ReferenceClient {
    pub fn new() -> Self {
        Self::default()
    }

    /// The reference client with rules deliberately broken, to show that
    /// the scenarios catch a client that breaks them. Named "broken" in
    /// reports so no result of it passes for the reference's.
    pub fn with_defects(defects: Defects) -> Self {
        Self {
            defects,
            ..Self::default()
        }
    }

    fn started(&self) -> Result<&Started, ClientError> {
        self.started
            .as_ref()
            .ok_or_else(|| ClientError::Failed("client not started".into()))
    }

    /// The KDS zone of a run that has one.
    fn zone(&self) -> Result<&KdsZone, ClientError> {
        self.started()?
            .zone
            .as_ref()
            .ok_or_else(|| ClientError::Failed("no KDS zone: the run has no zone section".into()))
    }

    /// Whether a watch names an `xdstp://` authority the bootstrap lacks
    /// (what `Defects::csds_fails_with_an_unknown_authority` trips on).
    fn watches_an_unknown_authority(&self) -> Result<bool, ClientError> {
        let authorities = &self.started()?.bootstrap.authorities;
        Ok(self.watches.watched().any(|(resource_type, name)| {
            ResourceName::parse(name, resource_type)
                .ok()
                .and_then(|name| name.authority)
                .is_some_and(|authority| !authorities.contains_key(&authority))
        }))
    }

    fn started_mut(&mut self) -> Result<&mut Started, ClientError> {
        self.started
            .as_mut()
            .ok_or_else(|| ClientError::Failed("client not started".into()))
    }
}

fn profile(name: Option<&str>) -> Result<ClientProfile, ClientError> {
    let mut profile = ClientProfile::default();
    match name.unwrap_or("reference") {
        "reference" => {}
        "immediate-retry-after-good-stream" => {
            profile.retry_after_good_stream = RetryAfterGoodStream::Immediately;
        }
        // Current C-core with GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING.
        "a88" => profile.data_errors = DataErrorHandling::A88,
        // C-core's ADS call (gRFC A57's wait_for_ready).
        "wait-for-ready" => profile.ads_wait_for_ready = true,
        other => {
            return Err(ClientError::Unsupported(format!(
                "profile \"{other}\" (known: {})",
                PROFILES.join(", ")
            )));
        }
    }
    profile.name = name.unwrap_or("reference").to_string();
    Ok(profile)
}

fn new_client(
    started_env: &ClientEnvironment,
    bootstrap: &Bootstrap,
    profile: &ClientProfile,
    transport: &Arc<dyn XdsTransportFactory>,
    scope: &str,
) -> XdsClient {
    let sink = started_env.events.clone();
    let mut config = XdsClientConfig::new(bootstrap.clone());
    config.transport = transport.clone();
    config.profile = profile.clone();
    config.rng_seed = started_env.rng_seed;
    config.client_scope = scope.to_string();
    config.clock_epoch = started_env.clock_epoch;
    config.observer = Some(Arc::new(move |event| sink(ObservedEvent::Client(event))));
    XdsClient::start(config)
}

#[async_trait::async_trait]
impl ClientUnderTest for ReferenceClient {
    fn name(&self) -> &str {
        if self.defects == Defects::default() {
            "reference"
        } else {
            "reference-broken"
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            watch: true,
            projected_watch: false,
            dial: true,
            rpc: true,
            dial_config: true,
            csds: true,
            resource_counts: false,
            csds_service: true,
            watch_in_callback: true,
            read_flow_control: true,
            background_rpc: true,
            client_events: true,
            logs: ["info", "warning", "error"].map(String::from).to_vec(),
            serve: true,
            delta: true,
            virtual_time: true,
            channels_need_real_time: false,
            channel_states: true,
            grpc_bootstrap: true,
            authorities: true,
            named_lds_cds: true,
            wildcard_watch: true,
            proxy: false,
            connects_at_start: false,
            admin: false,
            kds_zone: true,
            // Read from `ClientEnvironment::env` (xds_reference_client::environment).
            env: true,
            env_not_read: BTreeMap::new(),
            profiles: PROFILES.iter().map(|p| p.to_string()).collect(),
        }
    }

    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        let bootstrap = match Bootstrap::from_json(&env.bootstrap.grpc_json()) {
            Ok(bootstrap) => bootstrap,
            Err(e) => {
                self.bootstrap_error = Some(e.to_string());
                return Ok(());
            }
        };
        // gRFC A71's temporary protection: with fallback off, one server
        // (Defects::fallback_env_ignored reads them all anyway).
        let bootstrap = if xds_fallback(&env.env) || self.defects.fallback_env_ignored {
            bootstrap
        } else {
            bootstrap.first_server_only()
        };
        let mut profile = profile(env.profile.as_deref())?;
        profile.defects = self.defects;
        let (transport, connector): (Arc<dyn XdsTransportFactory>, Arc<dyn DataPlaneConnector>) =
            match &env.transport {
                Transport::InMemory { xds, data_plane } => (xds.clone(), data_plane.clone()),
                Transport::Tcp => (Arc::new(TcpTransport), Arc::new(TcpTransport)),
            };
        let data_plane = Arc::new(DataPlane::new(connector, env.rng_seed));
        let zone = match &env.zone {
            None => None,
            Some(settings) => {
                let global = bootstrap.xds_servers.first().cloned().ok_or_else(|| {
                    ClientError::Failed(
                        "a KDS zone needs a global: the bootstrap names no xDS server".into(),
                    )
                })?;
                let config = KdsZoneConfig {
                    resources: settings.resources.clone(),
                    rng_seed: env.rng_seed,
                    refresh_interval: settings.refresh_interval,
                    defects: self.defects.zone,
                    ..KdsZoneConfig::new(settings.name.clone(), global)
                };
                let observer = Arc::new(ZoneEvents(env.events.clone()));
                let zone = KdsZone::start(config, transport.clone(), observer)
                    .map_err(|e| ClientError::Failed(format!("the KDS zone: {e}")))?;
                Some(zone)
            }
        };
        let watch_client = new_client(&env, &bootstrap, &profile, &transport, WATCH_SCOPE);
        self.started = Some(Started {
            bootstrap,
            env,
            profile,
            transport,
            watch_client,
            watch_client_used: false,
            data_plane,
            zone,
        });
        Ok(())
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        let started = self.started_mut()?;
        started.watch_client_used = true;
        let observed = Arc::new(Observed::new(
            resource_type,
            name,
            started.env.events.clone(),
        ));
        let id = started
            .watch_client
            .watch(resource_type, name, observed.clone());
        self.watches.push(resource_type, name, (id, observed));
        Ok(())
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        let (id, _) = self.watches.pop(resource_type, name)?;
        self.started()?.watch_client.cancel_watch(id);
        Ok(())
    }

    async fn hold_reads(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        hold: bool,
    ) -> Result<(), ClientError> {
        let Some((_, watcher)) = self.watches.last(resource_type, name) else {
            return Err(ClientError::Failed(format!(
                "no watch on {resource_type} {name} to hold reads"
            )));
        };
        watcher.hold_reads(hold);
        Ok(())
    }

    async fn watch_in_callback(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        of: (ResourceType, &str),
    ) -> Result<(), ClientError> {
        let lost = self.defects.callback_watches_lost;
        let started = self.started_mut()?;
        started.watch_client_used = true;
        let client = started.watch_client.clone();
        let sink = started.env.events.clone();
        let Some((_, watcher)) = self.watches.last(of.0, of.1) else {
            return Err(ClientError::Failed(format!(
                "no watch on {} {} to start a watch from",
                of.0, of.1
            )));
        };
        let armed = Armed {
            resource_type,
            name: name.to_string(),
            client,
            sink,
            lost,
        };
        watcher
            .armed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(armed);
        Ok(())
    }

    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        if self.bootstrap_error.is_some() {
            return Ok(()); // Its RPCs fail (see `start_rpc`).
        }
        let started = self.started()?;
        if self.dials.contains_key(target) {
            return Ok(()); // One channel per target, as gRPC shares them.
        }
        let client = if self.defects.one_client_for_all_targets {
            started.watch_client.clone()
        } else {
            new_client(
                &started.env,
                &started.bootstrap,
                &started.profile,
                &started.transport,
                target,
            )
        };
        let sink = started.env.events.clone();
        let dialed = target.to_string();
        let (latest_tx, latest) = watch::channel(None);
        // The channel's connectivity state follows its resolver: the
        // reference has no subchannels (its data plane connects per RPC),
        // so it is CONNECTING until the first config, READY with one, and
        // TRANSIENT_FAILURE when the resolver fails (gRPC: a Listener's
        // deletion "will put the channel in TRANSIENT_FAILURE", gRFC A53).
        let keep_state_on_error = self.defects.resolver_errors_keep_the_channel_state;
        let state = std::sync::Mutex::new(ConnectivityState::Connecting);
        sink(ObservedEvent::ChannelState {
            target: dialed.clone(),
            state: ConnectivityState::Connecting,
        });
        let dial = resolver::dial(
            client.clone(),
            &started.bootstrap,
            target,
            Arc::new(move |update: DialUpdate| {
                latest_tx.send_replace(Some(update.clone()));
                let next = match &update {
                    DialUpdate::Config(_) => Some(ConnectivityState::Ready),
                    DialUpdate::Error(_) if keep_state_on_error => None,
                    DialUpdate::Error(_) => Some(ConnectivityState::TransientFailure),
                };
                sink(ObservedEvent::Dial {
                    target: dialed.clone(),
                    update: notification(update),
                });
                let mut current = state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(next) = next.filter(|next| *next != *current) {
                    *current = next;
                    sink(ObservedEvent::ChannelState {
                        target: dialed.clone(),
                        state: next,
                    });
                }
            }),
        );
        self.dials.insert(
            target.to_string(),
            DialState {
                client,
                _dial: dial,
                latest,
            },
        );
        Ok(())
    }

    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        if self.servers.contains_key(address) {
            return Err(ClientError::Failed(format!(
                "a server already listens on {address}"
            )));
        }
        // Fields, not `started()`: the server client is set while it is read.
        let Some(started) = &self.started else {
            return Err(ClientError::Failed("client not started".into()));
        };
        let new_server_client = || {
            new_client(
                &started.env,
                &started.bootstrap,
                &started.profile,
                &started.transport,
                SERVER_CLIENT_SCOPE,
            )
        };
        let client = if self.defects.server_client_per_server && self.server_client.is_some() {
            new_server_client()
        } else {
            self.server_client
                .get_or_insert_with(|| {
                    if self.defects.one_client_for_all_targets {
                        return started.watch_client.clone();
                    }
                    new_server_client()
                })
                .clone()
        };
        let sink = started.env.events.clone();
        let listening = address.to_string();
        let serve = server::serve(
            client,
            &started.bootstrap,
            address,
            Arc::new(move |status: ServingStatus| {
                sink(ObservedEvent::ServingStatus {
                    address: listening.clone(),
                    status: match status {
                        ServingStatus::Serving => Ok(()),
                        ServingStatus::NotServing(e) => Err(e),
                    },
                });
            }),
        );
        self.servers.insert(address.to_string(), serve);
        Ok(())
    }

    /// An RPC waits while the channel has no config yet (gRPC queues RPCs
    /// while connecting); on a channel error it fails at once unless
    /// `wait_for_ready`; then the data plane routes and calls.
    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.start_rpc(request).await?.await
    }

    async fn start_rpc(&mut self, request: &RpcRequest) -> Result<PendingRpc, ClientError> {
        if let Some(error) = &self.bootstrap_error {
            // C-core's xDS resolver fails to create its XdsClient.
            let outcome = RpcOutcome {
                code: tonic::Code::Unavailable,
                message: format!("Failed to create XdsClient: {error}"),
                backend: None,
            };
            return Ok(Box::pin(async move { Ok(outcome) }));
        }
        self.dial(&request.target).await?;
        let deadline = tokio::time::Instant::now() + request.timeout;
        let mut latest = match self.dials.get(&request.target) {
            Some(d) => d.latest.clone(),
            None => {
                return Err(ClientError::Failed(format!(
                    "no channel to {}",
                    request.target
                )));
            }
        };
        let data_plane = self.started()?.data_plane.clone();
        let request = request.clone();
        let stuck_after_error = self.defects.wait_for_ready_stuck_after_error;
        Ok(Box::pin(async move {
            let mut saw_error = false;
            // Wait for a config (wait_for_ready), or fail with the
            // channel's error.
            let config = loop {
                let current = latest.borrow_and_update().clone();
                match current {
                    Some(DialUpdate::Config(config)) if !(stuck_after_error && saw_error) => {
                        break config;
                    }
                    Some(DialUpdate::Error(_)) if request.wait_for_ready => saw_error = true,
                    Some(DialUpdate::Error(e)) if !request.wait_for_ready => {
                        return Ok(RpcOutcome {
                            code: e.code,
                            message: e.message,
                            backend: None,
                        });
                    }
                    _ => {}
                }
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                match tokio::time::timeout(remaining, latest.changed()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Err(ClientError::Failed("the channel closed".into())),
                    Err(_) => {
                        return Ok(RpcOutcome {
                            code: tonic::Code::DeadlineExceeded,
                            message: "deadline exceeded while waiting for the xDS config".into(),
                            backend: None,
                        });
                    }
                }
            };
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let result = data_plane.call(&config, &request.method, remaining).await;
            Ok(RpcOutcome {
                code: result.code,
                message: result.message,
                backend: result.response,
            })
        }))
    }

    async fn resource_counts(&mut self) -> Result<crate::ResourceCounts, ClientError> {
        Err(ClientError::Unsupported(
            "resource counts (the reference client has CSDS, which names them)".into(),
        ))
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        if self.bootstrap_error.is_some() {
            return Ok(ClientStatusResponse::default()); // No XdsClient.
        }
        if self.defects.csds_fails_without_channels && self.dials.is_empty() {
            return Err(ClientError::Failed(
                "CSDS: no xDS client yet (a broken client's answer)".into(),
            ));
        }
        if self.defects.csds_fails_with_an_unknown_authority
            && self.watches_an_unknown_authority()?
        {
            return Err(ClientError::Failed(
                "CSDS: a watch of an authority the bootstrap lacks fails the whole dump \
                 (a broken client's answer)"
                    .into(),
            ));
        }
        let started = self.started()?;
        // One client for everything (a broken client) reports it always.
        let mut clients: Vec<XdsClient> = (started.watch_client_used
            || self.defects.one_client_for_all_targets)
            .then(|| started.watch_client.clone())
            .into_iter()
            .collect();
        clients.extend(self.dials.values().map(|d| d.client.clone()));
        clients.extend(
            self.server_client
                .clone()
                .filter(|_| !self.defects.one_client_for_all_targets),
        );
        let mut response = xds_reference_client::csds::client_status(&clients).await;
        if self.defects.csds_without_node {
            for config in &mut response.config {
                config.node = None;
            }
        }
        Ok(response)
    }

    async fn csds_request(
        &mut self,
        request: ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, XdsError>, ClientError> {
        if self.defects.csds_fails_without_channels && self.dials.is_empty() {
            // What C-core avoids: its XdsClient lookup fails UNAVAILABLE,
            // which it answers as an empty response.
            return Ok(Err(XdsError::new(
                tonic::Code::Unavailable,
                "xDS client is not initialized",
            )));
        }
        if self.defects.csds_node_matchers_match_nothing && !request.node_matchers.is_empty() {
            return Ok(Ok(ClientStatusResponse::default()));
        }
        if let Err(status) = xds_reference_client::csds::check_request(&request) {
            return Ok(Err(XdsError::new(status.code(), status.message())));
        }
        self.csds().await.map(Ok)
    }

    async fn zone_set(
        &mut self,
        resources: Vec<xds_vocabulary::kds::KdsResource>,
    ) -> Result<(), ClientError> {
        self.zone()?
            .put(resources)
            .await
            .map_err(|e| ClientError::Failed(e.to_string()))
    }

    async fn zone_remove(
        &mut self,
        kuma_type: &str,
        names: &[xds_vocabulary::kds::KdsName],
    ) -> Result<(), ClientError> {
        self.zone()?
            .remove(kuma_type, names)
            .await
            .map_err(|e| ClientError::Failed(e.to_string()))
    }

    async fn shutdown(&mut self) {
        // Both KDS RPCs are cancelled now, not when the rest goes.
        if let Some(zone) = self.started.as_mut().and_then(|s| s.zone.take()) {
            zone.shutdown();
        }
        self.dials.clear();
        self.servers.clear();
        self.server_client = None;
        self.bootstrap_error = None;
        self.watches = WatchStacks::default();
        self.started = None;
    }
}

/// The zone's store changes and its connection's events, on the run's
/// timeline.
struct ZoneEvents(crate::EventSink);

impl ZoneObserver for ZoneEvents {
    fn on_store_change(&self, change: ZoneStoreChange) {
        (self.0)(ObservedEvent::Zone(change));
    }

    fn on_client_event(&self, event: ClientEvent) {
        (self.0)(ObservedEvent::Client(event));
    }
}

fn notification(update: DialUpdate) -> DialNotification {
    match update {
        DialUpdate::Error(e) => DialNotification::Error(e),
        DialUpdate::Config(config) => {
            let mut clusters = BTreeMap::new();
            for (name, cluster) in &config.clusters {
                let addresses = cluster.as_ref().map_err(Clone::clone).map(|c| match c {
                    ClusterConfig::Endpoints { endpoints, .. } => endpoints.addresses(),
                    ClusterConfig::LogicalDns { hostname } => vec![hostname.clone()],
                    ClusterConfig::Aggregate { leaf_clusters } => leaf_clusters
                        .iter()
                        .flat_map(|leaf| match config.clusters.get(leaf) {
                            Some(Ok(ClusterConfig::Endpoints { endpoints, .. })) => {
                                endpoints.addresses()
                            }
                            Some(Ok(ClusterConfig::LogicalDns { hostname })) => {
                                vec![hostname.clone()]
                            }
                            _ => Vec::new(),
                        })
                        .collect(),
                });
                clusters.insert(name.clone(), addresses);
            }
            DialNotification::Config {
                summary: config.to_string(),
                clusters,
            }
        }
    }
}

/// A watch as the harness observes it: each event under the name of the
/// resource it is about (a wildcard watch hears of many).
struct Observed {
    resource_type: ResourceType,
    watched: String,
    sink: crate::EventSink,
    /// Watches to start from inside the next callback.
    armed: std::sync::Mutex<Vec<Armed>>,
    /// Keeps each notification's read handle (`hold_reads`).
    holding: std::sync::atomic::AtomicBool,
    held: std::sync::Mutex<Vec<ReadDelayHandle>>,
}

/// A watch a watcher starts from inside its next callback.
struct Armed {
    resource_type: ResourceType,
    name: String,
    client: XdsClient,
    sink: crate::EventSink,
    /// `Defects::callback_watches_lost`: the watch is never started.
    lost: bool,
}

impl Observed {
    fn new(resource_type: ResourceType, watched: &str, sink: crate::EventSink) -> Self {
        Observed {
            resource_type,
            watched: watched.to_string(),
            sink,
            armed: std::sync::Mutex::new(Vec::new()),
            holding: std::sync::atomic::AtomicBool::new(false),
            held: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Starts or stops holding reads; stopping lets go of those held.
    fn hold_reads(&self, hold: bool) {
        self.holding
            .store(hold, std::sync::atomic::Ordering::SeqCst);
        if !hold {
            self.held.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
    }
}

impl ResourceWatcher for Observed {
    fn on_event(&self, event: WatcherEvent) {
        self.on_resource_event(&self.watched, event);
    }

    fn on_resource_event_with_read(&self, name: &str, event: WatcherEvent, read: ReadDelayHandle) {
        if read.holds_a_read() && self.holding.load(std::sync::atomic::Ordering::SeqCst) {
            self.held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(read);
        }
        self.on_resource_event(name, event);
    }

    fn on_resource_event(&self, name: &str, event: WatcherEvent) {
        let notification = match event {
            WatcherEvent::Changed(value) => WatcherNotification::Changed {
                summary: value.summary(),
            },
            WatcherEvent::ResourceError(e) => WatcherNotification::ResourceError(e),
            WatcherEvent::AmbientError(e) => WatcherNotification::AmbientError(e),
            WatcherEvent::AmbientErrorCleared => WatcherNotification::AmbientErrorCleared,
            WatcherEvent::DoesNotExist => WatcherNotification::DoesNotExist,
        };
        (self.sink)(ObservedEvent::Watcher {
            resource_type: self.resource_type,
            name: name.to_string(),
            notification,
        });
        // Still inside the callback: the client must take a new watch
        // here without deadlocking (C-core runs callbacks without its lock).
        let armed = std::mem::take(&mut *self.armed.lock().unwrap_or_else(|e| e.into_inner()));
        for watch in armed {
            if watch.lost {
                continue;
            }
            let observed = Arc::new(Observed::new(
                watch.resource_type,
                &watch.name,
                watch.sink.clone(),
            ));
            watch
                .client
                .watch(watch.resource_type, watch.name.as_str(), observed);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::{Duration, SystemTime};

    use xds_fake_server::event::ServerEvent;
    use xds_fake_server::resource::ServedResource;
    use xds_fake_server::{FakeAdsServer, ServerConfig, ServingMode};
    use xds_vocabulary::kds::{self, KdsName, KdsResource, kuma_resource, spec, types};
    use xds_vocabulary::network::MemoryNetwork;

    use super::*;
    use crate::{ClientBootstrap, ZoneSettings};

    const GLOBAL: &str = "global:5685";

    fn resource(kuma_type: &str, key: KdsName) -> KdsResource {
        // A spec each type has: a Mesh's mTLS, a Dataplane's address.
        let spec = match kuma_type {
            types::MESH => serde_json::json!({"mtls": {}}),
            _ => serde_json::json!({"networking": {"address": "10.0.0.1"}}),
        };
        KdsResource {
            kuma_type: kuma_type.into(),
            resource: kuma_resource(
                &key,
                BTreeMap::new(),
                Some(spec::pack(kuma_type, spec.as_object().expect("object")).expect("packs")),
            ),
        }
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    /// A KDS run on the reference: the zone starts with the client, reports
    /// what it stores on the timeline, takes zone_set and zone_remove, and
    /// stops with it; its defects come from `with_defects`.
    #[tokio::test(start_paused = true)]
    async fn a_kds_run_plays_a_zone_against_the_bootstraps_first_server() {
        let network = MemoryNetwork::new();
        let server = FakeAdsServer::new(ServerConfig {
            name: "global".into(),
            mode: ServingMode::Auto,
        });
        server.serve_in_memory(&network, GLOBAL).expect("serve");
        let mesh = resource(types::MESH, KdsName::global("m1"));
        server.set_resources(
            vec![ServedResource::raw(
                types::MESH,
                "m1.",
                kds::pack(&mesh.resource),
            )],
            None,
        );
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        let bootstrap = format!(
            r#"{{"xds_servers": [{{"server_uri": "{GLOBAL}", "channel_creds": [{{"type": "insecure"}}]}}], "node": {{"id": "n"}}}}"#
        );
        let env = ClientEnvironment {
            projection: None,
            bootstrap: ClientBootstrap::GrpcJson(bootstrap),
            transport: Transport::InMemory {
                xds: Arc::new(network.clone()),
                data_plane: Arc::new(network.clone()),
            },
            rng_seed: 1,
            profile: None,
            clock_epoch: SystemTime::UNIX_EPOCH,
            events: Arc::new(move |event| sink.lock().expect("lock").push(event)),
            zone: Some(ZoneSettings {
                name: "zone-1".into(),
                resources: vec![resource(types::DATAPLANE, KdsName::new("dp-1", "default"))],
                refresh_interval: None,
            }),
            env: BTreeMap::new(),
        };
        let mut defects = Defects::default();
        defects.zone.no_client_id_header = true;
        let mut client = ReferenceClient::with_defects(defects);
        assert!(client.capabilities().kds_zone);
        client.start(env).await.expect("start");
        settle().await;
        let stored: Vec<ObservedEvent> = heard
            .lock()
            .expect("lock")
            .iter()
            .filter(|e| matches!(e, ObservedEvent::Zone(_)))
            .cloned()
            .collect();
        assert_eq!(
            stored,
            [ObservedEvent::Zone(ZoneStoreChange::Stored {
                kuma_type: types::MESH.into(),
                name: KdsName::global("m1"),
                // Stamped by the global, as a real one does.
                labels: BTreeMap::from([("kuma.io/origin".to_string(), "global".to_string())]),
                spec: r#"{"mtls":{}}"#.into(),
            })]
        );
        assert!(
            heard
                .lock()
                .expect("lock")
                .iter()
                .any(|e| matches!(e, ObservedEvent::Client(ClientEvent::AdsCallStarted { server, .. }) if server == GLOBAL))
        );
        client
            .zone_set(vec![resource(
                types::DATAPLANE,
                KdsName::new("dp-2", "default"),
            )])
            .await
            .expect("zone_set");
        client
            .zone_remove(types::DATAPLANE, &[KdsName::new("dp-1", "default")])
            .await
            .expect("zone_remove");
        settle().await;
        let events = server.events();
        let dataplanes: Vec<(Vec<String>, Vec<String>)> = events
            .iter()
            .filter_map(|r| match &r.event {
                ServerEvent::KdsResponseReceived { response, .. }
                    if response.type_url == types::DATAPLANE =>
                {
                    let removed = response.delta.as_ref().map(|d| d.removed_resources.clone());
                    Some((response.resource_names.clone(), removed.unwrap_or_default()))
                }
                _ => None,
            })
            .collect();
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            dataplanes,
            [
                // Hash-suffixed as Kuma's zone names them (zone-1).
                (strings(&["dp-1-dff6z597w47d46xx.default"]), vec![]),
                (strings(&["dp-2-xw6954dw4969cdfz.default"]), vec![]),
                (vec![], strings(&["dp-1-dff6z597w47d46xx.default"])),
            ]
        );
        let client_ids: Vec<Option<String>> = events
            .iter()
            .filter_map(|r| match &r.event {
                ServerEvent::KdsStreamOpened { handshake, .. } => Some(handshake.client_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(client_ids, [None, None], "the zone defects were carried");

        client.shutdown().await;
        settle().await;
        assert!(server.open_streams().is_empty(), "both RPCs cancelled");
        assert!(matches!(
            client.zone_set(vec![]).await,
            Err(ClientError::Failed(_))
        ));
    }
}
