//! The timeline: every event of a run — the script's actions, what each
//! fake server saw and sent, what the client reported, how its CSDS view
//! changed — in one list, in the order it happened, with virtual
//! timestamps. Rendered one event per line for snapshots and reports.
//!
//! This module is the store (events, who they are from, the caps that
//! bound it); `describe` says how each event reads, one line each;
//! `normalize` renders real-time runs so that what timing decides is left
//! out.

mod describe;
mod normalize;
mod weight;

pub use describe::{
    csds_status_name, describe, describe_admin, line_numbers, render_events, render_events_tail,
    render_line, type_name,
};
pub use normalize::render_normalized;
pub use weight::weight;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use xds_client_under_test::{ObservedEvent, RpcOutcome};
use xds_fake_server::backend::BackendEvent;
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::ClientEvent;

#[derive(Clone, Debug, PartialEq)]
pub struct TimelineEvent {
    /// Virtual time since the scenario started.
    pub at: Duration,
    /// Who.
    pub source: Source,
    pub kind: EventKind,
}

/// Who an event is from; a timeline line shows it as its second column.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// The script: its actions and waits (`step`).
    Step,
    /// The client under test: what it reported (`client`), RPC results.
    Client,
    /// The client's CSDS view, as polled, and CSDS answers (`csds`).
    Csds,
    /// The harness itself (`harness`): a client that did not shut down,
    /// what the caps left out.
    Harness,
    /// A fake ADS server, by its name in the scenario.
    Server(String),
    /// A data-plane backend, by its name in the scenario.
    Backend(String),
    /// Scaffolding the harness added for a client (projected watches):
    /// the scaffold server, or what a scenario's server saw of the
    /// scaffolding's own subscriptions (by the server's name). Shown as
    /// `~name`, never matched against the scenario's expectations.
    Scaffold(String),
}

impl Source {
    /// As a timeline line shows it.
    pub fn as_str(&self) -> &str {
        match self {
            Source::Step => "step",
            Source::Client => "client",
            Source::Csds => "csds",
            Source::Harness => "harness",
            Source::Server(name) | Source::Backend(name) | Source::Scaffold(name) => name,
        }
    }

    /// The scenario's server an event is from, if it is from one (not
    /// from scaffolding): what wire matchers look at.
    pub fn server(&self) -> Option<&str> {
        match self {
            Source::Server(name) => Some(name),
            _ => None,
        }
    }
}

impl std::fmt::Display for Source {
    /// Padded like a `&str` (`{:<8}` lines timelines up).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Scaffold(name) => f.pad(&format!("~{name}")),
            _ => f.pad(self.as_str()),
        }
    }
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

/// What a verdict points at on the run's timeline (drawn on the matrix's
/// picture): the expectation's window and the event it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub kind: xds_conformance_reports::matrix::MarkKind,
    /// From and to, since the run started.
    pub window: Option<(Duration, Duration)>,
    /// Index into the run's events.
    pub event: Option<usize>,
    /// What was expected, in one line.
    pub expected: String,
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

/// How many bytes one run's timeline may hold (see [`weight`]): the
/// event cap alone lets a client that reconnects with a megabyte-sized
/// node in every stream's first request take gigabytes. Past this the run
/// is stopped, like past [`MAX_EVENTS`]. The largest run of the suite
/// holds under 4 MiB.
pub const MAX_BYTES: usize = 128 << 20;

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
    /// Notified once, when the timeline reached [`MAX_EVENTS`] or
    /// [`MAX_BYTES`].
    overflow: Arc<Notify>,
}

/// The events and what the caps left out.
#[derive(Default)]
struct Recorded {
    events: Vec<TimelineEvent>,
    /// What `events` hold, by [`weight`].
    bytes: usize,
    log_events: usize,
    logs_dropped: usize,
    dropped: usize,
    /// Which limit the timeline reached first.
    full: Option<Full>,
}

