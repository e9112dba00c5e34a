//! Plays one scenario's first run on a client made by `factory`, held to
//! no expectations, without retries: what a test of one harness rule
//! needs to see the verdict it gives.

use xds_conformance::expectations::Expectations;
use xds_conformance::runner::RunOutcome;
use xds_conformance::scenario::Scenario;
use xds_conformance::schedule::{HeldTo, SharedFactory, no_progress, run_all};

pub fn play_one(scenario: &Scenario, factory: &SharedFactory, client: &str) -> RunOutcome {
    let mut runs = run_all(
        &[scenario],
        factory,
        1,
        0,
        client,
        HeldTo::expectations(&Expectations::default()),
        &no_progress,
    );
    runs.remove(0).remove(0).1
}
