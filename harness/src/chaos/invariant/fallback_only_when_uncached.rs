//! `fallback-only-when-uncached` (gRFC A71): the client turns to a
//! lower-priority server only while a watched resource is not cached; with
//! every watched resource cached (a value, or does-not-exist, which counts
//! as cached) it stays on the server it uses and tells watchers of the
//! failure instead.
//!
//! Read from the watches the script started and what their watchers
//! heard, so it holds where those are all the client's watches: not in a
//! run that dials a channel, sends RPCs (which dial) or serves (their
//! XdsClients watch what their configs name), has a wildcard watch, or
//! names authorities (each has its own servers).

use std::collections::{HashMap, HashSet};

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::{RequestKind, ResourceType};

use super::{Invariant, Violation};
use crate::scenario::{BootstrapPlan, Scenario};
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "fallback-only-when-uncached",
    rule: "the client turns to a lower-priority server only while a watched resource is \
           not cached",
    check,
};

/// Step kinds whose XdsClients watch what the harness does not see.
const OTHER_WATCHERS: [&str; 3] = ["dial", "rpc", "serve"];

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    let BootstrapPlan::Generated {
        servers,
        authorities,
        ..
    } = &scenario.bootstrap
    else {
        return None;
    };
    if servers.len() < 2
        || !authorities.is_empty()
        || scenario
            .steps
            .iter()
            .any(|s| OTHER_WATCHERS.contains(&s.step.key()))
    {
        return None;
    }
    let priority = |server: &str| servers.iter().position(|s| s == server);
    let mut watches: HashMap<(ResourceType, &str), usize> = HashMap::new();
    let mut cached: HashSet<(ResourceType, &str)> = HashSet::new();
    // The priority of the server the client uses: where its first stream
    // went, or a lower one it fell back to; a higher one again only once
    // the client answers a response from it (gRFC A71: it goes on trying
    // the higher-priority servers while on a fallback, and switches back
    // "once such a resource is received"), so a stream opened to a higher
    // one that never answers changes nothing.
    let mut in_use: Option<usize> = None;
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Step(text) => {
                let started = WatchInCallback::described(text).or_else(|| Watch::described(text));
                if let Some(key) = started {
                    *watches.entry(key).or_default() += 1;
                } else if let Some(key) = CancelWatch::described(text) {
                    let active = watches.entry(key).or_default();
                    *active = active.saturating_sub(1);
                    // The client may drop what no one watches: cached
                    // again only once a new watcher hears it.
                    if *active == 0 {
                        cached.remove(&key);
                    }
                    // No watch left: the client lets its channels go, and
                    // the next watch starts over from the first server.
                    if watches.values().all(|n| *n == 0) {
                        in_use = None;
                    }
                }
            }
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) => {
                let key = (*resource_type, name.as_str());
                match notification {
                    WatcherNotification::Changed { .. } | WatcherNotification::DoesNotExist => {
                        cached.insert(key);
                    }
                    // Nothing usable (an uncached resource's NACK, or a
                    // connectivity failure before any value).
                    WatcherNotification::ResourceError(_) => {
                        cached.remove(&key);
                    }
                    WatcherNotification::AmbientError(_)
                    | WatcherNotification::AmbientErrorCleared => {}
                }
            }
            EventKind::Server(server_event) => {
                let Some(server) = event.source.server() else {
                    continue;
                };
                let Some(at) = priority(server) else {
                    continue;
                };
                let opened = match &**server_event {
                    ServerEvent::StreamOpened { .. } => at,
                    // An answer to a response from a higher-priority
                    // server: the client is back on it.
                    ServerEvent::RequestReceived { request, .. }
                        if matches!(request.kind, RequestKind::Ack | RequestKind::Nack) =>
                    {
                        if in_use.is_some_and(|used| at < used) {
                            in_use = Some(at);
                        }
                        continue;
                    }
                    _ => continue,
                };
                let fell_back = in_use.is_some_and(|used| opened > used);
                if in_use.is_none() || fell_back {
                    in_use = Some(opened);
                }
                if !fell_back {
                    continue;
                }
                let watched: Vec<_> = watches
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(key, _)| *key)
                    .collect();
                if watched.iter().any(|(_, name)| *name == "*") {
                    continue;
                }
                if !watched.is_empty() && watched.iter().all(|key| cached.contains(key)) {
                    let mut names: Vec<String> =
                        watched.iter().map(|(t, n)| format!("{t} {n}")).collect();
                    names.sort();
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "the client opened a stream to {server} (priority {opened}) while \
                             every watched resource was cached: {}",
                            names.join(", ")
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use xds_client_under_test::WatcherNotification;

    use super::*;
    use crate::chaos::invariant::test_events::{at, heard, server, step, test_scenario};
    use crate::timeline::Source;
    use xds_vocabulary::AdsProtocol;

    fn opened(on: &str) -> TimelineEvent {
        at(
            0,
            Source::Server(on.into()),
            server(ServerEvent::StreamOpened {
                stream: 1,
                connection: None,
                protocol: AdsProtocol::Sotw,
            }),
        )
    }

    /// The client's ACK of a response from `on`.
    fn ack_from(on: &str) -> TimelineEvent {
        let mut ack = crate::chaos::invariant::test_events::request(
            1,
            "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            &["c1"],
            "1",
            "1",
            false,
        );
        ack.source = Source::Server(on.into());
        ack
    }

    fn changed() -> WatcherNotification {
        WatcherNotification::Changed {
            summary: String::new(),
        }
    }

    #[test]
    fn falling_back_with_everything_cached_is_caught_and_with_a_new_watch_is_not() {
        let mut events = vec![
            step("watch CDS c1"),
            opened("primary"),
            heard("c1", changed()),
            opened("fallback"),
        ];
        let v = check(&test_scenario(), &events).expect("a fallback while cached");
        assert_eq!(v.event, 3);
        assert!(v.message.contains("CDS c1"), "{v:?}");
        // A new watch nothing answered yet makes it the right move.
        events.insert(3, step("watch CDS c2"));
        assert_eq!(check(&test_scenario(), &events), None);
        // The primary tried again, unanswered: still on the fallback, so
        // reconnecting to it is no fallback.
        events.extend([
            heard("c2", WatcherNotification::DoesNotExist),
            opened("primary"),
            opened("fallback"),
        ]);
        assert_eq!(check(&test_scenario(), &events), None);
        // Back on the primary (it answered a response from it), then to
        // the fallback again with everything cached.
        let len = events.len();
        events.insert(len - 1, ack_from("primary"));
        assert!(check(&test_scenario(), &events).is_some());
        // A resource watched again after its last cancel is not known to
        // be cached until its watcher hears it.
        let rewatched = vec![
            step("watch CDS c1"),
            opened("primary"),
            heard("c1", changed()),
            step("cancel watch CDS c1"),
            step("watch CDS c1"),
            opened("fallback"),
        ];
        assert_eq!(check(&test_scenario(), &rewatched), None);
        // Reconnecting to the server in use is not falling back.
        let reconnect = vec![
            step("watch CDS c1"),
            opened("fallback"),
            heard("c1", changed()),
            opened("fallback"),
        ];
        assert_eq!(check(&test_scenario(), &reconnect), None);
    }
}
