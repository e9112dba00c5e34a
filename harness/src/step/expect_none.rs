//! `expect_none`: no event the matcher describes may happen for a while
//! (`for: 0s` looks back at what happened since the last action).

use std::time::Duration;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;

use super::expect::one_matcher;
use super::{Compile, Generate, Kind, Palette, Play, Script, ScriptClock, Stage, StepError};
use crate::check::duration::format_duration_in_units as format_duration;
use crate::check::{Location, Problem, Spanned, duration};
use crate::matcher::Matcher;
use crate::timeline::{EventKind, Source};

crate::matcher::with_matcher_keys! {
    #[serde_with::skip_serializing_none]
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ExpectNoneSpec {
        /// How long nothing may match, e.g. `15s`.
        #[serde(rename = "for")]
        pub duration: Spanned<String>,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExpectNone {
    pub matcher: Matcher,
    pub duration: Duration,
}

impl Compile for ExpectNoneSpec {
    type Step = ExpectNone;

    fn compile(&self, script: &mut Script<'_>) -> Result<ExpectNone, Problem> {
        Ok(ExpectNone {
            matcher: one_matcher(script, "expect_none", self.matchers())?,
            duration: duration(&self.duration, "for")?,
        })
    }
}

impl Kind for ExpectNone {
    fn describe(&self) -> String {
        format!(
            "expect no {} for {}",
            self.matcher.describe(),
            format_duration(self.duration)
        )
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        self.matcher.missing_capability(caps)
    }

    fn advance(&self, clock: &mut ScriptClock) -> Result<(), String> {
        clock.least += self.duration;
        clock.most += self.duration;
        Ok(())
    }

    // `reach`: nothing. Saying that something does not happen is its
    // point; it may name anything.
}

impl Play for ExpectNone {
    async fn play(&self, stage: &mut dyn Stage, at: &Location) -> Result<(), StepError> {
        stage.expect_none(at, &self.matcher, self.duration).await?;
        stage.record(Source::Step, EventKind::Barrier);
        Ok(())
    }
}

impl Generate for ExpectNoneSpec {
    /// Not generated, as `expect` is not.
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        None
    }
}
