//! The rules a resource from the global must keep to be stored. One that
//! breaks one is not stored and its response is NACKed; its valid siblings
//! are stored (Kuma's `UpstreamResponse.Validate`, `pkg/kds/v2/client`).
//!
//! The spec is decoded first, as Kuma's zone decodes it ([`decode`]): a
//! spec that does not decode is no validation failure but a receive error
//! that ends the connection (KDS-FACTS 4.8). The rules read the decoded
//! spec as JSON. One function per rule, all listed in [`RULES`]: a new
//! rule is a function and a line there.

use serde_json::{Map, Value};
use xds_vocabulary::kds::KumaResource;
use xds_vocabulary::kds::spec::{self, SpecError, Unpacked};
use xds_vocabulary::kds::types;

/// A spec as the rules read it.
pub type Spec = Map<String, Value>;

/// Why a resource is invalid. The messages of Kuma's own rules are Kuma's
/// words, so a scenario can look for the same text on both zones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("name: must not be empty")]
    EmptyName,
    #[error("mtls.enabledBackend: has to be set to one of the backends in the mesh")]
    UnknownMtlsBackend { backend: String },
    #[error("spec.targetRef.kind: must be defined")]
    TargetRefKindMissing,
    #[error("spec.targetRef.kind: value '{kind}' is not supported")]
    TargetRefKindUnsupported { kind: String },
    #[error("spec: fields 'to' and 'from' must be empty when 'rules' is defined")]
    RulesBesideToOrFrom,
    #[error("spec: at least one of 'from', 'to' or 'rules' has to be defined")]
    NoToFromOrRules,
}

/// A spec the zone cannot read: Kuma's zone returns the error from its
/// receive loop, ending the connection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Undecodable {
    /// No spec at all: Kuma's `anypb.UnmarshalTo` of a nil `Any` ("invalid
    /// nil source message"); for a JSON-spec type Kuma dereferences the nil
    /// `Any` and its process dies (`utils.go:77`). The reference ends the
    /// connection for both.
    #[error("invalid nil source message")]
    NoSpec,
    #[error(transparent)]
    Spec(#[from] SpecError),
}

/// The resource's spec as Kuma's `FromAny` reads it: a proto-spec type's
/// only from a typed `Any` of its message, any other type's from JSON.
/// A proto spec of a message the project does not define is taken unread
/// (an empty object to the rules).
pub fn decode(kuma_type: &str, resource: &KumaResource) -> Result<Unpacked, Undecodable> {
    let any = resource.spec.as_ref().ok_or(Undecodable::NoSpec)?;
    Ok(spec::unpack(kuma_type, any)?)
}

/// One rule: what it finds wrong with a resource of `kuma_type` whose spec
/// decoded to `spec`.
pub type Rule = fn(kuma_type: &str, resource: &KumaResource, spec: &Spec) -> Result<(), Invalid>;

/// Every rule after the spec decoded, in the order they are checked.
pub const RULES: [Rule; 2] = [name_is_set, mesh_mtls_backend_exists];

/// The rules of the new-style policies' own validators, after [`RULES`].
pub const POLICY_RULES: [Rule; 2] = [
    mesh_timeout_target_ref_kind,
    mesh_timeout_has_to_from_or_rules,
];

/// Whether the resource with its decoded spec keeps every rule
/// (`with_policy_rules`: [`POLICY_RULES`] too); the first rule it breaks
/// otherwise.
pub fn check(
    kuma_type: &str,
    resource: &KumaResource,
    spec: &Spec,
    with_policy_rules: bool,
) -> Result<(), Invalid> {
    let policy_rules: &[Rule] = if with_policy_rules {
        &POLICY_RULES
    } else {
        &[]
    };
    for rule in RULES.iter().chain(policy_rules) {
        rule(kuma_type, resource, spec)?;
    }
    Ok(())
}

/// The label naming a policy's role; without it the role is `system`
/// (Kuma's `model.PolicyRole`, `pkg/core/resources/model/resource.go:523-528`).
const POLICY_ROLE: &str = "kuma.io/policy-role";

