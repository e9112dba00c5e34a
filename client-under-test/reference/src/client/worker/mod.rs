//! The XdsClient's worker: one task owns everything (authorities, xDS
//! channels, ADS streams, the resource cache and every timer), so there are
//! no locks and, on a current-thread runtime, one order of events. This
//! module is the dispatcher: commands, stream events and timers go to
//! - `watches`: watching and cancelling (authorities, cache entries);
//! - `channels`: xDS channels and their ADS streams (subscriptions,
//!   requests, connection, backoff, does-not-exist timers; A57);
//! - `updates`: responses applied to the cache (A46, A53, A88);
//! - `fallback`: server health and A71 fallback;
//!
//! and CSDS is dumped here.
//!
//! Its shape follows gRPC C-core's XdsClient: an authority holds a list of
//! xDS channels in priority order (the last one is the one in use, gRFC
//! A71); a channel holds a retryable ADS stream; a stream holds, per
//! resource type, the nonce and the subscribed names with their
//! does-not-exist timers.

mod channels;
mod fallback;
mod updates;
mod watches;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use envoy_types::pb::envoy::admin::v3::ClientResourceStatus;
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::status::v3::ClientConfig;
use envoy_types::pb::google::protobuf::Timestamp;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tonic::Code;

use super::ads::call::{CallEvent, CallId, CallMessage};
use super::ads::channel::{AdsChannel, AdsChannelFactory};
use super::ads::wire::Response;
use super::ads::{
    AdsStream, Deletions, Memory, ParsedResponse, ResourceEntry, ResourceErrors, ServerError,
    TimerId, WILDCARD, delta, sotw,
};
use super::cache::ResourceState;
use crate::backoff::{Backoff, SplitMix64};
use crate::bootstrap::{Bootstrap, XdsServerConfig};
use crate::name::ResourceName;
use crate::observer::{CallService, ClientEvent, ClientObserver, LogLevel};
use crate::profile::{ClientProfile, DataErrorHandling, RetryAfterGoodStream, ServerErrorRule};
use crate::read_delay::ReadDelayHandle;
use crate::resource::{DecodeContext, ResourceType};
use crate::watcher::{ResourceWatcher, WatcherEvent, XdsError, code_name};

/// Identifies one watch, for cancelling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WatchId(pub u64);

pub(crate) enum Command {
    Watch {
        id: WatchId,
        resource_type: ResourceType,
        name: String,
        watcher: Arc<dyn ResourceWatcher>,
    },
    Cancel {
        id: WatchId,
    },
    Dump {
        reply: oneshot::Sender<ClientConfig>,
    },
}

/// What does not change while the client runs.
pub(crate) struct Shared {
    /// What validating a resource needs besides its bytes (from the
    /// bootstrap and the profile).
    pub decode: DecodeContext,
    pub bootstrap: Bootstrap,
    pub profile: ClientProfile,
    pub channels: Arc<dyn AdsChannelFactory>,
    pub observer: Option<Arc<dyn ClientObserver>>,
    pub client_scope: String,
    pub node: Node,
    /// Wall-clock time at `start`, for CSDS timestamps: under virtual time
    /// they must be deterministic too.
    pub epoch: SystemTime,
    pub start: Instant,
    /// Watches the user cancelled whose cancel the worker has not handled
    /// yet: their watchers hear nothing more (a watcher is never called
    /// after its cancel returned, though the worker may still be handling
    /// the watch itself, e.g. telling it a cached value or error).
    pub cancelled: std::sync::Mutex<HashSet<WatchId>>,
}

#[derive(Default)]
struct AuthorityState {
    /// Channels in priority order; the last is the one in use.
    channels: Vec<XdsServerConfig>,
    resources: BTreeMap<ResourceType, BTreeMap<String, ResourceState>>,
    /// Wildcard watches by type: each also watches every cache entry of
    /// its type, including the ones a response brings later.
    wildcards: BTreeMap<ResourceType, BTreeSet<WatchId>>,
}

impl AuthorityState {
    /// The cache entry an update of `key` from `server` goes to: the
    /// watched one, or a new one for the authority's wildcard watches of
    /// the type, if any and if the authority uses `server`.
    /// `Defects::wildcard_misses_new` leaves the new one without them
    /// (`tell_wildcards` false).
    fn entry_for_update(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        key: &str,
        tell_wildcards: bool,
    ) -> Option<&mut ResourceState> {
        let watched = self
            .resources
            .get(&resource_type)
            .is_some_and(|by_type| by_type.contains_key(key));
        if !watched {
            let ids = self
                .wildcards
                .get(&resource_type)
                .filter(|_| self.channels.contains(server))?;
            let mut entry = ResourceState::new();
            if tell_wildcards {
                entry.watchers.extend(ids.iter().copied());
            }
            self.resources
                .entry(resource_type)
                .or_default()
                .insert(key.to_string(), entry);
        }
        self.resources.get_mut(&resource_type)?.get_mut(key)
    }

