//! The conformance matrix as Markdown: totals per client, the scenario ×
//! client table, and numbered notes explaining every cell that is not a
//! plain pass.

use std::fmt::Write as _;

use crate::escape::md_inline;
use crate::matrix::{CellStatus, Matrix, MatrixCell};

/// Every status, in the order totals list them.
pub(crate) const STATUSES: [CellStatus; 7] = [
    CellStatus::Pass,
    CellStatus::Flaky,
    CellStatus::Divergent,
    CellStatus::KnownFailure,
    CellStatus::NotApplicable,
    CellStatus::Fail,
    CellStatus::Error,
];

/// Shown for a cell the row lacks (fewer cells than clients).
pub(crate) const MISSING_LABEL: &str = "missing";
pub(crate) const MISSING_REASON: &str = "no result was recorded for this client";
pub(crate) const NO_REASON: &str = "(no reason recorded)";

/// The matrix title, or a default.
pub(crate) fn title(m: &Matrix) -> &str {
    if m.title.trim().is_empty() {
        "Conformance matrix"
    } else {
        &m.title
    }
}

/// The cell of `client` in a row, if the row has one.
pub(crate) fn cell(cells: &[MatrixCell], client: usize) -> Option<&MatrixCell> {
    cells.get(client)
}

/// How many cells of client `c` have `status`.
pub(crate) fn count(m: &Matrix, c: usize, status: &CellStatus) -> usize {
    m.rows
        .iter()
        .filter(|r| cell(&r.cells, c).is_some_and(|x| &x.status == status))
        .count()
}

/// A cell's reason, as the notes show it: its detail, or that none was given.
fn reason(c: Option<&MatrixCell>) -> (&str, &str) {
    match c {
        None => (MISSING_LABEL, MISSING_REASON),
        Some(c) if c.detail.trim().is_empty() => (c.status.label(), NO_REASON),
        Some(c) => (c.status.label(), c.detail.trim_end()),
    }
}

/// `12` as `¹²`.
fn superscript(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .bytes()
        .map(|d| DIGITS[usize::from(d - b'0')])
        .collect()
}

struct Note<'a> {
    label: &'a str,
    reason: &'a str,
    /// (client, scenario) of every cell the note explains.
    cells: Vec<(&'a str, &'a str)>,
}

