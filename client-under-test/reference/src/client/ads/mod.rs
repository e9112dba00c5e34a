//! One ADS stream to one server, as the worker sees it: the subscriptions
//! it carries and their does-not-exist timers, the nonce and pending NACK
//! of each type, and the discipline of one request on its way at a time.
//! What a request and a response look like is each protocol's business
//! (`sotw`, `delta`); they turn responses into a [`ParsedResponse`] of
//! resource updates and deletions, which the worker applies to the cache.

pub(crate) mod call;
pub(crate) mod channel;
pub(crate) mod delta;
#[cfg(test)]
pub(crate) mod fake;
pub(crate) mod sotw;
pub(crate) mod wire;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::google::rpc::Status as RpcStatus;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tonic::Code;

use xds_vocabulary::AdsProtocol;

use crate::name::ResourceName;
use crate::profile::Defects;
use crate::resource::{DecodedEntry, ResourceType, XdsResource};
use wire::Request;

/// The wildcard subscription's name.
pub(crate) const WILDCARD: &str = "*";

/// A timer of the worker's: when it is due, and a tie-breaking sequence.
pub(crate) type TimerId = (Instant, u64);

/// What a channel remembers across its streams, by protocol.
pub(crate) enum Memory {
    Sotw(sotw::SotwMemory),
    Delta(delta::DeltaMemory),
}

impl Memory {
    pub fn new(protocol: AdsProtocol) -> Self {
        match protocol {
            AdsProtocol::Sotw => Memory::Sotw(Default::default()),
            AdsProtocol::Delta => Memory::Delta(Default::default()),
        }
    }
}

/// One ADS stream attempt (an "ADS call" in C-core's words).
pub(crate) struct AdsStream {
    pub id: u64,
    queue: mpsc::UnboundedSender<Request>,
    task: JoinHandle<()>,
    sent_initial: bool,
    /// A response arrived on it (A57: its end is then no connectivity
    /// error, and the backoff resets).
    pub seen_response: bool,
    /// The transport under it heard the server (A57's "connected").
    pub connected: bool,
    /// One request on its way at a time, as C-core: later ones for other
    /// types wait, and several changes to one type coalesce.
    send_pending: Option<ResourceType>,
    buffered: BTreeSet<ResourceType>,
    /// Types a request of which went out on this stream.
    requested: BTreeSet<ResourceType>,
    /// Types whose request was taken before the connection was ready.
    unconfirmed: BTreeSet<ResourceType>,
    types: BTreeMap<ResourceType, TypeState>,
    /// Delta: what the stream told the server per type so far.
    delta_sent: BTreeMap<ResourceType, delta::DeltaSent>,
    /// Until the transport hears the server (see `CONNECT_TIMEOUT`).
    pub connect_deadline: Option<TimerId>,
    pub started: Instant,
    /// Rules deliberately broken (tests only; none in a real profile).
    defects: Defects,
}

/// One type on one stream.
#[derive(Default)]
pub(crate) struct TypeState {
    pub nonce: String,
    /// The NACK to send with the next request of this type.
    pub nack: Option<String>,
    pub subscribed: BTreeMap<ResourceName, ResourceTimer>,
    /// Names whose subscription went into a request, not seen since, with
    /// no timer running: the ones a does-not-exist timer may start for
    /// once the request is on a connected stream. Kept apart so a request
    /// costs what it carries, not what the stream subscribes (delta).
    awaiting_timer: BTreeSet<ResourceName>,
}

impl TypeState {
    /// Every subscribed name goes into a request being built (SotW: each
    /// request restates the subscription); `each` sees them in order.
    pub fn mark_all_sent(&mut self, mut each: impl FnMut(&ResourceName)) {
        let TypeState {
            subscribed,
            awaiting_timer,
            ..
        } = self;
        for (name, timer) in subscribed.iter_mut() {
            each(name);
            timer.subscription_sent = true;
            if !timer.seen && timer.timer.is_none() {
                awaiting_timer.insert(name.clone());
            }
        }
    }

    /// `name`'s subscription went into a request being built.
    pub fn mark_sent(&mut self, name: &ResourceName) {
        if let Some(timer) = self.subscribed.get_mut(name) {
            timer.subscription_sent = true;
            if !timer.seen && timer.timer.is_none() {
                self.awaiting_timer.insert(name.clone());
            }
        }
    }
}

