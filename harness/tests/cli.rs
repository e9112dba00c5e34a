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

/// A client's expectations file holds a gate both ways: what it expects
/// to fail may fail (exit 0), what it expects to fail and passes fails the
/// gate (exit 1), and `--update-expectations` writes it from a run.
#[test]
fn expectations_hold_the_gate_both_ways_and_are_written_from_a_run() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("my-client.expectations.yaml");
    let file_arg = file.to_str().expect("a UTF-8 path");
    const PASSING: &str = "scenarios/a46/wrong-type-url.yaml";
    const FAILING: &str =
        "harness/tests/hostile/outcome-expectation-never-met-ends-in-virtual-time.yaml";
    let failing_id = "outcome-expectation-never-met-ends-in-virtual-time";

    // Written from a run: the failure is expected from now on.
    let (code, err) = run(&[
        PASSING,
        FAILING,
        "--expectations",
        file_arg,
        "--update-expectations",
    ]);
    assert_eq!(code, Some(1), "the run itself still failed: {err}");
    let written = std::fs::read_to_string(&file).expect("the file is written");
    assert!(written.contains(&format!("{failing_id}:")), "{written}");
    assert!(written.contains("expect: fail"), "{written}");
    assert!(!written.contains("wrong-type-url"), "{written}");

    let (code, err) = run(&[PASSING, FAILING, "--expectations", file_arg]);
    assert_eq!(code, Some(0), "{err}");

    // Expecting a pass to fail fails the gate, naming the file.
    std::fs::write(
        &file,
        format!("{written}a46/wrong-type-url: {{expect: fail, reason: an old bug}}\n"),
    )
    .expect("write");
    let (code, err) = run(&[PASSING, FAILING, "--expectations", file_arg]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("expects a46/wrong-type-url to fail (an old bug), but it passed"),
        "{err}"
    );

    // A skipped run is not run; an entry for no run is warned about.
    std::fs::write(
        &file,
        format!(
            "{failing_id}: {{expect: skip, reason: hangs}}\nno/such: {{expect: fail, reason: r}}\n"
        ),
    )
    .expect("write");
    let (code, err) = run(&[PASSING, FAILING, "--expectations", file_arg]);
    assert_eq!(code, Some(0), "{err}");
    // (Of a run of two files: no/such is no run of theirs.)
    assert!(!err.contains("no/such"), "{err}");

    // An update removes a stale entry (its run passed: the FAIL it was
    // reported as is the file's, not the run's), keeps the file's own
    // comments and order, and writes no path or time.
    std::fs::write(
        &file,
        "# my client's known failures\n\n# fixed in 2.1\na46/wrong-type-url: {expect: fail, \
         reason: an old bug}\n\n# a race, upstream issue 7\nno/such: {expect: flaky, reason: r}\n",
    )
    .expect("write");
    let (code, err) = run(&[
        PASSING,
        FAILING,
        "--expectations",
        file_arg,
        "--update-expectations",
    ]);
    assert_eq!(code, Some(1), "held to the file as it was: {err}");
    assert!(
        err.contains("1 removed (passed or n/a) (a46/wrong-type-url), 1 added (failed)"),
        "{err}"
    );
    let written = std::fs::read_to_string(&file).expect("the file is written");
    assert!(
        written.starts_with(
            "# my client's known failures\n\n\n# a race, upstream issue 7\nno/such: {expect: \
             flaky, reason: r}\n"
        ),
        "{written}"
    );
    assert!(
        written.contains(&format!("{failing_id}:\n  expect: fail\n")),
        "{written}"
    );
    assert!(
        written.contains("check: expected watcher event type=CDS name=never-served"),
        "{written}"
    );
    assert!(
        !written.contains("harness/tests") && !written.contains("(from"),
        "{written}"
    );
    let (code, err) = run(&[PASSING, FAILING, "--expectations", file_arg]);
    assert_eq!(code, Some(0), "{err}");
    // A second update changes nothing.
    let before = std::fs::read_to_string(&file).expect("read");
    run(&[
        PASSING,
        FAILING,
        "--expectations",
        file_arg,
        "--update-expectations",
    ]);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), before);

    // A `check` names the failure that is known: another failure is a FAIL.
    std::fs::write(
        &file,
        format!("{failing_id}: {{expect: fail, reason: r, check: expected a request}}\n"),
    )
    .expect("write");
    let (code, err) = run(&[FAILING, "--expectations", file_arg]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("to fail at \"expected a request\" (r), but it failed otherwise"),
        "{err}"
    );
    // An update names the new failure in the entry, and the next plain
    // run is green.
    let (code, err) = run(&[FAILING, "--expectations", file_arg, "--update-expectations"]);
    assert_eq!(code, Some(1), "held to the file as it was: {err}");
    assert!(
        err.contains(&format!(
            "1 changed (failed otherwise: the new check) ({failing_id})"
        )),
        "{err}"
    );
    let written = std::fs::read_to_string(&file).expect("read");
    assert!(
        written.contains("check: expected watcher event type=CDS name=never-served")
            && written.contains("(was: r; then it failed at: expected a request)"),
        "{written}"
    );
    let (code, err) = run(&[FAILING, "--expectations", file_arg]);
    assert_eq!(code, Some(0), "{err}");

    // A broken file is broken input, located.
    std::fs::write(&file, "a/x: {expect: sometimes, reason: r}\n").expect("write");
    let (code, err) = run(&[PASSING, "--expectations", file_arg]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("my-client.expectations.yaml:1:"), "{err}");
}

