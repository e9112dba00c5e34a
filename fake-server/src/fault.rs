//! Faults a scenario can apply to a fake server.
//!
//! A fault is plain data: applying it is the server's business
//! ([`crate::FakeAdsServer::apply`]), and every applied fault is itself
//! recorded as [`crate::event::ServerEvent::FaultApplied`], so a timeline shows
//! what was done to the server next to what the client did about it.
//!
//! GOAWAY is a server setting, not a fault (`MaxConnectionAge`).

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
    /// Keep streams open and requests recorded, but send nothing by
    /// itself (auto mode) for `type_url`, or for every type if `None`.
    /// Scripted sends still go out: the scenario asked for them.
    Hang { type_url: Option<String> },
    /// End every hang; auto mode then answers what it owes at once.
    Resume,
    /// From now on close every stream, with this status, once it has been
    /// sent `responses` responses; 0 closes each stream at its first
    /// request, before any response (A57: a stream that fails before a
    /// response is a connectivity error; after one it is not).
    CloseStreamsAfter {
        responses: u32,
        code: tonic::Code,
        message: String,
    },
    /// Stop closing streams (ends `CloseStreamsAfter`).
    KeepStreams,
    /// The server process restarts: every stream ends (UNAVAILABLE) and
    /// every connection is dropped, so stream state (nonces, what was
    /// sent) is lost; the store is kept or emptied. Whether it listens
    /// again at once is up to `RefuseConnections` (a restart that takes a
    /// while is `refuse_connections`, `restart`, later `accept_connections`).
    Restart { keep_resources: bool },
    /// Accept connections but move no bytes on them, new or open: the
    /// client's connection never becomes ready (it never hears the
    /// server's HTTP/2 preface), so its requests stay queued and are not
    /// "sent on a connected stream" (A57). Held forever, this is a
    /// blackhole.
    HoldConnections,
    /// Let held connections go on (the handshake completes, queued
    /// requests arrive).
    ReleaseConnections,
    /// Hold every response back for `by` before it goes out (recorded as
    /// sent when it does); zero ends the delay (held ones still wait).
    DelayResponses { by: std::time::Duration },
    /// Lose the next `count` responses (of `type_url`, or of any type):
    /// the server does all it would do to send them (nonce, auto-mode
    /// bookkeeping) but they never reach the wire, as if lost in transit.
    DropResponses {
        count: u32,
        type_url: Option<String>,
    },
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
