//! `restart`: streams are dropped without trailers, the store maybe
//! emptied, then every connection is reset.

use super::{Outside, Verb};
use crate::fault::{FaultError, Restart};
use crate::state::State;

impl Verb for Restart {
    fn apply(&self, state: &mut State) {
        state.drop_all_streams("server restarting: no trailers, connection reset");
        if !self.keep_resources {
            for change in state.store.clear() {
                state.record(change.into_event());
            }
        }
    }

    fn apply_outside(&self, server: &Outside<'_>) -> Result<(), FaultError> {
        server.inner.reset_connections();
        Ok(())
    }
}
