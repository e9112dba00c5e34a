//! The harness's peak memory under a client that floods it: for each
//! flood (valid 1 KB `log` events, valid 1 KB `watcher` events, lines of
//! a megabyte, a flooded stderr; the fixture adapters of
//! `harness/tests/hostile/adapters/flood*`), one run of the scenario the
//! test of floods plays (`tests/interrupts.rs`: the adapter's flood past
//! its bounds, or the watcher flood to the timeline's limit), played as
//! `run` plays it (expectations, retries,
//! reports written), in a fresh process each: its verdict, its wall time
//! and the process's peak RSS (`VmHWM`).
//!
//! ```sh
//! cargo run --release -p xds-conformance --example flood_peak
//! ```
use std::path::{Path, PathBuf};
use std::time::Instant;

use xds_conformance::matrix::run_files;
use xds_conformance::suite::{Selection, TestedClient};

/// Each flood: its kind, its adapter, its scenario (beside `adapter.py`).
const KINDS: &[(&str, &str, &str)] = &[
    ("log", "flood", "past-its-bounds.yaml"),
    ("watcher", "flood-watcher", "watcher-flood.yaml"),
    ("line", "flood-line", "past-its-bounds.yaml"),
    ("stderr", "flood-stderr", "past-its-bounds.yaml"),
];

fn crate_dir() -> PathBuf {
    xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"))
}

/// `VmHWM` of this process, in MiB.
fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// One flood in this process: prints `kind|verdict|seconds|peak MiB`.
fn measure(kind: &str, adapter: &str, scenario: &str) {
    let scratch = tempfile::tempdir().expect("a temporary folder");
    let file = scratch.path().join("flood.yaml");
    let fixtures = crate_dir().join("tests/hostile/adapters");
    std::fs::copy(fixtures.join("flood").join(scenario), &file).expect("copy the scenario");
    let adapter = fixtures.join(adapter);
    let client = TestedClient::new(&adapter.display().to_string(), None).expect("the fixture");
    let started = Instant::now();
    let report = run_files(
        &[file],
        &Selection::default(),
        &client,
        Some(1),
        None,
        &xds_conformance::schedule::no_progress,
    );
    xds_conformance_reports::write_all(&report, &scratch.path().join("reports"))
        .expect("reports written");
    let verdict = report
        .results
        .first()
        .map(|r| {
            let first = r.verdict.detail().lines().next().unwrap_or_default();
            format!(
                "{} ({})",
                r.verdict.label(),
                xds_vocabulary::cut::cut(first, 70)
            )
        })
        .unwrap_or_default();
    println!(
        "{kind}|{verdict}|{:.1}|{:.0}",
        started.elapsed().as_secs_f64(),
        peak_mib()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, kind] = args.as_slice()
        && flag == "--one"
        && let Some((kind, adapter, scenario)) = KINDS.iter().find(|(k, _, _)| k == kind)
    {
        measure(kind, adapter, scenario);
        return;
    }
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; measure with --release");
    }
    println!("| flood | verdict | wall, s | peak RSS, MiB |");
    println!("|---|---|---:|---:|");
    let me = std::env::current_exe().expect("this program");
    for (kind, _, _) in KINDS {
        let output = std::process::Command::new(&me)
            .args(["--one", kind])
            .current_dir(Path::new(&crate_dir()).parent().unwrap_or(Path::new(".")))
            .output()
            .expect("run one flood");
        let line = String::from_utf8_lossy(&output.stdout);
        match line.trim().split('|').collect::<Vec<_>>().as_slice() {
            [kind, verdict, seconds, peak] => {
                println!("| {kind} | {verdict} | {seconds} | {peak} |")
            }
            _ => println!(
                "| {kind} | did not report: {} | | |",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        }
    }
}
