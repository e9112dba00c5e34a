//! The command line's contract with CI: exit codes that tell a failed
//! scenario (1) from broken input (2), and an empty selection is broken
//! input, not a green run.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    let crate_dir = xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().expect("repository root").to_path_buf()
}

/// `xds-conformance run <args>`: its exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let reports = std::env::temp_dir().join(format!(
        "xds-cli-{}-{}",
        std::process::id(),
        args.join("_").replace('/', "_")
    ));
    let output = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .arg("run")
        .args(args)
        .arg("--report-dir")
        .arg(&reports)
        .current_dir(root())
        .output()
        .expect("run the harness");
    let _ = std::fs::remove_dir_all(&reports);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn passing_scenarios_exit_0() {
    let (code, err) = run(&["scenarios/a46/wrong-type-url.yaml"]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_failing_scenario_exits_1() {
    let (code, err) =
        run(&["harness/tests/hostile/outcome-expectation-never-met-ends-in-virtual-time.yaml"]);
    assert_eq!(code, Some(1), "{err}");
}

#[test]
fn a_file_that_does_not_load_exits_2_after_running_the_rest() {
    let (code, err) = run(&[
        "scenarios/a46/wrong-type-url.yaml",
        "harness/tests/broken/bad-code.yaml",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1 scenario file(s) did not load"), "{err}");
}

#[test]
fn a_filter_that_matches_nothing_exits_2() {
    let (code, err) = run(&["scenarios/a46", "--filter", "no-such-scenario"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no scenario selected") && err.contains("none matching --filter"),
        "{err}"
    );
}
