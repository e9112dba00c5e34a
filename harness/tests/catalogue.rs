//! The spec catalogue (`catalogue/`) and the scenarios' `covers:` agree:
//! every id a scenario names is a rule of the catalogue, and every rule is
//! covered by a scenario or says why none can check it (`uncovered:`).
//! A map of what the suite tests that nobody keeps would drift; this keeps
//! it.

use xds_conformance::catalogue::{Catalogue, Declared};
use xds_conformance::coverage::Coverage;
use xds_conformance::defects::Shows;
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
            scenario("x/kds", "[K-05]"),
        ],
    )
    .problems();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("rule K-05 says it is uncovered, but x/kds cover it"),
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

/// The (defect, scenario, divergent) catches of the table
/// `harness/tests/broken_clients.yaml`, which `tests/broken_clients.rs`
/// plays: each runs the reference client with one rule broken and asserts
/// the scenario fails where it checks that rule, or, marked divergent,
/// that it reports every run divergent (the defect takes an alternative
/// the spec allows).
fn broken_client_cases() -> Vec<(String, String, bool)> {
    xds_conformance::defects::caught_in_checkout(&root())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|caught| {
            let divergent = matches!(caught.shows, Shows::DivergesNoting(_));
            (caught.defect, caught.scenario, divergent)
        })
        .collect()
}

/// Covered rules that no deliberately broken client proves yet: their
/// catalogue entries name no `broken_by` (issue 47 part 4 gives each its
/// broken client). The list only shrinks: a rule that gains one must leave
/// it, and a new covered rule without one fails here.
const NO_BROKEN_CLIENT_YET: &[&str] = &[];

/// A rule's `broken_by` is a defect that the table of catches
/// (`harness/tests/broken_clients.yaml`) runs against a scenario covering
/// the rule, which must fail: the rule is shown to be checked, not only
/// named.
#[test]
fn each_rule_is_caught_on_a_covering_scenario_by_the_broken_clients_it_names() {
    let coverage = coverage();
    let cases = broken_client_cases();
    assert!(cases.len() > 100, "read too few cases: {}", cases.len());
    let mut problems = Vec::new();
    let mut without = Vec::new();
    for rule in coverage.catalogue.rules() {
        if matches!(rule.declared, Declared::Uncovered(_)) {
            continue;
        }
        if rule.broken_by.is_empty() && rule.divergent_by.is_empty() {
            without.push(rule.id.as_str());
        }
        let covering = coverage.covering(rule);
        let named = rule
            .broken_by
            .iter()
            .map(|d| (d, false))
            .chain(rule.divergent_by.iter().map(|d| (d, true)));
        for (defect, divergent) in named {
            if !cases.iter().any(|(d, scenario, allowed)| {
                d == defect && covering.contains(scenario) && *allowed == divergent
            }) {
                let (list, case) = if divergent {
                    ("divergent_by", "a divergent line")
                } else {
                    ("broken_by", "a line")
                };
                problems.push(format!(
                    "{}:{}: rule {} is {list} {defect}, but no {case} of \
                     harness/tests/broken_clients.yaml runs {defect} on a scenario covering it \
                     ({})",
                    rule.file,
                    rule.line,
                    rule.id,
                    covering.join(", ")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        without, NO_BROKEN_CLIENT_YET,
        "covered rules without `broken_by`: a rule that gained one leaves NO_BROKEN_CLIENT_YET"
    );
}

#[test]
fn a_scenario_naming_a_rule_the_catalogue_lacks_is_an_error_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.yaml");
    std::fs::write(
        &file,
        "description: d\nspec: [A57]\ncovers: [A57-04, A57-40]\nservers: {main: {}}\nsteps: []\n",
    )
    .unwrap();
    let e = xds_conformance::suite::load(&file).unwrap_err();
    assert_eq!((e.line, e.column), (3, 18), "{e}");
    assert!(
        e.message.starts_with(
            "covers: no rule `A57-40` in the spec catalogue (catalogue/) (did you mean `A57-"
        ),
        "{e}"
    );
    std::fs::write(
        &file,
        "description: d\ncovers: [A57-04]\nservers: {main: {}}\nsteps: []\n",
    )
    .unwrap();
    assert_eq!(
        xds_conformance::suite::load(&file).unwrap().covers,
        ["A57-04"]
    );
}