    fn is_unused(&self) -> bool {
        self.resources.is_empty() && self.wildcards.is_empty()
    }

    /// What the authority subscribes to on a channel: each name a watch
    /// names (whose entry `wanted` accepts), and `*` for each type with a
    /// wildcard watch. Entries only wildcard watches see come with `*`.
    fn subscriptions(
        &self,
        authority: &Option<String>,
        wanted: impl Fn(&ResourceState) -> bool,
    ) -> Vec<(ResourceType, ResourceName)> {
        let name = |key: &str| ResourceName {
            authority: authority.clone(),
            key: key.to_string(),
        };
        let mut subscriptions = Vec::new();
        for (resource_type, by_type) in &self.resources {
            let wildcard = self.wildcards.get(resource_type);
            for (key, state) in by_type {
                let named = state
                    .watchers
                    .iter()
                    .any(|w| wildcard.is_none_or(|ids| !ids.contains(w)));
                if named && wanted(state) {
                    subscriptions.push((*resource_type, name(key)));
                }
            }
        }
        for resource_type in self.wildcards.keys() {
            subscriptions.push((*resource_type, name(WILDCARD)));
        }
        subscriptions
    }

    /// gRFC A71: a watched resource is cached if it has "been successfully
    /// received and can be used" or is "considered non-existent"; one
    /// NACKed before any value was accepted is neither, so it wants
    /// fallback too (C-core 1.85 and grpc-go 1.85 count only those never
    /// answered: `XdsClient::HasUncachedResources`, xds_client.cc:1657-1668;
    /// `watcherExistsForUncachedResource`, authority.go:846-855).
    fn has_uncached(&self, nacked_counts_as_cached: bool) -> bool {
        self.resources
            .values()
            .flat_map(|m| m.values())
            // An entry kept only until its unsubscription goes out is no
            // reason to fall back (C-core's HasUncachedResources).
            .filter(|state| !state.watchers.is_empty())
            .any(|state| {
                state.is_awaited()
                    || (state.is_rejected_without_value() && !nacked_counts_as_cached)
            })
    }
}

struct XdsChannel {
    transport: Box<dyn AdsChannel>,
    /// None while healthy; the last connectivity error otherwise.
    status: Option<XdsError>,
    failures: u64,
    /// What the protocol remembers across streams (SotW: the last version
    /// accepted per type).
    memory: Memory,
    retryable: Option<RetryableCall>,
}

struct RetryableCall {
    backoff: Backoff,
    /// gRPC's connection backoff, for a wait_for_ready call whose
    /// connection fails (`ClientProfile::ads_wait_for_ready`); reset once
    /// a connection is ready.
    connect_backoff: Backoff,
    /// The current call goes on from a failed connection, unannounced: a
    /// wait_for_ready call is one call however many connections it waits
    /// through.
    waiting_for_ready: bool,
    call: Option<AdsStream>,
    retry_timer: Option<TimerId>,
    /// Calls started so far (`Defects::new_streams_resubscribe_late`).
    calls_started: u64,
}

enum TimerKind {
    DoesNotExist {
        server: XdsServerConfig,
        call: u64,
        resource_type: ResourceType,
        name: ResourceName,
    },
    Retry {
        server: XdsServerConfig,
    },
    /// `Defects::timer_from_watch` only.
    WatchTimer {
        resource_type: ResourceType,
        name: ResourceName,
    },
    /// gRPC's minimum connect timeout: a call whose transport has not heard
    /// the server by then fails, and the connection attempt is dropped.
    ConnectDeadline {
        server: XdsServerConfig,
        call: u64,
    },
}

/// gRPC's `min_connect_timeout` (C-core `GRPC_ARG_MIN_RECONNECT_BACKOFF_MS`
/// default, 20 s): how long a connection attempt, HTTP/2 handshake
/// included, may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

enum Outgoing {
    /// An event about the named resource.
    Watcher(
        WatchId,
        Arc<dyn ResourceWatcher>,
        String,
        WatcherEvent,
        ReadDelayHandle,
    ),
    Client(ClientEvent),
}

