//! `serve`: start an xDS-enabled server (gRFC A36).

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned};

/// The listening address, `ip:port`, e.g. `0.0.0.0:8443`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ServeSpec(pub Spanned<String>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serve {
    /// As written; runs over TCP listen elsewhere (see
    /// `Stage::listening_address`).
    pub address: String,
}

impl Compile for ServeSpec {
    type Step = Serve;

    fn compile(&self, _script: &mut Script<'_>) -> Result<Serve, Problem> {
        let address = &self.0;
        if address.value.parse::<std::net::SocketAddr>().is_err() {
            return Err(Problem::at(
                address,
                format!(
                    "serve: `{}` is not a listening address: expected ip:port, \
                     e.g. 0.0.0.0:8443 or [::]:8443",
                    address.value
                ),
            ));
        }
        Ok(Serve {
            address: address.value.clone(),
        })
    }
}

impl Kind for Serve {
    fn describe(&self) -> String {
        format!("serve {}", self.address)
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.serve).then_some("xDS-enabled servers")
    }
}

impl Play for Serve {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let real = stage.listening_address(&self.address);
        stage.client().serve(&real).await?;
        Ok(())
    }
}

impl Generate for ServeSpec {
    /// Not generated: a server needs the Listener its template names,
    /// which generated scenarios do not serve.
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        None
    }
}
