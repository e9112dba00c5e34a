//! Envoy's admin API as observations: `/config_dump?include_eds` gives
//! each dynamic resource's version and state, `/stats` the xDS counters
//! (`update_success`, `update_rejected`, `init_fetch_timeout`, ...) and
//! the control-plane connection gauge. A poll reads both into an
//! [`AdminView`]; what changed since the last poll becomes
//! [`AdminObservation`]s, the way CSDS polls are turned into timeline
//! events for gRPC clients.
//!
//! What Envoy does not show cannot be observed: a rejected Cluster, route
//! configuration or endpoint assignment leaves no trace in the config dump
//! (only its counters move), endpoints carry no version, and there is no
//! "does not exist" after start-up.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use xds_vocabulary::ResourceType;

use crate::{AdminObservation, AdminResourceState};

/// Longest admin response read: a config dump of 100k clusters is tens of
/// megabytes; more than this is not a scenario's.
const MAX_BODY: usize = 256 << 20;

/// The stats worth a timeline line: xDS outcomes and the connection, not
/// traffic. (RE2 syntax, anchored by Envoy's `filter` as a search.)
pub const STATS_FILTER: &str = concat!(
    r"^(control_plane\.connected_state",
    r"|cluster_manager\.cds\.(update_success|update_rejected|update_failure|init_fetch_timeout)",
    r"|cluster_manager\.(cluster_added|cluster_removed|warming_clusters)",
    r"|listener_manager\.lds\.(update_success|update_rejected|update_failure|init_fetch_timeout)",
    r"|listener_manager\.(listener_added|listener_removed|total_listeners_draining)",
    r"|cluster\.[^.]+\.(update_rejected|init_fetch_timeout)",
    r"|http\.[^.]+\.rds\.[^.]+\.(update_rejected|init_fetch_timeout)",
    r")$"
);

/// One resource in the config dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpedResource {
    pub version: Option<String>,
    pub state: AdminResourceState,
    pub detail: String,
}

/// What one poll of the admin API saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdminView {
    pub resources: BTreeMap<(ResourceType, String), DumpedResource>,
    pub stats: BTreeMap<String, u64>,
}

impl AdminView {
    /// What changed from `before` to `self`, resources first; a stat that
    /// appears is reported unless it is 0 (Envoy creates them lazily).
    pub fn changes_since(&self, before: &AdminView) -> Vec<AdminObservation> {
        let mut out = Vec::new();
        for ((resource_type, name), now) in &self.resources {
            if before.resources.get(&(*resource_type, name.clone())) != Some(now) {
                out.push(AdminObservation::Resource {
                    resource_type: *resource_type,
                    name: name.clone(),
                    version: now.version.clone(),
                    state: now.state,
                    detail: now.detail.clone(),
                });
            }
        }
        for (resource_type, name) in before.resources.keys() {
            if !self.resources.contains_key(&(*resource_type, name.clone())) {
                out.push(AdminObservation::Resource {
                    resource_type: *resource_type,
                    name: name.clone(),
                    version: None,
                    state: AdminResourceState::Removed,
                    detail: String::new(),
                });
            }
        }
        for (name, value) in &self.stats {
            let old = before.stats.get(name).copied().unwrap_or(0);
            if *value != old {
                out.push(AdminObservation::Stat {
                    name: name.clone(),
                    value: *value,
                });
            }
        }
        out
    }
}