/// A MeshTimeout's top-level `targetRef`, when set, is of a kind it
/// supports (`pkg/plugins/policies/meshtimeout/api/v1alpha1/validator.go:32-63`
/// at v2.14.3, `ValidateTargetRef`): a `system` policy (no role label) may
/// target Mesh, MeshSubset, Dataplane, MeshGateway, MeshService,
/// MeshServiceSubset, MeshHTTPRoute; any other role the same without
/// MeshGateway and MeshHTTPRoute.
pub fn mesh_timeout_target_ref_kind(
    kuma_type: &str,
    resource: &KumaResource,
    spec: &Spec,
) -> Result<(), Invalid> {
    if kuma_type != types::MESH_TIMEOUT {
        return Ok(());
    }
    let Some(target_ref) = spec.get("targetRef").and_then(Value::as_object) else {
        return Ok(());
    };
    let kind = match target_ref.get("kind") {
        Some(Value::String(kind)) if !kind.is_empty() => kind.as_str(),
        _ => return Err(Invalid::TargetRefKindMissing),
    };
    let system = resource
        .meta
        .as_ref()
        .and_then(|meta| meta.labels.get(POLICY_ROLE))
        .is_none_or(|role| role == "system");
    let mut supported = vec![
        "Mesh",
        "MeshSubset",
        "Dataplane",
        "MeshService",
        "MeshServiceSubset",
    ];
    if system {
        supported.extend(["MeshGateway", "MeshHTTPRoute"]);
    }
    if supported.contains(&kind) {
        Ok(())
    } else {
        Err(Invalid::TargetRefKindUnsupported {
            kind: kind.to_string(),
        })
    }
}

