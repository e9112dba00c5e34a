//! The spec catalogue (`catalogue/`) and the scenarios' `covers:` agree:
//! every id a scenario names is a rule of the catalogue, and every rule is
//! covered by a scenario or says why none can check it (`uncovered:`).
//! A map of what the suite tests that nobody keeps would drift; this keeps
//! it.

use xds_conformance::catalogue::{Catalogue, Declared};
use xds_conformance::coverage::Coverage;
use xds_conformance::scenario::load_str;

fn root() -> std::path::PathBuf {
    xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn coverage() -> Coverage {
    Coverage::of_checkout(&root()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_catalogue_holds_the_five_specs() {
    let catalogue = Catalogue::in_checkout(&root()).unwrap_or_else(|e| panic!("{e}"));
    let specs: Vec<(&str, usize)> = catalogue
        .specs
        .iter()
        .map(|s| (s.spec.as_str(), s.rules.len()))
        .collect();
    assert_eq!(
        specs,
        [
            ("A46", 4),
            ("A53", 12),
            ("A57", 21),
            ("A71", 22),
            ("KDS", 15)
        ]
    );
}

#[test]
fn every_id_a_scenario_names_is_a_rule_and_every_rule_is_covered_or_says_why() {
    let coverage = coverage();
    let problems = coverage.problems();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Not vacuous: the suite names rules, and every spec has a covered one.
    assert!(coverage.scenarios.len() > 50, "{:?}", coverage.scenarios);
    for spec in &coverage.catalogue.specs {
        assert!(
            spec.rules.iter().any(|r| !coverage.covering(r).is_empty()),
            "{}",
            spec.spec
        );
    }
}

#[test]
fn a_wrong_id_a_missing_rule_and_a_stale_reason_are_each_found() {
    let catalogue = Catalogue::in_checkout(&root()).unwrap_or_else(|e| panic!("{e}"));
    let scenario = |name: &str, covers: &str| {
        load_str(
            &format!("scenarios/{name}.yaml"),
            &format!("description: d\ncovers: {covers}\nservers: {{main: {{}}}}\nsteps: []\n"),
        )
        .unwrap()
    };
    // Every rule covered by one scenario, but the uncovered ones.
    let all: Vec<String> = catalogue
        .rules()
        .filter(|r| !matches!(r.declared, Declared::Uncovered(_)))
        .map(|r| r.id.clone())
        .collect();
    let complete = Coverage::of(
        catalogue.clone(),
        [scenario("x/all", &format!("[{}]", all.join(", ")))],
    );
    assert!(complete.problems().is_empty(), "{:?}", complete.problems());

    let said = Coverage::of(
        catalogue.clone(),
        [
            scenario("x/all", &format!("[{}]", all.join(", "))),
            scenario("x/typo", "[A57-99]"),
        ],
    )
    .problems();
    assert_eq!(
        said,
        ["scenario x/typo covers A57-99, which is in no file of the catalogue"]
    );

    let missing: Vec<String> = all.iter().filter(|id| *id != "A46-02").cloned().collect();
    let said = Coverage::of(
        catalogue.clone(),
        [scenario("x/all", &format!("[{}]", missing.join(", ")))],
    )
    .problems();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("A46.yaml:") && said[0].contains("no scenario covers rule A46-02"),
        "{said:?}"
    );

    let said = Coverage::of(
        catalogue,
        [
            scenario("x/all", &format!("[{}]", all.join(", "))),
            scenario("x/logs", "[A57-03]"),
        ],
    )
    .problems();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("rule A57-03 says it is uncovered, but x/logs cover it"),
        "{said:?}"
    );
}

#[test]
fn covers_is_checked_where_it_is_written() {
    let load = |covers: &str| {
        load_str(
            "t.yaml",
            &format!("description: d\nservers: {{main: {{}}}}\ncovers: {covers}\nsteps: []\n"),
        )
    };
    assert_eq!(load("[A57-04, K-01]").unwrap().covers, ["A57-04", "K-01"]);
    let e = load("[A57-04, A57-4]").unwrap_err();
    assert_eq!((e.line, e.column), (3, 18), "{e}");
    assert!(
        e.message
            .contains("covers: rule id `A57-4`: expected PREFIX-NN"),
        "{e}"
    );
    let e = load("[A57-04, A57-04]").unwrap_err();
    assert_eq!((e.line, e.column), (3, 18), "{e}");
    assert!(e.message.contains("listed twice"), "{e}");
}
