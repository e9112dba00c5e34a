//! Differential runs: a scenario that asks for several protocols is played
//! once per protocol, and what the client showed must be the same in every
//! run (as Istio checked its move to delta xDS). What the client shows is
//! what its user sees: watcher notifications, dial updates, RPC results,
//! channel and serving states, and CSDS statuses, with their times (virtual
//! time makes them exact). The wire differs by design and is not compared,
//! nor are CSDS versions: SotW reports the version of the response that
//! brought a resource, delta the resource's own.

use std::time::Duration;

use xds_client_under_test::{Capabilities, ObservedEvent};
use xds_conformance_reports::Verdict;

use crate::addresses::Normalizer;
use crate::runner::{ClientFactory, RunMode, RunOutcome, run_scenario};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent, describe};

/// Plays every run `scenario` asks for (see [`Scenario::variants`]) and,
/// where the runs all passed, fails a later run whose client-visible
/// outcome differs from the first run's, naming the first difference.
pub fn run_variants(
    scenario: &Scenario,
    make_client: ClientFactory<'_>,
) -> Vec<(Scenario, RunOutcome)> {
    let mut runs: Vec<(Scenario, RunOutcome)> = scenario
        .variants()
        .into_iter()
        .map(|run| {
            let outcome = run_scenario(&run, make_client);
            (run, outcome)
        })
        .collect();
    let Some(((first, baseline), rest)) = runs.split_first_mut() else {
        return runs;
    };
    if !passed(&baseline.verdict) {
        return runs;
    }
    let expected = client_visible(&baseline.events, baseline.mode, &baseline.normalizer);
    for (run, outcome) in rest {
        if !passed(&outcome.verdict) {
            continue;
        }
        let got = client_visible(&outcome.events, outcome.mode, &outcome.normalizer);
        let difference = match outcome.mode {
            RunMode::Virtual => first_difference(&expected, &got),
            RunMode::RealTime => set_difference(&expected, &got),
        };
        if let Some(message) = difference {
            outcome.verdict = Verdict::Fail {
                message: format!(
                    "the client showed something else over {} than over {} ({}): {message}",
                    run.protocol, first.protocol, first.name
                ),
            };
        }
    }
    runs
}

fn passed(verdict: &Verdict) -> bool {
    matches!(verdict, Verdict::Pass | Verdict::Divergent { .. })
}

/// The client-visible events of a run, one line each.
///
/// On virtual time: every one, in order, with its time. On real time the
/// order of events about different resources, how many notifications a
/// burst of updates became, and which intermediate states a CSDS poll
/// caught are the machine's timing, not the protocol's: what two runs
/// must share there is what the client showed at all, so the lines are
/// a set (sorted, each once), without CSDS polls and channel states (the
/// normalised snapshots leave those out for the same reason).
///
/// Real addresses (ports differ from run to run) are turned back into the
/// scenario's by `normalizer`, as timelines are.
pub fn client_visible(
    events: &[TimelineEvent],
    mode: RunMode,
    normalizer: &Normalizer,
) -> Vec<String> {
    let lines = events
        .iter()
        .filter(|e| is_client_visible(&e.kind))
        .filter(|e| mode == RunMode::Virtual || !is_timing(&e.kind))
        .filter_map(|e| {
            let line = without_csds_version(&normalizer.normalize(&describe(&e.kind)?));
            Some(match mode {
                RunMode::Virtual => format!("{:>9} {line}", seconds(e.at)),
                RunMode::RealTime => line,
            })
        });
    match mode {
        RunMode::Virtual => lines.collect(),
        RunMode::RealTime => lines
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    }
}

/// Client-visible events whose presence a real-time run's timing decides.
fn is_timing(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Csds(_) | EventKind::Client(ObservedEvent::ChannelState { .. })
    )
}

fn is_client_visible(kind: &EventKind) -> bool {
    match kind {
        EventKind::Client(event) => matches!(
            event,
            ObservedEvent::Watcher { .. }
                | ObservedEvent::Dial { .. }
                | ObservedEvent::ChannelState { .. }
                | ObservedEvent::ServingStatus { .. }
        ),
        EventKind::Rpc { settling, .. } => !settling,
        EventKind::Csds(_) | EventKind::CsdsReply(_) => true,
        _ => false,
    }
}

/// A CSDS line without ` version="..."`, which means different things
/// in the two protocols (see the module comment).
fn without_csds_version(line: &str) -> String {
    let Some(at) = line.find(" version=\"") else {
        return line.to_string();
    };
    let rest = &line[at + " version=\"".len()..];
    match rest.find('"') {
        Some(end) => format!("{}{}", &line[..at], &rest[end + 1..]),
        None => line.to_string(),
    }
}

