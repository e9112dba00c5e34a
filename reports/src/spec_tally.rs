//! What a client's green covers, per spec: for each spec tag of the
//! scenarios played (their `spec:` list; a run counts under each of its
//! tags), how many runs it passes, fails as known failures, fails, and
//! cannot be asked (n/a, grouped by what it lacks). A gate that is green
//! says "nothing changed"; this says how much of each spec that is.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::matrix::{CellStatus, Matrix};
use crate::specs::group_rank;

/// The runs of one spec tag on one client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecTally {
    /// The tag as scenarios write it (`A46`), or `(no spec)`.
    pub spec: String,
    /// Passed: plainly, as an allowed divergence, or on a later try.
    pub pass: usize,
    pub divergent: usize,
    pub flaky: usize,
    /// Failed as its expectations say (known failures).
    pub known: usize,
    /// Failed (FAIL or ERROR): what fails the gate.
    pub failed: usize,
    /// Not applicable, by what the client lacks (the capabilities a run
    /// lacks, joined with ` + `, so the counts add up), or why else.
    pub not_applicable: BTreeMap<String, usize>,
}

impl SpecTally {
    pub fn runs(&self) -> usize {
        self.pass + self.known + self.failed + self.not_applicable.values().sum::<usize>()
    }
}

/// What a run with no spec tag is counted under.
pub const NO_SPEC: &str = "(no spec)";

/// The tallies of column `client` of `m`, specs in the matrix's order
/// (known specs first, then other tags by name).
pub fn spec_tallies(m: &Matrix, client: usize) -> Vec<SpecTally> {
    let mut tallies: BTreeMap<String, SpecTally> = BTreeMap::new();
    for row in &m.rows {
        let Some(cell) = row.cells.get(client) else {
            continue;
        };
        let tags: Vec<&str> = if row.spec.is_empty() {
            vec![NO_SPEC]
        } else {
            row.spec.iter().map(String::as_str).collect()
        };
        for tag in tags {
            let tally = tallies.entry(tag.to_string()).or_insert_with(|| SpecTally {
                spec: tag.to_string(),
                ..SpecTally::default()
            });
            match cell.status {
                CellStatus::Pass => tally.pass += 1,
                CellStatus::Divergent => {
                    tally.pass += 1;
                    tally.divergent += 1;
                }
                CellStatus::Flaky => {
                    tally.pass += 1;
                    tally.flaky += 1;
                }
                CellStatus::KnownFailure => tally.known += 1,
                CellStatus::Fail | CellStatus::Error => tally.failed += 1,
                CellStatus::NotApplicable => {
                    *tally.not_applicable.entry(lacking(cell)).or_default() += 1;
                }
            }
        }
    }
    let mut out: Vec<SpecTally> = tallies.into_values().collect();
    out.sort_by_key(|t| {
        let tag = (t.spec != NO_SPEC).then_some(t.spec.as_str());
        group_rank(tag)
    });
    out
}

/// Why an n/a cell is n/a, as a group: what it lacks, or its reason.
fn lacking(cell: &crate::matrix::MatrixCell) -> String {
    if !cell.missing.is_empty() {
        return cell.missing.join(" + ");
    }
    if cell.detail.starts_with("skipped by ") {
        return "skipped by its expectations file".to_string();
    }
    xds_vocabulary::cut::cut(cell.detail.lines().next().unwrap_or_default(), 100).into_owned()
}

