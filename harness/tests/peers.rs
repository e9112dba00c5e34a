//! The scenario suite against the third-party clients: gRPC C-core through
//! grpcio, @grpc/grpc-js-xds, Envoy (real processes, installed into
//! `.peers/` on first use by their adapters' install scripts), and
//! crates.io's grpc-rust `xds-client` in-process.
//!
//! Every scenario must pass, or fail as the scenario records for
//! that client (`known_failures`, `any_of` divergences), or be not
//! applicable. External clients' normalised timelines are compared with a
//! snapshot per client; grpc-rust's timelines are not deterministic (it
//! orders names by hash and draws backoff jitter from an unseeded RNG), so
//! only its verdicts are checked.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use rstest::rstest;
use xds_conformance::differential::run_variants;
use xds_conformance::runner::RunOutcome;
use xds_conformance::scenario::{Scenario, load_file};
use xds_conformance::suite::{client_factory, in_this_checkout};
use xds_conformance_reports::Verdict;

/// External clients run on real time: one scenario at a time, so their
/// timing windows are not squeezed by each other, and installs never race.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn run_peer(client: &str, path: PathBuf, snapshot: bool) {
    let path = in_this_checkout(&path, env!("CARGO_MANIFEST_DIR"));
    let scenario = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let _one_at_a_time = serial();
    let factory = client_factory(client).unwrap_or_else(|e| panic!("{client}: {e}"));
    for (run, outcome) in run_variants(&scenario, factory.as_ref()) {
        check_peer(client, &run, &outcome, snapshot);
    }
}

fn check_peer(client: &str, scenario: &Scenario, outcome: &RunOutcome, snapshot: bool) {
    match &outcome.verdict {
        // A known failure's timeline stops wherever the client first left
        // the scenario, which for a client with its own jitter varies from
        // run to run: the verdict and its recorded reason are what count.
        Verdict::NotApplicable { .. } | Verdict::KnownFailure { .. } => return,
        Verdict::Pass | Verdict::Divergent { .. } => {}
        Verdict::Fail { message } | Verdict::Error { message } => {
            panic!(
                "{} on {client}: {message}\n\ntimeline:\n{}",
                scenario.name, outcome.timeline
            )
        }
    }
    if snapshot && scenario.snapshot && !scenario.no_snapshot_for.contains_key(client) {
        let name = format!("{client}__{}", scenario.name.replace('/', "__"));
        insta::with_settings!({
            description => format!("{} on {client} (normalised: see timeline::render_normalized)", scenario.name),
            omit_expression => true,
            prepend_module_to_snapshot => false,
            snapshot_path => "snapshots/peers",
        }, {
            insta::assert_snapshot!(name, &outcome.snapshot);
        });
    }
}

#[rstest]
fn grpcio(#[files("../scenarios/**/*.yaml")] path: PathBuf) {
    run_peer("grpcio", path, true);
}

#[rstest]
fn grpc_js(#[files("../scenarios/**/*.yaml")] path: PathBuf) {
    run_peer("grpc-js", path, true);
}

/// Envoy's timelines carry what its admin API showed, read by polling
/// every 100 ms: which poll first sees a change depends on timing, so only
/// its verdicts are checked (its wire traffic is checked by the
/// expectations).
#[rstest]
fn envoy(#[files("../scenarios/**/*.yaml")] path: PathBuf) {
    run_peer("envoy", path, false);
}

#[rstest]
fn grpc_rust(#[files("../scenarios/**/*.yaml")] path: PathBuf) {
    run_peer("grpc-rust", path, false);
}
