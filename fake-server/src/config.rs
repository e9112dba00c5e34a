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
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptedResponse {
    pub type_url: String,
    /// `None`: the type's current store version.
    pub version_info: Option<String>,
    /// `None`: the server's next nonce (a fresh one per stream).
    pub nonce: Option<String>,
    /// Sent as given: any subset, extras, duplicates, invalid entries.
    pub resources: Vec<ServedResource>,
    /// `resource_errors` (xRFC TP3), as given.
    pub resource_errors: Vec<ScriptedResourceError>,
}

/// A per-resource error a server reports in a response (xRFC TP3's
/// `ResourceError`): what gRFC A88 clients read as a data error (NOT_FOUND,
/// PERMISSION_DENIED) or a transient one (any other code).
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedResourceError {
    /// `None` sends the error without a `resource_name` (a malformed one).
    pub name: Option<String>,
    /// `error_detail.code`; `None` sends no `error_detail` at all.
    pub code: Option<i32>,
    pub message: String,
}

impl ScriptedResourceError {
    /// The wire form.
    pub fn to_proto(&self) -> envoy_types::pb::envoy::service::discovery::v3::ResourceError {
        use envoy_types::pb::envoy::service::discovery::v3::{ResourceError, ResourceName};
        ResourceError {
            resource_name: self.name.as_ref().map(|name| ResourceName {
                name: name.clone(),
                ..Default::default()
            }),
            error_detail: self.code.map(|code| envoy_types::pb::google::rpc::Status {
                code,
                message: self.message.clone(),
                details: Vec::new(),
            }),
        }
    }
}

/// A delta response a scenario sends by hand.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptedDeltaResponse {
    pub type_url: String,
    /// `None`: the type's current store version.
    pub system_version_info: Option<String>,
    /// `None`: the server's next nonce (a fresh one per stream).
    pub nonce: Option<String>,
    /// Sent as given, in this order: any subset, extras, duplicates,
    /// invalid entries, entries without a body.
    pub resources: Vec<ScriptedDeltaResource>,
    /// `removed_resources`, as given.
    pub removed: Vec<String>,
    /// `resource_errors` (xRFC TP3), as given.
    pub resource_errors: Vec<ScriptedResourceError>,
}

/// One `Resource` of a scripted delta response.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedDeltaResource {
    pub name: String,
    /// `None`: the store's version of the resource, or else the response's
    /// system version.
    pub version: Option<String>,
    /// The body; `None` sends a `Resource` without one.
    pub entry: Option<envoy_types::pb::google::protobuf::Any>,
    pub ttl: Option<std::time::Duration>,
}

impl ScriptedDeltaResource {
    /// A served resource with its name and body, the version left to the
    /// store.
    pub fn from_served(resource: ServedResource) -> Self {
        Self {
            name: resource.name,
            version: None,
            entry: Some(resource.entry),
            ttl: None,
        }
    }
}

/// A `DeltaDiscoveryRequest` the global sends by hand on Kuma's
/// `ZoneToGlobalSync` (where the zone answers): a subscription, an ACK or
/// a NACK. `node.id` is the zone's `client-id`, as Kuma's global sets it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptedKdsRequest {
    /// The bare Kuma type name (`Dataplane`).
    pub type_url: String,
    pub subscribe: Vec<String>,
    pub unsubscribe: Vec<String>,
    /// `None`: the nonce of the last response of the type the zone sent on
    /// each stream (empty if none); `Some`: as given.
    pub response_nonce: Option<String>,
    /// `error_detail` as `(code, message)`: a NACK.
    pub error_detail: Option<(i32, String)>,
}
