//! `eventually-consistent`: once the client has settled on a server and
//! been quiet a while, what each watcher last heard of a resource is what
//! that server last said of it: its value, or, for a delta removal, that
//! it is gone (gRFC A27's cache: the client holds the server's copy; A71:
//! the copy of the server it uses, a fallback's data replacing the
//! primary's and back; the xDS protocol's delta reconnect: a version the
//! client claims is the server's copy it holds).
//!
//! What a server said is read from the wire, value by value: the bodies
//! of the responses the client ACKed. The server the client settled on is
//! the only one with a stream open at the end of the run; what it said
//! counts from that stream, and, in delta, from its earlier streams for a
//! resource that stream's first request claims at the version the server
//! sent (the server then sends it no more). The watchers' news are
//! compared by the value's one-line summary, as every client's timeline
//! writes it (the reference decoder's).
//!
//! What the wire cannot settle is not read:
//! - a response not answered (the client may have taken it, its stream
//!   ending before the ACK), NACKed (the client keeps what it keeps of
//!   it, gRFC A46) or lost (`drop_responses`); a resource with a TTL,
//!   without a body, with a resource error, or that the reference decoder
//!   rejects (a client that took it summarises it its own way);
//! - a resource the server's store changed since it last sent it, or any
//!   after the server restarted (what it holds is not on the wire);
//! - a SotW LDS/CDS response leaving a resource out (a deletion, which
//!   gRFC A53/A88 let the client keep), and a delta removal under A88 or
//!   from a server with `ignore_resource_deletion`;
//! - what was said before the resource was last watched again (the client
//!   may have forgotten it), or within the last 5 s of the run (a client
//!   on real time tells its watchers after it ACKs);
//! - runs that stopped early, with no one server settled on, other
//!   XdsClients or authorities (`one_client`), and types a watch from a
//!   callback watches;
//! - resources only a wildcard watch watches: that its watchers hear of
//!   every resource of the type is `wildcard-hears-every-resource`'s rule.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use envoy_types::pb::google::protobuf::Any;
use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::{RecordedResponse, ServerEvent};
use xds_fake_server::fault::Fault;
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, WatchStep, Watches, held};
use crate::scenario::Scenario;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "eventually-consistent",
    rule: "once the client has settled on a server and been quiet, every watcher last heard \
           what that server last said of the resource",
    held_to: held::with_watches,
    check,
};

/// How long before the end of the run the server's word must have been
/// answered: the client tells its watchers after it ACKs (at once on
/// virtual time; a process client's events travel after it).
const QUIET: Duration = Duration::from_secs(5);

/// The wildcard watch's name.
const WILDCARD: &str = "*";

/// gRFC A53's server feature.
const IGNORE_RESOURCE_DELETION: &str = "ignore_resource_deletion";

/// What a server last said of a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Said {
    /// This value (its summary).
    Value(String),
    /// It is gone (a delta removal).
    Gone,
    /// Nothing the wire settles.
    Unknown,
}

#[derive(Clone, Debug)]
struct Word<'a> {
    said: Said,
    stream: u64,
    /// Delta: the resource's version.
    version: Option<&'a str>,
    /// The lines of the response and of its ACK.
    sent: usize,
    acked: usize,
    acked_at: Duration,
}

/// What the watchers of a resource last heard of its value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Heard<'a> {
    Value(&'a str),
    Gone,
}