/// `xds-conformance <args>` from the repository root: its exit code and
/// stderr.
fn harness(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run the harness");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// What results files say, times left out.
fn verdicts(dir: &std::path::Path, client: &str) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(dir.join(format!("results-{client}.json")))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let results: xds_conformance::suite::ResultsFile =
        serde_json::from_str(&text).expect("a results file");
    results
        .runs
        .into_iter()
        .map(|r| (r.id, r.verdict, r.reason))
        .collect()
}

/// Two shards of a matrix, merged, give the verdicts of one run, in its
/// order; shards of another run, or the same shard twice, do not merge.
#[test]
fn partitions_merge_into_the_matrix_of_one_run() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = |name: &str| dir.path().join(name).display().to_string();
    let matrix = |report: &str, extra: &[&str]| {
        let mut args = vec![
            "matrix",
            "scenarios/a46",
            "--clients",
            "reference",
            "--report-dir",
            report,
        ];
        args.extend_from_slice(extra);
        let (code, err) = harness(&args);
        assert_eq!(code, Some(0), "{err}");
    };
    matrix(&out("whole"), &[]);
    matrix(&out("one"), &["--partition", "1/2"]);
    matrix(&out("two"), &["--partition", "2/2"]);
    let one = verdicts(&dir.path().join("one"), "reference");
    let two = verdicts(&dir.path().join("two"), "reference");
    assert!(!one.is_empty() && !two.is_empty(), "{one:?} {two:?}");
    let (code, err) = harness(&[
        "merge",
        &out("two"),
        &out("one"),
        "--report-dir",
        &out("merged"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        verdicts(&dir.path().join("merged"), "reference"),
        verdicts(&dir.path().join("whole"), "reference")
    );
    let junit = |d: &str| std::fs::read_to_string(dir.path().join(d).join("junit-reference.xml"));
    let names = |xml: String| -> Vec<String> {
        xml.split("<testcase name=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        names(junit("merged").expect("merged JUnit")),
        names(junit("whole").expect("whole JUnit"))
    );
    let (code, err) = harness(&[
        "merge",
        &out("one"),
        &out("one"),
        "--report-dir",
        &out("bad"),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("shard 1/2 is given twice"), "{err}");

    // Half a matrix is not a result: the shard that did not come is named.
    let (code, err) = harness(&["merge", &out("one"), "--report-dir", &out("half")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("shard 2/2 of 2 is missing (given: 1/2)"),
        "{err}"
    );
    assert!(!dir.path().join("half").exists(), "nothing is written");

    // `run --partition` shards merge as a matrix's do.
    for (k, report) in [("1/2", "run-one"), ("2/2", "run-two")] {
        let (code, err) = harness(&[
            "run",
            "scenarios/a46",
            "--partition",
            k,
            "--report-dir",
            &out(report),
        ]);
        assert_eq!(code, Some(0), "{err}");
    }
    let (code, err) = harness(&[
        "merge",
        &out("run-one"),
        &out("run-two"),
        "--report-dir",
        &out("run-merged"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        verdicts(&dir.path().join("run-merged"), "reference"),
        verdicts(&dir.path().join("whole"), "reference")
    );
}

#[test]
fn a_bad_partition_is_broken_input() {
    let (code, err) = run(&["scenarios/a46", "--partition", "3/2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("expected K/N with 1 <= K <= N"), "{err}");
}

/// The harness binary run from `dir` (not the checkout): exit code, and
/// stdout then stderr.
fn harness_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run the harness");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

/// An adapter kept in a client's own repository: a folder outside the
/// checkout whose manifest has relative paths, its own scenarios and its
/// own expectations file, gated by `run` and `matrix` from there: exit 0
/// while the expectations hold, 1 once one does not. Reports name the
/// client by its manifest.
#[test]
fn an_adapter_in_its_own_repository_is_a_gate_for_run_and_matrix() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    let adapter = repo.path().join("conformance/adapter");
    std::fs::create_dir_all(&adapter).expect("mkdir");
    // The minimal fixture adapter (it answers RPCs OK from "b1", and
    // UNAVAILABLE for xds:///unavailable), copied out of the checkout.
    std::fs::copy(
        root().join("client-under-test/tests/fixtures/minimal/adapter.py"),
        adapter.join("adapter.py"),
    )
    .expect("copy the fixture");
    std::fs::write(
        adapter.join("adapter.json"),
        r#"{"name": "my-client", "description": "out of tree",
            "command": ["python3", "adapter.py"],
            "capabilities": {"dial": true, "rpc": true}}"#,
    )
    .expect("write the manifest");
    let scenarios = repo.path().join("conformance/scenarios");
    std::fs::create_dir_all(&scenarios).expect("mkdir");
    let scenario = |code: &str| {
        format!(
            "description: an RPC ends {code}\nservers:\n  primary: {{}}\nsteps:\n  \
             - dial: xds:///svc\n  - rpc: {{ target: xds:///svc }}\n  \
             - expect:\n      rpc: {{ code: {code} }}\n"
        )
    };
    std::fs::write(scenarios.join("ok.yaml"), scenario("OK")).expect("write");
    std::fs::write(scenarios.join("unavailable.yaml"), scenario("UNAVAILABLE")).expect("write");
    let expectations = repo.path().join("conformance/my-client.expectations.yaml");
    std::fs::write(
        &expectations,
        "unavailable: {expect: fail, reason: our RPCs never fail, link: https://example.com/1}\n",
    )
    .expect("write");

    // The client's own CI gate: its adapter, scenarios and expectations.
    let gate = |report_dir: &str| {
        harness_in(
            repo.path(),
            &[
                "run",
                "conformance/scenarios",
                "--client",
                "conformance/adapter",
                "--expectations",
                "conformance/my-client.expectations.yaml",
                "--report-dir",
                report_dir,
            ],
        )
    };
    let (code, err) = gate("out/run");
    assert_eq!(code, Some(0), "{err}");
    let junit = std::fs::read_to_string(repo.path().join("out/run/junit.xml")).expect("JUnit");
    assert!(junit.contains("my-client"), "{junit}");
    assert!(!junit.contains("conformance/adapter"), "{junit}");

    // The reference client finds no Listener (nothing is served): both
    // its RPCs wait out their deadline, and the matrix's gate holds only
    // with that expected too.
    let reference = repo.path().join("conformance/reference.expectations.yaml");
    std::fs::write(
        &reference,
        "ok: {expect: fail, reason: nothing is served}\n\
         unavailable: {expect: fail, reason: nothing is served}\n",
    )
    .expect("write");
    let matrix = |extra: &[&str]| {
        let mut args = vec![
            "matrix",
            "conformance/scenarios",
            "--clients",
            "reference,conformance/adapter",
            "--expectations",
            "conformance/adapter=conformance/my-client.expectations.yaml",
            "--report-dir",
            "out/matrix",
        ];
        args.extend_from_slice(extra);
        harness_in(repo.path(), &args)
    };
    let (code, err) = matrix(&[]);
    assert_eq!(
        code,
        Some(1),
        "the reference client's failure fails the gate: {err}"
    );
    let (code, err) = matrix(&[
        "--expectations",
        "reference=conformance/reference.expectations.yaml",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let table = std::fs::read_to_string(repo.path().join("out/matrix/matrix.md")).expect("matrix");
    assert!(table.contains("my-client"), "{table}");
    assert!(!table.contains("conformance/adapter"), "{table}");
    assert!(repo.path().join("out/matrix/junit-my-client.xml").is_file());
    // Expectations by the name reports give the client, as well as by
    // its folder; a name no client has is refused, naming the clients.
    let by_name = |client: &str| {
        harness_in(
            repo.path(),
            &[
                "matrix",
                "conformance/scenarios",
                "--clients",
                "reference,conformance/adapter",
                "--expectations",
                &format!("{client}=conformance/my-client.expectations.yaml"),
                "--expectations",
                "reference=conformance/reference.expectations.yaml",
                "--report-dir",
                "out/matrix-by-name",
            ],
        )
    };
    let (code, err) = by_name("my-client");
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = by_name("their-client");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--expectations for their-client, which is not among the clients run (reference, my-client)"),
        "{err}"
    );

    // The manifest may name the file itself (relative to the manifest):
    // then no flag is needed.
    let manifest = std::fs::read_to_string(adapter.join("adapter.json")).expect("manifest");
    std::fs::write(
        adapter.join("adapter.json"),
        manifest.replace(
            r#""description": "out of tree","#,
            r#""description": "out of tree", "expectations": "../my-client.expectations.yaml","#,
        ),
    )
    .expect("write the manifest");
    let own = |report_dir: &str| {
        harness_in(
            repo.path(),
            &[
                "run",
                "conformance/scenarios",
                "--client",
                "conformance/adapter",
                "--report-dir",
                report_dir,
            ],
        )
    };
    let (code, err) = own("out/own");
    assert_eq!(code, Some(0), "the manifest's expectations hold: {err}");

    // The client fixed its bug: the expectation no longer holds.
    std::fs::write(
        &expectations,
        "ok: {expect: fail, reason: an old bug}\nunavailable: {expect: fail, reason: r}\n",
    )
    .expect("write");
    let (code, err) = gate("out/run2");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("expects ok to fail (an old bug), but it passed"),
        "{err}"
    );
    let (code, err) = own("out/own2");
    assert_eq!(code, Some(1), "and so from the manifest's: {err}");
    assert!(err.contains("but it passed"), "{err}");

    // A manifest whose command is not there: the error names the folder.
    std::fs::write(
        adapter.join("adapter.json"),
        r#"{"name": "my-client", "command": ["./missing.sh"], "capabilities": {"dial": true, "rpc": true}}"#,
    )
    .expect("write the manifest");
    let (_, err) = harness_in(
        repo.path(),
        &[
            "run",
            "conformance/scenarios/ok.yaml",
            "--client",
            "conformance/adapter",
            "--report-dir",
            "out/run3",
        ],
    );
    let folder = std::fs::canonicalize(&adapter).expect("the adapter folder");
    assert!(
        err.contains(&format!("in {}", folder.display())),
        "the error names the folder: {err}"
    );
}

/// A scenario repository with no Rust code keeps timeline snapshots
/// beside its scenarios: `--snapshots update` writes them, `--snapshots
/// check` holds runs to them (exit 1 with the diff when one changed).
#[test]
fn snapshots_beside_scenarios_are_written_and_checked_from_the_command_line() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    let scenarios = repo.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).expect("mkdir");
    std::fs::copy(
        root().join("scenarios/a46/wrong-type-url.yaml"),
        scenarios.join("wrong-type-url.yaml"),
    )
    .expect("copy a scenario");
    let snapshot = scenarios.join("snapshots/wrong-type-url.reference.snap");
    let review = |args: &[&str], stdin: &str| {
        let mut all = vec!["scenarios"];
        all.extend_from_slice(args);
        review_in(repo.path(), &all, stdin)
    };
    let run = |mode: &str| {
        harness_in(
            repo.path(),
            &[
                "run",
                "scenarios",
                "--snapshots",
                mode,
                "--report-dir",
                "out",
            ],
        )
    };

    let (code, out) = run("check");
    assert_eq!(code, Some(1), "no snapshot yet: {out}");
    assert!(
        out.contains("no snapshot scenarios/snapshots/wrong-type-url.reference.snap"),
        "{out}"
    );
    // The progress line says the final verdict, the snapshot's included.
    let progress = out
        .lines()
        .find(|l| l.starts_with("[   1/1]"))
        .unwrap_or_else(|| panic!("a progress line: {out}"));
    assert!(progress.contains("FAIL"), "{progress}");
    // This run's snapshot is kept for review, and `review` accepts it.
    let pending = scenarios.join("snapshots/wrong-type-url.reference.snap.new");
    assert!(pending.is_file(), "{out}");
    let (code, out) = review(&[], "a\n");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("1 accepted, 0 rejected, 0 left pending"),
        "{out}"
    );
    assert!(snapshot.is_file() && !pending.exists());
    let (code, out) = run("check");
    assert_eq!(code, Some(0), "{out}");

    let (code, out) = run("update");
    assert_eq!(code, Some(0), "{out}");
    let written = std::fs::read_to_string(&snapshot).expect("the snapshot is written");
    assert!(written.contains("DiscoveryRequest"), "{written}");

    let (code, out) = run("check");
    assert_eq!(code, Some(0), "{out}");

    std::fs::write(
        &snapshot,
        written.replacen("DiscoveryRequest", "DiscoveryRequestX", 1),
    )
    .expect("edit the snapshot");
    let (code, out) = run("check");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("the timeline differs from its snapshot")
            && out.contains("-")
            && out.contains("DiscoveryRequestX"),
        "{out}"
    );
    // A review shows the diff and rejects one at a time: the stored
    // snapshot stays as it was.
    let (code, out) = review(&[], "r\n");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("DiscoveryRequestX") && out.contains("1 rejected"),
        "{out}"
    );
    assert!(!pending.exists());
    assert!(
        std::fs::read_to_string(&snapshot)
            .expect("kept")
            .contains("DiscoveryRequestX")
    );
    // Nobody to ask (stdin closed): it stays pending.
    run("check");
    let (_, out) = review(&[], "");
    assert!(
        out.contains("0 accepted, 0 rejected, 1 left pending"),
        "{out}"
    );
    let (_, out) = review(&["--accept-all"], "");
    assert!(out.contains("1 accepted"), "{out}");
    let (code, out) = run("check");
    assert_eq!(code, Some(0), "{out}");

    // A renamed scenario leaves its snapshot orphaned: listed by the run
    // and by review, removed by `review --prune`.
    std::fs::rename(
        scenarios.join("wrong-type-url.yaml"),
        scenarios.join("renamed.yaml"),
    )
    .expect("rename");
    let (_, out) = run("update");
    assert!(
        out.contains("orphaned snapshot scenarios/snapshots/wrong-type-url.reference.snap (no scenario file of its name here)"),
        "{out}"
    );
    let (code, out) = review(&["--prune"], "");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(": removed"), "{out}");
    assert!(!snapshot.exists());
    assert!(scenarios.join("snapshots/renamed.reference.snap").is_file());
}

