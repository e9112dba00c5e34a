//! The checking toolkit: what the loader, every step kind, every matcher
//! kind and every resource form use to turn a file form into a checked form with located
//! errors. A `Problem` is an error at a position; the `Checker` knows
//! the scenario's servers and backends; the value parsers read keywords,
//! durations, status codes and resource types the one way every part of a
//! file writes them.

pub mod duration;
pub(crate) mod kds;
mod reach;
pub mod schema;
mod spanned;

use std::time::Duration;

use xds_vocabulary::ResourceType;
use xds_vocabulary::status::STATUS_CODES;

pub use reach::Reachable;
pub use spanned::{Empty, OneOrMany, Spanned, is_empty};

use duration::{format_duration_in_units, parse_duration};

/// A source position, for error messages and failure reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u64,
    pub column: u64,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A semantic error before it is tied to a file.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) line: u64,
    pub(crate) column: u64,
    pub(crate) message: String,
    /// Further errors of the same part, each where it is.
    pub(crate) more: Vec<Problem>,
}

impl Problem {
    pub(crate) fn at<T>(spanned: &Spanned<T>, message: impl Into<String>) -> Self {
        Problem {
            line: spanned.line,
            column: spanned.column,
            message: message.into(),
            more: Vec::new(),
        }
    }

    pub(crate) fn at_position(line: u64, column: u64, message: impl Into<String>) -> Self {
        Problem {
            line,
            column,
            message: message.into(),
            more: Vec::new(),
        }
    }

    /// This error, and more of the same part after it.
    pub(crate) fn with_more(self, more: Vec<Problem>) -> Self {
        Problem { more, ..self }
    }

    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    #[cfg(test)]
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    #[cfg(test)]
    pub(crate) fn column(&self) -> u64 {
        self.column
    }
}

/// One of a fixed set of words; the error lists them all.
pub(crate) fn keyword<T: Copy>(
    s: &Spanned<String>,
    what: &str,
    table: &[(&str, T)],
) -> Result<T, Problem> {
    table
        .iter()
        .find(|(name, _)| *name == s.value)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let valid: Vec<String> = table.iter().map(|(name, _)| name.to_string()).collect();
            let hint = closest(&s.value, &valid)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            Problem::at(
                s,
                format!(
                    "unknown {what} `{}`{hint}: expected one of {}",
                    s.value,
                    valid.join(", ")
                ),
            )
        })
}

pub(crate) fn code(s: &Spanned<String>) -> Result<tonic::Code, Problem> {
    keyword(s, "status code", &STATUS_CODES)
}

pub(crate) fn duration(s: &Spanned<String>, what: &str) -> Result<Duration, Problem> {
    let value = parse_duration(&s.value).map_err(|e| Problem::at(s, format!("{what}: {e}")))?;
    check_duration(value).map_err(|e| Problem::at(s, format!("{what}: {e}")))?;
    Ok(value)
}

pub(crate) fn parse_resource_type(s: &Spanned<String>) -> Result<ResourceType, Problem> {
    ResourceType::parse(&s.value).ok_or_else(|| {
        Problem::at(
            s,
            format!(
                "unknown resource type `{}`: expected LDS, RDS, CDS, EDS or a type URL",
                s.value
            ),
        )
    })
}

pub(crate) fn opt<T, U>(
    value: Option<&T>,
    f: impl FnOnce(&T) -> Result<U, Problem>,
) -> Result<Option<U>, Problem> {
    value.map(f).transpose()
}

/// Checks against the scenario's declared servers (and backends).
pub(crate) struct Checker {
    servers: Vec<String>,
    backends: Vec<String>,
    /// The scenario has a `zone`: it speaks KDS.
    zone: bool,
}

impl Checker {
    /// A checker for a scenario with these servers and backends, in
    /// declaration order.
    pub(crate) fn new(servers: Vec<String>, backends: Vec<String>) -> Self {
        Checker {
            servers,
            backends,
            zone: false,
        }
    }

    /// The checker of a scenario that has a `zone` (a KDS run), or not.
    pub(crate) fn with_zone(self, zone: bool) -> Self {
        Checker { zone, ..self }
    }

