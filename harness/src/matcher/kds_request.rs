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
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::KdsRpc;

use super::delta_request::DeltaRequestMatcher;
use super::node::NodeHas;
use super::request::RequestMatcher;
use super::{Check, Compare, Compile, Description, Translate, keyword_name, list};
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
    /// node.id.
    pub node_id: Option<String>,
    /// Keys node.metadata must have (a zone's first request of a type
    /// sends `version`, `features`, `control-plane-id`, `config`); `[]`:
    /// no metadata at all.
    pub node_metadata: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KdsRequestMatcher {
    pub rpc: KdsRpc,
    pub kuma_type: Option<String>,
    /// What a delta request says, checked as `delta_request` checks it
    /// (its `type` left open: KDS's are Kuma type names).
    pub delta: DeltaRequestMatcher,
    pub node_metadata: Option<Vec<String>>,
}

impl Default for KdsRequestMatcher {
    /// The zone's requests, anything about them.
    fn default() -> Self {
        KdsRequestMatcher {
            rpc: KdsRpc::GlobalToZoneSync,
            kuma_type: None,
            delta: DeltaRequestMatcher {
                common: RequestMatcher::default(),
                subscribe: None,
                unsubscribe: None,
                initial: None,
            },
            node_metadata: None,
        }
    }
}

impl Compile for KdsRequestMatcherSpec {
    type Matcher = KdsRequestMatcher;

    fn compile(&self, scenario: &Checker) -> Result<KdsRequestMatcher, Problem> {
        let common = RequestMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
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
            node_has: self.node_id.as_ref().map(|id| NodeHas {
                id: Some(id.clone()),
                ..NodeHas::default()
            }),
            ..RequestMatcher::default()
        };
        Ok(KdsRequestMatcher {
            rpc: opt(self.rpc.as_ref(), |r| keyword(r, "KDS RPC", KDS_RPCS))?
                .unwrap_or(KdsRpc::GlobalToZoneSync),
            kuma_type: opt(self.kuma_type.as_ref(), kuma_type)?,
            delta: DeltaRequestMatcher {
                common,
                subscribe: self.subscribe.clone(),
                unsubscribe: self.unsubscribe.clone(),
                initial: self.initial.clone(),
            },
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
        let metadata_keys: Vec<String> = request
            .node
            .as_ref()
            .and_then(|n| n.metadata.as_ref())
            .map(|m| {
                let mut keys: Vec<String> = m.fields.keys().cloned().collect();
                keys.sort();
                keys
            })
            .unwrap_or_default();
        fields
            .eq(
                "type",
                self.kuma_type.as_deref(),
                request.type_url.as_str(),
                str::to_string,
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
        self.delta.compare_request(source, request, text, fields)
    }

    fn describe(&self) -> String {
        let names = |v: &Vec<String>| format!("[{}]", v.join(","));
        let delta = self.delta.describe();
        let rest = delta
            .strip_prefix("DeltaDiscoveryRequest")
            .unwrap_or(&delta);
        let head: String = Description::new("KDS DeltaDiscoveryRequest")
            .field("rpc", keyword_name(KDS_RPCS, &self.rpc))
            .given("type", self.kuma_type.as_ref())
            .given("node_metadata", self.node_metadata.as_ref().map(names))
            .into();
        format!("{head}{rest}")
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
            delta: DeltaRequestMatcher {
                common: RequestMatcher {
                    kind: Some(RequestKind::Initial),
                    node_has: Some(NodeHas {
                        id: Some("zone-1".into()),
                        ..NodeHas::default()
                    }),
                    ..RequestMatcher::default()
                },
                subscribe: Some(vec!["*".into()]),
                unsubscribe: None,
                initial: None,
            },
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
        let mut other_zone = zones.clone();
        other_zone.delta.common.node_has = Some(NodeHas {
            id: Some("zone-2".into()),
            ..NodeHas::default()
        });
        assert!(!other_zone.matches(&zone, &as_written));
        let with_metadata = KdsRequestMatcher {
            node_metadata: Some(vec!["config".into()]),
            ..zones
        };
        assert!(!with_metadata.matches(&zone, &as_written));
    }
}
