//! What a zone holds: per Kuma type, resources by `<name>.<mesh>`, each
//! of one origin. Global-origin ones come from `GlobalToZoneSync`; the
//! zone's own (zone-origin) ones from [`super::KdsZone::put`]. One store
//! for both, as Kuma's zone has one resource store (`pkg/kds/v2/store/sync.go`
//! syncs the global's resources into it).
//!
//! The rules of a response from the global ([`ZoneStore::apply_global`],
//! Kuma's `syncResourceStore.Sync`):
//! - a resource equal to the stored one (same labels, same spec) is no
//!   change;
//! - a type's first response on a stream is a full sync: the
//!   global-origin resources it does not name are deleted; the zone's own
//!   never are (Kuma filters them out for the types zones provide), nor
//!   those the response names invalid (an invalid copy keeps the stored
//!   one);
//! - later responses delete what `removed_resources` names, unless the
//!   same response also carries it (an update, not a removal).
//!
//! Bounds: each response is at most [`super::MAX_MESSAGE`] bytes, and what
//! a type keeps from the wire is capped by [`StoreLimits`] (a new
//! resource past a limit is rejected and NACKed), so a global cannot grow
//! the store without bound over many responses. The types are those the
//! zone consumes, a fixed list.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use envoy_types::pb::google::protobuf::Any;
use prost::Message;
use xds_vocabulary::kds::spec::{self, Unpacked};
use xds_vocabulary::kds::zone::labels;
use xds_vocabulary::kds::{KdsName, KdsResource, KumaResource, ZoneStoreChange, kuma_resource};

use super::ZoneError;
use super::validate::Spec;
use crate::profile::ZoneDefects;

/// How much a zone keeps of one type from its global.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreLimits {
    pub max_resources_per_type: usize,
    /// The sum of the resources' encoded sizes.
    pub max_bytes_per_type: usize,
}

impl Default for StoreLimits {
    /// Room for a large mesh (Kuma itself has no such limit; these keep a
    /// misbehaving global from growing the reference without bound).
    fn default() -> Self {
        StoreLimits {
            max_resources_per_type: 100_000,
            max_bytes_per_type: 256 << 20,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    Global,
    Zone,
}

/// A spec as compared for "equal": a decoded spec compares by value (its
/// JSON keys or a proto map's entries may come in any order), one the
/// project cannot read by bytes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SpecValue {
    Object(Spec),
    Other(Any),
}

impl SpecValue {
    pub fn of(kuma_type: &str, any: Option<&Any>) -> SpecValue {
        match any {
            None => SpecValue::Object(Spec::new()),
            Some(any) => match spec::unpack(kuma_type, any) {
                Ok(Unpacked::Object(object)) => SpecValue::Object(object),
                Ok(Unpacked::Opaque) | Err(_) => SpecValue::Other(any.clone()),
            },
        }
    }

    /// One string that changes with the spec's content, for versions.
    pub fn canonical(&self) -> String {
        match self {
            SpecValue::Object(object) => serde_json::to_string(object).unwrap_or_default(),
            SpecValue::Other(any) => format!("{}:{:?}", any.type_url, any.value),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub origin: Origin,
    pub labels: BTreeMap<String, String>,
    /// The spec as it came.
    pub spec: Option<Any>,
    pub value: SpecValue,
    /// [`SpecValue::canonical`], made once: zone-origin versions are
    /// hashed from it on every change of the type.
    pub canonical: String,
    /// Its encoded size, counted against [`StoreLimits`].
    bytes: usize,
}

impl Entry {
    fn new(origin: Origin, resource: &KumaResource, value: SpecValue) -> Entry {
        Entry {
            origin,
            labels: resource
                .meta
                .as_ref()
                .map(|m| m.labels.clone())
                .unwrap_or_default(),
            spec: resource.spec.clone(),
            canonical: value.canonical(),
            value,
            bytes: resource.encoded_len(),
        }
    }

    fn same_content(&self, other: &Entry) -> bool {
        self.origin == other.origin && self.labels == other.labels && self.value == other.value
    }
}

/// How a response of the global applies to a type's store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sync {
    /// The type's first response on the stream: a full sync.
    pub full: bool,
    /// The type is the global's alone (zones cannot create it): the
    /// global's copy replaces the zone's, and deletions reach zone-made
    /// ones too (Kuma's prefilter lets every stored resource of such a
    /// type into the diff).
    pub global_wins: bool,
}

/// A resource from the global that passed validation.
pub(crate) struct Incoming {
    pub name: KdsName,
    pub resource: KumaResource,
    pub value: SpecValue,
}

/// Why the store did not take a valid resource from the global.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// The zone holds its own resource of that name.
    HeldByZone,
    TooMany {
        limit: usize,
    },
    TooLarge {
        limit: usize,
    },
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejected::HeldByZone => {
                f.write_str("the zone holds a zone-origin resource of that name")
            }
            Rejected::TooMany { limit } => {
                write!(f, "the zone keeps at most {limit} resources of the type")
            }
            Rejected::TooLarge { limit } => {
                write!(f, "the zone keeps at most {limit} bytes of the type")
            }
        }
    }
}

