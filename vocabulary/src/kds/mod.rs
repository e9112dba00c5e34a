//! Kuma's KDS (Kuma Discovery Service) as the harness speaks it: the
//! service and its two RPCs, the gRPC headers a zone sends, the bare Kuma
//! type names that are its type URLs, `<name>.<mesh>` resource names, and
//! the `KumaResource` envelope every resource travels in.
//!
//! Facts read from kumahq/kuma v2.14.3 (`api/mesh/v1alpha1/kds.proto`,
//! `pkg/kds/...`). The streams carry Envoy's delta xDS messages; only the
//! envelope is Kuma's own ([`proto`]).

pub mod name;
pub mod resource;
pub mod spec;
pub mod types;
pub mod zone;

/// Kuma's resource envelope: `kuma.mesh.v1alpha1.KumaResource`, generated
/// by prost from `proto/kds.proto` (the project's own, with Kuma's field
/// numbers) and committed; `tests/kds_proto.rs` regenerates it and fails if
/// the two differ.
#[allow(clippy::all)]
pub mod proto {
    include!("kuma.mesh.v1alpha1.rs");
}

pub use name::{KdsName, KdsNameError, hash_suffixed};
pub use proto::{KumaResource, ZoneHealthCheckRequest, ZoneHealthCheckResponse};
pub use resource::{UnpackError, kuma_resource, pack, unpack};
pub use zone::{KdsResource, ZoneStoreChange};

/// The service both RPCs belong to.
pub const SYNC_SERVICE: &str = "kuma.mesh.v1alpha1.KDSSyncService";

/// Kuma's other KDS service (config dumps, stats, clusters, health
/// checks), which a zone also calls and tolerates UNIMPLEMENTED from.
pub const GLOBAL_KDS_SERVICE: &str = "kuma.mesh.v1alpha1.GlobalKDSService";

/// The health ping of a zone that advertises `zone-ping-health`: a unary
/// call of [`GLOBAL_KDS_SERVICE`] (`pkg/kds/mux/client.go:301-340` at
/// v2.14.3).
pub const HEALTH_CHECK_PATH: &str = "/kuma.mesh.v1alpha1.GlobalKDSService/HealthCheck";

/// The zone's name (the global requires it).
pub const CLIENT_ID_HEADER: &str = "client-id";
/// The KDS protocol version (`v3`).
pub const KDS_VERSION_HEADER: &str = "kds-version";
/// One value per feature the zone has (`zone-ping-health`, `hash-suffix`).
pub const FEATURES_HEADER: &str = "features";
/// The zone's Kuma version.
pub const VERSION_HEADER: &str = "version";

/// Features a Kuma 2.14 zone advertises (`pkg/kds/features.go` at
/// v2.14.3), in its `features` headers and its node metadata.
pub mod features {
    /// In the node metadata: the global hash-suffixes the names it sends
    /// (`HashSuffixMapper(true, ...)`, `pkg/kds/context/context.go:95-98`).
    /// In the headers: the global takes the zone's names as they come.
    pub const HASH_SUFFIX: &str = "hash-suffix";
    /// In the headers: the zone pings `GlobalKDSService/HealthCheck`.
    pub const ZONE_PING_HEALTH: &str = "zone-ping-health";
}

/// The node metadata keys of a zone's first request of each type.
pub mod metadata {
    /// The zone's Kuma version, a struct (`kumaCp: {version, gitTag, ...}`).
    pub const VERSION: &str = "version";
    /// The zone's whole configuration, as JSON.
    pub const CONFIG: &str = "config";
    /// A list of the zone's features.
    pub const FEATURES: &str = "features";
    pub const CONTROL_PLANE_ID: &str = "control-plane-id";
}

/// One of the two RPCs of `KDSSyncService`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KdsRpc {
    /// The zone subscribes with `DeltaDiscoveryRequest`s and the global
    /// answers with `DeltaDiscoveryResponse`s: delta xDS, global to zone.
    GlobalToZoneSync,
    /// The roles reversed: the zone opens the stream and sends
    /// `DeltaDiscoveryResponse`s; the global sends the requests, ACKs and
    /// NACKs.
    ZoneToGlobalSync,
}

impl KdsRpc {
    pub const ALL: [KdsRpc; 2] = [KdsRpc::GlobalToZoneSync, KdsRpc::ZoneToGlobalSync];

    /// The method's name in the service.
    pub const fn method(self) -> &'static str {
        match self {
            KdsRpc::GlobalToZoneSync => "GlobalToZoneSync",
            KdsRpc::ZoneToGlobalSync => "ZoneToGlobalSync",
        }
    }

    /// The HTTP/2 path gRPC calls it by.
    pub const fn path(self) -> &'static str {
        match self {
            KdsRpc::GlobalToZoneSync => "/kuma.mesh.v1alpha1.KDSSyncService/GlobalToZoneSync",
            KdsRpc::ZoneToGlobalSync => "/kuma.mesh.v1alpha1.KDSSyncService/ZoneToGlobalSync",
        }
    }

    pub fn from_path(path: &str) -> Option<KdsRpc> {
        KdsRpc::ALL.into_iter().find(|rpc| rpc.path() == path)
    }
}

impl std::fmt::Display for KdsRpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.method())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_service_then_method() {
        for rpc in KdsRpc::ALL {
            assert_eq!(rpc.path(), format!("/{SYNC_SERVICE}/{}", rpc.method()));
            assert_eq!(KdsRpc::from_path(rpc.path()), Some(rpc));
        }
        assert_eq!(
            KdsRpc::from_path("/kuma.mesh.v1alpha1.GlobalKDSService/HealthCheck"),
            None
        );
    }
}
