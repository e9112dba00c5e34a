//! What a fake server serves: one named entry of one resource type, kept
//! exactly as it will go on the wire.
//!
//! The entry is an already-packed `Any` rather than a typed message so that a
//! scenario can serve things a real control plane never would: undecodable
//! bytes, an entry whose `type_url` disagrees with the stream's type, or a
//! `Resource` wrapper. The server never decodes entries; it only compares them.

use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};
use xds_vocabulary::codec;

/// One named entry of one resource type.
#[derive(Clone, Debug, PartialEq)]
pub struct ServedResource {
    /// The resource type (ADS stream type) this entry belongs to. It is what
    /// the store is keyed by and may differ from `entry.type_url` on purpose.
    pub type_url: String,
    /// The name the server files this entry under and reports in
    /// [`crate::event::RecordedResponse::resource_names`].
    pub name: String,
    /// Exactly what goes into `DiscoveryResponse.resources`.
    pub entry: Any,
}

impl ServedResource {
    /// A well-formed entry: `message` packed as an `Any` of its own type.
    pub fn from_message<M: Message + Name>(name: impl Into<String>, message: &M) -> Self {
        let type_url = M::type_url();
        Self {
            entry: Any {
                type_url: type_url.clone(),
                value: message.encode_to_vec(),
            },
            type_url,
            name: name.into(),
        }
    }

    /// An entry taken as given, for invalid ones: undecodable bytes, a wrong
    /// or empty `type_url` inside the `Any`.
    pub fn raw(type_url: impl Into<String>, name: impl Into<String>, entry: Any) -> Self {
        Self {
            type_url: type_url.into(),
            name: name.into(),
            entry,
        }
    }

    /// The same entry wrapped in an `envoy.service.discovery.v3.Resource`
    /// carrying this name and `version` (empty when `None`), as some control
    /// planes send it.
    pub fn wrapped(self, version: Option<String>) -> Self {
        let entry = codec::wrap(&self.name, &version.unwrap_or_default(), self.entry);
        Self {
            type_url: self.type_url,
            name: self.name,
            entry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::config::cluster::v3::Cluster;
    use envoy_types::pb::envoy::config::listener::v3::Listener;
    use envoy_types::pb::envoy::service::discovery::v3::Resource;
    use xds_vocabulary::ResourceType;

    #[test]
    fn from_message_packs_the_message_under_its_own_type() {
        let listener = Listener {
            name: "l1".into(),
            ..Default::default()
        };
        let served = ServedResource::from_message("l1", &listener);
        assert_eq!(served.type_url, ResourceType::Listener.type_url());
        assert_eq!(served.name, "l1");
        assert_eq!(served.entry.type_url, ResourceType::Listener.type_url());
        assert_eq!(
            Listener::decode(served.entry.value.as_slice()).ok(),
            Some(listener)
        );
    }

    #[test]
    fn raw_keeps_the_entry_untouched() {
        let entry = Any {
            type_url: String::new(),
            value: vec![0xff, 0xff],
        };
        let served = ServedResource::raw(ResourceType::Cluster.type_url(), "bad", entry.clone());
        assert_eq!(served.type_url, ResourceType::Cluster.type_url());
        assert_eq!(served.entry, entry);
    }

    #[test]
    fn wrapped_puts_the_entry_inside_a_resource() {
        let cluster = Cluster {
            name: "c1".into(),
            ..Default::default()
        };
        let plain = ServedResource::from_message("c1", &cluster);
        let wrapped = plain.clone().wrapped(Some("v9".into()));
        assert_eq!(wrapped.type_url, ResourceType::Cluster.type_url());
        assert_eq!(wrapped.name, "c1");
        assert_eq!(wrapped.entry.type_url, Resource::type_url());
        let resource = Resource::decode(wrapped.entry.value.as_slice()).ok();
        assert_eq!(
            resource,
            Some(Resource {
                name: "c1".into(),
                version: "v9".into(),
                resource: Some(plain.entry),
                ..Default::default()
            })
        );
    }
}
