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
//! a57/delta-resubscribe@delta:
//!   expect: skip
//!   reason: hangs the client's process
//! ```
//!
//! Keys are run IDs: a scenario's name (its path under `scenarios/`
//! without `.yaml`, or its `name:`), and `@delta` for the delta run of a
//! file played over both protocols.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_conformance_reports::{ScenarioReport, Verdict};

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
}

/// A client's expectations file.
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    /// Where it was read from (for messages).
    pub source: PathBuf,
    /// Run ID -> entry, in the file's order.
    pub entries: IndexMap<String, Entry>,
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
        let size = std::fs::metadata(path)
            .map_err(|e| error(0, 0, format!("cannot read the expectations file: {e}")))?
            .len();
        if size > MAX_BYTES {
            return Err(error(
                0,
                0,
                format!("the file is {size} bytes, more than the {MAX_BYTES} allowed"),
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| error(0, 0, format!("cannot read the expectations file: {e}")))?;
        Self::parse(path, &text)
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
            entries.insert(id.value, entry);
        }
        Ok(Expectations {
            source: path.to_path_buf(),
            entries,
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

    /// The chaos invariants the client is known to break, each with its
    /// entry: `chaos:<invariant>: {expect: fail, reason: ...}`. A chaos
    /// campaign does not hold the client to them (docs/src/chaos/clients.md).
    pub fn invariants(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries
            .iter()
            .filter_map(|(id, entry)| Some((id.strip_prefix(INVARIANT_PREFIX)?, entry)))
    }

    /// The expectations a run shows: every run that failed (FAIL, or a
    /// known failure) is expected to fail, keeping an existing entry's
    /// reason and link; entries of runs that passed go; `skip` and
    /// `flaky` entries, and entries of runs not in `results`, stay.
    pub fn updated(&self, results: &[ScenarioReport]) -> Expectations {
        let mut entries = self.entries.clone();
        for result in results {
            let kept = entries.get(&result.name).cloned();
            match (&result.verdict, kept) {
                (_, Some(entry)) if entry.expect != Expected::Fail => {}
                (Verdict::Fail { message }, kept) => {
                    let reason = match kept {
                        Some(entry) => entry.reason,
                        None => first_line(message),
                    };
                    let link = entries.get(&result.name).and_then(|e| e.link.clone());
                    entries.insert(
                        result.name.clone(),
                        Entry {
                            expect: Expected::Fail,
                            reason,
                            link,
                        },
                    );
                }
                (Verdict::KnownFailure { .. }, _) => {}
                (Verdict::Pass | Verdict::Divergent { .. }, Some(_)) => {
                    entries.shift_remove(&result.name);
                }
                _ => {}
            }
        }
        Expectations {
            source: self.source.clone(),
            entries,
        }
    }

    /// The file's text.
    pub fn to_yaml(&self) -> String {
        let body = if self.entries.is_empty() {
            "{}\n".to_string()
        } else {
            serde_saphyr::to_string(&self.entries).unwrap_or_default()
        };
        format!(
            "# Expected results on the xds-conformance scenarios (--expectations);\n\
             # rewritten from a run by --update-expectations.\n{body}"
        )
    }
}

/// A failure's first line, as a reason to start from.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    xds_vocabulary::cut::cut(line, 300).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse(text: &str) -> Result<Expectations, ExpectationsError> {
        Expectations::parse(Path::new("e.yaml"), text)
    }

    fn report(name: &str, verdict: Verdict) -> ScenarioReport {
        ScenarioReport {
            name: name.into(),
            description: String::new(),
            spec: Vec::new(),
            source: String::new(),
            verdict,
            virtual_duration: Duration::ZERO,
            wall_duration: Duration::ZERO,
            timeline: String::new(),
            failed_tries: Vec::new(),
        }
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
    fn updating_from_a_run_adds_failures_and_drops_passes() {
        let e = parse(
            "a/fixed: {expect: fail, reason: old}\na/still: {expect: fail, reason: kept, link: l}\n\
             a/skip: {expect: skip, reason: hangs}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let updated = e.updated(&[
            report("a/fixed", Verdict::Pass),
            report("a/still", fail("again")),
            report("a/new", fail("first line\nmore")),
            report("a/skip", Verdict::NotApplicable { reason: "s".into() }),
        ]);
        let text = updated.to_yaml();
        let reread = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let ids: Vec<&str> = reread.entries.keys().map(String::as_str).collect();
        assert_eq!(ids, ["a/still", "a/skip", "a/new"], "{text}");
        assert_eq!(reread.entries["a/still"].reason, "kept");
        assert_eq!(reread.entries["a/still"].link.as_deref(), Some("l"));
        assert_eq!(reread.entries["a/new"].reason, "first line");
    }
}
