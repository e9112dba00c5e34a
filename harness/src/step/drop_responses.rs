//! `drop_responses`: a server's next responses are lost on their way.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::fault::DropResponses;

use super::fault::{ServerFault, optional_type_url};
use super::{Compile, Generate, Palette, Script};
use crate::check::{Problem, Spanned, check_count};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropResponsesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// How many (default 1).
    pub count: Option<u32>,
    /// LDS, RDS, CDS or EDS (default: any type).
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
}

impl Compile for DropResponsesSpec {
    type Step = ServerFault;

    fn compile(&self, script: &mut Script<'_>) -> Result<ServerFault, Problem> {
        let count = self.count.unwrap_or(1);
        check_count(count, "drop_responses: count").map_err(|e| script.problem(e))?;
        let fault = DropResponses {
            count,
            type_url: optional_type_url(self.resource_type.as_ref())?,
        };
        ServerFault::on(script, self.server.as_ref(), fault)
    }
}

impl Generate for DropResponsesSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            (
                palette.server(),
                proptest::option::of(2u32..=3),
                proptest::option::of(palette.type_name()),
            )
                .prop_map(|(server, count, resource_type)| DropResponsesSpec {
                    server,
                    count,
                    resource_type,
                })
                .boxed(),
        )
    }
}
