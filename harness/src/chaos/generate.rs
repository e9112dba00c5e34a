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

use std::ops::ControlFlow;

use proptest::strategy::{BoxedStrategy, Just, Strategy, Union, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use xds_client_under_test::Capabilities;
use xds_vocabulary::AdsProtocol;

use super::follow_up::FollowUp;
use crate::check::Spanned;
use crate::resource::file::ResourceSpec;
use crate::scenario::file::{AuthoritySpec, BackendSpec, BootstrapSpec, ScenarioFile, ServerSpec};
use crate::scenario::{Scenario, check_built, load_str, to_yaml};
use crate::step::expect_invariant::{ExpectInvariantSpec, NAMES as EXPECT_NAMES};
use crate::step::wait::WaitSpec;
use crate::step::{Palette, StepSpec};

/// The shape of a campaign's schedules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Steps per schedule, at most.
    pub steps: usize,
    pub protocol: AdsProtocol,
    /// The client the schedules are drawn for, when they are fitted to
    /// one: a drafted step it cannot play is not taken (as one that does
    /// not load is not), so none of its schedules is n/a. `None`: every
    /// step, for the reference client, which plays them all.
    pub fit: Option<std::sync::Arc<Capabilities>>,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            steps: 20,
            protocol: AdsProtocol::Sotw,
            fit: None,
        }
    }
}

impl Shape {
    /// This shape fitted to a client with `caps`.
    pub fn fitted(self, caps: Capabilities) -> Shape {
        Shape {
            fit: Some(std::sync::Arc::new(caps)),
            ..self
        }
    }

    /// Whether `scenario` is one the fitted client plays as a schedule:
    /// it lacks nothing the scenario needs, and a client that can run on
    /// virtual time still does (grpc-rust's channels would put the run on
    /// real time). A watch counts only on a watch API: one projected
    /// through a channel adds a scaffold server the invariants would read
    /// as the client's.
    fn fits(&self, scenario: &Scenario) -> bool {
        let Some(caps) = &self.fit else {
            return true;
        };
        let direct = Capabilities {
            projected_watch: false,
            ..(**caps).clone()
        };
        crate::runner::missing_capabilities(scenario, &direct).is_empty()
            && (!caps.virtual_time
                || crate::runner::mode_for(caps, scenario) == crate::runner::RunMode::Virtual)
    }

    /// Whether the fitted client plays on real time: its waits are real,
    /// so they are kept short.
    fn real_time(&self) -> bool {
        self.fit.as_ref().is_some_and(|caps| !caps.virtual_time)
    }
}

/// Server names by count: a primary, then fallbacks.
const SERVERS: [&str; 3] = ["primary", "fallback", "last-resort"];

/// The authority a schedule may have (gRFC A47), and its one server.
pub const AUTHORITY: &str = "auth-a";
const AUTHORITY_SERVER: &str = "auth-a-server";

/// How the palette's names in [`AUTHORITY`] begin.
const AUTHORITY_PREFIX: &str = "xdstp://auth-a/";

/// The palette of a schedule with `servers` top-level servers, and with
/// `authority`, the authority's server (last) and a Cluster and its
/// endpoints named in it (`xdstp://auth-a/<type>/c3`): watches, faults
/// and resource churn reach the authority's server as any other.
fn palette(servers: usize, authority: bool) -> Palette {
    let mut palette = Palette::small(&SERVERS[..servers]);
    if authority {
        palette.servers.push(AUTHORITY_SERVER.to_string());
        for t in [
            xds_vocabulary::ResourceType::Cluster,
            xds_vocabulary::ResourceType::ClusterLoadAssignment,
        ] {
            let message = t
                .type_url()
                .trim_start_matches("type.googleapis.com/")
                .to_string();
            palette
                .names
                .entry(t)
                .or_default()
                .push(format!("{AUTHORITY_PREFIX}{message}/c3"));
        }
    }
    palette
}

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
    /// Each step, with what follows it if it sends resources (drawn with
    /// it, so that shrinking drops the two together). What a client tells
    /// a watcher that joins a resource it holds (its value, a pending
    /// error) is met only where a watcher joins just after an update or a
    /// NACK of it, which steps drawn among all kinds and all resources
    /// rarely line up.
    pub steps: Vec<(StepSpec, FollowUp)>,
    /// What the fallback servers start with.
    pub fallbacks: Fallbacks,
    /// Whether the bootstrap has an authority (gRFC A47) of its own
    /// server, and the palette names in it ([`AUTHORITY`]).
    pub authority: bool,
}