pub(crate) struct Worker {
    shared: Arc<Shared>,
    rng: SplitMix64,
    authorities: BTreeMap<Option<String>, AuthorityState>,
    channels: BTreeMap<XdsServerConfig, XdsChannel>,
    /// The delta memory of servers whose channel was released: the client
    /// still holds their copies (back on the primary, what only the
    /// fallback sent stays the fallback's), and a new channel to the
    /// server claims them again. One entry per bootstrap server at most.
    parked: BTreeMap<XdsServerConfig, delta::DeltaMemory>,
    watchers: BTreeMap<WatchId, WatchEntry>,
    timers: BTreeMap<TimerId, TimerKind>,
    timer_seq: u64,
    next_call_id: u64,
    call_events: mpsc::UnboundedSender<CallMessage>,
    outbox: Vec<Outgoing>,
    /// The handle of the response being applied, if one is (see
    /// [`ReadDelayHandle`]): its notifications carry it.
    current_read: ReadDelayHandle,
    /// Transports of released channels kept open: only with the defect
    /// `fallback_connection_kept` (a released channel's connection closes).
    kept_transports: Vec<Box<dyn AdsChannel>>,
}

struct WatchEntry {
    resource_type: ResourceType,
    /// The name as the watch gave it (`*` for a wildcard watch).
    watched: String,
    /// None for a watch that failed at once (bad name, unknown authority).
    name: Option<ResourceName>,
    watcher: Arc<dyn ResourceWatcher>,
}

impl Worker {
    pub(crate) fn new(
        shared: Arc<Shared>,
        rng_seed: u64,
        call_events: mpsc::UnboundedSender<CallMessage>,
    ) -> Worker {
        Worker {
            shared,
            rng: SplitMix64::new(rng_seed),
            authorities: BTreeMap::new(),
            channels: BTreeMap::new(),
            parked: BTreeMap::new(),
            watchers: BTreeMap::new(),
            timers: BTreeMap::new(),
            timer_seq: 0,
            next_call_id: 0,
            call_events,
            outbox: Vec::new(),
            current_read: ReadDelayHandle::no_wait(),
            kept_transports: Vec::new(),
        }
    }

