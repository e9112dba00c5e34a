//! Every scenario file under `scenarios/` is its own test (those needing a
//! proxy's admin API, `scenarios/envoy`, are not applicable here): each of its runs
//! (one per protocol it asks for, with the same client-visible outcome:
//! see `differential`) must pass against the reference client, give the
//! same timeline twice, and match its stored snapshot (review changes with
//! `cargo insta review`).

use std::path::PathBuf;

use rstest::rstest;
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::differential::run_variants;
use xds_conformance::runner::{RunOutcome, not_applicable};
use xds_conformance::scenario::{Scenario, load_file};
use xds_conformance::suite::in_this_checkout;
use xds_conformance_reports::Verdict;

fn reference() -> Box<dyn ClientUnderTest> {
    Box::new(ReferenceClient::new())
}

/// The first line an editor with the YAML language server reads to
/// complete and check the file against the scenario schema.
const SCHEMA_LINE: &str = "# yaml-language-server: $schema=../../harness/scenario.schema.json";

#[rstest]
fn scenario(#[files("../scenarios/**/*.yaml")] path: PathBuf) {
    let path = in_this_checkout(&path, env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        text.lines().next(),
        Some(SCHEMA_LINE),
        "{}: the first line must point editors at the schema",
        path.display()
    );
    let scenario = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let again = run_variants(&scenario, &reference);
    for ((scenario, first), (_, second)) in
        run_variants(&scenario, &reference).into_iter().zip(again)
    {
        check(&scenario, &first, &second);
    }
}

fn check(scenario: &Scenario, first: &RunOutcome, second: &RunOutcome) {
    // A scenario observing a proxy through its admin API (scenarios/envoy)
    // is the one kind the reference client cannot play: it is no proxy.
    // Anything else it lacks would be a gap in the oracle, and fails here.
    let mut with_admin = reference().capabilities();
    with_admin.admin = true;
    if matches!(first.verdict, Verdict::NotApplicable { .. })
        && not_applicable(scenario, &with_admin).is_none()
    {
        return;
    }
    if first.verdict != Verdict::Pass {
        // Printed as the run command prints it: the verdict, the message
        // with its own line breaks (not a Debug string), the timeline.
        let message = match &first.verdict {
            Verdict::Fail { message }
            | Verdict::Error { message }
            | Verdict::Interrupted { message } => message.as_str(),
            Verdict::NotApplicable { reason } => reason.as_str(),
            Verdict::Divergent { note } => note.as_str(),
            Verdict::KnownFailure { message, .. } => message.as_str(),
            Verdict::Pass => "",
        };
        panic!(
            "\n{} ({}): {}\n\n{message}\n\ntimeline:\n{}",
            scenario.name,
            scenario.source,
            first.verdict.label(),
            first.timeline
        );
    }
    assert_eq!(
        first.timeline, second.timeline,
        "{}: the timeline differs between two runs",
        scenario.name
    );
    if scenario.snapshot {
        let snapshot_name = scenario.name.replace('/', "__");
        insta::with_settings!({
            description => scenario.description.trim().to_string(),
            omit_expression => true,
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_snapshot!(snapshot_name, &first.snapshot);
        });
    }
}