/// Renders the matrix as Markdown. Every cell is a pass or carries a note
/// number; cells with the same status and reason share a note.
pub fn matrix_markdown(m: &Matrix) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", md_inline(title(m)));
    let _ = writeln!(
        out,
        "{} scenarios × {} clients.\n",
        m.rows.len(),
        m.clients.len()
    );

    // Totals per client.
    out.push_str("| client | version |");
    for s in &STATUSES {
        let _ = write!(out, " {} |", s.label());
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---:|".repeat(STATUSES.len()));
    out.push('\n');
    for (c, client) in m.clients.iter().enumerate() {
        let _ = write!(
            out,
            "| {} | {} |",
            md_inline(&client.name),
            md_inline(&client.version)
        );
        for s in &STATUSES {
            let _ = write!(out, " {} |", count(m, c, s));
        }
        out.push('\n');
    }

    // The matrix, collecting notes as cells need them.
    let mut notes: Vec<Note> = Vec::new();
    out.push_str("\n| scenario | spec |");
    for client in &m.clients {
        let _ = write!(out, " {} |", md_inline(&client.name));
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(m.clients.len()));
    out.push('\n');
    for row in &m.rows {
        let _ = write!(
            out,
            "| {} | {} |",
            md_inline(&row.scenario),
            md_inline(&row.spec.join(", "))
        );
        for (c, client) in m.clients.iter().enumerate() {
            let x = cell(&row.cells, c);
            if x.is_some_and(|x| x.status == CellStatus::Pass) {
                out.push_str(" pass |");
                continue;
            }
            let (label, why) = reason(x);
            let n = match notes
                .iter()
                .position(|n| n.label == label && n.reason == why)
            {
                Some(i) => i,
                None => {
                    notes.push(Note {
                        label,
                        reason: why,
                        cells: Vec::new(),
                    });
                    notes.len() - 1
                }
            };
            notes[n].cells.push((&client.name, &row.scenario));
            let _ = write!(out, " {}{} |", label, superscript(n + 1));
        }
        out.push('\n');
    }

    if !notes.is_empty() {
        out.push_str("\n## Notes\n\n");
        for (i, note) in notes.iter().enumerate() {
            let cells: Vec<String> = note
                .cells
                .iter()
                .map(|(c, s)| format!("{} on {}", md_inline(c), md_inline(s)))
                .collect();
            let _ = write!(out, "{}. **{}** ({})", i + 1, note.label, cells.join("; "));
            if note.reason.contains('\n') || note.reason.contains("```") {
                // Multi-line: a fenced block, longer than any backtick run inside.
                let fence = "`".repeat(longest_run(note.reason, '`').max(2) + 1);
                let _ = writeln!(out, ":\n\n   {fence}text");
                for line in note.reason.lines() {
                    let _ = writeln!(out, "   {line}");
                }
                let _ = writeln!(out, "   {fence}\n");
            } else {
                let _ = writeln!(out, ": {}", md_inline(note.reason));
            }
        }
    }
    out
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{ClientColumn, MatrixRow};
    use crate::matrix_sample::sample_matrix;

    #[test]
    fn sample_matrix_markdown() {
        insta::assert_snapshot!(matrix_markdown(&sample_matrix()));
    }

    #[test]
    fn markdown_is_deterministic() {
        assert_eq!(
            matrix_markdown(&sample_matrix()),
            matrix_markdown(&sample_matrix())
        );
    }

    #[test]
    fn every_non_pass_cell_has_a_note() {
        let mut m = sample_matrix();
        // A row short of a cell, and a non-pass cell with no detail.
        m.rows[0].cells.pop();
        m.rows[1].cells[1].detail.clear();
        let md = matrix_markdown(&m);
        assert!(md.contains("| missing"), "{md}");
        assert!(md.contains(MISSING_REASON));
        assert!(md.contains("divergent²"), "{md}");
        assert!(md.contains(NO_REASON));
        let table_cells = md
            .lines()
            .filter(|l| l.starts_with("| a"))
            .flat_map(|l| l.split(" | ").skip(2))
            .map(|c| c.trim_end_matches(" |"))
            .collect::<Vec<_>>();
        assert_eq!(table_cells.len(), 8);
        for c in table_cells {
            assert!(
                c == "pass" || c.ends_with(|x: char| "⁰¹²³⁴⁵⁶⁷⁸⁹".contains(x)),
                "{c}"
            );
        }
    }

    #[test]
    fn identical_reasons_share_a_note() {
        let mut m = sample_matrix();
        let na = m.rows[3].cells[1].clone();
        m.rows[0].cells[1] = na;
        let md = matrix_markdown(&m);
        assert_eq!(md.matches("n/a¹").count(), 2, "{md}");
        assert!(md.contains(
            "(grpc-js on a27/node-on-the-first-request-of-every-stream; grpc-js on a71/fallback-to-secondary)"
        ));
    }

    #[test]
    fn markdown_escapes_text() {
        let nasty = "<&\">|";
        let m = Matrix {
            title: nasty.into(),
            clients: vec![ClientColumn {
                name: nasty.into(),
                version: nasty.into(),
            }],
            rows: vec![MatrixRow {
                scenario: nasty.into(),
                spec: vec![nasty.into()],
                description: nasty.into(),
                source: None,
                cells: vec![MatrixCell {
                    detail: nasty.into(),
                    ..sample_matrix().rows[2].cells[0].clone()
                }],
            }],
        };
        let md = matrix_markdown(&m);
        assert!(!md.contains(nasty));
        assert!(md.contains("\\<\\&\"\\>\\|"));
        // A multi-line reason holding a fence gets a longer fence.
        let mut m2 = m.clone();
        m2.rows[0].cells[0].detail = "a\n```\nb".into();
        assert!(matrix_markdown(&m2).contains("````text"));
    }

    #[test]
    fn superscripts() {
        assert_eq!(superscript(1), "¹");
        assert_eq!(superscript(10), "¹⁰");
    }
}
