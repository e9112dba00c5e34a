//! A `KumaResource` in and out of the `Any` a delta `Resource` carries.

use std::collections::BTreeMap;

use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};

use super::name::KdsName;
use super::proto::{KumaResource, kuma_resource::Meta};

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
}

#[cfg(test)]
mod tests {
    use super::*;

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
