//! `hold_streams` / `release_streams`: connections stay up, but the
//! server admits no new stream until released.

use std::fmt;

/// Tell every client, on its open connections and on new ones, that the
/// server admits no new stream (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS
/// 0): the connection stays READY, the streams already open go on, and a
/// stream the client starts waits in the client, unsent (gRFC A57: it is
/// not "being sent", so no does-not-exist timer should start on it).
/// Effective on connections the client has read the server's settings
/// on (see the fake server's `stream_gate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldStreams;

/// Admit streams again (the server's own limit, or none): the streams
/// clients held back open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseStreams;

impl fmt::Display for HoldStreams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("hold streams (no new stream admitted)")
    }
}

impl fmt::Display for ReleaseStreams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("release streams")
    }
}
