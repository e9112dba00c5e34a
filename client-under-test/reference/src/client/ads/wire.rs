//! The messages an ADS stream exchanges, whatever its protocol, as the
//! worker and the call pump pass them around.

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};

/// A request on its way to the server.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Request {
    Sotw(DiscoveryRequest),
    Delta(DeltaDiscoveryRequest),
}

/// A response from the server.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Response {
    Sotw(DiscoveryResponse),
    Delta(DeltaDiscoveryResponse),
}

impl Request {
    pub fn type_url(&self) -> &str {
        match self {
            Request::Sotw(r) => &r.type_url,
            Request::Delta(r) => &r.type_url,
        }
    }
}

impl Response {
    pub fn type_url(&self) -> &str {
        match self {
            Response::Sotw(r) => &r.type_url,
            Response::Delta(r) => &r.type_url,
        }
    }
}
