//! Invariants: what every run must show whatever its schedule, each
//! checked over the run's timeline once the run is over (as Jepsen's
//! checkers read a history). One module per invariant, in one list
//! ([`ALL`]); each names the rule it holds the client to and explains the
//! first event that breaks it. Each has a client broken on purpose that
//! it catches (`harness/tests/chaos.rs`).

pub mod answered_once;
pub mod cached_never_times_out;
pub mod delta_claims_what_it_holds;
pub mod does_not_exist_timer;
pub mod errors_only_when_all_failed;
pub mod eventually_consistent;
pub mod every_watcher_hears_each_change;
pub mod fallback_only_when_uncached;
pub mod falls_forward;
pub mod new_watcher_hears_value_then_error;
pub mod node_on_first_request;
pub mod removed_names_gone;
pub mod silent_after_cancel;
pub mod unchanged_not_notified_again;
pub mod wildcard_hears_every_resource;

use std::collections::HashMap;

use xds_client_under_test::Capabilities;
use xds_vocabulary::ResourceType;

use crate::clock::RunMode;
use crate::scenario::Scenario;
use crate::step::cancel_watch::CancelWatch;
use crate::step::watch::Watch;
use crate::step::watch_in_callback::WatchInCallback;
use crate::timeline::TimelineEvent;

/// An invariant: its name (what findings and `--invariant` say), the rule
/// in a sentence, which clients it holds, and its check.
pub struct Invariant {
    pub name: &'static str,
    pub rule: &'static str,
    /// Whether a client with these capabilities, on this time, is held to
    /// the rule: what the check reads must be on its timeline, and mean
    /// there what it means on the reference client's ([`held`]).
    pub held_to: fn(&Capabilities, RunMode) -> bool,
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
    falls_forward::INVARIANT,
    errors_only_when_all_failed::INVARIANT,
    // Before delta-claims-what-it-holds: a client that ignores removals
    // claims them too, and is caught here first, where the watchers show it.
    removed_names_gone::INVARIANT,
    delta_claims_what_it_holds::INVARIANT,
    wildcard_hears_every_resource::INVARIANT,
    does_not_exist_timer::INVARIANT,
    cached_never_times_out::INVARIANT,
    new_watcher_hears_value_then_error::INVARIANT,
    every_watcher_hears_each_change::INVARIANT,
    unchanged_not_notified_again::INVARIANT,
    // Last: a client that breaks another rule often leaves its watchers
    // with something else than the server said too.
    eventually_consistent::INVARIANT,
];

/// Which clients an invariant holds.
pub mod held {
    use super::*;

    /// Every client: the rule reads the wire alone, which every client
    /// speaks (gRFC A27, xds_protocol.rst), on any time.
    pub fn by_all(_: &Capabilities, _: RunMode) -> bool {
        true
    }

    /// Clients with a watch API: the rule reads what watchers heard.
    pub fn with_watches(caps: &Capabilities, _: RunMode) -> bool {
        caps.watch
    }

    /// Clients with a watch API on virtual time: the rule reads timers
    /// to the millisecond, which only virtual time keeps (on real time
    /// the machine's load moves them).
    pub fn with_watches_on_virtual_time(caps: &Capabilities, mode: RunMode) -> bool {
        caps.watch && mode == RunMode::Virtual
    }
}

/// The invariants a client with `caps` is held to on `mode`'s time.
pub fn held_to(
    caps: &Capabilities,
    mode: RunMode,
) -> impl Iterator<Item = &'static Invariant> + '_ {
    ALL.iter()
        .filter(move |invariant| (invariant.held_to)(caps, mode))
}

/// The first of `invariants` the run broke, with how: `(invariant,
/// violation)`.
pub fn check(
    scenario: &Scenario,
    invariants: impl Iterator<Item = &'static Invariant>,
    events: &[TimelineEvent],
) -> Option<(&'static Invariant, Violation)> {
    { invariants }.find_map(|invariant| (invariant.check)(scenario, events).map(|v| (invariant, v)))
}

/// The violation said for a verdict, its `#N`s being the lines of the
/// written timeline (invariants name events as `#<index + 1>`; the
/// written timeline numbers its lines, which leave out events it does
/// not show).
pub fn explain(invariant: &Invariant, violation: &Violation, events: &[TimelineEvent]) -> String {
    let lines = crate::timeline::line_numbers(events);
    let line = |event: usize| {
        lines[event.min(lines.len().saturating_sub(1))..]
            .iter()
            .find_map(|l| *l)
            .unwrap_or(event + 1)
    };
    format!(
        "invariant {} ({}) broken at #{}: {}",
        invariant.name,
        invariant.rule,
        line(violation.event),
        renumber(&violation.message, &line)
    )
}

/// `message` with each `#N` (an event, `N` its index + 1) as the written
/// timeline's line of that event.
fn renumber(message: &str, line: &dyn Fn(usize) -> usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find('#') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<usize>() {
            Ok(n) if n > 0 => out.push_str(&line(n - 1).to_string()),
            _ => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// Step kinds that start XdsClients the harness does not see (a
/// channel's, an xDS-enabled server's): their watches, holdings and
/// streams are not the script's.
pub(crate) const OTHER_CLIENTS: [&str; 3] = ["dial", "rpc", "serve"];

/// The run's servers in priority order, if the script's watches are all
/// its XdsClient does: a generated bootstrap without authorities, and no
/// step that starts another XdsClient. The invariants that read what the
/// client holds, or which server it uses, read only such runs.
pub(crate) fn one_client(scenario: &Scenario) -> Option<&[String]> {
    let crate::scenario::BootstrapPlan::Generated {
        servers,
        authorities,
        ..
    } = &scenario.bootstrap
    else {
        return None;
    };
    let others = scenario
        .steps
        .iter()
        .any(|s| OTHER_CLIENTS.contains(&s.step.key()));
    (authorities.is_empty() && !others).then_some(servers.as_slice())
}

/// The types a watch from a callback watches: such a watch starts when
/// the callback runs, in some other step's instant, so what counts
/// watchers per instant leaves these types alone.
pub(crate) fn types_watched_from_callbacks(
    events: &[TimelineEvent],
) -> std::collections::HashSet<ResourceType> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            crate::timeline::EventKind::Step(text) => {
                WatchInCallback::described(text).map(|(t, _)| t)
            }
            _ => None,
        })
        .collect()
}

