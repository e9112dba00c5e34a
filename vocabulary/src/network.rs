//! An in-memory transport: named addresses, each served by at most one
//! listener, connected through tokio duplex pipes.
//!
//! It lets a whole scenario (servers and in-process clients) run inside one
//! tokio runtime, so paused virtual time drives everything deterministically.
//! The network knows nothing about servers: a listener is anything that can
//! take (or refuse) the server end of a new pipe.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};

use crate::transport::{BoxIo, ConnectFuture, DataPlaneConnector, XdsTransportFactory};

/// Buffer size of each direction of an in-memory connection.
pub const PIPE_CAPACITY: usize = 64 * 1024;

/// Takes the server end of new in-memory connections for one address.
pub trait MemoryAcceptor: Send + Sync {
    /// Accepts `io` as a new connection to `address`, or refuses it with an
    /// error (normally `ConnectionRefused`) that `connect` returns as is.
    fn accept(&self, address: &str, io: DuplexStream) -> io::Result<()>;
}

/// Binding an address that already has a listener.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("in-memory address {0:?} is already in use")]
pub struct AddressInUse(pub String);

/// A registry of in-memory listeners by address. Clones share the registry.
#[derive(Clone, Default)]
pub struct MemoryNetwork {
    listeners: Arc<Mutex<BTreeMap<String, Arc<dyn MemoryAcceptor>>>>,
}

impl std::fmt::Debug for MemoryNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryNetwork")
            .field("addresses", &self.addresses())
            .finish()
    }
}

impl MemoryNetwork {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `acceptor` the listener at `address`.
    pub fn bind(
        &self,
        address: &str,
        acceptor: Arc<dyn MemoryAcceptor>,
    ) -> Result<(), AddressInUse> {
        let mut listeners = self.lock();
        if listeners.contains_key(address) {
            return Err(AddressInUse(address.to_string()));
        }
        listeners.insert(address.to_string(), acceptor);
        Ok(())
    }

    /// Removes the listener at `address` if it is `acceptor` (so a stale
    /// owner cannot unbind whoever bound the address after it).
    pub fn unbind(&self, address: &str, acceptor: &Arc<dyn MemoryAcceptor>) {
        let mut listeners = self.lock();
        if listeners
            .get(address)
            .is_some_and(|bound| Arc::ptr_eq(bound, acceptor))
        {
            listeners.remove(address);
        }
    }

    /// Addresses that currently have a listener, sorted.
    pub fn addresses(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Opens a connection to the listener at `address`. Fails with
    /// `ConnectionRefused` when nothing listens there, or with whatever the
    /// listener refused it with.
    pub async fn connect(&self, address: &str) -> io::Result<MemoryStream> {
        // Take the acceptor out of the registry lock before calling it: the
        // acceptor takes its own locks and records events.
        let acceptor = self.lock().get(address).cloned().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("nothing listens on in-memory address {address:?}"),
            )
        })?;
        let (client, server) = tokio::io::duplex(PIPE_CAPACITY);
        acceptor.accept(address, server)?;
        Ok(MemoryStream { inner: client })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<dyn MemoryAcceptor>>> {
        // A panic elsewhere while holding the lock cannot leave the map half
        // updated (every update is a single insert/remove), so keep going.
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl MemoryNetwork {
    fn open(&self, address: &str) -> ConnectFuture {
        let network = self.clone();
        let address = address.to_string();
        Box::pin(async move {
            network
                .connect(&address)
                .await
                .map(|stream| Box::new(stream) as BoxIo)
        })
    }
}

/// xDS servers are found at their `server_uri`.
impl XdsTransportFactory for MemoryNetwork {
    fn connect(&self, server_uri: &str) -> ConnectFuture {
        self.open(server_uri)
    }
}

/// Endpoints are found at their `ip:port`.
impl DataPlaneConnector for MemoryNetwork {
    fn connect(&self, address: &str) -> ConnectFuture {
        self.open(address)
    }
}

/// The client end of an in-memory connection. Wrap it in
/// `hyper_util::rt::TokioIo` to hand it to a tonic connector.
#[derive(Debug)]
pub struct MemoryStream {
    inner: DuplexStream,
}

impl AsyncRead for MemoryStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for MemoryStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    // Vectored writes go through as one, as on a TCP socket: a TLS stack's
    // last write before it gives up (its alert behind a record it still
    // had queued) is one vectored write, of which the default would pass
    // on only the first buffer.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::mpsc;

    /// Echoes back whatever arrives on each accepted pipe.
    struct Echo;

    impl MemoryAcceptor for Echo {
        fn accept(&self, _address: &str, mut io: DuplexStream) -> io::Result<()> {
            tokio::spawn(async move {
                let mut buf = [0u8; 64];
                while let Ok(n) = io.read(&mut buf).await {
                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            Ok(())
        }
    }

    struct Refuse(mpsc::UnboundedSender<String>);

    impl MemoryAcceptor for Refuse {
        fn accept(&self, address: &str, _io: DuplexStream) -> io::Result<()> {
            let _ = self.0.send(address.to_string());
            Err(io::ErrorKind::ConnectionRefused.into())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn connect_to_nothing_is_refused() {
        let net = MemoryNetwork::new();
        let err = net.connect("nowhere:1").await.err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::ConnectionRefused));
    }

    #[tokio::test(start_paused = true)]
    async fn connect_reaches_the_bound_listener() -> io::Result<()> {
        let net = MemoryNetwork::new();
        net.bind("echo:1", Arc::new(Echo))
            .map_err(io::Error::other)?;
        let mut stream = net.connect("echo:1").await?;
        stream.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        stream.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"ping");
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn a_vectored_write_passes_every_buffer() -> io::Result<()> {
        let net = MemoryNetwork::new();
        net.bind("echo:1", Arc::new(Echo))
            .map_err(io::Error::other)?;
        let mut stream = net.connect("echo:1").await?;
        assert!(stream.is_write_vectored());
        let bufs = [io::IoSlice::new(b"ab"), io::IoSlice::new(b"cd")];
        assert_eq!(stream.write_vectored(&bufs).await?, 4);
        let mut buf = [0u8; 4];
        stream.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"abcd");
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusing_listener_is_asked_and_its_error_returned() {
        let net = MemoryNetwork::new();
        let (tx, mut rx) = mpsc::unbounded_channel();
        assert!(net.bind("r:1", Arc::new(Refuse(tx))).is_ok());
        let err = net.connect("r:1").await.err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::ConnectionRefused));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("r:1"));
    }

    #[test]
    fn an_address_has_one_listener_and_only_its_owner_unbinds_it() {
        let net = MemoryNetwork::new();
        let first: Arc<dyn MemoryAcceptor> = Arc::new(Echo);
        let second: Arc<dyn MemoryAcceptor> = Arc::new(Echo);
        assert_eq!(net.bind("a:1", first.clone()), Ok(()));
        assert_eq!(
            net.bind("a:1", second.clone()),
            Err(AddressInUse("a:1".into()))
        );
        net.unbind("a:1", &second);
        assert_eq!(net.addresses(), vec!["a:1".to_string()]);
        net.unbind("a:1", &first);
        assert!(net.addresses().is_empty());
        assert_eq!(net.bind("a:1", second), Ok(()));
    }
}