/// What one response from the global did.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub changes: Vec<ZoneStoreChange>,
    pub rejected: Vec<(KdsName, Rejected)>,
}

#[derive(Debug, Default)]
struct TypeStore {
    entries: BTreeMap<KdsName, Entry>,
    /// Bytes of the global-origin entries.
    global_bytes: usize,
    global_count: usize,
}

impl TypeStore {
    fn insert(&mut self, name: KdsName, entry: Entry) {
        if entry.origin == Origin::Global {
            self.global_bytes += entry.bytes;
            self.global_count += 1;
        }
        if let Some(old) = self.entries.insert(name, entry) {
            self.forget(&old);
        }
    }

    fn delete(&mut self, name: &KdsName) -> Option<Entry> {
        let old = self.entries.remove(name)?;
        self.forget(&old);
        Some(old)
    }

    fn forget(&mut self, old: &Entry) {
        if old.origin == Origin::Global {
            self.global_bytes -= old.bytes;
            self.global_count -= 1;
        }
    }
}

#[derive(Debug)]
pub(crate) struct ZoneStore {
    types: BTreeMap<String, TypeStore>,
    limits: StoreLimits,
}

impl ZoneStore {
    pub fn new(limits: StoreLimits) -> Self {
        ZoneStore {
            types: BTreeMap::new(),
            limits,
        }
    }

    /// Applies one response of `kuma_type` from the global: `incoming`, its
    /// valid resources in order; `invalid`, the names of those that broke a
    /// rule (kept as stored); `removed`, its `removed_resources`.
    pub fn apply_global(
        &mut self,
        kuma_type: &str,
        incoming: Vec<Incoming>,
        invalid: &BTreeSet<KdsName>,
        removed: &[KdsName],
        sync: Sync,
        defects: &ZoneDefects,
    ) -> Applied {
        let Sync {
            full: full_sync,
            global_wins,
        } = sync;
        let limits = self.limits;
        let store = self.types.entry(kuma_type.to_string()).or_default();
        let mut applied = Applied::default();
        let mut named: BTreeSet<KdsName> = invalid.clone();
        for Incoming {
            name,
            resource,
            value,
        } in incoming
        {
            named.insert(name.clone());
            let entry = Entry::new(Origin::Global, &resource, value);
            let existing = store.entries.get(&name);
            if existing.is_some_and(|e| e.origin == Origin::Zone) && !global_wins {
                applied.rejected.push((name, Rejected::HeldByZone));
                continue;
            }
            if existing.is_some_and(|e| e.same_content(&entry)) && !defects.equal_spec_is_a_change {
                continue;
            }
            // A zone-origin entry the global's replaces counted nowhere.
            let (count, bytes) = match existing {
                Some(old) if old.origin == Origin::Global => {
                    (store.global_count, store.global_bytes - old.bytes)
                }
                _ => (store.global_count + 1, store.global_bytes),
            };
            if count > limits.max_resources_per_type {
                applied.rejected.push((
                    name,
                    Rejected::TooMany {
                        limit: limits.max_resources_per_type,
                    },
                ));
                continue;
            }
            if bytes + entry.bytes > limits.max_bytes_per_type {
                applied.rejected.push((
                    name,
                    Rejected::TooLarge {
                        limit: limits.max_bytes_per_type,
                    },
                ));
                continue;
            }
            applied.changes.push(ZoneStoreChange::Stored {
                kuma_type: kuma_type.to_string(),
                name: name.clone(),
                labels: entry.labels.clone(),
                spec: spec::summary(kuma_type, entry.spec.as_ref()),
            });
            store.insert(name, entry);
        }
        for (name, _) in &applied.rejected {
            named.insert(name.clone());
        }
        let deleted: Vec<KdsName> = if full_sync {
            if defects.no_full_sync_deletion {
                Vec::new()
            } else {
                store
                    .entries
                    .iter()
                    .filter(|(name, entry)| {
                        (entry.origin == Origin::Global
                            || global_wins
                            || defects.full_sync_deletes_zone_origin)
                            && !named.contains(*name)
                    })
                    .map(|(name, _)| name.clone())
                    .collect()
            }
        } else if defects.removals_ignored {
            Vec::new()
        } else {
            removed
                .iter()
                .filter(|name| !named.contains(*name))
                .filter(|name| {
                    store
                        .entries
                        .get(*name)
                        .is_some_and(|e| e.origin == Origin::Global || global_wins)
                })
                .cloned()
                .collect()
        };
        for name in deleted {
            if let Some(gone) = store.delete(&name) {
                applied.changes.push(ZoneStoreChange::Removed {
                    kuma_type: kuma_type.to_string(),
                    name,
                    display_name: gone.labels.get(labels::DISPLAY_NAME).cloned(),
                });
            }
        }
        applied
    }

