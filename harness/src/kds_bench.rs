//! `bench-kds`: Kuma's KDS redesign (MADR 040, delta xDS on
//! `ZoneToGlobalSync`) claims a zone with N Dataplanes sends its global
//! only what changed. This measures it: a zone holds N Dataplanes and
//! sends them all to its global; the global opens new streams, so the
//! zone answers its `*` with everything it holds (the full sync); then one
//! Dataplane changes. The fake global records the zone's responses and its
//! own ACKs.
//!
//! Reported per zone (the reference zone, in the harness's process on
//! real TCP; Kuma's kuma-cp, through the `kuma` driver, which makes the N
//! Dataplanes on the zone's REST API as an operator would):
//! - the bytes of the zone's response to the change (its encoded
//!   `DeltaDiscoveryResponse`), against the floor: the bytes of the one
//!   changed resource as a delta `Resource`, what no protocol can beat;
//! - the time from the change to the global's ACK of that response, on
//!   the fake server's clock (the zone noticing, building, sending; the
//!   global decoding and ACKing at once). For kuma-cp that starts when
//!   the driver sends its `PUT`;
//! - the full sync's bytes, what a state-of-the-world protocol would send
//!   for the same change: the zone's one response holding all N on a new
//!   stream. (Measured on a new stream for every zone: a real zone makes
//!   its Dataplanes after its global has sent their Mesh, so its first
//!   responses hold them as they come, a few at a time.)
//!
//! One generated scenario, played by the real runner like any file; the N
//! Dataplanes are put in its zone in code (a file listing 10,000 would be
//! over the loader's size limit, which is right for hand-written files).

use std::time::Duration;

use envoy_types::pb::envoy::service::discovery::v3::Resource;
use prost::Message;
use xds_client_under_test::{
    AdapterManifest, ClientUnderTest, KumaZoneClient, ProcessClient, ProcessError, ReferenceClient,
};
use xds_conformance_reports::Verdict;
use xds_fake_server::event::{RecordedResponse, ServerEvent};
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::{
    KdsName, KdsResource, hash_suffixed, kuma_resource, pack, spec, types, zone,
};

use crate::runner::{RunMode, RunOutcome, run_scenario_in};
use crate::scenario::{ScenarioError, load_str};
use crate::suite::{ADAPTERS_DIR, repo_root};
use crate::timeline::{EventKind, TimelineEvent};

/// The largest N (each Dataplane is ~300-400 bytes on the wire; the full
/// sync must fit one gRPC message of the fake server's KDS limit, 10 MiB).
pub const MAX_DATAPLANES: usize = 20_000;

/// The adapter folder of the real zone.
pub const KUMA_ADAPTER: &str = "kuma";

/// The Dataplane that changes, by index.
fn changed_index(n: usize) -> usize {
    n / 2
}

#[derive(Debug, thiserror::Error)]
pub enum KdsBenchError {
    #[error("dataplanes must be between 1 and {MAX_DATAPLANES}, not {0}")]
    Size(usize),
    #[error("the generated scenario does not load: {0}")]
    Scenario(#[from] ScenarioError),
    #[error("no repository root (a folder with {ADAPTERS_DIR}) above the current directory")]
    NoRepoRoot,
    #[error("the {KUMA_ADAPTER} adapter: {0}")]
    Adapter(#[from] ProcessError),
}

/// A zone the benchmark measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchZone {
    /// The reference zone, in the harness's process on real TCP.
    Reference,
    /// kuma-cp 2.14.3 as a zone (`client-under-test/adapters/kuma`,
    /// installed on first use).
    Kuma,
}

impl BenchZone {
    fn label(self) -> &'static str {
        match self {
            BenchZone::Reference => "reference (in-process, real TCP)",
            BenchZone::Kuma => "Kuma 2.14.3 (kuma-cp, real TCP)",
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct KdsBenchOptions {
    /// Dataplanes the zone holds.
    #[arg(long, default_value_t = 10_000)]
    pub dataplanes: usize,
    /// Runs per zone (min and median are reported).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// The zones measured, in order.
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["reference", "kuma"])]
    pub zones: Vec<BenchZone>,
}

/// One run's measurements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KdsSample {
    /// Resources and bytes of the zone's largest Dataplane response
    /// before the change: its full sync on the new stream.
    pub full_sync: (usize, usize),
    /// Resources and bytes of its response to the change.
    pub change: (usize, usize),
    /// From the change to the global's ACK of that response.
    pub to_ack: Duration,
}

/// Dataplane `i`, as the zone holds it.
fn dataplane(i: usize, address: &str) -> KdsResource {
    let spec = serde_json::json!({
        "networking": {
            "address": address,
            "inbound": [{"port": 8080, "tags": {"kuma.io/service": format!("svc-{}", i % 100)}}]
        }
    });
    KdsResource {
        kuma_type: types::DATAPLANE.to_string(),
        resource: kuma_resource(
            &KdsName::new(format!("dp-{i}"), "default"),
            Default::default(),
            spec.as_object()
                .and_then(|spec| spec::pack(types::DATAPLANE, spec).ok()),
        ),
    }
}

