//! A Kuma zone's REST API, as the driver reads and writes it: what the
//! zone stores (each consumed type, listed per mesh), projected onto
//! [`ZoneStoreChange`]s, and the zone-origin resources the harness hands
//! it (`PUT` / `DELETE`).
//!
//! The REST API says itself where each type lives (`GET /_resources`:
//! its path and whether it is mesh-scoped), so nothing here knows Kuma's
//! paths. A resource's spec is what the listing shows beside its meta:
//! the `spec` object of a new-style resource, the other fields of an old
//! (proto-spec) one, as one line of JSON with sorted keys, the form a
//! zone's store changes take on the timeline.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Map, Value};
use xds_vocabulary::kds::spec::{self, Unpacked};
use xds_vocabulary::kds::zone::labels;
use xds_vocabulary::kds::{KdsName, KdsResource, ZoneStoreChange, types};

use crate::http1::{self, HttpError};

/// The most one listing may hold: a scenario's zone holds a few resources;
/// a benchmark's 10,000 Dataplanes are a few MiB.
const MAX_BODY: usize = 64 << 20;
/// Items per page asked for (Kuma's default is 100).
const PAGE: usize = 1000;

/// Fields of a listed item that are its meta, not its spec.
const META: &[&str] = &[
    "type",
    "mesh",
    "name",
    "labels",
    "creationTime",
    "modificationTime",
    "kri",
    "status",
];

/// Why the REST API did not answer as a zone's does.
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("{method} {path}: status {status}: {body}")]
    Status {
        method: String,
        path: String,
        status: u16,
        body: String,
    },
    #[error("{path}: not the JSON a Kuma API answers: {reason}")]
    Shape { path: String, reason: String },
}

/// Where a type lives on the REST API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypePath {
    pub kuma_type: String,
    /// `meshes`, `dataplanes`, `meshtimeouts`...
    pub path: String,
    pub mesh_scoped: bool,
}

/// What a zone stores: type and name -> (labels, spec summary).
pub type Stored = BTreeMap<(String, KdsName), (BTreeMap<String, String>, String)>;

/// A zone's REST API at `address`.
#[derive(Clone, Debug)]
pub struct RestApi {
    pub address: SocketAddr,
    pub timeout: Duration,
}