/// A resource as a watch step names it: its type and name (`*`: the
/// wildcard).
pub(crate) type Watched<'a> = (ResourceType, &'a str);

/// What a step line did to the script's watches.
pub(crate) enum WatchStep<'a> {
    /// A watch started. One from a callback starts when the callback
    /// runs, later: counted from its step, it can only excuse.
    Started(Watched<'a>),
    /// A watch cancelled; `last`: no watch of the resource is left;
    /// `maybe_last`: none may be left, the ones left being watches from
    /// callbacks, which never start if their callback never runs (the
    /// cancel may have taken the very watcher whose callback was armed).
    /// `last` is what a rule that demands reads, `maybe_last` what one
    /// that excuses does.
    Cancelled {
        watched: Watched<'a>,
        last: bool,
        maybe_last: bool,
    },
}

/// The script's active watches per resource, counted from its step lines
/// (the invariants that read what the client holds, or owes its watchers).
#[derive(Default)]
pub(crate) struct Watches<'a> {
    active: HashMap<Watched<'a>, usize>,
    /// Of those, watches from callbacks, counted from their steps.
    from_callbacks: HashMap<Watched<'a>, usize>,
}

impl<'a> Watches<'a> {
    /// Counts the watch a step line starts or cancels, and says which.
    pub(crate) fn read(&mut self, text: &'a str) -> Option<WatchStep<'a>> {
        if let Some(watched) = WatchInCallback::described(text) {
            *self.from_callbacks.entry(watched).or_default() += 1;
            *self.active.entry(watched).or_default() += 1;
            return Some(WatchStep::Started(watched));
        }
        if let Some(watched) = Watch::described(text) {
            *self.active.entry(watched).or_default() += 1;
            return Some(WatchStep::Started(watched));
        }
        let watched = CancelWatch::described(text)?;
        let active = self.active.entry(watched).or_default();
        *active = active.saturating_sub(1);
        let from_callbacks = self.from_callbacks.get(&watched).copied().unwrap_or(0);
        Some(WatchStep::Cancelled {
            watched,
            last: *active == 0,
            maybe_last: *active <= from_callbacks,
        })
    }

    /// Whether a watch of `watched` is active.
    pub(crate) fn watched(&self, watched: Watched<'a>) -> bool {
        self.active.get(&watched).is_some_and(|n| *n > 0)
    }

    /// Whether a wildcard watch of `resource_type` is active.
    pub(crate) fn wildcard(&self, resource_type: ResourceType) -> bool {
        self.watched((resource_type, "*"))
    }

    /// Whether no watch is active.
    pub(crate) fn none(&self) -> bool {
        self.active.values().all(|n| *n == 0)
    }

    /// Active watches per resource (0 once its last watch went).
    pub(crate) fn counts(&self) -> &HashMap<Watched<'a>, usize> {
        &self.active
    }
}

/// The invariant called `name`.
pub fn named(name: &str) -> Option<&'static Invariant> {
    ALL.iter().find(|invariant| invariant.name == name)
}

/// Whether the run played its last step. Every chaos schedule ends with a
/// long `wait`, so by the end of a run that played through, what the
/// client was told has reached its watchers. A step can stop a run early
/// (a FAIL: a scripted response with no stream to go on). Such a run ends
/// where that step stood, which may be before the client handled the
/// steps of the same instant, so what the client holds "by the end" is
/// not settled (seed 20261126, schedules 11221, 13444, 23931, 29584).
///
/// Read off the step lines. Every step but an expectation records one
/// line, its `describe`, as it starts: a failing step records its own
/// line before it fails, and a `wait` cannot fail. So the run played
/// through when its last step line is the script's last such step and
/// there are as many lines of that text as the script has such steps (a
/// step of the same text earlier in the script does not count for it).
pub(crate) fn played_through(scenario: &Scenario, events: &[TimelineEvent]) -> bool {
    let lines: Vec<String> = scenario
        .steps
        .iter()
        .filter(|s| s.step.matcher().is_none())
        .map(|s| s.step.describe())
        .collect();
    let Some(last) = lines.last() else {
        return true;
    };
    let wanted = lines.iter().filter(|line| *line == last).count();
    let mut recorded = events.iter().filter_map(|e| match &e.kind {
        crate::timeline::EventKind::Step(text) => Some(text.as_str()),
        _ => None,
    });
    let ends_there = recorded.next_back() == Some(last.as_str());
    ends_there && 1 + recorded.filter(|text| text == last).count() >= wanted
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_may_name_every_invariant_and_only_those() {
        let names: Vec<&str> = super::ALL.iter().map(|i| i.name).collect();
        assert_eq!(names, crate::step::expect_invariant::NAMES);
    }
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
                    bodies: Vec::new(),
                },
            }),
        )
    }
}
