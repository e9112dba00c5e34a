//! `hold_streams` / `release_streams`: a server's connections stay up
//! (READY), but it admits no new stream until released.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::{HoldStreams, ReleaseStreams};

use super::fault::{ServerFault, ServerRef};
use super::{Compile, Generate, Palette, Script};
use crate::check::Problem;

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct HoldStreamsSpec(pub ServerRef);

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ReleaseStreamsSpec(pub ServerRef);

impl Compile for HoldStreamsSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), HoldStreams)
    }
}

impl Compile for ReleaseStreamsSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), ReleaseStreams)
    }
}

/// Chaos holds no streams: a hold reaches a connection only once the
/// client has read the server's settings on it, so a hold right as a
/// connection opens may let one stream through, which chaos's invariants
/// would read as the client's doing.
impl Generate for HoldStreamsSpec {
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        None
    }
}

impl Generate for ReleaseStreamsSpec {
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        None
    }
}
