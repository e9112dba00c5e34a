//! The spec catalogue: every normative behaviour of the specs the suite
//! tests, as data (`catalogue/` at the repository root, one file per spec,
//! e.g. `catalogue/A57.yaml`), each with a stable id (`A57-04`), a short
//! quote, its section and whom it binds. Scenarios name the rules they
//! check (`covers: [A57-04]`); a rule no scenario can check yet says why
//! (`uncovered:`), so that what the suite does not test is written down
//! as plainly as what it does. `harness/tests/catalogue.rs` keeps the
//! scenarios and the catalogue honest with each other; the book's
//! spec-coverage page is generated from both.
//!
//! Reading is strict, as the scenario loader is: unknown keys, a malformed
//! or repeated id, a quote longer than [`MAX_QUOTE_WORDS`] are errors
//! located at `file:line:column`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::MessageFormatter as _;

use crate::check::Spanned;

/// The catalogue's folder, under the repository root.
pub const CATALOGUE_DIR: &str = "catalogue";

/// The longest quote: enough to recognise the sentence in the spec, short
/// enough to be a quote and not a copy.
pub const MAX_QUOTE_WORDS: usize = 25;

/// The most bytes a catalogue file may have (the largest is some 10 KB).
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Whom a rule binds: what the harness must drive to check it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Binds {
    /// The xDS client itself (the XdsClient): what it sends, caches and
    /// tells its watchers; any xDS client can be held to it.
    Client,
    /// gRPC's xDS stack around the XdsClient: channels, xDS-enabled
    /// servers, CSDS, the bootstrap and environment variables.
    GrpcClients,
    /// A Kuma zone control plane (KDS).
    Zone,
    /// A Kuma global control plane (KDS).
    Global,
    /// An xDS server (control plane): a client-side harness cannot check it.
    ServerSide,
}

impl Binds {
    /// As the catalogue writes it.
    pub fn word(self) -> &'static str {
        match self {
            Binds::Client => "client",
            Binds::GrpcClients => "grpc-clients",
            Binds::Zone => "zone",
            Binds::Global => "global",
            Binds::ServerSide => "server-side",
        }
    }
}

/// How far the suite checks a rule, as its catalogue entry says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Declared {
    /// Its covering scenarios check it all.
    Covered,
    /// Its covering scenarios check part of it; what they leave out.
    Partial(String),
    /// No scenario checks it; why (the verb or matcher that is missing,
    /// or that it binds the server side).
    Uncovered(String),
}

/// One normative behaviour.
#[derive(Clone, Debug)]
pub struct Rule {
    /// e.g. `A57-04`: never renumbered, so that scenarios and reports can
    /// keep naming it.
    pub id: String,
    /// Where in the spec, e.g. `Proposal > Handling ADS Stream Termination`.
    pub section: String,
    /// At most [`MAX_QUOTE_WORDS`] words, verbatim; ` ... ` marks a cut.
    pub quote: String,
    pub binds: Vec<Binds>,
    pub declared: Declared,
    /// The reference client's deliberate defects that break this rule and
    /// that a covering scenario catches, by name as `run --defect` takes
    /// it (`silent_stream_failures`, `ValidationRule::PortRange`); empty
    /// when no broken client proves the covering scenarios yet.
    pub broken_by: Vec<String>,
    /// For a rule that states a preference beside an alternative the spec
    /// allows ("it is preferred to ...; an implementation may instead
    /// ..."): the reference client's defects that take the alternative,
    /// which a covering scenario reports as a divergence (an `any_of`
    /// alternative with a `divergence` note), not as a failure. That the
    /// scenario tells them from the preferred client shows the preference
    /// is checked, though a client cannot fail it.
    pub divergent_by: Vec<String>,
    /// Where its id is written, for messages.
    pub file: String,
    pub line: u64,
    pub column: u64,
}

/// One spec's file.
#[derive(Clone, Debug)]
pub struct SpecRules {
    /// As the file is named: `A57` (`catalogue/A57.yaml`).
    pub spec: String,
    /// What its rules' ids start with, before the `-`: `A57`, `K`.
    pub prefix: String,
    pub title: String,
    /// Where the spec is published.
    pub url: String,
    /// In the file's order, which is the ids' order.
    pub rules: Vec<Rule>,
}

/// A catalogue file that cannot be read: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", if *line == 0 { file.clone() } else { format!("{file}:{line}:{column}") })]
pub struct CatalogueError {
    pub file: String,
    /// 1-based; 0 when the error has no position (an unreadable file).
    pub line: u64,
    /// 1-based, in characters.
    pub column: u64,
    pub message: String,
}

impl CatalogueError {
    fn at<T>(file: &str, spanned: &Spanned<T>, message: impl Into<String>) -> Self {
        CatalogueError::at_position(file, spanned.line, spanned.column, message)
    }

