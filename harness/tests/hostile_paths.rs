//! Every path the command line opens refuses what is not a file (or a
//! folder, where it takes one) at once, with a clear error: a FIFO (whose
//! open would wait for a writer), a device (`/dev/zero` never ends) and
//! `/dev/null` in the place of a file; a FIFO or a device in the place of
//! a folder to write. Nothing is run first and nothing in `/dev` is
//! replaced. Each invocation is bounded by a deadline, so a regression
//! fails instead of hanging the test command.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn root() -> PathBuf {
    let crate_dir = xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().expect("repository root").to_path_buf()
}

/// The harness with `args`, from the repository root, killed if it takes
/// more than 60 s: its exit code and stdout + stderr.
fn harness(args: &[String]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .args(args)
        .current_dir(root())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the harness");
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let output = child.wait_with_output().expect("output");
            return (
                status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned()
                    + &String::from_utf8_lossy(&output.stderr),
            );
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("xds-conformance {args:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo reads a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// The hostile things a path can name, as `(what, path)`.
fn hostile(dir: &Path) -> Vec<(&'static str, String)> {
    let fifo = dir.join("fifo");
    if !fifo.exists() {
        mkfifo(&fifo);
    }
    vec![
        ("a FIFO", fifo.display().to_string()),
        ("a device", "/dev/zero".to_string()),
        ("a device", "/dev/null".to_string()),
    ]
}

/// A run of `args` (with `{}` where the hostile path goes) ends at once,
/// with exit code 2 (broken input) and a message naming the path and
/// saying what it is.
fn refused(template: &[&str], dir: &Path, said: &[&str]) {
    refused_with(2, template, dir, said)
}

/// [`refused`], with another exit code (`validate` says 1 of files that
/// do not validate).
fn refused_with(exit: i32, template: &[&str], dir: &Path, said: &[&str]) {
    for (what, path) in hostile(dir) {
        let args: Vec<String> = template.iter().map(|a| a.replace("{}", &path)).collect();
        let (code, out) = harness(&args);
        assert_eq!(code, Some(exit), "{args:?} on {what}: {out}");
        assert!(
            out.contains(&path),
            "{args:?}: the error names the path: {out}"
        );
        assert!(
            said.iter()
                .any(|s| out.contains(&s.replace("{what}", what))),
            "{args:?} on {what}: expected one of {said:?}: {out}"
        );
    }
}

const A_SCENARIO: &str = "scenarios/a46/wrong-type-url.yaml";
const NOT_A_FILE: &[&str] = &["not a regular file (it is {what})"];
const NOT_A_FOLDER: &[&str] = &["not a folder (it is {what})"];

#[test]
fn input_files_refuse_fifos_and_devices() {
    let dir = tempfile::tempdir().expect("a folder");
    let out = dir.path().join("out").display().to_string();
    // Scenario files, wherever one is taken.
    refused(&["run", "{}", "--report-dir", &out], dir.path(), NOT_A_FILE);
    refused_with(1, &["validate", "{}"], dir.path(), NOT_A_FILE);
    refused(
        &[
            "matrix",
            "{}",
            "--clients",
            "reference",
            "--report-dir",
            &out,
        ],
        dir.path(),
        NOT_A_FILE,
    );
    refused(&["serve", "{}"], dir.path(), NOT_A_FILE);
    // Expectations files.
    for command in [
        vec![
            "run",
            A_SCENARIO,
            "--expectations",
            "{}",
            "--report-dir",
            &out,
        ],
        vec![
            "matrix",
            A_SCENARIO,
            "--clients",
            "reference",
            "--expectations",
            "reference={}",
            "--report-dir",
            &out,
        ],
        vec![
            "chaos",
            "--schedules",
            "1",
            "--expectations",
            "{}",
            "--report-dir",
            &out,
        ],
    ] {
        refused(&command, dir.path(), NOT_A_FILE);
    }
}

#[test]
fn benches_refuse_fifos_and_devices() {
    let dir = tempfile::tempdir().expect("a folder");
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).expect("mkdir");
    std::fs::copy(root().join(A_SCENARIO), suite.join("one.yaml")).expect("copy");
    let suite = suite.display().to_string();
    refused(
        &[
            "bench",
            "--suite",
            &suite,
            "--scenario",
            "{}",
            "--iterations",
            "1",
        ],
        dir.path(),
        NOT_A_FILE,
    );
    refused(
        &["bench", "--suite", "{}", "--iterations", "1"],
        dir.path(),
        NOT_A_FILE,
    );
    refused(
        &["bench-peers", "--write-scenarios", "{}"],
        dir.path(),
        NOT_A_FOLDER,
    );
}

#[test]
fn adapter_folders_and_their_manifests_refuse_fifos_and_devices() {
    let dir = tempfile::tempdir().expect("a folder");
    let out = dir.path().join("out").display().to_string();
    // A manifest that is a FIFO, in an adapter's folder.
    let adapter = dir.path().join("adapter");
    std::fs::create_dir_all(&adapter).expect("mkdir");
    mkfifo(&adapter.join("adapter.json"));
    let adapter = adapter.display().to_string();
    for command in [
        vec![
            "run",
            A_SCENARIO,
            "--client",
            &adapter,
            "--report-dir",
            &out,
        ],
        vec![
            "matrix",
            A_SCENARIO,
            "--clients",
            &adapter,
            "--report-dir",
            &out,
        ],
    ] {
        let (code, text) = harness(&command.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(code, Some(2), "{command:?}: {text}");
        assert!(
            text.contains("adapter.json: not a regular file (it is a FIFO)"),
            "{command:?}: {text}"
        );
    }
}

#[test]
fn output_folders_and_files_refuse_fifos_and_devices_and_nothing_is_replaced() {
    let dir = tempfile::tempdir().expect("a folder");
    for command in [
        vec!["run", A_SCENARIO, "--report-dir", "{}"],
        vec![
            "matrix",
            A_SCENARIO,
            "--clients",
            "reference",
            "--report-dir",
            "{}",
        ],
        vec!["chaos", "--schedules", "1", "--report-dir", "{}"],
    ] {
        refused(&command, dir.path(), NOT_A_FOLDER);
    }
    refused(
        &["serve", A_SCENARIO, "--bootstrap-out", "{}"],
        dir.path(),
        NOT_A_FILE,
    );
    // The devices are still devices.
    use std::os::unix::fs::FileTypeExt as _;
    for device in ["/dev/zero", "/dev/null"] {
        let kind = std::fs::metadata(device).expect("stat").file_type();
        assert!(kind.is_char_device(), "{device} was replaced");
    }
}

#[test]
fn merge_refuses_shards_that_are_not_report_folders() {
    let dir = tempfile::tempdir().expect("a folder");
    let out = dir.path().join("out").display().to_string();
    refused(
        &["merge", "{}", "--report-dir", &out],
        dir.path(),
        &["not a report directory"],
    );
    // A report folder whose record is a FIFO or a device.
    for (what, target) in [("a FIFO", None), ("a device", Some("/dev/zero"))] {
        let shard = dir.path().join(format!("shard-{}", what.replace(' ', "-")));
        std::fs::create_dir_all(&shard).expect("mkdir");
        let record = shard.join("matrix.json");
        match target {
            None => mkfifo(&record),
            Some(device) => std::os::unix::fs::symlink(device, &record).expect("symlink"),
        }
        let args: Vec<String> = ["merge", &shard.display().to_string(), "--report-dir", &out]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (code, text) = harness(&args);
        assert_eq!(code, Some(2), "{text}");
        assert!(
            text.contains(&format!("matrix.json: not a regular file (it is {what})")),
            "{text}"
        );
    }
    refused(
        &["merge", &out, "--report-dir", "{}"],
        dir.path(),
        &["not a report directory", "not a folder"],
    );
}
