//! Expectations: which timeline events a matcher accepts, and how to say
//! what it was looking for when nothing matched.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use xds_client_under_test::{DialNotification, ObservedEvent, WatcherNotification};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::{ClientEvent, code_name};

use crate::scenario::{
    Alternative, ChannelMatcher, ClientEventKind, ClientEventMatcher, CsdsMatcher, CsdsStatus,
    DialMatcher, Matcher, RequestMatcher, ResponseMatcher, RpcMatcher, ServerEventKind,
    ServerEventMatcher, ServingMatcher, WatcherEventKind, WatcherMatcher,
};
use crate::timeline::{CsdsEntry, EventKind, TimelineEvent, describe};

fn eq<T: PartialEq>(want: &Option<T>, got: &T) -> bool {
    want.as_ref().is_none_or(|w| w == got)
}

/// The same set, with what the client reported read as the scenario wrote
/// it (see [`Translate`]).
fn same_set(want: &Option<Vec<String>>, got: &[String], text: Translate<'_>) -> bool {
    // Lengths first: requests can name thousands of resources.
    want.as_ref().is_none_or(|w| {
        w.len() == got.len()
            && w.iter()
                .map(|n| Cow::Borrowed(n.as_str()))
                .collect::<BTreeSet<_>>()
                == got.iter().map(|n| text(n)).collect::<BTreeSet<_>>()
    })
}

/// `got`, translated only if there is something to look for in it.
fn contains_in(want: &Option<String>, got: &str, text: Translate<'_>) -> bool {
    want.as_ref().is_none_or(|w| text(got).contains(w.as_str()))
}

/// How a client's text reads in the scenario's terms (over real TCP,
/// endpoint addresses were rewritten before the client saw them).
pub type Translate<'a> = &'a dyn Fn(&str) -> Cow<'_, str>;

fn as_written(text: &str) -> Cow<'_, str> {
    Cow::Borrowed(text)
}

pub fn matches(matcher: &Matcher, event: &TimelineEvent) -> bool {
    matches_translated(matcher, event, &as_written)
}

