//! `wildcard-hears-every-resource`: a wildcard watcher of a type hears of
//! every resource of it the client holds. At the end of a run, every
//! resource the client holds from the last SotW response of the type it
//! ACKed (all of it under a wildcard subscription, gRFC A27's state of the
//! world; the names its stream still subscribes otherwise) has reached the
//! newest wildcard watcher still watching: a `changed` after that watch
//! started (from the cache, if nothing new came), and no word since that
//! it is gone (does-not-exist, a resource error).
//!
//! At the end only: schedules end with a long wait, so whatever the client
//! was told has reached its watchers by then; in between, a watcher may be
//! told later than the ACK is sent. So not read on a run that a step
//! stopped early (a FAIL: a scripted response with no stream to go on):
//! it never reached its last wait, and it may have ended in the very
//! instant of a wildcard watch the client had not handled yet (seed
//! 20261126, schedules 11221, 13444, 23931 and 29584; played through, the
//! new watcher hears the cache at once).
//!
//! Only when the last such response was ACKed (its version echoed): one
//! the client NACKed may have been applied in part (gRFC A46), one whose
//! stream ended before the ACK may or may not have been applied. A
//! wildcard watch started from a callback starts when the callback runs,
//! which the timeline does not show: its type is not checked. Delta
//! wildcard subscriptions, whose state is the sum of their responses, are
//! not read yet.

use std::collections::HashMap;

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::{RequestKind, ResourceType};

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, Source, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "wildcard-hears-every-resource",
    rule: "by the end of a run, a wildcard watcher has heard of every resource in the last \
           response of its type the client accepted",
    held_to: held::with_watches,
    check,
};

const WILDCARD: &str = "*";

/// What happened on the wire for a type, in order, as this check reads
/// it.
enum Wire<'e> {
    Sent {
        stream: (&'e str, u64),
        nonce: &'e str,
        version: &'e str,
        names: &'e [String],
        /// What the stream subscribed when it was sent: the client
        /// ignores the rest (xds_protocol.rst: "The client will silently
        /// ignore any supplied resources that were not explicitly
        /// requested").
        asked: Subscribed<'e>,
    },
    Ack {
        stream: (&'e str, u64),
        nonce: &'e str,
        version: &'e str,
    },
    /// A NACK (what was applied of a NACKed response is not known, gRFC
    /// A46), or the last watch of a name or of the wildcard cancelled
    /// (the client may drop what it held).
    Unknown,
}

/// What a stream subscribes for a type after a request.
#[derive(Clone, Copy, Default)]
struct Subscribed<'e> {
    names: &'e [String],
    /// Its first request of the type named nothing (and answered no
    /// response): the wildcard of xDS's first form, as long as its
    /// requests name nothing (xds_protocol.rst; an empty list after names
    /// unsubscribes all).
    legacy: bool,
}

impl Subscribed<'_> {
    fn wildcard(&self) -> bool {
        self.names.iter().any(|n| n == WILDCARD) || (self.legacy && self.names.is_empty())
    }

    fn covers(&self, name: &str) -> bool {
        self.wildcard() || self.names.iter().any(|n| n == name)
    }
}

