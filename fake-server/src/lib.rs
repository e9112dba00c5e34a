//! Scriptable fake ADS (xDS) servers for testing xDS clients, and fake
//! Kuma global control planes (KDS) for testing Kuma zones.
//!
//! A conformance harness starts one or more named servers per scenario, fills
//! their resource stores, lets them answer like a normal control plane
//! ([`ServingMode::Auto`]) or sends responses by hand
//! ([`ServingMode::Scripted`]), applies [`fault::Fault`]s, and reads back what
//! each server saw and did ([`event::ServerEvent`]). The same service runs,
//! in plaintext or over TLS ([`tls`]), on real TCP and on an in-memory
//! transport
//! ([`xds_vocabulary::network::MemoryNetwork`]), so
//! in-process clients run on tokio's paused virtual time deterministically.
//!
//! # Kuma's KDS
//!
//! Beside ADS, every server serves Kuma's
//! `kuma.mesh.v1alpha1.KDSSyncService` on the same port (TCP or in
//! memory, plaintext or TLS), playing the global control plane to a zone
//! (vocabulary: [`xds_vocabulary::kds`]):
//! - `GlobalToZoneSync`: the zone subscribes (`*` per bare Kuma type name,
//!   `Mesh`) and the server answers from its store as a delta ADS server
//!   does, on the same incremental rules, and answers every type's first
//!   request even when empty. Kuma resources go in the store like any
//!   other ([`ServedResource::raw`] with the type name, the `<name>.<mesh>`
//!   name and `xds_vocabulary::kds::pack` of a `KumaResource`); scripted
//!   responses go out with [`FakeAdsServer::send_kds_response`].
//! - `ZoneToGlobalSync`: the zone answers, the server asks. In
//!   [`ServingMode::Auto`] it subscribes `*` to each zone-origin type
//!   ([`FakeAdsServer::set_kds_zone_types`]) when a stream opens and ACKs
//!   each response; in either mode [`FakeAdsServer::send_kds_request`]
//!   sends a [`ScriptedKdsRequest`] (a subscription, an ACK, a NACK).
//!
//! gzip is accepted and sent back to a zone that accepts it. The
//! recording has the opening ([`event::ServerEvent::KdsStreamOpened`]: the
//! RPC and the zone's headers, [`handshake::KdsHandshake`]), the zone's
//! requests and the server's responses on `GlobalToZoneSync` as on any
//! delta stream, and on `ZoneToGlobalSync` the server's requests
//! ([`event::ServerEvent::KdsRequestSent`]) and the zone's responses
//! ([`event::ServerEvent::KdsResponseReceived`]). Faults apply to KDS
//! streams as to ADS streams; those that shape responses shape what the
//! server answers on `GlobalToZoneSync`, not what it asks on
//! `ZoneToGlobalSync`. Kuma's other KDS service, `GlobalKDSService`, is
//! answered UNIMPLEMENTED, which a zone tolerates.
//!
//! This crate must not know about scenario files, the harness, timelines,
//! verdicts, or any particular xDS client: it serves, faults and records.

pub mod backend;
pub mod event;
pub mod fault;
pub mod resource;
pub mod subscribed;
pub mod tls;

/// For the fuzz targets in `fuzz/` and their corpus replay test only.
#[doc(hidden)]
pub mod fuzzing;

mod ads;
mod cancel;
mod config;
mod connection;
mod delta;
mod effect;
mod egress;
pub mod handshake;
mod in_force;
mod incoming;
mod incremental;
mod kds;
mod kds_service;
pub mod outbox;
mod respond;
mod serve;
mod server;
mod shared;
mod sotw;
mod state;
mod store;
mod stream;
mod stream_gate;

pub use config::{
    EventObserver, MaxConnectionAge, ScriptedDeltaResource, ScriptedDeltaResponse,
    ScriptedKdsRequest, ScriptedResourceError, ScriptedResponse, ServerConfig, ServingMode,
};
pub use connection::{ConnectionInfo, ServerConnection};
pub use fault::FaultError;
pub use kds_service::MAX_KDS_MESSAGE;
pub use resource::ServedResource;
pub use server::{FakeAdsServer, ServeError};
