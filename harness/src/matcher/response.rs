//! The `response` matcher: a DiscoveryResponse a server sent.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::ResourceType;

use super::{Check, Compare, Compile, Description, Translate, quoted};
use crate::check::Spanned;
use crate::check::{Checker, Problem, opt, parse_resource_type};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseMatcherSpec {
    /// The server that sent it (default: any).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
    /// Exact set of the resources' names (order ignored).
    pub names: Option<Vec<String>>,
    /// version_info.
    pub version: Option<String>,
    /// The response's nonce.
    pub nonce: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResponseMatcher {
    pub server: Option<String>,
    pub resource_type: Option<ResourceType>,
    pub names: Option<Vec<String>>,
    pub version: Option<String>,
    pub nonce: Option<String>,
}

impl Compile for ResponseMatcherSpec {
    type Matcher = ResponseMatcher;

    fn compile(&self, scenario: &Checker) -> Result<ResponseMatcher, Problem> {
        Ok(ResponseMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            resource_type: opt(self.resource_type.as_ref(), parse_resource_type)?,
            names: self.names.clone(),
            version: self.version.clone(),
            nonce: self.nonce.clone(),
        })
    }
}

impl Check for ResponseMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        // Scaffolding (`Source::Scaffold`) is never the scenario's.
        let (Some(source), EventKind::Server(e)) = (event.source.server(), &event.kind) else {
            return None;
        };
        let ServerEvent::ResponseSent { response, .. } = &**e else {
            return None;
        };
        fields
            .server_and_type(
                self.server.as_deref(),
                source,
                self.resource_type,
                response.type_url.as_str(),
            )
            .set(
                "names",
                &self.names,
                response.resource_names.iter().map(String::as_str),
                text,
            )
            .eq(
                "version",
                self.version.as_deref(),
                response.version_info.as_str(),
                quoted,
            )
            .eq(
                "nonce",
                self.nonce.as_deref(),
                response.nonce.as_str(),
                quoted,
            );
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("DiscoveryResponse")
            .given("server", self.server.as_ref())
            .given("type", self.resource_type.map(ResourceType::short_name))
            .given(
                "names",
                self.names.as_ref().map(|v| format!("[{}]", v.join(","))),
            )
            .given_debug("version", self.version.as_ref())
            .given_debug("nonce", self.nonce.as_ref())
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_fake_server::event::RecordedResponse;

    fn sent(version: &str) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::ResponseSent {
                stream: 1,
                response: RecordedResponse {
                    encoded_len: 0,
                    delta: None,
                    resource_errors: Vec::new(),
                    bodies: Vec::new(),
                    type_url: ResourceType::Cluster.type_url().into(),
                    version_info: version.into(),
                    nonce: "1".into(),
                    resource_names: vec!["c2".into(), "c1".into()],
                },
            })),
        }
    }

    #[test]
    fn checks_server_type_names_and_version() {
        let m = ResponseMatcher {
            server: Some("primary".into()),
            resource_type: Some(ResourceType::Cluster),
            names: Some(vec!["c1".into(), "c2".into()]),
            version: Some("2".into()),
            nonce: None,
        };
        assert!(m.matches(&sent("2"), &as_written));
        assert!(!m.matches(&sent("1"), &as_written));
        assert_eq!(
            m.describe(),
            "DiscoveryResponse server=primary type=CDS names=[c1,c2] version=\"2\""
        );
    }
}
