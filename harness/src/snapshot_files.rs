//! Timeline snapshots kept beside scenario files, for a scenario
//! repository with no Rust code of its own (`run --snapshots
//! check|update`). The snapshot of `DIR/NAME.yaml` played on client `C` is
//! `DIR/snapshots/NAME.C.snap` (`NAME@delta.C.snap` for the delta run of a
//! file with both protocols). It holds what this repository's own tests
//! snapshot with insta (`RunOutcome::snapshot`): a virtual-time run's
//! timeline, or the normalised rendering of a real-time run, after one
//! header line. Only runs that pass or diverge have one, of scenarios that
//! keep snapshots (`snapshot: false` and `no_snapshot_for` opt out): where
//! a failing run stops depends on the client.
//!
//! It knows nothing of clients or of how runs are played: it compares and
//! writes text.

use std::path::{Path, PathBuf};

use xds_conformance_reports::Verdict;

use crate::scenario::Scenario;

/// What `--snapshots` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SnapshotMode {
    /// A run whose timeline differs from its snapshot, or has none,
    /// fails, with the diff.
    Check,
    /// Writes each run's snapshot (verdicts unchanged).
    Update,
}

/// Where the snapshot of `run` (a variant of the scenario file `source`)
/// on `client` lives.
pub fn path(source: &Path, run: &Scenario, client: &str) -> PathBuf {
    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let variant = run
        .name
        .rsplit_once('@')
        .map(|(_, v)| format!("@{v}"))
        .unwrap_or_default();
    let folder = source.parent().unwrap_or(Path::new("."));
    folder
        .join("snapshots")
        .join(format!("{stem}{variant}.{}.snap", file_safe(client)))
}

/// A client name as a file name part (an adapter's name is free text).
fn file_safe(client: &str) -> String {
    client
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether `run` on `client`, with `verdict`, has a snapshot.
pub fn kept(run: &Scenario, client: &str, verdict: &Verdict) -> bool {
    run.snapshot
        && !run.no_snapshot_for.contains_key(client)
        && matches!(
            verdict,
            Verdict::Pass | Verdict::Divergent { .. } | Verdict::Flaky { .. }
        )
}

fn header(run: &Scenario, client: &str) -> String {
    format!(
        "# xds-conformance snapshot of {} on {client} (`run --snapshots update` rewrites it)\n",
        run.name
    )
}

/// Checks or writes the snapshot of `run` on `client` (see the module
/// docs) and returns the run's verdict: a failure when a check finds no
/// snapshot, a different one, or cannot read it; unchanged otherwise. A
/// snapshot that cannot be written is a failure too (nothing is lost
/// silently). Written whole: a temporary file renamed into place.
pub fn apply(
    mode: SnapshotMode,
    source: &Path,
    run: &Scenario,
    client: &str,
    snapshot: &str,
    verdict: Verdict,
) -> Verdict {
    if !kept(run, client, &verdict) {
        return verdict;
    }
    let file = path(source, run, client);
    let fail = |message: String| Verdict::Fail { message };
    match mode {
        SnapshotMode::Update => match write_whole(&file, &(header(run, client) + snapshot)) {
            Ok(()) => verdict,
            Err(e) => fail(format!("cannot write the snapshot {}: {e}", file.display())),
        },
        SnapshotMode::Check => match read_snapshot(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => fail(format!(
                "no snapshot {} (`run --snapshots update` writes it; this run's is {}: \
                 `review` accepts it){}",
                file.display(),
                pending_path(&file).display(),
                keep_pending(&file, &(header(run, client) + snapshot))
            )),
            Err(e) => fail(format!("cannot read the snapshot {}: {e}", file.display())),
            Ok(stored) => {
                let stored = stored
                    .split_once('\n')
                    .filter(|(first, _)| first.starts_with("# xds-conformance snapshot"))
                    .map_or(stored.as_str(), |(_, rest)| rest);
                if stored == snapshot {
                    // A pending one from an earlier run is stale now.
                    let _ = std::fs::remove_file(pending_path(&file));
                    verdict
                } else {
                    fail(format!(
                        "the timeline differs from its snapshot {} (`review` shows this run's, \
                         {}, to accept or reject; `run --snapshots update` rewrites them \
                         all){}:\n{}",
                        file.display(),
                        pending_path(&file).display(),
                        keep_pending(&file, &(header(run, client) + snapshot)),
                        similar::TextDiff::from_lines(stored, snapshot)
                            .unified_diff()
                            .context_radius(2)
                            .header("snapshot", "this run")
                    ))
                }
            }
        },
    }
}

/// Where a check keeps a run's snapshot that differs from the stored one
/// (or has none), for `review`: `NAME.snap.new` beside it, as insta does.
pub fn pending_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".new");
    file.with_file_name(name)
}

