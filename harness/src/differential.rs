//! Differential runs: a scenario that asks for several protocols is played
//! once per protocol, and what the client showed must be the same in every
//! run (as Istio checked its move to delta xDS). What the client shows is
//! what its user sees: watcher notifications, dial updates, RPC results,
//! channel and serving states, and CSDS statuses, with their times (virtual
//! time makes them exact). The wire differs by design and is not compared,
//! nor are CSDS versions: SotW reports the version of the response that
//! brought a resource, delta the resource's own.

use std::time::Duration;

use xds_client_under_test::ObservedEvent;
use xds_conformance_reports::Verdict;

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
    let expected = client_visible(&baseline.events, baseline.mode);
    for (run, outcome) in rest {
        if !passed(&outcome.verdict) {
            continue;
        }
        let got = client_visible(&outcome.events, outcome.mode);
        if let Some(message) = first_difference(&expected, &got) {
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

/// The client-visible events of a run, one line each: with the time on
/// virtual time, without it on real time (where it is the client's own
/// timing).
pub fn client_visible(events: &[TimelineEvent], mode: RunMode) -> Vec<String> {
    events
        .iter()
        .filter(|e| is_client_visible(&e.kind))
        .filter_map(|e| {
            let line = without_csds_version(&describe(&e.kind)?);
            Some(match mode {
                RunMode::Virtual => format!("{:>9} {line}", seconds(e.at)),
                RunMode::RealTime => line,
            })
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csds_versions_are_left_out() {
        assert_eq!(
            without_csds_version(r#"CDS c1: REQUESTED -> ACKED version="7""#),
            "CDS c1: REQUESTED -> ACKED"
        );
        assert_eq!(without_csds_version("no version here"), "no version here");
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
