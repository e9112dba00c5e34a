//! `hold_reads` / `release_reads`: a watcher keeps (or lets go of) the
//! read handle of each notification (gRPC's ReadDelayHandle), so the ADS
//! stream reads no further response while it holds one.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_vocabulary::ResourceType;

use super::watch::WatchSpec;
use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem};

/// The watcher that holds reads: `{type: CDS, name: c1}` (its most recent
/// watcher).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct HoldReadsSpec(pub WatchSpec);

/// The watcher that lets go: `{type: CDS, name: c1}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ReleaseReadsSpec(pub WatchSpec);

/// Both kinds, checked: `hold` says which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldReads {
    pub resource_type: ResourceType,
    pub name: String,
    pub hold: bool,
}

fn compile(spec: &WatchSpec, hold: bool, script: &Script<'_>) -> Result<HoldReads, Problem> {
    let (resource_type, name) = spec.resource()?;
    let verb = if hold { "hold_reads" } else { "release_reads" };
    script.need_watch(verb, resource_type, &name)?;
    Ok(HoldReads {
        resource_type,
        name,
        hold,
    })
}

impl Compile for HoldReadsSpec {
    type Step = HoldReads;

    fn compile(&self, script: &mut Script<'_>) -> Result<HoldReads, Problem> {
        compile(&self.0, true, script)
    }
}

impl Compile for ReleaseReadsSpec {
    type Step = HoldReads;

    fn compile(&self, script: &mut Script<'_>) -> Result<HoldReads, Problem> {
        compile(&self.0, false, script)
    }
}

impl Kind for HoldReads {
    fn describe(&self) -> String {
        let verb = if self.hold { "hold" } else { "release" };
        format!(
            "{verb} reads of watcher {} {}",
            self.resource_type, self.name
        )
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.read_flow_control).then_some("read flow control (a watcher holding the next read)")
    }
}

impl Play for HoldReads {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        stage
            .client()
            .hold_reads(self.resource_type, &self.name, self.hold)
            .await?;
        Ok(())
    }
}

impl Generate for HoldReadsSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(WatchSpec::strategy(palette).prop_map(HoldReadsSpec).boxed())
    }
}

impl Generate for ReleaseReadsSpec {
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            WatchSpec::strategy(palette)
                .prop_map(ReleaseReadsSpec)
                .boxed(),
        )
    }
}
