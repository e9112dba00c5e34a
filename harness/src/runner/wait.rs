//! Letting time pass: checkpoints (everything due at an instant has
//! happened and CSDS is polled), the one loop that goes from checkpoint to
//! checkpoint until something is seen or a deadline passes, and the
//! windows expectations are given.

use std::time::Duration;

use tokio::time::Instant;

use super::{Player, RunMode};
use crate::step::Window;
use crate::timeline::Timeline;

/// How often an external client's CSDS is polled while nothing happens.
pub(super) const REAL_TIME_POLL: Duration = Duration::from_millis(200);

impl Player {
    /// Lets everything due at this instant happen, then polls CSDS.
    pub(super) async fn checkpoint(&mut self) {
        loop {
            self.idle.idle().await;
            let before = self.timeline.len();
            // Timers due right now fire when the driver runs, which a yield
            // allows without advancing the clock.
            tokio::task::yield_now().await;
            self.idle.idle().await;
            if self.timeline.len() == before {
                break;
            }
        }
        self.poll_csds().await;
    }

    /// Goes from checkpoint to checkpoint, one at every instant where
    /// something happens (and on real time every [`REAL_TIME_POLL`]), and
    /// at each gives `look` the player: returns what `look` first finds,
    /// or `None` once a checkpoint at or after `deadline` found nothing.
    /// `look` sees the state after the checkpoint; what to do with it is
    /// the caller's.
    pub(super) async fn wait_until<T>(
        &mut self,
        deadline: Instant,
        mut look: impl FnMut(&Self) -> Option<T>,
    ) -> Option<T> {
        loop {
            self.checkpoint().await;
            if let Some(found) = look(self) {
                return Some(found);
            }
            if Instant::now() >= deadline {
                return None;
            }
            wait_for_activity(&self.timeline, deadline, self.mode).await;
        }
    }

    /// Advances virtual time to `deadline`, stopping at every instant where
    /// something happens so CSDS is polled there.
    pub(super) async fn run_until(&mut self, deadline: Instant) {
        self.wait_until(deadline, |_| None::<()>).await;
    }
}

/// Returns when something is recorded on the timeline, or at `until`.
/// On real time it also returns every [`REAL_TIME_POLL`]: an external
/// client's state (its CSDS) changes without telling the harness.
async fn wait_for_activity(timeline: &Timeline, until: Instant, mode: RunMode) {
    let until = match mode {
        RunMode::Virtual => until,
        RunMode::RealTime => until.min(Instant::now() + REAL_TIME_POLL),
    };
    tokio::select! {
        biased;
        _ = timeline.changed() => {}
        _ = tokio::time::sleep_until(until) => {}
    }
}

/// The latest time (since the start) an expectation may be met, and the
/// exact time it must be met at, for `at:` windows.
pub(super) fn window_bounds(
    window: Window,
    began: Duration,
    lateness: Duration,
) -> (Duration, Option<Duration>) {
    match window {
        Window::Within(d) => (began + d + lateness, None),
        Window::At(t) => ((t + lateness).max(began), Some(t)),
    }
}

/// Whether something seen at `seen` meets an `at: t` window: exactly (to
/// the millisecond) on virtual time, never early and at most `lateness`
/// late on real time.
pub(super) fn on_time(seen: Duration, t: Duration, lateness: Duration) -> bool {
    let (seen, t) = (seen.as_millis(), t.as_millis());
    seen >= t && seen <= t + lateness.as_millis()
}

pub(super) fn describe_lateness(lateness: Duration) -> String {
    if lateness.is_zero() {
        String::new()
    } else {
        format!(" (up to {}ms late on real time)", lateness.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn virtual_time_windows_are_exact() {
        let lateness = RunMode::Virtual.lateness();
        assert!(on_time(MS(15_000), MS(15_000), lateness));
        assert!(!on_time(MS(15_001), MS(15_000), lateness));
        assert!(!on_time(MS(14_999), MS(15_000), lateness));
        assert_eq!(
            window_bounds(Window::Within(MS(0)), MS(3), lateness),
            (MS(3), None)
        );
    }

    #[test]
    fn real_time_windows_allow_lateness_never_earliness() {
        let lateness = RunMode::RealTime.lateness();
        assert!(on_time(MS(15_008), MS(15_000), lateness));
        assert!(on_time(MS(15_300), MS(15_000), lateness));
        assert!(!on_time(MS(15_301), MS(15_000), lateness));
        assert!(!on_time(MS(14_999), MS(15_000), lateness));
        assert_eq!(
            window_bounds(Window::Within(MS(0)), MS(3), lateness),
            (MS(303), None)
        );
        assert_eq!(
            window_bounds(Window::At(MS(15_000)), MS(3), lateness),
            (MS(15_300), Some(MS(15_000)))
        );
    }
}
