//! ClusterLoadAssignment (EDS) resources: priorities of weighted localities.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::SocketAddr;

use envoy_types::pb::envoy::config::core::v3::HealthStatus as HealthStatusProto;
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, LbEndpoint, LocalityLbEndpoints,
    cluster_load_assignment::policy::DropOverload, lb_endpoint::HostIdentifier,
};
use prost::Message;

use super::common::{parse_socket_address, parts_per_million};
use super::validation::FieldScope;
use super::{DecodeContext, DecodeError, ValidationErrors, ValidationRule, XdsResource};

#[derive(Clone, Debug, PartialEq)]
pub struct EndpointsResource {
    /// Index = priority; contiguous from 0.
    pub priorities: Vec<Priority>,
    pub drop_config: Vec<DropCategory>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Priority {
    pub localities: BTreeMap<LocalityName, Locality>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalityName {
    pub region: String,
    pub zone: String,
    pub sub_zone: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Locality {
    pub name: LocalityName,
    pub lb_weight: u32,
    pub endpoints: Vec<Endpoint>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `ip:port` (IPv6 as `[ip]:port`); the first is the primary address.
    pub addresses: Vec<String>,
    pub health_status: HealthStatus,
    pub lb_weight: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthStatus {
    Unknown,
    Healthy,
    Draining,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropCategory {
    pub category: String,
    pub parts_per_million: u32,
}

impl LocalityName {
    /// The form C-core uses in messages: `{region="r", zone="z", sub_zone="s"}`.
    fn human_readable(&self) -> String {
        format!(
            "{{region=\"{}\", zone=\"{}\", sub_zone=\"{}\"}}",
            self.region, self.zone, self.sub_zone
        )
    }
}

impl fmt::Display for LocalityName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.region, self.zone)?;
        if !self.sub_zone.is_empty() {
            write!(f, "/{}", self.sub_zone)?;
        }
        Ok(())
    }
}

impl EndpointsResource {
    /// e.g. `p0: r1/z1 w=1 [10.0.0.1:80]`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (p, priority) in self.priorities.iter().enumerate() {
            for locality in priority.localities.values() {
                let addrs: Vec<&str> = locality
                    .endpoints
                    .iter()
                    .filter_map(|e| e.addresses.first())
                    .map(String::as_str)
                    .collect();
                parts.push(format!(
                    "p{p}: {} w={} [{}]",
                    locality.name,
                    locality.lb_weight,
                    addrs.join(",")
                ));
            }
        }
        for d in &self.drop_config {
            parts.push(format!("drop {}={}ppm", d.category, d.parts_per_million));
        }
        if parts.is_empty() {
            return "no endpoints".to_string();
        }
        parts.join("; ")
    }

    /// Every primary endpoint address, priority by priority.
    pub fn addresses(&self) -> Vec<String> {
        self.priorities
            .iter()
            .flat_map(|p| p.localities.values())
            .flat_map(|l| l.endpoints.iter())
            .filter_map(|e| e.addresses.first().cloned())
            .collect()
    }
}

/// Decodes and validates a serialized
/// `envoy.config.endpoint.v3.ClusterLoadAssignment`. Its name is
/// `cluster_name`.
pub(super) fn decode(
    bytes: &[u8],
    context: &DecodeContext,
) -> (Option<String>, Result<XdsResource, DecodeError>) {
    let cla = match ClusterLoadAssignment::decode(bytes) {
        Ok(cla) => cla,
        Err(e) => {
            return (
                None,
                Err(DecodeError::Undecodable {
                    message_type: "ClusterLoadAssignment",
                    reason: e.to_string(),
                }),
            );
        }
    };
    // C-core words this resource's errors differently from the others'.
    let mut errors = ValidationErrors::in_context("ClusterLoadAssignment", context)
        .with_heading("errors parsing EDS resource");
    let parsed = parse_cla(&cla, &mut FieldScope::root(&mut errors));
    let result = errors
        .into_result(Some(parsed))
        .map(XdsResource::ClusterLoadAssignment)
        .map_err(DecodeError::Invalid);
    (Some(cla.cluster_name), result)
}