type Key<'a> = (ResourceType, &'a str);

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    super::one_client(scenario)?;
    if !super::played_through(scenario, events) {
        return None;
    }
    let a88 = scenario.client.profile.as_deref() == Some("a88");
    let keeps_deletions = |server: &str| {
        a88 || scenario
            .servers
            .iter()
            .find(|s| s.name == server)
            .is_some_and(|s| {
                s.server_features
                    .iter()
                    .any(|f| f == IGNORE_RESOURCE_DELETION)
            })
    };
    let mut watches = Watches::default();
    // Since when each resource (by name) and each type (by wildcard) has
    // been watched without a break.
    let mut since: HashMap<Key<'_>, usize> = HashMap::new();
    let mut from_callback: HashSet<ResourceType> = HashSet::new();
    let mut heard: HashMap<Key<'_>, Heard<'_>> = HashMap::new();
    // server -> resource -> its last word.
    let mut words: HashMap<&str, HashMap<Key<'_>, Word<'_>>> = HashMap::new();
    // (server, stream, nonce) -> the response and its line.
    let mut pending: HashMap<(&str, u64, &str), (usize, &RecordedResponse)> = HashMap::new();
    let mut open: HashSet<(&str, u64)> = HashSet::new();
    // (server, stream, type) -> the claims of its first delta request.
    let mut claims: HashMap<(&str, u64, &str), &BTreeMap<String, String>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Step(text) => {
                if let Some((t, _)) = WatchInCallback::described(text) {
                    from_callback.insert(t);
                }
                if let Some(WatchStep::Started(watched)) = watches.read(text) {
                    since.entry(watched).or_insert(index);
                }
                // A resource or type no longer watched starts again.
                since.retain(|key, _| watches.watched(*key));
            }
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) => {
                let key = (*resource_type, name.as_str());
                match notification {
                    WatcherNotification::Changed { summary } => {
                        heard.insert(key, Heard::Value(summary));
                    }
                    WatcherNotification::DoesNotExist | WatcherNotification::ResourceError(_) => {
                        heard.insert(key, Heard::Gone);
                    }
                    WatcherNotification::AmbientError(_)
                    | WatcherNotification::AmbientErrorCleared => {}
                }
            }
            EventKind::Server(server_event) => {
                let Some(server) = event.source.server() else {
                    continue;
                };
                let of_server = words.entry(server).or_default();
                match &**server_event {
                    ServerEvent::StreamOpened { stream, .. } => {
                        open.insert((server, *stream));
                    }
                    ServerEvent::StreamClosed { stream, .. } => {
                        open.remove(&(server, *stream));
                    }
                    ServerEvent::ResponseSent { stream, response } => {
                        // Until the client answers, it may have taken it
                        // (a stream may end before its ACK goes out),
                        // whatever the server said before: seed 20261126,
                        // schedule 8860, a scripted response at the
                        // version the server's own copy has.
                        blur_response(of_server, response);
                        pending.insert((server, *stream, &response.nonce), (index, response));
                    }
                    ServerEvent::ResponseDropped { response, .. } => {
                        blur_response(of_server, response);
                    }
                    ServerEvent::ResourcesChanged {
                        type_url,
                        updated,
                        removed,
                        ..
                    } => {
                        if let Some(t) = ResourceType::from_type_url(type_url) {
                            for name in updated.iter().chain(removed) {
                                blur(of_server, (t, name));
                            }
                        }
                    }
                    ServerEvent::FaultApplied {
                        fault: Fault::Restart(_),
                    } => {
                        for word in of_server.values_mut() {
                            word.said = Said::Unknown;
                        }
                    }
                    ServerEvent::RequestReceived { stream, request } => {
                        let type_url = request.type_url.as_str();
                        if let Some(delta) = &request.delta {
                            claims
                                .entry((server, *stream, type_url))
                                .or_insert(&delta.initial_resource_versions);
                        }
                        if request.response_nonce.is_empty() {
                            continue;
                        }
                        let Some((sent, response)) =
                            pending.remove(&(server, *stream, request.response_nonce.as_str()))
                        else {
                            continue;
                        };
                        if request.error_detail.is_some() {
                            blur_response(of_server, response);
                        } else {
                            let answer = Answer {
                                stream: *stream,
                                sent,
                                acked: index,
                                acked_at: event.at,
                                gone: if keeps_deletions(server) {
                                    Said::Unknown
                                } else {
                                    Said::Gone
                                },
                            };
                            accept(of_server, response, &answer);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let end = events.last()?.at;
    // The one server with a stream open, and its newest stream.
    let mut serving = open.iter();
    let &(server, first) = serving.next()?;
    let mut stream = first;
    for &(other, id) in serving {
        if other != server {
            return None;
        }
        stream = stream.max(id);
    }
    let mut judged: Vec<(&Key<'_>, &Word<'_>)> = words
        .get(server)?
        .iter()
        // Resources watched by name: that a wildcard watcher hears of
        // every resource of its type at all is `wildcard-hears-every-resource`'s
        // rule (grpc-js, whose wildcard watchers hear nothing, breaks that
        // one: seed 7, schedule 4).
        .filter(|((t, name), _)| {
            watches.watched((*t, name)) && *name != WILDCARD && !from_callback.contains(t)
        })
        .collect();
    judged.sort_by_key(|(_, word)| word.acked);
    for (key, word) in judged {
        let (t, name) = *key;
        if word.said == Said::Unknown || end.saturating_sub(word.acked_at) < QUIET {
            continue;
        }
        let watched_since = [since.get(key), since.get(&(t, WILDCARD))]
            .into_iter()
            .flatten()
            .min();
        if watched_since.is_none_or(|since| *since > word.sent) {
            continue;
        }
        let on_this_stream = word.stream == stream;
        let claimed = || {
            claims
                .get(&(server, stream, t.type_url()))
                .and_then(|claims| claims.get(name))
                .is_some_and(|claimed| Some(claimed.as_str()) == word.version)
        };
        if !on_this_stream && !claimed() {
            continue;
        }
        let last = heard.get(key);
        let agrees = match (&word.said, last) {
            (Said::Value(value), Some(Heard::Value(summary))) => value == summary,
            // Gone, and its watchers never heard a value: nothing held
            // (a wildcard watcher is not told of a removal of a name it
            // never heard of: seed 20261126, schedule 3148).
            (Said::Gone, Some(Heard::Gone) | None) => true,
            _ => false,
        };
        if agrees {
            continue;
        }
        let said = match &word.said {
            Said::Value(value) => format!("the value {value}"),
            Said::Gone => "that it is gone".to_string(),
            Said::Unknown => unreachable!("skipped above"),
        };
        let last = match last {
            Some(Heard::Value(summary)) => format!("the value {summary}"),
            Some(Heard::Gone) => "that it is gone".to_string(),
            None => "nothing".to_string(),
        };
        let via = if on_this_stream {
            format!("on stream {stream}, the one open at the end")
        } else {
            format!(
                "on stream {}; stream {stream}, the one open at the end, claims that version",
                word.stream
            )
        };
        return Some(Violation {
            event: word.acked,
            message: format!(
                "{t} {name}: {server} last said {said} (#{}, ACKed #{}) {via}, and {:.1}s later \
                 the run ends with its watchers' last news of it {last}",
                word.sent + 1,
                word.acked + 1,
                end.saturating_sub(word.acked_at).as_secs_f64()
            ),
        });
    }
    None
}

/// How the client answered a response with an ACK.
struct Answer {
    stream: u64,
    sent: usize,
    acked: usize,
    acked_at: Duration,
    /// What a delta removal says: gone, or nothing settled where the
    /// client may keep a deleted resource.
    gone: Said,
}

/// The client ACKed `response`: what it says of each resource is the
/// server's last word on it.
fn accept<'a>(
    of_server: &mut HashMap<Key<'a>, Word<'a>>,
    response: &'a RecordedResponse,
    answer: &Answer,
) {
    let Some(t) = ResourceType::from_type_url(&response.type_url) else {
        return;
    };
    let word = |said: Said, version: Option<&'a str>| Word {
        said,
        stream: answer.stream,
        version,
        sent: answer.sent,
        acked: answer.acked,
        acked_at: answer.acked_at,
    };
    for (index, name) in response.resource_names.iter().enumerate() {
        let body = response.bodies.get(index).and_then(Option::as_ref);
        let (said, version) = match &response.delta {
            None => (body.map_or(Said::Unknown, |b| summary(t, None, b)), None),
            Some(delta) => match delta.resources.get(index) {
                Some(resource) if resource.ttl.is_none() => (
                    body.map_or(Said::Unknown, |b| summary(t, Some(name), b)),
                    Some(resource.version.as_str()),
                ),
                _ => (Said::Unknown, None),
            },
        };
        of_server.insert((t, name), word(said, version));
    }
    if let Some(delta) = &response.delta {
        for name in &delta.removed_resources {
            of_server.insert((t, name), word(answer.gone.clone(), None));
        }
    } else if matches!(t, ResourceType::Listener | ResourceType::Cluster) {
        // A SotW LDS/CDS response is the whole set: one left out is
        // deleted, which the client may keep.
        let sent: HashSet<&str> = response.resource_names.iter().map(String::as_str).collect();
        for ((of_type, name), word) in of_server.iter_mut() {
            if *of_type == t && !sent.contains(name) {
                word.said = Said::Unknown;
            }
        }
    }
    for error in &response.resource_errors {
        match &error.name {
            Some(name) => blur(of_server, (t, name)),
            None => {
                for ((of_type, _), word) in of_server.iter_mut() {
                    if *of_type == t {
                        word.said = Said::Unknown;
                    }
                }
            }
        }
    }
}

/// The value `body` is, as every client's timeline summarises it, if the
/// reference decoder accepts it.
fn summary(t: ResourceType, name: Option<&str>, body: &Any) -> Said {
    let summary = match name {
        // A delta resource's name names it.
        Some(name) => xds_client_under_test::summary::of_resource(t, name, body),
        None => xds_client_under_test::summary::of_entry(t, body),
    };
    summary.map_or(Said::Unknown, Said::Value)
}

/// Nothing the wire settles of `key` until the server sends it again.
fn blur<'a>(of_server: &mut HashMap<Key<'a>, Word<'a>>, key: Key<'a>) {
    if let Some(word) = of_server.get_mut(&key) {
        word.said = Said::Unknown;
    }
}

