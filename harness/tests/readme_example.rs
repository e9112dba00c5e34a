//! The annotated scenario of the book (docs/src/scenarios/format.md, "The
//! format, annotated") must load and pass: documentation that drifts from
//! the format is a bug.

use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance_reports::Verdict;

const PAGE: &str = "docs/src/scenarios/format.md";

#[test]
fn annotated_scenario_loads_and_passes() {
    let page = std::fs::read_to_string(
        xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(PAGE),
    )
    .unwrap();
    let begin = page
        .find("<!-- annotated-scenario: begin -->")
        .expect("the page marks the annotated scenario's start");
    let end_marker = page[begin..]
        .find("<!-- annotated-scenario: end -->")
        .expect("the page marks the annotated scenario's end")
        + begin;
    let section = &page[begin..end_marker];
    let start = section
        .find("```yaml\n")
        .expect("the marked section has a yaml block")
        + "```yaml\n".len();
    let end = start + section[start..].find("```").expect("the yaml block ends");
    let scenario = load_str(PAGE, &section[start..end]).unwrap_or_else(|e| panic!("{e}"));
    let reference = || Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>;
    let outcome = run_scenario(&scenario, &reference);
    assert_eq!(
        outcome.verdict,
        Verdict::Pass,
        "timeline:\n{}",
        outcome.timeline
    );
}
