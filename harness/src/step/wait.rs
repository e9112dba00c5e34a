//! `wait`: let scenario time pass (virtual on in-process runs).

use std::time::Duration;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::{Compile, Generate, Kind, Palette, Play, Script, ScriptClock, Stage, StepError};
use crate::check::duration::format_duration;
use crate::check::{Location, Problem, Spanned, duration};
use crate::timeline::{EventKind, Source};

/// How long: `15s`, `250ms`, `1.5s`, `2m`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct WaitSpec(pub Spanned<String>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    pub duration: Duration,
}

impl Compile for WaitSpec {
    type Step = Wait;

    fn compile(&self, _script: &mut Script<'_>) -> Result<Wait, Problem> {
        Ok(Wait {
            duration: duration(&self.0, "wait")?,
        })
    }
}

impl Kind for Wait {
    fn describe(&self) -> String {
        format!("wait {}", format_duration(self.duration))
    }

    fn advance(&self, clock: &mut ScriptClock) -> Result<(), String> {
        clock.least += self.duration;
        clock.most += self.duration;
        Ok(())
    }
}

impl Play for Wait {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        // On the timeline, but not an action: expectations still look back
        // to the last action.
        stage.note(self.describe());
        stage.run_until(Instant::now() + self.duration).await;
        stage.record(Source::Step, EventKind::Barrier);
        Ok(())
    }
}

impl Generate for WaitSpec {
    /// Below and above a backoff, the 15 s does-not-exist timer, the 30 s
    /// one of gRFC A88.
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            super::generate::duration(&[
                Duration::from_millis(100),
                Duration::from_secs(1),
                Duration::from_secs(5),
                Duration::from_secs(16),
                Duration::from_secs(31),
            ])
            .prop_map(WaitSpec)
            .boxed(),
        )
    }
}
