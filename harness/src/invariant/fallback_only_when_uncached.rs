//! `fallback-only-when-uncached` (gRFC A71): the client turns to a
//! lower-priority server only while a watched resource is not cached; with
//! every watched resource cached (a value, or does-not-exist, which counts
//! as cached) it stays on the server it uses and tells watchers of the
//! failure instead.
//!
//! Read from the watches the script started and what their watchers
//! heard, so it holds where those are all the client's watches: not in a
//! run that dials a channel, sends RPCs (which dial) or serves (their
//! XdsClients watch what their configs name) or names authorities (each
//! has its own servers). What only a wildcard watch watched is no longer
//! cached once the last wildcard watch of its type goes.
//!
//! Judged when the client decides to fall back, with what its watchers
//! had heard by then: a client cannot act on a response it has not read
//! yet. A client that reports its decision (`FallbackStarted`, "authority
//! … falls back to …": the reference client) is judged at that event,
//! which comes in the client's own order: after what it told its watchers
//! before deciding, before what it told them after. The server sees
//! the new stream only later: in between, a response from the server in
//! use may have brought the last uncached resource, making the fallback
//! look needless by the time the stream opens (seed 20261126, schedule
//! 26158, SotW and delta: the fallback refused, the client fell back to
//! the next server while `c2` was uncached, and only then applied the
//! primary's response with `c2`; gRFC A71 falls back while "at least one
//! watcher exists for a resource that is not cached", and C-core's
//! `WatchResource` likewise adds a channel for a new uncached resource
//! while the last one is failing). A client that does not report it is
//! judged where the server records the stream's opening, and there a
//! resource counts as cached only if its watchers heard it before that
//! instant: the decision came some time earlier, maybe in that instant.

use std::collections::HashMap;
use std::time::Duration;

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::{ClientEvent, RequestKind, ResourceType};

use super::{Invariant, Violation, WatchStep, Watches, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "fallback-only-when-uncached",
    rule: "the client turns to a lower-priority server only while a watched resource is \
           not cached",
    held_to: held::with_watches,
    check,
};

