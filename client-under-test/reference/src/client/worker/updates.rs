//! Responses applied to the cache: each resource's update in order (a
//! valid one accepted, an invalid one rejected, gRFC A46), then deletions
//! (SotW: cached LDS/CDS resources a response leaves out; delta: the
//! resources it names, of any type), under the data-error policy of the
//! client and server (gRFC A53, A88).

use super::*;

impl Worker {
    /// gRFC A88 semantics (the client profile), rather than A53's.
    pub(super) fn a88(&self) -> bool {
        self.shared.profile.data_errors == DataErrorHandling::A88
    }

    pub(super) fn resource(
        &self,
        name: &ResourceName,
        resource_type: ResourceType,
    ) -> Option<&ResourceState> {
        self.authorities
            .get(&name.authority)?
            .resources
            .get(&resource_type)?
            .get(&name.key)
    }

    pub(super) fn resource_mut(
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

    /// The cache entry of `name`, if its authority uses `server` now.
    fn served_entry_mut(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        name: &ResourceName,
    ) -> Option<&mut ResourceState> {
        let authority = self.authorities.get_mut(&name.authority)?;
        if authority.channels.last() != Some(server) {
            return None;
        }
        authority
            .resources
            .get_mut(&resource_type)?
            .get_mut(&name.key)
    }

    pub(super) fn on_response(&mut self, server: &XdsServerConfig, response: Response) {
        let Some(resource_type) = ResourceType::from_type_url(response.type_url()) else {
            // C-core ignores a response of an unknown type: no ACK, no NACK.
            let message = format!(
                "xds server {}: error parsing ADS response (unknown resource type {}) -- ignoring",
                server.server_uri,
                response.type_url()
            );
            return self.log(LogLevel::Error, message);
        };
        // Defects::unwatched_type_unanswered: the type went with its last
        // watch, and its response with it (grpc-java 1.85.1).
        if self.shared.profile.defects.unwatched_type_unanswered
            && self
                .call_mut(server)
                .is_some_and(|call| !call.subscribes(resource_type))
        {
            let message = format!(
                "xds server {}: ignoring a response of an unwatched type {}",
                server.server_uri,
                response.type_url()
            );
            return self.log(LogLevel::Warning, message);
        }
        let reading = self.resource_errors_reading();
        let mut parsed = match response {
            Response::Sotw(response) => {
                let mut parsed = sotw::parse(&self.shared.decode, resource_type, response, reading);
                if self.shared.profile.defects.sotw_absence_deletes_every_type {
                    parsed.deletions = Deletions::AllOthers;
                }
                parsed
            }
            Response::Delta(response) => {
                delta::parse(&self.shared.decode, resource_type, response, reading)
            }
        };
        let broken = self.shared.profile.defects.broken_server_errors;
        // Seen on this stream: their does-not-exist timers are moot. So
        // are those of resources the server reported errors for.
        let errors_answer = broken != Some(ServerErrorRule::StopsTheTimer);
        if let Some(call) = self.call_mut(server) {
            let reported = parsed
                .server_errors
                .iter()
                .filter(|_| errors_answer)
                .map(|error| &error.name);
            let moot: Vec<TimerId> = parsed
                .entries
                .iter()
                .map(|entry| &entry.name)
                .chain(reported)
                .filter_map(|name| call.seen(resource_type, name))
                .collect();
            for timer in moot {
                self.timers.remove(&timer);
            }
        }
        // Delta: the first response after a reconnect confirms the versions
        // claimed that it does not change; a confirmed resource counts as
        // received again (as SotW would resend it), in name order with the
        // rest, so a delta client tells its watchers what a SotW one does.
        let mut confirmed = match self.call_mut(server) {
            Some(call) => call.confirmed_claims(resource_type, &parsed),
            None => Vec::new(),
        };
        // A claim written before another server's copy replaced this
        // server's (the claim travelled while the fallback's response
        // came): the server confirms a copy the client no longer holds.
        // It is not applied (the client would take the fallback's copy
        // for this server's); the name is subscribed again, and the
        // server sends its copy (seed 20261130, delta schedule 3489).
        if !self.shared.profile.defects.delta_confirms_replaced_claims {
            let replaced_since = |name: &ResourceName| match self.channels.get(server) {
                Some(XdsChannel {
                    memory: Memory::Delta(memory),
                    ..
                }) => memory.replaced(resource_type, name),
                _ => false,
            };
            let (replaced, held): (Vec<_>, Vec<_>) = confirmed
                .into_iter()
                .partition(|(name, _)| replaced_since(name));
            confirmed = held;
            if let Some(call) = self.call_mut(server) {
                for (name, _) in &replaced {
                    call.subscribe_again(resource_type, name);
                }
            }
        }
        if !confirmed.is_empty() {
            for (name, version) in confirmed {
                if let Some((value, serialized)) = self
                    .resource(&name, resource_type)
                    .and_then(ResourceState::cached)
                {
                    parsed.entries.push(ResourceEntry {
                        full_name: name.full_name(resource_type),
                        name,
                        version,
                        resource: Ok((value, serialized)),
                    });
                }
            }
            parsed.entries.sort_by(|a, b| a.full_name.cmp(&b.full_name));
        }
        // Delta: what the client now holds from this server.
        if let Some(XdsChannel {
            memory: Memory::Delta(memory),
            ..
        }) = self.channels.get_mut(server)
        {
            memory.update(&parsed, &self.shared.profile.defects);
        }
        // ...and no longer from any other.
        if !self.shared.profile.defects.delta_claims_replaced_copies {
            for (other, channel) in &mut self.channels {
                if other != server
                    && let Memory::Delta(memory) = &mut channel.memory
                {
                    memory.replaced_elsewhere(&parsed);
                }
            }
            for memory in self.parked.values_mut() {
                memory.replaced_elsewhere(&parsed);
            }
        }
        // Defects::nack_drops_valid_resources: the whole response rejected,
        // as gRPC did before A46 (so it deletes nothing either).
        if self.shared.profile.defects.nack_drops_valid_resources && !parsed.errors.is_empty() {
            parsed.entries.retain(|entry| entry.resource.is_err());
            parsed.deletions = Deletions::None;
        }
        let deletions = std::mem::replace(&mut parsed.deletions, Deletions::None);
        let server_errors = std::mem::take(&mut parsed.server_errors);
        let mut seen = (deletions == Deletions::AllOthers).then(|| parsed.names());
        if let Some(seen) = &mut seen
            && broken != Some(ServerErrorRule::NotADeletion)
        {
            seen.extend(server_errors.iter().map(|error| error.name.clone()));
        }
        let nonce = parsed.nonce.clone();
        let version = parsed.version.clone();
        let named = if self.shared.profile.defects.nack_names_first_only {
            1
        } else {
            usize::MAX
        };
        let nack = (!parsed.errors.is_empty()).then(|| {
            let errors: Vec<&str> = parsed
                .errors
                .iter()
                .take(named)
                .map(String::as_str)
                .collect();
            format!("xDS response validation errors: [{}]", errors.join("; "))
        });
        // Defects::new_stream_keeps_cached: the stream's first response of
        // the type read as a replay of what the client holds.
        let keep_cached = self.shared.profile.defects.new_stream_keeps_cached
            && self
                .call_mut(server)
                .is_some_and(|call| !call.answered(resource_type));
        self.apply_updates(server, resource_type, parsed, keep_cached);
        self.apply_server_errors(server, resource_type, &version, server_errors);
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
        match (deletions, seen) {
            (Deletions::AllOthers, Some(seen)) => {
                self.handle_deletions(server, resource_type, &version, &|name| {
                    !seen.contains(name)
                });
            }
            (Deletions::Named(names), _) => {
                self.handle_removed(server, resource_type, &version, names);
            }
            _ => {}
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
    pub(super) fn apply_updates(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        parsed: ParsedResponse,
        keep_cached: bool,
    ) {
        let now = self.now();
        let channel_failing = self.channel_failing(server)
            && !self.shared.profile.defects.ambient_error_never_cleared;
        // A88: a data error drops the cached value when the server says
        // the control plane cannot alert anyone.
        let drop_on_data_error = self.a88() && server.fail_on_data_errors();
        // Watcher events and logs wait until every resource is looked at
        // (one cache lookup per resource: responses can carry 10,000).
        let mut events: Vec<(String, Vec<WatchId>, WatcherEvent)> = Vec::new();
        let mut logs = Vec::new();
        let tell_wildcards = !self.shared.profile.defects.wildcard_misses_new;
        let renotify = self.shared.profile.defects.renotifies_unchanged;
        for entry in parsed.entries {
            let Some(state) = self
                .authorities
                .get_mut(&entry.name.authority)
                .and_then(|a| {
                    a.entry_for_update(server, resource_type, &entry.name.key, tell_wildcards)
                })
            else {
                continue; // Not subscribed: ignore it.
            };
            let ended = if self.shared.profile.defects.ignored_deletion_never_clears {
                state.deletion_ignored()
            } else {
                state.end_ignored_deletion()
            };
            if ended && !self.shared.profile.defects.ignored_deletion_end_unlogged {
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
                Ok((value, _))
                    if self.shared.profile.defects.unchanged_update_keeps_failure
                        && state.holds(&value) =>
                {
                    None
                }
                Ok((_, _)) if keep_cached && state.cached().is_some() => None,
                Ok((value, serialized)) if renotify && state.holds(&value) => {
                    state.accept(value.clone(), serialized, &entry.version, now, false);
                    Some(WatcherEvent::Changed(value))
                }
                Ok((value, serialized)) => {
                    state.accept(value, serialized, &entry.version, now, channel_failing)
                }
            };
            if let Some(event) = event {
                events.push((
                    entry.full_name,
                    state.watchers.iter().copied().collect(),
                    event,
                ));
            }
        }
        for message in logs {
            self.log(LogLevel::Info, message);
        }
        for (name, watchers, event) in events {
            self.notify_about(&name, &watchers, event);
        }
    }

    /// How responses' `resource_errors` are read: under A88 only, as
    /// C-core reads them only with its data-error handling on.
    fn resource_errors_reading(&self) -> ResourceErrors {
        match self.shared.profile.defects.broken_server_errors {
            _ if !self.a88() => ResourceErrors::Ignored,
            Some(ServerErrorRule::Read) => ResourceErrors::Ignored,
            Some(ServerErrorRule::MalformedNacked) => ResourceErrors::ReadAcceptingMalformed,
            _ => ResourceErrors::Read,
        }
    }

    /// gRFC A88, "Support for Errors Provided by the xDS server": each
    /// error the server reported for a subscribed resource is recorded in
    /// its entry (CSDS RECEIVED_ERROR); the value is dropped only for a
    /// data error (NOT_FOUND, PERMISSION_DENIED) from a server with
    /// `fail_on_data_errors`; watchers hear an ambient error while a
    /// value is cached and a resource error otherwise. After the
    /// response's resources, as C-core handles them.
    pub(super) fn apply_server_errors(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        version: &str,
        errors: Vec<ServerError>,
    ) {
        if errors.is_empty() {
            return;
        }
        let now = self.now();
        let broken = self.shared.profile.defects.broken_server_errors;
        let fail_on_data_errors = server.fail_on_data_errors();
        let mut events = Vec::new();
        for error in errors {
            let Some(state) = self.served_entry_mut(server, resource_type, &error.name) else {
                continue;
            };
            let data_error = matches!(error.code, Code::NotFound | Code::PermissionDenied);
            let drop_value = fail_on_data_errors
                && (data_error || broken == Some(ServerErrorRule::DropOnlyForDataErrors));
            let mut event = state.received_error(
                XdsError::new(error.code, error.message),
                version,
                now,
                drop_value,
                broken == Some(ServerErrorRule::CsdsReceivedError),
            );
            if broken == Some(ServerErrorRule::AmbientWhenCached)
                && let WatcherEvent::AmbientError(e) = event
            {
                event = WatcherEvent::ResourceError(e);
            }
            let watchers: Vec<WatchId> = state.watchers.iter().copied().collect();
            events.push((error.full_name, watchers, event));
        }
        for (name, watchers, event) in events {
            self.notify_about(&name, &watchers, event);
        }
    }

    /// Delta: the server named resources it deleted. A cached one is a
    /// deletion, for every type (gRFC A53: "if/when gRPC adds support for
    /// the incremental xDS protocol variant, this behavior would affect all
    /// resource types"). One never received is the server saying it does
    /// not exist: its watchers hear so now, not when the timer fires.
    pub(super) fn handle_removed(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        version: &str,
        removed: Vec<ResourceName>,
    ) {
        if removed.is_empty() || self.shared.profile.defects.delta_removals_ignored {
            return;
        }
        let removed_set: HashSet<ResourceName> = removed.iter().cloned().collect();
        self.handle_deletions(server, resource_type, version, &|name| {
            removed_set.contains(name)
        });
        let mut moot = Vec::new();
        if let Some(call) = self.call_mut(server) {
            moot.extend(
                removed
                    .iter()
                    .filter_map(|name| call.seen(resource_type, name)),
            );
        }
        for timer in moot {
            self.timers.remove(&timer);
        }
        // Looked up by name: a response costs what it names, not what the
        // cache holds.
        let handling = self.shared.profile.data_errors;
        let mut events = Vec::new();
        for name in &removed {
            let Some(state) = self.served_entry_mut(server, resource_type, name) else {
                continue;
            };
            if state.is_awaited()
                && let Some(event) = state.not_found(handling)
            {
                let watchers: Vec<WatchId> = state.watchers.iter().copied().collect();
                events.push((name.full_name(resource_type), watchers, event));
            }
        }
        for (name, watchers, event) in events {
            self.notify_about(&name, &watchers, event);
        }
    }

    /// Cached resources the server deleted (`deleted` says which names):
    /// gone, or kept, as the profile and the server's features say.
    pub(super) fn handle_deletions(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        version: &str,
        deleted: &dyn Fn(&ResourceName) -> bool,
    ) {
        if self.a88() {
            return self.handle_deletions_a88(server, resource_type, version, deleted);
        }
        let ignore =
            server.ignore_resource_deletion() && !self.shared.profile.defects.deletions_always_drop;
        let mut dropped = Vec::new();
        let mut ignored = Vec::new();
        let now = self.now();
        self.each_deleted(server, resource_type, deleted, |name, state| {
            if ignore {
                if state.ignore_deletion() {
                    ignored.push(name);
                }
            } else {
                dropped.push((
                    name.full_name(resource_type),
                    state.watchers.clone(),
                    state.delete(version, now),
                ));
            }
        });
        if self.shared.profile.defects.ignored_deletion_unlogged {
            ignored.clear();
        }
        for name in ignored {
            let message = format!(
                "xds server {}: ignoring deletion for resource type {} name {}",
                server.server_uri,
                resource_type.type_url(),
                name.full_name(resource_type)
            );
            self.log(LogLevel::Warning, message);
        }
        for (name, watchers, event) in dropped {
            self.notify_about(&name, &watchers, event);
        }
    }

    /// Calls `on_deleted` for each cached resource of `resource_type` that
    /// `deleted` names, in the authorities that use `server` now.
    pub(super) fn each_deleted(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        deleted: &dyn Fn(&ResourceName) -> bool,
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
                if state.is_cached() && deleted(&name) {
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
    pub(super) fn handle_deletions_a88(
        &mut self,
        server: &XdsServerConfig,
        resource_type: ResourceType,
        version: &str,
        deleted: &dyn Fn(&ResourceName) -> bool,
    ) {
        let drop =
            server.fail_on_data_errors() || self.shared.profile.defects.deletions_always_drop;
        let now = self.now();
        let mut events = Vec::new();
        self.each_deleted(server, resource_type, deleted, |name, state| {
            let event = state.delete_as_data_error(version, now, drop);
            let watchers: Vec<WatchId> = state.watchers.iter().copied().collect();
            events.push((name.full_name(resource_type), watchers, event));
        });
        for (name, watchers, event) in events {
            self.notify_about(&name, &watchers, event);
        }
    }
}