/// A subscribed name's does-not-exist timer on one stream.
#[derive(Default)]
pub(crate) struct ResourceTimer {
    /// Included in a request that was built (C-core "send started").
    pub subscription_sent: bool,
    /// Seen in a response, or declared missing: no timer needed any more.
    pub seen: bool,
    pub timer: Option<TimerId>,
}

impl Drop for AdsStream {
    fn drop(&mut self) {
        // Dropping the stream cancels it (RST_STREAM CANCEL).
        self.task.abort();
    }
}

/// The `error_detail` of a NACK. C-core hard-codes INVALID_ARGUMENT.
pub(crate) fn nack_status(message: String) -> RpcStatus {
    RpcStatus {
        code: Code::InvalidArgument as i32,
        message,
        details: Vec::new(),
    }
}

impl AdsStream {
    pub fn new(
        id: u64,
        queue: mpsc::UnboundedSender<Request>,
        task: JoinHandle<()>,
        started: Instant,
        defects: Defects,
    ) -> Self {
        AdsStream {
            id,
            queue,
            task,
            // The first stream is call 1 (Channels::start_call counts
            // from 1): a later one that counts its first request as sent
            // leaves the node out.
            sent_initial: defects.node_on_first_stream_only && id > 1,
            seen_response: false,
            connected: false,
            send_pending: None,
            buffered: BTreeSet::new(),
            requested: BTreeSet::new(),
            unconfirmed: BTreeSet::new(),
            types: BTreeMap::new(),
            delta_sent: BTreeMap::new(),
            connect_deadline: None,
            started,
            defects,
        }
    }

    /// Adds `name` to the stream's subscriptions; true if it was not there.
    pub fn subscribe(&mut self, resource_type: ResourceType, name: &ResourceName) -> bool {
        let type_state = self.types.entry(resource_type).or_default();
        if type_state.subscribed.contains_key(name) {
            return false;
        }
        self.delta_sent
            .entry(resource_type)
            .or_default()
            .changed(name);
        // A wildcard subscription has no resource of its own to time out.
        let timer = ResourceTimer {
            seen: name.key == WILDCARD,
            ..ResourceTimer::default()
        };
        type_state.subscribed.insert(name.clone(), timer);
        true
    }

    /// Removes `name`; returns its running timer, if any. The type's entry
    /// stays: its nonce is still needed on this stream.
    pub fn unsubscribe(
        &mut self,
        resource_type: ResourceType,
        name: &ResourceName,
    ) -> Option<TimerId> {
        let type_state = self.types.get_mut(&resource_type)?;
        type_state.awaiting_timer.remove(name);
        let removed = type_state.subscribed.remove(name)?;
        self.delta_sent
            .entry(resource_type)
            .or_default()
            .changed(name);
        removed.timer
    }

    /// Delta: names `name`, still subscribed, in the next request's
    /// `resource_names_subscribe` again, which asks the server to send it
    /// again (the client holds no copy of its own).
    pub fn subscribe_again(&mut self, resource_type: ResourceType, name: &ResourceName) {
        if self.is_subscribed(resource_type, name) {
            self.delta_sent
                .entry(resource_type)
                .or_default()
                .changed(name);
        }
    }

    pub fn is_subscribed(&self, resource_type: ResourceType, name: &ResourceName) -> bool {
        self.types
            .get(&resource_type)
            .is_some_and(|t| t.subscribed.contains_key(name))
    }

    /// Whether the stream subscribes any name of `resource_type`.
    pub fn subscribes(&self, resource_type: ResourceType) -> bool {
        self.types
            .get(&resource_type)
            .is_some_and(|t| !t.subscribed.is_empty())
    }

    pub fn has_subscriptions(&self) -> bool {
        self.types.values().any(|t| !t.subscribed.is_empty())
    }

    /// The types with state on this stream, in order.
    pub fn types(&self) -> Vec<ResourceType> {
        self.types.keys().copied().collect()
    }

