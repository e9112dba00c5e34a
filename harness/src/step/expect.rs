//! `expect`: an event must happen, after the last action or match,
//! within a window (`within: 1s`, the default) or at an exact time
//! (`at: 15s`); `any_of` takes alternatives (some of them recorded
//! divergences), `in_order` a sequence. What it looks for is one matcher
//! (`crate::matcher`).

use std::time::Duration;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;

use super::{Compile, Generate, Kind, Palette, Play, Script, ScriptClock, Stage, StepError};
use crate::check::duration::format_duration_in_units as format_duration;
use crate::check::{Location, Problem, Reachable, Spanned, duration};
use crate::matcher::{Alternative, Matcher};
use crate::timeline::{EventKind, Source};

crate::matcher::with_matcher_keys! {
    #[serde_with::skip_serializing_none]
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ExpectSpec {
        /// Alternatives, any of which meets the expectation; one with a
        /// `divergence` note marks the run as a divergence between clients.
        pub any_of: Option<Vec<AlternativeSpec>>,
        /// Several events, each after the one before, all in the window:
        /// e.g. the cached value, then the ambient error.
        pub in_order: Option<Vec<OrderedSpec>>,
        /// At most this long after the step starts (default 1s).
        pub within: Option<Spanned<String>>,
        /// Exactly at this virtual time since the start, e.g. `15s`.
        pub at: Option<Spanned<String>>,
        /// The spec sentence that fixes the words a `contains` /
        /// `error_contains` here checks, quoted (no spec fixes most error
        /// texts: then check a resource name, an index, a type URL, and
        /// leave this out). `tests/wording.rs` holds every check to it.
        pub wording_fixed_by: Option<String>,
    }
}

crate::matcher::with_matcher_keys! {
    /// One alternative of `any_of`: one matcher, and the note that makes it
    /// a recorded divergence (e.g. "gRPC C-core: NACK carries the new version").
    #[serde_with::skip_serializing_none]
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct AlternativeSpec {
        /// Why this alternative is allowed, and whose behaviour it is.
        pub divergence: Option<String>,
        /// `true` instead of a matcher: nothing at all happening by the end
        /// of the window is allowed too (the step then waits the whole
        /// window).
        pub nothing: Option<bool>,
        /// The spec sentence that fixes the words a `contains` /
        /// `error_contains` here checks, quoted (no spec fixes most error
        /// texts: then check a resource name, an index, a type URL, and
        /// leave this out). `tests/wording.rs` holds every check to it.
        pub wording_fixed_by: Option<String>,
    }
}

crate::matcher::with_matcher_keys! {
    /// One event of `in_order`: one matcher.
    #[serde_with::skip_serializing_none]
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct OrderedSpec {
        /// The spec sentence that fixes the words a `contains` /
        /// `error_contains` here checks, quoted (no spec fixes most error
        /// texts: then check a resource name, an index, a type URL, and
        /// leave this out). `tests/wording.rs` holds every check to it.
        pub wording_fixed_by: Option<String>,
    }
}

/// When an expected event must have happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// At most this long after the step starts.
    Within(Duration),
    /// Exactly at this virtual time since the scenario started (ms precision).
    At(Duration),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expect {
    pub matcher: Matcher,
    pub window: Window,
}

impl Compile for ExpectSpec {
    type Step = Expect;

    fn compile(&self, script: &mut Script<'_>) -> Result<Expect, Problem> {
        let matcher = match (&self.any_of, &self.in_order) {
            (Some(_), Some(_)) => {
                return Err(script.problem("expect: `any_of` and `in_order` exclude each other"));
            }
            (None, Some(sequence)) => self.in_order(sequence, script)?,
            (None, None) => one_matcher(script, "expect", self.matchers())?,
            (Some(alternatives), None) => self.any_of(alternatives, script)?,
        };
        let window = match (&self.within, &self.at) {
            (Some(_), Some(at)) => {
                return Err(Problem::at(
                    at,
                    "expect: `within` and `at` exclude each other",
                ));
            }
            (Some(within), None) => Window::Within(duration(within, "within")?),
            (None, Some(at)) => Window::At(duration(at, "at")?),
            (None, None) => Window::Within(Duration::from_secs(1)),
        };
        Ok(Expect { matcher, window })
    }
}