/// [`matches`], with the text the client reported (watcher summaries and
/// errors, NACK messages, dial configs, RPC status messages) translated
/// first. Only events that pass the other checks get translated.
pub fn matches_translated(matcher: &Matcher, event: &TimelineEvent, text: Translate<'_>) -> bool {
    match (matcher, &event.kind) {
        (Matcher::Request(m), EventKind::Server(e)) => {
            let ServerEvent::RequestReceived { request, .. } = &**e else {
                return false;
            };
            eq(&m.server, &event.source)
                && m.resource_type
                    .is_none_or(|t| t.type_url() == request.type_url)
                && same_set(&m.names, &request.resource_names, text)
                && eq(&m.version, &request.version_info)
                && eq(&m.nonce, &request.response_nonce)
                && eq(&m.kind, &request.kind)
                && m.error_code.is_none_or(|c| {
                    request
                        .error_detail
                        .as_ref()
                        .is_some_and(|(code, _)| *code == c)
                })
                && (m.error_contains.is_empty()
                    || request.error_detail.as_ref().is_some_and(|(_, message)| {
                        let message = text(message);
                        m.error_contains
                            .iter()
                            .all(|w| message.contains(w.as_str()))
                    }))
                && eq(&m.node, &request.node.is_some())
        }
        (Matcher::Response(m), EventKind::Server(e)) => {
            let ServerEvent::ResponseSent { response, .. } = &**e else {
                return false;
            };
            eq(&m.server, &event.source)
                && m.resource_type
                    .is_none_or(|t| t.type_url() == response.type_url)
                && same_set(&m.names, &response.resource_names, text)
                && eq(&m.version, &response.version_info)
                && eq(&m.nonce, &response.nonce)
        }
        (
            Matcher::Watcher(m),
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }),
        ) => {
            let (kind, code, reported) = match notification {
                WatcherNotification::Changed { summary } => {
                    (WatcherEventKind::Changed, None, summary.as_str())
                }
                WatcherNotification::ResourceError(e) => (
                    WatcherEventKind::ResourceError,
                    Some(e.code),
                    e.message.as_str(),
                ),
                WatcherNotification::AmbientError(e) => (
                    WatcherEventKind::AmbientError,
                    Some(e.code),
                    e.message.as_str(),
                ),
                WatcherNotification::AmbientErrorCleared => {
                    (WatcherEventKind::AmbientErrorCleared, None, "")
                }
                WatcherNotification::DoesNotExist => (WatcherEventKind::DoesNotExist, None, ""),
            };
            eq(&m.resource_type, resource_type)
                && eq(&m.name, name)
                && eq(&m.event, &kind)
                && m.code.is_none_or(|c| code == Some(c))
                && contains_in(&m.contains, reported, text)
        }
        (Matcher::Dial(m), EventKind::Client(ObservedEvent::Dial { target, update })) => {
            if !eq(&m.target, target) {
                return false;
            }
            match update {
                DialNotification::Error(e) => {
                    m.resolved != Some(true)
                        && m.clusters.is_none()
                        && m.code.is_none_or(|c| c == e.code)
                        && contains_in(&m.contains, &e.message, text)
                }
                DialNotification::Config { summary, clusters } => {
                    m.resolved != Some(false)
                        && m.code.is_none()
                        && contains_in(&m.contains, summary, text)
                        && m.clusters.as_ref().is_none_or(|want| {
                            want.len() == clusters.len()
                                && want.iter().all(|(name, addresses)| {
                                    let got: &[String] = match clusters.get(name) {
                                        Some(Ok(a)) => a,
                                        Some(Err(_)) => &[],
                                        None => return false,
                                    };
                                    same_set(&Some(addresses.clone()), got, text)
                                })
                        })
                }
            }
        }
        (Matcher::ServerEvent(m), EventKind::Server(e)) => {
            eq(&m.server, &event.source) && server_event_matches(m, e)
        }
        (Matcher::Client(m), EventKind::Client(ObservedEvent::Client(e))) => {
            client_event_matches(m, e, &event.kind)
        }
        (
            Matcher::Rpc(m),
            EventKind::Rpc {
                target, outcome, ..
            },
        ) => {
            eq(&m.target, target)
                && eq(&m.code, &outcome.code)
                && m.backend
                    .as_ref()
                    .is_none_or(|b| outcome.backend.as_ref() == Some(b))
                && contains_in(&m.contains, &outcome.message, text)
        }
        (Matcher::Channel(m), EventKind::Client(ObservedEvent::ChannelState { target, state })) => {
            eq(&m.target, target) && m.state == *state
        }
        (
            Matcher::Serving(m),
            EventKind::Client(ObservedEvent::ServingStatus { address, status }),
        ) => {
            m.address.as_ref().is_none_or(|a| *a == text(address))
                && match status {
                    Ok(()) => m.serving,
                    Err(e) => {
                        !m.serving
                            && eq(&m.code, &e.code)
                            && contains_in(&m.contains, &e.message, text)
                    }
                }
        }
        (Matcher::AnyOf(alternatives), _) => alternatives
            .iter()
            .any(|a| matches_translated(&a.matcher, event, text)),
        _ => false,
    }
}

/// The alternative of an `any_of` that `event` meets first, in order.
pub fn matching_alternative<'a>(
    matcher: &'a Matcher,
    event: &TimelineEvent,
) -> Option<&'a Alternative> {
    matching_alternative_translated(matcher, event, &as_written)
}

/// [`matching_alternative`] with the client's text translated (see
/// [`matches_translated`]).
pub fn matching_alternative_translated<'a>(
    matcher: &'a Matcher,
    event: &TimelineEvent,
    text: Translate<'_>,
) -> Option<&'a Alternative> {
    match matcher {
        Matcher::AnyOf(alternatives) => alternatives
            .iter()
            .find(|a| matches_translated(&a.matcher, event, text)),
        _ => None,
    }
}

