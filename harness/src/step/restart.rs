//! `restart`: a server restarts; its streams and connections end.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::Restart;

use super::fault::ServerFault;
use super::{Compile, Generate, Palette, Script};
use crate::check::{Problem, Spanned};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestartSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Keep the store (default true).
    pub keep_resources: Option<bool>,
}

impl Compile for RestartSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        let fault = Restart {
            keep_resources: self.keep_resources.unwrap_or(true),
        };
        ServerFault::on(script, self.server.as_ref(), fault)
    }
}

impl Generate for RestartSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (palette.server(), proptest::option::of(Just(false)))
                .prop_map(|(server, keep_resources)| RestartSpec {
                    server,
                    keep_resources,
                })
                .boxed(),
        )
    }
}
