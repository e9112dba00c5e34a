//! The hostile corpus: scenario files written to break the harness (huge
//! durations and counts, scripts longer than their limits, windows that
//! can never be met, misspelt client names, YAML bombs, binary garbage,
//! megabyte lines). Each file in `tests/hostile/` says on its first line
//! what must happen:
//!
//! - `# expect: L:C: fragment`: it does not load; the error is at that
//!   position, contains the fragment, and its rendering is bounded;
//! - `# outcome: VERDICT: fragment`: it loads and, played against the
//!   reference client, ends with that verdict (whose message contains the
//!   fragment), in bounded time and with a bounded timeline.
//!
//! Cases too large to commit are made here: a 50 MB file on one line, a
//! file of more steps than allowed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::limits::{MAX_FILE_BYTES, MAX_STEPS};
use xds_conformance::scenario::{ScenarioError, load_file, load_str};
use xds_conformance::timeline::MAX_EVENTS;

/// What a rendered loader error may take, whatever the input: the
/// message, a window of the offending line and two lines of context.
const MAX_RENDERED_ERROR: usize = 2000;

#[path = "support/located.rs"]
mod located;

enum Expectation {
    LoadError {
        line: u64,
        column: u64,
        fragment: String,
    },
    Outcome {
        label: String,
        fragment: String,
    },
}

fn expectation(path: &Path) -> Result<Expectation, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let first = text.lines().next().unwrap_or_default();
    if let Some(spec) = first.strip_prefix("# expect: ") {
        let located = located::parse(path, first, spec)?;
        return Ok(Expectation::LoadError {
            line: located.line,
            column: located.column,
            fragment: located.fragment,
        });
    }
    if let Some(spec) = first.strip_prefix("# outcome: ") {
        let (label, fragment) = spec
            .split_once(':')
            .ok_or_else(|| format!("{}: `# outcome: VERDICT: fragment`", path.display()))?;
        return Ok(Expectation::Outcome {
            label: label.trim().to_string(),
            fragment: fragment.trim().to_string(),
        });
    }
    Err(format!(
        "{}: first line must be `# expect: L:C: fragment` or `# outcome: VERDICT: fragment`",
        path.display()
    ))
}

fn hostile_files() -> Vec<PathBuf> {
    let dir =
        xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// A loader error is where the file says, says what it says, and is
/// short whatever the file was.
fn check_error(e: &ScenarioError, line: u64, column: u64, fragment: &str) -> Result<(), String> {
    let rendered = e.to_string();
    if (e.line, e.column) != (line, column) || !e.message.contains(fragment) {
        return Err(format!(
            "expected {line}:{column}: …{fragment}…, got {}:{}: {}",
            e.line, e.column, e.message
        ));
    }
    if rendered.len() > MAX_RENDERED_ERROR {
        return Err(format!(
            "the rendered error is {} bytes (at most {MAX_RENDERED_ERROR})",
            rendered.len()
        ));
    }
    Ok(())
}

fn check_file(path: &Path) -> Result<(), String> {
    match expectation(path)? {
        Expectation::LoadError {
            line,
            column,
            fragment,
        } => match xds_conformance::suite::load(path) {
            Ok(_) => Err("loaded, but must not".into()),
            Err(e) => check_error(&e, line, column, &fragment),
        },
        Expectation::Outcome { label, fragment } => {
            let scenario =
                xds_conformance::suite::load(path).map_err(|e| format!("does not load: {e}"))?;
            let outcome = run_scenario(&scenario, &|| {
                Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
            });
            let message = match &outcome.verdict {
                xds_conformance_reports::Verdict::Fail { message }
                | xds_conformance_reports::Verdict::Error { message }
                | xds_conformance_reports::Verdict::Interrupted { message } => message.clone(),
                _ => String::new(),
            };
            if outcome.verdict.label() != label || !message.contains(&fragment) {
                return Err(format!(
                    "expected {label} (…{fragment}…), got {}: {message}",
                    outcome.verdict.label()
                ));
            }
            if outcome.events.len() > MAX_EVENTS + 1 {
                return Err(format!("{} timeline events", outcome.events.len()));
            }
            Ok(())
        }
    }
}

#[test]
fn every_hostile_file_fails_where_it_says_or_ends_as_it_says() {
    let files = hostile_files();
    assert!(
        files.len() >= 60,
        "expected at least 60 hostile scenarios, found {}",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            check_file(path)
                .err()
                .map(|e| format!("{}: {e}", path.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_file_too_large_is_refused_before_it_is_read() {
    let dir = std::env::temp_dir().join(format!("xds-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("one-line.yaml");
    // 50 MB on one line, as a broken generator would write it.
    let line = format!("description: {}\n", "x".repeat(50 << 20));
    std::fs::write(&path, &line).unwrap();
    let e = load_file(&path).expect_err("a 50 MB file must not load");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        e.message
            .contains(&format!("more than the {MAX_FILE_BYTES}")),
        "{}",
        e.message
    );
    assert!(e.to_string().len() < MAX_RENDERED_ERROR);
    // The same text given directly.
    let e = load_str("one-line.yaml", &line).expect_err("must not load");
    assert!(e.message.contains("bytes, more than"), "{}", e.message);
}

#[test]
fn a_long_line_shows_a_window_around_the_error() {
    // Under the size limit, an error at the end of a 200 KB line.
    let text = format!(
        "description: d\nservers: {{main: {{}}}}\nsteps: []\ntags: [{}] x\n",
        vec!["t"; 100_000].join(",")
    );
    let e = load_str("long.yaml", &text).expect_err("must not load");
    let rendered = e.to_string();
    assert!(rendered.len() < MAX_RENDERED_ERROR, "{}", rendered.len());
    assert!(rendered.contains("..."), "{rendered}");
    // The caret still points at the column: under the last character shown
    // before the cut marker, or inside the window.
    let caret_line = rendered.lines().last().unwrap_or_default();
    assert!(caret_line.ends_with('^'), "{rendered}");
}

#[test]
fn more_steps_than_allowed_are_refused_at_the_first_too_many() {
    let mut text = String::from("description: d\nservers: {main: {}}\nsteps:\n");
    for _ in 0..=MAX_STEPS {
        text.push_str("  - wait: 0s\n");
    }
    let e = load_str("many.yaml", &text).expect_err("must not load");
    assert_eq!(
        (e.line, e.column),
        (4 + MAX_STEPS as u64, 5),
        "{}",
        e.message
    );
    assert!(e.message.contains(&format!("more than {MAX_STEPS} steps")));
}

#[test]
fn a_command_line_limit_below_the_script_stops_the_run() {
    let scenario = load_str(
        "t.yaml",
        "description: d\nservers: {main: {}}\nsteps:\n  - wait: 5m\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let selection = xds_conformance::suite::Selection {
        virtual_limit: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let scenario = selection.with_limits(scenario);
    let outcome = run_scenario(&scenario, &|| {
        Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
    });
    let xds_conformance_reports::Verdict::Error { message } = &outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert!(
        message.contains("went past its scenario-time limit of 1s"),
        "{message}"
    );
    // Stopped at the limit and its margin, not after the whole wait.
    assert_eq!(outcome.virtual_duration, Duration::from_secs(61));
}