/// C-core's `EdsResourceParse`.
fn parse_cla(cla: &ClusterLoadAssignment, scope: &mut FieldScope<'_>) -> EndpointsResource {
    let priorities = parse_priorities(cla, &mut scope.at(".endpoints"));
    let mut drop_config = Vec::new();
    if let Some(policy) = &cla.policy {
        let mut scope = scope.at(".policy");
        for (i, drop_overload) in policy.drop_overloads.iter().enumerate() {
            drop_config.extend(parse_drop(
                drop_overload,
                &mut scope.at(&format!(".drop_overloads[{i}]")),
            ));
        }
    }
    EndpointsResource {
        priorities,
        drop_config,
    }
}

fn parse_priorities(cla: &ClusterLoadAssignment, scope: &mut FieldScope<'_>) -> Vec<Priority> {
    let mut by_priority: BTreeMap<u32, Priority> = BTreeMap::new();
    let mut addresses_seen = HashSet::new();
    // Every priority is below the number of localities (each parsed
    // locality checks its own), so the gaps below are bounded too.
    let locality_count = cla.endpoints.len();
    for (i, locality_endpoints) in cla.endpoints.iter().enumerate() {
        let mut scope = scope.at(&format!("[{i}]"));
        let Some(locality) = parse_locality(
            locality_endpoints,
            locality_count,
            &mut addresses_seen,
            &mut scope,
        ) else {
            continue;
        };
        let localities = &mut by_priority
            .entry(locality_endpoints.priority)
            .or_default()
            .localities;
        if localities.contains_key(&locality.name) {
            // A client that skips the check keeps the first one.
            if !scope.enforces(ValidationRule::LocalitiesUnique) {
                continue;
            }
            scope.error(format!(
                "duplicate locality {} found in priority {}",
                locality.name.human_readable(),
                locality_endpoints.priority
            ));
        } else {
            localities.insert(locality.name.clone(), locality);
        }
    }
    // Priorities must be contiguous from 0: one error per empty priority,
    // as C-core gives; a client that skips the check closes the gaps. A
    // priority past the bound never gets here (`parse_locality` left it
    // out), so the gaps reported are fewer than the localities.
    let mut expected: u32 = 0;
    let checked = scope.enforces(ValidationRule::PrioritiesContiguous);
    for &priority in by_priority.keys().filter(|_| checked) {
        for empty in expected..priority {
            scope.error(format!("priority {empty} empty"));
        }
        expected = priority.saturating_add(1);
    }
    for (priority, entry) in &by_priority {
        let total: u64 = entry
            .localities
            .values()
            .map(|l| u64::from(l.lb_weight))
            .sum();
        if total > u64::from(u32::MAX) {
            scope.error(format!(
                "sum of locality weights for priority {priority} exceeds uint32 max"
            ));
        }
    }
    by_priority.into_values().collect()
}

/// A locality to use, `None` for one that is ignored (no weight) or has
/// errors.
fn parse_locality(
    locality_endpoints: &LocalityLbEndpoints,
    locality_count: usize,
    addresses_seen: &mut HashSet<SocketAddr>,
    scope: &mut FieldScope<'_>,
) -> Option<Locality> {
    let errors_before = scope.error_count();
    // A locality without weight gets no traffic, so gRPC drops it unchecked.
    let lb_weight = locality_endpoints
        .load_balancing_weight
        .map_or(0, |w| w.value);
    if lb_weight == 0 {
        return None;
    }
    let Some(locality) = &locality_endpoints.locality else {
        if scope.enforces(ValidationRule::LocalityPresent) {
            scope.at(".locality").error("field not present");
        }
        return None;
    };
    let name = LocalityName {
        region: locality.region.clone(),
        zone: locality.zone.clone(),
        sub_zone: locality.sub_zone.clone(),
    };
    let mut endpoints = Vec::new();
    for (i, lb_endpoint) in locality_endpoints.lb_endpoints.iter().enumerate() {
        let mut scope = scope.at(&format!(".lb_endpoints[{i}]"));
        let Some((endpoint, addresses)) = parse_endpoint(lb_endpoint, &mut scope) else {
            continue;
        };
        for address in addresses {
            if !addresses_seen.insert(address) && scope.enforces(ValidationRule::AddressesUnique) {
                scope.error(format!(
                    "duplicate endpoint address \"{}\"",
                    address_uri(address)
                ));
            }
        }
        endpoints.push(endpoint);
    }
    // Contiguous priorities cannot reach the number of localities. C-core
    // (1.85) checks that bound here, locality by locality, before anything
    // is sized by a priority (4294967295 would ask for that many), and
    // reports it instead of the gaps it makes. It is the contiguity rule
    // checked early, not a rule of its own: a priority past the bound
    // always leaves a gap, so what a client does (NACK, or take the
    // resource) is the same either way, and only the words would differ.
    let priority = locality_endpoints.priority;
    if usize::try_from(priority).map_or(true, |p| p >= locality_count)
        && scope.enforces(ValidationRule::PrioritiesContiguous)
    {
        scope.at(".priority").error(format!(
            "priority {priority} >= number of localities ({locality_count})"
        ));
    }
    (scope.error_count() == errors_before).then_some(Locality {
        name,
        lb_weight,
        endpoints,
    })
}

