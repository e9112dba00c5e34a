//! `dial`: resolve an `xds:` target as a gRPC channel would.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Reachable, Spanned};

/// The target, e.g. `xds:///my-service`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct DialSpec(pub Spanned<String>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dial {
    pub target: String,
}

/// An `xds:` target, or an error at it naming `verb`.
pub(crate) fn xds_target(target: &Spanned<String>, verb: &str) -> Result<String, Problem> {
    if !target.value.starts_with("xds:") {
        return Err(Problem::at(
            target,
            format!(
                "{verb}: target `{}` is not an xds: target, e.g. xds:///my-service",
                target.value
            ),
        ));
    }
    Ok(target.value.clone())
}

impl Compile for DialSpec {
    type Step = Dial;

    fn compile(&self, _script: &mut Script<'_>) -> Result<Dial, Problem> {
        Ok(Dial {
            target: xds_target(&self.0, "dial")?,
        })
    }
}

impl Kind for Dial {
    fn describe(&self) -> String {
        format!("dial {}", self.target)
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.dial).then_some("dial")
    }

    fn reach(&self, reach: &mut Reachable) -> Result<(), String> {
        reach.dialled(&self.target);
        Ok(())
    }
}

impl Play for Dial {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        if stage.is_proxy() {
            // A proxy subscribes from its start, not on a dial: the dial
            // causes nothing, so expectations after it still look back to
            // the last real action (or the start).
            stage.note(self.describe());
        } else {
            stage.act(self.describe());
        }
        stage.client().dial(&self.target).await?;
        Ok(())
    }
}

impl Generate for DialSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(palette.target().prop_map(DialSpec).boxed())
    }
}
