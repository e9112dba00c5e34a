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

/// The types whose spec is a proto message, with that message's full
/// name: a global packs their spec as a typed `Any` of it, and a zone
/// decodes it only from an `Any` of that type (Kuma's `model.ToAny` and
/// `FromAny`, `pkg/core/resources/model/utils.go:43-79`). Every other type
/// (the policies, MeshService, HostnameGenerator, ...) has a Go-struct
/// spec, sent as JSON. Read from the `(kuma.mesh.resource).type` options of
/// Kuma v2.14.3's `api/` protos; `GlobalSecret` is a second resource type
/// of the Secret message (`api/system/v1alpha1/secret.proto`).
pub const PROTO_SPECS: [(&str, &str); 28] = [
    ("CircuitBreaker", "kuma.mesh.v1alpha1.CircuitBreaker"),
    (DATAPLANE, "kuma.mesh.v1alpha1.Dataplane"),
    (DATAPLANE_INSIGHT, "kuma.mesh.v1alpha1.DataplaneInsight"),
    ("ExternalService", "kuma.mesh.v1alpha1.ExternalService"),
    ("FaultInjection", "kuma.mesh.v1alpha1.FaultInjection"),
    ("HealthCheck", "kuma.mesh.v1alpha1.HealthCheck"),
    (MESH, "kuma.mesh.v1alpha1.Mesh"),
    ("MeshGateway", "kuma.mesh.v1alpha1.MeshGateway"),
    ("MeshGatewayRoute", "kuma.mesh.v1alpha1.MeshGatewayRoute"),
    ("MeshInsight", "kuma.mesh.v1alpha1.MeshInsight"),
    ("ProxyTemplate", "kuma.mesh.v1alpha1.ProxyTemplate"),
    ("RateLimit", "kuma.mesh.v1alpha1.RateLimit"),
    ("Retry", "kuma.mesh.v1alpha1.Retry"),
    ("ServiceInsight", "kuma.mesh.v1alpha1.ServiceInsight"),
    ("Timeout", "kuma.mesh.v1alpha1.Timeout"),
    ("TrafficLog", "kuma.mesh.v1alpha1.TrafficLog"),
    ("TrafficPermission", "kuma.mesh.v1alpha1.TrafficPermission"),
    ("TrafficRoute", "kuma.mesh.v1alpha1.TrafficRoute"),
    ("TrafficTrace", "kuma.mesh.v1alpha1.TrafficTrace"),
    ("VirtualOutbound", "kuma.mesh.v1alpha1.VirtualOutbound"),
    (ZONE_EGRESS, "kuma.mesh.v1alpha1.ZoneEgress"),
    (ZONE_EGRESS_INSIGHT, "kuma.mesh.v1alpha1.ZoneEgressInsight"),
    (ZONE_INGRESS, "kuma.mesh.v1alpha1.ZoneIngress"),
    (
        ZONE_INGRESS_INSIGHT,
        "kuma.mesh.v1alpha1.ZoneIngressInsight",
    ),
    (CONFIG, "kuma.system.v1alpha1.Config"),
    (SECRET, "kuma.system.v1alpha1.Secret"),
    (GLOBAL_SECRET, "kuma.system.v1alpha1.Secret"),
    ("Zone", "kuma.system.v1alpha1.Zone"),
];

/// The proto message of `kuma_type`'s spec; `None` for a JSON-spec type.
pub fn proto_spec(kuma_type: &str) -> Option<&'static str> {
    PROTO_SPECS
        .iter()
        .find(|(name, _)| *name == kuma_type)
        .map(|(_, message)| *message)
}

/// Whether zones may create resources of `kuma_type` (Kuma's
/// `ProvidedByZoneFlag`): every type that goes zone to global, and
/// `Config`, `Secret`, `Zone`, `ZoneInsight` (their descriptors at
/// v2.14.3). On `GlobalToZoneSync` a zone takes a resource of such a type
/// only when it is labelled `kuma.io/origin: global` (KDS-FACTS 4.1); a
/// type zones cannot create (Mesh) is the global's alone (4.2).
pub fn provided_by_zone(kuma_type: &str) -> bool {
    ZONE_TO_GLOBAL.contains(&kuma_type)
        || [CONFIG, SECRET, "Zone", "ZoneInsight"].contains(&kuma_type)
}

/// Whether a 2.14 global keeps the names of `kuma_type` as they are when
/// it hash-suffixes what it sends a zone (the descriptors with
/// `SkipKDSHash: true` at v2.14.3: Mesh,
/// `pkg/core/resources/apis/mesh/zz_generated.resources.go:981`; Config
/// and Secret, `apis/system/zz_generated.resources.go:118,237`).
pub fn skips_kds_hash(kuma_type: &str) -> bool {
    [MESH, CONFIG, SECRET].contains(&kuma_type)
}

/// Whether `kuma_type` is in Kuma's resource registry (as far as KDS
/// goes): a zone decodes a response of such a type even if it never
/// subscribed to it (KDS-FACTS 4.7), and ends the connection on any other.
pub fn registered(kuma_type: &str) -> bool {
    GLOBAL_TO_ZONE.contains(&kuma_type)
        || ZONE_TO_GLOBAL.contains(&kuma_type)
        || PROTO_SPECS.iter().any(|(name, _)| *name == kuma_type)
        || ["MeshInsight", "ZoneInsight"].contains(&kuma_type)
}

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

    #[test]
    fn proto_specs_are_the_old_api_and_policies_are_json() {
        assert_eq!(proto_spec(MESH), Some("kuma.mesh.v1alpha1.Mesh"));
        assert_eq!(proto_spec(GLOBAL_SECRET), proto_spec(SECRET));
        for json in [
            MESH_TIMEOUT,
            MESH_TRAFFIC_PERMISSION,
            MESH_SERVICE,
            HOSTNAME_GENERATOR,
        ] {
            assert_eq!(proto_spec(json), None, "{json}");
        }
        assert!(provided_by_zone(MESH_TIMEOUT) && provided_by_zone(CONFIG));
        assert!(!provided_by_zone(MESH) && !provided_by_zone("TrafficRoute"));
        assert!(registered(DATAPLANE) && registered(MESH) && !registered("NoSuchType"));
        assert!(skips_kds_hash(MESH) && skips_kds_hash(SECRET) && !skips_kds_hash(GLOBAL_SECRET));
        let names: BTreeSet<&str> = PROTO_SPECS.iter().map(|(t, _)| *t).collect();
        assert_eq!(names.len(), PROTO_SPECS.len());
    }
}
