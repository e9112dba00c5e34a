//! The `kds_request` matcher: a DeltaDiscoveryRequest on a KDS stream.
//! On `global_to_zone` (the default) the zone's subscriptions, ACKs and
//! NACKs, which the global received; on `zone_to_global` the global's
//! own, which it sent.
//!
//! A request on `GlobalToZoneSync` is told from a delta ADS request by its
//! type: KDS's are bare Kuma type names, ADS's `type.googleapis.com/` URLs.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::event::{RecordedRequest, ServerEvent};
use xds_vocabulary::kds::KdsRpc;
use xds_vocabulary::{RequestKind, code_name};

use super::{Check, Compare, Compile, Description, Translate, keyword_name, list, quoted};
use crate::check::kds::{KDS_RPCS, kuma_type};
use crate::check::{Checker, OneOrMany, Problem, Spanned, code, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KdsRequestMatcherSpec {
    /// The server (the global) (default: any).
    pub server: Option<Spanned<String>>,
    /// `global_to_zone` (default: the zone's requests) or `zone_to_global`
    /// (the global's requests to the zone).
    #[schemars(schema_with = "rpcs")]
    #[serde(default)]
    pub rpc: Option<Spanned<String>>,
    /// The Kuma type: `Mesh`, `Dataplane`, ...
    #[serde(rename = "type")]
    #[serde(default)]
    pub kuma_type: Option<Spanned<String>>,
    /// Exact set of resource_names_subscribe (order ignored); `[]` = none.
    pub subscribe: Option<Vec<String>>,
    /// Exact set of resource_names_unsubscribe (order ignored); `[]` = none.
    pub unsubscribe: Option<Vec<String>>,
    /// Exactly these initial_resource_versions (name -> version); `{}` =
    /// none.
    pub initial: Option<BTreeMap<String, String>>,
    /// response_nonce (`""` for none).
    pub nonce: Option<String>,
    /// initial, ack, nack or unknown_nonce.
    #[schemars(schema_with = "request_kinds")]
    #[serde(default)]
    pub kind: Option<Spanned<String>>,
    /// error_detail.code, by name.
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub error_code: Option<Spanned<String>>,
    /// Substring(s) that error_detail.message must all contain.
    pub error_contains: Option<OneOrMany>,
    /// node.id (`""`: no node, or an empty id).
    pub node_id: Option<String>,
    /// Keys node.metadata must have (a zone's first request of a type
    /// sends `version`, `features`, `control-plane-id`, `config`); `[]`:
    /// no metadata at all.
    pub node_metadata: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KdsRequestMatcher {
    pub server: Option<String>,
    pub rpc: KdsRpc,
    pub kuma_type: Option<String>,
    pub subscribe: Option<Vec<String>>,
    pub unsubscribe: Option<Vec<String>>,
    pub initial: Option<BTreeMap<String, String>>,
    pub nonce: Option<String>,
    pub kind: Option<RequestKind>,
    pub error_code: Option<i32>,
    pub error_contains: Vec<String>,
    pub node_id: Option<String>,
    pub node_metadata: Option<Vec<String>>,
}

impl Default for KdsRequestMatcher {
    /// The zone's requests, anything about them.
    fn default() -> Self {
        KdsRequestMatcher {
            server: None,
            rpc: KdsRpc::GlobalToZoneSync,
            kuma_type: None,
            subscribe: None,
            unsubscribe: None,
            initial: None,
            nonce: None,
            kind: None,
            error_code: None,
            error_contains: Vec::new(),
            node_id: None,
            node_metadata: None,
        }
    }
}

impl Compile for KdsRequestMatcherSpec {
    type Matcher = KdsRequestMatcher;

    fn compile(&self, scenario: &Checker) -> Result<KdsRequestMatcher, Problem> {
        Ok(KdsRequestMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            rpc: opt(self.rpc.as_ref(), |r| keyword(r, "KDS RPC", KDS_RPCS))?
                .unwrap_or(KdsRpc::GlobalToZoneSync),
            kuma_type: opt(self.kuma_type.as_ref(), kuma_type)?,
            subscribe: self.subscribe.clone(),
            unsubscribe: self.unsubscribe.clone(),
            initial: self.initial.clone(),
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
            node_id: self.node_id.clone(),
            node_metadata: self.node_metadata.clone(),
        })
    }
}

/// The KDS request an event is, with the RPC it went on.
pub(crate) fn kds_request(event: &TimelineEvent) -> Option<(&str, KdsRpc, &RecordedRequest)> {
    let (Some(source), EventKind::Server(e)) = (event.source.server(), &event.kind) else {
        return None;
    };
    match &**e {
        ServerEvent::RequestReceived { request, .. } if is_kds_type(&request.type_url) => {
            Some((source, KdsRpc::GlobalToZoneSync, request))
        }
        ServerEvent::KdsRequestSent { request, .. } => {
            Some((source, KdsRpc::ZoneToGlobalSync, request))
        }
        _ => None,
    }
}

/// KDS's type URLs are bare Kuma type names.
pub(crate) fn is_kds_type(type_url: &str) -> bool {
    !type_url.contains('/')
}

impl Check for KdsRequestMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let (source, rpc, request) = kds_request(event)?;
        if rpc != self.rpc {
            return None;
        }
        let delta = request.delta.clone().unwrap_or_default();
        let error = request.error_detail.as_ref();
        let node = request.node.as_ref();
        let metadata_keys: Vec<String> = node
            .and_then(|n| n.metadata.as_ref())
            .map(|m| {
                let mut keys: Vec<String> = m.fields.keys().cloned().collect();
                keys.sort();
                keys
            })
            .unwrap_or_default();
        fields
            .eq("server", self.server.as_deref(), source, str::to_string)
            .eq(
                "type",
                self.kuma_type.as_deref(),
                request.type_url.as_str(),
                str::to_string,
            )
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
            .eq(
                "initial",
                self.initial.as_ref(),
                &delta.initial_resource_versions,
                |m| format!("{m:?}"),
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
                "node_id",
                self.node_id.as_deref(),
                node.map_or("", |n| n.id.as_str()),
                quoted,
            )
            .check(
                "node_metadata",
                self.node_metadata.is_some(),
                || match &self.node_metadata {
                    Some(want) if want.is_empty() => metadata_keys.is_empty(),
                    Some(want) => want.iter().all(|k| metadata_keys.contains(k)),
                    None => true,
                },
                || list(self.node_metadata.iter().flatten()),
                || list(&metadata_keys),
            );
        Some(())
    }

    fn describe(&self) -> String {
        let names = |v: &Vec<String>| format!("[{}]", v.join(","));
        Description::new("KDS DeltaDiscoveryRequest")
            .field("rpc", keyword_name(KDS_RPCS, &self.rpc))
            .given("server", self.server.as_ref())
            .given("type", self.kuma_type.as_ref())
            .given("subscribe", self.subscribe.as_ref().map(names))
            .given("unsubscribe", self.unsubscribe.as_ref().map(names))
            .given_debug("initial", self.initial.as_ref())
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
            .given_debug("node_id", self.node_id.as_ref())
            .given("node_metadata", self.node_metadata.as_ref().map(names))
            .into()
    }
}

