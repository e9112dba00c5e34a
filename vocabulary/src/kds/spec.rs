//! A Kuma resource's spec in and out of the `Any` of its `KumaResource`,
//! as Kuma v2.14.3 encodes it (KDS-FACTS 4.8; `pkg/core/resources/model/utils.go`):
//! - a proto-spec type ([`types::proto_spec`]: Mesh, Dataplane, ...) as a
//!   typed `Any`, `type.googleapis.com/<message>` and the message's bytes;
//!   a zone decodes it only from an `Any` of that message
//!   (`anypb.UnmarshalTo`);
//! - every other type (MeshTimeout, MeshService, ...) as an `Any` with an
//!   empty type URL and the spec's JSON; a zone reads the JSON and ignores
//!   the type URL (`json.Unmarshal`).
//!
//! Scenarios write every spec as a JSON object: proto specs go through the
//! project's own message definitions (`proto/kuma_specs.proto`, Kuma's
//! field names and numbers) with proto3's JSON mapping. A spec that fails
//! to decode is no validation failure: Kuma's zone ends the connection.

use std::sync::OnceLock;

use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, SerializeOptions};
use serde_json::{Map, Value};

use super::types;

/// A spec as scenarios write it and matchers read it.
pub type Spec = Map<String, Value>;

/// The descriptors of `proto/kuma_specs.proto` and
/// `proto/kuma_system_specs.proto` (with their imports), as
/// `tests/kds_proto.rs` compiles and checks them.
static DESCRIPTOR_SET: &[u8] = include_bytes!("../../descriptors/kuma-specs.bin");

/// The prefix of a typed `Any`'s URL.
const TYPE_URL_PREFIX: &str = "type.googleapis.com/";

/// Why a spec does not pack or unpack.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The `Any` is not of the type's message (Kuma's `anypb` words).
    #[error("proto: mismatched message type: got {found:?}, want {want:?}")]
    MismatchedType { found: String, want: String },
    /// The bytes do not decode as the message, or as JSON.
    #[error("{kuma_type} spec does not decode: {reason}")]
    Undecodable { kuma_type: String, reason: String },
    /// The JSON is not an object.
    #[error("{kuma_type} spec is JSON but not an object")]
    NotAnObject { kuma_type: String },
    /// A scenario's spec does not fit the message (an unknown field, a
    /// wrong value type).
    #[error("{message} spec: {reason}")]
    DoesNotFit { message: String, reason: String },
    /// A proto-spec type the project has no message definition for: a
    /// scenario cannot write its spec.
    #[error(
        "{kuma_type}'s spec is a {message}, which vocabulary/proto/kuma_specs.proto does not define yet"
    )]
    NoDefinition { kuma_type: String, message: String },
}

/// What a packed spec holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Unpacked {
    Object(Spec),
    /// The `Any` is of the right message, which the project does not
    /// define: its bytes are taken unread.
    Opaque,
}

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        // The bytes are the committed, tested descriptor set.
        #[allow(clippy::expect_used)]
        DescriptorPool::decode(DESCRIPTOR_SET).expect("the committed Kuma spec descriptors load")
    })
}

/// `spec` as a global sends it for a resource of `kuma_type`.
pub fn pack(kuma_type: &str, spec: &Spec) -> Result<Any, SpecError> {
    let Some(message) = types::proto_spec(kuma_type) else {
        return Ok(Any {
            type_url: String::new(),
            value: serde_json::to_vec(spec).unwrap_or_default(),
        });
    };
    let descriptor =
        pool()
            .get_message_by_name(message)
            .ok_or_else(|| SpecError::NoDefinition {
                kuma_type: kuma_type.to_string(),
                message: message.to_string(),
            })?;
    let decoded = DynamicMessage::deserialize_with_options(
        descriptor,
        Value::Object(spec.clone()),
        &DeserializeOptions::new().deny_unknown_fields(true),
    )
    .map_err(|e| SpecError::DoesNotFit {
        message: message.to_string(),
        reason: e.to_string(),
    })?;
    Ok(Any {
        type_url: format!("{TYPE_URL_PREFIX}{message}"),
        value: decoded.encode_to_vec(),
    })
}

