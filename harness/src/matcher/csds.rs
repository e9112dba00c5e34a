//! The `csds` matcher: what the client's CSDS view shows. CSDS is a state,
//! so this matcher is checked against the state (at each checkpoint of the
//! runner), not against timeline events.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_vocabulary::ResourceType;

use envoy_types::pb::envoy::config::core::v3::Node;

use super::node::{NodeHas, NodeHasSpec};
use super::{Check, Compare, Compile, Description, Translate};
use crate::check::Spanned;
use crate::check::{Checker, Problem, keyword, opt, parse_resource_type};
use crate::timeline::{CsdsEntry, CsdsStatus, TimelineEvent, csds_status_name};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsdsMatcherSpec {
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
    /// Resource name.
    pub name: Option<String>,
    /// REQUESTED, ACKED, NACKED, DOES_NOT_EXIST, RECEIVED_ERROR, TIMEOUT or ABSENT.
    #[schemars(schema_with = "csds_statuses")]
    #[serde(default)]
    pub status: Option<Spanned<String>>,
    /// The entry's version_info.
    pub version: Option<String>,
    /// Whether the entry has an error_state (`false`: a NACK's error was
    /// cleared by the update that followed it).
    pub error: Option<bool>,
    /// Substring of the entry's error_state details.
    pub error_contains: Option<String>,
    /// error_state.version_info: the version of the response that failed
    /// (`""`: the error came from no response, e.g. the timer).
    pub error_version: Option<String>,
    /// Whether error_state.last_update_attempt is set (C-core sets it when
    /// a response caused the error).
    pub error_time: Option<bool>,
    /// Whether the entry's last_updated is set (a resource was accepted).
    pub last_updated: Option<bool>,
    /// Whether the entry carries its resource (xds_config).
    pub config: Option<bool>,
    /// The ClientConfig's node has these fields (of the `client_scope`
    /// given, or of any); alone, it checks only the node.
    pub node_has: Option<NodeHasSpec>,
    /// The ClientConfig's `client_scope` (gRFC A71): the channel target,
    /// e.g. `xds:///svc` (`xds:/svc` as C-core spells it matches too), or
    /// `#server`; `""` for the reference client's own watches. Any scope
    /// when left out.
    pub client_scope: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsdsMatcher {
    pub resource_type: Option<ResourceType>,
    pub name: Option<String>,
    pub status: Option<CsdsStatus>,
    pub version: Option<String>,
    pub error: Option<bool>,
    pub error_contains: Option<String>,
    pub error_version: Option<String>,
    pub error_time: Option<bool>,
    pub last_updated: Option<bool>,
    pub config: Option<bool>,
    pub client_scope: Option<String>,
    pub node_has: Option<NodeHas>,
}

impl Compile for CsdsMatcherSpec {
    type Matcher = CsdsMatcher;

    fn compile(&self, _scenario: &Checker) -> Result<CsdsMatcher, Problem> {
        Ok(CsdsMatcher {
            resource_type: opt(self.resource_type.as_ref(), parse_resource_type)?,
            name: self.name.clone(),
            status: opt(self.status.as_ref(), |s| {
                keyword(
                    s,
                    "csds status",
                    &CsdsStatus::ALL.map(|s| (csds_status_name(s), s)),
                )
            })?,
            version: self.version.clone(),
            error: self.error,
            error_contains: self.error_contains.clone(),
            error_version: self.error_version.clone(),
            error_time: self.error_time,
            last_updated: self.last_updated,
            config: self.config,
            client_scope: self.client_scope.clone(),
            node_has: self.node_has.as_ref().map(NodeHas::from),
        })
    }
}

impl CsdsMatcher {
    /// Whether it says anything of resources (it may check only the node).
    fn checks_entries(&self) -> bool {
        self.resource_type.is_some()
            || self.name.is_some()
            || self.status.is_some()
            || self.version.is_some()
            || self.error.is_some()
            || self.error_contains.is_some()
            || self.error_version.is_some()
            || self.error_time.is_some()
            || self.last_updated.is_some()
            || self.config.is_some()
            || self.node_has.is_none()
    }

    /// Whether the ClientConfigs' nodes — `client_scope -> node` — show
    /// what `node_has` describes (true when it says nothing of them).
    pub fn nodes_match(&self, nodes: &BTreeMap<String, Node>) -> bool {
        let Some(has) = &self.node_has else {
            return true;
        };
        nodes.iter().any(|(scope, node)| {
            self.client_scope
                .as_ref()
                .is_none_or(|s| canonical_scope(s) == canonical_scope(scope))
                && has.matches(node)
        })
    }

    /// Whether the client's CSDS view — `(client_scope, type_url, name) ->
    /// entry` — shows what this matcher describes.
    pub fn state_matches(&self, state: &BTreeMap<(String, String, String), CsdsEntry>) -> bool {
        if !self.checks_entries() {
            return true;
        }
        let selected = state.iter().filter(|((scope, type_url, name), _)| {
            self.resource_type.is_none_or(|t| t.type_url() == type_url)
                && self.name.as_ref().is_none_or(|n| n == name)
                && self
                    .client_scope
                    .as_ref()
                    .is_none_or(|s| canonical_scope(s) == canonical_scope(scope))
        });
        if self.status == Some(CsdsStatus::Absent) {
            return selected.count() == 0;
        }
        selected.into_iter().any(|(_, e)| {
            self.status.is_none_or(|s| s == e.status)
                && self.version.as_ref().is_none_or(|v| *v == e.version)
                && self.error.is_none_or(|has| has == e.error.is_some())
                && self
                    .error_contains
                    .as_ref()
                    .is_none_or(|w| e.error.as_deref().is_some_and(|d| d.contains(w.as_str())))
                && self
                    .error_version
                    .as_ref()
                    .is_none_or(|v| e.error.is_some() && *v == e.detail.error_version)
                && self.error_time.is_none_or(|t| t == e.detail.error_time)
                && self.last_updated.is_none_or(|t| t == e.detail.last_updated)
                && self.config.is_none_or(|t| t == e.detail.config)
        })
    }
}

impl CsdsMatcher {
    /// How this check projects onto gRFC A78's resource gauge, which counts
    /// a client's resources per type and cache state without names
    /// (`projection::csds_counts`): a type, a name and a status a cache
    /// state stands for. Anything else it says (a version, an error, a
    /// node, a scope) the gauge cannot show, and it does not project.
    pub fn counts_projection(&self) -> Result<CountsCheck, &'static str> {
        const WHY: &str =
            "a check of more than a type, a name and a status (they show nothing more)";
        let Some((resource_type, name, status, None)) = self.identity_only() else {
            return Err(WHY);
        };
        // A78's cache states: gRFC A88's received-error and timeout have
        // none of their own.
        if matches!(status, CsdsStatus::ReceivedError | CsdsStatus::Timeout) {
            return Err("a check of RECEIVED_ERROR or TIMEOUT (they have no such state)");
        }
        Ok(CountsCheck {
            resource_type,
            name: name.to_string(),
            status,
        })
    }

    /// Its type, name, status and version, when it says nothing else (no
    /// error, timestamp, config, scope or node): what a stand-in for CSDS
    /// can show at most.
    pub fn identity_only(&self) -> Option<(ResourceType, &str, CsdsStatus, Option<&str>)> {
        let CsdsMatcher {
            resource_type: Some(resource_type),
            name: Some(name),
            status: Some(status),
            version,
            error: None,
            error_contains: None,
            error_version: None,
            error_time: None,
            last_updated: None,
            config: None,
            client_scope: None,
            node_has: None,
        } = self
        else {
            return None;
        };
        Some((*resource_type, name, *status, version.as_deref()))
    }
}

