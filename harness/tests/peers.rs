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
//! snapshot per client (one that differs is played again, up to twice,
//! and passes as a "flaky snapshot" if it then matches: see
//! `snapshot_race`); grpc-rust's timelines are not deterministic (it
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
use xds_conformance::runner::{RunOutcome, run_scenario};
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
            if let Err(failure) = check_peer(client, scenario, outcome, projected) {
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
    tested: &TestedClient,
    scenario: &Scenario,
    outcome: &RunOutcome,
    projected: bool,
) -> Result<(), String> {
    let client = tested.name.as_str();
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
        if snapshot_race(tested, scenario, outcome, &name) {
            return Ok(());
        }
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

/// How many times a real-time run whose normalised timeline differs from
/// its snapshot is played again, as a run that failed is (`--retries`).
const SNAPSHOT_RETRIES: usize = 2;

/// Whether a run that differs from its stored snapshot was a race of the
/// client's own timing: played again, it matched. A client's wire order on
/// real time can turn on its threads and event loop (C-core batching two
/// watches it starts one after the other into one request or two); a
/// change of behaviour differs on every try, and still fails below with
/// insta's diff of the first. Said on stderr, as a flaky verdict is, so
/// that a scenario racing often is found and given its `no_snapshot_for`
/// reason.
fn snapshot_race(
    tested: &TestedClient,
    scenario: &Scenario,
    outcome: &RunOutcome,
    name: &str,
) -> bool {
    // Where insta keeps it: beside this file, in the checkout running now.
    let path = manifest_dir(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/peers")
        .join(format!("{name}.snap"));
    // A snapshot not yet accepted is insta's to report.
    let Some(stored) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| stored_body(&text))
    else {
        return false;
    };
    let matches = |run: &RunOutcome| run.snapshot().trim_end() == stored.trim_end();
    if matches(outcome) {
        return false;
    }
    eprintln!(
        "snapshot differs: {} on {}: playing it again",
        scenario.name, tested.name
    );
    for attempt in 1..=SNAPSHOT_RETRIES {
        let again = run_scenario(scenario, &*tested.factory);
        let held = matches!(again.verdict, Verdict::Pass | Verdict::Divergent { .. });
        if held && matches(&again) {
            eprintln!(
                "flaky snapshot: {} on {} matched its snapshot when played again (try {} of {})",
                scenario.name,
                tested.name,
                attempt + 1,
                SNAPSHOT_RETRIES + 1
            );
            return true;
        }
    }
    false
}

/// The body of an insta snapshot file: what follows its `---` header.
fn stored_body(text: &str) -> Option<String> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(rest[end + "\n---\n".len()..].to_string())
}

/// What `snapshot_race` compares a run with is the body insta compares:
/// everything after the header, the header's own lines left out.
#[test]
fn a_stored_snapshot_is_compared_by_its_body() {
    let text = "---\nsource: harness/tests/peers.rs\ndescription: \"x on y\"\n---\n[ 0]  primary  store CDS\n[ 1]  step     == watch\n";
    assert_eq!(
        stored_body(text).as_deref(),
        Some("[ 0]  primary  store CDS\n[ 1]  step     == watch\n")
    );
    assert_eq!(stored_body("[ 0] no header\n"), None);
    // Every committed peer snapshot has a header to strip.
    let dir = manifest_dir(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/peers");
    for entry in std::fs::read_dir(&dir).expect("the peer snapshots are readable") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("a snapshot");
        let body = stored_body(&text).unwrap_or_else(|| panic!("{}: no header", path.display()));
        assert!(!body.starts_with("source:"), "{}", path.display());
    }
}
