//! How many scenario runs go at once.
//!
//! A real client's run mostly waits: for a process to start, for a 15 s
//! timer, for a backoff. Run one at a time, the suite on grpcio or grpc-js
//! takes minutes of an idle machine; run several at once, it takes the
//! longest few. Each run has its own fake servers, backends, ports, client
//! process and tokio runtime, so runs share nothing but the machine.
//!
//! Results come back in the order of the input, whatever order the runs
//! finished in, so reports and matrices read the same at any `jobs`.
//! Virtual-time runs stay deterministic at any `jobs` (their clock is
//! their own); real-time runs keep honest windows as long as the machine
//! is not saturated, which is why `jobs` is a small number: the waits
//! overlap, the CPU bursts (process start-up) mostly do not.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::differential::run_variants;
use crate::expectations::Expectations;
use xds_conformance_reports::{FailedTry, Verdict};

use crate::runner::RunOutcome;
use crate::scenario::Scenario;
use crate::snapshot_files::{self, SnapshotMode};

/// A client factory that worker threads can share.
pub type SharedFactory = dyn Fn() -> Box<dyn xds_client_under_test::ClientUnderTest> + Send + Sync;

/// A scenario's runs, one per protocol variant, as
/// [`run_variants`] gives them.
pub type ScenarioRuns = Vec<(Scenario, RunOutcome)>;

/// A run that has just finished, for live progress (`run` and `matrix`
/// print a line per run as it ends, not all of them at the end).
pub struct Finished<'a> {
    /// The client's name, as the caller gave it.
    pub client: &'a str,
    /// The run's scenario (its protocol variant).
    pub scenario: &'a Scenario,
    pub outcome: &'a RunOutcome,
    /// Runs finished so far for this client, and how many there are.
    pub done: usize,
    pub total: usize,
}

/// Told of every run as it finishes, from whichever worker ran it.
pub type Progress<'p> = dyn Fn(&Finished<'_>) + Sync + 'p;

/// Progress nobody watches.
pub fn no_progress(_: &Finished<'_>) {}

/// How many times a failed real-time run is tried again when nobody says
/// otherwise (`--retries`): a client's real-time run shares the machine
/// with everything else on it, and a gate must not fail on the machine's
/// load. A run that fails every try fails; one that fails and then passes
/// is FLAKY (see [`Verdict::Flaky`]). Virtual-time runs are deterministic:
/// never tried again.
pub const DEFAULT_RETRIES: u32 = 2;

/// Runs at once per client when nobody says otherwise: enough for the
/// waits of a real-time suite to overlap, few enough that two cores keep
/// up with the start-up of that many client processes.
pub const DEFAULT_JOBS: usize = 4;

/// What a client's runs are held to besides their scenarios: its
/// expectations file, and the timeline snapshots kept beside the scenario
/// files (`run --snapshots`).
#[derive(Clone, Copy)]
pub struct HeldTo<'a> {
    pub expectations: &'a Expectations,
    pub snapshots: Option<SnapshotMode>,
}

impl<'a> HeldTo<'a> {
    /// The expectations alone.
    pub fn expectations(expectations: &'a Expectations) -> Self {
        HeldTo {
            expectations,
            snapshots: None,
        }
    }
}

/// Every run of every scenario (one per protocol variant, see
/// [`run_variants`]) on clients from `factory`, `jobs` scenarios at a time,
/// in the order of `scenarios`; a scenario with a real-time run that
/// failed is played again, up to `retries` times. Each run's verdict is
/// final before progress is told of it: held to the expectations, then to
/// its snapshot.
pub fn run_all(
    scenarios: &[&Scenario],
    factory: &SharedFactory,
    jobs: usize,
    retries: u32,
    client: &str,
    held: HeldTo<'_>,
    progress: &Progress<'_>,
) -> Vec<ScenarioRuns> {
    let expectations = held.expectations;
    let jobs = jobs.clamp(1, scenarios.len().max(1));
    let order = start_order(scenarios, jobs);
    let next = AtomicUsize::new(0);
    let total: usize = scenarios.iter().map(|s| s.protocols.len()).sum();
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<ScenarioRuns>>> =
        Mutex::new((0..scenarios.len()).map(|_| None).collect());
    let work = || {
        loop {
            let Some(&index) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            let scenario = scenarios[index];
            // After an interrupt no new run starts; the rest are reported
            // as not run.
            let mut runs = if crate::interrupt::token().is_cancelled() {
                not_run(scenario)
            } else {
                run_retrying(scenario, factory, expectations, retries)
            };
            if let Some(mode) = held.snapshots {
                for (run, outcome) in &mut runs {
                    let verdict = std::mem::replace(&mut outcome.verdict, Verdict::Pass);
                    outcome.verdict = snapshot_files::apply(
                        mode,
                        std::path::Path::new(&run.source),
                        run,
                        client,
                        &outcome.snapshot(),
                        verdict,
                    );
                }
            }
            for (run, outcome) in &runs {
                progress(&Finished {
                    client,
                    scenario: run,
                    outcome,
                    done: done.fetch_add(1, Ordering::Relaxed) + 1,
                    total,
                });
            }
            results.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(runs);
        }
    };
    if jobs == 1 {
        work();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(work);
            }
        });
    }
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .zip(scenarios)
        .map(|(runs, scenario)| runs.unwrap_or_else(|| not_run(scenario)))
        .collect()
}