    /// Adds or replaces zone-origin resources, all or none; the types whose
    /// zone-origin resources changed.
    pub fn put_zone(&mut self, resources: Vec<KdsResource>) -> Result<BTreeSet<String>, ZoneError> {
        for resource in &resources {
            let name = resource.key();
            if name.name.is_empty() {
                return Err(ZoneError::EmptyName {
                    kuma_type: resource.kuma_type.clone(),
                });
            }
            self.not_global(&resource.kuma_type, &name)?;
        }
        let mut changed = BTreeSet::new();
        for KdsResource {
            kuma_type,
            resource,
        } in resources
        {
            let name = resource.kds_name();
            let value = SpecValue::of(&kuma_type, resource.spec.as_ref());
            let entry = Entry::new(Origin::Zone, &resource, value);
            let store = self.types.entry(kuma_type.clone()).or_default();
            if store
                .entries
                .get(&name)
                .is_some_and(|e| e.same_content(&entry))
            {
                continue;
            }
            store.insert(name, entry);
            changed.insert(kuma_type);
        }
        Ok(changed)
    }

    /// Deletes zone-origin resources of `kuma_type`; whether any went.
    pub fn remove_zone(&mut self, kuma_type: &str, names: &[KdsName]) -> Result<bool, ZoneError> {
        for name in names {
            self.not_global(kuma_type, name)?;
        }
        let Some(store) = self.types.get_mut(kuma_type) else {
            return Ok(false);
        };
        let mut changed = false;
        for name in names {
            changed |= store.delete(name).is_some();
        }
        Ok(changed)
    }

    fn not_global(&self, kuma_type: &str, name: &KdsName) -> Result<(), ZoneError> {
        let global = self
            .types
            .get(kuma_type)
            .and_then(|s| s.entries.get(name))
            .is_some_and(|e| e.origin == Origin::Global);
        if global {
            return Err(ZoneError::GlobalOrigin {
                kuma_type: kuma_type.to_string(),
                name: name.clone(),
            });
        }
        Ok(())
    }

