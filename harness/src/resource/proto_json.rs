//! Proto3 JSON -> protobuf bytes, for resources written the way Envoy users
//! write them (`{"@type": "...Cluster", "name": ..., "edsClusterConfig": ...}`).
//!
//! envoy-types has no serde support, so this goes through `prost-reflect`
//! with envoy-types' own descriptor set. The crate ships that set but exports
//! no constant for it, so a copy is checked in (`harness/descriptors/`), and a
//! test keeps it byte-identical to the crate's.

use std::fmt::Write as _;
use std::sync::OnceLock;

use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor};

use super::spanned_json::SpannedJson;
use crate::check::Spanned;

/// envoy-types 0.7.7's `src/generated/types.bin` (a FileDescriptorSet).
static DESCRIPTOR_SET: &[u8] = include_bytes!("../../descriptors/envoy-types-0.7.7.bin");

/// Prefix of the type URLs `@type` carries.
const TYPE_URL_PREFIX: &str = "type.googleapis.com/";

/// Why a proto3 JSON value could not be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtoJsonError {
    #[error("the embedded envoy-types descriptor set does not load: {0}")]
    Descriptors(String),
    #[error("expected a JSON object with an `@type` key")]
    NotAnObject,
    #[error(
        "missing `@type` (e.g. \"@type\": \"{TYPE_URL_PREFIX}envoy.config.cluster.v3.Cluster\")"
    )]
    MissingType,
    #[error("`@type` must be a string")]
    TypeNotAString,
    #[error("unknown `@type` \"{0}\": not a message envoy-types knows")]
    UnknownType(String),
    /// prost-reflect's own text (unknown field, wrong value type, ...), and
    /// the path of the offending key, e.g. `endpoints[0].loadBalancingWeight`.
    #[error("{type_name}{}: {message}", if path.is_empty() { String::new() } else { format!(" at {path}") })]
    Invalid {
        type_name: String,
        path: String,
        message: String,
    },
}

/// The descriptors of every message envoy-types has, well-known types
/// included; built on first use.
pub fn descriptor_pool() -> Result<&'static DescriptorPool, ProtoJsonError> {
    static POOL: OnceLock<Result<DescriptorPool, String>> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTOR_SET).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| ProtoJsonError::Descriptors(e.clone()))
}

/// Converts a JSON object carrying `@type` into the `Any` it denotes, with
/// `type_url` exactly as written.
pub fn json_to_any(value: &serde_json::Value) -> Result<Any, ProtoJsonError> {
    let object = value.as_object().ok_or(ProtoJsonError::NotAnObject)?;
    let type_url = match object.get("@type") {
        None => return Err(ProtoJsonError::MissingType),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(_) => return Err(ProtoJsonError::TypeNotAString),
    };
    // Like protobuf's own resolvers, only the part after the last '/' counts.
    let type_name = type_url.rsplit('/').next().unwrap_or_default();
    let descriptor = descriptor_pool()?
        .get_message_by_name(type_name)
        .ok_or_else(|| ProtoJsonError::UnknownType(type_url.clone()))?;
    let mut fields = object.clone();
    fields.remove("@type");
    let message = deserialize(&descriptor, &fields).map_err(|e| {
        let mut path = String::new();
        failing_path(&descriptor, &fields, &mut path);
        ProtoJsonError::Invalid {
            type_name: type_name.to_string(),
            path,
            message: e.to_string(),
        }
    })?;
    Ok(Any {
        type_url,
        value: message.encode_to_vec(),
    })
}

