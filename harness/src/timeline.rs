//! The timeline: every event of a run — the script's actions, what each
//! fake server saw and sent, what the client reported, how its CSDS view
//! changed — in one list, in the order it happened, with virtual
//! timestamps. Rendered one event per line for snapshots and reports.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use xds_client_under_test::{
    AdminObservation, DialNotification, ObservedEvent, RpcOutcome, WatcherNotification,
};
use xds_fake_server::backend::BackendEvent;
use xds_fake_server::event::{RecordedRequest, RecordedResponse, ServerEvent};
use xds_vocabulary::RequestKind;
use xds_vocabulary::{AdsProtocol, ClientEvent, LogLevel, ResourceType, XdsError, code_name};

#[derive(Clone, Debug, PartialEq)]
pub struct TimelineEvent {
    /// Virtual time since the scenario started.
    pub at: Duration,
    /// Who: a server name, `client`, `csds` or `step`.
    pub source: String,
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// An action of the script, as written.
    Step(String),
    /// Boxed: server events are large, and a timeline holds many events.
    Server(Box<ServerEvent>),
    Client(ObservedEvent),
    Csds(CsdsChange),
    /// How the client's CSDS service answered a `csds_request` step.
    CsdsReply(CsdsReply),
    /// How an RPC of an `rpc` step ended.
    Rpc {
        target: String,
        outcome: RpcOutcome,
        /// An RPC of an `until` step that did not end as wanted, while the
        /// client was still applying its config: not in normalised
        /// renderings, whose content must not depend on timing.
        settling: bool,
    },
    /// What a data-plane backend did.
    Backend(BackendEvent),
    /// Something the harness itself noticed (a client command failing).
    Note(String),
    /// The script waited here (an expectation met, or a `wait` over).
    /// Not shown; it tells normalised renderings where the effects of the
    /// steps before it are known to be over.
    Barrier,
}

/// The answer to a CSDS request of a scenario's making.
#[derive(Clone, Debug, PartialEq)]
pub struct CsdsReply {
    /// How many `node_matchers` the request had.
    pub node_matchers: usize,
    /// OK, or the status the service answered with.
    pub code: tonic::Code,
    pub message: String,
    /// The response's ClientConfigs (0 on an error).
    pub configs: usize,
}

/// One resource's CSDS state before and after a poll.
#[derive(Clone, Debug, PartialEq)]
pub struct CsdsChange {
    pub client_scope: String,
    pub type_url: String,
    pub name: String,
    pub from: Option<CsdsEntry>,
    pub to: Option<CsdsEntry>,
}

/// A resource's status in the client's CSDS view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsdsStatus {
    Requested,
    Acked,
    Nacked,
    DoesNotExist,
    /// gRFC A88: the server sent an error for the resource (xRFC TP3).
    ReceivedError,
    /// gRFC A88: the timer fired under `resource_timer_is_transient_error`.
    Timeout,
    /// Not in the client's CSDS dump at all.
    Absent,
}

impl CsdsStatus {
    /// In the order scenario file errors list them.
    pub const ALL: [CsdsStatus; 7] = [
        CsdsStatus::Requested,
        CsdsStatus::Acked,
        CsdsStatus::Nacked,
        CsdsStatus::DoesNotExist,
        CsdsStatus::ReceivedError,
        CsdsStatus::Timeout,
        CsdsStatus::Absent,
    ];
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsdsEntry {
    pub status: CsdsStatus,
    pub version: String,
    /// `error_state.details`, if the entry has an error state.
    pub error: Option<String>,
    /// What the timeline does not show but expectations may check.
    pub detail: CsdsDetail,
}

/// The rest of a CSDS entry: timestamps and versions a timeline line
/// leaves out (timestamps differ on every run), which `csds` expectations
/// can still check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CsdsDetail {
    /// `error_state.version_info` (empty without an error state).
    pub error_version: String,
    /// `error_state.last_update_attempt` is set.
    pub error_time: bool,
    /// `last_updated` is set.
    pub last_updated: bool,
    /// `xds_config` is set (the entry holds a resource).
    pub config: bool,
}

impl CsdsEntry {
    /// What a timeline line shows: a change of anything else is no event.
    pub fn shown(&self) -> (CsdsStatus, &str, Option<&str>) {
        (self.status, &self.version, self.error.as_deref())
    }
}

