//! Every scenario file under `scenarios/` is its own test, named by its
//! path (`a46/wrong-type-url`; `cargo test -p xds-conformance --test
//! scenarios -- a46/` runs a folder). Those needing a proxy's admin API,
//! `scenarios/envoy`, are not applicable here. Each of its runs (one per
//! protocol it asks for, with the same client-visible outcome: see
//! `differential`) must pass against the reference client, give the same
//! timeline twice, and match its stored snapshot (review changes with
//! `cargo insta review`).
//!
//! A custom test harness (libtest-mimic, `harness = false`): test names are
//! the scenarios' paths, files are found when the tests run (a new file is
//! a new test without rebuilding), and a failure prints the verdict, the
//! file and the message with its line breaks, not a Debug string.

use std::path::Path;

use libtest_mimic::{Arguments, Failed, Trial};
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::differential::run_variants;
use xds_conformance::matcher::as_written;
use xds_conformance::runner::{RunOutcome, not_applicable};
use xds_conformance::scenario::{Scenario, load_file};
use xds_conformance::suite::{discover, manifest_dir};
use xds_conformance_reports::Verdict;

fn reference() -> Box<dyn ClientUnderTest> {
    Box::new(ReferenceClient::new())
}

/// The first line an editor with the YAML language server reads to
/// complete and check the file against the scenario schema.
const SCHEMA_LINE: &str = "# yaml-language-server: $schema=../../harness/scenario.schema.json";

fn main() {
    let arguments = Arguments::from_args();
    let crate_dir = manifest_dir(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir
        .parent()
        .map_or_else(|| crate_dir.join("../scenarios"), |r| r.join("scenarios"));
    let files =
        discover(std::slice::from_ref(&root)).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    assert!(
        !files.is_empty(),
        "no scenario files under {}",
        root.display()
    );
    let trials = files
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .with_extension("")
                .display()
                .to_string();
            Trial::test(name, move || scenario(&path))
        })
        .collect();
    libtest_mimic::run(&arguments, trials).exit();
}

fn scenario(path: &Path) -> Result<(), Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if text.lines().next() != Some(SCHEMA_LINE) {
        return Err(format!(
            "{}: the first line must point editors at the schema:\n{SCHEMA_LINE}",
            path.display()
        )
        .into());
    }
    let scenario = load_file(path).map_err(|e| e.to_string())?;
    let again = run_variants(&scenario, &reference);
    for ((scenario, first), (_, second)) in
        run_variants(&scenario, &reference).into_iter().zip(again)
    {
        check(&scenario, &first, &second)?;
    }
    Ok(())
}

/// `path` relative to the workspace root, `/`-separated, so snapshot
/// headers are the same on every machine.
fn workspace_relative(path: &str) -> String {
    let crate_dir = manifest_dir(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir.parent().unwrap_or(&crate_dir);
    let path = Path::new(path);
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// A failure message's field-by-field comparison and the search that
/// decides come from one function in two modes (see `matcher::Compare`):
/// on every event of a real run, an event an expectation matches is one
/// its explanation finds no difference in, and the other way round.
fn matchers_agree_with_their_explanations(
    scenario: &Scenario,
    outcome: &RunOutcome,
) -> Result<(), Failed> {
    for step in &scenario.steps {
        let Some(matcher) = step.step.matcher() else {
            continue;
        };
        for (index, event) in outcome.events.iter().enumerate() {
            let matches = matcher.matches(event, &as_written);
            let explained = matcher.explain(event, &as_written);
            if matches != explained.as_ref().is_some_and(|e| e.mismatches() == 0) {
                return Err(format!(
                    "{}: {}: the matcher says {matches} on event {index} ({:?}) but explains it as {explained:?}",
                    scenario.source, step.location, event.kind
                )
                .into());
            }
        }
    }
    Ok(())
}

fn check(scenario: &Scenario, first: &RunOutcome, second: &RunOutcome) -> Result<(), Failed> {
    // A scenario observing a proxy through its admin API (scenarios/envoy)
    // is the one kind the reference client cannot play: it is no proxy.
    // Anything else it lacks would be a gap in the oracle, and fails here.
    let mut with_admin = reference().capabilities();
    with_admin.admin = true;
    if matches!(first.verdict, Verdict::NotApplicable { .. })
        && not_applicable(scenario, &with_admin).is_none()
    {
        return Ok(());
    }
    if first.verdict != Verdict::Pass {
        // Printed as the run command prints it: the verdict, the message
        // with its own line breaks (not a Debug string), the timeline.
        let message = first.verdict.detail();
        return Err(format!(
            "{} ({}): {}\n\n{message}\n\ntimeline:\n{}",
            scenario.name,
            scenario.source,
            first.verdict.label(),
            first.timeline
        )
        .into());
    }
    matchers_agree_with_their_explanations(scenario, first)?;
    if first.timeline != second.timeline {
        return Err(format!(
            "{}: the timeline differs between two runs\n\nfirst:\n{}\nsecond:\n{}",
            scenario.name, first.timeline, second.timeline
        )
        .into());
    }
    if scenario.snapshot {
        let snapshot_name = scenario.name.replace('/', "__");
        // insta reports a mismatch by panicking (after printing its diff):
        // caught, so the failure is this scenario's and names its file.
        let compared = std::panic::catch_unwind(|| {
            insta::with_settings!({
                description => scenario.description.trim().to_string(),
                // Shown by insta as "Input file" beside the test's source:
                // the file to open when the snapshot changes.
                input_file => workspace_relative(&scenario.source),
                omit_expression => true,
                prepend_module_to_snapshot => false,
            }, {
                insta::assert_snapshot!(snapshot_name.as_str(), first.snapshot());
            });
        });
        if compared.is_err() {
            return Err(format!(
                "{} ({}): the timeline does not match its snapshot \
                 harness/tests/snapshots/{snapshot_name}.snap (the diff is above; \
                 `cargo insta review` to accept)",
                scenario.name, scenario.source
            )
            .into());
        }
    }
    Ok(())
}