/// The spec in `any` of a resource of `kuma_type`, read as Kuma's zone
/// reads it (`FromAny`).
pub fn unpack(kuma_type: &str, any: &Any) -> Result<Unpacked, SpecError> {
    let undecodable = |reason: String| SpecError::Undecodable {
        kuma_type: kuma_type.to_string(),
        reason,
    };
    let Some(message) = types::proto_spec(kuma_type) else {
        return match serde_json::from_slice::<Value>(&any.value) {
            Ok(Value::Object(spec)) => Ok(Unpacked::Object(spec)),
            Ok(_) => Err(SpecError::NotAnObject {
                kuma_type: kuma_type.to_string(),
            }),
            Err(e) => Err(undecodable(e.to_string())),
        };
    };
    // anypb compares the full name after the URL's last '/'.
    let found = any.type_url.rsplit('/').next().unwrap_or_default();
    if found != message {
        return Err(SpecError::MismatchedType {
            found: found.to_string(),
            want: message.to_string(),
        });
    }
    let Some(descriptor) = pool().get_message_by_name(message) else {
        return Ok(Unpacked::Opaque);
    };
    let decoded = DynamicMessage::decode(descriptor, any.value.as_slice())
        .map_err(|e| undecodable(e.to_string()))?;
    match decoded.serialize_with_options(
        serde_json::value::Serializer,
        &SerializeOptions::new().stringify_64_bit_integers(false),
    ) {
        Ok(Value::Object(spec)) => Ok(Unpacked::Object(spec)),
        Ok(_) => Err(SpecError::NotAnObject {
            kuma_type: kuma_type.to_string(),
        }),
        Err(e) => Err(undecodable(e.to_string())),
    }
}

/// The spec as one line of JSON with sorted keys (what timelines and
/// matchers read); one that does not unpack shows its type URL and size.
pub fn summary(kuma_type: &str, any: Option<&Any>) -> String {
    match any {
        None => "{}".to_string(),
        Some(any) => match unpack(kuma_type, any) {
            Ok(Unpacked::Object(spec)) => canonical(&Value::Object(spec)),
            Ok(Unpacked::Opaque) | Err(_) => {
                format!("<{:?} of {} bytes>", any.type_url, any.value.len())
            }
        },
    }
}