    pub(crate) async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut call_messages: mpsc::UnboundedReceiver<CallMessage>,
    ) {
        loop {
            let next_timer = self.timers.keys().next().map(|(at, _)| *at);
            tokio::select! {
                biased;
                command = commands.recv() => match command {
                    Some(command) => self.handle_command(command),
                    None => break,
                },
                Some(message) = call_messages.recv() => self.handle_call_message(message),
                _ = sleep_until_opt(next_timer), if next_timer.is_some() => self.fire_timers(),
            }
            self.flush();
        }
        // Shutting down: dropping the channels cancels every call.
        self.channels.clear();
    }

    fn flush(&mut self) {
        let outbox = std::mem::take(&mut self.outbox);
        let cancelled = |id: &WatchId| {
            !self.shared.profile.defects.callbacks_after_cancel
                && self
                    .shared
                    .cancelled
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .contains(id)
        };
        for out in outbox {
            match out {
                Outgoing::Watcher(id, w, name, event, read) => {
                    if !cancelled(&id) {
                        w.on_resource_event_with_read(&name, event, read)
                    }
                }
                Outgoing::Client(event) => {
                    if let Some(observer) = &self.shared.observer {
                        observer.on_client_event(event);
                    }
                }
            }
        }
    }

    fn emit(&mut self, event: ClientEvent) {
        self.outbox.push(Outgoing::Client(event));
    }

    fn log(&mut self, level: LogLevel, message: String) {
        self.emit(ClientEvent::Log { level, message });
    }

    /// Queues `event` for the given watchers, in watch order.
    /// Queues `event`, which concerns each watcher's own watch (a channel
    /// error, say), for the given watchers, in watch order.
    fn notify<'a>(&mut self, watchers: impl IntoIterator<Item = &'a WatchId>, event: WatcherEvent) {
        let event = self.with_node_id(event);
        for id in watchers {
            if let Some(entry) = self.watchers.get(id) {
                self.outbox.push(Outgoing::Watcher(
                    *id,
                    entry.watcher.clone(),
                    entry.watched.clone(),
                    event.clone(),
                    self.current_read.clone(),
                ));
            }
        }
    }

    /// Queues `event` about the resource `name` for the given watchers, in
    /// watch order (a wildcard watch hears which resource it is about).
    fn notify_about<'a>(
        &mut self,
        name: &str,
        watchers: impl IntoIterator<Item = &'a WatchId>,
        event: WatcherEvent,
    ) {
        let event = self.with_node_id(event);
        for id in watchers {
            if let Some(entry) = self.watchers.get(id) {
                self.outbox.push(Outgoing::Watcher(
                    *id,
                    entry.watcher.clone(),
                    name.to_string(),
                    event.clone(),
                    self.current_read.clone(),
                ));
            }
        }
    }

    /// Error messages name the node, as C-core's `AppendNodeToStatus`.
    fn with_node_id(&self, event: WatcherEvent) -> WatcherEvent {
        let node_id = self.shared.bootstrap.node_id();
        let append = |e: XdsError| XdsError {
            code: e.code,
            message: format!("{} (node ID:{node_id})", e.message),
        };
        match event {
            WatcherEvent::ResourceError(e) => WatcherEvent::ResourceError(append(e)),
            WatcherEvent::AmbientError(e) => WatcherEvent::AmbientError(append(e)),
            other => other,
        }
    }

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn add_timer(&mut self, at: Instant, kind: TimerKind) -> TimerId {
        self.timer_seq += 1;
        let id = (at, self.timer_seq);
        self.timers.insert(id, kind);
        id
    }

    // ----- commands -------------------------------------------------------

    fn handle_command(&mut self, command: Command) {
        match command {
            Command::Watch {
                id,
                resource_type,
                name,
                watcher,
            } => self.watch(id, resource_type, &name, watcher),
            Command::Cancel { id } => {
                self.cancel_watch(id);
                self.shared
                    .cancelled
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .remove(&id);
            }
            Command::Dump { reply } => {
                let _ = reply.send(self.dump());
            }
        }
    }

    // ----- call events ----------------------------------------------------

    fn handle_call_message(&mut self, message: CallMessage) {
        let CallMessage { call, event } = message;
        let current = self
            .channels
            .get(&call.server)
            .and_then(|c| c.retryable.as_ref())
            .and_then(|r| r.call.as_ref())
            .is_some_and(|c| c.id == call.id);
        if !current {
            return; // An event of a stale call.
        }
        let server = call.server;
        match event {
            CallEvent::RequestTaken(resource_type) => self.on_request_taken(&server, resource_type),
            CallEvent::Connected => self.on_connected(&server),
            CallEvent::Response(response, read) => {
                // Its notifications carry the read's handle (a broken
                // client lets it go at once).
                if !self.shared.profile.defects.read_delays_ignored {
                    self.current_read = read;
                }
                self.on_response(&server, response);
                self.current_read = ReadDelayHandle::no_wait();
            }
            CallEvent::Finished(status) => self.on_call_finished(&server, status),
        }
    }

    // ----- timers ---------------------------------------------------------

    fn fire_timers(&mut self) {
        let now = self.now();
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (id, kind) = entry.remove_entry();
            match kind {
                TimerKind::Retry { server } => {
                    let Some(retryable) = self
                        .channels
                        .get_mut(&server)
                        .and_then(|c| c.retryable.as_mut())
                    else {
                        continue;
                    };
                    if retryable.retry_timer == Some(id) {
                        retryable.retry_timer = None;
                        self.start_call(&server);
                    }
                }
                TimerKind::DoesNotExist {
                    server,
                    call,
                    resource_type,
                    name,
                } => self.on_does_not_exist_timer(&server, call, resource_type, &name, id),
                TimerKind::ConnectDeadline { server, call } => {
                    self.on_connect_deadline(&server, call)
                }
                TimerKind::WatchTimer {
                    resource_type,
                    name,
                } => {
                    let Some(state) = self.resource_mut(&name, resource_type) else {
                        continue;
                    };
                    if let Some(event) = state.watch_timer_fired() {
                        let watchers = state.watchers.clone();
                        self.notify_about(&name.full_name(resource_type), &watchers, event);
                    }
                }
            }
        }
    }

    // ----- CSDS -------------------------------------------------------------

    fn timestamp(&self, at: Instant) -> Timestamp {
        let since = at.saturating_duration_since(self.shared.start);
        let wall = self.shared.epoch + since;
        let d = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp {
            seconds: d.as_secs() as i64,
            nanos: d.subsec_nanos() as i32,
        }
    }

    fn dump(&self) -> ClientConfig {
        let mut configs = Vec::new();
        for (authority, state) in &self.authorities {
            for (resource_type, by_type) in &state.resources {
                for (key, r) in by_type {
                    let name = ResourceName {
                        authority: authority.clone(),
                        key: key.clone(),
                    };
                    let mut entry = r.csds(
                        resource_type.type_url(),
                        name.full_name(*resource_type),
                        self.shared.profile.defects.csds_old_error_state,
                        |t| self.timestamp(t),
                    );
                    // `Defects::csds_nack_without_error_state`.
                    if self.shared.profile.defects.csds_nack_without_error_state
                        && entry.client_status == ClientResourceStatus::Nacked as i32
                    {
                        entry.error_state = None;
                    }
                    configs.push(entry);
                }
            }
        }
        // C-core's dump fills the node as PopulateNode does; only its ADS
        // requests add `xds.config.resource-in-sotw` (XdsApi's
        // CreateAdsRequest), so CSDS does not show that feature.
        let mut node = self.shared.node.clone();
        node.client_features
            .retain(|feature| feature != "xds.config.resource-in-sotw");
        ClientConfig {
            node: Some(node),
            generic_xds_configs: configs,
            client_scope: self.shared.client_scope.clone(),
            ..Default::default()
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
