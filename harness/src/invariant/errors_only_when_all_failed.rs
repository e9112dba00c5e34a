//! `errors-only-when-all-failed` (gRFC A71): watchers hear of a
//! connectivity error only when every server has failed. A71 falls back
//! on "a connectivity failure on the ADS stream" (A57: the channel in
//! TRANSIENT_FAILURE, or a stream closed before its first response) to
//! the next server, and "connecting to the lower-priority servers does
//! not close gRPC connections to the higher-priority servers": the
//! client keeps retrying them while it uses the fallback's data. Their
//! failures then change nothing the watchers use, so they are not told
//! (the client tells them only when no server is left to turn to, with
//! that last server's error; C-core's `OnConnectivityFailure` reports an
//! error only for the authority's last channel, the one in use).
//!
//! Read from the watchers and the wire. A connectivity error is what
//! A57 makes of one: a watcher's resource or ambient error with status
//! UNAVAILABLE (an invalid resource is INVALID_ARGUMENT; the generated
//! servers have no `resource_timer_is_transient_error`, A88's only other
//! UNAVAILABLE). A server has *failed* (A57) when a stream of it closed
//! before the client answered (ACKed or NACKed) a response on it, or it
//! refused a connection, or a connection of it closed without having
//! carried a stream (the client's connection attempt failed: e.g. a
//! connect timeout, no SETTINGS from a held server, which the server
//! sees only once the hold is released), until the client answers a
//! response from it again (A57; C-core's channel status turns OK only in
//! `SetHealthyLocked`, on a response: a new stream that stays silent
//! leaves its server failed; counting a stream closed after a response
//! the client had not answered yet as a failure excuses more, never
//! less). A server is
//! *live* when it has a stream open and has not failed: the client is
//! connected to it, on a stream that may still bring its resources (a
//! fallback waiting for them, A71: "XdsClient will still wait for xDS
//! resources on the ADS stream"). A watcher must not hear a connectivity
//! error while some server is live: not every server has failed. The
//! reference client tells its watchers only of the failure of the server
//! it uses (its authority's last channel, the one it fell back to last),
//! and only when it does not fall back from it (`worker/fallback.rs`,
//! `set_channel_status`); a server it fell back from has failed, and
//! one it has not reached yet has no stream.
//!
//! Exceptions, each narrow:
//! - a stream open for at most `falls_forward::GRACE` (a second) does
//!   not make its server live: the client may have told its watchers of
//!   the failure that made it open that stream (it falls back and tells
//!   in one turn; its watchers and the server hear of it in their own
//!   order, and on real time an adapter reports a moment late); a
//!   failing server's retries come a backoff (1 s, then more) apart, so
//!   the next one is judged;
//! - a server whose connections are held (`hold_connections`, and for
//!   the grace after `release_connections`) is not live: a client may
//!   find its connection dead (keepalive) and fail it while the server
//!   counts the stream open;
//! - runs with other XdsClients (`dial`, `rpc`, `serve`: their streams
//!   show on the same servers, while their failures are not this
//!   client's), with authorities, or with one server are not read.

use tonic::Code;
use xds_client_under_test::{ObservedEvent, WatcherNotification};

