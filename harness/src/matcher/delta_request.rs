//! The `delta_request` matcher: a DeltaDiscoveryRequest a server received,
//! by what only a delta request says (the subscription's changes and the
//! versions held); the fields both protocols share are the `request`
//! matcher's, which matches delta requests too.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_fake_server::event::{RecordedRequest, ServerEvent};
use xds_vocabulary::ResourceType;

use super::request::{RequestMatcher, RequestMatcherSpec};
use super::{Check, Compare, Compile, Description, Translate};
use crate::check::{Checker, Problem};
use crate::check::{OneOrMany, Spanned};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeltaRequestMatcherSpec {
    /// The server that received it (default: any).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
    /// Exact set of resource_names_subscribe (order ignored); `[]` = none.
    pub subscribe: Option<Vec<String>>,
    /// Exact set of resource_names_unsubscribe (order ignored); `[]` = none.
    pub unsubscribe: Option<Vec<String>>,
    /// Exactly these initial_resource_versions (name -> version); `{}` =
    /// none.
    pub initial: Option<BTreeMap<String, String>>,
    /// response_nonce: the nonce of the response it answers (`""` for none).
    pub nonce: Option<String>,
    /// initial, ack, nack or unknown_nonce.
    pub kind: Option<Spanned<String>>,
    /// error_detail.code, by name (e.g. INVALID_ARGUMENT).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub error_code: Option<Spanned<String>>,
    /// Substring(s) that error_detail.message must all contain.
    pub error_contains: Option<OneOrMany>,
    /// The request carries a node.
    pub node: Option<bool>,
    /// The request's node has these fields.
    pub node_has: Option<super::node::NodeHasSpec>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeltaRequestMatcher {
    /// What both protocols' requests have (`names` and `version` unused).
    pub common: RequestMatcher,
    pub subscribe: Option<Vec<String>>,
    pub unsubscribe: Option<Vec<String>>,
    pub initial: Option<BTreeMap<String, String>>,
}

impl Compile for DeltaRequestMatcherSpec {
    type Matcher = DeltaRequestMatcher;

    fn compile(&self, scenario: &Checker) -> Result<DeltaRequestMatcher, Problem> {
        // The fields both protocols' requests have compile as `request`'s.
        let common = RequestMatcherSpec {
            server: self.server.clone(),
            resource_type: self.resource_type.clone(),
            names: None,
            version: None,
            nonce: self.nonce.clone(),
            kind: self.kind.clone(),
            error_code: self.error_code.clone(),
            error_contains: self.error_contains.clone(),
            node: self.node,
            node_has: self.node_has.clone(),
        };
        Ok(DeltaRequestMatcher {
            common: common.compile(scenario)?,
            subscribe: self.subscribe.clone(),
            unsubscribe: self.unsubscribe.clone(),
            initial: self.initial.clone(),
        })
    }
}

impl Check for DeltaRequestMatcher {
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
        let ServerEvent::RequestReceived { request, .. } = &**e else {
            return None;
        };
        self.compare_request(source, request, text, fields)
    }

    fn describe(&self) -> String {
        let common = self.common.describe();
        let fields = common.strip_prefix("DiscoveryRequest").unwrap_or(&common);
        let list = |v: &Vec<String>| format!("[{}]", v.join(","));
        let mut head = Description::new("DeltaDiscoveryRequest")
            .given(
                "type",
                self.common.resource_type.map(ResourceType::short_name),
            )
            .given("subscribe", self.subscribe.as_ref().map(list))
            .given("unsubscribe", self.unsubscribe.as_ref().map(list))
            .given_debug("initial", self.initial.as_ref());
        // The shared fields, without the type said twice.
        for field in fields
            .split(' ')
            .filter(|f| !f.is_empty() && !f.starts_with("type="))
        {
            let (name, value) = field.split_once('=').unwrap_or((field, ""));
            head = head.field(name, value);
        }
        head.into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        // Not `initial`: a wildcard subscriber claims what it holds by name.
        let names: Vec<String> = [&self.subscribe, &self.unsubscribe, &self.common.names]
            .into_iter()
            .flatten()
            .flatten()
            .cloned()
            .collect();
        super::request::named_lds_cds_needed(self.common.resource_type, Some(&names), caps)
    }
}

