//! The `request` matcher: a DiscoveryRequest a server received.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;
use xds_fake_server::event::{RecordedRequest, ServerEvent};
use xds_vocabulary::{RequestKind, ResourceType, code_name};

use super::node::{NodeHas, NodeHasSpec};
use super::{Check, Compare, Compile, Description, Translate, quoted};
use crate::check::{Checker, Problem, code, keyword, opt, parse_resource_type};
use crate::check::{OneOrMany, Spanned};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestMatcherSpec {
    /// The server that received it (default: any).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
    /// Exact set of resource_names (order ignored); `[]` = none. On a
    /// delta request: the stream's subscription after it.
    pub names: Option<Vec<String>>,
    /// version_info; checked on SotW requests only (a delta request has
    /// none), so one expectation serves both protocols.
    pub version: Option<String>,
    /// response_nonce: the nonce of the response it answers (`""` for none).
    pub nonce: Option<String>,
    /// initial, ack, nack or unknown_nonce.
    #[schemars(schema_with = "request_kinds")]
    #[serde(default)]
    pub kind: Option<Spanned<String>>,
    /// error_detail.code, by name (e.g. INVALID_ARGUMENT).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub error_code: Option<Spanned<String>>,
    /// Substring(s) that error_detail.message must all contain.
    pub error_contains: Option<OneOrMany>,
    /// The request carries a node.
    pub node: Option<bool>,
    /// The request's node has these fields (a gRPC client sends it on a
    /// stream's first request only).
    pub node_has: Option<NodeHasSpec>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMatcher {
    pub server: Option<String>,
    pub resource_type: Option<ResourceType>,
    /// Exact set of resource_names (order ignored).
    pub names: Option<Vec<String>>,
    /// Instead of `names`: the request leaves its stream subscribed to
    /// every resource of the type (SotW: no names, or `*`; delta: `*` in
    /// the subscription). Never written in a file: the projection of
    /// named Listener and Cluster requests onto a client that always
    /// subscribes to all of them sets it (the runner's `projection`).
    pub wildcard: bool,
    pub version: Option<String>,
    pub nonce: Option<String>,
    pub kind: Option<RequestKind>,
    pub error_code: Option<i32>,
    /// Substrings error_detail.message must all contain.
    pub error_contains: Vec<String>,
    /// Whether the request carries a node.
    pub node: Option<bool>,
    /// What its node must say.
    pub node_has: Option<NodeHas>,
}

impl Compile for RequestMatcherSpec {
    type Matcher = RequestMatcher;

    fn compile(&self, scenario: &Checker) -> Result<RequestMatcher, Problem> {
        Ok(RequestMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            resource_type: opt(self.resource_type.as_ref(), parse_resource_type)?,
            names: self.names.clone(),
            wildcard: false,
            version: self.version.clone(),
            nonce: self.nonce.clone(),
            kind: opt(self.kind.as_ref(), |k| {
                keyword(k, "request kind", &RequestKind::ALL.map(|k| (k.name(), k)))
            })?,
            error_code: opt(self.error_code.as_ref(), code)?.map(i32::from),
            error_contains: self
                .error_contains
                .clone()
                .map(OneOrMany::into_vec)
                .unwrap_or_default(),
            node: self.node,
            node_has: self.node_has.as_ref().map(NodeHas::from),
        })
    }
}

impl Check for RequestMatcher {
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
        self.describe_request()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        named_lds_cds_needed(self.resource_type, self.names.as_deref(), caps)
    }
}

impl RequestMatcher {
    /// Checks a request `source` received or sent, field by field: what
    /// every kind of request matcher shares (`delta_request`,
    /// `kds_request` build on it).
    pub(super) fn compare_request(
        &self,
        source: &str,
        request: &RecordedRequest,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let error = request.error_detail.as_ref();
        fields
            .server_and_type(
                self.server.as_deref(),
                source,
                self.resource_type,
                request.type_url.as_str(),
            )
            .set("names", &self.names, request.subscription().iter(), text)
            .check(
                "names",
                self.wildcard,
                || request.subscription().iter().any(|n| n == "*") || is_legacy_wildcard(request),
                || "a wildcard subscription".into(),
                || format!("{:?}", request.subscription().iter().collect::<Vec<_>>()),
            )
            // A delta request has no version_info: one expectation serves
            // both protocols.
            .eq(
                "version",
                self.version.as_deref().filter(|_| request.delta.is_none()),
                request.version_info.as_str(),
                quoted,
            )
            .eq(
                "nonce",
                self.nonce.as_deref(),
                request.response_nonce.as_str(),
                quoted,
            )
            .eq("kind", self.kind.as_ref(), &request.kind, |k| {
                k.name().to_string()
            })
            .eq(
                "error_code",
                self.error_code.map(Some).as_ref(),
                &error.map(|(code, _)| *code),
                |c| {
                    c.map_or("(none)", |c| code_name(tonic::Code::from_i32(c)))
                        .to_string()
                },
            )
            .check(
                "error_contains",
                !self.error_contains.is_empty(),
                || {
                    error.is_some_and(|(_, message)| {
                        let message = text(message);
                        self.error_contains
                            .iter()
                            .all(|w| message.contains(w.as_str()))
                    })
                },
                || format!("{:?}", self.error_contains),
                || error.map_or("(no error_detail)".into(), |(_, m)| quoted(&text(m))),
            )
            .eq(
                "node",
                self.node.as_ref(),
                &request.node.is_some(),
                bool::to_string,
            );
        if let Some(has) = &self.node_has {
            has.compare(request.node.as_ref(), fields);
        }
        Some(())
    }

