//! `watch_in_callback`: a watcher starts a watch from inside its next
//! callback (a client must not deadlock).

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_vocabulary::ResourceType;

use super::watch::WatchSpec;
use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Reachable, Spanned, parse_resource_type};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchInCallbackSpec {
    /// LDS, RDS, CDS or EDS: the watch to start.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    pub resource_type: Spanned<String>,
    /// Resource name of the watch to start.
    pub name: String,
    /// The watched resource whose watcher starts it from its callback.
    pub of: WatchSpec,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchInCallback {
    pub resource_type: ResourceType,
    pub name: String,
    /// The watched resource whose most recent watcher starts it.
    pub of: (ResourceType, String),
}

impl Compile for WatchInCallbackSpec {
    type Step = WatchInCallback;

    fn compile(&self, script: &mut Script<'_>) -> Result<WatchInCallback, Problem> {
        let (of_type, of_name) = self.of.resource()?;
        script.need_watch("watch_in_callback", of_type, &of_name)?;
        Ok(WatchInCallback {
            resource_type: parse_resource_type(&self.resource_type)?,
            name: self.name.clone(),
            of: (of_type, of_name),
        })
    }
}

impl WatchInCallback {
    /// The watch a timeline's step line starts (in a callback to come):
    /// the inverse of `describe`, for checkers that read timelines.
    pub fn described(text: &str) -> Option<(ResourceType, &str)> {
        let (watch, _of) = text.split_once(" from the next callback of ")?;
        let (resource_type, name) = watch.strip_prefix("watch ")?.split_once(' ')?;
        Some((ResourceType::parse(resource_type)?, name))
    }
}

impl Kind for WatchInCallback {
    fn describe(&self) -> String {
        format!(
            "watch {} {} from the next callback of {} {}",
            self.resource_type, self.name, self.of.0, self.of.1
        )
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.watch_in_callback).then_some("watches started from a watcher's callback")
    }

    fn reach(&self, reach: &mut Reachable) -> Result<(), String> {
        reach.watched(self.resource_type, &self.name);
        Ok(())
    }
}

impl Play for WatchInCallback {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage
            .client()
            .watch_in_callback(self.resource_type, &self.name, (self.of.0, &self.of.1))
            .await?;
        Ok(())
    }
}

impl Generate for WatchInCallbackSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (palette.watchable(), WatchSpec::strategy(palette))
                .prop_map(|((resource_type, name), of)| WatchInCallbackSpec {
                    resource_type: Spanned::new(resource_type.short_name().to_string()),
                    name,
                    of,
                })
                .boxed(),
        )
    }
}
