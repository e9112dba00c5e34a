//! Read flow control on an ADS stream (gRPC's `ReadDelayHandle`): the
//! stream does not read its next response while a handle of the last one
//! is alive. Every watcher notification a response causes carries one; a
//! watcher that has work to finish first keeps it (a clone) until done.
//! Without that, a slow consumer would let a fast server queue unbounded
//! updates in the client.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Holds the stream's next read while it (or a clone) is alive.
#[derive(Clone, Debug, Default)]
pub struct ReadDelayHandle(Option<Arc<OwnedSemaphorePermit>>);

impl ReadDelayHandle {
    /// Holds nothing: for notifications no response caused (a timer, a
    /// connectivity failure, a new watcher's cached value).
    pub fn no_wait() -> Self {
        ReadDelayHandle(None)
    }

    /// Whether it holds a read.
    pub fn holds_a_read(&self) -> bool {
        self.0.is_some()
    }
}

/// One stream's reads: a read needs the gate's one permit, and the permit
/// goes with the response it read until every handle of it is dropped.
pub(crate) struct ReadGate(Arc<Semaphore>);

impl ReadGate {
    pub fn new() -> Self {
        ReadGate(Arc::new(Semaphore::new(1)))
    }

    /// Waits until no handle of the previous response is alive.
    pub async fn ready(&self) -> OwnedSemaphorePermit {
        self.0
            .clone()
            .acquire_owned()
            .await
            .expect("the gate's semaphore is never closed")
    }
}

/// The handle of a response read with `permit`.
pub(crate) fn handle(permit: OwnedSemaphorePermit) -> ReadDelayHandle {
    ReadDelayHandle(Some(Arc::new(permit)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_next_read_waits_for_every_clone() {
        let gate = ReadGate::new();
        let first = handle(gate.ready().await);
        let kept = first.clone();
        drop(first);
        let mut next = tokio_test::task::spawn(gate.ready());
        assert!(next.poll().is_pending(), "a clone still holds the read");
        drop(kept);
        assert!(next.is_woken());
        assert!(next.poll().is_ready());
        assert!(!ReadDelayHandle::no_wait().holds_a_read());
    }
}