/// A `csds` check as gRFC A78's resource gauge can answer it: resource
/// `name` of `resource_type` is in `status` (ABSENT: not held).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountsCheck {
    pub resource_type: ResourceType,
    pub name: String,
    pub status: CsdsStatus,
}

/// A channel target with an empty URI authority has two spellings:
/// `xds:///svc` as written, `xds:/svc` as C-core prints a parsed URI.
fn canonical_scope(scope: &str) -> Cow<'_, str> {
    match scope.split_once(":///") {
        Some((scheme, rest)) if !scheme.contains('/') => format!("{scheme}:/{rest}").into(),
        _ => scope.into(),
    }
}

impl Check for CsdsMatcher {
    /// CSDS is a state, not an event: the runner checks it against the
    /// client's CSDS view (`CsdsState::shows`), never against events.
    fn compare(
        &self,
        _event: &TimelineEvent,
        _text: Translate<'_>,
        _fields: &mut Compare,
    ) -> Option<()> {
        None
    }

    fn describe(&self) -> String {
        Description::new("CSDS change")
            .given_debug("client_scope", self.client_scope.as_ref())
            .given("type", self.resource_type.map(ResourceType::short_name))
            .given("name", self.name.as_ref())
            .given("status", self.status.map(csds_status_name))
            .given_debug("version", self.version.as_ref())
            .given("error", self.error)
            .given_debug("error_contains", self.error_contains.as_ref())
            .given_debug("error_version", self.error_version.as_ref())
            .given("error_time", self.error_time)
            .given("last_updated", self.last_updated)
            .given("config", self.config)
            .given("node_has", self.node_has.as_ref().map(NodeHas::describe))
            .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        // With A78's resource counts or an admin API instead, whether this
        // check projects is the scenario's to say (`projection::csds_counts`,
        // `projection::csds_admin`).
        (!caps.csds && !caps.resource_counts && !caps.admin).then_some("CSDS")
    }
}

