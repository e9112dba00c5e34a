//! Putting a server on a transport: the listeners that feed accepted
//! connections to a tonic server, and the tonic server itself.
//!
//! Both transports hand tonic a stream of `ServerConnection`s and the same
//! services: ADS and Kuma's KDS, on the same port. Listeners stay under the fake server's control so that
//! refusing connections does not disturb the connections already open.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::AggregatedDiscoveryServiceServer;
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Server;
use tonic::transport::server::Connected;

use crate::ads::AdsService;
use crate::cancel::note_cancel;
use crate::connection::{ConnectionInfo, ServerConnection};
use crate::kds_service::{GlobalKdsService, KdsSyncService};
use crate::shared::Inner;
use crate::stream_gate::StreamGate;
use crate::tls;
use xds_vocabulary::network::MemoryAcceptor;

/// Runs a tonic server with this fake server's ADS service on `incoming`
/// until the fake server shuts down (then it drains its connections).
/// A TLS server (see [`FakeAdsServer::set_tls`](crate::FakeAdsServer::set_tls))
/// serves the connections whose handshake succeeded.
pub(crate) fn spawn_server<I, IO>(runtime: &Handle, inner: &Arc<Inner>, incoming: I)
where
    I: Stream<Item = io::Result<IO>> + Send + 'static,
    IO: AsyncRead + AsyncWrite + Connected<ConnectInfo = ConnectionInfo> + Unpin + Send + 'static,
{
    runtime.spawn(send_delayed_responses(
        Arc::downgrade(inner),
        inner.delay_wakeup.clone(),
        inner.shutdown_signal(),
    ));
    match inner.read(|state| state.tls.clone()) {
        None => spawn_tonic(runtime, inner, incoming),
        Some(acceptor) => {
            // Handshakes spawn tasks: on the server's runtime.
            let _runtime = runtime.enter();
            spawn_tonic(runtime, inner, tls::handshakes(incoming, acceptor, inner));
        }
    }
}

/// Runs tonic's server with the ADS and KDS services on `incoming`.
fn spawn_tonic<I, IO>(runtime: &Handle, inner: &Arc<Inner>, incoming: I)
where
    I: Stream<Item = io::Result<IO>> + Send + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
{
    let service = AggregatedDiscoveryServiceServer::new(AdsService::new(inner.clone()));
    let kds = KdsSyncService::new(inner.clone());
    let global_kds = GlobalKdsService::new(inner.clone());
    let shutdown = inner.shutdown_signal();
    let age = inner.read(|state| state.max_connection_age);
    // Every connection goes through a gate, which follows its frames
    // only on a server whose streams a scenario holds.
    let held = inner.stream_hold_signal();
    let incoming = incoming.map(move |io| io.map(|io| StreamGate::new(io, held.clone())));
    runtime.spawn(async move {
        let mut builder = Server::builder();
        if let Some(age) = age {
            // GOAWAY after `age`; open streams get `grace` to finish, then
            // the connection closes under them (gRPC's MAX_CONNECTION_AGE).
            builder = builder
                .max_connection_age(age.age)
                .max_connection_age_grace(age.grace);
        }
        // tonic fails here only if building a per-connection service fails,
        // which a plain router cannot; a failing connection ends only itself.
        let _ = builder
            .layer(tower::ServiceBuilder::new().map_request(note_cancel))
            .add_service(service)
            .add_service(kds)
            .add_service(global_kds)
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await;
    });
}

/// Sends responses held back by `delay_responses` when they are
/// due, until the server shuts down or is dropped.
async fn send_delayed_responses(
    inner: Weak<Inner>,
    wakeup: Arc<tokio::sync::Notify>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let Some(next) = inner
            .upgrade()
            .map(|i| i.update(|state| state.send_delayed()))
        else {
            return;
        };
        tokio::select! {
            _ = &mut shutdown => return,
            _ = wakeup.notified() => {}
            _ = async { tokio::time::sleep_until(next.unwrap_or_else(tokio::time::Instant::now)).await }, if next.is_some() => {}
        }
    }
}

/// The server end of an in-memory connection.
type MemoryIo = ServerConnection<DuplexStream>;

/// The in-memory listener of one server at one address.
pub(crate) struct MemoryListener {
    /// Weak: the network registry must not keep a server alive.
    pub inner: Weak<Inner>,
    pub connections: mpsc::UnboundedSender<io::Result<MemoryIo>>,
}

impl MemoryAcceptor for MemoryListener {
    fn accept(&self, address: &str, io: DuplexStream) -> io::Result<()> {
        let refused = || {
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("{address} refuses connections"),
            )
        };
        let inner = self.inner.upgrade().ok_or_else(refused)?;
        if !inner.admit_memory_connection(address) {
            return Err(refused());
        }
        let connection = inner.accept_connection(io);
        // If the tonic server is gone the connection comes back in the error
        // and is dropped here, outside any lock, recording its close.
        self.connections.send(Ok(connection)).map_err(|_| refused())
    }
}

