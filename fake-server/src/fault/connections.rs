//! `refuse_connections` / `accept_connections`: whether the server takes
//! new connections. Open ones are untouched either way.

use std::fmt;

/// Stop accepting new connections; open ones are untouched. In memory,
/// `MemoryNetwork::connect` fails with `ConnectionRefused` (and the server
/// records it); on TCP the listening socket is closed, so the kernel
/// refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefuseConnections;

/// Accept connections again (TCP: re-bind the same address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptConnections;

impl fmt::Display for RefuseConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("refuse connections")
    }
}

impl fmt::Display for AcceptConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("accept connections")
    }
}