/// What a schedule's fallback servers start with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallbacks {
    /// Nothing: what they serve, steps set.
    Empty,
    /// The first server's resources (a replicated control plane, which is
    /// what A71 fallback is for: a client that falls back finds what it
    /// needs there, and one that should return to the primary has a
    /// reason to stay).
    Replicas,
    /// Their own version of each: the same names, other values (a copy
    /// that replaces the primary's in the client's cache, which it must
    /// not claim as the primary's when it returns).
    Variants,
}

/// The drafts of `shape`.
fn drafts(shape: &Shape) -> BoxedStrategy<Draft> {
    let (steps, protocol) = (shape.steps, shape.protocol);
    // For a client with a watch API, steps that start other XdsClients
    // (a channel's, a server's) are drawn a third as often as the other
    // kinds: the invariants that read what the client holds read only
    // runs without them (`invariant::one_client`), and with every kind
    // alike half the runs had one.
    let watch_api = shape.fit.as_ref().is_none_or(|caps| caps.watch);
    // An authority a quarter of the time, for a client that has them.
    let authority = if shape.fit.as_ref().is_none_or(|caps| caps.authorities) {
        proptest::bool::weighted(0.25).boxed()
    } else {
        Just(false).boxed()
    };
    (1usize..=SERVERS.len(), authority)
        .prop_flat_map(move |(servers, authority)| {
            let palette = palette(servers, authority);
            // A scripted response of the other protocol finds no stream to
            // go on.
            let other = match protocol {
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
            let any = Union::new_weighted(
                kinds
                    .into_iter()
                    .map(|(key, strategy)| {
                        let other_client = crate::invariant::OTHER_CLIENTS.contains(&key);
                        (if watch_api && other_client { 1 } else { 3 }, strategy)
                    })
                    .collect(),
            )
            .boxed();
            let step = Union::new_weighted(vec![(WAITS, wait), (100 - WAITS, any)]);
            (
                Just((servers, authority)),
                proptest::collection::vec(
                    crate::resource::generate::resource(&palette.names, &palette.backends),
                    0..=6,
                ),
                watch,
                // Drawn with room: a step that does not load where it
                // stands is left out.
                proptest::collection::vec((step, FollowUp::strategy()), 0..=steps * 2),
                // Variants half the time: a copy that replaces the
                // primary's is what a client returning to the primary
                // must not claim or keep.
                proptest::prop_oneof![
                    1 => Just(Fallbacks::Empty),
                    1 => Just(Fallbacks::Replicas),
                    2 => Just(Fallbacks::Variants),
                ],
            )
        })
        .prop_map(
            |((servers, authority), resources, first, steps, fallbacks)| Draft {
                servers,
                resources,
                first,
                steps,
                fallbacks,
                authority,
            },
        )
        .boxed()
}

/// Schedule `index` of the campaign `seed`.
pub fn schedule(seed: u64, index: u64, shape: &Shape) -> Schedule {
    let draft = drafts(shape)
        .new_tree(&mut runner(seed, index))
        .expect("the schedule strategies never reject")
        .current();
    build(seed, index, shape, &draft, None)
}

/// Where a run of a schedule stopped: the index of the step that found
/// nothing to act on, or `None` if it played through.
pub type Stop = Option<usize>;

/// Shrinks schedule `index` of `seed` while `still_fails` holds for it
/// (saying where that run stopped), with proptest's own shrinking of the
/// draft's value tree (drop steps and resources, simplify each), trying at
/// most `budget` smaller drafts; the smallest that still fails, described
/// with `broke`.
pub fn shrink(
    seed: u64,
    index: u64,
    shape: &Shape,
    (broke, budget): (&str, usize),
    still_fails: &mut dyn FnMut(&Schedule) -> Option<Stop>,
    watch: &mut dyn FnMut(Shrinking) -> ControlFlow<()>,
) -> Schedule {
    let mut tree = drafts(shape)
        .new_tree(&mut runner(seed, index))
        .expect("the schedule strategies never reject");
    let original = tree.current().steps.len();
    let shrunk = Broke {
        rule: broke,
        shrunk_from: Some(original),
        stated: false,
        stop: None,
    };
    let mut smallest = tree.current();
    let mut stop = still_fails(&build(seed, index, shape, &smallest, Some(shrunk))).flatten();
    if tree.simplify() {
        for tried in 1..=budget {
            let candidate = build(seed, index, shape, &tree.current(), Some(shrunk));
            let smaller = still_fails(&candidate);
            let more = if let Some(stopped) = smaller {
                smallest = tree.current();
                stop = stopped;
                tree.simplify()
            } else {
                tree.complicate()
            };
            let told = watch(Shrinking {
                tried,
                budget,
                smaller: smaller.is_some(),
                steps: smallest.steps.len(),
                drawn: original,
            });
            if !more || told.is_break() {
                break;
            }
        }
    }
    // The file states the rule it breaks as an expectation of its own.
    let stated = Broke {
        stated: true,
        stop,
        ..shrunk
    };
    build(seed, index, shape, &smallest, Some(stated))
}

/// Where a shrink is, told after each draft it tried: a shrink of a real
/// client's finding plays one schedule per draft, for minutes, and the
/// one who started it sees it move (and may stop it: the smallest found
/// so far is kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shrinking {
    /// Drafts tried so far, of at most `budget`.
    pub tried: usize,
    pub budget: usize,
    /// Whether the draft just tried still broke the rule (and is the
    /// smallest now).
    pub smaller: bool,
    /// Steps of the smallest schedule that still breaks the rule.
    pub steps: usize,
    /// Steps of the schedule as drawn.
    pub drawn: usize,
}

