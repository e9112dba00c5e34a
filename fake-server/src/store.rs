//! The resource store of one server: per resource type, the named entries it
//! serves and the type's version.
//!
//! Versions are deterministic: each type counts its store changes from 1 and
//! its version is that count, unless the caller names a version, in which case
//! that string is the version. Each resource also has a version of its own
//! (what delta xDS sends): the type's version at the change that last
//! changed its content, so setting an identical resource again keeps it.

use std::collections::{BTreeMap, BTreeSet};

use crate::event::ServerEvent;
use crate::resource::ServedResource;

/// All resources of all types a server serves.
#[derive(Debug, Default)]
pub(crate) struct Store {
    types: BTreeMap<String, TypeStore>,
}

#[derive(Debug, Default)]
struct TypeStore {
    version: String,
    changes: u64,
    resources: BTreeMap<String, ServedResource>,
    /// Per resource: the type's version when its content last changed.
    versions: BTreeMap<String, String>,
}

impl TypeStore {
    fn bump(&mut self, version: Option<String>) -> String {
        self.changes += 1;
        self.version = version.unwrap_or_else(|| self.changes.to_string());
        self.version.clone()
    }
}

/// One store change of one type, as it is recorded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub type_url: String,
    pub version: String,
    pub updated: Vec<String>,
    pub removed: Vec<String>,
}

impl Change {
    /// The names it set or removed.
    pub fn names(&self) -> BTreeSet<String> {
        self.updated.iter().chain(&self.removed).cloned().collect()
    }

    pub fn into_event(self) -> ServerEvent {
        ServerEvent::ResourcesChanged {
            type_url: self.type_url,
            version: self.version,
            updated: self.updated,
            removed: self.removed,
        }
    }
}

impl Store {
    /// Adds or replaces `resources` (a later entry of the same type and name
    /// wins). One change per type touched, in type URL order.
    pub fn set(&mut self, resources: Vec<ServedResource>, version: Option<String>) -> Vec<Change> {
        let mut by_type: BTreeMap<String, Vec<ServedResource>> = BTreeMap::new();
        for resource in resources {
            by_type
                .entry(resource.type_url.clone())
                .or_default()
                .push(resource);
        }
        by_type
            .into_iter()
            .map(|(type_url, resources)| {
                let store = self.types.entry(type_url.clone()).or_default();
                let version = store.bump(version.clone());
                let mut updated = BTreeSet::new();
                for resource in resources {
                    updated.insert(resource.name.clone());
                    if store.resources.get(&resource.name) != Some(&resource) {
                        store
                            .versions
                            .insert(resource.name.clone(), version.clone());
                    }
                    store.resources.insert(resource.name.clone(), resource);
                }
                Change {
                    version,
                    type_url,
                    updated: updated.into_iter().collect(),
                    removed: Vec::new(),
                }
            })
            .collect()
    }

    /// Removes `names` of `type_url`. Always a store change (the version
    /// moves, as a control plane's would on a removal request); `removed`
    /// lists the names that actually existed.
    pub fn remove(&mut self, type_url: &str, names: &[String], version: Option<String>) -> Change {
        let store = self.types.entry(type_url.to_string()).or_default();
        let removed: BTreeSet<String> = names
            .iter()
            .filter(|name| {
                store.versions.remove(name.as_str());
                store.resources.remove(name.as_str()).is_some()
            })
            .cloned()
            .collect();
        Change {
            version: store.bump(version),
            type_url: type_url.to_string(),
            updated: Vec::new(),
            removed: removed.into_iter().collect(),
        }
    }

