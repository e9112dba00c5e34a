//! Chaos runs: schedules generated from a seed ([`generate`]), each played
//! on the client like any scenario, and each run held to what every run
//! must show whatever the schedule: the harness plays it through (no
//! ERROR: the client neither crashes nor hangs, its timeline stays in
//! bounds), and its timeline keeps every [`invariant`]. A run that breaks
//! one is a finding, kept as the schedule's YAML, which replays it with
//! `run`.
//!
//! This module must not know which clients exist: it is given a factory.

pub mod against;
pub mod follow_up;
pub mod generate;
pub mod record;

pub use crate::invariant;

use std::time::Duration;

use xds_client_under_test::Capabilities;
use xds_conformance_reports::Verdict;

use crate::runner::{RunMode, RunOutcome, run_scenario};
use crate::scenario::Scenario;
use crate::suite::BoxedFactory;
pub use generate::{Schedule, Shape, Shrinking, schedule, shrink};

/// What a campaign holds its client to: the invariants its capabilities
/// and time allow ([`invariant::held_to`]), less those its expectations
/// file says it is known to break (`chaos:<invariant>` entries, each with
/// its reason), which a campaign reports and does not check.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub caps: Capabilities,
    /// Invariant -> why the client is known to break it.
    pub known: std::collections::BTreeMap<&'static str, String>,
    /// A client it must show the same as, on each schedule both play
    /// through (`--against`).
    pub against: Option<against::Against>,
}

impl Rules {
    /// Every invariant `caps` allows.
    pub fn new(caps: Capabilities) -> Rules {
        Rules {
            caps,
            known: Default::default(),
            against: None,
        }
    }

    /// The rules of a client with `caps` and `expectations`; an entry
    /// naming no invariant, or expecting anything but `fail`, is an error
    /// (it would excuse nothing, or excuse a rule by chance).
    pub fn with_expectations(
        caps: Capabilities,
        expectations: &crate::expectations::Expectations,
    ) -> Result<Rules, String> {
        let mut rules = Rules::new(caps);
        for (name, entry) in expectations.invariants() {
            let file = expectations.source.display();
            let Some(invariant) = invariant::named(name) else {
                let known: Vec<_> = invariant::ALL.iter().map(|i| i.name).collect();
                return Err(format!(
                    "{file}: chaos:{name} names no invariant; they are {}",
                    known.join(", ")
                ));
            };
            if entry.expect != crate::expectations::Expected::Fail {
                return Err(format!(
                    "{file}: chaos:{name}: a client breaks an invariant or keeps it: expect: fail"
                ));
            }
            rules.known.insert(invariant.name, entry.reason.clone());
        }
        Ok(rules)
    }

    /// The invariants a run on `mode`'s time is checked against.
    pub fn held(&self, mode: RunMode) -> impl Iterator<Item = &'static invariant::Invariant> + '_ {
        invariant::held_to(&self.caps, mode).filter(|i| !self.known.contains_key(i.name))
    }
}

/// One schedule that broke a rule.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The schedule's index in its campaign.
    pub index: u64,
    pub schedule: Schedule,
    /// What broke: [`PLAYS_THROUGH`] or an invariant's name.
    pub broke: &'static str,
    /// What broke, as the verdict says it (an invariant's violation is a
    /// FAIL whose message names it).
    pub verdict: Verdict,
    /// The run's timeline.
    pub timeline: String,
    /// For a difference from the `--against` client: its name and its
    /// timeline of the same schedule.
    pub other: Option<(String, String)>,
    /// The schedule as drawn, when `schedule` is its shrunk form.
    pub drawn: Option<String>,
}

/// What a campaign did.
#[derive(Debug, Default)]
pub struct Campaign {
    pub schedules: u64,
    /// Runs played (n/a ones are not).
    pub played: u64,
    /// Schedules the client could not play (it lacks what they need).
    pub not_applicable: u64,
    /// Why, with how many: a schedule fitted to the client is n/a only
    /// for what the run finds out (a CSDS view the admin API never showed).
    pub not_applicable_why: std::collections::BTreeMap<String, u64>,
    /// Schedules that stopped at a step with nothing to act on (a FAIL:
    /// a schedule has no expectations, so only such a step fails it): the
    /// rest of their script did not play.
    pub unplayable: u64,
    /// Why they stopped (the message without its file:line:column), with
    /// how many did: what a better generator would avoid.
    pub stopped_at: std::collections::BTreeMap<String, u64>,
    /// Steps played in all.
    pub steps: u64,
    /// Virtual (or real) time the runs covered.
    pub covered: Duration,
    pub findings: Vec<Finding>,
    /// A signal stopped it before its last schedule (the schedule it was
    /// playing is not counted).
    pub interrupted: bool,
}