fn seconds(at: Duration) -> String {
    format!("{:.3}s", at.as_secs_f64())
}

/// What two clients showed of one schedule, compared as far as both can
/// show it (chaos's `--against`): watcher notifications (their kind and
/// value, not an error's wording, which is each implementation's own),
/// RPC outcomes (code and backend), dial configs, serving states, and on
/// virtual time channel states and CSDS statuses — each only where both
/// clients report it. Both on virtual time: in order, with times, and the
/// first difference is named. Either on real time: as what each showed at
/// all (see [`client_visible`]). `None` when they agree.
pub fn between_clients(
    (first, first_caps): (&RunOutcome, &Capabilities),
    (second, second_caps): (&RunOutcome, &Capabilities),
) -> Option<String> {
    let mode = if first.mode == RunMode::Virtual && second.mode == RunMode::Virtual {
        RunMode::Virtual
    } else {
        RunMode::RealTime
    };
    let both = Shown::by_both(first_caps, second_caps);
    let lines = |outcome: &RunOutcome| {
        let lines = outcome.events.iter().filter_map(|e| {
            let line = both.line(&e.kind, mode)?;
            let line = outcome.normalizer.normalize(&line);
            Some(match mode {
                RunMode::Virtual => format!("{:>9} {line}", seconds(e.at)),
                RunMode::RealTime => line,
            })
        });
        match mode {
            RunMode::Virtual => lines.collect::<Vec<_>>(),
            RunMode::RealTime => lines
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        }
    };
    let (expected, got) = (lines(first), lines(second));
    match mode {
        RunMode::Virtual => first_difference(&expected, &got),
        RunMode::RealTime => set_difference(&expected, &got),
    }
}

/// What both of two clients report, of what [`between_clients`] compares.
struct Shown {
    watches: bool,
    rpcs: bool,
    dial_configs: bool,
    serving: bool,
    channel_states: bool,
    csds: bool,
}

impl Shown {
    fn by_both(a: &Capabilities, b: &Capabilities) -> Shown {
        Shown {
            watches: a.watch && b.watch,
            rpcs: a.rpc && b.rpc,
            dial_configs: a.dial_config && b.dial_config,
            serving: a.serve && b.serve,
            channel_states: a.channel_states && b.channel_states,
            csds: a.csds && b.csds,
        }
    }

    /// `kind` as compared between clients, if it is compared.
    fn line(&self, kind: &EventKind, mode: RunMode) -> Option<String> {
        let virtual_time = mode == RunMode::Virtual;
        match kind {
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) if self.watches => {
                use xds_client_under_test::WatcherNotification as N;
                let what = match notification {
                    N::Changed { summary } => format!("changed: {summary}"),
                    N::ResourceError(_) => "resource error".to_string(),
                    N::AmbientError(_) => "ambient error".to_string(),
                    N::AmbientErrorCleared => "ambient error cleared".to_string(),
                    N::DoesNotExist => "does not exist".to_string(),
                };
                Some(format!("watcher {resource_type:?} {name}: {what}"))
            }
            EventKind::Rpc {
                target,
                outcome,
                settling: false,
            } if self.rpcs => Some(match &outcome.backend {
                Some(backend) if outcome.code == tonic::Code::Ok => {
                    format!("rpc {target}: OK from {backend}")
                }
                _ => format!("rpc {target}: {:?}", outcome.code),
            }),
            EventKind::Client(ObservedEvent::Dial { .. }) if self.dial_configs => describe(kind),
            EventKind::Client(ObservedEvent::ServingStatus { .. }) if self.serving => {
                describe(kind)
            }
            EventKind::Client(ObservedEvent::ChannelState { .. })
                if self.channel_states && virtual_time =>
            {
                describe(kind)
            }
            EventKind::Csds(_) if self.csds && virtual_time => {
                describe(kind).map(|line| without_csds_version(&line))
            }
            _ => None,
        }
    }
}

/// The first line where the two lists differ, said for a failure message.
pub fn first_difference(expected: &[String], got: &[String]) -> Option<String> {
    let index = expected
        .iter()
        .zip(got)
        .position(|(e, g)| e != g)
        .or_else(|| (expected.len() != got.len()).then(|| expected.len().min(got.len())))?;
    let line = |list: &[String]| {
        list.get(index)
            .cloned()
            .unwrap_or_else(|| "(nothing more)".to_string())
    };
    Some(format!(
        "client-visible event #{} is\n    {}\n  where the first run had\n    {}",
        index + 1,
        line(got),
        line(expected)
    ))
}

