//! Nothing here: the example is its test, `tests/conformance.rs`: a Rust
//! xDS client's conformance tests, kept in its own crate, running every
//! scenario of the suite as a test of its own `cargo test`.
