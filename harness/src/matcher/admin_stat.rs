//! The `admin_stat` matcher: a proxy's counter or gauge, as its admin API
//! showed it (Envoy's `/stats`: `cluster_manager.cds.update_rejected`,
//! `control_plane.connected_state`, ...), reaching a value.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::{AdminObservation, Capabilities, ObservedEvent};

use super::admin::missing_admin;
use super::{Check, Compare, Compile, Description, Translate};
use crate::check::{Checker, Problem};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminStatMatcherSpec {
    /// The stat's full name.
    pub name: String,
    /// Reached when it is at least this (default 1); counters only grow.
    pub at_least: Option<u64>,
    /// Or exactly this (gauges: `control_plane.connected_state: 0`).
    pub equals: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AdminStatMatcher {
    pub name: String,
    pub at_least: u64,
    pub equals: Option<u64>,
}

impl Compile for AdminStatMatcherSpec {
    type Matcher = AdminStatMatcher;

    fn compile(&self, _scenario: &Checker) -> Result<AdminStatMatcher, Problem> {
        Ok(AdminStatMatcher {
            name: self.name.clone(),
            at_least: self
                .at_least
                .unwrap_or(if self.equals.is_some() { 0 } else { 1 }),
            equals: self.equals,
        })
    }
}

impl Check for AdminStatMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        _text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::Admin(AdminObservation::Stat { name, value })) =
            &event.kind
        else {
            return None;
        };
        fields
            .eq(
                "name",
                Some(self.name.as_str()),
                name.as_str(),
                str::to_string,
            )
            .check(
                "at_least",
                true,
                || *value >= self.at_least,
                || self.at_least.to_string(),
                || value.to_string(),
            )
            .eq("equals", self.equals.as_ref(), value, u64::to_string);
        Some(())
    }

    fn describe(&self) -> String {
        let d = Description::new("admin stat").field("name", &self.name);
        match self.equals {
            Some(e) => d.field("equals", e),
            None => d.field("at_least", self.at_least),
        }
        .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        missing_admin(caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;

    fn stat(value: u64) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Admin(AdminObservation::Stat {
                name: "cluster_manager.cds.update_rejected".into(),
                value,
            })),
        }
    }

    #[test]
    fn counters_match_from_their_threshold_on_gauges_exactly() {
        let m = AdminStatMatcher {
            name: "cluster_manager.cds.update_rejected".into(),
            at_least: 2,
            equals: None,
        };
        assert!(!m.matches(&stat(1), &as_written));
        assert!(m.matches(&stat(2), &as_written));
        assert!(m.matches(&stat(3), &as_written));
        assert_eq!(
            m.describe(),
            "admin stat name=cluster_manager.cds.update_rejected at_least=2"
        );
        let zero = AdminStatMatcher {
            name: "cluster_manager.cds.update_rejected".into(),
            at_least: 0,
            equals: Some(0),
        };
        assert!(zero.matches(&stat(0), &as_written));
        assert!(!zero.matches(&stat(1), &as_written));
        let mut other = m.clone();
        other.name = "x".into();
        assert!(!other.matches(&stat(5), &as_written));
    }
}