/// `value` as JSON with every object's keys sorted, whatever order the map
/// keeps: the same spec reads the same on every run.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Spec {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_proto_spec_is_a_typed_any_of_kumas_message() {
        let spec = object(serde_json::json!({
            "networking": {"address": "10.0.0.1", "inbound": [{"port": 80, "tags": {"kuma.io/service": "web"}}]}
        }));
        let any = pack(types::DATAPLANE, &spec).expect("packs");
        assert_eq!(
            any.type_url,
            "type.googleapis.com/kuma.mesh.v1alpha1.Dataplane"
        );
        // networking is field 1, its address field 5: Kuma's numbers.
        assert_eq!(any.value[0], 1 << 3 | 2);
        assert_eq!(unpack(types::DATAPLANE, &any), Ok(Unpacked::Object(spec)));
        assert_eq!(
            summary(types::DATAPLANE, Some(&any)),
            r#"{"networking":{"address":"10.0.0.1","inbound":[{"port":80,"tags":{"kuma.io/service":"web"}}]}}"#
        );
    }

    #[test]
    fn a_policy_spec_is_json_under_an_empty_type_url() {
        let spec = object(serde_json::json!({"targetRef": {"kind": "Mesh"}, "to": []}));
        let any = pack(types::MESH_TIMEOUT, &spec).expect("packs");
        assert_eq!(any.type_url, "");
        assert_eq!(
            serde_json::from_slice::<Value>(&any.value).expect("JSON"),
            Value::Object(spec.clone())
        );
        // Kuma ignores the type URL of a JSON spec.
        let typed = Any {
            type_url: "type.googleapis.com/anything".into(),
            ..any
        };
        assert_eq!(
            unpack(types::MESH_TIMEOUT, &typed),
            Ok(Unpacked::Object(spec))
        );
    }

    #[test]
    fn a_spec_of_another_encoding_does_not_unpack() {
        let mesh = pack(types::MESH, &Spec::new()).expect("packs");
        // A Mesh under a Struct's URL, as the harness once sent: Kuma's
        // words.
        let wrong = Any {
            type_url: "type.googleapis.com/google.protobuf.Struct".into(),
            ..mesh.clone()
        };
        assert_eq!(
            unpack(types::MESH, &wrong)
                .expect_err("mismatched")
                .to_string(),
            r#"proto: mismatched message type: got "google.protobuf.Struct", want "kuma.mesh.v1alpha1.Mesh""#
        );
        // Proto bytes are not JSON.
        let proto_bytes = pack(
            types::DATAPLANE,
            &object(serde_json::json!({"networking": {"address": "a"}})),
        )
        .expect("packs");
        assert!(matches!(
            unpack(types::MESH_TIMEOUT, &proto_bytes),
            Err(SpecError::Undecodable { .. })
        ));
        assert!(matches!(
            unpack(
                types::MESH_TIMEOUT,
                &Any {
                    type_url: String::new(),
                    value: b"[1]".to_vec()
                }
            ),
            Err(SpecError::NotAnObject { .. })
        ));
        let garbled = Any {
            value: vec![0xff, 0xff],
            ..mesh
        };
        assert!(matches!(
            unpack(types::MESH, &garbled),
            Err(SpecError::Undecodable { .. })
        ));
        assert_eq!(
            summary(types::MESH, Some(&garbled)),
            r#"<"type.googleapis.com/kuma.mesh.v1alpha1.Mesh" of 2 bytes>"#
        );
    }

    #[test]
    fn a_scenario_spec_must_fit_the_message() {
        let unknown = object(serde_json::json!({"mtls": {"enabledBackendd": "x"}}));
        let error = pack(types::MESH, &unknown).expect_err("an unknown field");
        assert!(error.to_string().contains("enabledBackendd"), "{error}");
        let undefined = pack("TrafficRoute", &Spec::new()).expect_err("no definition");
        assert!(matches!(undefined, SpecError::NoDefinition { .. }));
        // A right-typed Any of a message the project does not define is
        // taken unread.
        let any = Any {
            type_url: "type.googleapis.com/kuma.mesh.v1alpha1.TrafficRoute".into(),
            value: vec![1, 2],
        };
        assert_eq!(unpack("TrafficRoute", &any), Ok(Unpacked::Opaque));
    }

    #[test]
    fn every_defined_message_is_a_proto_spec_type() {
        for (kuma_type, message) in [
            (types::MESH, "kuma.mesh.v1alpha1.Mesh"),
            (types::DATAPLANE, "kuma.mesh.v1alpha1.Dataplane"),
            (
                types::DATAPLANE_INSIGHT,
                "kuma.mesh.v1alpha1.DataplaneInsight",
            ),
            (types::ZONE_INGRESS, "kuma.mesh.v1alpha1.ZoneIngress"),
            (types::CONFIG, "kuma.system.v1alpha1.Config"),
            (types::SECRET, "kuma.system.v1alpha1.Secret"),
            (types::GLOBAL_SECRET, "kuma.system.v1alpha1.Secret"),
        ] {
            assert_eq!(types::proto_spec(kuma_type), Some(message));
            assert!(pool().get_message_by_name(message).is_some(), "{message}");
            assert!(pack(kuma_type, &Spec::new()).is_ok(), "{kuma_type}");
        }
    }
}
