//! What the harness and a Kuma zone under test say to each other, beside
//! the wire: the zone's own (zone-origin) resources the harness hands it,
//! and what the zone reports about the resources it stores from its global.
//!
//! A zone's store is the KDS analogue of a watcher: a scenario checks what
//! the zone holds as it checks what a watcher heard. Specs are packed as
//! `google.protobuf.Struct` (Kuma's specs are JSON documents; see
//! [`spec`]), so the harness, the reference zone and an adapter agree on
//! them without Kuma's per-type protos.

use std::collections::BTreeMap;

use super::name::KdsName;
use super::proto::KumaResource;

/// A Kuma resource with its type: what a zone holds and KDS carries.
#[derive(Clone, Debug, PartialEq)]
pub struct KdsResource {
    /// The bare Kuma type name (`Dataplane`, `Mesh`).
    pub kuma_type: String,
    pub resource: KumaResource,
}

impl KdsResource {
    pub fn key(&self) -> KdsName {
        self.resource.kds_name()
    }

    pub fn labels(&self) -> BTreeMap<String, String> {
        self.resource
            .meta
            .as_ref()
            .map(|meta| meta.labels.clone())
            .unwrap_or_default()
    }
}

/// The labels KDS puts on resources (Kuma's `mesh_proto` constants).
pub mod labels {
    /// `global` or `zone`: where the resource was created.
    pub const ORIGIN: &str = "kuma.io/origin";
    /// The zone a zone-origin resource comes from.
    pub const ZONE: &str = "kuma.io/zone";
    /// The name a user gave a resource whose KDS name is hash-suffixed.
    pub const DISPLAY_NAME: &str = "kuma.io/display-name";
    pub const ORIGIN_GLOBAL: &str = "global";
    pub const ORIGIN_ZONE: &str = "zone";
}

/// A change in what a zone stores from its global (on
/// `GlobalToZoneSync`), as the zone reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZoneStoreChange {
    /// A resource was stored, or replaced by one that differs (an equal
    /// one is no change).
    Stored {
        kuma_type: String,
        name: KdsName,
        labels: BTreeMap<String, String>,
        /// The spec, one line (see [`spec::summary`]).
        spec: String,
    },
    /// A resource was deleted: named in `removed_resources`, or left out
    /// of a type's first response (the full sync).
    Removed { kuma_type: String, name: KdsName },
}

impl ZoneStoreChange {
    pub fn kuma_type(&self) -> &str {
        match self {
            ZoneStoreChange::Stored { kuma_type, .. }
            | ZoneStoreChange::Removed { kuma_type, .. } => kuma_type,
        }
    }

    pub fn name(&self) -> &KdsName {
        match self {
            ZoneStoreChange::Stored { name, .. } | ZoneStoreChange::Removed { name, .. } => name,
        }
    }
}

/// Specs as `google.protobuf.Struct`, in and out of an `Any`.
pub mod spec {
    use envoy_types::pb::google::protobuf::{Any, ListValue, Struct, Value, value::Kind};
    use prost::Message;

    /// The type URL of a packed spec.
    pub const STRUCT_TYPE_URL: &str = "type.googleapis.com/google.protobuf.Struct";

    /// A JSON object as the `Any` of a `KumaResource.spec`.
    pub fn pack(spec: &serde_json::Map<String, serde_json::Value>) -> Any {
        Any {
            type_url: STRUCT_TYPE_URL.to_string(),
            value: to_struct(spec).encode_to_vec(),
        }
    }

    /// The JSON object in a packed spec; `None` when the `Any` is not a
    /// `Struct` or does not decode.
    pub fn unpack(any: &Any) -> Option<serde_json::Map<String, serde_json::Value>> {
        if any.type_url.rsplit('/').next() != STRUCT_TYPE_URL.rsplit('/').next() {
            return None;
        }
        let decoded = Struct::decode(any.value.as_slice()).ok()?;
        Some(from_struct(&decoded))
    }

