//! A client's conformance tests: every scenario of the suite is a test
//! here, on a fresh client each run, held to this crate's own
//! expectations (`expectations.yaml`). A real client's crate makes its
//! own client instead of the reference one (implementing
//! `xds_client_under_test::ClientUnderTest`; see `xds_conformance::testing`
//! for what virtual time asks of it).
//!
//! `cargo test -p xds-conformance-example -- a46/` runs one folder.

use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::testing::Conformance;

fn main() {
    Conformance::new(|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>)
        .expectations(concat!(env!("CARGO_MANIFEST_DIR"), "/expectations.yaml"))
        .run()
}
