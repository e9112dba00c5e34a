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
//! told later than the ACK is sent. Only when the last such response was
//! ACKed (its version echoed): one the client NACKed may have been applied
//! in part (gRFC A46), one whose stream ended before the ACK may or may not
//! have been applied. A wildcard watch started from a callback starts when
//! the callback runs, which the timeline does not show: its type is not
//! checked. Delta wildcard subscriptions, whose state is the sum of their
//! responses, are not read yet.

use std::collections::HashMap;

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::{RequestKind, ResourceType};

use super::{Invariant, Violation};
use crate::scenario::Scenario;
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, Source, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "wildcard-hears-every-resource",
    rule: "by the end of a run, a wildcard watcher has heard of every resource in the last \
           response of its type the client accepted",
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
    },
    Ack {
        stream: (&'e str, u64),
        nonce: &'e str,
        version: &'e str,
    },
    /// A NACK (what was applied of a NACKed response is not known, gRFC
    /// A46), or the last wildcard watch cancelled (the client may drop
    /// what it held).
    Unknown,
}

/// The last SotW response of a type the client ACKed: where it came, what
/// it carried, and the event of the ACK.
struct Accepted<'e> {
    stream: (&'e str, u64),
    names: &'e [String],
    ack: usize,
}

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    // A watcher holding a read has not been told what is read after it.
    if scenario.steps.iter().any(|s| s.step.key() == "hold_reads") {
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
    // (server, stream, type) -> the names its last request subscribed.
    let mut subscribed: HashMap<(&str, u64, ResourceType), &[String]> = HashMap::new();
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
                }
            }
            (Source::Server(server), EventKind::Server(server_event)) => match &**server_event {
                ServerEvent::RequestReceived { stream, request } if request.delta.is_none() => {
                    let Some(t) = ResourceType::from_type_url(&request.type_url) else {
                        continue;
                    };
                    subscribed.insert((server, *stream, t), &request.resource_names);
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
                        wire.push((
                            index,
                            t,
                            Wire::Sent {
                                stream: (server, *stream),
                                nonce: &response.nonce,
                                version: &response.version_info,
                                names: &response.resource_names,
                            },
                        ));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    let is_wildcard = |names: &[String]| names.is_empty() || names.iter().any(|n| n == WILDCARD);
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
        let read = |stream: (&str, u64)| !channels || is_wildcard(now(stream));
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
                } if read(*stream) => {
                    last = None;
                    pending = Some((*stream, *nonce, *version, *names));
                }
                Wire::Ack {
                    stream,
                    nonce,
                    version,
                } => {
                    if let Some((s, n, v, names)) = pending
                        && s == *stream
                        && n == *nonce
                        && v == *version
                    {
                        last = Some(Accepted {
                            stream: s,
                            names,
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
        let all = is_wildcard(names_now);
        let held = last
            .names
            .iter()
            .filter(|n| !n.starts_with("xdstp:") && (all || names_now.contains(n)));
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
    use crate::chaos::invariant::test_events::{heard, request, step, test_scenario};
    use xds_fake_server::event::RecordedResponse;

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

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
            check(&test_scenario(), &events)
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
        assert_eq!(check(&test_scenario(), &after_nack), None);
        // A response after the ACKed one, never ACKed: what is held is
        // not known.
        let unacked = vec![
            step("watch CDS *"),
            request(1, CDS, &[], "", "", true),
            response(&["c1"]),
            request(1, CDS, &[], "1", "n1", false),
            response(&["c1", "c2"]),
        ];
        assert_eq!(check(&test_scenario(), &unacked), None);
        // A cancelled wildcard watch is owed nothing.
        let mut events = vec![
            step("watch CDS *"),
            request(1, CDS, &[], "", "", true),
            response(&["c1"]),
            request(1, CDS, &[], "1", "n1", false),
            step("cancel watch CDS *"),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // A named subscription's response is held too, while the stream
        // still names it: a wildcard watch started later is told of it.
        events[1] = request(1, CDS, &["c1"], "", "", true);
        events[3] = request(1, CDS, &["c1"], "1", "n1", false);
        events.pop();
        events.remove(0);
        events.push(step("watch CDS *"));
        let v = check(&test_scenario(), &events).expect("c1 held, never told");
        assert!(v.message.contains("never heard that c1"), "{v:?}");
        events.push(changed("c1"));
        assert_eq!(check(&test_scenario(), &events), None);
    }
}
