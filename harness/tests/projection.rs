//! Projected watches, end to end through the runner, on the test fixture
//! adapter that declares them (`client-under-test/tests/fixtures/
//! projected`): the bootstrap the client gets has the scaffold's
//! authority, each watch is sent with its channel, and a scenario whose
//! watches cannot be projected is not applicable, with why.

use xds_client_under_test::ClientUnderTest;
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance::suite::{client_factory, manifest_dir};
use xds_conformance_reports::Verdict;

/// The fixture writes its pid where it runs (the checkout, for the
/// harness): not left behind.
struct RemovePid;

impl Drop for RemovePid {
    fn drop(&mut self) {
        let _ =
            std::fs::remove_file(manifest_dir(env!("CARGO_MANIFEST_DIR")).join("../fixture.pid"));
    }
}

fn fixture() -> String {
    manifest_dir(env!("CARGO_MANIFEST_DIR"))
        .join("../client-under-test/tests/fixtures/projected")
        .display()
        .to_string()
}

#[test]
fn a_projected_watch_reaches_the_client_with_its_channel_and_the_scaffold() {
    let _pid = RemovePid;
    let factory = client_factory(&fixture()).expect("the fixture");
    let scenario = load_str(
        "projected.yaml",
        "description: d\nservers: {main: {}}\nsteps:\n  \
         - watch: {type: CDS, name: c1}\n  \
         - expect: {watcher: {type: CDS, name: c1, event: changed}}\n",
    )
    .expect("loads");
    let outcome = run_scenario(&scenario, &|| factory() as Box<dyn ClientUnderTest>);
    assert_eq!(outcome.verdict, Verdict::Pass, "{}", outcome.timeline);
    // The fixture logs the bootstrap it was given, and each watch's `via`.
    assert!(
        outcome.timeline.contains(r#"\"xds-conformance-scaffold\""#),
        "{}",
        outcome.timeline
    );
    assert!(
        outcome.timeline.contains(
            r#"via {"authority": "w1", "target": "xds://xds-conformance-scaffold/watches"}"#
        ),
        "{}",
        outcome.timeline
    );
}

#[test]
fn watches_that_cannot_be_projected_are_not_applicable() {
    let _pid = RemovePid;
    let factory = client_factory(&fixture()).expect("the fixture");
    let scenario = load_str(
        "lds.yaml",
        "description: d\nservers: {main: {}}\nsteps:\n  - watch: {type: LDS, name: svc}\n",
    )
    .expect("loads");
    let outcome = run_scenario(&scenario, &|| factory() as Box<dyn ClientUnderTest>);
    let Verdict::NotApplicable { reason } = outcome.verdict else {
        panic!("{:?}", outcome.verdict)
    };
    assert!(
        reason.contains("its channels cannot observe these watches: a LDS watch"),
        "{reason}"
    );
    // Each missing capability on its own, commas and all, for the matrix
    // to group n/a by.
    let [lacks] = outcome.missing.as_slice() else {
        panic!("{:?}", outcome.missing)
    };
    assert!(
        lacks.starts_with("a resource watch API, and its channels"),
        "{lacks}"
    );
    assert_eq!(reason, format!("the client lacks {lacks}"));
}
