//! The `admin` matcher: a resource as a proxy's admin API showed it
//! (Envoy's config dump), the analogue of `csds` for a client without
//! CSDS. Its counters are `admin_stat`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::{AdminObservation, AdminResourceState, Capabilities, ObservedEvent};
use xds_vocabulary::ResourceType;

use super::{Check, Compare, Compile, Description, Translate, quoted};
use crate::check::Spanned;
use crate::check::{Checker, Problem, keyword, opt, parse_resource_type};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminMatcherSpec {
    /// The resource's type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    pub resource_type: Spanned<String>,
    /// Resource name as the proxy shows it.
    pub name: Option<String>,
    /// active, warming, rejected, draining or removed.
    #[schemars(schema_with = "admin_states")]
    #[serde(default)]
    pub state: Option<Spanned<String>>,
    /// The version the dump shows (Envoy shows none for endpoints).
    pub version: Option<String>,
    /// A ClusterLoadAssignment's endpoints, exactly (order ignored):
    /// `backend:b1` or `ip:port`; `[]` for an assignment without any.
    pub endpoints: Option<Vec<Spanned<String>>>,
    /// Substring of what the dump says beyond that: a rejected Listener's
    /// details, a ClusterLoadAssignment's endpoint list.
    pub detail_contains: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AdminMatcher {
    pub resource_type: ResourceType,
    pub name: Option<String>,
    pub state: Option<AdminResourceState>,
    pub version: Option<String>,
    /// The endpoint list as the observation renders it: `[a,b]`, sorted.
    pub endpoints: Option<String>,
    pub detail_contains: Option<String>,
}

pub(crate) const STATES: &[(&str, AdminResourceState)] = &[
    ("active", AdminResourceState::Active),
    ("warming", AdminResourceState::Warming),
    ("rejected", AdminResourceState::Rejected),
    ("draining", AdminResourceState::Draining),
    ("removed", AdminResourceState::Removed),
];

impl Compile for AdminMatcherSpec {
    type Matcher = AdminMatcher;

    fn compile(&self, scenario: &Checker) -> Result<AdminMatcher, Problem> {
        let endpoints = match &self.endpoints {
            None => None,
            Some(list) => {
                let mut addresses = list
                    .iter()
                    .map(|e| scenario.endpoint_address(e))
                    .collect::<Result<Vec<_>, _>>()?;
                addresses.sort();
                Some(format!("[{}]", addresses.join(",")))
            }
        };
        Ok(AdminMatcher {
            endpoints,
            resource_type: parse_resource_type(&self.resource_type)?,
            name: self.name.clone(),
            state: opt(self.state.as_ref(), |s| keyword(s, "admin state", STATES))?,
            version: self.version.clone(),
            detail_contains: self.detail_contains.clone(),
        })
    }
}

impl Check for AdminMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::Admin(AdminObservation::Resource {
            resource_type,
            name,
            version,
            state,
            detail,
        })) = &event.kind
        else {
            return None;
        };
        fields
            .eq("type", Some(&self.resource_type), resource_type, |t| {
                t.short_name().to_string()
            })
            .check(
                "name",
                self.name.is_some(),
                || self.name.as_ref().is_some_and(|n| *n == text(name)),
                || self.name.clone().unwrap_or_default(),
                || text(name).into_owned(),
            )
            .eq("state", self.state.as_ref(), state, |s| {
                s.name().to_string()
            })
            .eq(
                "version",
                self.version.as_ref().map(Some).as_ref(),
                &version.as_ref(),
                |v| v.map_or("(none)".into(), |v| quoted(v)),
            )
            .check(
                "endpoints",
                self.endpoints.is_some(),
                || self.endpoints.as_ref().is_some_and(|e| *e == text(detail)),
                || self.endpoints.clone().unwrap_or_default(),
                || text(detail).into_owned(),
            )
            .contains("detail_contains", &self.detail_contains, detail, text);
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("admin resource")
            .field("type", self.resource_type.short_name())
            .given("name", self.name.as_ref())
            .given("state", self.state.map(AdminResourceState::name))
            .given_debug("version", self.version.as_ref())
            .given("endpoints", self.endpoints.as_ref())
            .given_debug("detail_contains", self.detail_contains.as_ref())
            .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        missing_admin(caps)
    }
}

/// Both admin matchers need the client to have an admin API.
pub(super) fn missing_admin(caps: &Capabilities) -> Option<&'static str> {
    (!caps.admin).then_some("an admin API (Envoy's config dump and stats)")
}

fn admin_states(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(STATES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;

    #[test]
    fn resources_match_on_what_is_given() {
        let seen = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Admin(AdminObservation::Resource {
                resource_type: ResourceType::ClusterLoadAssignment,
                name: "svc-endpoints".into(),
                version: None,
                state: AdminResourceState::Active,
                detail: "[127.0.0.1:1]".into(),
            })),
        };
        let m = |state, version: Option<&str>, detail: Option<&str>| AdminMatcher {
            resource_type: ResourceType::ClusterLoadAssignment,
            name: Some("svc-endpoints".into()),
            state,
            version: version.map(str::to_string),
            endpoints: None,
            detail_contains: detail.map(str::to_string),
        };
        let active = Some(AdminResourceState::Active);
        assert!(m(None, None, None).matches(&seen, &as_written));
        assert!(m(active, None, Some("127.0.0.1:1")).matches(&seen, &as_written));
        assert!(!m(Some(AdminResourceState::Warming), None, None).matches(&seen, &as_written));
        assert!(!m(None, Some("1"), None).matches(&seen, &as_written));
        assert!(!m(None, None, Some("10.0.0.1")).matches(&seen, &as_written));
        let mut exact = m(None, None, None);
        exact.endpoints = Some("[127.0.0.1:1]".into());
        assert!(exact.matches(&seen, &as_written));
        exact.endpoints = Some("[]".into());
        assert!(!exact.matches(&seen, &as_written));
        let mut other_type = m(None, None, None);
        other_type.resource_type = ResourceType::Cluster;
        assert!(!other_type.matches(&seen, &as_written));
        assert_eq!(
            m(active, None, None).describe(),
            "admin resource type=EDS name=svc-endpoints state=active"
        );
        assert_eq!(
            m(None, None, None).missing_capability(&Capabilities::default()),
            Some("an admin API (Envoy's config dump and stats)")
        );
    }
}
