//! `csds` checks read off gRFC A78's resource gauge (`projection::
//! csds_counts`), end to end through the runner, on the reference client
//! with its CSDS hidden and turned into the gauge A78 defines (per client
//! scope, type and cache state; no names, no versions):
//!
//! - every suite scenario the gauge can stand in for passes on it, as it
//!   does through CSDS;
//! - each rule of the projection (a cache state stands for a CSDS status;
//!   nothing counted is ABSENT) has a broken gauge, mislabelling that one
//!   state, which fails a scenario checking it;
//! - a gauge that cannot tell the checked resource apart makes the run not
//!   applicable, never a pass.

use std::collections::BTreeMap;
use std::sync::Arc;

use envoy_types::pb::envoy::admin::v3::ClientResourceStatus;
use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use xds_client_under_test::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, PendingRpc, ReferenceClient,
    ResourceCountKey, ResourceCounts, RpcOutcome, RpcRequest,
};
use xds_conformance::differential::run_variants;
use xds_conformance::projection::csds_counts::csds_matchers;
use xds_conformance::runner::{not_applicable, run_scenario};
use xds_conformance::scenario::{Scenario, load_file, load_str};
use xds_conformance::suite::{discover, manifest_dir};
use xds_conformance_reports::Verdict;
use xds_vocabulary::{ResourceType, XdsError};

/// What the gauge does to the client's true cache states.
type Gauge = Arc<dyn Fn(ResourceCounts) -> ResourceCounts + Send + Sync>;

/// The reference client, seen only through an A78 resource gauge.
struct CountsOnly {
    inner: ReferenceClient,
    gauge: Gauge,
}

fn counts_only(gauge: Gauge) -> Box<dyn ClientUnderTest> {
    Box::new(CountsOnly {
        inner: ReferenceClient::new(),
        gauge,
    })
}

fn honest() -> Gauge {
    Arc::new(|counts| counts)
}

/// A gauge that reports cache state `from` as `to`.
fn mislabelling(from: &'static str, to: &'static str) -> Gauge {
    Arc::new(move |counts: ResourceCounts| {
        let mut out = ResourceCounts::new();
        for (mut key, count) in counts {
            if key.cache_state == from {
                key.cache_state = to.to_string();
            }
            *out.entry(key).or_default() += count;
        }
        out
    })
}

/// A78's cache state for a CSDS entry (gRFC A78: `requested`,
/// `does_not_exist`, `acked`, `nacked`, `nacked_but_cached`); A88's
/// statuses, which A78 has no state for, keep a name of their own.
fn cache_state(status: i32, cached: bool) -> &'static str {
    match ClientResourceStatus::try_from(status) {
        Ok(ClientResourceStatus::Requested) => "requested",
        Ok(ClientResourceStatus::DoesNotExist) => "does_not_exist",
        Ok(ClientResourceStatus::Acked) => "acked",
        Ok(ClientResourceStatus::Nacked) if cached => "nacked_but_cached",
        Ok(ClientResourceStatus::Nacked) => "nacked",
        Ok(ClientResourceStatus::ReceivedError) => "received_error",
        Ok(ClientResourceStatus::Timeout) => "timeout",
        _ => "unknown",
    }
}

