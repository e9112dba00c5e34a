//! A real kuma-cp v2.14.3 as a Kuma zone under test (the `kuma` driver):
//! started against the run's fake global with ports and a work directory
//! of its own, its KDS streams seen on the global, what it stores read off
//! its REST API, and nothing of it left once the run is over. The scenarios
//! here hold resources a zone reads alike whatever their encoding: the
//! zone's subscriptions, its reconnection backoff, and its answer to a type
//! KDS does not carry.
//!
//! kuma-cp installs itself into `.peers/kuma/` on first use
//! (`client-under-test/adapters/kuma/install.sh`: minutes cold).

use xds_conformance::matrix::run_files;
use xds_conformance::suite::{Selection, TestedClient, manifest_dir};
use xds_conformance_reports::Verdict;

#[test]
fn a_kuma_zone_subscribes_reconnects_and_drops_an_unknown_type_and_leaves_nothing() {
    let root = manifest_dir(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness is in the workspace")
        .to_path_buf();
    let client = TestedClient::new("kuma", None).unwrap_or_else(|e| panic!("{e}"));
    let files: Vec<_> = [
        "subscribes-to-every-consumed-type",
        "unknown-type-drops-the-connection",
        "reconnect-backoff-grows",
    ]
    .iter()
    .map(|f| root.join(format!("scenarios/kds/{f}.yaml")))
    .collect();
    let report = run_files(
        &files,
        &Selection::default(),
        &client,
        Some(3),
        None,
        &xds_conformance::schedule::no_progress,
    );
    assert_eq!(report.results.len(), 3);
    for result in &report.results {
        assert!(
            matches!(result.verdict, Verdict::Pass),
            "{}: {:?}\n{}",
            result.name,
            result.verdict,
            result.verdict.detail()
        );
    }
    // The zone's work directories are gone with it.
    let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("xds-conformance-kuma-{}-", std::process::id())))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}
