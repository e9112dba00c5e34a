//! Expectations a client's own repository keeps: which scenario runs it is
//! expected to fail (or to fail now and then, or not to run), and why.
//!
//! As web-platform-tests' per-browser metadata and test262's status
//! files: the scenario files say how xDS clients must behave; what one
//! implementation does not do yet lives with that implementation, and its
//! CI gate holds it to exactly that. The gate is strict both ways: a run
//! expected to fail that passes fails the gate too, so the file never goes
//! stale (`--update-expectations` rewrites it from a run).
//!
//! ```yaml
//! # Expected results of my-client (xds-conformance --expectations).
//! a46/nack-keeps-valid-resources:
//!   expect: fail
//!   reason: "NACKs carry the rejected version (client issue #12)"
//!   link: https://example.com/issues/12
//!   # Only this failure is the known one: another is a FAIL.
//!   check: expected a request CDS nack
//! a57/delta-resubscribe@delta:
//!   expect: skip
//!   reason: hangs the client's process
//! ```
//!
//! Keys are run IDs: a scenario's name (its path under `scenarios/`
//! without `.yaml`, or its `name:`), and `@delta` for the delta run of a
//! file played over both protocols.
//!
//! `--update-expectations` edits the file as a person would: it removes
//! the entries of runs that passed (with the comment lines right above
//! each), appends an entry per new failure, and leaves every other line,
//! comment and order as it was. What it writes holds no local path and
//! no timing, so an update's diff is only what changed.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_conformance_reports::Verdict;

use crate::check::Spanned;

/// What a run is expected to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// It fails (FAIL): reported as a known failure. A pass fails the
    /// gate, so the entry goes when the client is fixed. An ERROR (a
    /// crash, a broken run) is still an error.
    Fail,
    /// It may pass or fail (a known race in the client): a failure is a
    /// known failure, a pass a pass.
    Flaky,
    /// It is not run at all (it hangs or crashes the client): reported as
    /// not applicable, with the reason.
    Skip,
}

/// How an entry names a chaos invariant rather than a run.
pub const INVARIANT_PREFIX: &str = "chaos:";

/// One entry, as written.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// `fail`, `flaky` or `skip`.
    pub expect: Expected,
    /// Why: what the client does, and what the scenario checks.
    pub reason: String,
    /// Where to read more (the client's issue, a spec section).
    pub link: Option<String>,
    /// With `expect: fail`, which failure is the known one: text its
    /// failure's first line holds (as `--update-expectations` writes it,
    /// the failed check without its file, times or timeline lines). A
    /// run that fails otherwise is a FAIL.
    pub check: Option<String>,
}

/// A client's expectations file.
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    /// Where it was read from (for messages).
    pub source: PathBuf,
    /// Whether it was read from a file: a client's expectations are
    /// recorded once it has one (even with no entries); before that, its
    /// runs have never been looked at (a new adapter's first runs).
    pub recorded: bool,
    /// Run ID -> entry, in the file's order.
    pub entries: IndexMap<String, Entry>,
    /// The text it was read from, and the line each entry's key is on:
    /// what an update edits.
    text: Option<(String, IndexMap<String, u64>)>,
}

/// An expectations file that cannot be used: where, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ExpectationsError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

/// The most an expectations file may hold (it is read whole).
const MAX_BYTES: u64 = 4 << 20;

impl Expectations {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Expectations, ExpectationsError> {
        let file = path.display().to_string();
        let error = |line, column, message: String| ExpectationsError {
            file: file.clone(),
            line,
            column,
            message,
        };
        let text = xds_vocabulary::files::read_regular_text(path, MAX_BYTES)
            .map_err(|e| error(0, 0, format!("cannot read the expectations file: {e}")))?;
        Self::parse(path, &text)
    }

    /// No entries, to be written to `path` (a file that does not exist
    /// yet): an update writes it anew.
    pub fn empty(path: &Path) -> Expectations {
        Expectations {
            source: path.to_path_buf(),
            ..Expectations::default()
        }
    }