    pub(crate) fn has_zone(&self) -> bool {
        self.zone
    }

    /// What a KDS step or matcher says where the scenario has no zone.
    pub(crate) fn needs_zone<T>(&self, at: &Spanned<T>, what: &str) -> Result<(), Problem> {
        if self.zone {
            return Ok(());
        }
        Err(Problem::at(
            at,
            format!(
                "{what} is KDS's: it needs a scenario with a `zone` (the Kuma zone the client \
                 plays)"
            ),
        ))
    }

    /// The scenario's servers, in declaration order.
    pub(crate) fn servers(&self) -> &[String] {
        &self.servers
    }

    /// The scenario's backends, in declaration order.
    pub(crate) fn backends(&self) -> &[String] {
        &self.backends
    }

    pub(crate) fn server_list(&self) -> String {
        self.servers.join(", ")
    }

    /// A server named explicitly.
    pub(crate) fn known_server(&self, name: &Spanned<String>) -> Result<String, Problem> {
        if self.servers.contains(&name.value) {
            return Ok(name.value.clone());
        }
        Err(Problem::at(
            name,
            format!(
                "unknown server `{}`: scenario has servers {}",
                name.value,
                self.server_list()
            ),
        ))
    }

    /// A matcher's optional server filter.
    pub(crate) fn filter_server(
        &self,
        given: Option<&Spanned<String>>,
    ) -> Result<Option<String>, Problem> {
        opt(given, |name| self.known_server(name))
    }

    /// An endpoint address as scenarios write it: `backend:NAME` (that
    /// backend's canonical address) or `ip:port` as it is.
    pub(crate) fn endpoint_address(&self, text: &Spanned<String>) -> Result<String, Problem> {
        match text.value.strip_prefix("backend:") {
            None => Ok(text.value.clone()),
            Some(name) => {
                let named = Spanned {
                    value: name.to_string(),
                    line: text.line,
                    column: text.column,
                };
                self.known_backend(&named)?;
                let index = self.backends.iter().position(|b| *b == named.value);
                Ok(backend_address(index.unwrap_or_default()))
            }
        }
    }

    /// A backend named explicitly.
    pub(crate) fn known_backend(&self, name: &Spanned<String>) -> Result<String, Problem> {
        if self.backends.contains(&name.value) {
            return Ok(name.value.clone());
        }
        Err(Problem::at(
            name,
            format!(
                "unknown backend `{}`: scenario has backends [{}]",
                name.value,
                self.backends.join(", ")
            ),
        ))
    }
}

/// The word of `candidates` closest to `word`, if one is close enough to
/// be the word meant (a typo, not another word).
pub fn closest<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(distance, c)| *distance <= (c.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c.as_str())
}

/// The address of the `index`-th backend in resources, in the RFC 2544
/// benchmarking range (valid IPs that no real network uses). Runs over real
/// TCP rewrite them to the backends' actual addresses.
pub fn backend_address(index: usize) -> String {
    format!("198.18.{}.{}:8080", index / 250, index % 250 + 1)
}

/// The longest duration any single value may have: longer than any run
/// may be.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Counts a scenario may ask for at once: RPCs of one `rpc` step
/// (`count`), responses one `drop_responses` drops. A few are a test,
/// millions are a memory leak.
pub const MAX_COUNT: u32 = 10_000;

/// A duration, at most [`MAX_DURATION`].
pub(crate) fn check_duration(value: Duration) -> Result<(), String> {
    if value > MAX_DURATION {
        return Err(format!(
            "{} is longer than any scenario may run (at most {})",
            format_duration_in_units(value),
            format_duration_in_units(MAX_DURATION)
        ));
    }
    Ok(())
}

/// A count of `what`, at most [`MAX_COUNT`].
pub(crate) fn check_count(count: u32, what: &str) -> Result<(), String> {
    if count > MAX_COUNT {
        return Err(format!(
            "{what}: {count} is more than the {MAX_COUNT} allowed"
        ));
    }
    Ok(())
}
