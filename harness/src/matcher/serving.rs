//! The `serving` matcher: an xDS-enabled server's serving status change
//! (gRFC A36).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::ObservedEvent;
use xds_vocabulary::code_name;

use super::{Check, Compare, Compile, Description, Translate, keyword_name};
use crate::check::Spanned;
use crate::check::{Checker, Problem, code, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServingMatcherSpec {
    /// The listening address, `ip:port`.
    pub address: Option<String>,
    /// SERVING or NOT_SERVING.
    #[schemars(schema_with = "serving_states")]
    pub state: Spanned<String>,
    /// Status code of a NOT_SERVING (e.g. FAILED_PRECONDITION).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// Substring of a NOT_SERVING's message.
    pub contains: Option<String>,
}

/// The states' names in scenario files: SERVING is `true`.
pub(crate) const SERVING_STATES: &[(&str, bool)] = &[("SERVING", true), ("NOT_SERVING", false)];

#[derive(Clone, Debug, PartialEq)]
pub struct ServingMatcher {
    pub address: Option<String>,
    /// SERVING (true) or NOT_SERVING.
    pub serving: bool,
    pub code: Option<tonic::Code>,
    pub contains: Option<String>,
}

impl Compile for ServingMatcherSpec {
    type Matcher = ServingMatcher;

    fn compile(&self, _scenario: &Checker) -> Result<ServingMatcher, Problem> {
        let serving = keyword(&self.state, "serving state", SERVING_STATES)?;
        if serving && (self.code.is_some() || self.contains.is_some()) {
            return Err(Problem::at(
                &self.state,
                "serving: code and contains describe a NOT_SERVING, not SERVING",
            ));
        }
        Ok(ServingMatcher {
            address: self.address.clone(),
            serving,
            code: opt(self.code.as_ref(), code)?,
            contains: self.contains.clone(),
        })
    }
}

impl Check for ServingMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::ServingStatus { address, status }) = &event.kind
        else {
            return None;
        };
        let error = status.as_ref().err();
        fields
            .check(
                "address",
                self.address.is_some(),
                || self.address.as_ref().is_some_and(|a| *a == text(address)),
                || self.address.clone().unwrap_or_default(),
                || text(address).into_owned(),
            )
            .eq("state", Some(&self.serving), &status.is_ok(), |serving| {
                keyword_name(SERVING_STATES, serving)
            })
            .eq(
                "code",
                self.code.map(Some).as_ref(),
                &error.map(|e| e.code),
                |c| c.map_or("(none: serving)", code_name).to_string(),
            )
            .contains(
                "contains",
                &self.contains,
                error.map_or("", |e| e.message.as_str()),
                text,
            );
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("serving status")
            .given("address", self.address.as_ref())
            .field(
                "state",
                if self.serving {
                    "SERVING"
                } else {
                    "NOT_SERVING"
                },
            )
            .given("code", self.code.map(code_name))
            .given_debug("contains", self.contains.as_ref())
            .into()
    }
}

fn serving_states(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(SERVING_STATES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_vocabulary::XdsError;

    fn status(status: Result<(), XdsError>) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::ServingStatus {
                address: "[::]:8443".into(),
                status,
            }),
        }
    }

    #[test]
    fn checks_state_and_why_not_serving() {
        let not_serving = ServingMatcher {
            address: Some("[::]:8443".into()),
            serving: false,
            code: Some(tonic::Code::NotFound),
            contains: Some("missing".into()),
        };
        let error = |code| status(Err(XdsError::new(code, "listener missing")));
        assert!(not_serving.matches(&error(tonic::Code::NotFound), &as_written));
        assert!(!not_serving.matches(&error(tonic::Code::Unavailable), &as_written));
        assert!(!not_serving.matches(&status(Ok(())), &as_written));
        assert_eq!(
            not_serving.describe(),
            "serving status address=[::]:8443 state=NOT_SERVING code=NOT_FOUND contains=\"missing\""
        );
    }
}
