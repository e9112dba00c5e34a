//! `hold_connections` / `release_connections`: the hold signal every
//! connection watches (`shared::Inner::hold_connections`).

use super::{Outside, Verb};
use crate::fault::{FaultError, HoldConnections, ReleaseConnections};
use crate::state::State;

impl Verb for HoldConnections {
    /// Nothing in the state: connections watch the hold signal.
    fn apply(&self, _state: &mut State) {}

    fn apply_outside(&self, server: &Outside<'_>) -> Result<(), FaultError> {
        server.inner.hold_connections(true);
        Ok(())
    }
}

impl Verb for ReleaseConnections {
    fn apply(&self, _state: &mut State) {}

    fn apply_outside(&self, server: &Outside<'_>) -> Result<(), FaultError> {
        server.inner.hold_connections(false);
        Ok(())
    }
}