    /// Checks expectations text read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Expectations, ExpectationsError> {
        let file = path.display().to_string();
        let parsed: Option<IndexMap<Spanned<String>, Entry>> = serde_saphyr::from_str(text)
            .map_err(|e| {
                let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
                ExpectationsError {
                    file: file.clone(),
                    line,
                    column,
                    message: format!(
                        "{} (expected run ID: {{expect: fail|flaky|skip, reason: ..., link: ...}})",
                        e.to_string().lines().next().unwrap_or_default()
                    ),
                }
            })?;
        let mut entries = IndexMap::new();
        let mut lines = IndexMap::new();
        // A key not at the start of its line is a flow mapping's
        // (`{a: ..., b: ...}`): such a file is written anew on update.
        let mut block = true;
        for (id, entry) in parsed.unwrap_or_default() {
            if id.value.trim().is_empty() || id.value.chars().any(char::is_control) {
                return Err(ExpectationsError {
                    file,
                    line: id.line,
                    column: id.column,
                    message: format!(
                        "{:?} is not a run ID (e.g. a46/nack-keeps-valid-resources)",
                        id.value
                    ),
                });
            }
            if entry.reason.trim().is_empty() {
                return Err(ExpectationsError {
                    file,
                    line: id.line,
                    column: id.column,
                    message: format!("{}: a reason is required", id.value),
                });
            }
            if entry.check.is_some() && entry.expect != Expected::Fail {
                return Err(ExpectationsError {
                    file,
                    line: id.line,
                    column: id.column,
                    message: format!(
                        "{}: `check` names the expected failure of an `expect: fail` entry",
                        id.value
                    ),
                });
            }
            if entry.check.as_deref().is_some_and(|c| c.trim().is_empty()) {
                return Err(ExpectationsError {
                    file,
                    line: id.line,
                    column: id.column,
                    message: format!("{}: an empty `check` matches every failure", id.value),
                });
            }
            block &= id.column == 1;
            lines.insert(id.value.clone(), id.line);
            entries.insert(id.value, entry);
        }
        Ok(Expectations {
            source: path.to_path_buf(),
            recorded: true,
            entries,
            text: block.then(|| (text.to_string(), lines)),
        })
    }

    /// Why the run `id` is not to be run, if it is not.
    pub fn skip(&self, id: &str) -> Option<String> {
        self.entries
            .get(id)
            .filter(|e| e.expect == Expected::Skip)
            .map(|e| format!("skipped by {}: {}", self.source.display(), e.reason))
    }

    /// The verdict of run `id` once held against its entry.
    pub fn apply(&self, id: &str, verdict: Verdict) -> Verdict {
        let Some(entry) = self.entries.get(id) else {
            return verdict;
        };
        let file = self.source.display();
        match (entry.expect, verdict) {
            (Expected::Fail, Verdict::Fail { message })
                if entry.check.as_ref().is_some_and(|c| !fails_at(&message, c)) =>
            {
                Verdict::Fail {
                    message: format!(
                        "{file} expects {id} to fail at {:?} ({}), but it failed otherwise: \
                         {message}",
                        entry.check.as_deref().unwrap_or_default(),
                        entry.reason
                    ),
                }
            }
            (Expected::Fail | Expected::Flaky, Verdict::Fail { message }) => {
                Verdict::KnownFailure {
                    reason: entry.reason.clone(),
                    message,
                }
            }
            (Expected::Fail, Verdict::Pass | Verdict::Divergent { .. }) => Verdict::Fail {
                message: format!(
                    "{file} expects {id} to fail ({}), but it passed: remove the entry \
                     (or --update-expectations)",
                    entry.reason
                ),
            },
            (_, verdict) => verdict,
        }
    }

    /// Entries for runs that are not among `ids` (a renamed or removed
    /// scenario, a typo): worth a warning, since they hold nothing.
    /// Entries of chaos invariants are not runs ([`Self::invariants`]).
    pub fn unknown<'a>(&'a self, ids: &[String]) -> Vec<&'a str> {
        self.entries
            .keys()
            .filter(|id| !id.starts_with(INVARIANT_PREFIX) && !ids.contains(id))
            .map(String::as_str)
            .collect()
    }

    /// Entries that expect a failure (or a flaky run) of runs the client
    /// cannot run (`not_applicable`: their IDs): they hold nothing, and
    /// nothing would ever say so. A `skip` entry is a choice, not a result,
    /// and stays.
    pub fn for_not_applicable<'a>(&'a self, not_applicable: &[String]) -> Vec<&'a str> {
        self.entries
            .iter()
            .filter(|(id, e)| e.expect != Expected::Skip && not_applicable.contains(id))
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// The chaos invariants the client is known to break, each with its
    /// entry: `chaos:<invariant>: {expect: fail, reason: ...}`. A chaos
    /// campaign does not hold the client to them (docs/src/chaos/clients.md).
    pub fn invariants(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries
            .iter()
            .filter_map(|(id, entry)| Some((id.strip_prefix(INVARIANT_PREFIX)?, entry)))
    }

    /// The expectations a run shows, from what each run showed before
    /// these expectations were held to it (`observed`: an entry turns a
    /// failure into a known failure, and a pass into a FAIL): every run
    /// that failed is expected to fail, keeping an existing entry (its
    /// reason, link and comments); a new entry's reason and `check` are
    /// the failure's first line without its file, times or timeline
    /// lines; entries of runs that passed go, and so do the `fail` and
    /// `flaky` entries of runs that were not applicable (they hold
    /// nothing); `skip` and other `flaky` entries, and entries of runs not
    /// in `runs`, stay.
    pub fn updated<'a>(&self, runs: impl IntoIterator<Item = (&'a str, &'a Verdict)>) -> Update {
        let mut update = Update {
            expectations: self.clone(),
            removed: Vec::new(),
            added: Vec::new(),
            changed: Vec::new(),
        };
        let entries = &mut update.expectations.entries;
        for (id, observed) in runs {
            let kept = entries.get(id);
            match (observed, kept) {
                (Verdict::NotApplicable { .. }, Some(entry)) if entry.expect != Expected::Skip => {
                    entries.shift_remove(id);
                    update.removed.push(id.to_string());
                }
                (_, Some(entry)) if entry.expect != Expected::Fail => {}
                // It fails otherwise than its `check` says: the entry
                // would fail the next run too, so it names the new
                // failure (a reason of its own is kept after it).
                (Verdict::Fail { message }, Some(entry))
                    if entry.check.as_ref().is_some_and(|c| !fails_at(message, c)) =>
                {
                    let check = failed_check(message);
                    let old_check = entry.check.clone().unwrap_or_default();
                    let reason = if entry.reason == format!("fails: {old_check}") {
                        format!("fails: {check}")
                    } else {
                        format!(
                            "fails otherwise now: {check} (was: {}; then it failed at: \
                             {old_check})",
                            entry.reason
                        )
                    };
                    let changed = Entry {
                        reason,
                        check: Some(check),
                        ..entry.clone()
                    };
                    entries.insert(id.to_string(), changed);
                    update.changed.push(id.to_string());
                }
                (Verdict::Fail { .. }, Some(_)) => {}
                (Verdict::Fail { message }, None) => {
                    let check = failed_check(message);
                    entries.insert(
                        id.to_string(),
                        Entry {
                            expect: Expected::Fail,
                            reason: format!("fails: {check}"),
                            link: None,
                            check: Some(check),
                        },
                    );
                    update.added.push(id.to_string());
                }
                (Verdict::Pass | Verdict::Divergent { .. } | Verdict::Flaky { .. }, Some(_)) => {
                    entries.shift_remove(id);
                    update.removed.push(id.to_string());
                }
                _ => {}
            }
        }
        update
    }

    /// The file's text when written anew (no text of its own to edit).
    fn written_anew(&self) -> String {
        let body = if self.entries.is_empty() {
            "{}\n".to_string()
        } else {
            serde_saphyr::to_string(&self.entries).unwrap_or_default()
        };
        format!(
            "# Expected results on the xds-conformance scenarios (--expectations);\n\
             # --update-expectations edits it from a run.\n{body}"
        )
    }
}

