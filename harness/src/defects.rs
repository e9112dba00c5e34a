//! The reference client's deliberate defects as the harness plays them:
//! each by name (`xds_client_under_test::defect`, made where each is
//! declared), and the table of which scenario catches which, and where
//! ([`CAUGHT_FILE`]). `tests/broken_clients.rs` plays every line of the
//! table (the scenario passes on the reference client and fails there on
//! the broken one), `run --client reference --defect NAME` plays one
//! defect on any file ([`tested_client`]), and the book's page of defects
//! (`docs/src/reference/defects.md`) lists both. A scenario is only worth
//! what it catches: this is where that is written down.

use std::path::Path;

use serde::Deserialize;
use serde_saphyr::MessageFormatter as _;
use xds_client_under_test::defect::{self, Defect};
use xds_client_under_test::{ClientUnderTest, ReferenceClient};

use crate::check::Spanned;
use crate::expectations::Expectations;
use crate::suite::{BoxedFactory, TestedClient, client_description, client_jobs};

/// The table of catches, in the repository.
pub const CAUGHT_FILE: &str = "harness/tests/broken_clients.yaml";

/// The table is short; a larger file is not it.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// How many names an unknown one is answered with.
const NEAREST: usize = 5;

/// A defect asked for that cannot be played.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DefectError {
    /// No defect has the name.
    #[error(
        "--defect {name}: the reference client has no defect of that name; the nearest: {}. \
         `xds-conformance reference` lists every one with the scenarios that catch it \
         (docs/src/reference/defects.md)",
        nearest.join(", ")
    )]
    Unknown { name: String, nearest: Vec<String> },
    /// The client is not one a defect can be put in.
    #[error(
        "--defect {defect}: only the reference client is broken on purpose (--client reference, \
         which plays the KDS zone too); {client} cannot take a defect"
    )]
    NotTheReference { defect: String, client: String },
}

/// The defect called `name`, or the names nearest to it.
pub fn named(name: &str) -> Result<&'static Defect, DefectError> {
    defect::named(name).ok_or_else(|| DefectError::Unknown {
        name: name.to_string(),
        nearest: nearest(name),
    })
}

/// The defect `name` for a run of `client`: only the reference client in
/// process (`reference`) has defects to put on, one rule at a time; a
/// process or an adapter has none.
pub fn for_client(client: &str, name: &str) -> Result<&'static Defect, DefectError> {
    if client != "reference" {
        return Err(DefectError::NotTheReference {
            defect: name.to_string(),
            client: client.to_string(),
        });
    }
    named(name)
}

/// The reference client (in process, its KDS zone too) with `defect` on,
/// as `run --defect` plays it: a scenario that checks the rule the defect
/// breaks fails on it. Reports name it `reference-broken`, so no result
/// of it passes for the reference's; its heading names the defect. It is
/// held to `expectations` if given, else to the scenarios alone.
pub fn tested_client(
    defect: &'static Defect,
    expectations: Option<&Path>,
) -> Result<TestedClient, String> {
    let defects = defect.defects;
    let factory: BoxedFactory = Box::new(move || {
        Box::new(ReferenceClient::with_defects(defects)) as Box<dyn ClientUnderTest>
    });
    let expectations = match expectations {
        Some(path) => Expectations::load(path).map_err(|e| e.to_string())?,
        None => Expectations::default(),
    };
    Ok(TestedClient {
        version: format!(
            "{} with the defect {}",
            client_description("reference"),
            defect.name
        ),
        name: factory().name().to_string(),
        factory,
        expectations,
        jobs: client_jobs("reference"),
    })
}

/// The defects' names nearest to `name`: first those containing it (a
/// word of the rule: `hash`, `backoff`), then by edit distance (a typo).
pub fn nearest(name: &str) -> Vec<String> {
    let wanted = name.to_lowercase();
    let mut scored: Vec<((bool, usize), &str)> = defect::all()
        .iter()
        .map(|d| {
            let lower = d.name.to_lowercase();
            let contains = !wanted.is_empty() && lower.contains(&wanted);
            (
                (!contains, strsim::damerau_levenshtein(&wanted, &lower)),
                d.name.as_str(),
            )
        })
        .collect();
    // Stable: among equals, the order they are declared in.
    scored.sort_by_key(|(score, _)| *score);
    scored
        .into_iter()
        .take(NEAREST)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// A scenario that catches a defect, and what it shows on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caught {
    /// The defect's name ([`Defect::name`]).
    pub defect: String,
    /// The scenario by name: its path under `scenarios/`, without `.yaml`.
    pub scenario: String,
    pub shows: Shows,
}

/// What a run of the scenario on the broken client shows; on the
/// reference client every run passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shows {
    /// A run FAILs at the expectation written at this line and column of
    /// the file.
    FailsAt { line: u64, column: u64 },
    /// A run FAILs with a message saying this: a failure of no line of the
    /// file (a client that shows something else over delta than over
    /// SotW).
    FailsSaying(String),
    /// Every run is reported divergent, its note saying this: the defect
    /// takes an alternative the spec allows beside the behaviour it
    /// prefers, which a scenario tells apart but cannot fail.
    DivergesNoting(String),
}