/// `xds-conformance review <args>` in `dir` with `stdin` as its input:
/// exit code, stdout and stderr.
fn review_in(dir: &std::path::Path, args: &[&str], stdin: &str) -> (Option<i32>, String) {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .arg("review")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the harness");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("write stdin");
    drop(input);
    let output = child.wait_with_output().expect("wait");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

/// A report folder that cannot be written is found before anything runs
/// (exit 2), not after the whole suite.
#[test]
fn an_unwritable_report_folder_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("reports-out");
    std::fs::write(&file, b"a file, not a folder").expect("write");
    let file_arg = file.to_str().expect("a UTF-8 path");
    for command in ["run", "matrix"] {
        let mut args = vec![
            command,
            "scenarios/a46/wrong-type-url.yaml",
            "--report-dir",
            file_arg,
        ];
        if command == "matrix" {
            args.extend(["--clients", "reference"]);
        }
        let (code, out) = harness_in(&root(), &args);
        assert_eq!(code, Some(2), "{command}: {out}");
        assert!(out.contains("(nothing was run)"), "{command}: {out}");
        assert!(!out.contains("1 scenarios:"), "{command}: {out}");
    }
}

/// Two files with one ID (outside a `scenarios/` folder both are named by
/// their file name) would share report files: the second does not load,
/// naming the first (exit 2), and the first still runs.
#[test]
fn two_files_with_one_id_are_broken_input() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    let scenario = std::fs::read_to_string(root().join("scenarios/a46/wrong-type-url.yaml"))
        .expect("a scenario");
    for folder in ["one", "two"] {
        let dir = repo.path().join(folder);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("same.yaml"), &scenario).expect("write");
    }
    let (code, out) = harness_in(repo.path(), &["run", "one", "two", "--report-dir", "out"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("its ID \"same\" is also the ID of one/same.yaml"),
        "{out}"
    );
    assert!(out.contains("1 pass"), "{out}");
}

