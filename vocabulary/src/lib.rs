//! The vocabulary every part of xds-conformance shares: a client's
//! bootstrap as data (and the certificates its TLS credentials name), the
//! xDS resource
//! types and their type URLs, gRPC status codes and the error watchers
//! hear, how a request relates to the responses before it, the events a
//! client reports about itself, how text from outside is cut to size, digests in hex, the `envoy.service.discovery.v3.Resource`
//! codec, Kuma's KDS (its service, names and resource envelope: `kds`),
//! and the byte-stream transports (TCP and the in-memory network
//! that lets a whole scenario run on virtual time).
//!
//! It is a leaf: it must not know about any implementation (the reference
//! client's cache, the fake server's streams, the harness's scenarios).
//! Whatever two of them need to agree on lives here, once.

pub mod bootstrap;
pub mod certificates;
pub mod client_event;
pub mod codec;
pub mod cut;
pub mod data_plane;
pub mod files;
pub mod hex;
pub mod http2;
pub mod kds;
pub mod network;
pub mod protocol;
pub mod request_kind;
pub mod resource_type;
pub mod status;
pub mod transport;

pub use bootstrap::{
    AuthorityConfig, BootstrapConfig, ChannelCredentials, ClientBootstrap, IdentityFiles,
    NodeConfig, TlsCredentials, XdsServerConfig,
};
pub use client_event::{CallService, ClientEvent, LogLevel};
pub use protocol::AdsProtocol;
pub use request_kind::RequestKind;
pub use resource_type::ResourceType;
pub use status::{XdsError, code_from_name, code_name};
