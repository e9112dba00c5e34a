//! A rendering of a timeline that real-time runs of one client share:
//! what timing decides (timestamps, the interleaving of independent
//! sources, CSDS polls, settling RPCs) is left out, stream ids and nonces
//! relabelled by what they carry.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use xds_client_under_test::ObservedEvent;
use xds_fake_server::backend::BackendEvent;
use xds_fake_server::event::{RecordedRequest, ServerEvent};
use xds_vocabulary::{ClientEvent, code_name};

use super::*;

/// A rendering stable across real-time runs of an external client: no
/// timestamps; events grouped by the step they follow (an action step that
/// follows another with nothing awaited between them joins its group: what
/// the first one caused may happen before or after the second is taken);
/// inside a group,
/// each source's events in their order but sources one after another (the
/// interleaving of independent sources is a race); and nothing whose
/// content or place depends on timing: CSDS poll results (polling catches
/// or misses intermediate states), channel state changes (they race with
/// the script's steps), adapters' log lines, status messages of failed
/// RPCs (they embed durations). Expectations still check all of those.
pub fn render_normalized(events: &[TimelineEvent], normalize: &dyn Fn(&str) -> String) -> String {
    let streams = stream_labels(events);
    let nonces = nonce_labels(events, &streams);
    let normalize = |source: &str, text: &str| {
        drop_node(&relabel_streams(
            source,
            &relabel_nonces(source, &normalize(text), &nonces),
            &streams,
        ))
    };
    let superseded = superseded_requests(events);
    let (group_of, mut settled_serves) = settling_serves(events);
    let step_group = answer_groups(events, step_groups(events));
    let mut groups: Vec<Vec<NormalizedLine>> = (0..=step_group.iter().copied().max().unwrap_or(0))
        .map(|_| Vec::new())
        .collect();
    for (index, event) in events.iter().enumerate() {
        if matches!(event.kind, EventKind::Barrier) || superseded.contains(&index) {
            continue;
        }
        let text = match &event.kind {
            EventKind::Csds(_)
            | EventKind::Client(ObservedEvent::Client(ClientEvent::Log { .. }))
            | EventKind::Client(ObservedEvent::ChannelState { .. }) => continue,
            // Whether a poll failed, and when it works again, is timing.
            EventKind::Note(_) if event.source == Source::Csds => continue,
            EventKind::Rpc { settling: true, .. } => continue,
            EventKind::Backend(BackendEvent::RpcServed { .. })
                if settled_serves.remove(&(group_of[index], event.source.as_str())) =>
            {
                continue;
            }
            EventKind::Rpc {
                target, outcome, ..
            } => match &outcome.backend {
                Some(backend) if outcome.code == tonic::Code::Ok => {
                    format!("rpc {target}: OK from {backend}")
                }
                _ => format!("rpc {target}: {}", code_name(outcome.code)),
            },
            kind => match describe(kind) {
                Some(text) => text,
                None => continue,
            },
        };
        let is_close = matches!(&event.kind, EventKind::Server(e)
            if matches!(**e, ServerEvent::StreamClosed { .. } | ServerEvent::ConnectionClosed { .. }));
        groups[step_group[index]].push(NormalizedLine {
            source: &event.source,
            text: normalize(
                event.source.as_str(),
                &xds_vocabulary::cut::cut(&text, super::describe::MAX_LINE),
            ),
            wire_type: wire_key(&event.kind, event.source.as_str(), &streams),
            is_close,
        });
    }
    let mut out = String::new();
    for (index, mut group) in groups.into_iter().enumerate() {
        // Stable: each source keeps its own order; steps stay first.
        group.sort_by_key(|l| {
            if *l.source == Source::Step {
                ""
            } else {
                l.source.as_str()
            }
        });
        // A client interleaves its types' requests as it likes (C-core
        // resubscribes in map order), and its streams' too: in each run of
        // one source's stream openings, requests and responses, streams go
        // in label order and in each stream types in name order, each
        // type's own order kept.
        let mut start = 0;
        while start < group.len() {
            let mut end = start;
            while end < group.len()
                && group[end].wire_type.is_some()
                && group[end].source == group[start].source
            {
                end += 1;
            }
            if end == start {
                start += 1;
                continue;
            }
            group[start..end].sort_by(|a, b| a.wire_type.cmp(&b.wire_type));
            start = end;
        }
        // A server sees a client's stream end and its connection close on
        // different tasks: adjacent closes of one source go by text.
        let mut start = 0;
        while start < group.len() {
            let mut end = start;
            while end < group.len()
                && group[end].is_close
                && group[end].source == group[start].source
            {
                end += 1;
            }
            group[start..end].sort_by(|a, b| a.text.cmp(&b.text));
            start = end.max(start + 1);
        }
        for NormalizedLine { source, text, .. } in group {
            out.push_str(&format!("[{index:>2}]  {source:<8} {text}\n"));
        }
    }
    out
}

