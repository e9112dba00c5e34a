//! The reference xDS client of xds-conformance.
//!
//! An XdsClient in the shape gRPC gives it (gRFC A27), with the semantics of
//! A46 (NACK per response, valid resources still used), A57 (failure modes)
//! and, as profiles, the later gRFCs. It talks real gRPC (tonic) to real ADS
//! servers through a pluggable transport, so it runs over TCP or over an
//! in-memory transport on tokio's virtual time.
//!
//! Beside it, [`kds`] plays a Kuma zone control plane on KDS, Kuma's
//! delta-xDS sync with its global, on the same transports and clock.
//!
//! It must not know about the harness, scenario files, timelines or fake
//! servers: it is a library that stands on its own.

pub mod backoff;
pub mod bootstrap;
pub mod client;
pub mod csds;
pub mod dataplane;
pub mod defect;
pub mod environment;
/// For the fuzz targets in `fuzz/` and their corpus replay test only.
#[doc(hidden)]
pub mod fuzzing;
pub mod kds;
pub mod name;
pub mod observer;
pub mod profile;
pub mod read_delay;
pub mod resolver;
pub mod resource;
pub mod server;
pub mod stop;
pub mod transport;
pub mod watcher;

pub use bootstrap::{Bootstrap, BootstrapError, XdsServerConfig};
pub use client::{WatchId, XdsClient, XdsClientConfig};
pub use kds::{KdsZone, KdsZoneConfig, ZoneError, ZoneObserver};
pub use observer::{ClientEvent, ClientObserver, LogLevel};
pub use profile::{
    ClientProfile, DataErrorHandling, Defects, RetryAfterGoodStream, ServerErrorRule, ZoneDefects,
};
pub use resource::{ResourceType, ValidationRule, XdsResource};
pub use transport::{TcpTransport, XdsTransportFactory};
pub use watcher::{ResourceWatcher, WatcherEvent, XdsError};
