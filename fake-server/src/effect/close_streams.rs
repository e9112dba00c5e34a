//! `close_streams`: every open stream ends now, with the fault's status.

use super::Verb;
use crate::fault::CloseStreams;
use crate::state::State;

impl Verb for CloseStreams {
    fn apply(&self, state: &mut State) {
        state.close_all_streams(self.code, &self.message);
    }
}