#[async_trait::async_trait]
impl ClientUnderTest for CountsOnly {
    fn name(&self) -> &str {
        "counts-only"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            csds: false,
            csds_service: false,
            resource_counts: true,
            ..self.inner.capabilities()
        }
    }
    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        self.inner.start(env).await
    }
    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        self.inner.watch(resource_type, name).await
    }
    async fn watch_in_callback(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        of: (ResourceType, &str),
    ) -> Result<(), ClientError> {
        self.inner.watch_in_callback(resource_type, name, of).await
    }
    async fn hold_reads(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        hold: bool,
    ) -> Result<(), ClientError> {
        self.inner.hold_reads(resource_type, name, hold).await
    }
    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        self.inner.cancel_watch(resource_type, name).await
    }
    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        self.inner.dial(target).await
    }
    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        self.inner.serve(address).await
    }
    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.inner.rpc(request).await
    }
    async fn start_rpc(&mut self, request: &RpcRequest) -> Result<PendingRpc, ClientError> {
        self.inner.start_rpc(request).await
    }
    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        Err(ClientError::Unsupported(
            "csds (hidden: the gauge stands in)".into(),
        ))
    }
    async fn resource_counts(&mut self) -> Result<ResourceCounts, ClientError> {
        let dump = self.inner.csds().await?;
        let mut counts: ResourceCounts = BTreeMap::new();
        for config in dump.config {
            for entry in config.generic_xds_configs {
                let key = ResourceCountKey {
                    target: config.client_scope.clone(),
                    authority: String::new(),
                    type_url: entry.type_url.clone(),
                    cache_state: cache_state(entry.client_status, entry.xds_config.is_some())
                        .to_string(),
                };
                *counts.entry(key).or_default() += 1;
            }
        }
        Ok((self.gauge)(counts))
    }
    async fn csds_request(
        &mut self,
        request: ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, XdsError>, ClientError> {
        self.inner.csds_request(request).await
    }
    async fn zone_set(
        &mut self,
        resources: Vec<xds_vocabulary::kds::KdsResource>,
    ) -> Result<(), xds_client_under_test::ClientError> {
        self.inner.zone_set(resources).await
    }

    async fn zone_remove(
        &mut self,
        kuma_type: &str,
        names: &[xds_vocabulary::kds::KdsName],
    ) -> Result<(), xds_client_under_test::ClientError> {
        self.inner.zone_remove(kuma_type, names).await
    }

    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}

