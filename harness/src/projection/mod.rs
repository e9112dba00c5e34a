//! Projections: what a scenario asks of a client that lacks the means to
//! show it, read off what the client does show, where that is exact.
//!
//! - [`watch`]: watches, on a client without a watch API, through
//!   channels whose config makes it watch exactly that resource (C-core
//!   through grpcio).
//! - [`csds_counts`]: `csds` checks, on a client without CSDS, through
//!   gRFC A78's resource gauge (grpc-rust).
//! - [`csds_admin`]: `csds` checks, on a client without CSDS, through its
//!   admin API (Envoy's config dump and counters).
//! - [`wildcard`]: requests naming Listeners and Clusters, on a client that
//!   always subscribes to all of them (Envoy): met only as a recorded
//!   divergence.
//!
//! A projection that cannot tell the scenario's resource apart from others
//! makes the run not applicable; it never loosens a check (one that can
//! only be read approximately is at best a divergence).

pub mod csds_admin;
pub mod csds_counts;
pub mod watch;
pub mod wildcard;

pub use watch::{Plan, SCAFFOLD, TARGET, plan};