/// The rule every run keeps before any invariant: it plays through.
pub const PLAYS_THROUGH: &str = "plays-through";

/// Whether a run broke a rule every run must keep: it could not be
/// played through (ERROR: the client crashed, hung past the run's
/// limits, or its timeline outgrew its bounds).
fn broken(outcome: &RunOutcome) -> bool {
    matches!(
        outcome.verdict,
        Verdict::Error { .. } | Verdict::Interrupted { .. }
    )
}

/// Whether the schedule itself could not be played as written: it has no
/// expectations, so a FAIL is a step that found nothing to act on (a
/// scripted response with no stream open at that moment). Counted, not a
/// finding: it says nothing of the client.
fn unplayable(outcome: &RunOutcome) -> bool {
    matches!(outcome.verdict, Verdict::Fail { .. })
}

/// Where a run stopped: the index of the step that found nothing to act
/// on, for a run that stopped at one. Read off the step lines: a schedule
/// has no expectations, and every other step records its line as it
/// starts, the failing one too.
fn stopped_at(outcome: &RunOutcome) -> generate::Stop {
    if !unplayable(outcome) {
        return None;
    }
    let lines = outcome
        .events
        .iter()
        .filter(|e| matches!(e.kind, crate::timeline::EventKind::Step(_)))
        .count();
    lines.checked_sub(1)
}

/// What rule a run broke, if it broke one, with the verdict that says
/// how: not playing through first, then the invariants in their order
/// (over the whole timeline, also of a run that stopped early).
pub fn judge(
    scenario: &Scenario,
    rules: &Rules,
    outcome: &RunOutcome,
) -> Option<(&'static str, Verdict)> {
    if broken(outcome) {
        return Some((PLAYS_THROUGH, outcome.verdict.clone()));
    }
    if matches!(outcome.verdict, Verdict::NotApplicable { .. }) {
        return None;
    }
    let (invariant, violation) =
        invariant::check(scenario, rules.held(outcome.mode), &outcome.events)?;
    Some((
        invariant.name,
        Verdict::Fail {
            message: invariant::explain(invariant, &violation, &outcome.events),
        },
    ))
}

/// The `--against` client's name and timeline of a schedule.
type Other = (String, String);

/// What rule a run broke ([`judge`]), and if it broke none, whether the
/// `--against` client shows something else of the same schedule: `(rule,
/// verdict, the other client's name and timeline)`.
fn examine(
    scenario: &Scenario,
    rules: &Rules,
    outcome: &RunOutcome,
) -> Option<(&'static str, Verdict, Option<Other>)> {
    if let Some((broke, verdict)) = judge(scenario, rules, outcome) {
        return Some((broke, verdict, None));
    }
    let against = rules.against.as_ref()?;
    let (verdict, timeline) = against.compare(scenario, (outcome, &rules.caps))?;
    Some((
        against::SAME_AS_AGAINST,
        verdict,
        Some((against.name.clone(), timeline)),
    ))
}

