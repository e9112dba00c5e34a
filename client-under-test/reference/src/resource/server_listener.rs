//! Listener resources as an xDS-enabled gRPC server reads them (gRFC A36):
//! an `address` instead of an `api_listener`, and filter chains, each with
//! one HttpConnectionManager, chosen per connection by their
//! `filter_chain_match`.
//!
//! Validation follows C-core's `LdsResourceParseServer`: the filter chains
//! are arranged in the lookup structure a server uses (destination prefix,
//! source type, source prefix, source port), chains gRPC can never select
//! are dropped (a destination port, server names, a transport protocol
//! other than `raw_buffer`, application protocols), and two chains that
//! would match the same connections make the resource invalid.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use envoy_types::pb::envoy::config::core::v3::socket_address::Protocol;
use envoy_types::pb::envoy::config::core::v3::transport_socket;
use envoy_types::pb::envoy::config::core::v3::{Address, CidrRange as CidrRangeProto, address};
use envoy_types::pb::envoy::config::listener::v3::{
    FilterChain as FilterChainProto, FilterChainMatch as FilterChainMatchProto, Listener, filter,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CertificateValidationContext, DownstreamTlsContext, common_tls_context::ValidationContextType,
    downstream_tls_context::OcspStaplePolicy,
};
use prost::Message;

use super::common::{ExtensionValue, extract_extension};
use super::listener::{HttpConnectionManager, Side, parse_hcm};
use super::validation::FieldScope;

const DOWNSTREAM_TLS_CONTEXT_TYPE: &str =
    "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";

/// A validated server-side Listener.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerListenerResource {
    /// `host:port` of `address.socket_address` (IPv6 hosts in brackets).
    pub address: String,
    pub filter_chain_map: FilterChainMap,
    pub default_filter_chain: Option<Arc<FilterChainData>>,
}

impl ServerListenerResource {
    /// e.g. `server address=0.0.0.0:8080 filter_chains=2 default=yes`.
    pub fn summary(&self) -> String {
        let chains: usize = self
            .filter_chain_map
            .destination_ips
            .iter()
            .flat_map(|d| d.source_types.iter().flatten())
            .map(|s| s.ports.len())
            .sum();
        format!(
            "server address={} filter_chains={chains} default={}",
            self.address,
            if self.default_filter_chain.is_some() {
                "yes"
            } else {
                "no"
            }
        )
    }
}

/// What a selected filter chain gives a connection.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterChainData {
    pub http_connection_manager: HttpConnectionManager,
    pub downstream_tls: Option<DownstreamTls>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DownstreamTls {
    /// The certificate provider instance for the server's own certificate.
    pub identity_provider_instance: String,
    /// The instance for the CA certificates that validate clients, if any.
    pub root_provider_instance: Option<String>,
    pub require_client_certificate: bool,
}

/// The lookup structure: destination prefix, then the connection's source
/// type, then source prefix, then source port.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FilterChainMap {
    pub destination_ips: Vec<DestinationIp>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct DestinationIp {
    /// None: any destination.
    pub prefix_range: Option<CidrRange>,
    /// By `ConnectionSourceType`: ANY, SAME_IP_OR_LOOPBACK, EXTERNAL.
    pub source_types: [Vec<SourceIp>; 3],
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceIp {
    /// None: any source.
    pub prefix_range: Option<CidrRange>,
    /// Source port (0: any) to the chain.
    pub ports: BTreeMap<u32, Arc<FilterChainData>>,
}

/// A prefix, with the address masked to its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CidrRange {
    pub address: IpAddr,
    pub prefix_len: u32,
}

impl fmt::Display for CidrRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

/// A filter chain's match, as parsed.
#[derive(Clone, Debug, Default, PartialEq)]
struct FilterChainMatch {
    destination_port: u32,
    prefix_ranges: Vec<CidrRange>,
    source_type: usize,
    source_prefix_ranges: Vec<CidrRange>,
    source_ports: Vec<u32>,
    server_names: Vec<String>,
    transport_protocol: String,
    application_protocols: Vec<String>,
}

