//! `does-not-exist-timer`: a watcher hears that a resource does not exist
//! either when a response says so (a SotW Listener or Cluster response
//! without it, a delta removal, a server's NOT_FOUND: a response of the
//! type at that instant), or exactly 15 s (30 s with A88's
//! `resource_timer_is_transient_failure` profile, accepted too) after a
//! request naming it reached a server: gRFC A57 starts the timer only once
//! the request is on a connected stream.
//!
//! Two more ways a watcher is told at another time, both right: a new
//! watcher of a resource already known not to exist is told so at once,
//! from the cache (at the instant of its watch step, or whenever the
//! callback that starts it runs); and while a server
//! holds its connections (`hold_connections`: no bytes move), a request
//! the client sent on its connected stream reaches the server only later,
//! so the timer's start cannot be read off the server: a does-not-exist
//! within 30 s of a hold of a server with a connection up (one that has
//! carried a stream) is not checked; with none up, no request can be on a
//! connected stream, and the rule holds.
//!
//! A hold that found nothing up counts as one with a connection up once
//! the held server records a stream opening during it. No bytes move
//! during a hold, so that stream came in bytes the server read before the
//! hold took hold (the server records the stream only when its handler
//! runs, after HTTP/2 took in those bytes): on a connection whose
//! handshake was done, so the client heard the server, and the request it
//! sends there is on a connected stream. Its timer rightly starts then
//! (gRFC A57: at "the completion of a send_message op in C-core"; C-core
//! starts it in `OnRequestSent`), though the server never reads the
//! request (seed 20261126, schedule 13671, SotW and delta). A hold that
//! blocks the handshake also keeps the stream's HEADERS from the server,
//! which then records no stream.
//!
//! Not read with a read held (`hold_reads`): the stream's end waits for
//! the read, and the timers of requests the server never read run on.
//!
//! Exact on virtual time only, where a request and its arrival are one
//! instant; a real-time run would need a window (issue 22, part 4).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::Fault;
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "does-not-exist-timer",
    rule: "does-not-exist comes with a response that says so, or exactly 15 s (30 s) after a \
           request naming the resource reached a server",
    held_to: held::with_watches_on_virtual_time,
    check,
};

