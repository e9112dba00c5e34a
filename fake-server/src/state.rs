//! The state of one fake server: its store, its open streams, the faults in
//! force, its counters and its recording. It changes only under the lock
//! that `shared::Inner` holds around it, so each operation is atomic and
//! the recording order is the order things happened in.

use std::collections::{BTreeMap, VecDeque};

use xds_vocabulary::network::{MemoryAcceptor, MemoryNetwork};

use crate::config::{EventObserver, MaxConnectionAge, ServingMode};
use crate::event::{Recorded, ServerEvent};
use crate::in_force::InForce;
use crate::store::Store;
use crate::stream::Stream;

/// A memory address this server listens on, kept to unbind it on shutdown.
pub(crate) struct MemoryBinding {
    pub network: MemoryNetwork,
    pub address: String,
    pub acceptor: std::sync::Arc<dyn MemoryAcceptor>,
}

pub(crate) struct State {
    pub server: String,
    pub mode: ServingMode,
    pub store: Store,
    pub streams: BTreeMap<u64, Stream>,
    /// The faults in force (see [`crate::in_force`]).
    pub faults: InForce,
    /// Read when the server starts serving (tonic sets it per listener).
    pub max_connection_age: Option<MaxConnectionAge>,
    /// Read when the server starts serving: its connections' gates follow
    /// their frames, so `hold_streams` can act on them.
    pub streams_held_here: bool,
    /// Read when the server starts serving: every connection of a
    /// listener started with it goes through this TLS handshake first.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    pub shut_down: bool,
    pub memory_bindings: Vec<MemoryBinding>,
    /// The zone-origin Kuma types auto mode subscribes to on each KDS
    /// `ZoneToGlobalSync` stream.
    pub kds_zone_types: Vec<String>,
    last_connection: u64,
    last_stream: u64,
    last_nonce: u64,
    /// When a stream last ended (see `ServerEvent::StreamOpened::after_close`).
    last_stream_closed: Option<tokio::time::Instant>,
    pub(crate) recording: Recording,
}

/// Everything recorded before an observer was set, and what the observer
/// has not been handed yet.
#[derive(Default)]
pub(crate) struct Recording {
    pub events: Vec<Recorded<ServerEvent>>,
    pub observer: Option<EventObserver>,
    /// Recorded but not yet handed to the observer.
    pub undelivered: VecDeque<Recorded<ServerEvent>>,
    /// Someone is handing `undelivered` to the observer right now.
    pub delivering: bool,
}

impl State {
    pub fn new(server: String, mode: ServingMode) -> Self {
        State {
            server,
            mode,
            store: Store::default(),
            streams: BTreeMap::new(),
            faults: InForce::default(),
            max_connection_age: None,
            streams_held_here: false,
            tls: None,
            shut_down: false,
            memory_bindings: Vec::new(),
            kds_zone_types: xds_vocabulary::kds::types::ZONE_TO_GLOBAL
                .map(str::to_string)
                .to_vec(),
            last_connection: 0,
            last_stream: 0,
            last_nonce: 0,
            last_stream_closed: None,
            recording: Recording::default(),
        }
    }

    /// Appends to the recording (and to the observer's queue).
    pub fn record(&mut self, event: ServerEvent) {
        // Every way a stream ends is recorded as this event.
        if let ServerEvent::StreamClosed { .. } = event {
            self.last_stream_closed = Some(tokio::time::Instant::now());
        }
        let recorded = Recorded {
            at: tokio::time::Instant::now(),
            server: self.server.clone(),
            event,
        };
        // With an observer the event is handed over, not kept: the
        // observer (the harness's timeline) owns the record, and a server
        // that runs for long (`serve`) must not hold every request it
        // ever got (a 100 000-name request is ~20 MB).
        if self.recording.observer.is_some() {
            self.recording.undelivered.push_back(recorded);
        } else {
            self.recording.events.push(recorded);
        }
    }

    pub fn next_connection(&mut self) -> u64 {
        self.last_connection += 1;
        self.last_connection
    }

    /// Nonces count per server, not per stream, so they are unique across
    /// streams and a client echoing another stream's nonce is visible.
    pub fn next_nonce(&mut self) -> String {
        self.last_nonce += 1;
        self.last_nonce.to_string()
    }

    /// Registers a new stream; `None` once the server is shut down.
    pub fn open_stream(&mut self, connection: Option<u64>, stream: Stream) -> Option<u64> {
        if self.shut_down {
            return None;
        }
        self.last_stream += 1;
        let id = self.last_stream;
        // A client's retry delay as the server sees it: from the end of
        // the last stream to this one, when this is the only stream.
        let retried = match self.last_stream_closed {
            Some(closed) if self.streams.is_empty() => Some(tokio::time::Instant::now() - closed),
            _ => None,
        };
        self.streams.insert(id, stream);
        let mut opened = self.streams[&id].protocol.opened(id, connection);
        if let ServerEvent::StreamOpened { after_close, .. } = &mut opened {
            *after_close = retried;
        }
        self.record(opened);
        Some(id)
    }

    /// Whether auto mode owes `type_url` on this stream an answer when the
    /// rules give one: the client asked for the type and no hang holds it
    /// back (hung, nothing is decided, so `resume` finds everything owed).
    pub fn owes_auto_answer(&self, stream_id: u64, type_url: &str) -> bool {
        self.mode == ServingMode::Auto
            && !self.faults.hung.covers(type_url)
            && self
                .streams
                .get(&stream_id)
                .and_then(|s| s.types.get(type_url))
                .is_some_and(|t| t.requested)
    }

    pub fn open_stream_ids(&self) -> Vec<u64> {
        self.streams.keys().copied().collect()
    }
}
