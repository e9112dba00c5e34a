//! `bench-peers`: how long clients take to process one large xDS response,
//! as the fake server sees it, and how much memory they use doing it.
//!
//! Two generated scenarios, loaded and played like any scenario file (the
//! real runner, real time, real TCP on loopback):
//!
//! - **CDS**: a Listener whose RouteConfiguration (over RDS) has one
//!   virtual host with N routes, `/svc<i>/` -> cluster `c<i>`, so a channel
//!   subscribes to N clusters; the server holds N ClusterLoadAssignments
//!   (one endpoint each) and answers EDS like a control plane. Once the
//!   client's CDS subscription names all N clusters, the server sends one
//!   CDS response with all N; the run ends at the client's reply to it.
//!   A client that subscribes to every Cluster (Envoy: a wildcard, see
//!   [`ClusterSubscription`]) has its initial CDS request answered with no
//!   clusters and gets the same N once it has ACKed the routes.
//! - **EDS**: one cluster; once the client asks for its endpoints, the
//!   server sends one ClusterLoadAssignment with N distinct endpoints
//!   (10.x.y.z:80, which real-TCP runs rewrite to closed loopback
//!   addresses, so nothing leaves the machine); the run ends at the reply.
//!
//! The measurement is the fake server's own: from recording the large
//! response as sent (queued on the stream; encoding and writing it are
//! inside the interval) to recording the client's ACK or NACK carrying
//! its nonce, both timestamps taken on the timeline's clock. The client's
//! peak RSS (`VmHWM`) is read just before it is shut down, i.e. right
//! after that reply.
//!
//! CSDS polling is turned off for these runs (it would ask the client to
//! dump thousands of resources while it works), the same for every client;
//! for Envoy, which has no CSDS, the driver's reading of its admin API
//! (`/config_dump`, `/stats`) is turned off for the same reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use envoy_types::pb::envoy::service::status::v3::ClientStatusResponse;
use xds_client_under_test::{
    AdapterManifest, Capabilities, ClientEnvironment, ClientError, ClientUnderTest, Driver,
    EnvoyClient, EnvoyLogging, ProcessClient, ProcessError, ReferenceClient, RpcOutcome,
    RpcRequest,
};
use xds_conformance_reports::Verdict;
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::RequestKind;
use xds_vocabulary::ResourceType;

use crate::runner::{RunMode, RunOutcome, run_scenario_in};
use crate::scenario::{Scenario, ScenarioError, load_str};
use crate::suite::{ADAPTERS_DIR, repo_root};
use crate::timeline::{EventKind, TimelineEvent};

/// The default clients: the reference client as a process, C-core, Node,
/// Envoy.
pub const DEFAULT_CLIENTS: &[&str] = &["reference-process", "grpcio", "grpc-js", "envoy"];

/// The in-process reference client on real TCP (an extra, labelled row).
pub const IN_PROCESS: &str = "reference (in-process, TCP)";

/// The largest N: real-TCP runs give every endpoint its own loopback
/// address, 127.1.x.y with x below 256 and 250 per x.
pub const MAX_SIZE: usize = 60_000;

/// Environment the bench gives every adapter, overriding its manifest:
/// gRPC's defaults (no tracing, errors only), as a deployment runs them.
/// The manifests turn on debug tracing for conformance runs, which makes
/// C-core and grpc-js log every resource and would be measured too.
pub const QUIET_ENV: &[(&str, &str)] = &[("GRPC_TRACE", ""), ("GRPC_VERBOSITY", "ERROR")];

