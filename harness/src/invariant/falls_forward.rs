//! `falls-forward` (gRFC A71): the client never uses a lower-priority
//! server's data after a higher-priority one has answered. A71: while on
//! a fallback the client "will still wait for xDS resources on the ADS
//! stream" of the higher-priority servers, and "once such a resource is
//! received, the XdsClient will close connections to the lower-priority
//! server(s) and will use the resources from the higher priority
//! servers".
//!
//! Read off the wire. A server is *up* from the instant the client
//! answers (ACKs or NACKs) a response on one of its streams until that
//! stream closes: the client has read a resource from it on a live
//! stream. A stream of a lower-priority server must then be closed: one
//! still open `GRACE` after the higher-priority server came up (after
//! the stream opened, if later) breaks the rule, judged at the first
//! event past that. So does, a fortiori, an answer to a response on it
//! then: the client took the lower-priority server's data. A client
//! that keeps the stream but ignores its data is caught too: A71 closes
//! it. The reference client drops the lower-priority channels before it
//! even answers the higher-priority response (`worker/fallback.rs`,
//! `set_healthy`: the authority's channels are cut back to the server
//! that answered, the others released), so on virtual time their
//! streams close before that answer reaches the server; the grace only
//! spares a client on real time whose stream end reaches the server a
//! moment late. The rule reads the wire alone, so every client is held
//! to it. Priority is the order of the scenario's servers (A71:
//! "Priority is assigned based on server order in bootstrap.json").
//!
//! Exceptions, each narrow:
//! - a server whose connections are held (`hold_connections` until
//!   `release_connections`) counts neither as up nor as keeping a stream
//!   open: no bytes move, so the server does not see the client close a
//!   stream, and a client that finds a held connection dead (keepalive)
//!   may rightly fall back while the server still counts its stream open;
//! - runs with other XdsClients (`dial`, `rpc`, `serve`: each channel
//!   target and xDS-enabled server has its own XdsClient, A71, falling
//!   back on its own, on the same servers) or with authorities (each has
//!   its own servers) are not read, nor those with one server.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::Fault;
use xds_vocabulary::RequestKind;

use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "falls-forward",
    rule: "the client never uses a lower-priority server's data after a higher-priority one \
           has answered",
    held_to: held::by_all,
    check,
};

/// How long after it must be closed a stream may still show open (the
/// client's stream end reaching the server a moment late); and, for
/// `errors-only-when-all-failed`, how long a stream must have been open
/// before its server counts as live (the client tells its watchers of the
/// failure it falls back on in the turn it opens the next stream).
pub(super) const GRACE: Duration = Duration::from_secs(1);

/// The run's servers in priority order, if the run is one the A71
/// invariants read: two servers or more, no authorities, and no other
/// XdsClient than the one the script watches with.
pub(super) fn servers_by_priority(scenario: &Scenario) -> Option<&[String]> {
    super::one_client(scenario).filter(|s| s.len() >= 2)
}

/// A server the client answered a response from on a stream still open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Up {
    pub priority: usize,
    pub stream: u64,
    /// The instant of the first answer on that stream, or of the end of a
    /// hold of the server if later.
    pub since: Duration,
}

/// The servers' streams, as the wire shows them.
#[derive(Default)]
pub(super) struct Servers {
    /// (priority, stream) -> the instant it opened.
    open: HashMap<(usize, u64), Duration>,
    /// (priority, stream) -> the instant of its first answer.
    answered: HashMap<(usize, u64), Duration>,
    /// Servers whose connections are held.
    held: HashSet<usize>,
    /// Servers that failed (A57: a stream of theirs closed before the
    /// client answered a response on it, a connection refused, or one
    /// closed without carrying a stream) and have not answered since.
    failed: HashSet<usize>,
    /// Connections a stream was opened on: (priority, connection).
    streamed: HashSet<(usize, u64)>,
    /// Servers whose connections were held, and when they were let go:
    /// what the hold kept back (a stream's end) reaches them from then.
    released: HashMap<usize, Duration>,
}

