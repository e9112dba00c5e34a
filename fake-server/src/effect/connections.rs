//! `refuse_connections` / `accept_connections`: the state says whether
//! in-memory connections are admitted; TCP listening sockets close and
//! re-bind.

use super::{Outside, Verb};
use crate::fault::{AcceptConnections, FaultError, RefuseConnections};
use crate::state::State;

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
