//! `delta-claims-what-it-holds`: a new delta stream's first request of a
//! type claims, in `initial_resource_versions`, exactly the resources of
//! that type the client holds from that server and subscribes to, each at
//! the version it accepted (the xDS protocol's delta reconnect: the server
//! then sends only what differs). From that server: versions are a
//! server's own, so a resource whose copy now came from another server
//! (gRFC A71 fallback) is not the claimed server's to confirm.
//!
//! What the client holds from a server is read from the wire: the
//! resources of each delta response from it the client ACKed, less the
//! names the response removed, the names the client unsubscribed since,
//! those it did not subscribe to when they came (it may ignore them),
//! and the names it took from another server since. Where the wire cannot tell, a name
//! is left out of the check: a response not answered yet (the client may
//! have taken it, and its stream may end before the ACK goes out), a
//! NACKed response (which of its resources the client kept is its own
//! business), a resource with a TTL or without a body, a resource error,
//! a name whose last watch was cancelled (or every name of the type, for
//! the last wildcard watch), until a response settles it: the client may
//! unsubscribe by closing the stream and forget it, or keep it.
//! A server whose connections were held (`hold_connections`: no bytes
//! move) gets at its release requests the client wrote at any time during
//! the hold: a name whose copy from that server changed meanwhile (another
//! server's copy taken, an unsubscription) is unknown there until a
//! response settles it (seed 20261130, delta schedule 426: the primary's
//! new stream, written while it held svc, arrived after the fallback's
//! svc was taken).
//! It holds where the script's watches are the client's only ones (no
//! dial, RPC or serve: their XdsClients hold their own) and no
//! authorities split the client.

use std::collections::{BTreeMap, HashMap, HashSet};

use xds_fake_server::event::{RecordedResponse, ServerEvent};
use xds_fake_server::fault::Fault;

use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "delta-claims-what-it-holds",
    rule: "a new delta stream's initial_resource_versions are exactly the resources the \
           client holds and subscribes to, at the versions it accepted",
    held_to: held::by_all,
    check,
};

/// The wildcard subscription.
const WILDCARD: &str = "*";

#[derive(Default)]
struct Held<'a> {
    /// name -> version accepted.
    versions: BTreeMap<&'a str, &'a str>,
    /// Names the wire cannot settle: never checked.
    unknown: HashSet<&'a str>,
}

impl<'a> Held<'a> {
    fn settle(&mut self, name: &'a str) {
        self.unknown.remove(name);
    }

    fn blur(&mut self, name: &'a str) {
        self.versions.remove(name);
        self.unknown.insert(name);
    }

    /// The client ACKed `response`; `watched`: whether the script
    /// watches a name (surely, not from a callback still to run).
    fn accept(&mut self, response: &'a RecordedResponse, watched: &dyn Fn(&str) -> bool) {
        let Some(delta) = &response.delta else {
            return;
        };
        for (name, resource) in response.resource_names.iter().zip(&delta.resources) {
            if resource.body && resource.ttl.is_none() && watched(name) {
                self.settle(name);
                self.versions.insert(name, &resource.version);
            } else {
                self.blur(name);
            }
        }
        for name in &delta.removed_resources {
            self.settle(name);
            self.versions.remove(name.as_str());
        }
        for error in &response.resource_errors {
            match &error.name {
                Some(name) => self.blur(name),
                None => {
                    // An error for every resource of the type.
                    let names: Vec<&str> = self.versions.keys().copied().collect();
                    for name in names {
                        self.blur(name);
                    }
                }
            }
        }
    }

    /// The client took `name` from another server, or dropped it.
    fn drop_name(&mut self, name: &'a str) {
        self.settle(name);
        self.versions.remove(name);
    }

