//! The conformance matrix page in a real browser: a realistic matrix (five
//! clients, 21 scenarios over ten specs) is written as the harness writes
//! it, then `reports/browser/check-matrix.mjs` drives headless Chromium
//! over it with Playwright and checks what a user sees: the table fits a
//! 1400 px window, the filters hide what they say, links go where they
//! should, a shared reason is listed once, a failure's picture shows its
//! window and event. Every failed check fails this test.
//!
//! It installs what it needs, as the peer tests do: playwright-core into
//! `.peers/matrix-browser/` with `npm ci` from the hash-locked
//! `reports/browser/package-lock.json`, and Debian's `chromium` package with
//! apt-get when `/usr/bin/chromium` is missing (as root; otherwise it says
//! how). Screenshots and the page go to `$XDS_MATRIX_SCREENSHOTS`, or
//! `<target>/tmp/matrix-browser/`.
//!
//! Nothing outlives it: the node script and its installers run in process
//! groups killed when they finish or overrun their time, and any Chromium
//! still using the run's profile afterwards is killed (and fails the test).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use xds_conformance_reports::matrix::{
    CellStatus, ClientColumn, DocEvent, DocKind, MarkKind, Matrix, MatrixCell, MatrixRow,
    TimelineDoc, TimelineMark,
};
use xds_conformance_reports::write_matrix;

const CHROMIUM: &str = "/usr/bin/chromium";
/// The whole browser check, Chromium's start included (about 10 s).
const CHECK_LIMIT: Duration = Duration::from_secs(120);
const NPM_LIMIT: Duration = Duration::from_secs(600);
const APT_LIMIT: Duration = Duration::from_secs(1800);

const CLIENTS: [(&str, &str); 5] = [
    ("reference", "xds-reference-client 0.1.0"),
    ("grpc-rust", "xds-client 0.1.0-alpha.4"),
    ("grpcio", "grpcio 1.85.0 (gRPC C-core)"),
    ("grpc-js", "@grpc/grpc-js-xds 1.14.1"),
    ("envoy", "Envoy 1.40.0"),
];

/// The reason repeated most, as the harness words it.
const NO_WATCH: &str = "the client lacks a resource watch API";
const NO_DIAL: &str = "the client lacks dial, RPCs";
const NO_DELTA: &str = "the client lacks incremental (delta) xDS";
const NO_FALLBACK: &str =
    "needs capability `fallback`: the grpc-js adapter cannot configure fallback servers";
const NO_ADMIN: &str = "the client lacks an admin API (Envoy's config dump and stats)";
const EXPECTED: &str = "watcher event type=CDS name=c1 event=changed";

/// The failing cell with a mark: a53/ignore-resource-deletion on reference.
const MARKED: (&str, usize) = ("a53/ignore-resource-deletion", 0);

/// Where each group's header must link (first tags in the matrix below).
const GROUP_URLS: [(&str, &str); 10] = [
    (
        "A27",
        "https://github.com/grpc/proposal/blob/master/A27-xds-global-load-balancing.md",
    ),
    (
        "A36",
        "https://github.com/grpc/proposal/blob/master/A36-xds-for-servers.md",
    ),
    (
        "A46",
        "https://github.com/grpc/proposal/blob/master/A46-xds-nack-semantics-improvement.md",
    ),
    (
        "A47",
        "https://github.com/grpc/proposal/blob/master/A47-xds-federation.md",
    ),
    (
        "A53",
        "https://github.com/grpc/proposal/blob/master/A53-xds-ignore-resource-deletion.md",
    ),
    (
        "A57",
        "https://github.com/grpc/proposal/blob/master/A57-xds-client-failure-mode-behavior.md",
    ),
    (
        "A65",
        "https://github.com/grpc/proposal/blob/master/A65-xds-mtls-creds-in-bootstrap.md",
    ),
    (
        "A71",
        "https://github.com/grpc/proposal/blob/master/A71-xds-fallback.md",
    ),
    (
        "A88",
        "https://github.com/grpc/proposal/blob/master/A88-xds-data-error-handling.md",
    ),
    (
        "delta",
        "https://www.envoyproxy.io/docs/envoy/latest/api-docs/xds_protocol#incremental-xds",
    ),
];

