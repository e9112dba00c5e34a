//! The xds-conformance harness: scenario files, the runner that plays them
//! against fake ADS servers and a client under test on virtual time, the
//! timeline, expectations, and the glue to reports.
//!
//! It must not know any particular client's internals: clients are reached
//! only through the client-under-test interface.
//!
//! Its modules import each other in one direction (`tests/layering.rs`):
//! - the toolkit: `check` (positions, located errors, value parsers),
//!   `resource` (resource file forms and building them), `matcher` (what
//!   expectations look for, one module per kind), `step` (what a script
//!   does, one module per kind; steps play on a `step::Stage` and know
//!   nothing else of the runner), `timeline`, `clock` (virtual or real time);
//! - `scenario`: a file, loaded and checked with the toolkit. It must not
//!   know which clients exist (the caller says, `scenario::LoadOptions`);
//! - `invariant`: what every run must show whatever its script, each read
//!   over a run's timeline (chaos holds every run to them; a scenario
//!   states one with `expect_invariant`, which the runner checks);
//! - `runner`: plays a scenario against a client;
//! - `suite`, `matrix`, `schedule`: many runs, reports;
//! - `reference_docs`: the book's reference pages, from all of the above.

pub mod addresses;
pub mod bootstrap;
pub mod catalogue;
pub mod chaos;
pub mod check;
pub mod clock;
pub mod coverage;
pub mod defects;
pub mod differential;
pub mod expectations;
/// For the fuzz targets in `fuzz/` and their corpus replay test only.
#[doc(hidden)]
pub mod fuzzing;
pub mod interrupt;
pub mod invariant;
pub mod kds_bench;
pub mod matcher;
pub mod matrix;
pub mod peer_bench;
pub mod progress;
pub mod projection;
pub mod proxy;
pub mod reference_docs;
pub mod resource;
pub mod runner;
pub mod scaffold;
pub mod scenario;
pub mod schedule;
pub mod serve;
pub mod settle;
pub mod snapshot_files;
pub mod step;
pub mod suite;
pub mod testing;
pub mod timeline;
pub mod tls;