use super::falls_forward::{Servers, servers_by_priority};
use super::{Invariant, Violation, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "errors-only-when-all-failed",
    rule: "watchers hear of a connectivity error only when every server has failed",
    held_to: held::with_watches,
    check,
};

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    let servers = servers_by_priority(scenario)?;
    let priority = |server: &str| servers.iter().position(|s| s == server);
    let mut up = Servers::default();
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Server(server_event) => {
                if let Some(at) = event.source.server().and_then(priority) {
                    up.read(at, event.at, server_event);
                }
            }
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification:
                    WatcherNotification::AmbientError(error) | WatcherNotification::ResourceError(error),
            }) if error.code == Code::Unavailable => {
                if let Some((live, stream, opened)) = up.live_at(event.at) {
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "the watchers of {resource_type} {name} heard of a connectivity error \
                             ({}) while {} (priority {live}) had not failed: its stream {stream}, \
                             open since {opened:?}, had not closed before an answer",
                            error.message, servers[live],
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
    use std::time::Duration;

    use xds_client_under_test::WatcherNotification;
    use xds_fake_server::fault::{Fault, HoldConnections, ReleaseConnections};
    use xds_vocabulary::XdsError;

    use super::*;
    use crate::invariant::falls_forward::tests::{ack, closed, fault, opened};
    use crate::invariant::test_events::{at, heard, server, test_scenario};
    use crate::scenario::load_str;
    use crate::timeline::Source;
    use xds_fake_server::event::ServerEvent;

    fn unavailable(ms: u64, ambient: bool) -> TimelineEvent {
        let error = XdsError {
            code: Code::Unavailable,
            message: "xDS channel for server primary:443: unavailable".into(),
        };
        let mut event = heard(
            "c1",
            if ambient {
                WatcherNotification::AmbientError(error)
            } else {
                WatcherNotification::ResourceError(error)
            },
        );
        event.at = Duration::from_millis(ms);
        event
    }

    /// The primary failed, and the client fell back: the fallback's
    /// stream is open, waiting for resources.
    fn on_the_fallback() -> Vec<TimelineEvent> {
        vec![
            opened("primary", 1, 0),
            closed("primary", 1, 0),
            opened("fallback", 1, 0),
        ]
    }

    #[test]
    fn the_primarys_failure_told_while_the_fallback_is_live_is_caught() {
        let mut events = on_the_fallback();
        // The primary's retry fails two seconds later.
        events.extend([
            opened("primary", 2, 2_000),
            closed("primary", 2, 2_000),
            unavailable(2_000, true),
        ]);
        let v = check(&test_scenario(), &events).expect("told while the fallback is live");
        assert_eq!(v.event, 5);
        assert!(
            v.message.contains("CDS c1") && v.message.contains("fallback (priority 1)"),
            "{v:?}"
        );
        // A correct client tells nothing; once the fallback fails too, it
        // tells the watchers, though the primary's next retry is open: the
        // primary failed and has not answered since.
        let mut correct = on_the_fallback();
        correct.extend([
            opened("primary", 2, 2_000),
            closed("primary", 2, 2_000),
            opened("primary", 3, 2_500),
            closed("fallback", 1, 3_000),
            unavailable(3_000, false),
        ]);
        assert_eq!(check(&test_scenario(), &correct), None);
        // Had the primary answered on it, it would be live.
        correct.insert(6, ack("primary", 3, "1", 2_500));
        let last = correct.len() - 1;
        correct[last].at = Duration::from_millis(4_000);
        let v = check(&test_scenario(), &correct).expect("the primary answered");
        assert!(v.message.contains("primary (priority 0)"), "{v:?}");
    }

    #[test]
    fn a_server_failed_until_it_answers_again() {
        // The fallback failed too, and its retry waits: every server has
        // failed (a refused connection is a failure too).
        let mut events = vec![
            opened("primary", 1, 0),
            at(
                0,
                Source::Server("primary".into()),
                server(ServerEvent::ConnectionRefused {
                    address: "primary:443".into(),
                }),
            ),
            closed("primary", 1, 0),
            opened("fallback", 1, 0),
            closed("fallback", 1, 1_500),
            opened("fallback", 2, 1_600),
            unavailable(5_000, false),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Once it answers, it is live again; a stream closed after an
        // answer is no failure, but no stream is open then.
        events.extend([ack("fallback", 2, "1", 5_500), unavailable(7_000, true)]);
        let v = check(&test_scenario(), &events).expect("the fallback answered");
        assert_eq!(v.event, events.len() - 1);
        let last = events.len() - 1;
        events.insert(last, closed("fallback", 2, 6_000));
        assert_eq!(check(&test_scenario(), &events), None);
    }

    fn conn(on: &str, connection: u64, accepted: bool, ms: u64) -> TimelineEvent {
        at(
            ms,
            Source::Server(on.into()),
            server(if accepted {
                ServerEvent::ConnectionAccepted { connection }
            } else {
                ServerEvent::ConnectionClosed { connection }
            }),
        )
    }

    fn opened_on(on: &str, stream: u64, connection: u64, ms: u64) -> TimelineEvent {
        let mut event = opened(on, stream, ms);
        if let EventKind::Server(server_event) = &mut event.kind
            && let ServerEvent::StreamOpened { connection: c, .. } = &mut **server_event
        {
            *c = Some(connection);
        }
        event
    }

    /// Chaos seed 20261126, schedule 26818 (both protocols): the
    /// fallback's connections are held from the start, so the client's
    /// first connection to it times out before the server's SETTINGS (at
    /// 20 s; the client falls back to last-resort, which closes every
    /// stream before a response, and retries the fallback on a second
    /// connection). At the release (37 s) the server sees the first
    /// connection end, never having carried a stream, and a stream open
    /// on the second, which never brings a response: the fallback failed
    /// and has not answered since, so the client, on last-resort, tells
    /// its watchers of last-resort's failures (C-core's
    /// `SetChannelStatusLocked`: the authority's last channel).
    fn schedule_26818() -> (Scenario, Vec<TimelineEvent>) {
        let scenario = load_str(
            "t.yaml",
            "description: d\nservers:\n  primary: {}\n  fallback: {}\n  last-resort: {}\n\
             steps:\n  - watch: { type: RDS, name: r1 }\n",
        )
        .expect("loads");
        let refused = at(
            0,
            Source::Server("primary".into()),
            server(ServerEvent::ConnectionRefused {
                address: "primary:443".into(),
            }),
        );
        let events = vec![
            fault("fallback", Fault::HoldConnections(HoldConnections), 0),
            refused,
            conn("fallback", 1, true, 0),
            conn("fallback", 2, true, 20_000),
            conn("last-resort", 1, true, 20_000),
            opened_on("last-resort", 1, 1, 20_000),
            closed("last-resort", 1, 20_000),
            unavailable(20_000, false),
            fault(
                "fallback",
                Fault::ReleaseConnections(ReleaseConnections),
                37_000,
            ),
            conn("fallback", 1, false, 37_000),
            opened_on("fallback", 1, 2, 37_000),
            opened_on("last-resort", 7, 1, 46_319),
            closed("last-resort", 7, 46_319),
            unavailable(46_319, false),
        ];
        (scenario, events)
    }

    #[test]
    fn a_connection_closed_without_a_stream_fails_its_server_until_it_answers() {
        let (scenario, events) = schedule_26818();
        assert_eq!(check(&scenario, &events), None);
        // Had the first connection not ended, the fallback's stream would
        // make it live: the same error is caught.
        let mut kept = events.clone();
        kept.remove(9);
        let v = check(&scenario, &kept).expect("the fallback is live");
        assert_eq!(v.event, kept.len() - 1);
        assert!(v.message.contains("fallback (priority 1)"), "{v:?}");
        // Once the fallback answers on its new stream it is live again: a
        // client telling last-resort's next failure is caught.
        let mut answered = events.clone();
        answered.extend([
            ack("fallback", 1, "1", 50_000),
            opened_on("last-resort", 8, 1, 60_862),
            closed("last-resort", 8, 60_862),
            unavailable(60_862, true),
        ]);
        let v = check(&scenario, &answered).expect("the fallback answered");
        assert_eq!(v.event, answered.len() - 1);
        assert!(v.message.contains("fallback (priority 1)"), "{v:?}");
        // A connection that carried a stream fails nothing by closing: a
        // stream answered, then closed, its connection closed, and a new
        // one opened leaves the fallback live.
        let mut carried = events;
        carried.extend([
            ack("fallback", 1, "1", 38_000),
            closed("fallback", 1, 39_000),
            conn("fallback", 2, false, 39_000),
            conn("fallback", 3, true, 40_000),
            opened_on("fallback", 2, 3, 40_000),
            unavailable(60_862, true),
        ]);
        let v = check(&scenario, &carried).expect("the fallback's stream 2 is live");
        assert!(v.message.contains("its stream 2"), "{v:?}");
    }

    #[test]
    fn only_connectivity_errors_past_the_grace_are_judged() {
        // Told within a second of the fallback's stream opening: maybe
        // the failure it fell back on.
        let mut events = on_the_fallback();
        events.push(unavailable(1_000, false));
        assert_eq!(check(&test_scenario(), &events), None);
        // An invalid resource is no connectivity error.
        let mut nacked = on_the_fallback();
        let mut invalid = heard(
            "c1",
            WatcherNotification::ResourceError(XdsError {
                code: Code::InvalidArgument,
                message: "invalid resource".into(),
            }),
        );
        invalid.at = Duration::from_millis(5_000);
        nacked.push(invalid);
        assert_eq!(check(&test_scenario(), &nacked), None);
        // An UNAVAILABLE a millisecond later is.
        let mut later = on_the_fallback();
        later.push(unavailable(1_001, false));
        assert!(check(&test_scenario(), &later).is_some());
    }

    #[test]
    fn a_held_server_or_a_run_with_other_xds_clients_excuses_it() {
        let mut held = on_the_fallback();
        held.extend([
            fault("fallback", Fault::HoldConnections(HoldConnections), 1_000),
            unavailable(2_000, true),
            fault(
                "fallback",
                Fault::ReleaseConnections(ReleaseConnections),
                3_000,
            ),
            unavailable(4_000, true),
        ]);
        assert_eq!(check(&test_scenario(), &held), None);
        // Live again past the grace after the release.
        held.push(unavailable(4_001, true));
        assert!(check(&test_scenario(), &held).is_some());
        let mut told = on_the_fallback();
        told.push(unavailable(2_000, true));
        let rpc = load_str(
            "t.yaml",
            "description: d\nservers:\n  primary: {}\n  fallback: {}\n\
             steps:\n  - watch: { type: CDS, name: c1 }\n  - dial: xds:///svc\n",
        )
        .expect("loads");
        assert_eq!(check(&rpc, &told), None);
        assert!(check(&test_scenario(), &told).is_some());
    }
}
