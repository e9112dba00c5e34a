//! The resource file forms: how a scenario writes the resources its
//! servers hold and send (compact forms for the common shapes, proto3
//! JSON, raw bytes), and the errors a response reports about them.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::check::Spanned;

/// A resource: a compact form for the common shapes, full proto3 JSON, or
/// raw bytes. Each is a single-key map: `- cluster: {name: c1}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ResourceSpec {
    /// A Listener with an api_listener HttpConnectionManager.
    Listener(ListenerSpec),
    /// A RouteConfiguration.
    RouteConfig(RouteConfigSpec),
    /// A Cluster: EDS (default), LOGICAL_DNS or aggregate.
    Cluster(ClusterSpec),
    /// A ClusterLoadAssignment.
    Endpoints(EndpointsSpec),
    /// Any resource in proto3 JSON with an `@type` key, as Envoy users
    /// write it (`{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", ...}`).
    Proto(Spanned<super::spanned_json::SpannedJson>),
    /// Bytes as they go on the wire: for undecodable or mistyped entries.
    Raw(RawSpec),
    /// The resource wrapped in `envoy.service.discovery.v3.Resource`.
    Wrapped(Box<Spanned<ResourceSpec>>),
    /// A Kuma resource, as a KDS global serves it to a zone (a scenario
    /// with a `zone`): `{type: Mesh, name: default, spec: {...}}`.
    Kuma(KumaSpec),
}

