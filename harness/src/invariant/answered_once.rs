//! `answered-once`: a response is answered (ACKed or NACKed, its nonce
//! echoed) at most once on its stream, and a SotW ACK carries the version
//! of the response it accepts, a NACK the version the stream last
//! accepted: what its last ACK said, or before any, what the stream's
//! first request of the type claimed (versions survive a reconnect, and
//! a client may hold several XdsClients, one per target, each with its
//! own versions: the wire tells their streams apart, not their servers).
//!
//! At most once, not exactly: a client with a request already on its way
//! answers only the latest of the responses that came meanwhile (C-core
//! and the reference client queue one request per type). What is not an
//! answer: a SotW request that changes the subscription re-sends the last
//! nonce (the normaliser's `answer_groups` counts the same way), and so
//! does one that restates it after watch or cancel steps that a request
//! on its way coalesced; a delta request carries a nonce only to ACK or
//! NACK.
//!
//! The restatement: a change to the subscription while a request of the
//! type is on its way waits, and the request that carries it is built
//! from the subscription when it goes. Changes that net to nothing (a
//! watch cancelled and watched again, or a watch and its cancel) restate
//! the last request, nonce and all. C-core sends exactly this duplicate:
//! `AdsCall::SendMessageLocked` only marks the type in
//! `buffered_requests_` while a send is pending, and `OnRequestSent`
//! sends it built from the current state, with nothing compared to the
//! last request sent (seed 20261126, schedule 31949: `watch c2`, `cancel
//! c2`, `watch c2` in one instant). The spec allows it: a server owes no
//! response to a request with the current nonce and nothing new. Each
//! watch or cancel step of the type may cause one request of it per
//! stream, so an unchanged request repeating an answered nonce is excused
//! while the steps of its type since the first answer outnumber the
//! requests of the type its stream sent since.

use std::collections::HashMap;

use xds_fake_server::event::ServerEvent;
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "answered-once",
    rule: "each response is ACKed or NACKed at most once on its stream; a SotW ACK carries \
           the response's version, a NACK the version the stream last accepted",
    held_to: held::by_all,
    check,
};

struct Sent<'a> {
    version: &'a str,
    answered: Option<usize>,
}

