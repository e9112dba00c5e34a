//! `send_kds_request`: the global asks, ACKs or NACKs on
//! `ZoneToGlobalSync` (where the zone answers): exactly this
//! DeltaDiscoveryRequest, now, on every open such stream of a server.
//! Most scenarios leave it to a server in auto mode, which subscribes `*`
//! to every zone-origin type and ACKs each response.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::ScriptedKdsRequest;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::kds::kuma_type;
use crate::check::{Location, Problem, Spanned, code};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendKdsRequestSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// The Kuma type asked for: `Dataplane`, ...
    #[serde(rename = "type")]
    pub kuma_type: Spanned<String>,
    /// resource_names_subscribe, e.g. `["*"]`.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub subscribe: Vec<String>,
    /// resource_names_unsubscribe.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub unsubscribe: Vec<String>,
    /// response_nonce (default: the nonce of the zone's last response of
    /// the type on each stream, empty if none: what an ACK or NACK says).
    pub nonce: Option<String>,
    /// A NACK: error_detail with this message.
    pub nack: Option<String>,
    /// The NACK's status code by name (default INVALID_ARGUMENT).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendKdsRequest {
    pub server: String,
    pub request: ScriptedKdsRequest,
}

impl Compile for SendKdsRequestSpec {
    type Step = SendKdsRequest;

    fn compile(&self, script: &mut Script<'_>) -> Result<SendKdsRequest, Problem> {
        script.needs_zone("send_kds_request")?;
        let error_detail = match (&self.nack, &self.code) {
            (None, Some(code)) => {
                return Err(Problem::at(
                    code,
                    "code: a NACK's code; give the NACK's message as `nack` too",
                ));
            }
            (None, None) => None,
            (Some(message), code_name) => {
                let code = match code_name {
                    Some(name) => code(name)?,
                    None => tonic::Code::InvalidArgument,
                };
                Some((code as i32, message.clone()))
            }
        };
        Ok(SendKdsRequest {
            server: script.server(self.server.as_ref())?,
            request: ScriptedKdsRequest {
                type_url: kuma_type(&self.kuma_type)?,
                subscribe: self.subscribe.clone(),
                unsubscribe: self.unsubscribe.clone(),
                response_nonce: self.nonce.clone(),
                error_detail,
            },
        })
    }
}

impl Kind for SendKdsRequest {
    fn server_only(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        let r = &self.request;
        let mut text = format!("{}: send KDS request {}", self.server, r.type_url);
        if !r.subscribe.is_empty() {
            text.push_str(&format!(" subscribe [{}]", r.subscribe.join(",")));
        }
        if !r.unsubscribe.is_empty() {
            text.push_str(&format!(" unsubscribe [{}]", r.unsubscribe.join(",")));
        }
        if let Some(nonce) = &r.response_nonce {
            text.push_str(&format!(" nonce={nonce:?}"));
        }
        if let Some((_, message)) = &r.error_detail {
            text.push_str(&format!(" NACK {message:?}"));
        }
        text
    }
}

impl Play for SendKdsRequest {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage
            .server(&self.server)?
            .send_kds_request(self.request.clone());
        Ok(())
    }
}

impl Generate for SendKdsRequestSpec {
    fn generate(_: &Palette) -> Option<proptest::strategy::BoxedStrategy<Self>> {
        None
    }
}