/// Envoy's logging in the bench: its default level, as a deployment runs
/// it. Conformance runs add `config:debug` (see [`EnvoyLogging`]), which
/// logs per response and per cluster and would be measured too.
pub const QUIET_ENVOY: EnvoyLogging = EnvoyLogging::Info;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("size must be between 1 and {MAX_SIZE}, not {0}")]
    Size(usize),
    #[error("the generated {workload} scenario does not load: {source}")]
    Scenario {
        workload: &'static str,
        source: Box<ScenarioError>,
    },
    #[error("no repository root (a folder with {ADAPTERS_DIR}) above the current directory")]
    NoRepoRoot,
    #[error("unknown client {0:?}: bench-peers runs adapters from {ADAPTERS_DIR}")]
    UnknownClient(String),
    #[error(transparent)]
    Adapter(#[from] ProcessError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {}: {source}", path.display())]
    Marker {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The two measured responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Workload {
    Cds,
    Eds,
}

impl Workload {
    pub const ALL: [Workload; 2] = [Workload::Cds, Workload::Eds];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Cds => "CDS",
            Workload::Eds => "EDS",
        }
    }

    pub fn resource_type(self) -> ResourceType {
        match self {
            Workload::Cds => ResourceType::Cluster,
            Workload::Eds => ResourceType::ClusterLoadAssignment,
        }
    }

    /// What the large response holds.
    pub fn describe(self, size: usize) -> String {
        match self {
            Workload::Cds => format!("CDS response with {size} clusters"),
            Workload::Eds => format!("EDS response with 1 cluster of {size} endpoints"),
        }
    }

    /// The scenario, as YAML text, for a client that subscribes to
    /// clusters as `subscription` says.
    pub fn scenario_yaml(self, size: usize, subscription: ClusterSubscription) -> String {
        match self {
            Workload::Cds => cds_scenario_yaml(size, subscription),
            Workload::Eds => eds_scenario_yaml(size),
        }
    }

    /// The scenario this workload plays for clients that subscribe as
    /// `subscription`: CDS has one per kind of subscription, EDS one for
    /// all (every client names the endpoints it wants).
    pub fn variant(self, subscription: ClusterSubscription) -> Option<ClusterSubscription> {
        match self {
            Workload::Cds => Some(subscription),
            Workload::Eds => None,
        }
    }

    /// How many resources the large response carries.
    fn response_resources(self, size: usize) -> usize {
        match self {
            Workload::Cds => size,
            Workload::Eds => 1,
        }
    }

    /// The scenario's name, which is also its file name without `.yaml`
    /// (`--write-scenarios`): `cds-10000`, `cds-wildcard-10000`.
    pub fn scenario_name(self, size: usize, subscription: ClusterSubscription) -> String {
        let variant = match self.variant(subscription) {
            Some(ClusterSubscription::Wildcard) => "-wildcard",
            Some(ClusterSubscription::Named) | None => "",
        };
        format!("{}{variant}-{size}", self.name().to_lowercase())
    }

    pub fn scenario(
        self,
        size: usize,
        subscription: ClusterSubscription,
    ) -> Result<Scenario, BenchError> {
        let name = format!("bench-peers/{}", self.scenario_name(size, subscription));
        load_str(&name, &self.scenario_yaml(size, subscription)).map_err(|e| BenchError::Scenario {
            workload: self.name(),
            source: Box::new(e),
        })
    }
}

/// How a client subscribes to Clusters, which decides how the CDS
/// workload brings it to want all N of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClusterSubscription {
    /// By name, as gRPC channels do: the routes name the N clusters and the
    /// client's CDS request names them all; that request is what the
    /// server waits for.
    Named,
    /// Every Cluster the server has, by a wildcard subscription, as Envoy
    /// does: its initial CDS request (`resource_names` empty) is answered
    /// with no clusters (a control plane with none yet, which lets Envoy
    /// finish initialising: it requests Listeners only then), and the
    /// server waits for the ACK of the RouteConfiguration naming the N
    /// clusters, i.e. for the client to hold the same Listener and routes
    /// a channel does before its named request.
    Wildcard,
}

impl ClusterSubscription {
    /// Envoy (no named Listener or Cluster subscriptions) subscribes by
    /// wildcard; gRPC clients by name.
    pub fn of(caps: &Capabilities) -> ClusterSubscription {
        if caps.named_lds_cds {
            ClusterSubscription::Named
        } else {
            ClusterSubscription::Wildcard
        }
    }

    /// The steps after the dial that end when the client is ready for the
    /// CDS response with the N clusters.
    fn cds_ready_steps(self, size: usize) -> String {
        match self {
            ClusterSubscription::Named => {
                let mut yaml = String::from("  - expect:\n      request: { type: CDS, names: [");
                push_names(&mut yaml, size);
                yaml.push_str(&format!("] }}\n      within: {SUBSCRIBE_WITHIN}\n"));
                yaml
            }
            ClusterSubscription::Wildcard => format!(
                "  - expect:\n      request: {{ type: CDS, names: [], kind: initial }}\n      \
                 within: {SUBSCRIBE_WITHIN}\n  \
                 - send_response: {{ type: CDS, version: \"0\", resources: [] }}\n  \
                 - expect:\n      request: {{ type: RDS, names: [routes], kind: ack }}\n      \
                 within: {SUBSCRIBE_WITHIN}\n"
            ),
        }
    }
}

/// A distinct non-loopback address for endpoint `i` (real-TCP runs
/// rewrite it to a closed loopback address before a client sees it).
fn endpoint_address(i: usize) -> String {
    format!("10.{}.{}.{}:80", i / 62_500, (i / 250) % 250, i % 250 + 1)
}

/// Time allowed for the client to subscribe to the N clusters (it parses a
/// RouteConfiguration with N routes first), and then for its reply.
const SUBSCRIBE_WITHIN: &str = "120s";
const REPLY_WITHIN: &str = "120s";

fn cds_scenario_yaml(size: usize, subscription: ClusterSubscription) -> String {
    let mut yaml = String::from(
        "description: |\n  bench-peers: one CDS response with all the clusters a channel's\n  \
         RouteConfiguration names; measured from that response to the client's reply.\n",
    );
    if subscription == ClusterSubscription::Wildcard {
        yaml.push_str(
            "  For a client subscribing to every Cluster: its initial CDS request is\n  \
             answered with none, then it gets the N clusters once it has ACKed the routes.\n",
        );
    }
    yaml.push_str(
        "snapshot: false\nservers:\n  primary:\n    resources:\n      \
         - listener: { name: svc, rds: routes }\n      \
         - route_config:\n          name: routes\n          virtual_hosts:\n            \
         - domains: [\"*\"]\n              routes:\n",
    );
    for i in 0..size {
        yaml.push_str(&format!(
            "                - {{ prefix: /svc{i}/, cluster: c{i} }}\n"
        ));
    }
    for i in 0..size {
        yaml.push_str(&format!(
            "      - endpoints: {{ name: c{i}, addresses: [\"{}\"] }}\n",
            endpoint_address(i)
        ));
    }
    yaml.push_str("steps:\n  - dial: xds:///svc\n");
    yaml.push_str(&subscription.cds_ready_steps(size));
    yaml.push_str("  - set_resources:\n      resources:\n");
    for i in 0..size {
        yaml.push_str(&format!("        - cluster: {{ name: c{i} }}\n"));
    }
    push_reply_expectation(&mut yaml, "CDS");
    yaml
}

