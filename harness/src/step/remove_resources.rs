//! `remove_resources`: delete resources from a server.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_vocabulary::ResourceType;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned, parse_resource_type};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveResourcesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    pub resource_type: Spanned<String>,
    /// Names of the resources to remove.
    pub names: Vec<String>,
    /// The type's version after the change (default: the next number).
    pub version: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoveResources {
    pub server: String,
    pub resource_type: ResourceType,
    pub names: Vec<String>,
    pub version: Option<String>,
}

impl Compile for RemoveResourcesSpec {
    type Step = RemoveResources;

    fn compile(&self, script: &mut Script<'_>) -> Result<RemoveResources, Problem> {
        Ok(RemoveResources {
            server: script.server(self.server.as_ref())?,
            resource_type: parse_resource_type(&self.resource_type)?,
            names: self.names.clone(),
            version: self.version.clone(),
        })
    }
}

impl Kind for RemoveResources {
    fn server_only(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!(
            "{}: remove {} [{}]",
            self.server,
            self.resource_type,
            self.names.join(",")
        )
    }
}

impl Play for RemoveResources {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let names: Vec<String> = self.names.iter().map(|n| stage.resource_name(n)).collect();
        stage.server(&self.server)?.remove_resources(
            self.resource_type.type_url(),
            &names,
            self.version.clone(),
        );
        Ok(())
    }
}

impl Generate for RemoveResourcesSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        let palette = palette.clone();
        Some(
            (palette.server(), palette.resource_type())
                .prop_flat_map(move |(server, resource_type)| {
                    palette
                        .names_of(resource_type)
                        .prop_map(move |names| RemoveResourcesSpec {
                            server: server.clone(),
                            resource_type: Spanned::new(resource_type.short_name().to_string()),
                            names,
                            version: None,
                        })
                })
                .boxed(),
        )
    }
}
