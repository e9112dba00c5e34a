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
//! nonce (the normaliser's `answer_groups` counts the same way); a delta
//! request carries a nonce only to ACK or NACK.

use std::collections::HashMap;

use xds_fake_server::event::ServerEvent;

use super::{Invariant, Violation};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "answered-once",
    rule: "each response is ACKed or NACKed at most once on its stream; a SotW ACK carries \
           the response's version, a NACK the version the stream last accepted",
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
    for (index, event) in events.iter().enumerate() {
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
                let nonce = request.response_nonce.as_str();
                let Some(response) = sent.get_mut(&(server, *stream, nonce)) else {
                    continue;
                };
                if let Some(first) = response.answered {
                    if unchanged {
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
    use crate::chaos::invariant::test_events::test_scenario;
    use crate::chaos::invariant::test_events::{request, response};

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
