//! Cluster resources: EDS, LOGICAL_DNS and aggregate clusters.

use envoy_types::pb::envoy::config::cluster::v3::{
    Cluster, OutlierDetection,
    cluster::{self as cluster_proto, ClusterDiscoveryType, DiscoveryType, LbConfig},
};
use envoy_types::pb::envoy::config::core::v3::{
    RoutingPriority, TransportSocket, TypedExtensionConfig, address, socket_address::PortSpecifier,
    transport_socket::ConfigType as TransportSocketConfig,
};
use envoy_types::pb::envoy::extensions::clusters::aggregate::v3::ClusterConfig;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext;
use envoy_types::pb::envoy::extensions::upstreams::http::v3::HttpProtocolOptions;
use envoy_types::pb::google::protobuf::Duration;
use prost::Message;

use super::common::{
    ExtensionValue, extract_extension, is_ads_or_self, join_host_port, parse_duration,
};
use super::lb_policy_registry::{self, DEFAULT_MIN_RING_SIZE, MAX_RING_SIZE};
use super::tls::validate_common_tls_context;
use super::validation::FieldScope;
use super::{DecodeContext, DecodeError, ValidationErrors, ValidationRule, XdsResource};

const AGGREGATE_CLUSTER_TYPE: &str = "envoy.extensions.clusters.aggregate.v3.ClusterConfig";
const UPSTREAM_TLS_CONTEXT_TYPE: &str =
    "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext";
const HTTP_PROTOCOL_OPTIONS_TYPE: &str = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
/// gRFC A32's default when no DEFAULT-priority threshold sets one.
const DEFAULT_MAX_CONCURRENT_REQUESTS: u32 = 1024;

