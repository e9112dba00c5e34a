//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) and the
//! inputs that found bugs (`fuzz/regressions/<target>/`, kept apart so a
//! minimization never drops them) through the functions the fuzz targets
//! call (each crate's `fuzzing` module), on stable and without cargo-fuzz:
//! a bug found once stays fixed, and the corpus still reaches what it was
//! minimized for.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use xds_conformance::suite::manifest_dir;

/// Per target: its body, and whether an input got past the first checks
/// (a valid scenario or bootstrap, a valid resource, a response sent, a
/// protocol event read back). A corpus where no input does has stopped
/// exercising its target.
type Body = fn(&[u8]) -> bool;

const TARGETS: &[(&str, Body)] = &[
    ("scenario_loader", xds_conformance::fuzzing::scenario_loader),
    ("response_decoding", |data| {
        xds_reference_client::fuzzing::response(data).valid > 0
    }),
    ("fake_server_requests", |data| {
        xds_fake_server::fuzzing::requests(data).responses > 0
    }),
    ("adapter_line_codec", |data| {
        xds_client_under_test::fuzzing::adapter_lines(data).events > 0
    }),
    ("bootstrap", xds_reference_client::fuzzing::bootstrap),
];

fn fuzz_dir() -> PathBuf {
    manifest_dir(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_fuzz_target_has_a_replay() {
    let mut targets: Vec<String> = files(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|path| path.file_stem()?.to_str().map(str::to_string))
        .collect();
    targets.sort();
    let mut replayed: Vec<String> = TARGETS.iter().map(|(name, _)| name.to_string()).collect();
    replayed.sort();
    assert_eq!(targets, replayed);
}

#[test]
fn corpora_replay_without_failures() {
    let mut failures = Vec::new();
    for (target, body) in TARGETS {
        let inputs = files(&fuzz_dir().join("corpus").join(target));
        assert!(!inputs.is_empty(), "{target}: empty corpus");
        let regressions = fuzz_dir().join("regressions").join(target);
        let regressions = if regressions.is_dir() {
            files(&regressions)
        } else {
            Vec::new()
        };
        let mut reached = 0;
        for input in inputs.iter().chain(&regressions) {
            let data = std::fs::read(input).expect("a corpus file");
            match catch_unwind(AssertUnwindSafe(|| body(&data))) {
                Ok(true) => reached += 1,
                Ok(false) => {}
                Err(_) => failures.push(input.display().to_string()),
            }
        }
        assert!(
            reached > 0,
            "{target}: none of {} inputs gets past the first checks",
            inputs.len()
        );
    }
    assert!(failures.is_empty(), "failing inputs: {failures:#?}");
}