fn csds_statuses(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::words(
        crate::timeline::CsdsStatus::ALL
            .iter()
            .map(|s| crate::timeline::csds_status_name(*s)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_false_needs_an_entry_without_an_error_state() {
        let cds = ResourceType::Cluster.type_url().to_string();
        let state = |error: Option<&str>| {
            BTreeMap::from([(
                (String::new(), cds.clone(), "c1".to_string()),
                CsdsEntry {
                    status: CsdsStatus::Acked,
                    version: "3".into(),
                    error: error.map(str::to_string),
                    detail: Default::default(),
                },
            )])
        };
        let m = |error| CsdsMatcher {
            name: Some("c1".into()),
            status: Some(CsdsStatus::Acked),
            error: Some(error),
            ..Default::default()
        };
        assert!(m(false).state_matches(&state(None)));
        assert!(!m(false).state_matches(&state(Some("invalid resource: lb_policy"))));
        assert!(m(true).state_matches(&state(Some("invalid resource: lb_policy"))));
        assert!(!m(true).state_matches(&state(None)));
    }

    #[test]
    fn selects_by_client_scope_in_either_spelling() {
        let entry = |status| CsdsEntry {
            status,
            version: "1".into(),
            error: None,
            detail: Default::default(),
        };
        let cds = ResourceType::Cluster.type_url().to_string();
        let state = BTreeMap::from([
            (
                ("xds:/a".into(), cds.clone(), "c1".into()),
                entry(CsdsStatus::Acked),
            ),
            (
                ("xds:///b".into(), cds, "c1".into()),
                entry(CsdsStatus::Requested),
            ),
        ]);
        let m = |scope: Option<&str>, status| CsdsMatcher {
            resource_type: Some(ResourceType::Cluster),
            name: Some("c1".into()),
            status: Some(status),
            version: None,
            error: None,
            error_contains: None,
            error_version: None,
            error_time: None,
            last_updated: None,
            config: None,
            client_scope: scope.map(str::to_string),
            node_has: None,
        };
        assert!(m(Some("xds:///a"), CsdsStatus::Acked).state_matches(&state));
        assert!(m(Some("xds:/b"), CsdsStatus::Requested).state_matches(&state));
        assert!(!m(Some("xds:///a"), CsdsStatus::Requested).state_matches(&state));
        assert!(!m(Some("#server"), CsdsStatus::Acked).state_matches(&state));
        assert!(m(Some("#server"), CsdsStatus::Absent).state_matches(&state));
        assert!(m(None, CsdsStatus::Requested).state_matches(&state));
        assert_eq!(
            canonical_scope("xds://authority/svc"),
            "xds://authority/svc"
        );
        assert_eq!(canonical_scope("#server"), "#server");
        assert_eq!(
            m(Some("#server"), CsdsStatus::Absent).describe(),
            "CSDS change client_scope=\"#server\" type=CDS name=c1 status=ABSENT"
        );
    }
}
