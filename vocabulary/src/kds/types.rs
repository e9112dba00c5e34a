//! Kuma's resource types as KDS names them: a delta request's `type_url`
//! is the bare type name (`Mesh`), not a `type.googleapis.com/` URL.
//!
//! The lists are Kuma v2.14.3's type descriptors (their KDS flags, as
//! `registry.ObjectTypes(SentFromGlobalToZone())` and
//! `SentFromZoneToGlobal()` select them), its test-only `DoNothing*`
//! types left out.

pub const MESH: &str = "Mesh";
pub const ZONE_INGRESS: &str = "ZoneIngress";
pub const ZONE_INGRESS_INSIGHT: &str = "ZoneIngressInsight";
pub const ZONE_EGRESS: &str = "ZoneEgress";
pub const ZONE_EGRESS_INSIGHT: &str = "ZoneEgressInsight";
pub const DATAPLANE: &str = "Dataplane";
pub const DATAPLANE_INSIGHT: &str = "DataplaneInsight";
pub const CONFIG: &str = "Config";
pub const SECRET: &str = "Secret";
pub const GLOBAL_SECRET: &str = "GlobalSecret";
pub const HOSTNAME_GENERATOR: &str = "HostnameGenerator";
pub const MESH_SERVICE: &str = "MeshService";
pub const MESH_TRAFFIC_PERMISSION: &str = "MeshTrafficPermission";
pub const MESH_TIMEOUT: &str = "MeshTimeout";
pub const MESH_HTTP_ROUTE: &str = "MeshHTTPRoute";

/// The policies of Kuma's policy plugins: each goes both ways (created on
/// the global for every zone, or on a zone and synced to the others).
const POLICIES: [&str; 16] = [
    "MeshAccessLog",
    "MeshCircuitBreaker",
    "MeshFaultInjection",
    "MeshHealthCheck",
    MESH_HTTP_ROUTE,
    "MeshLoadBalancingStrategy",
    "MeshMetric",
    "MeshPassthrough",
    "MeshProxyPatch",
    "MeshRateLimit",
    "MeshRetry",
    "MeshTCPRoute",
    MESH_TIMEOUT,
    "MeshTLS",
    "MeshTrace",
    MESH_TRAFFIC_PERMISSION,
];

/// The types a zone consumes from the global (on `GlobalToZoneSync` a
/// zone subscribes `*` to each).
pub const GLOBAL_TO_ZONE: [&str; 45] = {
    const OTHERS: [&str; 29] = [
        "CircuitBreaker",
        CONFIG,
        "ExternalService",
        "FaultInjection",
        GLOBAL_SECRET,
        "HealthCheck",
        HOSTNAME_GENERATOR,
        MESH,
        "MeshExternalService",
        "MeshGateway",
        "MeshGatewayRoute",
        "MeshIdentity",
        "MeshMultiZoneService",
        "MeshOpenTelemetryBackend",
        MESH_SERVICE,
        "MeshTrust",
        "MeshZoneAddress",
        "ProxyTemplate",
        "RateLimit",
        "Retry",
        SECRET,
        "ServiceInsight",
        "Timeout",
        "TrafficLog",
        "TrafficPermission",
        "TrafficRoute",
        "TrafficTrace",
        "VirtualOutbound",
        ZONE_INGRESS,
    ];
    concat(OTHERS, POLICIES)
};

/// The types a zone provides to the global (on `ZoneToGlobalSync` the
/// global subscribes `*` to each).
pub const ZONE_TO_GLOBAL: [&str; 31] = {
    const OTHERS: [&str; 15] = [
        DATAPLANE,
        DATAPLANE_INSIGHT,
        HOSTNAME_GENERATOR,
        "MeshExternalService",
        "MeshGateway",
        "MeshIdentity",
        "MeshOpenTelemetryBackend",
        MESH_SERVICE,
        "MeshTrust",
        "MeshZoneAddress",
        "Workload",
        ZONE_EGRESS,
        ZONE_EGRESS_INSIGHT,
        ZONE_INGRESS,
        ZONE_INGRESS_INSIGHT,
    ];
    concat(OTHERS, POLICIES)
};

/// `a` then `b`, at compile time.
const fn concat<const A: usize, const B: usize, const N: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
) -> [&'static str; N] {
    assert!(A + B == N, "the lengths add up");
    let mut out = [""; N];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn each_list_names_each_type_once() {
        for list in [&GLOBAL_TO_ZONE[..], &ZONE_TO_GLOBAL[..]] {
            let set: BTreeSet<&str> = list.iter().copied().collect();
            assert_eq!(set.len(), list.len(), "{list:?}");
            assert!(!set.contains(""));
        }
        assert!(GLOBAL_TO_ZONE.contains(&MESH) && !ZONE_TO_GLOBAL.contains(&MESH));
        assert!(ZONE_TO_GLOBAL.contains(&DATAPLANE) && !GLOBAL_TO_ZONE.contains(&DATAPLANE));
    }
}