impl Servers {
    /// Reads a server event of the server of `priority` at `at`.
    pub fn read(&mut self, priority: usize, at: Duration, event: &ServerEvent) {
        match event {
            ServerEvent::StreamOpened {
                stream, connection, ..
            } => {
                self.open.insert((priority, *stream), at);
                if let Some(connection) = connection {
                    self.streamed.insert((priority, *connection));
                }
            }
            ServerEvent::RequestReceived { stream, request }
                if matches!(request.kind, RequestKind::Ack | RequestKind::Nack) =>
            {
                self.answered.entry((priority, *stream)).or_insert(at);
                self.failed.remove(&priority);
            }
            ServerEvent::StreamClosed { stream, .. } => {
                self.open.remove(&(priority, *stream));
                // Closed before an answer: maybe before the client got a
                // response, a failure (counted so, the server is live
                // less often: the rules that read it excuse more).
                if self.answered.remove(&(priority, *stream)).is_none() {
                    self.failed.insert(priority);
                }
            }
            ServerEvent::ConnectionRefused { .. } => {
                self.failed.insert(priority);
            }
            // A connection that ends without having carried a stream: the
            // client's attempt failed (A57: the channel in
            // TRANSIENT_FAILURE, e.g. no SETTINGS before its connect
            // timeout, which a hold hides until its release shows the
            // connection end), or it gave the connection up unused
            // (counted so too: it excuses more, never less).
            ServerEvent::ConnectionClosed { connection }
                if !self.streamed.remove(&(priority, *connection)) =>
            {
                self.failed.insert(priority);
            }
            ServerEvent::FaultApplied {
                fault: Fault::HoldConnections(_),
            } => {
                self.held.insert(priority);
            }
            ServerEvent::FaultApplied {
                fault: Fault::ReleaseConnections(_),
            } => {
                self.held.remove(&priority);
                self.released.insert(priority, at);
            }
            _ => {}
        }
    }

    /// When the server of `priority` was last let go from a hold.
    fn released(&self, priority: usize) -> Duration {
        self.released.get(&priority).copied().unwrap_or_default()
    }

    /// The servers up (not held), highest priority first; up since their
    /// first answer, or since a hold of theirs ended if later.
    fn up(&self) -> Vec<Up> {
        let mut up: Vec<Up> = self
            .answered
            .iter()
            .filter(|((priority, _), _)| !self.held.contains(priority))
            .map(|(&(priority, stream), &since)| Up {
                priority,
                stream,
                since: since.max(self.released(priority)),
            })
            .collect();
        up.sort_by_key(|up| (up.priority, up.since, up.stream));
        up
    }

    /// A server that is live at `at`, highest priority first: it has had
    /// a stream open (and out of any hold) for more than [`GRACE`], and
    /// has not failed since it last answered, if it ever failed.
    pub fn live_at(&self, at: Duration) -> Option<(usize, u64, Duration)> {
        self.open
            .iter()
            .filter(|((priority, _), opened)| {
                !self.held.contains(priority)
                    && !self.failed.contains(priority)
                    && (**opened)
                        .max(self.released(*priority))
                        .saturating_add(GRACE)
                        < at
            })
            .map(|(&(priority, stream), &opened)| (priority, stream, opened))
            .min()
    }

