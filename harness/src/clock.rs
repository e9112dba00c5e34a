//! The clock a run is on: virtual time (in-process clients, exact) or real
//! time (a client in another process). A leaf: the runner plays on it, and
//! what reads a run afterwards (the invariants) asks which it was.

use std::time::Duration;

/// Where and on which clock a scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunMode {
    /// In-process client, in-memory transport, paused (virtual) time.
    Virtual,
    /// A client in another process: real TCP on loopback, real time.
    RealTime,
}

impl RunMode {
    /// How late an expected event may be seen. Virtual time is exact. On
    /// real time the harness observes a client through processes, sockets
    /// and CSDS polls, so windows written for virtual time (`within: 0s`,
    /// `at: 15s`) get this much more; events are never accepted early.
    pub fn lateness(self) -> Duration {
        match self {
            RunMode::Virtual => Duration::ZERO,
            RunMode::RealTime => REAL_TIME_LATENESS,
        }
    }
}

/// See [`RunMode::lateness`]: above one CSDS poll
/// (the runner's `REAL_TIME_POLL`), well below the 1 s scale of
/// the timers under test.
pub const REAL_TIME_LATENESS: Duration = Duration::from_millis(300);
