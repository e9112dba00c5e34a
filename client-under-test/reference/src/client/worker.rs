//! The XdsClient's state machine. One task owns everything — authorities,
//! xDS channels, ADS calls, the resource cache and every timer — so there
//! are no locks and, on a current-thread runtime, one order of events.
//!
//! Its shape follows gRPC C-core's XdsClient: an authority holds a list of
//! xDS channels in priority order (the last one is the one in use, gRFC
//! A71); a channel holds a retryable ADS call; a call holds, per resource
//! type, the nonce and the subscribed names with their does-not-exist timers.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::status::v3::ClientConfig;
use envoy_types::pb::google::protobuf::Timestamp;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tonic::Code;

use super::ads::call::{CallEvent, CallId, CallMessage};
use super::ads::channel::{AdsChannel, AdsChannelFactory};
use super::ads::wire::Response;
use super::ads::{AdsStream, Deletions, Memory, TimerId, sotw};
use super::cache::ResourceState;
use crate::backoff::{Backoff, SplitMix64};
use crate::bootstrap::{Bootstrap, XdsServerConfig};
use crate::name::ResourceName;
use crate::observer::{ClientEvent, ClientObserver, LogLevel};
use crate::profile::{ClientProfile, DataErrorHandling, RetryAfterGoodStream};
use crate::resource::ResourceType;
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
}

#[derive(Default)]
struct AuthorityState {
    /// Channels in priority order; the last is the one in use.
    channels: Vec<XdsServerConfig>,
    resources: BTreeMap<ResourceType, BTreeMap<String, ResourceState>>,
}