    /// The zone's own resources of `kuma_type`, by name.
    pub fn zone_origin<'a>(
        &'a self,
        kuma_type: &str,
    ) -> impl Iterator<Item = (&'a KdsName, &'a Entry)> + 'a {
        self.types
            .get(kuma_type)
            .into_iter()
            .flat_map(|s| s.entries.iter())
            .filter(|(_, e)| e.origin == Origin::Zone)
    }

    /// A store of the zone's own resources alone, as they are now: what a
    /// refresh tick publishes to the global (Kuma's snapshot of the
    /// types a zone provides).
    pub fn zone_origin_copy(&self) -> ZoneStore {
        let types = self
            .types
            .iter()
            .filter_map(|(kuma_type, store)| {
                let mut copy = TypeStore::default();
                for (name, entry) in store.entries.iter() {
                    if entry.origin == Origin::Zone {
                        copy.insert(name.clone(), entry.clone());
                    }
                }
                (!copy.entries.is_empty()).then(|| (kuma_type.clone(), copy))
            })
            .collect();
        ZoneStore {
            types,
            limits: self.limits,
        }
    }

    /// Everything held, by type then name.
    pub fn snapshot(&self) -> Vec<KdsResource> {
        self.types
            .iter()
            .flat_map(|(kuma_type, store)| {
                store.entries.iter().map(move |(name, entry)| KdsResource {
                    kuma_type: kuma_type.clone(),
                    resource: kuma_resource(name, entry.labels.clone(), entry.spec.clone()),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use xds_vocabulary::kds::types;

    use super::*;

    fn global(name: &str, spec: serde_json::Value) -> Incoming {
        let key = KdsName::global(name);
        let labels = BTreeMap::from([("kuma.io/origin".to_string(), "global".to_string())]);
        let spec = spec.as_object().expect("object").clone();
        // Packed as JSON: the store compares the decoded value it is given,
        // whatever the type.
        let packed = spec::pack(types::MESH_TIMEOUT, &spec).expect("JSON packs");
        let resource = kuma_resource(&key, labels, Some(packed));
        Incoming {
            name: key,
            value: SpecValue::Object(spec),
            resource,
        }
    }

    fn zone(kuma_type: &str, name: &str) -> KdsResource {
        KdsResource {
            kuma_type: kuma_type.into(),
            resource: kuma_resource(&KdsName::global(name), BTreeMap::new(), None),
        }
    }

    fn names(changes: &[ZoneStoreChange]) -> Vec<String> {
        changes
            .iter()
            .map(|c| match c {
                ZoneStoreChange::Stored { name, .. } => format!("+{name}"),
                ZoneStoreChange::Removed { name, .. } => format!("-{name}"),
            })
            .collect()
    }

    const MESH: &str = types::MESH;

    fn apply(
        store: &mut ZoneStore,
        incoming: Vec<Incoming>,
        removed: &[&str],
        full_sync: bool,
        defects: ZoneDefects,
    ) -> Applied {
        let removed: Vec<KdsName> = removed
            .iter()
            .map(|n| KdsName::parse(n).expect("a name"))
            .collect();
        store.apply_global(
            MESH,
            incoming,
            &BTreeSet::new(),
            &removed,
            Sync {
                full: full_sync,
                global_wins: false,
            },
            &defects,
        )
    }

    #[test]
    fn a_full_sync_deletes_only_global_resources_it_leaves_out() {
        let mut store = ZoneStore::new(StoreLimits::default());
        let none = ZoneDefects::default();
        let first = apply(
            &mut store,
            vec![
                global("a", serde_json::json!({})),
                global("b", serde_json::json!({})),
            ],
            &[],
            true,
            none,
        );
        assert_eq!(names(&first.changes), ["+a.", "+b."]);
        store.put_zone(vec![zone(MESH, "own")]).expect("put");
        let again = apply(
            &mut store,
            vec![global("a", serde_json::json!({}))],
            &[],
            true,
            none,
        );
        assert_eq!(names(&again.changes), ["-b."], "a is equal: no change");
        let left: Vec<String> = store
            .snapshot()
            .iter()
            .map(|r| r.key().to_string())
            .collect();
        assert_eq!(left, ["a.", "own."]);
    }

    #[test]
    fn full_sync_defects_delete_nothing_or_the_zones_own_too() {
        for (defects, expected) in [
            (
                ZoneDefects {
                    no_full_sync_deletion: true,
                    ..Default::default()
                },
                vec![],
            ),
            (
                ZoneDefects {
                    full_sync_deletes_zone_origin: true,
                    ..Default::default()
                },
                vec!["-b.", "-own."],
            ),
        ] {
            let mut store = ZoneStore::new(StoreLimits::default());
            apply(
                &mut store,
                vec![global("b", serde_json::json!({}))],
                &[],
                true,
                defects,
            );
            store.put_zone(vec![zone(MESH, "own")]).expect("put");
            let applied = apply(&mut store, vec![], &[], true, defects);
            assert_eq!(names(&applied.changes), expected, "{defects:?}");
        }
    }

    #[test]
    fn later_responses_upsert_and_remove_and_equal_is_no_change() {
        let mut store = ZoneStore::new(StoreLimits::default());
        let none = ZoneDefects::default();
        apply(
            &mut store,
            vec![
                global("a", serde_json::json!({"x": 1})),
                global("b", serde_json::json!({})),
            ],
            &[],
            true,
            none,
        );
        let update = apply(
            &mut store,
            vec![
                global("a", serde_json::json!({"x": 1})),
                global("c", serde_json::json!({})),
                global("b", serde_json::json!({"y": 2})),
            ],
            &["b.", "zz.", "a."],
            false,
            none,
        );
        // a is unchanged, b is both carried and removed: an update.
        assert_eq!(names(&update.changes), ["+c.", "+b."]);
        let removal = apply(&mut store, vec![], &["a."], false, none);
        assert_eq!(names(&removal.changes), ["-a."]);
        let ignored = apply(
            &mut store,
            vec![],
            &["b."],
            false,
            ZoneDefects {
                removals_ignored: true,
                ..Default::default()
            },
        );
        assert!(ignored.changes.is_empty());
        let renotified = apply(
            &mut store,
            vec![global("c", serde_json::json!({}))],
            &[],
            false,
            ZoneDefects {
                equal_spec_is_a_change: true,
                ..Default::default()
            },
        );
        assert_eq!(names(&renotified.changes), ["+c."]);
    }

    #[test]
    fn the_global_cannot_replace_the_zones_own_nor_the_zone_the_globals() {
        let mut store = ZoneStore::new(StoreLimits::default());
        store.put_zone(vec![zone(MESH, "own")]).expect("put");
        let applied = apply(
            &mut store,
            vec![global("own", serde_json::json!({}))],
            &["own."],
            false,
            ZoneDefects::default(),
        );
        assert!(applied.changes.is_empty());
        assert_eq!(applied.rejected[0].1, Rejected::HeldByZone);
        apply(
            &mut store,
            vec![global("g", serde_json::json!({}))],
            &[],
            false,
            ZoneDefects::default(),
        );
        assert!(matches!(
            store.put_zone(vec![zone(MESH, "g")]),
            Err(ZoneError::GlobalOrigin { .. })
        ));
        assert!(matches!(
            store.remove_zone(MESH, &[KdsName::global("g")]),
            Err(ZoneError::GlobalOrigin { .. })
        ));
        assert_eq!(store.remove_zone(MESH, &[KdsName::global("own")]), Ok(true));
        assert_eq!(
            store.remove_zone(MESH, &[KdsName::global("own")]),
            Ok(false)
        );
    }

    #[test]
    fn an_unchanged_put_changes_no_type() {
        let mut store = ZoneStore::new(StoreLimits::default());
        let put = || vec![zone(types::DATAPLANE, "dp-1")];
        assert_eq!(
            store.put_zone(put()).expect("put"),
            BTreeSet::from([types::DATAPLANE.to_string()])
        );
        assert!(store.put_zone(put()).expect("put").is_empty());
    }

    #[test]
    fn what_a_type_keeps_from_the_wire_is_capped() {
        let mut store = ZoneStore::new(StoreLimits {
            max_resources_per_type: 2,
            max_bytes_per_type: 1 << 20,
        });
        let none = ZoneDefects::default();
        let applied = apply(
            &mut store,
            (0..4)
                .map(|i| global(&format!("m{i}"), serde_json::json!({})))
                .collect(),
            &[],
            true,
            none,
        );
        assert_eq!(names(&applied.changes), ["+m0.", "+m1."]);
        assert_eq!(applied.rejected.len(), 2);
        assert_eq!(applied.rejected[0].1, Rejected::TooMany { limit: 2 });
        // Replacing one is no growth.
        let replaced = apply(
            &mut store,
            vec![global("m1", serde_json::json!({"x": 1}))],
            &[],
            false,
            none,
        );
        assert_eq!(names(&replaced.changes), ["+m1."]);

        let mut small = ZoneStore::new(StoreLimits {
            max_resources_per_type: 10,
            max_bytes_per_type: 100,
        });
        let big = global("big", serde_json::json!({"pad": "x".repeat(200)}));
        let applied = apply(&mut small, vec![big], &[], true, none);
        assert_eq!(applied.rejected[0].1, Rejected::TooLarge { limit: 100 });
    }
}
