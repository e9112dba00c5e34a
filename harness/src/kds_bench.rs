//! `bench-kds`: Kuma's KDS redesign (MADR 040, delta xDS on
//! `ZoneToGlobalSync`) claims a zone with N Dataplanes sends its global
//! only what changed. This measures it: a zone holds N Dataplanes, syncs
//! them once, then one changes; the fake global records the zone's
//! responses and its own ACKs.
//!
//! Reported per zone (the reference zone, in the harness's process on
//! real TCP; Kuma's when it can be installed):
//! - the bytes of the zone's response to the change (its encoded
//!   `DeltaDiscoveryResponse`), against the floor: the bytes of the one
//!   changed resource as a delta `Resource`, what no protocol can beat;
//! - the time from the change to the global's ACK of that response, on
//!   the fake server's clock (the zone noticing, building, sending; the
//!   global decoding and ACKing at once);
//! - the full sync's bytes, what a state-of-the-world protocol would send
//!   for the same change.
//!
//! One generated scenario, played by the real runner like any file; the N
//! Dataplanes are put in its zone in code (a file listing 10,000 would be
//! over the loader's size limit, which is right for hand-written files).

use std::time::Duration;

use envoy_types::pb::envoy::service::discovery::v3::Resource;
use prost::Message;
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance_reports::Verdict;
use xds_fake_server::event::{RecordedResponse, ServerEvent};
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::{KdsName, KdsResource, kuma_resource, pack, spec, types, zone};

use crate::runner::{RunMode, RunOutcome, run_scenario_in};
use crate::scenario::{ScenarioError, load_str};
use crate::timeline::{EventKind, TimelineEvent};

/// The largest N (each Dataplane is ~200 bytes on the wire; the full
/// sync must fit one gRPC message of the fake server's KDS limit).
pub const MAX_DATAPLANES: usize = 100_000;

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
}

#[derive(Clone, Debug, clap::Args)]
pub struct KdsBenchOptions {
    /// Dataplanes the zone holds.
    #[arg(long, default_value_t = 10_000)]
    pub dataplanes: usize,
    /// Runs (min and median are reported).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

/// One run's measurements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KdsSample {
    /// Resources and bytes of the zone's first Dataplane response.
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

/// The floor: the changed Dataplane as one delta `Resource`, labelled as
/// a zone sends it (its name, the zone labels; the version left out).
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
    }
    Resource {
        name: changed.key().to_string(),
        resource: Some(pack(&changed.resource)),
        ..Default::default()
    }
    .encoded_len()
}

/// The scenario: the zone syncs its Dataplanes, then one changes.
pub fn scenario(n: usize) -> Result<crate::scenario::Scenario, KdsBenchError> {
    if n == 0 || n > MAX_DATAPLANES {
        return Err(KdsBenchError::Size(n));
    }
    let i = changed_index(n);
    let yaml = format!(
        "description: bench-kds, {n} Dataplanes, dp-{i} changes\n\
         servers:\n  global: {{}}\n\
         zone: {{}}\n\
         limits: {{ wall_time: 10m }}\n\
         steps:\n\
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

/// What one run measured, or why it measured nothing.
pub fn sample(outcome: &RunOutcome) -> Result<KdsSample, String> {
    if outcome.verdict != Verdict::Pass {
        return Err(format!(
            "{}: {}",
            outcome.verdict.label(),
            outcome.verdict.detail().lines().next().unwrap_or_default()
        ));
    }
    let responses: Vec<(&TimelineEvent, &RecordedResponse)> = outcome
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::Server(e) => match &**e {
                ServerEvent::KdsResponseReceived { response, .. }
                    if response.type_url == types::DATAPLANE =>
                {
                    Some((event, response))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    let [(_, full), (_, change), ..] = responses.as_slice() else {
        return Err(format!(
            "{} Dataplane responses from the zone, not two",
            responses.len()
        ));
    };
    let changed_at = outcome
        .events
        .iter()
        .find(
            |e| matches!(&e.kind, EventKind::Step(text) if text.starts_with("zone: set resources")),
        )
        .map(|e| e.at)
        .ok_or("no change step on the timeline")?;
    let acked_at = outcome
        .events
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
        to_ack: acked_at.saturating_sub(changed_at),
    })
}

/// Runs the benchmark on the reference zone, printing the table; Ok(false)
/// if a run measured nothing.
pub fn bench_kds(options: &KdsBenchOptions) -> Result<bool, KdsBenchError> {
    let scenario = scenario(options.dataplanes)?;
    let mut samples = Vec::new();
    let mut failures = Vec::new();
    for run in 1..=options.runs.max(1) {
        eprintln!(
            "bench-kds: reference zone, run {run}/{}",
            options.runs.max(1)
        );
        let outcome = run_scenario_in(
            &scenario,
            &|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>,
            Some(RunMode::RealTime),
        );
        match sample(&outcome) {
            Ok(s) => samples.push(s),
            Err(why) => failures.push(why),
        }
    }
    let floor = floor_bytes(options.dataplanes);
    println!(
        "ZoneToGlobalSync, {} Dataplanes, 1 changed ({} runs; the fake global's clock, real TCP):\n",
        options.dataplanes,
        options.runs.max(1)
    );
    println!(
        "| zone | change: resources | change: bytes | full sync: bytes | change to ACK (min / median) |"
    );
    println!("|---|---|---|---|---|");
    if let Some(first) = samples.first() {
        let mut times: Vec<Duration> = samples.iter().map(|s| s.to_ack).collect();
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "| reference (in-process, TCP) | {} | {} | {} ({} resources) | {:.1} ms / {:.1} ms |",
            first.change.0,
            first.change.1,
            first.full_sync.1,
            first.full_sync.0,
            times[0].as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3
        );
    }
    println!(
        "| Kuma 2.14.3 | not measured: kuma-cp cannot be installed here (client-under-test/adapters/kuma/README.md) | | | |"
    );
    println!("| floor: one Dataplane as a delta Resource | 1 | {floor} | | |");
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
    }
}
