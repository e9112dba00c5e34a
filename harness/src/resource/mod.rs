//! Builds the resources a scenario file describes into the wire entries the
//! fake servers serve, in the shapes gRPC clients accept (see
//! shared/notes/real-peers.md): api_listener HCMs ending in the router
//! filter, EDS clusters over ADS, localities with an explicit weight.
//!
//! The file forms are in `file`; resources in proto3 JSON are read by
//! `proto_json` from the positioned JSON of `spanned_json`.

pub mod file;
pub mod generate;
pub mod kuma;
pub mod proto_json;
pub mod spanned_json;

use std::net::SocketAddr;

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::cluster::v3::cluster::{
    ClusterDiscoveryType, CustomClusterType, DiscoveryType, EdsClusterConfig, LbPolicy,
};
use envoy_types::pb::envoy::config::core::v3::{
    Address, AggregatedConfigSource, ConfigSource, Locality, SocketAddress, address,
    config_source::ConfigSourceSpecifier, socket_address::PortSpecifier,
};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, Endpoint, LbEndpoint, LocalityLbEndpoints,
    cluster_load_assignment::{Policy, policy::DropOverload},
    lb_endpoint::HostIdentifier,
};
use envoy_types::pb::envoy::config::listener::v3::{
    ApiListener, Filter, FilterChain, Listener, filter,
};
use envoy_types::pb::envoy::config::route::v3::{
    DirectResponseAction, Route, RouteAction, RouteConfiguration, RouteMatch, VirtualHost,
    WeightedCluster, route::Action, route_action::ClusterSpecifier, route_match::PathSpecifier,
    weighted_cluster::ClusterWeight,
};
use envoy_types::pb::envoy::extensions::clusters::aggregate::v3::ClusterConfig;
use envoy_types::pb::envoy::extensions::filters::http::fault::v3::HttpFault;
use envoy_types::pb::envoy::extensions::filters::http::rbac::v3::Rbac;
use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, HttpFilter, Rds, http_connection_manager::RouteSpecifier,
    http_filter::ConfigType,
};
use envoy_types::pb::envoy::r#type::v3::{FractionalPercent, fractional_percent::DenominatorType};
use envoy_types::pb::google::protobuf::{Any, Duration, UInt32Value};
use envoy_types::util::pack_any;
use indexmap::IndexMap;
use prost::Message;
use xds_fake_server::ServedResource;
use xds_vocabulary::ResourceType;

use std::collections::HashMap;

use xds_fake_server::ScriptedResourceError;

use crate::check::{Problem, Spanned, backend_address, code, parse_resource_type};
use file::{
    ClusterSpec, EndpointsSpec, ListenerSpec, LocalitySpec, RawSpec, ResourceErrorSpec,
    ResourceSpec, RouteConfigSpec, RouteSpec, VirtualHostSpec,
};
use spanned_json::SpannedJson;

/// Builds one resource; errors point at the resource or at its offending value.
/// `backends` are the scenario's backend names: endpoints may name them as
/// `backend:NAME`.
pub(super) fn build(
    spec: &Spanned<ResourceSpec>,
    backends: &[String],
) -> Result<ServedResource, Problem> {
    let at_resource = |message: String| Problem::at(spec, message);
    match &spec.value {
        ResourceSpec::Listener(l) => listener(l)
            .map(|msg| ServedResource::from_message(&l.name, &msg))
            .map_err(|e| at_resource(format!("listener `{}`: {e}", l.name))),
        ResourceSpec::RouteConfig(r) => route_config(r)
            .map(|msg| ServedResource::from_message(&r.name, &msg))
            .map_err(|e| at_resource(format!("route_config `{}`: {e}", r.name))),
        ResourceSpec::Cluster(c) => {
            cluster(c, spec).map(|msg| ServedResource::from_message(&c.name, &msg))
        }
        ResourceSpec::Endpoints(e) => endpoints(e, backends)
            .map(|msg| ServedResource::from_message(&e.name, &msg))
            .map_err(|m| at_resource(format!("endpoints `{}`: {m}", e.name))),
        ResourceSpec::Proto(json) => proto(json),
        ResourceSpec::Raw(raw) => self::raw(raw),
        ResourceSpec::Wrapped(inner) => build(inner, backends).map(|r| r.wrapped(None)),
        ResourceSpec::Kuma(k) => kuma::served(k, spec),
    }
}

fn ads() -> ConfigSource {
    ConfigSource {
        config_source_specifier: Some(ConfigSourceSpecifier::Ads(AggregatedConfigSource {})),
        ..Default::default()
    }
}

/// Names the keys of `present` that are set, for "x and y exclude each other".
fn set_keys<'a>(present: &[(&'a str, bool)]) -> Vec<&'a str> {
    present
        .iter()
        .filter(|(_, set)| *set)
        .map(|(key, _)| *key)
        .collect()
}

fn at_most_one(present: &[(&str, bool)]) -> Result<(), String> {
    let set = set_keys(present);
    if set.len() > 1 {
        return Err(format!("{} exclude each other", set.join(" and ")));
    }
    Ok(())
}

