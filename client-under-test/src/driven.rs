//! The client an adapter's manifest names, by its driver: a process
//! speaking the adapter protocol, Envoy, or a Kuma zone. The one place a
//! `Driver` becomes a client, so that a new driver is a line here.

use std::path::Path;

use crate::{AdapterManifest, ClientUnderTest, Driver, EnvoyClient, KumaZoneClient, ProcessClient};

/// A fresh client of the adapter whose manifest is `manifest`, its
/// relative paths resolved against `root`.
pub fn driven(root: &Path, manifest: AdapterManifest) -> Box<dyn ClientUnderTest> {
    match manifest.driver {
        Driver::Adapter => Box::new(ProcessClient::new(root, manifest)),
        Driver::Envoy => Box::new(EnvoyClient::new(root, manifest)),
        Driver::Kuma => Box::new(KumaZoneClient::new(root, manifest)),
    }
}