fn address(i: usize) -> String {
    format!("10.{}.{}.{}", i / 65_536 % 256, i / 256 % 256, i % 256)
}

/// The floor: the changed Dataplane as one delta `Resource`, named and
/// labelled as a 2.14 zone must send it (its hash-suffixed name, its given
/// one as `kuma.io/display-name`, the origin and zone labels; the version
/// left out).
pub fn floor_bytes(n: usize) -> usize {
    let i = changed_index(n);
    let mut changed = dataplane(i, "10.255.255.1");
    if let Some(meta) = changed.resource.meta.as_mut() {
        meta.labels.insert(
            zone::labels::ORIGIN.to_string(),
            zone::labels::ORIGIN_ZONE.to_string(),
        );
        meta.labels
            .insert(zone::labels::ZONE.to_string(), "zone-1".to_string());
        meta.labels
            .insert(zone::labels::DISPLAY_NAME.to_string(), meta.name.clone());
        meta.name = hash_suffixed(&meta.mesh, &meta.name, &["zone-1"]);
    }
    Resource {
        name: changed.key().to_string(),
        resource: Some(pack(&changed.resource)),
        ..Default::default()
    }
    .encoded_len()
}

/// The scenario: the zone sends its Dataplanes, answers new streams with
/// all of them, then one changes.
///
/// A response holding the last Dataplane made (`dp-<N-1>`: the zone makes
/// them in order) means the global has them all; the match is on the
/// timeline's text of the response (`<name>.<mesh> <spec>`, the name read
/// through `kuma.io/display-name` where the zone hash-suffixes it), so
/// `contains` ends the name with its space. The windows are a hang guard
/// sized for kuma-cp taking 10,000 `PUT`s on a busy machine, not a
/// verdict on speed.
pub fn scenario(n: usize) -> Result<crate::scenario::Scenario, KdsBenchError> {
    if n == 0 || n > MAX_DATAPLANES {
        return Err(KdsBenchError::Size(n));
    }
    let i = changed_index(n);
    let last = n - 1;
    let yaml = format!(
        "description: bench-kds, {n} Dataplanes, dp-{i} changes\n\
         servers:\n  global:\n    resources:\n      - kuma: {{ type: Mesh, name: default }}\n\
         zone: {{}}\n\
         limits: {{ virtual_time: 40m, wall_time: 40m }}\n\
         steps:\n\
         \x20 - expect:\n      kds_response: {{ rpc: zone_to_global, type: Dataplane, contains: \"dp-{last}.default \" }}\n      within: 30m\n\
         \x20 - close_stream: {{}}\n\
         \x20 - expect:\n      kds_response: {{ rpc: zone_to_global, type: Dataplane, contains: \"dp-{last}.default \" }}\n      within: 2m\n\
         \x20 - expect:\n      kds_request: {{ rpc: zone_to_global, type: Dataplane, kind: ack }}\n      within: 2m\n\
         \x20 - set_zone_resources:\n      resources:\n        - {{ type: Dataplane, name: dp-{i}, mesh: default, spec: {{ networking: {{ address: 10.255.255.1, inbound: [{{ port: 8080, tags: {{ kuma.io/service: svc-{} }} }}] }} }} }}\n\
         \x20 - expect:\n      kds_response: {{ rpc: zone_to_global, type: Dataplane, names: [dp-{i}.default] }}\n      within: 2m\n\
         \x20 - expect:\n      kds_request: {{ rpc: zone_to_global, type: Dataplane, kind: ack }}\n      within: 2m\n",
        i % 100
    );
    let mut scenario = load_str("bench-kds.yaml", &yaml)?;
    if let Some(zone) = scenario.zone.as_mut() {
        zone.resources = (0..n).map(|i| dataplane(i, &address(i))).collect();
    }
    Ok(scenario)
}

/// The zone's Dataplane responses among `events`, as the global got them.
fn dataplane_responses(events: &[TimelineEvent]) -> impl Iterator<Item = &RecordedResponse> {
    events.iter().filter_map(|event| match &event.kind {
        EventKind::Server(e) => match &**e {
            ServerEvent::KdsResponseReceived { response, .. }
                if response.type_url == types::DATAPLANE =>
            {
                Some(response)
            }
            _ => None,
        },
        _ => None,
    })
}

/// What one run measured, or why it measured nothing.
pub fn sample(outcome: &RunOutcome, n: usize) -> Result<KdsSample, String> {
    if outcome.verdict != Verdict::Pass {
        return Err(format!(
            "{}: {}",
            outcome.verdict.label(),
            outcome.verdict.detail().lines().next().unwrap_or_default()
        ));
    }
    let changed_at = outcome
        .events
        .iter()
        .position(
            |e| matches!(&e.kind, EventKind::Step(text) if text.starts_with("zone: set resources")),
        )
        .ok_or("no change step on the timeline")?;
    let full = dataplane_responses(&outcome.events[..changed_at])
        .max_by_key(|r| r.resource_names.len())
        .ok_or("no Dataplane response before the change")?;
    if full.resource_names.len() != n {
        return Err(format!(
            "the zone never sent its {n} Dataplanes in one response (at most {})",
            full.resource_names.len()
        ));
    }
    let change = dataplane_responses(&outcome.events[changed_at..])
        .next()
        .ok_or("no Dataplane response after the change")?;
    let acked_at = outcome.events[changed_at..]
        .iter()
        .find(|e| match &e.kind {
            EventKind::Server(s) => matches!(&**s, ServerEvent::KdsRequestSent { request, .. }
                if request.type_url == types::DATAPLANE
                    && request.kind == RequestKind::Ack
                    && request.response_nonce == change.nonce),
            _ => false,
        })
        .map(|e| e.at)
        .ok_or("the global never ACKed the change")?;
    Ok(KdsSample {
        full_sync: (full.resource_names.len(), full.encoded_len),
        change: (change.resource_names.len(), change.encoded_len),
        to_ack: acked_at.saturating_sub(outcome.events[changed_at].at),
    })
}

