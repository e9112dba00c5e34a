//! The client's CSDS view: polled at every checkpoint, each change
//! recorded on the timeline, the latest view kept, since CSDS is a state
//! that expectations check and failure messages show.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::admin::v3::ClientResourceStatus;
use envoy_types::pb::envoy::config::core::v3::Node;

use super::Player;
use crate::matcher::csds::CsdsMatcher;
use crate::projection::csds_admin::{self, AdminView};
use crate::projection::csds_counts::CountsView;
use crate::timeline::{CsdsChange, CsdsDetail, CsdsEntry, CsdsStatus, EventKind, Source, Timeline};
use xds_client_under_test::ClientError;
use xds_fake_server::event::ServerEvent;

/// `(client_scope, type_url, name)`, the name as the scenario writes it.
type CsdsKey = (String, String, String);

/// What the client's CSDS showed at the last poll.
#[derive(Default)]
pub(super) struct CsdsState {
    entries: BTreeMap<CsdsKey, CsdsEntry>,
    /// Each ClientConfig's node, by client scope.
    nodes: BTreeMap<String, Node>,
    /// Why the last poll failed, if it did: the view is then unknown, and
    /// shows nothing (an `ABSENT` must not pass because CSDS is down).
    poll_error: Option<String>,
    /// On a client without CSDS: what stands in for it where it is exact.
    stand_in: Option<StandIn>,
    /// How far the timeline was read into `stand_in`.
    scanned: usize,
}

/// What a client without CSDS shows instead (`crate::projection`).
pub(super) enum StandIn {
    /// gRFC A78's resource gauge, polled from the client.
    Counts(CountsView),
    /// A proxy's admin API, read off the timeline.
    Admin(AdminView),
}

impl StandIn {
    /// Whether it shows what `matcher` describes; `Err` with why it cannot
    /// tell.
    fn read(&self, matcher: &CsdsMatcher) -> Result<bool, String> {
        match self {
            StandIn::Counts(view) => view.read(&matcher.counts_projection()?),
            StandIn::Admin(view) => view.read(&csds_admin::project(matcher)?),
        }
    }
}

impl CsdsState {
    /// The state of a client read through `stand_in` (`None`: its CSDS).
    pub(super) fn with_stand_in(stand_in: Option<StandIn>) -> Self {
        CsdsState {
            stand_in,
            ..CsdsState::default()
        }
    }

    /// Whether the view shows what `matcher` describes.
    pub(super) fn shows(&self, matcher: &CsdsMatcher) -> bool {
        if self.poll_error.is_some() {
            return false;
        }
        if let Some(stand_in) = &self.stand_in {
            return stand_in.read(matcher) == Ok(true);
        }
        matcher.state_matches(&self.entries) && matcher.nodes_match(&self.nodes)
    }

    /// Why the view cannot tell right now whether it shows `matcher`: what
    /// stands in for CSDS is not exact here. An expectation that met such
    /// a moment cannot fail (the client may have been right then): its
    /// run is not applicable.
    pub(super) fn cannot_tell(&self, matcher: &CsdsMatcher) -> Option<String> {
        self.stand_in.as_ref()?.read(matcher).err()
    }

    /// A poll failed: on the timeline when the reason is new, not at
    /// every poll of a client whose CSDS is down.
    fn poll_failed(&mut self, error: String, timeline: &Timeline) {
        if self.poll_error.as_ref() != Some(&error) {
            timeline.record(
                Source::Csds,
                EventKind::Note(format!("CSDS poll failed: {error}")),
            );
            self.poll_error = Some(error);
        }
    }

    /// The view, one resource a line, for failure messages.
    pub(super) fn describe(&self) -> String {
        if let Some(error) = &self.poll_error {
            return format!("  (unknown: the last CSDS poll failed: {error})\n");
        }
        match &self.stand_in {
            Some(StandIn::Counts(view)) => return view.describe(),
            Some(StandIn::Admin(view)) => return view.describe(),
            None => {}
        }
        if self.entries.is_empty() && self.nodes.is_empty() {
            return "  (nothing)\n".to_string();
        }
        let mut out = String::new();
        for (scope, node) in &self.nodes {
            let scope = if scope.is_empty() {
                String::new()
            } else {
                format!("[{scope}] ")
            };
            out.push_str(&format!(
                "  {scope}node id={:?} cluster={:?} user_agent_name={:?} client_features={:?}\n",
                node.id, node.cluster, node.user_agent_name, node.client_features
            ));
        }
        for ((scope, type_url, name), entry) in &self.entries {
            let scope = if scope.is_empty() {
                String::new()
            } else {
                format!("[{scope}] ")
            };
            let detail = &entry.detail;
            out.push_str(&format!(
                "  {scope}{} {name}: {} version={:?}{} last_updated={} config={}\n",
                crate::timeline::type_name(type_url),
                crate::timeline::csds_status_name(entry.status),
                entry.version,
                entry
                    .error
                    .as_ref()
                    .map(|e| format!(
                        " error={e:?} error_version={:?} error_time={}",
                        detail.error_version, detail.error_time
                    ))
                    .unwrap_or_default(),
                detail.last_updated,
                detail.config,
            ));
        }
        out
    }

