//! The annotated scenario in README.md must load and pass: documentation
//! that drifts from the format is a bug.

use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance_reports::Verdict;

#[test]
fn readme_scenario_loads_and_passes() {
    let readme = std::fs::read_to_string(
        xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
    )
    .unwrap();
    let section = readme
        .find("## A scenario, annotated")
        .expect("README has the annotated scenario");
    let start = section
        + readme[section..]
            .find("```yaml\n")
            .expect("the section has a yaml block")
        + "```yaml\n".len();
    let end = start + readme[start..].find("```").expect("the yaml block ends");
    let scenario = load_str("README.md", &readme[start..end]).unwrap_or_else(|e| panic!("{e}"));
    let reference = || Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>;
    let outcome = run_scenario(&scenario, &reference);
    assert_eq!(
        outcome.verdict,
        Verdict::Pass,
        "timeline:\n{}",
        outcome.timeline
    );
}
