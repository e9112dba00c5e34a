//! The spec-coverage page: per spec, each rule of the catalogue
//! (`catalogue/`) with its quote, the scenarios that check it, and per
//! client what the gate expects of those scenarios. Drawn from
//! `crate::coverage`; the page is as current as `reference --check` keeps
//! it, since a new `covers:` or rule changes it.

use std::fmt::Write as _;

use super::schema::{anchor, cell};
use super::{Client, GENERATED, Sources};
use crate::catalogue::{Declared, Rule};
use crate::coverage::Coverage;
use crate::expectations::Expected;

/// Where the page goes, under the reference folder.
pub const PAGE: &str = "spec-coverage.md";

/// What the gate expects of one client on the scenarios covering a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    /// No covering run applies to the client (what it lacks, a rule of
    /// other clients, a skip entry).
    NotApplicable,
    /// Of the applicable runs, this many are known failures.
    Known { known: usize, runs: usize },
    /// Every applicable run is expected to pass.
    Pass,
}

/// The page, or a problem when the catalogue or the scenarios cannot be
/// read or do not agree (as `tests/catalogue.rs` says).
pub fn page(sources: &Sources, problems: &mut Vec<String>) -> String {
    let coverage = match &sources.coverage {
        Ok(coverage) => coverage,
        Err(e) => {
            problems.push(format!("the spec-coverage page: {e}"));
            return String::new();
        }
    };
    for problem in coverage.problems() {
        problems.push(format!("the spec-coverage page: {problem}"));
    }
    let clients: Vec<&Client> = sources
        .clients
        .iter()
        .filter(|c| !crate::suite::NOT_IN_DEFAULT_MATRIX.contains(&c.name.as_str()))
        .collect();
    let mut text = format!(
        "{GENERATED}\n\n# Spec coverage\n\n\
         Every normative behaviour of the specs the suite is built on, as the catalogue \
         (`catalogue/`, one file per spec) states it: a stable id, a quote, its section and \
         whom it binds. A scenario names the rules it checks (`covers: [A57-04]`); a rule no \
         scenario checks yet says why, naming the verb or matcher that is missing. A rule's \
         broken clients are the reference client's deliberate defects that break it, each \
         failing a covering scenario ([Defects](defects.md)); for a rule that is \
         a preference beside an alternative the spec allows, the defect that takes the \
         alternative is reported there as a divergence (marked \"divergent\"), as a real \
         client taking it would be. \"none yet\" marks \
         a rule named by scenarios that no broken client has proven to check it. \
         `harness/tests/catalogue.rs` holds all three to each other.\n\n\
         The per-client tables say what each client's expectations file expects of the \
         scenarios covering a rule (CI's gate fails a run that does otherwise): **pass**, \
         **known** (k of n applicable runs are known failures), or **n/a** (no covering run \
         applies: the client lacks what they need, or the rule binds other clients). They \
         are not results: `xds-conformance matrix` writes the results per rule beside the \
         matrix (`spec-coverage.md` in its report folder, `reports-out/matrix/` by default), \
         and no page of the book holds a run (latest matrix: not run here).\n\n"
    );
    text.push_str(
        "| spec | rules | covered | partly | not covered | caught on a broken client |\n\
         |---|---|---|---|---|---|\n",
    );
    for (spec, [rules, covered, partly, not, caught]) in coverage.counts() {
        let _ = writeln!(
            text,
            "| [{spec}](#{}) | {rules} | {covered} | {partly} | {not} | {caught} |",
            anchor(&spec)
        );
    }
    text.push('\n');
    for spec in &coverage.catalogue.specs {
        let _ = write!(
            text,
            "## {}\n\n[{}]({}), `catalogue/{}.yaml`.\n\n\
             | rule | quote | binds | scenarios | coverage | caught on a broken client |\n\
             |---|---|---|---|---|---|\n",
            spec.spec, spec.title, spec.url, spec.spec
        );
        for rule in &spec.rules {
            let _ = writeln!(
                text,
                "| {} | \"{}\" ({}) | {} | {} | {} | {} |",
                rule.id,
                cell(&rule.quote),
                cell(&rule.section),
                rule.binds
                    .iter()
                    .map(|b| b.word())
                    .collect::<Vec<_>>()
                    .join(", "),
                scenarios(coverage.covering(rule)),
                cell(&declared(&rule.declared)),
                broken_by(rule),
            );
        }
        let _ = write!(
            text,
            "\n| rule | {} |\n|---|{}\n",
            clients
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(clients.len())
        );
        for rule in &spec.rules {
            let cells: Vec<String> = clients
                .iter()
                .map(|client| match client_cell(coverage, rule, client) {
                    None => "—".to_string(),
                    Some(Cell::NotApplicable) => "n/a".to_string(),
                    Some(Cell::Pass) => "pass".to_string(),
                    Some(Cell::Known { known, runs }) => format!("known {known}/{runs}"),
                })
                .collect();
            let _ = writeln!(text, "| {} | {} |", rule.id, cells.join(" | "));
        }
        text.push('\n');
    }
    text
}

fn scenarios(names: &[String]) -> String {
    if names.is_empty() {
        return "—".to_string();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The defects of the reference client a covering scenario is shown to
/// catch (`crate::defects`), or why there are none.
fn broken_by(rule: &Rule) -> String {
    let caught: Vec<String> = rule
        .broken_by
        .iter()
        .map(|d| format!("`{d}`"))
        .chain(
            rule.divergent_by
                .iter()
                .map(|d| format!("`{d}` (divergent: an alternative the spec allows)")),
        )
        .collect();
    match (&rule.declared, caught.is_empty()) {
        (Declared::Uncovered(_), _) => "—".to_string(),
        (_, true) => "none yet".to_string(),
        (_, false) => caught.join(", "),
    }
}

fn declared(declared: &Declared) -> String {
    match declared {
        Declared::Covered => "covered".to_string(),
        Declared::Partial(what) => format!("partly: {what}"),
        Declared::Uncovered(why) => format!("**not covered**: {why}"),
    }
}

/// What the gate expects of `client` on the runs covering `rule`; `None`
/// when no scenario covers it.
fn client_cell(coverage: &Coverage, rule: &Rule, client: &Client) -> Option<Cell> {
    let names = coverage.covering(rule);
    if names.is_empty() {
        return None;
    }
    let (mut runs, mut known) = (0, 0);
    for name in names {
        let Some(scenario) = coverage.loaded.get(name) else {
            continue;
        };
        for run in scenario.variants() {
            if crate::runner::not_applicable(&run, &client.capabilities).is_some() {
                continue;
            }
            match client.expectations.entries.get(&run.name).map(|e| e.expect) {
                Some(Expected::Skip) => continue,
                Some(Expected::Fail | Expected::Flaky) => known += 1,
                None if scenario.known_failures.contains_key(&client.name) => known += 1,
                None => {}
            }
            runs += 1;
        }
    }
    Some(match (runs, known) {
        (0, _) => Cell::NotApplicable,
        (_, 0) => Cell::Pass,
        (runs, known) => Cell::Known { known, runs },
    })
}