/// Each event's step group, and how many backend serves in each group
/// belong to settling RPCs (how many a client needed before its config
/// took effect is a race), by (group, backend).
fn settling_serves(events: &[TimelineEvent]) -> (Vec<usize>, SettledServes) {
    let mut group = 0;
    let mut group_of = Vec::with_capacity(events.len());
    let mut serves = SettledServes::default();
    for event in events {
        if matches!(event.kind, EventKind::Step(_)) {
            group += 1;
        }
        group_of.push(group);
        if let EventKind::Rpc {
            outcome,
            settling: true,
            ..
        } = &event.kind
            && outcome.code == tonic::Code::Ok
            && let Some(backend) = &outcome.backend
        {
            *serves.0.entry((group, backend.clone())).or_default() += 1;
        }
    }
    (group_of, serves)
}

/// Backend serves still to leave out of a normalised rendering.
#[derive(Default)]
struct SettledServes(HashMap<(usize, String), usize>);

impl SettledServes {
    /// Takes one serve of `backend` in `group`, if one is left.
    fn remove(&mut self, key: &(usize, &str)) -> bool {
        match self.0.get_mut(&(key.0, key.1.to_string())) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
}

/// Requests a real client happened to send in two steps where it could as
/// well have sent one: a request followed on the same stream, before any
/// response of its type and within the same script step, by one that
/// carries the same version and nonce and asks for a superset of its
/// names. Whether C-core coalesces `[bad]` then `[bad,good]` into one
/// request depends on thread timing; the normalised rendering shows only
/// the final subscription. Indices into `events`.
fn superseded_requests(events: &[TimelineEvent]) -> std::collections::BTreeSet<usize> {
    let mut superseded = std::collections::BTreeSet::new();
    // Per (source, stream, type): the last request seen since the last
    // response of that type or the last step.
    let mut pending: BTreeMap<(&str, u64, &str), (usize, &RecordedRequest)> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        let server_event = match &event.kind {
            EventKind::Step(_) => {
                pending.clear();
                continue;
            }
            EventKind::Server(server_event) => &**server_event,
            _ => continue,
        };
        match server_event {
            ServerEvent::RequestReceived { stream, request } => {
                let key = (event.source.as_str(), *stream, request.type_url.as_str());
                if let Some((earlier, previous)) = pending.insert(key, (index, request))
                    && previous.version_info == request.version_info
                    && previous.response_nonce == request.response_nonce
                    && previous.error_detail == request.error_detail
                    && is_subset(&previous.resource_names, &request.resource_names)
                {
                    superseded.insert(earlier);
                }
            }
            ServerEvent::ResponseSent { stream, response }
            | ServerEvent::ResponseDropped { stream, response } => {
                pending.remove(&(event.source.as_str(), *stream, response.type_url.as_str()));
            }
            _ => {}
        }
    }
    superseded
}

/// Every name in `names` is in `of`. Linear, not `Vec::contains` per
/// name: grpc-js grows its CDS subscription one cluster per request, and
/// 10,000 requests of up to 10,000 names made that quadratic check take
/// minutes after a bench-peers run.
fn is_subset(names: &[String], of: &[String]) -> bool {
    let of: std::collections::HashSet<&str> = of.iter().map(String::as_str).collect();
    names.iter().all(|name| of.contains(name.as_str()))
}

