//! `hold_connections` / `release_connections`: connections are accepted
//! but no bytes move on them until released.

use std::fmt;

/// Accept connections but move no bytes on them, new or open: the
/// client's connection never becomes ready (it never hears the server's
/// HTTP/2 preface), so its requests stay queued and are not "sent on a
/// connected stream" (A57). Held forever, this is a blackhole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldConnections;

/// Let held connections go on (the handshake completes, queued requests
/// arrive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseConnections;

impl fmt::Display for HoldConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("hold connections (no bytes move)")
    }
}

impl fmt::Display for ReleaseConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("release connections")
    }
}