    /// Builds and queues the request for `resource_type`, unless a request
    /// is on its way (then it waits its turn). `cached` says whether the
    /// cache holds a value of a name (a delta stream claims only versions
    /// of what it still holds). True if it built it: what it no longer
    /// names is now unsubscribed on the wire.
    pub fn send_request(
        &mut self,
        resource_type: ResourceType,
        memory: &Memory,
        cached: &dyn Fn(ResourceType, &ResourceName) -> bool,
        node: &Node,
    ) -> bool {
        if self.send_pending.is_some() {
            self.buffered.insert(resource_type);
            return false;
        }
        let node = if !self.sent_initial || self.defects.node_in_every_request {
            Some(node.clone())
        } else if self.defects.node_changes_on_later_requests {
            // `Defects::node_changes_on_later_requests`.
            Some(Node {
                id: format!("{}-changed", node.id),
                ..node.clone()
            })
        } else {
            None
        };
        let type_state = self.types.entry(resource_type).or_default();
        // A stream's first request of a type that names nothing (its names
        // went while it waited its turn) would subscribe to every resource
        // of the type: in both variants an empty first request is the
        // wildcard (api/xds_protocol.rst, "How the client specifies what
        // resources to return"). Nothing is subscribed on the wire, so
        // nothing is sent (and what it cached may go).
        if !self.requested.contains(&resource_type)
            && type_state.subscribed.is_empty()
            && type_state.nonce.is_empty()
            && type_state.nack.is_none()
            && !self.defects.empty_first_request_is_sent
        {
            return true;
        }
        self.requested.insert(resource_type);
        let request = match memory {
            Memory::Sotw(memory) => {
                Request::Sotw(sotw::request(resource_type, type_state, memory, node))
            }
            Memory::Delta(memory) => {
                let sent = self.delta_sent.entry(resource_type).or_default();
                let held = |name: &ResourceName| {
                    cached(resource_type, name)
                        .then(|| memory.version(resource_type, name))
                        .flatten()
                        .map(str::to_string)
                };
                let held_of_type = || {
                    memory
                        .held(resource_type)
                        .filter(|(name, _)| cached(resource_type, name))
                        .map(|(name, version)| (name.clone(), version.to_string()))
                        .collect()
                };
                Request::Delta(delta::request(
                    resource_type,
                    type_state,
                    sent,
                    held,
                    held_of_type,
                    node,
                    &self.defects,
                ))
            }
        };
        self.sent_initial = true;
        self.send_pending = Some(resource_type);
        // A closed queue means the call is ending; its Finished event follows.
        let _ = self.queue.send(request);
        true
    }

    /// The type whose request is on its way (queued for the transport, not
    /// yet taken by it on a connected stream), if any.
    pub fn request_on_its_way(&self) -> Option<ResourceType> {
        self.send_pending
    }

    /// The transport took the request of `resource_type`. True if its
    /// timers may start now (on a connected stream, A57); otherwise they
    /// wait for the connection.
    pub fn request_taken(&mut self, resource_type: ResourceType, regardless: bool) -> bool {
        // Sent means on a ready connection, as C-core's send completes only
        // once its call is on a connected transport: until then the next
        // request waits (and what it would unsubscribe stays cached).
        if self.send_pending == Some(resource_type) && self.connected {
            self.send_pending = None;
        }
        if self.connected {
            true
        } else {
            // Confirmed once connected either way: `regardless` (a defect)
            // only starts the timers early, the send still waits.
            self.unconfirmed.insert(resource_type);
            regardless
        }
    }

    /// Sends the next waiting request, if none is on its way: the types it
    /// is done with (built one for, or found nothing to send for: see
    /// `send_request`, after which the next one waiting goes instead).
    pub fn send_next(
        &mut self,
        memory: &Memory,
        cached: &dyn Fn(ResourceType, &ResourceName) -> bool,
        node: &Node,
    ) -> Vec<ResourceType> {
        let mut done = Vec::new();
        while self.send_pending.is_none()
            && let Some(next) = self.buffered.pop_first()
        {
            if self.send_request(next, memory, cached, node) {
                done.push(next);
            }
        }
        done
    }

    /// The connection is ready: the types whose requests went out before
    /// it was, whose timers may start now.
    pub fn on_connected(&mut self) -> BTreeSet<ResourceType> {
        self.connected = true;
        // The request taken while connecting is out now.
        if self
            .send_pending
            .is_some_and(|t| self.unconfirmed.contains(&t))
        {
            self.send_pending = None;
        }
        std::mem::take(&mut self.unconfirmed)
    }

