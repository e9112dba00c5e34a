//! `removed-names-gone`: a name a delta response removes
//! (`removed_resources`) is gone. Once the client has answered the
//! response (ACK or NACK: either way it read it, and a NACK rejects the
//! invalid resources, not the removals, gRFC A46), the watchers of a
//! removed name it held or still awaited have heard that it does not
//! exist, and no new delta stream to that server claims the name in
//! `initial_resource_versions` until the server sends it again.
//!
//! Why: in the incremental protocol a removal is the server saying the
//! resource is gone (envoy's xds_protocol.rst, "Incremental xDS":
//! `removed_resources` "have been removed from the server"), and a
//! removal of a name the client subscribed to but never received says it
//! does not exist (no timer needed). gRFC A53 makes a deletion of a
//! cached resource one for every type under delta ("if/when gRPC adds
//! support for the incremental xDS protocol variant, this behavior would
//! affect all resource types"), so unlike SotW, RDS and EDS deletions
//! count too. A client that forgot the resource does not hold it, so it
//! cannot claim it on reconnect (the server would then never resend it).
//!
//! What the watchers hear, by the deletion policy of the server that
//! removed the name (its `server_features`) and the client's profile:
//! - A53 (the default): does-not-exist; with `ignore_resource_deletion`
//!   a cached resource is kept and its watchers hear nothing of the
//!   removal (no does-not-exist), while one never received still does not
//!   exist.
//! - A88 (profile `a88`): the cached value is kept with an ambient
//!   NOT_FOUND, or dropped with a NOT_FOUND resource error under
//!   `fail_on_data_errors`; one never received hears a NOT_FOUND resource
//!   error.
//!
//! Only names the watchers' own events show the state of are held to it:
//! a name a watch step watches throughout (no watch or cancel of it, nor
//! of the type's `*`, between the response and its answer: a watch handled
//! after the removal would find nothing removed), with no watch of it from
//! a callback ever (it starts when the callback runs, which the timeline
//! does not show). A name whose watchers last heard it does not exist, or
//! a NACK's resource error with no value (nothing held, nothing awaited),
//! is owed nothing. A name the server sends again before the answer (in a
//! later response: the client reads the removal, then the new copy) is
//! held again, not removed; what its watchers hear from that line on may be
//! the new copy's news, not what they knew before the removal.
//!
//! A name the response also sends, or removes twice, is a malformed
//! removal: the client rejects it with the response (a NACK naming the
//! duplicate resource name, as for a name twice in a SotW response) and
//! it is not read (seed 11, schedules 5 and 361, delta).
//!
//! Not read where the script's watches are not the client's only ones
//! (`dial`, `rpc`, `serve`: their XdsClients have streams of their own,
//! whose removals the watch client never sees and whose claims are
//! theirs), nor with authorities, whose names take other servers. Only a
//! response answered with its own nonce is read (a client with a request
//! on its way answers only the latest of the responses that came
//! meanwhile), and only a removal from the server the client was on: a
//! client that fell back takes removals from the server it uses (gRFC
//! A71), so a run whose client falls back is read only until then.

use std::collections::{HashMap, HashSet};

use tonic::Code;
use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_fake_server::event::{RecordedResponse, ServerEvent};
use xds_vocabulary::{ClientEvent, ResourceType};

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "removed-names-gone",
    rule: "a name a delta response removes is gone: its watchers hear it does not exist (or, \
           where the deletion policy keeps it, nothing), and no new stream claims it",
    held_to: held::with_watches,
    check,
};

/// The wildcard watch's name.
const WILDCARD: &str = "*";

/// gRFC A53's server feature.
const IGNORE_RESOURCE_DELETION: &str = "ignore_resource_deletion";

/// gRFC A88's server feature.
const FAIL_ON_DATA_ERRORS: &str = "fail_on_data_errors";

/// What the watchers of a name last heard of it, as far as a removal
/// cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Heard {
    /// Nothing yet, or transient errors only: still awaited.
    Awaited,
    /// A value, not dropped since.
    Value,
    /// Gone: does-not-exist, or an error with no value (a NACK's, a
    /// server's): nothing awaited, nothing held.
    Gone,
}

