//! Faults a scenario can apply to a fake server.
//!
//! A fault is plain data: applying it is the server's business
//! ([`crate::FakeAdsServer::apply`]), and every applied fault is itself
//! recorded as [`crate::event::ServerEvent::FaultApplied`], so a timeline shows
//! what was done to the server next to what the client did about it.
//!
//! New verbs (blackhole, hang, delay, drop, GOAWAY, restart, hold sends) slot
//! in here as new variants.

/// A fault to apply to one fake server.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Close every open ADS stream with this gRPC status. The client sees
    /// exactly this code and message in the trailers. Connections stay up.
    CloseStreams { code: tonic::Code, message: String },
    /// Stop accepting new connections; open ones are untouched. In memory,
    /// `MemoryNetwork::connect` fails with `ConnectionRefused` (and the
    /// server records it); on TCP the listening socket is closed, so the
    /// kernel refuses.
    RefuseConnections,
    /// Accept connections again (TCP: re-bind the same address).
    AcceptConnections,
}

/// Applying a fault did not fully take effect.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// `AcceptConnections` could not listen again on a TCP address (another
    /// process took the port in between, say). The fault is still recorded
    /// and in-memory listeners accept again.
    #[error("could not listen again on {address}: {source}")]
    Rebind {
        address: std::net::SocketAddr,
        source: std::io::Error,
    },
}