/// Reads `/config_dump?include_eds`'s JSON into resources.
pub fn parse_config_dump(dump: &Value) -> BTreeMap<(ResourceType, String), DumpedResource> {
    let mut out = BTreeMap::new();
    let configs = dump["configs"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for config in configs {
        let kind = config["@type"].as_str().unwrap_or("");
        let kind = kind.rsplit('.').next().unwrap_or("");
        match kind {
            "ClustersConfigDump" => {
                for (key, state) in [
                    ("dynamic_active_clusters", AdminResourceState::Active),
                    ("dynamic_warming_clusters", AdminResourceState::Warming),
                ] {
                    for entry in array(&config[key]) {
                        if let Some(name) = entry["cluster"]["name"].as_str() {
                            out.insert(
                                (ResourceType::Cluster, name.to_string()),
                                DumpedResource {
                                    version: text(&entry["version_info"]),
                                    state,
                                    detail: String::new(),
                                },
                            );
                        }
                    }
                }
            }
            "ListenersConfigDump" => {
                for entry in array(&config["dynamic_listeners"]) {
                    // Envoy lists a rejected listener a second time
                    // without its name.
                    let Some(name) = entry["name"].as_str() else {
                        continue;
                    };
                    let active = &entry["active_state"];
                    let warming = &entry["warming_state"];
                    let draining = &entry["draining_state"];
                    let error = &entry["error_state"];
                    let (state, version_of) = if error.is_object() {
                        (AdminResourceState::Rejected, active)
                    } else if active.is_object() {
                        (AdminResourceState::Active, active)
                    } else if warming.is_object() {
                        (AdminResourceState::Warming, warming)
                    } else if draining.is_object() {
                        (AdminResourceState::Draining, draining)
                    } else {
                        continue;
                    };
                    let detail = error["details"]
                        .as_str()
                        .map(|d| first_line(d, 200))
                        .unwrap_or_default();
                    out.insert(
                        (ResourceType::Listener, name.to_string()),
                        DumpedResource {
                            version: text(&version_of["version_info"]),
                            state,
                            detail,
                        },
                    );
                }
            }
            "RoutesConfigDump" => {
                for entry in array(&config["dynamic_route_configs"]) {
                    if let Some(name) = entry["route_config"]["name"].as_str() {
                        out.insert(
                            (ResourceType::RouteConfiguration, name.to_string()),
                            DumpedResource {
                                version: text(&entry["version_info"]),
                                state: AdminResourceState::Active,
                                detail: String::new(),
                            },
                        );
                    }
                }
            }
            "EndpointsConfigDump" => {
                for entry in array(&config["dynamic_endpoint_configs"]) {
                    let cla = &entry["endpoint_config"];
                    if let Some(name) = cla["cluster_name"].as_str() {
                        out.insert(
                            (ResourceType::ClusterLoadAssignment, name.to_string()),
                            DumpedResource {
                                // Envoy's dump has no version for endpoints.
                                version: text(&entry["version_info"]),
                                state: AdminResourceState::Active,
                                detail: endpoint_addresses(cla),
                            },
                        );
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `[127.0.0.1:1234,127.0.0.1:1235]`, sorted: what a ClusterLoadAssignment
/// sends traffic to. An assignment never received shows as `[]`.
fn endpoint_addresses(cla: &Value) -> String {
    let mut addresses: Vec<String> = array(&cla["endpoints"])
        .flat_map(|locality| array(&locality["lb_endpoints"]))
        .filter_map(|lb| {
            let socket = &lb["endpoint"]["address"]["socket_address"];
            let address = socket["address"].as_str()?;
            let port = socket["port_value"].as_u64()?;
            Some(format!("{address}:{port}"))
        })
        .collect();
    addresses.sort();
    format!("[{}]", addresses.join(","))
}

/// Reads `/stats` text (`name: value` lines) into integer stats; text
/// readouts (`version_text: "1"`) and histograms are left out.
pub fn parse_stats(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(": ")?;
            Some((name.trim().to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

fn array(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

fn text(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_string(),
    }
}

/// Errors of talking to the admin API.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("admin API at {address}: {reason}")]
    Http { address: SocketAddr, reason: String },
    #[error("admin API {path}: status {status}: {body}")]
    Status {
        path: String,
        status: u16,
        body: String,
    },
    #[error("admin API {path}: {reason}")]
    Body { path: String, reason: String },
}

/// GETs `path` from the admin API, within `timeout`.
pub async fn get(address: SocketAddr, path: &str, timeout: Duration) -> Result<String, AdminError> {
    use crate::http1::{HttpError, request};
    let answer = request(address, http::Method::GET, path, None, timeout, MAX_BODY)
        .await
        .map_err(|e| match e {
            HttpError::Exchange { address, reason } => AdminError::Http { address, reason },
            HttpError::Body { path, reason, .. } => AdminError::Body { path, reason },
        })?;
    if !answer.is_success() {
        return Err(AdminError::Status {
            path: path.to_string(),
            status: answer.status,
            body: first_line(&answer.body, 200),
        });
    }
    Ok(answer.body)
}

/// One poll: the config dump (with endpoints) and the selected stats.
pub async fn poll(address: SocketAddr, timeout: Duration) -> Result<AdminView, AdminError> {
    let dump = get(address, "/config_dump?include_eds", timeout).await?;
    let dump: Value = serde_json::from_str(&dump).map_err(|e| AdminError::Body {
        path: "/config_dump".into(),
        reason: e.to_string(),
    })?;
    let filter = utf8_percent_encode(STATS_FILTER, NON_ALPHANUMERIC);
    let stats_path = format!("/stats?filter={filter}");
    let stats = get(address, &stats_path, timeout).await?;
    Ok(AdminView {
        resources: parse_config_dump(&dump),
        stats: parse_stats(&stats),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shape of Envoy 1.40's dump, cut down to what is read.
    fn dump() -> Value {
        json!({"configs": [
            {"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"},
            {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
             "version_info": "2",
             "static_clusters": [{"cluster": {"name": "xds_server_0"}}],
             "dynamic_active_clusters": [
                {"version_info": "2", "cluster": {"name": "svc-cluster"}, "last_updated": "x"}],
             "dynamic_warming_clusters": [
                {"version_info": "2", "cluster": {"name": "new-cluster"}}]},
            {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
             "dynamic_listeners": [
                {"name": "svc", "active_state": {"version_info": "1", "listener": {}}},
                {"name": "bad", "error_state": {"details": "Error adding/updating listener(s) bad: no\nmore"}},
                {"error_state": {"details": "the unnamed copy"}},
                {"name": "old", "draining_state": {"version_info": "1"}}]},
            {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
             "dynamic_route_configs": [
                {"version_info": "3", "route_config": {"name": "svc-routes"}}]},
            {"@type": "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump",
             "static_endpoint_configs": [{"endpoint_config": {"cluster_name": "xds_server_0"}}],
             "dynamic_endpoint_configs": [
                {"endpoint_config": {"cluster_name": "svc-endpoints", "endpoints": [{"lb_endpoints": [
                    {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 9}}}},
                    {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 8}}}}]}]}},
                {"endpoint_config": {"cluster_name": "never-sent", "policy": {"overprovisioning_factor": 140}}}]}
        ]})
    }

    #[test]
    fn the_dump_gives_each_dynamic_resource_its_version_and_state() {
        let resources = parse_config_dump(&dump());
        let get = |t, n: &str| resources.get(&(t, n.to_string())).cloned();
        let state = |t, n: &str| get(t, n).map(|r| (r.version, r.state));
        assert_eq!(
            state(ResourceType::Cluster, "svc-cluster"),
            Some((Some("2".into()), AdminResourceState::Active))
        );
        assert_eq!(
            state(ResourceType::Cluster, "new-cluster"),
            Some((Some("2".into()), AdminResourceState::Warming))
        );
        assert_eq!(get(ResourceType::Cluster, "xds_server_0"), None);
        assert_eq!(
            state(ResourceType::Listener, "svc"),
            Some((Some("1".into()), AdminResourceState::Active))
        );
        let bad = get(ResourceType::Listener, "bad").unwrap();
        assert_eq!(bad.state, AdminResourceState::Rejected);
        assert_eq!(bad.version, None);
        assert_eq!(bad.detail, "Error adding/updating listener(s) bad: no");
        assert_eq!(
            state(ResourceType::Listener, "old"),
            Some((Some("1".into()), AdminResourceState::Draining))
        );
        assert_eq!(
            state(ResourceType::RouteConfiguration, "svc-routes"),
            Some((Some("3".into()), AdminResourceState::Active))
        );
        let endpoints = get(ResourceType::ClusterLoadAssignment, "svc-endpoints").unwrap();
        assert_eq!(endpoints.version, None);
        assert_eq!(endpoints.detail, "[127.0.0.1:8,127.0.0.1:9]");
        assert_eq!(
            get(ResourceType::ClusterLoadAssignment, "never-sent").map(|r| r.detail),
            Some("[]".into())
        );
        assert_eq!(resources.len(), 8);
    }

    #[test]
    fn stats_text_keeps_integers_only() {
        let stats = parse_stats(
            "cluster_manager.cds.update_rejected: 1\n\
             cluster_manager.cds.version_text: \"1\"\n\
             control_plane.connected_state: 1\n\
             cluster.x.upstream_rq_time: P0(nan,0)\n",
        );
        assert_eq!(
            stats,
            BTreeMap::from([
                ("cluster_manager.cds.update_rejected".to_string(), 1),
                ("control_plane.connected_state".to_string(), 1),
            ])
        );
    }

    #[test]
    fn changes_name_what_moved_and_what_went() {
        let before = AdminView {
            resources: parse_config_dump(&dump()),
            stats: BTreeMap::from([("a".to_string(), 1), ("z".to_string(), 0)]),
        };
        let mut after = before.clone();
        after
            .resources
            .remove(&(ResourceType::Cluster, "new-cluster".to_string()));
        after
            .resources
            .get_mut(&(ResourceType::Cluster, "svc-cluster".to_string()))
            .unwrap()
            .version = Some("3".into());
        after.stats.insert("a".into(), 2);
        after.stats.insert("b".into(), 0);
        assert_eq!(
            after.changes_since(&before),
            vec![
                AdminObservation::Resource {
                    resource_type: ResourceType::Cluster,
                    name: "svc-cluster".into(),
                    version: Some("3".into()),
                    state: AdminResourceState::Active,
                    detail: String::new(),
                },
                AdminObservation::Resource {
                    resource_type: ResourceType::Cluster,
                    name: "new-cluster".into(),
                    version: None,
                    state: AdminResourceState::Removed,
                    detail: String::new(),
                },
                AdminObservation::Stat {
                    name: "a".into(),
                    value: 2
                },
            ]
        );
        assert_eq!(after.changes_since(&after), vec![]);
        // From nothing: every resource, and the non-zero stats.
        assert_eq!(
            before.changes_since(&AdminView::default()).len(),
            before.resources.len() + 1
        );
    }
}
