//! `node_has`, inside a `request` or `delta_request` matcher: what the
//! request's node says about the client (its identity from the bootstrap,
//! its user agent, the features it claims), field by field.

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::config::core::v3::node::UserAgentVersionType;
use envoy_types::pb::google::protobuf::value::Kind;
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Compare, list};

/// The node fields a request's node must have; those left out are open.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeHasSpec {
    /// node.id.
    pub id: Option<String>,
    /// node.cluster.
    pub cluster: Option<String>,
    /// node.locality.region.
    pub region: Option<String>,
    /// node.locality.zone.
    pub zone: Option<String>,
    /// node.locality.sub_zone.
    pub sub_zone: Option<String>,
    /// node.user_agent_name, e.g. `gRPC C-core`.
    pub user_agent_name: Option<String>,
    /// node.user_agent_version (a substring: versions move).
    pub user_agent_version: Option<String>,
    /// Features the node must claim in client_features (others may be
    /// there too), e.g. `[envoy.lb.does_not_support_overprovisioning,
    /// xds.config.resource-in-sotw]`.
    pub client_features: Option<Vec<String>>,
    /// String values node.metadata must hold under these keys.
    pub metadata: Option<IndexMap<String, String>>,
}

/// The checked form: the same fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeHas {
    pub id: Option<String>,
    pub cluster: Option<String>,
    pub region: Option<String>,
    pub zone: Option<String>,
    pub sub_zone: Option<String>,
    pub user_agent_name: Option<String>,
    pub user_agent_version: Option<String>,
    pub client_features: Vec<String>,
    pub metadata: Vec<(String, String)>,
}