/// A limit a timeline reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    Events,
    Bytes,
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Events => write!(f, "{MAX_EVENTS} events"),
            Full::Bytes => write!(f, "{} MiB", MAX_BYTES >> 20),
        }
    }
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
    pub fn record(&self, source: Source, kind: EventKind) {
        self.record_at(Instant::now(), source, kind);
    }

    pub fn record_at(&self, at: Instant, source: Source, mut kind: EventKind) {
        if let EventKind::Client(ObservedEvent::Client(ClientEvent::Log { message, .. })) =
            &mut kind
            && message.len() > MAX_LOG_MESSAGE
        {
            *message = xds_vocabulary::cut::cut(message, MAX_LOG_MESSAGE).into_owned();
        }
        let event = TimelineEvent {
            at: at.saturating_duration_since(self.start),
            source,
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
            let bytes = weight(&event);
            let full = if recorded.events.len() >= MAX_EVENTS {
                Some(Full::Events)
            } else if recorded.bytes + bytes > MAX_BYTES {
                Some(Full::Bytes)
            } else {
                None
            };
            if let Some(full) = full {
                recorded.dropped += 1;
                if recorded.full.is_none() {
                    recorded.full = Some(full);
                    self.overflow.notify_one();
                }
                return;
            }
            if is_log {
                recorded.log_events += 1;
            }
            recorded.bytes += bytes;
            recorded.events.push(event);
        }
        self.changed.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        // A panic while holding the lock cannot leave the Vec half-written.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves once the timeline is full ([`MAX_EVENTS`] or
    /// [`MAX_BYTES`]), with the limit it reached: the runner stops the run
    /// then, rather than play on with events missing.
    pub async fn overflowed(&self) -> Full {
        self.overflow.notified().await;
        self.lock().full.unwrap_or(Full::Events)
    }

    /// The bytes the recorded events hold, by [`weight`].
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The limit the timeline reached, if it did.
    pub fn full(&self) -> Option<Full> {
        self.lock().full
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
        if let Some(full) = recorded.full {
            parts.push(format!(
                "{} events past the timeline's limit of {full}",
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
        let mut recorded = self.lock();
        // What was taken no longer counts: a consumer that streams events
        // for hours stays under the byte limit.
        recorded.bytes = 0;
        std::mem::take(&mut recorded.events)
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

#[cfg(test)]
mod tests {
    use super::*;
    use xds_fake_server::subscribed::SubscribedNames;
    use xds_vocabulary::LogLevel;
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
            timeline.record(Source::Client, log(format!("line {i}")));
        }
        timeline.record(Source::Step, EventKind::Step("watch".into()));
        // The log share is full, the step is still recorded.
        assert_eq!(timeline.len(), MAX_LOG_EVENTS + 1);
        assert_eq!(
            timeline.dropped_note().as_deref(),
            Some("not recorded: 5 client log lines past the first 10000")
        );
        let long = timeline.clone();
        long.record(Source::Client, log("x".repeat(MAX_LOG_MESSAGE * 3)));
        assert_eq!(timeline.len(), MAX_LOG_EVENTS + 1, "over the log share");
    }

    #[tokio::test(start_paused = true)]
    async fn long_log_lines_are_cut_with_a_marker() {
        let timeline = Timeline::new(Instant::now());
        timeline.record(Source::Client, log("y".repeat(MAX_LOG_MESSAGE + 100)));
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
            timeline.record(Source::Step, EventKind::Barrier);
        }
        assert_eq!(timeline.len(), MAX_EVENTS);
        // The overflow was signalled before anyone waited: the permit is kept.
        tokio::time::timeout(Duration::from_secs(1), timeline.overflowed())
            .await
            .expect("overflow signalled");
        assert!(
            timeline
                .dropped_note()
                .is_some_and(|n| n.contains("3 events past the timeline's limit of 100000 events"))
        );
    }

    fn delta_request(
        kind: xds_vocabulary::RequestKind,
        subscribe: &[String],
        subscription: &SubscribedNames,
    ) -> EventKind {
        use xds_fake_server::event::{RecordedDeltaRequest, RecordedRequest};
        EventKind::Server(Box::new(ServerEvent::RequestReceived {
            stream: 1,
            request: RecordedRequest {
                type_url: "t".into(),
                resource_names: Vec::new(),
                version_info: String::new(),
                response_nonce: "1".into(),
                error_detail: None,
                node: None,
                kind,
                delta: Some(RecordedDeltaRequest {
                    subscribe: subscribe.to_vec(),
                    subscription: subscription.clone(),
                    ..Default::default()
                }),
            },
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeline_is_bounded_in_bytes_and_says_which_bound() {
        let timeline = Timeline::new(Instant::now());
        // Steps of 1 MiB: the byte limit comes long before the event limit.
        let step = "s".repeat(1 << 20);
        for _ in 0..(MAX_BYTES >> 20) + 5 {
            timeline.record(Source::Step, EventKind::Step(step.clone()));
        }
        assert!(
            timeline.len() < MAX_BYTES >> 20,
            "{} events",
            timeline.len()
        );
        assert!(timeline.bytes() <= MAX_BYTES);
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(1), timeline.overflowed())
                .await
                .expect("overflow signalled"),
            Full::Bytes
        );
        assert!(
            timeline
                .dropped_note()
                .is_some_and(|n| n.contains("past the timeline's limit of 128 MiB")),
            "{:?}",
            timeline.dropped_note()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn events_taken_no_longer_count_against_the_limits() {
        let timeline = Timeline::new(Instant::now());
        let step = "s".repeat(1 << 20);
        // Three times the byte limit, streamed out as it comes (`serve`).
        for _ in 0..3 * (MAX_BYTES >> 20) {
            timeline.record(Source::Step, EventKind::Step(step.clone()));
            assert_eq!(timeline.take_events().len(), 1);
        }
        assert_eq!(timeline.dropped_note(), None);
        assert_eq!(timeline.bytes(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_delta_request_counts_what_it_changed_in_the_subscription() {
        use xds_vocabulary::RequestKind::{Ack, Initial};
        let timeline = Timeline::new(Instant::now());
        let server = || Source::Server("s".into());
        let names: Vec<String> = (0..10_000).map(|i| format!("cluster-{i:05}")).collect();
        let mut set: SubscribedNames = names.iter().collect();
        timeline.record(server(), delta_request(Initial, &names, &set));
        let first = timeline.bytes();
        assert!(first > 2 * 10_000 * 13, "the names and the set: {first}");
        timeline.record(server(), delta_request(Ack, &[], &set));
        let ack = timeline.bytes() - first;
        assert!(ack < 1_000, "an ACK shares the set: {ack}");
        // One more name: the paths it copied, not another 10,000 names.
        set = set.iter().chain(["new"]).collect();
        let before = timeline.bytes();
        timeline.record(server(), delta_request(Initial, &["new".into()], &set));
        let change = timeline.bytes() - before;
        assert!((100..8_000).contains(&change), "{change}");
    }
}