/// What a response on its way, NACKed or lost leaves unknown: the names
/// it carries, and for a SotW LDS/CDS response every name of its type
/// (the client deletes what one leaves out even when it NACKs it, as
/// C-core does: seed 16, schedule 496, a response NACKed for a duplicate
/// name deleted the Cluster it did not carry).
fn blur_response<'a>(of_server: &mut HashMap<Key<'a>, Word<'a>>, response: &'a RecordedResponse) {
    let Some(t) = ResourceType::from_type_url(&response.type_url) else {
        return;
    };
    if response.delta.is_none() && matches!(t, ResourceType::Listener | ResourceType::Cluster) {
        for ((of_type, _), word) in of_server.iter_mut() {
            if *of_type == t {
                word.said = Said::Unknown;
            }
        }
    }
    let removed = response.delta.iter().flat_map(|d| &d.removed_resources);
    for name in response.resource_names.iter().chain(removed) {
        blur(of_server, (t, name));
    }
}

#[cfg(test)]
mod tests {
    use xds_client_under_test::WatcherNotification;
    use xds_fake_server::event::{
        RecordedDeltaRequest, RecordedDeltaResource, RecordedDeltaResponse, RecordedRequest,
        RecordedResponse, ServerEvent,
    };
    use xds_fake_server::fault::Restart;
    use xds_vocabulary::{AdsProtocol, RequestKind};

