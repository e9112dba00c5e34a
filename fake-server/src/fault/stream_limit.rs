//! `close_streams_after` / `keep_streams`: from now on every ADS stream is
//! closed with a status once it has been sent N responses, until
//! `keep_streams`.

use std::fmt;

use tonic::Code;

use super::Verb;
use crate::state::State;

/// From now on close every stream, with this status, once it has been
/// sent `responses` responses; 0 closes each stream at its first request,
/// before any response (A57: a stream that fails before a response is a
/// connectivity error; after one it is not).
#[derive(Clone, Debug, PartialEq)]
pub struct CloseStreamsAfter {
    pub responses: u32,
    pub code: Code,
    pub message: String,
}

/// Stop closing streams (ends `CloseStreamsAfter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepStreams;

/// Streams are closed with `code`/`message` after `responses` responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamLimit {
    pub responses: u32,
    pub code: Code,
    pub message: String,
}

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

impl State {
    /// Closes the stream if `close_streams_after` says its time has come;
    /// says whether it did.
    pub fn limit_reached(&mut self, stream_id: u64) -> bool {
        let Some(limit) = self.faults.stream_limit.clone() else {
            return false;
        };
        let sent = match self.streams.get(&stream_id) {
            Some(stream) => stream.responses_sent,
            None => return false,
        };
        if sent < limit.responses {
            return false;
        }
        self.close_stream(stream_id, limit.code, limit.message, false);
        true
    }
}

impl fmt::Display for CloseStreamsAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "close every stream after {} response(s) with {}",
            self.responses,
            super::status_text(self.code, &self.message)
        )
    }
}

impl fmt::Display for KeepStreams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("keep streams open")
    }
}
