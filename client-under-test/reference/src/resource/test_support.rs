//! Builders for the xDS protos the validation tests decode, and assertions
//! on the errors they produce.

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
use envoy_types::pb::envoy::config::core::v3::{
    Address, AggregatedConfigSource, ConfigSource, Locality, SelfConfigSource, SocketAddress,
    address, config_source::ConfigSourceSpecifier, socket_address::PortSpecifier,
};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, Endpoint, LbEndpoint, LocalityLbEndpoints, lb_endpoint::HostIdentifier,
};
use envoy_types::pb::envoy::config::listener::v3::{ApiListener, Listener};
use envoy_types::pb::envoy::config::route::v3::{
    Route, RouteAction, RouteConfiguration, RouteMatch, VirtualHost, route, route_action,
    route_match,
};
use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, HttpFilter, Rds, http_connection_manager::RouteSpecifier,
    http_filter::ConfigType,
};
use envoy_types::pb::google::protobuf::{Any, UInt32Value};
use prost::{Message, Name};

use super::common::TypedStruct;
use super::{DecodeError, ValidationErrors, XdsResource};

pub(crate) fn any<M: Message + Name>(message: &M) -> Any {
    Any {
        type_url: M::type_url(),
        value: message.encode_to_vec(),
    }
}

/// An `xds.type.v3.TypedStruct` naming `inner_type_url`, with no fields.
pub(crate) fn typed_struct(inner_type_url: &str) -> Any {
    let wrapper = TypedStruct {
        type_url: inner_type_url.to_string(),
        value: None,
    };
    Any {
        type_url: "type.googleapis.com/xds.type.v3.TypedStruct".to_string(),
        value: wrapper.encode_to_vec(),
    }
}

pub(crate) fn ads() -> ConfigSource {
    ConfigSource {
        config_source_specifier: Some(ConfigSourceSpecifier::Ads(AggregatedConfigSource {})),
        ..Default::default()
    }
}

pub(crate) fn self_source() -> ConfigSource {
    ConfigSource {
        config_source_specifier: Some(ConfigSourceSpecifier::Self_(SelfConfigSource::default())),
        ..Default::default()
    }
}

pub(crate) fn http_filter(name: &str, config: Any) -> HttpFilter {
    HttpFilter {
        name: name.to_string(),
        config_type: Some(ConfigType::TypedConfig(config)),
        ..Default::default()
    }
}

pub(crate) fn router_filter() -> HttpFilter {
    http_filter("router", any(&Router::default()))
}

/// An HCM using RDS over ADS with just the router filter.
pub(crate) fn hcm_rds(route_config_name: &str) -> HttpConnectionManager {
    HttpConnectionManager {
        route_specifier: Some(RouteSpecifier::Rds(Rds {
            config_source: Some(ads()),
            route_config_name: route_config_name.to_string(),
        })),
        http_filters: vec![router_filter()],
        ..Default::default()
    }
}

pub(crate) fn api_listener(name: &str, hcm: &HttpConnectionManager) -> Listener {
    Listener {
        name: name.to_string(),
        api_listener: Some(ApiListener {
            api_listener: Some(any(hcm)),
        }),
        ..Default::default()
    }
}

pub(crate) fn route_config(name: &str, virtual_hosts: Vec<VirtualHost>) -> RouteConfiguration {
    RouteConfiguration {
        name: name.to_string(),
        virtual_hosts,
        ..Default::default()
    }
}

pub(crate) fn vhost(domains: &[&str], routes: Vec<Route>) -> VirtualHost {
    VirtualHost {
        name: "vh".to_string(),
        domains: domains.iter().map(|d| d.to_string()).collect(),
        routes,
        ..Default::default()
    }
}

pub(crate) fn route_with(path: route_match::PathSpecifier, action: RouteAction) -> Route {
    Route {
        r#match: Some(RouteMatch {
            path_specifier: Some(path),
            ..Default::default()
        }),
        action: Some(route::Action::Route(action)),
        ..Default::default()
    }
}

pub(crate) fn cluster_action(cluster: &str) -> RouteAction {
    RouteAction {
        cluster_specifier: Some(route_action::ClusterSpecifier::Cluster(cluster.to_string())),
        ..Default::default()
    }
}

/// `prefix` -> `cluster`.
pub(crate) fn prefix_route(prefix: &str, cluster: &str) -> Route {
    route_with(
        route_match::PathSpecifier::Prefix(prefix.to_string()),
        cluster_action(cluster),
    )
}

/// An EDS cluster over ADS with the default (round robin) policy.
pub(crate) fn eds_cluster(name: &str) -> Cluster {
    Cluster {
        name: name.to_string(),
        cluster_discovery_type: Some(cluster::ClusterDiscoveryType::Type(
            cluster::DiscoveryType::Eds as i32,
        )),
        eds_cluster_config: Some(cluster::EdsClusterConfig {
            eds_config: Some(ads()),
            service_name: String::new(),
        }),
        ..Default::default()
    }
}

pub(crate) fn socket_address(ip: &str, port: u32) -> Address {
    Address {
        address: Some(address::Address::SocketAddress(SocketAddress {
            address: ip.to_string(),
            port_specifier: Some(PortSpecifier::PortValue(port)),
            ..Default::default()
        })),
    }
}

pub(crate) fn lb_endpoint(ip: &str, port: u32) -> LbEndpoint {
    LbEndpoint {
        host_identifier: Some(HostIdentifier::Endpoint(Endpoint {
            address: Some(socket_address(ip, port)),
            ..Default::default()
        })),
        ..Default::default()
    }
}

pub(crate) fn locality(
    region: &str,
    weight: Option<u32>,
    priority: u32,
    lb_endpoints: Vec<LbEndpoint>,
) -> LocalityLbEndpoints {
    LocalityLbEndpoints {
        locality: Some(Locality {
            region: region.to_string(),
            zone: "z".to_string(),
            ..Default::default()
        }),
        lb_endpoints,
        load_balancing_weight: weight.map(|value| UInt32Value { value }),
        priority,
        ..Default::default()
    }
}

pub(crate) fn cla(
    cluster_name: &str,
    endpoints: Vec<LocalityLbEndpoints>,
) -> ClusterLoadAssignment {
    ClusterLoadAssignment {
        cluster_name: cluster_name.to_string(),
        endpoints,
        ..Default::default()
    }
}

/// The validation errors of a decode that must have failed validation.
#[track_caller]
pub(crate) fn invalid(
    decoded: (Option<String>, Result<XdsResource, DecodeError>),
) -> ValidationErrors {
    match decoded.1 {
        Err(DecodeError::Invalid(errors)) => errors,
        other => panic!("expected validation errors, got {other:?}"),
    }
}

/// The value of a decode that must have succeeded.
#[track_caller]
pub(crate) fn valid(decoded: (Option<String>, Result<XdsResource, DecodeError>)) -> XdsResource {
    match decoded.1 {
        Ok(resource) => resource,
        Err(e) => panic!("expected a valid resource, got: {e}"),
    }
}

/// Asserts that `errors` has an error at exactly `field` whose message
/// contains `fragment`.
#[track_caller]
pub(crate) fn assert_error(errors: &ValidationErrors, field: &str, fragment: &str) {
    assert!(
        errors
            .errors
            .iter()
            .any(|(f, m)| f == field && m.contains(fragment)),
        "no error at {field:?} containing {fragment:?} in {errors}"
    );
}
