//! Differential chaos (`chaos --against C`): each schedule the client
//! plays through is also played on a second client, and what the two
//! showed of it must agree as far as both can show it
//! ([`crate::differential::between_clients`]). The second is usually the
//! reference client: a difference is where a real client and the
//! reference read the same schedule differently, for a person to read
//! with both timelines (the spec and the two sources decide who is right).

use std::sync::Arc;

use xds_client_under_test::Capabilities;
use xds_conformance_reports::Verdict;

use crate::runner::{RunOutcome, run_scenario};
use crate::scenario::Scenario;
use crate::suite::BoxedFactory;

/// The rule a differential run holds the client to.
pub const SAME_AS_AGAINST: &str = "same-as-against";

/// The client a campaign compares its client with.
#[derive(Clone)]
pub struct Against {
    pub name: String,
    pub factory: Arc<BoxedFactory>,
    pub caps: Capabilities,
}

impl std::fmt::Debug for Against {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Against").field("name", &self.name).finish()
    }
}

impl Against {
    pub fn new(name: &str, factory: BoxedFactory) -> Against {
        let caps = factory().capabilities();
        Against {
            name: name.to_string(),
            factory: Arc::new(factory),
            caps,
        }
    }

    /// Plays `scenario`, which the client with `caps` played through as
    /// `outcome`, on this client and compares: the difference, as a FAIL
    /// naming it, with this client's timeline. `None` when they agree, or
    /// when this client could not play the schedule through (n/a, or a
    /// run that stopped or broke: then there is nothing to compare with;
    /// its own campaign would say why).
    pub fn compare(
        &self,
        scenario: &Scenario,
        (outcome, caps): (&RunOutcome, &Capabilities),
    ) -> Option<(Verdict, String)> {
        if outcome.verdict != Verdict::Pass {
            return None;
        }
        let other = run_scenario(scenario, self.factory.as_ref().as_ref());
        if other.verdict != Verdict::Pass {
            return None;
        }
        let difference =
            crate::differential::between_clients((&other, &self.caps), (outcome, caps))?;
        Some((
            Verdict::Fail {
                message: format!(
                    "{SAME_AS_AGAINST}: the client showed something else than {name} on the \
                     same schedule (the first run is {name}'s, on {:?} time; the client's on \
                     {:?} time): {difference}",
                    other.mode,
                    outcome.mode,
                    name = self.name,
                ),
            },
            other.timeline,
        ))
    }
}
