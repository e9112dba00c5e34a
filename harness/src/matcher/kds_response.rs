//! The `kds_response` matcher: a DeltaDiscoveryResponse on a KDS stream.
//! On `global_to_zone` (the default) the global's, which it sent; on
//! `zone_to_global` the zone's, which the global received.
//!
//! Resources are named as their user named them: a zone that
//! hash-suffixes names on the wire (Kuma's `hash-suffix` feature) keeps the
//! given name in its `kuma.io/display-name` label, and `names` reads that.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::event::{RecordedResponse, ServerEvent};
use xds_vocabulary::kds::zone::labels::DISPLAY_NAME;
use xds_vocabulary::kds::{KdsName, KdsRpc, spec, unpack};

use super::kds_request::is_kds_type;
use super::{Check, Compare, Compile, Description, Translate, keyword_name, list, quoted};
use crate::check::kds::{KDS_RPCS, kuma_type};
use crate::check::{Checker, Problem, Spanned, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KdsResponseMatcherSpec {
    /// The server (the global) (default: any).
    pub server: Option<Spanned<String>>,
    /// `global_to_zone` (default: the global's responses) or
    /// `zone_to_global` (the zone's responses to the global).
    #[schemars(schema_with = "rpcs")]
    #[serde(default)]
    pub rpc: Option<Spanned<String>>,
    /// The Kuma type: `Mesh`, `Dataplane`, ...
    #[serde(rename = "type")]
    #[serde(default)]
    pub kuma_type: Option<Spanned<String>>,
    /// Exact set of its resources' names, `<name>.<mesh>` (order
    /// ignored); `[]` = none.
    pub names: Option<Vec<String>>,
    /// Exact set of removed_resources (order ignored); `[]` = none.
    pub removed: Option<Vec<String>>,
    /// Its nonce.
    pub nonce: Option<String>,
    /// Labels every resource in it carries (others may be there too).
    pub labels: Option<IndexMap<String, String>>,
    /// Substring of its resources as the timeline shows them (each
    /// `<name>.<mesh> <spec as JSON>`).
    pub contains: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KdsResponseMatcher {
    pub server: Option<String>,
    pub rpc: KdsRpc,
    pub kuma_type: Option<String>,
    pub names: Option<Vec<String>>,
    pub removed: Option<Vec<String>>,
    pub nonce: Option<String>,
    pub labels: Vec<(String, String)>,
    pub contains: Option<String>,
}

impl Compile for KdsResponseMatcherSpec {
    type Matcher = KdsResponseMatcher;

    fn compile(&self, scenario: &Checker) -> Result<KdsResponseMatcher, Problem> {
        Ok(KdsResponseMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            rpc: opt(self.rpc.as_ref(), |r| keyword(r, "KDS RPC", KDS_RPCS))?
                .unwrap_or(KdsRpc::GlobalToZoneSync),
            kuma_type: opt(self.kuma_type.as_ref(), kuma_type)?,
            names: self.names.clone(),
            removed: self.removed.clone(),
            nonce: self.nonce.clone(),
            labels: self
                .labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            contains: self.contains.clone(),
        })
    }
}

/// One resource of a recorded KDS response, as a scenario names it.
struct Entry {
    name: String,
    labels: BTreeMap<String, String>,
    /// `<name> <spec>`, for `contains`.
    shown: String,
}

/// Its resources: the envelope decoded where the recording kept a body
/// that is one; else the name it went under, with no labels.
fn entries(response: &RecordedResponse) -> Vec<Entry> {
    response
        .resource_names
        .iter()
        .enumerate()
        .map(|(i, wire_name)| {
            let decoded = response
                .bodies
                .get(i)
                .and_then(Option::as_ref)
                .and_then(|any| unpack(any).ok());
            match decoded {
                None => Entry {
                    name: wire_name.clone(),
                    labels: BTreeMap::new(),
                    shown: wire_name.clone(),
                },
                Some(resource) => {
                    let meta = resource.meta.clone().unwrap_or_default();
                    let labels: BTreeMap<String, String> = meta.labels.into_iter().collect();
                    let name = match labels.get(DISPLAY_NAME) {
                        Some(display) => KdsName::new(display.clone(), meta.mesh).to_string(),
                        None => wire_name.clone(),
                    };
                    let shown = format!(
                        "{name} {}",
                        spec::summary(&response.type_url, resource.spec.as_ref())
                    );
                    Entry {
                        name,
                        labels,
                        shown,
                    }
                }
            }
        })
        .collect()
}

impl Check for KdsResponseMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let (Some(source), EventKind::Server(e)) = (event.source.server(), &event.kind) else {
            return None;
        };
        let (rpc, response) = match &**e {
            ServerEvent::ResponseSent { response, .. } if is_kds_type(&response.type_url) => {
                (KdsRpc::GlobalToZoneSync, response)
            }
            ServerEvent::KdsResponseReceived { response, .. } => {
                (KdsRpc::ZoneToGlobalSync, response)
            }
            _ => return None,
        };
        if rpc != self.rpc {
            return None;
        }
        let needs_bodies =
            self.names.is_some() || !self.labels.is_empty() || self.contains.is_some();
        let entries = if needs_bodies {
            entries(response)
        } else {
            Vec::new()
        };
        let removed = response
            .delta
            .as_ref()
            .map(|d| d.removed_resources.as_slice())
            .unwrap_or_default();
        let shown = entries
            .iter()
            .map(|e| e.shown.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        fields
            .eq("server", self.server.as_deref(), source, str::to_string)
            .eq(
                "type",
                self.kuma_type.as_deref(),
                response.type_url.as_str(),
                str::to_string,
            )
            .set(
                "names",
                &self.names,
                entries.iter().map(|e| e.name.as_str()),
                text,
            )
            .set(
                "removed",
                &self.removed,
                removed.iter().map(String::as_str),
                text,
            )
            .eq(
                "nonce",
                self.nonce.as_deref(),
                response.nonce.as_str(),
                quoted,
            )
            .check(
                "labels",
                !self.labels.is_empty(),
                || {
                    entries
                        .iter()
                        .all(|e| self.labels.iter().all(|(k, v)| e.labels.get(k) == Some(v)))
                },
                || format!("{:?} on every resource", self.labels),
                || {
                    let each: Vec<String> = entries
                        .iter()
                        .map(|e| format!("{}: {:?}", e.name, e.labels))
                        .collect();
                    list(each)
                },
            )
            .contains("contains", &self.contains, &shown, text);
        Some(())
    }

    fn describe(&self) -> String {
        let names = |v: &Vec<String>| format!("[{}]", v.join(","));
        Description::new("KDS DeltaDiscoveryResponse")
            .field("rpc", keyword_name(KDS_RPCS, &self.rpc))
            .given("server", self.server.as_ref())
            .given("type", self.kuma_type.as_ref())
            .given("names", self.names.as_ref().map(names))
            .given("removed", self.removed.as_ref().map(names))
            .given_debug("nonce", self.nonce.as_ref())
            .given_debug("labels", Some(&self.labels).filter(|l| !l.is_empty()))
            .given_debug("contains", self.contains.as_ref())
            .into()
    }
}

