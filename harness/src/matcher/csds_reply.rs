//! The `csds_reply` matcher: how the client's CSDS service answered a
//! `csds_request` step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_vocabulary::code_name;

use super::{Check, Compare, Compile, Description, Translate};
use crate::check::Spanned;
use crate::check::{Checker, Problem, code, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsdsReplyMatcherSpec {
    /// Status code name of the answer (OK, INVALID_ARGUMENT, ...).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// Substring of the status message.
    pub contains: Option<String>,
    /// How many ClientConfigs an OK answer carried.
    pub configs: Option<usize>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsdsReplyMatcher {
    pub code: Option<tonic::Code>,
    pub contains: Option<String>,
    pub configs: Option<usize>,
}

impl Compile for CsdsReplyMatcherSpec {
    type Matcher = CsdsReplyMatcher;

    fn compile(&self, _scenario: &Checker) -> Result<CsdsReplyMatcher, Problem> {
        Ok(CsdsReplyMatcher {
            code: opt(self.code.as_ref(), code)?,
            contains: self.contains.clone(),
            configs: self.configs,
        })
    }
}

impl Check for CsdsReplyMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::CsdsReply(reply) = &event.kind else {
            return None;
        };
        fields
            .eq("code", self.code.as_ref(), &reply.code, |c| {
                code_name(*c).to_string()
            })
            .contains("contains", &self.contains, &reply.message, text)
            .eq(
                "configs",
                self.configs.as_ref(),
                &reply.configs,
                usize::to_string,
            );
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("CSDS reply")
            .given("code", self.code.map(code_name))
            .given_debug("contains", self.contains.as_ref())
            .given("configs", self.configs)
            .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.csds_service).then_some("a CSDS service")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::CsdsReply;
    use crate::timeline::Source;
    use std::time::Duration;

    fn reply(code: tonic::Code, configs: usize) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Csds,
            kind: EventKind::CsdsReply(CsdsReply {
                node_matchers: 1,
                code,
                message: "node_matchers not supported".into(),
                configs,
            }),
        }
    }

    #[test]
    fn checks_code_message_and_configs() {
        let m = CsdsReplyMatcher {
            code: Some(tonic::Code::InvalidArgument),
            contains: Some("node_matchers".into()),
            configs: None,
        };
        assert!(m.matches(&reply(tonic::Code::InvalidArgument, 0), &as_written));
        assert!(!m.matches(&reply(tonic::Code::Ok, 2), &as_written));
        let ok = CsdsReplyMatcher {
            code: Some(tonic::Code::Ok),
            contains: None,
            configs: Some(2),
        };
        assert!(ok.matches(&reply(tonic::Code::Ok, 2), &as_written));
        assert!(!ok.matches(&reply(tonic::Code::Ok, 1), &as_written));
        assert_eq!(
            m.describe(),
            "CSDS reply code=INVALID_ARGUMENT contains=\"node_matchers\""
        );
    }
}
