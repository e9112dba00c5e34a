//! Plays a scenario: fake servers and the client under test on one paused
//! current-thread runtime with an in-memory network, the steps in order,
//! CSDS polled whenever something happened, everything on one timeline,
//! expectations checked against it.
//!
//! An `expect` is met by an event since the last action step that no
//! earlier `expect` used; expectations between two actions may be met in
//! any order, since clients order independent events differently. An
//! `expect_none` fails on any unused matching event in its window.
//!
//! Data flows one way: scenario -> runner -> (fake servers + client) ->
//! timeline -> verdict.
//!
//! Each concern is a module: `environment` starts the fake servers and
//! backends the client is pointed at, `stage` is what steps may do while
//! they play (each step kind plays itself: `crate::step`), `expect`
//! checks expectations, `wait` lets time pass (the one wait loop), `csds`
//! keeps the client's CSDS view.

mod csds;
mod environment;
mod expect;
pub mod explain;
mod stage;
pub mod stop;
mod wait;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::time::Instant;
use xds_client_under_test::{Capabilities, ClientEnvironment, ClientError, ClientUnderTest};
use xds_conformance_reports::Verdict;
use xds_fake_server::FakeAdsServer;
use xds_vocabulary::AdsProtocol;

use crate::addresses::{AddressMap, Normalizer};
use crate::proxy::ProxyListeners;
use crate::scenario::{BootstrapPlan, Scenario};
use crate::settle::IdleSignal;
use crate::timeline::{Source, Timeline, TimelineEvent};

pub use environment::{CLOCK_EPOCH_UNIX_SECONDS, fake_server, server_uri};

use crate::step::{Failure, StepError};
use csds::CsdsState;
use environment::{Environment, SetUpError};

/// The result of playing one scenario.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub verdict: Verdict,
    pub events: Vec<TimelineEvent>,
    /// The rendered timeline, with times (for reports).
    pub timeline: String,
    pub virtual_duration: Duration,
    pub wall_duration: Duration,
    /// The clock it ran on.
    pub mode: RunMode,
    /// The client's peak resident set size, read just before it was shut
    /// down, when the client can report it (one in its own process).
    pub peak_rss_bytes: Option<u64>,
    /// What the verdict points at on the timeline (a failure's window and
    /// nearest event, or the first divergence), for the matrix's picture.
    pub mark: Option<crate::timeline::Mark>,
    /// Earlier tries of this run that failed (see `schedule`'s retries).
    pub failed_tries: Vec<xds_conformance_reports::FailedTry>,
    /// The limit the run's timeline reached, if it did: the client sent
    /// more than a timeline holds (a flood), which trying again does not
    /// change.
    pub timeline_full: Option<crate::timeline::Full>,
    /// The verdict before the client's expectations were held to it,
    /// where an entry changed it (see `ScenarioReport::observed`).
    pub observed: Option<Verdict>,
    /// Turns this run's real addresses in event text back into the
    /// scenario's (identity on in-memory runs): what `timeline` went
    /// through, for whoever reads `events`.
    pub normalizer: crate::addresses::Normalizer,
    /// For a run that did not apply: each capability the client lacks
    /// (see [`missing_capabilities`]), which the matrix groups n/a by.
    pub missing: Vec<String>,
}

impl RunOutcome {
    /// What snapshots store: the timeline itself for a virtual-time run,
    /// the normalised rendering for a real-time one.
    pub fn snapshot(&self) -> std::borrow::Cow<'_, str> {
        // Rendered when asked for, not with every run: a flooding client's
        // timeline would otherwise be held twice more (the rendering and
        // its normalised lines) by every run that keeps no snapshot.
        match self.mode {
            RunMode::Virtual => std::borrow::Cow::Borrowed(&self.timeline),
            RunMode::RealTime => {
                std::borrow::Cow::Owned(crate::timeline::render_normalized(&self.events, &|line| {
                    self.normalizer.normalize(line)
                }))
            }
        }
    }

    /// A run that did not take place, with why.
    pub fn not_run(verdict: Verdict) -> RunOutcome {
        RunOutcome {
            verdict,
            events: Vec::new(),
            timeline: String::new(),
            virtual_duration: Duration::ZERO,
            wall_duration: Duration::ZERO,
            mode: RunMode::Virtual,
            peak_rss_bytes: None,
            mark: None,
            failed_tries: Vec::new(),
            observed: None,
            timeline_full: None,
            normalizer: Default::default(),
            missing: Vec::new(),
        }
    }
}

