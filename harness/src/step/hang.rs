//! `hang` / `resume`: a server answers nothing by itself, for one type or
//! every type, until `resume`.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::{Hang, Resume};

use super::fault::{ServerFault, ServerRef, optional_type_url};
use super::{Compile, Generate, Palette, Script};
use crate::check::{Problem, Spanned};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HangSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// LDS, RDS, CDS or EDS (default: every type).
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
}

/// `{}` or `{server: NAME}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ResumeSpec(pub ServerRef);

impl Compile for HangSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        let type_url = optional_type_url(self.resource_type.as_ref())?;
        ServerFault::on(script, self.server.as_ref(), Hang { type_url })
    }
}

impl Compile for ResumeSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        ServerFault::on(script, self.0.server.as_ref(), Resume)
    }
}

impl Generate for HangSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (palette.server(), proptest::option::of(palette.type_name()))
                .prop_map(|(server, resource_type)| HangSpec {
                    server,
                    resource_type,
                })
                .boxed(),
        )
    }
}

impl Generate for ResumeSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(ServerRef::strategy(palette).prop_map(Self).boxed())
    }
}