/// The server numbers nonces across types in the order it answers, which
/// on real time follows the order the client's requests happen to
/// arrive in. Each nonce gets a label by stream and type instead: the
/// second CDS response on stream 2 is `s2-CDS-2`.
/// One event of a normalised rendering, with what its place depends on.
struct NormalizedLine<'a> {
    source: &'a Source,
    text: String,
    /// A stream's opening, requests and responses: (stream label, 0 for
    /// the opening, else 1, resource type).
    wire_type: Option<(u64, u8, String)>,
    /// A server's stream or connection closed.
    is_close: bool,
}

/// Each event's group in a normalised rendering: events before the first
/// step are group 0, the first step opens group 1, and a later step opens
/// the next group only after a barrier (an action step that follows
/// another with nothing awaited between them joins its group).
fn step_groups(events: &[TimelineEvent]) -> Vec<usize> {
    let mut group = 0;
    let mut awaited = true;
    events
        .iter()
        .map(|event| {
            match event.kind {
                EventKind::Barrier => awaited = true,
                EventKind::Step(_) if std::mem::take(&mut awaited) => group += 1,
                _ => {}
            }
            group
        })
        .collect()
}

/// `step_group` with each plain ACK or NACK moved to the group of the
/// response it answers. A client answers a response as soon as it has
/// processed it, which on real time races with the script's next step: the
/// answer to a response sent after step 1 lands after step 2 began when
/// the machine is busy. Only an answer that leaves its type's subscription
/// on that stream as it was moves: one that also subscribes or
/// unsubscribes may be what the later step caused.
fn answer_groups(events: &[TimelineEvent], mut step_group: Vec<usize>) -> Vec<usize> {
    // (server, stream, nonce) -> group the response was sent in.
    let mut sent: HashMap<(&str, u64, &str), usize> = HashMap::new();
    // (server, stream, type) -> the SotW names last asked for, sorted.
    let mut asked: HashMap<(&str, u64, &str), Vec<&str>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        let EventKind::Server(server_event) = &event.kind else {
            continue;
        };
        let source = event.source.as_str();
        match &**server_event {
            ServerEvent::ResponseSent { stream, response } => {
                sent.insert((source, *stream, &response.nonce), step_group[index]);
            }
            ServerEvent::RequestReceived { stream, request } => {
                let unchanged = match &request.delta {
                    Some(delta) => delta.subscribe.is_empty() && delta.unsubscribe.is_empty(),
                    None => {
                        let mut names: Vec<&str> =
                            request.resource_names.iter().map(String::as_str).collect();
                        names.sort_unstable();
                        names.dedup();
                        let key = (source, *stream, request.type_url.as_str());
                        asked
                            .insert(key, names.clone())
                            .is_some_and(|before| before == names)
                    }
                };
                if unchanged
                    && !request.response_nonce.is_empty()
                    && let Some(&group) =
                        sent.get(&(source, *stream, request.response_nonce.as_str()))
                    && group < step_group[index]
                {
                    step_group[index] = group;
                }
            }
            _ => {}
        }
    }
    step_group
}

