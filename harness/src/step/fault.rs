//! What the fault step kinds share: a fault applied to one server (their
//! checked form), and the file form of the verbs that take nothing but
//! the server.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::Fault;

use super::{Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned, parse_resource_type};

/// A fault applied to one server: `{server}: {fault}` on the timeline,
/// as the fake server's verb reads.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerFault {
    pub server: String,
    pub fault: Fault,
}

impl ServerFault {
    /// `fault` on the step's server (given, or the only one).
    pub(crate) fn on(
        script: &Script<'_>,
        server: Option<&Spanned<String>>,
        fault: impl Into<Fault>,
    ) -> Result<ServerFault, Problem> {
        Ok(ServerFault {
            server: script.server(server)?,
            fault: fault.into(),
        })
    }
}

impl Kind for ServerFault {
    fn describe(&self) -> String {
        format!("{}: {}", self.server, self.fault)
    }

    fn server_only(&self) -> bool {
        true
    }
}

impl Play for ServerFault {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage.server(&self.server)?.apply(self.fault.clone());
        Ok(())
    }
}

/// A verb that takes nothing but the server: `{}` or `{server: fallback}`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerRef {
    /// Server name; may be left out when there is only one.
    pub server: Option<Spanned<String>>,
}

impl ServerRef {
    pub(crate) fn strategy(palette: &Palette) -> BoxedStrategy<ServerRef> {
        palette
            .server()
            .prop_map(|server| ServerRef { server })
            .boxed()
    }
}

/// A fault's optional `type:`, as a type URL.
pub(crate) fn optional_type_url(t: Option<&Spanned<String>>) -> Result<Option<String>, Problem> {
    t.map(|t| parse_resource_type(t).map(|r| r.type_url().to_string()))
        .transpose()
}
