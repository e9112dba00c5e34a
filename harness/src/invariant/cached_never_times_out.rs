//! `cached-never-times-out`: a resource the client holds is not declared
//! missing by a timer. gRFC A57: on a new stream the does-not-exist timer
//! is started again "only if the resource is not already cached" — the
//! rule exists because clients used to declare cached resources missing
//! when their xDS server restarted. So a watcher of a resource the client
//! holds hears does-not-exist only when a response of its type says so:
//! at an instant when a response of the type reaches the client (SotW:
//! an LDS or CDS response without it; delta: its name in
//! `removed_resources`), seen on the timeline as the server sending one or
//! the client answering one (ACK or NACK) in that instant.
//!
//! "Holds": its watchers heard a value, and since then neither
//! does-not-exist nor a resource error, nor was its last watch cancelled
//! (the cache may drop an unwatched entry, as C-core's does).
//!
//! Read on virtual time only: "in that instant" is exact there; on real
//! time a response and what it caused are apart by the machine's timing.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "cached-never-times-out",
    rule: "a resource the client holds is declared missing only by a response that says so, \
           never by a timer (gRFC A57)",
    held_to: held::with_watches_on_virtual_time,
    check,
};

const WILDCARD: &str = "*";

fn check(_scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    // Instants at which a response of a type reached the client: sent by a
    // server, or answered by the client.
    let mut responses: HashSet<(ResourceType, Duration)> = HashSet::new();
    for event in events {
        let EventKind::Server(server_event) = &event.kind else {
            continue;
        };
        let type_url = match &**server_event {
            ServerEvent::ResponseSent { response, .. } => &response.type_url,
            ServerEvent::RequestReceived { request, .. } if !request.response_nonce.is_empty() => {
                &request.type_url
            }
            _ => continue,
        };
        if let Some(t) = ResourceType::from_type_url(type_url) {
            responses.insert((t, event.at));
        }
    }
    let mut watches: HashMap<(ResourceType, &str), usize> = HashMap::new();
    // (type, name) -> the event at which its watchers heard its value.
    let mut holds: HashMap<(ResourceType, &str), usize> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Step(text) => {
                let started = WatchInCallback::described(text).or_else(|| Watch::described(text));
                if let Some(key) = started {
                    *watches.entry(key).or_default() += 1;
                } else if let Some(key) = CancelWatch::described(text) {
                    let active = watches.entry(key).or_default();
                    *active = active.saturating_sub(1);
                    if *active > 0 {
                        continue;
                    }
                    // Unwatched now: the cache may drop it (and, for the
                    // wildcard, every name no watch names).
                    if key.1 == WILDCARD {
                        holds.retain(|(t, name), _| {
                            *t != key.0 || watches.get(&(*t, *name)).is_some_and(|n| *n > 0)
                        });
                    } else {
                        let wildcard = watches.get(&(key.0, WILDCARD)).is_some_and(|n| *n > 0);
                        if !wildcard {
                            holds.remove(&key);
                        }
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
                    WatcherNotification::Changed { .. } => {
                        holds.insert(key, index);
                    }
                    WatcherNotification::ResourceError(_) => {
                        holds.remove(&key);
                    }
                    WatcherNotification::DoesNotExist => {
                        if let Some(since) = holds.remove(&key)
                            && !responses.contains(&(*resource_type, event.at))
                        {
                            return Some(Violation {
                                event: index,
                                message: format!(
                                    "the watchers of {resource_type} {name} hear it does not \
                                     exist, though the client holds it (heard at #{}), and no \
                                     response of the type reached the client then: a timer",
                                    since + 1
                                ),
                            });
                        }
                    }
                    WatcherNotification::AmbientError(_)
                    | WatcherNotification::AmbientErrorCleared => {}
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariant::test_events::{heard, request, response, step, test_scenario};

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    fn changed() -> WatcherNotification {
        WatcherNotification::Changed {
            summary: "v".into(),
        }
    }

    /// `event` at `ms`.
    fn when(ms: u64, event: TimelineEvent) -> TimelineEvent {
        TimelineEvent {
            at: Duration::from_millis(ms),
            ..event
        }
    }

    #[test]
    fn a_held_resource_declared_missing_by_a_timer_is_caught_and_by_a_response_is_not() {
        let mut events = vec![
            step("watch CDS c1"),
            when(0, response(1, CDS, "1", "1")),
            when(0, heard("c1", changed())),
            // The stream ends; the new one's request gets no answer, and
            // 15 s later the client declares c1 missing: a timer.
            when(5_000, request(2, CDS, &["c1"], "1", "", true)),
            when(20_000, heard("c1", WatcherNotification::DoesNotExist)),
        ];
        let v = check(&test_scenario(), &events).expect("a timer on a cached resource");
        assert_eq!(v.event, 4);
        assert!(v.message.contains("(heard at #3)"), "{v:?}");
        // A response without c1 (a SotW CDS deletion) in that instant.
        events.insert(4, when(20_000, response(2, CDS, "2", "2")));
        assert_eq!(check(&test_scenario(), &events), None);
        // Or the client's answer to one (the server's record of sending
        // it may be earlier: a held connection).
        events[4] = when(20_000, request(2, CDS, &["c1"], "2", "2", false));
        assert_eq!(check(&test_scenario(), &events), None);
    }

    #[test]
    fn a_resource_not_held_may_time_out() {
        // Never heard, heard missing, or unwatched since: not held.
        let never = vec![
            step("watch CDS c1"),
            when(15_000, heard("c1", WatcherNotification::DoesNotExist)),
        ];
        assert_eq!(check(&test_scenario(), &never), None);
        let unwatched = vec![
            step("watch CDS c1"),
            when(0, heard("c1", changed())),
            step("cancel watch CDS c1"),
            step("watch CDS c1"),
            when(15_000, heard("c1", WatcherNotification::DoesNotExist)),
        ];
        assert_eq!(check(&test_scenario(), &unwatched), None);
        // Still watched by a second watch: still held.
        let mut twice = unwatched.clone();
        twice.insert(0, step("watch CDS c1"));
        assert!(check(&test_scenario(), &twice).is_some());
        // Held under a wildcard watch when its named watch goes.
        let wildcard = vec![
            step("watch CDS *"),
            step("watch CDS c1"),
            when(0, heard("c1", changed())),
            step("cancel watch CDS c1"),
            when(15_000, heard("c1", WatcherNotification::DoesNotExist)),
        ];
        assert!(check(&test_scenario(), &wildcard).is_some());
    }
}
