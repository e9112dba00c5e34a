//! What a CI gate must survive from outside and from the client it runs:
//! SIGINT/SIGTERM mid-run (reports for what ran, the rest marked
//! interrupted, no process or temp file left, exit 128 + n), SIGKILL of
//! the harness (the client and its children die with it), a client that
//! hangs (the wall-clock limit) and one that floods the harness with log
//! lines (bounded memory, timeline and reports); a chaos campaign
//! stopped while it shrinks keeps its findings.
//!
//! These run the real `xds-conformance` binary against the hostile
//! fixture adapters in `tests/hostile/adapters/`. Nothing here sleeps: the
//! test learns that the run is mid-script from a FIFO the adapter writes
//! to, and waits for processes to end through pidfds.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

fn crate_dir() -> PathBuf {
    xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"))
}

fn adapter(name: &str) -> String {
    crate_dir()
        .join("tests/hostile/adapters")
        .join(name)
        .display()
        .to_string()
}

/// A scratch directory: the run's TMPDIR, its reports, the FIFO.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("xds-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        Scratch(dir)
    }

    fn fifo(&self) -> PathBuf {
        let path = self.0.join("pids.fifo");
        let c = std::ffi::CString::new(path.display().to_string()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        path
    }

    /// Files the run left in its temp directory.
    fn temp_files(&self) -> Vec<String> {
        std::fs::read_dir(self.0.join("tmp"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `xds-conformance run <paths> --client <adapter dir>` in `scratch`.
fn harness(scratch: &Scratch, paths: &[PathBuf], client: &str, fifo: Option<&Path>) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xds-conformance"));
    command
        .arg("run")
        .args(paths)
        .args(["--client", client, "--jobs", "1", "--report-dir"])
        .arg(scratch.0.join("reports"))
        .current_dir(crate_dir().parent().unwrap())
        .env("TMPDIR", scratch.0.join("tmp"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(fifo) = fifo {
        command.env("HOSTILE_PIDS", fifo);
    }
    command.spawn().expect("start the harness")
}

/// Blocks until the adapter, mid-script, writes "<pid> <child pid>"; an
/// adapter that never gets there (it did not start) fails the test after
/// two minutes instead of hanging the test command.
fn read_pids(fifo: &Path) -> (i32, i32) {
    let (sender, receiver) = std::sync::mpsc::channel();
    let path = fifo.to_path_buf();
    // Opening a FIFO blocks until a writer comes: on a thread of its own.
    std::thread::spawn(move || {
        let _ = sender.send(std::fs::read_to_string(&path));
    });
    let text = receiver
        .recv_timeout(Duration::from_secs(120))
        .expect("the adapter never wrote its pids: did it start?")
        .expect("read the FIFO");
    let mut numbers = text.split_whitespace().map(|n| n.parse::<i32>().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

/// Waits until process `pid` has ended (it may not be our child), at most
/// `limit`; true if it did. A process already gone counts as ended.
fn ends_within(pid: i32, limit: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags; the fd it returns is ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    // SAFETY: a fresh fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    let mut poll = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one pollfd we own. Readable once the process has exited.
    unsafe { libc::poll(&mut poll, 1, ms) == 1 }
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: kill only sends a signal to our child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

/// Waits for the harness, reading its output as it comes (a full pipe
/// would block it).
fn wait_for(child: Child) -> (ExitStatus, String, String) {
    let output = child.wait_with_output().expect("wait for the harness");
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn interrupted_scenarios() -> Vec<PathBuf> {
    let dir = crate_dir().join("tests/hostile/interrupted");
    vec![
        dir.join("a-passes.yaml"),
        dir.join("b-hangs.yaml"),
        dir.join("c-never-starts.yaml"),
    ]
}

/// The harness running `interrupted_scenarios` on the hanging adapter,
/// stopped in the middle of `b-hangs`: the scratch, the harness, the
/// adapter's pid and its child's.
fn mid_run(name: &str) -> (Scratch, Child, i32, i32) {
    let scratch = Scratch::new(name);
    let fifo = scratch.fifo();
    let child = harness(
        &scratch,
        &interrupted_scenarios(),
        &adapter("hang-with-child"),
        Some(&fifo),
    );
    let (adapter_pid, grandchild) = read_pids(&fifo);
    (scratch, child, adapter_pid, grandchild)
}

fn interrupt_mid_run(sig: i32) {
    let (scratch, mut child, adapter_pid, grandchild) = mid_run(&format!("interrupt-{sig}"));
    // Live progress: the finished scenario's line is out while the run
    // is still in the middle of the next one.
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).expect("a progress line");
    assert!(
        first.starts_with("[   1/3] pass") && first.contains("a-passes"),
        "{first}"
    );
    signal(&child, sig);
    let (status, mut out, err) = wait_for(child);
    std::io::Read::read_to_string(&mut stdout, &mut out).expect("the rest of stdout");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.code(), Some(128 + sig), "{status:?}\n{out}\n{err}");
    assert!(status.signal().is_none());
    // Every scenario is reported: the finished one, the stopped one, the
    // one that never started.
    let junit = std::fs::read_to_string(scratch.0.join("reports/junit.xml")).expect("junit.xml");
    assert!(junit.contains(r#"name="a-passes""#), "{junit}");
    assert_eq!(junit.matches(r#"type="interrupted""#).count(), 2, "{junit}");
    let summary = std::fs::read_to_string(scratch.0.join("reports/summary.md")).unwrap();
    assert!(
        summary.contains("1 pass") && summary.contains("2 interrupted"),
        "{summary}"
    );
    assert!(
        err.contains("stopped by an interrupt while running"),
        "{out}\n{err}"
    );
    // Nothing left behind.
    for pid in [adapter_pid, grandchild] {
        assert!(
            ends_within(pid, Duration::from_secs(10)),
            "{pid} still runs"
        );
    }
    assert_eq!(scratch.temp_files(), Vec::<String>::new());
}

#[test]
fn sigint_mid_run_reports_what_ran_and_leaves_nothing() {
    interrupt_mid_run(libc::SIGINT);
}

/// A second signal while the first is being handled (the clients being
/// stopped): it exits at once, and still nothing is left behind (the
/// bootstrap and other temporary files go with it), and a report cut
/// short links nothing that is missing.
#[test]
fn a_second_signal_exits_at_once_and_leaves_nothing() {
    let (scratch, mut child, adapter_pid, grandchild) = mid_run("second-signal");
    signal(&child, libc::SIGINT);
    // The second comes once the first is taken (said on stderr), not
    // after a guessed delay.
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    while !seen.contains("interrupted: stopping the clients") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut stderr, &mut line).expect("stderr") == 0 {
            break;
        }
        seen.push_str(&line);
    }
    signal(&child, libc::SIGINT);
    let (status, out, mut err) = wait_for(child);
    std::io::Read::read_to_string(&mut stderr, &mut err).expect("the rest of stderr");
    let err = seen + &err;
    assert_eq!(status.code(), Some(130), "{status:?}\n{out}\n{err}");
    for pid in [adapter_pid, grandchild] {
        assert!(
            ends_within(pid, Duration::from_secs(10)),
            "{pid} still runs"
        );
    }
    assert_eq!(scratch.temp_files(), Vec::<String>::new());
    // Whatever was written is whole, and links only what exists.
    let reports = scratch.0.join("reports");
    if let Ok(summary) = std::fs::read_to_string(reports.join("summary.md")) {
        for link in summary.split("](").skip(1) {
            let target = &link[..link.find(')').unwrap_or(link.len())];
            assert!(
                reports.join(target).exists(),
                "{target} is linked but missing"
            );
        }
    }
}

/// A chaos campaign stopped while it shrinks a finding (minutes on a real
/// client: each draft is a run) keeps the finding as it was found, with
/// its schedule, and its record; it says how far the shrink got. The
/// client breaks a rule on its first start and hangs on every later one
/// (the shrink's first draft), which it tells through the FIFO: the
/// signal comes in the middle of the shrink, never after a guessed time.
#[test]
fn an_interrupted_chaos_shrink_keeps_its_findings() {
    let scratch = Scratch::new("chaos-shrink");
    let fifo = scratch.fifo();
    let child = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .args(["chaos", "--client", &adapter("crash-then-hang")])
        .args(["--seed", "1", "--schedules", "1", "--protocol", "sotw"])
        .args(["--shrink", "2000", "--report-dir"])
        .arg(scratch.0.join("reports"))
        .current_dir(crate_dir().parent().unwrap())
        .env("TMPDIR", scratch.0.join("tmp"))
        .env("HOSTILE_PIDS", &fifo)
        .env("HOSTILE_STARTS", scratch.0.join("starts"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the harness");
    let (draft_pid, _) = read_pids(&fifo);
    signal(&child, libc::SIGINT);
    let (status, out, err) = wait_for(child);
    assert_eq!(status.code(), Some(130), "{status:?}\n{out}\n{err}");
    // Written before the shrink began, and said so.
    assert!(
        err.contains("1 finding written as drawn") && err.contains("an interrupt keeps"),
        "{err}"
    );
    assert!(
        err.contains("schedule 0 (sotw): shrink interrupted, kept as drawn"),
        "{err}"
    );
    assert!(!err.contains("shrunk from"), "{err}");
    let reports = scratch.0.join("reports");
    let schedule =
        std::fs::read_to_string(reports.join("seed-1-0-sotw.yaml")).expect("the finding");
    assert!(schedule.contains("plays-through"), "{schedule}");
    assert!(reports.join("seed-1-0-sotw.txt").is_file());
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(reports.join("campaign.json")).expect("campaign.json"),
    )
    .expect("a whole record");
    let findings = &record["protocols"][0]["findings"];
    assert_eq!(findings[0]["broke"], "plays-through", "{record}");
    assert_eq!(findings[0]["index"], 0, "{record}");
    assert!(
        ends_within(draft_pid, Duration::from_secs(10)),
        "the draft's client still runs"
    );
    assert_eq!(scratch.temp_files(), Vec::<String>::new());
}

#[test]
fn sigterm_mid_run_reports_what_ran_and_leaves_nothing() {
    interrupt_mid_run(libc::SIGTERM);
}

#[test]
fn a_killed_harness_takes_the_client_and_its_children_with_it() {
    let (_scratch, child, adapter_pid, grandchild) = mid_run("sigkill");
    signal(&child, libc::SIGKILL);
    let (status, _, _) = wait_for(child);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // The adapter ignores SIGTERM and has a child of its own: only the
    // guardian's SIGKILL to the group ends both.
    for pid in [adapter_pid, grandchild] {
        assert!(
            ends_within(pid, Duration::from_secs(10)),
            "{pid} outlived the harness"
        );
    }
}

#[test]
fn a_client_that_hangs_is_stopped_at_the_wall_clock_limit() {
    let scratch = Scratch::new("wall");
    let file = scratch.0.join("hang.yaml");
    std::fs::write(
        &file,
        "description: d\nservers: {main: {}}\nsnapshot: false\nlimits: {wall_time: 3s}\nsteps:\n  \
         - watch: {type: CDS, name: c1}\n  \
         - expect: {watcher: {type: CDS, name: c1, event: changed}, within: 5m}\n",
    )
    .unwrap();
    let child = harness(&scratch, &[file], &adapter("hang-with-child"), None);
    let (status, out, err) = wait_for(child);
    assert_eq!(status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains("stopped: the run went past its wall-clock limit of 3s"),
        "{out}\n{err}"
    );
    assert_eq!(scratch.temp_files(), Vec::<String>::new());
}

#[test]
fn a_client_flooding_the_harness_is_bounded() {
    // Log lines (capped apart), valid watcher events (the timeline's own
    // caps), lines of a megabyte and a flooded stderr, side by side: each
    // run ends in a clear ERROR or FAIL, with bounded reports and a
    // bounded harness. Each run ends on an event, never on the wall clock:
    // the adapter says when it has flooded past every bound (its watcher
    // event, `past-its-bounds.yaml`), or the watcher flood fills the
    // timeline (`watcher-flood.yaml`); a busy machine only slows them.
    let kinds = [
        ("log", "flood", "past-its-bounds.yaml"),
        ("watcher", "flood-watcher", "watcher-flood.yaml"),
        ("line", "flood-line", "past-its-bounds.yaml"),
        ("stderr", "flood-stderr", "past-its-bounds.yaml"),
    ];
    let runs: Vec<_> = kinds
        .iter()
        .map(|(kind, adapter_name, scenario)| {
            let scratch = Scratch::new(&format!("flood-{kind}"));
            let file = scratch.0.join("flood.yaml");
            std::fs::copy(
                crate_dir()
                    .join("tests/hostile/adapters/flood")
                    .join(scenario),
                &file,
            )
            .unwrap();
            let child = harness(&scratch, &[file], &adapter(adapter_name), None);
            (kind, scratch, child)
        })
        .collect();
    for (kind, scratch, child) in runs {
        let (status, out, err) = wait_for(child);
        assert_eq!(status.code(), Some(1), "{kind}: {out}\n{err}");
        let reports = scratch.0.join("reports");
        let size = |path: &str| std::fs::metadata(reports.join(path)).map_or(0, |m| m.len());
        assert!(
            size("junit.xml") < 2 << 20,
            "{kind}: junit.xml: {}",
            size("junit.xml")
        );
        let timeline = std::fs::read_to_string(reports.join("timelines/flood.txt")).unwrap();
        assert!(timeline.len() <= 17 << 20, "{kind}: {}", timeline.len());
        let tail = &timeline[timeline.len().saturating_sub(2000)..];
        match *kind {
            "log" => assert!(
                timeline.contains("client log lines past the first 10000"),
                "{kind}: {tail}"
            ),
            "watcher" => {
                assert!(
                    err.contains("stopped: the timeline reached its limit of 100000 events"),
                    "{kind}: {err}"
                );
                // Not tried again: the flood is the client's, not the load's.
                assert!(!out.contains("flaky"), "{out}");
                assert!(
                    !reports.join("timelines/flood.try1.txt").exists(),
                    "{kind}: tried again"
                );
            }
            // Lines of a megabyte, each kept as 2 KiB; nothing but stderr.
            _ => assert!(
                err.contains("expected watcher event type=CDS name=c1 event=does_not_exist"),
                "{kind}: {err}"
            ),
        }
    }
    // The harness's own peak memory (the largest child we waited for).
    // SAFETY: getrusage fills the struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let peak_mib = usage.ru_maxrss / 1024;
    assert!(peak_mib < 512, "peak RSS {peak_mib} MiB");
}
