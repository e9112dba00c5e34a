//! The public handle of one fake ADS server: serving on a transport,
//! changing its store, scripted sends, faults, its recording.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Code;

use xds_vocabulary::network::{AddressInUse, MemoryAcceptor, MemoryNetwork};

use crate::config::{
    EventObserver, MaxConnectionAge, ScriptedDeltaResponse, ScriptedKdsRequest, ScriptedResponse,
    ServerConfig, ServingMode,
};
use crate::effect::{self, Outside};
use crate::event::{Recorded, ServerEvent};
use crate::fault::{Fault, FaultError};
use crate::resource::ServedResource;
use crate::serve::{MemoryListener, TcpAccept, TcpGate, spawn_server};
use crate::shared::Inner;
use crate::state::MemoryBinding;
use crate::tls::{TlsSettings, TlsSetupError};

/// Serving on a transport failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    AddressInUse(#[from] AddressInUse),
    #[error("serving needs a tokio runtime; call from within one")]
    NoRuntime,
    #[error("server {0:?} has been shut down")]
    ShutDown(String),
}

/// One scriptable fake ADS server. Clones are handles to the same server.
#[derive(Clone)]
pub struct FakeAdsServer {
    inner: Arc<Inner>,
    /// TCP listeners, kept apart from the state: tonic's accept loop locks
    /// a listener while polling it, so listeners are never touched with
    /// the state lock held (a fault is recorded first, then listeners
    /// change).
    tcp: Arc<Mutex<Vec<Arc<TcpGate>>>>,
}

