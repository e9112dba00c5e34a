//! `hold_connections` / `release_connections`: no bytes move on a
//! server's connections until released.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::{HoldConnections, ReleaseConnections};

use super::fault::{ServerFault, ServerRef};
use super::{Compile, Generate, Palette, Script};
use crate::check::Problem;

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct HoldConnectionsSpec(pub ServerRef);

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ReleaseConnectionsSpec(pub ServerRef);

impl Compile for HoldConnectionsSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), HoldConnections)
    }
}

impl Compile for ReleaseConnectionsSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), ReleaseConnections)
    }
}

impl Generate for HoldConnectionsSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(ServerRef::strategy(palette).prop_map(Self).boxed())
    }
}

impl Generate for ReleaseConnectionsSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(ServerRef::strategy(palette).prop_map(Self).boxed())
    }
}
