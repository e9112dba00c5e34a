//! Why a run stops before its script ends: its scenario-time limit, its
//! wall-clock limit, a full timeline, or an interrupt. Each is a future
//! the player races against the script; the first to finish decides the
//! verdict, and the player then shuts the client and servers down as
//! after any run, so the timeline so far is kept and reported.

use std::sync::mpsc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use xds_conformance_reports::Verdict;

use crate::check::duration::format_duration_in_units;
use crate::scenario::limits::Limits;
use crate::timeline::Timeline;

/// Scenario time past the file's limit before a run is stopped: the loader
/// already rejects scripts that can exceed it, so the runtime limit is a
/// backstop for what the script cannot bound (a client command that never
/// returns), with room for the settling after the last step.
pub const RUNTIME_MARGIN: Duration = Duration::from_secs(60);

/// The wall clock of one run, watched from a thread of its own: a run on
/// a paused clock that stops advancing it (a flood of events at one
/// instant) is still stopped. Dropping the watch ends its thread.
pub struct WallClock {
    expired: CancellationToken,
    _done: mpsc::Sender<()>,
}

impl WallClock {
    pub fn start(limit: Duration) -> WallClock {
        let expired = CancellationToken::new();
        let (done, finished) = mpsc::channel::<()>();
        let token = expired.clone();
        let watcher = std::thread::Builder::new()
            .name("wall-clock".into())
            .spawn(move || {
                // Disconnected (the run is over) or timed out.
                if let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(limit) {
                    token.cancel();
                }
            });
        if watcher.is_err() {
            // No thread to spare: the limit cannot be watched, which must
            // not stop the run itself.
            eprintln!("warning: cannot start the wall-clock watch of a run");
        }
        WallClock {
            expired,
            _done: done,
        }
    }

    pub fn token(&self) -> CancellationToken {
        self.expired.clone()
    }
}

/// Resolves with the verdict of a run stopped early, when one of the
/// reasons comes first.
pub async fn stopped(
    limits: Limits,
    wall: CancellationToken,
    interrupt: CancellationToken,
    timeline: Timeline,
) -> Verdict {
    tokio::select! {
        _ = tokio::time::sleep(limits.virtual_time + RUNTIME_MARGIN) => Verdict::Error {
            message: format!(
                "stopped: the run went past its scenario-time limit of {} (and {} of settling)",
                format_duration_in_units(limits.virtual_time),
                format_duration_in_units(RUNTIME_MARGIN),
            ),
        },
        _ = wall.cancelled() => Verdict::Error {
            message: format!(
                "stopped: the run went past its wall-clock limit of {} (raise it with \
                 `limits: {{wall_time: ...}}` in the file, or --wall-limit)",
                format_duration_in_units(limits.wall_time),
            ),
        },
        full = timeline.overflowed() => Verdict::Error {
            message: format!(
                "stopped: the timeline reached its limit of {full} (a client flooding the \
                 harness, or reconnecting with large requests?)"
            ),
        },
        _ = interrupt.cancelled() => Verdict::Interrupted {
            message: "stopped by an interrupt while running".into(),
        },
    }
}