/// Whether the client's CSDS view — `(client_scope, type_url, name) ->
/// entry` — shows what `m` describes. CSDS is a state, so it is asserted
/// as one (at each checkpoint), not as a change event.
/// A channel target with an empty URI authority has two spellings:
/// `xds:///svc` as written, `xds:/svc` as C-core prints a parsed URI.
fn canonical_scope(scope: &str) -> std::borrow::Cow<'_, str> {
    match scope.split_once(":///") {
        Some((scheme, rest)) if !scheme.contains('/') => format!("{scheme}:/{rest}").into(),
        _ => scope.into(),
    }
}

pub fn csds_state_matches(
    m: &CsdsMatcher,
    state: &BTreeMap<(String, String, String), CsdsEntry>,
) -> bool {
    let selected = state.iter().filter(|((scope, type_url, name), _)| {
        m.resource_type.is_none_or(|t| t.type_url() == type_url)
            && m.name.as_ref().is_none_or(|n| n == name)
            && m.client_scope
                .as_ref()
                .is_none_or(|s| canonical_scope(s) == canonical_scope(scope))
    });
    if m.status == Some(CsdsStatus::Absent) {
        return selected.count() == 0;
    }
    selected.into_iter().any(|(_, e)| {
        m.status.is_none_or(|s| s == e.status)
            && m.version.as_ref().is_none_or(|v| *v == e.version)
            && m.error_contains
                .as_ref()
                .is_none_or(|w| e.error.as_deref().is_some_and(|d| d.contains(w.as_str())))
    })
}

fn server_event_matches(m: &ServerEventMatcher, e: &ServerEvent) -> bool {
    match (m.event, e) {
        (ServerEventKind::ConnectionAccepted, ServerEvent::ConnectionAccepted { .. })
        | (ServerEventKind::ConnectionRefused, ServerEvent::ConnectionRefused { .. })
        | (ServerEventKind::ConnectionClosed, ServerEvent::ConnectionClosed { .. })
        | (ServerEventKind::StreamOpened, ServerEvent::StreamOpened { .. }) => true,
        (
            ServerEventKind::StreamClosed,
            ServerEvent::StreamClosed {
                code, by_client, ..
            },
        ) => m.code.is_none_or(|c| c == *code) && eq(&m.by_client, by_client),
        _ => false,
    }
}

fn client_event_matches(m: &ClientEventMatcher, e: &ClientEvent, kind: &EventKind) -> bool {
    let (event, server) = match e {
        ClientEvent::AdsCallStarted { server } => (ClientEventKind::AdsCallStarted, Some(server)),
        ClientEvent::AdsCallFinished { server, .. } => {
            (ClientEventKind::AdsCallFinished, Some(server))
        }
        ClientEvent::RetryScheduled { server, .. } => {
            (ClientEventKind::RetryScheduled, Some(server))
        }
        ClientEvent::ServerStatus { server, .. } => (ClientEventKind::ServerStatus, Some(server)),
        ClientEvent::Connected { server, .. } => (ClientEventKind::Connected, Some(server)),
        ClientEvent::ResourceTimerStarted { .. } => (ClientEventKind::ResourceTimerStarted, None),
        ClientEvent::SubscriptionSent { server, .. } => {
            (ClientEventKind::SubscriptionSent, Some(server))
        }
        ClientEvent::FallbackStarted { server, .. } => {
            (ClientEventKind::FallbackStarted, Some(server))
        }
        ClientEvent::FellForward { server, .. } => (ClientEventKind::FellForward, Some(server)),
        ClientEvent::Log { .. } => (ClientEventKind::Log, None),
    };
    if m.event != event {
        return false;
    }
    // Servers are named by URI in client events (`primary:443`); a
    // scenario names them by server name, which is the URI's host.
    if let Some(want) = &m.server
        && !server.is_some_and(|s| s == want || s.split(':').next() == Some(want.as_str()))
    {
        return false;
    }
    if let Some(delay) = m.delay
        && !matches!(e, ClientEvent::RetryScheduled { delay: d, .. } if d.as_millis() == delay.as_millis())
    {
        return false;
    }
    if let Some(level) = &m.level {
        let ok = matches!(e, ClientEvent::Log { level: l, .. } if l == level);
        if !ok {
            return false;
        }
    }
    contains_in(
        &m.contains,
        &describe(kind).unwrap_or_default(),
        &as_written,
    )
}