    use super::*;
    use crate::invariant::test_events::{at, heard, server, test_scenario};
    use crate::scenario::load_str;
    use crate::timeline::Source;

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    /// Cluster c1 as the harness builds it from `spec`, and its summary.
    fn cluster(spec: &str) -> (Any, String) {
        let scenario = load_str(
            "c.yaml",
            &format!(
                "description: d\nservers:\n  primary:\n    resources:\n    - cluster: {spec}\n\
                 steps:\n  - watch: {{ type: CDS, name: c1 }}\n"
            ),
        )
        .expect("loads");
        let entry = scenario.servers[0].resources[0].entry.clone();
        let summary =
            xds_client_under_test::summary::of_entry(ResourceType::Cluster, &entry).expect("valid");
        (entry, summary)
    }

    fn from(server_name: &str, ms: u64, event: ServerEvent) -> TimelineEvent {
        at(ms, Source::Server(server_name.into()), server(event))
    }

    fn opened(server_name: &str, stream: u64) -> TimelineEvent {
        from(
            server_name,
            0,
            ServerEvent::StreamOpened {
                stream,
                connection: None,
                protocol: AdsProtocol::Sotw,
                after_close: None,
            },
        )
    }

    fn sent(server_name: &str, stream: u64, ms: u64, nonce: &str, body: &Any) -> TimelineEvent {
        from(
            server_name,
            ms,
            ServerEvent::ResponseSent {
                stream,
                response: RecordedResponse {
                    type_url: CDS.into(),
                    version_info: "1".into(),
                    nonce: nonce.into(),
                    resource_names: vec!["c1".into()],
                    encoded_len: 0,
                    delta: None,
                    resource_errors: Vec::new(),
                    bodies: vec![Some(body.clone())],
                },
            },
        )
    }

