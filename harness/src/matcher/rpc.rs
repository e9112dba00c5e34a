//! The `rpc` matcher: the result of an RPC of an `rpc` step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_vocabulary::code_name;

use super::{Check, Compare, Compile, Description, Translate};
use crate::check::Spanned;
use crate::check::{Checker, Problem, Reachable, code, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RpcMatcherSpec {
    /// The target the RPC was sent on (default: any).
    pub target: Option<String>,
    /// Status code name (OK, UNAVAILABLE, DEADLINE_EXCEEDED, ...).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// The backend that served it.
    pub backend: Option<Spanned<String>>,
    /// Substring of the status message.
    pub contains: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RpcMatcher {
    pub target: Option<String>,
    pub code: Option<tonic::Code>,
    pub backend: Option<String>,
    pub contains: Option<String>,
}

impl Compile for RpcMatcherSpec {
    type Matcher = RpcMatcher;

    fn compile(&self, scenario: &Checker) -> Result<RpcMatcher, Problem> {
        let backend = opt(self.backend.as_ref(), |b| scenario.known_backend(b))?;
        Ok(RpcMatcher {
            target: self.target.clone(),
            code: opt(self.code.as_ref(), code)?,
            backend,
            contains: self.contains.clone(),
        })
    }
}

impl Check for RpcMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Rpc {
            target, outcome, ..
        } = &event.kind
        else {
            return None;
        };
        fields
            .eq(
                "target",
                self.target.as_deref(),
                target.as_str(),
                str::to_string,
            )
            .eq("code", self.code.as_ref(), &outcome.code, |c| {
                code_name(*c).to_string()
            })
            .eq(
                "backend",
                self.backend.as_ref().map(Some).as_ref(),
                &outcome.backend.as_ref(),
                |b| b.map_or("(none)".into(), |b| b.to_string()),
            )
            .contains("contains", &self.contains, &outcome.message, text);
        Some(())
    }

    fn never_met(&self, reach: &Reachable) -> Option<String> {
        let target = self.target.as_ref()?;
        (!reach.is_called(target)).then(|| format!("no rpc step before it calls `{target}`"))
    }

    fn describe(&self) -> String {
        Description::new("RPC result")
            .given("target", self.target.as_ref())
            .given("code", self.code.map(code_name))
            .given("backend", self.backend.as_ref())
            .given_debug("contains", self.contains.as_ref())
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_client_under_test::RpcOutcome;

    fn rpc(code: tonic::Code, backend: Option<&str>) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Rpc {
                target: "xds:///svc".into(),
                outcome: RpcOutcome {
                    code,
                    message: String::new(),
                    backend: backend.map(String::from),
                },
                settling: false,
            },
        }
    }

    #[test]
    fn checks_code_and_backend() {
        let m = RpcMatcher {
            target: Some("xds:///svc".into()),
            code: Some(tonic::Code::Ok),
            backend: Some("b1".into()),
            contains: None,
        };
        assert!(m.matches(&rpc(tonic::Code::Ok, Some("b1")), &as_written));
        assert!(!m.matches(&rpc(tonic::Code::Ok, Some("b2")), &as_written));
        assert!(!m.matches(&rpc(tonic::Code::Unavailable, None), &as_written));
        assert_eq!(
            m.describe(),
            "RPC result target=xds:///svc code=OK backend=b1"
        );
    }
}