impl DeltaRequestMatcher {
    /// Checks a delta request `source` received or sent (`kds_request`
    /// builds on it); `None` for a SotW request.
    pub(super) fn compare_request(
        &self,
        source: &str,
        request: &RecordedRequest,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let delta = request.delta.as_ref()?;
        fields
            .set(
                "subscribe",
                &self.subscribe,
                delta.subscribe.iter().map(String::as_str),
                text,
            )
            .set(
                "unsubscribe",
                &self.unsubscribe,
                delta.unsubscribe.iter().map(String::as_str),
                text,
            )
            .check(
                "initial",
                self.initial.is_some(),
                || {
                    self.initial.as_ref().is_some_and(|want| {
                        want.len() == delta.initial_resource_versions.len()
                            && delta
                                .initial_resource_versions
                                .iter()
                                .all(|(name, version)| {
                                    want.get(text(name).as_ref()) == Some(version)
                                })
                    })
                },
                || format!("{:?}", self.initial.clone().unwrap_or_default()),
                || {
                    let sent: BTreeMap<String, &String> = delta
                        .initial_resource_versions
                        .iter()
                        .map(|(n, v)| (text(n).into_owned(), v))
                        .collect();
                    format!("{sent:?}")
                },
            );
        self.common.compare_request(source, request, text, fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_fake_server::event::{RecordedDeltaRequest, RecordedRequest};
    use xds_vocabulary::RequestKind;

    fn delta_request(subscribe: &[&str], initial: &[(&str, &str)]) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::RequestReceived {
                stream: 1,
                request: RecordedRequest {
                    type_url: ResourceType::Cluster.type_url().into(),
                    resource_names: vec![],
                    version_info: String::new(),
                    response_nonce: String::new(),
                    error_detail: None,
                    node: None,
                    kind: RequestKind::Initial,
                    delta: Some(RecordedDeltaRequest {
                        subscribe: subscribe.iter().map(|s| s.to_string()).collect(),
                        unsubscribe: vec![],
                        initial_resource_versions: initial
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                        subscription: subscribe.iter().map(|s| s.to_string()).collect(),
                    }),
                },
            })),
        }
    }

    fn matcher(
        subscribe: Option<&[&str]>,
        initial: Option<&[(&str, &str)]>,
    ) -> DeltaRequestMatcher {
        DeltaRequestMatcher {
            common: RequestMatcher {
                resource_type: Some(ResourceType::Cluster),
                kind: Some(RequestKind::Initial),
                ..Default::default()
            },
            subscribe: subscribe.map(|s| s.iter().map(|n| n.to_string()).collect()),
            unsubscribe: Some(vec![]),
            initial: initial.map(|i| {
                i.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
        }
    }

    #[test]
    fn checks_the_changes_and_the_versions_held() {
        let event = delta_request(&["b", "a"], &[("a", "3")]);
        assert!(matcher(Some(&["a", "b"]), Some(&[("a", "3")])).matches(&event, &as_written));
        assert!(!matcher(Some(&["a"]), None).matches(&event, &as_written));
        assert!(!matcher(None, Some(&[("a", "4")])).matches(&event, &as_written));
        assert!(!matcher(None, Some(&[])).matches(&event, &as_written));
        assert_eq!(
            matcher(Some(&["a"]), None).describe(),
            "DeltaDiscoveryRequest type=CDS subscribe=[a] unsubscribe=[] kind=initial"
        );
    }

    #[test]
    fn a_sotw_request_is_not_a_delta_one() {
        let TimelineEvent { kind, .. } = delta_request(&["a"], &[]);
        let EventKind::Server(mut e) = kind else {
            unreachable!()
        };
        let ServerEvent::RequestReceived { request, .. } = &mut *e else {
            unreachable!()
        };
        request.delta = None;
        let event = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(e),
        };
        assert!(!matcher(None, None).matches(&event, &as_written));
    }
}
