//! `cached-never-times-out`: a resource the client holds is not declared
//! missing by a timer. gRFC A57: on a new stream the does-not-exist timer
//! is started again "only if the resource is not already cached" — the
//! rule exists because clients used to declare cached resources missing
//! when their xDS server restarted. So a watcher of a resource the client
//! holds hears does-not-exist only after a response may have said it is
//! gone: a SotW LDS or CDS response sent after the last request naming
//! it *on the same stream* (the state
//! of the world: what the client cannot find in it, absent or in an entry
//! it cannot even name, is gone; a timer fires only when no response came
//! after the request; and a response answers its own stream's requests: a
//! held connection delivers one late, after the client asked again on a
//! new stream, and the client still reads it), or a delta response naming
//! it in `removed_resources` since its watchers first heard it (when a
//! response reaches the client is the transport's: a held connection
//! delivers it later). A resource a delta server sent with a TTL may
//! expire: not read. Nor is one heard in
//! an instant the client answered (ACK or NACK) a response of its type:
//! it came with that response, whatever the response holds (a resource
//! the client could not even name is no proof the name is still there).
//!
//! "Holds": its watchers heard a value, and since then neither
//! does-not-exist nor a resource error, nor was its last watch cancelled
//! (the cache may drop an unwatched entry, as C-core's does; a watch from
//! a callback that may never have run does not count: seed 20261131,
//! SotW schedule 1243).
//!
//! Read on virtual time only, as the timer invariant is.