    fn at_position(file: &str, line: u64, column: u64, message: impl Into<String>) -> Self {
        CatalogueError {
            file: file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }
}

/// Every spec's rules, in file-name order.
#[derive(Clone, Debug, Default)]
pub struct Catalogue {
    pub specs: Vec<SpecRules>,
}

impl Catalogue {
    /// The catalogue of the repository at `root`.
    pub fn in_checkout(root: &Path) -> Result<Catalogue, CatalogueError> {
        Catalogue::load(&root.join(CATALOGUE_DIR))
    }

    /// Reads every `*.yaml` file of `dir`; an id is unique across files.
    pub fn load(dir: &Path) -> Result<Catalogue, CatalogueError> {
        let unlocated = |file: &Path, message: String| {
            CatalogueError::at_position(&file.display().to_string(), 0, 0, message)
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| unlocated(dir, format!("cannot read the spec catalogue: {e}")))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(unlocated(
                dir,
                "the spec catalogue has no `*.yaml` files".into(),
            ));
        }
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut specs = Vec::with_capacity(files.len());
        for path in files {
            let name = path.display().to_string();
            let bytes = xds_vocabulary::files::read_regular(&path, MAX_FILE_BYTES)
                .map_err(|e| unlocated(&path, format!("cannot read the catalogue file: {e}")))?;
            let text = String::from_utf8(bytes)
                .map_err(|e| unlocated(&path, format!("not UTF-8: {e}")))?;
            let spec = load_str(&name, &text)?;
            for rule in &spec.rules {
                if let Some(first) = seen.insert(rule.id.clone(), name.clone()) {
                    return Err(CatalogueError::at_position(
                        &name,
                        rule.line,
                        rule.column,
                        format!("rule {} is already in {first}", rule.id),
                    ));
                }
            }
            specs.push(spec);
        }
        Ok(Catalogue { specs })
    }

    /// Every rule, spec by spec.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.specs.iter().flat_map(|s| s.rules.iter())
    }

    /// The rule with this id.
    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules().find(|r| r.id == id)
    }
}

/// A rule id's form, `PREFIX-NN`: a capital letter, capitals or digits,
/// `-`, two or three digits. What is wrong with `id`, if anything.
pub fn check_id(id: &str) -> Result<(), String> {
    let Some((prefix, number)) = id.split_once('-') else {
        return Err(format!("rule id `{id}`: expected PREFIX-NN, e.g. A57-04"));
    };
    let prefix_ok = prefix.starts_with(|c: char| c.is_ascii_uppercase())
        && prefix
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let number_ok = (2..=3).contains(&number.len()) && number.bytes().all(|b| b.is_ascii_digit());
    if prefix_ok && number_ok {
        Ok(())
    } else {
        Err(format!("rule id `{id}`: expected PREFIX-NN, e.g. A57-04"))
    }
}

/// A catalogue file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    /// `A57`: the file's name without `.yaml`.
    spec: Spanned<String>,
    /// What ids start with.
    prefix: Spanned<String>,
    title: String,
    url: Spanned<String>,
    rules: Vec<RuleFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    id: Spanned<String>,
    section: Spanned<String>,
    binds: Spanned<Vec<Binds>>,
    quote: Spanned<String>,
    #[serde(default)]
    partial: Option<Spanned<String>>,
    #[serde(default)]
    uncovered: Option<Spanned<String>>,
    #[serde(default)]
    broken_by: Vec<Spanned<String>>,
    #[serde(default)]
    divergent_by: Vec<Spanned<String>>,
}

/// Reads one catalogue file's text; `source_name` is its path, whose file
/// name must be the spec's (`…/A57.yaml` for `spec: A57`).
pub fn load_str(source_name: &str, text: &str) -> Result<SpecRules, CatalogueError> {
    let file: SpecFile = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        let message = serde_saphyr::UserMessageFormatter.format_message(&e);
        CatalogueError::at_position(source_name, line, column, message)
    })?;
    check(source_name, file)
}

