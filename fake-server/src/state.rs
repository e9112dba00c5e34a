//! The shared state behind one fake server and the one way to change it.
//!
//! Everything observable (store, streams, counters, the recording) sits behind
//! a single lock, so each operation is atomic and the recording order is the
//! order things happened in. The observer is called only after the lock is
//! released, so it may call back into the server; a dispatch flag keeps its
//! calls in recording order even then.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use crate::connection::ServerConnection;
use crate::event::{Recorded, ServerEvent};
use crate::serve::TcpGate;
use crate::server::{EventObserver, ServingMode};
use crate::sotw::SotwStream;
use crate::store::Store;
use xds_vocabulary::network::{MemoryAcceptor, MemoryNetwork};

/// What a `FakeAdsServer` handle, its tonic service and its listeners share.
pub(crate) struct Inner {
    pub name: String,
    state: Mutex<State>,
    /// TCP listeners, kept apart from `State`: tonic's accept loop locks a
    /// listener while polling it, so listeners are never touched with the
    /// state lock held (a fault is recorded first, then listeners change).
    tcp: Mutex<Vec<Arc<TcpGate>>>,
    /// Flips to true once, on shutdown; tonic servers watch it.
    shutdown: watch::Sender<bool>,
    /// Bumped by `Fault::Restart`: every connection accepted before fails.
    resets: watch::Sender<u64>,
    /// True while `Fault::HoldConnections` is in force.
    holds: watch::Sender<bool>,
    /// Wakes the delayer task when a delayed response is queued.
    pub delay_wakeup: Arc<tokio::sync::Notify>,
}

/// A memory address this server listens on, kept to unbind it on shutdown.
pub(crate) struct MemoryBinding {
    pub network: MemoryNetwork,
    pub address: String,
    pub acceptor: Arc<dyn MemoryAcceptor>,
}

pub(crate) struct State {
    pub server: String,
    pub mode: ServingMode,
    pub store: Store,
    pub streams: BTreeMap<u64, SotwStream>,
    pub refusing: bool,
    /// Types auto mode does not answer (`Fault::Hang`).
    pub hung: Hung,
    /// `Fault::CloseStreamsAfter`, while in force.
    pub stream_limit: Option<StreamLimit>,
    /// `Fault::DelayResponses`: how long each response waits (zero: none).
    pub delay: std::time::Duration,
    /// Responses waiting out their delay, by due time.
    pub delayed: BTreeMap<(tokio::time::Instant, u64), Delayed>,
    pub delayed_seq: u64,
    /// Set when `delayed` gained an entry; the delayer task clears it.
    pub delay_changed: bool,
    /// Responses still to drop (`Fault::DropResponses`), and of which type.
    pub drops: Option<(u32, Option<String>)>,
    /// Read when the server starts serving (tonic sets it per listener).
    pub max_connection_age: Option<crate::server::MaxConnectionAge>,
    pub shut_down: bool,
    pub memory_bindings: Vec<MemoryBinding>,
    last_connection: u64,
    last_stream: u64,
    last_nonce: u64,
    events: Vec<Recorded<ServerEvent>>,
    observer: Option<EventObserver>,
    /// Recorded but not yet handed to the observer.
    undelivered: VecDeque<Recorded<ServerEvent>>,
    /// Someone is handing `undelivered` to the observer right now.
    delivering: bool,
}

/// What `Fault::Hang` stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hung {
    pub all: bool,
    pub types: std::collections::BTreeSet<String>,
}

impl Hung {
    pub fn covers(&self, type_url: &str) -> bool {
        self.all || self.types.contains(type_url)
    }
}

/// A response waiting out `Fault::DelayResponses`.
pub(crate) struct Delayed {
    pub stream: u64,
    pub response: envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse,
    pub recorded: crate::event::RecordedResponse,
}

/// Streams are closed with `code`/`message` after `responses` responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamLimit {
    pub responses: u32,
    pub code: tonic::Code,
    pub message: String,
}

impl State {
    /// Appends to the recording (and to the observer's queue).
    pub fn record(&mut self, event: ServerEvent) {
        let recorded = Recorded {
            at: tokio::time::Instant::now(),
            server: self.server.clone(),
            event,
        };
        if self.observer.is_some() {
            self.undelivered.push_back(recorded.clone());
        }
        self.events.push(recorded);
    }

    pub fn next_connection(&mut self) -> u64 {
        self.last_connection += 1;
        self.last_connection
    }

    pub fn next_stream(&mut self) -> u64 {
        self.last_stream += 1;
        self.last_stream
    }

    /// Nonces count per server, not per stream, so they are unique across
    /// streams and a client echoing another stream's nonce is visible.
    pub fn next_nonce(&mut self) -> String {
        self.last_nonce += 1;
        self.last_nonce.to_string()
    }
}

impl Inner {
    pub fn new(name: String, mode: ServingMode) -> Self {
        Self {
            state: Mutex::new(State {
                server: name.clone(),
                mode,
                store: Store::default(),
                streams: BTreeMap::new(),
                refusing: false,
                hung: Hung::default(),
                stream_limit: None,
                drops: None,
                max_connection_age: None,
                delay: std::time::Duration::ZERO,
                delayed: BTreeMap::new(),
                delayed_seq: 0,
                delay_changed: false,
                shut_down: false,
                memory_bindings: Vec::new(),
                last_connection: 0,
                last_stream: 0,
                last_nonce: 0,
                events: Vec::new(),
                observer: None,
                undelivered: VecDeque::new(),
                delivering: false,
            }),
            name,
            tcp: Mutex::new(Vec::new()),
            shutdown: watch::Sender::new(false),
            resets: watch::Sender::new(0),
            holds: watch::Sender::new(false),
            delay_wakeup: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Runs `change` under the state lock, then hands whatever it recorded to
    /// the observer. Every change goes through here.
    pub fn update<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        let (result, wake) = {
            let mut state = self.lock();
            let result = change(&mut state);
            (result, std::mem::take(&mut state.delay_changed))
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
        self.lock().events.clone()
    }

    pub fn set_observer(&self, observer: EventObserver) {
        self.lock().observer = Some(observer);
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
            if state.delivering || state.undelivered.is_empty() {
                return;
            }
            state.delivering = true;
        }
        // Should the observer panic, let the next update deliver again.
        struct Reset<'a>(&'a Inner, bool);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.lock().delivering = false;
                }
            }
        }
        let mut reset = Reset(self, true);
        loop {
            let next = {
                let mut state = self.lock();
                match state.undelivered.pop_front() {
                    Some(event) => (event, state.observer.clone()),
                    None => {
                        // Cleared under the same lock that found the queue
                        // empty, so no event is left behind.
                        state.delivering = false;
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
            } else if state.refusing {
                state.record(ServerEvent::ConnectionRefused {
                    address: address.to_string(),
                });
                false
            } else {
                true
            }
        })
    }

    pub fn add_tcp_gate(&self, gate: Arc<TcpGate>) {
        self.tcp_lock().push(gate);
    }

    pub fn tcp_gates(&self) -> Vec<Arc<TcpGate>> {
        self.tcp_lock().clone()
    }

    fn tcp_lock(&self) -> MutexGuard<'_, Vec<Arc<TcpGate>>> {
        self.tcp.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn signal_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Resolves once the server is shut down.
    pub fn shutdown_signal(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut shutdown = self.shutdown.subscribe();
        async move {
            // An error means the sender is gone, which also means shut down.
            let _ = shutdown.wait_for(|down| *down).await;
        }
    }
}