    fn answered(server_name: &str, stream: u64, ms: u64, nonce: &str, ack: bool) -> TimelineEvent {
        from(
            server_name,
            ms,
            ServerEvent::RequestReceived {
                stream,
                request: RecordedRequest {
                    type_url: CDS.into(),
                    resource_names: vec!["c1".into()],
                    version_info: "1".into(),
                    response_nonce: nonce.into(),
                    error_detail: (!ack).then(|| (3, "bad".into())),
                    node: None,
                    kind: if ack {
                        RequestKind::Ack
                    } else {
                        RequestKind::Nack
                    },
                    delta: None,
                },
            },
        )
    }

    fn told(ms: u64, summary: &str) -> TimelineEvent {
        let mut event = heard(
            "c1",
            WatcherNotification::Changed {
                summary: summary.into(),
            },
        );
        event.at = Duration::from_millis(ms);
        event
    }

    fn watch() -> TimelineEvent {
        at(0, Source::Step, EventKind::Step("watch CDS c1".into()))
    }

    fn end(ms: u64) -> TimelineEvent {
        at(ms, Source::Step, EventKind::Barrier)
    }

    /// One server and `steps` (the run played through once the last
    /// one's line is there).
    fn scenario_of(steps: &str) -> Scenario {
        load_str(
            "s.yaml",
            &format!("description: d\nservers:\n  primary: {{}}\nsteps:\n{steps}"),
        )
        .expect("loads")
    }

    fn one_server() -> Scenario {
        scenario_of("  - watch: { type: CDS, name: c1 }\n")
    }

    #[test]
    fn a_watcher_left_with_a_value_the_server_no_longer_says_is_caught() {
        let (v1, s1) = cluster("{ name: c1 }");
        let (v2, s2) = cluster("{ name: c1, lb_policy: RING_HASH }");
        assert_ne!(s1, s2);
        let mut events = vec![
            watch(),
            opened("primary", 1),
            sent("primary", 1, 0, "1", &v1),
            answered("primary", 1, 0, "1", true),
            told(0, &s1),
            sent("primary", 1, 1_000, "2", &v2),
            answered("primary", 1, 1_000, "2", true),
            told(1_000, &s2),
            end(40_000),
        ];
        assert_eq!(check(&one_server(), &events), None);
        // The second value ACKed, its watchers never told.
        events.remove(7);
        let v = check(&one_server(), &events).expect("left with the first value");
        assert_eq!(v.event, 6);
        assert!(
            v.message.contains(&format!("last said the value {s2}")),
            "{v:?}"
        );
        assert!(
            v.message
                .contains(&format!("last news of it the value {s1}")),
            "{v:?}"
        );
        // Within 5 s of the end: not settled.
        let mut early = events.clone();
        early.last_mut().expect("end").at = Duration::from_millis(3_000);
        assert_eq!(check(&one_server(), &early), None);
        // NACKed: what the client kept of it is its own.
        let mut nacked = events.clone();
        nacked[5] = answered("primary", 1, 1_000, "2", false);
        assert_eq!(check(&one_server(), &nacked), None);
    }