impl From<&NodeHasSpec> for NodeHas {
    fn from(spec: &NodeHasSpec) -> Self {
        NodeHas {
            id: spec.id.clone(),
            cluster: spec.cluster.clone(),
            region: spec.region.clone(),
            zone: spec.zone.clone(),
            sub_zone: spec.sub_zone.clone(),
            user_agent_name: spec.user_agent_name.clone(),
            user_agent_version: spec.user_agent_version.clone(),
            client_features: spec.client_features.clone().unwrap_or_default(),
            metadata: spec
                .metadata
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

const NO_NODE: &str = "(no node)";

impl NodeHas {
    /// Checks `node` (`None`: the request has none) field by field.
    pub(crate) fn compare(&self, node: Option<&Node>, fields: &mut Compare) {
        let Some(node) = node else {
            fields.check(
                "node",
                true,
                || false,
                || "a node".into(),
                || NO_NODE.into(),
            );
            return;
        };
        let locality = node.locality.clone().unwrap_or_default();
        let version = match &node.user_agent_version_type {
            Some(UserAgentVersionType::UserAgentVersion(v)) => v.as_str(),
            _ => "",
        };
        fields
            .eq("node.id", self.id.as_deref(), node.id.as_str(), quoted)
            .eq(
                "node.cluster",
                self.cluster.as_deref(),
                node.cluster.as_str(),
                quoted,
            )
            .eq(
                "node.region",
                self.region.as_deref(),
                locality.region.as_str(),
                quoted,
            )
            .eq(
                "node.zone",
                self.zone.as_deref(),
                locality.zone.as_str(),
                quoted,
            )
            .eq(
                "node.sub_zone",
                self.sub_zone.as_deref(),
                locality.sub_zone.as_str(),
                quoted,
            )
            .eq(
                "node.user_agent_name",
                self.user_agent_name.as_deref(),
                node.user_agent_name.as_str(),
                quoted,
            )
            .check(
                "node.user_agent_version",
                self.user_agent_version.is_some(),
                || {
                    self.user_agent_version
                        .as_deref()
                        .is_some_and(|w| version.contains(w))
                },
                || quoted(self.user_agent_version.as_deref().unwrap_or_default()),
                || quoted(version),
            )
            .check(
                "node.client_features",
                !self.client_features.is_empty(),
                || {
                    self.client_features
                        .iter()
                        .all(|f| node.client_features.contains(f))
                },
                || format!("at least {}", list(&self.client_features)),
                || list(&node.client_features),
            )
            .check(
                "node.metadata",
                !self.metadata.is_empty(),
                || {
                    self.metadata
                        .iter()
                        .all(|(k, v)| metadata(node, k) == Some(v.as_str()))
                },
                || {
                    let pairs: Vec<String> = self
                        .metadata
                        .iter()
                        .map(|(k, v)| format!("{k}={v:?}"))
                        .collect();
                    list(pairs)
                },
                || {
                    let pairs: Vec<String> = self
                        .metadata
                        .iter()
                        .map(|(k, _)| format!("{k}={:?}", metadata(node, k).unwrap_or("(none)")))
                        .collect();
                    list(pairs)
                },
            );
    }

    /// Whether `node` has every field given (no explanation).
    pub(crate) fn matches(&self, node: &Node) -> bool {
        let mut fields = Compare::fast();
        self.compare(Some(node), &mut fields);
        fields.ok
    }

    /// ` node_has={...}` for descriptions: the fields given.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        let mut add = |name: &str, value: &Option<String>| {
            if let Some(v) = value {
                parts.push(format!("{name}={v:?}"));
            }
        };
        add("id", &self.id);
        add("cluster", &self.cluster);
        add("region", &self.region);
        add("zone", &self.zone);
        add("sub_zone", &self.sub_zone);
        add("user_agent_name", &self.user_agent_name);
        add("user_agent_version", &self.user_agent_version);
        if !self.client_features.is_empty() {
            parts.push(format!("client_features={}", list(&self.client_features)));
        }
        for (k, v) in &self.metadata {
            parts.push(format!("metadata.{k}={v:?}"));
        }
        format!("{{{}}}", parts.join(" "))
    }
}

/// A string value of node.metadata.
fn metadata<'n>(node: &'n Node, key: &str) -> Option<&'n str> {
    match node.metadata.as_ref()?.fields.get(key)?.kind.as_ref()? {
        Kind::StringValue(s) => Some(s),
        _ => None,
    }
}

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::config::core::v3::Locality;

    fn node() -> Node {
        Node {
            id: "n1".into(),
            cluster: "c".into(),
            locality: Some(Locality {
                region: "r".into(),
                zone: "z".into(),
                sub_zone: String::new(),
            }),
            user_agent_name: "gRPC C-core".into(),
            user_agent_version_type: Some(UserAgentVersionType::UserAgentVersion("1.85.0".into())),
            client_features: vec![
                "envoy.lb.does_not_support_overprovisioning".into(),
                "xds.config.resource-in-sotw".into(),
            ],
            ..Default::default()
        }
    }

    fn check(has: &NodeHas, node: Option<&Node>) -> Vec<(String, bool)> {
        let mut fields = Compare::explaining();
        has.compare(node, &mut fields);
        fields
            .fields
            .iter()
            .map(|f| (f.name.to_string(), f.ok))
            .collect()
    }

    #[test]
    fn checks_each_field_given() {
        let has = NodeHas {
            id: Some("n1".into()),
            zone: Some("z".into()),
            user_agent_version: Some("1.85".into()),
            client_features: vec!["xds.config.resource-in-sotw".into()],
            ..Default::default()
        };
        assert_eq!(
            check(&has, Some(&node())),
            [
                ("node.id".to_string(), true),
                ("node.zone".to_string(), true),
                ("node.user_agent_version".to_string(), true),
                ("node.client_features".to_string(), true),
            ]
        );
        let wrong = NodeHas {
            id: Some("n2".into()),
            client_features: vec!["envoy.lrs.supports_send_all_clusters".into()],
            ..has
        };
        let checked = check(&wrong, Some(&node()));
        assert!(checked.contains(&("node.id".to_string(), false)));
        assert!(checked.contains(&("node.client_features".to_string(), false)));
        // No node at all: one failed field says so.
        assert_eq!(check(&wrong, None), [("node".to_string(), false)]);
    }
}