/// Makes a fresh client for each run.
pub type ClientFactory<'a> = &'a dyn Fn() -> Box<dyn ClientUnderTest>;

pub use crate::clock::{REAL_TIME_LATENESS, RunMode};

/// The mode a client plays `scenario` in: virtual time when it can (a
/// client whose channels need real TCP plays a scenario that uses them on
/// real time).
pub fn mode_for(caps: &Capabilities, scenario: &Scenario) -> RunMode {
    if caps.virtual_time && !(caps.channels_need_real_time && uses_channels(scenario, caps)) {
        RunMode::Virtual
    } else {
        RunMode::RealTime
    }
}

/// Whether a step of `scenario` needs `caps`' channels: it would be
/// missing something with dial and RPCs taken away (each step says what it
/// needs, so this knows no step kind).
fn uses_channels(scenario: &Scenario, caps: &Capabilities) -> bool {
    let without = Capabilities {
        dial: false,
        rpc: false,
        background_rpc: false,
        ..caps.clone()
    };
    scenario.steps.iter().any(|s| {
        s.step.missing_capability(&without).is_some() && s.step.missing_capability(caps).is_none()
    })
}

/// Plays `scenario` against a client from `make_client`, in the mode the
/// client supports (virtual time for in-process clients).
pub fn run_scenario(scenario: &Scenario, make_client: ClientFactory<'_>) -> RunOutcome {
    run_scenario_in(scenario, make_client, None)
}

/// [`run_scenario`] in a given mode: `Some(RunMode::RealTime)` runs an
/// in-process client over real TCP on real time too (for measurements).
/// A client that cannot run in the mode is an ERROR.
pub fn run_scenario_in(
    scenario: &Scenario,
    make_client: ClientFactory<'_>,
    mode: Option<RunMode>,
) -> RunOutcome {
    let wall_start = std::time::Instant::now();
    let client = make_client();
    let caps = client.capabilities();
    let early = |verdict| RunOutcome {
        verdict,
        events: Vec::new(),
        timeline: String::new(),
        virtual_duration: Duration::ZERO,
        wall_duration: wall_start.elapsed(),
        mode: mode_for(&caps, scenario),
        peak_rss_bytes: None,
        mark: None,
        failed_tries: Vec::new(),
        observed: None,
        timeline_full: None,
        normalizer: Default::default(),
        missing: Vec::new(),
    };
    // What a client shows differently is read as it shows it (see
    // `crate::projection::wildcard`); the run plays that reading.
    let projected = crate::projection::wildcard::project(scenario, &caps);
    let scenario = &*projected;
    let missing = missing_capabilities(scenario, &caps);
    // A rule that does not bind this client says so first: what else it
    // lacks does not matter then. Before that, a zone that speaks KDS
    // alone is told it has no xDS: no rule of an xDS scenario is about it.
    let not_bound = if scenario.zone.is_none() && caps.kds_only() {
        None
    } else {
        scenario.applies_to.not_bound(&caps)
    };
    if let Some(reason) = not_bound.or_else(|| lacks(&missing)) {
        return RunOutcome {
            missing,
            ..early(Verdict::NotApplicable { reason })
        };
    }
    let mode = mode.unwrap_or_else(|| mode_for(&caps, scenario));
    if mode == RunMode::Virtual && !caps.virtual_time {
        return early(Verdict::Error {
            message: format!("client {} cannot run on virtual time", client.name()),
        });
    }
    let scenario_known_failure = scenario
        .known_failures
        .get(client.name())
        .map(|reason| (client.name().to_string(), reason.clone()));
    let idle = IdleSignal::default();
    let hook = idle.clone();
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all().on_thread_park(move || hook.on_park());
    if mode == RunMode::Virtual {
        builder.start_paused(true);
    }
    let runtime = match builder.build() {
        Ok(r) => r,
        Err(e) => {
            return early(Verdict::Error {
                message: format!("cannot build a runtime: {e}"),
            });
        }
    };
    let scenario = scenario.clone();
    let wall = stop::WallClock::start(scenario.limits.wall_time);
    let tokens = StopTokens {
        wall: wall.token(),
        interrupt: crate::interrupt::token().clone(),
    };
    let Played {
        verdict,
        full,
        events,
        duration,
        addresses,
        peak_rss_bytes,
        mark,
    } = runtime.block_on(async move {
        // The player must be a spawned task for idle detection (see settle).
        match tokio::spawn(play(scenario, client, idle, mode, tokens)).await {
            Ok(result) => result,
            Err(e) => Played {
                verdict: Verdict::Error {
                    message: format!("the runner panicked: {e}"),
                },
                full: None,
                events: Vec::new(),
                duration: Duration::ZERO,
                addresses: AddressMap::identity(),
                peak_rss_bytes: None,
                mark: None,
            },
        }
    });
    // Dropping the runtime cancels whatever the client and servers left.
    drop(runtime);
    drop(wall);
    let normalizer = addresses.normalizer();
    // Rendered once and, in memory, not copied: a timeline may hold up to
    // its byte limit (in-memory runs have no addresses to rewrite).
    // What reports write of it at most, kept at most, and never rendered
    // whole first: every copy a report makes is then bounded too (a
    // flooding client's timeline holds 100 MB).
    let rendered =
        crate::timeline::render_events_tail(&events, xds_conformance_reports::MAX_TIMELINE_FILE);
    let timeline = if normalizer.is_identity() {
        rendered
    } else {
        normalizer.normalize(&rendered)
    };
    let verdict = with_known_failure(verdict, scenario_known_failure);
    RunOutcome {
        verdict,
        events,
        timeline,
        virtual_duration: duration,
        wall_duration: wall_start.elapsed(),
        mode,
        peak_rss_bytes,
        mark,
        failed_tries: Vec::new(),
        observed: None,
        timeline_full: full,
        normalizer,
        missing: Vec::new(),
    }
}