    /// A stream of a server of lower priority than an up one, open (and
    /// not held) for more than [`GRACE`] at `at` since both were so (the
    /// up server up, the stream open and out of any hold):
    /// `(the up server, the lower one's priority, its stream)`.
    fn overdue(&self, at: Duration) -> Option<(Up, usize, u64)> {
        let mut overdue: Vec<(Up, usize, u64)> = self
            .up()
            .into_iter()
            .flat_map(|up| {
                self.open
                    .iter()
                    .filter(move |((priority, _), opened)| {
                        *priority > up.priority
                            && !self.held.contains(priority)
                            && up
                                .since
                                .max(**opened)
                                .max(self.released(*priority))
                                .saturating_add(GRACE)
                                < at
                    })
                    .map(move |(&(priority, stream), _)| (up, priority, stream))
            })
            .collect();
        overdue.sort_by_key(|(up, priority, stream)| (up.priority, up.since, *priority, *stream));
        overdue.into_iter().next()
    }
}

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    let servers = servers_by_priority(scenario)?;
    let priority = |server: &str| servers.iter().position(|s| s == server);
    let mut streams = Servers::default();
    for (index, event) in events.iter().enumerate() {
        if let Some((up, lower, stream)) = streams.overdue(event.at) {
            let answered = match (&event.kind, event.source.server()) {
                (EventKind::Server(server_event), Some(server))
                    if priority(server) == Some(lower)
                        && matches!(
                            &**server_event,
                            ServerEvent::RequestReceived { stream: s, request }
                                if *s == stream
                                    && matches!(request.kind, RequestKind::Ack | RequestKind::Nack)
                        ) =>
                {
                    "answers a response on it"
                }
                _ => "still has it open",
            };
            return Some(Violation {
                event: index,
                message: format!(
                    "the client {answered}: {}'s stream {stream} (priority {lower}), though {} \
                     (priority {}) is up: the client answered a response on its stream {} at \
                     {:?}, and that stream is still open",
                    servers[lower], servers[up.priority], up.priority, up.stream, up.since
                ),
            });
        }
        if let (EventKind::Server(server_event), Some(at)) =
            (&event.kind, event.source.server().and_then(priority))
        {
            streams.read(at, event.at, server_event);
        }
    }
    None
}

#[cfg(test)]
pub(super) mod tests {
    use xds_fake_server::fault::{HoldConnections, ReleaseConnections};
    use xds_vocabulary::AdsProtocol;

    use super::*;
    use crate::invariant::test_events::{at, server, test_scenario};
    use crate::scenario::load_str;
    use crate::timeline::Source;

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    pub fn opened(on: &str, stream: u64, ms: u64) -> TimelineEvent {
        at(
            ms,
            Source::Server(on.into()),
            server(ServerEvent::StreamOpened {
                stream,
                connection: None,
                protocol: AdsProtocol::Sotw,
                after_close: None,
            }),
        )
    }

    pub fn closed(on: &str, stream: u64, ms: u64) -> TimelineEvent {
        at(
            ms,
            Source::Server(on.into()),
            server(ServerEvent::StreamClosed {
                stream,
                code: tonic::Code::Unavailable,
                message: String::new(),
                by_client: false,
                kds: None,
            }),
        )
    }

    /// The client's ACK, on `on`'s `stream`, of the response with nonce
    /// `nonce`.
    pub fn ack(on: &str, stream: u64, nonce: &str, ms: u64) -> TimelineEvent {
        let mut ack =
            crate::invariant::test_events::request(stream, CDS, &["c1"], nonce, nonce, false);
        ack.source = Source::Server(on.into());
        ack.at = Duration::from_millis(ms);
        ack
    }

    pub fn fault(on: &str, fault: Fault, ms: u64) -> TimelineEvent {
        at(
            ms,
            Source::Server(on.into()),
            server(ServerEvent::FaultApplied { fault }),
        )
    }

    /// The client fell back to the fallback server, then the primary came
    /// back and answered: the fallback's stream must be done with.
    fn fell_back_then_primary_answered() -> Vec<TimelineEvent> {
        vec![
            opened("primary", 1, 0),
            closed("primary", 1, 0),
            opened("fallback", 1, 0),
            ack("fallback", 1, "1", 0),
            opened("primary", 2, 1_000),
            ack("primary", 2, "1", 1_000),
        ]
    }

    #[test]
    fn a_fallback_stream_kept_or_answered_once_the_primary_answered_is_caught() {
        let mut events = fell_back_then_primary_answered();
        // The correct client closed the fallback's stream.
        events.extend([closed("fallback", 1, 1_000), ack("primary", 2, "2", 5_000)]);
        assert_eq!(check(&test_scenario(), &events), None);
        // A client that stayed on the fallback answers its next response.
        let mut stayed = fell_back_then_primary_answered();
        stayed.push(ack("fallback", 1, "2", 5_000));
        let v = check(&test_scenario(), &stayed).expect("stayed on the fallback");
        assert_eq!(v.event, 6);
        assert!(
            v.message
                .contains("answers a response on it: fallback's stream 1")
                && v.message.contains("primary (priority 0)"),
            "{v:?}"
        );
        // ...or only keeps its stream open.
        let mut kept = fell_back_then_primary_answered();
        kept.push(ack("primary", 2, "2", 5_000));
        let v = check(&test_scenario(), &kept).expect("kept the fallback's stream");
        assert_eq!(v.event, 6);
        assert!(v.message.contains("still has it open"), "{v:?}");
    }