/// Schedule `index` of `seed` as a finding's file, not shrunk: it ends
/// stating the rule it breaks as its last step (`expect_invariant`); for
/// a run that stopped at a step (`stop`), in place of that step and those
/// after it.
pub fn stated(seed: u64, index: u64, shape: &Shape, broke: &str, stop: Stop) -> Schedule {
    let draft = drafts(shape)
        .new_tree(&mut runner(seed, index))
        .expect("the schedule strategies never reject")
        .current();
    let broke = Broke {
        rule: broke,
        shrunk_from: None,
        stated: true,
        stop,
    };
    build(seed, index, shape, &draft, Some(broke))
}

/// The rule a finding's schedule breaks, for its file.
#[derive(Clone, Copy)]
struct Broke<'a> {
    /// An invariant's name, or `plays-through`.
    rule: &'a str,
    /// How many steps the draft had, for a shrunk schedule.
    shrunk_from: Option<usize>,
    /// Whether the file ends with `expect_invariant: <rule>` (for an
    /// invariant): replayed with `run`, it fails there on a client that
    /// breaks the rule and passes on one that keeps it.
    stated: bool,
    /// Where the run that broke it stopped: a stated file ends before that
    /// step (which would stop its replay before its last step).
    stop: Stop,
}

/// The schedule file of `draft`: its resources and steps, each kept where
/// the file still loads with it, at most `shape.steps` steps, then a
/// closing wait. `broke`: for a finding, the rule it breaks (and how many
/// steps the draft had, if shrunk), for its description and its last
/// step.
fn build(
    seed: u64,
    index: u64,
    shape: &Shape,
    draft: &Draft,
    broke: Option<Broke<'_>>,
) -> Schedule {
    let servers = draft.servers;
    let palette = palette(servers, draft.authority);
    let mut description = format!(
        "Chaos schedule {index} of seed {seed} ({servers} server{}{}, {}): generated \
         faults, resource churn and client churn, checked by the invariants.",
        if servers == 1 { "" } else { "s" },
        if draft.authority {
            format!(" and authority {AUTHORITY} on {AUTHORITY_SERVER}")
        } else {
            String::new()
        },
        shape.protocol
    );
    // A finding's file states an invariant it breaks as its last step;
    // other rules (playing through, --against) are not expectations.
    let broke = broke.map(|b| Broke {
        stated: b.stated && EXPECT_NAMES.contains(&b.rule),
        ..b
    });
    if let Some(broke) = broke {
        if let Some(drafted) = broke.shrunk_from {
            description.push_str(&format!(" Shrunk from a draft of {drafted} steps."));
        }
        description.push_str(&format!(" It found a client breaking `{}`", broke.rule));
        description.push_str(if broke.stated {
            "; its last step expects the run to keep it."
        } else {
            "."
        });
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
        bootstrap: draft.authority.then(|| BootstrapSpec {
            servers: Some(
                SERVERS[..servers]
                    .iter()
                    .map(|s| Spanned::new(s.to_string()))
                    .collect(),
            ),
            authorities: [(
                AUTHORITY.to_string(),
                AuthoritySpec {
                    servers: vec![Spanned::new(AUTHORITY_SERVER.to_string())],
                    client_listener_resource_name_template: None,
                },
            )]
            .into_iter()
            .collect(),
            ..BootstrapSpec::default()
        }),
        ..ScenarioFile::default()
    };
    // The first server's resources, each kept if the file still checks
    // (a name twice in one list does not). Checked as built, not written
    // and parsed: a step at a time, that was most of a schedule's cost.
    let source = format!(
        "{}.yaml",
        file.name.as_ref().map_or("chaos", |n| n.value.as_str())
    );
    let checks = |file: &ScenarioFile| {
        check_built(&source, file).is_ok_and(|scenario| shape.fits(&scenario))
    };
    // A name in the authority is its server's to serve.
    let authority_server = file.servers.value.len() - 1;
    for resource in &draft.resources {
        let (_, name) = resource.value.identity();
        let on = if name.starts_with(AUTHORITY_PREFIX) {
            authority_server
        } else {
            0
        };
        file.servers.value[on].resources.push(resource.clone());
        if !checks(&file) {
            file.servers.value[on].resources.pop();
        }
    }
    if draft.fallbacks != Fallbacks::Empty {
        let mut resources = file.servers.value[0].resources.clone();
        if draft.fallbacks == Fallbacks::Variants {
            for resource in &mut resources {
                resource.value =
                    crate::resource::generate::variant(&resource.value, &palette.backends);
            }
        }
        for (_, server) in file.servers.value.iter_mut().take(servers).skip(1) {
            server.resources = resources.clone();
        }
    }
    // The opening watch, or for a client without a watch API a dial of
    // the palette's target; a client that connects at its start (Envoy)
    // may open with neither.
    let dial = StepSpec::Dial(crate::step::dial::DialSpec(Spanned::new(
        palette.targets[0].clone(),
    )));
    for opening in [&draft.first, &dial] {
        file.steps.push(Spanned::new(opening.clone()));
        if checks(&file) {
            break;
        }
        file.steps.pop();
    }
    for (step, follow_up) in &draft.steps {
        if file.steps.len() >= shape.steps {
            break;
        }
        let step = match step {
            StepSpec::Wait(wait) if shape.real_time() => shortened(wait),
            step => step.clone(),
        };
        file.steps.push(Spanned::new(step.clone()));
        if !checks(&file) {
            file.steps.pop();
            continue;
        }
        for step in follow_up.steps(&step, &file.steps, &palette, shape.real_time()) {
            if file.steps.len() >= shape.steps {
                break;
            }
            file.steps.push(Spanned::new(step));
            if !checks(&file) {
                file.steps.pop();
            }
        }
    }
    if let Some(stop) = broke.filter(|b| b.stated).and_then(|b| b.stop) {
        file.steps.truncate(stop);
    }
    // What the last steps set off plays out before the run ends (timers
    // of 15 s, and 30 s in the A88 profile), so the invariants see it.
    // On real time no invariant reads a timer (the machine's timing is
    // not the protocol's): the last responses are answered within one,
    // and a client with a watch API has the quiet `eventually-consistent`
    // reads.
    let watch_api = shape.fit.as_ref().is_none_or(|caps| caps.watch);
    let closing = match (shape.real_time(), watch_api) {
        (false, _) => CLOSING_WAIT,
        (true, true) => REAL_TIME_QUIET_CLOSING_WAIT,
        (true, false) => REAL_TIME_CLOSING_WAIT,
    };
    file.steps
        .push(Spanned::new(StepSpec::Wait(WaitSpec(Spanned::new(
            closing.to_string(),
        )))));
    if !checks(&file) {
        file.steps.pop();
    }
    if let Some(broke) = broke.filter(|b| b.stated) {
        file.steps.push(Spanned::new(StepSpec::ExpectInvariant(
            ExpectInvariantSpec(Spanned::new(broke.rule.to_string())),
        )));
    }
    // The schedule is its file: what is played is what `run` replays. A
    // value that checks but does not survive being written costs the
    // steps from the end until the file loads.
    loop {
        let yaml = to_yaml(&file);
        match load_str(&source, &yaml) {
            Ok(scenario) => return Schedule { yaml, scenario },
            Err(e) if file.steps.len() <= 1 => panic!("a schedule's opening loads: {e}"),
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

/// The wait a schedule played on real time ends with.
const REAL_TIME_CLOSING_WAIT: &str = "2s";

/// The wait a schedule played on real time by a client with a watch API
/// ends with: past the 5 s of quiet after which `eventually-consistent`
/// reads what its watchers heard (helper run of grpc-js, seed 7: with
/// 2 s, one value in 15 schedules was read).
const REAL_TIME_QUIET_CLOSING_WAIT: &str = "7s";

/// The longest wait of a schedule played on real time: a campaign on a
/// process client is bounded in time, not only in schedules.
const REAL_TIME_LONGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// `wait` no longer than [`REAL_TIME_LONGEST_WAIT`].
fn shortened(wait: &WaitSpec) -> StepSpec {
    use crate::check::duration::{format_duration_in_units, parse_duration};
    let drawn = parse_duration(&wait.0.value).unwrap_or(REAL_TIME_LONGEST_WAIT);
    StepSpec::Wait(WaitSpec(Spanned::new(format_duration_in_units(
        drawn.min(REAL_TIME_LONGEST_WAIT),
    ))))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_seed_and_an_index_give_one_schedule() {
        let shape = Shape::default();
        let a = schedule(7, 3, &shape);
        assert_eq!(a.yaml, schedule(7, 3, &shape).yaml);
        assert_ne!(a.yaml, schedule(7, 4, &shape).yaml);
        assert_ne!(a.yaml, schedule(8, 3, &shape).yaml);
    }

    #[test]
    fn schedules_load_back_from_their_yaml_and_vary() {
        let mut kinds = std::collections::BTreeSet::new();
        let mut servers = std::collections::BTreeSet::new();
        let mut with_authority = 0;
        let mut total = 0;
        for protocol in [AdsProtocol::Sotw, AdsProtocol::Delta] {
            for index in 0..40 {
                let s = schedule(
                    1,
                    index,
                    &Shape {
                        steps: 20,
                        protocol,
                        fit: None,
                    },
                );
                let reloaded = load_str("again.yaml", &s.yaml).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(reloaded.steps.len(), s.scenario.steps.len());
                assert_eq!(reloaded.protocols, [protocol]);
                assert!(s.scenario.steps.len() <= 21, "{}", s.yaml);
                total += s.scenario.steps.len();
                kinds.extend(s.scenario.steps.iter().map(|st| st.step.key()));
                let top = |d: &&crate::scenario::ServerDef| d.name != AUTHORITY_SERVER;
                servers.insert(s.scenario.servers.iter().filter(top).count());
                if s.scenario.servers.len() > s.scenario.servers.iter().filter(top).count() {
                    with_authority += 1;
                    assert!(s.yaml.contains("authorities:"), "{}", s.yaml);
                }
            }
        }
        // A quarter of the schedules have an authority of their own server.
        assert!((8..=40).contains(&with_authority), "{with_authority} of 80");
        // A draft draws up to twice the steps, some of which do not load
        // where they stand: schedules are ten steps long on average.
        assert!(total >= 80 * 10, "{total} steps in 80 schedules");
        assert_eq!(servers.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
        // Most generated kinds turn up within 80 schedules.
        let generated = StepSpec::strategies(&Palette::small(&["primary"])).len();
        assert!(kinds.len() * 4 >= generated * 3, "{kinds:?} of {generated}");
    }

    fn reference_caps() -> Capabilities {
        use xds_client_under_test::ClientUnderTest as _;
        xds_client_under_test::ReferenceClient::new().capabilities()
    }

    #[test]
    fn fitting_to_the_reference_client_changes_no_schedule() {
        for protocol in [AdsProtocol::Sotw, AdsProtocol::Delta] {
            let plain = Shape {
                protocol,
                ..Shape::default()
            };
            let fitted = plain.clone().fitted(reference_caps());
            for index in 0..150 {
                assert_eq!(
                    schedule(3, index, &plain).yaml,
                    schedule(3, index, &fitted).yaml,
                    "schedule {index} ({protocol})"
                );
            }
        }
    }

    #[test]
    fn a_schedule_fitted_to_a_channel_client_on_real_time_asks_nothing_it_lacks_and_is_short() {
        // A gRPC client through an adapter: channels, RPCs and CSDS, no
        // watch API, no delta, real time.
        let caps = Capabilities {
            dial: true,
            rpc: true,
            csds: true,
            channel_states: true,
            grpc_bootstrap: true,
            named_lds_cds: true,
            projected_watch: true,
            ..Capabilities::default()
        };
        let shape = Shape::default().fitted(caps.clone());
        let mut kinds = std::collections::BTreeSet::new();
        for index in 0..60 {
            let s = schedule(5, index, &shape);
            let missing = crate::runner::missing_capabilities(&s.scenario, &caps);
            assert!(missing.is_empty(), "{missing:?} in\n{}", s.yaml);
            assert_eq!(s.scenario.steps[0].step.key(), "dial", "{}", s.yaml);
            let waits = s
                .yaml
                .lines()
                .filter_map(|l| l.trim().strip_prefix("- wait: "));
            let total: Duration = waits
                .map(|w| crate::check::duration::parse_duration(w).unwrap())
                .sum();
            assert!(
                total <= Duration::from_secs(22),
                "{total:?} of waits in\n{}",
                s.yaml
            );
            kinds.extend(s.scenario.steps.iter().map(|st| st.step.key()));
        }
        assert!(
            !kinds.contains("watch"),
            "a projected watch is not taken: {kinds:?}"
        );
        for kind in ["rpc", "close_stream", "hold_connections", "set_resources"] {
            assert!(kinds.contains(kind), "{kind} never drawn: {kinds:?}");
        }
    }

    #[test]
    fn a_client_on_virtual_time_whose_channels_need_real_time_keeps_virtual_time() {
        let caps = Capabilities {
            virtual_time: true,
            channels_need_real_time: true,
            ..reference_caps()
        };
        let shape = Shape::default().fitted(caps.clone());
        for index in 0..60 {
            let s = schedule(5, index, &shape);
            assert_eq!(
                crate::runner::mode_for(&caps, &s.scenario),
                crate::runner::RunMode::Virtual,
                "{}",
                s.yaml
            );
        }
    }
}