    #[test]
    fn what_the_wire_cannot_settle_is_not_read() {
        let (v1, s1) = cluster("{ name: c1 }");
        let (v2, _) = cluster("{ name: c1, lb_policy: RING_HASH }");
        let base = vec![
            watch(),
            opened("primary", 1),
            sent("primary", 1, 0, "1", &v1),
            answered("primary", 1, 0, "1", true),
            told(0, &s1),
            sent("primary", 1, 1_000, "2", &v2),
            answered("primary", 1, 1_000, "2", true),
            end(40_000),
        ];
        assert!(check(&one_server(), &base).is_some());
        // The store changed since: what it holds is not on the wire.
        let mut changed = base.clone();
        changed.insert(
            7,
            from(
                "primary",
                2_000,
                ServerEvent::ResourcesChanged {
                    type_url: CDS.into(),
                    version: "3".into(),
                    updated: vec!["c1".into()],
                    removed: Vec::new(),
                },
            ),
        );
        assert_eq!(check(&one_server(), &changed), None);
        // A NACKed CDS response that leaves c1 out: the client may have
        // deleted it all the same (seed 16, schedule 496).
        let mut left_out = base.clone();
        let mut other = sent("primary", 1, 2_000, "3", &v1);
        if let EventKind::Server(event) = &mut other.kind
            && let ServerEvent::ResponseSent { response, .. } = &mut **event
        {
            response.resource_names = vec!["c2".into()];
        }
        left_out.insert(7, other);
        left_out.insert(8, answered("primary", 1, 2_000, "3", false));
        assert_eq!(check(&one_server(), &left_out), None);
        // The server restarted.
        let mut restarted = base.clone();
        restarted.insert(
            7,
            from(
                "primary",
                2_000,
                ServerEvent::FaultApplied {
                    fault: Fault::Restart(Restart {
                        keep_resources: true,
                    }),
                },
            ),
        );
        assert_eq!(check(&one_server(), &restarted), None);
        // Said on a stream closed since, and the one open said nothing.
        let mut moved = base.clone();
        moved.insert(
            7,
            from(
                "primary",
                2_000,
                ServerEvent::StreamClosed {
                    stream: 1,
                    code: tonic::Code::Unavailable,
                    message: String::new(),
                    by_client: false,
                    kds: None,
                },
            ),
        );
        moved.insert(8, opened("primary", 2));
        assert_eq!(check(&one_server(), &moved), None);
        // Two servers with streams open: not settled on one.
        let mut two = base.clone();
        two.insert(7, opened("fallback", 1));
        assert_eq!(check(&test_scenario(), &two), None);
        // The watch cancelled: nothing owed.
        let mut cancelled = base.clone();
        cancelled.insert(
            7,
            at(
                2_000,
                Source::Step,
                EventKind::Step("cancel watch CDS c1".into()),
            ),
        );
        let cancels = scenario_of(
            "  - watch: { type: CDS, name: c1 }\n  - cancel_watch: { type: CDS, name: c1 }\n",
        );
        assert_eq!(check(&cancels, &cancelled), None);
        // Another step there: read.
        cancelled[7] = at(2_000, Source::Step, EventKind::Step("wait 1s".into()));
        let waits = scenario_of("  - watch: { type: CDS, name: c1 }\n  - wait: 1s\n");
        assert!(check(&waits, &cancelled).is_some());
    }

    fn delta_sent(stream: u64, ms: u64, nonce: &str, body: &Any) -> TimelineEvent {
        from(
            "primary",
            ms,
            ServerEvent::ResponseSent {
                stream,
                response: RecordedResponse {
                    type_url: CDS.into(),
                    version_info: "1".into(),
                    nonce: nonce.into(),
                    resource_names: vec!["c1".into()],
                    encoded_len: 0,
                    delta: Some(RecordedDeltaResponse {
                        resources: vec![RecordedDeltaResource {
                            version: "1".into(),
                            ttl: None,
                            body: true,
                        }],
                        removed_resources: Vec::new(),
                    }),
                    resource_errors: Vec::new(),
                    bodies: vec![Some(body.clone())],
                },
            },
        )
    }