    /// Names of `resource_type` whose timer should start now: sent, not yet
    /// seen, none running.
    pub fn timer_candidates(&mut self, resource_type: ResourceType) -> Option<Vec<ResourceName>> {
        let type_state = self.types.get_mut(&resource_type)?;
        Some(
            std::mem::take(&mut type_state.awaiting_timer)
                .into_iter()
                .collect(),
        )
    }

    pub fn set_timer(&mut self, resource_type: ResourceType, name: &ResourceName, timer: TimerId) {
        if let Some(type_state) = self.types.get_mut(&resource_type) {
            type_state.awaiting_timer.remove(name);
        }
        if let Some(t) = self.timer_mut(resource_type, name) {
            t.timer = Some(timer);
        }
    }

    /// Timer `id` fired: true if it is this stream's live timer of `name`,
    /// which then counts as seen (declared missing).
    pub fn timer_fired(
        &mut self,
        resource_type: ResourceType,
        name: &ResourceName,
        id: TimerId,
    ) -> bool {
        let Some(timer) = self.timer_mut(resource_type, name) else {
            return false;
        };
        if timer.timer != Some(id) {
            return false;
        }
        timer.timer = None;
        timer.seen = true;
        true
    }

    /// `name` was in a response: its timer is moot; returns it to cancel.
    pub fn seen(&mut self, resource_type: ResourceType, name: &ResourceName) -> Option<TimerId> {
        self.types
            .get_mut(&resource_type)?
            .awaiting_timer
            .remove(name);
        let timer = self.timer_mut(resource_type, name)?;
        timer.seen = true;
        timer.timer.take()
    }

    fn timer_mut(
        &mut self,
        resource_type: ResourceType,
        name: &ResourceName,
    ) -> Option<&mut ResourceTimer> {
        self.types.get_mut(&resource_type)?.subscribed.get_mut(name)
    }

    /// Delta: the versions this stream's first request of the type claimed
    /// that `parsed` (its first response) confirms; see
    /// [`delta::DeltaSent::confirmed_by`].
    pub fn confirmed_claims(
        &mut self,
        resource_type: ResourceType,
        parsed: &ParsedResponse,
    ) -> Vec<(ResourceName, String)> {
        self.delta_sent
            .get_mut(&resource_type)
            .map(|sent| sent.confirmed_by(parsed))
            .unwrap_or_default()
    }

    /// Every timer this stream runs, to cancel with it.
    pub fn timers(&self) -> impl Iterator<Item = TimerId> + '_ {
        self.connect_deadline.into_iter().chain(
            self.types
                .values()
                .flat_map(|t| t.subscribed.values().filter_map(|t| t.timer)),
        )
    }

    /// Whether a response of `resource_type` was handled on this stream.
    pub fn answered(&self, resource_type: ResourceType) -> bool {
        self.types
            .get(&resource_type)
            .is_some_and(|state| !state.nonce.is_empty())
    }

    /// A response of `resource_type` was handled: the next request carries
    /// its nonce, and `nack` if it was rejected.
    pub fn responded(&mut self, resource_type: ResourceType, nonce: String, nack: Option<String>) {
        self.seen_response = true;
        let type_state = self.types.entry(resource_type).or_default();
        type_state.nonce = nonce;
        type_state.nack = nack;
    }
}

/// Whether a response's `resource_errors` (xRFC TP3) are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResourceErrors {
    /// Before gRFC A88 (C-core without its data-error handling): ignored.
    Ignored,
    /// gRFC A88: each error goes to its resource; a malformed one (no
    /// name, an OK status, a name that does not parse) is NACKed.
    Read,
    /// `ServerErrorRule::MalformedAccepted`: malformed ones are skipped
    /// silently instead of NACKed.
    ReadAcceptingMalformed,
}

/// A response as the cache needs it, whatever the protocol.
#[derive(Debug)]
pub(crate) struct ParsedResponse {
    pub resource_type: ResourceType,
    pub nonce: String,
    /// SotW: the response's `version_info`; delta: its
    /// `system_version_info` (each entry has its own version).
    pub version: String,
    /// The named entries, in response order (invalid ones too).
    pub entries: Vec<ResourceEntry>,
    /// What goes into the NACK, in response order; none: an ACK.
    pub errors: Vec<String>,
    pub deletions: Deletions,
    /// What the server reported per resource (xRFC TP3), after the
    /// entries, in response order.
    pub server_errors: Vec<ServerError>,
    /// Every name met so far, unusable entries' included.
    names_in_response: HashSet<String>,
}

