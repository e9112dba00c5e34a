//! `send_kds_response`: exactly this DeltaDiscoveryResponse, now, from a
//! KDS global on every open `GlobalToZoneSync` stream (in either mode):
//! a subset, an undecodable resource, a type the zone does not consume.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::{ScriptedDeltaResource, ScriptedDeltaResponse};

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::kds::{kds_name, kuma_type};
use crate::check::{Location, Problem, Spanned};
use crate::resource::file::{KumaSpec, ResourceSpec};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendKdsResponseSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// The Kuma type (the response's `type_url`): `Mesh`, ...
    #[serde(rename = "type")]
    pub kuma_type: Spanned<String>,
    /// `true`: `type` is sent as written even though KDS has no such type
    /// (a zone ends its connection on it).
    pub unknown_type: Option<bool>,
    /// system_version_info (default: the server's current version of the
    /// type).
    pub system_version: Option<String>,
    /// nonce (default: the server's next nonce).
    pub nonce: Option<String>,
    /// Exactly these resources, in this order, of `type` (their `type`
    /// is the response's); `undecodable: true` for bytes a zone cannot
    /// read.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub resources: Vec<Spanned<KumaSpec>>,
    /// removed_resources, `<name>.<mesh>`, as given.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub removed: Vec<Spanned<String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SendKdsResponse {
    pub server: String,
    pub response: ScriptedDeltaResponse,
}

impl Compile for SendKdsResponseSpec {
    type Step = SendKdsResponse;

    fn compile(&self, script: &mut Script<'_>) -> Result<SendKdsResponse, Problem> {
        script.needs_zone("send_kds_response")?;
        let type_url = if self.unknown_type == Some(true) {
            if kuma_type(&self.kuma_type).is_ok() {
                return Err(Problem::at(
                    &self.kuma_type,
                    format!(
                        "unknown_type: `{}` is a type KDS carries; leave `unknown_type` out",
                        self.kuma_type.value
                    ),
                ));
            }
            self.kuma_type.value.clone()
        } else {
            kuma_type(&self.kuma_type)?
        };
        let mut resources = Vec::with_capacity(self.resources.len());
        for spec in &self.resources {
            if spec.value.kuma_type.value != type_url {
                return Err(Problem::at(
                    &spec.value.kuma_type,
                    format!(
                        "a {} in a response of type {}: a KDS response carries one type",
                        spec.value.kuma_type.value, type_url
                    ),
                ));
            }
            // Built as a server's `kuma:` entry; the type was checked
            // above (an unknown one is checked by no list).
            let mut known = spec.value.clone();
            if self.unknown_type == Some(true) {
                known.kuma_type = Spanned::new("Mesh".to_string());
            }
            let entry = Spanned {
                value: ResourceSpec::Kuma(known),
                line: spec.line,
                column: spec.column,
            };
            let served = crate::resource::build(&entry, &[])?;
            resources.push(ScriptedDeltaResource::from_served(served));
        }
        for name in &self.removed {
            kds_name(name)?;
        }
        Ok(SendKdsResponse {
            server: script.server(self.server.as_ref())?,
            response: ScriptedDeltaResponse {
                type_url,
                system_version_info: self.system_version.clone(),
                nonce: self.nonce.clone(),
                resources,
                removed: self.removed.iter().map(|n| n.value.clone()).collect(),
                resource_errors: Vec::new(),
            },
        })
    }
}

impl Kind for SendKdsResponse {
    fn server_only(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        let names: Vec<&str> = self
            .response
            .resources
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        let mut text = format!(
            "{}: send KDS response {} [{}]",
            self.server,
            self.response.type_url,
            names.join(",")
        );
        if !self.response.removed.is_empty() {
            text.push_str(&format!(" removed [{}]", self.response.removed.join(",")));
        }
        text
    }
}

impl Play for SendKdsResponse {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage
            .server(&self.server)?
            .send_kds_response(self.response.clone());
        Ok(())
    }
}

impl Generate for SendKdsResponseSpec {
    fn generate(_: &Palette) -> Option<proptest::strategy::BoxedStrategy<Self>> {
        None
    }
}
