//! `new-adapter`: each language's skeleton, as written, starts, says
//! hello, answers the suite's commands and shuts down cleanly: a scenario
//! that watches runs (and fails: the skeleton hears nothing yet), one that
//! needs a channel is n/a (the manifest claims a watch API only), and no
//! run is an ERROR. What a new implementer gets is seconds from a first
//! run. Go's skeleton is built by its manifest's install (go build); Java's
//! runs as a single source file.

use std::path::Path;
use std::process::Command;

use rstest::rstest;

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
}

const WATCH: &str = "description: a watch the skeleton answers and hears nothing of\n\
    servers: {main: {resources: [{cluster: {name: c1, eds_service_name: e1}}]}}\n\
    snapshot: false\nsteps:\n  - watch: {type: CDS, name: c1}\n  \
    - expect: {watcher: {type: CDS, name: c1, event: changed}, within: 2s}\n";

const DIAL: &str = "description: a channel the skeleton does not claim\n\
    servers: {main: {resources: [{listener: {name: svc, routes_to: c1}}]}}\n\
    snapshot: false\nsteps:\n  - dial: xds:///svc\n  - rpc: {target: xds:///svc}\n  \
    - expect: {rpc: {code: OK}}\n";

#[rstest]
#[case::python("python")]
#[case::node("node")]
#[case::go("go")]
#[case::java("java")]
fn the_skeleton_runs_against_the_suite(#[case] lang: &str) {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("my-{lang}-client");
    let written = harness()
        .args(["new-adapter", &name, "--lang", lang, "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&written.stdout);
    assert!(
        written.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&written.stderr)
    );
    assert!(
        said.contains("next: xds-conformance run scenarios --client"),
        "{said}"
    );
    let folder = dir.path().join(&name);
    for (file, text) in [("watch.yaml", WATCH), ("dial.yaml", DIAL)] {
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    let run = harness()
        .arg("run")
        .args([dir.path().join("watch.yaml"), dir.path().join("dial.yaml")])
        .arg("--client")
        .arg(&folder)
        .arg("--report-dir")
        .arg(dir.path().join("reports"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    let all = format!("{out}\n{err}");
    // The watch ran (the skeleton answered hello and watch) and failed at
    // its expectation, not at the protocol; the dial was not asked.
    assert_eq!(run.status.code(), Some(1), "{all}");
    assert!(
        all.contains("0 pass, 0 divergent, 0 known failure, 1 n/a, 1 FAIL, 0 ERROR"),
        "{all}"
    );
    assert!(
        all.contains("expected watcher event type=CDS name=c1 event=changed"),
        "{all}"
    );
    assert!(!all.contains("broken"), "{all}");
    assert!(
        !all.contains("exit status"),
        "the skeleton exits 0 at shutdown: {all}"
    );
    assert_report_names(&dir.path().join("reports"), &name);
}

/// The reports call the client by the name the skeleton was given.
fn assert_report_names(reports: &Path, name: &str) {
    let junit = std::fs::read_to_string(reports.join("junit.xml")).unwrap();
    assert!(junit.contains(name), "{junit}");
}