fn deserialize(
    descriptor: &MessageDescriptor,
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<DynamicMessage, serde_json::Error> {
    DynamicMessage::deserialize_with_options(
        descriptor.clone(),
        serde_json::Value::Object(fields.clone()),
        &DeserializeOptions::new().deny_unknown_fields(true),
    )
}

/// Appends to `path` where in `object` deserializing fails: prost-reflect's
/// errors name no position, so retry one key at a time and descend into the
/// first failing one (messages, lists of messages, and `Any`s with `@type`).
/// Only runs on the error path.
fn failing_path(
    descriptor: &MessageDescriptor,
    object: &serde_json::Map<String, serde_json::Value>,
    path: &mut String,
) {
    use serde_json::Value;
    let Some((key, value)) = object.iter().find(|(key, value)| {
        let single = serde_json::Map::from_iter([((*key).clone(), (*value).clone())]);
        deserialize(descriptor, &single).is_err()
    }) else {
        return;
    };
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    let Some(field) = descriptor
        .get_field_by_json_name(key)
        .or_else(|| descriptor.get_field_by_name(key))
    else {
        return;
    };
    let Some(message) = field.kind().as_message().cloned() else {
        return;
    };
    if field.is_map() {
        return;
    }
    // Descends into one message value; `Any` by its `@type`.
    let descend = |value: &Value, path: &mut String| {
        let Value::Object(inner) = value else { return };
        if message.full_name() == "google.protobuf.Any" {
            let Some(Value::String(type_url)) = inner.get("@type") else {
                return;
            };
            let name = type_url.rsplit('/').next().unwrap_or_default();
            if let Some(inner_descriptor) = descriptor_pool()
                .ok()
                .and_then(|p| p.get_message_by_name(name))
            {
                let mut rest = inner.clone();
                rest.remove("@type");
                failing_path(&inner_descriptor, &rest, path);
            }
        } else if !message.full_name().starts_with("google.protobuf.") {
            failing_path(&message, inner, path);
        }
    };
    match value {
        Value::Array(items) if field.is_list() => {
            let failing = items.iter().enumerate().find(|(_, item)| {
                let single = serde_json::Map::from_iter([(
                    key.clone(),
                    Value::Array(vec![(*item).clone()]),
                )]);
                deserialize(descriptor, &single).is_err()
            });
            if let Some((index, item)) = failing {
                let _ = write!(path, "[{index}]");
                descend(item, path);
            }
        }
        value if !field.is_list() => descend(value, path),
        _ => {}
    }
}

/// One wrong key (or value) of a proto3 JSON resource, where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError {
    pub line: u64,
    pub column: u64,
    /// e.g. `endpoints[0].loadBalancingWeight`.
    pub path: String,
    pub message: String,
}

/// Every wrong key of a resource written in proto3 JSON, each at its
/// position, in file order: a key the message does not have (with the
/// nearest name it does), a value of the wrong type, an `Any` whose
/// `@type` is unknown. Empty if it converts. Like `failing_path`, it
/// finds them by converting one key at a time, so it runs on the error
/// path only.
pub fn key_errors(value: &Spanned<SpannedJson>) -> Vec<KeyError> {
    let mut errors = Vec::new();
    let Some((_, type_url)) = value.value.get("@type") else {
        return errors;
    };
    let SpannedJson::String(url) = &type_url.value else {
        return errors;
    };
    let name = url.rsplit('/').next().unwrap_or_default();
    if let Some(descriptor) = descriptor_pool()
        .ok()
        .and_then(|p| p.get_message_by_name(name))
    {
        object_errors(&descriptor, &value.value, "", &mut errors);
    }
    errors.sort_by_key(|e| (e.line, e.column));
    errors
}

fn object_errors(
    descriptor: &MessageDescriptor,
    object: &SpannedJson,
    path: &str,
    errors: &mut Vec<KeyError>,
) {
    let SpannedJson::Object(entries) = object else {
        return;
    };
    for (key, value) in entries {
        if key.value == "@type" {
            continue;
        }
        let single = serde_json::Map::from_iter([(key.value.clone(), value.value.to_json())]);
        let Err(error) = deserialize(descriptor, &single) else {
            continue;
        };
        let here = join(path, &key.value);
        let Some(field) = descriptor
            .get_field_by_json_name(&key.value)
            .or_else(|| descriptor.get_field_by_name(&key.value))
        else {
            let names: Vec<String> = descriptor
                .fields()
                .flat_map(|f| [f.name().to_string(), f.json_name().to_string()])
                .collect();
            let hint = crate::check::closest(&key.value, &names)
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            errors.push(KeyError {
                line: key.line,
                column: key.column,
                path: here,
                message: format!(
                    "{} has no field `{}`{hint}",
                    descriptor.full_name(),
                    key.value
                ),
            });
            continue;
        };
        let before = errors.len();
        if let Some(message) = field.kind().as_message().filter(|_| !field.is_map()) {
            match &value.value {
                SpannedJson::Array(items) if field.is_list() => {
                    for (index, item) in items.iter().enumerate() {
                        let item_path = format!("{here}[{index}]");
                        let one = serde_json::Map::from_iter([(
                            key.value.clone(),
                            serde_json::Value::Array(vec![item.value.to_json()]),
                        )]);
                        if deserialize(descriptor, &one).is_ok() {
                            continue;
                        }
                        let inner = errors.len();
                        message_errors(message, item, &item_path, errors);
                        if errors.len() == inner {
                            errors.push(located(item, &item_path, &error));
                        }
                    }
                }
                _ if !field.is_list() => message_errors(message, value, &here, errors),
                _ => {}
            }
        }
        if errors.len() == before {
            errors.push(located(value, &here, &error));
        }
    }
}

