//! `run --client reference --defect NAME`: a scenario's author proves a
//! file catches a bug by playing it on the reference client broken on
//! purpose. The file passes without the defect and FAILs with it, at the
//! place the table of catches names; a name the client lacks, or a client
//! that cannot take one, is broken input; the book's page lists every
//! defect and its catches.

use std::path::PathBuf;
use std::process::Command;

use xds_conformance::defects::{Caught, caught_in_checkout};
use xds_conformance::reference_docs::{Sources, defects_page};

fn root() -> PathBuf {
    xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `xds-conformance run <args>` in the repository: its exit code, stdout
/// and stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let reports = tempfile::tempdir().expect("a temporary folder");
    let output = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .arg("run")
        .args(args)
        .arg("--report-dir")
        .arg(reports.path())
        .current_dir(root())
        .output()
        .expect("run the harness");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The table's line for `defect` on `scenario`: where the file must fail.
fn catch(defect: &str, scenario: &str) -> Caught {
    caught_in_checkout(&root())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .find(|c| c.defect == defect && c.scenario == scenario)
        .unwrap_or_else(|| panic!("no line for {defect} on {scenario}"))
}

#[test]
fn a_file_passes_on_the_reference_and_fails_at_its_expectation_with_the_defect() {
    // A rule of the xDS client, and one of the KDS zone (played by the
    // same reference client).
    for (defect, scenario) in [
        ("backoff_never_resets", "a57/backoff-growth-and-reset"),
        ("zone_no_hash_suffix", "kds/zone-names-are-hash-suffixed"),
    ] {
        let file = format!("scenarios/{scenario}.yaml");
        let (code, out, err) = run(&[&file]);
        assert_eq!(code, Some(0), "{scenario} on the reference:\n{out}\n{err}");

        let (code, out, err) = run(&[&file, "--client", "reference", "--defect", defect]);
        assert_eq!(code, Some(1), "{scenario} with {defect}:\n{out}\n{err}");
        // Said before the run: which defect, and what it breaks.
        assert!(
            err.contains(&format!("the reference client with the defect {defect}: ")),
            "{err}"
        );
        // The failure names the file and the expectation's place.
        let place = format!("{file}{}", catch(defect, scenario).shows.needle());
        assert!(
            err.contains("(FAIL)") && err.contains(&place),
            "{place}:\n{err}"
        );
        assert!(
            out.contains(&format!("on the defect {defect}, each at the place")),
            "{out}"
        );
        // No advice to record the failures as the client's own.
        assert!(!out.contains("--update-expectations"), "{out}");
    }
}

#[test]
fn a_file_that_catches_nothing_says_so() {
    let (code, out, err) = run(&[
        "scenarios/a46/wrong-type-url.yaml",
        "--defect",
        "zone_no_hash_suffix",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains(
            "no run FAILs on the defect zone_no_hash_suffix: none of these files catches it"
        ),
        "{out}"
    );
}

#[test]
fn an_unknown_defect_or_a_client_without_defects_is_broken_input() {
    let file = "scenarios/a46/wrong-type-url.yaml";
    let (code, out, err) = run(&[file, "--defect", "hash_sufix"]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("--defect hash_sufix: the reference client has no defect of that name")
            && err.contains("the nearest: zone_no_hash_suffix"),
        "{err}"
    );
    // Said before anything ran.
    assert!(out.is_empty() && !err.contains("(FAIL)"), "{out}\n{err}");

    let (code, _, err) = run(&[
        file,
        "--client",
        "grpc-rust",
        "--defect",
        "backoff_never_resets",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("grpc-rust cannot take a defect"), "{err}");

    // Snapshots are the reference's own: a broken client's would be wrong.
    let (code, _, err) = run(&[
        file,
        "--defect",
        "backoff_never_resets",
        "--snapshots",
        "check",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn the_book_lists_every_defect_with_the_scenarios_that_catch_it() {
    let sources = Sources::from_code();
    let page = defects_page(&sources).unwrap_or_else(|problems| panic!("{}", problems.join("\n")));
    assert!(sources.defects.len() > 130, "{}", sources.defects.len());
    for defect in &sources.defects {
        assert!(
            page.contains(&format!("| `{}` |", defect.name)),
            "{}",
            defect.name
        );
    }
    let caught = sources.caught.as_ref().expect("the table reads");
    for catch in caught {
        assert!(page.contains(&format!("`{catch}`")), "{catch}");
    }
    assert!(page.contains("--client reference --defect"), "{page}");
    // What `reference --check` holds the committed page to.
    let committed = std::fs::read_to_string(root().join("docs/src/reference/defects.md"))
        .expect("the committed page");
    assert_eq!(
        committed, page,
        "run `cargo run -p xds-conformance -- reference --out docs/src/reference`"
    );
}

#[test]
fn a_catch_of_a_scenario_the_checkout_lacks_fails_the_generator() {
    let mut sources = Sources::from_code();
    let mut caught = sources.caught.clone().expect("the table reads");
    caught[0].scenario = "a57/no-such-scenario".into();
    sources.caught = Ok(caught);
    let problems = defects_page(&sources).unwrap_err().join("\n");
    assert!(
        problems.contains(
            "the defects page: harness/tests/broken_clients.yaml says a57/no-such-scenario:"
        ) && problems.contains("there is no scenario a57/no-such-scenario under scenarios/"),
        "{problems}"
    );
    sources.caught = Err("harness/tests/broken_clients.yaml:3:5: broken".into());
    let problems = defects_page(&sources).unwrap_err().join("\n");
    assert!(
        problems.contains("the defects page: harness/tests/broken_clients.yaml:3:5: broken"),
        "{problems}"
    );
}

/// A server sends SotW entries wrapped in `Resource` only to a client that
/// claims `xds.config.resource-in-sotw` (api/xds_protocol.rst): the
/// wrapper scenarios pass on the reference client, which claims it, and
/// are n/a, with that reason, on the same client claiming no features.
#[test]
fn wrapped_resources_are_not_applicable_to_a_client_that_does_not_claim_them() {
    for scenario in [
        "a46/wrapped-resources",
        "a46/wrapped-undecodable-body-is-charged-to-its-name",
    ] {
        let file = format!("scenarios/{scenario}.yaml");
        let (code, out, err) = run(&[&file]);
        assert_eq!(code, Some(0), "{scenario}:\n{out}\n{err}");
        assert!(out.contains(" pass "), "{scenario}:\n{out}");

        let (code, out, err) = run(&[
            &file,
            "--client",
            "reference",
            "--defect",
            "claims_no_client_features",
        ]);
        assert_eq!(
            code,
            Some(0),
            "{scenario} without the feature:\n{out}\n{err}"
        );
        assert!(
            out.contains(" n/a ")
                && out.contains("does not claim xds.config.resource-in-sotw in its node"),
            "{scenario} without the feature:\n{out}"
        );
    }
}
