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

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use xds_client_under_test::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, RpcRequest, Transport,
};
use xds_conformance_reports::Verdict;
use xds_fake_server::backend::Backend;
use xds_fake_server::fault::Fault;
use xds_fake_server::{
    FakeAdsServer, ScriptedDeltaResource, ScriptedDeltaResponse, ScriptedResponse, ServedResource,
    ServerConfig, ServingMode,
};
use xds_vocabulary::network::MemoryNetwork;
use xds_vocabulary::{AdsProtocol, code_name};

use envoy_types::pb::envoy::admin::v3::ClientResourceStatus;

use crate::addresses::{AddressMap, Normalizer};
use crate::bootstrap::client_bootstrap;
use crate::matcher::csds::CsdsMatcher;
use crate::matcher::{Alternative, Matcher};
use crate::proxy::ProxyListeners;
use crate::scenario::{BootstrapPlan, Scenario, ServerDef, Step, StepDef, Window, backend_address};
use crate::settle::IdleSignal;
use crate::timeline::{
    CsdsChange, CsdsEntry, CsdsStatus, EventKind, Timeline, TimelineEvent, render_line,
};

/// CSDS timestamps count from here, so they are the same on every run.
pub const CLOCK_EPOCH_UNIX_SECONDS: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// The result of playing one scenario.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub verdict: Verdict,
    pub events: Vec<TimelineEvent>,
    /// The rendered timeline, with times (for reports).
    pub timeline: String,
    /// What snapshots store: the timeline itself for virtual-time runs; a
    /// normalised rendering for real-time runs (see
    /// `timeline::render_normalized`).
    pub snapshot: String,
    pub virtual_duration: Duration,
    pub wall_duration: Duration,
    /// The clock it ran on.
    pub mode: RunMode,
    /// The client's peak resident set size, read just before it was shut
    /// down, when the client can report it (one in its own process).
    pub peak_rss_bytes: Option<u64>,
}

/// Makes a fresh client for each run.
pub type ClientFactory<'a> = &'a dyn Fn() -> Box<dyn ClientUnderTest>;

/// The in-memory address (and bootstrap `server_uri`) of a fake server.
pub fn server_uri(name: &str) -> String {
    format!("{name}:443")
}

/// Where and on which clock a scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunMode {
    /// In-process client, in-memory transport, paused (virtual) time.
    Virtual,
    /// A client in another process: real TCP on loopback, real time.
    RealTime,
}

impl RunMode {
    /// How late an expected event may be seen. Virtual time is exact. On
    /// real time the harness observes a client through processes, sockets
    /// and CSDS polls, so windows written for virtual time (`within: 0s`,
    /// `at: 15s`) get this much more; events are never accepted early.
    pub fn lateness(self) -> Duration {
        match self {
            RunMode::Virtual => Duration::ZERO,
            RunMode::RealTime => REAL_TIME_LATENESS,
        }
    }
}

/// See [`RunMode::lateness`]: above one CSDS poll ([`REAL_TIME_POLL`]),
/// well below the 1 s scale of the timers under test.
pub const REAL_TIME_LATENESS: Duration = Duration::from_millis(300);

/// The mode a client runs in: virtual time when it can.
pub fn mode_for(caps: &Capabilities) -> RunMode {
    if caps.virtual_time {
        RunMode::Virtual
    } else {
        RunMode::RealTime
    }
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
        snapshot: String::new(),
        virtual_duration: Duration::ZERO,
        wall_duration: wall_start.elapsed(),
        mode: mode_for(&caps),
        peak_rss_bytes: None,
    };
    if let Some(reason) = not_applicable(scenario, &caps) {
        return early(Verdict::NotApplicable { reason });
    }
    let mode = mode.unwrap_or_else(|| mode_for(&caps));
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
    let Played {
        verdict,
        events,
        duration,
        addresses,
        peak_rss_bytes,
    } = runtime.block_on(async move {
        // The player must be a spawned task for idle detection (see settle).
        match tokio::spawn(play(scenario, client, idle, mode)).await {
            Ok(result) => result,
            Err(e) => Played {
                verdict: Verdict::Error {
                    message: format!("the runner panicked: {e}"),
                },
                events: Vec::new(),
                duration: Duration::ZERO,
                addresses: AddressMap::identity(),
                peak_rss_bytes: None,
            },
        }
    });
    // Dropping the runtime cancels whatever the client and servers left.
    drop(runtime);
    let normalizer = addresses.normalizer();
    let timeline = normalizer.normalize(&crate::timeline::render_events(&events, 0));
    let snapshot = match mode {
        RunMode::Virtual => timeline.clone(),
        RunMode::RealTime => {
            crate::timeline::render_normalized(&events, &|line| normalizer.normalize(line))
        }
    };
    let verdict = with_known_failure(verdict, scenario_known_failure);
    RunOutcome {
        verdict,
        events,
        timeline,
        snapshot,
        virtual_duration: duration,
        wall_duration: wall_start.elapsed(),
        mode,
        peak_rss_bytes,
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
    let mut missing = Vec::new();
    let mut need = |ok: bool, what: &str| {
        if !ok && !missing.contains(&what.to_string()) {
            missing.push(what.to_string());
        }
    };
    let delta = scenario
        .servers
        .iter()
        .any(|s| scenario.protocol_of(&s.name) == AdsProtocol::Delta);
    need(!delta || caps.delta, "incremental (delta) xDS");
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
    for step in &scenario.steps {
        match &step.step {
            Step::Watch { .. } | Step::CancelWatch { .. } => {
                need(caps.watch, "a resource watch API")
            }
            Step::Dial { .. } => need(caps.dial, "dial"),
            Step::Serve { .. } => need(caps.serve, "xDS-enabled servers"),
            Step::Rpc { .. } => need(caps.rpc, "RPCs"),
            Step::Expect { matcher, .. } | Step::ExpectNone { matcher, .. } => {
                if let Some(what) = matcher.missing_capability(caps) {
                    need(false, what);
                }
            }
            _ => {}
        }
    }
    if let Some(profile) = &scenario.client.profile {
        need(
            caps.profiles.contains(profile),
            &format!("profile {profile}"),
        );
    }
    (!missing.is_empty()).then(|| format!("the client lacks {}", missing.join(", ")))
}