use std::collections::{HashMap, HashSet};
use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, WatchStep, Watches, held};
use crate::scenario::Scenario;
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
    // Instants at which the client answered (ACKed or NACKed) a response
    // of a type: it handled one then, whatever the response said (one it
    // could not read whole may drop what it no longer finds).
    let answered: HashSet<(ResourceType, std::time::Duration)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Server(s) => match &**s {
                ServerEvent::RequestReceived { request, .. }
                    if !request.response_nonce.is_empty() =>
                {
                    Some((ResourceType::from_type_url(&request.type_url)?, e.at))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    let mut watches = Watches::default();
    // (type, name) -> the event at which its watchers first heard a value
    // of it, since they last heard it gone (a new watcher's value from the
    // cache is no news).
    let mut holds: HashMap<(ResourceType, &str), usize> = HashMap::new();
    // What the client holds that a response since it came said is gone
    // (or sent with a TTL, which may run out); a value heard after that
    // response (a re-add, or a new watcher's cached copy, which the
    // response may reach the client after) does not take it back.
    let mut said_gone: HashSet<(ResourceType, &str)> = HashSet::new();
    // SotW LDS and CDS, per stream: the last request naming a resource
    // (or all of its type), and the last response of the type.
    let mut asked: HashMap<(u64, ResourceType, &str), usize> = HashMap::new();
    let mut asked_all: HashMap<(u64, ResourceType), usize> = HashMap::new();
    let mut answered_by: HashMap<(u64, ResourceType), usize> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Step(text) => {
                let Some(WatchStep::Cancelled {
                    watched,
                    maybe_last: true,
                    ..
                }) = watches.read(text)
                else {
                    continue;
                };
                // Unwatched now: the cache may drop it (and, for the
                // wildcard, every name no watch names).
                if watched.1 == WILDCARD {
                    holds.retain(|(t, name), _| *t != watched.0 || watches.watched((*t, *name)));
                } else if !watches.wildcard(watched.0) {
                    holds.remove(&watched);
                }
                said_gone.retain(|key| holds.contains_key(key));
            }
            EventKind::Server(server_event) => match &**server_event {
                // A SotW LDS or CDS request naming it (or all of its type)
                // asks again: only a response after it may say it is gone.
                ServerEvent::RequestReceived { stream, request } if request.delta.is_none() => {
                    if let Some(t) = ResourceType::from_type_url(&request.type_url)
                        .filter(|t| matches!(t, ResourceType::Listener | ResourceType::Cluster))
                    {
                        let all = request.resource_names.is_empty()
                            || request.resource_names.iter().any(|n| n == WILDCARD);
                        if all {
                            asked_all.insert((*stream, t), index);
                        }
                        for name in &request.resource_names {
                            asked.insert((*stream, t, name.as_str()), index);
                        }
                    }
                }
                ServerEvent::ResponseSent { stream, response } => {
                    let Some(t) = ResourceType::from_type_url(&response.type_url) else {
                        continue;
                    };
                    let held = holds.keys().filter(|(held_type, _)| *held_type == t);
                    match &response.delta {
                        // The state of the world: what the client cannot
                        // find in it (absent, or in an entry it cannot even
                        // name) is gone, so a response after the request
                        // may say so, whatever the timeline can tell of it.
                        None if matches!(t, ResourceType::Listener | ResourceType::Cluster) => {
                            answered_by.insert((*stream, t), index);
                        }
                        None => {}
                        Some(delta) => {
                            let mortal = response
                                .resource_names
                                .iter()
                                .zip(&delta.resources)
                                .filter(|(_, r)| r.ttl.is_some())
                                .map(|(n, _)| n);
                            let gone: Vec<&String> =
                                delta.removed_resources.iter().chain(mortal).collect();
                            said_gone.extend(
                                held.filter(|(_, name)| gone.iter().any(|n| n == name))
                                    .copied(),
                            );
                        }
                    }
                }
                _ => {}
            },
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) => {
                let key = (*resource_type, name.as_str());
                match notification {
                    WatcherNotification::Changed { .. } => {
                        holds.entry(key).or_insert(index);
                    }
                    WatcherNotification::ResourceError(_) => {
                        holds.remove(&key);
                        said_gone.remove(&key);
                    }
                    WatcherNotification::DoesNotExist => {
                        // A response on some stream after that stream's
                        // last request naming it.
                        let responded = answered_by.iter().any(|((stream, t), response)| {
                            let last_asked = asked
                                .get(&(*stream, *t, name.as_str()))
                                .copied()
                                .max(asked_all.get(&(*stream, *t)).copied());
                            t == resource_type && last_asked.is_none_or(|a| *response > a)
                        });
                        let excused = said_gone.remove(&key)
                            || responded
                            || answered.contains(&(*resource_type, event.at));
                        if let Some(since) = holds.remove(&key)
                            && !excused
                        {
                            return Some(Violation {
                                event: index,
                                message: format!(
                                    "the watchers of {resource_type} {name} hear it does not \
                                     exist, though the client holds it (heard at #{}), and no \
                                     response since said it is gone: a timer",
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
    use std::time::Duration;

    use super::*;
    use crate::invariant::test_events::{heard, request, response, step, test_scenario};

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
    const LDS: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

    /// `heard`, of a Listener.
    fn heard_lds(name: &str, notification: WatcherNotification) -> TimelineEvent {
        let mut event = heard(name, notification);
        if let EventKind::Client(ObservedEvent::Watcher { resource_type, .. }) = &mut event.kind {
            *resource_type = ResourceType::Listener;
        }
        event
    }

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
            // ACKed on its stream (the ACK names c1 again).
            when(0, request(1, CDS, &["c1"], "1", "1", false)),
            // The stream ends; the new one's request gets no answer, and
            // 15 s later the client declares c1 missing: a timer.
            when(5_000, request(2, CDS, &["c1"], "1", "", true)),
            when(20_000, heard("c1", WatcherNotification::DoesNotExist)),
        ];
        let v = check(&test_scenario(), &events).expect("a timer on a cached resource");
        assert_eq!(v.event, 5);
        assert!(v.message.contains("(heard at #3)"), "{v:?}");
        // A SotW CDS response after that request (without c1, or with an
        // entry the client cannot name: the timeline cannot tell), however
        // late it reaches the client (a held connection): no timer fired.
        events.insert(
            5,
            when(6_000, with_names(response(2, CDS, "2", "2"), &["c1"])),
        );
        assert_eq!(check(&test_scenario(), &events), None);
        // One before the request on its stream is no answer to it.
        let mut before = events.clone();
        before[5] = when(100, response(2, CDS, "2", "2"));
        before.swap(4, 5);
        assert_eq!(check(&test_scenario(), &before).map(|v| v.event), Some(6));
        // An answer in that instant: the client handled a response then.
        let mut answered = before.clone();
        answered.insert(6, when(20_000, request(2, CDS, &["c1"], "1", "2", false)));
        assert_eq!(check(&test_scenario(), &answered), None);
    }

    #[test]
    fn a_response_held_on_its_stream_answers_that_stream_after_a_new_one_asked() {
        // Chaos seed 20261124, schedule 545 (SotW): the deletion is sent
        // on stream 1 while its connection is held; at the release the
        // client opens stream 2 and asks again, then reads the held
        // response (it still reads its first stream): does-not-exist, by
        // the response, not a timer.
        let events = vec![
            step("watch LDS svc"),
            when(0, request(1, LDS, &["svc"], "", "", true)),
            when(0, response(1, LDS, "1", "1")),
            when(0, heard_lds("svc", changed())),
            when(0, request(1, LDS, &["svc"], "1", "1", false)),
            when(100, response(1, LDS, "2", "2")),
            when(2_110, request(2, LDS, &["svc"], "", "", true)),
            when(2_110, heard_lds("svc", WatcherNotification::DoesNotExist)),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // The same without the response on stream 1: a timer.
        let mut timer = events.clone();
        timer.remove(5);
        assert!(check(&test_scenario(), &timer).is_some());
        // A response on stream 1 before its own last request: no answer.
        let mut stale = events.clone();
        stale.swap(4, 5);
        assert!(check(&test_scenario(), &stale).is_some());
    }

    #[test]
    fn a_delta_removal_or_a_ttl_excuses_it_and_nothing_else_of_delta_does() {
        let delta = |removed: &[&str], ttl: bool| {
            let mut event = with_names(response(1, CDS, "2", "2"), if ttl { &["c1"] } else { &[] });
            if let EventKind::Server(e) = &mut event.kind
                && let ServerEvent::ResponseSent { response, .. } = &mut **e
            {
                response.delta = Some(xds_fake_server::event::RecordedDeltaResponse {
                    resources: response
                        .resource_names
                        .iter()
                        .map(|_| xds_fake_server::event::RecordedDeltaResource {
                            ttl: ttl.then(|| std::time::Duration::from_secs(1)),
                            ..Default::default()
                        })
                        .collect(),
                    removed_resources: removed.iter().map(|n| n.to_string()).collect(),
                });
            }
            event
        };
        let run = |middle: TimelineEvent| {
            vec![
                step("watch CDS c1"),
                heard("c1", changed()),
                middle,
                heard("c1", WatcherNotification::DoesNotExist),
            ]
        };
        assert_eq!(check(&test_scenario(), &run(delta(&["c1"], false))), None);
        assert_eq!(check(&test_scenario(), &run(delta(&[], true))), None);
        // A delta response without c1 (only changes travel) says nothing.
        assert!(check(&test_scenario(), &run(delta(&["c2"], false))).is_some());
    }

    #[test]
    fn a_new_watchers_cached_copy_does_not_take_back_a_deletion_on_its_way() {
        // The deletion is sent (its connection held), a second watch hears
        // the cached value, then the deletion reaches the client.
        let events = vec![
            step("watch CDS c1"),
            heard("c1", changed()),
            response(1, CDS, "2", "2"),
            step("watch CDS c1"),
            heard("c1", changed()),
            heard("c1", WatcherNotification::DoesNotExist),
            heard("c1", WatcherNotification::DoesNotExist),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Without the deletion, the first does-not-exist is a timer's.
        let mut timer = events.clone();
        timer.remove(2);
        assert_eq!(check(&test_scenario(), &timer).map(|v| v.event), Some(4));
    }

    #[test]
    fn responses_sent_before_the_value_was_heard_may_still_say_it_is_gone() {
        // Two responses after the request, the second with an entry the
        // client cannot name, reach the client after its value was heard.
        let events = vec![
            step("watch CDS c1"),
            request(1, CDS, &["c1"], "", "", true),
            with_names(response(1, CDS, "1", "1"), &["c1"]),
            with_names(response(1, CDS, "2", "2"), &["c1"]),
            heard("c1", changed()),
            heard("c1", WatcherNotification::DoesNotExist),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Read and ACKed on their stream, then asked again on a new one:
        // the new stream wants a response after its request.
        let mut asked_again = events.clone();
        asked_again[5] = when(20_000, heard("c1", WatcherNotification::DoesNotExist));
        asked_again.insert(5, request(1, CDS, &["c1"], "2", "2", false));
        asked_again.insert(6, when(5_000, request(2, CDS, &["c1"], "2", "", true)));
        assert_eq!(
            check(&test_scenario(), &asked_again).map(|v| v.event),
            Some(7)
        );
        // Not yet ACKed (a held connection delivers them late): the second
        // may still say it is gone, whatever the new stream asked.
        let mut held = events.clone();
        held.insert(5, request(2, CDS, &["c1"], "1", "", true));
        assert_eq!(check(&test_scenario(), &held), None);
        // The legacy wildcard asks for every Cluster.
        let mut wildcard = events.clone();
        wildcard[5] = when(20_000, heard("c1", WatcherNotification::DoesNotExist));
        wildcard.insert(5, when(5_000, request(1, CDS, &[], "2", "2", false)));
        assert!(check(&test_scenario(), &wildcard).is_some());
    }

    /// `event`, a response, sending `names`.
    fn with_names(mut event: TimelineEvent, names: &[&str]) -> TimelineEvent {
        if let EventKind::Server(e) = &mut event.kind
            && let ServerEvent::ResponseSent { response, .. } = &mut **e
        {
            response.resource_names = names.iter().map(|n| n.to_string()).collect();
        }
        event
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
        // A second watch from a callback may never start (the cancel may
        // take the watcher whose callback was armed): maybe not held
        // (seed 20261131, SotW schedule 1243).
        let mut callback = unwatched.clone();
        callback.insert(2, step("watch CDS c1 from the next callback of CDS c1"));
        assert_eq!(check(&test_scenario(), &callback), None);
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
