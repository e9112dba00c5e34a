//! xDS channels and their ADS streams: creating and releasing channels,
//! subscriptions, requests (one on its way at a time), the connected flag
//! and the does-not-exist timers that depend on it, the connect timeout,
//! and retrying with backoff when a stream ends (gRFC A57).

use super::*;

impl Worker {
    pub(super) fn channel_failing(&self, server: &XdsServerConfig) -> bool {
        self.channels
            .get(server)
            .is_some_and(|c| c.status.is_some())
    }

    pub(super) fn get_or_create_channel(&mut self, server: &XdsServerConfig) {
        if !self.channels.contains_key(server) {
            let memory = match self.parked.remove(server) {
                Some(memory) => Memory::Delta(memory),
                None => Memory::new(server.protocol),
            };
            self.channels.insert(
                server.clone(),
                XdsChannel {
                    transport: self.shared.channels.open(server),
                    status: None,
                    failures: 0,
                    memory,
                    retryable: None,
                },
            );
        }
    }

    /// Drops channels no authority uses any more (closing their streams).
    pub(super) fn release_unused_channels(&mut self) {
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
            let Some(mut channel) = self.channels.remove(&server) else {
                continue;
            };
            if let Some(retryable) = channel.retryable.take() {
                self.drop_retryable(retryable);
            }
            if self.shared.profile.defects.fallback_connection_kept {
                self.kept_transports.push(channel.transport);
            }
            // SotW's memory (a version per type) is C-core's, which goes
            // with the channel; delta's names what the client still holds.
            if let Memory::Delta(memory) = channel.memory
                && !self
                    .shared
                    .profile
                    .defects
                    .delta_memory_dies_with_its_channel
            {
                self.parked.insert(server, memory);
            }
        }
    }

    pub(super) fn drop_retryable(&mut self, mut retryable: RetryableCall) {
        if let Some(timer) = retryable.retry_timer.take() {
            self.timers.remove(&timer);
        }
        if let Some(call) = retryable.call.take() {
            self.cancel_call_timers(&call);
        }
    }

    pub(super) fn channel_subscribe(
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
                let mut backoff = self.shared.profile.backoff;
                if self.shared.profile.defects.backoff_constant {
                    backoff.multiplier = 1.0;
                }
                if self.shared.profile.defects.backoff_uncapped {
                    backoff.max = Duration::MAX;
                }
                channel.retryable = Some(RetryableCall {
                    backoff: Backoff::new(backoff),
                    connect_backoff: Backoff::new(self.shared.profile.backoff),
                    waiting_for_ready: false,
                    call: None,
                    retry_timer: None,
                    calls_started: 0,
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

    pub(super) fn channel_unsubscribe(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        name: &ResourceName,
    ) {
        // A delta client no longer claims what it stopped watching.
        if let Some(XdsChannel {
            memory: Memory::Delta(memory),
            ..
        }) = self.channels.get_mut(server)
        {
            memory.forget(resource_type, name);
        }
        for memory in self.parked.values_mut() {
            memory.forget(resource_type, name);
        }
        let Some(call) = self.call_mut(server) else {
            // No stream (in backoff, or none yet): nothing will carry the
            // unsubscription, so the entry goes now.
            return self.forget_unwatched(server, resource_type);
        };
        if !call.is_subscribed(resource_type, name) {
            return;
        }
        let timer = call.unsubscribe(resource_type, name);
        let still_subscribed = call.has_subscriptions();
        if let Some(timer) = timer {
            self.timers.remove(&timer);
        }
        if still_subscribed {
            self.send_request(server, resource_type);
        } else {
            if let Some(channel) = self.channels.get_mut(server)
                && let Some(retryable) = channel.retryable.take()
            {
                // The last subscription on this server went: close the stream.
                self.drop_retryable(retryable);
            }
            self.forget_unwatched(server, resource_type);
        }
    }

    pub(super) fn call_mut(&mut self, server: &XdsServerConfig) -> Option<&mut AdsStream> {
        self.channels
            .get_mut(server)?
            .retryable
            .as_mut()?
            .call
            .as_mut()
    }

    pub(super) fn start_call(&mut self, server: &XdsServerConfig) {
        self.next_call_id += 1;
        let id = self.next_call_id;
        let Some(channel) = self.channels.get_mut(server) else {
            return;
        };
        let later_call = channel
            .retryable
            .as_ref()
            .is_some_and(|r| r.calls_started > 0);
        let resubscribe = !(later_call && self.shared.profile.defects.new_streams_resubscribe_late);
        let (queue_tx, queue_rx) = mpsc::unbounded_channel();
        let call_id = CallId {
            server: server.clone(),
            id,
        };
        let task = channel
            .transport
            .start_call(call_id, queue_rx, self.call_events.clone());
        let mut call = AdsStream::new(id, queue_tx, task, self.now(), self.shared.profile.defects);
        // Subscribe to everything the authorities using this channel watch.
        let only_uncached = self
            .shared
            .profile
            .defects
            .fallback_subscribes_only_uncached;
        for (authority_name, authority) in &self.authorities {
            if !authority.channels.contains(server) || !resubscribe {
                continue;
            }
            let is_fallback = authority.channels.first() != Some(server);
            let wanted =
                |state: &ResourceState| !(only_uncached && is_fallback && state.is_cached());
            for (resource_type, name) in authority.subscriptions(authority_name, wanted) {
                call.subscribe(resource_type, &name);
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
        retryable.calls_started += 1;
        let announced = !retryable.waiting_for_ready;
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
        if announced {
            self.emit(ClientEvent::AdsCallStarted {
                server: server.server_uri.clone(),
                service: CallService::Ads,
            });
        }
        for resource_type in types {
            self.send_request(server, resource_type);
        }
    }

    /// Builds and queues the request for `resource_type` on the server's
    /// current stream, in the stream's protocol.
    pub(super) fn send_request(&mut self, server: &XdsServerConfig, resource_type: ResourceType) {
        let built = self.with_stream(server, |call, memory, cached, node| {
            call.send_request(resource_type, memory, cached, node)
        });
        if built == Some(true) {
            self.forget_unwatched(server, resource_type);
        }
    }

    /// Sends the stream's next waiting request, if it may.
    pub(super) fn send_next(&mut self, server: &XdsServerConfig) {
        let built = self.with_stream(server, |call, memory, cached, node| {
            call.send_next(memory, cached, node)
        });
        // Defects::timer_on_channel_ready: a request queued on a READY
        // channel counts as sent, without waiting for its stream to take
        // it (the transport takes a request only once its stream is open).
        let ready = self.shared.profile.defects.timer_on_channel_ready
            && self.call_mut(server).is_some_and(|call| call.connected);
        for resource_type in built.unwrap_or_default() {
            if ready {
                self.mark_send_complete(server, resource_type);
            }
            self.forget_unwatched(server, resource_type);
        }
    }

    /// The cache entries of `resource_type` no watch wants any more, of the
    /// authorities `server` serves now (their last channel), go: the
    /// request that unsubscribes them is out, or there is no stream to
    /// send one on. Until then a new watch finds the entry and its value
    /// (C-core's MaybeRemoveUnsubscribedCacheEntriesForTypeLocked).
    pub(super) fn forget_unwatched(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
    ) {
        let mut unused = Vec::new();
        for (name, authority) in self.authorities.iter_mut() {
            if authority.channels.last() != Some(server) {
                continue;
            }
            if let Some(by_type) = authority.resources.get_mut(&resource_type) {
                by_type.retain(|_, state| !state.watchers.is_empty());
                if by_type.is_empty() {
                    authority.resources.remove(&resource_type);
                }
            }
            if authority.is_unused() {
                unused.push(name.clone());
            }
        }
        if !unused.is_empty() {
            for name in &unused {
                self.authorities.remove(name);
            }
            self.release_unused_channels();
        }
    }

    /// Runs `f` on the server's current stream, with what building a
    /// request takes: the channel's memory, whether the cache holds a
    /// name, the node.
    fn with_stream<T>(
        &mut self,
        server: &XdsServerConfig,
        f: impl FnOnce(
            &mut AdsStream,
            &Memory,
            &dyn Fn(ResourceType, &ResourceName) -> bool,
            &Node,
        ) -> T,
    ) -> Option<T> {
        let node = &self.shared.node;
        let authorities = &self.authorities;
        let cached = |t: ResourceType, name: &ResourceName| cached_in(authorities, t, name);
        let Some(XdsChannel {
            memory,
            retryable: Some(RetryableCall {
                call: Some(call), ..
            }),
            ..
        }) = self.channels.get_mut(server)
        else {
            return None;
        };
        Some(f(call, memory, &cached, node))
    }

    pub(super) fn on_request_taken(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
    ) {
        let timer_while_connecting = self.shared.profile.defects.timer_while_connecting;
        let Some(call) = self.call_mut(server) else {
            return;
        };
        if call.request_taken(resource_type, timer_while_connecting) {
            self.mark_send_complete(server, resource_type);
        }
        self.send_next(server);
    }

    pub(super) fn on_connected(&mut self, server: &XdsServerConfig) {
        let Some(call) = self.call_mut(server) else {
            return;
        };
        let unconfirmed = call.on_connected();
        let deadline = call.connect_deadline.take();
        if let Some(timer) = deadline {
            self.timers.remove(&timer);
        }
        if let Some(retryable) = self
            .channels
            .get_mut(server)
            .and_then(|c| c.retryable.as_mut())
        {
            retryable.connect_backoff.reset();
        }
        self.emit(ClientEvent::Connected {
            server: server.server_uri.clone(),
            connected: true,
        });
        for resource_type in unconfirmed {
            self.mark_send_complete(server, resource_type);
        }
        // Defects::timer_on_channel_ready: the request queued while the
        // channel connected counts as sent once it is READY.
        if self.shared.profile.defects.timer_on_channel_ready
            && let Some(queued) = self
                .call_mut(server)
                .and_then(|call| call.request_on_its_way())
        {
            self.mark_send_complete(server, queued);
        }
        // Requests that waited for the connection go now.
        self.send_next(server);
    }

    /// The subscription request of `resource_type` is on a connected stream:
    /// start the does-not-exist timers that should run (A57).
    pub(super) fn mark_send_complete(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
    ) {
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
            if cached && !self.shared.profile.defects.timers_for_cached {
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

    /// The does-not-exist timer: 15 s (A57), or 30 s under A88 for a
    /// server with `resource_timer_is_transient_error`.
    pub(super) fn resource_timeout(&self, server: &XdsServerConfig) -> Duration {
        if self.a88() && server.resource_timer_is_transient_error()
            || self.shared.profile.defects.does_not_exist_timer_30s
        {
            Duration::from_secs(30)
        } else if self.shared.profile.defects.does_not_exist_timer_14s {
            Duration::from_secs(14)
        } else {
            self.shared.profile.resource_request_timeout
        }
    }

    /// The call's transport never heard the server (a blackhole, or a
    /// handshake that stalls): fail the call as C-core's connector does,
    /// and start the next attempt on a new connection.
    pub(super) fn on_connect_deadline(&mut self, server: &XdsServerConfig, call_id: u64) {
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

    pub(super) fn on_call_finished(&mut self, server: &XdsServerConfig, status: tonic::Status) {
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
        // A wait_for_ready call outlives a connection that never became
        // ready: only the channel failed.
        let profile = &self.shared.profile;
        let waits = profile.ads_wait_for_ready
            && !profile.defects.wait_for_ready_ignored
            && !was_connected
            && !seen_response;
        retryable.waiting_for_ready = waits;
        if waits {
            let delay = retryable.connect_backoff.next_delay(&mut self.rng);
            let at = (call.started + delay).max(self.now());
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
            // What the channel's TRANSIENT_FAILURE says (C-core's
            // OnConnectivityFailure), not a failed call.
            let message = format!("{}: {}", code_name(status.code), status.message);
            self.set_channel_status(server, XdsError::new(Code::Unavailable, message));
            return;
        }
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
            service: CallService::Ads,
            status: status.clone(),
            seen_response,
        });
        self.emit(ClientEvent::RetryScheduled {
            server: server.server_uri.clone(),
            service: CallService::Ads,
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

    pub(super) fn cancel_call_timers(&mut self, call: &AdsStream) {
        for timer in call.timers() {
            self.timers.remove(&timer);
        }
    }

    pub(super) fn on_does_not_exist_timer(
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
        let timers_for_cached = self.shared.profile.defects.timers_for_cached;
        let now = self.now();
        let Some(state) = self.resource_mut(name, resource_type) else {
            return;
        };
        let event = match state.timer_fired(data_errors, transient_from) {
            Some(event) => event,
            // The defect: the timer of a cached resource drops it.
            None if timers_for_cached && state.is_cached() => state.delete("", now),
            None => return,
        };
        let watchers = state.watchers.clone();
        let message = format!(
            "xds server {}: timeout obtaining resource {{type={} name={}}} from xds server",
            server.server_uri,
            resource_type.message_name(),
            name.full_name(resource_type)
        );
        self.log(LogLevel::Info, message);
        self.notify_about(&name.full_name(resource_type), &watchers, event);
    }
}

/// Whether the cache holds a value of `name` (a delta stream claims in
/// `initial_resource_versions` only what it still holds).
fn cached_in(
    authorities: &BTreeMap<Option<String>, AuthorityState>,
    resource_type: ResourceType,
    name: &ResourceName,
) -> bool {
    authorities
        .get(&name.authority)
        .and_then(|a| a.resources.get(&resource_type))
        .and_then(|r| r.get(&name.key))
        .is_some_and(ResourceState::is_cached)
}
