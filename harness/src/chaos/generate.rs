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

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use xds_vocabulary::AdsProtocol;

use crate::check::Spanned;
use crate::scenario::file::{BackendSpec, ScenarioFile, ServerSpec};
use crate::scenario::{Scenario, load_str, to_yaml};
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

/// Draws one value of `strategy`.
fn draw<S: Strategy>(runner: &mut TestRunner, strategy: &S) -> S::Value {
    strategy
        .new_tree(runner)
        .expect("the schedule strategies never reject")
        .current()
}

/// Schedule `index` of the campaign `seed`.
pub fn schedule(seed: u64, index: u64, shape: Shape) -> Schedule {
    let mut runner = runner(seed, index);
    let servers = draw(&mut runner, &(1usize..=SERVERS.len()));
    let palette = Palette::small(&SERVERS[..servers]);
    let resources = draw(
        &mut runner,
        &proptest::collection::vec(
            crate::resource::generate::resource(&palette.names, &palette.backends),
            0..=6,
        ),
    );
    let mut file = ScenarioFile {
        name: Some(Spanned::new(format!("chaos/seed-{seed}-{index}"))),
        description: format!(
            "Chaos schedule {index} of seed {seed} ({servers} server{}, {}): generated \
             faults, resource churn and client churn, checked by the invariants.",
            if servers == 1 { "" } else { "s" },
            shape.protocol
        ),
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
    // The first server's resources, each kept if the file still loads
    // (a name twice in one list does not).
    for resource in resources {
        file.servers.value[0].resources.push(resource);
        if load(&file).is_err() {
            file.servers.value[0].resources.pop();
        }
    }
    // A scripted response of the other protocol finds no stream to go on.
    let other = match shape.protocol {
        AdsProtocol::Sotw => "send_delta_response",
        AdsProtocol::Delta => "send_response",
    };
    let kinds: Vec<_> = StepSpec::strategies(&palette)
        .into_iter()
        .filter(|(key, _)| *key != other)
        .collect();
    // A client that watches nothing has no stream for a fault or a
    // scripted response to act on: every schedule starts with a watch.
    if let Some((_, watch)) = kinds.iter().find(|(key, _)| *key == "watch") {
        file.steps.push(Spanned::new(draw(&mut runner, watch)));
    }
    let mut scenario = load(&file).expect("a schedule opening with a watch loads");
    // Each draw: a kind, then a step of it, kept if the script still
    // loads with it. Bounded: a palette where little compiles ends short.
    for _ in 0..shape.steps * 4 {
        if file.steps.len() == shape.steps {
            break;
        }
        let (_, strategy) = &kinds[draw(&mut runner, &(0..kinds.len()))];
        let step = draw(&mut runner, strategy);
        file.steps.push(Spanned::new(step));
        match load(&file) {
            Ok(loaded) => scenario = loaded,
            Err(_) => {
                file.steps.pop();
            }
        }
    }
    Schedule {
        yaml: to_yaml(&file),
        scenario,
    }
}

fn load(file: &ScenarioFile) -> Result<Scenario, crate::scenario::ScenarioError> {
    let yaml = to_yaml(file);
    let name = file.name.as_ref().map_or("chaos", |n| n.value.as_str());
    load_str(&format!("{name}.yaml"), &yaml)
}

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
                assert!(s.scenario.steps.len() >= 10, "{}", s.yaml);
                kinds.extend(s.scenario.steps.iter().map(|st| st.step.key()));
                servers.insert(s.scenario.servers.len());
            }
        }
        assert_eq!(servers.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
        // Most generated kinds turn up within 80 schedules.
        let generated = StepSpec::strategies(&Palette::small(&["primary"])).len();
        assert!(kinds.len() * 4 >= generated * 3, "{kinds:?} of {generated}");
    }
}