/// A scenario folder with a FIFO and a symlink to `/dev/zero` named
/// `*.yaml` and a symlink loop: each of those is named and not read (no
/// blocking open, no endless read, no endless walk), and the real scenario
/// still runs. Bounded by a deadline so a regression fails instead of
/// hanging the test command.
#[test]
fn a_hostile_folder_is_walked_and_read_safely() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    let dir = repo.path().join("scenarios");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(
        root().join("scenarios/a46/wrong-type-url.yaml"),
        dir.join("real.yaml"),
    )
    .expect("copy a scenario");
    let fifo = std::ffi::CString::new(dir.join("fifo.yaml").display().to_string()).expect("path");
    // SAFETY: mkfifo reads a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).expect("symlink");
    std::os::unix::fs::symlink(".", dir.join("loop")).expect("symlink");

    let (sender, receiver) = std::sync::mpsc::channel();
    let cwd = repo.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = sender.send(harness_in(
            &cwd,
            &["run", "scenarios", "--report-dir", "out"],
        ));
    });
    let (code, out) = receiver
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the run ends");
    assert_eq!(code, Some(2), "two files did not load: {out}");
    assert!(
        out.contains("fifo.yaml: not a regular file (it is a FIFO): not read"),
        "{out}"
    );
    assert!(
        out.contains("zero.yaml: not a regular file (it is a device): not read"),
        "{out}"
    );
    assert!(out.contains("1 pass"), "{out}");
}