/// The does-not-exist timer, and A88's longer one.
const TIMERS: [Duration; 2] = [Duration::from_secs(15), Duration::from_secs(30)];

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    // A watcher holding a read keeps the stream from reading on: its end
    // too, so a client keeps timers it started on a stream the server
    // closed (its last requests lost), as it should, knowing no better.
    if scenario.steps.iter().any(|s| s.step.key() == "hold_reads") {
        return None;
    }
    // (type, name) -> when requests naming it arrived.
    let mut asked: HashMap<(ResourceType, &str), Vec<Duration>> = HashMap::new();
    // type -> when its last response went out.
    let mut answered: HashMap<ResourceType, Duration> = HashMap::new();
    // Resources whose watchers were last told they do not exist.
    let mut missing: HashSet<(ResourceType, &str)> = HashSet::new();
    // (type, name or `*`) -> when a watch of it started.
    let mut watched: HashMap<(ResourceType, &str), Duration> = HashMap::new();
    // Watches to start from a callback, not known to have started yet.
    let mut from_callback: HashSet<(ResourceType, &str)> = HashSet::new();
    // (server, connection) that are up.
    let mut up: HashSet<(&str, u64)> = HashSet::new();
    // Servers holding their connections with a stream up, and when the
    // last such hold ended.
    let mut holding: HashSet<&str> = HashSet::new();
    let mut last_held: Option<Duration> = None;
    // Servers holding their connections that had none up when the hold
    // started, until a stream opening shows one was.
    let mut held_unproven: HashSet<&str> = HashSet::new();
    for (index, event) in events.iter().enumerate() {
        if !holding.is_empty() {
            last_held = Some(event.at);
        }
        match &event.kind {
            EventKind::Step(text) => {
                if let Some(key) = Watch::described(text) {
                    watched.insert(key, event.at);
                } else if let Some(key) = WatchInCallback::described(text) {
                    // It starts when the callback runs, which the
                    // timeline does not show: any time from here.
                    from_callback.insert(key);
                }
            }
            EventKind::Server(server_event) => match &**server_event {
                // A connection that has carried a stream is up (HTTP/2
                // settled): a stream started on it during a hold is on a
                // connected channel, though the server never sees it.
                ServerEvent::StreamOpened {
                    connection: Some(connection),
                    ..
                } => {
                    if let crate::timeline::Source::Server(server) = &event.source {
                        up.insert((server.as_str(), *connection));
                        // No bytes move during a hold: a stream the
                        // server opens then came in bytes it read before
                        // the hold took hold, on a connection whose
                        // handshake was done (its client heard the
                        // server, and a request it sends is on a
                        // connected stream, A57). The hold is one with a
                        // connection up.
                        if held_unproven.remove(server.as_str()) {
                            holding.insert(server.as_str());
                            last_held = Some(event.at);
                        }
                    }
                }
                ServerEvent::ConnectionClosed { connection } => {
                    if let crate::timeline::Source::Server(server) = &event.source {
                        up.remove(&(server.as_str(), *connection));
                    }
                }
                ServerEvent::FaultApplied { fault } => {
                    let server = match &event.source {
                        crate::timeline::Source::Server(s) => s.as_str(),
                        _ => "",
                    };
                    match fault {
                        // Only a stream already up makes a request sent
                        // during the hold one sent on a connected stream.
                        Fault::HoldConnections(_) if up.iter().any(|(s, _)| *s == server) => {
                            holding.insert(server);
                            last_held = Some(event.at);
                        }
                        // Nothing up yet: unless a stream opening shows
                        // otherwise, no request is on a connected stream.
                        Fault::HoldConnections(_) => {
                            held_unproven.insert(server);
                        }
                        Fault::ReleaseConnections(_) | Fault::Restart(_) => {
                            holding.remove(server);
                            held_unproven.remove(server);
                        }
                        _ => {}
                    }
                }
                ServerEvent::RequestReceived { request, .. } => {
                    let Some(resource_type) = ResourceType::from_type_url(&request.type_url) else {
                        continue;
                    };
                    let names = match &request.delta {
                        Some(delta) => &delta.subscribe,
                        None => &request.resource_names,
                    };
                    for name in names {
                        asked
                            .entry((resource_type, name.as_str()))
                            .or_default()
                            .push(event.at);
                    }
                }
                ServerEvent::ResponseSent { response, .. } => {
                    if let Some(resource_type) = ResourceType::from_type_url(&response.type_url) {
                        answered.insert(resource_type, event.at);
                    }
                }
                _ => {}
            },
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) if !matches!(notification, WatcherNotification::DoesNotExist) => {
                if matches!(notification, WatcherNotification::Changed { .. }) {
                    missing.remove(&(*resource_type, name.as_str()));
                }
            }
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification: WatcherNotification::DoesNotExist,
            }) => {
                let key = (*resource_type, name.as_str());
                let known = !missing.insert(key);
                let held = last_held.is_some_and(|h| event.at <= h + TIMERS[1]);
                let requests = asked
                    .get(&(*resource_type, name.as_str()))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let timed_out = requests
                    .iter()
                    .any(|at| TIMERS.iter().any(|timer| *at + *timer == event.at));
                if answered.get(resource_type) == Some(&event.at) || held || timed_out {
                    continue;
                }
                // Only a told-before resource is told from the cache: a
                // watch from a callback is taken as started only then.
                // Asked last, so that a does-not-exist the other rules
                // explain (a second stream's timer) does not use up the
                // callback's watch.
                // Once taken as started, the callback's watch started at
                // this instant: a wildcard watcher is told of every
                // resource of the type the cache knows not to exist at
                // once (seed 20261130, delta schedule 1480).
                // A watch step of this instant explains it before a
                // callback's watch is used up (seed 20261130, delta
                // schedule 1157: `watch CDS *` told c2, and the watch of c2
                // from a callback ran later).
                let keys = [name.as_str(), "*"].map(|n| (*resource_type, n));
                let new_watcher = known
                    && (keys.iter().any(|k| watched.get(k) == Some(&event.at))
                        || keys.iter().any(|k| {
                            let started = from_callback.remove(k);
                            if started {
                                watched.insert(*k, event.at);
                            }
                            started
                        }));
                if !new_watcher {
                    let last = requests.iter().rfind(|at| **at <= event.at).map_or(
                        "no request named it".to_string(),
                        |at| {
                            format!(
                                "the last request naming it arrived {:?} before",
                                event.at - *at
                            )
                        },
                    );
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "the watcher of {resource_type} {name} hears does-not-exist with no \
                             response of the type then, and {last}"
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
    use crate::invariant::test_events::{heard, request, response, step, test_scenario};

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    fn at(ms: u64, mut event: TimelineEvent) -> TimelineEvent {
        event.at = Duration::from_millis(ms);
        event
    }

    /// A stream opened on connection 1 of the server.
    fn opened() -> TimelineEvent {
        on_main(ServerEvent::StreamOpened {
            stream: 1,
            connection: Some(1),
            protocol: xds_vocabulary::AdsProtocol::Sotw,
            after_close: None,
        })
    }

    /// The server holds its connections (no bytes move), from `ms`.
    fn hold(ms: u64) -> TimelineEvent {
        at(
            ms,
            on_main(ServerEvent::FaultApplied {
                fault: Fault::HoldConnections(xds_fake_server::fault::HoldConnections),
            }),
        )
    }

    /// The server releases its connections.
    fn release() -> TimelineEvent {
        on_main(ServerEvent::FaultApplied {
            fault: Fault::ReleaseConnections(xds_fake_server::fault::ReleaseConnections),
        })
    }

    fn on_main(event: ServerEvent) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: crate::timeline::Source::Server("main".into()),
            kind: crate::invariant::test_events::server(event),
        }
    }

    /// Seed 20261126, schedule 1584: a second stream's timer told the
    /// watchers again, and only later did the callback run that started
    /// the new watch, told from the cache.
    #[test]
    fn a_timer_explained_repeat_does_not_use_up_a_callback_watch() {
        let dne = || heard("c1", WatcherNotification::DoesNotExist);
        let events = vec![
            at(1_000, request(1, CDS, &["c1"], "", "", true)),
            at(2_000, step("watch CDS c1 from the next callback of CDS c2")),
            at(3_000, request(2, CDS, &["c1"], "", "", true)),
            at(16_000, dne()),
            at(18_000, dne()),
            at(19_000, dne()),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Without the callback watch, the last one is unexplained.
        let mut without = events.clone();
        without[1] = at(2_000, step("wait 1s"));
        assert!(check(&test_scenario(), &without).is_some());
    }

    /// Seed 20261130, delta schedule 1480: a wildcard watch from a
    /// callback is told, when the callback runs, of every resource of the
    /// type the cache knows not to exist.
    #[test]
    fn a_wildcard_watch_from_a_callback_is_told_of_every_missing_resource_at_once() {
        let dne = |name| heard(name, WatcherNotification::DoesNotExist);
        let events = vec![
            at(1_000, request(1, CDS, &["c1", "c2"], "", "", true)),
            at(16_000, dne("c1")),
            at(16_000, dne("c2")),
            at(
                20_000,
                step("watch CDS * from the next callback of LDS svc"),
            ),
            at(25_000, dne("c1")),
            at(25_000, dne("c2")),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Told later than the callback's instant, the second is unexplained.
        let mut later = events.clone();
        later[5] = at(26_000, dne("c2"));
        assert!(check(&test_scenario(), &later).is_some());
        // Seed 20261130, delta schedule 1157: a wildcard watch step tells
        // c2 first; a named watch of c2 from a callback runs later.
        let both = vec![
            at(1_000, request(1, CDS, &["c2"], "", "", true)),
            at(16_000, dne("c2")),
            at(
                17_000,
                step("watch CDS c2 from the next callback of RDS r1"),
            ),
            at(20_000, step("watch CDS *")),
            at(20_000, dne("c2")),
            at(25_000, dne("c2")),
        ];
        assert_eq!(check(&test_scenario(), &both), None);
    }

    #[test]
    fn fifteen_seconds_after_the_request_or_with_a_response_passes() {
        let dne = || heard("c1", WatcherNotification::DoesNotExist);
        let timer = vec![
            at(1_000, request(1, CDS, &["c1"], "", "", true)),
            at(16_000, dne()),
        ];
        assert_eq!(check(&test_scenario(), &timer), None);
        let deleted = vec![
            at(1_000, request(1, CDS, &["c1"], "", "", true)),
            at(2_000, response(1, CDS, "2", "n2")),
            at(2_000, dne()),
        ];
        assert_eq!(check(&test_scenario(), &deleted), None);
        // The timer ran from before the request reached the server.
        let early = vec![
            at(3_000, request(1, CDS, &["c1"], "", "", true)),
            at(16_000, dne()),
        ];
        let v = check(&test_scenario(), &early).expect("a timer not from the request");
        assert!(v.message.contains("arrived 13s before"), "{v:?}");
    }

    #[test]
    fn a_new_watcher_is_told_from_the_cache_and_a_hold_with_a_connection_up_is_not_read() {
        let dne = || heard("c1", WatcherNotification::DoesNotExist);
        // Told at the timer, then again to a new watcher from the cache.
        let cached = vec![
            at(1_000, request(1, CDS, &["c1"], "", "", true)),
            at(16_000, dne()),
            at(20_000, step("watch CDS c1")),
            at(20_000, dne()),
        ];
        assert_eq!(check(&test_scenario(), &cached), None);
        // Not at a watch: a violation.
        let mut late = cached.clone();
        late[2] = at(20_000, step("wait 1s"));
        assert!(check(&test_scenario(), &late).is_some());
        // A hold while a connection is up: the request sent then reached
        // the server only later (or never).
        let held = vec![
            opened(),
            hold(500),
            at(3_000, request(1, CDS, &["c1"], "", "", false)),
            at(16_000, dne()),
        ];
        assert_eq!(check(&test_scenario(), &held), None);
        // With no connection up, no request was on a connected stream.
        let connecting = vec![
            hold(500),
            at(3_000, request(1, CDS, &["c1"], "", "", true)),
            at(16_000, dne()),
        ];
        assert!(check(&test_scenario(), &connecting).is_some());
    }

    /// Seed 20261126, schedule 13671 (SotW and delta): the client's
    /// handshake and its stream's HEADERS got through before the hold, but
    /// the server recorded the stream's opening after the hold's line, in
    /// the same instant. The client was connected and started its timer
    /// on its request, whose DATA the hold kept from the server.
    #[test]
    fn a_stream_the_held_server_opens_shows_a_connection_was_up() {
        let held_then_opened = vec![
            hold(0),
            at(0, opened()),
            at(15_000, heard("c1", WatcherNotification::DoesNotExist)),
        ];
        assert_eq!(check(&test_scenario(), &held_then_opened), None);
        // Without the stream's opening, nothing was up: no request was on
        // a connected stream, and the timer is caught.
        let mut nothing_up = held_then_opened.clone();
        nothing_up.remove(1);
        let v = check(&test_scenario(), &nothing_up).expect("no request on a connected stream");
        assert!(v.message.contains("no request named it"), "{v:?}");
        // A stream opened after the hold was released proves nothing of
        // the hold.
        let mut after_release = nothing_up.clone();
        after_release.insert(1, at(0, release()));
        after_release.insert(2, at(0, opened()));
        assert!(check(&test_scenario(), &after_release).is_some());
    }
}
