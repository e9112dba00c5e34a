//! `set_zone_resources` and `remove_zone_resources`: the zone's own
//! (zone-origin) resources change, as a user changes them on a Kuma zone
//! (its REST API, kumactl, a Dataplane starting): the zone syncs them to
//! its global on `ZoneToGlobalSync`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_vocabulary::kds::{KdsName, KdsResource};

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::kds::{kds_name, kuma_type};
use crate::check::{Location, Problem, Spanned};
use crate::resource::file::KumaSpec;
use crate::resource::kuma::kds_resource;

/// What a zone step needs of a client.
const ZONE: &str = "a Kuma zone (KDS)";

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetZoneResourcesSpec {
    /// The resources to add or replace on the zone (others stay).
    pub resources: Vec<Spanned<KumaSpec>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SetZoneResources {
    pub resources: Vec<KdsResource>,
}

impl Compile for SetZoneResourcesSpec {
    type Step = SetZoneResources;

    fn compile(&self, script: &mut Script<'_>) -> Result<SetZoneResources, Problem> {
        script.needs_zone("set_zone_resources")?;
        if self.resources.is_empty() {
            return Err(script.problem("set_zone_resources: `resources` is empty"));
        }
        let mut resources: Vec<KdsResource> = Vec::with_capacity(self.resources.len());
        for spec in &self.resources {
            let resource = kds_resource(&spec.value, spec)?;
            if resources
                .iter()
                .any(|r| r.kuma_type == resource.kuma_type && r.key() == resource.key())
            {
                return Err(Problem::at(
                    spec,
                    format!(
                        "duplicate resource: {} `{}` is already in this list",
                        resource.kuma_type,
                        resource.key()
                    ),
                ));
            }
            resources.push(resource);
        }
        Ok(SetZoneResources { resources })
    }
}

impl Kind for SetZoneResources {
    fn describe(&self) -> String {
        let names: Vec<String> = self
            .resources
            .iter()
            .map(|r| format!("{} {}", r.kuma_type, r.key()))
            .collect();
        format!("zone: set resources [{}]", names.join(","))
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.kds_zone).then_some(ZONE)
    }
}

impl Play for SetZoneResources {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage.client().zone_set(self.resources.clone()).await?;
        Ok(())
    }
}

impl Generate for SetZoneResourcesSpec {
    fn generate(_: &Palette) -> Option<proptest::strategy::BoxedStrategy<Self>> {
        None
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveZoneResourcesSpec {
    /// The Kuma type: `Dataplane`, `ZoneIngress`, ...
    #[serde(rename = "type")]
    pub kuma_type: Spanned<String>,
    /// Their KDS names, `<name>.<mesh>`.
    pub names: Vec<Spanned<String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RemoveZoneResources {
    pub kuma_type: String,
    pub names: Vec<KdsName>,
}

impl Compile for RemoveZoneResourcesSpec {
    type Step = RemoveZoneResources;

    fn compile(&self, script: &mut Script<'_>) -> Result<RemoveZoneResources, Problem> {
        script.needs_zone("remove_zone_resources")?;
        if self.names.is_empty() {
            return Err(script.problem("remove_zone_resources: `names` is empty"));
        }
        Ok(RemoveZoneResources {
            kuma_type: kuma_type(&self.kuma_type)?,
            names: self.names.iter().map(kds_name).collect::<Result<_, _>>()?,
        })
    }
}

impl Kind for RemoveZoneResources {
    fn describe(&self) -> String {
        let names: Vec<String> = self.names.iter().map(KdsName::to_string).collect();
        format!("zone: remove {} [{}]", self.kuma_type, names.join(","))
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.kds_zone).then_some(ZONE)
    }
}

impl Play for RemoveZoneResources {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage
            .client()
            .zone_remove(&self.kuma_type, &self.names)
            .await?;
        Ok(())
    }
}

impl Generate for RemoveZoneResourcesSpec {
    fn generate(_: &Palette) -> Option<proptest::strategy::BoxedStrategy<Self>> {
        None
    }
}
