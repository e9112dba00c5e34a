//! `cancel_watch`: cancel a watch started earlier.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_vocabulary::ResourceType;

use super::watch::WatchSpec;
use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem};

/// The watch to cancel: `{type: CDS, name: c1}` (its most recent watcher).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct CancelWatchSpec(pub WatchSpec);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelWatch {
    pub resource_type: ResourceType,
    pub name: String,
}

impl Compile for CancelWatchSpec {
    type Step = CancelWatch;

    fn compile(&self, script: &mut Script<'_>) -> Result<CancelWatch, Problem> {
        let (resource_type, name) = self.0.resource()?;
        if !script.end_watch(resource_type, &name) {
            return Err(script.problem(format!(
                "cancel_watch: no watch on {resource_type} `{name}` is active here \
                 (start one with a watch step first)"
            )));
        }
        Ok(CancelWatch {
            resource_type,
            name,
        })
    }
}

impl CancelWatch {
    /// The watch a timeline's step line cancels: the inverse of
    /// `describe`, for checkers that read timelines (chaos invariants).
    pub fn described(text: &str) -> Option<(ResourceType, &str)> {
        let (resource_type, name) = text.strip_prefix("cancel watch ")?.split_once(' ')?;
        Some((ResourceType::parse(resource_type)?, name))
    }
}

impl Kind for CancelWatch {
    fn describe(&self) -> String {
        format!("cancel watch {} {}", self.resource_type, self.name)
    }

    /// A watch API, or channels to observe watches through (whether
    /// the scenario's watches can be projected is the scenario's to say:
    /// `runner::not_applicable`).
    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.watch && !caps.projected_watch).then_some("a resource watch API")
    }
}

impl Play for CancelWatch {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage
            .client()
            .cancel_watch(self.resource_type, &self.name)
            .await?;
        Ok(())
    }
}

impl Generate for CancelWatchSpec {
    /// Any watchable resource: one not watched here does not compile,
    /// which a generator takes as "not now".
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            WatchSpec::strategy(palette)
                .prop_map(CancelWatchSpec)
                .boxed(),
        )
    }
}