    /// The spec as one line of JSON with sorted keys (what timelines and
    /// matchers read); an `Any` of another type shows its type URL and size.
    pub fn summary(any: Option<&Any>) -> String {
        match any {
            None => "{}".to_string(),
            Some(any) => match unpack(any) {
                Some(map) => serde_json::Value::Object(map).to_string(),
                None => format!("<{} of {} bytes>", any.type_url, any.value.len()),
            },
        }
    }

    fn to_struct(map: &serde_json::Map<String, serde_json::Value>) -> Struct {
        Struct {
            fields: map.iter().map(|(k, v)| (k.clone(), to_value(v))).collect(),
        }
    }

    fn to_value(value: &serde_json::Value) -> Value {
        let kind = match value {
            serde_json::Value::Null => Kind::NullValue(0),
            serde_json::Value::Bool(b) => Kind::BoolValue(*b),
            serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
            serde_json::Value::String(s) => Kind::StringValue(s.clone()),
            serde_json::Value::Array(items) => Kind::ListValue(ListValue {
                values: items.iter().map(to_value).collect(),
            }),
            serde_json::Value::Object(map) => Kind::StructValue(to_struct(map)),
        };
        Value { kind: Some(kind) }
    }

    fn from_struct(s: &Struct) -> serde_json::Map<String, serde_json::Value> {
        // `fields` is a HashMap: sorted here so a summary is the same on
        // every run.
        let mut keys: Vec<&String> = s.fields.keys().collect();
        keys.sort();
        keys.into_iter()
            .map(|k| (k.clone(), from_value(&s.fields[k])))
            .collect()
    }

    fn from_value(value: &Value) -> serde_json::Value {
        match &value.kind {
            None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
            Some(Kind::BoolValue(b)) => serde_json::Value::Bool(*b),
            Some(Kind::NumberValue(n)) => number(*n),
            Some(Kind::StringValue(s)) => serde_json::Value::String(s.clone()),
            Some(Kind::ListValue(list)) => {
                serde_json::Value::Array(list.values.iter().map(from_value).collect())
            }
            Some(Kind::StructValue(s)) => serde_json::Value::Object(from_struct(s)),
        }
    }

    /// Whole numbers read back as integers (`Struct` keeps every number as
    /// a double), so `{port: 80}` summarises as written.
    fn number(n: f64) -> serde_json::Value {
        if n.fract() == 0.0 && n.abs() < 9.0e15 {
            serde_json::Value::from(n as i64)
        } else {
            serde_json::Number::from_f64(n)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_round_trips_through_a_struct_with_sorted_keys() {
        let json: serde_json::Value = serde_json::json!({
            "networking": {"address": "10.0.0.1", "inbound": [{"port": 80, "tags": {"kuma.io/service": "web"}}]},
            "mtls": null,
            "enabled": true,
            "weight": 0.5
        });
        let map = json.as_object().expect("object").clone();
        let any = spec::pack(&map);
        assert_eq!(any.type_url, spec::STRUCT_TYPE_URL);
        assert_eq!(spec::unpack(&any).as_ref(), Some(&map));
        assert_eq!(
            spec::summary(Some(&any)),
            r#"{"enabled":true,"mtls":null,"networking":{"address":"10.0.0.1","inbound":[{"port":80,"tags":{"kuma.io/service":"web"}}]},"weight":0.5}"#
        );
    }

    #[test]
    fn a_spec_of_another_type_is_summarised_by_its_type() {
        let any = envoy_types::pb::google::protobuf::Any {
            type_url: "type.googleapis.com/kuma.mesh.v1alpha1.Mesh".into(),
            value: vec![1, 2, 3],
        };
        assert_eq!(spec::unpack(&any), None);
        assert_eq!(
            spec::summary(Some(&any)),
            "<type.googleapis.com/kuma.mesh.v1alpha1.Mesh of 3 bytes>"
        );
        assert_eq!(spec::summary(None), "{}");
    }
}
