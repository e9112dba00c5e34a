//! Chaos schedules: ordinary scenario files generated from a seed. A
//! schedule is the palette's servers (one to three: fallback), some of
//! the palette's resources on the first, and a script of generated steps
//! of every kind that is generated (faults, resource churn, client churn;
//! see [`StepSpec::strategies`]). It is written as YAML and loaded like
//! any file, so a schedule plays on the normal runner, leaves a normal
//! timeline, and a finding is already a scenario file.
//!
//! Preconditions are the loader's: a generated step that does not compile
//! where it stands (a `cancel_watch` of a resource not watched) is not
//! taken there, and another is drawn.

use proptest::strategy::{BoxedStrategy, Just, Strategy, Union, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use xds_vocabulary::AdsProtocol;

use crate::check::Spanned;
use crate::resource::file::ResourceSpec;
use crate::scenario::file::{BackendSpec, ScenarioFile, ServerSpec};
use crate::scenario::{Scenario, check_built, load_str, to_yaml};
use crate::step::wait::WaitSpec;
use crate::step::{Palette, StepSpec};

/// The shape of a campaign's schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Steps per schedule, at most.
    pub steps: usize,
    pub protocol: AdsProtocol,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            steps: 20,
            protocol: AdsProtocol::Sotw,
        }
    }
}

/// Server names by count: a primary, then fallbacks.
const SERVERS: [&str; 3] = ["primary", "fallback", "last-resort"];

/// A generated schedule: its file (to write where a finding is kept) and
/// the scenario it loads as.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub yaml: String,
    pub scenario: Scenario,
}

/// A runner whose randomness is the campaign's seed and the schedule's
/// index, and nothing else: the same pair gives the same schedule.
fn runner(seed: u64, index: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&index.to_le_bytes());
    bytes[16..].copy_from_slice(b"xds-chaos-sched.");
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// What a schedule is drawn as: one proptest value, so that proptest's
/// value tree both draws it and shrinks it ([`shrink`]). `build` turns it
/// into the file, keeping each resource and step only where the file
/// still loads with it (the preconditions are the loader's, rechecked on
/// every shrunk draft).
#[derive(Clone, Debug)]
pub struct Draft {
    pub servers: usize,
    pub resources: Vec<Spanned<ResourceSpec>>,
    /// The opening watch: a client that watches nothing has no stream for
    /// a fault or a scripted response to act on.
    pub first: StepSpec,
    pub steps: Vec<StepSpec>,
}

/// The drafts of `shape`.
fn drafts(shape: Shape) -> BoxedStrategy<Draft> {
    (1usize..=SERVERS.len())
        .prop_flat_map(move |servers| {
            let palette = Palette::small(&SERVERS[..servers]);
            // A scripted response of the other protocol finds no stream to
            // go on.
            let other = match shape.protocol {
                AdsProtocol::Sotw => "send_delta_response",
                AdsProtocol::Delta => "send_response",
            };
            let kinds: Vec<_> = StepSpec::strategies(&palette)
                .into_iter()
                .filter(|(key, _)| *key != other)
                .collect();
            let of = |wanted: &str| {
                kinds
                    .iter()
                    .find(|(key, _)| *key == wanted)
                    .map(|(_, strategy)| strategy.clone())
                    .expect("watch and wait are generated")
            };
            let (watch, wait) = (of("watch"), of("wait"));
            // Steps act at once on virtual time: without waits between
            // them a schedule is a burst of faults the client never
            // answers. So about one step in three is a wait.
            let any = Union::new(kinds.into_iter().map(|(_, strategy)| strategy)).boxed();
            let step = Union::new_weighted(vec![(WAITS, wait), (100 - WAITS, any)]);
            (
                Just(servers),
                proptest::collection::vec(
                    crate::resource::generate::resource(&palette.names, &palette.backends),
                    0..=6,
                ),
                watch,
                // Drawn with room: a step that does not load where it
                // stands is left out.
                proptest::collection::vec(step, 0..=shape.steps * 2),
            )
        })
        .prop_map(|(servers, resources, first, steps)| Draft {
            servers,
            resources,
            first,
            steps,
        })
        .boxed()
}

/// Schedule `index` of the campaign `seed`.
pub fn schedule(seed: u64, index: u64, shape: Shape) -> Schedule {
    let draft = drafts(shape)
        .new_tree(&mut runner(seed, index))
        .expect("the schedule strategies never reject")
        .current();
    build(seed, index, shape, &draft, None)
}

/// Shrinks schedule `index` of `seed` while `still_fails` holds for it,
/// with proptest's own shrinking of the draft's value tree (drop steps and
/// resources, simplify each), trying at most `budget` smaller drafts; the
/// smallest that still fails, described with `broke`.
pub fn shrink(
    seed: u64,
    index: u64,
    shape: Shape,
    broke: &str,
    budget: usize,
    still_fails: &mut dyn FnMut(&Schedule) -> bool,
) -> Schedule {
    let mut tree = drafts(shape)
        .new_tree(&mut runner(seed, index))
        .expect("the schedule strategies never reject");
    let original = tree.current().steps.len();
    let mut smallest = build(seed, index, shape, &tree.current(), Some((broke, original)));
    if !tree.simplify() {
        return smallest;
    }
    for _ in 0..budget {
        let candidate = build(seed, index, shape, &tree.current(), Some((broke, original)));
        let more = if still_fails(&candidate) {
            smallest = candidate;
            tree.simplify()
        } else {
            tree.complicate()
        };
        if !more {
            break;
        }
    }
    smallest
}