/// A failure the scenario records for this client is a known failure; a
/// pass despite the record is a failure, so records do not go stale.
fn with_known_failure(verdict: Verdict, known: Option<(String, String)>) -> Verdict {
    let Some((client, reason)) = known else {
        return verdict;
    };
    match verdict {
        Verdict::Fail { message } => Verdict::KnownFailure { reason, message },
        Verdict::Pass | Verdict::Divergent { .. } => Verdict::Fail {
            message: format!(
                "known_failures says {client} fails this scenario ({reason}), but it passed: \
                 remove the entry"
            ),
        },
        other => other,
    }
}

/// Why a client cannot run this scenario, if it cannot.
pub fn not_applicable(scenario: &Scenario, caps: &Capabilities) -> Option<String> {
    lacks(&missing_capabilities(scenario, caps))
}

/// `the client lacks A, B`, or `None` when nothing is missing.
fn lacks(missing: &[String]) -> Option<String> {
    (!missing.is_empty()).then(|| format!("the client lacks {}", missing.join(", ")))
}

/// What a scenario without a `zone` needs of a client that speaks KDS
/// alone ([`Capabilities::kds_only`]), after "the client lacks".
pub const KDS_ONLY: &str =
    "xDS: it claims kds_zone only (a Kuma zone plays the scenarios with a `zone`)";

