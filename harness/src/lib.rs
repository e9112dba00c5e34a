//! The xds-conformance harness: scenario files, the runner that plays them
//! against fake ADS servers and a client under test on virtual time, the
//! timeline, expectations, and the glue to reports.
//!
//! It must not know any particular client's internals: clients are reached
//! only through the client-under-test interface.

pub mod addresses;
pub mod bootstrap;
pub mod check;
pub mod differential;
/// For the fuzz targets in `fuzz/` and their corpus replay test only.
#[doc(hidden)]
pub mod fuzzing;
pub mod interrupt;
pub mod matcher;
pub mod matrix;
pub mod peer_bench;
pub mod progress;
pub mod proxy;
pub mod resource;
pub mod runner;
pub mod scenario;
pub mod schedule;
pub mod serve;
pub mod settle;
pub mod suite;
pub mod timeline;
pub mod tls;