/// The last SotW response of a type the client ACKed: where it came, what
/// it carried, and the event of the ACK.
struct Accepted<'e> {
    stream: (&'e str, u64),
    names: &'e [String],
    /// What the stream subscribed when it came.
    asked: Subscribed<'e>,
    ack: usize,
}

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    // A watcher holding a read has not been told what is read after it.
    if scenario.steps.iter().any(|s| s.step.key() == "hold_reads") {
        return None;
    }
    // "By the end" means after the schedule's last wait: a run stopped
    // before it is not settled.
    if !super::played_through(scenario, events) {
        return None;
    }
    // A channel (or a server) has an XdsClient of its own (gRFC A71: one
    // per target), whose streams the servers cannot tell from the
    // watches'; channels never subscribe the wildcard, so with channels
    // only streams that do are read.
    let channels = scenario
        .steps
        .iter()
        .any(|s| matches!(s.step.key(), "dial" | "rpc" | "serve"));
    // type -> (wildcard watches active, event of the newest one's start)
    let mut wildcard: HashMap<ResourceType, (usize, usize)> = HashMap::new();
    // Types with a wildcard watch started from a callback.
    let mut from_callback: Vec<ResourceType> = Vec::new();
    // (server, stream, type) -> what its last request subscribed.
    let mut subscribed: HashMap<(&str, u64, ResourceType), Subscribed<'_>> = HashMap::new();
    // (type, name) -> named watches active.
    let mut named: HashMap<(ResourceType, &str), usize> = HashMap::new();
    let mut wire: Vec<(usize, ResourceType, Wire<'_>)> = Vec::new();
    for (index, event) in events.iter().enumerate() {
        match (&event.source, &event.kind) {
            (_, EventKind::Step(text)) => {
                if let Some((t, WILDCARD)) = WatchInCallback::described(text) {
                    from_callback.push(t);
                } else if let Some((t, WILDCARD)) = Watch::described(text) {
                    let entry = wildcard.entry(t).or_default();
                    *entry = (entry.0 + 1, index);
                } else if let Some((t, WILDCARD)) = CancelWatch::described(text) {
                    let entry = wildcard.entry(t).or_default();
                    entry.0 = entry.0.saturating_sub(1);
                    if entry.0 == 0 {
                        wire.push((index, t, Wire::Unknown));
                    }
                } else if let Some(key) =
                    WatchInCallback::described(text).or_else(|| Watch::described(text))
                {
                    *named.entry(key).or_default() += 1;
                } else if let Some(key) = CancelWatch::described(text) {
                    let active = named.entry(key).or_default();
                    *active = active.saturating_sub(1);
                    // Unwatched, the name may be dropped (unsubscribed
                    // by a request, or by the stream's end).
                    if *active == 0 {
                        wire.push((index, key.0, Wire::Unknown));
                    }
                }
            }
            (Source::Server(server), EventKind::Server(server_event)) => match &**server_event {
                ServerEvent::RequestReceived { stream, request } if request.delta.is_none() => {
                    let Some(t) = ResourceType::from_type_url(&request.type_url) else {
                        continue;
                    };
                    // Only a first request asking for something: one
                    // that answers a response nobody asked for (it echoes
                    // a nonce) subscribes nothing (seed 20261126,
                    // schedule 6473).
                    let legacy = subscribed.get(&(server, *stream, t)).map_or(
                        request.resource_names.is_empty() && request.response_nonce.is_empty(),
                        |s| s.legacy && s.names.is_empty(),
                    );
                    subscribed.insert(
                        (server, *stream, t),
                        Subscribed {
                            names: &request.resource_names,
                            legacy,
                        },
                    );
                    match request.kind {
                        RequestKind::Ack => wire.push((
                            index,
                            t,
                            Wire::Ack {
                                stream: (server, *stream),
                                nonce: &request.response_nonce,
                                version: &request.version_info,
                            },
                        )),
                        RequestKind::Nack => wire.push((index, t, Wire::Unknown)),
                        _ => {}
                    }
                }
                ServerEvent::ResponseSent { stream, response } if response.delta.is_none() => {
                    if let Some(t) = ResourceType::from_type_url(&response.type_url) {
                        let asked = subscribed
                            .get(&(server, *stream, t))
                            .copied()
                            .unwrap_or_default();
                        wire.push((
                            index,
                            t,
                            Wire::Sent {
                                stream: (server, *stream),
                                nonce: &response.nonce,
                                version: &response.version_info,
                                names: &response.resource_names,
                                asked,
                            },
                        ));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    for (t, (active, started)) in &wildcard {
        if *active == 0 || from_callback.contains(t) {
            continue;
        }
        let now = |stream: (&str, u64)| {
            subscribed
                .get(&(stream.0, stream.1, *t))
                .copied()
                .unwrap_or_default()
        };
        let read = |stream: (&str, u64)| !channels || now(stream).wildcard();
        // The last response read, and whether it was ACKed (its version
        // echoed: a request after a NACK echoes its nonce too, with the
        // last version accepted).
        let mut last: Option<Accepted<'_>> = None;
        let mut pending = None;
        for (index, _, step) in wire.iter().filter(|(_, w, _)| w == t) {
            match step {
                Wire::Sent {
                    stream,
                    nonce,
                    version,
                    names,
                    asked,
                } if read(*stream) => {
                    last = None;
                    pending = Some((*stream, *nonce, *version, *names, *asked));
                }
                Wire::Ack {
                    stream,
                    nonce,
                    version,
                } => {
                    if let Some((s, n, v, names, asked)) = pending
                        && s == *stream
                        && n == *nonce
                        && v == *version
                    {
                        last = Some(Accepted {
                            stream: s,
                            names,
                            asked,
                            ack: *index,
                        });
                    }
                }
                Wire::Unknown => {
                    last = None;
                    pending = None;
                }
                _ => {}
            }
        }
        let Some(last) = last else {
            continue;
        };
        // What it still holds of that response: all of it under a wildcard
        // subscription, else what its stream still subscribes. The
        // wildcard is the default authority's: xdstp names are not its.
        let names_now = now(last.stream);
        let held = last
            .names
            .iter()
            .filter(|n| !n.starts_with("xdstp:") && last.asked.covers(n) && names_now.covers(n));
        for name in held {
            // What the watchers of `name` heard since the newest wildcard
            // watch started, last first.
            let heard = events[*started..].iter().rev().find_map(|e| match &e.kind {
                EventKind::Client(ObservedEvent::Watcher {
                    resource_type,
                    name: n,
                    notification,
                }) if resource_type == t && n == name => Some(notification),
                _ => None,
            });
            let holds = matches!(
                heard,
                Some(
                    WatcherNotification::Changed { .. }
                        | WatcherNotification::AmbientError(_)
                        | WatcherNotification::AmbientErrorCleared
                )
            );
            if !holds {
                let told = heard.map_or("nothing".to_string(), |n| format!("{n:?}"));
                return Some(Violation {
                    event: last.ack,
                    message: format!(
                        "the wildcard watcher of {t} (watching since #{}) never heard that {name}, \
                         in the response the client ACKed here, exists (it was told {told})",
                        started + 1
                    ),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use xds_client_under_test::WatcherNotification;

    use super::*;
    use crate::invariant::test_events::{heard, request, step};
    use crate::scenario::load_str;
    use xds_fake_server::event::RecordedResponse;

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    /// A schedule that ends, as every chaos schedule does, with a long
    /// wait; its third step can stop a run (no stream to send on).
    fn ends_with_a_wait() -> Scenario {
        load_str(
            "wildcard.yaml",
            "description: a schedule ending with a wait\n\
             servers:\n  primary: {}\n  fallback: {}\n\
             steps:\n  - watch: { type: CDS, name: c1 }\n  \
             - watch: { type: CDS, name: \"*\" }\n  \
             - send_response:\n      \
             { server: fallback, type: CDS, resources: [{ cluster: { name: c1 } }] }\n  \
             - wait: 31s\n",
        )
        .expect("the scenario loads")
    }

    /// `check` on a run of [`ends_with_a_wait`] that played through:
    /// `events`, then the line of its last wait.
    fn played(events: &[TimelineEvent]) -> Option<Violation> {
        let mut events = events.to_vec();
        events.push(step("wait 31s"));
        check(&ends_with_a_wait(), &events)
    }

    fn response(names: &[&str]) -> TimelineEvent {
        TimelineEvent {
            at: std::time::Duration::ZERO,
            source: Source::Server("main".into()),
            kind: EventKind::Server(Box::new(ServerEvent::ResponseSent {
                stream: 1,
                response: RecordedResponse {
                    type_url: CDS.into(),
                    version_info: "1".into(),
                    nonce: "n1".into(),
                    resource_names: names.iter().map(|n| n.to_string()).collect(),
                    encoded_len: 0,
                    delta: None,
                    resource_errors: Vec::new(),
                    bodies: Vec::new(),
                },
            })),
        }
    }

    fn changed(name: &str) -> TimelineEvent {
        heard(
            name,
            WatcherNotification::Changed {
                summary: String::new(),
            },
        )
    }

    #[test]
    fn every_accepted_resource_reaches_the_wildcard_watcher() {
        let run = |watcher_heard: Vec<TimelineEvent>| {
            let mut events = vec![
                step("watch CDS *"),
                request(1, CDS, &[], "", "", true),
                response(&["c1", "c2"]),
                request(1, CDS, &[], "1", "n1", false),
            ];
            events.extend(watcher_heard);
            played(&events)
        };
        assert_eq!(run(vec![changed("c1"), changed("c2")]), None);
        let v = run(vec![changed("c1")]).expect("c2 never heard");
        assert_eq!(v.event, 3);
        assert!(v.message.contains("never heard that c2"), "{v:?}");
        let v = run(vec![
            changed("c1"),
            changed("c2"),
            heard("c2", WatcherNotification::DoesNotExist),
        ])
        .expect("told c2 is gone");
        assert!(v.message.contains("DoesNotExist"), "{v:?}");
        // A request after a NACK echoes the nonce with the old version: no
        // ACK of it.
        let after_nack = vec![
            step("watch CDS *"),
            request(1, CDS, &[], "", "", true),
            response(&["c1"]),
            request(1, CDS, &["*", "c2"], "", "n1", false),
        ];
        assert_eq!(played(&after_nack), None);
        // A response after the ACKed one, never ACKed: what is held is
        // not known.
        let unacked = vec![
            step("watch CDS *"),
            request(1, CDS, &[], "", "", true),
            response(&["c1"]),
            request(1, CDS, &[], "1", "n1", false),
            response(&["c1", "c2"]),
        ];
        assert_eq!(played(&unacked), None);
        // A cancelled wildcard watch is owed nothing.
        let mut events = vec![
            step("watch CDS *"),
            request(1, CDS, &[], "", "", true),
            response(&["c1"]),
            request(1, CDS, &[], "1", "n1", false),
            step("cancel watch CDS *"),
        ];
        assert_eq!(played(&events), None);
        // A named subscription's response is held too, while the stream
        // still names it: a wildcard watch started later is told of it.
        events[1] = request(1, CDS, &["c1"], "", "", true);
        events[3] = request(1, CDS, &["c1"], "1", "n1", false);
        events.pop();
        events.remove(0);
        events.push(step("watch CDS *"));
        let v = played(&events).expect("c1 held, never told");
        assert!(v.message.contains("never heard that c1"), "{v:?}");
        events.push(changed("c1"));
        assert_eq!(played(&events), None);
    }

    /// Seed 20261126, schedules 2982, 6473 and 2463: what the client was
    /// right to drop is not owed to a wildcard watcher.
    #[test]
    fn what_no_watch_asked_for_or_was_dropped_since_is_not_owed() {
        // A response nothing subscribed (no request of the type yet),
        // echoed by the wildcard's first request: the client ignored it.
        let unsolicited = vec![
            response(&["c1"]),
            step("watch CDS *"),
            request(1, CDS, &["*"], "1", "n1", true),
        ];
        assert_eq!(played(&unsolicited), None);
        // Held by name, its last watch cancelled (an empty list after
        // names unsubscribes everything), then a wildcard watch.
        let dropped = vec![
            step("watch CDS c1"),
            request(1, CDS, &["c1"], "", "", true),
            response(&["c1"]),
            request(1, CDS, &["c1"], "1", "n1", false),
            step("cancel watch CDS c1"),
            request(1, CDS, &[], "1", "n1", false),
            step("watch CDS *"),
            request(1, CDS, &["*"], "1", "n1", false),
        ];
        assert_eq!(played(&dropped), None);
        // Still watched by name: owed.
        let mut kept = dropped.clone();
        kept.drain(4..6);
        assert!(played(&kept).is_some());
        // The stream's first request of the type answered an unsolicited
        // response with no names: no wildcard, so the next response (the
        // server taking it for one) was ignored too.
        let mut second = response(&["c1"]);
        if let EventKind::Server(e) = &mut second.kind
            && let ServerEvent::ResponseSent { response, .. } = &mut **e
        {
            response.nonce = "n2".into();
        }
        let answered = vec![
            response(&["c1"]),
            request(1, CDS, &[], "1", "n1", true),
            second,
            request(1, CDS, &[], "1", "n2", false),
            step("watch CDS *"),
            request(1, CDS, &["*"], "1", "n2", false),
        ];
        assert_eq!(played(&answered), None);
    }

    /// Seed 20261126, schedules 11221, 13444, 23931 and 29584: the step
    /// after a new wildcard watch found no stream to send on and stopped
    /// the run in that instant, before the client had handled the watch
    /// (played through, the watcher hears the cache at once). What the
    /// wildcard watcher heard "by the end" is read only on a run that
    /// reached its last wait.
    #[test]
    fn a_run_stopped_before_its_last_wait_is_not_read() {
        let scenario = ends_with_a_wait();
        let last = scenario.steps.last().map(|s| s.step.describe());
        assert_eq!(last.as_deref(), Some("wait 31s"));
        let mut events = vec![
            step("watch CDS c1"),
            request(1, CDS, &["c1"], "", "", true),
            response(&["c1"]),
            request(1, CDS, &["c1"], "1", "n1", false),
            changed("c1"),
            step("watch CDS *"),
            // FAILed (no stream on the fallback): the run ends here.
            step("fallback: send CDS response"),
        ];
        assert_eq!(check(&scenario, &events), None);
        // Played through, the wildcard watcher is owed c1, and a client
        // that never tells it is still caught.
        events.push(step("wait 31s"));
        let v = check(&scenario, &events).expect("played through, c1 never told");
        assert_eq!(v.event, 3);
        assert!(v.message.contains("never heard that c1"), "{v:?}");
        events.push(changed("c1"));
        assert_eq!(check(&scenario, &events), None);
        // A line of the same text earlier in the script is not its last
        // step's: a run whose last line is a mid-run wait stopped before
        // the end.
        let twice = load_str(
            "twice.yaml",
            "description: a wait in mid-run and at the end\n\
             servers:\n  primary: {}\n\
             steps:\n  - watch: { type: CDS, name: c1 }\n  - wait: 31s\n  \
             - watch: { type: CDS, name: \"*\" }\n  - wait: 31s\n",
        )
        .expect("the scenario loads");
        let mid_run = vec![step("watch CDS c1"), step("wait 31s")];
        assert!(!crate::invariant::played_through(&twice, &mid_run));
        let mut whole = mid_run.clone();
        whole.extend([step("watch CDS *"), step("wait 31s")]);
        assert!(crate::invariant::played_through(&twice, &whole));
    }
}