    /// `response` is on its way, or the client NACKed it: what it takes
    /// of it is its own until it ACKs.
    fn reject(&mut self, response: &'a RecordedResponse) {
        for name in &response.resource_names {
            self.blur(name);
        }
        if let Some(delta) = &response.delta {
            for name in &delta.removed_resources {
                self.blur(name);
            }
        }
    }
}

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    super::one_client(scenario)?;
    // (server, stream, nonce) -> the response.
    let mut sent: HashMap<(&str, u64, &str), &RecordedResponse> = HashMap::new();
    // type -> server -> what the client holds of it from that server.
    let mut held: HashMap<&str, HashMap<&str, Held<'_>>> = HashMap::new();
    // (server, stream, type) that had its first request.
    let mut started: HashSet<(&str, u64, &str)> = HashSet::new();
    // (type, name) -> watches active, from the script.
    let mut watches: HashMap<(ResourceType, &str), usize> = HashMap::new();
    // Names a watch from a callback watched: it starts when the callback
    // runs, which the timeline does not say.
    let mut from_callback: HashSet<(ResourceType, &str)> = HashSet::new();
    // Servers whose connections are held -> (type, name) whose copy from
    // that server changed during the hold.
    let mut holding: HashMap<&str, HashSet<(&str, &str)>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        // A cancel that leaves a name (or `*`) with no watch unsubscribes
        // it even when no request says so: the client may close the
        // stream instead (it was its last subscription), or be between
        // streams. It forgets the resource (the xDS protocol: a client
        // "may have forgotten" resources), or keeps it if a watch comes
        // back before the unsubscription goes out: unknown until a
        // response settles it.
        if let EventKind::Step(text) = &event.kind {
            if let Some(key) = WatchInCallback::described(text) {
                from_callback.insert(key);
                *watches.entry(key).or_default() += 1;
            } else if let Some(key) = Watch::described(text) {
                *watches.entry(key).or_default() += 1;
            } else if let Some((t, name)) = CancelWatch::described(text) {
                let active = watches.entry((t, name)).or_default();
                *active = active.saturating_sub(1);
                // A watch from a callback still to run is not the
                // client's yet: a cancel may leave the name unwatched
                // (seed 9, delta: watch r1, a watch of r1 from r1's next
                // callback, a cancel of r1; the client closed the stream).
                if *active == 0 || from_callback.contains(&(t, name)) {
                    for of_server in held.entry(t.type_url()).or_default().values_mut() {
                        let names: Vec<&str> = if name == WILDCARD {
                            of_server.versions.keys().copied().collect()
                        } else {
                            vec![name]
                        };
                        for name in names {
                            of_server.blur(name);
                        }
                    }
                }
            }
            continue;
        }
        let (EventKind::Server(server_event), Some(server)) = (&event.kind, event.source.server())
        else {
            continue;
        };
        match &**server_event {
            ServerEvent::FaultApplied {
                fault: Fault::HoldConnections(_),
            } => {
                holding.entry(server).or_default();
            }
            ServerEvent::FaultApplied {
                fault: Fault::ReleaseConnections(_) | Fault::Restart(_),
            } => {
                for (type_url, name) in holding.remove(server).unwrap_or_default() {
                    if let Some(of_server) = held.get_mut(type_url).and_then(|t| t.get_mut(server))
                    {
                        of_server.blur(name);
                    }
                }
            }
            ServerEvent::ResponseSent { stream, response } if response.delta.is_some() => {
                sent.insert((server, *stream, &response.nonce), response);
                // Until it answers, the client may have taken it over any
                // server's copy.
                let of_type = held.entry(response.type_url.as_str()).or_default();
                of_type.entry(server).or_default();
                for held in of_type.values_mut() {
                    held.reject(response);
                }
            }
            ServerEvent::RequestReceived { stream, request } => {
                let Some(delta) = &request.delta else {
                    continue;
                };
                let type_url = request.type_url.as_str();
                let of_type = held.entry(type_url).or_default();
                if started.insert((server, *stream, type_url))
                    && let Some(violation) = compare(
                        of_type.entry(server).or_default(),
                        &delta.subscribe,
                        &delta.initial_resource_versions,
                    )
                {
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "{server} stream {stream}, the first {} request: {violation}",
                            short(type_url)
                        ),
                    });
                }
                if let Some(response) =
                    sent.get(&(server, *stream, request.response_nonce.as_str()))
                    && !request.response_nonce.is_empty()
                {
                    let accepted = request.error_detail.is_none();
                    // A resource the client did not subscribe to when it
                    // came: it may ignore it or keep it.
                    let resource_type = ResourceType::from_type_url(type_url);
                    let watched = |name: &str| {
                        resource_type.is_some_and(|t| {
                            let active = |n: &str| watches.get(&(t, n)).is_some_and(|c| *c > 0);
                            (active(name) || active(WILDCARD))
                                && !from_callback.contains(&(t, name))
                                && !from_callback.contains(&(t, WILDCARD))
                        })
                    };
                    for (from, held) in of_type.iter_mut() {
                        if !accepted {
                            held.reject(response);
                        } else if *from == server {
                            held.accept(response, &watched);
                        } else {
                            // Its copies are now this server's.
                            for name in response
                                .resource_names
                                .iter()
                                .chain(response.delta.iter().flat_map(|d| &d.removed_resources))
                            {
                                held.drop_name(name);
                                if let Some(touched) = holding.get_mut(from) {
                                    touched.insert((type_url, name));
                                }
                            }
                        }
                    }
                }
                for name in &delta.unsubscribe {
                    for (from, held) in of_type.iter_mut() {
                        held.drop_name(name);
                        if let Some(touched) = holding.get_mut(from) {
                            touched.insert((type_url, name));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// What differs between what the client holds (of what it subscribes to)
/// and what it claims.
fn compare(
    held: &Held<'_>,
    subscribe: &[String],
    claimed: &BTreeMap<String, String>,
) -> Option<String> {
    let wildcard = subscribe.iter().any(|n| n == WILDCARD);
    let subscribed = |name: &str| wildcard || subscribe.iter().any(|n| n == name);
    for (name, version) in claimed {
        if held.unknown.contains(name.as_str()) {
            continue;
        }
        match held.versions.get(name.as_str()) {
            None => {
                return Some(format!(
                    "claims {name} at version \"{version}\", which it does not hold"
                ));
            }
            Some(accepted) if *accepted != version => {
                return Some(format!(
                    "claims {name} at version \"{version}\", it accepted \"{accepted}\""
                ));
            }
            Some(_) => {}
        }
    }
    for (name, version) in &held.versions {
        if subscribed(name) && !claimed.contains_key(*name) {
            return Some(format!(
                "does not claim {name}, which it holds at version \"{version}\" and subscribes to"
            ));
        }
    }
    None
}

/// `CDS` for a type URL of one of the four types, else the URL.
fn short(type_url: &str) -> &str {
    xds_vocabulary::ResourceType::from_type_url(type_url).map_or(type_url, |t| t.short_name())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use xds_fake_server::event::{
        RecordedDeltaRequest, RecordedDeltaResource, RecordedDeltaResponse, RecordedRequest,
    };
    use xds_vocabulary::RequestKind;

    use super::*;
    use crate::invariant::test_events::{at, server, test_scenario};
    use crate::timeline::Source;

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    fn request(
        stream: u64,
        subscribe: &[&str],
        nonce: &str,
        claims: &[(&str, &str)],
    ) -> TimelineEvent {
        request_to("primary", stream, subscribe, nonce, claims)
    }

    fn request_to(
        to: &str,
        stream: u64,
        subscribe: &[&str],
        nonce: &str,
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
                    error_detail: None,
                    node: None,
                    kind: RequestKind::Initial,
                    delta: Some(RecordedDeltaRequest {
                        subscribe: subscribe.iter().map(|n| n.to_string()).collect(),
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

    fn response(stream: u64, nonce: &str, resources: &[(&str, &str)], ttl: bool) -> TimelineEvent {
        response_from("primary", stream, nonce, resources, ttl)
    }

    fn response_from(
        from: &str,
        stream: u64,
        nonce: &str,
        resources: &[(&str, &str)],
        ttl: bool,
    ) -> TimelineEvent {
        at(
            0,
            Source::Server(from.into()),
            server(ServerEvent::ResponseSent {
                stream,
                response: RecordedResponse {
                    type_url: CDS.into(),
                    version_info: String::new(),
                    nonce: nonce.into(),
                    resource_names: resources.iter().map(|(n, _)| n.to_string()).collect(),
                    encoded_len: 0,
                    delta: Some(RecordedDeltaResponse {
                        resources: resources
                            .iter()
                            .map(|(_, v)| RecordedDeltaResource {
                                version: v.to_string(),
                                ttl: ttl.then(|| Duration::from_secs(1)),
                                body: true,
                            })
                            .collect(),
                        removed_resources: Vec::new(),
                    }),
                    resource_errors: Vec::new(),
                    bodies: Vec::new(),
                },
            }),
        )
    }

    #[test]
    fn a_reconnect_claims_what_was_accepted_and_nothing_else() {
        let first = vec![
            crate::invariant::test_events::step("watch CDS c1"),
            crate::invariant::test_events::step("watch CDS c2"),
            request(1, &["c1", "c2"], "", &[]),
            response(1, "1", &[("c1", "v1"), ("c2", "v7")], false),
            request(1, &[], "1", &[]),
        ];
        let with = |claims: &[(&str, &str)]| {
            let mut events = first.clone();
            events.push(request(2, &["c1", "c2"], "", claims));
            check(&test_scenario(), &events)
        };
        assert_eq!(with(&[("c1", "v1"), ("c2", "v7")]), None);
        let nothing = with(&[]).expect("claims nothing");
        assert!(nothing.message.contains("does not claim c1"), "{nothing:?}");
        let stale = with(&[("c1", "v0"), ("c2", "v7")]).expect("a stale version");
        assert!(stale.message.contains("it accepted \"v1\""), "{stale:?}");
        let invented = with(&[("c1", "v1"), ("c2", "v7"), ("c3", "v1")]).expect("c3");
        assert!(invented.message.contains("c3"), "{invented:?}");
        // Unsubscribed names are not claimed.
        let mut events = first.clone();
        events.push(request(2, &["c1"], "", &[("c1", "v1")]));
        assert_eq!(check(&test_scenario(), &events), None);
    }

    /// Seed 20261126, schedule 8656: a resource the server sent before the
    /// client watched it (an unsolicited push, ACKed) is the client's to
    /// ignore: a later stream need not claim it.
    #[test]
    fn a_resource_not_watched_when_it_came_need_not_be_claimed() {
        let mut events = vec![
            crate::invariant::test_events::step("watch CDS c2"),
            request(1, &["c2"], "", &[]),
            response(1, "1", &[("c1", "v1")], false),
            request(1, &[], "1", &[]),
            crate::invariant::test_events::step("watch CDS c1"),
            request(2, &["c1", "c2"], "", &[]),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Claimed, it is not held to be wrong either.
        events[5] = request(2, &["c1", "c2"], "", &[("c1", "v1")]);
        assert_eq!(check(&test_scenario(), &events), None);
        // Watched when it came: it must be claimed.
        events.swap(0, 4);
        events[5] = request(2, &["c1", "c2"], "", &[]);
        assert!(check(&test_scenario(), &events).is_some());
    }

    /// Seed 20261126, schedules 5396 and 5403: the last watch of a name
    /// cancelled, the client closed the stream (its last subscription)
    /// instead of sending the unsubscription, and forgot the resource.
    #[test]
    fn a_name_whose_last_watch_was_cancelled_may_be_forgotten() {
        let mut events = vec![
            crate::invariant::test_events::step("watch CDS c1"),
            request(1, &["c1"], "", &[]),
            response(1, "1", &[("c1", "v1")], false),
            request(1, &[], "1", &[]),
            crate::invariant::test_events::step("cancel watch CDS c1"),
            crate::invariant::test_events::step("watch CDS c1"),
            request(2, &["c1"], "", &[]),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // A watch from a callback that has not run yet leaves it
        // unwatched all the same (seed 9, delta).
        let mut callback = events.clone();
        callback.insert(
            4,
            crate::invariant::test_events::step("watch CDS c1 from the next callback of CDS c1"),
        );
        assert_eq!(check(&test_scenario(), &callback), None);
        // Without the cancel it still holds c1, and must claim it.
        events.remove(4);
        let v = check(&test_scenario(), &events).expect("claims nothing it holds");
        assert!(v.message.contains("does not claim c1"), "{v:?}");
    }

    #[test]
    fn what_the_wire_cannot_settle_is_not_checked() {
        let events = vec![
            request(1, &["c1"], "", &[]),
            response(1, "1", &[("c1", "v1")], true),
            request(1, &[], "1", &[]),
            request(2, &["c1"], "", &[]),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
    }

    /// Seed 20261130, delta schedule 426: the primary's connections held,
    /// the client wrote its new stream's first request claiming c1 while
    /// it held the primary's c1; the fallback's c1 was taken before the
    /// request arrived, at the release.
    #[test]
    fn a_request_held_in_transit_may_claim_what_was_held_when_it_was_written() {
        let fault = |on: &str, fault: Fault| {
            at(
                0,
                Source::Server(on.into()),
                server(ServerEvent::FaultApplied { fault }),
            )
        };
        let hold = || {
            fault(
                "primary",
                Fault::HoldConnections(xds_fake_server::fault::HoldConnections),
            )
        };
        let release = || {
            fault(
                "primary",
                Fault::ReleaseConnections(xds_fake_server::fault::ReleaseConnections),
            )
        };
        let events = |held: bool| {
            let mut events = vec![
                crate::invariant::test_events::step("watch CDS c1"),
                request(1, &["c1"], "", &[]),
                response(1, "1", &[("c1", "v1")], false),
                request(1, &[], "1", &[]),
                hold(),
                request_to("fallback", 1, &["c1"], "", &[]),
                response_from("fallback", 1, "1", &[("c1", "f1")], false),
                request_to("fallback", 1, &[], "1", &[]),
                release(),
                request(2, &["c1"], "", &[("c1", "v1")]),
            ];
            if !held {
                events.retain(|e| {
                    !matches!(&e.kind, EventKind::Server(s) if matches!(**s, ServerEvent::FaultApplied { .. }))
                });
            }
            events
        };
        assert_eq!(check(&test_scenario(), &events(true)), None);
        // Not held, the request was written after the fallback's c1 came.
        let v = check(&test_scenario(), &events(false)).expect("claims the replaced copy");
        assert!(v.message.contains("claims c1"), "{v:?}");
        // After the release, a response from the primary settles it again.
        let mut settled = events(true);
        settled.pop();
        settled.extend([
            request(2, &["c1"], "", &[]),
            response(2, "2", &[("c1", "v2")], false),
            request(2, &[], "2", &[]),
            request(3, &["c1"], "", &[]),
        ]);
        let v = check(&test_scenario(), &settled).expect("settled: must claim c1");
        assert!(v.message.contains("does not claim c1"), "{v:?}");
    }

    #[test]
    fn back_on_the_primary_it_claims_nothing_the_fallback_replaced() {
        let events = vec![
            request(1, &["c1", "c2"], "", &[]),
            response(1, "1", &[("c1", "v1"), ("c2", "v1")], false),
            request(1, &[], "1", &[]),
            // On the fallback, which sends c1 only.
            request_to("fallback", 1, &["c1", "c2"], "", &[]),
            response_from("fallback", 1, "1", &[("c1", "f1")], false),
            request_to("fallback", 1, &[], "1", &[]),
        ];
        let back = |claims: &[(&str, &str)]| {
            let mut events = events.clone();
            events.push(request(2, &["c1", "c2"], "", claims));
            check(&test_scenario(), &events)
        };
        // c2 is still the primary's copy; c1 is the fallback's.
        assert_eq!(back(&[("c2", "v1")]), None);
        let stale = back(&[("c1", "v1"), ("c2", "v1")]).expect("the primary's old c1");
        assert!(stale.message.contains("claims c1"), "{stale:?}");
        // The fallback's versions are not the primary's either.
        assert!(back(&[("c1", "f1"), ("c2", "v1")]).is_some());
    }
}
