//! `close_streams_after` / `keep_streams`: a server closes every ADS
//! stream once it has sent it N responses, until `keep_streams`.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::{CloseStreamsAfter, KeepStreams};

use super::fault::{ServerFault, ServerRef};
use super::generate::status_code;
use super::{Compile, Generate, Palette, Script};
use crate::check::{Problem, Spanned, code, opt};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseStreamsAfterSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Responses a stream gets before it is closed (0: none).
    pub responses: u32,
    /// gRPC status code name (default UNAVAILABLE).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// The status message sent with each close.
    pub message: Option<String>,
}

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct KeepStreamsSpec(pub ServerRef);

impl Compile for CloseStreamsAfterSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        let fault = CloseStreamsAfter {
            responses: self.responses,
            code: opt(self.code.as_ref(), code)?.unwrap_or(tonic::Code::Unavailable),
            message: self.message.clone().unwrap_or_default(),
        };
        ServerFault::on(script, self.server.as_ref(), fault)
    }
}

impl Compile for KeepStreamsSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), KeepStreams)
    }
}

impl Generate for CloseStreamsAfterSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (
                palette.server(),
                0u32..=3,
                proptest::option::of(status_code()),
            )
                .prop_map(|(server, responses, code)| CloseStreamsAfterSpec {
                    server,
                    responses,
                    code,
                    message: None,
                })
                .boxed(),
        )
    }
}

impl Generate for KeepStreamsSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(ServerRef::strategy(palette).prop_map(Self).boxed())
    }
}