/// What `--update-expectations` makes of a file: the expectations, and
/// what changed.
pub struct Update {
    pub expectations: Expectations,
    /// Run IDs whose entries went (their runs passed).
    pub removed: Vec<String>,
    /// Run IDs given an entry (their runs failed).
    pub added: Vec<String>,
    /// Run IDs whose entries name another failure now (their runs failed
    /// otherwise than their `check` said).
    pub changed: Vec<String>,
}

impl Update {
    /// The file's new text: the old text with the removed entries' lines
    /// (and the comment lines right above each) taken out and the added
    /// entries appended, every other line as it was; a file with no text
    /// of its own, or a flow mapping, is written anew.
    pub fn to_yaml(&self) -> String {
        let old = &self.expectations;
        let Some((text, key_lines)) = &old.text else {
            return old.written_anew();
        };
        if self.removed.is_empty() && self.added.is_empty() && self.changed.is_empty() {
            return text.clone();
        }
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        // Each entry runs from its key's line to the line before the next
        // key, less the blank and comment lines that end it (they belong
        // to what follows).
        let mut starts: Vec<(usize, &str)> = key_lines
            .iter()
            .map(|(id, line)| ((*line as usize).saturating_sub(1), id.as_str()))
            .collect();
        starts.sort();
        let mut drop = vec![false; lines.len()];
        // A changed entry is written anew where its lines were; the
        // comments above it stay.
        let mut replaced: std::collections::HashMap<usize, String> = Default::default();
        for (i, (start, id)) in starts.iter().enumerate() {
            let changed = self.changed.iter().any(|c| c == id);
            if !changed && !self.removed.iter().any(|r| r == id) {
                continue;
            }
            let next = starts.get(i + 1).map_or(lines.len(), |(n, _)| *n);
            let mut end = next;
            while end > *start + 1 && is_blank_or_comment(lines[end - 1]) {
                end -= 1;
            }
            if changed {
                let mut one = IndexMap::new();
                one.insert(id.to_string(), old.entries[*id].clone());
                replaced.insert(*start, serde_saphyr::to_string(&one).unwrap_or_default());
                for d in drop.iter_mut().take(end.min(lines.len())).skip(*start) {
                    *d = true;
                }
                continue;
            }
            // The comment lines right above are the entry's, unless they
            // open the file (its header).
            let mut first = *start;
            while first > 0 && lines[first - 1].starts_with('#') {
                first -= 1;
            }
            if first == 0 && lines.get(first).is_some_and(|l| l.starts_with('#')) {
                first = *start;
            }
            for d in drop.iter_mut().take(end.min(lines.len())).skip(first) {
                *d = true;
            }
        }
        let mut out = String::new();
        for (i, (line, dropped)) in lines.iter().zip(&drop).enumerate() {
            if let Some(entry) = replaced.get(&i) {
                out.push_str(entry);
            }
            if !dropped {
                out.push_str(line);
            }
        }
        // `{}` alone is an empty file's mapping; entries replace it. (A
        // file left with comments only reads as no entries.)
        if !self.added.is_empty() {
            out = out
                .split_inclusive('\n')
                .filter(|l| l.trim() != "{}")
                .collect();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            for id in &self.added {
                let mut one = IndexMap::new();
                one.insert(id.clone(), old.entries[id].clone());
                out.push_str(&serde_saphyr::to_string(&one).unwrap_or_default());
            }
        }
        out
    }
}

