//! The scenario suite against the third-party clients: gRPC C-core through
//! grpcio, @grpc/grpc-js-xds, grpc-go, grpc-java, Envoy, a Kuma zone
//! (kuma-cp, on the KDS scenarios; n/a on the others) (real processes,
//! installed into `.peers/` on first use by their adapters' install
//! scripts), and
//! crates.io's grpc-rust `xds-client` in-process; with the reference
//! client beside them, this is the conformance matrix, and the test leaves
//! it in `reports-out/matrix/` (as `xds-conformance matrix` does), so CI
//! runs every real-client scenario once.
//!
//! Every scenario must pass, or fail as the scenario records for
//! that client (`known_failures`, `any_of` divergences), or be not
//! applicable. External clients' normalised timelines are compared with a
//! snapshot per client; grpc-rust's timelines are not deterministic (it
//! orders names by hash and draws backoff jitter from an unseeded RNG), and
//! Envoy's carry what its admin API showed, read by polling every 100 ms
//! (which poll first sees a change depends on timing), so only their
//! verdicts are checked (Envoy's wire traffic is checked by the
//! expectations). Nor are the timelines of watches a client without a
//! watch API plays through projected channels (grpcio,
//! `xds_conformance::projection`): each watch is a channel of its own, so
//! which of them reaches the wire first, and how the client batches their
//! names and the endpoint subscriptions they induce, depends on timing.
//!
//! The clients run side by side and each runs several scenarios at once
//! (`xds_conformance::schedule`): real clients mostly wait.

use std::panic::{AssertUnwindSafe, catch_unwind};

use xds_conformance::matrix::{run_matrix, write_reports};
use xds_conformance::runner::RunOutcome;
use xds_conformance::scenario::Scenario;
use xds_conformance::suite::{
    Selection, SuiteVersion, TestedClient, default_matrix_clients, discover, manifest_dir,
};
use xds_conformance_reports::Verdict;

/// Clients whose normalised timelines are compared with snapshots.
const SNAPSHOTS: &[&str] = &["grpcio", "grpc-js"];

#[test]
fn matrix() {
    let crate_dir = manifest_dir(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir
        .parent()
        .expect("the harness crate is in the workspace");
    let files = discover(&[root.join("scenarios")]).expect("scenarios/ is readable");
    // Every client of the default matrix: a new adapter's folder is a new
    // column here too.
    let clients: Vec<TestedClient> = default_matrix_clients()
        .iter()
        .map(|name| TestedClient::new(name, None).unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect();
    let run = run_matrix(
        &files,
        &Selection::default(),
        &clients,
        // Each client its own jobs (its adapter says what one of its runs
        // costs the machine).
        None,
        None,
        &xds_conformance::schedule::no_progress,
    );
    let report_dir = root.join("reports-out/matrix");
    std::fs::create_dir_all(&report_dir).expect("reports-out/matrix can be created");
    write_reports(&run.record(&SuiteVersion::of(&files), None), &report_dir)
        .expect("the matrix can be written");

    let mut failures = Vec::new();
    for (client, outcomes) in clients.iter().zip(&run.outcomes) {
        let caps = (client.factory)().capabilities();
        for (scenario, outcome) in outcomes {
            let projected = caps.projected_watch
                && !caps.watch
                && matches!(xds_conformance::projection::plan(scenario), Ok(Some(_)));
            if let Err(failure) = check_peer(&client.name, scenario, outcome, projected) {
                failures.push(failure);
            }
        }
    }
    let counts: Vec<String> = run
        .reports
        .iter()
        .map(|r| format!("{}: {}", r.client, r.counts_line()))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of the matrix's cells failed (matrix in {}):\n{}\n\n{}",
        failures.len(),
        report_dir.display(),
        counts.join("\n"),
        failures.join("\n\n")
    );
}

fn check_peer(
    client: &str,
    scenario: &Scenario,
    outcome: &RunOutcome,
    projected: bool,
) -> Result<(), String> {
    match &outcome.verdict {
        // A known failure's timeline stops wherever the client first left
        // the scenario, which for a client with its own jitter varies from
        // run to run: the verdict and its recorded reason are what count.
        Verdict::NotApplicable { .. } | Verdict::KnownFailure { .. } => return Ok(()),
        Verdict::Pass | Verdict::Divergent { .. } => {}
        // Passed when tried again: the gate holds; said, so that CI logs
        // count them, and the passing try's snapshot is still compared.
        Verdict::Flaky { message, passed_on } => eprintln!(
            "flaky: {} on {client} passed on try {passed_on}; it first failed with: {}",
            scenario.name,
            message.lines().next().unwrap_or_default()
        ),
        Verdict::Fail { message }
        | Verdict::Error { message }
        | Verdict::Interrupted { message } => {
            return Err(format!(
                "--- {} on {client}: {message}\n\ntimeline:\n{}",
                scenario.name, outcome.timeline
            ));
        }
    }
    if SNAPSHOTS.contains(&client)
        && !projected
        && scenario.snapshot
        && !scenario.no_snapshot_for.contains_key(client)
    {
        let name = format!("{client}__{}", scenario.name.replace('/', "__"));
        // One test checks every cell: a mismatch is collected, not the
        // end of the test (insta still writes its `.snap.new`).
        catch_unwind(AssertUnwindSafe(|| {
            insta::with_settings!({
                description => format!("{} on {client} (normalised: see timeline::render_normalized)", scenario.name),
                omit_expression => true,
                prepend_module_to_snapshot => false,
                snapshot_path => "snapshots/peers",
            }, {
                insta::assert_snapshot!(name.as_str(), outcome.snapshot());
            });
        }))
        .map_err(|_| {
            format!(
                "--- {} on {client}: the normalised timeline differs from snapshots/peers/{name}.snap (see above; `cargo insta review`)",
                scenario.name
            )
        })?;
    }
    Ok(())
}