fn ev(at_ms: u64, lane: &str, to: Option<&str>, kind: DocKind, label: &str) -> DocEvent {
    DocEvent {
        at_ms,
        lane: lane.into(),
        to_lane: to.map(str::to_string),
        kind,
        label: label.into(),
        detail: format!(
            "{:>3}.{:03}s  {lane:<8} {label}",
            at_ms / 1000,
            at_ms % 1000
        ),
    }
}

/// A run's timeline: a watch answered, then a deletion at 15 s (event 6 is
/// the watcher hearing of it).
fn timeline() -> TimelineDoc {
    use DocKind::*;
    let p = Some("primary");
    let c = Some("client");
    TimelineDoc {
        lanes: vec!["primary".into(), "client".into()],
        events: vec![
            ev(0, "step", None, Step, "watch CDS c1"),
            ev(0, "client", p, Request, "CDS [c1] (initial)"),
            ev(0, "primary", c, Response, "CDS v=1 n=A [c1]"),
            ev(0, "client", p, Ack, "CDS ACK v=1 n=A"),
            ev(0, "client", None, ClientEvent, "watcher CDS c1: changed"),
            ev(15_000, "primary", c, Response, "CDS v=2 n=B []"),
            ev(
                15_000,
                "client",
                None,
                ClientEvent,
                "watcher CDS c1: does not exist",
            ),
            ev(
                15_002,
                "client",
                None,
                Csds,
                "CDS c1: ACKED -> DOES_NOT_EXIST",
            ),
        ],
    }
}

/// A cell from a short code: `P` pass, `N:`/`K:`/`D:`/`F:`/`E:` n/a,
/// known failure, divergent, FAIL, ERROR with their text.
fn cell(code: &str, client: &str, scenario: &str) -> MatrixCell {
    let (status, detail) = match code.split_once(':') {
        None => (CellStatus::Pass, String::new()),
        Some(("N", why)) => (CellStatus::NotApplicable, why.to_string()),
        Some(("K", why)) => (
            CellStatus::KnownFailure,
            format!(
                "{why}\n\nstep 4: expected request type=LDS kind=nack within 1s\n  saw: an ACK"
            ),
        ),
        Some(("D", why)) => (CellStatus::Divergent, why.to_string()),
        Some(("F", why)) => (CellStatus::Fail, why.to_string()),
        Some(("E", why)) => (CellStatus::Error, why.to_string()),
        Some((other, _)) => panic!("unknown cell code {other}"),
    };
    let ran = status != CellStatus::NotApplicable;
    // What the harness records beside an n/a's sentence (these test
    // reasons hold no comma inside one capability).
    let missing = match (&status, detail.strip_prefix("the client lacks ")) {
        (CellStatus::NotApplicable, Some(list)) => list.split(", ").map(String::from).collect(),
        _ => Vec::new(),
    };
    let mark = ((scenario, client) == (MARKED.0, CLIENTS[MARKED.1].0)).then(|| TimelineMark {
        kind: MarkKind::Failing,
        window_ms: Some((15_000, 16_000)),
        event: Some(6),
        expected: EXPECTED.into(),
    });
    MatrixCell {
        status,
        detail,
        timeline_file: ran
            .then(|| format!("{client}/timelines/{}.txt", scenario.replace('/', "__"))),
        timeline: ran.then(timeline),
        mark,
        virtual_duration: Duration::from_millis(15_002),
        wall_duration: Duration::from_millis(140),
        missing,
    }
}