/// The errors inside one message value; an `Any` by its `@type`.
fn message_errors(
    message: &MessageDescriptor,
    value: &Spanned<SpannedJson>,
    path: &str,
    errors: &mut Vec<KeyError>,
) {
    if message.full_name() == "google.protobuf.Any" {
        let Some((key, type_url)) = value.value.get("@type") else {
            return;
        };
        let SpannedJson::String(url) = &type_url.value else {
            return;
        };
        let name = url.rsplit('/').next().unwrap_or_default();
        match descriptor_pool()
            .ok()
            .and_then(|p| p.get_message_by_name(name))
        {
            Some(inner) => object_errors(&inner, &value.value, path, errors),
            None => errors.push(KeyError {
                line: key.line,
                column: key.column,
                path: join(path, "@type"),
                message: format!("unknown `@type` \"{url}\": not a message envoy-types knows"),
            }),
        }
    } else if !message.full_name().starts_with("google.protobuf.") {
        object_errors(message, &value.value, path, errors);
    }
}

fn located(value: &Spanned<SpannedJson>, path: &str, error: &serde_json::Error) -> KeyError {
    KeyError {
        line: value.line,
        column: value.column,
        path: path.to_string(),
        message: error.to_string(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::config::cluster::v3::Cluster;
    use envoy_types::pb::envoy::config::cluster::v3::cluster::{
        ClusterDiscoveryType, DiscoveryType, EdsClusterConfig, LbPolicy,
    };
    use envoy_types::pb::envoy::config::core::v3::{
        AggregatedConfigSource, ConfigSource, config_source::ConfigSourceSpecifier,
    };
    use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
    use envoy_types::pb::google::protobuf::Duration;
    use serde_json::json;

    fn decode_cluster(value: serde_json::Value) -> Cluster {
        let any = json_to_any(&value).expect("converts");
        assert_eq!(
            any.type_url,
            format!("{TYPE_URL_PREFIX}envoy.config.cluster.v3.Cluster")
        );
        Cluster::decode(any.value.as_slice()).expect("decodes")
    }

    fn eds_cluster() -> Cluster {
        Cluster {
            name: "c1".into(),
            cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
            eds_cluster_config: Some(EdsClusterConfig {
                eds_config: Some(ConfigSource {
                    config_source_specifier: Some(ConfigSourceSpecifier::Ads(
                        AggregatedConfigSource {},
                    )),
                    ..Default::default()
                }),
                service_name: "s1".into(),
            }),
            lb_policy: LbPolicy::RingHash as i32,
            connect_timeout: Some(Duration {
                seconds: 1,
                nanos: 500_000_000,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn camel_case_and_snake_case_keys_give_the_same_cluster() {
        let camel = json!({
            "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": "c1",
            "type": "EDS",
            "edsClusterConfig": {"edsConfig": {"ads": {}}, "serviceName": "s1"},
            "lbPolicy": "RING_HASH",
            "connectTimeout": "1.500s",
        });
        let snake = json!({
            "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": "c1",
            "type": "EDS",
            "eds_cluster_config": {"eds_config": {"ads": {}}, "service_name": "s1"},
            "lb_policy": "RING_HASH",
            "connect_timeout": "1.5s",
        });
        assert_eq!(decode_cluster(camel), eds_cluster());
        assert_eq!(decode_cluster(snake), eds_cluster());
    }

    #[test]
    fn well_known_types_work_nested() {
        // A wrapper (UInt32Value as a bare number) and an Any with @type.
        let cla = json!({
            "@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
            "clusterName": "e1",
            "endpoints": [{"loadBalancingWeight": 7, "lbEndpoints": []}],
        });
        let any = json_to_any(&cla).expect("converts");
        let decoded = ClusterLoadAssignment::decode(any.value.as_slice()).expect("decodes");
        assert_eq!(
            decoded.endpoints[0]
                .load_balancing_weight
                .as_ref()
                .map(|w| w.value),
            Some(7)
        );

        let cluster = json!({
            "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": "agg",
            "clusterType": {
                "name": "envoy.clusters.aggregate",
                "typedConfig": {
                    "@type": "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig",
                    "clusters": ["a", "b"],
                },
            },
        });
        let decoded = decode_cluster(cluster);
        let Some(ClusterDiscoveryType::ClusterType(custom)) = decoded.cluster_discovery_type else {
            panic!("no cluster_type: {decoded:?}");
        };
        let typed = custom.typed_config.expect("typed_config");
        assert_eq!(
            typed.type_url,
            "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"
        );
    }

    /// The checked-in descriptor set must be the one of the envoy-types the
    /// workspace builds with, or JSON would be read against stale messages.
    #[test]
    fn embedded_descriptors_match_the_envoy_types_crate() {
        const EMBEDDED_VERSION: &str = "0.7.7";
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = crate::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        // Offline, the full graph may name other platforms' crates that were
        // never downloaded; the host's graph is all that matters here.
        let version = std::process::Command::new(&cargo)
            .arg("-vV")
            .output()
            .expect("cargo -vV runs");
        let version = String::from_utf8_lossy(&version.stdout);
        let host = version
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .expect("cargo -vV names the host");
        let output = std::process::Command::new(&cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--offline",
                "--filter-platform",
                host,
            ])
            .arg("--manifest-path")
            .arg(&manifest)
            .output()
            .expect("cargo metadata runs");
        assert!(
            output.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let metadata: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
        let packages = metadata["packages"].as_array().expect("packages");
        let envoy_types: Vec<_> = packages
            .iter()
            .filter(|p| p["name"] == "envoy-types")
            .collect();
        assert_eq!(
            envoy_types.len(),
            1,
            "expected exactly one envoy-types in the workspace"
        );
        let version = envoy_types[0]["version"].as_str().expect("version");
        let manifest_path = envoy_types[0]["manifest_path"]
            .as_str()
            .expect("manifest_path");
        let crate_file = std::path::Path::new(manifest_path)
            .parent()
            .expect("crate dir")
            .join("src/generated/types.bin");
        let instructions = format!(
            "envoy-types is {version} (embedded descriptors are from {EMBEDDED_VERSION}): copy \
             {} to harness/descriptors/envoy-types-{version}.bin, delete the old copy, and \
             update DESCRIPTOR_SET in harness/src/scenario/proto_json.rs",
            crate_file.display()
        );
        assert_eq!(version, EMBEDDED_VERSION, "{instructions}");
        let crate_bytes = std::fs::read(&crate_file).expect("read envoy-types' types.bin");
        assert!(
            crate_bytes == DESCRIPTOR_SET,
            "descriptor sets differ; {instructions}"
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        assert_eq!(json_to_any(&json!([1])), Err(ProtoJsonError::NotAnObject));
        assert_eq!(
            json_to_any(&json!({"name": "c1"})),
            Err(ProtoJsonError::MissingType)
        );
        assert_eq!(
            json_to_any(&json!({"@type": 3})),
            Err(ProtoJsonError::TypeNotAString)
        );
        assert!(matches!(
            json_to_any(&json!({"@type": "type.googleapis.com/no.Such"})),
            Err(ProtoJsonError::UnknownType(t)) if t == "type.googleapis.com/no.Such"
        ));
        let unknown_field = json_to_any(&json!({
            "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "nmae": "c1",
        }))
        .expect_err("unknown field");
        assert!(
            unknown_field.to_string().contains("nmae"),
            "{unknown_field}"
        );
        let wrong_type = json_to_any(&json!({
            "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": ["c1"],
        }))
        .expect_err("wrong type");
        assert!(
            wrong_type
                .to_string()
                .starts_with("envoy.config.cluster.v3.Cluster at name: "),
            "{wrong_type}"
        );
    }

    #[test]
    fn errors_say_where_in_the_json() {
        let path = |value: serde_json::Value| match json_to_any(&value) {
            Err(ProtoJsonError::Invalid { path, .. }) => path,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            path(json!({
                "@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
                "clusterName": "e1",
                "endpoints": [{"loadBalancingWeight": 1}, {"loadBalancingWeight": "heavy"}],
            })),
            "endpoints[1].loadBalancingWeight"
        );
        assert_eq!(
            path(json!({
                "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
                "name": "c1",
                "eds_cluster_config": {"eds_config": {"adz": {}}},
            })),
            "eds_cluster_config.eds_config.adz"
        );
        assert_eq!(
            path(json!({
                "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
                "apiListener": {"apiListener": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    "httpFilters": [{"name": "router", "typedConfig": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
                        "suppressEnvoyHeaders": "maybe",
                    }}],
                }},
            })),
            "apiListener.apiListener.httpFilters[0].typedConfig.suppressEnvoyHeaders"
        );
    }
}