/// How many events one run's timeline holds. A client that floods the
/// harness (an adapter printing log lines as fast as it can) must not take
/// its memory and its reports with it: past this the run is stopped (see
/// [`Timeline::overflowed`]). Far above any real scenario's few hundred.
pub const MAX_EVENTS: usize = 100_000;

/// How many of those may be client log lines: logs are the one kind a
/// client can produce without the script asking, so they get their own,
/// smaller share, and the run goes on without them past it.
pub const MAX_LOG_EVENTS: usize = 10_000;

/// How much of one client log line the timeline keeps: enough for any
/// trace line a person reads, not the megabyte a line may be on the wire.
pub const MAX_LOG_MESSAGE: usize = 2048;

/// A shared, append-only timeline. Cloning shares it.
#[derive(Clone)]
pub struct Timeline {
    inner: Arc<Mutex<Recorded>>,
    start: Instant,
    changed: Arc<Notify>,
    /// Notified once, when the timeline reached [`MAX_EVENTS`].
    overflow: Arc<Notify>,
}

/// The events and what the caps left out.
#[derive(Default)]
struct Recorded {
    events: Vec<TimelineEvent>,
    log_events: usize,
    logs_dropped: usize,
    dropped: usize,
}

impl Timeline {
    pub fn new(start: Instant) -> Self {
        Timeline {
            inner: Arc::default(),
            start,
            changed: Arc::new(Notify::new()),
            overflow: Arc::new(Notify::new()),
        }
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    /// Appends an event stamped now.
    pub fn record(&self, source: impl Into<String>, kind: EventKind) {
        self.record_at(Instant::now(), source, kind);
    }

    pub fn record_at(&self, at: Instant, source: impl Into<String>, mut kind: EventKind) {
        if let EventKind::Client(ObservedEvent::Client(ClientEvent::Log { message, .. })) =
            &mut kind
            && message.len() > MAX_LOG_MESSAGE
        {
            *message = xds_vocabulary::cut::cut(message, MAX_LOG_MESSAGE).into_owned();
        }
        let event = TimelineEvent {
            at: at.saturating_duration_since(self.start),
            source: source.into(),
            kind,
        };
        let is_log = matches!(
            event.kind,
            EventKind::Client(ObservedEvent::Client(ClientEvent::Log { .. }))
        );
        {
            let mut recorded = self.lock();
            if is_log && recorded.log_events >= MAX_LOG_EVENTS {
                recorded.logs_dropped += 1;
                return;
            }
            if recorded.events.len() >= MAX_EVENTS {
                recorded.dropped += 1;
                if recorded.dropped == 1 {
                    self.overflow.notify_one();
                }
                return;
            }
            if is_log {
                recorded.log_events += 1;
            }
            recorded.events.push(event);
        }
        self.changed.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        // A panic while holding the lock cannot leave the Vec half-written.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves once the timeline is full ([`MAX_EVENTS`]): the runner
    /// stops the run then, rather than play on with events missing.
    pub async fn overflowed(&self) {
        self.overflow.notified().await
    }

    /// What the caps left out, as a sentence, if anything.
    pub fn dropped_note(&self) -> Option<String> {
        let recorded = self.lock();
        let mut parts = Vec::new();
        if recorded.logs_dropped > 0 {
            parts.push(format!(
                "{} client log lines past the first {MAX_LOG_EVENTS}",
                recorded.logs_dropped
            ));
        }
        if recorded.dropped > 0 {
            parts.push(format!(
                "{} events past the timeline's limit of {MAX_EVENTS}",
                recorded.dropped
            ));
        }
        (!parts.is_empty()).then(|| format!("not recorded: {}", parts.join(" and ")))
    }

    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn events(&self) -> Vec<TimelineEvent> {
        self.lock().events.clone()
    }

    /// Removes and returns every event recorded so far, for a consumer
    /// that only streams them (`serve` prints and forgets).
    pub fn take_events(&self) -> Vec<TimelineEvent> {
        std::mem::take(&mut self.lock().events)
    }

    pub fn get(&self, index: usize) -> Option<TimelineEvent> {
        self.lock().events.get(index).cloned()
    }

    /// The first event from index `from` on that `accept`s, with its index;
    /// searched in place (nothing else is copied).
    pub fn find_from(
        &self,
        from: usize,
        mut accept: impl FnMut(usize, &TimelineEvent) -> bool,
    ) -> Option<(usize, TimelineEvent)> {
        self.lock()
            .events
            .iter()
            .enumerate()
            .skip(from)
            .find(|(i, e)| accept(*i, e))
            .map(|(i, e)| (i, e.clone()))
    }

    /// Resolves when an event is recorded (or one was since the last call).
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    pub fn render(&self) -> String {
        render_events(&self.events(), 0)
    }
}

/// Renders events, numbering none; `from` only offsets nothing — it lets
/// failure reports show a window of the timeline.
pub fn render_events(events: &[TimelineEvent], from: usize) -> String {
    let mut out = String::new();
    for event in events.iter().skip(from) {
        if let Some(line) = render_line(event) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

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
    let step_group = step_groups(events);
    let mut groups: Vec<Vec<NormalizedLine>> = (0..=step_group.last().copied().unwrap_or(0))
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
            EventKind::Note(_) if event.source == "csds" => continue,
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
            source: event.source.as_str(),
            text: normalize(&event.source, &text),
            wire_type: wire_key(&event.kind, &event.source, &streams),
            is_close,
        });
    }
    let mut out = String::new();
    for (index, mut group) in groups.into_iter().enumerate() {
        // Stable: each source keeps its own order; steps stay first.
        group.sort_by_key(|l| if l.source == "step" { "" } else { l.source });
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
    source: &'a str,
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
                let (open, batch, batch_group) = batches.entry(event.source.clone()).or_default();
                if open.is_empty() || *batch_group != group {
                    *batch += 1;
                    *batch_group = group;
                }
                open.insert(*stream);
                opened
                    .entry((event.source.clone(), *stream))
                    .or_insert((*batch, None));
            }
            ServerEvent::StreamClosed { stream, .. } => {
                if let Some((open, _, _)) = batches.get_mut(&event.source) {
                    open.remove(stream);
                }
            }
            ServerEvent::RequestReceived { stream, request } => {
                if let Some((_, first @ None)) = opened.get_mut(&(event.source.clone(), *stream)) {
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
                .entry((event.source.clone(), *stream, type_label.clone()))
                .or_default();
            *count += 1;
            labels
                .entry((event.source.clone(), response.nonce.clone()))
                .or_insert_with(|| {
                    let stream = stream_label(streams, &event.source, *stream);
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

/// One line, e.g.
/// `   0.000s  primary  <- [s1] DiscoveryRequest CDS names=[c1] version="" nonce="" node=yes (initial)`.
/// None for events too fine-grained to show (they can still be matched).
pub fn render_line(event: &TimelineEvent) -> Option<String> {
    let text = describe(&event.kind)?;
    // One event, one line: failure messages number events by the written
    // timeline's lines.
    let text = if text.contains(['\n', '\r']) {
        text.replace('\r', "\\r").replace('\n', "\\n")
    } else {
        text
    };
    Some(format!(
        "{:>9.3}s  {:<8} {}",
        event.at.as_secs_f64(),
        event.source,
        text
    ))
}

/// Per event, its line number (from 1) in the written timeline
/// ([`render_events`] of all events), or `None` for an event not shown.
pub fn line_numbers(events: &[TimelineEvent]) -> Vec<Option<usize>> {
    let mut line = 0;
    events
        .iter()
        .map(|event| {
            describe(&event.kind).map(|_| {
                line += 1;
                line
            })
        })
        .collect()
}

pub fn type_name(type_url: &str) -> String {
    match ResourceType::from_type_url(type_url) {
        Some(t) => t.short_name().to_string(),
        None if type_url.is_empty() => "\"\"".to_string(),
        None => type_url.to_string(),
    }
}

fn names(list: &[String]) -> String {
    format!("[{}]", list.join(","))
}

fn error_text(e: &XdsError) -> String {
    status_text(e.code, &e.message)
}

fn status_text(code: tonic::Code, message: &str) -> String {
    if message.is_empty() {
        code_name(code).to_string()
    } else {
        format!("{}: {message}", code_name(code))
    }
}

pub fn describe(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::Step(text) => format!("== {text}"),
        EventKind::Note(text) => format!("!! {text}"),
        EventKind::Barrier => return None,
        EventKind::Server(e) => describe_server(e),
        EventKind::Client(e) => describe_client(e)?,
        EventKind::Csds(c) => describe_csds(c),
        EventKind::CsdsReply(reply) => {
            let answer = if reply.code == tonic::Code::Ok {
                format!("OK, {} client configs", reply.configs)
            } else {
                status_text(reply.code, &reply.message)
            };
            format!(
                "CSDS request with {} node_matchers: {answer}",
                reply.node_matchers
            )
        }
        EventKind::Rpc {
            target,
            outcome,
            settling,
        } => {
            let text = match &outcome.backend {
                Some(backend) if outcome.code == tonic::Code::Ok => {
                    format!("rpc {target}: OK from {backend}")
                }
                _ => format!(
                    "rpc {target}: {}",
                    status_text(outcome.code, &outcome.message)
                ),
            };
            if *settling {
                format!("{text} (settling)")
            } else {
                text
            }
        }
        EventKind::Backend(BackendEvent::RpcServed { method }) => format!("served {method}"),
    })
}

fn describe_server(event: &ServerEvent) -> String {
    match event {
        ServerEvent::ConnectionAccepted { connection } => {
            format!("connection {connection} accepted")
        }
        ServerEvent::ConnectionRefused { address } => format!("connection to {address} refused"),
        ServerEvent::ConnectionClosed { connection } => format!("connection {connection} closed"),
        ServerEvent::TlsEstablished {
            connection,
            client_certificate,
        } => {
            let client = if *client_certificate {
                "client certificate verified"
            } else {
                "no client certificate"
            };
            format!("connection {connection}: TLS established, {client}")
        }
        ServerEvent::TlsFailed {
            connection,
            failure,
        } => format!("connection {connection}: TLS handshake failed: {failure}"),
        ServerEvent::StreamOpened {
            stream,
            connection,
            protocol,
        } => {
            let kind = match protocol {
                AdsProtocol::Sotw => "ADS stream",
                AdsProtocol::Delta => "delta ADS stream",
            };
            match connection {
                Some(c) => format!("[s{stream}] {kind} opened on connection {c}"),
                None => format!("[s{stream}] {kind} opened"),
            }
        }
        ServerEvent::StreamClosed {
            stream,
            code,
            message,
            by_client,
        } => {
            let who = if *by_client { "by client" } else { "by server" };
            format!(
                "[s{stream}] ADS stream closed {who}: {}",
                status_text(*code, message)
            )
        }
        ServerEvent::RequestReceived { stream, request } => describe_request(*stream, request),
        ServerEvent::ResponseSent { stream, response } => {
            describe_response("->", *stream, response)
        }
        ServerEvent::ResponseDropped { stream, response } => format!(
            "{} (dropped: never reaches the client)",
            describe_response("-x", *stream, response)
        ),
        ServerEvent::FaultApplied { fault } => format!("fault: {fault}"),
        ServerEvent::ResourcesChanged {
            type_url,
            version,
            updated,
            removed,
        } => {
            let mut s = format!("store {} version={version:?}", type_name(type_url));
            if !updated.is_empty() {
                let _ = write!(s, " set={}", names(updated));
            }
            if !removed.is_empty() {
                let _ = write!(s, " removed={}", names(removed));
            }
            s
        }
    }
}

fn describe_request(stream: u64, r: &RecordedRequest) -> String {
    let node = match &r.node {
        Some(n) => format!(" node={:?}", n.id),
        None => String::new(),
    };
    let kind = match r.kind {
        RequestKind::Initial => "(initial)".to_string(),
        RequestKind::Ack => "(ACK)".to_string(),
        RequestKind::UnknownNonce => "(unknown nonce)".to_string(),
        RequestKind::Nack | RequestKind::NackOfUnknownNonce => {
            let of = if r.kind == RequestKind::NackOfUnknownNonce {
                " of unknown nonce"
            } else {
                ""
            };
            match &r.error_detail {
                Some((code, message)) => format!(
                    "(NACK{of} {}: {message})",
                    code_name(tonic::Code::from_i32(*code))
                ),
                None => format!("(NACK{of})"),
            }
        }
    };
    let Some(delta) = &r.delta else {
        return format!(
            "<- [s{stream}] DiscoveryRequest {} names={} version={:?} nonce={:?}{node} {kind}",
            type_name(&r.type_url),
            names(&r.resource_names),
            r.version_info,
            r.response_nonce
        );
    };
    // What changed travels: `+` subscribes, `-` unsubscribes.
    let mut changes = format!("+{}", names(&delta.subscribe));
    if !delta.unsubscribe.is_empty() {
        let _ = write!(changes, " -{}", names(&delta.unsubscribe));
    }
    if !delta.initial_resource_versions.is_empty() {
        let initial: Vec<String> = delta
            .initial_resource_versions
            .iter()
            .map(|(name, version)| format!("{name}:{version:?}"))
            .collect();
        let _ = write!(changes, " initial={{{}}}", initial.join(","));
    }
    format!(
        "<- [s{stream}] DeltaDiscoveryRequest {} {changes} nonce={:?}{node} {kind}",
        type_name(&r.type_url),
        r.response_nonce
    )
}

fn describe_response(arrow: &str, stream: u64, response: &RecordedResponse) -> String {
    let mut s = describe_response_body(arrow, stream, response);
    if !response.resource_errors.is_empty() {
        let errors: Vec<String> = response
            .resource_errors
            .iter()
            .map(|e| {
                let name = e.name.as_deref().unwrap_or("(no name)");
                match &e.status {
                    Some((code, message)) => format!(
                        "{name}:{}",
                        status_text(tonic::Code::from_i32(*code), message)
                    ),
                    None => format!("{name}:(no error_detail)"),
                }
            })
            .collect();
        let _ = write!(s, " resource_errors=[{}]", errors.join(","));
    }
    s
}

fn describe_response_body(arrow: &str, stream: u64, response: &RecordedResponse) -> String {
    let Some(delta) = &response.delta else {
        return format!(
            "{arrow} [s{stream}] DiscoveryResponse {} version={:?} nonce={:?} resources={}",
            type_name(&response.type_url),
            response.version_info,
            response.nonce,
            names(&response.resource_names)
        );
    };
    // Each resource with its own version (and TTL, or a missing body).
    let resources: Vec<String> = response
        .resource_names
        .iter()
        .zip(&delta.resources)
        .map(|(name, r)| {
            let mut s = format!("{name}:{:?}", r.version);
            if let Some(ttl) = r.ttl {
                let _ = write!(s, " ttl={:.3}s", ttl.as_secs_f64());
            }
            if !r.body {
                s.push_str(" (no body)");
            }
            s
        })
        .collect();
    let mut s = format!(
        "{arrow} [s{stream}] DeltaDiscoveryResponse {} system_version={:?} nonce={:?} resources=[{}]",
        type_name(&response.type_url),
        response.version_info,
        response.nonce,
        resources.join(",")
    );
    if !delta.removed_resources.is_empty() {
        let _ = write!(s, " removed={}", names(&delta.removed_resources));
    }
    s
}

fn describe_client(event: &ObservedEvent) -> Option<String> {
    Some(match event {
        ObservedEvent::Watcher {
            resource_type,
            name,
            notification,
        } => {
            let what = match notification {
                WatcherNotification::Changed { summary } => format!("changed: {summary}"),
                WatcherNotification::ResourceError(e) => {
                    format!("resource error {}", error_text(e))
                }
                WatcherNotification::AmbientError(e) => format!("ambient error {}", error_text(e)),
                WatcherNotification::AmbientErrorCleared => "ambient error cleared".to_string(),
                WatcherNotification::DoesNotExist => "does not exist".to_string(),
            };
            format!("watcher {resource_type} {name}: {what}")
        }
        ObservedEvent::Dial { target, update } => match update {
            DialNotification::Config { summary, .. } => format!("dial {target}: config {summary}"),
            DialNotification::Error(e) => format!("dial {target}: error {}", error_text(e)),
        },
        ObservedEvent::ChannelState { target, state } => {
            format!("channel {target}: {}", state.name())
        }
        ObservedEvent::ServingStatus { address, status } => match status {
            Ok(()) => format!("server {address}: SERVING"),
            Err(e) => format!("server {address}: NOT_SERVING {}", error_text(e)),
        },
        ObservedEvent::Client(e) => describe_client_event(e)?,
        ObservedEvent::Admin(observation) => describe_admin(observation),
    })
}

/// `admin CDS svc-cluster: active v1`, `admin EDS svc-endpoints: active
/// [127.0.0.1:1]`, `admin stat cluster_manager.cds.update_rejected = 1`.
pub fn describe_admin(observation: &AdminObservation) -> String {
    match observation {
        AdminObservation::Resource {
            resource_type,
            name,
            version,
            state,
            detail,
        } => {
            let mut text = format!("admin {resource_type} {name}: {}", state.name());
            if let Some(version) = version {
                text.push_str(&format!(" v{version}"));
            }
            if !detail.is_empty() {
                text.push_str(&format!(" {detail}"));
            }
            text
        }
        AdminObservation::Stat { name, value } => format!("admin stat {name} = {value}"),
    }
}

fn describe_client_event(event: &ClientEvent) -> Option<String> {
    Some(match event {
        ClientEvent::AdsCallStarted { server } => format!("ADS call to {server} started"),
        ClientEvent::AdsCallFinished {
            server,
            status,
            seen_response,
        } => format!(
            "ADS call to {server} ended ({}): {}",
            if *seen_response {
                "after a response"
            } else {
                "no response"
            },
            error_text(status)
        ),
        ClientEvent::Connected {
            server,
            connected: true,
        } => format!("connected to {server}"),
        ClientEvent::Connected {
            server,
            connected: false,
        } => format!("no longer connected to {server}"),
        ClientEvent::RetryScheduled { server, delay } => {
            format!("next ADS call to {server} in {:.3}s", delay.as_secs_f64())
        }
        ClientEvent::ServerStatus {
            server,
            error: None,
            failures,
        } => {
            format!("server {server} healthy (failures={failures})")
        }
        ClientEvent::ServerStatus {
            server,
            error: Some(e),
            failures,
        } => {
            format!(
                "server {server} failing (failures={failures}): {}",
                error_text(e)
            )
        }
        ClientEvent::ResourceTimerStarted {
            resource_type,
            name,
            timeout,
        } => {
            format!(
                "does-not-exist timer for {resource_type} {name} started ({}s)",
                timeout.as_secs_f64()
            )
        }
        // Every request already has its own line, from the server.
        ClientEvent::SubscriptionSent { .. } => return None,
        ClientEvent::FallbackStarted { authority, server } => {
            format!("authority {authority:?} falls back to {server}")
        }
        ClientEvent::FellForward { authority, server } => {
            format!("authority {authority:?} back on {server}")
        }
        ClientEvent::Log { level, message } => {
            let level = match level {
                LogLevel::Info => "INFO",
                LogLevel::Warning => "WARNING",
                LogLevel::Error => "ERROR",
            };
            format!("log {level}: {message}")
        }
    })
}

pub fn csds_status_name(status: CsdsStatus) -> &'static str {
    match status {
        CsdsStatus::Requested => "REQUESTED",
        CsdsStatus::Acked => "ACKED",
        CsdsStatus::Nacked => "NACKED",
        CsdsStatus::DoesNotExist => "DOES_NOT_EXIST",
        CsdsStatus::ReceivedError => "RECEIVED_ERROR",
        CsdsStatus::Timeout => "TIMEOUT",
        CsdsStatus::Absent => "ABSENT",
    }
}

fn describe_entry(entry: &Option<CsdsEntry>) -> String {
    match entry {
        None => "ABSENT".to_string(),
        Some(e) => {
            let mut s = csds_status_name(e.status).to_string();
            if !e.version.is_empty() {
                let _ = write!(s, " version={:?}", e.version);
            }
            s
        }
    }
}

fn describe_csds(c: &CsdsChange) -> String {
    let scope = if c.client_scope.is_empty() {
        String::new()
    } else {
        format!("[{}] ", c.client_scope)
    };
    format!(
        "{scope}{} {}: {} -> {}",
        type_name(&c.type_url),
        c.name,
        describe_entry(&c.from),
        describe_entry(&c.to)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(message: String) -> EventKind {
        EventKind::Client(ObservedEvent::Client(ClientEvent::Log {
            level: LogLevel::Info,
            message,
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn a_log_flood_is_capped_and_said() {
        let timeline = Timeline::new(Instant::now());
        for i in 0..MAX_LOG_EVENTS + 5 {
            timeline.record("client", log(format!("line {i}")));
        }
        timeline.record("step", EventKind::Step("watch".into()));
        // The log share is full, the step is still recorded.
        assert_eq!(timeline.len(), MAX_LOG_EVENTS + 1);
        assert_eq!(
            timeline.dropped_note().as_deref(),
            Some("not recorded: 5 client log lines past the first 10000")
        );
        let long = timeline.clone();
        long.record("client", log("x".repeat(MAX_LOG_MESSAGE * 3)));
        assert_eq!(timeline.len(), MAX_LOG_EVENTS + 1, "over the log share");
    }

    #[tokio::test(start_paused = true)]
    async fn long_log_lines_are_cut_with_a_marker() {
        let timeline = Timeline::new(Instant::now());
        timeline.record("client", log("y".repeat(MAX_LOG_MESSAGE + 100)));
        let Some(TimelineEvent {
            kind: EventKind::Client(ObservedEvent::Client(ClientEvent::Log { message, .. })),
            ..
        }) = timeline.get(0)
        else {
            panic!("no log event");
        };
        assert!(message.ends_with(" [... 100 more bytes]"), "{message}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_timeline_says_so_once() {
        let timeline = Timeline::new(Instant::now());
        for _ in 0..MAX_EVENTS + 3 {
            timeline.record("step", EventKind::Barrier);
        }
        assert_eq!(timeline.len(), MAX_EVENTS);
        // The overflow was signalled before anyone waited: the permit is kept.
        tokio::time::timeout(Duration::from_secs(1), timeline.overflowed())
            .await
            .expect("overflow signalled");
        assert!(
            timeline
                .dropped_note()
                .is_some_and(|n| n.contains("3 events past the timeline's limit of 100000"))
        );
    }

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
            source: "primary".into(),
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
            source: "step".into(),
            kind: EventKind::Step(text.into()),
        };
        let opened = |stream: u64| TimelineEvent {
            at: Duration::ZERO,
            source: "primary".into(),
            kind: EventKind::Server(Box::new(ServerEvent::StreamOpened {
                protocol: AdsProtocol::Sotw,
                stream,
                connection: Some(1),
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
            source: "primary".into(),
            kind: EventKind::Server(Box::new(ServerEvent::StreamClosed {
                stream,
                code: tonic::Code::Unknown,
                message: "gone".into(),
                by_client: true,
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
            source: "step".into(),
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
            source: "fallback".into(),
            kind: EventKind::Server(Box::new(kind)),
        };
        let stream_closed = server(ServerEvent::StreamClosed {
            stream: 1,
            code: tonic::Code::Ok,
            message: "client half-closed".into(),
            by_client: true,
        });
        let connection_closed = server(ServerEvent::ConnectionClosed { connection: 1 });
        let one = [stream_closed.clone(), connection_closed.clone()];
        let other = [connection_closed, stream_closed];
        let render = |events: &[TimelineEvent]| render_normalized(events, &|t| t.to_string());
        assert_eq!(render(&one), render(&other));
        assert!(render(&one).contains("connection 1 closed"));
    }

    #[test]
    fn tls_handshakes_say_how_they_ended() {
        use xds_fake_server::event::TlsFailure;
        let lines = [
            (
                ServerEvent::TlsEstablished {
                    connection: 1,
                    client_certificate: true,
                },
                "connection 1: TLS established, client certificate verified",
            ),
            (
                ServerEvent::TlsEstablished {
                    connection: 2,
                    client_certificate: false,
                },
                "connection 2: TLS established, no client certificate",
            ),
            (
                ServerEvent::TlsFailed {
                    connection: 3,
                    failure: TlsFailure::AlertFromClient("UnknownCA".into()),
                },
                "connection 3: TLS handshake failed: the client sent alert UnknownCA",
            ),
            (
                ServerEvent::TlsFailed {
                    connection: 4,
                    failure: TlsFailure::ClosedByClient,
                },
                "connection 4: TLS handshake failed: the client closed the connection without an alert",
            ),
            (
                ServerEvent::TlsFailed {
                    connection: 5,
                    failure: TlsFailure::NoClientCertificate,
                },
                "connection 5: TLS handshake failed: the client sent no certificate",
            ),
        ];
        for (event, text) in lines {
            assert_eq!(describe_server(&event), text);
        }
    }

    #[test]
    fn settling_rpcs_and_their_serves_are_left_out_of_normalised_renderings() {
        let event = |source: &str, kind: EventKind| TimelineEvent {
            at: Duration::ZERO,
            source: source.into(),
            kind,
        };
        let served = || {
            event(
                "b1",
                EventKind::Backend(BackendEvent::RpcServed {
                    method: "/m".into(),
                }),
            )
        };
        let rpc = |code: tonic::Code, settling: bool| {
            event(
                "client",
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
        let step = |text: &str| event("step", EventKind::Step(text.into()));
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
        let event = |source: &str, kind: EventKind| TimelineEvent {
            at: Duration::ZERO,
            source: source.into(),
            kind,
        };
        let step = |text: &str| event("step", EventKind::Step(text.into()));
        let accepted = || {
            event(
                "primary",
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
            event("step", EventKind::Barrier),
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
