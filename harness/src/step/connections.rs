//! `refuse_connections` / `accept_connections`: whether a server takes new
//! connections.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::{AcceptConnections, RefuseConnections};

use super::fault::{ServerFault, ServerRef};
use super::{Compile, Generate, Palette, Script};
use crate::check::Problem;

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct RefuseConnectionsSpec(pub ServerRef);

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct AcceptConnectionsSpec(pub ServerRef);

impl Compile for RefuseConnectionsSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), RefuseConnections)
    }
}

impl Compile for AcceptConnectionsSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), AcceptConnections)
    }
}

impl Generate for RefuseConnectionsSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(ServerRef::strategy(palette).prop_map(Self).boxed())
    }
}

impl Generate for AcceptConnectionsSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(ServerRef::strategy(palette).prop_map(Self).boxed())
    }
}
