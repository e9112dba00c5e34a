//! The messages an ADS stream exchanges, whatever its protocol, as the
//! worker and the call pump pass them around.

use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};

/// A request on its way to the server.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Request {
    Sotw(DiscoveryRequest),
}

/// A response from the server.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Response {
    Sotw(DiscoveryResponse),
}

impl Request {
    pub fn type_url(&self) -> &str {
        match self {
            Request::Sotw(r) => &r.type_url,
        }
    }
}

impl Response {
    pub fn type_url(&self) -> &str {
        match self {
            Response::Sotw(r) => &r.type_url,
        }
    }
}