    fn describe_request(&self) -> String {
        Description::new("DiscoveryRequest")
            .given("server", self.server.as_ref())
            .given("type", self.resource_type.map(ResourceType::short_name))
            .given(
                "names",
                self.names
                    .as_ref()
                    .map(|v| format!("[{}]", v.join(",")))
                    .or(self.wildcard.then(|| "* (wildcard)".to_string())),
            )
            .given_debug("version", self.version.as_ref())
            .given_debug("nonce", self.nonce.as_ref())
            .given("kind", self.kind.map(RequestKind::name))
            .given(
                "error_code",
                self.error_code.map(|c| code_name(tonic::Code::from_i32(c))),
            )
            .given_debug(
                "error_contains",
                Some(&self.error_contains).filter(|w| !w.is_empty()),
            )
            .given("node", self.node)
            .given("node_has", self.node_has.as_ref().map(NodeHas::describe))
            .into()
    }
}

/// A SotW request without names: for Listeners and Clusters, the
/// wildcard of xDS's first form (api/xds_protocol.rst, "How the client
/// specifies what resources to return").
fn is_legacy_wildcard(request: &xds_fake_server::event::RecordedRequest) -> bool {
    request.delta.is_none() && request.resource_names.is_empty()
}

/// A request naming Listeners or Clusters is one a client that always
/// subscribes to all of them (Envoy) never sends.
pub(super) fn named_lds_cds_needed(
    resource_type: Option<ResourceType>,
    names: Option<&[String]>,
    caps: &Capabilities,
) -> Option<&'static str> {
    let lds_cds = matches!(
        resource_type,
        Some(ResourceType::Listener | ResourceType::Cluster)
    );
    let named = names.is_some_and(|n| n.iter().any(|n| n != "*"));
    (lds_cds && named && !caps.named_lds_cds).then_some("named Listener and Cluster subscriptions")
}

fn request_kinds(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::words(xds_vocabulary::RequestKind::ALL.iter().map(|k| k.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_fake_server::event::RecordedRequest;

    fn request(kind: RequestKind, names: &[&str], error: Option<(i32, &str)>) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::RequestReceived {
                stream: 1,
                request: RecordedRequest {
                    delta: None,
                    type_url: ResourceType::Cluster.type_url().into(),
                    resource_names: names.iter().map(|s| s.to_string()).collect(),
                    version_info: "1".into(),
                    response_nonce: "1".into(),
                    error_detail: error.map(|(c, m)| (c, m.to_string())),
                    node: None,
                    kind,
                },
            })),
        }
    }

    fn matches(m: &RequestMatcher, event: &TimelineEvent) -> bool {
        m.matches(event, &as_written)
    }

    #[test]
    fn checks_every_given_field() {
        let nack = request(
            RequestKind::Nack,
            &["b", "a"],
            Some((3, "resource index 1: c2: bad")),
        );
        let m = |f: fn(&mut RequestMatcher)| {
            let mut r = RequestMatcher::default();
            f(&mut r);
            r
        };
        assert!(matches(&m(|_| {}), &nack));
        assert!(matches(
            &m(|r| r.names = Some(vec!["a".into(), "b".into()])),
            &nack
        ));
        assert!(!matches(&m(|r| r.names = Some(vec!["a".into()])), &nack));
        assert!(matches(&m(|r| r.kind = Some(RequestKind::Nack)), &nack));
        assert!(!matches(&m(|r| r.kind = Some(RequestKind::Ack)), &nack));
        assert!(matches(&m(|r| r.error_code = Some(3)), &nack));
        assert!(!matches(&m(|r| r.error_code = Some(14)), &nack));
        assert!(matches(
            &m(|r| r.error_contains = vec!["c2: bad".into()]),
            &nack
        ));
        assert!(matches(
            &m(|r| r.error_contains = vec!["index 1".into(), "c2: bad".into()]),
            &nack
        ));
        assert!(!matches(
            &m(|r| r.error_contains = vec!["index 1".into(), "c3".into()]),
            &nack
        ));
        assert!(!matches(&m(|r| r.server = Some("fallback".into())), &nack));
        assert!(!matches(
            &m(|r| r.resource_type = Some(ResourceType::Listener)),
            &nack
        ));
        assert!(!matches(&m(|r| r.node = Some(true)), &nack));
        let ack = request(RequestKind::Ack, &["a"], None);
        assert!(!matches(&m(|r| r.error_contains = vec!["x".into()]), &ack));
    }

    #[test]
    fn describes_itself_readably() {
        let m = RequestMatcher {
            resource_type: Some(ResourceType::Cluster),
            names: Some(vec!["c1".into()]),
            kind: Some(RequestKind::Ack),
            ..Default::default()
        };
        assert_eq!(
            m.describe(),
            "DiscoveryRequest type=CDS names=[c1] kind=ack"
        );
        let m = RequestMatcher {
            error_code: Some(3),
            error_contains: vec!["c2".into()],
            node: Some(true),
            ..Default::default()
        };
        assert_eq!(
            m.describe(),
            "DiscoveryRequest error_code=INVALID_ARGUMENT error_contains=[\"c2\"] node=true"
        );
    }
}
