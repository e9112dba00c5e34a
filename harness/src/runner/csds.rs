//! The client's CSDS view: polled at every checkpoint, each change
//! recorded on the timeline, the latest view kept, since CSDS is a state
//! that expectations check and failure messages show.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::admin::v3::ClientResourceStatus;
use envoy_types::pb::envoy::config::core::v3::Node;

use super::Player;
use crate::matcher::csds::CsdsMatcher;
use crate::timeline::{CsdsChange, CsdsDetail, CsdsEntry, CsdsStatus, EventKind, Source, Timeline};

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
}

impl CsdsState {
    /// Whether the view shows what `matcher` describes.
    pub(super) fn shows(&self, matcher: &CsdsMatcher) -> bool {
        self.poll_error.is_none()
            && matcher.state_matches(&self.entries)
            && matcher.nodes_match(&self.nodes)
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
        if !self.csds_capable {
            return;
        }
        let response = match self.client.csds().await {
            Ok(response) => response,
            // Its first line: a crashed client's error carries its stderr.
            Err(e) => {
                let error = e.to_string();
                let first = error.lines().next().unwrap_or_default().to_string();
                return self.csds_state.poll_failed(first, &self.timeline);
            }
        };
        if self.csds_state.poll_error.take().is_some() {
            self.timeline.record(
                Source::Csds,
                EventKind::Note("CSDS poll works again".into()),
            );
        }
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