    /// Forgets everything, versions included, as a control plane that
    /// restarted without persistent state: the next change of a type is
    /// version "1" again. One change per type that had resources.
    pub fn clear(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.types)
            .into_iter()
            .filter(|(_, store)| !store.resources.is_empty())
            .map(|(type_url, store)| Change {
                type_url,
                version: String::new(),
                updated: Vec::new(),
                removed: store.resources.into_keys().collect(),
            })
            .collect()
    }

    /// The type's current version; empty when the type was never changed.
    pub fn version(&self, type_url: &str) -> String {
        self.types
            .get(type_url)
            .map(|store| store.version.clone())
            .unwrap_or_default()
    }

    /// The type's resources by name, if the type was ever changed.
    pub fn resources(&self, type_url: &str) -> Option<&BTreeMap<String, ServedResource>> {
        self.types.get(type_url).map(|store| &store.resources)
    }

    /// The version of one resource (see the module's comment).
    pub fn resource_version(&self, type_url: &str, name: &str) -> Option<&str> {
        self.types
            .get(type_url)?
            .versions
            .get(name)
            .map(String::as_str)
    }

    /// The type's resource names, sorted.
    pub fn names(&self, type_url: &str) -> Vec<String> {
        self.resources(type_url)
            .map(|resources| resources.keys().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::google::protobuf::Any;

    fn res(type_url: &str, name: &str, value: u8) -> ServedResource {
        ServedResource::raw(
            type_url,
            name,
            Any {
                type_url: type_url.into(),
                value: vec![value],
            },
        )
    }

    #[test]
    fn versions_count_changes_per_type_unless_given() {
        let mut store = Store::default();
        let changes = store.set(vec![res("b", "x", 1), res("a", "y", 1)], None);
        let versions: Vec<_> = changes
            .iter()
            .map(|c| (c.type_url.as_str(), c.version.as_str()))
            .collect();
        assert_eq!(versions, vec![("a", "1"), ("b", "1")]);
        let changes = store.set(vec![res("a", "y", 2)], Some("v-explicit".into()));
        assert_eq!(changes[0].version, "v-explicit");
        assert_eq!(store.version("a"), "v-explicit");
        let change = store.remove("a", &["y".into()], None);
        assert_eq!(change.version, "3");
        assert_eq!(store.version("b"), "1");
        assert_eq!(store.version("never"), "");
    }

    #[test]
    fn set_replaces_and_a_later_duplicate_wins() {
        let mut store = Store::default();
        store.set(vec![res("a", "x", 1)], None);
        let changes = store.set(
            vec![res("a", "x", 2), res("a", "x", 3), res("a", "w", 1)],
            None,
        );
        assert_eq!(
            changes,
            vec![Change {
                type_url: "a".into(),
                version: "2".into(),
                updated: vec!["w".into(), "x".into()],
                removed: vec![],
            }]
        );
        let stored = store
            .resources("a")
            .and_then(|r| r.get("x"))
            .map(|r| r.entry.value.clone());
        assert_eq!(stored, Some(vec![3]));
        assert_eq!(store.names("a"), vec!["w".to_string(), "x".to_string()]);
    }

    #[test]
    fn a_resource_keeps_its_version_until_its_content_changes() {
        let mut store = Store::default();
        store.set(vec![res("a", "x", 1), res("a", "y", 1)], None);
        store.set(vec![res("a", "x", 1), res("a", "y", 2)], None);
        assert_eq!(store.resource_version("a", "x"), Some("1"));
        assert_eq!(store.resource_version("a", "y"), Some("2"));
        store.set(vec![res("a", "x", 3)], Some("v9".into()));
        assert_eq!(store.resource_version("a", "x"), Some("v9"));
        store.remove("a", &["x".into()], None);
        assert_eq!(store.resource_version("a", "x"), None);
    }

    #[test]
    fn remove_reports_only_names_that_existed() {
        let mut store = Store::default();
        store.set(vec![res("a", "x", 1), res("a", "y", 1)], None);
        let change = store.remove("a", &["y".into(), "nope".into()], None);
        assert_eq!(change.removed, vec!["y".to_string()]);
        assert_eq!(store.names("a"), vec!["x".to_string()]);
    }
}