fn rpcs(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(KDS_RPCS)
}

fn request_kinds(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::words(RequestKind::ALL.iter().map(|k| k.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use envoy_types::pb::envoy::config::core::v3::Node;
    use std::time::Duration;
    use xds_fake_server::event::RecordedDeltaRequest;

    fn request(type_url: &str, kind: RequestKind, node_id: &str) -> RecordedRequest {
        RecordedRequest {
            type_url: type_url.into(),
            resource_names: Vec::new(),
            version_info: String::new(),
            response_nonce: String::new(),
            error_detail: None,
            node: Some(Node {
                id: node_id.into(),
                ..Default::default()
            }),
            kind,
            delta: Some(RecordedDeltaRequest {
                subscribe: vec!["*".into()],
                ..Default::default()
            }),
        }
    }

    fn event(e: ServerEvent) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("global".into()),
            kind: EventKind::Server(Box::new(e)),
        }
    }

    #[test]
    fn a_zone_request_is_told_from_an_ads_one_and_from_the_globals() {
        let zone = event(ServerEvent::RequestReceived {
            stream: 1,
            request: request("Mesh", RequestKind::Initial, "zone-1"),
        });
        let ads = event(ServerEvent::RequestReceived {
            stream: 1,
            request: request(
                "type.googleapis.com/envoy.config.cluster.v3.Cluster",
                RequestKind::Initial,
                "zone-1",
            ),
        });
        let global = event(ServerEvent::KdsRequestSent {
            stream: 2,
            request: request("Dataplane", RequestKind::Initial, "zone-1"),
        });
        let zones = KdsRequestMatcher {
            subscribe: Some(vec!["*".into()]),
            node_id: Some("zone-1".into()),
            kind: Some(RequestKind::Initial),
            ..Default::default()
        };
        assert!(zones.matches(&zone, &as_written));
        assert!(!zones.matches(&ads, &as_written));
        assert!(!zones.matches(&global, &as_written));
        let globals = KdsRequestMatcher {
            rpc: KdsRpc::ZoneToGlobalSync,
            kuma_type: Some("Dataplane".into()),
            ..Default::default()
        };
        assert!(globals.matches(&global, &as_written));
        assert!(!globals.matches(&zone, &as_written));
        let other_zone = KdsRequestMatcher {
            node_id: Some("zone-2".into()),
            ..zones.clone()
        };
        assert!(!other_zone.matches(&zone, &as_written));
        let with_metadata = KdsRequestMatcher {
            node_metadata: Some(vec!["config".into()]),
            ..zones
        };
        assert!(!with_metadata.matches(&zone, &as_written));
    }
}