/// The schedule file of `draft`: its resources and steps, each kept where
/// the file still loads with it, at most `shape.steps` steps, then a
/// closing wait. `shrunk`: the invariant it was shrunk against and how
/// many steps the draft had, for its description.
fn build(
    seed: u64,
    index: u64,
    shape: Shape,
    draft: &Draft,
    shrunk: Option<(&str, usize)>,
) -> Schedule {
    let servers = draft.servers;
    let palette = Palette::small(&SERVERS[..servers]);
    let mut description = format!(
        "Chaos schedule {index} of seed {seed} ({servers} server{}, {}): generated \
         faults, resource churn and client churn, checked by the invariants.",
        if servers == 1 { "" } else { "s" },
        shape.protocol
    );
    if let Some((broke, drafted)) = shrunk {
        description.push_str(&format!(
            " Shrunk from a draft of {drafted} steps: it breaks `{broke}`."
        ));
    }
    let mut file = ScenarioFile {
        name: Some(Spanned::new(format!("chaos/seed-{seed}-{index}"))),
        description,
        protocols: vec![Spanned::new(shape.protocol.to_string())],
        servers: Spanned::new(
            palette
                .servers
                .iter()
                .map(|name| (name.clone(), ServerSpec::default()))
                .collect(),
        ),
        backends: palette
            .backends
            .iter()
            .map(|b| (b.clone(), BackendSpec {}))
            .collect(),
        snapshot: Some(false),
        ..ScenarioFile::default()
    };
    // The first server's resources, each kept if the file still checks
    // (a name twice in one list does not). Checked as built, not written
    // and parsed: a step at a time, that was most of a schedule's cost.
    let source = format!(
        "{}.yaml",
        file.name.as_ref().map_or("chaos", |n| n.value.as_str())
    );
    let checks = |file: &ScenarioFile| check_built(&source, file).is_ok();
    for resource in &draft.resources {
        file.servers.value[0].resources.push(resource.clone());
        if !checks(&file) {
            file.servers.value[0].resources.pop();
        }
    }
    file.steps.push(Spanned::new(draft.first.clone()));
    for step in &draft.steps {
        if file.steps.len() >= shape.steps {
            break;
        }
        file.steps.push(Spanned::new(step.clone()));
        if !checks(&file) {
            file.steps.pop();
        }
    }
    // What the last steps set off plays out before the run ends (timers
    // of 15 s, and 30 s in the A88 profile), so the invariants see it.
    file.steps
        .push(Spanned::new(StepSpec::Wait(WaitSpec(Spanned::new(
            CLOSING_WAIT.to_string(),
        )))));
    if !checks(&file) {
        file.steps.pop();
    }
    // The schedule is its file: what is played is what `run` replays. A
    // value that checks but does not survive being written costs the
    // steps from the end until the file loads.
    loop {
        let yaml = to_yaml(&file);
        match load_str(&source, &yaml) {
            Ok(scenario) => return Schedule { yaml, scenario },
            Err(e) if file.steps.len() <= 1 => panic!("a schedule opening with a watch loads: {e}"),
            Err(_) => {
                file.steps.pop();
            }
        }
    }
}

/// How often a drawn step is a wait, in percent.
const WAITS: u32 = 30;

/// The wait every schedule ends with.
const CLOSING_WAIT: &str = "31s";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_and_an_index_give_one_schedule() {
        let shape = Shape::default();
        let a = schedule(7, 3, shape);
        assert_eq!(a.yaml, schedule(7, 3, shape).yaml);
        assert_ne!(a.yaml, schedule(7, 4, shape).yaml);
        assert_ne!(a.yaml, schedule(8, 3, shape).yaml);
    }

    #[test]
    fn schedules_load_back_from_their_yaml_and_vary() {
        let mut kinds = std::collections::BTreeSet::new();
        let mut servers = std::collections::BTreeSet::new();
        let mut total = 0;
        for protocol in [AdsProtocol::Sotw, AdsProtocol::Delta] {
            for index in 0..40 {
                let s = schedule(
                    1,
                    index,
                    Shape {
                        steps: 20,
                        protocol,
                    },
                );
                let reloaded = load_str("again.yaml", &s.yaml).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(reloaded.steps.len(), s.scenario.steps.len());
                assert_eq!(reloaded.protocols, [protocol]);
                assert!(s.scenario.steps.len() <= 21, "{}", s.yaml);
                total += s.scenario.steps.len();
                kinds.extend(s.scenario.steps.iter().map(|st| st.step.key()));
                servers.insert(s.scenario.servers.len());
            }
        }
        // A draft draws up to twice the steps, some of which do not load
        // where they stand: schedules are ten steps long on average.
        assert!(total >= 80 * 10, "{total} steps in 80 schedules");
        assert_eq!(servers.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
        // Most generated kinds turn up within 80 schedules.
        let generated = StepSpec::strategies(&Palette::small(&["primary"])).len();
        assert!(kinds.len() * 4 >= generated * 3, "{kinds:?} of {generated}");
    }
}