/// 21 scenarios in file order (as `discover` lists them), five clients.
fn matrix(scenarios_dir: &Path) -> Matrix {
    let na = |why: &str| format!("N:{why}");
    let rows: Vec<(&str, &[&str], [String; 5])> = vec![
        ("a27/dial-full-chain", &["A27"], ["P".into(), na(NO_DIAL), "P".into(), "P".into(), "P".into()]),
        ("a27/node-on-the-first-request-of-every-stream", &["A27"], ["P".into(), "P".into(), "P".into(), "P".into(), "P".into()]),
        (
            "a27/resource-timer-does-not-start-until-the-request-is-sent-on-a-new-stream-after-reconnect",
            &["A27", "A57"],
            ["P".into(), "P".into(), "P".into(), "P".into(), "P".into()],
        ),
        ("a27/watch-cds-then-eds", &["A27"], ["P".into(), "P".into(), na(NO_WATCH), na(NO_WATCH), na(NO_WATCH)]),
        (
            "a36/server-listener-resolves",
            &["A36"],
            [
                "P".into(),
                na("the client lacks xDS-enabled servers"),
                "P".into(),
                "K:grpc-js-xds 1.14.1 reports a Listener without an address as UNAVAILABLE \"No socket_address set in Listener resource ...\" (C-core: FAILED_PRECONDITION \"... is not a TCP listener\")".into(),
                na("the client lacks xDS-enabled servers"),
            ],
        ),
        (
            "a46/nack-keeps-valid-resources",
            &["A46"],
            [
                "P".into(),
                "P".into(),
                "D:gRPC C-core: the NACK of a partly valid response carries the response's version_info".into(),
                "P".into(),
                na(NO_ADMIN),
            ],
        ),
        (
            "a46/nack-names-the-bad-index",
            &["A46", "A27"],
            [
                "P".into(),
                "P".into(),
                "K:the NACK does not name the undecodable entry by index (its error_detail text is implementation-defined)".into(),
                "K:grpc-js: the NACK carries the response's version_info, its error_detail code is UNAVAILABLE (14), and its message names no resource".into(),
                na(NO_ADMIN),
            ],
        ),
        ("a46/wrong-type-url", &["A46"], ["P".into(), "P".into(), "P".into(), "P".into(), "P".into()]),
        (
            "a47/authority-templates",
            &["A47"],
            [
                "P".into(),
                na("the client lacks authorities and listener name templates (gRFC A47), a resource watch API"),
                "P".into(),
                "P".into(),
                na(NO_WATCH),
            ],
        ),
        (
            MARKED.0,
            &["A53"],
            [
                "F:step 7: expected watcher CDS c1 changed within 1s\n  saw instead at 15.000s: watcher CDS c1: resource does not exist\n  (a deleted resource must be kept: server feature `ignore_resource_deletion`)".into(),
                "P".into(),
                "K:gRPC C-core 1.85 reports an ignored deletion in CSDS as DOES_NOT_EXIST, with the cached version still attached (ResourceState::SetDoesNotExistOnLdsOrCdsDeletion)".into(),
                "P".into(),
                na(NO_WATCH),
            ],
        ),
        ("a57/does-not-exist-timer", &["A57"], ["P".into(), "P".into(), na(NO_WATCH), na(NO_WATCH), na(NO_WATCH)]),
        ("a57/server-unreachable-at-start", &["A57"], ["P".into(), "P".into(), "P".into(), "P".into(), "P".into()]),
        ("a57/stream-closed-keeps-cache", &["A57"], ["P".into(), "P".into(), "P".into(), "P".into(), na(NO_ADMIN)]),
        (
            "a65/mtls-to-the-xds-server",
            &["A65", "A57"],
            [
                "P".into(),
                na("the client lacks TLS on the xDS channel (gRFC A65 `tls` channel_creds)"),
                "P".into(),
                "P".into(),
                "E:client under test exited: signal 6 (SIGABRT) after 3ms; its last words: terminate called after throwing an instance of 'std::system_error' what(): Resource temporarily unavailable".into(),
            ],
        ),
        ("a71/fallback-on-does-not-exist", &["A71", "A57"], ["P".into(), na(NO_WATCH), "P".into(), na(NO_FALLBACK), na(NO_WATCH)]),
        (
            "a71/fallback-then-primary-recovers",
            &["A71"],
            [
                "P".into(),
                na(NO_DIAL),
                "P".into(),
                na(NO_FALLBACK),
                "D:Envoy's failover goes back to the primary only when the fallback's stream ends".into(),
            ],
        ),
        ("a71/fallback-to-secondary", &["A71"], ["P".into(), na(NO_DIAL), "P".into(), na(NO_FALLBACK), "P".into()]),
        ("a88/data-error-keeps-cache", &["A88"], ["P".into(), "P".into(), na("the client lacks CSDS, profile a88"), na("the client lacks CSDS, profile a88"), na(NO_WATCH)]),
        ("delta/initial-subscribe", &["delta"], ["P".into(), na(NO_DELTA), na(NO_DELTA), na(NO_DELTA), "P".into()]),
        ("delta/nack-keeps-valid", &["delta", "A46"], ["P".into(), na(NO_DELTA), na(NO_DELTA), na(NO_DELTA), "P".into()]),
        ("delta/wildcard", &["delta"], ["P".into(), na(NO_DELTA), na(NO_DELTA), na(NO_DELTA), na(NO_ADMIN)]),
    ];
    Matrix {
        title: "xds-conformance matrix".into(),
        clients: CLIENTS
            .iter()
            .map(|(name, version)| ClientColumn {
                name: name.to_string(),
                version: version.to_string(),
            })
            .collect(),
        rows: rows
            .into_iter()
            .map(|(scenario, spec, codes)| MatrixRow {
                scenario: scenario.into(),
                spec: spec.iter().map(|s| s.to_string()).collect(),
                description: format!("What {scenario} checks, and why that is right."),
                source: Some(
                    scenarios_dir
                        .join(format!("{scenario}.yaml"))
                        .display()
                        .to_string(),
                ),
                cells: codes
                    .iter()
                    .zip(CLIENTS)
                    .map(|(code, (client, _))| cell(code, client, scenario))
                    .collect(),
            })
            .collect(),
    }
}

