//! `close_streams_after` / `keep_streams`: the limit in force
//! (`in_force::StreamLimit`), which the egress path checks after every
//! response and request (`State::limit_reached`).

use super::Verb;
use crate::fault::{CloseStreamsAfter, KeepStreams};
use crate::in_force::StreamLimit;
use crate::state::State;

impl Verb for CloseStreamsAfter {
    /// Streams already past the limit are closed now; only streams that
    /// have been asked something: a stream that sent no request yet is
    /// closed at its first one.
    fn apply(&self, state: &mut State) {
        state.faults.stream_limit = Some(StreamLimit {
            responses: self.responses,
            code: self.code,
            message: self.message.clone(),
        });
        let ids: Vec<u64> = state
            .streams
            .iter()
            .filter(|(_, s)| s.asked_anything())
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            state.limit_reached(id);
        }
    }
}

impl Verb for KeepStreams {
    fn apply(&self, state: &mut State) {
        state.faults.stream_limit = None;
    }
}