/// Stream labels per (server, stream id). A server numbers streams in the
/// order they open, and two XdsClients of one client (a channel's and
/// `#server`) reconnecting at once open theirs in either order: streams
/// that open together (in one step group, each while the one before it is
/// still open) are numbered by their first request's type and names
/// instead, so the labels do not depend on that race. A stream opened
/// after the one before it closed keeps its place.
fn stream_labels(events: &[TimelineEvent]) -> StreamLabels {
    let step_group = step_groups(events);
    // (source, stream) -> (batch it opened in, its first request).
    let mut opened: BTreeMap<(String, u64), (usize, Option<String>)> = BTreeMap::new();
    // source -> (streams open, current batch, the batch's group).
    let mut batches: BTreeMap<String, (BTreeSet<u64>, usize, usize)> = BTreeMap::new();
    for (event, &group) in events.iter().zip(&step_group) {
        let EventKind::Server(e) = &event.kind else {
            continue;
        };
        match &**e {
            ServerEvent::StreamOpened { stream, .. } => {
                let (open, batch, batch_group) = batches
                    .entry(event.source.as_str().to_string())
                    .or_default();
                if open.is_empty() || *batch_group != group {
                    *batch += 1;
                    *batch_group = group;
                }
                open.insert(*stream);
                opened
                    .entry((event.source.as_str().to_string(), *stream))
                    .or_insert((*batch, None));
            }
            ServerEvent::StreamClosed { stream, .. } => {
                if let Some((open, _, _)) = batches.get_mut(event.source.as_str()) {
                    open.remove(stream);
                }
            }
            ServerEvent::RequestReceived { stream, request } => {
                if let Some((_, first @ None)) =
                    opened.get_mut(&(event.source.as_str().to_string(), *stream))
                {
                    let mut names = request.resource_names.clone();
                    names.sort();
                    *first = Some(format!("{} {}", request.type_url, names.join(",")));
                }
            }
            _ => {}
        }
    }
    let mut order: Vec<(&String, usize, &Option<String>, u64)> = opened
        .iter()
        .map(|((source, stream), (batch, first))| (source, *batch, first, *stream))
        .collect();
    order.sort();
    let mut labels = StreamLabels::new();
    let mut next: BTreeMap<&String, u64> = BTreeMap::new();
    for (source, _, _, stream) in order {
        let label = next.entry(source).or_insert(0);
        *label += 1;
        labels.insert((source.clone(), stream), *label);
    }
    labels
}

type StreamLabels = BTreeMap<(String, u64), u64>;

fn stream_label(streams: &StreamLabels, source: &str, stream: u64) -> u64 {
    streams
        .get(&(source.to_string(), stream))
        .copied()
        .unwrap_or(stream)
}

/// `[sN]` in a server's line, with N its stream's label.
fn relabel_streams(source: &str, text: &str, streams: &StreamLabels) -> String {
    let Some(at) = text.find("[s") else {
        return text.to_string();
    };
    let digits = &text[at + 2..];
    let len = digits.bytes().take_while(u8::is_ascii_digit).count();
    match (digits[..len].parse::<u64>(), digits[len..].starts_with(']')) {
        (Ok(stream), true) => format!(
            "{}[s{}{}",
            &text[..at],
            stream_label(streams, source, stream),
            &digits[len..]
        ),
        _ => text.to_string(),
    }
}

/// Labels per (server, nonce): each fake server numbers its own nonces.
fn nonce_labels(
    events: &[TimelineEvent],
    streams: &StreamLabels,
) -> BTreeMap<(String, String), String> {
    let mut labels = BTreeMap::new();
    let mut counts: BTreeMap<(String, u64, String), u64> = BTreeMap::new();
    for event in events {
        if let EventKind::Server(server_event) = &event.kind
            && let ServerEvent::ResponseSent { stream, response }
            | ServerEvent::ResponseDropped { stream, response } = &**server_event
        {
            let type_label = type_name(&response.type_url);
            let count = counts
                .entry((
                    event.source.as_str().to_string(),
                    *stream,
                    type_label.clone(),
                ))
                .or_default();
            *count += 1;
            labels
                .entry((event.source.as_str().to_string(), response.nonce.clone()))
                .or_insert_with(|| {
                    let stream = stream_label(streams, event.source.as_str(), *stream);
                    format!("s{stream}-{type_label}-{count}")
                });
        }
    }
    labels
}

