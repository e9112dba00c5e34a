//! `refuse_connections` / `accept_connections`: whether the server takes
//! new connections. Open ones are untouched either way.

use std::fmt;

use super::{FaultError, Outside, Verb};
use crate::state::State;

/// Stop accepting new connections; open ones are untouched. In memory,
/// `MemoryNetwork::connect` fails with `ConnectionRefused` (and the server
/// records it); on TCP the listening socket is closed, so the kernel
/// refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefuseConnections;

/// Accept connections again (TCP: re-bind the same address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptConnections;

impl Verb for RefuseConnections {
    fn apply(&self, state: &mut State) {
        state.faults.refusing = true;
    }

    fn apply_outside(&self, server: &Outside<'_>) -> Result<(), FaultError> {
        for gate in server.tcp {
            gate.close();
        }
        Ok(())
    }
}

impl Verb for AcceptConnections {
    fn apply(&self, state: &mut State) {
        state.faults.refusing = false;
    }

    /// Every listener listens again; the last that cannot is reported.
    fn apply_outside(&self, server: &Outside<'_>) -> Result<(), FaultError> {
        let mut result = Ok(());
        for gate in server.tcp {
            if let Err(source) = gate.reopen() {
                result = Err(FaultError::Rebind {
                    address: gate.address(),
                    source,
                });
            }
        }
        result
    }
}

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