/// What one run's set of client-visible lines has that the other's has
/// not, said for a failure message (see [`client_visible`]).
pub fn set_difference(expected: &[String], got: &[String]) -> Option<String> {
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter()
            .filter(|line| b.binary_search(line).is_err())
            .take(5)
            .cloned()
            .collect()
    };
    let (extra, missing) = (only(got, expected), only(expected, got));
    if extra.is_empty() && missing.is_empty() {
        return None;
    }
    let list = |lines: &[String]| match lines {
        [] => "    (nothing)".to_string(),
        lines => lines
            .iter()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    Some(format!(
        "on real time, compared as what the client showed at all: it showed\n{}\n  which the \
         first run never did, and not\n{}\n  which the first run did",
        list(&extra),
        list(&missing)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{CsdsChange, CsdsEntry, CsdsStatus};
    use xds_client_under_test::WatcherNotification;

    #[test]
    fn csds_versions_are_left_out() {
        assert_eq!(
            without_csds_version(r#"CDS c1: REQUESTED -> ACKED version="7""#),
            "CDS c1: REQUESTED -> ACKED"
        );
        assert_eq!(without_csds_version("no version here"), "no version here");
    }

    fn event(kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at: Duration::from_millis(7),
            source: crate::timeline::Source::Client,
            kind,
        }
    }

    fn watcher(name: &str, notification: WatcherNotification) -> TimelineEvent {
        event(EventKind::Client(ObservedEvent::Watcher {
            resource_type: xds_vocabulary::ResourceType::Cluster,
            name: name.into(),
            notification,
        }))
    }

    fn csds(name: &str, from: Option<CsdsStatus>, to: CsdsStatus) -> TimelineEvent {
        let entry = |status| CsdsEntry {
            status,
            version: "1".into(),
            error: None,
            detail: Default::default(),
        };
        event(EventKind::Csds(CsdsChange {
            client_scope: String::new(),
            type_url: xds_vocabulary::ResourceType::Cluster.type_url().into(),
            name: name.into(),
            from: from.map(entry),
            to: Some(entry(to)),
        }))
    }

    #[test]
    fn real_time_runs_compare_what_was_shown_not_when_or_what_a_poll_caught() {
        use CsdsStatus::*;
        use WatcherNotification::DoesNotExist;
        let changed = || WatcherNotification::Changed {
            summary: "EDS".into(),
        };
        // The sotw run: two watchers in one order, a poll that caught
        // REQUESTED.
        let sotw = [
            watcher("a", changed()),
            watcher("b", changed()),
            csds("a", None, Requested),
            csds("a", Some(Requested), Acked),
            watcher("a", DoesNotExist),
        ];
        // The delta run: the other order, the update twice, no REQUESTED.
        let delta = [
            watcher("b", changed()),
            watcher("a", changed()),
            watcher("a", changed()),
            csds("a", None, Acked),
            watcher("a", DoesNotExist),
        ];
        let none = Normalizer::default();
        let visible = |events: &[TimelineEvent]| client_visible(events, RunMode::RealTime, &none);
        assert_eq!(set_difference(&visible(&sotw), &visible(&delta)), None);
        // Virtual time compares all of it.
        let virtual_ = |events: &[TimelineEvent]| client_visible(events, RunMode::Virtual, &none);
        assert!(first_difference(&virtual_(&sotw), &virtual_(&delta)).is_some());
        // A client that shows the deletion differently over delta (an
        // error where sotw said it does not exist) is caught on real time.
        let broken = [
            watcher("b", changed()),
            watcher("a", changed()),
            watcher(
                "a",
                WatcherNotification::AmbientError(xds_vocabulary::XdsError::new(
                    tonic::Code::Unavailable,
                    "gone",
                )),
            ),
        ];
        let message = set_difference(&visible(&sotw), &visible(&broken)).unwrap_or_default();
        assert!(
            message.contains("does not exist") && message.contains("gone"),
            "{message}"
        );
    }

    #[test]
    fn the_first_difference_is_named() {
        let a = vec!["x".to_string(), "y".to_string()];
        let b = vec!["x".to_string(), "z".to_string()];
        assert_eq!(first_difference(&a, &a), None);
        let message = first_difference(&a, &b).unwrap_or_default();
        assert!(message.contains("#2") && message.contains('z') && message.contains('y'));
        let shorter = vec!["x".to_string()];
        let message = first_difference(&a, &shorter).unwrap_or_default();
        assert!(message.contains("(nothing more)"), "{message}");
    }
}
