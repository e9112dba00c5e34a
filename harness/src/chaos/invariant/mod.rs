//! Invariants: what every run must show whatever its schedule, each
//! checked over the run's timeline once the run is over (as Jepsen's
//! checkers read a history). One module per invariant, in one list
//! ([`ALL`]); each names the rule it holds the client to and explains the
//! first event that breaks it. Each has a client broken on purpose that
//! it catches (`harness/tests/chaos.rs`).

pub mod answered_once;
pub mod delta_claims_what_it_holds;
pub mod does_not_exist_timer;
pub mod fallback_only_when_uncached;
pub mod node_on_first_request;
pub mod silent_after_cancel;
pub mod wildcard_hears_every_resource;

use crate::scenario::Scenario;
use crate::timeline::TimelineEvent;

/// An invariant: its name (what findings and `--invariant` say), the rule
/// in a sentence, and its check.
pub struct Invariant {
    pub name: &'static str,
    pub rule: &'static str,
    /// The first event of the run's `events` that breaks the rule,
    /// explained; the scenario says what the run was given (its servers
    /// in priority order, its steps' kinds).
    pub check: fn(&Scenario, &[TimelineEvent]) -> Option<Violation>,
}

/// Where and how a run broke an invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The index of the event that broke it (its line on the timeline is
    /// this plus one).
    pub event: usize,
    pub message: String,
}

/// Every invariant, in the order they are checked.
pub const ALL: &[Invariant] = &[
    answered_once::INVARIANT,
    node_on_first_request::INVARIANT,
    silent_after_cancel::INVARIANT,
    fallback_only_when_uncached::INVARIANT,
    delta_claims_what_it_holds::INVARIANT,
    wildcard_hears_every_resource::INVARIANT,
    does_not_exist_timer::INVARIANT,
];

/// The first invariant the run broke, with how: `(invariant, violation)`.
pub fn check(
    scenario: &Scenario,
    events: &[TimelineEvent],
) -> Option<(&'static Invariant, Violation)> {
    ALL.iter()
        .find_map(|invariant| (invariant.check)(scenario, events).map(|v| (invariant, v)))
}

/// The invariant called `name`.
pub fn named(name: &str) -> Option<&'static Invariant> {
    ALL.iter().find(|invariant| invariant.name == name)
}

#[cfg(test)]
pub(crate) mod test_events {
    //! Timelines written by hand for the invariants' unit tests.

    use std::time::Duration;

    use xds_client_under_test::{ObservedEvent, WatcherNotification};
    use xds_fake_server::event::{RecordedRequest, RecordedResponse, ServerEvent};
    use xds_vocabulary::{RequestKind, ResourceType};

    use crate::scenario::{Scenario, load_str};
    use crate::timeline::{EventKind, Source, TimelineEvent};

    /// A scenario with a primary and a fallback server.
    pub fn test_scenario() -> Scenario {
        load_str(
            "invariants.yaml",
            "description: servers for the invariants' tests\n\
             servers:\n  primary: {}\n  fallback: {}\n\
             steps:\n  - watch: { type: CDS, name: c1 }\n",
        )
        .expect("the test scenario loads")
    }

    pub fn at(ms: u64, source: Source, kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at: Duration::from_millis(ms),
            source,
            kind,
        }
    }

    /// A script step's line.
    pub fn step(text: &str) -> TimelineEvent {
        at(0, Source::Step, EventKind::Step(text.into()))
    }

    /// What a watcher of Cluster `name` heard.
    pub fn heard(name: &str, notification: WatcherNotification) -> TimelineEvent {
        at(
            0,
            Source::Client,
            EventKind::Client(ObservedEvent::Watcher {
                resource_type: ResourceType::Cluster,
                name: name.into(),
                notification,
            }),
        )
    }

    pub fn server(event: ServerEvent) -> EventKind {
        EventKind::Server(Box::new(event))
    }

    pub fn request(
        stream: u64,
        type_url: &str,
        names: &[&str],
        version: &str,
        nonce: &str,
        node: bool,
    ) -> TimelineEvent {
        at(
            0,
            Source::Server("main".into()),
            server(ServerEvent::RequestReceived {
                stream,
                request: RecordedRequest {
                    type_url: type_url.into(),
                    resource_names: names.iter().map(|n| n.to_string()).collect(),
                    version_info: version.into(),
                    response_nonce: nonce.into(),
                    error_detail: None,
                    node: node.then(Default::default),
                    kind: if nonce.is_empty() {
                        RequestKind::Initial
                    } else {
                        RequestKind::Ack
                    },
                    delta: None,
                },
            }),
        )
    }

    pub fn response(stream: u64, type_url: &str, version: &str, nonce: &str) -> TimelineEvent {
        at(
            0,
            Source::Server("main".into()),
            server(ServerEvent::ResponseSent {
                stream,
                response: RecordedResponse {
                    type_url: type_url.into(),
                    version_info: version.into(),
                    nonce: nonce.into(),
                    resource_names: Vec::new(),
                    encoded_len: 0,
                    delta: None,
                    resource_errors: Vec::new(),
                },
            }),
        )
    }
}
