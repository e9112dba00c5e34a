//! A `KumaResource` in and out of the `Any` a delta `Resource` carries.

use std::collections::BTreeMap;

use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};

use super::name::{KdsName, hash_suffixed};
use super::proto::{KumaResource, kuma_resource::Meta};
use super::zone::labels;

/// The labels whose values a Kuma 2.14 control plane hashes into a name,
/// in order (`HashSuffixMapper(_, kuma.io/zone, k8s.kuma.io/namespace)`,
/// `pkg/kds/context/context.go:95-98` and `:113` at v2.14.3).
pub const HASHED_LABELS: [&str; 2] = [labels::ZONE, labels::KUBE_NAMESPACE];

/// An `Any` that is not a `KumaResource`.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("the Any holds {found:?}, not kuma.mesh.v1alpha1.KumaResource")]
    WrongType { found: String },
    #[error("the KumaResource does not decode: {0}")]
    Undecodable(#[from] prost::DecodeError),
}

/// A resource with its key, labels and spec (no status, version empty).
pub fn kuma_resource(
    key: &KdsName,
    labels: BTreeMap<String, String>,
    spec: Option<Any>,
) -> KumaResource {
    KumaResource {
        meta: Some(Meta {
            name: key.name.clone(),
            mesh: key.mesh.clone(),
            version: String::new(),
            labels,
        }),
        spec,
        status: None,
    }
}

/// `resource` packed as KDS sends it (type URL
/// `type.googleapis.com/kuma.mesh.v1alpha1.KumaResource`).
pub fn pack(resource: &KumaResource) -> Any {
    Any {
        type_url: KumaResource::type_url(),
        value: resource.encode_to_vec(),
    }
}

/// The `KumaResource` in `any`; like Kuma's zone, only the type name after
/// the last `/` is compared.
pub fn unpack(any: &Any) -> Result<KumaResource, UnpackError> {
    let found = any.type_url.rsplit('/').next().unwrap_or_default();
    if found != KumaResource::full_name() {
        return Err(UnpackError::WrongType {
            found: any.type_url.clone(),
        });
    }
    Ok(KumaResource::decode(any.value.as_slice())?)
}

impl KumaResource {
    /// Its `<name>.<mesh>` (empty parts when it has no meta).
    pub fn kds_name(&self) -> KdsName {
        let meta = self.meta.clone().unwrap_or_default();
        KdsName::new(meta.name, meta.mesh)
    }

    /// Renames it as a Kuma 2.14 control plane renames what it sends over
    /// KDS (`HashSuffixMapper`, `pkg/kds/context/context.go:234-252` at
    /// v2.14.3): its name becomes [`hash_suffixed`] over its mesh, its
    /// display name (the `kuma.io/display-name` label if set, else its
    /// name) and the values of the [`HASHED_LABELS`] it carries; the label
    /// is set to the old name if it was empty (`util.WithName`,
    /// `pkg/kds/util/meta.go:24-31`). Returns its new `<name>.<mesh>`.
    pub fn hash_suffix(&mut self) -> KdsName {
        let meta = self.meta.get_or_insert_with(Default::default);
        let display = match meta.labels.get(labels::DISPLAY_NAME) {
            Some(display) if !display.is_empty() => display.clone(),
            _ => meta.name.clone(),
        };
        let values: Vec<&str> = HASHED_LABELS
            .iter()
            .filter_map(|label| meta.labels.get(*label).map(String::as_str))
            .collect();
        let hashed = hash_suffixed(&meta.mesh, &display, &values);
        let old = std::mem::replace(&mut meta.name, hashed);
        let label = meta
            .labels
            .entry(labels::DISPLAY_NAME.to_string())
            .or_default();
        if label.is_empty() {
            *label = old;
        }
        KdsName::new(meta.name.clone(), meta.mesh.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_suffixing_is_kumas_mapper() {
        // Observed on kuma-cp 2.14.3 (KDS-FACTS 4.8, section 5): `mt-1`
        // made on a global reached its zone as `mt-1-xz8287465c2624wz`,
        // and a zone's `dp-1` its global as `dp-1-dff6z597w47d46xx`.
        let mut policy = kuma_resource(&KdsName::new("mt-1", "default"), BTreeMap::new(), None);
        assert_eq!(
            policy.hash_suffix(),
            KdsName::new("mt-1-xz8287465c2624wz", "default")
        );
        assert_eq!(
            policy.meta.as_ref().unwrap().labels[labels::DISPLAY_NAME],
            "mt-1"
        );
        let zone = BTreeMap::from([(labels::ZONE.to_string(), "zone-1".to_string())]);
        let mut dataplane = kuma_resource(&KdsName::new("dp-1", "default"), zone, None);
        assert_eq!(dataplane.hash_suffix().name, "dp-1-dff6z597w47d46xx");
        // A resource that carries its display name is hashed over it, and
        // keeps it.
        let named = BTreeMap::from([(labels::DISPLAY_NAME.to_string(), "mt-1".to_string())]);
        let mut renamed = kuma_resource(&KdsName::new("mt-1-old", "default"), named, None);
        assert_eq!(renamed.hash_suffix().name, "mt-1-xz8287465c2624wz");
        assert_eq!(
            renamed.meta.as_ref().unwrap().labels[labels::DISPLAY_NAME],
            "mt-1"
        );
    }

    #[test]
    fn packs_and_unpacks_with_kumas_field_numbers() {
        let spec = Any {
            type_url: "type.googleapis.com/kuma.mesh.v1alpha1.Mesh".into(),
            value: vec![1, 2, 3],
        };
        let labels = BTreeMap::from([("kuma.io/origin".to_string(), "global".to_string())]);
        let resource = kuma_resource(&KdsName::global("mesh-1"), labels, Some(spec));
        let any = pack(&resource);
        assert_eq!(
            any.type_url,
            "type.googleapis.com/kuma.mesh.v1alpha1.KumaResource"
        );
        // meta is field 1 (0x0a), its name field 1 (0x0a): Kuma's numbers.
        assert_eq!(&any.value[..1], &[0x0a]);
        assert_eq!(any.value[2], 0x0a);
        let back = unpack(&any).expect("unpacks");
        assert_eq!(back, resource);
        assert_eq!(back.kds_name().to_string(), "mesh-1.");
    }

    #[test]
    fn meta_version_and_labels_are_fields_5_and_6() {
        let meta = Meta {
            version: "v".into(),
            labels: BTreeMap::from([("k".to_string(), "v".to_string())]),
            ..Default::default()
        };
        let bytes = meta.encode_to_vec();
        // Tag bytes: (field << 3) | 2 (length-delimited).
        assert_eq!(bytes[0], 5 << 3 | 2);
        assert_eq!(bytes[3], 6 << 3 | 2);
    }

    #[test]
    fn another_type_or_bad_bytes_do_not_unpack() {
        let wrong = Any {
            type_url: "type.googleapis.com/kuma.mesh.v1alpha1.Mesh".into(),
            value: vec![],
        };
        assert!(matches!(unpack(&wrong), Err(UnpackError::WrongType { .. })));
        let bad = Any {
            type_url: KumaResource::type_url(),
            value: vec![0xff, 0xff],
        };
        assert!(matches!(unpack(&bad), Err(UnpackError::Undecodable(_))));
    }
}