/// Runs `command` with its output in `log`, in its own process group,
/// for at most `limit`; whatever happens, the group is killed after.
fn run_bounded(mut command: Command, limit: Duration, log: &Path) -> Result<ExitStatus, String> {
    let out = File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    command.stdin(Stdio::null()).stdout(out).stderr(err);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let outcome = match rx.recv_timeout(limit) {
        Ok(Ok(status)) => Ok(status),
        Ok(Err(e)) => Err(format!("{command:?} could not be waited for: {e}")),
        Err(_) => Err(format!("{command:?} did not finish within {limit:?}")),
    };
    // SAFETY: kill(2) on the group this test created, and on its leader.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
    let _ = waiter.join();
    outcome
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Debian's Chromium, installed with apt-get when missing.
fn ensure_chromium(out: &Path) {
    if Path::new(CHROMIUM).exists() {
        return;
    }
    // SAFETY: geteuid(2) has no failure mode.
    if unsafe { libc::geteuid() } != 0 {
        panic!(
            "{CHROMIUM} is missing and this test is not root, so it cannot install it: \
             run `sudo apt-get install chromium` once"
        );
    }
    let log = out.join("apt-get.log");
    let apt = |args: &[&str]| {
        let mut command = Command::new("apt-get");
        command.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        run_bounded(command, APT_LIMIT, &log)
    };
    eprintln!(
        "matrix_browser: installing chromium with apt-get (log: {})",
        log.display()
    );
    let installed = matches!(apt(&["install", "-y", "chromium"]), Ok(s) if s.success())
        // Package lists may be missing or stale on a fresh machine.
        || (matches!(apt(&["update"]), Ok(s) if s.success())
            && matches!(apt(&["install", "-y", "chromium"]), Ok(s) if s.success()));
    assert!(
        installed && Path::new(CHROMIUM).exists(),
        "could not install chromium with `apt-get install -y chromium`; last lines of {}:\n{}",
        log.display(),
        tail(&log)
    );
}

/// playwright-core in `.peers/matrix-browser/`, reinstalled when the
/// committed lock changes; returns that folder.
fn ensure_playwright(root: &Path, out: &Path) -> PathBuf {
    let dest = root.join(".peers/matrix-browser");
    let lock = std::fs::read(root.join("reports/browser/package-lock.json"))
        .expect("reports/browser/package-lock.json is readable");
    let installed = std::fs::read(dest.join(".installed")).ok();
    if installed.as_ref() == Some(&lock) && dest.join("node_modules/playwright-core").is_dir() {
        return dest;
    }
    let log = out.join("npm-install.log");
    let mut command = Command::new("bash");
    command.arg("reports/browser/install.sh").current_dir(root);
    match run_bounded(command, NPM_LIMIT, &log) {
        Ok(s) if s.success() => dest,
        outcome => panic!(
            "installing playwright-core (reports/browser/install.sh) failed: {outcome:?}; \
             last lines of {}:\n{}",
            log.display(),
            tail(&log)
        ),
    }
}

/// Processes whose command line names the run's profile directory
/// (Chromium's: the browser's `--user-data-dir`, its crash handlers'
/// `--database` in it; unique to this run), with their process groups.
fn processes_using(profile: &Path) -> Vec<(i32, i32)> {
    let needle = profile.display().to_string();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !cmdline
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
        {
            continue;
        }
        // /proc/PID/stat: `pid (comm) state ppid pgrp ...`; comm may hold
        // spaces and parentheses, so count from the last `)`.
        let pgrp = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| {
                let rest = &stat[stat.rfind(')')? + 1..];
                rest.split_whitespace().nth(2)?.parse().ok()
            })
            .unwrap_or(pid);
        found.push((pid, pgrp));
    }
    found
}

