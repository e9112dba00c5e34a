//! What a `FakeAdsServer` handle, its tonic service and its listeners
//! share: the state behind one lock and the one way to change it, plus the
//! signals that reach connections without taking that lock (shutdown,
//! restart, hold).
//!
//! The observer is called only after the lock is released, so it may call
//! back into the server; a dispatch flag keeps its calls in recording
//! order even then.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use crate::config::{EventObserver, ServingMode};
use crate::connection::ServerConnection;
use crate::event::{Recorded, ServerEvent};
use crate::state::State;

pub(crate) struct Inner {
    pub name: String,
    state: Mutex<State>,
    /// Flips to true once, on shutdown; tonic servers watch it.
    shutdown: watch::Sender<bool>,
    /// Bumped by `Fault::Restart`: every connection accepted before fails.
    resets: watch::Sender<u64>,
    /// True while `Fault::HoldConnections` is in force.
    holds: watch::Sender<bool>,
    /// True while `Fault::HoldStreams` is in force (see `stream_gate`).
    stream_holds: watch::Sender<bool>,
    /// Wakes the delayer task when a delayed response is queued.
    pub delay_wakeup: Arc<tokio::sync::Notify>,
}

impl Inner {
    pub fn new(name: String, mode: ServingMode) -> Self {
        Self {
            state: Mutex::new(State::new(name.clone(), mode)),
            name,
            shutdown: watch::Sender::new(false),
            resets: watch::Sender::new(0),
            holds: watch::Sender::new(false),
            stream_holds: watch::Sender::new(false),
            delay_wakeup: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Runs `change` under the state lock, then hands whatever it recorded to
    /// the observer. Every change goes through here.
    pub fn update<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        let (result, wake) = {
            let mut state = self.lock();
            let result = change(&mut state);
            (result, std::mem::take(&mut state.faults.delay.changed))
        };
        if wake {
            self.delay_wakeup.notify_one();
        }
        self.deliver();
        result
    }

    /// Reads the state without recording anything.
    pub fn read<R>(&self, read: impl FnOnce(&State) -> R) -> R {
        read(&self.lock())
    }

    pub fn events(&self) -> Vec<Recorded<ServerEvent>> {
        self.lock().recording.events.clone()
    }

    pub fn set_observer(&self, observer: EventObserver) {
        self.lock().recording.observer = Some(observer);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Only the observer runs foreign code, and it runs outside the lock;
        // a poisoned lock therefore means a bug here, and the state is still
        // the best record of what happened.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands queued events to the observer, one at a time, in order. If
    /// another caller (another thread, or the observer itself calling back
    /// into the server) is already delivering, it will deliver ours too.
    fn deliver(&self) {
        {
            let mut state = self.lock();
            let recording = &mut state.recording;
            if recording.delivering || recording.undelivered.is_empty() {
                return;
            }
            recording.delivering = true;
        }
        // Should the observer panic, let the next update deliver again.
        struct Reset<'a>(&'a Inner, bool);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.lock().recording.delivering = false;
                }
            }
        }
        let mut reset = Reset(self, true);
        loop {
            let next = {
                let mut state = self.lock();
                let recording = &mut state.recording;
                match recording.undelivered.pop_front() {
                    Some(event) => (event, recording.observer.clone()),
                    None => {
                        // Cleared under the same lock that found the queue
                        // empty, so no event is left behind.
                        recording.delivering = false;
                        reset.1 = false;
                        return;
                    }
                }
            };
            if let (event, Some(observer)) = next {
                observer(&event);
            }
        }
    }

    /// Takes a newly accepted transport connection: gives it an id, records
    /// it, and arranges for `ConnectionClosed` when the server drops it.
    pub fn accept_connection<IO>(self: &Arc<Self>, io: IO) -> ServerConnection<IO> {
        let connection = self.update(|state| {
            let connection = state.next_connection();
            state.record(ServerEvent::ConnectionAccepted { connection });
            connection
        });
        // Weak: a connection that outlives every handle must not keep the
        // server alive just to record its own end.
        let inner = Arc::downgrade(self);
        let mut resets = self.resets.subscribe();
        ServerConnection::new(
            io,
            connection,
            Box::new(move || {
                if let Some(inner) = inner.upgrade() {
                    inner
                        .update(|state| state.record(ServerEvent::ConnectionClosed { connection }));
                }
            }),
        )
        .with_hold(self.holds.subscribe())
        .with_reset(Box::pin(async move {
            // Any change after this connection was accepted is a reset; a
            // dropped sender means the server is gone, which the shutdown
            // path handles.
            if resets.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }))
    }

    /// Holds (or releases) the I/O of every connection, open or new.
    pub fn hold_connections(&self, hold: bool) {
        self.holds.send_replace(hold);
    }

    /// Holds (or releases) new streams on every connection whose gate
    /// follows its frames, open or new.
    pub fn hold_streams(&self, hold: bool) {
        self.stream_holds.send_replace(hold);
    }

    /// What a connection's gate watches, on a server whose streams a
    /// scenario holds; `None` elsewhere (its gates pass bytes through).
    pub fn stream_hold_signal(&self) -> Option<watch::Receiver<bool>> {
        self.read(|state| state.streams_held_here)
            .then(|| self.stream_holds.subscribe())
    }

    /// Fails every open connection (see `ServerConnection::with_reset`).
    pub fn reset_connections(&self) {
        self.resets.send_modify(|n| *n += 1);
    }

    /// Whether a new in-memory connection to `address` may be accepted;
    /// records the refusal when the server refuses connections.
    pub fn admit_memory_connection(&self, address: &str) -> bool {
        self.update(|state| {
            if state.shut_down {
                false
            } else if state.faults.refusing {
                state.record(ServerEvent::ConnectionRefused {
                    address: address.to_string(),
                });
                false
            } else {
                true
            }
        })
    }

    pub fn signal_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Resolves once the server is shut down.
    pub fn shutdown_signal(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        let mut shutdown = self.shutdown.subscribe();
        async move {
            // An error means the sender is gone, which also means shut down.
            let _ = shutdown.wait_for(|down| *down).await;
        }
    }
}