/// One line per spec: `A46   20 runs: 15 pass, 2 known failures, 3 n/a
/// (2 incremental (delta) xDS; 1 ...)`, for a run's summary.
pub fn spec_lines(tallies: &[SpecTally]) -> String {
    let width = tallies.iter().map(|t| t.spec.len()).max().unwrap_or(0);
    let mut out = String::new();
    for t in tallies {
        let mut parts = vec![format!("{} pass", t.pass)];
        let mut how = Vec::new();
        if t.divergent > 0 {
            how.push(format!("{} divergent", t.divergent));
        }
        if t.flaky > 0 {
            how.push(format!("{} flaky", t.flaky));
        }
        if !how.is_empty() {
            parts[0].push_str(&format!(" ({})", how.join(", ")));
        }
        if t.known > 0 {
            parts.push(format!("{} known failure{}", t.known, plural(t.known)));
        }
        if t.failed > 0 {
            parts.push(format!("{} FAIL", t.failed));
        }
        let na: usize = t.not_applicable.values().sum();
        if na > 0 {
            let mut groups: Vec<(&String, &usize)> = t.not_applicable.iter().collect();
            groups.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let groups: Vec<String> = groups
                .into_iter()
                .map(|(why, n)| format!("{n} {why}"))
                .collect();
            parts.push(format!("{na} n/a ({})", groups.join("; ")));
        }
        let _ = writeln!(
            out,
            "  {:<width$}  {} run{}: {}",
            t.spec,
            t.runs(),
            plural(t.runs()),
            parts.join(", ")
        );
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{ClientColumn, MatrixCell, MatrixRow};

    fn cell(status: CellStatus, detail: &str, missing: &[&str]) -> MatrixCell {
        MatrixCell {
            status,
            detail: detail.into(),
            timeline_file: None,
            timeline: None,
            mark: None,
            virtual_duration: Default::default(),
            wall_duration: Default::default(),
            missing: missing.iter().map(|m| m.to_string()).collect(),
        }
    }

    fn row(spec: &[&str], cells: Vec<MatrixCell>) -> MatrixRow {
        MatrixRow {
            scenario: "s".into(),
            spec: spec.iter().map(|s| s.to_string()).collect(),
            description: String::new(),
            source: None,
            cells,
        }
    }

    /// Each run counts under each of its tags, known specs in the
    /// matrix's order; n/a grouped by what the client lacks, and every
    /// count adds up to the runs.
    #[test]
    fn runs_are_counted_per_spec_and_n_a_by_what_is_lacking() {
        let delta = "incremental (delta) xDS";
        let m = Matrix {
            title: String::new(),
            clients: vec![
                ClientColumn {
                    name: "other".into(),
                    version: String::new(),
                },
                ClientColumn {
                    name: "mine".into(),
                    version: String::new(),
                },
            ],
            rows: vec![
                row(
                    &["A46", "A27"],
                    vec![
                        cell(CellStatus::Fail, "", &[]),
                        cell(CellStatus::Pass, "", &[]),
                    ],
                ),
                row(
                    &["A46"],
                    vec![
                        cell(CellStatus::Pass, "", &[]),
                        cell(CellStatus::KnownFailure, "r", &[]),
                    ],
                ),
                row(
                    &["A46"],
                    vec![
                        cell(CellStatus::Pass, "", &[]),
                        cell(CellStatus::NotApplicable, "the client lacks x", &[delta]),
                    ],
                ),
                row(
                    &["A46"],
                    vec![
                        cell(CellStatus::Pass, "", &[]),
                        cell(CellStatus::NotApplicable, "skipped by e.yaml: hangs", &[]),
                    ],
                ),
                row(
                    &["A27"],
                    vec![
                        cell(CellStatus::Pass, "", &[]),
                        cell(CellStatus::Divergent, "d", &[]),
                    ],
                ),
                row(
                    &[],
                    vec![
                        cell(CellStatus::Pass, "", &[]),
                        cell(CellStatus::Error, "boom", &[]),
                    ],
                ),
            ],
        };
        let tallies = spec_tallies(&m, 1);
        let specs: Vec<&str> = tallies.iter().map(|t| t.spec.as_str()).collect();
        assert_eq!(specs, ["A27", "A46", NO_SPEC]);
        let a46 = &tallies[1];
        assert_eq!((a46.pass, a46.known, a46.failed, a46.runs()), (1, 1, 0, 4));
        assert_eq!(a46.not_applicable[delta], 1);
        assert_eq!(a46.not_applicable["skipped by its expectations file"], 1);
        assert_eq!((tallies[0].pass, tallies[0].divergent), (2, 1));
        assert_eq!(tallies[2].failed, 1);
        let lines = spec_lines(&tallies);
        assert_eq!(
            lines,
            "  A27        2 runs: 2 pass (1 divergent)\n  \
             A46        4 runs: 1 pass, 1 known failure, 2 n/a (1 incremental (delta) xDS; 1 skipped by its expectations file)\n  \
             (no spec)  1 run: 0 pass, 1 FAIL\n"
        );
    }
}