/// What a removal must tell a name's watchers, if anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owed {
    /// Does-not-exist (A53).
    DoesNotExist,
    /// A NOT_FOUND resource error (A88: dropped or never received).
    NotFoundError,
    /// A NOT_FOUND ambient error (A88: kept).
    NotFoundAmbient,
    /// Nothing saying it is gone (A53 with `ignore_resource_deletion`).
    Kept,
}

impl Owed {
    fn what(self) -> &'static str {
        match self {
            Owed::DoesNotExist => "does-not-exist",
            Owed::NotFoundError => "a NOT_FOUND resource error",
            Owed::NotFoundAmbient => "a NOT_FOUND ambient error",
            Owed::Kept => "nothing",
        }
    }

    fn told_by(self, notification: &WatcherNotification) -> bool {
        match (self, notification) {
            (Owed::DoesNotExist, WatcherNotification::DoesNotExist) => true,
            (Owed::NotFoundError, WatcherNotification::ResourceError(e)) => {
                e.code == Code::NotFound
            }
            (Owed::NotFoundAmbient, WatcherNotification::AmbientError(e)) => {
                e.code == Code::NotFound
            }
            _ => false,
        }
    }
}

/// A response sent, not answered yet.
struct Sent<'a> {
    response: &'a RecordedResponse,
    /// The index of its line.
    index: usize,
    /// The watch epochs of its removed names when it was sent.
    epochs: Vec<u64>,
    /// What the watchers of its removed names had heard when it was sent.
    heard: HashMap<(ResourceType, &'a str), Heard>,
}

/// What the watchers know of a name after they hear `notification`.
fn after(state: Heard, notification: &WatcherNotification) -> Heard {
    match notification {
        WatcherNotification::Changed { .. } => Heard::Value,
        WatcherNotification::DoesNotExist => Heard::Gone,
        // A transient error leaves a resource awaited (gRFC A57).
        WatcherNotification::ResourceError(e) if e.code != Code::Unavailable => Heard::Gone,
        _ => state,
    }
}

