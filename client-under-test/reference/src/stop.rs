//! A spawned task's stop switch: the handle a caller keeps, and dropping it
//! stops the task (a dial's resolver, an xDS-enabled server's watches).

use tokio::sync::oneshot;

/// Stops its task when dropped.
#[derive(Debug)]
pub struct StopOnDrop {
    stop: Option<oneshot::Sender<()>>,
}

impl StopOnDrop {
    /// The handle, and what the task awaits: it resolves when the handle
    /// is dropped.
    pub fn new() -> (StopOnDrop, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (StopOnDrop { stop: Some(tx) }, rx)
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // The task may be gone already: nothing left to stop.
            let _ = stop.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_the_handle_resolves_the_receiver() {
        let (handle, mut stopped) = StopOnDrop::new();
        assert!(stopped.try_recv().is_err());
        drop(handle);
        assert_eq!(stopped.try_recv(), Ok(()));
    }
}
