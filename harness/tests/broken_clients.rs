//! The scenarios catch clients that break the rules: the reference client
//! with one rule deliberately broken (a defect, `Defects`) must fail the
//! scenario that proves that rule, at the expectation that checks it. A
//! scenario that passes on a broken client proves nothing.
//!
//! Which scenario catches which defect, and where, is the table
//! `harness/tests/broken_clients.yaml` (`xds_conformance::defects`), which
//! the book's page of defects lists too; each of its lines is a test here,
//! named `DEFECT on SCENARIO` (`cargo test -p xds-conformance --test
//! broken_clients -- zone_no_hash_suffix` plays one defect's). A custom
//! test harness (libtest-mimic, `harness = false`), as the table is read
//! when the tests run: a new line is a new test without rebuilding.

use libtest_mimic::{Arguments, Failed, Trial};
use xds_client_under_test::defect::Defect;
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::defects::{Caught, Shows, caught_in_checkout, named};
use xds_conformance::differential::run_variants;
use xds_conformance::scenario::load_file;
use xds_conformance::suite::manifest_dir;
use xds_conformance_reports::Verdict;

fn main() {
    let arguments = Arguments::from_args();
    let root = manifest_dir(env!("CARGO_MANIFEST_DIR")).join("..");
    let table = caught_in_checkout(&root).unwrap_or_else(|e| panic!("{e}"));
    assert!(table.len() > 150, "read too few catches: {}", table.len());
    let trials = table
        .into_iter()
        .map(|caught| {
            let defect = named(&caught.defect).unwrap_or_else(|e| panic!("{e}"));
            Trial::test(
                format!("{} on {}", caught.defect, caught.scenario),
                move || fails_where_expected(defect, &caught),
            )
        })
        .collect();
    libtest_mimic::run(&arguments, trials).exit();
}

/// The scenario passes on the reference client and, on the one with the
/// defect, fails where the table says (`:LINE:COL:` of the expectation) or
/// is reported divergent with the note it says.
fn fails_where_expected(defect: &'static Defect, caught: &Caught) -> Result<(), Failed> {
    let failing_at = caught.shows.needle();
    let path = manifest_dir(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../scenarios/{}.yaml", caught.scenario));
    let scenario = load_file(&path).map_err(|e| e.to_string())?;

    // Every run the scenario asks for (one per protocol) passes on the
    // reference client...
    for (run, good) in run_variants(&scenario, &|| {
        Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
    }) {
        if good.verdict != Verdict::Pass {
            return Err(format!(
                "{}: {:?} on the reference client\n{}",
                run.name, good.verdict, good.timeline
            )
            .into());
        }
    }

    let runs = run_variants(&scenario, &|| {
        Box::new(ReferenceClient::with_defects(defect.defects)) as Box<dyn ClientUnderTest>
    });
    // A rule that states a preference beside an alternative the spec
    // allows: with a defect that takes the alternative, the scenario tells
    // it apart and reports a divergence with its note, never a failure (a
    // real client taking the alternative breaks no rule).
    if let Shows::DivergesNoting(note) = &caught.shows {
        for (run, broken) in &runs {
            match &broken.verdict {
                Verdict::Divergent { note: said } if said.contains(note.as_str()) => {}
                other => {
                    return Err(format!(
                        "{} on {}: expected a divergence noting {note:?}, got {other:?}\n{}",
                        defect.name, run.name, broken.timeline
                    )
                    .into());
                }
            }
        }
        return Ok(());
    }
    // ...and one fails, there, on the broken one.
    let caught_there = runs.iter().any(|(_, broken)| {
        matches!(&broken.verdict, Verdict::Fail { message } if message.contains(&failing_at))
    });
    if !caught_there {
        return Err(format!(
            "{} on {}: expected a FAIL at {failing_at}, got {:?}",
            defect.name,
            scenario.name,
            runs.iter().map(|(_, r)| &r.verdict).collect::<Vec<_>>()
        )
        .into());
    }
    // A failed expectation points the picture at its window, and at an
    // event of the run when it names one.
    for (run, broken) in &runs {
        if let Verdict::Fail { message } = &broken.verdict
            && message.contains(": expected ")
        {
            let Some(mark) = broken.mark.as_ref() else {
                return Err(format!("{}: a failure without a mark: {message}", run.name).into());
            };
            if mark.window.is_none() || mark.event.is_some_and(|e| e >= broken.events.len()) {
                return Err(format!("{}: {mark:?}", run.name).into());
            }
        }
    }
    Ok(())
}