/// Writes the pending snapshot; `""`, or why it could not be kept.
fn keep_pending(file: &Path, text: &str) -> String {
    match write_whole(&pending_path(file), text) {
        Ok(()) => String::new(),
        Err(e) => format!(" (not kept for review: {e})"),
    }
}

/// A stored snapshot that no run has any more: its scenario file is gone
/// (renamed, removed), it no longer plays that protocol, or keeps no
/// snapshots.
#[derive(Debug, PartialEq, Eq)]
pub struct Orphan {
    pub path: PathBuf,
    pub why: String,
}

/// The orphans in `folder/snapshots/`, given the scenario files of
/// `folder` (each with what loading it gave: the snapshots of one that
/// does not load are not judged).
pub fn orphans(
    folder: &Path,
    scenarios: &[(PathBuf, Result<Scenario, String>)],
) -> std::io::Result<Vec<Orphan>> {
    let dir = folder.join("snapshots");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if !name.ends_with(".snap") {
            continue;
        }
        // The scenario whose stem the name starts with (the longest: a
        // stem may be another's prefix), then `@variant` or the client.
        let owner = scenarios
            .iter()
            .filter_map(|(source, loaded)| {
                let stem = source.file_stem()?.to_string_lossy().into_owned();
                let rest = name.strip_prefix(&stem)?;
                (rest.starts_with('.') || rest.starts_with('@')).then_some((stem, rest, loaded))
            })
            .max_by_key(|(stem, _, _)| stem.len());
        let why = match owner {
            None => Some("no scenario file of its name here".to_string()),
            Some((_, _, Err(_))) => None,
            Some((_, rest, Ok(scenario))) => {
                let variant = rest
                    .strip_prefix('@')
                    .and_then(|r| r.split_once('.'))
                    .map(|(v, _)| v);
                let runs = scenario.variants();
                let run = runs
                    .iter()
                    .find(|run| run.name.rsplit_once('@').map(|(_, v)| v) == variant);
                match run {
                    None => Some(format!(
                        "{} has no {} run",
                        scenario.name,
                        variant.unwrap_or("default")
                    )),
                    Some(run) if !run.snapshot => Some(format!(
                        "{} keeps no snapshot (`snapshot: false`)",
                        run.name
                    )),
                    Some(_) => None,
                }
            }
        };
        if let Some(why) = why {
            found.push(Orphan { path: file, why });
        }
    }
    Ok(found)
}

/// The pending snapshots (`*.snap.new`) in `folder/snapshots/`, each with
/// the snapshot it would replace.
pub fn pending(folder: &Path) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    let dir = folder.join("snapshots");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut found: Vec<(PathBuf, PathBuf)> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let stored = name.strip_suffix(".new").filter(|n| n.ends_with(".snap"))?;
            Some((path.with_file_name(stored), path))
        })
        .map(|(stored, new)| (new, stored))
        .collect();
    found.sort();
    Ok(found)
}