fn relabel_nonces(source: &str, text: &str, labels: &BTreeMap<(String, String), String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("nonce=\"") {
        let value_start = at + "nonce=\"".len();
        out.push_str(&rest[..value_start]);
        rest = &rest[value_start..];
        let Some(end) = rest.find('"') else { break };
        let nonce = &rest[..end];
        out.push_str(
            labels
                .get(&(source.to_string(), nonce.to_string()))
                .map_or(nonce, String::as_str),
        );
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Which request of a new stream carries the node depends on which type a
/// client happens to send first; scenarios check the node with
/// expectations (`node: true`), snapshots leave it out.
fn drop_node(text: &str) -> String {
    let Some(at) = text.find(" node=\"") else {
        return text.to_string();
    };
    let value_start = at + " node=\"".len();
    match text[value_start..].find('"') {
        Some(end) => format!("{}{}", &text[..at], &text[value_start + end + 1..]),
        None => text.to_string(),
    }
}

/// How a stream's opening, requests and responses sort in a run of one
/// source's wire events (see [`NormalizedLine::wire_type`]); else None.
fn wire_key(kind: &EventKind, source: &str, streams: &StreamLabels) -> Option<(u64, u8, String)> {
    let EventKind::Server(event) = kind else {
        return None;
    };
    let (stream, rank, type_url) = match &**event {
        ServerEvent::StreamOpened { stream, .. } => (*stream, 0, ""),
        ServerEvent::RequestReceived { stream, request } => (*stream, 1, request.type_url.as_str()),
        ServerEvent::ResponseSent { stream, response } => (*stream, 1, response.type_url.as_str()),
        _ => return None,
    };
    Some((
        stream_label(streams, source, stream),
        rank,
        type_url.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xds_fake_server::event::RecordedResponse;
    use xds_vocabulary::{AdsProtocol, RequestKind, ResourceType};

    #[test]
    fn nonces_are_relabelled_whole_per_server_and_unknown_ones_kept() {
        let key = |source: &str, nonce: &str| (source.to_string(), nonce.to_string());
        let labels = BTreeMap::from([
            (key("primary", "1"), "s1-CDS-1".to_string()),
            (key("primary", "10"), "s1-LDS-1".to_string()),
            (key("fallback", "1"), "s1-EDS-1".to_string()),
        ]);
        assert_eq!(
            relabel_nonces("primary", r#"<- CDS version="1" nonce="10" (ACK)"#, &labels),
            r#"<- CDS version="1" nonce="s1-LDS-1" (ACK)"#
        );
        assert_eq!(
            relabel_nonces("primary", r#"-> nonce="1" ... nonce="7" nonce="""#, &labels),
            r#"-> nonce="s1-CDS-1" ... nonce="7" nonce="""#
        );
        assert_eq!(
            relabel_nonces("fallback", r#"-> nonce="1""#, &labels),
            r#"-> nonce="s1-EDS-1""#
        );
        assert_eq!(
            relabel_nonces("primary", r#"nonce="1"#, &labels),
            r#"nonce="1"#
        );
    }

    fn request(stream: u64, names: &[&str], nonce: &str) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::RequestReceived {
                stream,
                request: RecordedRequest {
                    delta: None,
                    type_url: ResourceType::Cluster.type_url().into(),
                    resource_names: names.iter().map(|name| name.to_string()).collect(),
                    version_info: String::new(),
                    response_nonce: nonce.into(),
                    error_detail: None,
                    node: None,
                    kind: RequestKind::Initial,
                },
            })),
        }
    }

    #[test]
    fn streams_opened_together_are_labelled_by_their_first_request() {
        let step = |text: &str| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Step,
            kind: EventKind::Step(text.into()),
        };
        let opened = |stream: u64| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::StreamOpened {
                protocol: AdsProtocol::Sotw,
                stream,
                connection: Some(1),
                after_close: None,
            })),
        };
        // Two clients' streams open in either order after one step; the
        // first stream (before the step) keeps s1.
        let run = |first: u64, second: u64| {
            // Stream 2 is always the one asking for "a".
            let names = |stream: u64| if stream == 2 { "a" } else { "b" };
            let events = [
                opened(1),
                request(1, &["z"], ""),
                step("accept"),
                opened(first),
                request(first, &[names(first)], ""),
                opened(second),
                request(second, &[names(second)], ""),
                request(2, &["a"], "n1"),
            ];
            render_normalized(&events, &|t| t.to_string())
        };
        assert_eq!(run(2, 3), run(3, 2));
        // A stream opened after the one before it closed keeps its number,
        // whatever it asks first.
        let closed = |stream: u64| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::StreamClosed {
                stream,
                code: tonic::Code::Unknown,
                message: "gone".into(),
                by_client: true,
                kds: None,
            })),
        };
        let reconnect = [
            opened(1),
            request(1, &["z"], ""),
            closed(1),
            opened(2),
            request(2, &["a"], ""),
        ];
        let rendered = render_normalized(&reconnect, &|t| t.to_string());
        assert!(
            rendered.contains("[s1] DiscoveryRequest CDS names=[z]")
                && rendered.contains("[s2] DiscoveryRequest CDS names=[a]"),
            "{rendered}"
        );
        let rendered = run(3, 2);
        assert!(
            rendered.contains("[s2] DiscoveryRequest CDS names=[a]")
                && rendered.contains("[s3] DiscoveryRequest CDS names=[b]")
                && rendered.contains("[s1] DiscoveryRequest CDS names=[z]"),
            "{rendered}"
        );
    }

    #[test]
    fn a_subscription_grown_before_any_response_is_shown_once() {
        let step = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Step,
            kind: EventKind::Step("dial".into()),
        };
        let events = [
            request(1, &["bad"], ""),
            request(1, &["bad", "good"], ""),
            // Other stream: not merged with stream 1's.
            request(2, &["bad"], ""),
            // Shrinks: both kept.
            request(2, &[], ""),
            // Grows stream 1's again: [bad,good] is superseded too.
            request(1, &["bad", "good", "x"], ""),
            // A step in between: both kept.
            step,
            request(1, &["bad", "good", "x", "y"], ""),
        ];
        assert_eq!(
            superseded_requests(&events),
            std::collections::BTreeSet::from([0, 1])
        );
    }

    #[test]
    fn an_answer_shows_with_the_response_it_answers() {
        let step = |text: &str| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Step,
            kind: EventKind::Step(text.into()),
        };
        let barrier = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Step,
            kind: EventKind::Barrier,
        };
        let response = |nonce: &str| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::ResponseSent {
                stream: 1,
                response: RecordedResponse {
                    type_url: ResourceType::Cluster.type_url().into(),
                    version_info: "1".into(),
                    nonce: nonce.into(),
                    resource_names: vec!["a".into()],
                    encoded_len: 0,
                    delta: None,
                    resource_errors: Vec::new(),
                    bodies: Vec::new(),
                },
            })),
        };
        // The ACK of n1 arrives before or after the next step: one rendering.
        let run = |ack_late: bool| {
            let mut events = vec![
                step("watch"),
                request(1, &["a"], ""),
                response("n1"),
                barrier.clone(),
            ];
            let ack = request(1, &["a"], "n1");
            if !ack_late {
                events.push(ack.clone());
            }
            events.push(step("remove"));
            if ack_late {
                events.push(ack);
            }
            render_normalized(&events, &|t| t.to_string())
        };
        assert_eq!(run(false), run(true));
        // An answer that also subscribes stays where it arrived.
        let events = [
            step("watch"),
            request(1, &["a"], ""),
            response("n1"),
            barrier,
            step("watch b"),
            request(1, &["a", "b"], "n1"),
        ];
        assert_eq!(
            answer_groups(&events, step_groups(&events)),
            vec![1, 1, 1, 1, 2, 2]
        );
    }

    #[test]
    fn subsets_ignore_order_and_repeats() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_subset(&names(&[]), &names(&[])));
        assert!(is_subset(&names(&["b", "a", "a"]), &names(&["a", "b"])));
        assert!(!is_subset(&names(&["a", "c"]), &names(&["a", "b"])));
    }

    #[test]
    fn adjacent_closes_of_one_server_render_in_one_order() {
        let server = |kind: ServerEvent| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("fallback".into()),
            kind: EventKind::Server(Box::new(kind)),
        };
        let stream_closed = server(ServerEvent::StreamClosed {
            stream: 1,
            code: tonic::Code::Ok,
            message: xds_fake_server::event::CLIENT_HALF_CLOSED.into(),
            by_client: true,
            kds: None,
        });
        let connection_closed = server(ServerEvent::ConnectionClosed { connection: 1 });
        let one = [stream_closed.clone(), connection_closed.clone()];
        let other = [connection_closed, stream_closed];
        let render = |events: &[TimelineEvent]| render_normalized(events, &|t| t.to_string());
        assert_eq!(render(&one), render(&other));
        assert!(render(&one).contains("connection 1 closed"));
    }

    #[test]
    fn settling_rpcs_and_their_serves_are_left_out_of_normalised_renderings() {
        let event = |source: Source, kind: EventKind| TimelineEvent {
            at: Duration::ZERO,
            source,
            kind,
        };
        let served = || {
            event(
                Source::Backend("b1".into()),
                EventKind::Backend(BackendEvent::RpcServed {
                    method: "/m".into(),
                }),
            )
        };
        let rpc = |code: tonic::Code, settling: bool| {
            event(
                Source::Client,
                EventKind::Rpc {
                    target: "xds:///svc".into(),
                    outcome: RpcOutcome {
                        code,
                        message: String::new(),
                        backend: (code == tonic::Code::Ok).then(|| "b1".into()),
                    },
                    settling,
                },
            )
        };
        let step = |text: &str| event(Source::Step, EventKind::Step(text.into()));
        let render = |events: &[TimelineEvent]| render_normalized(events, &|t| t.to_string());
        let settled_at_once = [
            step("rpc"),
            served(),
            rpc(tonic::Code::Ok, false),
            step("rpc until UNAVAILABLE"),
            rpc(tonic::Code::Unavailable, false),
        ];
        let settled_later = [
            step("rpc"),
            served(),
            rpc(tonic::Code::Ok, false),
            step("rpc until UNAVAILABLE"),
            served(),
            rpc(tonic::Code::Ok, true),
            served(),
            rpc(tonic::Code::Ok, true),
            rpc(tonic::Code::Unavailable, false),
        ];
        assert_eq!(render(&settled_at_once), render(&settled_later));
        // The serve of the step before is still shown; the raw line says
        // the RPC was settling.
        assert!(render(&settled_later).contains("[ 1]  b1       served /m"));
        assert_eq!(
            describe(&rpc(tonic::Code::Ok, true).kind).as_deref(),
            Some("rpc xds:///svc: OK from b1 (settling)")
        );
    }

    #[test]
    fn an_action_right_after_another_shares_its_group() {
        let event = |source: Source, kind: EventKind| TimelineEvent {
            at: Duration::ZERO,
            source,
            kind,
        };
        let step = |text: &str| event(Source::Step, EventKind::Step(text.into()));
        let accepted = || {
            event(
                Source::Server("primary".into()),
                EventKind::Server(Box::new(ServerEvent::ConnectionAccepted { connection: 1 })),
            )
        };
        let render = |events: &[TimelineEvent]| render_normalized(events, &|t| t.to_string());
        // The dial's connection lands before or after the rpc step is taken.
        let early = [step("dial"), accepted(), step("rpc")];
        let late = [step("dial"), step("rpc"), accepted()];
        assert_eq!(render(&early), render(&late));
        // After a barrier (an expectation met) the next step opens a group.
        let awaited = [
            step("dial"),
            accepted(),
            event(Source::Step, EventKind::Barrier),
            step("rpc"),
        ];
        assert_eq!(
            render(&awaited),
            "[ 1]  step     == dial\n[ 1]  primary  connection 1 accepted\n[ 2]  step     == rpc\n"
        );
    }

    #[test]
    fn the_node_is_left_out_of_normalised_lines() {
        assert_eq!(
            drop_node(r#"<- LDS names=[l] version="" nonce="" node="n1" (initial)"#),
            r#"<- LDS names=[l] version="" nonce="" (initial)"#
        );
        assert_eq!(drop_node("no node here"), "no node here");
    }
}