fn listener(spec: &ListenerSpec) -> Result<Listener, String> {
    let sources = [
        ("rds", spec.rds.is_some()),
        ("routes_to", spec.routes_to.is_some()),
        ("weighted", spec.weighted.is_some()),
    ];
    at_most_one(&sources)?;
    if spec.api_listener == Some(false) {
        let hcm_keys = set_keys(&[
            ("domains", spec.domains.is_some()),
            ("http_filters", spec.http_filters.is_some()),
            ("address", spec.address.is_some()),
        ]);
        let used: Vec<_> = set_keys(&sources).into_iter().chain(hcm_keys).collect();
        if !used.is_empty() {
            return Err(format!(
                "api_listener: false leaves no HttpConnectionManager for {}",
                used.join(", ")
            ));
        }
        return Ok(Listener {
            name: spec.name.clone(),
            ..Default::default()
        });
    }
    let route_specifier = if let Some(name) = &spec.rds {
        if spec.domains.is_some() {
            return Err(
                "domains belong to an inline route config (routes_to / weighted), not rds".into(),
            );
        }
        Some(RouteSpecifier::Rds(Rds {
            config_source: Some(ads()),
            route_config_name: name.clone(),
        }))
    } else if spec.routes_to.is_some() || spec.weighted.is_some() {
        let vh = simple_virtual_host(
            spec.routes_to.as_deref(),
            spec.weighted.as_ref(),
            spec.domains.as_ref(),
        );
        Some(RouteSpecifier::RouteConfig(RouteConfiguration {
            name: String::new(),
            virtual_hosts: vec![vh],
            ..Default::default()
        }))
    } else if spec.domains.is_some() {
        return Err("domains need routes_to or weighted".into());
    } else {
        // No route at all: a listener gRPC rejects, kept expressible on purpose.
        None
    };
    let filter_names = spec
        .http_filters
        .clone()
        .unwrap_or_else(|| vec!["router".into()]);
    let http_filters = filter_names
        .iter()
        .map(|name| http_filter(name))
        .collect::<Result<_, _>>()?;
    let hcm = HttpConnectionManager {
        route_specifier,
        http_filters,
        ..Default::default()
    };
    if let Some(text) = &spec.address {
        if spec.api_listener.is_some() {
            return Err("address makes a server Listener: api_listener does not apply".into());
        }
        let (ip, port) = host_port(text).map_err(|_| {
            format!("address `{text}`: expected ip:port, e.g. 0.0.0.0:8443 or [::]:8443")
        })?;
        return Ok(Listener {
            name: spec.name.clone(),
            address: Some(socket_address(ip, port)),
            filter_chains: vec![FilterChain {
                filters: vec![Filter {
                    name: "envoy.filters.network.http_connection_manager".into(),
                    config_type: Some(filter::ConfigType::TypedConfig(pack_any(hcm))),
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    Ok(Listener {
        name: spec.name.clone(),
        api_listener: Some(ApiListener {
            api_listener: Some(pack_any(hcm)),
        }),
        ..Default::default()
    })
}

fn socket_address(ip: String, port: u32) -> Address {
    Address {
        address: Some(address::Address::SocketAddress(SocketAddress {
            address: ip,
            port_specifier: Some(PortSpecifier::PortValue(port)),
            ..Default::default()
        })),
    }
}

fn http_filter(name: &str) -> Result<HttpFilter, String> {
    let (filter_name, config) = match name {
        "router" => ("router", pack_any(Router::default())),
        "fault" => ("fault", pack_any(HttpFault::default())),
        "rbac" => ("rbac", pack_any(Rbac::default())),
        type_url if type_url.contains('/') => (
            type_url.rsplit('/').next().unwrap_or(type_url),
            Any {
                type_url: type_url.to_string(),
                value: Vec::new(),
            },
        ),
        other => {
            return Err(format!(
                "unknown http filter `{other}`: expected router, fault, rbac or a type URL \
                 (type.googleapis.com/...)"
            ));
        }
    };
    Ok(HttpFilter {
        name: filter_name.to_string(),
        config_type: Some(ConfigType::TypedConfig(config)),
        ..Default::default()
    })
}

fn weighted_clusters(weights: &IndexMap<String, u32>) -> WeightedCluster {
    WeightedCluster {
        clusters: weights
            .iter()
            .map(|(name, weight)| ClusterWeight {
                name: name.clone(),
                weight: Some(UInt32Value { value: *weight }),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn forward(specifier: ClusterSpecifier) -> Option<Action> {
    Some(Action::Route(RouteAction {
        cluster_specifier: Some(specifier),
        ..Default::default()
    }))
}

/// The one-virtual-host shorthand: domains (default `*`), everything to a
/// cluster or to weighted clusters. The caller ensures one of them is set.
fn simple_virtual_host(
    routes_to: Option<&str>,
    weighted: Option<&IndexMap<String, u32>>,
    domains: Option<&Vec<String>>,
) -> VirtualHost {
    let action = match (routes_to, weighted) {
        (Some(cluster), _) => forward(ClusterSpecifier::Cluster(cluster.to_string())),
        (None, Some(weights)) => forward(ClusterSpecifier::WeightedClusters(weighted_clusters(
            weights,
        ))),
        (None, None) => None,
    };
    VirtualHost {
        name: "vh".into(),
        domains: domains.cloned().unwrap_or_else(|| vec!["*".into()]),
        routes: vec![Route {
            r#match: Some(RouteMatch {
                path_specifier: Some(PathSpecifier::Prefix(String::new())),
                ..Default::default()
            }),
            action,
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn route_config(spec: &RouteConfigSpec) -> Result<RouteConfiguration, String> {
    at_most_one(&[
        ("routes_to", spec.routes_to.is_some()),
        ("weighted", spec.weighted.is_some()),
    ])?;
    let virtual_hosts = if let Some(hosts) = &spec.virtual_hosts {
        let shorthand = set_keys(&[
            ("routes_to", spec.routes_to.is_some()),
            ("weighted", spec.weighted.is_some()),
            ("domains", spec.domains.is_some()),
        ]);
        if !shorthand.is_empty() {
            return Err(format!(
                "virtual_hosts and {} exclude each other",
                shorthand.join(", ")
            ));
        }
        hosts
            .iter()
            .enumerate()
            .map(|(i, vh)| virtual_host(i, vh))
            .collect::<Result<_, _>>()?
    } else if spec.routes_to.is_some() || spec.weighted.is_some() {
        vec![simple_virtual_host(
            spec.routes_to.as_deref(),
            spec.weighted.as_ref(),
            spec.domains.as_ref(),
        )]
    } else if spec.domains.is_some() {
        return Err("domains need routes_to or weighted".into());
    } else {
        Vec::new()
    };
    Ok(RouteConfiguration {
        name: spec.name.clone(),
        virtual_hosts,
        ..Default::default()
    })
}

fn virtual_host(index: usize, spec: &VirtualHostSpec) -> Result<VirtualHost, String> {
    let name = spec.name.clone().unwrap_or_else(|| format!("vh{index}"));
    let routes = spec
        .routes
        .iter()
        .enumerate()
        .map(|(i, r)| route(r).map_err(|e| format!("virtual host `{name}`, route {i}: {e}")))
        .collect::<Result<_, _>>()?;
    Ok(VirtualHost {
        name,
        domains: spec.domains.clone(),
        routes,
        ..Default::default()
    })
}

fn route(spec: &RouteSpec) -> Result<Route, String> {
    at_most_one(&[
        ("prefix", spec.prefix.is_some()),
        ("path", spec.path.is_some()),
    ])?;
    let non_forwarding = spec.non_forwarding == Some(true);
    let actions = [
        ("cluster", spec.cluster.is_some()),
        ("weighted", spec.weighted.is_some()),
        ("non_forwarding", non_forwarding),
    ];
    at_most_one(&actions)?;
    let action = match (&spec.cluster, &spec.weighted) {
        (Some(cluster), _) => forward(ClusterSpecifier::Cluster(cluster.clone())),
        (None, Some(weights)) => forward(ClusterSpecifier::WeightedClusters(weighted_clusters(
            weights,
        ))),
        (None, None) if non_forwarding => Some(Action::DirectResponse(DirectResponseAction {
            status: 503,
            ..Default::default()
        })),
        (None, None) => return Err("needs one of cluster, weighted or non_forwarding: true".into()),
    };
    let path_specifier = match &spec.path {
        Some(path) => PathSpecifier::Path(path.clone()),
        None => PathSpecifier::Prefix(spec.prefix.clone().unwrap_or_default()),
    };
    Ok(Route {
        r#match: Some(RouteMatch {
            path_specifier: Some(path_specifier),
            ..Default::default()
        }),
        action,
        ..Default::default()
    })
}

const LB_POLICIES: &[LbPolicy] = &[
    LbPolicy::RoundRobin,
    LbPolicy::LeastRequest,
    LbPolicy::RingHash,
    LbPolicy::Random,
    LbPolicy::Maglev,
    LbPolicy::ClusterProvided,
    LbPolicy::LoadBalancingPolicyConfig,
];

fn cluster(spec: &ClusterSpec, at: &Spanned<ResourceSpec>) -> Result<Cluster, Problem> {
    let fail = |e: String| Problem::at(at, format!("cluster `{}`: {e}", spec.name));
    at_most_one(&[
        ("eds_service_name", spec.eds_service_name.is_some()),
        ("logical_dns", spec.logical_dns.is_some()),
        ("aggregate", spec.aggregate.is_some()),
    ])
    .map_err(fail)?;
    let lb_policy = match &spec.lb_policy {
        None => LbPolicy::RoundRobin,
        Some(name) => LbPolicy::from_str_name(&name.value).ok_or_else(|| {
            let valid: Vec<_> = LB_POLICIES.iter().map(|p| p.as_str_name()).collect();
            Problem::at(
                name,
                format!(
                    "unknown lb_policy `{}`: expected one of {}",
                    name.value,
                    valid.join(", ")
                ),
            )
        })?,
    };
    let mut cluster = Cluster {
        name: spec.name.clone(),
        lb_policy: lb_policy as i32,
        connect_timeout: Some(Duration {
            seconds: 1,
            nanos: 0,
        }),
        ..Default::default()
    };
    if let Some(target) = &spec.logical_dns {
        let (host, port) = host_port(target).map_err(fail)?;
        cluster.cluster_discovery_type =
            Some(ClusterDiscoveryType::Type(DiscoveryType::LogicalDns as i32));
        cluster.load_assignment = Some(ClusterLoadAssignment {
            cluster_name: spec.name.clone(),
            endpoints: vec![LocalityLbEndpoints {
                lb_endpoints: vec![lb_endpoint(host, port)],
                ..Default::default()
            }],
            ..Default::default()
        });
    } else if let Some(children) = &spec.aggregate {
        cluster.cluster_discovery_type =
            Some(ClusterDiscoveryType::ClusterType(CustomClusterType {
                name: "envoy.clusters.aggregate".into(),
                typed_config: Some(pack_any(ClusterConfig {
                    clusters: children.clone(),
                })),
            }));
    } else {
        cluster.cluster_discovery_type =
            Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32));
        cluster.eds_cluster_config = Some(EdsClusterConfig {
            eds_config: Some(ads()),
            service_name: spec.eds_service_name.clone().unwrap_or_default(),
        });
    }
    Ok(cluster)
}

/// `host:port` or `[v6]:port`, for LOGICAL_DNS (the host may be a name).
fn host_port(text: &str) -> Result<(String, u32), String> {
    let bad = || format!("logical_dns `{text}`: expected host:port, e.g. dns.example.com:443");
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), u32::from(port)))
}

fn lb_endpoint(address: String, port: u32) -> LbEndpoint {
    LbEndpoint {
        host_identifier: Some(HostIdentifier::Endpoint(Endpoint {
            address: Some(Address {
                address: Some(address::Address::SocketAddress(SocketAddress {
                    address,
                    port_specifier: Some(PortSpecifier::PortValue(port)),
                    ..Default::default()
                })),
            }),
            ..Default::default()
        })),
        // health_status left UNKNOWN: gRPC treats it like HEALTHY.
        ..Default::default()
    }
}

fn endpoints(spec: &EndpointsSpec, backends: &[String]) -> Result<ClusterLoadAssignment, String> {
    at_most_one(&[
        ("addresses", spec.addresses.is_some()),
        ("localities", spec.localities.is_some()),
    ])?;
    let localities = match (&spec.addresses, &spec.localities) {
        (Some(addresses), _) => vec![locality(
            &LocalitySpec {
                region: None,
                zone: None,
                sub_zone: None,
                weight: None,
                priority: None,
                addresses: addresses.clone(),
            },
            backends,
        )?],
        (None, Some(localities)) => localities
            .iter()
            .map(|l| locality(l, backends))
            .collect::<Result<_, _>>()?,
        (None, None) => Vec::new(),
    };
    let policy = spec.drop.as_ref().map(|drops| Policy {
        drop_overloads: drops
            .iter()
            .map(|(category, per_million)| DropOverload {
                category: category.clone(),
                drop_percentage: Some(FractionalPercent {
                    numerator: *per_million,
                    denominator: DenominatorType::Million as i32,
                }),
            })
            .collect(),
        ..Default::default()
    });
    Ok(ClusterLoadAssignment {
        cluster_name: spec.name.clone(),
        endpoints: localities,
        policy,
        ..Default::default()
    })
}

fn locality(spec: &LocalitySpec, backends: &[String]) -> Result<LocalityLbEndpoints, String> {
    let lb_endpoints = spec
        .addresses
        .iter()
        .map(|text| {
            let resolved;
            let text = match text.strip_prefix("backend:") {
                Some(name) => {
                    let index = backends.iter().position(|b| b == name).ok_or_else(|| {
                        format!("address `{text}`: unknown backend `{name}`; scenario has backends [{}]", backends.join(", "))
                    })?;
                    resolved = backend_address(index);
                    resolved.as_str()
                }
                None => text.as_str(),
            };
            let addr: SocketAddr = text.parse().map_err(|_| {
                format!("address `{text}`: expected ip:port (e.g. 127.0.0.1:8080, [::1]:8080) or backend:NAME")
            })?;
            Ok(lb_endpoint(addr.ip().to_string(), u32::from(addr.port())))
        })
        .collect::<Result<_, String>>()?;
    Ok(LocalityLbEndpoints {
        locality: Some(Locality {
            region: spec.region.clone().unwrap_or_else(|| "r1".into()),
            zone: spec.zone.clone().unwrap_or_else(|| "z1".into()),
            sub_zone: spec.sub_zone.clone().unwrap_or_default(),
        }),
        lb_endpoints,
        // Always explicit: gRPC silently drops a locality without a weight.
        load_balancing_weight: Some(UInt32Value {
            value: spec.weight.unwrap_or(1),
        }),
        priority: spec.priority.unwrap_or(0),
        ..Default::default()
    })
}

fn proto(json: &Spanned<SpannedJson>) -> Result<ServedResource, Problem> {
    let fail = |message: String| Problem::at(json, format!("proto: {message}"));
    let entry = proto_json::json_to_any(&json.value.to_json()).map_err(|e| {
        // Each wrong key where it is written, all of them; the whole
        // resource only when none can be told apart.
        let mut located = proto_json::key_errors(json).into_iter().map(|k| {
            Problem::at_position(
                k.line,
                k.column,
                format!("proto: at {}: {}", k.path, k.message),
            )
        });
        match located.next() {
            Some(first) => first.with_more(located.collect()),
            None => fail(e.to_string()),
        }
    })?;
    let message_name = entry.type_url.rsplit('/').next().unwrap_or_default();
    let resource_type = ResourceType::ALL
        .into_iter()
        .find(|t| t.message_name() == message_name)
        .ok_or_else(|| {
            fail(format!(
                "`@type` {}: proto resources must be a Listener, RouteConfiguration, Cluster or \
                 ClusterLoadAssignment (use raw for anything else)",
                entry.type_url
            ))
        })?;
    // The bytes came from these very descriptors, so they decode; the name is
    // what the server files the entry under.
    let bytes = entry.value.as_slice();
    let name = match resource_type {
        ResourceType::Listener => Listener::decode(bytes).map(|m| m.name),
        ResourceType::RouteConfiguration => RouteConfiguration::decode(bytes).map(|m| m.name),
        ResourceType::Cluster => Cluster::decode(bytes).map(|m| m.name),
        ResourceType::ClusterLoadAssignment => {
            ClusterLoadAssignment::decode(bytes).map(|m| m.cluster_name)
        }
    }
    .map_err(|e| fail(format!("does not decode back: {e}")))?;
    Ok(ServedResource::raw(resource_type.type_url(), name, entry))
}

fn raw(spec: &RawSpec) -> Result<ServedResource, Problem> {
    let resource_type = parse_resource_type(&spec.resource_type)?;
    let value = match (&spec.hex, spec.undecodable) {
        (Some(hex), Some(true)) => {
            return Err(Problem::at(
                hex,
                "raw: `hex` and `undecodable` exclude each other",
            ));
        }
        (Some(hex), _) => {
            decode_hex(&hex.value).map_err(|e| Problem::at(hex, format!("hex: {e}")))?
        }
        // Field 1, length-delimited, 127 bytes long: none follow.
        (None, Some(true)) => UNDECODABLE.to_vec(),
        (None, _) => Vec::new(),
    };
    let type_url = spec
        .type_url
        .clone()
        .unwrap_or_else(|| resource_type.type_url().to_string());
    Ok(ServedResource::raw(
        resource_type.type_url(),
        &spec.name,
        Any { type_url, value },
    ))
}

/// What `undecodable: true` serves: a tag and a length with nothing after.
const UNDECODABLE: [u8; 2] = [0x0a, 0x7f];

/// Hex digits in pairs; ASCII whitespace between them is ignored so long
/// dumps can be wrapped.
fn decode_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<char> = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if let Some(bad) = digits.iter().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!(
            "`{bad}` is not a hex digit (expected pairs of 0-9, a-f)"
        ));
    }
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "odd number of hex digits ({}): expected whole bytes",
            digits.len()
        ));
    }
    Ok(digits
        .chunks(2)
        // All are hex digits (checked above), so to_digit cannot fail.
        .map(|pair| {
            pair.iter()
                .fold(0u8, |byte, c| byte << 4 | c.to_digit(16).unwrap_or(0) as u8)
        })
        .collect())
}