fn eds_scenario_yaml(size: usize) -> String {
    let mut yaml = String::from(
        "description: |\n  bench-peers: one ClusterLoadAssignment with many endpoints;\n  \
         measured from that response to the client's reply.\n\
         snapshot: false\nservers:\n  primary:\n    resources:\n      \
         - listener: { name: svc, routes_to: c0 }\n      \
         - cluster: { name: c0 }\n\
         steps:\n  - dial: xds:///svc\n  - expect:\n      request: { type: EDS, names: [c0] }\n",
    );
    yaml.push_str(&format!("      within: {SUBSCRIBE_WITHIN}\n"));
    yaml.push_str("  - set_resources:\n      resources:\n        - endpoints:\n            name: c0\n            addresses:\n");
    for i in 0..size {
        yaml.push_str(&format!("              - \"{}\"\n", endpoint_address(i)));
    }
    push_reply_expectation(&mut yaml, "EDS");
    yaml
}

fn push_names(yaml: &mut String, size: usize) {
    for i in 0..size {
        if i > 0 {
            yaml.push_str(", ");
        }
        yaml.push_str(&format!("c{i}"));
    }
}

/// The run ends at the client's reply, whichever it is (reported).
fn push_reply_expectation(yaml: &mut String, type_name: &str) {
    yaml.push_str(&format!(
        "  - expect:\n      any_of:\n        \
         - request: {{ type: {type_name}, kind: ack }}\n        \
         - request: {{ type: {type_name}, kind: nack }}\n      \
         within: {REPLY_WITHIN}\n"
    ));
}

/// How a client answered the large response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyKind {
    Ack,
    Nack { message: String },
}

/// From the large response to the reply that names its nonce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub elapsed: Duration,
    pub kind: ReplyKind,
}

/// Why a run has no measurement.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MeasureError {
    #[error("the server never sent a {type_name} response with {resources} resources")]
    NoResponse {
        type_name: &'static str,
        resources: usize,
    },
    #[error("no reply to the {type_name} response (nonce {nonce:?})")]
    NoReply {
        type_name: &'static str,
        nonce: String,
    },
}

