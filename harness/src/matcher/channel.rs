//! The `channel` matcher: a dialled channel's connectivity state change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::{Capabilities, ConnectivityState, ObservedEvent};

use super::{Check, Compare, Compile, Description, Translate};
use crate::check::Spanned;
use crate::check::{Checker, Problem};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelMatcherSpec {
    /// The dialled target, e.g. `xds:///svc` (default: any).
    pub target: Option<String>,
    /// IDLE, CONNECTING, READY, TRANSIENT_FAILURE or SHUTDOWN.
    #[schemars(schema_with = "connectivity_states")]
    pub state: Spanned<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChannelMatcher {
    pub target: Option<String>,
    pub state: ConnectivityState,
}

impl Compile for ChannelMatcherSpec {
    type Matcher = ChannelMatcher;

    fn compile(&self, _scenario: &Checker) -> Result<ChannelMatcher, Problem> {
        let state = ConnectivityState::parse(&self.state.value).ok_or_else(|| {
            Problem::at(
                &self.state,
                format!(
                    "channel state `{}`: expected IDLE, CONNECTING, READY, TRANSIENT_FAILURE or SHUTDOWN",
                    self.state.value
                ),
            )
        })?;
        Ok(ChannelMatcher {
            target: self.target.clone(),
            state,
        })
    }
}

impl Check for ChannelMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        _text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::ChannelState { target, state }) = &event.kind else {
            return None;
        };
        fields
            .eq(
                "target",
                self.target.as_deref(),
                target.as_str(),
                str::to_string,
            )
            .eq("state", Some(&self.state), state, |s| s.name().to_string());
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("channel state")
            .given("target", self.target.as_ref())
            .field("state", self.state.name())
            .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.channel_states).then_some("channel connectivity states")
    }
}

fn connectivity_states(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::words(ConnectivityState::ALL.iter().map(|s| s.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;

    fn state(target: &str, state: ConnectivityState) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::ChannelState {
                target: target.into(),
                state,
            }),
        }
    }

    #[test]
    fn checks_target_and_state() {
        let m = ChannelMatcher {
            target: Some("xds:///svc".into()),
            state: ConnectivityState::TransientFailure,
        };
        assert!(m.matches(
            &state("xds:///svc", ConnectivityState::TransientFailure),
            &as_written
        ));
        assert!(!m.matches(&state("xds:///svc", ConnectivityState::Ready), &as_written));
        assert!(!m.matches(
            &state("xds:///other", ConnectivityState::TransientFailure),
            &as_written
        ));
        assert_eq!(
            m.describe(),
            "channel state target=xds:///svc state=TRANSIENT_FAILURE"
        );
    }
}
