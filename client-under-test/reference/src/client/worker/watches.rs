//! Watching and cancelling: a watch finds its authority and cache entry,
//! hears what the entry already knows, and subscribes the channels in use;
//! the last watch of a resource unsubscribes it, and the last of an
//! authority releases its channels. A wildcard watch (name `*`) watches
//! every resource of its type: the entries there are and the ones
//! responses bring later, under the wire's wildcard subscription.

use super::*;

impl Worker {
    pub(super) fn watch(
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
            Ok(mut parsed) if self.shared.profile.defects.context_params_as_written => {
                // The query as the watch wrote it, not in canonical order.
                if let (Some((id, _)), Some((_, query))) =
                    (parsed.key.split_once('?'), name.split_once('?'))
                {
                    parsed.key = format!("{id}?{query}");
                }
                parsed
            }
            Ok(parsed) => parsed,
            Err(error) => {
                self.watchers.insert(
                    id,
                    WatchEntry {
                        resource_type,
                        watched: name.to_string(),
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
                watched: name.to_string(),
                name: Some(parsed.clone()),
                watcher,
            },
        );
        if parsed.key == WILDCARD && !self.shared.profile.defects.wildcard_as_a_name {
            return self.watch_wildcard(id, resource_type, &parsed);
        }
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
        // A wildcard watch of the type watches a new entry too, as it
        // does the entries there when it starts (`watch_wildcard`) and
        // those a response brings (`entry_for_update`).
        let wildcard_ids = authority
            .wildcards
            .get(&resource_type)
            .filter(|_| !self.shared.profile.defects.wildcard_misses_named_first)
            .cloned()
            .unwrap_or_default();
        let by_type = authority.resources.entry(resource_type).or_default();
        let first_watcher = !by_type.contains_key(&parsed.key);
        let state = by_type.entry(parsed.key.clone()).or_insert_with(|| {
            let mut state = ResourceState::new();
            state.watchers.extend(wildcard_ids);
            state
        });
        // An entry kept after its last watch was cancelled, whose
        // unsubscription has not gone out yet: subscribed again below.
        let revived = !first_watcher && state.watchers.is_empty();
        state.watchers.insert(id);
        let cached_events = if first_watcher {
            Vec::new()
        } else {
            state.events_for_new_watcher(self.shared.profile.data_errors)
        };
        let cached_events = self.without_pending_errors_if_broken(cached_events);
        let notified = !cached_events.is_empty();
        for event in cached_events {
            self.notify(&BTreeSet::from([id]), event);
        }
        if first_watcher {
            self.subscribe_everywhere(resource_type, &parsed);
        } else if revived {
            for server in self.authorities[&parsed.authority].channels.clone() {
                self.channel_subscribe(&server, resource_type, &parsed);
            }
        }
        self.tell_if_failing(id, &parsed.authority, notified);
    }

    /// A wildcard watch: it also watches every entry of its type there is
    /// (and hears what each knows), and the first one subscribes `*`.
    fn watch_wildcard(&mut self, id: WatchId, resource_type: ResourceType, name: &ResourceName) {
        let data_errors = self.shared.profile.data_errors;
        let authority = self.authority_mut(&name.authority);
        let ids = authority.wildcards.entry(resource_type).or_default();
        let first = ids.is_empty();
        ids.insert(id);
        let mut known = Vec::new();
        for (key, state) in authority.resources.entry(resource_type).or_default() {
            state.watchers.insert(id);
            let events = state.events_for_new_watcher(data_errors);
            if !events.is_empty() {
                let entry = ResourceName {
                    authority: name.authority.clone(),
                    key: key.clone(),
                };
                known.push((entry.full_name(resource_type), events));
            }
        }
        if self.shared.profile.defects.wildcard_misses_cached {
            known.clear();
        }
        let notified = !known.is_empty();
        for (entry, events) in known {
            for event in self.without_pending_errors_if_broken(events) {
                self.notify_about(&entry, &[id], event);
            }
        }
        if first {
            self.subscribe_everywhere(resource_type, name);
        }
        self.tell_if_failing(id, &name.authority, notified);
    }

    /// `Defects::new_watcher_misses_pending_error`: a new watcher hears only
    /// the first of what it should (the cached value, not the error after).
    fn without_pending_errors_if_broken(&self, mut events: Vec<WatcherEvent>) -> Vec<WatcherEvent> {
        if self.shared.profile.defects.new_watcher_misses_pending_error {
            events.truncate(1);
        }
        events
    }

    /// Subscribes `name` on the authority's channels, adding channels if it
    /// has none yet, or if the one in use is failing: a new uncached
    /// resource may need fallback (gRFC A71).
    fn subscribe_everywhere(&mut self, resource_type: ResourceType, name: &ResourceName) {
        let servers = self.servers_for(&name.authority);
        let needs_channel = {
            let channels = &self.authorities[&name.authority].channels;
            channels
                .last()
                .is_none_or(|last| self.channel_failing(last))
        };
        if needs_channel {
            let start = self.authorities[&name.authority].channels.len();
            // Defects::no_fallback: the first server only.
            let limit = if self.shared.profile.defects.no_fallback {
                1usize.saturating_sub(start)
            } else {
                usize::MAX
            };
            for server in servers.iter().skip(start).take(limit) {
                self.get_or_create_channel(server);
                self.authority_mut(&name.authority)
                    .channels
                    .push(server.clone());
                self.report_fallback_if_not_first(&name.authority, server);
                if !self.channel_failing(server) {
                    break;
                }
            }
        }
        for server in self.authorities[&name.authority].channels.clone() {
            self.channel_subscribe(&server, resource_type, name);
        }
    }

    /// A failing channel: tell the new watcher at once (an ambient error if
    /// it heard of a value already).
    fn tell_if_failing(&mut self, id: WatchId, authority: &Option<String>, notified: bool) {
        let failing = self.authorities[authority]
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
    pub(super) fn servers_for(&self, authority: &Option<String>) -> Vec<XdsServerConfig> {
        let authority = authority
            .as_deref()
            .filter(|_| !self.shared.profile.defects.authorities_ignored);
        let mut servers = self
            .shared
            .bootstrap
            .servers_for_authority(authority)
            .to_vec();
        if let Some(name) = authority
            && self.shared.profile.defects.channel_per_authority
        {
            // Channels are keyed by server config: marking it per
            // authority gives each authority its own channel.
            for server in &mut servers {
                server
                    .server_features
                    .push(format!("defect-authority:{name}"));
            }
        }
        servers
    }

    pub(super) fn report_fallback_if_not_first(
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

    pub(super) fn cancel_watch(&mut self, id: WatchId) {
        let Some(entry) = self.watchers.remove(&id) else {
            return;
        };
        let Some(name) = entry.name else { return };
        let resource_type = entry.resource_type;
        if name.key == WILDCARD && !self.shared.profile.defects.wildcard_as_a_name {
            return self.cancel_wildcard(id, resource_type, &name);
        }
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
        // The entry stays until the request that unsubscribes it goes out
        // (`forget_unwatched`): a watch started again before then finds its
        // value, and the server, never told, need not send it again.
        if self.shared.profile.defects.cache_dropped_on_cancel {
            by_type.remove(&name.key);
            if by_type.is_empty() {
                authority.resources.remove(&resource_type);
            }
        }
        let channels = authority.channels.clone();
        if ignored_deletion && !self.shared.profile.defects.ignored_deletion_end_unlogged {
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
        self.release_if_unused(&name.authority);
    }

    /// The last watch of an authority went: its channels go too.
    fn release_if_unused(&mut self, authority: &Option<String>) {
        if self.authority_mut(authority).is_unused() {
            self.authorities.remove(authority);
            self.release_unused_channels();
        }
    }

    /// A wildcard watch ends: the entries only it watched go, and with the
    /// last wildcard watch of the type, `*` is unsubscribed.
    fn cancel_wildcard(&mut self, id: WatchId, resource_type: ResourceType, name: &ResourceName) {
        let Some(authority) = self.authorities.get_mut(&name.authority) else {
            return;
        };
        let Some(ids) = authority.wildcards.get_mut(&resource_type) else {
            return;
        };
        ids.remove(&id);
        let last = ids.is_empty();
        if last {
            authority.wildcards.remove(&resource_type);
        }
        let mut gone = Vec::new();
        if let Some(by_type) = authority.resources.get_mut(&resource_type) {
            by_type.retain(|key, state| {
                state.watchers.remove(&id);
                let keep = !state.watchers.is_empty();
                if !keep {
                    gone.push(ResourceName {
                        authority: name.authority.clone(),
                        key: key.clone(),
                    });
                }
                keep
            });
            if by_type.is_empty() {
                authority.resources.remove(&resource_type);
            }
        }
        for server in authority.channels.clone() {
            if last {
                self.channel_unsubscribe(&server, resource_type, name);
            }
            for entry in &gone {
                self.channel_unsubscribe(&server, resource_type, entry);
            }
        }
        self.release_if_unused(&name.authority);
    }

    pub(super) fn authority_mut(&mut self, authority: &Option<String>) -> &mut AuthorityState {
        self.authorities.entry(authority.clone()).or_default()
    }
}
