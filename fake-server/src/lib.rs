//! Scriptable fake ADS (xDS) servers for testing xDS clients.
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

pub use config::{
    EventObserver, MaxConnectionAge, ScriptedDeltaResource, ScriptedDeltaResponse,
    ScriptedKdsRequest, ScriptedResourceError, ScriptedResponse, ServerConfig, ServingMode,
};
pub use connection::{ConnectionInfo, ServerConnection};
pub use fault::FaultError;
pub use kds_service::MAX_KDS_MESSAGE;
pub use resource::ServedResource;
pub use server::{FakeAdsServer, ServeError};