impl AuthorityState {
    fn has_uncached(&self) -> bool {
        self.resources
            .values()
            .flat_map(|m| m.values())
            .any(ResourceState::is_awaited)
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
    call: Option<AdsStream>,
    retry_timer: Option<TimerId>,
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
    Watcher(Arc<dyn ResourceWatcher>, WatcherEvent),
    Client(ClientEvent),
}

pub(crate) struct Worker {
    shared: Arc<Shared>,
    rng: SplitMix64,
    authorities: BTreeMap<Option<String>, AuthorityState>,
    channels: BTreeMap<XdsServerConfig, XdsChannel>,
    watchers: BTreeMap<WatchId, WatchEntry>,
    timers: BTreeMap<TimerId, TimerKind>,
    timer_seq: u64,
    next_call_id: u64,
    call_events: mpsc::UnboundedSender<CallMessage>,
    outbox: Vec<Outgoing>,
}

struct WatchEntry {
    resource_type: ResourceType,
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
            watchers: BTreeMap::new(),
            timers: BTreeMap::new(),
            timer_seq: 0,
            next_call_id: 0,
            call_events,
            outbox: Vec::new(),
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
        for out in std::mem::take(&mut self.outbox) {
            match out {
                Outgoing::Watcher(w, event) => w.on_event(event),
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
    fn notify<'a>(&mut self, watchers: impl IntoIterator<Item = &'a WatchId>, event: WatcherEvent) {
        let event = self.with_node_id(event);
        for id in watchers {
            if let Some(entry) = self.watchers.get(id) {
                self.outbox
                    .push(Outgoing::Watcher(entry.watcher.clone(), event.clone()));
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
            Command::Cancel { id } => self.cancel_watch(id),
            Command::Dump { reply } => {
                let _ = reply.send(self.dump());
            }
        }
    }

    fn watch(
        &mut self,
        id: WatchId,
        resource_type: ResourceType,
        name: &str,
        watcher: Arc<dyn ResourceWatcher>,
    ) {
        let parsed = ResourceName::parse(name, resource_type)
            .map_err(|e| XdsError::new(Code::InvalidArgument, e.to_string()))
            .and_then(|parsed| match &parsed.authority {
                Some(a) if !self.shared.bootstrap.authorities.contains_key(a) => {
                    Err(XdsError::new(
                        Code::FailedPrecondition,
                        format!("authority \"{a}\" not present in bootstrap config"),
                    ))
                }
                _ => Ok(parsed),
            });
        let parsed = match parsed {
            Ok(parsed) => parsed,
            Err(error) => {
                self.watchers.insert(
                    id,
                    WatchEntry {
                        resource_type,
                        name: None,
                        watcher,
                    },
                );
                return self.notify(&BTreeSet::from([id]), WatcherEvent::ResourceError(error));
            }
        };
        self.watchers.insert(
            id,
            WatchEntry {
                resource_type,
                name: Some(parsed.clone()),
                watcher,
            },
        );
        let servers = self.servers_for(&parsed.authority);
        let watched_before = self
            .authorities
            .get(&parsed.authority)
            .and_then(|a| a.resources.get(&resource_type))
            .is_some_and(|r| r.contains_key(&parsed.key));
        if !watched_before && self.shared.profile.defects.timer_from_watch {
            let at = self.now() + self.shared.profile.resource_request_timeout;
            self.add_timer(
                at,
                TimerKind::WatchTimer {
                    resource_type,
                    name: parsed.clone(),
                },
            );
        }

        let authority = self
            .authorities
            .entry(parsed.authority.clone())
            .or_default();
        let by_type = authority.resources.entry(resource_type).or_default();
        let first_watcher = !by_type.contains_key(&parsed.key);
        let state = by_type
            .entry(parsed.key.clone())
            .or_insert_with(ResourceState::new);
        state.watchers.insert(id);
        let cached_event = if first_watcher {
            None
        } else {
            state.event_for_new_watcher()
        };
        let notified = cached_event.is_some();
        if let Some(event) = cached_event {
            self.notify(&BTreeSet::from([id]), event);
        }
        if first_watcher {
            // Add channels if the authority has none yet, or if the one in
            // use is failing: a new uncached resource may need fallback.
            let needs_channel = {
                let channels = &self.authorities[&parsed.authority].channels;
                channels
                    .last()
                    .is_none_or(|last| self.channel_failing(last))
            };
            if needs_channel {
                let start = self.authorities[&parsed.authority].channels.len();
                for server in servers.iter().skip(start) {
                    self.get_or_create_channel(server);
                    self.authority_mut(&parsed.authority)
                        .channels
                        .push(server.clone());
                    self.report_fallback_if_not_first(&parsed.authority, server);
                    if !self.channel_failing(server) {
                        break;
                    }
                }
            }
            for server in self.authorities[&parsed.authority].channels.clone() {
                self.channel_subscribe(&server, resource_type, &parsed);
            }
        }
        // A failing channel: tell the new watcher at once.
        let failing = self.authorities[&parsed.authority]
            .channels
            .last()
            .and_then(|s| self.channels.get(s))
            .and_then(|c| c.status.clone());
        if let Some(error) = failing {
            let event = if notified {
                WatcherEvent::AmbientError(error)
            } else {
                WatcherEvent::ResourceError(error)
            };
            self.notify(&BTreeSet::from([id]), event);
        }
    }

    /// The authority's servers in priority order (gRFC A47: its own, or
    /// the top-level ones when it has none).
    fn servers_for(&self, authority: &Option<String>) -> Vec<XdsServerConfig> {
        let authority = authority
            .as_deref()
            .filter(|_| !self.shared.profile.defects.authorities_ignored);
        self.shared
            .bootstrap
            .servers_for_authority(authority)
            .to_vec()
    }

    fn report_fallback_if_not_first(
        &mut self,
        authority: &Option<String>,
        server: &XdsServerConfig,
    ) {
        if self.authorities[authority].channels.len() > 1 {
            self.emit(ClientEvent::FallbackStarted {
                authority: authority.clone().unwrap_or_default(),
                server: server.server_uri.clone(),
            });
        }
    }

    fn cancel_watch(&mut self, id: WatchId) {
        let Some(entry) = self.watchers.remove(&id) else {
            return;
        };
        let Some(name) = entry.name else { return };
        let resource_type = entry.resource_type;
        let Some(authority) = self.authorities.get_mut(&name.authority) else {
            return;
        };
        let Some(by_type) = authority.resources.get_mut(&resource_type) else {
            return;
        };
        let Some(state) = by_type.get_mut(&name.key) else {
            return;
        };
        state.watchers.remove(&id);
        if !state.watchers.is_empty() {
            return;
        }
        let ignored_deletion = state.deletion_ignored();
        by_type.remove(&name.key);
        if by_type.is_empty() {
            authority.resources.remove(&resource_type);
        }
        let channels = authority.channels.clone();
        if ignored_deletion {
            let message = format!(
                "unsubscribing from a resource for which we previously ignored a deletion: type {} name {}",
                resource_type.type_url(),
                name.full_name(resource_type)
            );
            self.log(LogLevel::Info, message);
        }
        for server in &channels {
            self.channel_unsubscribe(server, resource_type, &name);
        }
        let authority = self.authority_mut(&name.authority);
        if authority.resources.is_empty() {
            authority.channels.clear();
            self.authorities.remove(&name.authority);
            self.release_unused_channels();
        }
    }

    fn authority_mut(&mut self, authority: &Option<String>) -> &mut AuthorityState {
        self.authorities.entry(authority.clone()).or_default()
    }

    // ----- channels -------------------------------------------------------

    fn channel_failing(&self, server: &XdsServerConfig) -> bool {
        self.channels
            .get(server)
            .is_some_and(|c| c.status.is_some())
    }

    fn get_or_create_channel(&mut self, server: &XdsServerConfig) {
        if !self.channels.contains_key(server) {
            self.channels.insert(
                server.clone(),
                XdsChannel {
                    transport: self.shared.channels.open(server),
                    status: None,
                    failures: 0,
                    memory: Memory::Sotw(Default::default()),
                    retryable: None,
                },
            );
        }
    }

    /// Drops channels no authority uses any more (closing their streams).
    fn release_unused_channels(&mut self) {
        let used: BTreeSet<&XdsServerConfig> = self
            .authorities
            .values()
            .flat_map(|a| a.channels.iter())
            .collect();
        let unused: Vec<XdsServerConfig> = self
            .channels
            .keys()
            .filter(|s| !used.contains(s))
            .cloned()
            .collect();
        for server in unused {
            if let Some(mut channel) = self.channels.remove(&server)
                && let Some(retryable) = channel.retryable.take()
            {
                self.drop_retryable(retryable);
            }
        }
    }

    fn drop_retryable(&mut self, mut retryable: RetryableCall) {
        if let Some(timer) = retryable.retry_timer.take() {
            self.timers.remove(&timer);
        }
        if let Some(call) = retryable.call.take() {
            self.cancel_call_timers(&call);
        }
    }

    fn channel_subscribe(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        name: &ResourceName,
    ) {
        let Some(channel) = self.channels.get_mut(server) else {
            return;
        };
        match &mut channel.retryable {
            None => {
                channel.retryable = Some(RetryableCall {
                    backoff: Backoff::new(self.shared.profile.backoff),
                    call: None,
                    retry_timer: None,
                });
                // A new call subscribes everything its authorities watch.
                self.start_call(server);
            }
            // In backoff: the next call will subscribe it.
            Some(RetryableCall { call: None, .. }) => {}
            Some(RetryableCall {
                call: Some(call), ..
            }) => {
                if call.subscribe(resource_type, name) {
                    self.send_request(server, resource_type);
                }
            }
        }
    }

    fn channel_unsubscribe(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        name: &ResourceName,
    ) {
        let Some(call) = self.call_mut(server) else {
            return;
        };
        let timer = call.unsubscribe(resource_type, name);
        let still_subscribed = call.has_subscriptions();
        if let Some(timer) = timer {
            self.timers.remove(&timer);
        }
        if still_subscribed {
            self.send_request(server, resource_type);
        } else if let Some(channel) = self.channels.get_mut(server)
            && let Some(retryable) = channel.retryable.take()
        {
            // The last subscription on this server went: close the stream.
            self.drop_retryable(retryable);
        }
    }

    fn call_mut(&mut self, server: &XdsServerConfig) -> Option<&mut AdsStream> {
        self.channels
            .get_mut(server)?
            .retryable
            .as_mut()?
            .call
            .as_mut()
    }

    fn start_call(&mut self, server: &XdsServerConfig) {
        self.next_call_id += 1;
        let id = self.next_call_id;
        let Some(channel) = self.channels.get_mut(server) else {
            return;
        };
        let (queue_tx, queue_rx) = mpsc::unbounded_channel();
        let call_id = CallId {
            server: server.clone(),
            id,
        };
        let task = channel
            .transport
            .start_call(call_id, queue_rx, self.call_events.clone());
        let mut call = AdsStream::new(id, queue_tx, task, self.now());
        // Subscribe to everything the authorities using this channel watch.
        let only_uncached = self
            .shared
            .profile
            .defects
            .fallback_subscribes_only_uncached;
        for (authority_name, authority) in &self.authorities {
            if !authority.channels.contains(server) {
                continue;
            }
            let is_fallback = authority.channels.first() != Some(server);
            for (resource_type, by_type) in &authority.resources {
                for (key, state) in by_type {
                    if only_uncached && is_fallback && state.is_cached() {
                        continue;
                    }
                    let name = ResourceName {
                        authority: authority_name.clone(),
                        key: key.clone(),
                    };
                    call.subscribe(*resource_type, &name);
                }
            }
        }
        let types = call.types();
        let Some(retryable) = self
            .channels
            .get_mut(server)
            .and_then(|c| c.retryable.as_mut())
        else {
            return;
        };
        retryable.call = Some(call);
        // On a live connection the call says it is connected at once,
        // which cancels this.
        let deadline = self.now() + CONNECT_TIMEOUT;
        let timer = self.add_timer(
            deadline,
            TimerKind::ConnectDeadline {
                server: server.clone(),
                call: id,
            },
        );
        if let Some(call) = self.call_mut(server) {
            call.connect_deadline = Some(timer);
        }
        self.emit(ClientEvent::AdsCallStarted {
            server: server.server_uri.clone(),
        });
        for resource_type in types {
            self.send_request(server, resource_type);
        }
    }

    /// Builds and queues the request for `resource_type` on the server's
    /// current stream, in the stream's protocol.
    fn send_request(&mut self, server: &XdsServerConfig, resource_type: ResourceType) {
        let node = &self.shared.node;
        let Some(XdsChannel {
            memory,
            retryable: Some(RetryableCall {
                call: Some(call), ..
            }),
            ..
        }) = self.channels.get_mut(server)
        else {
            return;
        };
        call.send_request(resource_type, memory, node);
    }

    /// Sends the stream's next waiting request, if it may.
    fn send_next(&mut self, server: &XdsServerConfig) {
        let node = &self.shared.node;
        let Some(XdsChannel {
            memory,
            retryable: Some(RetryableCall {
                call: Some(call), ..
            }),
            ..
        }) = self.channels.get_mut(server)
        else {
            return;
        };
        call.send_next(memory, node);
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
            CallEvent::Response(response) => self.on_response(&server, response),
            CallEvent::Finished(status) => self.on_call_finished(&server, status),
        }
    }

    fn on_request_taken(&mut self, server: &XdsServerConfig, resource_type: ResourceType) {
        let timer_while_connecting = self.shared.profile.defects.timer_while_connecting;
        let Some(call) = self.call_mut(server) else {
            return;
        };
        if call.request_taken(resource_type, timer_while_connecting) {
            self.mark_send_complete(server, resource_type);
        }
        self.send_next(server);
    }

    fn on_connected(&mut self, server: &XdsServerConfig) {
        let Some(call) = self.call_mut(server) else {
            return;
        };
        let unconfirmed = call.on_connected();
        let deadline = call.connect_deadline.take();
        if let Some(timer) = deadline {
            self.timers.remove(&timer);
        }
        self.emit(ClientEvent::Connected {
            server: server.server_uri.clone(),
            connected: true,
        });
        for resource_type in unconfirmed {
            self.mark_send_complete(server, resource_type);
        }
    }

    /// The subscription request of `resource_type` is on a connected stream:
    /// start the does-not-exist timers that should run (A57).
    fn mark_send_complete(&mut self, server: &XdsServerConfig, resource_type: ResourceType) {
        let timeout = self.resource_timeout(server);
        let now = self.now();
        let Some(call) = self.call_mut(server) else {
            return;
        };
        let call_id = call.id;
        let Some(candidates) = call.timer_candidates(resource_type) else {
            return;
        };
        let names = candidates
            .iter()
            .map(|n| n.full_name(resource_type))
            .collect();
        self.emit(ClientEvent::SubscriptionSent {
            server: server.server_uri.clone(),
            resource_type,
            names,
        });
        for name in candidates {
            // Cached resources need no timer: the server may not resend them.
            let cached = self
                .resource(&name, resource_type)
                .is_some_and(ResourceState::is_cached);
            if cached {
                continue;
            }
            let timer = self.add_timer(
                now + timeout,
                TimerKind::DoesNotExist {
                    server: server.clone(),
                    call: call_id,
                    resource_type,
                    name: name.clone(),
                },
            );
            if let Some(call) = self.call_mut(server) {
                call.set_timer(resource_type, &name, timer);
            }
            self.emit(ClientEvent::ResourceTimerStarted {
                resource_type,
                name: name.full_name(resource_type),
                timeout,
            });
        }
    }

    /// gRFC A88 semantics (the client profile), rather than A53's.
    fn a88(&self) -> bool {
        self.shared.profile.data_errors == DataErrorHandling::A88
    }

    /// The does-not-exist timer: 15 s (A57), or 30 s under A88 for a
    /// server with `resource_timer_is_transient_error`.
    fn resource_timeout(&self, server: &XdsServerConfig) -> Duration {
        if self.a88() && server.resource_timer_is_transient_error() {
            Duration::from_secs(30)
        } else {
            self.shared.profile.resource_request_timeout
        }
    }

    fn resource(&self, name: &ResourceName, resource_type: ResourceType) -> Option<&ResourceState> {
        self.authorities
            .get(&name.authority)?
            .resources
            .get(&resource_type)?
            .get(&name.key)
    }

    fn resource_mut(
        &mut self,
        name: &ResourceName,
        resource_type: ResourceType,
    ) -> Option<&mut ResourceState> {
        self.authorities
            .get_mut(&name.authority)?
            .resources
            .get_mut(&resource_type)?
            .get_mut(&name.key)
    }

    fn on_response(&mut self, server: &XdsServerConfig, response: Response) {
        let Some(resource_type) = ResourceType::from_type_url(response.type_url()) else {
            // C-core ignores a response of an unknown type: no ACK, no NACK.
            let message = format!(
                "xds server {}: error parsing ADS response (unknown resource type {}) -- ignoring",
                server.server_uri,
                response.type_url()
            );
            return self.log(LogLevel::Error, message);
        };
        let parsed = match response {
            Response::Sotw(response) => sotw::parse(resource_type, response),
        };
        // Seen on this stream: their does-not-exist timers are moot.
        if let Some(call) = self.call_mut(server) {
            let moot: Vec<TimerId> = parsed
                .entries
                .iter()
                .filter_map(|entry| call.seen(resource_type, &entry.name))
                .collect();
            for timer in moot {
                self.timers.remove(&timer);
            }
        }
        let seen = (parsed.deletions == Deletions::AllOthers).then(|| parsed.names());
        let nonce = parsed.nonce.clone();
        let version = parsed.version.clone();
        let nack = (!parsed.errors.is_empty()).then(|| {
            format!(
                "xDS response validation errors: [{}]",
                parsed.errors.join("; ")
            )
        });
        self.apply_updates(server, resource_type, parsed);
        if let Some(call) = self.call_mut(server) {
            call.responded(resource_type, nonce.clone(), nack.clone());
        }
        self.set_healthy(server);
        if let Some(nack) = &nack {
            let message = format!(
                "xds server {}: ADS response invalid for resource type {} version {}, will NACK: nonce={} status={}",
                server.server_uri,
                resource_type.type_url(),
                version,
                nonce,
                nack
            );
            self.log(LogLevel::Error, message);
        }
        if let Some(seen) = seen {
            self.handle_sotw_deletions(server, resource_type, &version, &seen);
        }
        // A NACK carries the last version accepted in full; partly valid
        // responses keep their valid resources (A46) but not the version.
        if nack.is_none()
            && let Some(XdsChannel {
                memory: Memory::Sotw(memory),
                ..
            }) = self.channels.get_mut(server)
        {
            memory.accepted(resource_type, version);
        }
        self.send_request(server, resource_type);
    }

    /// Applies a response's resources to the cache, in order, and tells
    /// their watchers. Resources nobody watches are ignored.
    fn apply_updates(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        parsed: super::ads::ParsedResponse,
    ) {
        let now = self.now();
        let channel_failing = self.channel_failing(server);
        // A88: a data error drops the cached value when the server says
        // the control plane cannot alert anyone.
        let drop_on_data_error = self.a88() && server.fail_on_data_errors();
        // Watcher events and logs wait until every resource is looked at
        // (one cache lookup per resource: responses can carry 10,000).
        let mut events: Vec<(Vec<WatchId>, WatcherEvent)> = Vec::new();
        let mut logs = Vec::new();
        for entry in parsed.entries {
            let Some(state) = self
                .authorities
                .get_mut(&entry.name.authority)
                .and_then(|a| a.resources.get_mut(&resource_type))
                .and_then(|r| r.get_mut(&entry.name.key))
            else {
                continue; // Not subscribed: ignore it.
            };
            if state.end_ignored_deletion() {
                logs.push(format!(
                    "xds server {}: server returned new version of resource for which we previously ignored a deletion: type {} name {}",
                    server.server_uri,
                    resource_type.type_url(),
                    entry.full_name
                ));
            }
            let event = match entry.resource {
                Err(details) => {
                    Some(state.reject(&details, &entry.version, now, drop_on_data_error))
                }
                Ok((value, serialized)) => {
                    state.accept(value, serialized, &entry.version, now, channel_failing)
                }
            };
            if let Some(event) = event {
                events.push((state.watchers.iter().copied().collect(), event));
            }
        }
        for message in logs {
            self.log(LogLevel::Info, message);
        }
        for (watchers, event) in events {
            self.notify(&watchers, event);
        }
    }

    /// LDS and CDS responses carry every resource: a cached one that is
    /// missing was deleted. Only resources received before count — one never
    /// received may simply not have been asked for yet (the timer decides).
    fn handle_sotw_deletions(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        version: &str,
        seen: &HashSet<ResourceName>,
    ) {
        if self.a88() {
            return self.handle_sotw_deletions_a88(server, resource_type, version, seen);
        }
        let ignore =
            server.ignore_resource_deletion() && !self.shared.profile.defects.deletions_always_drop;
        let mut deleted = Vec::new();
        let mut ignored = Vec::new();
        self.each_deleted(server, resource_type, seen, |name, state| {
            if ignore {
                if state.ignore_deletion() {
                    ignored.push(name);
                }
            } else {
                deleted.push((state.watchers.clone(), state.delete()));
            }
        });
        for name in ignored {
            let message = format!(
                "xds server {}: ignoring deletion for resource type {} name {}",
                server.server_uri,
                resource_type.type_url(),
                name.full_name(resource_type)
            );
            self.log(LogLevel::Warning, message);
        }
        for (watchers, event) in deleted {
            self.notify(&watchers, event);
        }
    }

    /// Calls `on_deleted` for each cached resource of `resource_type` that
    /// a response from `server` left out, in the authorities that use
    /// `server` now.
    fn each_deleted(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        seen: &HashSet<ResourceName>,
        mut on_deleted: impl FnMut(ResourceName, &mut ResourceState),
    ) {
        for (authority_name, authority) in self.authorities.iter_mut() {
            if authority.channels.last() != Some(server) {
                continue;
            }
            let Some(by_type) = authority.resources.get_mut(&resource_type) else {
                continue;
            };
            for (key, state) in by_type.iter_mut() {
                let name = ResourceName {
                    authority: authority_name.clone(),
                    key: key.clone(),
                };
                if !seen.contains(&name) && state.is_cached() {
                    on_deleted(name, state);
                }
            }
        }
    }

    /// gRFC A88: a deletion is a data error. The cached value is kept (an
    /// ambient NOT_FOUND, on every response that still lacks it, as C-core
    /// does) unless the server has `fail_on_data_errors`; then it is
    /// dropped and watchers get a resource error. `ignore_resource_deletion`
    /// no longer counts. CSDS shows DOES_NOT_EXIST either way.
    fn handle_sotw_deletions_a88(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        version: &str,
        seen: &HashSet<ResourceName>,
    ) {
        let drop =
            server.fail_on_data_errors() || self.shared.profile.defects.deletions_always_drop;
        let now = self.now();
        let mut events = Vec::new();
        self.each_deleted(server, resource_type, seen, |_, state| {
            let event = state.delete_as_data_error(version, now, drop);
            events.push((state.watchers.iter().copied().collect::<Vec<_>>(), event));
        });
        for (watchers, event) in events {
            self.notify(&watchers, event);
        }
    }

    /// A response arrived: the channel is healthy, and authorities that had
    /// fallen back to lower-priority servers return to this one (A71).
    fn set_healthy(&mut self, server: &XdsServerConfig) {
        let mut fell_forward = Vec::new();
        if let Some(channel) = self.channels.get_mut(server) {
            let was_failing = channel.status.take().is_some();
            if was_failing {
                let failures = channel.failures;
                self.emit(ClientEvent::ServerStatus {
                    server: server.server_uri.clone(),
                    error: None,
                    failures,
                });
            }
        }
        let no_fall_forward = self.shared.profile.defects.no_fall_forward;
        for (name, authority) in self.authorities.iter_mut() {
            if authority.channels.last() == Some(server) || no_fall_forward {
                continue;
            }
            if let Some(position) = authority.channels.iter().position(|s| s == server) {
                authority.channels.truncate(position + 1);
                fell_forward.push(name.clone().unwrap_or_default());
            }
        }
        if !fell_forward.is_empty() {
            for authority in fell_forward {
                self.emit(ClientEvent::FellForward {
                    authority,
                    server: server.server_uri.clone(),
                });
            }
            self.release_unused_channels();
        }
    }

    /// The call's transport never heard the server (a blackhole, or a
    /// handshake that stalls): fail the call as C-core's connector does,
    /// and start the next attempt on a new connection.
    fn on_connect_deadline(&mut self, server: &XdsServerConfig, call_id: u64) {
        let stalled = self
            .call_mut(server)
            .is_some_and(|call| call.id == call_id && !call.connected);
        if self.shared.profile.defects.no_connect_timeout {
            return;
        }
        if !stalled {
            return;
        }
        if let Some(channel) = self.channels.get_mut(server) {
            // Dropping the old channel drops its pending connection.
            channel.transport = self.shared.channels.open(server);
        }
        self.on_call_finished(
            server,
            tonic::Status::unavailable(
                "connection attempt timed out before receiving SETTINGS frame",
            ),
        );
    }

    fn on_call_finished(&mut self, server: &XdsServerConfig, status: tonic::Status) {
        let Some(retryable) = self
            .channels
            .get_mut(server)
            .and_then(|c| c.retryable.as_mut())
        else {
            return;
        };
        let Some(call) = retryable.call.take() else {
            return;
        };
        let seen_response = call.seen_response;
        let was_connected = call.connected;
        let status = XdsError::new(status.code(), status.message().to_string());
        if seen_response && !self.shared.profile.defects.backoff_never_resets {
            retryable.backoff.reset();
        }
        let backoff = if seen_response
            && self.shared.profile.retry_after_good_stream == RetryAfterGoodStream::Immediately
        {
            Duration::ZERO
        } else {
            retryable.backoff.next_delay(&mut self.rng)
        };
        // gRPC connection backoff (connection-backoff.md): a connection
        // attempt that never connected is retried `backoff` after it
        // *started*, so after a 20 s connect timeout the next attempt is
        // at once (C-core does this). A stream that failed on a working
        // connection waits `backoff` from its end, as C-core's xDS call.
        let now = self.now();
        let at = if was_connected {
            now + backoff
        } else {
            (call.started + backoff).max(now)
        };
        let delay = at - now;
        self.cancel_call_timers(&call);
        drop(call);
        let timer = self.add_timer(
            at,
            TimerKind::Retry {
                server: server.clone(),
            },
        );
        if let Some(retryable) = self
            .channels
            .get_mut(server)
            .and_then(|c| c.retryable.as_mut())
        {
            retryable.retry_timer = Some(timer);
        }
        if was_connected {
            self.emit(ClientEvent::Connected {
                server: server.server_uri.clone(),
                connected: false,
            });
        }
        self.emit(ClientEvent::AdsCallFinished {
            server: server.server_uri.clone(),
            status: status.clone(),
            seen_response,
        });
        self.emit(ClientEvent::RetryScheduled {
            server: server.server_uri.clone(),
            delay,
        });
        // A57: a stream that ends before any response is a connectivity
        // error; after a response it is normal operation (e.g. max age).
        let defects = self.shared.profile.defects;
        if (!seen_response || defects.error_after_good_stream) && !defects.silent_stream_failures {
            let message = format!(
                "xDS call failed with no responses received; status: {}: {}",
                code_name(status.code),
                status.message
            );
            self.set_channel_status(server, XdsError::new(Code::Unavailable, message));
        }
    }

    fn cancel_call_timers(&mut self, call: &AdsStream) {
        for timer in call.timers() {
            self.timers.remove(&timer);
        }
    }

    /// The channel failed: report it to the watchers of every authority
    /// using it, unless that authority can fall back to another server.
    fn set_channel_status(&mut self, server: &XdsServerConfig, error: XdsError) {
        let error = XdsError::new(
            error.code,
            format!(
                "xDS channel for server {}: {}",
                server.server_uri, error.message
            ),
        );
        let Some(channel) = self.channels.get_mut(server) else {
            return;
        };
        if channel.status.is_none() {
            channel.failures += 1;
        }
        channel.status = Some(error.clone());
        let failures = channel.failures;
        self.emit(ClientEvent::ServerStatus {
            server: server.server_uri.clone(),
            error: Some(error.clone()),
            failures,
        });
        let mut cached = BTreeSet::new();
        let mut uncached = BTreeSet::new();
        let authority_names: Vec<Option<String>> = self.authorities.keys().cloned().collect();
        for authority_name in authority_names {
            let uses_it = self.authorities[&authority_name].channels.last() == Some(server);
            let fell_back = uses_it && self.maybe_fallback(&authority_name);
            let tell_anyway = self.shared.profile.defects.errors_from_every_server
                && self.authorities[&authority_name].channels.contains(server);
            if (fell_back || !uses_it) && !tell_anyway {
                continue;
            }
            for state in self.authorities[&authority_name]
                .resources
                .values()
                .flat_map(|m| m.values())
            {
                let target = if state.is_cached() {
                    &mut cached
                } else {
                    &mut uncached
                };
                target.extend(state.watchers.iter().copied());
            }
        }
        if !cached.is_empty() {
            self.notify(&cached, WatcherEvent::AmbientError(error.clone()));
        }
        if !uncached.is_empty() {
            self.notify(&uncached, WatcherEvent::ResourceError(error));
        }
    }

    /// gRFC A71: with an uncached resource wanted, try the next servers of
    /// the authority. True if a healthy one was added.
    fn maybe_fallback(&mut self, authority_name: &Option<String>) -> bool {
        if !self.authorities[authority_name].has_uncached()
            && !self.shared.profile.defects.fallback_while_cached
        {
            return false;
        }
        let servers = self.servers_for(authority_name);
        let start = self.authorities[authority_name].channels.len();
        for server in servers.iter().skip(start) {
            self.get_or_create_channel(server);
            self.authority_mut(authority_name)
                .channels
                .push(server.clone());
            self.emit(ClientEvent::FallbackStarted {
                authority: authority_name.clone().unwrap_or_default(),
                server: server.server_uri.clone(),
            });
            let only_uncached = self
                .shared
                .profile
                .defects
                .fallback_subscribes_only_uncached;
            let subscriptions: Vec<(ResourceType, ResourceName)> = self.authorities[authority_name]
                .resources
                .iter()
                .flat_map(|(t, m)| {
                    m.iter()
                        .filter(move |(_, state)| !only_uncached || !state.is_cached())
                        .map(|(k, _)| {
                            (
                                *t,
                                ResourceName {
                                    authority: authority_name.clone(),
                                    key: k.clone(),
                                },
                            )
                        })
                })
                .collect();
            for (resource_type, name) in subscriptions {
                self.channel_subscribe(server, resource_type, &name);
            }
            if !self.channel_failing(server) {
                return true;
            }
        }
        false
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
                        self.notify(&watchers, event);
                    }
                }
            }
        }
    }

    fn on_does_not_exist_timer(
        &mut self,
        server: &XdsServerConfig,
        call_id: u64,
        resource_type: ResourceType,
        name: &ResourceName,
        id: TimerId,
    ) {
        let Some(call) = self.call_mut(server).filter(|c| c.id == call_id) else {
            return;
        };
        if !call.timer_fired(resource_type, name, id) {
            return;
        }
        let data_errors = self.shared.profile.data_errors;
        let transient_from = server
            .resource_timer_is_transient_error()
            .then_some(server.server_uri.as_str());
        let Some(state) = self.resource_mut(name, resource_type) else {
            return;
        };
        let Some(event) = state.timer_fired(data_errors, transient_from) else {
            return;
        };
        let watchers = state.watchers.clone();
        let message = format!(
            "xds server {}: timeout obtaining resource {{type={} name={}}} from xds server",
            server.server_uri,
            resource_type.message_name(),
            name.full_name(resource_type)
        );
        self.log(LogLevel::Info, message);
        self.notify(&watchers, event);
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
                    let entry = r.csds(
                        resource_type.type_url(),
                        name.full_name(*resource_type),
                        self.shared.profile.data_errors,
                        |t| self.timestamp(t),
                    );
                    configs.push(entry);
                }
            }
        }
        ClientConfig {
            node: Some(self.shared.node.clone()),
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
