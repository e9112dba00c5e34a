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
                "no snapshot {} (`run --snapshots update` writes it)",
                file.display()
            )),
            Err(e) => fail(format!("cannot read the snapshot {}: {e}", file.display())),
            Ok(stored) => {
                let stored = stored
                    .split_once('\n')
                    .filter(|(first, _)| first.starts_with("# xds-conformance snapshot"))
                    .map_or(stored.as_str(), |(_, rest)| rest);
                if stored == snapshot {
                    verdict
                } else {
                    fail(format!(
                        "the timeline differs from its snapshot {} (`run --snapshots update` \
                         rewrites it if the change is right):\n{}",
                        file.display(),
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

/// The largest snapshot read: a timeline file is cut at 16 MiB, so a
/// snapshot past this is not one of ours.
const MAX_SNAPSHOT_BYTES: u64 = 32 << 20;

/// A stored snapshot: a regular file (asked before opening, so a FIFO in
/// its place cannot block the run), read to at most the limit.
fn read_snapshot(file: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    if !std::fs::metadata(file)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    std::fs::File::open(file)?
        .take(MAX_SNAPSHOT_BYTES)
        .read_to_string(&mut text)?;
    Ok(text)
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
}