#[derive(Clone, Debug, PartialEq)]
pub struct ClusterResource {
    pub kind: ClusterKind,
    pub lb_policy: LbPolicy,
    /// `lrs_server` set to `self`.
    pub lrs_load_reporting: bool,
    /// From `circuit_breakers` (default 1024).
    pub max_concurrent_requests: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterKind {
    /// `type: EDS` over ADS; the EDS resource name is `eds_service_name`,
    /// or the cluster name when that is empty.
    Eds { eds_service_name: Option<String> },
    /// `type: LOGICAL_DNS`: one `host:port` to resolve.
    LogicalDns { hostname: String },
    /// `envoy.clusters.aggregate`: child clusters in priority order.
    Aggregate {
        prioritized_cluster_names: Vec<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum LbPolicy {
    RoundRobin,
    RingHash {
        min_ring_size: u64,
        max_ring_size: u64,
    },
    LeastRequest {
        choice_count: u32,
    },
    /// From `load_balancing_policy`: the first policy gRPC supports.
    Custom {
        name: String,
    },
}

impl ClusterResource {
    /// e.g. `EDS service=e1 lb=ROUND_ROBIN`.
    pub fn summary(&self) -> String {
        let kind = match &self.kind {
            ClusterKind::Eds {
                eds_service_name: Some(s),
            } => format!("EDS service={s}"),
            ClusterKind::Eds {
                eds_service_name: None,
            } => "EDS".to_string(),
            ClusterKind::LogicalDns { hostname } => format!("LOGICAL_DNS {hostname}"),
            ClusterKind::Aggregate {
                prioritized_cluster_names,
            } => {
                format!("AGGREGATE [{}]", prioritized_cluster_names.join(","))
            }
        };
        let lb = match &self.lb_policy {
            LbPolicy::RoundRobin => "ROUND_ROBIN".to_string(),
            LbPolicy::RingHash { .. } => "RING_HASH".to_string(),
            LbPolicy::LeastRequest { .. } => "LEAST_REQUEST".to_string(),
            LbPolicy::Custom { name } => name.clone(),
        };
        format!("{kind} lb={lb}")
    }

    /// The EDS resource name to watch for an EDS cluster named `cluster_name`.
    pub fn eds_resource_name<'a>(&'a self, cluster_name: &'a str) -> Option<&'a str> {
        match &self.kind {
            ClusterKind::Eds { eds_service_name } => {
                Some(eds_service_name.as_deref().unwrap_or(cluster_name))
            }
            _ => None,
        }
    }
}

/// Decodes and validates a serialized `envoy.config.cluster.v3.Cluster`.
pub(super) fn decode(
    bytes: &[u8],
    context: &DecodeContext,
) -> (Option<String>, Result<XdsResource, DecodeError>) {
    let cluster = match Cluster::decode(bytes) {
        Ok(cluster) => cluster,
        Err(e) => {
            return (
                None,
                Err(DecodeError::Undecodable {
                    message_type: "Cluster",
                    reason: e.to_string(),
                }),
            );
        }
    };
    let mut errors = ValidationErrors::in_context("Cluster", context);
    let parsed = parse_cluster(&cluster, context, &mut FieldScope::root(&mut errors));
    let result = errors
        .into_result(parsed)
        .map(XdsResource::Cluster)
        .map_err(DecodeError::Invalid);
    (Some(cluster.name), result)
}

/// C-core's `CdsResourceParse`, limited to what this client's value carries
/// plus every check that can reject the resource.
fn parse_cluster(
    cluster: &Cluster,
    context: &DecodeContext,
    scope: &mut FieldScope<'_>,
) -> Option<ClusterResource> {
    let kind = parse_kind(cluster, scope);
    let lb_policy = parse_lb_policy(cluster, scope);
    if let Some(transport_socket) = &cluster.transport_socket {
        validate_transport_socket(
            transport_socket,
            context,
            &mut scope.at(".transport_socket"),
        );
    }
    // C-core still records the LRS server when the ConfigSource is wrong;
    // the error makes the resource invalid anyway.
    if let Some(lrs_server) = &cluster.lrs_server
        && !matches!(
            lrs_server.config_source_specifier,
            Some(envoy_types::pb::envoy::config::core::v3::config_source::ConfigSourceSpecifier::Self_(_))
        )
        && scope.enforces(ValidationRule::LrsServerSelf)
    {
        scope.at(".lrs_server").error("ConfigSource is not self");
    }
    if let Some(upstream_config) = &cluster.upstream_config {
        validate_upstream_config(upstream_config, &mut scope.at(".upstream_config"));
    }
    if let Some(outlier_detection) = &cluster.outlier_detection {
        validate_outlier_detection(outlier_detection, &mut scope.at(".outlier_detection"));
    }
    Some(ClusterResource {
        kind: kind?,
        lb_policy: lb_policy?,
        lrs_load_reporting: cluster.lrs_server.is_some(),
        max_concurrent_requests: max_concurrent_requests(cluster),
    })
}

fn parse_kind(cluster: &Cluster, scope: &mut FieldScope<'_>) -> Option<ClusterKind> {
    match &cluster.cluster_discovery_type {
        Some(ClusterDiscoveryType::Type(t)) if *t == DiscoveryType::Eds as i32 => {
            parse_eds(cluster, scope)
        }
        Some(ClusterDiscoveryType::Type(t)) if *t == DiscoveryType::LogicalDns as i32 => {
            parse_logical_dns(cluster, &mut scope.at(".load_assignment"))
        }
        Some(ClusterDiscoveryType::ClusterType(custom)) => {
            parse_aggregate(custom, &mut scope.at(".cluster_type.typed_config"))
        }
        // A client that skips the check takes any other type for EDS.
        _ if !scope.enforces(ValidationRule::DiscoveryType) => Some(ClusterKind::Eds {
            eds_service_name: None,
        }),
        // STATIC (also the default), STRICT_DNS, ORIGINAL_DST, unknown values.
        _ => {
            scope.at(".type").error("unknown discovery type");
            None
        }
    }
}

fn parse_eds(cluster: &Cluster, scope: &mut FieldScope<'_>) -> Option<ClusterKind> {
    let mut scope = scope.at(".eds_cluster_config");
    let Some(eds_config) = &cluster.eds_cluster_config else {
        scope.error("field not present");
        return None;
    };
    match &eds_config.eds_config {
        None => scope.at(".eds_config").error("field not present"),
        Some(source)
            if !is_ads_or_self(source) && scope.enforces(ValidationRule::EdsConfigSource) =>
        {
            scope
                .at(".eds_config")
                .error("ConfigSource is not ads or self")
        }
        Some(_) => {}
    }
    // An xdstp cluster name is not a valid EDS resource name (gRFC A47).
    if eds_config.service_name.is_empty() && cluster.name.starts_with("xdstp:") {
        scope
            .at(".service_name")
            .error("must be set if Cluster resource has an xdstp name");
    }
    let eds_service_name = Some(eds_config.service_name.clone()).filter(|s| !s.is_empty());
    Some(ClusterKind::Eds { eds_service_name })
}

/// Exactly one locality with exactly one endpoint naming `host:port`.
fn parse_logical_dns(cluster: &Cluster, scope: &mut FieldScope<'_>) -> Option<ClusterKind> {
    let Some(load_assignment) = &cluster.load_assignment else {
        scope.error("field not present for LOGICAL_DNS cluster");
        return None;
    };
    let mut scope = scope.at(".endpoints");
    // A client that skips the shape check resolves the first one.
    let lenient = !scope.enforces(ValidationRule::LogicalDnsShape);
    let locality = match load_assignment.endpoints.as_slice() {
        [locality] => locality,
        [locality, ..] if lenient => locality,
        localities => {
            scope.error(format!(
                "must contain exactly one locality for LOGICAL_DNS cluster, found {}",
                localities.len()
            ));
            return None;
        }
    };
    let mut scope = scope.at("[0].lb_endpoints");
    let lb_endpoint = match locality.lb_endpoints.as_slice() {
        [lb_endpoint] => lb_endpoint,
        [lb_endpoint, ..] if lenient => lb_endpoint,
        lb_endpoints => {
            scope.error(format!(
                "must contain exactly one endpoint for LOGICAL_DNS cluster, found {}",
                lb_endpoints.len()
            ));
            return None;
        }
    };
    let mut scope = scope.at("[0].endpoint");
    let Some(envoy_types::pb::envoy::config::endpoint::v3::lb_endpoint::HostIdentifier::Endpoint(
        endpoint,
    )) = &lb_endpoint.host_identifier
    else {
        scope.error("field not present");
        return None;
    };
    let mut scope = scope.at(".address");
    let Some(address) = &endpoint.address else {
        scope.error("field not present");
        return None;
    };
    let mut scope = scope.at(".socket_address");
    let Some(address::Address::SocketAddress(socket_address)) = &address.address else {
        scope.error("field not present");
        return None;
    };
    if !socket_address.resolver_name.is_empty() {
        scope
            .at(".resolver_name")
            .error("LOGICAL_DNS clusters must NOT have a custom resolver name set");
    }
    if socket_address.address.is_empty() {
        scope.at(".address").error("field not present");
    }
    let port = match socket_address.port_specifier {
        Some(PortSpecifier::PortValue(port)) => port,
        _ => {
            scope.at(".port_value").error("field not present");
            0
        }
    };
    Some(ClusterKind::LogicalDns {
        hostname: join_host_port(&socket_address.address, port),
    })
}

/// `cluster_type` is only understood for aggregate clusters; C-core goes by
/// the config's type and ignores the extension name.
fn parse_aggregate(
    custom: &cluster_proto::CustomClusterType,
    scope: &mut FieldScope<'_>,
) -> Option<ClusterKind> {
    let Some(typed_config) = &custom.typed_config else {
        scope.error("field not present");
        return None;
    };
    let type_name = typed_config
        .type_url
        .strip_prefix("type.googleapis.com/")
        .unwrap_or(&typed_config.type_url);
    if type_name != AGGREGATE_CLUSTER_TYPE {
        // A client that skips the check takes it for an empty aggregate.
        if !scope.enforces(ValidationRule::CustomClusterType) {
            return Some(ClusterKind::Aggregate {
                prioritized_cluster_names: Vec::new(),
            });
        }
        scope
            .at(".type_url")
            .error(format!("unknown cluster_type extension: {type_name}"));
        return None;
    }
    let mut scope = scope.at(&format!(".value[{AGGREGATE_CLUSTER_TYPE}]"));
    let Ok(config) = ClusterConfig::decode(typed_config.value.as_slice()) else {
        scope.error("can't parse aggregate cluster config");
        return None;
    };
    if config.clusters.is_empty() {
        scope.at(".clusters").error("must be non-empty");
    }
    Some(ClusterKind::Aggregate {
        prioritized_cluster_names: config.clusters,
    })
}

/// `load_balancing_policy` if set, else the legacy `lb_policy` enum.
fn parse_lb_policy(cluster: &Cluster, scope: &mut FieldScope<'_>) -> Option<LbPolicy> {
    if let Some(policy) = &cluster.load_balancing_policy {
        return lb_policy_registry::convert(policy, &mut scope.at(".load_balancing_policy"));
    }
    match cluster_proto::LbPolicy::try_from(cluster.lb_policy) {
        Ok(cluster_proto::LbPolicy::RoundRobin) => Some(LbPolicy::RoundRobin),
        Ok(cluster_proto::LbPolicy::RingHash) => Some(parse_ring_hash(cluster, scope)),
        // gRFC A48 (C-core itself has no least_request policy).
        Ok(cluster_proto::LbPolicy::LeastRequest) => {
            let choice_count = match &cluster.lb_config {
                Some(LbConfig::LeastRequestLbConfig(config)) => {
                    config.choice_count.map_or(2, |c| c.value)
                }
                _ => 2,
            };
            if choice_count < 2 {
                scope
                    .at(".least_request_lb_config.choice_count")
                    .error("must be greater than or equal to 2");
            }
            Some(LbPolicy::LeastRequest { choice_count })
        }
        _ if !scope.enforces(ValidationRule::LbPolicySupported) => Some(LbPolicy::RoundRobin),
        _ => {
            scope.at(".lb_policy").error("LB policy is not supported");
            None
        }
    }
}

fn parse_ring_hash(cluster: &Cluster, scope: &mut FieldScope<'_>) -> LbPolicy {
    let mut min_ring_size = DEFAULT_MIN_RING_SIZE;
    let mut max_ring_size = MAX_RING_SIZE;
    if let Some(LbConfig::RingHashLbConfig(config)) = &cluster.lb_config {
        let mut scope = scope.at(".ring_hash_lb_config");
        let checked = scope.enforces(ValidationRule::RingHashSizes);
        if let Some(max) = config.maximum_ring_size {
            max_ring_size = max.value;
            if checked && (max_ring_size == 0 || max_ring_size > MAX_RING_SIZE) {
                scope
                    .at(".maximum_ring_size")
                    .error("must be in the range of 1 to 8388608");
            }
        }
        if let Some(min) = config.minimum_ring_size {
            min_ring_size = min.value;
            let mut scope = scope.at(".minimum_ring_size");
            if checked && (min_ring_size == 0 || min_ring_size > MAX_RING_SIZE) {
                scope.error("must be in the range of 1 to 8388608");
            }
            if checked && min_ring_size > max_ring_size {
                scope.error("cannot be greater than maximum_ring_size");
            }
        }
        if config.hash_function != cluster_proto::ring_hash_lb_config::HashFunction::XxHash as i32 {
            scope.at(".hash_function").error("invalid hash function");
        }
    }
    LbPolicy::RingHash {
        min_ring_size,
        max_ring_size,
    }
}

/// Only TLS is supported, with certificates as gRFC A29 has them
/// (`tls::validate_common_tls_context`).
fn validate_transport_socket(
    transport_socket: &TransportSocket,
    context: &DecodeContext,
    scope: &mut FieldScope<'_>,
) {
    let mut scope = scope.at(".typed_config");
    let Some(TransportSocketConfig::TypedConfig(any)) = &transport_socket.config_type else {
        scope.error("field not present");
        return;
    };
    let Some(extension) = extract_extension(Some(any), &mut scope) else {
        return;
    };
    let mut scope = scope.at(&extension.field);
    if extension.type_name != UPSTREAM_TLS_CONTEXT_TYPE {
        if scope.enforces(ValidationRule::TransportSocketType) {
            scope
                .at(".type_url")
                .error("unsupported transport socket type");
        }
        return;
    }
    let tls_context = match &extension.value {
        ExtensionValue::Proto(bytes) => UpstreamTlsContext::decode(bytes.as_slice()).ok(),
        ExtensionValue::Json => None,
    };
    let Some(tls_context) = tls_context else {
        scope.error("can't decode UpstreamTlsContext");
        return;
    };
    let mut scope = scope.at(".common_tls_context");
    let has_ca_certs = tls_context
        .common_tls_context
        .as_ref()
        .is_some_and(|common| validate_common_tls_context(common, context, &mut scope));
    if !has_ca_certs && scope.enforces(ValidationRule::TlsCaCertificates) {
        scope.error("no CA certs configured");
    }
}

fn validate_upstream_config(upstream_config: &TypedExtensionConfig, scope: &mut FieldScope<'_>) {
    let mut scope = scope.at(".typed_config");
    let Some(extension) = extract_extension(upstream_config.typed_config.as_ref(), &mut scope)
    else {
        return;
    };
    let mut scope = scope.at(&extension.field);
    if extension.type_name != HTTP_PROTOCOL_OPTIONS_TYPE {
        scope
            .at(".type_url")
            .error("unsupported upstream config type");
        return;
    }
    let options = match &extension.value {
        ExtensionValue::Proto(bytes) => HttpProtocolOptions::decode(bytes.as_slice()).ok(),
        ExtensionValue::Json => None,
    };
    let Some(options) = options else {
        scope.error("can't decode HttpProtocolOptions");
        return;
    };
    if let Some(idle_timeout) = options
        .common_http_protocol_options
        .as_ref()
        .and_then(|o| o.idle_timeout.as_ref())
    {
        parse_duration(
            idle_timeout,
            &mut scope.at(".common_http_protocol_options.idle_timeout"),
        );
    }
}

/// gRFC A50's limits. C-core compares `failure_percentage_threshold` against
/// the wrong variable; this checks the threshold itself, as A50 specifies.
fn validate_outlier_detection(outlier_detection: &OutlierDetection, scope: &mut FieldScope<'_>) {
    let durations: [(&str, &Option<Duration>); 3] = [
        (".interval", &outlier_detection.interval),
        (".base_ejection_time", &outlier_detection.base_ejection_time),
        (".max_ejection_time", &outlier_detection.max_ejection_time),
    ];
    for (field, duration) in durations {
        if let Some(duration) = duration {
            parse_duration(duration, &mut scope.at(field));
        }
    }
    let percentages = [
        (
            ".max_ejection_percent",
            outlier_detection.max_ejection_percent,
        ),
        (
            ".enforcing_success_rate",
            outlier_detection.enforcing_success_rate,
        ),
        (
            ".enforcing_failure_percentage",
            outlier_detection.enforcing_failure_percentage,
        ),
    ];
    let checked = scope.enforces(ValidationRule::OutlierDetectionPercent);
    for (field, value) in percentages {
        if checked && value.is_some_and(|v| v.value > 100) {
            scope.at(field).error("value must be <= 100");
        }
    }
    // The threshold is only read when failure-percentage ejection is on.
    if checked
        && outlier_detection
            .enforcing_failure_percentage
            .is_some_and(|v| v.value != 0)
        && outlier_detection
            .failure_percentage_threshold
            .is_some_and(|v| v.value > 100)
    {
        scope
            .at(".failure_percentage_threshold")
            .error("value must be <= 100");
    }
}

/// `max_requests` of the first DEFAULT-priority threshold (gRFC A32).
fn max_concurrent_requests(cluster: &Cluster) -> u32 {
    cluster
        .circuit_breakers
        .as_ref()
        .and_then(|cb| {
            cb.thresholds
                .iter()
                .find(|t| t.priority == RoutingPriority::Default as i32)
        })
        .and_then(|t| t.max_requests)
        .map_or(DEFAULT_MAX_CONCURRENT_REQUESTS, |m| m.value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_support::*;
    use envoy_types::pb::envoy::config::cluster::v3::{
        CircuitBreakers, LoadBalancingPolicy, circuit_breakers::Thresholds, load_balancing_policy,
    };
    use envoy_types::pb::envoy::config::core::v3::{Address, Pipe, SocketAddress};
    use envoy_types::pb::envoy::config::endpoint::v3::{
        ClusterLoadAssignment, Endpoint, LbEndpoint, lb_endpoint::HostIdentifier,
    };
    use envoy_types::pb::envoy::extensions::load_balancing_policies::ring_hash::v3::RingHash;
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
        CertificateProviderPluginInstance, CertificateValidationContext, CommonTlsContext,
        certificate_validation_context::SystemRootCerts, common_tls_context::ValidationContextType,
    };
    use envoy_types::pb::google::protobuf::{self, UInt32Value, UInt64Value};
    use rstest::rstest;

    fn decode_cluster(cluster: &Cluster) -> (Option<String>, Result<XdsResource, DecodeError>) {
        decode(&cluster.encode_to_vec(), &DecodeContext::default())
    }

    fn parsed(cluster: &Cluster) -> ClusterResource {
        match valid(decode_cluster(cluster)) {
            XdsResource::Cluster(c) => c,
            other => panic!("not a cluster: {other:?}"),
        }
    }

    fn errors_of(cluster: &Cluster) -> ValidationErrors {
        invalid(decode_cluster(cluster))
    }

    fn typed(t: DiscoveryType) -> Option<ClusterDiscoveryType> {
        Some(ClusterDiscoveryType::Type(t as i32))
    }

    fn logical_dns(load_assignment: Option<ClusterLoadAssignment>) -> Cluster {
        Cluster {
            name: "dns".into(),
            cluster_discovery_type: typed(DiscoveryType::LogicalDns),
            load_assignment,
            ..Default::default()
        }
    }

    fn one_endpoint(lb_endpoint: LbEndpoint) -> Option<ClusterLoadAssignment> {
        Some(cla("", vec![locality("r", Some(1), 0, vec![lb_endpoint])]))
    }

    fn aggregate(typed_config: Option<protobuf::Any>) -> Cluster {
        Cluster {
            name: "agg".into(),
            cluster_discovery_type: Some(ClusterDiscoveryType::ClusterType(
                cluster_proto::CustomClusterType {
                    name: "envoy.clusters.aggregate".into(),
                    typed_config,
                },
            )),
            ..Default::default()
        }
    }

    fn with_lb(lb_policy: cluster_proto::LbPolicy, lb_config: Option<LbConfig>) -> Cluster {
        Cluster {
            lb_policy: lb_policy as i32,
            lb_config,
            ..eds_cluster("c")
        }
    }

    #[test]
    fn minimal_eds_cluster() {
        let decoded = decode_cluster(&eds_cluster("c1"));
        assert_eq!(decoded.0.as_deref(), Some("c1"));
        let XdsResource::Cluster(cluster) = valid(decoded) else {
            panic!("not a cluster")
        };
        assert_eq!(
            cluster,
            ClusterResource {
                kind: ClusterKind::Eds {
                    eds_service_name: None
                },
                lb_policy: LbPolicy::RoundRobin,
                lrs_load_reporting: false,
                max_concurrent_requests: 1024,
            }
        );
        assert_eq!(cluster.summary(), "EDS lb=ROUND_ROBIN");
        assert_eq!(cluster.eds_resource_name("c1"), Some("c1"));
    }

    #[test]
    fn eds_service_name_and_self_source() {
        let mut cluster = eds_cluster("c1");
        cluster.eds_cluster_config = Some(cluster_proto::EdsClusterConfig {
            eds_config: Some(self_source()),
            service_name: "svc".into(),
        });
        let value = parsed(&cluster);
        assert_eq!(
            value.kind,
            ClusterKind::Eds {
                eds_service_name: Some("svc".into())
            }
        );
        assert_eq!(value.eds_resource_name("c1"), Some("svc"));
    }

    #[rstest]
    #[case("c", None, "eds_cluster_config", "field not present")]
    #[case(
        "c",
        Some(cluster_proto::EdsClusterConfig { eds_config: None, service_name: String::new() }),
        "eds_cluster_config.eds_config",
        "field not present"
    )]
    #[case(
        "c",
        Some(cluster_proto::EdsClusterConfig { eds_config: Some(Default::default()), service_name: String::new() }),
        "eds_cluster_config.eds_config",
        "ConfigSource is not ads or self"
    )]
    #[case(
        "xdstp://authority/envoy.config.cluster.v3.Cluster/c",
        Some(cluster_proto::EdsClusterConfig { eds_config: Some(ads()), service_name: String::new() }),
        "eds_cluster_config.service_name",
        "must be set if Cluster resource has an xdstp name"
    )]
    fn invalid_eds(
        #[case] name: &str,
        #[case] config: Option<cluster_proto::EdsClusterConfig>,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        let cluster = Cluster {
            eds_cluster_config: config,
            ..eds_cluster(name)
        };
        let errors = errors_of(&cluster);
        assert_eq!(
            errors.errors,
            vec![(field.to_string(), message.to_string())]
        );
    }

    #[rstest]
    #[case("dns.example.com", "dns.example.com:8080")]
    #[case("::1", "[::1]:8080")]
    fn logical_dns_cluster(#[case] host: &str, #[case] hostname: &str) {
        let cluster = logical_dns(one_endpoint(lb_endpoint(host, 8080)));
        let value = parsed(&cluster);
        assert_eq!(
            value.kind,
            ClusterKind::LogicalDns {
                hostname: hostname.into()
            }
        );
        assert_eq!(
            value.summary(),
            format!("LOGICAL_DNS {hostname} lb=ROUND_ROBIN")
        );
        assert_eq!(value.eds_resource_name("dns"), None);
    }

    fn endpoint_with(address: Option<Address>) -> LbEndpoint {
        LbEndpoint {
            host_identifier: Some(HostIdentifier::Endpoint(Endpoint {
                address,
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    fn socket(f: impl FnOnce(&mut SocketAddress)) -> Option<Address> {
        let mut address = socket_address("h", 1);
        if let Some(address::Address::SocketAddress(s)) = address.address.as_mut() {
            f(s);
        }
        Some(address)
    }

    const DNS_ADDRESS: &str = "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address";

    #[rstest]
    #[case(None, "load_assignment", "field not present for LOGICAL_DNS cluster")]
    #[case(
        Some(cla("", vec![])),
        "load_assignment.endpoints",
        "must contain exactly one locality for LOGICAL_DNS cluster, found 0"
    )]
    #[case(
        Some(cla("", vec![locality("a", Some(1), 0, vec![]), locality("b", Some(1), 0, vec![])])),
        "load_assignment.endpoints",
        "must contain exactly one locality for LOGICAL_DNS cluster, found 2"
    )]
    #[case(
        Some(cla("", vec![locality("a", Some(1), 0, vec![lb_endpoint("h", 1), lb_endpoint("h", 2)])])),
        "load_assignment.endpoints[0].lb_endpoints",
        "must contain exactly one endpoint for LOGICAL_DNS cluster, found 2"
    )]
    #[case(
        one_endpoint(LbEndpoint { host_identifier: Some(HostIdentifier::EndpointName("n".into())), ..Default::default() }),
        "load_assignment.endpoints[0].lb_endpoints[0].endpoint",
        "field not present"
    )]
    #[case(one_endpoint(endpoint_with(None)), DNS_ADDRESS, "field not present")]
    #[case(
        one_endpoint(endpoint_with(Some(Address { address: Some(address::Address::Pipe(Pipe::default())) }))),
        &format!("{DNS_ADDRESS}.socket_address"),
        "field not present"
    )]
    #[case(
        one_endpoint(endpoint_with(socket(|s| s.resolver_name = "custom".into()))),
        &format!("{DNS_ADDRESS}.socket_address.resolver_name"),
        "must NOT have a custom resolver name"
    )]
    #[case(
        one_endpoint(endpoint_with(socket(|s| s.address = String::new()))),
        &format!("{DNS_ADDRESS}.socket_address.address"),
        "field not present"
    )]
    #[case(
        one_endpoint(endpoint_with(socket(|s| s.port_specifier = Some(PortSpecifier::NamedPort("http".into()))))),
        &format!("{DNS_ADDRESS}.socket_address.port_value"),
        "field not present"
    )]
    fn invalid_logical_dns(
        #[case] load_assignment: Option<ClusterLoadAssignment>,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        let errors = errors_of(&logical_dns(load_assignment));
        assert_eq!(errors.errors.len(), 1, "{errors}");
        assert_error(&errors, field, message);
    }

    #[test]
    fn aggregate_cluster() {
        let config = ClusterConfig {
            clusters: vec!["a".into(), "b".into()],
        };
        let value = parsed(&aggregate(Some(any(&config))));
        assert_eq!(
            value.kind,
            ClusterKind::Aggregate {
                prioritized_cluster_names: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(value.summary(), "AGGREGATE [a,b] lb=ROUND_ROBIN");
    }

    const AGGREGATE_VALUE: &str =
        "cluster_type.typed_config.value[envoy.extensions.clusters.aggregate.v3.ClusterConfig]";

    #[rstest]
    #[case(None, "cluster_type.typed_config", "field not present")]
    #[case(
        Some(protobuf::Any { type_url: "type.googleapis.com/envoy.extensions.clusters.redis.v3.RedisClusterConfig".into(), value: vec![] }),
        "cluster_type.typed_config.type_url",
        "unknown cluster_type extension: envoy.extensions.clusters.redis.v3.RedisClusterConfig"
    )]
    #[case(
        Some(protobuf::Any { type_url: format!("type.googleapis.com/{AGGREGATE_CLUSTER_TYPE}"), value: vec![0xff] }),
        AGGREGATE_VALUE,
        "can't parse aggregate cluster config"
    )]
    #[case(Some(any(&ClusterConfig::default())), &format!("{AGGREGATE_VALUE}.clusters"), "must be non-empty")]
    fn invalid_aggregate(
        #[case] typed_config: Option<protobuf::Any>,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        let errors = errors_of(&aggregate(typed_config));
        assert_eq!(
            errors.errors,
            vec![(field.to_string(), message.to_string())]
        );
    }

    #[rstest]
    #[case(None)]
    #[case(typed(DiscoveryType::Static))]
    #[case(typed(DiscoveryType::StrictDns))]
    #[case(typed(DiscoveryType::OriginalDst))]
    #[case(Some(ClusterDiscoveryType::Type(99)))]
    fn unsupported_discovery_types(#[case] discovery: Option<ClusterDiscoveryType>) {
        let cluster = Cluster {
            cluster_discovery_type: discovery,
            ..eds_cluster("c")
        };
        assert_eq!(
            errors_of(&cluster).errors,
            vec![("type".into(), "unknown discovery type".into())]
        );
    }

    #[test]
    fn ring_hash_defaults_and_config() {
        let value = parsed(&with_lb(cluster_proto::LbPolicy::RingHash, None));
        assert_eq!(
            value.lb_policy,
            LbPolicy::RingHash {
                min_ring_size: 1024,
                max_ring_size: 8_388_608
            }
        );
        assert_eq!(value.summary(), "EDS lb=RING_HASH");
        let config = cluster_proto::RingHashLbConfig {
            minimum_ring_size: Some(UInt64Value { value: 10 }),
            maximum_ring_size: Some(UInt64Value { value: 100 }),
            hash_function: 0,
        };
        let value = parsed(&with_lb(
            cluster_proto::LbPolicy::RingHash,
            Some(LbConfig::RingHashLbConfig(config)),
        ));
        assert_eq!(
            value.lb_policy,
            LbPolicy::RingHash {
                min_ring_size: 10,
                max_ring_size: 100
            }
        );
    }

    #[rstest]
    #[case(
        None,
        Some(0),
        0,
        ".maximum_ring_size",
        "must be in the range of 1 to 8388608"
    )]
    #[case(
        None,
        Some(8_388_609),
        0,
        ".maximum_ring_size",
        "must be in the range of 1 to 8388608"
    )]
    #[case(
        Some(0),
        None,
        0,
        ".minimum_ring_size",
        "must be in the range of 1 to 8388608"
    )]
    #[case(
        Some(200),
        Some(100),
        0,
        ".minimum_ring_size",
        "cannot be greater than maximum_ring_size"
    )]
    #[case(None, None, 1, ".hash_function", "invalid hash function")]
    fn invalid_ring_hash(
        #[case] min: Option<u64>,
        #[case] max: Option<u64>,
        #[case] hash_function: i32,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        let config = cluster_proto::RingHashLbConfig {
            minimum_ring_size: min.map(|value| UInt64Value { value }),
            maximum_ring_size: max.map(|value| UInt64Value { value }),
            hash_function,
        };
        let errors = errors_of(&with_lb(
            cluster_proto::LbPolicy::RingHash,
            Some(LbConfig::RingHashLbConfig(config)),
        ));
        assert_eq!(
            errors.errors,
            vec![(format!("ring_hash_lb_config{field}"), message.to_string())]
        );
    }

    fn least_request_config(choice_count: Option<u32>) -> Option<LbConfig> {
        Some(LbConfig::LeastRequestLbConfig(
            cluster_proto::LeastRequestLbConfig {
                choice_count: choice_count.map(|value| UInt32Value { value }),
                ..Default::default()
            },
        ))
    }

    #[rstest]
    #[case(None, 2)]
    #[case(least_request_config(None), 2)]
    #[case(least_request_config(Some(5)), 5)]
    fn least_request(#[case] lb_config: Option<LbConfig>, #[case] choice_count: u32) {
        let value = parsed(&with_lb(cluster_proto::LbPolicy::LeastRequest, lb_config));
        assert_eq!(value.lb_policy, LbPolicy::LeastRequest { choice_count });
        assert_eq!(value.summary(), "EDS lb=LEAST_REQUEST");
    }

    #[test]
    fn least_request_needs_two_choices() {
        let errors = errors_of(&with_lb(
            cluster_proto::LbPolicy::LeastRequest,
            least_request_config(Some(1)),
        ));
        assert_eq!(
            errors.errors,
            vec![(
                "least_request_lb_config.choice_count".into(),
                "must be greater than or equal to 2".into()
            )]
        );
    }

    #[rstest]
    #[case(cluster_proto::LbPolicy::Random as i32)]
    #[case(cluster_proto::LbPolicy::Maglev as i32)]
    #[case(cluster_proto::LbPolicy::ClusterProvided as i32)]
    #[case(cluster_proto::LbPolicy::LoadBalancingPolicyConfig as i32)]
    #[case(42)]
    fn unsupported_lb_policies(#[case] lb_policy: i32) {
        let cluster = Cluster {
            lb_policy,
            ..eds_cluster("c")
        };
        assert_eq!(
            errors_of(&cluster).errors,
            vec![("lb_policy".into(), "LB policy is not supported".into())]
        );
    }

    fn lb_policy_of(config: protobuf::Any) -> LoadBalancingPolicy {
        LoadBalancingPolicy {
            policies: vec![load_balancing_policy::Policy {
                typed_extension_config: Some(TypedExtensionConfig {
                    name: "p".into(),
                    typed_config: Some(config),
                }),
            }],
        }
    }

    #[test]
    fn load_balancing_policy_takes_precedence() {
        let cluster = Cluster {
            load_balancing_policy: Some(lb_policy_of(any(&RingHash::default()))),
            ..with_lb(cluster_proto::LbPolicy::Maglev, None)
        };
        assert_eq!(
            parsed(&cluster).lb_policy,
            LbPolicy::RingHash {
                min_ring_size: 1024,
                max_ring_size: 8_388_608
            }
        );
    }

    #[test]
    fn load_balancing_policy_without_supported_entry() {
        let unknown = protobuf::Any {
            type_url: "type.googleapis.com/my.Policy".into(),
            value: vec![],
        };
        let cluster = Cluster {
            load_balancing_policy: Some(lb_policy_of(unknown)),
            ..eds_cluster("c")
        };
        assert_eq!(
            errors_of(&cluster).errors,
            vec![(
                "load_balancing_policy".into(),
                "no supported load balancing policy config found".into()
            )]
        );
    }

    fn threshold(priority: RoutingPriority, max_requests: Option<u32>) -> Thresholds {
        Thresholds {
            priority: priority as i32,
            max_requests: max_requests.map(|value| UInt32Value { value }),
            ..Default::default()
        }
    }

    #[rstest]
    #[case(vec![], 1024)]
    #[case(vec![threshold(RoutingPriority::Default, Some(7))], 7)]
    #[case(vec![threshold(RoutingPriority::High, Some(3)), threshold(RoutingPriority::Default, Some(9))], 9)]
    #[case(vec![threshold(RoutingPriority::Default, None), threshold(RoutingPriority::Default, Some(9))], 1024)]
    #[case(vec![threshold(RoutingPriority::High, Some(3))], 1024)]
    fn circuit_breakers(#[case] thresholds: Vec<Thresholds>, #[case] expected: u32) {
        let cluster = Cluster {
            circuit_breakers: Some(CircuitBreakers {
                thresholds,
                ..Default::default()
            }),
            ..eds_cluster("c")
        };
        assert_eq!(parsed(&cluster).max_concurrent_requests, expected);
    }

    #[test]
    fn lrs_server() {
        let cluster = Cluster {
            lrs_server: Some(self_source()),
            ..eds_cluster("c")
        };
        assert!(parsed(&cluster).lrs_load_reporting);
        let cluster = Cluster {
            lrs_server: Some(ads()),
            ..eds_cluster("c")
        };
        assert_eq!(
            errors_of(&cluster).errors,
            vec![("lrs_server".into(), "ConfigSource is not self".into())]
        );
    }

    fn tls(context: CommonTlsContext) -> Option<TransportSocket> {
        let tls = UpstreamTlsContext {
            common_tls_context: Some(context),
            ..Default::default()
        };
        Some(TransportSocket {
            name: "tls".into(),
            config_type: Some(TransportSocketConfig::TypedConfig(any(&tls))),
        })
    }

    fn validation_context(context: CertificateValidationContext) -> CommonTlsContext {
        CommonTlsContext {
            validation_context_type: Some(ValidationContextType::ValidationContext(context)),
            ..Default::default()
        }
    }

    #[rstest]
    #[case(validation_context(CertificateValidationContext {
        ca_certificate_provider_instance: Some(CertificateProviderPluginInstance {
            instance_name: "roots".into(),
            certificate_name: String::new(),
        }),
        ..Default::default()
    }))]
    #[case(validation_context(CertificateValidationContext {
        system_root_certs: Some(SystemRootCerts {}),
        ..Default::default()
    }))]
    fn tls_with_ca_certs(#[case] tls_context: CommonTlsContext) {
        let cluster = Cluster {
            transport_socket: tls(tls_context),
            ..eds_cluster("c")
        };
        let context = DecodeContext {
            certificate_providers: ["roots".to_string()].into(),
            ..Default::default()
        };
        valid(decode(&cluster.encode_to_vec(), &context));
    }

    #[test]
    fn tls_instances_must_be_in_the_bootstrap() {
        let tls_context = validation_context(CertificateValidationContext {
            ca_certificate_provider_instance: Some(CertificateProviderPluginInstance {
                instance_name: "roots".into(),
                certificate_name: String::new(),
            }),
            ..Default::default()
        });
        let errors = errors_of(&Cluster {
            transport_socket: tls(tls_context),
            ..eds_cluster("c")
        });
        assert_eq!(
            errors.errors,
            vec![(
                format!(
                    "{TLS_VALUE}.common_tls_context.validation_context.ca_certificate_provider_instance.instance_name"
                ),
                "unrecognized certificate provider instance name: roots".into()
            )]
        );
    }

    const TLS_VALUE: &str = "transport_socket.typed_config.value[envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext]";

    #[rstest]
    #[case(tls(CommonTlsContext::default()), &format!("{TLS_VALUE}.common_tls_context"), "no CA certs configured")]
    #[case(
        tls(validation_context(CertificateValidationContext::default())),
        &format!("{TLS_VALUE}.common_tls_context"),
        "no CA certs configured"
    )]
    #[case(
        Some(TransportSocket { name: "raw".into(), config_type: None }),
        "transport_socket.typed_config",
        "field not present"
    )]
    #[case(
        Some(TransportSocket {
            name: "raw".into(),
            config_type: Some(TransportSocketConfig::TypedConfig(protobuf::Any {
                type_url: "type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer".into(),
                value: vec![],
            })),
        }),
        "transport_socket.typed_config.value[envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer].type_url",
        "unsupported transport socket type"
    )]
    #[case(
        Some(TransportSocket {
            name: "tls".into(),
            config_type: Some(TransportSocketConfig::TypedConfig(protobuf::Any {
                type_url: format!("type.googleapis.com/{UPSTREAM_TLS_CONTEXT_TYPE}"),
                value: vec![0xff],
            })),
        }),
        TLS_VALUE,
        "can't decode UpstreamTlsContext"
    )]
    fn invalid_transport_socket(
        #[case] transport_socket: Option<TransportSocket>,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        let errors = errors_of(&Cluster {
            transport_socket,
            ..eds_cluster("c")
        });
        assert_eq!(
            errors.errors,
            vec![(field.to_string(), message.to_string())]
        );
    }

    fn upstream(config: protobuf::Any) -> Option<TypedExtensionConfig> {
        Some(TypedExtensionConfig {
            name: "u".into(),
            typed_config: Some(config),
        })
    }

    fn protocol_options(idle_seconds: i64) -> protobuf::Any {
        any(&HttpProtocolOptions {
            common_http_protocol_options: Some(
                envoy_types::pb::envoy::config::core::v3::HttpProtocolOptions {
                    idle_timeout: Some(protobuf::Duration {
                        seconds: idle_seconds,
                        nanos: 0,
                    }),
                    ..Default::default()
                },
            ),
            ..Default::default()
        })
    }

    #[test]
    fn upstream_config() {
        parsed(&Cluster {
            upstream_config: upstream(protocol_options(30)),
            ..eds_cluster("c")
        });
        let errors = errors_of(&Cluster {
            upstream_config: upstream(protocol_options(-1)),
            ..eds_cluster("c")
        });
        assert_error(
            &errors,
            "upstream_config.typed_config.value[envoy.extensions.upstreams.http.v3.HttpProtocolOptions]\
             .common_http_protocol_options.idle_timeout.seconds",
            "value must be in the range",
        );
        let errors = errors_of(&Cluster {
            upstream_config: upstream(any(&ClusterConfig::default())),
            ..eds_cluster("c")
        });
        assert_error(
            &errors,
            "upstream_config.typed_config.value[envoy.extensions.clusters.aggregate.v3.ClusterConfig].type_url",
            "unsupported upstream config type",
        );
    }

    #[test]
    fn outlier_detection() {
        let pct = |value| Some(UInt32Value { value });
        let ok = OutlierDetection {
            interval: Some(protobuf::Duration {
                seconds: 10,
                nanos: 0,
            }),
            max_ejection_percent: pct(100),
            enforcing_failure_percentage: pct(50),
            failure_percentage_threshold: pct(85),
            ..Default::default()
        };
        parsed(&Cluster {
            outlier_detection: Some(ok),
            ..eds_cluster("c")
        });
        let bad = OutlierDetection {
            base_ejection_time: Some(protobuf::Duration {
                seconds: -1,
                nanos: 0,
            }),
            max_ejection_percent: pct(101),
            enforcing_success_rate: pct(101),
            enforcing_failure_percentage: pct(101),
            failure_percentage_threshold: pct(101),
            ..Default::default()
        };
        let errors = errors_of(&Cluster {
            outlier_detection: Some(bad),
            ..eds_cluster("c")
        });
        let fields: Vec<&str> = errors.errors.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "outlier_detection.base_ejection_time.seconds",
                "outlier_detection.max_ejection_percent",
                "outlier_detection.enforcing_success_rate",
                "outlier_detection.enforcing_failure_percentage",
                "outlier_detection.failure_percentage_threshold",
            ]
        );
    }

    #[test]
    fn undecodable_bytes() {
        let (name, result) = decode(&[0x0a, 0x05, b'a'], &DecodeContext::default());
        assert_eq!(name, None);
        assert!(matches!(
            result,
            Err(DecodeError::Undecodable {
                message_type: "Cluster",
                ..
            })
        ));
    }

    #[test]
    fn every_error_is_collected() {
        let cluster = Cluster {
            name: "c".into(),
            lb_policy: cluster_proto::LbPolicy::Random as i32,
            lrs_server: Some(ads()),
            ..Default::default()
        };
        let decoded = decode_cluster(&cluster);
        assert_eq!(decoded.0.as_deref(), Some("c"));
        let errors = invalid(decoded);
        assert_eq!(
            errors.to_string(),
            "errors validating Cluster resource: [field:type error:unknown discovery type; \
             field:lb_policy error:LB policy is not supported; field:lrs_server error:ConfigSource is not self]"
        );
    }
}
