//! The grpcio adapter's projection of watcher events (C-core trace log
//! lines and CSDS -> `watcher` events, `adapters/grpcio/projection.py`)
//! is Python; its unit tests replay recorded grpcio runs and, for every
//! projection rule, a trace of a broken C-core that the rule must report
//! (`BrokenClients`). They need only the standard library, so they run
//! here, in `cargo test`, with the machine's `python3` (the grpcio
//! adapter's own venv is not needed, nor installed for this).

use std::path::PathBuf;
use std::process::Command;

#[test]
fn grpcio_projection_unit_tests() {
    // This crate in the checkout running now: cargo sets it at run time,
    // and a test binary shared between checkouts (one target directory
    // for several clones) holds another checkout's path compiled in.
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let adapter = crate_dir.join("adapters/grpcio");
    let output = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s"])
        .arg(&adapter)
        .args(["-p", "test_*.py"])
        // No bytecode files left in the checkout.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs (the grpcio adapter needs it too)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "projection.py's unit tests failed:\n{stderr}"
    );
    // unittest reports "Ran N tests": a discovery that found nothing
    // passes too, which must not count.
    let ran: usize = stderr
        .lines()
        .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(ran >= 50, "only {ran} projection tests ran:\n{stderr}");
}
