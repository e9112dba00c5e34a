//! Which scenarios check which rule of the spec catalogue: the catalogue
//! (`crate::catalogue`) joined with the scenarios' `covers:`. The book's
//! spec-coverage page is drawn from it, and `tests/catalogue.rs` holds the
//! two to each other with [`Coverage::problems`]: a scenario names only
//! rules that exist, and a rule is checked by some scenario or says why
//! it cannot be.

use std::collections::BTreeMap;
use std::path::Path;

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

    /// Per spec: its rules, those covered in full, in part, and not at all.
    pub fn counts(&self) -> Vec<(String, [usize; 4])> {
        self.catalogue
            .specs
            .iter()
            .map(|spec| {
                let mut counts = [spec.rules.len(), 0, 0, 0];
                for rule in &spec.rules {
                    let at = match rule.declared {
                        Declared::Covered => 1,
                        Declared::Partial(_) => 2,
                        Declared::Uncovered(_) => 3,
                    };
                    counts[at] += 1;
                }
                (spec.spec.clone(), counts)
            })
            .collect()
    }
}
