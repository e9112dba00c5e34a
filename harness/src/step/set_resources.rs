//! `set_resources`: add or replace resources on a server.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::ServedResource;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned};
use crate::resource::file::ResourceSpec;
use crate::resource::resource_list;

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetResourcesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// version_info of the change (default: the type's next number).
    pub version: Option<String>,
    /// The resources to add or replace (others of their types stay).
    pub resources: Vec<Spanned<ResourceSpec>>,
}

#[derive(Clone, Debug)]
pub struct SetResources {
    pub server: String,
    pub resources: Vec<ServedResource>,
    pub version: Option<String>,
}

impl Compile for SetResourcesSpec {
    type Step = SetResources;

    fn compile(&self, script: &mut Script<'_>) -> Result<SetResources, Problem> {
        Ok(SetResources {
            server: script.server(self.server.as_ref())?,
            resources: resource_list(&self.resources, false, script.checker().backends())?,
            version: self.version.clone(),
        })
    }
}

impl Kind for SetResources {
    fn server_only(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        let names: Vec<&str> = self.resources.iter().map(|r| r.name.as_str()).collect();
        format!("{}: set resources [{}]", self.server, names.join(","))
    }
}

impl Play for SetResources {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let resources = stage.served(&self.resources)?;
        stage
            .server(&self.server)?
            .set_resources(resources, self.version.clone());
        Ok(())
    }
}

impl Generate for SetResourcesSpec {
    /// One to three resources of the palette (a valid or an invalid form
    /// of each), each named once: a store holds one resource per name.
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (palette.server(), palette.resources())
                .prop_map(|(server, mut resources)| {
                    let mut seen = std::collections::BTreeSet::new();
                    resources.retain(|r| seen.insert(r.value.identity()));
                    SetResourcesSpec {
                        server,
                        version: None,
                        resources,
                    }
                })
                .boxed(),
        )
    }
}
