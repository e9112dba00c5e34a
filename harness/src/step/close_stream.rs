//! `close_stream`: the server closes its ADS streams with a gRPC status.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::CloseStreams;

use super::generate::status_code;
use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned, code, opt};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseStreamSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// gRPC status code name (default UNAVAILABLE).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// The status message sent with the close.
    pub message: Option<String>,
}

/// Checked: the server and the fault (its line on the timeline is the
/// step's own, `close streams`; the server's event says with what).
#[derive(Clone, Debug, PartialEq)]
pub struct CloseStream {
    pub server: String,
    pub close: CloseStreams,
}

impl Compile for CloseStreamSpec {
    type Step = CloseStream;

    fn compile(&self, script: &mut Script<'_>) -> Result<CloseStream, Problem> {
        Ok(CloseStream {
            server: script.server(self.server.as_ref())?,
            close: CloseStreams {
                code: opt(self.code.as_ref(), code)?.unwrap_or(tonic::Code::Unavailable),
                message: self.message.clone().unwrap_or_default(),
            },
        })
    }
}

impl Kind for CloseStream {
    fn describe(&self) -> String {
        format!("{}: close streams", self.server)
    }
}

impl Play for CloseStream {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage.server(&self.server)?.apply(self.close.clone());
        Ok(())
    }
}

impl Generate for CloseStreamSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (palette.server(), proptest::option::of(status_code()))
                .prop_map(|(server, code)| CloseStreamSpec {
                    server,
                    code,
                    message: None,
                })
                .boxed(),
        )
    }
}
