//! A scenario file that cannot be run, as users see it: `file.yaml:3:24:
//! message`, then the offending source lines with a caret under the
//! column.

use std::fmt::Write as _;

use super::Location;
use crate::check::Problem;

/// A scenario file that cannot be run: where, and what is wrong.
///
/// Renders as `file.yaml:3:24: <message>` followed by the offending source
/// lines with a caret under the column.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}{}{}", location_text(file, *line, *column), snippet_block(snippet), more_block(more))]
pub struct ScenarioError {
    pub file: String,
    /// 1-based; 0 when the error has no position (e.g. unreadable file).
    pub line: u64,
    /// 1-based, in characters.
    pub column: u64,
    pub message: String,
    /// The source lines up to `line`, and a caret line; empty without a position.
    pub snippet: String,
    /// Further errors found in the same part of the file (every wrong key
    /// of a proto3 JSON resource), each with its own position.
    pub more: Vec<ScenarioError>,
}

impl ScenarioError {
    pub fn location(&self) -> Location {
        Location {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
        }
    }

    pub(super) fn new(file: &str, text: &str, line: u64, column: u64, message: String) -> Self {
        ScenarioError {
            file: file.to_string(),
            line,
            column,
            message: xds_vocabulary::cut::cut(&message, MAX_MESSAGE).into_owned(),
            snippet: snippet(text, line, column),
            more: Vec::new(),
        }
    }

    pub(super) fn from_problem(file: &str, text: &str, problem: Problem) -> Self {
        let more = problem
            .more
            .into_iter()
            .take(MAX_MORE)
            .map(|p| ScenarioError::new(file, text, p.line, p.column, p.message))
            .collect();
        ScenarioError {
            more,
            ..ScenarioError::new(file, text, problem.line, problem.column, problem.message)
        }
    }
}

/// How many further errors one error carries: a resource pasted with the
/// wrong casing throughout must not print a screen per key.
const MAX_MORE: usize = 20;

fn more_block(more: &[ScenarioError]) -> String {
    more.iter().map(|e| format!("\n{e}")).collect()
}

fn location_text(file: &str, line: u64, column: u64) -> String {
    if line == 0 {
        file.to_string()
    } else {
        format!("{file}:{line}:{column}")
    }
}

fn snippet_block(snippet: &str) -> String {
    if snippet.is_empty() {
        String::new()
    } else {
        format!("\n{snippet}")
    }
}

/// Up to two lines of context, the line itself, and a caret under `column`.
/// Long lines are shown as a window of [`SNIPPET_WIDTH`] characters around
/// the column (a file on one line must not put megabytes into a message).
fn snippet(text: &str, line: u64, column: u64) -> String {
    let Some(index) = usize::try_from(line).ok().and_then(|l| l.checked_sub(1)) else {
        return String::new();
    };
    let lines = yaml_lines(text);
    // An error at the end of input may sit on the line after the last one.
    let target = match lines.get(index) {
        Some(l) => *l,
        None if index == lines.len() => "",
        None => return String::new(),
    };
    let context = &lines[index.saturating_sub(2)..index];
    let width = line.to_string().len();
    let mut out = String::new();
    let _ = writeln!(out, "{:width$} |", "");
    for (i, l) in context.iter().enumerate() {
        let number = index - context.len() + i + 1;
        let (shown, _) = window(l, 0);
        let _ = writeln!(out, "{number:>width$} | {shown}");
    }
    let column = usize::try_from(column.saturating_sub(1)).unwrap_or(0);
    let (shown, caret_at) = window(target, column);
    let _ = writeln!(out, "{line:>width$} | {shown}");
    // Keep tabs so the caret lines up under tab-indented text.
    let pad: String = shown
        .chars()
        .take(caret_at)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let _ = write!(out, "{:width$} | {pad}^", "");
    out
}

/// Characters of one source line a snippet shows.
const SNIPPET_WIDTH: usize = 120;

/// `line` if it is short; else [`SNIPPET_WIDTH`] characters around the
/// 0-based character `column`, with `...` where it was cut. Also where
/// the column lands in what is shown.
fn window(line: &str, column: usize) -> (String, usize) {
    let total = line.chars().count();
    if total <= SNIPPET_WIDTH {
        return (line.to_string(), column);
    }
    let start = column
        .saturating_sub(SNIPPET_WIDTH / 2)
        .min(total - SNIPPET_WIDTH);
    let end = start + SNIPPET_WIDTH;
    let mut shown = String::new();
    if start > 0 {
        shown.push_str("...");
    }
    shown.extend(line.chars().skip(start).take(SNIPPET_WIDTH));
    if end < total {
        let _ = write!(shown, "... [{} more characters]", total - end);
    }
    let caret_at = column - start + if start > 0 { 3 } else { 0 };
    (shown, caret_at)
}

/// Longest message a loader error carries: a parser may quote the value
/// it rejects, and a value may be the whole file.
const MAX_MESSAGE: usize = 1000;

/// The text's lines as YAML numbers them: a line ends at LF, CRLF or a
/// lone CR. (`str::lines` knows no lone CR, so the parser's line numbers
/// would point past its lines and an error would show no source.)
fn yaml_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find(['\n', '\r']) {
        lines.push(&rest[..end]);
        let break_len = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + break_len..];
    }
    if !rest.is_empty() {
        lines.push(rest);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_lf_crlf_or_a_lone_cr() {
        assert_eq!(yaml_lines("a\r\nb\rc\n\nd"), ["a", "b", "c", "", "d"]);
        assert_eq!(yaml_lines("a\n"), ["a"]);
    }
}