fn is_blank_or_comment(line: &str) -> bool {
    line.trim().is_empty() || line.starts_with('#')
}

/// Whether a failure `message` is the one `check` names: its first line,
/// as written or as [`failed_check`] reads it, holds the text.
fn fails_at(message: &str, check: &str) -> bool {
    let first = message.lines().next().unwrap_or_default();
    first.contains(check) || failed_check(message).contains(check)
}

/// A failure's first line as a stable description of the check that
/// failed: without the scenario file's path (`path:line:column: `), the
/// times of the window it was looked for in (`(from 1.2s to 3.4s)`, `(up
/// to 512ms late on real time)`), the
/// timeline lines after `;`, what did happen instead and when (after
/// `, but `: `but one happened at 4.1s (#44)`), a deadline that depends on
/// when the step began on real time (`by 2.330s`), and any other path but
/// its file name. What stays is the scenario's own words (`within 1s`,
/// `at 15.000s`, `for 5.000s`). The same failure gives the same text on
/// every machine and run.
pub fn failed_check(message: &str) -> String {
    let mut line = message.lines().next().unwrap_or_default().trim();
    // `some/file.yaml:12:5: expected ...`
    if let Some((place, rest)) = line.split_once(": ")
        && place.rsplitn(3, ':').count() == 3
        && place
            .rsplitn(3, ':')
            .take(2)
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    {
        line = rest;
    }
    let line = line.split("; ").next().unwrap_or_default();
    let line = line.split(", but ").next().unwrap_or_default();
    let mut out = String::new();
    let mut rest = line;
    // `(from 1.2s to 3.4s)`, `(up to 512ms late on real time)`: where the
    // window stood in this run, and how late its script was.
    while let Some(open) = [" (from ", " (up to "]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()
    {
        out.push_str(&rest[..open]);
        rest = rest[open..]
            .find(')')
            .map_or("", |close| &rest[open + close + 1..]);
    }
    out.push_str(rest);
    let mut words: Vec<&str> = out.split(' ').collect();
    // `by 2.330s`: a real-time deadline, counted from when its step began.
    while let Some(at) = words
        .windows(2)
        .position(|pair| pair[0] == "by" && is_seconds(pair[1]))
    {
        words.drain(at..at + 2);
    }
    let words: Vec<String> = words
        .into_iter()
        .filter(|word| !is_event_number(word))
        .map(|word| {
            if word.starts_with('/') && word.len() > 1 {
                let trimmed = word.trim_end_matches([',', ':', ')', '.']);
                let tail = &word[trimmed.len()..];
                let name = trimmed.rsplit('/').next().unwrap_or_default();
                format!("{name}{tail}")
            } else {
                word.to_string()
            }
        })
        .collect();
    xds_vocabulary::cut::cut(words.join(" ").trim(), 300).into_owned()
}