/// A readable description of a matcher, for failure messages.
pub fn describe_matcher(matcher: &Matcher) -> String {
    let mut s = String::new();
    let mut field = |name: &str, value: String| {
        let _ = write!(s, " {name}={value}");
    };
    let head = match matcher {
        Matcher::Request(RequestMatcher {
            server,
            resource_type,
            names,
            version,
            nonce,
            kind,
            error_code,
            error_contains,
            node,
        }) => {
            if let Some(v) = server {
                field("server", v.clone());
            }
            if let Some(v) = resource_type {
                field("type", v.short_name().to_string());
            }
            if let Some(v) = names {
                field("names", format!("[{}]", v.join(",")));
            }
            if let Some(v) = version {
                field("version", format!("{v:?}"));
            }
            if let Some(v) = nonce {
                field("nonce", format!("{v:?}"));
            }
            if let Some(v) = kind {
                field("kind", format!("{v:?}"));
            }
            if let Some(v) = error_code {
                field(
                    "error_code",
                    code_name(tonic::Code::from_i32(*v)).to_string(),
                );
            }
            if !error_contains.is_empty() {
                field("error_contains", format!("{error_contains:?}"));
            }
            if let Some(v) = node {
                field("node", v.to_string());
            }
            "DiscoveryRequest"
        }
        Matcher::Response(ResponseMatcher {
            server,
            resource_type,
            names,
            version,
            nonce,
        }) => {
            if let Some(v) = server {
                field("server", v.clone());
            }
            if let Some(v) = resource_type {
                field("type", v.short_name().to_string());
            }
            if let Some(v) = names {
                field("names", format!("[{}]", v.join(",")));
            }
            if let Some(v) = version {
                field("version", format!("{v:?}"));
            }
            if let Some(v) = nonce {
                field("nonce", format!("{v:?}"));
            }
            "DiscoveryResponse"
        }
        Matcher::Watcher(WatcherMatcher {
            resource_type,
            name,
            event,
            code,
            contains,
        }) => {
            if let Some(v) = resource_type {
                field("type", v.short_name().to_string());
            }
            if let Some(v) = name {
                field("name", v.clone());
            }
            if let Some(v) = event {
                field("event", format!("{v:?}"));
            }
            if let Some(v) = code {
                field("code", code_name(*v).to_string());
            }
            if let Some(v) = contains {
                field("contains", format!("{v:?}"));
            }
            "watcher event"
        }
        Matcher::Dial(DialMatcher {
            target,
            resolved,
            code,
            contains,
            clusters,
        }) => {
            if let Some(v) = target {
                field("target", v.clone());
            }
            if let Some(v) = resolved {
                field("resolved", v.to_string());
            }
            if let Some(v) = code {
                field("code", code_name(*v).to_string());
            }
            if let Some(v) = contains {
                field("contains", format!("{v:?}"));
            }
            if let Some(v) = clusters {
                field("clusters", format!("{v:?}"));
            }
            "dial update"
        }
        Matcher::Csds(CsdsMatcher {
            resource_type,
            name,
            status,
            version,
            error_contains,
            client_scope,
        }) => {
            if let Some(v) = client_scope {
                field("client_scope", format!("{v:?}"));
            }
            if let Some(v) = resource_type {
                field("type", v.short_name().to_string());
            }
            if let Some(v) = name {
                field("name", v.clone());
            }
            if let Some(v) = status {
                field("status", crate::timeline::csds_status_name(*v).to_string());
            }
            if let Some(v) = version {
                field("version", format!("{v:?}"));
            }
            if let Some(v) = error_contains {
                field("error_contains", format!("{v:?}"));
            }
            "CSDS change"
        }
        Matcher::ServerEvent(ServerEventMatcher {
            server,
            event,
            code,
            by_client,
        }) => {
            if let Some(v) = server {
                field("server", v.clone());
            }
            field("event", format!("{event:?}"));
            if let Some(v) = code {
                field("code", code_name(*v).to_string());
            }
            if let Some(v) = by_client {
                field("by_client", v.to_string());
            }
            "server event"
        }
        Matcher::Rpc(RpcMatcher {
            target,
            code,
            backend,
            contains,
        }) => {
            if let Some(v) = target {
                field("target", v.clone());
            }
            if let Some(v) = code {
                field("code", code_name(*v).to_string());
            }
            if let Some(v) = backend {
                field("backend", v.clone());
            }
            if let Some(v) = contains {
                field("contains", format!("{v:?}"));
            }
            "RPC result"
        }
        Matcher::AnyOf(alternatives) => {
            let list: Vec<String> = alternatives
                .iter()
                .map(|a| describe_matcher(&a.matcher))
                .collect();
            return format!("any of [{}]", list.join(" | "));
        }
        Matcher::Channel(ChannelMatcher { target, state }) => {
            if let Some(v) = target {
                field("target", v.clone());
            }
            field("state", state.name().to_string());
            "channel state"
        }
        Matcher::Serving(ServingMatcher {
            address,
            serving,
            code,
            contains,
        }) => {
            if let Some(v) = address {
                field("address", v.clone());
            }
            field(
                "state",
                if *serving { "SERVING" } else { "NOT_SERVING" }.to_string(),
            );
            if let Some(v) = code {
                field("code", code_name(*v).to_string());
            }
            if let Some(v) = contains {
                field("contains", format!("{v:?}"));
            }
            "serving status"
        }
        Matcher::Client(ClientEventMatcher {
            event,
            server,
            delay,
            level,
            contains,
        }) => {
            field("event", format!("{event:?}"));
            if let Some(v) = server {
                field("server", v.clone());
            }
            if let Some(v) = delay {
                field("delay", format!("{:.3}s", v.as_secs_f64()));
            }
            if let Some(v) = level {
                field("level", v.name().to_string());
            }
            if let Some(v) = contains {
                field("contains", format!("{v:?}"));
            }
            "client event"
        }
    };
    format!("{head}{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use xds_fake_server::event::RecordedRequest;
    use xds_vocabulary::{RequestKind, ResourceType, XdsError};

    fn request(kind: RequestKind, names: &[&str], error: Option<(i32, &str)>) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: "primary".into(),
            kind: EventKind::Server(Box::new(ServerEvent::RequestReceived {
                stream: 1,
                request: RecordedRequest {
                    type_url: ResourceType::Cluster.type_url().into(),
                    resource_names: names.iter().map(|s| s.to_string()).collect(),
                    version_info: "1".into(),
                    response_nonce: "1".into(),
                    error_detail: error.map(|(c, m)| (c, m.to_string())),
                    node: None,
                    kind,
                },
            })),
        }
    }

    #[test]
    fn request_matcher_checks_every_given_field() {
        let nack = request(
            RequestKind::Nack,
            &["b", "a"],
            Some((3, "resource index 1: c2: bad")),
        );
        let m = |f: fn(&mut RequestMatcher)| {
            let mut r = RequestMatcher::default();
            f(&mut r);
            Matcher::Request(r)
        };
        assert!(matches(&m(|_| {}), &nack));
        assert!(matches(
            &m(|r| r.names = Some(vec!["a".into(), "b".into()])),
            &nack
        ));
        assert!(!matches(&m(|r| r.names = Some(vec!["a".into()])), &nack));
        assert!(matches(&m(|r| r.kind = Some(RequestKind::Nack)), &nack));
        assert!(!matches(&m(|r| r.kind = Some(RequestKind::Ack)), &nack));
        assert!(matches(&m(|r| r.error_code = Some(3)), &nack));
        assert!(!matches(&m(|r| r.error_code = Some(14)), &nack));
        assert!(matches(
            &m(|r| r.error_contains = vec!["c2: bad".into()]),
            &nack
        ));
        assert!(matches(
            &m(|r| r.error_contains = vec!["index 1".into(), "c2: bad".into()]),
            &nack
        ));
        assert!(!matches(
            &m(|r| r.error_contains = vec!["index 1".into(), "c3".into()]),
            &nack
        ));
        assert!(!matches(&m(|r| r.server = Some("fallback".into())), &nack));
        assert!(!matches(
            &m(|r| r.resource_type = Some(ResourceType::Listener)),
            &nack
        ));
        assert!(!matches(&m(|r| r.node = Some(true)), &nack));
        let ack = request(RequestKind::Ack, &["a"], None);
        assert!(!matches(&m(|r| r.error_contains = vec!["x".into()]), &ack));
    }

    #[test]
    fn watcher_matcher_checks_kind_code_and_text() {
        let event = TimelineEvent {
            at: Duration::ZERO,
            source: "client".into(),
            kind: EventKind::Client(ObservedEvent::Watcher {
                resource_type: ResourceType::Cluster,
                name: "c1".into(),
                notification: WatcherNotification::AmbientError(XdsError::new(
                    tonic::Code::Unavailable,
                    "xDS channel down",
                )),
            }),
        };
        let m = |event, code, contains: Option<&str>| {
            Matcher::Watcher(WatcherMatcher {
                resource_type: Some(ResourceType::Cluster),
                name: Some("c1".into()),
                event,
                code,
                contains: contains.map(String::from),
            })
        };
        assert!(matches(
            &m(
                Some(WatcherEventKind::AmbientError),
                Some(tonic::Code::Unavailable),
                Some("down")
            ),
            &event
        ));
        assert!(!matches(
            &m(Some(WatcherEventKind::ResourceError), None, None),
            &event
        ));
        assert!(!matches(
            &m(None, Some(tonic::Code::NotFound), None),
            &event
        ));
        assert!(!matches(&m(None, None, Some("up")), &event));
        assert!(!matches(
            &Matcher::Request(RequestMatcher::default()),
            &event
        ));
    }

    #[test]
    fn csds_matcher_selects_by_client_scope_in_either_spelling() {
        let entry = |status| CsdsEntry {
            status,
            version: "1".into(),
            error: None,
        };
        let cds = ResourceType::Cluster.type_url().to_string();
        let state = BTreeMap::from([
            (
                ("xds:/a".into(), cds.clone(), "c1".into()),
                entry(CsdsStatus::Acked),
            ),
            (
                ("xds:///b".into(), cds, "c1".into()),
                entry(CsdsStatus::Requested),
            ),
        ]);
        let m = |scope: Option<&str>, status| CsdsMatcher {
            resource_type: Some(ResourceType::Cluster),
            name: Some("c1".into()),
            status: Some(status),
            version: None,
            error_contains: None,
            client_scope: scope.map(str::to_string),
        };
        assert!(csds_state_matches(
            &m(Some("xds:///a"), CsdsStatus::Acked),
            &state
        ));
        assert!(csds_state_matches(
            &m(Some("xds:/b"), CsdsStatus::Requested),
            &state
        ));
        assert!(!csds_state_matches(
            &m(Some("xds:///a"), CsdsStatus::Requested),
            &state
        ));
        assert!(!csds_state_matches(
            &m(Some("#server"), CsdsStatus::Acked),
            &state
        ));
        assert!(csds_state_matches(
            &m(Some("#server"), CsdsStatus::Absent),
            &state
        ));
        assert!(csds_state_matches(&m(None, CsdsStatus::Requested), &state));
        assert_eq!(
            canonical_scope("xds://authority/svc"),
            "xds://authority/svc"
        );
        assert_eq!(canonical_scope("#server"), "#server");
    }

    #[test]
    fn describes_matchers_readably() {
        let m = Matcher::Request(RequestMatcher {
            resource_type: Some(ResourceType::Cluster),
            names: Some(vec!["c1".into()]),
            kind: Some(RequestKind::Ack),
            ..Default::default()
        });
        assert_eq!(
            describe_matcher(&m),
            "DiscoveryRequest type=CDS names=[c1] kind=Ack"
        );
    }
}