#[test]
fn chaos_shards_merge_into_the_whole_campaign_and_a_missing_shard_is_refused() {
    let dir = std::env::temp_dir().join(format!("xds-cli-chaos-{}", std::process::id()));
    let shard = |k: &str| dir.join(format!("shard-{}", k.replace('/', "-")));
    let campaign = |out: &std::path::Path, partition: Option<&str>| {
        let out = out.to_str().unwrap();
        let mut args = vec![
            "chaos",
            "--seed",
            "5",
            "--schedules",
            "9",
            "--protocol",
            "sotw",
            "--report-dir",
            out,
        ];
        if let Some(p) = partition {
            args.extend(["--partition", p]);
        }
        let (code, out) = harness(&args);
        assert_eq!(code, Some(0), "{out}");
    };
    for k in ["1/3", "2/3", "3/3"] {
        campaign(&shard(k), Some(k));
    }
    let whole = dir.join("whole");
    campaign(&whole, None);
    let merged = dir.join("merged");
    let (code, out) = harness(&[
        "merge",
        shard("1/3").to_str().unwrap(),
        shard("3/3").to_str().unwrap(),
        shard("2/3").to_str().unwrap(),
        "--report-dir",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}");
    let read = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(d.join("campaign.json")).unwrap()).unwrap()
    };
    let (merged, whole) = (read(&merged), read(&whole));
    // Three shards of three schedules play what the whole campaign plays.
    assert_eq!(merged["protocols"], whole["protocols"], "{merged:#}");
    assert_eq!(
        merged["partitions"],
        serde_json::json!(["1/3", "2/3", "3/3"])
    );

    let (code, out) = harness(&[
        "merge",
        shard("1/3").to_str().unwrap(),
        shard("2/3").to_str().unwrap(),
        "--report-dir",
        dir.join("partial").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("shards of 3 are missing 3/3"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chaos_on_grpc_rust_against_the_reference_fits_its_schedules_and_reports_differences_with_both_timelines()
 {
    let dir = std::env::temp_dir().join(format!("xds-cli-against-{}", std::process::id()));
    let out = dir.to_str().unwrap();
    let args = [
        "chaos",
        "--client",
        "grpc-rust",
        "--against",
        "reference",
        "--seed",
        "5",
        "--first",
        "14",
        "--schedules",
        "1",
        "--protocol",
        "both",
        "--shrink",
        "0",
        "--report-dir",
        out,
    ];
    let (code, err) = harness(&args);
    // Its own expectations excuse the invariants it is known to break.
    assert!(
        err.contains("not held to does-not-exist-timer: grpc-rust is known to break it"),
        "{err}"
    );
    // It speaks no delta: no delta schedule, rather than n/a ones.
    assert!(
        err.contains("delta: grpc-rust does not speak incremental xDS"),
        "{err}"
    );
    assert!(err.contains("(1 played, 0 n/a"), "{err}");
    // Schedule 14: its does-not-exist comes 30 s after the watch, the
    // reference's 15 s after the request.
    assert_eq!(code, Some(1), "{err}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(record["against"], "reference");
    let findings = &record["protocols"][0]["findings"];
    assert_eq!(findings[0]["index"], 14, "{record}");
    assert_eq!(findings[0]["broke"], "same-as-against");
    let text = std::fs::read_to_string(dir.join("seed-5-14-sotw.txt")).unwrap();
    assert!(
        text.contains("30.000s watcher ClusterLoadAssignment c1: does not exist"),
        "{text}"
    );
    assert!(
        text.contains("15.000s watcher ClusterLoadAssignment c1: does not exist"),
        "{text}"
    );
    assert!(dir.join("seed-5-14-sotw-reference.txt").is_file());
    // --print shows the schedule it played, fitted to grpc-rust.
    let printed = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .args([
            "chaos",
            "--client",
            "grpc-rust",
            "--seed",
            "5",
            "--first",
            "14",
            "--schedules",
            "1",
            "--protocol",
            "sotw",
            "--print",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    let yaml = String::from_utf8_lossy(&printed.stdout);
    let played = std::fs::read_to_string(dir.join("seed-5-14-sotw.yaml")).unwrap();
    // The same schedule; the finding's description says what it found.
    let steps = |text: &str| {
        text[text.find("\nbackends:").unwrap()..]
            .trim_end()
            .to_string()
    };
    assert_eq!(steps(&yaml), steps(&played));
    assert!(
        played.contains("It found a client breaking `same-as-against`.\""),
        "{played}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_chaos_finding_is_a_file_stating_its_invariant_that_fails_on_the_client_and_passes_on_the_reference()
 {
    let dir = std::env::temp_dir().join(format!("xds-cli-stated-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Held to every invariant: grpc-rust declares a resource missing 30 s
    // after its watch, not 15 s after the request (its known failure).
    let empty = dir.join("none.yaml");
    std::fs::write(&empty, "").unwrap();
    let out = dir.join("found");
    let (code, err) = harness(&[
        "chaos",
        "--client",
        "grpc-rust",
        "--expectations",
        empty.to_str().unwrap(),
        "--seed",
        "5",
        "--first",
        // grpc-rust's timer runs 30 s from the watch whatever its
        // reconnect backoff (an unseeded RNG) does, so this schedule breaks
        // the rule on every run (schedule 1 did only with some timings).
        "0",
        "--schedules",
        "1",
        "--protocol",
        "sotw",
        "--report-dir",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "its file fails at its expect_invariant on grpc-rust and passes on the reference client"
        ),
        "{err}"
    );
    let file = out.join("seed-5-0-sotw.yaml");
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert!(
        yaml.contains("It found a client breaking `does-not-exist-timer`; its last step expects the run to keep it."),
        "{yaml}"
    );
    assert!(
        yaml.trim_end()
            .ends_with("- expect_invariant: does-not-exist-timer\nsnapshot: false"),
        "{yaml}"
    );
    assert!(
        yaml.lines().count() < 40,
        "a file read in a minute:\n{yaml}"
    );
    // An ordinary scenario file: it validates, fails on grpc-rust held to
    // everything, at its last step, and passes on the reference client.
    let (code, err) = harness(&["validate", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let runs = dir.join("runs");
    let (code, _) = harness(&[
        "run",
        "--client",
        "grpc-rust",
        "--expectations",
        empty.to_str().unwrap(),
        file.to_str().unwrap(),
        "--report-dir",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1));
    let summary = std::fs::read_to_string(runs.join("summary.md")).unwrap();
    assert!(
        summary.contains("expected the run to keep invariant does-not-exist-timer"),
        "{summary}"
    );
    let (code, err) = harness(&[
        "run",
        "--client",
        "reference",
        file.to_str().unwrap(),
        "--report-dir",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The minimal fixture adapter (no xDS client behind it: a watch is
/// answered at once with one watcher event of every kind, an RPC with OK
/// from "b1"), copied into `dir` with `manifest` as its adapter.json: an
/// adapter written outside this repository, as a new user writes one.
fn outside_adapter(dir: &std::path::Path, manifest: &str) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::copy(
        root().join("client-under-test/tests/fixtures/minimal/adapter.py"),
        dir.join("adapter.py"),
    )
    .expect("copy the fixture");
    std::fs::write(dir.join("adapter.json"), manifest).expect("write the manifest");
}

/// `results.json` of a `run` in `dir`: each run's ID, verdict and reason.
fn run_results(dir: &std::path::Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(dir.join("results.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let results: xds_conformance::suite::ResultsFile =
        serde_json::from_str(&text).expect("a results file");
    results
        .runs
        .into_iter()
        .map(|r| (r.id, r.verdict, r.reason))
        .collect()
}

/// A client that subscribes to Listeners and Clusters only by wildcard
/// (go-control-plane's SotW client, as Envoy) says so in its manifest,
/// `"named_lds_cds": false`: a run that needs a named request is n/a with
/// that reason, not a FAIL. Without the word the same run is played (a
/// gRPC client names them: the default).
#[test]
fn a_wildcard_only_adapter_says_so_and_runs_needing_named_requests_are_not_applicable() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    let manifest = |extra: &str| {
        format!(
            r#"{{"name": "my-client", "command": ["python3", "adapter.py"],
                "capabilities": {{"watch": true{extra}}}}}"#
        )
    };
    // The client never asks for c2 by name: a change of subscription,
    // which a wildcard client never sends (its wildcard asks for all).
    std::fs::write(
        repo.path().join("named.yaml"),
        "description: only what is watched is asked for\nservers:\n  primary:\n    \
         resources:\n      - cluster: { name: c1 }\nsteps:\n  \
         - watch: { type: CDS, name: c1 }\n  \
         - expect_none:\n      request: { type: CDS, names: [c1, c2] }\n      for: 1s\n",
    )
    .expect("write");
    let play = |report: &str| {
        let (code, out) = harness_in(
            repo.path(),
            &[
                "run",
                "named.yaml",
                "--client",
                "./my-client",
                "--report-dir",
                report,
            ],
        );
        (code, out, run_results(&repo.path().join(report)))
    };

    outside_adapter(&repo.path().join("my-client"), &manifest(""));
    let (code, out, results) = play("named");
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(results[0].1, "pass", "{results:?}");

    outside_adapter(
        &repo.path().join("my-client"),
        &manifest(r#", "named_lds_cds": false"#),
    );
    let (code, out, results) = play("wildcard");
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        results[0].1, "n/a",
        "not a FAIL: the client cannot be asked: {results:?}"
    );
    assert!(
        results[0]
            .2
            .contains("named Listener and Cluster subscriptions"),
        "{results:?}"
    );
}

/// `--client my-client` in the folder that holds `my-client/adapter.json`
/// is that adapter (no shipped client has the name), as `./my-client`
/// is; a name that is neither says how to name a folder.
#[test]
fn a_folder_in_the_working_directory_is_the_adapter_of_its_name() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    outside_adapter(
        &repo.path().join("my-client"),
        r#"{"name": "my-client", "command": ["python3", "adapter.py"],
            "capabilities": {"dial": true, "rpc": true}}"#,
    );
    std::fs::write(
        repo.path().join("ok.yaml"),
        "description: an RPC ends OK\nservers:\n  primary: {}\nsteps:\n  \
         - dial: xds:///svc\n  - rpc: { target: xds:///svc }\n  \
         - expect:\n      rpc: { code: OK }\n",
    )
    .expect("write");
    let (code, out) = harness_in(
        repo.path(),
        &[
            "run",
            "ok.yaml",
            "--client",
            "my-client",
            "--report-dir",
            "out",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(run_results(&repo.path().join("out"))[0].1, "pass");

    let (code, out) = harness_in(
        repo.path(),
        &[
            "run",
            "ok.yaml",
            "--client",
            "their-client",
            "--report-dir",
            "out2",
        ],
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("unknown client \"their-client\"") && out.contains("--client ./their-client"),
        "{out}"
    );
}

/// The scenarios a new user's first runs play: an RPC that ends OK (the
/// minimal fixture passes it) and one expected to end UNAVAILABLE (it
/// fails: the fixture answers OK), in `dir`.
fn ok_and_unavailable(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let scenario = |code: &str| {
        format!(
            "description: an RPC ends {code}\nservers:\n  primary: {{}}\nsteps:\n  \
             - dial: xds:///svc\n  - rpc: {{ target: xds:///svc }}\n  \
             - expect:\n      rpc: {{ code: {code} }}\n"
        )
    };
    std::fs::write(dir.join("ok.yaml"), scenario("OK")).expect("write");
    std::fs::write(dir.join("unavailable.yaml"), scenario("UNAVAILABLE")).expect("write");
}

/// A new adapter's manifest names its expectations file before it is
/// written: a plain run says how to create it and plays on (exit 1 for
/// its failure, not 2); `--update-expectations` without `--expectations`
/// creates that file; the next plain run is green.
#[test]
fn the_expectations_file_the_manifest_names_is_created_by_an_update_without_flags() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    outside_adapter(
        &repo.path().join("my-client"),
        r#"{"name": "my-client", "command": ["python3", "adapter.py"],
            "expectations": "my-client.expectations.yaml",
            "capabilities": {"dial": true, "rpc": true}}"#,
    );
    ok_and_unavailable(&repo.path().join("scenarios"));
    let file = repo.path().join("my-client/my-client.expectations.yaml");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "scenarios",
            "--client",
            "./my-client",
            "--report-dir",
            "out",
            "--retries",
            "0",
        ];
        args.extend_from_slice(extra);
        harness_in(repo.path(), &args)
    };

    let (code, out) = run(&[]);
    assert_eq!(code, Some(1), "played on, and its failure fails: {out}");
    assert!(
        out.contains("my-client.expectations.yaml, which does not exist yet")
            && out.contains("Create it empty")
            && out.contains(
                "xds-conformance run scenarios --client ./my-client --update-expectations"
            ),
        "{out}"
    );
    assert!(!file.exists());

    // A matrix plays on too, saying so.
    let (code, out) = harness_in(
        repo.path(),
        &[
            "matrix",
            "scenarios",
            "--clients",
            "./my-client",
            "--report-dir",
            "out-matrix",
            "--retries",
            "0",
        ],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("my-client.expectations.yaml, which does not exist yet"),
        "{out}"
    );

    let (code, out) = run(&["--update-expectations"]);
    assert_eq!(code, Some(1), "held to the file as it was: {out}");
    let written = std::fs::read_to_string(&file).expect("the file is created");
    assert!(
        written.contains("unavailable:") && !written.contains("ok:"),
        "{written}"
    );

    let (code, out) = run(&[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("does not exist"), "{out}");

    // A client with no file to write is told where one goes.
    let (code, out) = harness_in(
        repo.path(),
        &[
            "run",
            "scenarios",
            "--update-expectations",
            "--report-dir",
            "out",
        ],
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--expectations FILE"), "{out}");
}

/// A run of a subset warns only about the entries of the expectations
/// file it would have run: a typo there, not the entries of every
/// scenario it leaves out (64 lines of them, for the new user's run of
/// one folder).
#[test]
fn a_subset_run_warns_only_about_its_own_entries() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("my-client.expectations.yaml");
    std::fs::write(
        &file,
        "a27/eds-partial-update: {expect: fail, reason: left out}\n\
         a46/nack-keeps-valid-resources: {expect: fail, reason: filtered out}\n\
         a46/wrong-type-urll: {expect: fail, reason: a typo}\n\
         a46/wrong-type-urll@delta: {expect: fail, reason: a typo}\n",
    )
    .expect("write");
    let (code, err) = run(&[
        "scenarios/a46",
        "--filter",
        "wrong-type-url",
        "--expectations",
        file.to_str().expect("a UTF-8 path"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(
            "2 entries for runs not in this run: a46/wrong-type-urll, a46/wrong-type-urll@delta"
        ),
        "{err}"
    );
    assert!(
        !err.contains("a27/eds-partial-update") && !err.contains("nack-keeps-valid-resources"),
        "{err}"
    );
}

/// A new adapter's first run (no expectations file yet) does not try its
/// failures again (each would cost two more runs), and its summary says
/// how many runs failed and the one command that records them; that
/// command, pasted, records them and the gate is green.
#[test]
fn a_first_run_is_not_retried_and_ends_with_the_command_that_records_its_failures() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    outside_adapter(
        &repo.path().join("my-client"),
        r#"{"name": "my-client", "command": ["python3", "adapter.py"],
            "capabilities": {"dial": true, "rpc": true}}"#,
    );
    ok_and_unavailable(&repo.path().join("scenarios"));
    let (code, out) = harness_in(
        repo.path(),
        &[
            "run",
            "scenarios",
            "--client",
            "./my-client",
            "--report-dir",
            "out",
        ],
    );
    assert_eq!(code, Some(1), "{out}");
    let command = "xds-conformance run scenarios --client ./my-client --expectations \
                   my-client.expectations.yaml --update-expectations";
    assert!(
        out.contains("1 run failed, not tried again: my-client has no expectations recorded yet")
            && out.contains(command),
        "{out}"
    );
    let tries: Vec<_> = std::fs::read_dir(repo.path().join("out/timelines"))
        .expect("timelines")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".try"))
        .collect();
    assert!(tries.is_empty(), "played once: {tries:?}");

    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let (code, out) = harness_in(
        repo.path(),
        &[&args[..], &["--report-dir", "out2"]].concat(),
    );
    assert_eq!(code, Some(1), "held to no file yet: {out}");
    let (code, out) = harness_in(
        repo.path(),
        &[
            "run",
            "scenarios",
            "--client",
            "./my-client",
            "--expectations",
            "my-client.expectations.yaml",
            "--report-dir",
            "out3",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("not tried again"), "{out}");
}

/// A run's summary says, per spec tag of its scenarios, how many runs the
/// client passes, fails as known failures and cannot be asked (n/a, by
/// what it lacks): what its green covers, not only that nothing changed.
#[test]
fn a_runs_summary_gives_the_clients_conformance_per_spec() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    outside_adapter(
        &repo.path().join("my-client"),
        r#"{"name": "my-client", "command": ["python3", "adapter.py"],
            "expectations": "my-client.expectations.yaml",
            "capabilities": {"dial": true, "rpc": true}}"#,
    );
    std::fs::write(
        repo.path().join("my-client/my-client.expectations.yaml"),
        "unavailable: {expect: fail, reason: our RPCs never fail}\n",
    )
    .expect("write");
    let scenarios = repo.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).expect("mkdir");
    let rpc = |spec: &str, code: &str| {
        format!(
            "description: an RPC ends {code}\nspec: [{spec}]\nservers:\n  primary: {{}}\n\
             steps:\n  - dial: xds:///svc\n  - rpc: {{ target: xds:///svc }}\n  \
             - expect:\n      rpc: {{ code: {code} }}\n"
        )
    };
    std::fs::write(scenarios.join("ok.yaml"), rpc("A27", "OK")).expect("write");
    std::fs::write(
        scenarios.join("unavailable.yaml"),
        rpc("A27, A46", "UNAVAILABLE"),
    )
    .expect("write");
    // The client has no watch API: n/a.
    std::fs::write(
        scenarios.join("watch.yaml"),
        "description: a watch\nspec: [A46]\nservers:\n  primary: {}\nsteps:\n  \
         - watch: { type: CDS, name: c1 }\n",
    )
    .expect("write");
    let (code, out) = harness_in(
        repo.path(),
        &[
            "run",
            "scenarios",
            "--client",
            "my-client",
            "--report-dir",
            "out",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("\n  A27  2 runs: 1 pass, 1 known failure\n")
            && out.contains(
                "\n  A46  2 runs: 0 pass, 1 known failure, 1 n/a (1 a resource watch API)\n"
            ),
        "{out}"
    );
}

/// `install` does what a client's first run would, and runs nothing: the
/// adapter's install command runs once (its marker then stands), a second
/// `install` leaves it as it is, and a client that cannot be installed
/// (unknown, or an install that fails) exits 1 naming it.
#[test]
fn install_installs_an_adapter_once_and_names_what_it_cannot() {
    let repo = tempfile::tempdir().expect("a temporary folder");
    let dir = repo.path().join("my-client");
    // Each install appends a line to installs.log, then makes its marker
    // (both in the adapter's folder, its root).
    outside_adapter(
        &dir,
        r#"{"name": "my-client", "command": ["python3", "adapter.py"],
            "install": ["sh", "-c", "echo installed >> installs.log && touch .installed"],
            "installed": ".installed",
            "capabilities": {"watch": true}}"#,
    );
    let installs = || std::fs::read_to_string(dir.join("installs.log")).unwrap_or_default();

    let (code, err) = harness_in(repo.path(), &["install", "./my-client"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(installs(), "installed\n", "installed once");
    let (code, err) = harness_in(repo.path(), &["install", "./my-client"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(installs(), "installed\n", "its marker stands: not again");

    let (code, err) = harness_in(repo.path(), &["install", "./my-client", "./nowhere"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("./nowhere"), "{err}");

    std::fs::remove_file(dir.join(".installed")).expect("the marker");
    std::fs::write(
        dir.join("adapter.json"),
        r#"{"name": "my-client", "command": ["python3", "adapter.py"],
            "install": ["sh", "-c", "exit 3"],
            "installed": ".installed",
            "capabilities": {"watch": true}}"#,
    )
    .expect("write the manifest");
    let (code, err) = harness_in(repo.path(), &["install", "./my-client"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("my-client") && err.contains("exit"), "{err}");
}