/// An endpoint to use with its parsed addresses, `None` for one gRPC skips
/// (not UNKNOWN, HEALTHY or DRAINING) or that has errors.
fn parse_endpoint(
    lb_endpoint: &LbEndpoint,
    scope: &mut FieldScope<'_>,
) -> Option<(Endpoint, Vec<SocketAddr>)> {
    let health_status = match HealthStatusProto::try_from(lb_endpoint.health_status) {
        Ok(HealthStatusProto::Unknown) => HealthStatus::Unknown,
        Ok(HealthStatusProto::Healthy) => HealthStatus::Healthy,
        Ok(HealthStatusProto::Draining) => HealthStatus::Draining,
        _ => return None,
    };
    let lb_weight = lb_endpoint.load_balancing_weight.map_or(1, |w| w.value);
    if lb_weight == 0 && scope.enforces(ValidationRule::EndpointWeight) {
        scope
            .at(".load_balancing_weight")
            .error("must be greater than 0");
    }
    let mut scope = scope.at(".endpoint");
    let Some(HostIdentifier::Endpoint(endpoint)) = &lb_endpoint.host_identifier else {
        scope.error("field not present");
        return None;
    };
    let mut addresses = Vec::new();
    addresses.extend(parse_socket_address(
        endpoint.address.as_ref(),
        &mut scope.at(".address"),
    ));
    // gRFC A61: extra addresses of a dual-stack endpoint.
    for (i, additional) in endpoint.additional_addresses.iter().enumerate() {
        let mut scope = scope.at(&format!(".additional_addresses[{i}].address"));
        addresses.extend(parse_socket_address(
            additional.address.as_ref(),
            &mut scope,
        ));
    }
    if addresses.is_empty() {
        return None;
    }
    let rendered = addresses.iter().map(SocketAddr::to_string).collect();
    Some((
        Endpoint {
            addresses: rendered,
            health_status,
            lb_weight,
        },
        addresses,
    ))
}

/// How C-core names an address in errors (`ipv4:10.0.0.1:80`).
fn address_uri(address: SocketAddr) -> String {
    match address {
        SocketAddr::V4(v4) => format!("ipv4:{v4}"),
        SocketAddr::V6(v6) => format!("ipv6:{v6}"),
    }
}