impl Shows {
    /// What the run's message (or divergence note) holds: `:LINE:COLUMN:`,
    /// as a failed expectation names its place, or the words.
    pub fn needle(&self) -> String {
        match self {
            Shows::FailsAt { line, column } => format!(":{line}:{column}:"),
            Shows::FailsSaying(words) | Shows::DivergesNoting(words) => words.clone(),
        }
    }
}

impl std::fmt::Display for Caught {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.shows {
            Shows::FailsAt { line, column } => write!(f, "{}:{line}:{column}", self.scenario),
            Shows::FailsSaying(words) => write!(f, "{} ({words})", self.scenario),
            Shows::DivergesNoting(words) => write!(f, "{} (divergent: {words})", self.scenario),
        }
    }
}

/// The table cannot be read: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", if *line == 0 { file.clone() } else { format!("{file}:{line}:{column}") })]
pub struct TableError {
    pub file: String,
    /// 1-based; 0 when the error has no position (an unreadable file).
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl TableError {
    fn at<T>(file: &str, spanned: &Spanned<T>, message: impl Into<String>) -> Self {
        TableError {
            file: file.to_string(),
            line: spanned.line,
            column: spanned.column,
            message: message.into(),
        }
    }
}

/// The table of the repository at `root`.
pub fn caught_in_checkout(root: &Path) -> Result<Vec<Caught>, TableError> {
    let path = root.join(CAUGHT_FILE);
    let unreadable = |message: String| TableError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        message,
    };
    let bytes = xds_vocabulary::files::read_regular(&path, MAX_FILE_BYTES)
        .map_err(|e| unreadable(format!("cannot read the table of catches: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| unreadable(format!("not UTF-8: {e}")))?;
    caught_str(CAUGHT_FILE, &text)
}

/// An entry of the file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    defect: Spanned<String>,
    caught_by: Spanned<Vec<Spanned<CatchFile>>>,
}

/// A catch as written: `SCENARIO:LINE:COLUMN`, or the scenario and the
/// words its failure says, or the words its divergence notes.
#[derive(Deserialize)]
#[serde(untagged)]
enum CatchFile {
    At(String),
    Saying {
        scenario: String,
        fails_with: String,
    },
    Diverges {
        scenario: String,
        divergent_noting: String,
    },
}

/// Reads the table's text; `source` names it in errors.
pub fn caught_str(source: &str, text: &str) -> Result<Vec<Caught>, TableError> {
    let entries: Vec<EntryFile> = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        TableError {
            file: source.to_string(),
            line,
            column,
            message: serde_saphyr::UserMessageFormatter
                .format_message(&e)
                .into_owned(),
        }
    })?;
    let mut caught: Vec<Caught> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for entry in &entries {
        let name = &entry.defect;
        named(&name.value).map_err(|e| {
            let nearest = match e {
                DefectError::Unknown { nearest, .. } => nearest.join(", "),
                DefectError::NotTheReference { .. } => String::new(),
            };
            TableError::at(
                source,
                name,
                format!(
                    "defect: the reference client has no defect `{}` (the nearest: {nearest})",
                    name.value
                ),
            )
        })?;
        if seen.contains(&name.value.as_str()) {
            return Err(TableError::at(
                source,
                name,
                format!(
                    "defect: `{}` is listed twice: one entry lists every scenario that catches it",
                    name.value
                ),
            ));
        }
        seen.push(&name.value);
        if entry.caught_by.value.is_empty() {
            return Err(TableError::at(
                source,
                &entry.caught_by,
                "caught_by: the scenarios that catch the defect, at least one (a defect none \
                 catches has no entry)",
            ));
        }
        let first = caught.len();
        for catch in &entry.caught_by.value {
            let (scenario, shows) = match &catch.value {
                CatchFile::At(text) => at(text).ok_or_else(|| {
                    TableError::at(
                        source,
                        catch,
                        format!(
                            "`{text}`: expected SCENARIO:LINE:COLUMN, the scenario by its path \
                             under scenarios/ without .yaml and the place of the expectation \
                             that fails, e.g. a57/backoff-growth-and-reset:35:5"
                        ),
                    )
                })?,
                CatchFile::Saying {
                    scenario,
                    fails_with,
                } if scenario_name(scenario) && !fails_with.trim().is_empty() => (
                    scenario.clone(),
                    Shows::FailsSaying(fails_with.trim().to_string()),
                ),
                CatchFile::Diverges {
                    scenario,
                    divergent_noting,
                } if scenario_name(scenario) && !divergent_noting.trim().is_empty() => (
                    scenario.clone(),
                    Shows::DivergesNoting(divergent_noting.trim().to_string()),
                ),
                CatchFile::Saying { .. } | CatchFile::Diverges { .. } => {
                    return Err(TableError::at(
                        source,
                        catch,
                        "expected a scenario by its path under scenarios/ without .yaml, and \
                         the words of its failure (`fails_with:`) or of its divergence's note \
                         (`divergent_noting:`)",
                    ));
                }
            };
            if caught[first..].iter().any(|c| c.scenario == scenario) {
                return Err(TableError::at(
                    source,
                    catch,
                    format!(
                        "`{scenario}` is listed twice for {}: a run fails at one place",
                        name.value
                    ),
                ));
            }
            caught.push(Caught {
                defect: name.value.clone(),
                scenario,
                shows,
            });
        }
    }
    Ok(caught)
}

