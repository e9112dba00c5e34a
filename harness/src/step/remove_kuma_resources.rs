//! `remove_kuma_resources`: delete Kuma resources from a KDS global's
//! store (auto mode tells zones with `removed_resources`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_vocabulary::kds::KdsName;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::kds::{kds_name, kuma_type};
use crate::check::{Location, Problem, Spanned};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveKumaResourcesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// The Kuma type: `Mesh`, `MeshTrafficPermission`, ...
    #[serde(rename = "type")]
    pub kuma_type: Spanned<String>,
    /// Their KDS names, `<name>.<mesh>` (`<name>.` without a mesh).
    pub names: Vec<Spanned<String>>,
    /// The type's version after the change (default: the next number).
    pub version: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoveKumaResources {
    pub server: String,
    pub kuma_type: String,
    pub names: Vec<KdsName>,
    pub version: Option<String>,
}

impl Compile for RemoveKumaResourcesSpec {
    type Step = RemoveKumaResources;

    fn compile(&self, script: &mut Script<'_>) -> Result<RemoveKumaResources, Problem> {
        script.needs_zone("remove_kuma_resources")?;
        if self.names.is_empty() {
            return Err(script.problem("remove_kuma_resources: `names` is empty"));
        }
        Ok(RemoveKumaResources {
            server: script.server(self.server.as_ref())?,
            kuma_type: kuma_type(&self.kuma_type)?,
            names: self.names.iter().map(kds_name).collect::<Result<_, _>>()?,
            version: self.version.clone(),
        })
    }
}

impl Kind for RemoveKumaResources {
    fn server_only(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.names.iter().map(KdsName::to_string).collect();
        format!(
            "{}: remove {} [{}]",
            self.server,
            self.kuma_type,
            names.join(",")
        )
    }
}

impl Play for RemoveKumaResources {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let names: Vec<String> = self.names.iter().map(KdsName::to_string).collect();
        stage
            .server(&self.server)?
            .remove_resources(&self.kuma_type, &names, self.version.clone());
        Ok(())
    }
}

impl Generate for RemoveKumaResourcesSpec {
    fn generate(_: &Palette) -> Option<proptest::strategy::BoxedStrategy<Self>> {
        None
    }
}
