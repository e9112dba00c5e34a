//! How a fake server is set up and what a scenario hands it: plain data
//! that every other module may read.

use std::sync::Arc;

use crate::event::{Recorded, ServerEvent};
use crate::resource::ServedResource;

/// How a server is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Names the server in every event it records.
    pub name: String,
    pub mode: ServingMode,
}

/// Whether a server answers by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServingMode {
    /// Behaves like a normal control plane: answers requests and pushes
    /// store changes (see each protocol's `rules` module).
    Auto,
    /// Never answers by itself; only [`crate::FakeAdsServer::send_response`] sends.
    Scripted,
}

/// Called synchronously, in recording order, for every event recorded after
/// it is set. It may call back into the server.
pub type EventObserver = Arc<dyn Fn(&Recorded<ServerEvent>) + Send + Sync>;

/// gRPC's MAX_CONNECTION_AGE: each connection gets a GOAWAY once it is
/// `age` old, and is closed `grace` later if streams are still open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxConnectionAge {
    pub age: std::time::Duration,
    pub grace: std::time::Duration,
}

/// A response a scenario sends by hand.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedResponse {
    pub type_url: String,
    /// `None`: the type's current store version.
    pub version_info: Option<String>,
    /// `None`: the server's next nonce (a fresh one per stream).
    pub nonce: Option<String>,
    /// Sent as given: any subset, extras, duplicates, invalid entries.
    pub resources: Vec<ServedResource>,
}
