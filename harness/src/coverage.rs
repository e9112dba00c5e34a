//! Which scenarios check which rule of the spec catalogue: the catalogue
//! (`crate::catalogue`) joined with the scenarios' `covers:`. The book's
//! spec-coverage page is drawn from it, and `tests/catalogue.rs` holds the
//! two to each other with [`Coverage::problems`]: a scenario names only
//! rules that exist, and a rule is checked by some scenario or says why
//! it cannot be.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use xds_conformance_reports::matrix::{CellStatus, Matrix};

use crate::catalogue::{Catalogue, Declared, Rule};
use crate::scenario::Scenario;

/// The scenarios' folder, under the repository root.
pub const SCENARIOS_DIR: &str = "scenarios";

/// The catalogue and the scenarios that name its rules.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    pub catalogue: Catalogue,
    /// Rule id -> the scenarios naming it in `covers:`, by name, sorted.
    /// Ids no rule has are here too (see [`Coverage::problems`]).
    pub scenarios: BTreeMap<String, Vec<String>>,
    /// Every scenario, loaded, by name: the per-client view reads their
    /// known failures and what they need.
    pub loaded: BTreeMap<String, Scenario>,
}

impl Coverage {
    /// The catalogue and every scenario of the repository at `root`; the
    /// first file that does not load is the error.
    pub fn of_checkout(root: &Path) -> Result<Coverage, String> {
        let catalogue = Catalogue::in_checkout(root).map_err(|e| e.to_string())?;
        let files = crate::suite::discover(&[root.join(SCENARIOS_DIR)])
            .map_err(|e| format!("{SCENARIOS_DIR}: {e}"))?;
        let mut scenarios = Vec::with_capacity(files.len());
        for file in files {
            scenarios.push(crate::suite::load(&file).map_err(|e| e.to_string())?);
        }
        Ok(Coverage::of(catalogue, scenarios))
    }

    /// `catalogue` joined with `scenarios`.
    pub fn of(catalogue: Catalogue, scenarios: impl IntoIterator<Item = Scenario>) -> Coverage {
        let mut by_rule: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut loaded = BTreeMap::new();
        for scenario in scenarios {
            for id in &scenario.covers {
                by_rule
                    .entry(id.clone())
                    .or_default()
                    .push(scenario.name.clone());
            }
            loaded.insert(scenario.name.clone(), scenario);
        }
        for names in by_rule.values_mut() {
            names.sort();
            names.dedup();
        }
        Coverage {
            catalogue,
            scenarios: by_rule,
            loaded,
        }
    }

    /// The scenarios covering `rule`, by name.
    pub fn covering(&self, rule: &Rule) -> &[String] {
        self.scenarios.get(&rule.id).map_or(&[], Vec::as_slice)
    }

    /// What keeps the scenarios and the catalogue from agreeing, one line
    /// each: an id a scenario names that no rule has; a rule no scenario
    /// covers that does not say why (`uncovered:`); a rule that says it is
    /// uncovered although a scenario covers it (the reason is stale).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (id, names) in &self.scenarios {
            if self.catalogue.rule(id).is_none() {
                for name in names {
                    problems.push(format!(
                        "scenario {name} covers {id}, which is in no file of the catalogue"
                    ));
                }
            }
        }
        for rule in self.catalogue.rules() {
            let covering = self.covering(rule);
            let at = format!("{}:{}:{}", rule.file, rule.line, rule.column);
            match (&rule.declared, covering.is_empty()) {
                (Declared::Uncovered(_), false) => problems.push(format!(
                    "{at}: rule {} says it is uncovered, but {} cover it: drop `uncovered:`",
                    rule.id,
                    covering.join(", ")
                )),
                (Declared::Covered | Declared::Partial(_), true) => problems.push(format!(
                    "{at}: no scenario covers rule {}: name it in a scenario's `covers:`, \
                     or say why none can with `uncovered:`",
                    rule.id
                )),
                _ => {}
            }
        }
        problems
    }

    /// A Markdown page of how each client of `matrix` fared on each rule:
    /// per spec, per rule, the verdicts of the runs of its covering
    /// scenarios (a run named `NAME@delta` is `NAME`'s), summed up as
    /// `FAIL k/n` (a failure or error), `known k/n` (known failures),
    /// `pass` (every applicable run passed, a divergence or a flaky pass
    /// counting as a pass), `n/a` (none applied) or `not run` (the matrix
    /// holds none of them). The matrix command writes it beside the matrix.
    pub fn matrix_page(&self, matrix: &Matrix) -> String {
        let mut text = format!(
            "# Spec coverage: {}\n\nEach rule of the spec catalogue (`catalogue/`), and how \
             each client fared on the runs of the scenarios that cover it (`covers:`).\n\n",
            matrix.title
        );
        let clients: Vec<&str> = matrix.clients.iter().map(|c| c.name.as_str()).collect();
        for spec in &self.catalogue.specs {
            let _ = write!(
                text,
                "## {}: {}\n\n| rule | {} |\n|---|{}\n",
                spec.spec,
                spec.title,
                clients.join(" | "),
                "---|".repeat(clients.len())
            );
            for rule in &spec.rules {
                let covering = self.covering(rule);
                let cells: Vec<String> = (0..clients.len())
                    .map(|column| {
                        if covering.is_empty() {
                            return "not covered".to_string();
                        }
                        let statuses = matrix
                            .rows
                            .iter()
                            .filter(|row| {
                                let base = row.scenario.split('@').next().unwrap_or_default();
                                covering.iter().any(|name| name == base)
                            })
                            .filter_map(|row| row.cells.get(column).map(|c| &c.status));
                        summary(statuses)
                    })
                    .collect();
                let _ = writeln!(text, "| {} | {} |", rule.id, cells.join(" | "));
            }
            text.push('\n');
        }
        text
    }

    /// Per spec: its rules, those covered in full, in part, and not at
    /// all, and those a broken client is shown to break (`broken_by`) or
    /// told apart as taking an allowed alternative (`divergent_by`).
    pub fn counts(&self) -> Vec<(String, [usize; 5])> {
        self.catalogue
            .specs
            .iter()
            .map(|spec| {
                let mut counts = [spec.rules.len(), 0, 0, 0, 0];
                for rule in &spec.rules {
                    let at = match rule.declared {
                        Declared::Covered => 1,
                        Declared::Partial(_) => 2,
                        Declared::Uncovered(_) => 3,
                    };
                    counts[at] += 1;
                    if !rule.broken_by.is_empty() || !rule.divergent_by.is_empty() {
                        counts[4] += 1;
                    }
                }
                (spec.spec.clone(), counts)
            })
            .collect()
    }
}