/// The diff a review shows: the stored snapshot (or nothing) against the
/// pending one, headers left out.
pub fn review_diff(stored: &Path, pending: &Path) -> std::io::Result<String> {
    let body = |text: String| -> String {
        match text.split_once('\n') {
            Some((first, rest)) if first.starts_with("# xds-conformance snapshot") => {
                rest.to_string()
            }
            _ => text,
        }
    };
    let old = match read_snapshot(stored) {
        Ok(text) => body(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let new = body(read_snapshot(pending)?);
    Ok(similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&stored.display().to_string(), "this run")
        .to_string())
}

/// Accepts a pending snapshot: it replaces the stored one.
pub fn accept(pending: &Path, stored: &Path) -> std::io::Result<()> {
    let text = read_snapshot(pending)?;
    write_whole(stored, &text)?;
    std::fs::remove_file(pending)
}

/// The largest snapshot read: a timeline file is cut at 16 MiB, so a
/// snapshot past this is not one of ours.
const MAX_SNAPSHOT_BYTES: u64 = 32 << 20;

/// A stored snapshot: a regular file (asked before opening, so a FIFO in
/// its place cannot block the run), read to at most the limit.
fn read_snapshot(file: &Path) -> std::io::Result<String> {
    use xds_vocabulary::files::{ReadError, read_regular_text};
    read_regular_text(file, MAX_SNAPSHOT_BYTES).map_err(|e| match e {
        ReadError::Io(e) => e,
        other => std::io::Error::other(other.to_string()),
    })
}

fn write_whole(file: &Path, text: &str) -> std::io::Result<()> {
    if let Some(folder) = file.parent() {
        std::fs::create_dir_all(folder)?;
    }
    xds_conformance_reports::write_whole(file, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "description: d\n{extra}servers:\n  primary: {{}}\nsteps:\n  - watch: {{ type: CDS, name: c1 }}\n"
        );
        load_str("x/ok.yaml", &text).expect("a scenario")
    }

    #[test]
    fn a_run_is_checked_against_what_update_wrote() {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let source = folder.path().join("ok.yaml");
        let run = scenario("");
        let check = |text: &str| {
            apply(
                SnapshotMode::Check,
                &source,
                &run,
                "my client",
                text,
                Verdict::Pass,
            )
        };
        let Verdict::Fail { message } = check("a\nb\n") else {
            panic!("no snapshot yet must fail")
        };
        assert!(message.contains("no snapshot"), "{message}");
        let file = folder.path().join("snapshots/ok.my_client.snap");
        assert!(message.contains(&file.display().to_string()), "{message}");

        let written = apply(
            SnapshotMode::Update,
            &source,
            &run,
            "my client",
            "a\nb\n",
            Verdict::Pass,
        );
        assert_eq!(written, Verdict::Pass);
        assert!(
            std::fs::read_to_string(&file)
                .expect("written")
                .ends_with("a\nb\n")
        );
        assert_eq!(check("a\nb\n"), Verdict::Pass);

        let Verdict::Fail { message } = check("a\nc\n") else {
            panic!("a different timeline must fail")
        };
        assert!(message.contains("-b\n+c"), "{message}");
    }

    #[test]
    fn failing_runs_and_opted_out_scenarios_have_none() {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let source = folder.path().join("ok.yaml");
        let failed = Verdict::Fail {
            message: "m".into(),
        };
        let run = scenario("");
        assert_eq!(
            apply(SnapshotMode::Check, &source, &run, "c", "t", failed.clone()),
            failed
        );
        let off = scenario("snapshot: false\n");
        assert_eq!(
            apply(SnapshotMode::Check, &source, &off, "c", "t", Verdict::Pass),
            Verdict::Pass
        );
        assert!(!folder.path().join("snapshots").exists());
    }

    #[test]
    fn a_delta_variant_has_its_own_file() {
        let both = scenario("protocols: [sotw, delta]\n");
        let variants = both.variants();
        let names: Vec<PathBuf> = variants
            .iter()
            .map(|run| path(Path::new("s/ok.yaml"), run, "grpcio"))
            .collect();
        assert_eq!(
            names,
            [
                PathBuf::from("s/snapshots/ok.grpcio.snap"),
                PathBuf::from("s/snapshots/ok@delta.grpcio.snap")
            ]
        );
    }

    #[test]
    fn orphans_are_snapshots_no_run_has() {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let snaps = folder.path().join("snapshots");
        std::fs::create_dir_all(&snaps).expect("mkdir");
        for name in [
            "ok.c.snap",
            "ok@delta.c.snap",
            "ok-two.c.snap",
            "gone.c.snap",
            "off.c.snap",
            "ok.c.snap.new",
        ] {
            std::fs::write(snaps.join(name), "x").expect("write");
        }
        let scenarios = vec![
            (folder.path().join("ok.yaml"), Ok(scenario(""))),
            (
                folder.path().join("ok-two.yaml"),
                Ok(scenario("protocols: [sotw, delta]\n")),
            ),
            (
                folder.path().join("off.yaml"),
                Ok(scenario("snapshot: false\n")),
            ),
        ];
        let found: Vec<(String, String)> = orphans(folder.path(), &scenarios)
            .expect("listed")
            .into_iter()
            .map(|o| {
                (
                    o.path.file_name().unwrap().to_string_lossy().into_owned(),
                    o.why,
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                (
                    "gone.c.snap".to_string(),
                    "no scenario file of its name here".to_string()
                ),
                (
                    "off.c.snap".into(),
                    "ok keeps no snapshot (`snapshot: false`)".into()
                ),
                ("ok@delta.c.snap".into(), "ok has no delta run".into()),
            ]
        );
        let pending = pending(folder.path()).expect("listed");
        assert_eq!(
            pending,
            [(snaps.join("ok.c.snap.new"), snaps.join("ok.c.snap"))]
        );
    }
}