/// The suite's scenarios that check CSDS and that the gauge can stand in
/// for (by what the scenario says; a run may still find it cannot).
fn projectable() -> Vec<Scenario> {
    let caps = counts_only(honest()).capabilities();
    let root = manifest_dir(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    discover(&[root])
        .expect("the suite")
        .iter()
        .map(|path| load_file(path).unwrap_or_else(|e| panic!("{e}")))
        .filter(|s| !csds_matchers(s).is_empty() && not_applicable(s, &caps).is_none())
        .collect()
}

/// Whether any `csds` check of the scenario expects `status` (by name).
fn checks_status(scenario: &Scenario, status: &str) -> bool {
    csds_matchers(scenario).iter().any(|m| {
        m.counts_projection()
            .is_ok_and(|c| xds_conformance::timeline::csds_status_name(c.status) == status)
    })
}

#[test]
fn the_gauge_stands_in_for_csds_and_each_of_its_rules_can_fail() {
    let suite = projectable();
    assert!(suite.len() >= 30, "only {} scenarios project", suite.len());
    let mut passed = Vec::new();
    for scenario in &suite {
        for (run, outcome) in run_variants(scenario, &|| counts_only(honest())) {
            match &outcome.verdict {
                Verdict::Pass | Verdict::Divergent { .. } => passed.push(run),
                // What the gauge could not tell apart in this run.
                Verdict::NotApplicable { reason } => {
                    assert!(reason.contains("A78's resource counts"), "{reason}")
                }
                other => panic!("{}: {other:?}\n{}", run.name, outcome.timeline),
            }
        }
    }
    eprintln!(
        "{} runs of {} scenarios passed through the gauge",
        passed.len(),
        suite.len()
    );
    assert!(passed.len() >= 30, "only {} runs passed", passed.len());
    // No suite scenario checks REQUESTED alone: one that does.
    let requested = load_str(
        "requested.yaml",
        "description: d\nservers: {main: {}}\nsteps:\n  - watch: {type: CDS, name: c1}\n  \
         - expect: {csds: {type: CDS, name: c1, status: REQUESTED}}\n",
    )
    .expect("loads");
    let outcome = run_scenario(&requested, &|| counts_only(honest()));
    assert_eq!(outcome.verdict, Verdict::Pass, "{}", outcome.timeline);
    passed.push(requested);

    // Each rule: the state that stands for a status, mislabelled, fails a
    // run that checks that status (and passed with the honest gauge).
    for (status, from, to) in [
        ("REQUESTED", "requested", "acked"),
        ("ACKED", "acked", "requested"),
        ("NACKED", "nacked_but_cached", "acked"),
        ("DOES_NOT_EXIST", "does_not_exist", "requested"),
    ] {
        let checking: Vec<&Scenario> = passed
            .iter()
            .filter(|run| checks_status(run, status))
            .collect();
        assert!(!checking.is_empty(), "no passing run checks {status}");
        let caught = checking.iter().find_map(|run| {
            let outcome = run_scenario(run, &|| counts_only(mislabelling(from, to)));
            match outcome.verdict {
                Verdict::Fail { message } if message.contains("CSDS") => Some(message),
                _ => None,
            }
        });
        assert!(
            caught.is_some(),
            "{from} reported as {to}: no run checking {status} failed"
        );
    }
}

#[test]
fn nothing_counted_is_absent_and_a_stale_bucket_is_caught() {
    let scenario = load_str(
        "absent.yaml",
        "description: d\nservers: {main: {resources: [{cluster: {name: c1}}]}}\nsteps:\n  \
         - expect: {csds: {type: CDS, name: c1, status: ABSENT}}\n  \
         - watch: {type: CDS, name: c1}\n  \
         - expect: {csds: {type: CDS, name: c1, status: ACKED}}\n  \
         - cancel_watch: {type: CDS, name: c1}\n  \
         - expect: {csds: {type: CDS, name: c1, status: ABSENT}}\n",
    )
    .expect("loads");
    let outcome = run_scenario(&scenario, &|| counts_only(honest()));
    assert_eq!(outcome.verdict, Verdict::Pass, "{}", outcome.timeline);
    assert!(
        outcome.timeline.contains("A78 resources CDS acked: 0 -> 1"),
        "{}",
        outcome.timeline
    );
    // A gauge that never lets a bucket go back to 0.
    let stale: Gauge = Arc::new(|counts: ResourceCounts| {
        let mut counts = counts;
        counts
            .entry(ResourceCountKey {
                target: String::new(),
                authority: String::new(),
                type_url: ResourceType::Cluster.type_url().to_string(),
                cache_state: "acked".into(),
            })
            .or_insert(1);
        counts
    });
    let Verdict::Fail { message } = run_scenario(&scenario, &|| counts_only(stale.clone())).verdict
    else {
        panic!("a stale bucket passed")
    };
    assert!(message.contains("absent.yaml:4:5:"), "{message}");
}

#[test]
fn what_the_gauge_cannot_tell_apart_is_not_applicable() {
    // Two Clusters counted where the scenario watches one: the second is
    // the client's (here, the gauge's) and not the scenario's to judge.
    let two: Gauge = Arc::new(|counts: ResourceCounts| {
        counts
            .into_iter()
            .map(|(key, count)| (key, count * 2))
            .collect()
    });
    let scenario = load_str(
        "two.yaml",
        "description: d\nservers: {main: {resources: [{cluster: {name: c1}}]}}\nsteps:\n  \
         - watch: {type: CDS, name: c1}\n  \
         - expect: {csds: {type: CDS, name: c1, status: ACKED}}\n",
    )
    .expect("loads");
    let Verdict::NotApplicable { reason } =
        run_scenario(&scenario, &|| counts_only(two.clone())).verdict
    else {
        panic!("an inexact gauge was judged")
    };
    assert!(reason.contains("show 2 CDS resources"), "{reason}");
    assert!(reason.contains("two.yaml:5:5"), "{reason}");

    // A channel's config names a second Cluster: its request says so.
    let scenario = load_str(
        "chain.yaml",
        "description: d\nservers:\n  main:\n    resources:\n      \
         - listener: {name: svc, weighted: {c1: 50, c2: 50}}\n      \
         - cluster: {name: c1}\n      - cluster: {name: c2}\n\
         steps:\n  - dial: xds:///svc\n  - expect: {csds: {type: CDS, name: c1, status: ACKED}}\n  \
         - expect_none: {csds: {type: CDS, name: c1, status: NACKED}, for: 1s}\n",
    )
    .expect("loads");
    let Verdict::NotApplicable { reason } =
        run_scenario(&scenario, &|| counts_only(honest())).verdict
    else {
        panic!("a gauge holding c1 and c2 was judged")
    };
    assert!(reason.contains("besides c1"), "{reason}");
}