/// Each thing the scenario needs that the client lacks, in the order the
/// scenario needs them; empty when it can run.
pub fn missing_capabilities(scenario: &Scenario, caps: &Capabilities) -> Vec<String> {
    // A zone that speaks KDS alone lacks every xDS capability such a
    // scenario could need; what it lacks is the protocol, and that is the
    // reason worth reading.
    if scenario.zone.is_none() && caps.kds_only() {
        return vec![KDS_ONLY.to_string()];
    }
    let projected = crate::projection::wildcard::project(scenario, caps);
    let scenario = &*projected;
    let mut missing = Vec::new();
    let mut need = |ok: bool, what: &str| {
        if !ok && !missing.contains(&what.to_string()) {
            missing.push(what.to_string());
        }
    };
    let rule = scenario.applies_to.clients;
    need(
        rule.include(caps),
        &crate::scenario::applicability::not_bound_label(rule),
    );
    let delta = scenario
        .servers
        .iter()
        .any(|s| scenario.protocol_of(&s.name) == AdsProtocol::Delta);
    need(!delta || caps.delta, "incremental (delta) xDS");
    need(
        scenario.zone.is_none() || caps.kds_zone,
        "a Kuma zone (KDS)",
    );
    match &scenario.bootstrap {
        BootstrapPlan::Json(_) => need(caps.grpc_bootstrap, "a gRPC bootstrap file"),
        BootstrapPlan::Generated {
            authorities,
            client_default_listener_resource_name_template,
            ..
        } => need(
            caps.authorities
                || (authorities.is_empty()
                    && client_default_listener_resource_name_template.is_none()),
            "authorities and listener name templates (gRFC A47)",
        ),
    }
    // gRPC's per-server features (A53 ignore_resource_deletion, A71
    // fallback_on_... ) are gRPC bootstrap entries.
    need(
        caps.grpc_bootstrap
            || scenario
                .servers
                .iter()
                .all(|s| s.server_features.is_empty()),
        "gRPC bootstrap server_features",
    );
    // Several servers (gRFC A71 fallback) and `tls` channel_creds (gRFC
    // A65) are not capabilities: every client started from a bootstrap can
    // be given them, so a client that ignores the second server or rejects
    // the credentials fails those runs, and its expectations file says why
    // (ADAPTER_PROTOCOL.md, "Capabilities").
    for step in &scenario.steps {
        if let Some(what) = step.step.missing_capability(caps) {
            need(false, what);
        }
    }
    if caps.resource_counts
        && !caps.csds
        && let Err(why) = crate::projection::csds_counts::plan(scenario)
    {
        need(
            false,
            &format!("CSDS, and A78's resource counts cannot stand in for it here: {why}"),
        );
    } else if caps.admin
        && !caps.csds
        && !caps.resource_counts
        && let Err(why) = crate::projection::csds_admin::plan(scenario)
    {
        need(
            false,
            &format!("CSDS, and its admin API cannot stand in for it here: {why}"),
        );
    }
    if caps.projected_watch
        && !caps.watch
        && let Err(why) = crate::projection::plan(scenario)
    {
        need(
            false,
            &format!("a resource watch API, and its channels cannot observe these watches: {why}"),
        );
    }
    if let Some(profile) = &scenario.client.profile {
        need(
            caps.profiles.contains(profile),
            &format!("profile {profile}"),
        );
    }
    need(
        scenario.client.env.is_empty() || caps.env,
        "client environment variables",
    );
    // A switch the client's release no longer reads: the rule about its
    // other settings was the temporary protection's, which this release
    // has left for the behaviour the switch guarded.
    // The why is the adapter's, on the client's page; the reason stays
    // short enough to group runs by.
    for name in scenario.client.env.keys() {
        need(
            !caps.env_not_read.contains_key(name),
            &format!("{name}, which its release no longer reads (env_not_read)"),
        );
    }
    missing
}

/// A scenario being played: its client, fake servers and timeline, and
/// what expectations have used of the timeline so far.
struct Player {
    scenario: Scenario,
    /// When the step playing now was due (`StepDef::scheduled`).
    scheduled: Duration,
    /// The index of the step playing now.
    step_index: usize,
    /// On real time, where the next expectation's window begins if it
    /// directly follows the expectation at this step index: the time of
    /// the event that one matched, or the end of the `expect_none` window
    /// it held. Windows chain from what happened, as on virtual time, not
    /// from when the harness got round to the next step (it sees events
    /// late: sockets, processes, CSDS polls).
    anchor: Option<(Duration, usize)>,
    client: Box<dyn ClientUnderTest>,
    idle: IdleSignal,
    timeline: Timeline,
    servers: BTreeMap<String, FakeAdsServer>,
    csds_capable: bool,
    /// The client's CSDS view at the last poll.
    csds_state: CsdsState,
    /// Expectations look at events from the last run of actions on (the
    /// first of actions with no other step between them: on real time
    /// what the first caused may come before the next is played, as it
    /// never does on virtual time)...
    action_mark: usize,
    /// Whether the step before this one was an action, and this one has
    /// acted yet: a run of actions keeps its first one's mark.
    acted: (bool, bool),
    /// ...that no earlier expectation has used.
    consumed: BTreeSet<usize>,
    /// Endpoint addresses as served (real TCP runs rewrite them).
    addresses: AddressMap,
    /// `addresses` the other way, for what clients report.
    normalizer: Normalizer,
    mode: RunMode,
    /// Notes of the `any_of` alternatives met that are divergences.
    divergences: Vec<String>,
    /// What the verdict points at on the timeline: the failure, or the
    /// first divergence.
    mark: Option<crate::timeline::Mark>,
    /// For a proxy client: where its listeners are (see [`ProxyListeners`]).
    proxy: Option<ProxyListeners>,
    /// RPCs of `background` steps still under way; they end with the run.
    background: BackgroundRpcs,
    /// A client that connects as soon as it starts, not started yet: it
    /// starts at the first step that is not server-only (see
    /// `Capabilities::connects_at_start`).
    pending_start: Option<ClientEnvironment>,
    /// Where the timeline stood when such a client started: that step's
    /// action mark, so what the client sent from its start on is the
    /// step's to match.
    start_mark: Option<usize>,
}

