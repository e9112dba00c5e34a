//! Server health and gRFC A71 fallback: a response makes a server healthy
//! and brings its authorities back to it; a connectivity failure either
//! falls back to the next server (when something watched is not cached)
//! or is told to the watchers.

use super::*;

impl Worker {
    /// A response arrived: the channel is healthy, and authorities that had
    /// fallen back to lower-priority servers return to this one (A71).
    pub(super) fn set_healthy(&mut self, server: &XdsServerConfig) {
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

    /// The channel failed: report it to the watchers of every authority
    /// using it, unless that authority can fall back to another server.
    pub(super) fn set_channel_status(&mut self, server: &XdsServerConfig, error: XdsError) {
        let reason = if self
            .shared
            .profile
            .defects
            .connectivity_error_without_reason
        {
            "connectivity failure".to_string()
        } else {
            error.message
        };
        let error = XdsError::new(
            error.code,
            format!("xDS channel for server {}: {reason}", server.server_uri),
        );
        let per_error = self.shared.profile.defects.failures_counted_per_error;
        let Some(channel) = self.channels.get_mut(server) else {
            return;
        };
        // C-core counts a server going from healthy to failing (A78's
        // server_failure), not each failed attempt while it fails.
        if channel.status.is_none() || per_error {
            channel.failures += 1;
        }
        channel.status = Some(error.clone());
        let failures = channel.failures;
        self.emit(ClientEvent::ServerStatus {
            server: server.server_uri.clone(),
            error: Some(error.clone()),
            failures,
        });
        // A57: a stream that ends before any response, and a failing
        // connection, are logged as well as told to the watchers.
        if !self.shared.profile.defects.connectivity_errors_unlogged {
            self.log(LogLevel::Info, error.message.clone());
        }
        let one_type = self
            .shared
            .profile
            .defects
            .connectivity_errors_reach_one_type;
        let mut cached = BTreeSet::new();
        let mut uncached = BTreeSet::new();
        let authority_names: Vec<Option<String>> = self.authorities.keys().cloned().collect();
        for authority_name in authority_names {
            let uses_it = self.authorities[&authority_name].channels.last() == Some(server);
            let fell_back = uses_it && self.maybe_fallback(&authority_name);
            // Defects::fallback_drops_the_failed_connection: a new
            // transport; dropping the old one closes its connection.
            let drops = self
                .shared
                .profile
                .defects
                .fallback_drops_the_failed_connection;
            if fell_back
                && drops
                && let Some(channel) = self.channels.get_mut(server)
            {
                channel.transport = self.shared.channels.open(server);
            }
            let tell_anyway = self.shared.profile.defects.errors_from_every_server
                && self.authorities[&authority_name].channels.contains(server);
            if (fell_back || !uses_it) && !tell_anyway {
                continue;
            }
            for state in self.authorities[&authority_name]
                .resources
                .values()
                .take(if one_type { 1 } else { usize::MAX })
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
    pub(super) fn maybe_fallback(&mut self, authority_name: &Option<String>) -> bool {
        let nacked_counts_as_cached = self.shared.profile.defects.nacked_counts_as_cached;
        if !self.authorities[authority_name].has_uncached(nacked_counts_as_cached)
            && !self.shared.profile.defects.fallback_while_cached
        {
            return false;
        }
        if self.shared.profile.defects.no_fallback {
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
            let subscriptions = self.authorities[authority_name]
                .subscriptions(authority_name, |state| !only_uncached || !state.is_cached());
            for (resource_type, name) in subscriptions {
                self.channel_subscribe(server, resource_type, &name);
            }
            if !self.channel_failing(server) {
                return true;
            }
        }
        false
    }
}
