//! `watch`: start a watch on the client.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_vocabulary::ResourceType;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Reachable, Spanned, parse_resource_type};

/// A resource watch: `{type: CDS, name: c1}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchSpec {
    /// LDS, RDS, CDS or EDS (or a type URL).
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    pub resource_type: Spanned<String>,
    /// Resource name; `*` watches every resource of the type (LDS and CDS).
    pub name: String,
}

/// The name that makes a watch a wildcard watch.
pub const WILDCARD: &str = "*";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    pub resource_type: ResourceType,
    pub name: String,
}

impl WatchSpec {
    /// The watched resource's type and name.
    pub(crate) fn resource(&self) -> Result<(ResourceType, String), Problem> {
        Ok((parse_resource_type(&self.resource_type)?, self.name.clone()))
    }

    /// A watch of one of the palette's resources (or of every resource of
    /// a full-state type).
    pub(crate) fn strategy(palette: &Palette) -> BoxedStrategy<WatchSpec> {
        palette
            .watchable()
            .prop_map(|(resource_type, name)| WatchSpec {
                resource_type: Spanned::new(resource_type.short_name().to_string()),
                name,
            })
            .boxed()
    }
}

impl Compile for WatchSpec {
    type Step = Watch;

    fn compile(&self, script: &mut Script<'_>) -> Result<Watch, Problem> {
        let (resource_type, name) = self.resource()?;
        script.start_watch(resource_type, &name);
        Ok(Watch {
            resource_type,
            name,
        })
    }
}

impl Watch {
    /// The watch a timeline's step line starts: the inverse of
    /// `describe`, for checkers that read timelines (chaos invariants).
    /// A `watch_in_callback` line is not one
    /// ([`super::watch_in_callback::WatchInCallback::described`]).
    pub fn described(text: &str) -> Option<(ResourceType, &str)> {
        if text.contains(" from the next callback of ") {
            return None;
        }
        let (resource_type, name) = text.strip_prefix("watch ")?.split_once(' ')?;
        Some((ResourceType::parse(resource_type)?, name))
    }
}

impl Kind for Watch {
    fn describe(&self) -> String {
        format!("watch {} {}", self.resource_type, self.name)
    }

    /// A watch API, or channels to observe watches through (whether
    /// the scenario's watches can be projected is the scenario's to say:
    /// `runner::not_applicable`); for `*`, a watch API with a wildcard
    /// watch (`Capabilities::wildcard_watch`: gRPC's have none).
    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        if !caps.watch && !caps.projected_watch {
            return Some("a resource watch API");
        }
        (self.name == WILDCARD && !caps.wildcard_watch).then_some("a wildcard watch")
    }

    fn reach(&self, reach: &mut Reachable) -> Result<(), String> {
        reach.watched(self.resource_type, &self.name);
        Ok(())
    }
}

impl Play for Watch {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage.client().watch(self.resource_type, &self.name).await?;
        Ok(())
    }
}

impl Generate for WatchSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(WatchSpec::strategy(palette))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(name: &str) -> Watch {
        Watch {
            resource_type: ResourceType::Cluster,
            name: name.to_string(),
        }
    }

    #[test]
    fn a_wildcard_watch_needs_a_client_with_one() {
        // A gRPC client's watch API: names only (gRFC A27).
        let grpc = Capabilities {
            watch: true,
            ..Capabilities::default()
        };
        assert_eq!(watch("c1").missing_capability(&grpc), None);
        assert_eq!(
            watch(WILDCARD).missing_capability(&grpc),
            Some("a wildcard watch")
        );
        let wildcard = Capabilities {
            wildcard_watch: true,
            ..grpc
        };
        assert_eq!(watch(WILDCARD).missing_capability(&wildcard), None);
        // No watch API at all is said first.
        assert_eq!(
            watch(WILDCARD).missing_capability(&Capabilities::default()),
            Some("a resource watch API")
        );
    }
}