    /// Makes `now` the view, recording on `timeline` every resource whose
    /// entry changed (appeared, went or differs), in key order.
    fn replace(&mut self, now: BTreeMap<CsdsKey, CsdsEntry>, timeline: &Timeline) {
        // One walk over both views in key order: a client subscribed to
        // thousands of resources is polled at every checkpoint, and
        // looking each key up in both maps made that the run's cost.
        let mut changes = Vec::new();
        let mut before = self.entries.iter().peekable();
        let mut after = now.iter().peekable();
        loop {
            let (key, from, to) = match (before.peek(), after.peek()) {
                (None, None) => break,
                (Some((k, _)), Some((n, _))) if k == n => {
                    let ((key, from), (_, to)) = (before.next().unwrap(), after.next().unwrap());
                    (key, Some(from), Some(to))
                }
                (Some((k, _)), Some((n, _))) if k > n => {
                    let (key, to) = after.next().unwrap();
                    (key, None, Some(to))
                }
                (Some(_), _) => {
                    let (key, from) = before.next().unwrap();
                    (key, Some(from), None)
                }
                (None, Some(_)) => {
                    let (key, to) = after.next().unwrap();
                    (key, None, Some(to))
                }
            };
            // Only what a timeline line shows makes an event; the state
            // below (what expectations check) takes everything.
            if from.map(CsdsEntry::shown) != to.map(CsdsEntry::shown) {
                changes.push(CsdsChange {
                    client_scope: key.0.clone(),
                    type_url: key.1.clone(),
                    name: key.2.clone(),
                    from: from.cloned(),
                    to: to.cloned(),
                });
            }
        }
        for change in changes {
            timeline.record(Source::Csds, EventKind::Csds(change));
        }
        self.entries = now;
    }
}

impl Player {
    /// Records every change of the client's CSDS view since the last poll.
    pub(super) async fn poll_csds(&mut self) {
        match &self.csds_state.stand_in {
            Some(StandIn::Counts(_)) => return self.poll_counts().await,
            Some(StandIn::Admin(_)) => return self.read_admin(),
            None => {}
        }
        if !self.csds_capable {
            return;
        }
        let polled = self.client.csds().await;
        let Some(response) = self.polled(polled, "CSDS poll works again") else {
            return;
        };
        // Collected, then built at once: a dump lists thousands of
        // resources in (nearly) key order, which sorts in one pass.
        let mut now = Vec::new();
        self.csds_state.nodes = response
            .config
            .iter()
            .filter_map(|c| Some((c.client_scope.clone(), c.node.clone()?)))
            .collect();
        for config in &response.config {
            for entry in &config.generic_xds_configs {
                let status = match ClientResourceStatus::try_from(entry.client_status) {
                    Ok(ClientResourceStatus::Requested) => CsdsStatus::Requested,
                    Ok(ClientResourceStatus::Acked) => CsdsStatus::Acked,
                    Ok(ClientResourceStatus::Nacked) => CsdsStatus::Nacked,
                    Ok(ClientResourceStatus::DoesNotExist) => CsdsStatus::DoesNotExist,
                    Ok(ClientResourceStatus::ReceivedError) => CsdsStatus::ReceivedError,
                    Ok(ClientResourceStatus::Timeout) => CsdsStatus::Timeout,
                    _ => continue,
                };
                // Names as the scenario wrote them (a server Listener's
                // name holds its real listening address over TCP).
                let key = (
                    config.client_scope.clone(),
                    entry.type_url.clone(),
                    self.normalizer.translate(&entry.name).into_owned(),
                );
                let error = entry.error_state.as_ref().map(|e| e.details.clone());
                let detail = CsdsDetail {
                    error_version: entry
                        .error_state
                        .as_ref()
                        .map(|e| e.version_info.clone())
                        .unwrap_or_default(),
                    error_time: entry
                        .error_state
                        .as_ref()
                        .is_some_and(|e| e.last_update_attempt.is_some()),
                    last_updated: entry.last_updated.is_some(),
                    config: entry.xds_config.is_some(),
                };
                now.push((
                    key,
                    CsdsEntry {
                        status,
                        version: entry.version_info.clone(),
                        error,
                        detail,
                    },
                ));
            }
        }
        // A key listed twice (a client bug) keeps one of its entries.
        self.csds_state
            .replace(now.into_iter().collect(), &self.timeline);
    }
}