type ZoneFactory = Box<dyn Fn() -> Box<dyn ClientUnderTest> + Send + Sync>;

/// How to make the zone: kuma-cp is installed first if need be, and does
/// not have its store read (see [`KumaZoneClient::without_store_polling`]).
fn factory(zone: BenchZone) -> Result<ZoneFactory, KdsBenchError> {
    match zone {
        BenchZone::Reference => Ok(Box::new(|| {
            Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
        })),
        BenchZone::Kuma => {
            let dir = repo_root()
                .ok_or(KdsBenchError::NoRepoRoot)?
                .join(ADAPTERS_DIR)
                .join(KUMA_ADAPTER);
            let manifest = AdapterManifest::load(&dir)?;
            let root = manifest.root_dir(&dir)?;
            ProcessClient::new(&root, manifest.clone()).ensure_installed()?;
            Ok(Box::new(move || {
                Box::new(KumaZoneClient::new(&root, manifest.clone()).without_store_polling())
                    as Box<dyn ClientUnderTest>
            }))
        }
    }
}

/// The 1, 5 and 15 minute load averages (Linux), said beside the times:
/// on a busy machine a zone waits for a core.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One zone's table row from its samples.
fn row(zone: BenchZone, samples: &[KdsSample], runs: usize) -> String {
    let Some(first) = samples.first() else {
        return format!("| {} | no measurement (see above) | | | |", zone.label());
    };
    let mut times: Vec<Duration> = samples.iter().map(|s| s.to_ack).collect();
    times.sort();
    let median = times[times.len() / 2];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "| {} | {} | {} | {} ({} resources) | {:.1} ms / {:.1} ms ({} of {runs} runs) |",
        zone.label(),
        first.change.0,
        thousands(first.change.1),
        thousands(first.full_sync.1),
        thousands(first.full_sync.0),
        ms(times[0]),
        ms(median),
        samples.len(),
    )
}

/// Runs the benchmark on each zone, printing the table; Ok(false) if a
/// run measured nothing.
pub fn bench_kds(options: &KdsBenchOptions) -> Result<bool, KdsBenchError> {
    let scenario = scenario(options.dataplanes)?;
    let runs = options.runs.max(1);
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this harness is a debug build: the fake global's decoding of the \
             zone's responses is inside every measurement; use cargo run --release"
        );
    }
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for &zone in &options.zones {
        eprintln!("bench-kds: preparing {}", zone.label());
        let make = factory(zone)?;
        let load_before = load_average();
        let mut samples = Vec::new();
        for run in 1..=runs {
            eprintln!("bench-kds: {}, run {run}/{runs}", zone.label());
            let outcome = run_scenario_in(&scenario, make.as_ref(), Some(RunMode::RealTime));
            match sample(&outcome, options.dataplanes) {
                Ok(s) => samples.push(s),
                Err(why) => failures.push(format!("{}: {why}", zone.label())),
            }
        }
        rows.push((
            row(zone, &samples, runs),
            format!(
                "{}: load average {load_before} before, {} after",
                zone.label(),
                load_average()
            ),
        ));
    }
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "ZoneToGlobalSync, {} Dataplanes, 1 changed ({runs} runs per zone; the fake global's \
         clock, real TCP; {cpus} CPUs):\n",
        thousands(options.dataplanes),
    );
    println!(
        "| zone | change: resources | change: bytes | full sync: bytes | change to ACK (min / median) |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (row, _) in &rows {
        println!("{row}");
    }
    println!(
        "| floor: one Dataplane as a delta Resource | 1 | {} | | |",
        floor_bytes(options.dataplanes)
    );
    println!();
    for (_, load) in &rows {
        println!("{load}");
    }
    for why in &failures {
        eprintln!("bench-kds: a run measured nothing: {why}");
    }
    Ok(failures.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_loads_with_its_dataplanes_and_a_bad_size_is_refused() {
        let s = scenario(10).expect("loads");
        assert_eq!(s.zone.as_ref().map(|z| z.resources.len()), Some(10));
        assert!(matches!(scenario(0), Err(KdsBenchError::Size(0))));
        assert!(floor_bytes(10_000) > 100);
        assert_eq!(thousands(3_359_918), "3,359,918");
        assert_eq!(thousands(352), "352");
    }
}