impl std::fmt::Debug for FakeAdsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeAdsServer")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl FakeAdsServer {
    pub fn new(config: ServerConfig) -> Self {
        Self {
            inner: Arc::new(Inner::new(config.name, config.mode)),
            tcp: Arc::default(),
        }
    }

    /// Sets (or replaces) the observer. Events recorded before are not
    /// replayed to it; [`Self::events`] has them. Events recorded from now
    /// on go to the observer only (it owns them; the server keeps none).
    pub fn set_observer(&self, observer: EventObserver) {
        self.inner.set_observer(observer);
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Serves TLS (`Some`) or plaintext (`None`) on listeners started
    /// after this call.
    pub fn set_tls(&self, settings: Option<&TlsSettings>) -> Result<(), TlsSetupError> {
        let acceptor = settings.map(crate::tls::acceptor).transpose()?;
        self.inner.update(|state| state.tls = acceptor);
        Ok(())
    }

    /// Sets MAX_CONNECTION_AGE for listeners started after this call.
    pub fn set_max_connection_age(&self, age: Option<MaxConnectionAge>) {
        self.inner.update(|state| state.max_connection_age = age);
    }

    /// Lets `hold_streams` act on the connections of listeners started
    /// after this call: their HTTP/2 frames are followed (see
    /// `stream_gate`), which costs a look at every frame, so only a
    /// server whose streams are held does it.
    pub fn watch_streams(&self) {
        self.inner.update(|state| state.streams_held_here = true);
    }

    pub fn mode(&self) -> ServingMode {
        self.inner.read(|state| state.mode)
    }

    /// Listens on `address` of `network`, serving on the current tokio
    /// runtime.
    pub fn serve_in_memory(
        &self,
        network: &MemoryNetwork,
        address: &str,
    ) -> Result<(), ServeError> {
        let runtime = Handle::try_current().map_err(|_| ServeError::NoRuntime)?;
        self.ensure_running()
            .map_err(|_| ServeError::ShutDown(self.inner.name.clone()))?;
        let (connections, incoming) = mpsc::unbounded_channel();
        let acceptor: Arc<dyn MemoryAcceptor> = Arc::new(MemoryListener {
            inner: Arc::downgrade(&self.inner),
            connections,
        });
        network.bind(address, acceptor.clone())?;
        self.inner.update(|state| {
            state.memory_bindings.push(MemoryBinding {
                network: network.clone(),
                address: address.to_string(),
                acceptor,
            })
        });
        spawn_server(
            &runtime,
            &self.inner,
            UnboundedReceiverStream::new(incoming),
        );
        Ok(())
    }

    /// Listens on `addr` (port 0 picks one) and returns the bound address.
    /// Accepted sockets get TCP_NODELAY: without it each small gRPC message
    /// waits out Nagle's delay.
    pub async fn serve_tcp(&self, addr: SocketAddr) -> io::Result<SocketAddr> {
        let runtime = Handle::try_current().map_err(io::Error::other)?;
        self.ensure_running().map_err(io::Error::other)?;
        let gate = Arc::new(TcpGate::bind(addr, runtime.clone())?);
        let bound = gate.address();
        if self.inner.read(|state| state.faults.refusing) {
            gate.close();
        }
        self.tcp_gates_lock().push(gate.clone());
        spawn_server(
            &runtime,
            &self.inner,
            TcpAccept {
                gate,
                inner: self.inner.clone(),
            },
        );
        Ok(bound)
    }

    fn ensure_running(&self) -> Result<(), ServeError> {
        if self.inner.read(|state| state.shut_down) {
            Err(ServeError::ShutDown(self.inner.name.clone()))
        } else {
            Ok(())
        }
    }

    /// Adds or replaces resources. One store change per type touched (in
    /// type URL order), each followed by auto-mode pushes. `version` names
    /// the new version of every touched type.
    pub fn set_resources(&self, resources: Vec<ServedResource>, version: Option<String>) {
        self.inner
            .update(|state| state.set_resources(resources, version));
    }

    /// Removes resources of one type: one store change, then auto-mode pushes.
    pub fn remove_resources(&self, type_url: &str, names: &[String], version: Option<String>) {
        self.inner
            .update(|state| state.remove_resources(type_url, names, version));
    }

    /// Names of the stored resources of `type_url`, sorted.
    pub fn resource_names(&self, type_url: &str) -> Vec<String> {
        self.inner.read(|state| state.store.names(type_url))
    }

    /// The current version of `type_url` (empty if it never changed).
    pub fn type_version(&self, type_url: &str) -> String {
        self.inner.read(|state| state.store.version(type_url))
    }

    /// Ids of the open streams (ADS of either protocol, KDS), ascending.
    pub fn open_streams(&self) -> Vec<u64> {
        self.inner.read(|state| state.open_stream_ids())
    }

    /// Sends `response` to every open SotW stream (in either mode); returns
    /// how many streams got it.
    pub fn send_response(&self, response: ScriptedResponse) -> usize {
        self.inner
            .update(|state| state.send_sotw_scripted(&response))
    }

    /// Sends `response` to every open delta stream (in either mode);
    /// returns how many streams got it.
    pub fn send_delta_response(&self, response: ScriptedDeltaResponse) -> usize {
        self.inner
            .update(|state| state.send_delta_scripted(&response))
    }

    /// Sends `response` to every open KDS `GlobalToZoneSync` stream (in
    /// either mode); returns how many streams got it.
    pub fn send_kds_response(&self, response: ScriptedDeltaResponse) -> usize {
        self.inner
            .update(|state| state.send_kds_scripted_response(&response))
    }

    /// Sends `request` (a subscription, an ACK, a NACK) to every open KDS
    /// `ZoneToGlobalSync` stream (in either mode); returns how many
    /// streams got it.
    pub fn send_kds_request(&self, request: ScriptedKdsRequest) -> usize {
        self.inner
            .update(|state| state.send_kds_scripted_request(&request))
    }

    /// The zone-origin Kuma types auto mode subscribes `*` to on each KDS
    /// `ZoneToGlobalSync` stream opened from now on (by default Kuma
    /// v2.14.3's, `xds_vocabulary::kds::types::ZONE_TO_GLOBAL`).
    pub fn set_kds_zone_types(&self, types: Vec<String>) {
        self.inner.update(|state| state.kds_zone_types = types);
    }

    fn tcp_gates(&self) -> Vec<Arc<TcpGate>> {
        self.tcp_gates_lock().clone()
    }

    fn tcp_gates_lock(&self) -> MutexGuard<'_, Vec<Arc<TcpGate>>> {
        self.tcp.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies a fault (a verb: `RefuseConnections`, `Hang {..}`, or a
    /// [`Fault`]). A TCP re-bind failure on `AcceptConnections` is ignored
    /// here; [`Self::try_apply`] reports it.
    pub fn apply(&self, fault: impl Into<Fault>) {
        // The fault is recorded and took effect everywhere it could.
        let _ = self.try_apply(fault);
    }

    /// Applies a fault, recording it first so its consequences follow it in
    /// the recording: the verb's effect on the state under the state lock,
    /// then on listeners and connections outside it (see `Inner::tcp`).
    pub fn try_apply(&self, fault: impl Into<Fault>) -> Result<(), FaultError> {
        let fault = fault.into();
        self.inner.update(|state| {
            state.record(ServerEvent::FaultApplied {
                fault: fault.clone(),
            });
            effect::of(&fault).apply(state);
        });
        effect::of(&fault).apply_outside(&Outside {
            inner: &self.inner,
            tcp: &self.tcp_gates(),
        })
    }

    /// This server's recording, in order.
    pub fn events(&self) -> Vec<Recorded<ServerEvent>> {
        self.inner.events()
    }

    /// Stops serving for good: closes every stream with `UNAVAILABLE`, stops
    /// listening, and lets open connections drain (HTTP/2 GOAWAY).
    pub fn shutdown(&self) {
        let bindings = self.inner.update(|state| {
            if state.shut_down {
                return Vec::new();
            }
            state.shut_down = true;
            state.close_all_streams(Code::Unavailable, "server shut down");
            std::mem::take(&mut state.memory_bindings)
        });
        for binding in bindings {
            binding.network.unbind(&binding.address, &binding.acceptor);
        }
        for gate in self.tcp_gates() {
            gate.finish();
        }
        self.inner.signal_shutdown();
    }
}