impl Player {
    /// What a poll of the client gave, or `None` with its failure noted
    /// (once per reason); a poll that works again after failing says so.
    fn polled<T>(&mut self, result: Result<T, ClientError>, again: &str) -> Option<T> {
        match result {
            Ok(value) => {
                if self.csds_state.poll_error.take().is_some() {
                    self.timeline
                        .record(Source::Csds, EventKind::Note(again.to_string()));
                }
                Some(value)
            }
            // Its first line: a crashed client's error carries its stderr.
            Err(e) => {
                let error = e.to_string();
                let first = error.lines().next().unwrap_or_default().to_string();
                self.csds_state.poll_failed(first, &self.timeline);
                None
            }
        }
    }

    /// Reads the client's A78 resource gauge, and every name its requests
    /// asked for since the last reading (what it may hold).
    async fn poll_counts(&mut self) {
        let from = self.csds_state.scanned;
        let mut requested = Vec::new();
        let mut scanned = from;
        self.timeline.find_from(from, |index, event| {
            scanned = index + 1;
            if let EventKind::Server(server) = &event.kind
                && let ServerEvent::RequestReceived { request, .. } = server.as_ref()
            {
                let delta = request.delta.as_ref().map(|d| &d.subscribe);
                for name in request
                    .resource_names
                    .iter()
                    .chain(delta.into_iter().flatten())
                {
                    requested.push((request.type_url.clone(), name.clone()));
                }
            }
            false
        });
        self.csds_state.scanned = scanned;
        let counts = self.client.resource_counts().await;
        let Some(StandIn::Counts(view)) = self.csds_state.stand_in.as_mut() else {
            return;
        };
        for (type_url, name) in requested {
            view.requested(&type_url, &self.normalizer.translate(&name));
        }
        let Some(counts) = self.polled(counts, "resource counts can be read again") else {
            return;
        };
        let Some(StandIn::Counts(view)) = self.csds_state.stand_in.as_mut() else {
            return;
        };
        for change in view.replace(counts) {
            self.timeline.record(Source::Csds, EventKind::Note(change));
        }
    }

    /// Reads what the timeline recorded since the last checkpoint (the
    /// admin API's observations, the servers' responses) into the admin
    /// stand-in.
    fn read_admin(&mut self) {
        let from = self.csds_state.scanned;
        let mut scanned = from;
        let Some(StandIn::Admin(view)) = self.csds_state.stand_in.as_mut() else {
            return;
        };
        let normalizer = &self.normalizer;
        self.timeline.find_from(from, |index, event| {
            scanned = index + 1;
            view.observe(event, normalizer);
            false
        });
        self.csds_state.scanned = scanned;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::csds::CsdsMatcher;

    #[test]
    fn a_failed_poll_shows_nothing_and_is_told_once() {
        let timeline = Timeline::new(tokio::time::Instant::now());
        let mut state = CsdsState::default();
        let absent = CsdsMatcher {
            resource_type: None,
            name: Some("c1".into()),
            status: Some(CsdsStatus::Absent),
            version: None,
            error: None,
            error_contains: None,
            error_version: None,
            error_time: None,
            last_updated: None,
            config: None,
            client_scope: None,
            node_has: None,
        };
        assert!(state.shows(&absent), "nothing polled yet: c1 is absent");
        state.poll_failed("connection refused".into(), &timeline);
        state.poll_failed("connection refused".into(), &timeline);
        assert!(!state.shows(&absent), "unknown is not absent");
        assert!(
            state
                .describe()
                .contains("the last CSDS poll failed: connection refused")
        );
        let notes: Vec<String> = timeline
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Note(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(notes, ["CSDS poll failed: connection refused"]);
    }
}