/// A MeshTimeout has `to`, `from` or `rules`, and `rules` excludes the
/// other two (`validator.go:19-24` at v2.14.3).
pub fn mesh_timeout_has_to_from_or_rules(
    kuma_type: &str,
    _: &KumaResource,
    spec: &Spec,
) -> Result<(), Invalid> {
    if kuma_type != types::MESH_TIMEOUT {
        return Ok(());
    }
    let set = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .is_some_and(|items| !items.is_empty())
    };
    match (set("rules"), set("to") || set("from")) {
        (true, true) => Err(Invalid::RulesBesideToOrFrom),
        (false, false) => Err(Invalid::NoToFromOrRules),
        _ => Ok(()),
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

    fn resource(kuma_type: &str, name: &str, spec: serde_json::Value) -> KumaResource {
        let spec = spec.as_object().expect("an object").clone();
        kuma_resource(
            &KdsName::global(name),
            BTreeMap::new(),
            Some(spec::pack(kuma_type, &spec).expect("packs")),
        )
    }

    fn decode_and_check(kuma_type: &str, resource: &KumaResource) -> Result<Spec, Invalid> {
        let spec = match decode(kuma_type, resource).expect("decodes") {
            Unpacked::Object(spec) => spec,
            Unpacked::Opaque => Spec::new(),
        };
        check(kuma_type, resource, &spec, true).map(|()| spec)
    }

    #[test]
    fn a_valid_mesh_passes_with_its_spec() {
        let mesh = resource(
            types::MESH,
            "m",
            serde_json::json!({"mtls": {"enabledBackend": "ca-1", "backends": [{"name": "ca-1", "type": "builtin"}]}}),
        );
        let spec = decode_and_check(types::MESH, &mesh).expect("valid");
        assert_eq!(spec["mtls"]["enabledBackend"], "ca-1");
        let empty = resource(types::MESH, "m", serde_json::json!({}));
        assert!(decode_and_check(types::MESH, &empty).is_ok());
    }

    #[test]
    fn an_enabled_backend_must_be_one_of_the_backends() {
        let mesh = resource(
            types::MESH,
            "bad",
            serde_json::json!({"mtls": {"enabledBackend": "nope"}}),
        );
        let invalid = decode_and_check(types::MESH, &mesh).expect_err("invalid");
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
        let spec = serde_json::json!({"mtls": {"enabledBackend": "nope"}, "to": [{}]});
        let timeout = resource(types::MESH_TIMEOUT, "t", spec);
        assert!(decode_and_check(types::MESH_TIMEOUT, &timeout).is_ok());
    }

    #[test]
    fn a_name_is_required() {
        let nameless = resource(types::MESH, "", serde_json::json!({}));
        assert_eq!(
            decode_and_check(types::MESH, &nameless),
            Err(Invalid::EmptyName)
        );
        let no_meta = KumaResource::default();
        assert_eq!(
            check(types::MESH, &no_meta, &Spec::new(), true),
            Err(Invalid::EmptyName)
        );
    }

    #[test]
    fn a_mesh_timeout_keeps_kumas_rules() {
        let timeout = |spec: serde_json::Value| resource(types::MESH_TIMEOUT, "t", spec);
        let to =
            serde_json::json!([{"targetRef": {"kind": "Mesh"}, "default": {"idleTimeout": "1s"}}]);
        let ok = timeout(serde_json::json!({"targetRef": {"kind": "Mesh"}, "to": to}));
        assert!(decode_and_check(types::MESH_TIMEOUT, &ok).is_ok());
        let bad_kind =
            timeout(serde_json::json!({"targetRef": {"kind": "MeshExternalService"}, "to": to}));
        let invalid = decode_and_check(types::MESH_TIMEOUT, &bad_kind).expect_err("unsupported");
        assert_eq!(
            invalid.to_string(),
            "spec.targetRef.kind: value 'MeshExternalService' is not supported"
        );
        let no_kind = timeout(serde_json::json!({"targetRef": {}, "to": to}));
        assert_eq!(
            decode_and_check(types::MESH_TIMEOUT, &no_kind),
            Err(Invalid::TargetRefKindMissing)
        );
        let only_target = timeout(serde_json::json!({"targetRef": {"kind": "Mesh"}}));
        assert_eq!(
            decode_and_check(types::MESH_TIMEOUT, &only_target),
            Err(Invalid::NoToFromOrRules)
        );
        let both = timeout(serde_json::json!({"rules": [{}], "to": to}));
        assert_eq!(
            decode_and_check(types::MESH_TIMEOUT, &both),
            Err(Invalid::RulesBesideToOrFrom)
        );
        // A role other than system drops MeshGateway.
        let mut producer =
            timeout(serde_json::json!({"targetRef": {"kind": "MeshGateway"}, "to": to}));
        assert!(decode_and_check(types::MESH_TIMEOUT, &producer).is_ok());
        if let Some(meta) = producer.meta.as_mut() {
            meta.labels.insert(POLICY_ROLE.into(), "producer".into());
        }
        assert!(decode_and_check(types::MESH_TIMEOUT, &producer).is_err());
        // Without the policy rules, as the broken zone checks.
        assert!(check(types::MESH_TIMEOUT, &only_target, &Spec::new(), false).is_ok());
    }

    #[test]
    fn a_spec_decodes_only_as_kuma_encodes_it() {
        // A Struct-packed spec (the harness's old form) under a proto type.
        let mut other = resource(types::MESH, "m", serde_json::json!({}));
        other.spec = Some(Any {
            type_url: "type.googleapis.com/google.protobuf.Struct".into(),
            value: vec![],
        });
        assert!(matches!(
            decode(types::MESH, &other),
            Err(Undecodable::Spec(SpecError::MismatchedType { .. }))
        ));
        // Protobuf bytes where JSON is due.
        let mut garbled = resource(types::MESH_TIMEOUT, "t", serde_json::json!({}));
        garbled.spec = Some(Any {
            type_url: String::new(),
            value: vec![0x0a, 0x00],
        });
        assert!(matches!(
            decode(types::MESH_TIMEOUT, &garbled),
            Err(Undecodable::Spec(SpecError::Undecodable { .. }))
        ));
        let mut none = resource(types::MESH, "m", serde_json::json!({}));
        none.spec = None;
        assert_eq!(decode(types::MESH, &none), Err(Undecodable::NoSpec));
    }
}