    fn delta_request(stream: u64, ms: u64, nonce: &str, claims: &[&str]) -> TimelineEvent {
        from(
            "primary",
            ms,
            ServerEvent::RequestReceived {
                stream,
                request: RecordedRequest {
                    type_url: CDS.into(),
                    resource_names: Vec::new(),
                    version_info: String::new(),
                    response_nonce: nonce.into(),
                    error_detail: None,
                    node: None,
                    kind: RequestKind::Initial,
                    delta: Some(RecordedDeltaRequest {
                        subscribe: vec!["c1".into()],
                        unsubscribe: Vec::new(),
                        initial_resource_versions: claims
                            .iter()
                            .map(|n| (n.to_string(), "1".to_string()))
                            .collect(),
                        subscription: Default::default(),
                    }),
                },
            },
        )
    }

    /// Delta: a new stream claims c1 at the version the server sent on
    /// the old one, which then sends nothing: the old stream's word holds.
    #[test]
    fn a_delta_claim_carries_the_servers_word_to_its_next_stream() {
        let (v1, s1) = cluster("{ name: c1 }");
        let (v2, s2) = cluster("{ name: c1, lb_policy: RING_HASH }");
        let closed = from(
            "primary",
            2_000,
            ServerEvent::StreamClosed {
                stream: 1,
                code: tonic::Code::Unavailable,
                message: String::new(),
                by_client: false,
                kds: None,
            },
        );
        let events = vec![
            watch(),
            opened("primary", 1),
            delta_request(1, 0, "", &[]),
            delta_sent(1, 0, "1", &v1),
            delta_request(1, 0, "1", &[]),
            told(0, &s2),
            closed.clone(),
            opened("primary", 2),
            delta_request(2, 2_000, "", &["c1"]),
            end(40_000),
        ];
        let v = check(&one_server(), &events).expect("holds another value");
        assert!(v.message.contains("claims that version"), "{v:?}");
        let mut agreeing = events.clone();
        agreeing[5] = told(0, &s1);
        assert_eq!(check(&one_server(), &agreeing), None);
        // Seed 20261126, schedule 8860: the server sent another value at
        // that version, and the stream ended before the client answered:
        // the client may hold it.
        let mut unanswered = agreeing.clone();
        unanswered.insert(5, delta_sent(1, 1_000, "2", &v2));
        unanswered[6] = told(1_000, &s2);
        assert_eq!(check(&one_server(), &unanswered), None);
    }

    /// Seed 20261126, schedule 3148: a wildcard watch, and a removal of a
    /// name the client never had: nothing held, nothing owed.
    #[test]
    fn a_removal_of_what_the_watchers_never_heard_of_is_kept() {
        let removal = from(
            "primary",
            100,
            ServerEvent::ResponseSent {
                stream: 1,
                response: RecordedResponse {
                    type_url: CDS.into(),
                    version_info: String::new(),
                    nonce: "1".into(),
                    resource_names: Vec::new(),
                    encoded_len: 0,
                    delta: Some(RecordedDeltaResponse {
                        resources: Vec::new(),
                        removed_resources: vec!["c2".into()],
                    }),
                    resource_errors: Vec::new(),
                    bodies: Vec::new(),
                },
            },
        );
        let wildcard = scenario_of(
            "  - watch: { type: CDS, name: \"*\" }\n  - watch: { type: CDS, name: c2 }\n",
        );
        let mut events = vec![
            at(0, Source::Step, EventKind::Step("watch CDS *".into())),
            at(0, Source::Step, EventKind::Step("watch CDS c2".into())),
            opened("primary", 1),
            removal,
            delta_request(1, 100, "1", &[]),
            end(40_000),
        ];
        assert_eq!(check(&wildcard, &events), None);
        // Its watchers held a value: it is owed.
        let mut held = heard(
            "c2",
            WatcherNotification::Changed {
                summary: "v".into(),
            },
        );
        held.at = Duration::from_millis(50);
        events.insert(3, held);
        let v = check(&wildcard, &events).expect("still held");
        assert!(v.message.contains("said that it is gone"), "{v:?}");
    }
}