fn check(source_name: &str, file: SpecFile) -> Result<SpecRules, CatalogueError> {
    let stem = Path::new(source_name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if file.spec.value != stem {
        return Err(CatalogueError::at(
            source_name,
            &file.spec,
            format!(
                "spec `{}` in a file named {stem}.yaml: a spec's rules are in the file of its name",
                file.spec.value
            ),
        ));
    }
    check_id(&format!("{}-01", file.prefix.value)).map_err(|_| {
        CatalogueError::at(
            source_name,
            &file.prefix,
            "prefix: capitals and digits, e.g. A57 or K",
        )
    })?;
    if !file.url.value.starts_with("https://") {
        return Err(CatalogueError::at(
            source_name,
            &file.url,
            "url: where the spec is published, https://…",
        ));
    }
    let mut rules: Vec<Rule> = Vec::with_capacity(file.rules.len());
    for rule in &file.rules {
        let id = &rule.id;
        check_id(&id.value).map_err(|why| CatalogueError::at(source_name, id, why))?;
        let (prefix, number) = id.value.split_once('-').unwrap_or_default();
        if prefix != file.prefix.value {
            return Err(CatalogueError::at(
                source_name,
                id,
                format!(
                    "rule id `{}`: the rules of this file start with `{}-`",
                    id.value, file.prefix.value
                ),
            ));
        }
        // Ids are never renumbered, so the file stays in their order and
        // a new rule takes the next number.
        if let Some(before) = rules.last()
            && before.id.split_once('-').unwrap_or_default().1 >= number
        {
            return Err(CatalogueError::at(
                source_name,
                id,
                format!(
                    "rule id `{}` after `{}`: ids go up in the file (a new rule takes the next number)",
                    id.value, before.id
                ),
            ));
        }
        let one_line = |field: &Spanned<String>, what: &str| -> Result<String, CatalogueError> {
            let value = field.value.trim();
            if value.is_empty() || value.chars().any(char::is_control) {
                return Err(CatalogueError::at(
                    source_name,
                    field,
                    format!("{what}: one line of text, not empty"),
                ));
            }
            Ok(value.to_string())
        };
        let section = one_line(&rule.section, "section")?;
        let quote = one_line(&rule.quote, "quote")?;
        let words = quote.split_whitespace().filter(|w| *w != "...").count();
        if words > MAX_QUOTE_WORDS {
            return Err(CatalogueError::at(
                source_name,
                &rule.quote,
                format!("quote: {words} words; at most {MAX_QUOTE_WORDS} (cut with ` ... `)"),
            ));
        }
        let mut binds = rule.binds.value.clone();
        binds.sort();
        binds.dedup();
        if binds.is_empty() || binds.len() != rule.binds.value.len() {
            return Err(CatalogueError::at(
                source_name,
                &rule.binds,
                "binds: one or more of client, grpc-clients, zone, global, server-side, \
                 each once",
            ));
        }
        let reason = |field: &Spanned<String>, what: &str| -> Result<String, CatalogueError> {
            let value = field.value.split_whitespace().collect::<Vec<_>>().join(" ");
            if value.is_empty() {
                return Err(CatalogueError::at(
                    source_name,
                    field,
                    format!("{what}: say why"),
                ));
            }
            Ok(value)
        };
        let declared = match (&rule.partial, &rule.uncovered) {
            (None, None) => Declared::Covered,
            (Some(partial), None) => Declared::Partial(reason(partial, "partial")?),
            (None, Some(uncovered)) => Declared::Uncovered(reason(uncovered, "uncovered")?),
            (Some(_), Some(uncovered)) => {
                return Err(CatalogueError::at(
                    source_name,
                    uncovered,
                    "uncovered: a rule is partly covered or not covered, not both",
                ));
            }
        };
        let defects = |list: &[Spanned<String>], what: &str| {
            let mut names: Vec<String> = Vec::with_capacity(list.len());
            for defect in list {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
                if defect.value.is_empty() || !defect.value.chars().all(word) {
                    return Err(CatalogueError::at(
                        source_name,
                        defect,
                        format!(
                            "{what}: a defect's name as `run --defect` takes it, \
                             e.g. silent_stream_failures or ValidationRule::PortRange"
                        ),
                    ));
                }
                if names.contains(&defect.value) {
                    return Err(CatalogueError::at(
                        source_name,
                        defect,
                        format!("{what}: `{}` is listed twice", defect.value),
                    ));
                }
                names.push(defect.value.clone());
            }
            if let (Declared::Uncovered(_), Some(defect)) = (&declared, list.first()) {
                return Err(CatalogueError::at(
                    source_name,
                    defect,
                    format!("{what}: a rule no scenario covers has no scenario to catch a defect"),
                ));
            }
            Ok(names)
        };
        let broken_by = defects(&rule.broken_by, "broken_by")?;
        let divergent_by = defects(&rule.divergent_by, "divergent_by")?;
        rules.push(Rule {
            id: id.value.clone(),
            section,
            quote,
            binds: rule.binds.value.clone(),
            declared,
            broken_by,
            divergent_by,
            file: source_name.to_string(),
            line: id.line,
            column: id.column,
        });
    }
    if rules.is_empty() {
        return Err(CatalogueError::at_position(
            source_name,
            1,
            1,
            "rules: a spec with no rules",
        ));
    }
    Ok(SpecRules {
        spec: file.spec.value,
        prefix: file.prefix.value,
        title: file.title,
        url: file.url.value,
        rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "spec: A57\nprefix: A57\ntitle: T\nurl: https://example.com/a57\n\
                        rules:\n  - id: A57-01\n    section: Proposal\n    binds: [client]\n    \
                        quote: \"a quote\"\n";

    fn error(text: &str) -> CatalogueError {
        load_str("catalogue/A57.yaml", text).expect_err("a bad catalogue file")
    }

    #[test]
    fn a_good_file_reads() {
        let spec = load_str("catalogue/A57.yaml", GOOD).unwrap();
        assert_eq!(spec.rules.len(), 1);
        assert_eq!(spec.rules[0].id, "A57-01");
        assert_eq!(spec.rules[0].declared, Declared::Covered);
        assert_eq!((spec.rules[0].line, spec.rules[0].column), (6, 9));
    }

    #[test]
    fn errors_are_located() {
        let e = error(&GOOD.replace("binds: [client]", "binds: [client]\n    bind: x"));
        assert_eq!((e.line, e.column), (9, 5), "{e}");
        assert!(e.message.contains("unknown field `bind`"), "{e}");
        let e = error(&GOOD.replace("A57-01", "A57-1"));
        assert_eq!((e.line, e.column), (6, 9), "{e}");
        assert!(e.message.contains("expected PREFIX-NN"), "{e}");
        assert!(e.to_string().starts_with("catalogue/A57.yaml:6:9: "), "{e}");
        let e = error(&GOOD.replace("[client]", "[clients]"));
        assert_eq!(e.line, 8, "{e}");
        let e = error(&GOOD.replace("a quote", &"word ".repeat(26)));
        assert_eq!((e.line, e.column), (9, 12), "{e}");
        assert!(e.message.contains("26 words; at most 25"), "{e}");
        let e = error(&GOOD.replace("spec: A57", "spec: A53"));
        assert_eq!((e.line, e.column), (1, 7), "{e}");
    }

    #[test]
    fn ids_go_up_and_carry_the_prefix() {
        let second = "  - id: A57-01\n    section: S\n    binds: [client]\n    quote: q\n";
        let e = error(&format!("{GOOD}{second}"));
        assert_eq!(e.line, 10, "{e}");
        assert!(e.message.contains("ids go up"), "{e}");
        let e = error(&format!("{GOOD}{}", second.replace("A57-01", "A53-02")));
        assert!(e.message.contains("start with `A57-`"), "{e}");
    }

    #[test]
    fn a_rule_is_partial_or_uncovered_not_both() {
        let e = error(&format!("{GOOD}    partial: some\n    uncovered: why\n"));
        assert_eq!(e.line, 11, "{e}");
        let spec = load_str(
            "catalogue/A57.yaml",
            &format!("{GOOD}    uncovered: >-\n      needs a\n      verb\n"),
        )
        .unwrap();
        assert_eq!(
            spec.rules[0].declared,
            Declared::Uncovered("needs a verb".into())
        );
        let e = error(&format!("{GOOD}    uncovered: \" \"\n"));
        assert!(e.message.contains("say why"), "{e}");
    }

    #[test]
    fn broken_by_names_defects_of_covered_rules() {
        let spec = load_str(
            "catalogue/A57.yaml",
            &format!("{GOOD}    broken_by: [silent_stream_failures, ValidationRule::PortRange]\n"),
        )
        .unwrap();
        assert_eq!(
            spec.rules[0].broken_by,
            ["silent_stream_failures", "ValidationRule::PortRange"]
        );
        let e = error(&format!("{GOOD}    broken_by: [a, a]\n"));
        assert_eq!((e.line, e.column), (10, 20), "{e}");
        let e = error(&format!("{GOOD}    broken_by: [\"no such\"]\n"));
        assert!(e.message.contains("a defect's name"), "{e}");
        let e = error(&format!("{GOOD}    uncovered: why\n    broken_by: [a]\n"));
        assert_eq!(e.line, 11, "{e}");
    }

    #[test]
    fn a_rule_id_is_known_across_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("A57.yaml"), GOOD).unwrap();
        let other = GOOD.replace("spec: A57", "spec: B57");
        std::fs::write(dir.path().join("B57.yaml"), other).unwrap();
        let e = Catalogue::load(dir.path()).unwrap_err();
        assert!(e.message.contains("rule A57-01 is already in"), "{e}");
        assert_eq!(e.line, 6, "{e}");
    }

    #[test]
    fn id_forms() {
        for good in ["A57-04", "K-01", "A71-100"] {
            assert!(check_id(good).is_ok(), "{good}");
        }
        for bad in [
            "A57", "a57-04", "A57-4", "A57-0001", "-01", "A 57-01", "A57-x1",
        ] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }
}