/// The order runs start in: with several at once, the longest scripts
/// first (by the scenario time their steps surely take: their waits), the
/// rest in the order given. On real time a run mostly waits, so the suite
/// takes about as long as its longest few; a ten-minute script started
/// last would add its whole length. One at a time, the order given.
fn start_order(scenarios: &[&Scenario], jobs: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scenarios.len()).collect();
    if jobs > 1 {
        let least = |s: &Scenario| s.steps.iter().map(|step| step.scheduled).max();
        // Stable: equal scripts keep the order given.
        order.sort_by_key(|&i| std::cmp::Reverse(least(scenarios[i])));
    }
    order
}

/// A scenario's runs, held to the client's expectations: a run it says to
/// skip is not played; the others' verdicts are held to their entries.
/// (With one variant skipped the others are played alone, without the
/// comparison of protocols `run_variants` makes.)
pub fn run_expecting(
    scenario: &Scenario,
    factory: &SharedFactory,
    expectations: &Expectations,
) -> ScenarioRuns {
    let variants = scenario.variants();
    let runs: ScenarioRuns = if variants
        .iter()
        .all(|v| expectations.skip(&v.name).is_none())
    {
        run_variants(scenario, factory)
    } else {
        variants
            .into_iter()
            .map(|variant| {
                let outcome = match expectations.skip(&variant.name) {
                    Some(reason) => RunOutcome::not_run(Verdict::NotApplicable { reason }),
                    None => crate::runner::run_scenario(&variant, factory),
                };
                (variant, outcome)
            })
            .collect()
    };
    runs.into_iter()
        .map(|(run, mut outcome)| {
            let held = expectations.apply(&run.name, outcome.verdict.clone());
            if held != outcome.verdict {
                outcome.observed = Some(std::mem::replace(&mut outcome.verdict, held));
            }
            (run, outcome)
        })
        .collect()
}

/// A scenario's runs, played again while one of them is a real-time run
/// that failed (FAIL or ERROR, after the expectations: an expected
/// failure is not retried), at most `retries` more times, and as a whole:
/// the comparison of protocols needs every variant. Each run's verdict is
/// then that of its last passing try if it has one, FLAKY if a try of it
/// failed first (the failed tries kept); a run that never passed keeps its
/// last try, its earlier failures kept too.
fn run_retrying(
    scenario: &Scenario,
    factory: &SharedFactory,
    expectations: &Expectations,
    retries: u32,
) -> ScenarioRuns {
    let mut runs = run_expecting(scenario, factory, expectations);
    let mut tries: Vec<Tries> = runs.iter().map(|_| Tries::default()).collect();
    for try_number in 1.. {
        let again = runs.iter().any(|(_, outcome)| retriable(outcome));
        let played = std::mem::take(&mut runs);
        let mut variants = Vec::with_capacity(played.len());
        for ((run, outcome), tries) in played.into_iter().zip(&mut tries) {
            tries.add(try_number, outcome);
            variants.push(run);
        }
        if !again || try_number > retries || crate::interrupt::token().is_cancelled() {
            return variants
                .into_iter()
                .zip(tries)
                .map(|(run, tries)| (run, tries.outcome()))
                .collect();
        }
        runs = run_expecting(scenario, factory, expectations);
    }
    unreachable!("the loop returns")
}

/// One run's tries so far.
#[derive(Default)]
struct Tries {
    /// Every try that failed, with its number.
    failed: Vec<(u32, FailedTry)>,
    /// What is reported: the last try that did not fail if there is one,
    /// else the last try; with its number.
    reported: Option<(u32, RunOutcome)>,
}

impl Tries {
    fn add(&mut self, number: u32, outcome: RunOutcome) {
        if retriable(&outcome) {
            self.failed.push((
                number,
                FailedTry {
                    verdict: outcome.verdict.clone(),
                    wall_duration: outcome.wall_duration,
                    timeline: outcome.timeline.clone(),
                },
            ));
        }
        let keep_passing = self
            .reported
            .as_ref()
            .is_some_and(|(_, kept)| !kept.verdict.is_failure())
            && outcome.verdict.is_failure();
        if !keep_passing {
            self.reported = Some((number, outcome));
        }
    }

