//! `restart`: the server process restarts.

use std::fmt;

/// The server process restarts: every stream ends (UNAVAILABLE) and every
/// connection is dropped, so stream state (nonces, what was sent) is lost;
/// the store is kept or emptied. Whether it listens again at once is up to
/// `RefuseConnections` (a restart that takes a while is
/// `refuse_connections`, `restart`, later `accept_connections`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restart {
    pub keep_resources: bool,
}

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.keep_resources {
            f.write_str("restart (resources kept)")
        } else {
            f.write_str("restart (resources lost)")
        }
    }
}