/// The wildcard watch's name.
const WILDCARD: &str = "*";

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    let servers = super::one_client(scenario).filter(|s| s.len() >= 2)?;
    let priority = |server: &str| servers.iter().position(|s| s == server);
    // Whether the client reports its decisions to fall back: then they
    // are judged, not the streams the servers see.
    let reports = events.iter().any(|e| {
        matches!(
            &e.kind,
            EventKind::Client(ObservedEvent::Client(ClientEvent::FallbackStarted { .. }))
        )
    });
    let mut watches = Watches::default();
    // Cached resources, and since when.
    let mut cached: HashMap<(ResourceType, &str), Duration> = HashMap::new();
    // The priority of the server the client uses: where its first stream
    // went, or a lower one it fell back to; a higher one again only once
    // the client answers a response from it (gRFC A71: it goes on trying
    // the higher-priority servers while on a fallback, and switches back
    // "once such a resource is received"), so a stream opened to a higher
    // one that never answers changes nothing.
    let mut in_use: Option<usize> = None;
    // When a last watch of a resource was last cancelled: a watch and its
    // cancel in one instant may have made the client fall back before the
    // cancel (seed 21, schedule 884: r1 watched while the primary failed,
    // and cancelled at once; the fallback came from r1).
    let mut last_cancel: Option<Duration> = None;
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Step(text) => {
                if let Some(WatchStep::Cancelled {
                    watched,
                    maybe_last,
                    ..
                }) = watches.read(text)
                {
                    // The client may drop what no one watches (a watch
                    // from a callback may never have started): cached
                    // again only once a new watcher hears it.
                    if maybe_last {
                        last_cancel = Some(event.at);
                        cached.remove(&watched);
                        // The last wildcard watch: what only it watched
                        // too (seed 20261126, schedule 12781, delta).
                        if watched.1 == WILDCARD {
                            let counts = watches.counts();
                            cached.retain(|key, _| {
                                key.0 != watched.0 || counts.get(key).is_some_and(|n| *n > 0)
                            });
                        }
                    }
                    // No watch left: the client lets its channels go, and
                    // the next watch starts over from the first server.
                    if watches.none() {
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
                        cached.entry(key).or_insert(event.at);
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
            // The client's own decision, judged with what its watchers
            // heard before it.
            EventKind::Client(ObservedEvent::Client(ClientEvent::FallbackStarted {
                server,
                ..
            })) if last_cancel != Some(event.at) => {
                if let Some(names) = all_cached(watches.counts(), &cached, None) {
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "the client fell back to {server} while every watched resource was \
                             cached: {names}"
                        ),
                    });
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
                // A client that reports its decision was judged there.
                if !fell_back || reports || last_cancel == Some(event.at) {
                    continue;
                }
                // It decided some time before the server saw the stream:
                // what its watchers heard only in this instant may have
                // come after the decision.
                if let Some(names) = all_cached(watches.counts(), &cached, Some(event.at)) {
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "the client opened a stream to {server} (priority {opened}) while \
                             every watched resource was cached: {names}"
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    None
}

/// The watched resources, named, if there are some and every one is
/// cached (before `before`, when given): falling back then breaks the
/// rule. None under a wildcard watch, which wants what is not known yet.
fn all_cached(
    watches: &HashMap<(ResourceType, &str), usize>,
    cached: &HashMap<(ResourceType, &str), Duration>,
    before: Option<Duration>,
) -> Option<String> {
    let watched: Vec<_> = watches
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(key, _)| *key)
        .collect();
    if watched.is_empty() || watched.iter().any(|(_, name)| *name == "*") {
        return None;
    }
    let is_cached = |key: &(ResourceType, &str)| {
        cached
            .get(key)
            .is_some_and(|since| before.is_none_or(|at| *since < at))
    };
    if !watched.iter().all(is_cached) {
        return None;
    }
    let mut names: Vec<String> = watched.iter().map(|(t, n)| format!("{t} {n}")).collect();
    names.sort();
    Some(names.join(", "))
}

#[cfg(test)]
mod tests {
    use xds_client_under_test::WatcherNotification;

    use super::*;
    use crate::invariant::test_events::{at, heard, server, step, test_scenario};
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
                after_close: None,
            }),
        )
    }

    /// The client's ACK of a response from `on`.
    fn ack_from(on: &str) -> TimelineEvent {
        let mut ack = crate::invariant::test_events::request(
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

    /// `event` at `ms` into the run.
    fn later(ms: u64, mut event: TimelineEvent) -> TimelineEvent {
        event.at = Duration::from_millis(ms);
        event
    }

    /// The client reports it falls back to `on`.
    fn fallback_started(on: &str) -> TimelineEvent {
        at(
            0,
            Source::Client,
            EventKind::Client(ObservedEvent::Client(ClientEvent::FallbackStarted {
                authority: String::new(),
                server: format!("{on}:443"),
            })),
        )
    }

    /// A client that does not report its fallbacks, judged at the streams
    /// the servers see: the fallback streams open a second after what the
    /// watchers heard, so what they heard was known when it decided.
    #[test]
    fn falling_back_with_everything_cached_is_caught_and_with_a_new_watch_is_not() {
        let mut events = vec![
            step("watch CDS c1"),
            opened("primary"),
            heard("c1", changed()),
            later(1_000, opened("fallback")),
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
            later(2_000, heard("c2", WatcherNotification::DoesNotExist)),
            later(2_000, opened("primary")),
            later(3_000, opened("fallback")),
        ]);
        assert_eq!(check(&test_scenario(), &events), None);
        // Back on the primary (it answered a response from it), then to
        // the fallback again with everything cached.
        let len = events.len();
        events.insert(len - 1, later(2_000, ack_from("primary")));
        assert!(check(&test_scenario(), &events).is_some());
        // A resource watched again after its last cancel is not known to
        // be cached until its watcher hears it.
        let rewatched = vec![
            step("watch CDS c1"),
            opened("primary"),
            heard("c1", changed()),
            step("cancel watch CDS c1"),
            step("watch CDS c1"),
            later(1_000, opened("fallback")),
        ];
        assert_eq!(check(&test_scenario(), &rewatched), None);
        // Reconnecting to the server in use is not falling back.
        let reconnect = vec![
            step("watch CDS c1"),
            opened("fallback"),
            heard("c1", changed()),
            later(1_000, opened("fallback")),
        ];
        assert_eq!(check(&test_scenario(), &reconnect), None);
    }

    /// Seed 20261126, schedule 26158 (SotW and delta): the client decided
    /// to fall back while c2 was uncached, and only then applied the
    /// primary's response with c2; the server recorded the new stream
    /// after that, in the same instant.
    /// Seed 20261126, schedule 12781 (delta, of a Listener): a wildcard
    /// watcher heard the resource, the wildcard watch went, and the client
    /// forgot it; a watch of it then is of an uncached resource.
    #[test]
    fn what_only_a_cancelled_wildcard_watched_is_not_cached() {
        let mut events = vec![
            step("watch CDS *"),
            opened("primary"),
            heard("c1", changed()),
            step("cancel watch CDS *"),
            step("watch CDS c1"),
            later(1_000, opened("fallback")),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Watched by name all along, it stays cached.
        events.insert(1, step("watch CDS c1"));
        assert!(check(&test_scenario(), &events).is_some());
    }

    #[test]
    fn a_fallback_is_judged_when_the_client_decided_it() {
        let events = vec![
            step("watch CDS c1"),
            opened("primary"),
            later(15_000, heard("c1", WatcherNotification::DoesNotExist)),
            later(38_200, step("watch CDS c2")),
            later(38_200, fallback_started("fallback")),
            later(38_200, heard("c2", changed())),
            later(38_200, opened("fallback")),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Decided with everything cached: caught at the decision.
        let mut decided_late = events.clone();
        decided_late.swap(4, 5);
        let v = check(&test_scenario(), &decided_late).expect("a fallback while cached");
        assert_eq!(v.event, 5);
        assert!(
            v.message.contains("fell back to fallback:443") && v.message.contains("CDS c2"),
            "{v:?}"
        );
        // A client that does not report its decision: at the stream's
        // instant, c2 heard in that instant may have come after it...
        let mut unreported = events.clone();
        unreported.remove(4);
        assert_eq!(check(&test_scenario(), &unreported), None);
        // ...but c2 heard an instant before the stream was known.
        let last = unreported.len() - 1;
        unreported[last].at = Duration::from_millis(39_000);
        let v = check(&test_scenario(), &unreported).expect("a stream opened while cached");
        assert_eq!(v.event, last);
        assert!(v.message.contains("opened a stream to fallback"), "{v:?}");
    }

    /// Seed 21, schedule 884: r1 watched while the primary fails (a stream
    /// ended before any response) and cancelled in the same instant; the
    /// client fell back for r1 before it handled the cancel.
    #[test]
    fn a_watch_cancelled_in_the_instant_of_the_fallback_may_have_caused_it() {
        let mut events = vec![
            step("watch CDS c1"),
            opened("primary"),
            later(15_000, heard("c1", WatcherNotification::DoesNotExist)),
            later(47_000, step("watch CDS c2")),
            later(47_000, step("cancel watch CDS c2")),
            later(47_000, fallback_started("fallback")),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // The cancel an instant earlier: nothing uncached is watched.
        events[4].at = Duration::from_millis(46_000);
        events[3].at = Duration::from_millis(46_000);
        assert!(check(&test_scenario(), &events).is_some());
    }
}