/// One client's verdicts on the runs covering a rule, summed up.
fn summary<'a>(statuses: impl Iterator<Item = &'a CellStatus>) -> String {
    let (mut runs, mut failed, mut known, mut applicable) = (0, 0, 0, 0);
    for status in statuses {
        runs += 1;
        match status {
            CellStatus::NotApplicable => continue,
            CellStatus::Fail | CellStatus::Error => failed += 1,
            CellStatus::KnownFailure => known += 1,
            CellStatus::Pass | CellStatus::Divergent | CellStatus::Flaky => {}
        }
        applicable += 1;
    }
    match (runs, applicable, failed, known) {
        (0, ..) => "not run".to_string(),
        (_, 0, ..) => "n/a".to_string(),
        (_, n, f, _) if f > 0 => format!("FAIL {f}/{n}"),
        (_, n, _, k) if k > 0 => format!("known {k}/{n}"),
        _ => "pass".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xds_conformance_reports::matrix::{ClientColumn, MatrixCell, MatrixRow};

    fn cell(status: CellStatus) -> MatrixCell {
        MatrixCell {
            status,
            detail: String::new(),
            timeline_file: None,
            timeline: None,
            mark: None,
            virtual_duration: std::time::Duration::ZERO,
            wall_duration: std::time::Duration::ZERO,
            missing: Vec::new(),
        }
    }

    #[test]
    fn a_matrix_is_summed_up_per_rule_and_client() {
        let catalogue = crate::catalogue::load_str(
            "catalogue/A57.yaml",
            "spec: A57\nprefix: A57\ntitle: T\nurl: https://example.com\nrules:\n  \
             - {id: A57-01, section: S, binds: [client], quote: q}\n  \
             - {id: A57-02, section: S, binds: [client], quote: q}\n  \
             - {id: A57-03, section: S, binds: [client], quote: q, uncovered: why}\n",
        )
        .unwrap();
        let scenario = |name: &str, covers: &str| {
            crate::scenario::load_str(
                &format!("scenarios/{name}.yaml"),
                &format!("description: d\ncovers: {covers}\nservers: {{m: {{}}}}\nsteps: []\n"),
            )
            .unwrap()
        };
        let coverage = Coverage::of(
            Catalogue {
                specs: vec![catalogue],
            },
            [
                scenario("x/one", "[A57-01]"),
                scenario("x/two", "[A57-01, A57-02]"),
            ],
        );
        let row = |name: &str, cells: [CellStatus; 3]| MatrixRow {
            scenario: name.into(),
            spec: vec![],
            description: String::new(),
            source: None,
            cells: cells.into_iter().map(cell).collect(),
        };
        use CellStatus::*;
        let matrix = Matrix {
            title: "t".into(),
            clients: ["a", "b", "c"]
                .map(|name| ClientColumn {
                    name: name.into(),
                    version: String::new(),
                })
                .to_vec(),
            rows: vec![
                row("x/one", [Pass, KnownFailure, NotApplicable]),
                row("x/two", [Divergent, Fail, NotApplicable]),
                row("x/two@delta", [Flaky, Pass, NotApplicable]),
                row("x/other", [Fail, Fail, Fail]),
            ],
        };
        let page = coverage.matrix_page(&matrix);
        assert!(
            page.contains("| A57-01 | pass | FAIL 1/3 | n/a |"),
            "{page}"
        );
        assert!(
            page.contains("| A57-02 | pass | FAIL 1/2 | n/a |"),
            "{page}"
        );
        assert!(
            page.contains("| A57-03 | not covered | not covered | not covered |"),
            "{page}"
        );
        let only_one = Matrix {
            rows: matrix.rows[..1].to_vec(),
            ..matrix
        };
        let page = coverage.matrix_page(&only_one);
        assert!(
            page.contains("| A57-01 | pass | known 1/1 | n/a |"),
            "{page}"
        );
        assert!(
            page.contains("| A57-02 | not run | not run | not run |"),
            "{page}"
        );
    }
}