/// Tasks waiting for background RPCs; aborted when the run is over.
#[derive(Default)]
struct BackgroundRpcs(Vec<tokio::task::JoinHandle<()>>);

impl Drop for BackgroundRpcs {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// What may stop a run from outside its clock (see [`stop`]).
struct StopTokens {
    wall: tokio_util::sync::CancellationToken,
    interrupt: tokio_util::sync::CancellationToken,
}

/// How long a client may take to shut down before the run goes on
/// without it (a process client kills its process group well before).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(10);

/// What [`play`] gives back.
struct Played {
    verdict: Verdict,
    /// The limit the timeline reached, if it did (see `RunOutcome`).
    full: Option<crate::timeline::Full>,
    events: Vec<TimelineEvent>,
    duration: Duration,
    addresses: AddressMap,
    peak_rss_bytes: Option<u64>,
    mark: Option<crate::timeline::Mark>,
}

async fn play(
    scenario: Scenario,
    client: Box<dyn ClientUnderTest>,
    idle: IdleSignal,
    mode: RunMode,
    tokens: StopTokens,
) -> Played {
    let start = Instant::now();
    let timeline = Timeline::new(start);
    let Environment {
        servers,
        backends,
        addresses,
        proxy,
        client: env,
        certificates,
    } = match environment::set_up(&scenario, &timeline, mode, &client.capabilities()).await {
        Ok(environment) => environment,
        Err(SetUpError { message, addresses }) => {
            return Played {
                verdict: Verdict::Error { message },
                full: timeline.full(),
                events: timeline.events(),
                duration: Duration::ZERO,
                addresses,
                peak_rss_bytes: None,
                mark: None,
            };
        }
    };
    let caps = client.capabilities();
    let csds_capable = caps.csds;
    // No CSDS: `csds` checks read off what stands in for it.
    let stand_in = if caps.csds {
        None
    } else if caps.resource_counts {
        Some(csds::StandIn::Counts(
            crate::projection::csds_counts::CountsView::new(&scenario),
        ))
    } else if caps.admin {
        Some(csds::StandIn::Admin(Default::default()))
    } else {
        None
    };
    let mut player = Player {
        scenario,
        scheduled: Duration::ZERO,
        step_index: 0,
        anchor: None,
        client,
        idle,
        timeline,
        servers,
        csds_capable,
        csds_state: CsdsState::with_stand_in(stand_in),
        action_mark: 0,
        acted: (false, false),
        consumed: BTreeSet::new(),
        normalizer: addresses.normalizer(),
        addresses,
        mode,
        divergences: Vec::new(),
        mark: None,
        proxy,
        background: BackgroundRpcs::default(),
        pending_start: None,
        start_mark: None,
    };
    let stopped = stop::stopped(
        player.scenario.limits,
        tokens.wall,
        tokens.interrupt,
        player.timeline.clone(),
    );
    let script = async {
        // A zone connects to its global as soon as it starts, as Envoy
        // does to its xDS servers.
        if caps.connects_at_start || player.scenario.zone.is_some() {
            player.pending_start = Some(env);
            return player.play_steps().await;
        }
        match player.client.start(env).await {
            // A set-up the client cannot take (Envoy and a third xDS
            // server): not applicable, for the reason it gives.
            Err(ClientError::Unsupported(reason)) => Verdict::NotApplicable {
                reason: format!("the client cannot start from it: {reason}"),
            },
            Err(e) => Verdict::Error {
                message: format!("the client did not start: {e}"),
            },
            Ok(()) => player.play_steps().await,
        }
    };
    let verdict = tokio::select! {
        // A stop reason wins a tie: the run is over either way, and the
        // reason says more than a verdict cut short.
        biased;
        verdict = stopped => verdict,
        verdict = script => verdict,
    };
    let duration = Instant::now() - start;
    // Taken, not copied: a timeline may hold up to its byte limit, and
    // nothing reads it after this.
    let full = player.timeline.full();
    let mut events = player.timeline.take_events();
    if let Some(note) = player.timeline.dropped_note() {
        // Appended here: a full timeline would not take it.
        events.push(TimelineEvent {
            at: duration,
            source: Source::Harness,
            kind: crate::timeline::EventKind::Note(note),
        });
    }
    let peak_rss_bytes = player.client.peak_rss_bytes();
    // Interrupted: no graceful shutdown (an adapter may take seconds);
    // dropping the client below kills its process group at once.
    let interrupted = matches!(verdict, Verdict::Interrupted { .. });
    if !interrupted
        && tokio::time::timeout(SHUTDOWN_LIMIT, player.client.shutdown())
            .await
            .is_err()
    {
        events.push(TimelineEvent {
            at: Instant::now() - start,
            source: Source::Harness,
            kind: crate::timeline::EventKind::Note(format!(
                "the client did not shut down within {}s; left behind",
                SHUTDOWN_LIMIT.as_secs()
            )),
        });
    }
    for server in player.servers.values() {
        server.shutdown();
    }
    for backend in &backends {
        backend.shutdown();
    }
    // Only now that the client is gone: it may read them until then.
    drop(certificates);
    Played {
        verdict,
        full,
        events,
        duration,
        addresses: player.addresses,
        peak_rss_bytes,
        mark: player.mark,
    }
}

impl Player {
    /// An expectation reads the timeline from the last action: from here
    /// on, the client's start is no longer the next action's to own.
    pub(super) fn forget_start(&mut self) {
        self.start_mark = None;
    }