/// A response's `resource_errors` as the fake server sends them.
pub(crate) fn resource_errors(
    specs: &[ResourceErrorSpec],
) -> Result<Vec<ScriptedResourceError>, Problem> {
    specs
        .iter()
        .map(|spec| {
            Ok(ScriptedResourceError {
                name: spec.name.clone(),
                code: Some(code(&spec.code)? as i32),
                message: spec.message.clone(),
            })
        })
        .collect()
}

/// Builds a list of resources. In a state-setting list each (type, name)
/// may appear once; `send_response` lists may repeat entries on purpose.
pub(crate) fn resource_list(
    specs: &[Spanned<ResourceSpec>],
    allow_duplicates: bool,
    backends: &[String],
) -> Result<Vec<ServedResource>, Problem> {
    let mut seen: HashMap<(String, String), u64> = HashMap::new();
    let mut built = Vec::with_capacity(specs.len());
    for spec in specs {
        let resource = build(spec, backends)?;
        if !allow_duplicates {
            let key = (resource.type_url.clone(), resource.name.clone());
            if let Some(first_line) = seen.insert(key, spec.line) {
                let kind = ResourceType::from_type_url(&resource.type_url)
                    .map_or(resource.type_url.clone(), |t| t.to_string());
                return Err(Problem::at(
                    spec,
                    format!(
                        "duplicate resource: {kind} `{}` is already in this list (line {first_line}); \
                         only send_response may repeat a resource",
                        resource.name
                    ),
                ));
            }
        }
        built.push(resource);
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::service::discovery::v3::Resource;
    use prost::Name;

    fn spec(yaml: &str) -> Spanned<ResourceSpec> {
        serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("test YAML: {e}"))
    }

    fn built(yaml: &str) -> ServedResource {
        build(&spec(yaml), &[]).unwrap_or_else(|p| panic!("{}", p.message()))
    }

    fn error(yaml: &str) -> String {
        match build(&spec(yaml), &[]) {
            Ok(r) => panic!("built {r:?}"),
            Err(p) => p.message().to_string(),
        }
    }

    fn decode<M: Message + Name + Default>(r: &ServedResource) -> M {
        assert_eq!(r.entry.type_url, M::type_url());
        M::decode(r.entry.value.as_slice()).expect("decodes")
    }

    fn hcm(listener: &Listener) -> HttpConnectionManager {
        let any = listener
            .api_listener
            .as_ref()
            .and_then(|a| a.api_listener.as_ref())
            .expect("api_listener");
        assert_eq!(any.type_url, HttpConnectionManager::type_url());
        HttpConnectionManager::decode(any.value.as_slice()).expect("HCM decodes")
    }

    fn filter_type_urls(hcm: &HttpConnectionManager) -> Vec<(String, String)> {
        hcm.http_filters
            .iter()
            .map(|f| match &f.config_type {
                Some(ConfigType::TypedConfig(any)) => (f.name.clone(), any.type_url.clone()),
                other => panic!("filter without typed_config: {other:?}"),
            })
            .collect()
    }

    fn only_route(vh: &VirtualHost) -> &Route {
        assert_eq!(vh.routes.len(), 1);
        &vh.routes[0]
    }

    fn cluster_of(route: &Route) -> Option<&ClusterSpecifier> {
        match &route.action {
            Some(Action::Route(action)) => action.cluster_specifier.as_ref(),
            _ => None,
        }
    }

    #[test]
    fn listener_over_rds() {
        let served = built("listener: {name: l1, rds: r1}");
        assert_eq!(
            (served.type_url.as_str(), served.name.as_str()),
            (ResourceType::Listener.type_url(), "l1")
        );
        let listener: Listener = decode(&served);
        assert_eq!(listener.name, "l1");
        let hcm = hcm(&listener);
        let Some(RouteSpecifier::Rds(rds)) = &hcm.route_specifier else {
            panic!("{hcm:?}")
        };
        assert_eq!(rds.route_config_name, "r1");
        assert_eq!(rds.config_source, Some(ads()));
        assert_eq!(
            filter_type_urls(&hcm),
            [("router".to_string(), Router::type_url())]
        );
    }

    #[test]
    fn a_listener_with_an_address_is_a_server_listener() {
        let listener: Listener = decode(&built(
            "listener: {name: l1, address: \"[::]:8443\", rds: r1}",
        ));
        assert!(listener.api_listener.is_none());
        let Some(address::Address::SocketAddress(sa)) = listener.address.and_then(|a| a.address)
        else {
            panic!("no socket address")
        };
        assert_eq!(sa.address, "::");
        assert_eq!(sa.port_specifier, Some(PortSpecifier::PortValue(8443)));
        let [chain] = listener.filter_chains.as_slice() else {
            panic!("one filter chain")
        };
        let [filter] = chain.filters.as_slice() else {
            panic!("one filter")
        };
        let Some(filter::ConfigType::TypedConfig(any)) = &filter.config_type else {
            panic!()
        };
        let hcm = HttpConnectionManager::decode(any.value.as_slice()).unwrap();
        assert!(
            matches!(hcm.route_specifier, Some(RouteSpecifier::Rds(r)) if r.route_config_name == "r1")
        );
        assert!(error("listener: {name: l, address: nowhere}").contains("expected ip:port"));
        assert!(
            error("listener: {name: l, address: \"0.0.0.0:1\", api_listener: true}")
                .contains("api_listener does not apply")
        );
    }

    #[test]
    fn listener_with_an_inline_route() {
        let listener: Listener = decode(&built("listener: {name: l1, routes_to: c1}"));
        let Some(RouteSpecifier::RouteConfig(rc)) = hcm(&listener).route_specifier else {
            panic!()
        };
        assert_eq!(rc.virtual_hosts.len(), 1);
        let vh = &rc.virtual_hosts[0];
        assert_eq!(
            (vh.name.as_str(), vh.domains.as_slice()),
            ("vh", ["*".to_string()].as_slice())
        );
        let route = only_route(vh);
        assert_eq!(
            route
                .r#match
                .as_ref()
                .and_then(|m| m.path_specifier.clone()),
            Some(PathSpecifier::Prefix(String::new()))
        );
        assert_eq!(
            cluster_of(route),
            Some(&ClusterSpecifier::Cluster("c1".into()))
        );
    }

    #[test]
    fn listener_weighted_with_domains_and_filters() {
        let listener: Listener = decode(&built(
            "listener:\n  name: l1\n  weighted: {a: 70, b: 30}\n  domains: [x.example.com]\n  \
             http_filters: [fault, rbac, type.googleapis.com/my.Filter, router]",
        ));
        let hcm = hcm(&listener);
        assert_eq!(
            filter_type_urls(&hcm),
            [
                ("fault".to_string(), HttpFault::type_url()),
                ("rbac".to_string(), Rbac::type_url()),
                (
                    "my.Filter".to_string(),
                    "type.googleapis.com/my.Filter".to_string()
                ),
                ("router".to_string(), Router::type_url()),
            ]
        );
        let Some(RouteSpecifier::RouteConfig(rc)) = hcm.route_specifier else {
            panic!()
        };
        assert_eq!(rc.virtual_hosts[0].domains, ["x.example.com"]);
        let Some(ClusterSpecifier::WeightedClusters(w)) =
            cluster_of(only_route(&rc.virtual_hosts[0]))
        else {
            panic!()
        };
        let weights: Vec<_> = w
            .clusters
            .iter()
            .map(|c| (c.name.as_str(), c.weight.as_ref().map(|w| w.value)))
            .collect();
        assert_eq!(weights, [("a", Some(70)), ("b", Some(30))]);
    }

    #[test]
    fn listener_with_no_filters_or_no_api_listener() {
        let listener: Listener = decode(&built("listener: {name: l1, rds: r1, http_filters: []}"));
        assert!(hcm(&listener).http_filters.is_empty());
        let listener: Listener = decode(&built("listener: {name: l1, api_listener: false}"));
        assert_eq!(
            listener,
            Listener {
                name: "l1".into(),
                ..Default::default()
            }
        );
    }

    #[test]
    fn contradictory_listeners_are_errors() {
        assert!(
            error("listener: {name: l1, rds: r1, weighted: {a: 1}}")
                .contains("rds and weighted exclude each other")
        );
        assert!(error("listener: {name: l1, rds: r1, domains: [a]}").contains("not rds"));
        assert!(
            error("listener: {name: l1, domains: [a]}")
                .contains("domains need routes_to or weighted")
        );
        assert!(
            error("listener: {name: l1, api_listener: false, rds: r1}")
                .contains("api_listener: false")
        );
        assert!(
            error("listener: {name: l1, rds: r1, http_filters: [routr]}")
                .contains("unknown http filter `routr`")
        );
    }

    #[test]
    fn route_config_shorthand_and_virtual_hosts() {
        let rc: RouteConfiguration = decode(&built(
            "route_config: {name: r1, routes_to: c1, domains: [a, b]}",
        ));
        assert_eq!(rc.name, "r1");
        assert_eq!(rc.virtual_hosts[0].domains, ["a", "b"]);

        let served = built(
            "route_config:\n  name: r1\n  virtual_hosts:\n    - domains: ['*']\n      routes:\n        \
             - {path: /svc/Method, cluster: c1}\n        - {prefix: /svc/, weighted: {c2: 1}}\n        \
             - {non_forwarding: true}\n    - {name: other, domains: [x], routes: []}",
        );
        assert_eq!(served.type_url, ResourceType::RouteConfiguration.type_url());
        let rc: RouteConfiguration = decode(&served);
        assert_eq!(rc.virtual_hosts.len(), 2);
        assert_eq!(
            (
                rc.virtual_hosts[0].name.as_str(),
                rc.virtual_hosts[1].name.as_str()
            ),
            ("vh0", "other")
        );
        let routes = &rc.virtual_hosts[0].routes;
        assert_eq!(
            routes[0]
                .r#match
                .as_ref()
                .and_then(|m| m.path_specifier.clone()),
            Some(PathSpecifier::Path("/svc/Method".into()))
        );
        assert_eq!(
            cluster_of(&routes[0]),
            Some(&ClusterSpecifier::Cluster("c1".into()))
        );
        assert!(matches!(
            cluster_of(&routes[1]),
            Some(ClusterSpecifier::WeightedClusters(_))
        ));
        let Some(Action::DirectResponse(direct)) = &routes[2].action else {
            panic!("{:?}", routes[2])
        };
        assert_eq!(direct.status, 503);
    }

    #[test]
    fn contradictory_route_configs_are_errors() {
        let vhs = "virtual_hosts: [{domains: ['*'], routes: []}]";
        assert!(
            error(&format!("route_config: {{name: r1, routes_to: c1, {vhs}}}"))
                .contains("exclude each other")
        );
        assert!(
            error("route_config: {name: r1, routes_to: c1, weighted: {a: 1}}")
                .contains("exclude each other")
        );
        let route = |r: &str| {
            format!(
                "route_config: {{name: r1, virtual_hosts: [{{domains: ['*'], routes: [{r}]}}]}}"
            )
        };
        assert!(
            error(&route("{cluster: c1, non_forwarding: true}"))
                .contains("cluster and non_forwarding")
        );
        assert!(error(&route("{prefix: /, path: /x, cluster: c1}")).contains("prefix and path"));
        assert!(error(&route("{prefix: /}")).contains("route 0: needs one of cluster"));
    }

    #[test]
    fn eds_cluster_by_default() {
        let served = built("cluster: {name: c1}");
        assert_eq!(
            (served.type_url.as_str(), served.name.as_str()),
            (ResourceType::Cluster.type_url(), "c1")
        );
        let cluster: Cluster = decode(&served);
        assert_eq!(
            cluster.cluster_discovery_type,
            Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32))
        );
        let eds = cluster.eds_cluster_config.expect("eds_cluster_config");
        assert_eq!(
            (eds.eds_config, eds.service_name.as_str()),
            (Some(ads()), "")
        );
        assert_eq!(cluster.lb_policy, LbPolicy::RoundRobin as i32);
        assert_eq!(
            cluster.connect_timeout,
            Some(Duration {
                seconds: 1,
                nanos: 0
            })
        );

        let cluster: Cluster = decode(&built(
            "cluster: {name: c1, eds_service_name: s1, lb_policy: RANDOM}",
        ));
        assert_eq!(
            cluster.eds_cluster_config.map(|e| e.service_name),
            Some("s1".into())
        );
        assert_eq!(cluster.lb_policy, LbPolicy::Random as i32);
    }

    #[test]
    fn logical_dns_and_aggregate_clusters() {
        let cluster: Cluster = decode(&built("cluster: {name: d, logical_dns: '[::1]:8443'}"));
        assert_eq!(
            cluster.cluster_discovery_type,
            Some(ClusterDiscoveryType::Type(DiscoveryType::LogicalDns as i32))
        );
        let cla = cluster.load_assignment.expect("load_assignment");
        assert_eq!(cla.cluster_name, "d");
        assert_eq!(socket_addresses(&cla), [("::1".to_string(), 8443)]);
        assert!(cluster.eds_cluster_config.is_none());

        let cluster: Cluster = decode(&built("cluster: {name: agg, aggregate: [a, b]}"));
        let Some(ClusterDiscoveryType::ClusterType(custom)) = cluster.cluster_discovery_type else {
            panic!()
        };
        assert_eq!(custom.name, "envoy.clusters.aggregate");
        let config = custom.typed_config.expect("typed_config");
        assert_eq!(config.type_url, ClusterConfig::type_url());
        assert_eq!(
            ClusterConfig::decode(config.value.as_slice())
                .map(|c| c.clusters)
                .ok(),
            Some(vec!["a".into(), "b".into()])
        );
    }

    #[test]
    fn bad_clusters_are_errors() {
        assert!(error("cluster: {name: c1, logical_dns: nohost}").contains("expected host:port"));
        assert!(
            error("cluster: {name: c1, logical_dns: 'h:99999'}").contains("expected host:port")
        );
        assert!(
            error("cluster: {name: c1, eds_service_name: s, aggregate: [a]}")
                .contains("exclude each other")
        );
        let problem = build(&spec("cluster:\n  name: c1\n  lb_policy: SOMETIMES"), &[])
            .expect_err("bad lb_policy");
        assert_eq!((problem.line(), problem.column()), (3, 14));
    }

    fn socket_addresses(cla: &ClusterLoadAssignment) -> Vec<(String, u32)> {
        cla.endpoints
            .iter()
            .flat_map(|l| &l.lb_endpoints)
            .map(|e| {
                let Some(HostIdentifier::Endpoint(endpoint)) = &e.host_identifier else {
                    panic!()
                };
                assert_eq!(e.health_status, 0, "health_status must stay UNKNOWN");
                let Some(address::Address::SocketAddress(sa)) =
                    endpoint.address.as_ref().and_then(|a| a.address.clone())
                else {
                    panic!()
                };
                let Some(PortSpecifier::PortValue(port)) = sa.port_specifier else {
                    panic!()
                };
                (sa.address, port)
            })
            .collect()
    }

    #[test]
    fn endpoints_shorthand_and_localities() {
        let served = built("endpoints: {name: e1, addresses: ['127.0.0.1:80', '[::1]:81']}");
        assert_eq!(
            (served.type_url.as_str(), served.name.as_str()),
            (ResourceType::ClusterLoadAssignment.type_url(), "e1")
        );
        let cla: ClusterLoadAssignment = decode(&served);
        assert_eq!(cla.cluster_name, "e1");
        assert_eq!(cla.endpoints.len(), 1);
        let locality = &cla.endpoints[0];
        assert_eq!(
            locality.locality,
            Some(Locality {
                region: "r1".into(),
                zone: "z1".into(),
                sub_zone: String::new(),
            })
        );
        assert_eq!(
            locality.load_balancing_weight,
            Some(UInt32Value { value: 1 })
        );
        assert_eq!(locality.priority, 0);
        assert_eq!(
            socket_addresses(&cla),
            [("127.0.0.1".to_string(), 80), ("::1".to_string(), 81)]
        );
        assert!(cla.policy.is_none());

        let cla: ClusterLoadAssignment = decode(&built(
            "endpoints:\n  name: e1\n  localities:\n    - {region: r2, zone: z2, sub_zone: s, weight: 0, \
             priority: 1, addresses: ['10.0.0.1:1']}\n    - {weight: 5, addresses: []}\n  drop: {lb: 500000}",
        ));
        let l = &cla.endpoints;
        assert_eq!(l[0].load_balancing_weight, Some(UInt32Value { value: 0 }));
        assert_eq!(l[0].priority, 1);
        assert_eq!(
            l[0].locality.as_ref().map(|l| (
                l.region.as_str(),
                l.zone.as_str(),
                l.sub_zone.as_str()
            )),
            Some(("r2", "z2", "s"))
        );
        assert_eq!(l[1].load_balancing_weight, Some(UInt32Value { value: 5 }));
        let drops = cla.policy.expect("policy").drop_overloads;
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].category, "lb");
        assert_eq!(
            drops[0].drop_percentage,
            Some(FractionalPercent {
                numerator: 500_000,
                denominator: DenominatorType::Million as i32
            })
        );
    }

    #[test]
    fn bad_endpoints_are_errors() {
        assert!(
            error("endpoints: {name: e1, addresses: ['localhost:80']}")
                .contains("expected ip:port")
        );
        assert!(
            error("endpoints: {name: e1, addresses: [], localities: []}")
                .contains("exclude each other")
        );
    }

    #[test]
    fn proto_resources_take_type_and_name_from_the_message() {
        let served = built(
            "proto:\n  '@type': type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment\n  \
             clusterName: e1",
        );
        assert_eq!(
            (served.type_url.as_str(), served.name.as_str()),
            (ResourceType::ClusterLoadAssignment.type_url(), "e1")
        );
        let served = built(
            "proto: {'@type': type.googleapis.com/envoy.config.listener.v3.Listener, name: l1}",
        );
        assert_eq!(
            (served.type_url.as_str(), served.name.as_str()),
            (ResourceType::Listener.type_url(), "l1")
        );
        assert!(
            error("proto: {'@type': type.googleapis.com/envoy.config.core.v3.Node}")
                .contains("use raw")
        );
    }

    /// The same cluster, written compactly and as an Envoy user writes it
    /// in proto3 JSON (camelCase or snake_case), is the same message.
    #[test]
    fn proto_json_cluster_equals_the_compact_one() {
        let compact: Cluster = decode(&built(
            "cluster: {name: c1, eds_service_name: s1, lb_policy: RING_HASH}",
        ));
        for proto in [
            "proto:\n  '@type': type.googleapis.com/envoy.config.cluster.v3.Cluster\n  name: c1\n  type: EDS\n  \
             edsClusterConfig: {edsConfig: {ads: {}}, serviceName: s1}\n  lbPolicy: RING_HASH\n  connectTimeout: 1s",
            "proto:\n  '@type': type.googleapis.com/envoy.config.cluster.v3.Cluster\n  name: c1\n  type: EDS\n  \
             eds_cluster_config: {eds_config: {ads: {}}, service_name: s1}\n  lb_policy: RING_HASH\n  \
             connect_timeout: 1.000s",
        ] {
            let served = built(proto);
            assert_eq!(served.type_url, ResourceType::Cluster.type_url());
            assert_eq!(decode::<Cluster>(&served), compact);
        }
    }

    #[test]
    fn raw_entries_are_taken_as_given() {
        let served = built("raw: {type: CDS, name: bad, hex: 'ff FF\n 0a'}");
        assert_eq!(served.type_url, ResourceType::Cluster.type_url());
        assert_eq!(served.name, "bad");
        assert_eq!(
            served.entry,
            Any {
                type_url: ResourceType::Cluster.type_url().into(),
                value: vec![0xff, 0xff, 0x0a]
            }
        );
        let served = built("raw: {type: EDS, name: x, type_url: ''}");
        assert_eq!(
            served.entry,
            Any {
                type_url: String::new(),
                value: Vec::new()
            }
        );
        assert_eq!(
            served.type_url,
            ResourceType::ClusterLoadAssignment.type_url()
        );
        assert!(error("raw: {type: CDS, name: x, hex: abc}").contains("odd number of hex digits"));
        assert!(error("raw: {type: XDS, name: x}").contains("unknown resource type `XDS`"));
    }

    #[test]
    fn wrapped_resources_keep_their_stream_type() {
        let plain = built("cluster: {name: c1}");
        let served = built("wrapped:\n  cluster: {name: c1}");
        assert_eq!(
            (served.type_url.as_str(), served.name.as_str()),
            (ResourceType::Cluster.type_url(), "c1")
        );
        let wrapper: Resource = decode(&served);
        assert_eq!(wrapper.name, "c1");
        assert_eq!(wrapper.resource, Some(plain.entry));
    }
}