/// `SCENARIO:LINE:COLUMN`.
fn at(text: &str) -> Option<(String, Shows)> {
    let mut parts = text.trim().rsplitn(3, ':');
    let column: u64 = parts.next()?.parse().ok()?;
    let line: u64 = parts.next()?.parse().ok()?;
    let scenario = parts.next()?;
    (line > 0 && column > 0 && scenario_name(scenario))
        .then(|| (scenario.to_string(), Shows::FailsAt { line, column }))
}

/// A scenario's name: a relative path, without its extension.
fn scenario_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.ends_with(".yaml")
        && !name.ends_with(".yml")
        && !name.split('/').any(|part| part.is_empty() || part == "..")
        && !name.chars().any(|c| c.is_whitespace() || c == ':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_as_its_catches_in_order() {
        let caught = caught_str(
            "t.yaml",
            "- defect: timer_while_connecting\n  caught_by:\n    - a57/x:21:5\n    - a57/y:3:7\n\
             - defect: delta_removals_ignored\n  caught_by:\n    \
             - {scenario: delta/z, fails_with: \"showed something else\"}\n\
             - defect: no_fallback\n  caught_by:\n    \
             - {scenario: a71/w, divergent_noting: \"the spec allows it\"}\n",
        )
        .unwrap();
        assert_eq!(
            caught
                .iter()
                .map(|c| (c.defect.as_str(), c.to_string(), c.shows.needle()))
                .collect::<Vec<_>>(),
            [
                (
                    "timer_while_connecting",
                    "a57/x:21:5".into(),
                    ":21:5:".into()
                ),
                ("timer_while_connecting", "a57/y:3:7".into(), ":3:7:".into()),
                (
                    "delta_removals_ignored",
                    "delta/z (showed something else)".into(),
                    "showed something else".into()
                ),
                (
                    "no_fallback",
                    "a71/w (divergent: the spec allows it)".into(),
                    "the spec allows it".into()
                ),
            ]
        );
    }

    #[test]
    fn a_wrong_table_is_an_error_where_it_is_written() {
        let error = |text: &str| caught_str("t.yaml", text).unwrap_err();
        let e = error("- defect: timer_while_conecting\n  caught_by: [a57/x:1:5]\n");
        assert_eq!((e.line, e.column), (1, 11), "{e}");
        assert!(
            e.message.contains("no defect `timer_while_conecting`")
                && e.message.contains("the nearest: timer_while_connecting"),
            "{e}"
        );
        let e = error(
            "- defect: no_fallback\n  caught_by: [a/x:1:5]\n\
             - defect: no_fallback\n  caught_by: [a/y:1:5]\n",
        );
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("listed twice"), "{e}");
        let e = error("- defect: no_fallback\n  caught_by: []\n");
        assert!(e.message.contains("at least one"), "{e}");
        for bad in [
            "a/x.yaml:1:5",
            "a/x:0:5",
            "a/x:5",
            "/a/x:1:5",
            "a/../x:1:5",
            "a/x",
        ] {
            let e = error(&format!(
                "- defect: no_fallback\n  caught_by: [\"{bad}\"]\n"
            ));
            assert_eq!(e.line, 2, "{bad}: {e}");
            assert!(
                e.message.contains("expected SCENARIO:LINE:COLUMN"),
                "{bad}: {e}"
            );
        }
        let e = error("- defect: no_fallback\n  caught_by: [a/x:1:5, a/x:2:5]\n");
        assert!(e.message.contains("listed twice for no_fallback"), "{e}");
        let e = error("- defect: no_fallback\n  caught: [a/x:1:5]\n");
        assert!(e.message.contains("caught"), "{e}");
    }

    #[test]
    fn an_unknown_name_is_answered_with_the_nearest() {
        let Err(DefectError::Unknown { nearest, .. }) = named("hash_suffix") else {
            panic!("an unknown name");
        };
        assert_eq!(
            nearest.first().map(String::as_str),
            Some("zone_no_hash_suffix")
        );
        let Err(DefectError::Unknown { nearest, .. }) = named("ValidationRule::PortRnage") else {
            panic!("an unknown name");
        };
        assert_eq!(
            nearest.first().map(String::as_str),
            Some("ValidationRule::PortRange")
        );
        assert_eq!(nearest.len(), NEAREST);
        assert!(named("zone_no_hash_suffix").is_ok());
        assert!(for_client("reference", "zone_no_hash_suffix").is_ok());
        let e = for_client("reference-process", "zone_no_hash_suffix").unwrap_err();
        assert!(
            e.to_string()
                .contains("reference-process cannot take a defect"),
            "{e}"
        );
    }
}