fn check(_scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    // (server, stream, nonce) -> the response.
    let mut sent: HashMap<(&str, u64, &str), Sent<'_>> = HashMap::new();
    // (server, stream, type) -> the SotW names last asked for, sorted.
    let mut asked: HashMap<(&str, u64, &str), Vec<&str>> = HashMap::new();
    // (server, stream, type) -> the version the stream holds: its first
    // request's, then each ACK's.
    let mut accepted: HashMap<(&str, u64, &str), &str> = HashMap::new();
    // type -> the events of the watch and cancel steps of it.
    let mut changes: HashMap<ResourceType, Vec<usize>> = HashMap::new();
    // (server, stream, type) -> the events of its SotW requests.
    let mut requests: HashMap<(&str, u64, &str), Vec<usize>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        if let EventKind::Step(text) = &event.kind {
            let changed = WatchInCallback::described(text)
                .or_else(|| Watch::described(text))
                .or_else(|| CancelWatch::described(text));
            if let Some((t, _)) = changed {
                changes.entry(t).or_default().push(index);
            }
            continue;
        }
        let (EventKind::Server(server_event), Some(server)) = (&event.kind, event.source.server())
        else {
            continue;
        };
        match &**server_event {
            ServerEvent::ResponseSent { stream, response } => {
                sent.insert(
                    (server, *stream, &response.nonce),
                    Sent {
                        version: &response.version_info,
                        answered: None,
                    },
                );
            }
            ServerEvent::RequestReceived { stream, request } => {
                let type_url = request.type_url.as_str();
                accepted
                    .entry((server, *stream, type_url))
                    .or_insert(request.version_info.as_str());
                let unchanged = match &request.delta {
                    Some(_) => true,
                    None => {
                        let mut names: Vec<&str> =
                            request.resource_names.iter().map(String::as_str).collect();
                        names.sort_unstable();
                        names.dedup();
                        asked
                            .insert((server, *stream, type_url), names.clone())
                            .is_some_and(|before| before == names)
                    }
                };
                // The requests of the type this stream sent before this
                // one.
                let sent_before = if request.delta.is_none() {
                    let all = requests.entry((server, *stream, type_url)).or_default();
                    all.push(index);
                    &all[..all.len() - 1]
                } else {
                    &[]
                };
                let nonce = request.response_nonce.as_str();
                let Some(response) = sent.get_mut(&(server, *stream, nonce)) else {
                    continue;
                };
                if let Some(first) = response.answered {
                    // A change to the subscription while a request is on
                    // its way waits, and the request that carries it is
                    // built when it goes (C-core's buffered_requests_):
                    // changes that net to nothing (a cancel and a
                    // re-watch, or a watch and its cancel) restate the
                    // last request. Each watch or cancel of the type
                    // since the first answer may cause one request of it
                    // per stream.
                    let restated = request.delta.is_none() && {
                        let changed = ResourceType::from_type_url(type_url)
                            .and_then(|t| changes.get(&t))
                            .map_or(0, |c| c.iter().filter(|i| **i > first).count());
                        let sent_since = sent_before.iter().filter(|i| **i > first).count();
                        changed > sent_since
                    };
                    if unchanged && !restated {
                        let what = if request.delta.is_some() {
                            "a delta request carries a nonce only to ACK or NACK"
                        } else {
                            "it changes nothing the first did not say"
                        };
                        return Some(Violation {
                            event: index,
                            message: format!(
                                "{server} stream {stream}: the response with nonce \"{nonce}\" \
                                 is answered again (first at #{}): {what}",
                                first + 1
                            ),
                        });
                    }
                    continue;
                }
                response.answered = Some(index);
                if request.delta.is_some() {
                    continue;
                }
                let last = accepted
                    .get(&(server, *stream, type_url))
                    .copied()
                    .unwrap_or("");
                if request.error_detail.is_none() {
                    if request.version_info != response.version {
                        return Some(Violation {
                            event: index,
                            message: format!(
                                "{server} stream {stream}: the ACK of nonce \"{nonce}\" carries \
                                 version \"{}\", the response's is \"{}\"",
                                request.version_info, response.version
                            ),
                        });
                    }
                    accepted.insert((server, *stream, type_url), response.version);
                } else if request.version_info != last {
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "{server} stream {stream}: the NACK of nonce \"{nonce}\" carries \
                             version \"{}\", the version the stream last accepted is \"{last}\"",
                            request.version_info
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
    use super::*;
    use crate::invariant::test_events::test_scenario;
    use crate::invariant::test_events::{request, response, step};

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    fn set_nack(event: &mut TimelineEvent, version: &str) {
        let EventKind::Server(e) = &mut event.kind else {
            unreachable!()
        };
        let ServerEvent::RequestReceived { request, .. } = &mut **e else {
            unreachable!()
        };
        request.error_detail = Some((3, "bad".into()));
        request.version_info = version.into();
    }

    #[test]
    fn one_answer_per_response_passes_and_a_second_plain_one_is_caught() {
        let mut events = vec![
            request(1, CDS, &["c1"], "", "", true),
            response(1, CDS, "1", "n1"),
            request(1, CDS, &["c1"], "1", "n1", false),
            // A subscription change re-sends the nonce: not an answer.
            request(1, CDS, &["c1", "c2"], "1", "n1", false),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        events.push(request(1, CDS, &["c1", "c2"], "1", "n1", false));
        let v = check(&test_scenario(), &events).expect("a second answer");
        assert_eq!(v.event, 4);
        assert!(v.message.contains("answered again (first at #3)"), "{v:?}");
    }

    /// Seed 20261126, schedule 31949: `watch c2`, `cancel c2` and `watch
    /// c2` in one instant. The first watch's request goes out at once; the
    /// cancel and the re-watch wait for it, and the one request that
    /// carries them restates it (C-core sends the same).
    #[test]
    fn a_request_restated_by_a_coalesced_cancel_and_rewatch_is_not_an_answer() {
        let mut events = vec![
            request(1, CDS, &["c1"], "", "", true),
            response(1, CDS, "1", "n1"),
            // The first answer.
            request(1, CDS, &["c1"], "1", "n1", false),
            step("watch CDS c2"),
            step("cancel watch CDS c2"),
            step("watch CDS c2"),
            // The change: not an answer.
            request(1, CDS, &["c1", "c2"], "1", "n1", false),
            // The coalesced cancel and re-watch: it restates it.
            request(1, CDS, &["c1", "c2"], "1", "n1", false),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // One change only: the repeat is a second answer.
        events.drain(4..6);
        let v = check(&test_scenario(), &events).expect("a second answer");
        assert_eq!(v.event, 5);
        assert!(v.message.contains("answered again (first at #3)"), "{v:?}");
        // Changes of another type excuse nothing.
        events.insert(4, step("cancel watch LDS svc"));
        events.insert(5, step("watch LDS svc"));
        assert!(check(&test_scenario(), &events).is_some());
    }

    #[test]
    fn an_ack_with_another_version_and_a_nack_with_the_rejected_one_are_caught() {
        let ack = vec![
            request(1, CDS, &["c1"], "", "", true),
            response(1, CDS, "2", "n1"),
            request(1, CDS, &["c1"], "1", "n1", false),
        ];
        let v = check(&test_scenario(), &ack).expect("a wrong ACK version");
        assert!(v.message.contains("carries version \"1\""), "{v:?}");

        let mut nack = vec![
            request(1, CDS, &["c1"], "", "", true),
            response(1, CDS, "1", "n1"),
            request(1, CDS, &["c1"], "1", "n1", false),
            response(1, CDS, "2", "n2"),
            request(1, CDS, &["c1"], "2", "n2", false),
        ];
        set_nack(&mut nack[4], "2");
        let v = check(&test_scenario(), &nack).expect("a NACK of the rejected version");
        assert!(v.message.contains("last accepted is \"1\""), "{v:?}");
        set_nack(&mut nack[4], "1");
        assert_eq!(check(&test_scenario(), &nack), None);
    }
}