/// Every address a `serve` step names, once each, in order.
fn serve_addresses(scenario: &Scenario) -> Vec<String> {
    let mut seen = BTreeSet::new();
    scenario
        .steps
        .iter()
        .filter_map(|s| match &s.step {
            Step::Serve { address } => Some(address.clone()),
            _ => None,
        })
        .filter(|a| seen.insert(a.clone()))
        .collect()
}

/// Where a real client can listen for a scenario's `ip:port`: the same IP
/// when it can be bound here (the wildcard or loopback), else 127.0.0.1,
/// on a port free now. The wildcard IPv6 address falls back to 0.0.0.0
/// on machines without IPv6.
fn free_listening_address(canonical: &str) -> std::io::Result<SocketAddr> {
    let wanted: SocketAddr = canonical
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{e}")))?;
    let ip = wanted.ip();
    let mut candidates = Vec::new();
    if ip.is_unspecified() || ip.is_loopback() {
        candidates.push(ip);
    }
    if ip.is_ipv6() && ip.is_unspecified() {
        candidates.push(std::net::Ipv4Addr::UNSPECIFIED.into());
    }
    candidates.push(std::net::Ipv4Addr::LOCALHOST.into());
    let mut last = None;
    for ip in candidates {
        // Bound and let go: the client binds it next (a port another
        // process takes meanwhile makes the run fail, never pass).
        match std::net::TcpListener::bind(SocketAddr::new(ip, 0)) {
            Ok(listener) => return listener.local_addr(),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address to bind")))
}

/// A scenario's fake server, recording into `timeline`.
pub fn fake_server(def: &ServerDef, timeline: &Timeline) -> FakeAdsServer {
    let mode = if def.scripted {
        ServingMode::Scripted
    } else {
        ServingMode::Auto
    };
    let server = FakeAdsServer::new(ServerConfig {
        name: def.name.clone(),
        mode,
    });
    server.set_max_connection_age(def.max_connection_age);
    let tl = timeline.clone();
    server.set_observer(Arc::new(move |recorded| {
        tl.record_at(
            recorded.at,
            recorded.server.clone(),
            EventKind::Server(Box::new(recorded.event.clone())),
        )
    }));
    server
}

/// Why a step failed.
struct Failure(String);

struct Player {
    scenario: Scenario,
    client: Box<dyn ClientUnderTest>,
    idle: IdleSignal,
    timeline: Timeline,
    servers: BTreeMap<String, FakeAdsServer>,
    csds_capable: bool,
    csds_state: BTreeMap<(String, String, String), CsdsEntry>,
    /// Expectations look at events from the last action on...
    action_mark: usize,
    /// ...that no earlier expectation has used.
    consumed: BTreeSet<usize>,
    /// Endpoint addresses as served (real TCP runs rewrite them).
    addresses: AddressMap,
    /// `addresses` the other way, for what clients report.
    normalizer: Normalizer,
    mode: RunMode,
    /// Notes of the `any_of` alternatives met that are divergences.
    divergences: Vec<String>,
    /// For a proxy client: where its listeners are (see [`ProxyListeners`]).
    proxy: Option<ProxyListeners>,
}

/// What [`play`] gives back.
struct Played {
    verdict: Verdict,
    events: Vec<TimelineEvent>,
    duration: Duration,
    addresses: AddressMap,
    peak_rss_bytes: Option<u64>,
}

async fn play(
    scenario: Scenario,
    client: Box<dyn ClientUnderTest>,
    idle: IdleSignal,
    mode: RunMode,
) -> Played {
    let start = Instant::now();
    let timeline = Timeline::new(start);
    let network = MemoryNetwork::new();
    let mut addresses = AddressMap::identity();
    let mut uris = BTreeMap::new();
    let fail = |message: String, timeline: &Timeline, addresses: AddressMap| Played {
        verdict: Verdict::Error { message },
        events: timeline.events(),
        duration: Duration::ZERO,
        addresses,
        peak_rss_bytes: None,
    };
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut servers = BTreeMap::new();
    for def in &scenario.servers {
        let server = fake_server(def, &timeline);
        let uri = match mode {
            RunMode::Virtual => match server.serve_in_memory(&network, &server_uri(&def.name)) {
                Ok(()) => server_uri(&def.name),
                Err(e) => {
                    return fail(
                        format!("cannot start server {}: {e}", def.name),
                        &timeline,
                        addresses,
                    );
                }
            },
            RunMode::RealTime => match server.serve_tcp(loopback).await {
                Ok(addr) => {
                    addresses.add_server(&server_uri(&def.name), addr);
                    addr.to_string()
                }
                Err(e) => {
                    return fail(
                        format!("cannot start server {}: {e}", def.name),
                        &timeline,
                        addresses,
                    );
                }
            },
        };
        uris.insert(def.name.clone(), uri);
        servers.insert(def.name.clone(), server);
    }
    let mut backends = Vec::new();
    for (index, name) in scenario.backends.iter().enumerate() {
        let backend = Backend::new(name.clone());
        let tl = timeline.clone();
        backend.set_observer(Arc::new(move |recorded| {
            tl.record_at(
                recorded.at,
                recorded.server.clone(),
                EventKind::Backend(recorded.event.clone()),
            )
        }));
        let served = match mode {
            RunMode::Virtual => backend
                .serve_in_memory(&network, &backend_address(index))
                .map_err(|e| e.to_string()),
            RunMode::RealTime => match backend.serve_tcp(loopback).await {
                Ok(addr) => {
                    addresses.add_backend(&backend_address(index), addr);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            },
        };
        if let Err(e) = served {
            return fail(
                format!("cannot start backend {name}: {e}"),
                &timeline,
                addresses,
            );
        }
        backends.push(backend);
    }
    // xDS-enabled servers in the client listen for real, on free ports.
    if mode == RunMode::RealTime {
        for address in serve_addresses(&scenario) {
            match free_listening_address(&address) {
                Ok(real) => addresses.add_listening(&address, real),
                Err(e) => {
                    return fail(
                        format!("cannot find a port to serve {address} on: {e}"),
                        &timeline,
                        addresses,
                    );
                }
            }
        }
    }
    // Initial resources, with endpoint addresses where they really are,
    // in the shapes a proxy needs.
    let mut proxy = client.capabilities().proxy.then(ProxyListeners::default);
    for def in &scenario.servers {
        if !def.resources.is_empty()
            && let Some(server) = servers.get(&def.name)
        {
            let resources = addresses.rewrite(&def.resources);
            let resources = match &mut proxy {
                None => resources,
                Some(proxy) => match proxy.shape(&resources) {
                    Ok(shaped) => shaped,
                    Err(e) => {
                        return fail(
                            format!("cannot find a port for a proxy's listener: {e}"),
                            &timeline,
                            addresses,
                        );
                    }
                },
            };
            server.set_resources(resources, None);
        }
    }
    let sink_timeline = timeline.clone();
    let transport = match mode {
        RunMode::Virtual => Transport::InMemory {
            xds: Arc::new(network.clone()),
            data_plane: Arc::new(network),
        },
        RunMode::RealTime => Transport::Tcp,
    };
    let env = ClientEnvironment {
        bootstrap: client_bootstrap(&scenario, &|name| {
            uris.get(name).cloned().unwrap_or_default()
        }),
        transport,
        rng_seed: scenario.client.seed,
        profile: scenario.client.profile.clone(),
        clock_epoch: SystemTime::UNIX_EPOCH + Duration::from_secs(CLOCK_EPOCH_UNIX_SECONDS),
        events: Arc::new(move |event| sink_timeline.record("client", EventKind::Client(event))),
    };
    let csds_capable = client.capabilities().csds;
    let mut player = Player {
        scenario,
        client,
        idle,
        timeline,
        servers,
        csds_capable,
        csds_state: BTreeMap::new(),
        action_mark: 0,
        consumed: BTreeSet::new(),
        normalizer: addresses.normalizer(),
        addresses,
        mode,
        divergences: Vec::new(),
        proxy,
    };
    let verdict = match player.client.start(env).await {
        // A set-up the client cannot take (Envoy and a third xDS server):
        // not applicable, for the reason it gives.
        Err(ClientError::Unsupported(reason)) => Verdict::NotApplicable {
            reason: format!("the client cannot start from it: {reason}"),
        },
        Err(e) => Verdict::Error {
            message: format!("the client did not start: {e}"),
        },
        Ok(()) => player.play_steps().await,
    };
    let duration = Instant::now() - start;
    let events = player.timeline.events();
    let peak_rss_bytes = player.client.peak_rss_bytes();
    player.client.shutdown().await;
    for server in player.servers.values() {
        server.shutdown();
    }
    for backend in &backends {
        backend.shutdown();
    }
    Played {
        verdict,
        events,
        duration,
        addresses: player.addresses,
        peak_rss_bytes,
    }
}

impl Player {
    async fn play_steps(&mut self) -> Verdict {
        let steps = self.scenario.steps.clone();
        for step in &steps {
            match self.play_step(step).await {
                Ok(()) => {}
                Err(StepError::Failed(Failure(message))) => return Verdict::Fail { message },
                Err(StepError::Client(e)) => {
                    let message = format!("{}: the client failed a command: {e}", step.location);
                    return Verdict::Error { message };
                }
            }
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

    fn server(&self, name: &str) -> Result<&FakeAdsServer, StepError> {
        self.servers
            .get(name)
            .ok_or_else(|| StepError::Failed(Failure(format!("no server named {name}"))))
    }

    /// Resources with their endpoint addresses where they really are (see
    /// `addresses`); the way back is kept up to date for matching.
    fn rewrite(&mut self, resources: &[ServedResource]) -> Result<Vec<ServedResource>, StepError> {
        let rewritten = self.addresses.rewrite(resources);
        if !self.addresses.is_identity() {
            self.normalizer = self.addresses.normalizer();
        }
        match &mut self.proxy {
            None => Ok(rewritten),
            Some(proxy) => proxy.shape(&rewritten).map_err(|e| {
                StepError::Failed(Failure(format!(
                    "cannot find a port for a proxy's listener: {e}"
                )))
            }),
        }
    }

    fn record_step(&mut self, text: String) {
        self.timeline.record("step", EventKind::Step(text));
        self.action_mark = self.timeline.len();
        self.consumed.clear();
    }

    async fn play_step(&mut self, def: &StepDef) -> Result<(), StepError> {
        match &def.step {
            Step::Watch {
                resource_type,
                name,
            } => {
                self.record_step(format!("watch {resource_type} {name}"));
                self.client.watch(*resource_type, name).await?;
            }
            Step::CancelWatch {
                resource_type,
                name,
            } => {
                self.record_step(format!("cancel watch {resource_type} {name}"));
                self.client.cancel_watch(*resource_type, name).await?;
            }
            Step::Dial { target } => {
                if self.proxy.is_some() {
                    // A proxy subscribes from its start, not on a dial: the
                    // dial causes nothing, so expectations after it still
                    // look back to the last real action (or the start).
                    self.timeline
                        .record("step", EventKind::Step(format!("dial {target}")));
                } else {
                    self.record_step(format!("dial {target}"));
                }
                self.client.dial(target).await?;
            }
            Step::Serve { address } => {
                self.record_step(format!("serve {address}"));
                let real = self.addresses.listening_address(address).into_owned();
                self.client.serve(&real).await?;
            }
            Step::Rpc {
                target,
                method,
                timeout,
                wait_for_ready,
                count,
                until,
            } => {
                let times = match until {
                    Some(code) => format!(" until {}", code_name(*code)),
                    None if *count > 1 => format!(" x{count}"),
                    None => String::new(),
                };
                self.record_step(format!("rpc {target}{times}"));
                let mut request = RpcRequest {
                    target: target.clone(),
                    method: method.clone(),
                    timeout: *timeout,
                    wait_for_ready: *wait_for_ready,
                    authority: None,
                };
                // A proxy is reached at the listener serving the target.
                if let Some(proxy) = &mut self.proxy {
                    let listener = ProxyListeners::listener_of(target).to_string();
                    let address = proxy.address(&listener).map_err(|e| {
                        StepError::Failed(Failure(format!(
                            "cannot find a port for listener {listener}: {e}"
                        )))
                    })?;
                    request.target = address.to_string();
                    request.authority = Some(listener);
                }
                if let Some(code) = until {
                    let give_up = Instant::now() + UNTIL_BUDGET;
                    loop {
                        let outcome = self.client.rpc(&request).await?;
                        let settling = outcome.code != *code && Instant::now() < give_up;
                        self.timeline.record(
                            "client",
                            EventKind::Rpc {
                                target: target.clone(),
                                outcome,
                                settling,
                            },
                        );
                        if !settling {
                            break;
                        }
                        tokio::time::sleep(UNTIL_PAUSE).await;
                    }
                } else {
                    for _ in 0..*count {
                        let outcome = self.client.rpc(&request).await?;
                        self.timeline.record(
                            "client",
                            EventKind::Rpc {
                                target: target.clone(),
                                outcome,
                                settling: false,
                            },
                        );
                    }
                }
            }
            Step::SetResources {
                server,
                resources,
                version,
            } => {
                let names: Vec<String> = resources.iter().map(|r| r.name.clone()).collect();
                self.record_step(format!("{server}: set resources [{}]", names.join(",")));
                let resources = self.rewrite(resources)?;
                self.server(server)?
                    .set_resources(resources, version.clone());
            }
            Step::RemoveResources {
                server,
                resource_type,
                names,
                version,
            } => {
                self.record_step(format!(
                    "{server}: remove {resource_type} [{}]",
                    names.join(",")
                ));
                let names: Vec<String> = names
                    .iter()
                    .map(|n| self.addresses.resource_name(n).into_owned())
                    .collect();
                self.server(server)?.remove_resources(
                    resource_type.type_url(),
                    &names,
                    version.clone(),
                );
            }
            Step::SendDeltaResponse {
                server,
                resource_type,
                system_version,
                nonce,
                resources,
                versions,
                ttl,
                no_body,
                removed,
            } => {
                self.record_step(format!("{server}: send {resource_type} delta response"));
                let resources = self.rewrite(resources)?;
                // Names as the server knows them (over TCP a server
                // Listener's name embeds its real listening address).
                let name = |n: &String| self.addresses.resource_name(n).into_owned();
                let versions: BTreeMap<String, String> =
                    versions.iter().map(|(k, v)| (name(k), v.clone())).collect();
                let ttl: BTreeMap<String, Duration> =
                    ttl.iter().map(|(k, v)| (name(k), *v)).collect();
                let mut entries: Vec<ScriptedDeltaResource> = resources
                    .into_iter()
                    .map(ScriptedDeltaResource::from_served)
                    .collect();
                entries.extend(no_body.iter().map(|n| ScriptedDeltaResource {
                    name: name(n),
                    version: None,
                    entry: None,
                    ttl: None,
                }));
                for entry in &mut entries {
                    entry.version = versions.get(&entry.name).cloned();
                    entry.ttl = ttl.get(&entry.name).copied();
                }
                let sent = self
                    .server(server)?
                    .send_delta_response(ScriptedDeltaResponse {
                        type_url: resource_type.type_url().to_string(),
                        system_version_info: system_version.clone(),
                        nonce: nonce.clone(),
                        resources: entries,
                        removed: removed.iter().map(name).collect(),
                    });
                if sent == 0 {
                    let message = format!(
                        "{}: send_delta_response: {server} has no open delta ADS stream; \
                         expect the client's request before sending",
                        def.location
                    );
                    return Err(StepError::Failed(Failure(message)));
                }
            }
            Step::SendResponse {
                server,
                resource_type,
                version,
                nonce,
                resources,
            } => {
                self.record_step(format!("{server}: send {resource_type} response"));
                let resources = self.rewrite(resources)?;
                let sent = self.server(server)?.send_response(ScriptedResponse {
                    type_url: resource_type.type_url().to_string(),
                    version_info: version.clone(),
                    nonce: nonce.clone(),
                    resources,
                });
                if sent == 0 {
                    // Actions do not wait; a response needs a stream to go on.
                    let message = format!(
                        "{}: send_response: {server} has no open ADS stream; \
                         expect the client's request before sending",
                        def.location
                    );
                    return Err(StepError::Failed(Failure(message)));
                }
            }
            Step::CloseStream {
                server,
                code,
                message,
            } => {
                self.record_step(format!("{server}: close streams"));
                self.server(server)?.apply(Fault::CloseStreams {
                    code: *code,
                    message: message.clone(),
                });
            }
            Step::RefuseConnections { server } => {
                self.record_step(format!("{server}: refuse connections"));
                self.server(server)?.apply(Fault::RefuseConnections);
            }
            Step::AcceptConnections { server } => {
                self.record_step(format!("{server}: accept connections"));
                self.server(server)?.apply(Fault::AcceptConnections);
            }
            Step::Fault { server, fault } => {
                self.record_step(format!(
                    "{server}: {}",
                    crate::timeline::describe_fault(fault)
                ));
                self.server(server)?.apply(fault.clone());
            }
            Step::Wait(duration) => {
                // On the timeline, but not an action: expectations still
                // look back to the last action.
                self.timeline.record(
                    "step",
                    EventKind::Step(format!("wait {}", format_duration(*duration))),
                );
                let deadline = Instant::now() + *duration;
                self.run_until(deadline).await;
                self.timeline.record("step", EventKind::Barrier);
            }
            Step::Expect { matcher, window } => {
                self.expect(def, matcher, *window).await?;
                self.timeline.record("step", EventKind::Barrier);
            }
            Step::ExpectNone { matcher, duration } => {
                self.expect_none(def, matcher, *duration).await?;
                self.timeline.record("step", EventKind::Barrier);
            }
        }
        Ok(())
    }

    /// Lets everything due at this instant happen, then polls CSDS.
    async fn checkpoint(&mut self) {
        loop {
            self.idle.idle().await;
            let before = self.timeline.len();
            // Timers due right now fire when the driver runs, which a yield
            // allows without advancing the clock.
            tokio::task::yield_now().await;
            self.idle.idle().await;
            if self.timeline.len() == before {
                break;
            }
        }
        self.poll_csds().await;
    }

    /// Advances virtual time to `deadline`, stopping at every instant where
    /// something happens so CSDS is polled there.
    async fn run_until(&mut self, deadline: Instant) {
        loop {
            self.checkpoint().await;
            if Instant::now() >= deadline {
                return;
            }
            wait_for_activity(&self.timeline, deadline, self.mode).await;
        }
    }

    fn search_from(&self) -> usize {
        self.action_mark
    }

    /// The first event since the last action, not used by an earlier
    /// expectation, that matches and happened by `deadline`.
    fn find(&self, matcher: &Matcher, deadline: Duration) -> Option<(usize, TimelineEvent)> {
        // Searched in place: copying the timeline on every look would cost
        // the fake servers (same thread) time when events are large. Over
        // real TCP, what the client reports names the real endpoint
        // addresses; scenarios name the canonical ones.
        self.timeline.find_from(self.search_from(), |i, e| {
            !self.consumed.contains(&i)
                && e.at.as_millis() <= deadline.as_millis()
                && matcher.matches(e, &|text| self.normalizer.translate(text))
        })
    }

    async fn expect(
        &mut self,
        def: &StepDef,
        matcher: &Matcher,
        window: Window,
    ) -> Result<(), StepError> {
        if let Matcher::Csds(m) = matcher {
            let alternatives = [Alternative {
                matcher: Matcher::Csds(m.clone()),
                divergence: None,
            }];
            return self.expect_csds(def, &alternatives, window).await;
        }
        // Alternatives that are all CSDS views are a state check too.
        if let Matcher::AnyOf(alternatives) = matcher
            && alternatives
                .iter()
                .all(|a| matches!(a.matcher, Matcher::Csds(_)))
        {
            return self.expect_csds(def, alternatives, window).await;
        }
        let start = self.timeline.start();
        let began = Instant::now() - start;
        let lateness = self.mode.lateness();
        let (deadline, exact) = window_bounds(window, began, lateness);
        loop {
            self.checkpoint().await;
            if let Some((index, event)) = self.find(matcher, deadline) {
                if let Some(t) = exact
                    && !on_time(event.at, t, lateness)
                {
                    let message = format!(
                        "{}: expected {} at {:.3}s{}, but it happened at {:.3}s\n{}",
                        def.location,
                        matcher.describe(),
                        t.as_secs_f64(),
                        describe_lateness(lateness),
                        event.at.as_secs_f64(),
                        self.context(index)
                    );
                    return Err(StepError::Failed(Failure(message)));
                }
                self.consumed.insert(index);
                if let Some(note) = matcher
                    .matching_alternative(&event, &|text| self.normalizer.translate(text))
                    .and_then(|a| a.divergence.clone())
                    && !self.divergences.contains(&note)
                {
                    self.divergences.push(note);
                }
                return Ok(());
            }
            if Instant::now() - start >= deadline {
                let when = match exact {
                    Some(t) => format!("at {:.3}s", t.as_secs_f64()),
                    None => format!(
                        "within {:.3}s (from {:.3}s to {:.3}s)",
                        (deadline - began).as_secs_f64(),
                        began.as_secs_f64(),
                        deadline.as_secs_f64()
                    ),
                };
                let message = format!(
                    "{}: expected {} {when}; no unused event since #{} matched\n{}",
                    def.location,
                    matcher.describe(),
                    self.search_from(),
                    self.context(self.search_from())
                );
                return Err(StepError::Failed(Failure(message)));
            }
            wait_for_activity(&self.timeline, start + deadline, self.mode).await;
        }
    }

    /// CSDS is a state: the expectation holds if, at some checkpoint in
    /// the window, the client's CSDS view shows what one of the
    /// alternatives (each a CSDS matcher) describes.
    async fn expect_csds(
        &mut self,
        def: &StepDef,
        alternatives: &[Alternative],
        window: Window,
    ) -> Result<(), StepError> {
        let start = self.timeline.start();
        let began = Instant::now() - start;
        let lateness = self.mode.lateness();
        let (deadline, _) = window_bounds(window, began, lateness);
        loop {
            self.checkpoint().await;
            let now = Instant::now() - start;
            let in_window = match window {
                Window::Within(_) => true,
                Window::At(t) => on_time(now, t, lateness),
            };
            let met = alternatives.iter().find(|a| match &a.matcher {
                Matcher::Csds(m) => m.state_matches(&self.csds_state),
                _ => false,
            });
            if in_window && let Some(alternative) = met {
                if let Some(note) = &alternative.divergence
                    && !self.divergences.contains(note)
                {
                    self.divergences.push(note.clone());
                }
                return Ok(());
            }
            if now >= deadline {
                let described = match alternatives {
                    [one] => one.matcher.describe(),
                    _ => Matcher::AnyOf(alternatives.to_vec()).describe(),
                };
                let message = format!(
                    "{}: expected the client's CSDS to show {} by {:.3}s; it shows:\n{}",
                    def.location,
                    described,
                    deadline.as_secs_f64(),
                    self.describe_csds_state()
                );
                return Err(StepError::Failed(Failure(message)));
            }
            wait_for_activity(&self.timeline, start + deadline, self.mode).await;
        }
    }

    fn describe_csds_state(&self) -> String {
        if self.csds_state.is_empty() {
            return "  (nothing)\n".to_string();
        }
        let mut out = String::new();
        for ((scope, type_url, name), entry) in &self.csds_state {
            let scope = if scope.is_empty() {
                String::new()
            } else {
                format!("[{scope}] ")
            };
            out.push_str(&format!(
                "  {scope}{} {name}: {} version={:?}{}\n",
                crate::timeline::type_name(type_url),
                crate::timeline::csds_status_name(entry.status),
                entry.version,
                entry
                    .error
                    .as_ref()
                    .map(|e| format!(" error={e:?}"))
                    .unwrap_or_default()
            ));
        }
        out
    }

    async fn expect_none(
        &mut self,
        def: &StepDef,
        matcher: &Matcher,
        duration: Duration,
    ) -> Result<(), StepError> {
        // The mirror of an expectation's lateness: on real time an event
        // due right after the window may be seen up to that much early
        // relative to the harness's clock (the window started late), so
        // the window's last stretch is not held against the client.
        let duration = duration.saturating_sub(self.mode.lateness());
        if let Matcher::Csds(m) = matcher {
            return self.expect_no_csds(def, m, duration).await;
        }
        let start = self.timeline.start();
        let deadline = Instant::now() + duration;
        self.run_until(deadline).await;
        if let Some((index, event)) = self.find(matcher, deadline - start) {
            let message = format!(
                "{}: expected no {} for {:.3}s, but one happened at {:.3}s (event #{index})\n{}",
                def.location,
                matcher.describe(),
                duration.as_secs_f64(),
                event.at.as_secs_f64(),
                self.context(index)
            );
            return Err(StepError::Failed(Failure(message)));
        }
        Ok(())
    }

    async fn expect_no_csds(
        &mut self,
        def: &StepDef,
        m: &CsdsMatcher,
        duration: Duration,
    ) -> Result<(), StepError> {
        let deadline = Instant::now() + duration;
        loop {
            self.checkpoint().await;
            if m.state_matches(&self.csds_state) {
                let message = format!(
                    "{}: expected the client's CSDS never to show {} for {:.3}s, but at {:.3}s it shows:\n{}",
                    def.location,
                    Matcher::Csds(m.clone()).describe(),
                    duration.as_secs_f64(),
                    (Instant::now() - self.timeline.start()).as_secs_f64(),
                    self.describe_csds_state()
                );
                return Err(StepError::Failed(Failure(message)));
            }
            if Instant::now() >= deadline {
                return Ok(());
            }
            wait_for_activity(&self.timeline, deadline, self.mode).await;
        }
    }

    /// The timeline around event `index`, numbered, for failure messages.
    fn context(&self, index: usize) -> String {
        let events = self.timeline.events();
        let from = index.saturating_sub(5);
        let to = (index + 40).min(events.len());
        let mut out = format!("timeline (events #{from}..#{to} of {}):\n", events.len());
        for (i, event) in events.iter().enumerate().take(to).skip(from) {
            if let Some(line) = render_line(event) {
                let marker = if i == index { ">" } else { " " };
                let line = self.normalizer.translate(&line);
                out.push_str(&format!("{marker}#{i:<4}{line}\n"));
            }
        }
        out
    }

    /// Records every change of the client's CSDS view since the last poll.
    async fn poll_csds(&mut self) {
        if !self.csds_capable {
            return;
        }
        let Ok(response) = self.client.csds().await else {
            return;
        };
        let mut now = BTreeMap::new();
        for config in &response.config {
            for entry in &config.generic_xds_configs {
                let status = match ClientResourceStatus::try_from(entry.client_status) {
                    Ok(ClientResourceStatus::Requested) => CsdsStatus::Requested,
                    Ok(ClientResourceStatus::Acked) => CsdsStatus::Acked,
                    Ok(ClientResourceStatus::Nacked) => CsdsStatus::Nacked,
                    Ok(ClientResourceStatus::DoesNotExist) => CsdsStatus::DoesNotExist,
                    Ok(ClientResourceStatus::ReceivedError) => CsdsStatus::ReceivedError,
                    Ok(ClientResourceStatus::Timeout) => CsdsStatus::Timeout,
                    _ => continue,
                };
                // Names as the scenario wrote them (a server Listener's
                // name holds its real listening address over TCP).
                let key = (
                    config.client_scope.clone(),
                    entry.type_url.clone(),
                    self.normalizer.translate(&entry.name).into_owned(),
                );
                let error = entry.error_state.as_ref().map(|e| e.details.clone());
                now.insert(
                    key,
                    CsdsEntry {
                        status,
                        version: entry.version_info.clone(),
                        error,
                    },
                );
            }
        }
        let mut keys: Vec<&(String, String, String)> =
            now.keys().chain(self.csds_state.keys()).collect();
        keys.sort();
        keys.dedup();
        let mut changes = Vec::new();
        for key in keys {
            let (from, to) = (self.csds_state.get(key), now.get(key));
            if from != to {
                changes.push(CsdsChange {
                    client_scope: key.0.clone(),
                    type_url: key.1.clone(),
                    name: key.2.clone(),
                    from: from.cloned(),
                    to: to.cloned(),
                });
            }
        }
        for change in changes {
            self.timeline.record("csds", EventKind::Csds(change));
        }
        self.csds_state = now;
    }
}

fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// Returns when something is recorded on the timeline, or at `until`.
/// On real time it also returns every [`REAL_TIME_POLL`]: an external
/// client's state (its CSDS) changes without telling the harness.
async fn wait_for_activity(timeline: &Timeline, until: Instant, mode: RunMode) {
    let until = match mode {
        RunMode::Virtual => until,
        RunMode::RealTime => until.min(Instant::now() + REAL_TIME_POLL),
    };
    tokio::select! {
        biased;
        _ = timeline.changed() => {}
        _ = tokio::time::sleep_until(until) => {}
    }
}

/// How often an external client's CSDS is polled while nothing happens.
const REAL_TIME_POLL: Duration = Duration::from_millis(200);

/// How long an `rpc ... until` step keeps trying, and the pause between
/// its RPCs (virtual time on in-process runs).
const UNTIL_BUDGET: Duration = Duration::from_secs(2);
const UNTIL_PAUSE: Duration = Duration::from_millis(10);

/// The latest time (since the start) an expectation may be met, and the
/// exact time it must be met at, for `at:` windows.
fn window_bounds(
    window: Window,
    began: Duration,
    lateness: Duration,
) -> (Duration, Option<Duration>) {
    match window {
        Window::Within(d) => (began + d + lateness, None),
        Window::At(t) => ((t + lateness).max(began), Some(t)),
    }
}

/// Whether something seen at `seen` meets an `at: t` window: exactly (to
/// the millisecond) on virtual time, never early and at most `lateness`
/// late on real time.
fn on_time(seen: Duration, t: Duration, lateness: Duration) -> bool {
    let (seen, t) = (seen.as_millis(), t.as_millis());
    seen >= t && seen <= t + lateness.as_millis()
}

fn describe_lateness(lateness: Duration) -> String {
    if lateness.is_zero() {
        String::new()
    } else {
        format!(" (up to {}ms late on real time)", lateness.as_millis())
    }
}

enum StepError {
    Failed(Failure),
    Client(ClientError),
}

impl From<ClientError> for StepError {
    fn from(e: ClientError) -> Self {
        StepError::Client(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn listening_addresses_keep_a_bindable_ip_and_get_a_free_port() {
        let wildcard = free_listening_address("0.0.0.0:8443").unwrap();
        assert!(wildcard.ip().is_unspecified() && wildcard.is_ipv4());
        assert_ne!(wildcard.port(), 0);
        // [::] where the machine has IPv6, else 0.0.0.0: a wildcard still.
        assert!(
            free_listening_address("[::]:50051")
                .unwrap()
                .ip()
                .is_unspecified()
        );
        // An address of another machine cannot be bound: loopback instead.
        let other = free_listening_address("10.0.0.1:80").unwrap();
        assert_eq!(other.ip(), std::net::Ipv4Addr::LOCALHOST);
        assert!(free_listening_address("not an address").is_err());
    }

    #[test]
    fn virtual_time_windows_are_exact() {
        let lateness = RunMode::Virtual.lateness();
        assert!(on_time(MS(15_000), MS(15_000), lateness));
        assert!(!on_time(MS(15_001), MS(15_000), lateness));
        assert!(!on_time(MS(14_999), MS(15_000), lateness));
        assert_eq!(
            window_bounds(Window::Within(MS(0)), MS(3), lateness),
            (MS(3), None)
        );
    }

    #[test]
    fn real_time_windows_allow_lateness_never_earliness() {
        let lateness = RunMode::RealTime.lateness();
        assert!(on_time(MS(15_008), MS(15_000), lateness));
        assert!(on_time(MS(15_300), MS(15_000), lateness));
        assert!(!on_time(MS(15_301), MS(15_000), lateness));
        assert!(!on_time(MS(14_999), MS(15_000), lateness));
        assert_eq!(
            window_bounds(Window::Within(MS(0)), MS(3), lateness),
            (MS(303), None)
        );
        assert_eq!(
            window_bounds(Window::At(MS(15_000)), MS(3), lateness),
            (MS(15_300), Some(MS(15_000)))
        );
    }
}