    /// Starts a client whose start was put off (`pending_start`); the
    /// verdict if it cannot start.
    async fn start_pending(&mut self) -> Option<Verdict> {
        let env = self.pending_start.take()?;
        let mark = self.timeline.len();
        match self.client.start(env).await {
            Ok(()) => {
                self.start_mark = Some(mark);
                None
            }
            Err(ClientError::Unsupported(reason)) => Some(Verdict::NotApplicable {
                reason: format!("the client cannot start from it: {reason}"),
            }),
            Err(e) => Some(Verdict::Error {
                message: format!("the client did not start: {e}"),
            }),
        }
    }

    async fn play_steps(&mut self) -> Verdict {
        let steps = self.scenario.steps.clone();
        for (index, step) in steps.iter().enumerate() {
            self.scheduled = step.scheduled;
            self.step_index = index;
            if !step.step.server_only()
                && let Some(verdict) = self.start_pending().await
            {
                return verdict;
            }
            self.acted = (self.acted.1, false);
            // `start_mark` stays until an action takes it or an
            // expectation reads the timeline (`Player::forget_start`): a
            // proxy's `dial` is no action (it subscribes from its start),
            // so what Envoy sent before the dial step is the next action's
            // (an `rpc`), whatever the race between its start and the
            // script (Envoy's `a57/channel-keeps-serving-across-a-server-
            // restart` failed when its EDS ACK came before the dial step).
            let played = step.step.play(self, &step.location).await;
            match played {
                Ok(()) => {}
                Err(StepError::Failed(Failure { message, mark })) => {
                    self.mark = mark;
                    return Verdict::Fail { message };
                }
                Err(StepError::Client(e)) => {
                    let message = format!("{}: the client failed a command: {e}", step.location);
                    return Verdict::Error { message };
                }
                Err(StepError::NotApplicable(why)) => {
                    return Verdict::NotApplicable {
                        reason: format!("{why} ({})", step.location),
                    };
                }
            }
        }
        if let Some(verdict) = self.start_pending().await {
            return verdict;
        }
        self.checkpoint().await;
        if self.divergences.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Divergent {
                note: self.divergences.join("; "),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    fn scenario(steps: &str) -> Scenario {
        let text = format!(
            "description: mode\nspec: [A27]\nprotocols: [sotw]\nservers:\n  primary: {{}}\nsteps:\n{steps}"
        );
        load_str("mode.yaml", &text).expect("a scenario")
    }

    #[test]
    fn a_client_whose_channels_need_real_time_plays_only_dialling_scenarios_on_it() {
        let caps = Capabilities {
            watch: true,
            dial: true,
            rpc: true,
            virtual_time: true,
            channels_need_real_time: true,
            ..Default::default()
        };
        let watches = scenario("  - watch: { type: CDS, name: c1 }\n");
        let dials = scenario("  - watch: { type: CDS, name: c1 }\n  - dial: xds:///svc\n");
        let rpcs = scenario("  - rpc: { target: xds:///svc }\n");
        assert_eq!(mode_for(&caps, &watches), RunMode::Virtual);
        assert_eq!(mode_for(&caps, &dials), RunMode::RealTime);
        assert_eq!(mode_for(&caps, &rpcs), RunMode::RealTime);
        let anywhere = Capabilities {
            channels_need_real_time: false,
            ..caps.clone()
        };
        assert_eq!(mode_for(&anywhere, &dials), RunMode::Virtual);
        let process = Capabilities {
            virtual_time: false,
            ..anywhere
        };
        assert_eq!(mode_for(&process, &watches), RunMode::RealTime);
    }

    #[test]
    fn a_scenario_with_client_env_needs_a_client_that_takes_it() {
        let text = "description: env\nclient: {env: {GRPC_EXPERIMENTAL_XDS_FALLBACK: \"false\"}}\n\
                    servers:\n  primary: {}\nsteps:\n  - watch: { type: CDS, name: c1 }\n";
        let with_env = load_str("env.yaml", text).expect("a scenario");
        let caps = Capabilities {
            watch: true,
            grpc_bootstrap: true,
            ..Default::default()
        };
        assert_eq!(
            not_applicable(&with_env, &caps).as_deref(),
            Some("the client lacks client environment variables")
        );
        let takes = Capabilities {
            env: true,
            ..caps.clone()
        };
        assert_eq!(not_applicable(&with_env, &takes), None);
        let without = scenario("  - watch: { type: CDS, name: c1 }\n");
        assert_eq!(not_applicable(&without, &caps), None);

        // A release that no longer reads the variable is not bound by what
        // the scenario sets it to; one that reads others still is.
        let removed = Capabilities {
            env_not_read: [(
                "GRPC_EXPERIMENTAL_XDS_FALLBACK".to_string(),
                "bootstrap.go:806".to_string(),
            )]
            .into(),
            ..takes.clone()
        };
        assert_eq!(
            not_applicable(&with_env, &removed).as_deref(),
            Some(
                "the client lacks GRPC_EXPERIMENTAL_XDS_FALLBACK, which its release no \
                 longer reads (env_not_read)"
            )
        );
        assert_eq!(not_applicable(&without, &removed), None);
        let other = Capabilities {
            env_not_read: [("GRPC_XDS_OTHER".to_string(), "x.go:1".to_string())].into(),
            ..takes
        };
        assert_eq!(not_applicable(&with_env, &other), None);
    }

    #[test]
    fn a_zone_that_speaks_kds_alone_is_told_an_xds_scenario_needs_xds() {
        let kuma = Capabilities {
            kds_zone: true,
            ..Default::default()
        };
        let watches = scenario("  - watch: { type: CDS, name: c1 }\n");
        assert_eq!(
            not_applicable(&watches, &kuma),
            Some(format!("the client lacks {KDS_ONLY}"))
        );
        let zone = "description: zone\nspec: [kds]\nservers:\n  global: {}\nzone: {}\n\
                    steps:\n  - expect:\n      kds_stream: { rpc: global_to_zone }\n";
        let zone = load_str("zone.yaml", zone).expect("a scenario");
        assert_eq!(not_applicable(&zone, &kuma), None);
        // The reference client plays a zone and xDS: each scenario is
        // judged on what it needs.
        let both = Capabilities {
            watch: true,
            grpc_bootstrap: true,
            ..kuma
        };
        assert!(!both.kds_only());
        assert_eq!(not_applicable(&watches, &both), None);
    }
}
