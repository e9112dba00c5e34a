//! How many client processes start at once, across every run of this
//! harness process.
//!
//! A real client's run mostly waits, so the matrix runs many at once (each
//! client its own `jobs`); what does not overlap well is starting one. A
//! JVM takes a core for a few hundred milliseconds, Envoy and Node for
//! less, and when every column of a matrix starts its first runs in the
//! same instant, forty processes share two cores: the runs already under
//! way see their client answer seconds late, and fail on the machine's
//! load, not on the client. So a process start (from spawn until the
//! client says it is ready: an adapter's `hello`, Envoy's admin address)
//! takes one of as many permits as the machine has cores. A run that
//! waits for a permit has not started its client yet: its steps, and so
//! its windows, come after.

use std::sync::LazyLock;

use tokio::sync::{Semaphore, SemaphorePermit};

/// One permit per core (at least one).
static STARTING: LazyLock<Semaphore> = LazyLock::new(|| {
    Semaphore::new(std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
});

/// Waits for a turn to start a client process; the turn ends when the
/// permit is dropped. tokio's semaphore belongs to no runtime, so runs on
/// their own runtimes share it; waiting is cancellable (an interrupted run
/// drops the future).
pub(crate) async fn turn() -> SemaphorePermit<'static> {
    STARTING
        .acquire()
        .await
        .expect("the start semaphore is never closed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_more_starts_at_once_than_cores_and_a_turn_ends_when_dropped() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let mut held = Vec::new();
        for _ in 0..cores {
            held.push(turn().await);
        }
        assert!(
            STARTING.try_acquire().is_err(),
            "a start past the cores must wait"
        );
        held.pop();
        let next = tokio::time::timeout(std::time::Duration::from_secs(5), turn()).await;
        assert!(next.is_ok(), "a dropped turn lets the next start");
    }
}
