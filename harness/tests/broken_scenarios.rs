//! Every file in `tests/broken/` is a scenario that must NOT load. Its first
//! line says where and why: `# expect: <line>:<column>: <message fragment>`.
//! The loader must report exactly that position, a message containing the
//! fragment, and render it as `<path>:<line>:<column>: ...` with a snippet.

use std::path::{Path, PathBuf};

use xds_conformance::scenario::load_file;

#[path = "support/located.rs"]
mod located;

use located::Located as Expectation;

fn expectation(path: &Path, text: &str) -> Result<Expectation, String> {
    let first = text.lines().next().unwrap_or_default();
    let spec = first.strip_prefix("# expect: ").ok_or_else(|| {
        format!(
            "{}: first line must be `# expect: L:C: fragment`",
            path.display()
        )
    })?;
    located::parse(path, first, spec)
}

fn broken_files() -> Vec<PathBuf> {
    let dir = xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("tests/broken");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_broken_scenario_fails_where_and_how_it_says() {
    let files = broken_files();
    assert!(
        files.len() >= 20,
        "expected at least 20 broken scenarios, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let expected = match expectation(path, &text) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let error = match load_file(path) {
            Ok(_) => {
                failures.push(format!("{}: loaded, but should fail", path.display()));
                continue;
            }
            Err(e) => e,
        };
        let rendered = error.to_string();
        let prefix = format!("{}:{}:{}: ", path.display(), expected.line, expected.column);
        let ok = error.line == expected.line
            && error.column == expected.column
            && error.message.contains(&expected.fragment)
            && rendered.starts_with(&prefix)
            && rendered.contains('^');
        if !ok {
            failures.push(format!(
                "{}: expected {}:{}: ...{}...\n got:\n{rendered}",
                path.display(),
                expected.line,
                expected.column,
                expected.fragment
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} broken scenarios misreported:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn an_unreadable_file_is_an_error_without_a_position() {
    let path = xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"))
        .join("tests/broken/does-not-exist.yaml");
    let error = load_file(&path).expect_err("missing file");
    assert_eq!((error.line, error.column), (0, 0));
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: cannot read", path.display())),
        "{error}"
    );
}
