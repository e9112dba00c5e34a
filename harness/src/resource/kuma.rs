//! Kuma resources (`kuma:` entries, a zone's own resources): built into the
//! `KumaResource` envelope KDS carries, the spec packed as Kuma packs it
//! (`xds_vocabulary::kds::spec`: a typed `Any` for a proto spec, JSON for
//! a policy), and served under the bare type name and the `<name>.<mesh>`
//! name a KDS global files them under.

use envoy_types::pb::google::protobuf::Any;
use prost::Name;
use xds_fake_server::ServedResource;
use xds_vocabulary::kds::{KdsName, KdsResource, KumaResource, kuma_resource, pack, spec};

use super::UNDECODABLE;
use super::file::KumaSpec;
use crate::check::kds::kuma_type;
use crate::check::{Problem, Spanned};

/// The resource as a zone holds it; errors point at `at` (the entry) or
/// at its type.
pub(crate) fn kds_resource<T>(spec: &KumaSpec, at: &Spanned<T>) -> Result<KdsResource, Problem> {
    let kuma_type = kuma_type(&spec.kuma_type)?;
    let problem = |message: String| Problem::at(at, format!("kuma `{}`: {message}", spec.name));
    if spec.name.is_empty() {
        return Err(Problem::at(at, "kuma: `name` is empty"));
    }
    if spec.undecodable == Some(true) {
        return Err(problem(
            "`undecodable` is for what a global sends (a server's resources, send_kds_response), \
             not for a zone's own resources"
                .to_string(),
        ));
    }
    // No spec is Kuma's empty one: a real global always sends a spec
    // (`model.ToAny` of an empty message or struct), and a zone ends its
    // connection on a resource without one (KDS-FACTS 4.8).
    let empty = serde_json::Map::new();
    let map = match &spec.spec {
        None => &empty,
        Some(serde_json::Value::Object(map)) => map,
        Some(other) => {
            return Err(problem(format!(
                "`spec` must be a mapping (a JSON object), not {}",
                json_kind(other)
            )));
        }
    };
    let spec_any = spec::pack(&kuma_type, map).map_err(|e| problem(e.to_string()))?;
    let key = KdsName::new(&spec.name, spec.mesh.clone().unwrap_or_default());
    let labels = spec
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(KdsResource {
        kuma_type,
        resource: kuma_resource(&key, labels, Some(spec_any)),
    })
}

/// The entry a KDS global serves; `undecodable: true` serves bytes no
/// decoder reads as a `KumaResource`.
pub(super) fn served<T>(spec: &KumaSpec, at: &Spanned<T>) -> Result<ServedResource, Problem> {
    if spec.undecodable == Some(true) {
        let kuma_type = kuma_type(&spec.kuma_type)?;
        let others = [
            ("labels", !spec.labels.is_empty()),
            ("spec", spec.spec.is_some()),
        ];
        if let Some((key, _)) = others.iter().find(|(_, set)| *set) {
            return Err(Problem::at(
                at,
                format!(
                    "kuma `{}`: `undecodable` and `{key}` exclude each other",
                    spec.name
                ),
            ));
        }
        let key = KdsName::new(&spec.name, spec.mesh.clone().unwrap_or_default());
        return Ok(ServedResource::raw(
            kuma_type,
            key.to_string(),
            Any {
                type_url: KumaResource::type_url(),
                value: UNDECODABLE.to_vec(),
            },
        ));
    }
    let resource = kds_resource(spec, at)?;
    Ok(ServedResource::raw(
        resource.kuma_type.clone(),
        resource.key().to_string(),
        pack(&resource.resource),
    ))
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::file::ResourceSpec;
    use xds_vocabulary::kds::unpack;

    fn entry(yaml: &str) -> Spanned<ResourceSpec> {
        serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("test YAML: {e}"))
    }

    #[test]
    fn a_kuma_entry_is_served_in_its_envelope_under_its_kds_name() {
        let served = crate::resource::build(
            &entry(
                "kuma: {type: MeshTrafficPermission, name: allow, mesh: default, \
                 labels: {kuma.io/origin: global}, spec: {targetRef: {kind: Mesh}}}",
            ),
            &[],
        )
        .unwrap_or_else(|p| panic!("{}", p.message()));
        assert_eq!(served.type_url, "MeshTrafficPermission");
        assert_eq!(served.name, "allow.default");
        let resource = unpack(&served.entry).expect("a KumaResource");
        let meta = resource.meta.clone().expect("meta");
        assert_eq!(
            (meta.name.as_str(), meta.mesh.as_str()),
            ("allow", "default")
        );
        assert_eq!(meta.labels["kuma.io/origin"], "global");
        assert_eq!(
            spec::summary("MeshTrafficPermission", resource.spec.as_ref()),
            r#"{"targetRef":{"kind":"Mesh"}}"#
        );
    }

    #[test]
    fn bad_entries_are_located_and_say_what_was_expected() {
        let problem = |yaml: &str| {
            crate::resource::build(&entry(yaml), &[])
                .map(|_| ())
                .unwrap_err()
                .message()
                .to_string()
        };
        assert!(problem("kuma: {type: Mesh, name: m, spec: [1]}").contains("must be a mapping"));
        assert!(problem("kuma: {type: Meshh, name: m}").contains("did you mean `Mesh`"));
        assert!(
            problem("kuma: {type: Mesh, name: m, undecodable: true, spec: {}}")
                .contains("exclude each other")
        );
        assert!(problem("kuma: {type: Mesh, name: ''}").contains("empty"));
        // A proto spec must fit Kuma's message.
        assert!(
            problem("kuma: {type: Mesh, name: m, spec: {mtlss: {}}}").contains("mtlss"),
            "an unknown field of a Mesh"
        );
    }

    #[test]
    fn an_undecodable_entry_does_not_decode() {
        let served = crate::resource::build(
            &entry("kuma: {type: Mesh, name: bad, undecodable: true}"),
            &[],
        )
        .unwrap_or_else(|p| panic!("{}", p.message()));
        assert_eq!(served.name, "bad.");
        assert!(unpack(&served.entry).is_err());
    }
}
