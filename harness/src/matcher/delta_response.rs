//! The `delta_response` matcher: a DeltaDiscoveryResponse a server sent, by
//! what only a delta response says (each resource's version, the removed
//! names); the fields both protocols share are the `response` matcher's,
//! which matches delta responses too.

use std::collections::BTreeMap;

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
pub struct DeltaResponseMatcherSpec {
    /// The server that sent it (default: any).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
    /// Exact set of the resources' names (order ignored); `[]` = none.
    pub resources: Option<Vec<String>>,
    /// These resources have these versions (others may be there too).
    pub versions: Option<BTreeMap<String, String>>,
    /// Exact set of removed_resources (order ignored); `[]` = none.
    pub removed: Option<Vec<String>>,
    /// system_version_info.
    pub system_version: Option<String>,
    /// The response's nonce.
    pub nonce: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeltaResponseMatcher {
    pub server: Option<String>,
    pub resource_type: Option<ResourceType>,
    pub resources: Option<Vec<String>>,
    pub versions: Option<BTreeMap<String, String>>,
    pub removed: Option<Vec<String>>,
    pub system_version: Option<String>,
    pub nonce: Option<String>,
}

impl Compile for DeltaResponseMatcherSpec {
    type Matcher = DeltaResponseMatcher;

    fn compile(&self, scenario: &Checker) -> Result<DeltaResponseMatcher, Problem> {
        Ok(DeltaResponseMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            resource_type: opt(self.resource_type.as_ref(), parse_resource_type)?,
            resources: self.resources.clone(),
            versions: self.versions.clone(),
            removed: self.removed.clone(),
            system_version: self.system_version.clone(),
            nonce: self.nonce.clone(),
        })
    }
}

impl Check for DeltaResponseMatcher {
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
        let delta = response.delta.as_ref()?;
        let sent_at = |name: &str| {
            response
                .resource_names
                .iter()
                .zip(&delta.resources)
                .find(|(n, _)| text(n) == name)
                .map(|(_, r)| r.version.as_str())
        };
        fields
            .server_and_type(
                self.server.as_deref(),
                source,
                self.resource_type,
                response.type_url.as_str(),
            )
            .set(
                "resources",
                &self.resources,
                response.resource_names.iter().map(String::as_str),
                text,
            )
            .set(
                "removed",
                &self.removed,
                delta.removed_resources.iter().map(String::as_str),
                text,
            )
            .check(
                "versions",
                self.versions.is_some(),
                || {
                    self.versions
                        .iter()
                        .flatten()
                        .all(|(name, version)| sent_at(name) == Some(version.as_str()))
                },
                || format!("{:?}", self.versions.clone().unwrap_or_default()),
                || {
                    let sent: BTreeMap<String, &str> = response
                        .resource_names
                        .iter()
                        .zip(&delta.resources)
                        .map(|(n, r)| (text(n).into_owned(), r.version.as_str()))
                        .collect();
                    format!("{sent:?}")
                },
            )
            .eq(
                "system_version",
                self.system_version.as_deref(),
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
        let list = |v: &Vec<String>| format!("[{}]", v.join(","));
        Description::new("DeltaDiscoveryResponse")
            .given("server", self.server.as_ref())
            .given("type", self.resource_type.map(ResourceType::short_name))
            .given("resources", self.resources.as_ref().map(list))
            .given_debug("versions", self.versions.as_ref())
            .given("removed", self.removed.as_ref().map(list))
            .given_debug("system_version", self.system_version.as_ref())
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
    use xds_fake_server::event::{RecordedDeltaResource, RecordedDeltaResponse, RecordedResponse};

    fn sent(resources: &[(&str, &str)], removed: &[&str]) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::ResponseSent {
                stream: 1,
                response: RecordedResponse {
                    encoded_len: 0,
                    type_url: ResourceType::Cluster.type_url().into(),
                    version_info: "9".into(),
                    nonce: "n".into(),
                    resource_names: resources.iter().map(|(n, _)| n.to_string()).collect(),
                    delta: Some(RecordedDeltaResponse {
                        resources: resources
                            .iter()
                            .map(|(_, v)| RecordedDeltaResource {
                                version: v.to_string(),
                                ttl: None,
                                body: true,
                            })
                            .collect(),
                        removed_resources: removed.iter().map(|s| s.to_string()).collect(),
                    }),
                    resource_errors: Vec::new(),
                    bodies: Vec::new(),
                },
            })),
        }
    }

    #[test]
    fn checks_resources_versions_and_removals() {
        let event = sent(&[("c1", "2"), ("c2", "1")], &["c3"]);
        let m = |f: fn(&mut DeltaResponseMatcher)| {
            let mut m = DeltaResponseMatcher::default();
            f(&mut m);
            m
        };
        assert!(
            m(|m| m.resources = Some(vec!["c2".into(), "c1".into()])).matches(&event, &as_written)
        );
        assert!(!m(|m| m.resources = Some(vec!["c1".into()])).matches(&event, &as_written));
        assert!(
            m(|m| m.versions = Some([("c1".into(), "2".into())].into()))
                .matches(&event, &as_written)
        );
        assert!(
            !m(|m| m.versions = Some([("c1".into(), "1".into())].into()))
                .matches(&event, &as_written)
        );
        assert!(m(|m| m.removed = Some(vec!["c3".into()])).matches(&event, &as_written));
        assert!(!m(|m| m.removed = Some(vec![])).matches(&event, &as_written));
        assert!(m(|m| m.system_version = Some("9".into())).matches(&event, &as_written));
        assert_eq!(
            m(|m| m.removed = Some(vec!["c3".into()])).describe(),
            "DeltaDiscoveryResponse removed=[c3]"
        );
    }
}