fn rpcs(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(KDS_RPCS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_fake_server::event::{RecordedDeltaResource, RecordedDeltaResponse};
    use xds_vocabulary::kds::{kuma_resource, pack};

    fn zone_response() -> TimelineEvent {
        let labels = BTreeMap::from([
            ("kuma.io/origin".to_string(), "zone".to_string()),
            ("kuma.io/zone".to_string(), "zone-1".to_string()),
            (DISPLAY_NAME.to_string(), "dp-1".to_string()),
        ]);
        let spec: serde_json::Value = serde_json::json!({"networking": {"address": "10.0.0.1"}});
        let body = pack(&kuma_resource(
            &KdsName::new("dp-1-abcdef", "default"),
            labels,
            Some(spec::pack("Dataplane", spec.as_object().expect("object")).expect("packs")),
        ));
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("global".into()),
            kind: EventKind::Server(Box::new(ServerEvent::KdsResponseReceived {
                stream: 2,
                response: RecordedResponse {
                    type_url: "Dataplane".into(),
                    version_info: String::new(),
                    nonce: "1".into(),
                    resource_names: vec!["dp-1-abcdef.default".into()],
                    encoded_len: 100,
                    delta: Some(RecordedDeltaResponse {
                        resources: vec![RecordedDeltaResource {
                            version: "v".into(),
                            ttl: None,
                            body: true,
                        }],
                        removed_resources: vec!["dp-0.default".into()],
                    }),
                    resource_errors: Vec::new(),
                    bodies: vec![Some(body)],
                },
            })),
        }
    }

    fn zones() -> KdsResponseMatcher {
        KdsResponseMatcher {
            server: None,
            rpc: KdsRpc::ZoneToGlobalSync,
            kuma_type: Some("Dataplane".into()),
            names: Some(vec!["dp-1.default".into()]),
            removed: Some(vec!["dp-0.default".into()]),
            nonce: None,
            labels: vec![("kuma.io/zone".into(), "zone-1".into())],
            contains: Some("10.0.0.1".into()),
        }
    }

    #[test]
    fn reads_display_names_labels_and_specs() {
        let event = zone_response();
        assert!(zones().matches(&event, &as_written));
        for bad in [
            KdsResponseMatcher {
                rpc: KdsRpc::GlobalToZoneSync,
                ..zones()
            },
            KdsResponseMatcher {
                names: Some(vec!["dp-1-abcdef.default".into()]),
                ..zones()
            },
            KdsResponseMatcher {
                removed: Some(Vec::new()),
                ..zones()
            },
            KdsResponseMatcher {
                labels: vec![("kuma.io/zone".into(), "zone-2".into())],
                ..zones()
            },
            KdsResponseMatcher {
                contains: Some("10.0.0.2".into()),
                ..zones()
            },
        ] {
            assert!(!bad.matches(&event, &as_written), "{}", bad.describe());
        }
    }
}