impl ExpectSpec {
    fn in_order(&self, sequence: &[OrderedSpec], script: &Script<'_>) -> Result<Matcher, Problem> {
        if !self.matchers().is_empty() {
            return Err(script
                .problem("expect: `in_order` replaces the matcher; put every event inside it"));
        }
        if sequence.len() < 2 {
            return Err(script
                .problem("expect: `in_order` needs at least two events (one is a plain expect)"));
        }
        let list = sequence
            .iter()
            .map(|one| one_matcher(script, "expect.in_order", one.matchers()))
            .collect::<Result<_, _>>()?;
        Ok(Matcher::InOrder(list))
    }

    fn any_of(
        &self,
        alternatives: &[AlternativeSpec],
        script: &Script<'_>,
    ) -> Result<Matcher, Problem> {
        if !self.matchers().is_empty() {
            return Err(script.problem(
                "expect: `any_of` replaces the matcher; put every alternative inside it",
            ));
        }
        if alternatives.is_empty() {
            return Err(script.problem("expect: `any_of` needs at least one alternative"));
        }
        let mut list = Vec::with_capacity(alternatives.len());
        for a in alternatives {
            let matcher = match (a.nothing, a.matchers().is_empty()) {
                (Some(true), true) => Matcher::Nothing,
                (Some(true), false) => {
                    return Err(script.problem(
                        "expect.any_of: `nothing: true` is an alternative of its own; it takes no matcher",
                    ));
                }
                (Some(false), _) => {
                    return Err(
                        script.problem("expect.any_of: `nothing` is either `true` or left out")
                    );
                }
                (None, _) => one_matcher(script, "expect.any_of", a.matchers())?,
            };
            list.push(Alternative {
                matcher,
                divergence: a.divergence.clone(),
            });
        }
        if list.iter().all(|a| a.matcher == Matcher::Nothing) {
            return Err(
                script.problem("expect.any_of: `nothing` alone expects nothing; use expect_none")
            );
        }
        if list.iter().any(|a| a.matcher == Matcher::Nothing)
            && list.iter().any(|a| matches!(a.matcher, Matcher::Csds(_)))
        {
            return Err(script.problem(
                "expect.any_of: `csds` is a state checked throughout the window, not an event; `nothing` cannot be its alternative",
            ));
        }
        Ok(Matcher::AnyOf(list))
    }
}

/// The one matcher of an `expect`, an `any_of` alternative, an
/// `in_order` event or an `expect_none`.
pub(crate) fn one_matcher(
    script: &Script<'_>,
    what: &str,
    given: Vec<crate::matcher::MatcherSpec<'_>>,
) -> Result<Matcher, Problem> {
    match given.as_slice() {
        [one] => one.compile(script.checker()),
        _ => {
            let found = if given.is_empty() {
                "none".to_string()
            } else {
                given
                    .iter()
                    .map(crate::matcher::MatcherSpec::key)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            Err(script.problem(format!(
                "{what}: expected exactly one of {} (found {found})",
                crate::matcher::MATCHER_KEYS.join(", ")
            )))
        }
    }
}

impl Kind for Expect {
    fn describe(&self) -> String {
        let when = match self.window {
            Window::Within(w) => format!("within {}", format_duration(w)),
            Window::At(t) => format!("at {}", format_duration(t)),
        };
        format!("expect {} {when}", self.matcher.describe())
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        self.matcher.missing_capability(caps)
    }

    /// A window counts to its end; an `at` window must lie ahead of the
    /// least time the steps before it surely took, and the run waits
    /// until then.
    fn advance(&self, clock: &mut ScriptClock) -> Result<(), String> {
        match self.window {
            Window::Within(w) => clock.most += w,
            Window::At(t) => {
                if t < clock.least {
                    return Err(format!(
                        "expect: `at: {}` can never be met: the steps before it wait at \
                         least {} of scenario time",
                        format_duration(t),
                        format_duration(clock.least)
                    ));
                }
                clock.least = t;
                clock.most = clock.most.max(t);
            }
        }
        Ok(())
    }

    fn reach(&self, reach: &mut Reachable) -> Result<(), String> {
        match self.matcher.never_met(reach) {
            Some(why) => Err(format!("expect: can never be met: {why}")),
            None => Ok(()),
        }
    }
}

impl Play for Expect {
    async fn play(&self, stage: &mut dyn Stage, at: &Location) -> Result<(), StepError> {
        stage.expect(at, &self.matcher, self.window).await?;
        stage.record(Source::Step, EventKind::Barrier);
        Ok(())
    }
}

impl Generate for ExpectSpec {
    /// Not generated: a generated schedule is checked by invariants over
    /// its timeline; a shrunk one states the invariant it broke as an
    /// expectation of its own.
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        None
    }
}