/// Waits up to `limit` for `pid` to exit, without polling: a pidfd becomes
/// readable when its process ends.
fn wait_gone(pid: i32, limit: Duration) {
    // SAFETY: pidfd_open(2) and poll(2) on a descriptor this function owns
    // and closes.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
        if fd < 0 {
            return; // already gone
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        libc::poll(&mut p, 1, limit.as_millis() as i32);
        libc::close(fd);
    }
}

/// Kills every process still using `profile` (their whole groups: a
/// renderer need not name the profile) and returns their pids. (Killed
/// processes may linger as zombies until PID 1 reaps them; they have no
/// command line, so they are not counted.)
fn end_chromium(profile: &Path) -> Vec<i32> {
    let found = processes_using(profile);
    // SAFETY: getpgrp(2) cannot fail; kill(2) on processes this run started
    // (identified by its own profile directory).
    let own = unsafe { libc::getpgrp() };
    for &(pid, pgrp) in &found {
        unsafe {
            if pgrp > 1 && pgrp != own {
                libc::kill(-pgrp, libc::SIGKILL);
            }
            libc::kill(pid, libc::SIGKILL);
        }
    }
    for &(pid, _) in &found {
        wait_gone(pid, Duration::from_secs(10));
    }
    found.iter().map(|(pid, _)| *pid).collect()
}

/// Kills this run's Chromium if the test ends early (a panic).
struct ChromiumGuard<'a>(&'a Path);

impl Drop for ChromiumGuard<'_> {
    fn drop(&mut self) {
        end_chromium(self.0);
    }
}

