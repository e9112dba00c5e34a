//! The book's reference pages (docs/src/reference/) are generated from the
//! code: they are committed as the generator writes them, every example in
//! them loads, and a step kind, fault verb, matcher, resource kind,
//! invariant or subcommand declared without its docs or example fails the
//! generator (and so CI).

use std::process::Command;

use xds_conformance::reference_docs::{
    Declared, Examples, Sources, check_example, pages_for_cli, scenario_pages,
};

fn root() -> std::path::PathBuf {
    xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn extra(name: &str, doc: &str) -> Declared {
    Declared {
        name: name.into(),
        doc: doc.into(),
    }
}

#[test]
fn the_committed_pages_are_what_the_code_says() {
    let out = root().join("docs/src/reference");
    let run = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .args(["reference", "--check", "--out"])
        .arg(&out)
        .current_dir(root())
        .output()
        .expect("run xds-conformance reference");
    assert!(
        run.status.success(),
        "{}\n{}\nrun `cargo run -p xds-conformance -- reference --out docs/src/reference`",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn every_declared_kind_has_docs_and_an_example() {
    let sources = Sources::from_code();
    assert!(sources.steps.len() > 20, "{:?}", sources.steps);
    assert!(sources.faults.len() > 10);
    assert!(sources.matchers.len() > 10);
    assert!(sources.resources.len() > 5);
    assert!(sources.invariants.len() > 10);
    assert!(sources.capabilities.len() > 20);
    assert!(sources.clients.len() >= 5, "{:?}", sources.clients.len());
    let examples = Examples::bundled().unwrap();
    if let Err(problems) = scenario_pages(&sources, &examples) {
        panic!("{}", problems.join("\n"));
    }
}

#[test]
fn every_example_loads_with_the_scenario_loader() {
    let examples = Examples::bundled().unwrap();
    let mut checked = 0;
    for (what, map) in [
        ("step kind", &examples.steps),
        ("matcher", &examples.matchers),
        ("resource kind", &examples.resources),
        ("invariant", &examples.invariants),
    ] {
        for (name, text) in map {
            let used = if what == "invariant" {
                format!("expect_invariant: {name}")
            } else {
                format!("{name}:")
            };
            if let Some(problem) = check_example(&format!("{what} {name}"), text, &used) {
                panic!("{problem}");
            }
            xds_conformance::scenario::load_str("example.yaml", text)
                .unwrap_or_else(|e| panic!("{what} {name}: {e}"));
            checked += 1;
        }
    }
    assert!(checked > 60, "{checked}");
    // And `validate`, as a user runs it, accepts every one.
    let dir = tempfile::tempdir().unwrap();
    for (what, map) in [
        ("step", &examples.steps),
        ("matcher", &examples.matchers),
        ("resource", &examples.resources),
        ("invariant", &examples.invariants),
    ] {
        for (name, text) in map {
            std::fs::write(dir.path().join(format!("{what}-{name}.yaml")), text).unwrap();
        }
    }
    let validate = Command::new(env!("CARGO_BIN_EXE_xds-conformance"))
        .arg("validate")
        .arg(dir.path())
        .output()
        .expect("run xds-conformance validate");
    assert!(
        validate.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&validate.stdout),
        String::from_utf8_lossy(&validate.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&validate.stdout)
            .lines()
            .filter(|l| l.starts_with("ok "))
            .count(),
        checked
    );
    // Every fault verb's step is a step kind with an example.
    for step in examples.faults.values() {
        assert!(examples.steps.contains_key(step), "{step}");
    }
}

/// The generator's problems for the code's sources changed by `change`.
fn problems(change: impl FnOnce(&mut Sources, &mut Examples)) -> String {
    let mut sources = Sources::from_code();
    let mut examples = Examples::bundled().unwrap();
    change(&mut sources, &mut examples);
    match scenario_pages(&sources, &examples) {
        Ok(_) => String::new(),
        Err(problems) => problems.join("\n"),
    }
}

#[test]
fn a_step_kind_without_an_example_or_docs_fails_the_generator() {
    let said = problems(|s, _| {
        s.steps
            .push(extra("teleport", "Move the client elsewhere."))
    });
    assert!(
        said.contains("step kind `teleport` has no example"),
        "{said}"
    );
    let said = problems(|s, e| {
        s.steps.push(extra("teleport", ""));
        e.steps.insert(
            "teleport".into(),
            "description: x\nservers: {primary: {}}\nsteps: []\n".into(),
        );
    });
    assert!(
        said.contains("step kind `teleport` has no doc comment"),
        "{said}"
    );
    // An example that does not load, or of a kind that is gone.
    let said = problems(|_, e| {
        e.steps.insert(
            "watch".into(),
            "description: x\nservers: {primary: {}}\nsteps:\n  - watch: { type: XDS, name: c1 }\n"
                .into(),
        );
        e.steps.insert("beam".into(), "x".into());
    });
    assert!(
        said.contains("step kind `watch`") && said.contains("does not load"),
        "{said}"
    );
    assert!(
        said.contains("step kind `beam`, which the code does not declare"),
        "{said}"
    );
}

#[test]
fn a_fault_matcher_resource_or_invariant_without_an_entry_fails_the_generator() {
    let said = problems(|s, _| s.faults.push(extra("Earthquake", "Shake the server.")));
    assert!(
        said.contains("fault verb `Earthquake` has no step"),
        "{said}"
    );
    let said = problems(|s, _| {
        s.matchers
            .push(extra("telepathy", "What the client thinks."))
    });
    assert!(
        said.contains("matcher `telepathy` has no example"),
        "{said}"
    );
    let said = problems(|s, _| s.resources.push(extra("secret", "A Secret.")));
    assert!(
        said.contains("resource kind `secret` has no example"),
        "{said}"
    );
    let said = problems(|s, _| {
        s.invariants
            .push(extra("never-wrong", "The client is never wrong."))
    });
    assert!(
        said.contains("invariant `never-wrong` has no example"),
        "{said}"
    );
    let said = problems(|s, _| s.capabilities.push(extra("teleport", "")));
    assert!(
        said.contains("capability `teleport` has no doc comment"),
        "{said}"
    );
}

#[test]
fn a_subcommand_without_an_example_or_one_that_does_not_parse_fails_the_generator() {
    let cli = clap::Command::new("xds-conformance")
        .subcommand(
            clap::Command::new("run")
                .about("Run scenarios.")
                .arg(clap::arg!(--client <NAME> "The client")),
        )
        .subcommand(clap::Command::new("teleport").about("Go elsewhere."));
    let mut examples = std::collections::BTreeMap::new();
    examples.insert(
        "run".to_string(),
        "xds-conformance run --clinet grpcio".to_string(),
    );
    let said = pages_for_cli(&cli, &examples).unwrap_err().join("\n");
    assert!(
        said.contains("subcommand `teleport` has no example"),
        "{said}"
    );
    assert!(
        said.contains("the example of subcommand `run`") && said.contains("does not parse"),
        "{said}"
    );
    examples.insert(
        "run".to_string(),
        "xds-conformance run --client grpcio".to_string(),
    );
    examples.insert(
        "teleport".to_string(),
        "xds-conformance teleport".to_string(),
    );
    assert!(pages_for_cli(&cli, &examples).is_ok());
}

#[test]
fn a_scenario_naming_a_rule_the_catalogue_lacks_fails_the_generator() {
    let said = problems(|s, _| {
        let coverage = s
            .coverage
            .as_mut()
            .expect("the catalogue and scenarios load");
        coverage
            .scenarios
            .entry("A57-99".into())
            .or_default()
            .push("a57/typo".into());
    });
    assert!(
        said.contains("the spec-coverage page: scenario a57/typo covers A57-99"),
        "{said}"
    );
    let said = problems(|s, _| s.coverage = Err("catalogue/A57.yaml:3:1: broken".into()));
    assert!(
        said.contains("the spec-coverage page: catalogue/A57.yaml:3:1: broken"),
        "{said}"
    );
}