/// A Kuma resource: its type, key, labels and spec, in the
/// `KumaResource` envelope KDS carries.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KumaSpec {
    /// The Kuma type, as Kuma spells it: `Mesh`, `MeshTrafficPermission`,
    /// `Dataplane`, `ZoneIngress`, ...
    #[serde(rename = "type")]
    pub kuma_type: Spanned<String>,
    /// The resource's name (without its mesh).
    pub name: String,
    /// Its mesh; none for global-scoped types (`Mesh`, `ZoneIngress`).
    /// On KDS it is named `<name>.<mesh>`.
    pub mesh: Option<String>,
    /// Its labels, e.g. `kuma.io/origin: global`.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub labels: IndexMap<String, String>,
    /// Its spec: a JSON object, sent as Kuma sends it (a typed Any for a proto spec, JSON for a policy).
    pub spec: Option<serde_json::Value>,
    /// `true`: bytes that do not decode as a `KumaResource` instead (a
    /// zone ends its whole connection, without a NACK).
    pub undecodable: Option<bool>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListenerSpec {
    /// The Listener's name (the target's authority-less name, e.g. `svc`).
    pub name: String,
    /// Route configuration over RDS (ADS), by name.
    pub rds: Option<String>,
    /// Inline route config: one virtual host sending everything here.
    pub routes_to: Option<String>,
    /// Inline route config: weighted clusters `{c1: 70, c2: 30}`.
    pub weighted: Option<IndexMap<String, u32>>,
    /// Domains of the inline virtual host (default `["*"]`).
    pub domains: Option<Vec<String>>,
    /// HTTP filters by short name: `router`, `fault`, `rbac`, or a type URL
    /// (default `[router]`; `[]` makes the listener invalid).
    pub http_filters: Option<Vec<String>>,
    /// false: no api_listener (a server-side listener; invalid for clients).
    pub api_listener: Option<bool>,
    /// `ip:port`: an xDS-enabled server's Listener (gRFC A36) on this
    /// address, with one filter chain holding the HttpConnectionManager,
    /// instead of an api_listener.
    pub address: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteConfigSpec {
    /// The RouteConfiguration's name.
    pub name: String,
    /// One virtual host sending everything to this cluster.
    pub routes_to: Option<String>,
    /// One virtual host sending everything to weighted clusters `{c1: 70, c2: 30}`.
    pub weighted: Option<IndexMap<String, u32>>,
    /// Domains of that virtual host (default `["*"]`).
    pub domains: Option<Vec<String>>,
    /// Full control instead of `routes_to` / `weighted`.
    pub virtual_hosts: Option<Vec<VirtualHostSpec>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VirtualHostSpec {
    /// The virtual host's name.
    pub name: Option<String>,
    /// The domains it serves, e.g. `["svc"]` or `["*"]`.
    pub domains: Vec<String>,
    /// Its routes, first match wins.
    pub routes: Vec<RouteSpec>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// Path prefix (default "" = everything).
    pub prefix: Option<String>,
    /// Exact path instead of a prefix.
    pub path: Option<String>,
    /// The cluster this route sends to.
    pub cluster: Option<String>,
    /// Weighted clusters `{c1: 70, c2: 30}` instead of one cluster.
    pub weighted: Option<IndexMap<String, u32>>,
    /// A direct_response route (RPCs matching it fail).
    pub non_forwarding: Option<bool>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// The Cluster's name.
    pub name: String,
    /// EDS service_name (default: none, the cluster name is used).
    pub eds_service_name: Option<String>,
    /// LOGICAL_DNS `host:port` instead of EDS.
    pub logical_dns: Option<String>,
    /// Aggregate cluster of these clusters, in priority order.
    pub aggregate: Option<Vec<String>>,
    /// `lb_policy` enum name (default ROUND_ROBIN); e.g. RANDOM is invalid for gRPC.
    #[schemars(schema_with = "lb_policies")]
    #[serde(default)]
    pub lb_policy: Option<Spanned<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointsSpec {
    /// cluster_name of the ClusterLoadAssignment.
    pub name: String,
    /// `ip:port` (or `backend:NAME`) list in one locality (r1/z1, weight 1,
    /// priority 0).
    pub addresses: Option<Vec<String>>,
    /// Localities with their addresses, weights and priorities (instead of `addresses`).
    pub localities: Option<Vec<LocalitySpec>>,
    /// drop_overloads: category -> parts per million.
    pub drop: Option<IndexMap<String, u32>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalitySpec {
    /// Locality region.
    pub region: Option<String>,
    /// Locality zone.
    pub zone: Option<String>,
    /// Locality sub-zone.
    pub sub_zone: Option<String>,
    /// load_balancing_weight (default 1; 0 makes gRPC ignore the locality).
    pub weight: Option<u32>,
    /// Priority (0 is highest; default 0).
    pub priority: Option<u32>,
    /// Endpoint addresses, `host:port`.
    pub addresses: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    /// The stream type this entry is sent on: LDS, RDS, CDS, EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    pub resource_type: Spanned<String>,
    /// The name the server files it under.
    pub name: String,
    /// The entry's Any.type_url (default: the stream type's; "" allowed).
    pub type_url: Option<String>,
    /// The entry's Any.value as hex (default empty).
    pub hex: Option<Spanned<String>>,
    /// `true` instead of `hex`: a body no protobuf decoder reads (a
    /// length-delimited field whose length runs past the end).
    pub undecodable: Option<bool>,
}

/// One `ResourceError` of a response (xRFC TP3).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceErrorSpec {
    /// The resource's name; left out, the error has no `resource_name`
    /// (malformed: gRPC NACKs it).
    pub name: Option<String>,
    /// `error_detail`'s gRPC status code name, e.g. NOT_FOUND,
    /// PERMISSION_DENIED, UNAVAILABLE (OK is malformed: gRPC NACKs it).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    pub code: Spanned<String>,
    /// `error_detail`'s message.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub message: String,
}

/// The `lb_policy` names of envoy.config.cluster.v3.Cluster.LbPolicy.
fn lb_policies(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use envoy_types::pb::envoy::config::cluster::v3::cluster::LbPolicy;
    crate::check::schema::words(
        (0..32)
            .filter_map(|i| LbPolicy::try_from(i).ok())
            .map(|p| p.as_str_name()),
    )
}
