//! Kuma's KDS (`kuma.mesh.v1alpha1.KDSSyncService`), the fake server being
//! the global control plane, on its two RPCs:
//! - `GlobalToZoneSync` ([`GlobalToZone`]): the zone subscribes with delta
//!   requests (`*` per type it consumes) and the server answers from its
//!   store with the incremental rules (`crate::incremental`), as delta ADS
//!   does, with KDS's flavour: type URLs are bare Kuma type names, names
//!   are `<name>.<mesh>`, and every type's first request is answered,
//!   empty if need be (the zone takes the first response of a type as its
//!   full sync).
//! - `ZoneToGlobalSync` ([`ZoneToGlobal`]): the roles reversed. The
//!   server sends the requests: in auto mode a `*` subscription per
//!   zone-origin type when the stream opens and an ACK of each response;
//!   in scripted mode only what `FakeAdsServer::send_kds_request` says.
//!   The zone's responses are recorded.
//!
//! A sibling of the other protocols on the stream core (`crate::stream`):
//! each RPC's per-stream state rides on its stream as a
//! `stream::Protocol`, which only this module (and, for
//! `GlobalToZoneSync`, the incremental rules) looks inside.

mod global_to_zone;
mod zone_to_global;

pub(crate) use global_to_zone::GlobalToZone;
pub(crate) use zone_to_global::ZoneToGlobal;