/// News that a name is gone: does-not-exist or a NOT_FOUND (A88).
fn removal_like(notification: &WatcherNotification) -> bool {
    match notification {
        WatcherNotification::DoesNotExist => true,
        WatcherNotification::ResourceError(e) | WatcherNotification::AmbientError(e) => {
            e.code == Code::NotFound
        }
        _ => false,
    }
}

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    super::one_client(scenario)?;
    let a88 = scenario.client.profile.as_deref() == Some("a88");
    let features = |server: &str| {
        scenario
            .servers
            .iter()
            .find(|s| s.name == server)
            .map(|s| s.server_features.clone())
            .unwrap_or_default()
    };
    // (type, name) -> active watches (named) from the script.
    let mut watches: HashMap<(ResourceType, &str), usize> = HashMap::new();
    // (type, name) -> bumped at every watch or cancel of it or of `*`.
    let mut epochs: HashMap<(ResourceType, &str), u64> = HashMap::new();
    let mut type_epochs: HashMap<ResourceType, u64> = HashMap::new();
    // Names a watch from a callback ever watched.
    let mut from_callback: HashSet<(ResourceType, &str)> = HashSet::new();
    let mut heard: HashMap<(ResourceType, &str), Heard> = HashMap::new();
    // (server, stream, nonce) -> the delta response.
    let mut sent: HashMap<(&str, u64, &str), Sent<'_>> = HashMap::new();
    // (server, type) -> names removed, answered, not sent again since.
    let mut removed: HashMap<(&str, &str), HashMap<&str, usize>> = HashMap::new();
    // (server, stream, type) that had their first request.
    let mut started: HashSet<(&str, u64, &str)> = HashSet::new();
    // Whether the client has fallen back: removals are read until then.
    let mut fell_back = false;
    let epoch = |epochs: &HashMap<(ResourceType, &str), u64>,
                 type_epochs: &HashMap<ResourceType, u64>,
                 key: (ResourceType, &str)| {
        epochs.get(&key).copied().unwrap_or_default()
            + type_epochs.get(&key.0).copied().unwrap_or_default()
    };
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Step(text) => {
                let (key, delta) = if let Some(key) = WatchInCallback::described(text) {
                    from_callback.insert(key);
                    (key, 1)
                } else if let Some(key) = Watch::described(text) {
                    (key, 1)
                } else if let Some(key) = CancelWatch::described(text) {
                    (key, -1)
                } else {
                    continue;
                };
                if key.1 == WILDCARD {
                    *type_epochs.entry(key.0).or_default() += 1;
                    continue;
                }
                *epochs.entry(key).or_default() += 1;
                let active = watches.entry(key).or_default();
                if delta > 0 {
                    if *active == 0 {
                        // A first watch: its watcher has heard nothing.
                        heard.insert(key, Heard::Awaited);
                    }
                    *active += 1;
                } else {
                    *active = active.saturating_sub(1);
                }
            }
            EventKind::Client(ObservedEvent::Client(ClientEvent::FallbackStarted { .. })) => {
                fell_back = true;
            }
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) => {
                let key = (*resource_type, name.as_str());
                let state = heard.entry(key).or_insert(Heard::Awaited);
                *state = after(*state, notification);
            }
            EventKind::Server(server_event) => {
                let Some(server) = event.source.server() else {
                    continue;
                };
                match &**server_event {
                    ServerEvent::StreamOpened { .. } if server != primary(scenario) => {
                        // Another server's stream: the client may be on it.
                        fell_back = true;
                    }
                    ServerEvent::ResponseSent { stream, response } if response.delta.is_some() => {
                        let resource_type = ResourceType::from_type_url(&response.type_url);
                        let of_response = response.delta.iter().flat_map(|d| &d.removed_resources);
                        let mut heard_now = HashMap::new();
                        let mut epochs_now = Vec::new();
                        for name in of_response {
                            let Some(t) = resource_type else {
                                epochs_now.push(0);
                                continue;
                            };
                            let key = (t, name.as_str());
                            epochs_now.push(epoch(&epochs, &type_epochs, key));
                            if let Some(state) = heard.get(&key) {
                                heard_now.insert(key, *state);
                            }
                        }
                        // Sent again: it may be held again.
                        if let Some(names) = removed.get_mut(&(server, response.type_url.as_str()))
                        {
                            for name in &response.resource_names {
                                names.remove(name.as_str());
                            }
                        }
                        sent.insert(
                            (server, *stream, response.nonce.as_str()),
                            Sent {
                                response,
                                index,
                                epochs: epochs_now,
                                heard: heard_now,
                            },
                        );
                    }
                    ServerEvent::RequestReceived { stream, request } => {
                        let Some(delta) = &request.delta else {
                            continue;
                        };
                        let type_url = request.type_url.as_str();
                        if started.insert((server, *stream, type_url))
                            && let Some(names) = removed.get(&(server, type_url))
                        {
                            for claimed in delta.initial_resource_versions.keys() {
                                if let Some(at) = names.get(claimed.as_str()) {
                                    return Some(Violation {
                                        event: index,
                                        message: format!(
                                            "{server} stream {stream}, the first {} request \
                                             claims {claimed}, which the response at #{} \
                                             removed and the server has not sent since",
                                            short(type_url),
                                            at + 1
                                        ),
                                    });
                                }
                            }
                        }
                        if request.response_nonce.is_empty() {
                            continue;
                        }
                        let Some(answered) =
                            sent.remove(&(server, *stream, request.response_nonce.as_str()))
                        else {
                            continue;
                        };
                        let Some(delta) = &answered.response.delta else {
                            continue;
                        };
                        // A name the response both sends and removes, or
                        // removes twice, is a malformed removal, rejected
                        // (NACKed) with the response's duplicate names.
                        let malformed = |name: &str| {
                            answered.response.resource_names.iter().any(|n| n == name)
                                || delta
                                    .removed_resources
                                    .iter()
                                    .filter(|n| *n == name)
                                    .count()
                                    > 1
                        };
                        // Where the server sent a removed name again before
                        // the answer: the client, reading in order, took the
                        // removal and then the name again.
                        let resent = |name: &str| {
                            resent_at(events, server, type_url, name, answered.index + 1, index)
                        };
                        let of_server = removed.entry((server, type_url)).or_default();
                        for name in &delta.removed_resources {
                            if !malformed(name) && resent(name).is_none() {
                                of_server.insert(name, answered.index);
                            }
                        }
                        let Some(resource_type) = ResourceType::from_type_url(type_url) else {
                            continue;
                        };
                        if fell_back {
                            continue;
                        }
                        let server_features = features(server);
                        let has = |feature: &str| server_features.iter().any(|f| f == feature);
                        for (name, then) in delta.removed_resources.iter().zip(&answered.epochs) {
                            let key = (resource_type, name.as_str());
                            let watched = watches.get(&key).is_some_and(|n| *n > 0);
                            if !watched
                                || malformed(name)
                                || from_callback.contains(&key)
                                || epoch(&epochs, &type_epochs, key) != *then
                            {
                                continue;
                            }
                            // What the watchers heard, and the index of each line.
                            let (told_at, told): (Vec<usize>, Vec<&WatcherNotification>) = events
                                [answered.index + 1..index]
                                .iter()
                                .enumerate()
                                .filter_map(|(i, e)| match &e.kind {
                                    EventKind::Client(ObservedEvent::Watcher {
                                        resource_type: t,
                                        name: n,
                                        notification,
                                    }) if *t == resource_type && n == name => {
                                        Some((answered.index + 1 + i, notification))
                                    }
                                    _ => None,
                                })
                                .unzip();
                            // The server sent the name again before the
                            // answer: what the watchers heard from that line on
                            // may be the new copy's news (seed 20261126,
                            // schedule 26795, delta: a removal of a name gone
                            // already, then the name sent again, its `changed`
                            // before the answer to the removal).
                            let resent = resent(name);
                            let until_resent = resent.map_or(told.len(), |at| {
                                told_at.iter().take_while(|i| **i < at).count()
                            });
                            // What the watchers knew before the removal: what
                            // they knew when it was sent, and what they heard
                            // until the first news of a removal, or until the
                            // name was sent again.
                            let before_in = |told: &[&WatcherNotification]| {
                                let mut before =
                                    answered.heard.get(&key).copied().unwrap_or(Heard::Awaited);
                                for notification in told {
                                    if removal_like(notification) {
                                        break;
                                    }
                                    before = after(before, notification);
                                }
                                before
                            };
                            let before = before_in(&told[..until_resent]);
                            // The lines after the name was sent again may still
                            // be news of an earlier copy (a value): either
                            // reading may be the client's.
                            let before_all = before_in(&told);
                            let owed_by = |before: Heard| match (before, a88) {
                                (Heard::Gone, _) => None,
                                (Heard::Awaited, false) => Some(Owed::DoesNotExist),
                                (Heard::Awaited, true) => Some(Owed::NotFoundError),
                                (Heard::Value, false) if has(IGNORE_RESOURCE_DELETION) => {
                                    Some(Owed::Kept)
                                }
                                (Heard::Value, false) => Some(Owed::DoesNotExist),
                                (Heard::Value, true) if has(FAIL_ON_DATA_ERRORS) => {
                                    Some(Owed::NotFoundError)
                                }
                                (Heard::Value, true) => Some(Owed::NotFoundAmbient),
                            };
                            // A resource error after the name was sent again may
                            // be the new copy's (rejected); does-not-exist is
                            // not.
                            let gone = told.iter().enumerate().any(|(i, n)| match n {
                                WatcherNotification::DoesNotExist => true,
                                WatcherNotification::ResourceError(_) => i < until_resent,
                                _ => false,
                            });
                            let fine = |owed: Option<Owed>| match owed {
                                None => true,
                                Some(Owed::Kept) => !gone,
                                Some(owed) => told.iter().any(|n| owed.told_by(n)),
                            };
                            let owed = owed_by(before);
                            if !fine(owed) && (before_all == before || !fine(owed_by(before_all))) {
                                let owed = owed.unwrap_or(Owed::Kept);
                                return Some(Violation {
                                    event: index,
                                    message: format!(
                                        "{server} stream {stream}: the client answered the \
                                         response at #{} removing {} {name}, whose watchers \
                                         {}, and they heard {} of it, not {}",
                                        answered.index + 1,
                                        resource_type,
                                        match before {
                                            Heard::Value => "held a value",
                                            _ => "awaited it",
                                        },
                                        describe(&told),
                                        owed.what()
                                    ),
                                });
                            }
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    None
}

/// The index of the first line in `from..to` where `server` sends `name`
/// of `type_url` (in any response: a copy the client may hold again).
fn resent_at(
    events: &[TimelineEvent],
    server: &str,
    type_url: &str,
    name: &str,
    from: usize,
    to: usize,
) -> Option<usize> {
    (from..to.min(events.len())).find(|&i| {
        let event = &events[i];
        match &event.kind {
            EventKind::Server(server_event) => {
                event.source.server() == Some(server)
                    && matches!(
                        &**server_event,
                        ServerEvent::ResponseSent { response, .. }
                            if response.type_url == type_url
                                && response.resource_names.iter().any(|n| n == name)
                    )
            }
            _ => false,
        }
    })
}

/// The first server: the one the client uses until it falls back.
fn primary(scenario: &Scenario) -> &str {
    scenario.servers.first().map_or("", |s| s.name.as_str())
}

fn describe(told: &[&WatcherNotification]) -> String {
    if told.is_empty() {
        return "nothing".to_string();
    }
    let each: Vec<&str> = told
        .iter()
        .map(|n| match n {
            WatcherNotification::Changed { .. } => "changed",
            WatcherNotification::ResourceError(_) => "a resource error",
            WatcherNotification::AmbientError(_) => "an ambient error",
            WatcherNotification::AmbientErrorCleared => "ambient error cleared",
            WatcherNotification::DoesNotExist => "does-not-exist",
        })
        .collect();
    each.join(", ")
}

/// `CDS` for a type URL of one of the four types, else the URL.
fn short(type_url: &str) -> &str {
    ResourceType::from_type_url(type_url).map_or(type_url, |t| t.short_name())
}

#[cfg(test)]
mod tests {
    use xds_fake_server::event::{
        RecordedDeltaRequest, RecordedDeltaResource, RecordedDeltaResponse, RecordedRequest,
    };
    use xds_vocabulary::RequestKind;
    use xds_vocabulary::XdsError;

    use super::*;
    use crate::invariant::test_events::{at, heard, server, step, test_scenario};
    use crate::scenario::load_str;
    use crate::timeline::Source;

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    /// A delta request of CDS to `to`.
    fn request_to(
        to: &str,
        stream: u64,
        nonce: &str,
        error: bool,
        claims: &[(&str, &str)],
    ) -> TimelineEvent {
        at(
            0,
            Source::Server(to.into()),
            server(ServerEvent::RequestReceived {
                stream,
                request: RecordedRequest {
                    type_url: CDS.into(),
                    resource_names: Vec::new(),
                    version_info: String::new(),
                    response_nonce: nonce.into(),
                    error_detail: error.then(|| (3, "invalid".to_string())),
                    node: None,
                    kind: RequestKind::Initial,
                    delta: Some(RecordedDeltaRequest {
                        subscribe: if nonce.is_empty() {
                            vec!["c1".into(), "c2".into()]
                        } else {
                            Vec::new()
                        },
                        unsubscribe: Vec::new(),
                        initial_resource_versions: claims
                            .iter()
                            .map(|(n, v)| (n.to_string(), v.to_string()))
                            .collect(),
                        subscription: Default::default(),
                    }),
                },
            }),
        )
    }

    /// The client's answer (ACK) to `nonce` on the primary's `stream`.
    fn ack(stream: u64, nonce: &str) -> TimelineEvent {
        request_to("primary", stream, nonce, false, &[])
    }

    /// A new stream's first request, claiming `claims`.
    fn first(stream: u64, claims: &[(&str, &str)]) -> TimelineEvent {
        request_to("primary", stream, "", false, claims)
    }

    /// A delta CDS response of the primary.
    fn response(stream: u64, nonce: &str, resources: &[&str], removed: &[&str]) -> TimelineEvent {
        at(
            0,
            Source::Server("primary".into()),
            server(ServerEvent::ResponseSent {
                stream,
                response: RecordedResponse {
                    type_url: CDS.into(),
                    version_info: String::new(),
                    nonce: nonce.into(),
                    resource_names: resources.iter().map(|n| n.to_string()).collect(),
                    encoded_len: 0,
                    delta: Some(RecordedDeltaResponse {
                        resources: resources
                            .iter()
                            .map(|_| RecordedDeltaResource {
                                version: "v1".into(),
                                ttl: None,
                                body: true,
                            })
                            .collect(),
                        removed_resources: removed.iter().map(|n| n.to_string()).collect(),
                    }),
                    resource_errors: Vec::new(),
                    bodies: Vec::new(),
                },
            }),
        )
    }

    fn changed(name: &str) -> TimelineEvent {
        heard(
            name,
            WatcherNotification::Changed {
                summary: "v1".into(),
            },
        )
    }

    fn dne(name: &str) -> TimelineEvent {
        heard(name, WatcherNotification::DoesNotExist)
    }

    /// c1 watched, received and ACKed on stream 1.
    fn held_c1() -> Vec<TimelineEvent> {
        vec![
            step("watch CDS c1"),
            first(1, &[]),
            response(1, "1", &["c1"], &[]),
            changed("c1"),
            ack(1, "1"),
        ]
    }

    /// `held_c1`, then a response removing c1, what the watchers heard of
    /// it, and the client's answer.
    fn removed_c1(told: Option<TimelineEvent>) -> Vec<TimelineEvent> {
        let mut events = held_c1();
        events.push(response(1, "2", &[], &["c1"]));
        events.extend(told);
        events.push(ack(1, "2"));
        events
    }

    fn scenario(yaml_servers: &str, profile: &str) -> Scenario {
        load_str(
            "removed.yaml",
            &format!(
                "description: removals\n{profile}servers:\n{yaml_servers}\
                 steps:\n  - watch: {{ type: CDS, name: c1 }}\n"
            ),
        )
        .expect("the test scenario loads")
    }

    #[test]
    fn a_removed_name_held_is_does_not_exist_for_its_watchers() {
        assert_eq!(check(&test_scenario(), &removed_c1(Some(dne("c1")))), None);
        // The removal ignored: the watchers go on with the value.
        let v = check(&test_scenario(), &removed_c1(None)).expect("the removal was ignored");
        assert_eq!(v.event, 6);
        assert!(
            v.message.contains("held a value") && v.message.contains("not does-not-exist"),
            "{v:?}"
        );
        // A NACK reads the removals too (gRFC A46 rejects the invalid
        // resources only).
        let mut nacked = removed_c1(None);
        nacked[6] = request_to("primary", 1, "2", true, &[]);
        assert!(check(&test_scenario(), &nacked).is_some());
    }

    #[test]
    fn a_removed_name_never_received_does_not_exist_unless_nothing_is_awaited() {
        let mut events = vec![
            step("watch CDS c1"),
            first(1, &[]),
            response(1, "1", &[], &["c1"]),
            dne("c1"),
            ack(1, "1"),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        events.remove(3);
        let v = check(&test_scenario(), &events).expect("awaited, not told");
        assert!(v.message.contains("awaited it"), "{v:?}");
        // A NACK's resource error without a value: nothing is held or
        // awaited, and nothing is owed.
        events.insert(
            2,
            heard(
                "c1",
                WatcherNotification::ResourceError(XdsError::new(Code::InvalidArgument, "bad")),
            ),
        );
        assert_eq!(check(&test_scenario(), &events), None);
        // A transient error leaves it awaited.
        events[2] = heard(
            "c1",
            WatcherNotification::ResourceError(XdsError::new(Code::Unavailable, "down")),
        );
        assert!(check(&test_scenario(), &events).is_some());
    }

    #[test]
    fn a_new_stream_does_not_claim_a_removed_name_until_it_is_sent_again() {
        let mut events = removed_c1(Some(dne("c1")));
        events.push(first(2, &[("c1", "v1")]));
        let v = check(&test_scenario(), &events).expect("claims what was removed");
        assert!(v.message.contains("claims c1"), "{v:?}");
        // Claiming nothing is right.
        let last = events.len() - 1;
        events[last] = first(2, &[]);
        assert_eq!(check(&test_scenario(), &events), None);
        // Sent again since, it may be claimed.
        events.insert(last, response(1, "3", &["c1"], &[]));
        events.insert(last + 1, ack(1, "3"));
        events[last + 2] = first(2, &[("c1", "v1")]);
        assert_eq!(check(&test_scenario(), &events), None);
    }

    #[test]
    fn the_deletion_policy_says_what_a_kept_resource_hears() {
        // A53 with ignore_resource_deletion: a held name is kept, and its
        // watchers hear nothing saying it is gone.
        let ignoring = scenario(
            "  primary: { server_features: [ignore_resource_deletion] }\n",
            "",
        );
        assert_eq!(check(&ignoring, &removed_c1(None)), None);
        let v = check(&ignoring, &removed_c1(Some(dne("c1")))).expect("kept, yet gone");
        assert!(v.message.contains("not nothing"), "{v:?}");
        // One never received still does not exist.
        let awaited = vec![
            step("watch CDS c1"),
            first(1, &[]),
            response(1, "1", &[], &["c1"]),
            ack(1, "1"),
        ];
        assert!(check(&ignoring, &awaited).is_some());
        // A88: kept with an ambient NOT_FOUND, or dropped under
        // fail_on_data_errors with a NOT_FOUND resource error.
        let a88 = scenario("  primary: {}\n", "client: { profile: a88 }\n");
        let not_found = XdsError::new(Code::NotFound, "does not exist");
        let ambient = heard("c1", WatcherNotification::AmbientError(not_found.clone()));
        assert_eq!(check(&a88, &removed_c1(Some(ambient.clone()))), None);
        assert!(check(&a88, &removed_c1(Some(dne("c1")))).is_some());
        let failing = scenario(
            "  primary: { server_features: [fail_on_data_errors] }\n",
            "client: { profile: a88 }\n",
        );
        let error = heard("c1", WatcherNotification::ResourceError(not_found));
        assert_eq!(check(&failing, &removed_c1(Some(error))), None);
        assert!(check(&failing, &removed_c1(Some(ambient))).is_some());
    }

    #[test]
    fn what_the_timeline_cannot_settle_is_not_read_and_nothing_else_is_skipped() {
        let ignored = removed_c1(None);
        // A watch step between the removal and its answer: the client may
        // handle it after the removal, and find nothing to remove.
        let mut rewatched = ignored.clone();
        rewatched.insert(6, step("watch CDS c1"));
        assert_eq!(check(&test_scenario(), &rewatched), None);
        // A watch of another name changes nothing for c1.
        rewatched[6] = step("watch CDS c2");
        assert!(check(&test_scenario(), &rewatched).is_some());
        // A name a watch from a callback ever watched.
        let mut callback = ignored.clone();
        callback.insert(0, step("watch CDS c1 from the next callback of CDS c2"));
        assert_eq!(check(&test_scenario(), &callback), None);
        callback[0] = step("watch CDS c2 from the next callback of CDS c1");
        assert!(check(&test_scenario(), &callback).is_some());
        // A removal of a name the response also sends is malformed, and
        // rejected; another name's removal beside it is not.
        let mut malformed = ignored.clone();
        malformed[5] = response(1, "2", &["c1"], &["c1"]);
        assert_eq!(check(&test_scenario(), &malformed), None);
        malformed[5] = response(1, "2", &["c2"], &["c1"]);
        assert!(check(&test_scenario(), &malformed).is_some());
        // A response answered only by a later one's answer is not read.
        let mut coalesced = ignored.clone();
        coalesced[6] = response(1, "3", &[], &[]);
        coalesced.push(ack(1, "3"));
        assert_eq!(check(&test_scenario(), &coalesced), None);
        // Once the client may have fallen back, removals are not read.
        let mut fallback = ignored.clone();
        fallback.insert(
            5,
            at(
                0,
                Source::Server("fallback".into()),
                server(ServerEvent::StreamOpened {
                    stream: 1,
                    connection: Some(1),
                    protocol: xds_vocabulary::AdsProtocol::Delta,
                    after_close: None,
                }),
            ),
        );
        assert_eq!(check(&test_scenario(), &fallback), None);
        // Another XdsClient (a dial's) has streams of its own.
        let dialling = load_str(
            "dial.yaml",
            "description: a dial\nservers:\n  primary: {}\n\
             steps:\n  - watch: { type: CDS, name: c1 }\n  - dial: xds:///svc\n",
        )
        .expect("loads");
        assert_eq!(check(&dialling, &ignored), None);
        assert!(check(&test_scenario(), &ignored).is_some());
    }

    /// Seed 20261126, schedule 26795 (delta): the name's timer had said it
    /// does not exist; the server removed it (#22, nothing owed) and at
    /// once sent it again (#26); the watchers heard the new copy's
    /// `changed` before the client's answers. That `changed` is not what
    /// they knew before the removal, nor is the name removed for a new
    /// stream's claims. A removal ignored is still caught, re-sent or not.
    #[test]
    fn a_name_sent_again_before_the_answer_is_the_new_copys_news() {
        let resent = |before: Vec<TimelineEvent>, told: Vec<TimelineEvent>| {
            let mut events = before;
            events.push(response(1, "2", &[], &["c1"]));
            events.push(response(1, "3", &["c1"], &[]));
            events.extend(told);
            events.push(ack(1, "2"));
            events.push(ack(1, "3"));
            events
        };
        let gone = vec![step("watch CDS c1"), first(1, &[]), dne("c1")];
        // The finding's timeline: gone, removed, sent again, changed.
        let mut events = resent(gone.clone(), vec![changed("c1")]);
        assert_eq!(check(&test_scenario(), &events), None);
        // Held again: a new stream may claim it.
        events.push(first(2, &[("c1", "v1")]));
        assert_eq!(check(&test_scenario(), &events), None);
        // Removed and not sent again before the answer: still not claimed.
        let mut claimed = removed_c1(Some(dne("c1")));
        claimed.push(first(2, &[("c1", "v1")]));
        assert!(check(&test_scenario(), &claimed).is_some());
        // A value held, removed, sent again: does-not-exist, then the new
        // copy, keeps the rule.
        let told = vec![dne("c1"), changed("c1")];
        assert_eq!(check(&test_scenario(), &resent(held_c1(), told)), None);
        // The removal ignored (the broken client): the new copy's
        // `changed` does not excuse it.
        let v = check(&test_scenario(), &resent(held_c1(), vec![changed("c1")]))
            .expect("the removal of a held value was ignored");
        assert_eq!(v.event, 8);
        assert!(
            v.message.contains("held a value") && v.message.contains("not does-not-exist"),
            "{v:?}"
        );
        // Awaited (no timer yet), removed, sent again: does-not-exist owed.
        let awaited = vec![step("watch CDS c1"), first(1, &[])];
        let v = check(
            &test_scenario(),
            &resent(awaited.clone(), vec![changed("c1")]),
        )
        .expect("an awaited name removed, not told");
        assert!(v.message.contains("awaited it"), "{v:?}");
        let told = vec![dne("c1"), changed("c1")];
        assert_eq!(check(&test_scenario(), &resent(awaited, told)), None);
        // Kept (ignore_resource_deletion): the new copy rejected is its
        // own resource error, not the removal's.
        let ignoring = scenario(
            "  primary: { server_features: [ignore_resource_deletion] }\n",
            "",
        );
        let rejected = heard(
            "c1",
            WatcherNotification::ResourceError(XdsError::new(Code::InvalidArgument, "bad")),
        );
        assert_eq!(check(&ignoring, &resent(held_c1(), vec![rejected])), None);
        assert!(check(&ignoring, &resent(held_c1(), vec![dne("c1")])).is_some());
    }

    /// The client broken against the rule (removals ignored), in the
    /// campaign `tests/chaos.rs` plays (seed 11, 200 delta schedules):
    /// where it is first caught, and by which rule. Slow: `--ignored`.
    #[test]
    #[ignore]
    fn the_broken_client_is_caught_in_seed_11() {
        use xds_client_under_test::{ClientUnderTest, ReferenceClient};

        let factory: crate::suite::BoxedFactory = Box::new(|| {
            let defects = xds_reference_client::Defects {
                delta_removals_ignored: true,
                ..Default::default()
            };
            Box::new(ReferenceClient::with_defects(defects)) as Box<dyn ClientUnderTest>
        });
        let rules = crate::chaos::Rules::new(ReferenceClient::new().capabilities());
        let shape = crate::chaos::Shape {
            steps: 20,
            protocol: xds_vocabulary::AdsProtocol::Delta,
            fit: None,
        };
        let done = crate::chaos::campaign(
            (&factory, &rules),
            11,
            (0, 200),
            None,
            &shape,
            None,
            &mut |_, _| {},
        );
        let found: Vec<(u64, &str)> = done.findings.iter().map(|f| (f.index, f.broke)).collect();
        eprintln!("{} findings: {found:?}", found.len());
        assert_eq!(found.first().map(|f| f.1), Some(INVARIANT.name));
    }
}