/// One named resource of a response.
#[derive(Debug)]
pub(crate) struct ResourceEntry {
    pub name: ResourceName,
    /// The name as the server wrote it.
    pub full_name: String,
    pub version: String,
    /// The validated resource and its bytes, or why it is invalid.
    pub resource: Result<(Arc<XdsResource>, Vec<u8>), String>,
}

/// An error the server reported for one resource (xRFC TP3's
/// `ResourceError`): a data error (NOT_FOUND, PERMISSION_DENIED) or a
/// transient one (any other code), gRFC A88.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerError {
    pub name: ResourceName,
    /// The name as the server wrote it.
    pub full_name: String,
    pub code: Code,
    pub message: String,
}

/// Which cached resources a response deletes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Deletions {
    None,
    /// SotW LDS/CDS: every cached resource of the type it leaves out.
    AllOthers,
    /// Delta: these, of any type (`removed_resources`).
    Named(Vec<ResourceName>),
}

impl ParsedResponse {
    fn new(resource_type: ResourceType, nonce: String, version: String) -> Self {
        ParsedResponse {
            resource_type,
            nonce,
            version,
            entries: Vec::new(),
            errors: Vec::new(),
            deletions: Deletions::None,
            server_errors: Vec::new(),
            names_in_response: HashSet::new(),
        }
    }

    /// Reads the response's `resource_errors` as C-core does (its
    /// `HandleServerReportedResourceError`): each needs a name that parses
    /// and a non-OK status, or it is an error of the NACK.
    fn add_resource_errors(
        &mut self,
        resource_errors: &[envoy_types::pb::envoy::service::discovery::v3::ResourceError],
        reading: ResourceErrors,
    ) {
        if reading == ResourceErrors::Ignored {
            return;
        }
        let mut malformed = Vec::new();
        for (index, error) in resource_errors.iter().enumerate() {
            let name = error.resource_name.as_ref().map_or("", |n| n.name.as_str());
            let prefix = if name.is_empty() {
                format!("resource_errors index {index}: ")
            } else {
                format!("resource_errors index {index}: {name}: ")
            };
            if name.is_empty() {
                malformed.push(format!("{prefix}resource_name unset"));
                continue;
            }
            let Some(status) = error.error_detail.as_ref().filter(|s| s.code != 0) else {
                malformed.push(format!("{prefix}error_detail must be non-OK"));
                continue;
            };
            let Ok(parsed) = ResourceName::parse(name, self.resource_type) else {
                malformed.push(format!("{prefix}Cannot parse xDS resource name"));
                continue;
            };
            self.server_errors.push(ServerError {
                name: parsed,
                full_name: name.to_string(),
                code: Code::from_i32(status.code),
                message: status.message.clone(),
            });
        }
        if reading == ResourceErrors::Read {
            self.errors.extend(malformed);
        }
    }

    /// Adds the `index`-th entry of the response. Envoy rejects a response
    /// naming one resource twice; so do we.
    fn add(&mut self, index: usize, decoded: DecodedEntry, version: String) {
        let Some(name) = decoded.name else {
            if let Err(e) = &decoded.result {
                self.errors.push(format!("resource index {index}: {e}"));
            }
            return;
        };
        let prefix = format!("resource index {index}: {name}: ");
        if !self.names_in_response.insert(name.clone()) {
            self.errors
                .push(format!("{prefix}duplicate resource name in response"));
            return;
        }
        let resource = match decoded.result {
            Ok(value) => Ok((value, decoded.serialized)),
            Err(e) => {
                let details = e.to_string();
                self.errors
                    .push(format!("{prefix}INVALID_ARGUMENT: {details}"));
                Err(details)
            }
        };
        let Ok(parsed) = ResourceName::parse(&name, self.resource_type) else {
            self.errors
                .push(format!("{prefix}Cannot parse xDS resource name"));
            return;
        };
        self.entries.push(ResourceEntry {
            name: parsed,
            full_name: name,
            version,
            resource,
        });
    }

    /// The names of its entries and of the resources it reports errors
    /// for: the ones it does not delete (C-core's `resources_seen`).
    pub fn names(&self) -> HashSet<ResourceName> {
        self.entries
            .iter()
            .map(|e| e.name.clone())
            .chain(self.server_errors.iter().map(|e| e.name.clone()))
            .collect()
    }
}