impl fmt::Display for FilterChainMatch {
    /// Only the fields that are set, as C-core names them in its error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ranges = |r: &[CidrRange]| {
            r.iter()
                .map(|c| {
                    format!(
                        "{{address_prefix={}, prefix_len={}}}",
                        c.address, c.prefix_len
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if self.destination_port != 0 {
            parts.push(format!("destination_port={}", self.destination_port));
        }
        if !self.prefix_ranges.is_empty() {
            parts.push(format!("prefix_ranges={{{}}}", ranges(&self.prefix_ranges)));
        }
        match self.source_type {
            1 => parts.push("source_type=SAME_IP_OR_LOOPBACK".to_string()),
            2 => parts.push("source_type=EXTERNAL".to_string()),
            _ => {}
        }
        if !self.source_prefix_ranges.is_empty() {
            parts.push(format!(
                "source_prefix_ranges={{{}}}",
                ranges(&self.source_prefix_ranges)
            ));
        }
        if !self.source_ports.is_empty() {
            let ports: Vec<String> = self.source_ports.iter().map(u32::to_string).collect();
            parts.push(format!("source_ports={{{}}}", ports.join(", ")));
        }
        if !self.server_names.is_empty() {
            parts.push(format!("server_names={{{}}}", self.server_names.join(", ")));
        }
        if !self.transport_protocol.is_empty() {
            parts.push(format!("transport_protocol={}", self.transport_protocol));
        }
        if !self.application_protocols.is_empty() {
            parts.push(format!(
                "application_protocols={{{}}}",
                self.application_protocols.join(", ")
            ));
        }
        write!(f, "FilterChainMatch{{{}}}", parts.join(", "))
    }
}

struct FilterChain {
    filter_chain_match: FilterChainMatch,
    data: Arc<FilterChainData>,
}

/// C-core's `LdsResourceParseServer`. `scope` is the Listener's root.
pub(super) fn parse_server_listener(
    listener: &Listener,
    scope: &mut FieldScope<'_>,
) -> Option<ServerListenerResource> {
    let errors_before = scope.error_count();
    let address = parse_address(listener.address.as_ref(), &mut scope.at("address"));
    if listener.use_original_dst.is_some_and(|v| v.value) {
        scope.at("use_original_dst").error("field not supported");
    }
    // gRFC A36: "The xDS client must NACK the Listener resource if
    // Listener.listener_filters is non-empty" (C-core does not check).
    if !listener.listener_filters.is_empty() {
        scope.at("listener_filters").error("field not supported");
    }
    let mut chains = Vec::new();
    {
        let mut scope = scope.at("filter_chains");
        for (i, chain) in listener.filter_chains.iter().enumerate() {
            if let Some(chain) = parse_filter_chain(chain, &mut scope.at(&format!("[{i}]"))) {
                chains.push(chain);
            }
        }
    }
    let filter_chain_map = build_filter_chain_map(&chains, &mut scope.at("filter_chains"));
    let default_filter_chain = {
        let mut scope = scope.at("default_filter_chain");
        match &listener.default_filter_chain {
            Some(chain) => parse_filter_chain(chain, &mut scope).map(|c| c.data),
            None => {
                if listener.filter_chains.is_empty() {
                    scope.error("must be set if filter_chains is unset");
                }
                None
            }
        }
    };
    if scope.error_count() != errors_before {
        return None;
    }
    Some(ServerListenerResource {
        address: address?,
        filter_chain_map,
        default_filter_chain,
    })
}

fn parse_address(address: Option<&Address>, scope: &mut FieldScope<'_>) -> Option<String> {
    let Some(address) = address else {
        scope.error("field not present");
        return None;
    };
    let mut scope = scope.at(".socket_address");
    let Some(address::Address::SocketAddress(socket)) = &address.address else {
        scope.error("field not present");
        return None;
    };
    if socket.protocol != Protocol::Tcp as i32 {
        scope.at(".protocol").error("value must be TCP");
    }
    let port = match socket.port_specifier {
        Some(
            envoy_types::pb::envoy::config::core::v3::socket_address::PortSpecifier::PortValue(p),
        ) => p,
        _ => 0,
    };
    if port > 65535 {
        scope.at(".port_value").error("invalid port");
        return None;
    }
    Some(join_host_port(&socket.address, port))
}

fn join_host_port(host: &str, port: u32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn parse_filter_chain(chain: &FilterChainProto, scope: &mut FieldScope<'_>) -> Option<FilterChain> {
    let errors_before = scope.error_count();
    let filter_chain_match = chain
        .filter_chain_match
        .as_ref()
        .map(|m| parse_filter_chain_match(m, &mut scope.at(".filter_chain_match")))
        .unwrap_or_default();
    let mut http_connection_manager = None;
    {
        let mut scope = scope.at(".filters");
        if chain.filters.len() != 1 {
            scope.error(
                "must have exactly one filter (HttpConnectionManager -- no other filter is supported at the moment)",
            );
        }
        for (i, f) in chain.filters.iter().enumerate() {
            let mut scope = scope.at(&format!("[{i}].typed_config"));
            let any = match &f.config_type {
                Some(filter::ConfigType::TypedConfig(any)) => Some(any),
                _ => None,
            };
            let Some(extension) = extract_extension(any, &mut scope) else {
                continue;
            };
            http_connection_manager =
                parse_hcm(&extension, &mut scope.at(&extension.field), Side::Server);
        }
    }
    let downstream_tls = chain.transport_socket.as_ref().and_then(|socket| {
        let any = socket
            .config_type
            .as_ref()
            .map(|transport_socket::ConfigType::TypedConfig(any)| any);
        parse_downstream_tls(any, &mut scope.at(".transport_socket"))
    });
    if scope.error_count() != errors_before {
        return None;
    }
    Some(FilterChain {
        filter_chain_match,
        data: Arc::new(FilterChainData {
            http_connection_manager: http_connection_manager?,
            downstream_tls,
        }),
    })
}

fn parse_filter_chain_match(
    m: &FilterChainMatchProto,
    scope: &mut FieldScope<'_>,
) -> FilterChainMatch {
    let ranges = |list: &[CidrRangeProto], field: &str, scope: &mut FieldScope<'_>| {
        list.iter()
            .enumerate()
            .filter_map(|(i, r)| parse_cidr_range(r, &mut scope.at(&format!(".{field}[{i}]"))))
            .collect::<Vec<_>>()
    };
    FilterChainMatch {
        destination_port: m.destination_port.map_or(0, |p| p.value),
        prefix_ranges: ranges(&m.prefix_ranges, "prefix_ranges", scope),
        // Unknown enum values read as ANY, as a proto3 enum does.
        source_type: usize::try_from(m.source_type)
            .ok()
            .filter(|t| *t < 3)
            .unwrap_or(0),
        source_prefix_ranges: ranges(&m.source_prefix_ranges, "source_prefix_ranges", scope),
        source_ports: m.source_ports.clone(),
        server_names: m.server_names.clone(),
        transport_protocol: m.transport_protocol.clone(),
        application_protocols: m.application_protocols.clone(),
    }
}

fn parse_cidr_range(range: &CidrRangeProto, scope: &mut FieldScope<'_>) -> Option<CidrRange> {
    let Ok(address) = range.address_prefix.parse::<IpAddr>() else {
        scope
            .at(".address_prefix")
            .error(format!("Failed to parse address:{}", range.address_prefix));
        return None;
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    let prefix_len = range.prefix_len.map_or(0, |p| p.value).min(max);
    Some(CidrRange {
        address: mask(address, prefix_len),
        prefix_len,
    })
}

/// The network address: the host bits cleared.
fn mask(address: IpAddr, prefix_len: u32) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = u32::MAX.checked_shl(32 - prefix_len).unwrap_or(0);
            IpAddr::V4((bits & kept).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = u128::MAX.checked_shl(128 - prefix_len).unwrap_or(0);
            IpAddr::V6((bits & kept).into())
        }
    }
}

fn parse_downstream_tls(
    any: Option<&envoy_types::pb::google::protobuf::Any>,
    scope: &mut FieldScope<'_>,
) -> Option<DownstreamTls> {
    let mut scope = scope.at(".typed_config");
    let extension = extract_extension(any, &mut scope)?;
    if extension.type_name != DOWNSTREAM_TLS_CONTEXT_TYPE {
        scope
            .at(".type_url")
            .error("unsupported transport socket type");
        return None;
    }
    let context = match &extension.value {
        ExtensionValue::Proto(bytes) => DownstreamTlsContext::decode(bytes.as_slice()).ok(),
        ExtensionValue::Json => None,
    };
    // The context's own fields are reported under the extension's value.
    let mut scope = scope.at(&extension.field);
    let Some(context) = context else {
        scope.error("can't decode DownstreamTlsContext");
        return None;
    };
    let mut tls = DownstreamTls::default();
    if let Some(common) = &context.common_tls_context {
        let mut scope = scope.at(".common_tls_context");
        if let Some(identity) = &common.tls_certificate_provider_instance {
            tls.identity_provider_instance = identity.instance_name.clone();
        }
        let validation = validation_context(common.validation_context_type.as_ref());
        if let Some(validation) = validation {
            if validation.system_root_certs.is_some() {
                scope.error("system_root_certs not supported");
            }
            // Deprecated in Envoy, still read (and refused here) by C-core.
            #[allow(deprecated)]
            let san_matchers = &validation.match_subject_alt_names;
            if !san_matchers.is_empty() {
                scope.error("match_subject_alt_names not supported on servers");
            }
            tls.root_provider_instance = validation
                .ca_certificate_provider_instance
                .as_ref()
                .map(|p| p.instance_name.clone())
                .filter(|name| !name.is_empty());
        }
    }
    if tls.identity_provider_instance.is_empty() {
        scope.error("TLS configuration provided but no tls_certificate_provider_instance found");
    }
    if let Some(require) = context.require_client_certificate {
        tls.require_client_certificate = require.value;
        if require.value && tls.root_provider_instance.is_none() {
            scope.at(".require_client_certificate").error(
                "client certificate required but no certificate provider instance specified for validation",
            );
        }
    }
    if context.require_sni.is_some_and(|v| v.value) {
        scope.at(".require_sni").error("field unsupported");
    }
    if context.ocsp_staple_policy != OcspStaplePolicy::LenientStapling as i32 {
        scope
            .at(".ocsp_staple_policy")
            .error("value must be LENIENT_STAPLING");
    }
    Some(tls)
}

fn validation_context(
    context: Option<&ValidationContextType>,
) -> Option<&CertificateValidationContext> {
    match context? {
        ValidationContextType::ValidationContext(c) => Some(c),
        ValidationContextType::CombinedValidationContext(c) => {
            c.default_validation_context.as_ref()
        }
        _ => None,
    }
}

/// One destination prefix while the map is built.
#[derive(Default)]
struct DestinationEntry {
    prefix_range: Option<CidrRange>,
    raw_buffer_seen: bool,
    source_types: [BTreeMap<String, SourceIp>; 3],
}

/// Arranges the chains as a server looks them up; a chain that would
/// match the same connections as an earlier one is an error.
fn build_filter_chain_map(chains: &[FilterChain], scope: &mut FieldScope<'_>) -> FilterChainMap {
    let mut destinations: BTreeMap<String, DestinationEntry> = BTreeMap::new();
    for chain in chains {
        let m = &chain.filter_chain_match;
        // gRPC serves one port per Listener and has no SNI or ALPN at this
        // level: such chains can never be chosen.
        if m.destination_port != 0 || !m.server_names.is_empty() {
            continue;
        }
        let keys: Vec<(String, Option<CidrRange>)> = if m.prefix_ranges.is_empty() {
            vec![(String::new(), None)]
        } else {
            m.prefix_ranges
                .iter()
                .map(|r| (r.to_string(), Some(*r)))
                .collect()
        };
        for (key, range) in keys {
            let destination = destinations.entry(key).or_insert_with(|| DestinationEntry {
                prefix_range: range,
                ..Default::default()
            });
            add_for_transport_protocol(chain, destination, scope);
        }
    }
    FilterChainMap {
        destination_ips: destinations
            .into_values()
            .map(|d| DestinationIp {
                prefix_range: d.prefix_range,
                source_types: d.source_types.map(|m| m.into_values().collect()),
            })
            .collect(),
    }
}

fn add_for_transport_protocol(
    chain: &FilterChain,
    destination: &mut DestinationEntry,
    scope: &mut FieldScope<'_>,
) {
    let m = &chain.filter_chain_match;
    match m.transport_protocol.as_str() {
        "" if destination.raw_buffer_seen => return,
        "" => {}
        "raw_buffer" => {
            // Chains naming raw_buffer win over those naming nothing.
            if !destination.raw_buffer_seen {
                destination.raw_buffer_seen = true;
                destination.source_types = Default::default();
            }
        }
        _ => return,
    }
    if !m.application_protocols.is_empty() {
        return;
    }
    let source_ips = &mut destination.source_types[m.source_type];
    let keys: Vec<(String, Option<CidrRange>)> = if m.source_prefix_ranges.is_empty() {
        vec![(String::new(), None)]
    } else {
        m.source_prefix_ranges
            .iter()
            .map(|r| (r.to_string(), Some(*r)))
            .collect()
    };
    for (key, range) in keys {
        let source_ip = source_ips.entry(key).or_insert_with(|| SourceIp {
            prefix_range: range,
            ports: BTreeMap::new(),
        });
        let ports = if m.source_ports.is_empty() {
            vec![0]
        } else {
            m.source_ports.clone()
        };
        for port in ports {
            match source_ip.ports.entry(port) {
                std::collections::btree_map::Entry::Occupied(_) => scope.error(format!(
                    "duplicate matching rules detected when adding filter chain: {m}"
                )),
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert(chain.data.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_support::*;
    use crate::resource::{DecodeContext, DecodeError, XdsResource, listener::decode};
    use envoy_types::pb::envoy::config::core::v3::{CidrRange as Cidr, TransportSocket};
    use envoy_types::pb::envoy::config::listener::v3::{Filter, ListenerFilter};
    use envoy_types::pb::envoy::extensions::filters::http::fault::v3::HttpFault;
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager as HcmProto;
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
        CertificateProviderPluginInstance, CommonTlsContext,
    };
    use envoy_types::pb::google::protobuf::{BoolValue, UInt32Value};
    use rstest::rstest;

    const HCM_FIELD: &str =
        "value[envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager]";

    fn hcm_filter(hcm: &HcmProto) -> Filter {
        Filter {
            name: "hcm".into(),
            config_type: Some(filter::ConfigType::TypedConfig(any(hcm))),
        }
    }

    fn chain(m: Option<FilterChainMatchProto>) -> FilterChainProto {
        FilterChainProto {
            filter_chain_match: m,
            filters: vec![hcm_filter(&hcm_rds("routes"))],
            ..Default::default()
        }
    }

    fn server_listener(chains: Vec<FilterChainProto>) -> Listener {
        Listener {
            name: "grpc/server?xds.resource.listening_address=0.0.0.0:8080".into(),
            address: Some(socket_address("0.0.0.0", 8080)),
            filter_chains: chains,
            ..Default::default()
        }
    }

    fn decoded(listener: &Listener) -> (Option<String>, Result<XdsResource, DecodeError>) {
        decode(&listener.encode_to_vec(), &DecodeContext::default())
    }

    fn value(listener: &Listener) -> ServerListenerResource {
        match valid(decoded(listener)) {
            XdsResource::ServerListener(l) => l,
            other => panic!("expected a server listener, got {other:?}"),
        }
    }

    fn cidr(prefix: &str, len: u32) -> Cidr {
        Cidr {
            address_prefix: prefix.into(),
            prefix_len: Some(UInt32Value { value: len }),
        }
    }

    #[test]
    fn a_listener_with_an_address_is_a_servers() {
        let l = value(&server_listener(vec![chain(None)]));
        assert_eq!(l.address, "0.0.0.0:8080");
        assert_eq!(
            l.summary(),
            "server address=0.0.0.0:8080 filter_chains=1 default=no"
        );
        let any = &l.filter_chain_map.destination_ips[0].source_types[0][0];
        assert_eq!(any.prefix_range, None);
        assert!(any.ports.contains_key(&0));
    }

    #[test]
    fn ipv6_addresses_are_bracketed_and_prefixes_masked() {
        let mut listener = server_listener(vec![chain(Some(FilterChainMatchProto {
            prefix_ranges: vec![cidr("10.1.2.3", 8), cidr("2001:db8::1", 300)],
            ..Default::default()
        }))]);
        listener.address = Some(socket_address("::", 443));
        let l = value(&listener);
        assert_eq!(l.address, "[::]:443");
        let ranges: Vec<String> = l
            .filter_chain_map
            .destination_ips
            .iter()
            .map(|d| d.prefix_range.unwrap().to_string())
            .collect();
        assert_eq!(ranges, ["10.0.0.0/8", "2001:db8::1/128"]);
    }

    #[rstest]
    #[case::same_match_twice(vec![chain(None), chain(None)])]
    #[case::same_source_port(vec![
        chain(Some(FilterChainMatchProto { source_ports: vec![7, 8], ..Default::default() })),
        chain(Some(FilterChainMatchProto { source_ports: vec![8], ..Default::default() })),
    ])]
    #[case::same_masked_prefix(vec![
        chain(Some(FilterChainMatchProto { prefix_ranges: vec![cidr("10.0.0.1", 8)], ..Default::default() })),
        chain(Some(FilterChainMatchProto { prefix_ranges: vec![cidr("10.9.9.9", 8)], ..Default::default() })),
    ])]
    fn duplicate_matching_rules_are_an_error(#[case] chains: Vec<FilterChainProto>) {
        let errors = invalid(decoded(&server_listener(chains)));
        assert_error(
            &errors,
            "filter_chains",
            "duplicate matching rules detected",
        );
    }

    #[test]
    fn chains_grpc_cannot_select_are_dropped_not_duplicates() {
        let never = |m: FilterChainMatchProto| chain(Some(m));
        let l = value(&server_listener(vec![
            chain(None),
            never(FilterChainMatchProto {
                destination_port: Some(UInt32Value { value: 8080 }),
                ..Default::default()
            }),
            never(FilterChainMatchProto {
                server_names: vec!["example.com".into()],
                ..Default::default()
            }),
            never(FilterChainMatchProto {
                transport_protocol: "tls".into(),
                ..Default::default()
            }),
            never(FilterChainMatchProto {
                application_protocols: vec!["h2".into()],
                ..Default::default()
            }),
        ]));
        assert_eq!(
            l.summary(),
            "server address=0.0.0.0:8080 filter_chains=1 default=no"
        );
    }

    #[test]
    fn raw_buffer_chains_replace_the_ones_naming_no_transport_protocol() {
        let raw = |port: u32| {
            chain(Some(FilterChainMatchProto {
                transport_protocol: "raw_buffer".into(),
                source_ports: vec![port],
                ..Default::default()
            }))
        };
        // Not duplicates: the first is dropped once raw_buffer is named,
        // and a later chain naming nothing is never added.
        let l = value(&server_listener(vec![chain(None), raw(1), chain(None)]));
        let ports: Vec<u32> = l.filter_chain_map.destination_ips[0].source_types[0][0]
            .ports
            .keys()
            .copied()
            .collect();
        assert_eq!(ports, [1]);
    }

    #[rstest]
    #[case::no_filter_chains(server_listener(vec![]), "default_filter_chain", "must be set if filter_chains is unset")]
    #[case::two_filters(
        server_listener(vec![FilterChainProto {
            filters: vec![hcm_filter(&hcm_rds("r")), hcm_filter(&hcm_rds("r"))],
            ..Default::default()
        }]),
        "filter_chains[0].filters",
        "must have exactly one filter"
    )]
    #[case::bad_prefix(
        server_listener(vec![chain(Some(FilterChainMatchProto {
            prefix_ranges: vec![cidr("not-an-ip", 8)],
            ..Default::default()
        }))]),
        "filter_chains[0].filter_chain_match.prefix_ranges[0].address_prefix",
        "Failed to parse address"
    )]
    #[case::original_dst(
        Listener { use_original_dst: Some(BoolValue { value: true }), ..server_listener(vec![chain(None)]) },
        "use_original_dst",
        "field not supported"
    )]
    #[case::listener_filters(
        Listener {
            listener_filters: vec![ListenerFilter {
                name: "envoy.filters.listener.tls_inspector".into(),
                ..Default::default()
            }],
            ..server_listener(vec![chain(None)])
        },
        "listener_filters",
        "field not supported"
    )]
    fn invalid_server_listeners(
        #[case] listener: Listener,
        #[case] field: &str,
        #[case] fragment: &str,
    ) {
        assert_error(&invalid(decoded(&listener)), field, fragment);
    }

    #[test]
    fn client_only_http_filters_are_rejected_on_servers() {
        let hcm = HcmProto {
            http_filters: vec![
                http_filter("fault", any(&HttpFault::default())),
                router_filter(),
            ],
            ..hcm_rds("r")
        };
        let listener = server_listener(vec![FilterChainProto {
            filters: vec![hcm_filter(&hcm)],
            ..Default::default()
        }]);
        assert_error(
            &invalid(decoded(&listener)),
            &format!(
                "filter_chains[0].filters[0].typed_config.{HCM_FIELD}.http_filters[0].typed_config.value[envoy.extensions.filters.http.fault.v3.HTTPFault]"
            ),
            "filter is not supported on servers",
        );
    }

    fn tls_chain(context: DownstreamTlsContext) -> FilterChainProto {
        FilterChainProto {
            transport_socket: Some(TransportSocket {
                name: "tls".into(),
                config_type: Some(transport_socket::ConfigType::TypedConfig(any(&context))),
            }),
            ..chain(None)
        }
    }

    fn provider(name: &str) -> Option<CertificateProviderPluginInstance> {
        Some(CertificateProviderPluginInstance {
            instance_name: name.into(),
            certificate_name: String::new(),
        })
    }

    #[test]
    fn downstream_tls_names_its_certificate_providers() {
        let context = DownstreamTlsContext {
            common_tls_context: Some(CommonTlsContext {
                tls_certificate_provider_instance: provider("identity"),
                validation_context_type: Some(ValidationContextType::ValidationContext(
                    CertificateValidationContext {
                        ca_certificate_provider_instance: provider("roots"),
                        ..Default::default()
                    },
                )),
                ..Default::default()
            }),
            require_client_certificate: Some(BoolValue { value: true }),
            ..Default::default()
        };
        let l = value(&server_listener(vec![tls_chain(context)]));
        let data = &l.filter_chain_map.destination_ips[0].source_types[0][0].ports[&0];
        assert_eq!(
            data.downstream_tls,
            Some(DownstreamTls {
                identity_provider_instance: "identity".into(),
                root_provider_instance: Some("roots".into()),
                require_client_certificate: true,
            })
        );
    }

    #[rstest]
    #[case::no_identity(
        DownstreamTlsContext::default(),
        "",
        "no tls_certificate_provider_instance found"
    )]
    #[case::client_cert_without_roots(
        DownstreamTlsContext {
            common_tls_context: Some(CommonTlsContext {
                tls_certificate_provider_instance: provider("identity"),
                ..Default::default()
            }),
            require_client_certificate: Some(BoolValue { value: true }),
            ..Default::default()
        },
        ".require_client_certificate",
        "no certificate provider instance specified for validation"
    )]
    #[case::sni(
        DownstreamTlsContext {
            common_tls_context: Some(CommonTlsContext {
                tls_certificate_provider_instance: provider("identity"),
                ..Default::default()
            }),
            require_sni: Some(BoolValue { value: true }),
            ..Default::default()
        },
        ".require_sni",
        "field unsupported"
    )]
    #[case::stapling(
        DownstreamTlsContext {
            common_tls_context: Some(CommonTlsContext {
                tls_certificate_provider_instance: provider("identity"),
                ..Default::default()
            }),
            ocsp_staple_policy: OcspStaplePolicy::MustStaple as i32,
            ..Default::default()
        },
        ".ocsp_staple_policy",
        "LENIENT_STAPLING"
    )]
    fn invalid_downstream_tls(
        #[case] context: DownstreamTlsContext,
        #[case] suffix: &str,
        #[case] fragment: &str,
    ) {
        let errors = invalid(decoded(&server_listener(vec![tls_chain(context)])));
        let field = format!(
            "filter_chains[0].transport_socket.typed_config.value[{DOWNSTREAM_TLS_CONTEXT_TYPE}]{suffix}"
        );
        assert_error(&errors, &field, fragment);
    }
}