/// Finds the first `resource_type` response carrying `resources` entries
/// and the first request of that type on the same server and stream that
/// answers its nonce.
pub fn response_to_reply(
    events: &[TimelineEvent],
    resource_type: ResourceType,
    resources: usize,
) -> Result<Reply, MeasureError> {
    let type_url = resource_type.type_url();
    let type_name = resource_type.short_name();
    let (index, sent, stream, nonce) = events
        .iter()
        .enumerate()
        .find_map(|(i, e)| match &e.kind {
            EventKind::Server(server_event) => match &**server_event {
                ServerEvent::ResponseSent { stream, response }
                    if response.type_url == type_url
                        && response.resource_names.len() == resources =>
                {
                    Some((i, e, *stream, response.nonce.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .ok_or(MeasureError::NoResponse {
            type_name,
            resources,
        })?;
    events[index + 1..]
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Server(server_event) if e.source == sent.source => match &**server_event {
                ServerEvent::RequestReceived { stream: s, request }
                    if *s == stream
                        && request.type_url == type_url
                        && request.response_nonce == nonce =>
                {
                    let kind = match request.kind {
                        RequestKind::Nack | RequestKind::NackOfUnknownNonce => ReplyKind::Nack {
                            message: request
                                .error_detail
                                .as_ref()
                                .map(|(_, m)| m.clone())
                                .unwrap_or_default(),
                        },
                        _ => ReplyKind::Ack,
                    };
                    Some(Reply {
                        elapsed: e.at.saturating_sub(sent.at),
                        kind,
                    })
                }
                _ => None,
            },
            _ => None,
        })
        .ok_or(MeasureError::NoReply { type_name, nonce })
}

/// One run of one workload on one client.
#[derive(Clone, Debug)]
pub struct Sample {
    pub reply: Result<Reply, MeasureError>,
    pub verdict: Verdict,
    pub peak_rss_bytes: Option<u64>,
    pub wall: Duration,
}

impl Sample {
    pub fn from_outcome(outcome: &RunOutcome, workload: Workload, size: usize) -> Sample {
        Sample {
            reply: response_to_reply(
                &outcome.events,
                workload.resource_type(),
                workload.response_resources(size),
            ),
            verdict: outcome.verdict.clone(),
            peak_rss_bytes: outcome.peak_rss_bytes,
            wall: outcome.wall_duration,
        }
    }
}

/// A client to measure: its label, how to make one, the run mode, and
/// how it subscribes to clusters (which CDS scenario it plays).
pub struct BenchClient {
    pub label: String,
    pub description: String,
    pub factory: Box<dyn Fn() -> Box<dyn ClientUnderTest> + Send + Sync>,
    pub mode: Option<RunMode>,
    pub subscription: ClusterSubscription,
}

impl BenchClient {
    fn new(
        label: String,
        description: String,
        factory: Box<dyn Fn() -> Box<dyn ClientUnderTest> + Send + Sync>,
        mode: Option<RunMode>,
    ) -> BenchClient {
        // Capabilities are known before a client starts.
        let subscription = ClusterSubscription::of(&factory().capabilities());
        BenchClient {
            label,
            description,
            factory,
            mode,
            subscription,
        }
    }
}

/// Prepares an adapter: installs it if needed (for `reference-process`,
/// always rebuilds it, so a stale binary is never measured), and, unless
/// `adapter_logging`, gives gRPC adapters [`QUIET_ENV`] and runs Envoy at
/// [`QUIET_ENVOY`].
pub fn adapter_client(name: &str, adapter_logging: bool) -> Result<BenchClient, BenchError> {
    // A path to an adapter folder, or the name of one of the repository's.
    let dir = if name.contains('/') {
        std::path::PathBuf::from(name)
    } else {
        repo_root()
            .ok_or(BenchError::NoRepoRoot)?
            .join(ADAPTERS_DIR)
            .join(name)
    };
    if !dir.join(AdapterManifest::FILE_NAME).is_file() {
        return Err(BenchError::UnknownClient(name.to_string()));
    }
    let mut manifest = AdapterManifest::load(&dir)?;
    let root = manifest.root_dir(&dir)?;
    if name == "reference-process"
        && let Some(marker) = &manifest.installed
    {
        remove_marker(&root.join(marker))?;
    }
    ProcessClient::new(&root, manifest.clone()).ensure_installed()?;
    let description = manifest.description.clone();
    let factory: Box<dyn Fn() -> Box<dyn ClientUnderTest> + Send + Sync> = match manifest.driver {
        Driver::Adapter => {
            if !adapter_logging {
                for (key, value) in QUIET_ENV {
                    manifest.env.insert(key.to_string(), value.to_string());
                }
            }
            Box::new(move || {
                Box::new(WithoutCsds(Box::new(ProcessClient::new(
                    &root,
                    manifest.clone(),
                )))) as Box<dyn ClientUnderTest>
            })
        }
        Driver::Envoy => {
            let logging = if adapter_logging {
                EnvoyLogging::default()
            } else {
                QUIET_ENVOY
            };
            Box::new(move || {
                Box::new(
                    EnvoyClient::new(&root, manifest.clone())
                        .without_admin_polling()
                        .with_logging(logging),
                ) as Box<dyn ClientUnderTest>
            })
        }
        // A zone answers KDS, not the ADS of these benchmarks: every
        // run is n/a, as its capabilities say.
        Driver::Kuma => Box::new(move || {
            Box::new(xds_client_under_test::KumaZoneClient::new(
                &root,
                manifest.clone(),
            )) as Box<dyn ClientUnderTest>
        }),
    };
    Ok(BenchClient::new(
        name.to_string(),
        description,
        factory,
        None,
    ))
}

fn remove_marker(path: &Path) -> Result<(), BenchError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(BenchError::Marker {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The reference client in the harness's process and thread, on real TCP:
/// no RSS of its own, and it shares a core with the fake server.
pub fn in_process_client() -> BenchClient {
    BenchClient::new(
        IN_PROCESS.to_string(),
        "xds-reference-client in the harness's process (shares its thread)".into(),
        Box::new(|| {
            Box::new(WithoutCsds(Box::new(ReferenceClient::new()))) as Box<dyn ClientUnderTest>
        }),
        Some(RunMode::RealTime),
    )
}

/// Plays one workload once.
pub fn run_once(
    client: &BenchClient,
    scenario: &Scenario,
    workload: Workload,
    size: usize,
) -> Sample {
    let outcome = run_scenario_in(scenario, client.factory.as_ref(), client.mode);
    Sample::from_outcome(&outcome, workload, size)
}

/// Min and median of what was measured (None if nothing was); an even
/// count's median is the mean of the middle two.
pub fn min_median(values: &[u64]) -> Option<(u64, u64)> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let min = *sorted.first()?;
    let middle = sorted.len() / 2;
    let median = if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        sorted[middle - 1] / 2
            + sorted[middle] / 2
            + (sorted[middle - 1] % 2 + sorted[middle] % 2) / 2
    };
    Some((min, median))
}

fn min_median_duration(values: &[Duration]) -> Option<(Duration, Duration)> {
    let nanos: Vec<u64> = values
        .iter()
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .collect();
    min_median(&nanos)
        .map(|(min, median)| (Duration::from_nanos(min), Duration::from_nanos(median)))
}

/// The samples of one client on one workload, summarised.
#[derive(Clone, Debug)]
pub struct Summary {
    pub runs: usize,
    /// Runs with a reply.
    pub measured: usize,
    pub elapsed: Option<(Duration, Duration)>,
    /// "ACK", "NACK", or "ACK 2/NACK 1"; "-" with no reply.
    pub replies: String,
    pub rss: Option<(u64, u64)>,
    pub wall_median: Option<Duration>,
    /// Distinct reasons for runs without a measurement, and NACK texts.
    pub notes: Vec<String>,
}

pub fn summarize(samples: &[Sample]) -> Summary {
    let elapsed: Vec<Duration> = samples
        .iter()
        .filter_map(|s| s.reply.as_ref().ok().map(|r| r.elapsed))
        .collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut notes = Vec::new();
    let mut note = |text: String| {
        if !notes.contains(&text) {
            notes.push(text);
        }
    };
    for sample in samples {
        match &sample.reply {
            Ok(Reply {
                kind: ReplyKind::Ack,
                ..
            }) => *counts.entry("ACK").or_default() += 1,
            Ok(Reply {
                kind: ReplyKind::Nack { message },
                ..
            }) => {
                *counts.entry("NACK").or_default() += 1;
                note(format!("NACK: {}", first_line(message, 300)));
            }
            Err(e) => {
                let verdict = match &sample.verdict {
                    Verdict::Fail { message } | Verdict::Error { message } => {
                        format!(
                            " ({}: {})",
                            sample.verdict.label(),
                            first_line(message, 300)
                        )
                    }
                    other => format!(" ({})", other.label()),
                };
                note(format!("{e}{verdict}"));
            }
        }
    }
    let replies = match counts.len() {
        0 => "-".to_string(),
        1 => counts.keys().map(|k| k.to_string()).collect(),
        _ => counts
            .iter()
            .map(|(k, n)| format!("{k} {n}/{}", samples.len()))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let rss: Vec<u64> = samples.iter().filter_map(|s| s.peak_rss_bytes).collect();
    let walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    Summary {
        runs: samples.len(),
        measured: elapsed.len(),
        elapsed: min_median_duration(&elapsed),
        replies,
        rss: min_median(&rss),
        wall_median: min_median_duration(&walls).map(|(_, median)| median),
        notes,
    }
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_string(),
    }
}

/// The table `bench-peers` prints (Markdown).
pub fn render_table(size: usize, rows: &[(Workload, String, Summary)]) -> String {
    let mut out = String::from(
        "| workload | client | response -> reply, ms (min / median) | reply | peak RSS, MiB (min / median) | whole run, s (median) | runs measured |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (workload, client, s) in rows {
        let elapsed = s
            .elapsed
            .map(|(min, median)| format!("{:.1} / {:.1}", ms(min), ms(median)))
            .unwrap_or_else(|| "-".into());
        let rss = s
            .rss
            .map(|(min, median)| format!("{:.1} / {:.1}", mib(min), mib(median)))
            .unwrap_or_else(|| "n/a".into());
        let wall = s
            .wall_median
            .map(|w| format!("{:.2}", w.as_secs_f64()))
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "| {} {size} | {client} | {elapsed} | {} | {rss} | {wall} | {}/{} |\n",
            workload.name(),
            s.replies,
            s.measured,
            s.runs
        ));
    }
    out
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// What `bench-peers` runs.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchOptions {
    /// Comma-separated adapters: names from client-under-test/adapters, or
    /// paths to adapter folders (an adapter kept in its own repository).
    #[arg(long, value_delimiter = ',', default_values = DEFAULT_CLIENTS.iter().copied())]
    pub clients: Vec<String>,
    /// Clusters in the CDS response; endpoints in the EDS response.
    #[arg(long, default_value_t = 10_000)]
    pub size: usize,
    /// Runs per client and workload (min and median are reported).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Also measure the reference client in the harness's own process
    /// and thread, on real TCP (slow at large sizes; see docs/src/benchmarks/index.md).
    #[arg(long)]
    pub in_process: bool,
    /// Keep the adapters' debug logging (GRPC_TRACE, GRPC_VERBOSITY from
    /// their manifests) instead of gRPC's defaults (`QUIET_ENV`).
    #[arg(long)]
    pub adapter_logging: bool,
    /// Also write the two generated scenarios to this folder (to run them
    /// with `run` or `serve`).
    #[arg(long)]
    pub write_scenarios: Option<PathBuf>,
}

/// Runs the benchmark, printing progress to stderr and the results to
/// stdout; Ok(false) if some run gave no measurement.
pub fn bench_peers(options: &BenchOptions) -> Result<bool, BenchError> {
    if options.size == 0 || options.size > MAX_SIZE {
        return Err(BenchError::Size(options.size));
    }
    // Before any client is installed or started: a folder that cannot
    // take the scenarios is found now, not after minutes of setup.
    if let Some(dir) = &options.write_scenarios {
        xds_conformance_reports::check_writable(dir).map_err(|source| BenchError::Write {
            path: dir.clone(),
            source,
        })?;
    }
    let runs = options.runs.max(1);
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this harness is a debug build: the fake server's encoding of the large \
             response is inside every measurement, and slow; use cargo run --release"
        );
    }
    let mut clients = Vec::new();
    for name in options.clients.iter().filter(|n| !n.is_empty()) {
        eprintln!("preparing {name} (installing or rebuilding it if needed)...");
        clients.push(adapter_client(name, options.adapter_logging)?);
    }
    if options.in_process {
        clients.push(in_process_client());
    }
    // Each workload's scenario once per variant the clients need.
    let mut scenarios: BTreeMap<(Workload, Option<ClusterSubscription>), Scenario> =
        BTreeMap::new();
    for workload in Workload::ALL {
        for client in &clients {
            let variant = workload.variant(client.subscription);
            if scenarios.contains_key(&(workload, variant)) {
                continue;
            }
            let loading = std::time::Instant::now();
            let scenario = workload.scenario(options.size, client.subscription)?;
            if let Some(dir) = &options.write_scenarios {
                let path = dir.join(format!(
                    "bench-{}.yaml",
                    workload.scenario_name(options.size, client.subscription)
                ));
                std::fs::create_dir_all(dir)
                    .and_then(|()| {
                        xds_conformance_reports::write_whole(
                            &path,
                            workload
                                .scenario_yaml(options.size, client.subscription)
                                .as_bytes(),
                        )
                    })
                    .map_err(|source| BenchError::Write {
                        path: path.clone(),
                        source,
                    })?;
                eprintln!("wrote {}", path.display());
            }
            eprintln!(
                "generated and loaded the {} scenario ({}) in {:.1}ms",
                workload.describe(options.size),
                scenario.name,
                ms(loading.elapsed())
            );
            scenarios.insert((workload, variant), scenario);
        }
    }
    let mut samples: BTreeMap<(Workload, usize), Vec<Sample>> = BTreeMap::new();
    for workload in Workload::ALL {
        // Clients take turns run by run, so a drift in the machine's state
        // spreads over all of them.
        for run in 1..=runs {
            for (index, client) in clients.iter().enumerate() {
                let scenario = &scenarios[&(workload, workload.variant(client.subscription))];
                let sample = run_once(client, scenario, workload, options.size);
                eprintln!(
                    "{} {} {}: run {run}/{runs}: {}",
                    workload.name(),
                    options.size,
                    client.label,
                    describe_sample(&sample)
                );
                samples.entry((workload, index)).or_default().push(sample);
            }
        }
    }
    let mut rows = Vec::new();
    let mut complete = true;
    for ((workload, index), list) in &samples {
        let summary = summarize(list);
        complete &= summary.measured == summary.runs;
        rows.push((*workload, clients[*index].label.clone(), summary));
    }
    println!(
        "bench-peers: N = {}, {runs} runs per client; machine: {}",
        options.size,
        machine()
    );
    if options.adapter_logging {
        println!("adapters ran with their manifests' logging settings");
    } else {
        let quiet: Vec<String> = QUIET_ENV
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        println!(
            "adapters ran with {} (gRPC's defaults); Envoy with {} (its default level)",
            quiet.join(" "),
            QUIET_ENVOY.args().join(" ")
        );
    }
    for client in &clients {
        let played = match client.subscription {
            ClusterSubscription::Named => String::new(),
            ClusterSubscription::Wildcard => format!(
                " [wildcard CDS: scenario {}]",
                Workload::Cds.scenario_name(options.size, client.subscription)
            ),
        };
        println!("  {}: {}{played}", client.label, client.description);
    }
    println!();
    print!("{}", render_table(options.size, &rows));
    for (workload, client, summary) in &rows {
        for note in &summary.notes {
            println!("note: {} {client}: {note}", workload.name());
        }
    }
    for workload in Workload::ALL {
        let median = |label: &str| {
            rows.iter()
                .find(|(w, c, _)| *w == workload && c == label)
                .and_then(|(_, _, s)| s.elapsed)
                .map(|(_, median)| median)
        };
        if let (Some(reference), Some(core)) = (median("reference-process"), median("grpcio")) {
            let ratio = reference.as_secs_f64() / core.as_secs_f64().max(1e-9);
            println!(
                "{} {}: reference-process / grpcio (C-core) median time = {ratio:.2} (target <= 0.5: {})",
                workload.name(),
                options.size,
                if ratio <= 0.5 { "met" } else { "NOT met" }
            );
        }
    }
    Ok(complete)
}