fn parse_drop(drop_overload: &DropOverload, scope: &mut FieldScope<'_>) -> Option<DropCategory> {
    if drop_overload.category.is_empty() {
        scope.at(".category").error("empty drop category name");
    }
    let mut scope = scope.at(".drop_percentage");
    let Some(percentage) = &drop_overload.drop_percentage else {
        scope.error("field not present");
        return None;
    };
    let parts_per_million = match parts_per_million(percentage.numerator, percentage.denominator) {
        Some(ppm) => ppm.min(1_000_000),
        None => {
            scope.at(".denominator").error("unknown denominator type");
            return None;
        }
    };
    Some(DropCategory {
        category: drop_overload.category.clone(),
        parts_per_million,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_support::*;
    use envoy_types::pb::envoy::config::core::v3::{Address, Pipe, address};
    use envoy_types::pb::envoy::config::endpoint::v3::{
        Endpoint as EndpointProto, cluster_load_assignment::Policy, endpoint::AdditionalAddress,
    };
    use envoy_types::pb::envoy::r#type::v3::FractionalPercent;
    use envoy_types::pb::google::protobuf::UInt32Value;
    use rstest::rstest;

    fn decode_cla(
        cla: &ClusterLoadAssignment,
    ) -> (Option<String>, Result<XdsResource, DecodeError>) {
        decode(&cla.encode_to_vec(), &DecodeContext::default())
    }

    fn parsed(cla: &ClusterLoadAssignment) -> EndpointsResource {
        match valid(decode_cla(cla)) {
            XdsResource::ClusterLoadAssignment(e) => e,
            other => panic!("not endpoints: {other:?}"),
        }
    }

    fn errors_of(cla: &ClusterLoadAssignment) -> ValidationErrors {
        invalid(decode_cla(cla))
    }

    /// One locality `r/z` (weight 1, priority 0) with `lb_endpoints`.
    fn single(lb_endpoints: Vec<LbEndpoint>) -> ClusterLoadAssignment {
        cla("c1", vec![locality("r", Some(1), 0, lb_endpoints)])
    }

    fn name(region: &str) -> LocalityName {
        LocalityName {
            region: region.into(),
            zone: "z".into(),
            sub_zone: String::new(),
        }
    }

    fn with_endpoint(f: impl FnOnce(&mut EndpointProto)) -> LbEndpoint {
        let mut lb_endpoint = lb_endpoint("10.0.0.1", 80);
        if let Some(HostIdentifier::Endpoint(endpoint)) = lb_endpoint.host_identifier.as_mut() {
            f(endpoint);
        }
        lb_endpoint
    }

    const ENDPOINT0: &str = "endpoints[0].lb_endpoints[0]";

    #[test]
    fn minimal_cla() {
        let decoded = decode_cla(&single(vec![lb_endpoint("10.0.0.1", 80)]));
        assert_eq!(decoded.0.as_deref(), Some("c1"), "the name is cluster_name");
        let XdsResource::ClusterLoadAssignment(e) = valid(decoded) else {
            panic!("not endpoints")
        };
        let expected_locality = Locality {
            name: name("r"),
            lb_weight: 1,
            endpoints: vec![Endpoint {
                addresses: vec!["10.0.0.1:80".into()],
                health_status: HealthStatus::Unknown,
                lb_weight: 1,
            }],
        };
        assert_eq!(
            e,
            EndpointsResource {
                priorities: vec![Priority {
                    localities: BTreeMap::from([(name("r"), expected_locality)])
                }],
                drop_config: vec![],
            }
        );
        assert_eq!(e.summary(), "p0: r/z w=1 [10.0.0.1:80]");
    }

    #[test]
    fn empty_cla_is_valid() {
        let e = parsed(&cla("c1", vec![]));
        assert!(e.priorities.is_empty());
        assert_eq!(e.summary(), "no endpoints");
    }

    #[test]
    fn ipv6_and_additional_addresses() {
        let lb_endpoint = with_endpoint(|e| {
            e.address = Some(socket_address("2001:db8::1", 443));
            e.additional_addresses = vec![AdditionalAddress {
                address: Some(socket_address("10.0.0.2", 443)),
            }];
        });
        let e = parsed(&single(vec![lb_endpoint]));
        assert_eq!(e.addresses(), vec!["[2001:db8::1]:443".to_string()]);
        let endpoint = &e.priorities[0].localities[&name("r")].endpoints[0];
        assert_eq!(
            endpoint.addresses,
            vec!["[2001:db8::1]:443".to_string(), "10.0.0.2:443".to_string()]
        );
    }

    #[rstest]
    #[case(HealthStatusProto::Unknown, Some(HealthStatus::Unknown))]
    #[case(HealthStatusProto::Healthy, Some(HealthStatus::Healthy))]
    #[case(HealthStatusProto::Draining, Some(HealthStatus::Draining))]
    #[case(HealthStatusProto::Unhealthy, None)]
    #[case(HealthStatusProto::Timeout, None)]
    #[case(HealthStatusProto::Degraded, None)]
    fn health_status(#[case] status: HealthStatusProto, #[case] kept: Option<HealthStatus>) {
        let mut lb_endpoint = lb_endpoint("10.0.0.1", 80);
        lb_endpoint.health_status = status as i32;
        let e = parsed(&single(vec![lb_endpoint]));
        let statuses: Vec<HealthStatus> = e.priorities[0].localities[&name("r")]
            .endpoints
            .iter()
            .map(|ep| ep.health_status)
            .collect();
        assert_eq!(statuses, kept.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn skipped_endpoint_is_not_validated() {
        let mut lb_endpoint = with_endpoint(|e| e.address = None);
        lb_endpoint.health_status = HealthStatusProto::Unhealthy as i32;
        assert!(decode_cla(&single(vec![lb_endpoint])).1.is_ok());
    }

    #[rstest]
    #[case(None)]
    #[case(Some(0))]
    fn locality_without_weight_is_ignored(#[case] weight: Option<u32>) {
        // Even with no locality and a broken endpoint: it is never looked at.
        let mut ignored = locality(
            "ignored",
            weight,
            0,
            vec![with_endpoint(|e| e.address = None)],
        );
        ignored.locality = None;
        let e = parsed(&cla(
            "c1",
            vec![
                ignored,
                locality("r", Some(3), 0, vec![lb_endpoint("10.0.0.1", 80)]),
            ],
        ));
        assert_eq!(e.priorities.len(), 1);
        assert_eq!(
            e.priorities[0]
                .localities
                .keys()
                .cloned()
                .collect::<Vec<_>>(),
            vec![name("r")]
        );
    }

    #[test]
    fn locality_must_be_present() {
        let mut l = locality("r", Some(1), 0, vec![]);
        l.locality = None;
        assert_eq!(
            errors_of(&cla("c1", vec![l])).errors,
            vec![("endpoints[0].locality".into(), "field not present".into())]
        );
    }

    #[test]
    fn duplicate_locality_in_a_priority() {
        let e = parsed(&cla(
            "c1",
            vec![
                locality("r", Some(1), 0, vec![]),
                locality("r", Some(1), 1, vec![]),
            ],
        ));
        assert_eq!(
            e.priorities.len(),
            2,
            "the same locality may appear in different priorities"
        );
        let errors = errors_of(&cla(
            "c1",
            vec![
                locality("r", Some(1), 0, vec![]),
                locality("r", Some(2), 0, vec![]),
            ],
        ));
        assert_eq!(
            errors.errors,
            vec![(
                "endpoints[1]".into(),
                "duplicate locality {region=\"r\", zone=\"z\", sub_zone=\"\"} found in priority 0"
                    .into()
            )]
        );
    }

    #[test]
    fn priorities_are_ordered_by_number_not_position() {
        let e = parsed(&cla(
            "c1",
            vec![
                locality("p1", Some(1), 1, vec![lb_endpoint("10.0.0.2", 80)]),
                locality("p0", Some(1), 0, vec![]),
            ],
        ));
        assert!(e.priorities[0].localities.contains_key(&name("p0")));
        assert!(e.priorities[1].localities.contains_key(&name("p1")));
        assert_eq!(e.summary(), "p0: p0/z w=1 []; p1: p1/z w=1 [10.0.0.2:80]");
    }

    #[rstest]
    #[case(vec![0, 0, 2], &["priority 1 empty"])]
    #[case(vec![1, 1], &["priority 0 empty"])]
    #[case(vec![0, 3, 3, 3], &["priority 1 empty", "priority 2 empty"])]
    fn sparse_priorities(#[case] priorities: Vec<u32>, #[case] messages: &[&str]) {
        let localities = priorities
            .iter()
            .enumerate()
            .map(|(i, p)| locality(&format!("r{i}"), Some(1), *p, vec![]))
            .collect();
        let expected: Vec<(String, String)> = messages
            .iter()
            .map(|m| ("endpoints".to_string(), m.to_string()))
            .collect();
        assert_eq!(errors_of(&cla("c1", localities)).errors, expected);
    }

    #[rstest]
    #[case(vec![0, 2], 1, "priority 2 >= number of localities (2)")]
    #[case(vec![1], 0, "priority 1 >= number of localities (1)")]
    #[case(vec![0, u32::MAX], 1, "priority 4294967295 >= number of localities (2)")]
    fn priorities_are_bounded_by_the_number_of_localities(
        #[case] priorities: Vec<u32>,
        #[case] index: usize,
        #[case] message: &str,
    ) {
        let localities = priorities
            .iter()
            .enumerate()
            .map(|(i, p)| locality(&format!("r{i}"), Some(1), *p, vec![]))
            .collect();
        // The locality out of bounds is left out, so no gap is reported.
        assert_eq!(
            errors_of(&cla("c1", localities)).errors,
            vec![(format!("endpoints[{index}].priority"), message.to_string())]
        );
    }

    #[test]
    fn localities_without_weight_count_toward_the_bound() {
        let e = parsed(&cla(
            "c1",
            vec![
                locality("a", Some(1), 0, vec![]),
                locality("ignored", None, 0, vec![]),
                locality("b", Some(1), 1, vec![]),
            ],
        ));
        assert_eq!(e.priorities.len(), 2);
    }

    #[test]
    fn a_client_without_contiguous_priorities_takes_one_past_the_bound() {
        let localities = vec![
            locality("a", Some(1), 0, vec![]),
            locality("b", Some(1), u32::MAX, vec![]),
        ];
        let context = DecodeContext {
            broken_rule: Some(ValidationRule::PrioritiesContiguous),
            ..Default::default()
        };
        match valid(decode(&cla("c1", localities).encode_to_vec(), &context)) {
            XdsResource::ClusterLoadAssignment(e) => assert_eq!(e.priorities.len(), 2),
            other => panic!("not endpoints: {other:?}"),
        }
    }

    #[test]
    fn locality_weights_must_fit_u32() {
        let ok = cla(
            "c1",
            vec![
                locality("a", Some(u32::MAX - 1), 0, vec![]),
                locality("b", Some(1), 0, vec![]),
            ],
        );
        assert!(decode_cla(&ok).1.is_ok());
        let too_big = cla(
            "c1",
            vec![
                locality("a", Some(u32::MAX), 0, vec![]),
                locality("b", Some(1), 0, vec![]),
            ],
        );
        assert_eq!(
            errors_of(&too_big).errors,
            vec![(
                "endpoints".into(),
                "sum of locality weights for priority 0 exceeds uint32 max".into()
            )]
        );
    }

    #[rstest]
    #[case(None, 1)]
    #[case(Some(7), 7)]
    fn endpoint_weight(#[case] weight: Option<u32>, #[case] expected: u32) {
        let mut lb_endpoint = lb_endpoint("10.0.0.1", 80);
        lb_endpoint.load_balancing_weight = weight.map(|value| UInt32Value { value });
        let e = parsed(&single(vec![lb_endpoint]));
        assert_eq!(
            e.priorities[0].localities[&name("r")].endpoints[0].lb_weight,
            expected
        );
    }

    #[test]
    fn endpoint_weight_zero_is_an_error() {
        let mut lb_endpoint = lb_endpoint("10.0.0.1", 80);
        lb_endpoint.load_balancing_weight = Some(UInt32Value { value: 0 });
        assert_eq!(
            errors_of(&single(vec![lb_endpoint])).errors,
            vec![(
                format!("{ENDPOINT0}.load_balancing_weight"),
                "must be greater than 0".into()
            )]
        );
    }

    #[rstest]
    #[case(
        LbEndpoint { host_identifier: Some(HostIdentifier::EndpointName("n".into())), ..Default::default() },
        ".endpoint",
        "field not present"
    )]
    #[case(with_endpoint(|e| e.address = None), ".endpoint.address", "field not present")]
    #[case(
        with_endpoint(|e| e.address = Some(Address { address: Some(address::Address::Pipe(Pipe::default())) })),
        ".endpoint.address.socket_address",
        "field not present"
    )]
    #[case(
        with_endpoint(|e| e.address = Some(socket_address("10.0.0.1", 65536))),
        ".endpoint.address.socket_address.port_value",
        "invalid port"
    )]
    #[case(
        with_endpoint(|e| e.address = Some(socket_address("backend.local", 80))),
        ".endpoint.address.socket_address",
        "Failed to parse address:backend.local:80"
    )]
    #[case(
        with_endpoint(|e| e.additional_addresses = vec![AdditionalAddress { address: None }]),
        ".endpoint.additional_addresses[0].address",
        "field not present"
    )]
    fn invalid_endpoints(
        #[case] lb_endpoint: LbEndpoint,
        #[case] suffix: &str,
        #[case] message: &str,
    ) {
        let errors = errors_of(&single(vec![lb_endpoint]));
        assert_eq!(
            errors.errors,
            vec![(format!("{ENDPOINT0}{suffix}"), message.to_string())]
        );
    }

    #[test]
    fn duplicate_endpoint_addresses() {
        let errors = errors_of(&cla(
            "c1",
            vec![
                locality("a", Some(1), 0, vec![lb_endpoint("10.0.0.1", 80)]),
                locality(
                    "b",
                    Some(1),
                    1,
                    vec![lb_endpoint("10.0.0.2", 80), lb_endpoint("10.0.0.1", 80)],
                ),
            ],
        ));
        assert_eq!(
            errors.errors,
            vec![(
                "endpoints[1].lb_endpoints[1]".into(),
                "duplicate endpoint address \"ipv4:10.0.0.1:80\"".into()
            )]
        );
    }

    fn with_drops(drops: Vec<DropOverload>) -> ClusterLoadAssignment {
        ClusterLoadAssignment {
            policy: Some(Policy {
                drop_overloads: drops,
                ..Default::default()
            }),
            ..cla("c1", vec![])
        }
    }

    fn drop_overload(category: &str, percentage: Option<(u32, i32)>) -> DropOverload {
        DropOverload {
            category: category.to_string(),
            drop_percentage: percentage.map(|(numerator, denominator)| FractionalPercent {
                numerator,
                denominator,
            }),
        }
    }

    #[rstest]
    #[case(3, 0, 30_000)]
    #[case(3, 1, 300)]
    #[case(3, 2, 3)]
    #[case(200, 0, 1_000_000)]
    #[case(u32::MAX, 0, 1_000_000)]
    fn drop_overloads(#[case] numerator: u32, #[case] denominator: i32, #[case] expected: u32) {
        let e = parsed(&with_drops(vec![drop_overload(
            "lb",
            Some((numerator, denominator)),
        )]));
        assert_eq!(
            e.drop_config,
            vec![DropCategory {
                category: "lb".into(),
                parts_per_million: expected
            }]
        );
        assert_eq!(e.summary(), format!("drop lb={expected}ppm"));
    }

    #[rstest]
    #[case(drop_overload("", Some((1, 0))), "policy.drop_overloads[0].category", "empty drop category name")]
    #[case(
        drop_overload("lb", None),
        "policy.drop_overloads[0].drop_percentage",
        "field not present"
    )]
    #[case(
        drop_overload("lb", Some((1, 5))),
        "policy.drop_overloads[0].drop_percentage.denominator",
        "unknown denominator type"
    )]
    fn invalid_drop_overloads(
        #[case] drop: DropOverload,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        assert_eq!(
            errors_of(&with_drops(vec![drop])).errors,
            vec![(field.to_string(), message.to_string())]
        );
    }

    #[test]
    fn undecodable_bytes() {
        let (name, result) = decode(&[0x12], &DecodeContext::default());
        assert_eq!(name, None);
        assert!(matches!(
            result,
            Err(DecodeError::Undecodable {
                message_type: "ClusterLoadAssignment",
                ..
            })
        ));
    }

    #[test]
    fn every_error_is_collected() {
        let mut missing_locality = locality("x", Some(1), 0, vec![]);
        missing_locality.locality = None;
        let mut cla = cla(
            "c1",
            vec![
                missing_locality,
                locality(
                    "r",
                    Some(1),
                    2,
                    vec![
                        with_endpoint(|e| e.address = None),
                        lb_endpoint("not-an-ip", 1),
                    ],
                ),
            ],
        );
        cla.policy = Some(Policy {
            drop_overloads: vec![drop_overload("", None)],
            ..Default::default()
        });
        let decoded = decode_cla(&cla);
        assert_eq!(decoded.0.as_deref(), Some("c1"));
        let errors = invalid(decoded);
        let fields: Vec<&str> = errors.errors.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "endpoints[0].locality",
                "endpoints[1].lb_endpoints[0].endpoint.address",
                "endpoints[1].lb_endpoints[1].endpoint.address.socket_address",
                "endpoints[1].priority",
                "policy.drop_overloads[0].category",
                "policy.drop_overloads[0].drop_percentage",
            ]
        );
        assert!(
            errors
                .to_string()
                .starts_with("errors parsing EDS resource: [")
        );
    }
}