#[test]
fn matrix_page_in_a_browser() {
    // At run time: a target directory shared between checkouts (as CI's
    // cache is) holds whichever checkout's path was compiled in.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let root = manifest
        .parent()
        .expect("the reports crate is in the workspace");
    let out = std::env::var_os("XDS_MATRIX_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("matrix-browser"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("the output folder can be created");
    assert!(
        Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "node is not on PATH (Node >= 20 is needed to drive the browser)"
    );
    ensure_chromium(&out);
    let modules = ensure_playwright(root, &out);

    // The report tree as the harness leaves it: scenario files in the
    // repository, the matrix and its timelines in reports-out/matrix/.
    let tree = out.join("tree");
    let scenarios = tree.join("scenarios");
    let report_dir = tree.join("reports-out/matrix");
    let mut m = matrix(&scenarios);
    // Sources as the harness has them: `matrix scenarios` reads files
    // relative to the working directory, the peer test absolute ones.
    let cwd = std::env::current_dir().expect("a working directory");
    for row in m.rows.iter_mut().skip(1).step_by(2) {
        let absolute = PathBuf::from(row.source.take().unwrap());
        row.source = Some(relative_from(&cwd, &absolute).display().to_string());
    }
    for row in &m.rows {
        let source = PathBuf::from(row.source.as_ref().unwrap());
        std::fs::create_dir_all(source.parent().unwrap()).unwrap();
        std::fs::write(&source, yaml(&row.scenario)).unwrap();
        for x in &row.cells {
            if let Some(f) = &x.timeline_file {
                let path = report_dir.join(f);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, "   0.000s  step     == watch CDS c1\n").unwrap();
            }
        }
    }
    write_matrix(&m, &report_dir).expect("the matrix can be written");

    // What the page must show, from the data.
    let names = |f: &dyn Fn(&MatrixRow) -> bool| -> Vec<&str> {
        m.rows
            .iter()
            .filter(|r| f(r))
            .map(|r| r.scenario.as_str())
            .collect()
    };
    let all_pass = names(&|r| r.cells.iter().all(|x| x.status == CellStatus::Pass));
    let mut groups = serde_json::Map::new();
    for (tag, url) in GROUP_URLS {
        groups.insert(
            tag.into(),
            json!({ "url": url, "rows": names(&|r| r.spec[0] == tag) }),
        );
    }
    let note_count = m
        .rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|x| x.status == CellStatus::NotApplicable && x.detail == NO_WATCH)
        .count();
    let hidden_column = CLIENTS
        .iter()
        .position(|(name, _)| *name == "grpc-js")
        .unwrap();
    let shown_note = m
        .rows
        .iter()
        .map(|r| &r.cells)
        .flat_map(|cells| cells.iter().enumerate())
        .filter(|(c, x)| {
            *c != hidden_column && x.status == CellStatus::NotApplicable && x.detail == NO_WATCH
        })
        .count();
    // "a resource watch API": every n/a that lacks it, alone or not.
    let lack_what = "a resource watch API";
    let lacking = |skip: Option<usize>| {
        m.rows
            .iter()
            .flat_map(|r| r.cells.iter().enumerate())
            .filter(|(c, x)| Some(*c) != skip && x.missing.iter().any(|w| w == lack_what))
            .map(|(_, x)| x.missing.len())
            .collect::<Vec<_>>()
    };
    let lack_count = lacking(None).len();
    let lack_alone = lacking(None).iter().filter(|n| **n == 1).count();
    let lack_shown = lacking(Some(hidden_column)).len();
    let marked_row = m.rows.iter().position(|r| r.scenario == MARKED.0).unwrap();
    // One row of each kind.
    let yaml_rows = ["a27/dial-full-chain", "a46/nack-keeps-valid-resources"];
    let yaml_expected: Vec<_> = yaml_rows
        .iter()
        .map(|scenario| {
            json!({
                "scenario": scenario,
                // Copied into the report folder, so the link holds in an
                // uploaded folder too.
                "href": format!("scenarios/{scenario}.yaml"),
                "file": report_dir.join(format!("scenarios/{scenario}.yaml")),
                "content": yaml(scenario),
            })
        })
        .collect();
    let profile = tempfile::tempdir().expect("a temporary profile directory");
    let config = json!({
        "page": report_dir.join("matrix.html"),
        "out": out,
        "profile": profile.path(),
        "modules": modules,
        "chromium": CHROMIUM,
        "timeout_ms": (CHECK_LIMIT - Duration::from_secs(10)).as_millis() as u64,
        "expect": {
            "clients": CLIENTS.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            "rows": m.rows.len(),
            "all_pass": all_pass,
            // A pass in a row that stays when passes are hidden.
            "pass_run": "r0c0",
            "hide_client": "grpc-js",
            "spec_choice": "A71",
            "groups": groups,
            "search": { "q": "nack", "rows": names(&|r| r.scenario.contains("nack")) },
            "yaml": yaml_expected,
            "timeline_links": m.rows.iter().flat_map(|r| &r.cells).filter(|x| x.timeline_file.is_some()).count(),
            "note": { "text": NO_WATCH, "count": note_count, "count_shown": shown_note },
            "lack": {
                "what": lack_what,
                "count": lack_count,
                "alone": lack_alone,
                "count_shown": lack_shown,
            },
            "failing_mark": { "id": format!("r{marked_row}c{}", MARKED.1), "expected": EXPECTED },
        }
    });
    // The oracle itself must be what the checks assume.
    assert_eq!(all_pass.len(), 4);
    assert_eq!(note_count, 11);
    assert!(0 < shown_note && shown_note < note_count);
    assert!(lack_alone < lack_count && 0 < lack_shown && lack_shown < lack_count);
    let relative: Vec<bool> = yaml_rows
        .iter()
        .map(|s| {
            let row = m.rows.iter().find(|r| r.scenario == *s).unwrap();
            Path::new(row.source.as_ref().unwrap()).is_relative()
        })
        .collect();
    assert_eq!(relative, [false, true], "one absolute source, one relative");
    assert!(!all_pass.contains(&m.rows[0].scenario.as_str()));
    assert_eq!(m.rows[0].cells[0].status, CellStatus::Pass);
    let config_path = out.join("check-config.json");
    std::fs::write(&config_path, serde_json::to_string_pretty(&config).unwrap()).unwrap();

    let guard = ChromiumGuard(profile.path());
    let log = out.join("check-matrix.log");
    let mut node = Command::new("node");
    node.arg(root.join("reports/browser/check-matrix.mjs"))
        .arg(&config_path);
    let started = Instant::now();
    let outcome = run_bounded(node, CHECK_LIMIT, &log);
    let took = started.elapsed();
    let left_behind = end_chromium(profile.path());
    drop(guard);
    let still_there = processes_using(profile.path());
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!(
        "{output}\nbrowser check took {took:.1?}; screenshots in {}",
        out.display()
    );
    assert!(
        still_there.is_empty(),
        "Chromium processes survive SIGKILL: {still_there:?}"
    );
    // Both are reported: a check that failed may also have left Chromium.
    let mut problems = Vec::new();
    match outcome {
        Ok(status) if status.success() => {}
        outcome => problems.push(format!(
            "the browser check failed ({outcome:?}); see the lines marked FAIL above, \
             {} and the screenshots in {}",
            log.display(),
            out.display()
        )),
    }
    if !left_behind.is_empty() {
        problems.push(format!(
            "Chromium was still running after the check (killed now): {left_behind:?}"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for shot in [
        "matrix-top.png",
        "matrix-full.png",
        "matrix-filtered.png",
        "matrix-failing-run.png",
    ] {
        assert!(
            std::fs::metadata(out.join(shot)).is_ok_and(|m| m.len() > 0),
            "no screenshot {shot}"
        );
    }
}

/// The path from directory `base` to `target`, both absolute and
/// normalised (as `current_dir` and the test's own paths are).
fn relative_from(base: &Path, target: &Path) -> PathBuf {
    let base: Vec<_> = base.components().collect();
    let target: Vec<_> = target.components().collect();
    let common = base.iter().zip(&target).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    out.extend(&target[common..]);
    out
}

fn yaml(scenario: &str) -> String {
    format!(
        "# the browser test's stand-in for {scenario}\ndescription: stand-in\nspec: []\nsteps: []\n"
    )
}