impl RestApi {
    async fn call(
        &self,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<String, RestError> {
        let answer = http1::request(
            self.address,
            method.clone(),
            path,
            body,
            self.timeout,
            MAX_BODY,
        )
        .await?;
        if !answer.is_success() {
            return Err(RestError::Status {
                method: method.to_string(),
                path: path.to_string(),
                status: answer.status,
                // Kuma's error bodies are indented JSON over many lines:
                // one line of it, whitespace squeezed, says why.
                body: answer
                    .body
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(600)
                    .collect(),
            });
        }
        Ok(answer.body)
    }

    async fn get_json(&self, path: &str) -> Result<Value, RestError> {
        let body = self.call(http::Method::GET, path, None).await?;
        serde_json::from_str(&body).map_err(|e| RestError::Shape {
            path: path.to_string(),
            reason: e.to_string(),
        })
    }

    /// Whether the API answers at all (the zone has started).
    pub async fn is_up(&self) -> bool {
        self.call(http::Method::GET, "/", None).await.is_ok()
    }

    /// Where each of `kuma_types` lives; types the API does not list (a
    /// system type such as `Config` has no REST path) are left out.
    pub async fn paths(&self, kuma_types: &[&str]) -> Result<Vec<TypePath>, RestError> {
        let described = self.get_json("/_resources").await?;
        let shape = |reason: &str| RestError::Shape {
            path: "/_resources".into(),
            reason: reason.into(),
        };
        let list = described["resources"]
            .as_array()
            .ok_or_else(|| shape("no `resources` list"))?;
        let wanted: BTreeSet<&str> = kuma_types.iter().copied().collect();
        let mut paths = Vec::new();
        for entry in list {
            let (Some(name), Some(path), Some(scope)) = (
                entry["name"].as_str(),
                entry["path"].as_str(),
                entry["scope"].as_str(),
            ) else {
                return Err(shape("an entry without name, path or scope"));
            };
            if wanted.contains(name) {
                paths.push(TypePath {
                    kuma_type: name.to_string(),
                    path: path.to_string(),
                    mesh_scoped: scope == "Mesh",
                });
            }
        }
        Ok(paths)
    }

    /// Every item of a listing, page by page.
    async fn items(&self, path: &str) -> Result<Vec<Value>, RestError> {
        let mut items = Vec::new();
        let mut offset = 0;
        loop {
            let page = self
                .get_json(&format!("{path}?size={PAGE}&offset={offset}"))
                .await?;
            let got = page["items"].as_array().ok_or_else(|| RestError::Shape {
                path: path.to_string(),
                reason: "no `items` list".into(),
            })?;
            offset += got.len();
            items.extend(got.iter().cloned());
            if got.is_empty() || page["next"].is_null() {
                return Ok(items);
            }
        }
    }

    /// What the zone stores of `types` from its global: the resources
    /// labelled `kuma.io/origin: global` (a real zone also keeps what it
    /// makes itself, its own GlobalSecrets and HostnameGenerators, which
    /// no global sent and the reference zone does not report).
    pub async fn stored(&self, types: &[TypePath]) -> Result<Stored, RestError> {
        let meshes: Vec<String> = self
            .items("/meshes")
            .await?
            .iter()
            .filter_map(|m| m["name"].as_str().map(str::to_string))
            .collect();
        let mut stored = Stored::new();
        for t in types {
            let listings: Vec<String> = if t.mesh_scoped {
                meshes
                    .iter()
                    .map(|mesh| format!("/meshes/{mesh}/{}", t.path))
                    .collect()
            } else {
                vec![format!("/{}", t.path)]
            };
            for listing in listings {
                for item in self.items(&listing).await? {
                    let (key, value) = project(&t.kuma_type, t.mesh_scoped, &item);
                    if value.0.get(labels::ORIGIN).map(String::as_str)
                        == Some(labels::ORIGIN_GLOBAL)
                    {
                        stored.insert(key, value);
                    }
                }
            }
        }
        Ok(stored)
    }

    /// Creates or replaces a zone-origin resource (`PUT`) of the type that
    /// lives at `at`.
    pub async fn put(&self, resource: &KdsResource, at: &TypePath) -> Result<(), RestError> {
        let (path, body) = put_request(resource, at)?;
        self.call(
            http::Method::PUT,
            &path,
            Some(body.to_string().into_bytes()),
        )
        .await
        .map(|_| ())
    }

    /// Deletes a zone-origin resource.
    pub async fn delete(&self, path: &str) -> Result<(), RestError> {
        self.call(http::Method::DELETE, path, None)
            .await
            .map(|_| ())
    }
}

/// Where the resource `name` of the type at `at` is.
pub fn resource_path(at: &TypePath, name: &KdsName) -> String {
    if at.mesh_scoped {
        format!("/meshes/{}/{}/{}", name.mesh, at.path, name.name)
    } else {
        format!("/{}/{}", at.path, name.name)
    }
}

/// A listed item as what the zone stores.
fn project(
    kuma_type: &str,
    mesh_scoped: bool,
    item: &Value,
) -> ((String, KdsName), (BTreeMap<String, String>, String)) {
    let name = item["name"].as_str().unwrap_or_default();
    let mesh = if mesh_scoped {
        item["mesh"].as_str().unwrap_or_default()
    } else {
        ""
    };
    let labels: BTreeMap<String, String> = item["labels"]
        .as_object()
        .map(|l| {
            l.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let spec = match item.get("spec") {
        Some(Value::Object(spec)) => spec.clone(),
        _ => item
            .as_object()
            .map(|fields| {
                fields
                    .iter()
                    .filter(|(k, _)| !META.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Map<String, Value>>()
            })
            .unwrap_or_default(),
    };
    (
        (kuma_type.to_string(), KdsName::new(name, mesh)),
        // As the reference zone sums up what it stores.
        (labels, spec::canonical(&Value::Object(spec))),
    )
}

/// Each change from `before` to `after`, in key order.
pub fn changes(before: &Stored, after: &Stored) -> Vec<ZoneStoreChange> {
    let mut out = Vec::new();
    for (key, value) in after {
        if before.get(key) != Some(value) {
            out.push(ZoneStoreChange::Stored {
                kuma_type: key.0.clone(),
                name: key.1.clone(),
                labels: value.0.clone(),
                spec: value.1.clone(),
            });
        }
    }
    for (key, (gone_labels, _)) in before {
        if !after.contains_key(key) {
            out.push(ZoneStoreChange::Removed {
                kuma_type: key.0.clone(),
                name: key.1.clone(),
                display_name: gone_labels.get(labels::DISPLAY_NAME).cloned(),
            });
        }
    }
    out
}

/// The `PUT` that creates `resource` on a zone: its path and its body.
/// A proto spec (Mesh, Dataplane, ...) goes inline beside the meta, as
/// Kuma's REST API writes old-style resources; a JSON spec (Kuma's
/// new-style resources) goes under `spec`.
fn put_request(resource: &KdsResource, at: &TypePath) -> Result<(String, Value), RestError> {
    let mesh_scoped = at.mesh_scoped;
    let meta = resource.resource.meta.clone().unwrap_or_default();
    let shape = |reason: String| RestError::Shape {
        path: format!("{} {}", resource.kuma_type, meta.name),
        reason,
    };
    let spec_any = resource.resource.spec.clone().unwrap_or_default();
    let spec = match spec::unpack(&resource.kuma_type, &spec_any) {
        Ok(Unpacked::Object(spec)) => spec,
        Ok(Unpacked::Opaque) => return Err(shape("a spec the project has no message for".into())),
        Err(e) => return Err(shape(e.to_string())),
    };
    let path = resource_path(at, &KdsName::new(meta.name.clone(), meta.mesh.clone()));
    let mut body = Map::new();
    body.insert("type".into(), Value::String(resource.kuma_type.clone()));
    if mesh_scoped {
        body.insert("mesh".into(), Value::String(meta.mesh.clone()));
    }
    body.insert("name".into(), Value::String(meta.name.clone()));
    // A federated zone's API takes a resource of a type zones may create
    // only if it says it is the zone's own (400 "the origin label must be
    // set to 'zone'" otherwise): what the harness hands a zone is its own.
    let mut labels = meta.labels.clone();
    labels
        .entry(labels::ORIGIN.to_string())
        .or_insert_with(|| labels::ORIGIN_ZONE.to_string());
    body.insert(
        "labels".into(),
        Value::Object(
            labels
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
        ),
    );
    if types::proto_spec(&resource.kuma_type).is_some() {
        body.extend(spec);
    } else {
        body.insert("spec".into(), Value::Object(spec));
    }
    Ok((path, Value::Object(body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_old_style_item_is_its_fields_beside_the_meta_and_a_new_one_its_spec() {
        let old = json!({"type": "Mesh", "name": "default", "labels": {"kuma.io/origin": "global"},
                         "creationTime": "t", "modificationTime": "t", "kri": "k",
                         "mtls": {"enabledBackend": "ca-1"}});
        let ((t, name), (labels, spec)) = project("Mesh", false, &old);
        assert_eq!((t.as_str(), name), ("Mesh", KdsName::global("default")));
        assert_eq!(labels["kuma.io/origin"], "global");
        assert_eq!(spec, r#"{"mtls":{"enabledBackend":"ca-1"}}"#);
        let new = json!({"type": "MeshTimeout", "mesh": "default", "name": "mt-1-x",
                         "labels": {}, "spec": {"to": [], "targetRef": {"kind": "Mesh"}},
                         "status": {"x": 1}});
        let ((_, name), (_, spec)) = project("MeshTimeout", true, &new);
        assert_eq!(name, KdsName::new("mt-1-x", "default"));
        assert_eq!(spec, r#"{"targetRef":{"kind":"Mesh"},"to":[]}"#);
    }

    #[test]
    fn what_the_zone_is_handed_is_its_own_unless_labelled_otherwise() {
        let at = TypePath {
            kuma_type: "MeshTrafficPermission".into(),
            path: "meshtrafficpermissions".into(),
            mesh_scoped: true,
        };
        let spec = json!({"targetRef": {"kind": "Mesh"}});
        let Value::Object(spec) = spec else {
            unreachable!()
        };
        let resource = |labels: BTreeMap<String, String>| KdsResource {
            kuma_type: "MeshTrafficPermission".into(),
            resource: xds_vocabulary::kds::resource::kuma_resource(
                &KdsName::new("local", "default"),
                labels,
                Some(spec::pack("MeshTrafficPermission", &spec).unwrap()),
            ),
        };
        let (path, body) = put_request(&resource(BTreeMap::new()), &at).unwrap();
        assert_eq!(path, "/meshes/default/meshtrafficpermissions/local");
        assert_eq!(body["labels"], json!({"kuma.io/origin": "zone"}));
        assert_eq!(body["spec"], json!({"targetRef": {"kind": "Mesh"}}));
        let labelled = [("kuma.io/origin".to_string(), "global".to_string())].into();
        let (_, body) = put_request(&resource(labelled), &at).unwrap();
        assert_eq!(body["labels"], json!({"kuma.io/origin": "global"}));
    }

    #[test]
    fn changes_are_what_was_stored_anew_or_differently_and_what_went() {
        let key = |n: &str| ("Mesh".to_string(), KdsName::global(n));
        let v = |s: &str| (BTreeMap::new(), s.to_string());
        let before: Stored = [(key("a"), v("{}")), (key("b"), v("{}"))].into();
        let after: Stored = [
            (key("a"), v("{}")),
            (key("c"), v("{}")),
            (key("b"), v("{\"x\":1}")),
        ]
        .into();
        let got = changes(&before, &after);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(matches!(&got[0], ZoneStoreChange::Stored { name, .. } if name.name == "b"));
        assert!(matches!(&got[1], ZoneStoreChange::Stored { name, .. } if name.name == "c"));
        let gone = changes(&after, &before);
        assert!(
            gone.iter()
                .any(|c| matches!(c, ZoneStoreChange::Removed { name, .. } if name.name == "c"))
        );
    }
}