/// `2.330s`, `15s`, `2.330s:` (a time as failures print it).
fn is_seconds(word: &str) -> bool {
    let number = word.trim_end_matches([',', ':', ')', '.']);
    number
        .strip_suffix('s')
        .is_some_and(|n| !n.is_empty() && n.parse::<f64>().is_ok())
}

/// `(#44)`, `#44`: a timeline line number, different in every run.
fn is_event_number(word: &str) -> bool {
    let word = word
        .trim_start_matches('(')
        .trim_end_matches([',', ':', ')', '.']);
    word.strip_prefix('#')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Expectations, ExpectationsError> {
        Expectations::parse(Path::new("e.yaml"), text)
    }

    fn fail(message: &str) -> Verdict {
        Verdict::Fail {
            message: message.into(),
        }
    }

    #[test]
    fn entries_hold_runs_to_what_they_say_both_ways() {
        let e = parse(
            "a/x:\n  expect: fail\n  reason: r1\na/y@delta: {expect: flaky, reason: r2}\n\
             a/z: {expect: skip, reason: hangs, link: https://h}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(e.apply("a/x", fail("m")), Verdict::KnownFailure { reason, .. } if reason == "r1")
        );
        let Verdict::Fail { message } = e.apply("a/x", Verdict::Pass) else {
            panic!()
        };
        assert!(
            message.contains("expects a/x to fail (r1), but it passed"),
            "{message}"
        );
        assert_eq!(e.apply("a/y@delta", Verdict::Pass), Verdict::Pass);
        assert!(matches!(
            e.apply("a/y@delta", fail("m")),
            Verdict::KnownFailure { .. }
        ));
        // An error is not a failure.
        let error = Verdict::Error {
            message: "crashed".into(),
        };
        assert_eq!(e.apply("a/x", error.clone()), error);
        assert_eq!(e.apply("a/other", fail("m")), fail("m"));
        assert_eq!(e.skip("a/z").as_deref(), Some("skipped by e.yaml: hangs"));
        assert_eq!(e.skip("a/x"), None);
        assert_eq!(e.unknown(&["a/x".into(), "a/z".into()]), ["a/y@delta"]);
    }

    #[test]
    fn chaos_invariant_entries_are_not_runs() {
        let e = parse(
            "a/x: {expect: fail, reason: r1}
chaos:node-on-first-request: {expect: fail, reason: r2}
",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.unknown(&[]), ["a/x"]);
        let invariants: Vec<_> = e
            .invariants()
            .map(|(name, entry)| (name, entry.reason.as_str()))
            .collect();
        assert_eq!(invariants, [("node-on-first-request", "r2")]);
    }

    #[test]
    fn bad_files_say_where() {
        let e = parse("a/x: {expect: maybe, reason: r}\n").expect_err("bad word");
        assert_eq!(e.line, 1, "{e}");
        assert!(e.to_string().starts_with("e.yaml:1:"), "{e}");
        let e = parse("a/x: {expect: fail, reason: \"\"}\n").expect_err("no reason");
        assert!(e.message.contains("a reason is required"), "{e}");
        let e = parse("a/x: {expect: fail, reason: r, typo: 1}\n").expect_err("unknown key");
        assert!(e.message.contains("typo"), "{e}");
        assert!(parse("").expect("empty is none").entries.is_empty());
    }

    #[test]
    fn entries_of_runs_the_client_cannot_run_are_stale() {
        let e = parse(
            "a/gone: {expect: fail, reason: r}\na/wobbly: {expect: flaky, reason: r}\n\
             a/skip: {expect: skip, reason: hangs}\na/runs: {expect: fail, reason: r}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let na: Vec<String> = ["a/gone", "a/wobbly", "a/skip"].map(String::from).to_vec();
        assert_eq!(e.for_not_applicable(&na), ["a/gone", "a/wobbly"]);
        let n_a = Verdict::NotApplicable {
            reason: "no delta".into(),
        };
        let updated = e.updated([
            ("a/gone", &n_a),
            ("a/wobbly", &n_a),
            ("a/skip", &n_a),
            ("a/runs", &fail("again")),
        ]);
        assert_eq!(updated.removed, ["a/gone", "a/wobbly"]);
        let text = updated.to_yaml();
        let reread = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let ids: Vec<&str> = reread.entries.keys().map(String::as_str).collect();
        assert_eq!(ids, ["a/skip", "a/runs"], "{text}");
    }

    #[test]
    fn updating_from_a_run_adds_failures_and_drops_passes() {
        let e = parse(
            "a/fixed: {expect: fail, reason: old}\na/still: {expect: fail, reason: kept, link: l}\n\
             a/skip: {expect: skip, reason: hangs}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let new = fail(
            "/tmp/x/t.yaml:3:5: expected a thing within 5s (from 1.234s to 6.234s); nothing from #2\nmore",
        );
        let na = Verdict::NotApplicable { reason: "s".into() };
        let updated = e.updated([
            ("a/fixed", &Verdict::Pass),
            ("a/still", &fail("again")),
            ("a/new", &new),
            ("a/skip", &na),
        ]);
        assert_eq!(updated.removed, ["a/fixed"]);
        assert_eq!(updated.added, ["a/new"]);
        let text = updated.to_yaml();
        let reread = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let ids: Vec<&str> = reread.entries.keys().map(String::as_str).collect();
        assert_eq!(ids, ["a/still", "a/skip", "a/new"], "{text}");
        assert_eq!(reread.entries["a/still"].reason, "kept");
        assert_eq!(reread.entries["a/still"].link.as_deref(), Some("l"));
        assert_eq!(
            reread.entries["a/new"].check.as_deref(),
            Some("expected a thing within 5s")
        );
        assert!(!text.contains("/tmp") && !text.contains("1.234"), "{text}");
    }

    #[test]
    fn an_update_keeps_comments_and_order_and_takes_a_removed_entrys_comment() {
        let text = "# my client's expectations\n\n# why x fails: issue 1\na/x:\n  expect: fail\n  \
                    reason: r1   # trailing\n\n# y is racy\na/y: {expect: flaky, reason: r2}\n\
                    # z hangs\na/z: {expect: fail, reason: r3}\n";
        let e = parse(text).unwrap_or_else(|e| panic!("{e}"));
        let updated = e.updated([("a/x", &Verdict::Pass), ("a/y", &Verdict::Pass)]);
        assert_eq!(
            updated.to_yaml(),
            "# my client's expectations\n\n\n# y is racy\na/y: {expect: flaky, reason: r2}\n\
             # z hangs\na/z: {expect: fail, reason: r3}\n"
        );
        // Nothing changed: the text as it was, byte for byte.
        let same = e.updated([("a/z", &fail("m"))]);
        assert_eq!(same.to_yaml(), text);
        // The header is not the first entry's comment.
        let e =
            parse("# header\na/x: {expect: fail, reason: r}\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.updated([("a/x", &Verdict::Pass)]).to_yaml(), "# header\n");
        // An empty file's `{}` gives way to the first entry.
        let e = parse("{}\n").unwrap_or_else(|e| panic!("{e}"));
        let text = e.updated([("a/n", &fail("boom"))]).to_yaml();
        assert_eq!(
            parse(&text).unwrap_or_else(|e| panic!("{e}")).entries.len(),
            1,
            "{text}"
        );
    }

    #[test]
    fn a_check_names_the_failure_that_is_known() {
        let e = parse("a/x: {expect: fail, reason: r, check: expected a request}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            e.apply(
                "a/x",
                fail("s.yaml:1:2: expected a request CDS (from 1s to 2s)")
            ),
            Verdict::KnownFailure { .. }
        ));
        let Verdict::Fail { message } =
            e.apply("a/x", fail("s.yaml:9:2: expected a watcher event"))
        else {
            panic!("another failure is a FAIL")
        };
        assert!(message.contains("but it failed otherwise"), "{message}");
        let bad = parse("a/x: {expect: skip, reason: r, check: c}\n").expect_err("check on skip");
        assert!(bad.message.contains("`check`"), "{bad}");
        assert!(parse("a/x: {expect: fail, reason: r, check: \"\"}\n").is_err());
    }

    /// A run that fails otherwise than its entry's `check`: the update
    /// names the new failure where the entry was (its comment and link
    /// kept, a reason of its own kept after the new one), so the same
    /// failure is a known failure next time.
    #[test]
    fn an_update_names_a_failure_that_came_otherwise() {
        let text = "# header\n\n# upstream issue 9\na/x: {expect: fail, reason: nonce bug, link: l, \
                    check: expected a request}\na/y: {expect: fail, reason: \"fails: expected z\", \
                    check: expected z}\na/z: {expect: fail, reason: r}\n";
        let e = parse(text).unwrap_or_else(|e| panic!("{e}"));
        let otherwise = fail("s.yaml:9:2: expected a watcher event (from 1s to 2s); #3");
        let updated = e.updated([
            ("a/x", &otherwise),
            ("a/y", &fail("s.yaml:1:1: expected w")),
            ("a/z", &fail("anything")),
        ]);
        assert_eq!(updated.changed, ["a/x", "a/y"]);
        assert!(updated.removed.is_empty() && updated.added.is_empty());
        let text = updated.to_yaml();
        assert!(
            text.starts_with("# header\n\n# upstream issue 9\na/x:\n"),
            "{text}"
        );
        let reread = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let ids: Vec<&str> = reread.entries.keys().map(String::as_str).collect();
        assert_eq!(ids, ["a/x", "a/y", "a/z"], "{text}");
        let x = &reread.entries["a/x"];
        assert_eq!(x.check.as_deref(), Some("expected a watcher event"));
        assert_eq!(x.link.as_deref(), Some("l"));
        assert!(x.reason.contains("(was: nonce bug;"), "{}", x.reason);
        assert_eq!(reread.entries["a/y"].reason, "fails: expected w");
        assert!(matches!(
            reread.apply("a/x", otherwise),
            Verdict::KnownFailure { .. }
        ));
        // The same failure again changes nothing.
        let again = reread.updated([("a/x", &fail("s.yaml:9:2: expected a watcher event"))]);
        assert!(again.changed.is_empty());
        assert_eq!(again.to_yaml(), text);
    }

    #[test]
    fn failed_check_drops_paths_times_and_timeline_lines() {
        assert_eq!(
            failed_check(
                "/home/u/s/a.yaml:8:5: expected x within 9s (from 0.100s to 9.100s); nothing matched from #2 on"
            ),
            "expected x within 9s"
        );
        assert_eq!(
            failed_check("cannot read /tmp/abc/boot.json: gone"),
            "cannot read boot.json: gone"
        );
    }

    /// What happened instead, when, and a deadline counted from a
    /// real-time step are different in every run: none of them is in the
    /// check, and a check read from one run matches the next run's failure.
    #[test]
    fn failed_check_drops_what_happened_instead_and_run_specific_times() {
        let runs = [
            (
                "s.yaml:9:5: expected no CDS request for 4.700s, but one happened at 2.104s (#44)\n  #44 ...",
                "s.yaml:9:5: expected no CDS request for 4.700s, but one happened at 3.870s (#51)\n  #51 ...",
                "expected no CDS request for 4.700s",
            ),
            (
                "s.yaml:3:5: expected the client's CSDS to show c1 ACKED by 2.330s; it shows:\n  ...",
                "s.yaml:3:5: expected the client's CSDS to show c1 ACKED by 7.912s; it shows:\n  ...",
                "expected the client's CSDS to show c1 ACKED",
            ),
            (
                "s.yaml:4:5: expected event at 15.000s (up to 300ms late on real time), but it happened at 14.2s\n",
                "s.yaml:4:5: expected event at 15.000s (up to 812ms late on real time), but it happened at 9.9s\n",
                "expected event at 15.000s",
            ),
        ];
        for (first, second, check) in runs {
            assert_eq!(failed_check(first), check);
            assert!(fails_at(second, &failed_check(first)), "{second}");
        }
        // A failure that does not say the check's words is another one.
        assert!(!fails_at(
            "s.yaml:9:5: expected no LDS request for 4.700s, but one happened at 1s (#2)",
            "expected no CDS request for 4.700s"
        ));
    }
}
