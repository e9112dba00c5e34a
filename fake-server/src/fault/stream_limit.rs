//! `close_streams_after` / `keep_streams`: from now on every ADS stream is
//! closed with a status once it has been sent N responses, until
//! `keep_streams`.

use std::fmt;

use tonic::Code;

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