/// A TCP listening address that can stop and resume listening while its
/// tonic server keeps running.
///
/// The port stays this server's while it refuses: a socket bound to it
/// and never listening (`port`) holds it for the gate's life, beside the
/// listener, both with SO_REUSEPORT. Without it, closing the listener
/// freed the port, the kernel could give it to another run's fake server
/// binding port 0, and the refusing run's client, reconnecting, reached
/// that other run (seen: a stray CDS request opening an EDS-only run's
/// timeline). Connection attempts while refusing still meet no listener,
/// so the kernel refuses them; a port-0 bind never shares a port, with
/// SO_REUSEPORT or not, so no other server is given this one.
///
/// Closing the listener stops it listening with `shutdown`, not by
/// dropping its descriptor alone: the harness spawns client processes all
/// the time, and a child between fork and exec holds a copy of every
/// descriptor, so a dropped listener went on listening until that child
/// exec'd. A client connecting right after a refuse fault then got in and
/// was reset ("Connection reset by peer", not refused; seen once in a
/// comparison of SotW and delta on the reference client as a process,
/// `a57/does-not-exist-timer-needs-a-connected-stream`). `shutdown` acts
/// on the socket, every copy of it.
pub(crate) struct TcpGate {
    address: SocketAddr,
    /// Re-binding needs the runtime the server was started on.
    runtime: Handle,
    slot: Mutex<GateSlot>,
}

struct GateSlot {
    /// `None` while refusing: nothing listens, so the kernel refuses.
    listener: Option<TcpListener>,
    /// Holds the port while the gate lives (see [`TcpGate`]).
    port: Option<TcpSocket>,
    /// The tonic accept loop waiting on this gate.
    waker: Option<Waker>,
    finished: bool,
}

impl TcpGate {
    /// Listens on `address` (port 0 picks one), holding the port for the
    /// gate's life.
    pub fn bind(address: SocketAddr, runtime: Handle) -> io::Result<Self> {
        let listener = {
            let _runtime = runtime.enter();
            listen(address)?
        };
        let address = listener.local_addr()?;
        let port = reusing_port(address)?;
        port.bind(address)?;
        Ok(Self {
            address,
            runtime,
            slot: Mutex::new(GateSlot {
                listener: Some(listener),
                port: Some(port),
                waker: None,
                finished: false,
            }),
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Closes the listening socket now (not at some later poll), so a
    /// connection attempt right after a refuse fault is refused.
    pub fn close(&self) {
        stop_listening(self.lock().listener.take());
    }

    /// Listens again on the same address if closed.
    pub fn reopen(&self) -> io::Result<()> {
        let mut slot = self.lock();
        if slot.finished || slot.listener.is_some() {
            return Ok(());
        }
        let listener = {
            let _runtime = self.runtime.enter();
            listen(self.address)?
        };
        slot.listener = Some(listener);
        if let Some(waker) = slot.waker.take() {
            waker.wake();
        }
        Ok(())
    }

    /// Stops listening for good, lets the port go, and ends the accept
    /// stream.
    pub fn finish(&self) {
        let mut slot = self.lock();
        stop_listening(slot.listener.take());
        slot.port = None;
        slot.finished = true;
        if let Some(waker) = slot.waker.take() {
            waker.wake();
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateSlot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Stops `listener` listening at once, whoever else holds a copy of its
/// descriptor (see [`TcpGate`]): `shutdown(SHUT_RD)` of a listening socket
/// takes it out of the listening state (connections queued on it are
/// reset, as closing it does), then it is dropped.
fn stop_listening(listener: Option<TcpListener>) {
    if let Some(listener) = listener {
        // It can only fail on a socket that no longer listens.
        let _ = socket2::SockRef::from(&listener).shutdown(std::net::Shutdown::Read);
    }
}

/// A socket that shares its port with the gate's other sockets (see
/// [`TcpGate`]).
fn reusing_port(address: SocketAddr) -> io::Result<TcpSocket> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseport(true)?;
    Ok(socket)
}

/// Listens on `address` sharing its port with the gate's placeholder.
/// Inside the server's runtime (the listener registers with its reactor).
fn listen(address: SocketAddr) -> io::Result<TcpListener> {
    let socket = reusing_port(address)?;
    socket.bind(address)?;
    socket.listen(1024)
}

/// The stream of connections accepted through a `TcpGate`.
pub(crate) struct TcpAccept {
    pub gate: Arc<TcpGate>,
    pub inner: Arc<Inner>,
}

impl Stream for TcpAccept {
    type Item = io::Result<ServerConnection<TcpStream>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let accepted = {
            let mut slot = self.gate.lock();
            if slot.finished {
                return Poll::Ready(None);
            }
            // Kept up to date so closing/reopening can wake the accept loop
            // even though the old listener will never wake it again.
            slot.waker = Some(cx.waker().clone());
            let Some(listener) = slot.listener.as_ref() else {
                return Poll::Pending;
            };
            match listener.poll_accept(cx) {
                Poll::Ready(Ok((stream, _))) => {
                    // Without it each small gRPC message waits out
                    // Nagle's delay; a socket that refuses it still serves.
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Some(Err(error))),
                Poll::Pending => return Poll::Pending,
            }
        };
        // Recorded outside the gate's lock (lock order: never gate, then state).
        Poll::Ready(Some(Ok(self.inner.accept_connection(accepted))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the listener's descriptor elsewhere (a child process
    /// between fork and exec holds one) does not keep a closed gate
    /// listening: a connection attempt right after is refused, not taken
    /// in and reset.
    #[tokio::test]
    async fn a_closed_gate_refuses_while_a_copy_of_its_listener_lives() {
        let gate =
            TcpGate::bind("127.0.0.1:0".parse().expect("addr"), Handle::current()).expect("bind");
        let copy = {
            let slot = gate.lock();
            let listener = slot.listener.as_ref().expect("listening");
            socket2::SockRef::from(listener).try_clone().expect("dup")
        };
        gate.close();
        let refused = TcpStream::connect(gate.address())
            .await
            .err()
            .map(|e| e.kind());
        assert_eq!(refused, Some(io::ErrorKind::ConnectionRefused));
        drop(copy);
        gate.reopen().expect("listen again");
        TcpStream::connect(gate.address())
            .await
            .expect("connects once listening again");
    }
}
