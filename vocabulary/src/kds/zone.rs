//! What the harness and a Kuma zone under test say to each other, beside
//! the wire: the zone's own (zone-origin) resources the harness hands it,
//! and what the zone reports about the resources it stores from its global.
//!
//! A zone's store is the KDS analogue of a watcher: a scenario checks what
//! the zone holds as it checks what a watcher heard. Specs are packed as
//! Kuma packs them (`super::spec`).

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
    /// A Kubernetes zone's namespace of a resource, hashed into its KDS
    /// name when present.
    pub const KUBE_NAMESPACE: &str = "k8s.kuma.io/namespace";
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
        /// The spec, one line (see [`super::spec::summary`]).
        spec: String,
    },
    /// A resource was deleted: named in `removed_resources`, or left out
    /// of a type's first response (the full sync).
    Removed {
        kuma_type: String,
        name: KdsName,
        /// The `kuma.io/display-name` it carried, if any: what a scenario
        /// names a hash-suffixed resource by.
        display_name: Option<String>,
    },
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

    /// The name its user gave it, `<display name>.<mesh>`, when it carries
    /// `kuma.io/display-name` (a name a Kuma 2.14 control plane
    /// hash-suffixed on the wire, `super::name::hash_suffixed`).
    pub fn display_name(&self) -> Option<KdsName> {
        let display = match self {
            ZoneStoreChange::Stored { labels: held, .. } => held.get(labels::DISPLAY_NAME),
            ZoneStoreChange::Removed { display_name, .. } => display_name.as_ref(),
        }?;
        (!display.is_empty()).then(|| KdsName::new(display.clone(), self.name().mesh.clone()))
    }
}
