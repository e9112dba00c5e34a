//! The rules a resource from the global must keep to be stored. One that
//! breaks one is not stored and its response is NACKed; its valid siblings
//! are stored (Kuma's `UpstreamResponse.Validate`, `pkg/kds/v2/client`).
//!
//! Kuma validates each type's spec with its own validator; the project's
//! specs are JSON objects (`xds_vocabulary::kds::zone::spec`), so the
//! rules here read JSON. One function per rule, all listed in [`RULES`]:
//! a new rule is a function and a line there.

use serde_json::{Map, Value};
use xds_vocabulary::kds::KumaResource;
use xds_vocabulary::kds::types;
use xds_vocabulary::kds::zone::spec;

/// A spec as the rules read it.
pub type Spec = Map<String, Value>;

/// Why a resource is invalid. The messages of Kuma's own rules are Kuma's
/// words, so a scenario can look for the same text on both zones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("name: must not be empty")]
    EmptyName,
    /// The spec is not a `google.protobuf.Struct` holding a JSON object.
    #[error("spec: a {type_url:?} is not a JSON object packed as google.protobuf.Struct")]
    SpecNotAnObject { type_url: String },
    #[error("mtls.enabledBackend: has to be set to one of the backends in the mesh")]
    UnknownMtlsBackend { backend: String },
}

/// One rule: what it finds wrong with a resource of `kuma_type` whose spec
/// decoded to `spec`.
pub type Rule = fn(kuma_type: &str, resource: &KumaResource, spec: &Spec) -> Result<(), Invalid>;

/// Every rule after the spec decoded, in the order they are checked.
pub const RULES: [Rule; 2] = [name_is_set, mesh_mtls_backend_exists];

/// The resource's spec, if it keeps every rule; the first rule it breaks
/// otherwise.
pub fn check(kuma_type: &str, resource: &KumaResource) -> Result<Spec, Invalid> {
    let spec = spec_is_an_object(resource)?;
    for rule in RULES {
        rule(kuma_type, resource, &spec)?;
    }
    Ok(spec)
}

/// The spec is a JSON object packed as a `Struct` (the project's form of
/// Kuma's specs). No spec at all is an empty one: Kuma's defaults.
pub fn spec_is_an_object(resource: &KumaResource) -> Result<Spec, Invalid> {
    match &resource.spec {
        None => Ok(Spec::new()),
        Some(any) => spec::unpack(any).ok_or_else(|| Invalid::SpecNotAnObject {
            type_url: any.type_url.clone(),
        }),
    }
}

/// A resource has a name (its mesh may be empty: global-scoped types).
pub fn name_is_set(_: &str, resource: &KumaResource, _: &Spec) -> Result<(), Invalid> {
    match &resource.meta {
        Some(meta) if !meta.name.is_empty() => Ok(()),
        _ => Err(Invalid::EmptyName),
    }
}

/// A Mesh's `mtls.enabledBackend`, when set, names one of its
/// `mtls.backends` (Kuma's `MeshResource.validateMtls`).
pub fn mesh_mtls_backend_exists(
    kuma_type: &str,
    _: &KumaResource,
    spec: &Spec,
) -> Result<(), Invalid> {
    if kuma_type != types::MESH {
        return Ok(());
    }
    let Some(mtls) = spec.get("mtls").and_then(Value::as_object) else {
        return Ok(());
    };
    let enabled = match mtls.get("enabledBackend") {
        Some(Value::String(name)) if !name.is_empty() => name,
        _ => return Ok(()),
    };
    let known = mtls
        .get("backends")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|backend| backend.get("name").and_then(Value::as_str) == Some(enabled));
    if known {
        Ok(())
    } else {
        Err(Invalid::UnknownMtlsBackend {
            backend: enabled.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use envoy_types::pb::google::protobuf::Any;
    use xds_vocabulary::kds::{KdsName, kuma_resource};

    use super::*;

    fn resource(name: &str, spec: serde_json::Value) -> KumaResource {
        let spec = spec.as_object().expect("an object").clone();
        kuma_resource(
            &KdsName::global(name),
            BTreeMap::new(),
            Some(spec::pack(&spec)),
        )
    }

    #[test]
    fn a_valid_mesh_passes_with_its_spec() {
        let mesh = resource(
            "m",
            serde_json::json!({"mtls": {"enabledBackend": "ca-1", "backends": [{"name": "ca-1", "type": "builtin"}]}}),
        );
        let spec = check(types::MESH, &mesh).expect("valid");
        assert_eq!(spec["mtls"]["enabledBackend"], "ca-1");
        assert!(check(types::MESH, &resource("m", serde_json::json!({}))).is_ok());
    }

    #[test]
    fn an_enabled_backend_must_be_one_of_the_backends() {
        let mesh = resource(
            "bad",
            serde_json::json!({"mtls": {"enabledBackend": "nope"}}),
        );
        let invalid = check(types::MESH, &mesh).expect_err("invalid");
        assert_eq!(
            invalid,
            Invalid::UnknownMtlsBackend {
                backend: "nope".into()
            }
        );
        assert_eq!(
            invalid.to_string(),
            "mtls.enabledBackend: has to be set to one of the backends in the mesh"
        );
        // Only Meshes have the rule.
        assert!(check(types::MESH_TIMEOUT, &mesh).is_ok());
    }

    #[test]
    fn a_name_is_required() {
        let nameless = resource("", serde_json::json!({}));
        assert_eq!(check(types::MESH, &nameless), Err(Invalid::EmptyName));
        let no_meta = KumaResource::default();
        assert_eq!(check(types::MESH, &no_meta), Err(Invalid::EmptyName));
    }

    #[test]
    fn a_spec_must_be_a_struct_packed_object() {
        let mut other = resource("m", serde_json::json!({}));
        other.spec = Some(Any {
            type_url: "type.googleapis.com/kuma.mesh.v1alpha1.Mesh".into(),
            value: vec![1, 2, 3],
        });
        assert_eq!(
            check(types::MESH, &other),
            Err(Invalid::SpecNotAnObject {
                type_url: "type.googleapis.com/kuma.mesh.v1alpha1.Mesh".into()
            })
        );
        let mut garbled = resource("m", serde_json::json!({}));
        garbled.spec = Some(Any {
            type_url: spec::STRUCT_TYPE_URL.into(),
            value: vec![0xff, 0xff],
        });
        assert!(matches!(
            check(types::MESH, &garbled),
            Err(Invalid::SpecNotAnObject { .. })
        ));
        let mut none = resource("m", serde_json::json!({}));
        none.spec = None;
        assert_eq!(check(types::MESH, &none), Ok(Spec::new()));
    }
}