    #[test]
    fn a_stream_may_show_open_for_the_grace_after_it_must_close() {
        let mut events = fell_back_then_primary_answered();
        events.push(ack("fallback", 1, "2", 2_000));
        assert_eq!(check(&test_scenario(), &events), None);
        let last = events.len() - 1;
        events[last].at = Duration::from_millis(2_001);
        assert!(check(&test_scenario(), &events).is_some());
        // A stream opened later than the primary came up: from its opening.
        let mut reopened = fell_back_then_primary_answered();
        reopened.extend([
            closed("fallback", 1, 1_000),
            opened("fallback", 2, 3_000),
            ack("primary", 2, "2", 4_000),
        ]);
        assert_eq!(check(&test_scenario(), &reopened), None);
        reopened.push(ack("primary", 2, "3", 4_001));
        let v = check(&test_scenario(), &reopened).expect("a new fallback stream kept");
        assert!(v.message.contains("fallback's stream 2"), "{v:?}");
    }

    #[test]
    fn once_the_primary_stream_closes_or_either_is_held_the_fallback_may_serve() {
        // The primary's stream ended: it may fail next, and the client
        // fall back again.
        let mut events = fell_back_then_primary_answered();
        events.extend([closed("primary", 2, 1_500), ack("fallback", 1, "2", 5_000)]);
        assert_eq!(check(&test_scenario(), &events), None);
        // Another stream of the primary closing does not end it.
        let mut other = fell_back_then_primary_answered();
        other.extend([
            opened("primary", 3, 1_200),
            closed("primary", 3, 1_300),
            ack("fallback", 1, "2", 5_000),
        ]);
        assert!(check(&test_scenario(), &other).is_some());
        // The primary's connections held: a client may find them dead.
        let mut primary_held = fell_back_then_primary_answered();
        primary_held.extend([
            fault("primary", Fault::HoldConnections(HoldConnections), 1_500),
            ack("fallback", 1, "2", 5_000),
        ]);
        assert_eq!(check(&test_scenario(), &primary_held), None);
        // The fallback's held: its server cannot see the stream end...
        let mut held = fell_back_then_primary_answered();
        held.extend([
            fault("fallback", Fault::HoldConnections(HoldConnections), 1_500),
            ack("primary", 2, "2", 5_000),
            fault(
                "fallback",
                Fault::ReleaseConnections(ReleaseConnections),
                6_000,
            ),
            ack("primary", 2, "3", 7_000),
        ]);
        assert_eq!(check(&test_scenario(), &held), None);
        // ...until the grace after the release.
        held.push(ack("primary", 2, "4", 7_001));
        let v = check(&test_scenario(), &held).expect("open past the release's grace");
        assert_eq!(v.event, held.len() - 1);
    }

    #[test]
    fn runs_with_other_xds_clients_or_one_server_are_not_read() {
        let mut stayed = fell_back_then_primary_answered();
        stayed.push(ack("fallback", 1, "2", 5_000));
        let load = |yaml: &str| load_str("t.yaml", yaml).expect("loads");
        let dial = load(
            "description: d\nservers:\n  primary: {}\n  fallback: {}\n\
             steps:\n  - watch: { type: CDS, name: c1 }\n  - dial: xds:///svc\n",
        );
        assert_eq!(check(&dial, &stayed), None);
        let one = load(
            "description: d\nservers:\n  primary: {}\n\
             steps:\n  - watch: { type: CDS, name: c1 }\n",
        );
        assert_eq!(check(&one, &stayed), None);
        assert!(check(&test_scenario(), &stayed).is_some());
    }
}
