//! `expect_invariant`: the run so far keeps one of chaos's invariants
//! (`harness/src/invariant/`), read over its whole timeline as a chaos
//! campaign reads it: `- expect_invariant: cached-never-times-out`. A
//! shrunk chaos finding ends with it, so the file states the rule it broke
//! and fails on a client that breaks it, as any expectation does.
//!
//! A client the invariant does not hold (it reads watcher events, and the
//! client has no watch API; it reads timers to the millisecond, and the
//! run is on real time) makes the run not applicable, at run time.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned};
use crate::timeline::{EventKind, Source};

/// The invariants a file may name, in their order. The step kinds are a
/// leaf the invariants read (they parse steps' timeline lines), so the
/// names are listed here for the loader; `invariant::ALL` is checked to
/// name exactly these.
pub const NAMES: &[&str] = &[
    "answered-once",
    "node-on-first-request",
    "silent-after-cancel",
    "fallback-only-when-uncached",
    "falls-forward",
    "errors-only-when-all-failed",
    "removed-names-gone",
    "delta-claims-what-it-holds",
    "wildcard-hears-every-resource",
    "does-not-exist-timer",
    "cached-never-times-out",
    "new-watcher-hears-value-then-error",
    "every-watcher-hears-each-change",
    "unchanged-not-notified-again",
    "eventually-consistent",
];

/// The invariant's name, e.g. `answered-once`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ExpectInvariantSpec(pub Spanned<String>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectInvariant {
    pub name: &'static str,
}

impl Compile for ExpectInvariantSpec {
    type Step = ExpectInvariant;

    fn compile(&self, _script: &mut Script<'_>) -> Result<ExpectInvariant, Problem> {
        let name = NAMES.iter().find(|n| **n == self.0.value).ok_or_else(|| {
            Problem::at(
                &self.0,
                format!(
                    "expect_invariant: `{}` names no invariant; expected one of {}",
                    self.0.value,
                    NAMES.join(", ")
                ),
            )
        })?;
        Ok(ExpectInvariant { name })
    }
}

impl Kind for ExpectInvariant {
    fn describe(&self) -> String {
        format!("expect the run so far to keep invariant {}", self.name)
    }
}

impl Play for ExpectInvariant {
    async fn play(&self, stage: &mut dyn Stage, at: &Location) -> Result<(), StepError> {
        stage.note(self.describe());
        stage.keeps_invariant(at, self.name)?;
        stage.record(Source::Step, EventKind::Barrier);
        Ok(())
    }
}

impl Generate for ExpectInvariantSpec {
    /// Not generated: a schedule states the invariant it broke once
    /// shrunk, after its last step.
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::load_str;

    #[test]
    fn a_name_that_is_no_invariant_is_refused_where_it_is_written() {
        let file = |name: &str| {
            format!(
                "description: d\nservers:\n  main: {{}}\nsteps:\n  - watch: {{ type: CDS, name: c1 }}\n  - expect_invariant: {name}\n"
            )
        };
        assert!(load_str("ok.yaml", &file("silent-after-cancel")).is_ok());
        let e = load_str("bad.yaml", &file("silent-after-cancle"))
            .expect_err("no such invariant")
            .to_string();
        assert!(e.starts_with("bad.yaml:6:23: expect_invariant: `silent-after-cancle` names no invariant; expected one of answered-once, "), "{e}");
    }
}
