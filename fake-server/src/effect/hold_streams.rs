//! `hold_streams` / `release_streams`: the stream-hold signal every
//! connection's gate watches (`shared::Inner::hold_streams`).

use super::{Outside, Verb};
use crate::fault::{FaultError, HoldStreams, ReleaseStreams};
use crate::state::State;

impl Verb for HoldStreams {
    /// Nothing in the state: each connection's gate watches the signal.
    fn apply(&self, _state: &mut State) {}

    fn apply_outside(&self, server: &Outside<'_>) -> Result<(), FaultError> {
        server.inner.hold_streams(true);
        Ok(())
    }
}

impl Verb for ReleaseStreams {
    fn apply(&self, _state: &mut State) {}

    fn apply_outside(&self, server: &Outside<'_>) -> Result<(), FaultError> {
        server.inner.hold_streams(false);
        Ok(())
    }
}
