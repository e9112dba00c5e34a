//! `delay_responses`: every response of a server waits before it goes out.

use std::time::Duration;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::DelayResponses;

use super::fault::ServerFault;
use super::{Compile, Generate, Palette, Script};
use crate::check::{Problem, Spanned, duration};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelayResponsesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// e.g. `2s`, `250ms`.
    pub by: Spanned<String>,
}

impl Compile for DelayResponsesSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        let fault = DelayResponses {
            by: duration(&self.by, "by")?,
        };
        ServerFault::on(script, self.server.as_ref(), fault)
    }
}

impl Generate for DelayResponsesSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        let by = super::generate::duration(&[
            Duration::ZERO,
            Duration::from_millis(100),
            Duration::from_secs(1),
            Duration::from_secs(5),
        ]);
        Some(
            (palette.server(), by)
                .prop_map(|(server, by)| DelayResponsesSpec { server, by })
                .boxed(),
        )
    }
}