    fn outcome(self) -> RunOutcome {
        let Some((number, mut outcome)) = self.reported else {
            return RunOutcome::not_run(Verdict::Interrupted {
                message: "not run".into(),
            });
        };
        // Every failed try but the one reported, in order.
        let failed: Vec<FailedTry> = self
            .failed
            .into_iter()
            .filter(|(n, _)| *n != number)
            .map(|(_, failed)| failed)
            .collect();
        if matches!(outcome.verdict, Verdict::Pass | Verdict::Divergent { .. })
            && let Some(first) = failed.first()
        {
            let message = match &first.verdict {
                Verdict::Fail { message } | Verdict::Error { message } => message.clone(),
                other => other.label().to_string(),
            };
            outcome.verdict = Verdict::Flaky {
                message,
                passed_on: number,
            };
        }
        outcome.failed_tries = failed;
        outcome
    }
}

/// A run worth trying again: a real-time run that failed or broke.
/// A real-time run that failed, unless its client flooded the timeline:
/// that is the client's doing, not the machine's load, and each try would
/// hold another timeline's worth of memory.
fn retriable(outcome: &RunOutcome) -> bool {
    outcome.mode == crate::runner::RunMode::RealTime
        && outcome.timeline_full.is_none()
        && matches!(
            outcome.verdict,
            Verdict::Fail { .. } | Verdict::Error { .. }
        )
}

/// A scenario's runs that never started because the run was interrupted.
fn not_run(scenario: &Scenario) -> ScenarioRuns {
    scenario
        .variants()
        .into_iter()
        .map(|variant| {
            let outcome = RunOutcome::not_run(Verdict::Interrupted {
                message: "not run: interrupted before it started".into(),
            });
            (variant, outcome)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;
    use xds_client_under_test::{ClientUnderTest, ReferenceClient};

    /// A scenario whose timeline spans a 15 s timer, so runs at once
    /// would show it if they shared a clock.
    fn scenario(name: &str) -> Scenario {
        load_str(
            &format!("{name}.yaml"),
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - watch: {type: CDS, name: c1}\n  \
             - expect: {watcher: {type: CDS, name: c1, event: does_not_exist}}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn results_keep_the_order_of_the_scenarios_at_any_jobs() {
        let scenarios: Vec<Scenario> = (0..7).map(|i| scenario(&format!("s{i}"))).collect();
        let refs: Vec<&Scenario> = scenarios.iter().collect();
        let factory = || Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>;
        let seen = Mutex::new(Vec::new());
        let record = |f: &Finished<'_>| {
            seen.lock()
                .unwrap()
                .push((f.scenario.name.clone(), f.done, f.total));
        };
        let serial = run_all(
            &refs,
            &factory,
            1,
            DEFAULT_RETRIES,
            "reference",
            HeldTo::expectations(&Expectations::default()),
            &record,
        );
        // Told of each run as it finished, counting up to the total.
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 7);
        assert_eq!(seen[0], ("s0".to_string(), 1, 7));
        assert_eq!(seen[6].1, 7);
        let parallel = run_all(
            &refs,
            &factory,
            3,
            DEFAULT_RETRIES,
            "reference",
            HeldTo::expectations(&Expectations::default()),
            &no_progress,
        );
        let names = |runs: &Vec<ScenarioRuns>| -> Vec<String> {
            runs.iter().flatten().map(|(s, _)| s.name.clone()).collect()
        };
        assert_eq!(names(&serial), names(&parallel));
        assert_eq!(names(&serial)[0], "s0");
        for ((_, a), (_, b)) in serial.iter().flatten().zip(parallel.iter().flatten()) {
            assert_eq!(a.verdict, b.verdict);
            // Virtual time: the same timeline however many run at once.
            assert_eq!(a.timeline, b.timeline);
        }
    }

    #[test]
    fn with_several_at_once_the_longest_scripts_start_first() {
        let text = |wait: &str| {
            format!(
                "description: d\nservers: {{ primary: {{ mode: scripted }} }}\nsteps:\n  \
                 - watch: {{ type: CDS, name: c1 }}\n  - wait: {wait}\n  - watch: {{ type: CDS, name: c2 }}\n"
            )
        };
        let [short, long, middle] = ["1s", "9m", "30s"]
            .map(|w| crate::scenario::load_str("t.yaml", &text(w)).expect("loads"));
        let given = [&short, &long, &middle, &short];
        assert_eq!(start_order(&given, 4), vec![1, 2, 0, 3]);
        assert_eq!(start_order(&given, 1), vec![0, 1, 2, 3]);
    }

    #[test]
    fn no_scenarios_is_no_runs() {
        let factory = || Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>;
        assert!(
            run_all(
                &[],
                &factory,
                4,
                DEFAULT_RETRIES,
                "reference",
                HeldTo::expectations(&Expectations::default()),
                &no_progress
            )
            .is_empty()
        );
    }
}