/// Plays schedules `first..first + count` of `seed` (those of
/// `partition`'s shard, with one: [`record::holds_schedule`]) on the
/// client made by `factory`, held to `rules`, calling `progress` after
/// each; with a `deadline`, stops at the first schedule that would start
/// after it.
pub fn campaign(
    (factory, rules): (&BoxedFactory, &Rules),
    seed: u64,
    (first, count): (u64, u64),
    partition: Option<crate::suite::Partition>,
    shape: &Shape,
    deadline: Option<std::time::Instant>,
    progress: &mut dyn FnMut(u64, &Campaign),
) -> Campaign {
    let mut campaign = Campaign::default();
    for index in first..first.saturating_add(count) {
        if partition.is_some_and(|p| !record::holds_schedule(p, index)) {
            continue;
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        let schedule = schedule(seed, index, shape);
        let outcome = run_scenario(&schedule.scenario, factory.as_ref());
        // Stopped by a signal: the schedule did not play through, so it
        // is neither counted nor held to the invariants (a cut timeline
        // would break some); the campaign ends with what it found.
        if matches!(outcome.verdict, Verdict::Interrupted { .. }) {
            campaign.interrupted = true;
            break;
        }
        campaign.schedules += 1;
        if let Verdict::NotApplicable { reason } = &outcome.verdict {
            campaign.not_applicable += 1;
            *campaign
                .not_applicable_why
                .entry(reason.clone())
                .or_default() += 1;
        } else {
            campaign.played += 1;
            campaign.steps += schedule.scenario.steps.len() as u64;
            campaign.covered += outcome.virtual_duration;
        }
        if unplayable(&outcome) {
            campaign.unplayable += 1;
            let why = outcome.verdict.detail().lines().next().unwrap_or_default();
            // `file.yaml:12:3: send_response: ...`: the step, not where.
            let why = why.split_once(": ").map_or(why, |(_, rest)| rest);
            let why = why.split(';').next().unwrap_or(why).to_string();
            *campaign.stopped_at.entry(why).or_default() += 1;
        }
        if let Some((broke, verdict, other)) = examine(&schedule.scenario, rules, &outcome) {
            campaign.findings.push(Finding {
                index,
                broke,
                verdict,
                timeline: outcome.timeline.clone(),
                other,
                // Its file states the invariant it breaks.
                schedule: generate::stated(seed, index, shape, broke, stopped_at(&outcome)),
                drawn: None,
            });
        }
        progress(index, &campaign);
    }
    campaign
}

/// `finding` with its schedule shrunk (the client made by `factory`
/// held to `rules`) ([`generate::shrink`], at most
/// `budget` smaller drafts tried): the smallest schedule on which the
/// client made by `factory` still breaks the same rule, with that run's
/// verdict and timeline. Deterministic on virtual time; on real time a
/// draft that only sometimes breaks the rule may be kept or not.
///
/// `watch` is told after each draft; a signal ([`crate::interrupt`]) stops
/// the shrink, and the finding comes back as it was given.
pub fn shrink_finding(
    (factory, rules): (&BoxedFactory, &Rules),
    seed: u64,
    shape: &Shape,
    (finding, budget): (&Finding, usize),
    watch: &mut dyn FnMut(Shrinking),
) -> Finding {
    let breaks = |schedule: &Schedule| {
        let outcome = run_scenario(&schedule.scenario, factory.as_ref());
        examine(&schedule.scenario, rules, &outcome)
            .filter(|(broke, _, _)| *broke == finding.broke)
            .map(|(broke, verdict, other)| {
                let stop = stopped_at(&outcome);
                (broke, verdict, outcome.timeline, other, stop)
            })
    };
    let interrupted = || crate::interrupt::token().is_cancelled();
    let shrunk = shrink(
        seed,
        finding.index,
        shape,
        (finding.broke, budget),
        &mut |s| breaks(s).map(|(_, _, _, _, stop)| stop),
        &mut |step| {
            watch(step);
            if interrupted() {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        },
    );
    // Its last draft may have been cut short: the finding as found stands.
    if interrupted() {
        return finding.clone();
    }
    // A finding's own file ends where its run stopped: a shrunk draft
    // that plays through may be longer.
    let smaller = shrunk.scenario.steps.len() <= finding.schedule.scenario.steps.len();
    match breaks(&shrunk).filter(|_| smaller) {
        Some((broke, verdict, timeline, other, _)) => Finding {
            index: finding.index,
            broke,
            verdict,
            timeline,
            other,
            drawn: Some(finding.schedule.yaml.clone()),
            schedule: shrunk,
        },
        None => finding.clone(),
    }
}

/// Writes each finding into `dir` as `seed-S-I-P.yaml` (the schedule, which
/// `run` replays, shrunk if it was) beside `seed-S-I-P.txt` (its timeline,
/// with the verdict first) and, for a shrunk one, `seed-S-I-P-drawn.yaml`
/// (the schedule as drawn); for a difference from the `--against` client,
/// that client's timeline as `seed-S-I-P-CLIENT.txt`; returns the paths
/// written.
pub fn write_findings(
    dir: &std::path::Path,
    campaign: &Campaign,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut written = Vec::new();
    if campaign.findings.is_empty() {
        return Ok(written);
    }
    std::fs::create_dir_all(dir)?;
    for finding in &campaign.findings {
        let stem = finding
            .schedule
            .scenario
            .name
            .rsplit('/')
            .next()
            .unwrap_or("schedule")
            .to_string();
        let protocol = finding.schedule.scenario.protocol;
        let yaml = dir.join(format!("{stem}-{protocol}.yaml"));
        xds_conformance_reports::write_whole(&yaml, finding.schedule.yaml.as_bytes())?;
        if let Some(drawn) = &finding.drawn {
            let full = dir.join(format!("{stem}-{protocol}-drawn.yaml"));
            xds_conformance_reports::write_whole(&full, drawn.as_bytes())?;
            written.push(full);
        }
        let text = format!("{}\n\n{}", finding.verdict.detail(), finding.timeline);
        let timeline = dir.join(format!("{stem}-{protocol}.txt"));
        xds_conformance_reports::write_whole(&timeline, text.as_bytes())?;
        if let Some((name, other)) = &finding.other {
            let path = dir.join(format!("{stem}-{protocol}-{name}.txt"));
            xds_conformance_reports::write_whole(&path, other.as_bytes())?;
            written.push(path);
        }
        written.extend([yaml, timeline]);
    }
    Ok(written)
}