fn describe_sample(sample: &Sample) -> String {
    let reply = match &sample.reply {
        Ok(Reply { elapsed, kind }) => {
            let kind = match kind {
                ReplyKind::Ack => "ACK".to_string(),
                ReplyKind::Nack { message } => format!("NACK ({})", first_line(message, 120)),
            };
            format!("{:.1}ms to {kind}", ms(*elapsed))
        }
        Err(e) => format!("no measurement: {e} ({})", sample.verdict.label()),
    };
    let rss = sample
        .peak_rss_bytes
        .map(|b| format!("{:.1} MiB", mib(b)))
        .unwrap_or_else(|| "n/a".into());
    format!(
        "{reply}; peak RSS {rss}; whole run {:.2}s",
        sample.wall.as_secs_f64()
    )
}

/// "2 CPUs, Intel(R) Xeon(R) ..." (Linux; less elsewhere).
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cpus} CPUs, {model}")
}

/// Another client with CSDS hidden from the runner, so it is not polled.
struct WithoutCsds(Box<dyn ClientUnderTest>);

#[async_trait::async_trait]
impl ClientUnderTest for WithoutCsds {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            csds: false,
            resource_counts: false,
            ..self.0.capabilities()
        }
    }

    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        self.0.start(env).await
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        self.0.watch(resource_type, name).await
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        self.0.cancel_watch(resource_type, name).await
    }

    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        self.0.dial(target).await
    }

    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.0.rpc(request).await
    }

    async fn resource_counts(
        &mut self,
    ) -> Result<xds_client_under_test::ResourceCounts, ClientError> {
        Err(ClientError::Unsupported(
            "resource counts are off during benchmarks".into(),
        ))
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        Err(ClientError::Unsupported(
            "CSDS is off during benchmarks".into(),
        ))
    }

    fn peak_rss_bytes(&self) -> Option<u64> {
        self.0.peak_rss_bytes()
    }

    async fn watch_in_callback(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        of: (ResourceType, &str),
    ) -> Result<(), ClientError> {
        self.0.watch_in_callback(resource_type, name, of).await
    }

    async fn hold_reads(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        hold: bool,
    ) -> Result<(), ClientError> {
        self.0.hold_reads(resource_type, name, hold).await
    }

    async fn start_rpc(
        &mut self,
        request: &RpcRequest,
    ) -> Result<xds_client_under_test::PendingRpc, ClientError> {
        self.0.start_rpc(request).await
    }

    async fn csds_request(
        &mut self,
        request: envoy_types::pb::envoy::service::status::v3::ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, xds_vocabulary::XdsError>, ClientError> {
        self.0.csds_request(request).await
    }

    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        self.0.serve(address).await
    }

    async fn zone_set(
        &mut self,
        resources: Vec<xds_vocabulary::kds::KdsResource>,
    ) -> Result<(), xds_client_under_test::ClientError> {
        self.0.zone_set(resources).await
    }

    async fn zone_remove(
        &mut self,
        kuma_type: &str,
        names: &[xds_vocabulary::kds::KdsName],
    ) -> Result<(), xds_client_under_test::ClientError> {
        self.0.zone_remove(kuma_type, names).await
    }

    async fn shutdown(&mut self) {
        self.0.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::Matcher;
    use crate::matcher::request::RequestMatcher;
    use crate::runner::not_applicable;
    use crate::scenario::Step;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_fake_server::event::{RecordedRequest, RecordedResponse};

    const SUBSCRIPTIONS: [ClusterSubscription; 2] =
        [ClusterSubscription::Named, ClusterSubscription::Wildcard];

    fn steps(scenario: &Scenario) -> Vec<&Step> {
        scenario.steps.iter().map(|s| &s.step).collect()
    }

    fn request_matcher(step: &Step) -> &RequestMatcher {
        match step.matcher() {
            Some(Matcher::Request(m)) => m,
            _ => panic!("not a request expectation: {step:?}"),
        }
    }

    #[test]
    fn generated_scenarios_load() {
        for workload in Workload::ALL {
            let scenario = workload.scenario(3, ClusterSubscription::Named).unwrap();
            let steps = steps(&scenario);
            assert!(matches!(steps[0], Step::Dial(_)), "{steps:?}");
            assert!(matches!(steps[2], Step::SetResources { .. }), "{steps:?}");
            assert_eq!(steps.len(), 4);
        }
        let cds = Workload::Cds
            .scenario(3, ClusterSubscription::Named)
            .unwrap();
        assert_eq!(cds.servers[0].resources.len(), 2 + 3);
    }

    #[test]
    fn only_cds_has_a_wildcard_variant() {
        assert_eq!(
            Workload::Cds.scenario_name(10, ClusterSubscription::Wildcard),
            "cds-wildcard-10"
        );
        assert_eq!(
            Workload::Cds.scenario_name(10, ClusterSubscription::Named),
            "cds-10"
        );
        for subscription in SUBSCRIPTIONS {
            assert_eq!(Workload::Eds.variant(subscription), None);
            assert_eq!(Workload::Eds.scenario_name(10, subscription), "eds-10");
            assert_eq!(
                Workload::Eds.scenario_yaml(10, subscription),
                Workload::Eds.scenario_yaml(10, ClusterSubscription::Named)
            );
        }
    }

    #[test]
    fn wildcard_cds_answers_the_initial_request_with_no_clusters_then_sends_all() {
        let scenario = Workload::Cds
            .scenario(3, ClusterSubscription::Wildcard)
            .unwrap();
        let steps = steps(&scenario);
        assert_eq!(steps.len(), 6, "{steps:?}");
        assert!(matches!(steps[0], Step::Dial(_)), "{steps:?}");
        let initial = request_matcher(steps[1]);
        assert_eq!(initial.resource_type, Some(ResourceType::Cluster));
        assert_eq!(initial.names, Some(vec![]));
        assert_eq!(initial.kind, Some(RequestKind::Initial));
        let Step::SendResponse(response) = steps[2] else {
            panic!("{steps:?}");
        };
        assert_eq!(response.resource_type, ResourceType::Cluster);
        assert!(response.resources.is_empty());
        let routes_acked = request_matcher(steps[3]);
        assert_eq!(
            routes_acked.resource_type,
            Some(ResourceType::RouteConfiguration)
        );
        assert_eq!(routes_acked.names, Some(vec!["routes".to_string()]));
        assert_eq!(routes_acked.kind, Some(RequestKind::Ack));
        // The same server state, the same large response and the same end
        // as for a client subscribing by name.
        let named = Workload::Cds
            .scenario(3, ClusterSubscription::Named)
            .unwrap();
        let named_steps = self::steps(&named);
        assert_eq!(scenario.servers[0].resources, named.servers[0].resources);
        let clusters = |step: &Step| match step {
            Step::SetResources(set) => set.resources.clone(),
            other => panic!("not set_resources: {other:?}"),
        };
        assert_eq!(clusters(steps[4]), clusters(named_steps[2]));
        assert_eq!(clusters(steps[4]).len(), 3);
        assert_eq!(format!("{:?}", steps[5]), format!("{:?}", named_steps[3]));
    }

    #[test]
    fn each_client_gets_a_cds_scenario_it_can_run() {
        let grpc = Capabilities {
            named_lds_cds: true,
            dial: true,
            ..Capabilities::default()
        };
        // Envoy as the bench runs it: admin API not read.
        let envoy = Capabilities {
            named_lds_cds: false,
            proxy: true,
            dial: true,
            ..Capabilities::default()
        };
        assert_eq!(ClusterSubscription::of(&grpc), ClusterSubscription::Named);
        assert_eq!(
            ClusterSubscription::of(&envoy),
            ClusterSubscription::Wildcard
        );
        let scenario = |s| Workload::Cds.scenario(3, s).unwrap();
        assert_eq!(
            not_applicable(&scenario(ClusterSubscription::Named), &grpc),
            None
        );
        // The named scenario waits for a request naming every cluster (a
        // subscription change), which Envoy never sends: not applicable
        // there, so Envoy gets the wildcard scenario.
        assert!(not_applicable(&scenario(ClusterSubscription::Named), &envoy).is_some());
        assert_eq!(
            not_applicable(&scenario(ClusterSubscription::Wildcard), &envoy),
            None
        );
        let eds = Workload::Eds
            .scenario(3, ClusterSubscription::Wildcard)
            .unwrap();
        assert_eq!(not_applicable(&eds, &envoy), None);
    }

    #[test]
    fn endpoint_addresses_are_distinct() {
        let all: std::collections::BTreeSet<String> = (0..MAX_SIZE).map(endpoint_address).collect();
        assert_eq!(all.len(), MAX_SIZE);
        assert_eq!(endpoint_address(0), "10.0.0.1:80");
    }

    fn server(at_ms: u64, event: ServerEvent) -> TimelineEvent {
        TimelineEvent {
            at: Duration::from_millis(at_ms),
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(event)),
        }
    }

    fn response(nonce: &str, names: usize) -> ServerEvent {
        ServerEvent::ResponseSent {
            stream: 1,
            response: RecordedResponse {
                encoded_len: 0,
                delta: None,
                resource_errors: Vec::new(),
                bodies: Vec::new(),
                type_url: ResourceType::Cluster.type_url().to_string(),
                version_info: "1".into(),
                nonce: nonce.into(),
                resource_names: (0..names).map(|i| format!("c{i}")).collect(),
            },
        }
    }

    fn request(nonce: &str, kind: RequestKind, error: Option<&str>) -> ServerEvent {
        ServerEvent::RequestReceived {
            stream: 1,
            request: RecordedRequest {
                delta: None,
                type_url: ResourceType::Cluster.type_url().to_string(),
                resource_names: vec![],
                version_info: String::new(),
                response_nonce: nonce.into(),
                error_detail: error.map(|m| (3, m.to_string())),
                node: None,
                kind,
            },
        }
    }

    #[test]
    fn measures_from_the_large_response_to_its_reply() {
        let events = vec![
            server(10, response("1", 1)),
            server(11, request("1", RequestKind::Ack, None)),
            server(20, response("2", 3)),
            server(22, request("1", RequestKind::Ack, None)),
            server(57, request("2", RequestKind::Nack, Some("bad"))),
        ];
        assert_eq!(
            response_to_reply(&events, ResourceType::Cluster, 3),
            Ok(Reply {
                elapsed: Duration::from_millis(37),
                kind: ReplyKind::Nack {
                    message: "bad".into()
                },
            })
        );
        assert_eq!(
            response_to_reply(&events[..4], ResourceType::Cluster, 3),
            Err(MeasureError::NoReply {
                type_name: "CDS",
                nonce: "2".into()
            })
        );
        assert!(matches!(
            response_to_reply(&events, ResourceType::Cluster, 5),
            Err(MeasureError::NoResponse { .. })
        ));
    }

    #[test]
    fn min_and_median() {
        assert_eq!(min_median(&[]), None);
        assert_eq!(min_median(&[5, 1, 3]), Some((1, 3)));
        assert_eq!(min_median(&[4, 1, 3, 2]), Some((1, 2)));
        assert_eq!(min_median(&[4, 1, 3, 3]), Some((1, 3)));
        assert_eq!(
            min_median(&[u64::MAX, u64::MAX]),
            Some((u64::MAX, u64::MAX))
        );
    }
}
