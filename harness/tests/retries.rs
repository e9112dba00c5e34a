//! Real-time runs tried again: a run that fails and then passes is FLAKY
//! (and does not fail the gate), with its failed try kept; one that fails
//! every try is FAIL, with its earlier tries kept; a virtual-time run is
//! never tried again (it would fail the same way).
//!
//! The client is the reference client, made to run on real time (it
//! claims no virtual time, as an external client), and broken for its
//! first N instances: it drops every watch, so an expected watcher event
//! never comes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use xds_client_under_test::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, PendingRpc, ReferenceClient,
    RpcOutcome, RpcRequest,
};
use xds_conformance::expectations::Expectations;
use xds_conformance::runner::RunMode;
use xds_conformance::scenario::{Scenario, load_str};
use xds_conformance::schedule::{no_progress, run_all};
use xds_conformance_reports::Verdict;
use xds_vocabulary::{ResourceType, XdsError};

/// The reference client on real time; `drop_watches` breaks it.
struct Tried {
    inner: ReferenceClient,
    drop_watches: bool,
    real_time: bool,
}

#[async_trait::async_trait]
impl ClientUnderTest for Tried {
    fn name(&self) -> &str {
        "tried"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            virtual_time: !self.real_time,
            ..self.inner.capabilities()
        }
    }
    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        self.inner.start(env).await
    }
    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        if self.drop_watches {
            return Ok(());
        }
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
        self.inner.csds().await
    }
    async fn csds_request(
        &mut self,
        request: ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, XdsError>, ClientError> {
        self.inner.csds_request(request).await
    }
    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}

fn scenario() -> Scenario {
    load_str(
        "retried.yaml",
        "description: d\nservers:\n  main:\n    resources:\n      - cluster: {name: c1}\n\
         steps:\n  - watch: {type: CDS, name: c1}\n  \
         - expect: {watcher: {type: CDS, name: c1, event: changed}, within: 2s}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Plays the scenario with `retries`, the first `broken` clients broken;
/// returns the one run's outcome and how many clients were made.
fn play(
    retries: u32,
    broken: usize,
    real_time: bool,
) -> (xds_conformance::runner::RunOutcome, usize) {
    let made = Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    let factory = move || {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        Box::new(Tried {
            inner: ReferenceClient::new(),
            drop_watches: n < broken,
            real_time,
        }) as Box<dyn ClientUnderTest>
    };
    let scenario = scenario();
    let mut runs = run_all(
        &[&scenario],
        &factory,
        1,
        retries,
        "tried",
        &Expectations::default(),
        &no_progress,
    );
    let (_, outcome) = runs.remove(0).remove(0);
    (outcome, made.load(Ordering::SeqCst))
}

#[test]
fn a_real_time_run_that_fails_then_passes_is_flaky_with_its_failed_try() {
    let (outcome, made) = play(2, 1, true);
    assert_eq!(outcome.mode, RunMode::RealTime);
    let Verdict::Flaky { message, passed_on } = &outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert_eq!((*passed_on, made), (2, 2), "passed on the first retry");
    assert!(message.contains("watcher"), "{message}");
    assert!(!outcome.verdict.is_failure());
    assert_eq!(outcome.failed_tries.len(), 1);
    let failed = &outcome.failed_tries[0];
    assert!(matches!(failed.verdict, Verdict::Fail { .. }));
    // The failed try's own timeline: no watch reached the server.
    assert!(
        !failed.timeline.contains("DiscoveryRequest CDS"),
        "{}",
        failed.timeline
    );
    // The reported run is the passing one.
    assert!(
        outcome.timeline.contains("DiscoveryRequest CDS"),
        "{}",
        outcome.timeline
    );
}

#[test]
fn a_run_that_fails_every_try_fails_with_its_earlier_tries_kept() {
    let (outcome, made) = play(1, usize::MAX, true);
    assert!(
        matches!(outcome.verdict, Verdict::Fail { .. }),
        "{:?}",
        outcome.verdict
    );
    assert_eq!(made, 2, "one try and one retry");
    assert_eq!(
        outcome.failed_tries.len(),
        1,
        "the try before the reported one"
    );
}

#[test]
fn no_retries_and_virtual_time_are_never_tried_again() {
    let (outcome, made) = play(0, 1, true);
    assert!(matches!(outcome.verdict, Verdict::Fail { .. }));
    assert_eq!((made, outcome.failed_tries.len()), (1, 0));
    let (outcome, made) = play(2, 1, false);
    assert_eq!(outcome.mode, RunMode::Virtual);
    assert!(matches!(outcome.verdict, Verdict::Fail { .. }));
    assert_eq!((made, outcome.failed_tries.len()), (1, 0));
}
