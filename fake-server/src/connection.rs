//! The server side of one accepted transport connection, whatever the
//! transport (TCP or in-memory).
//!
//! It exists for two reasons: tonic learns the connection id through
//! [`Connected`] and hands it to the ADS handler in the request extensions
//! (so `StreamOpened` can say which connection a stream is on), and dropping
//! it is the one reliable sign that the server is done with the connection
//! (so `ConnectionClosed` is recorded exactly once).

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

/// What the ADS handler finds in a request's extensions about the connection
/// it arrived on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The server's id for the connection (counts from 1 per server).
    pub connection: u64,
}

/// Runs once when the server side of a connection is dropped.
type OnClose = Box<dyn FnOnce() + Send>;

/// Resolves when the server drops every connection at once (a restart).
type Reset = Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// An accepted connection: the transport's I/O plus the server's id for it.
pub struct ServerConnection<IO> {
    io: IO,
    info: ConnectionInfo,
    on_close: Option<OnClose>,
    /// Once resolved, every read and write fails, so the HTTP/2 connection
    /// ends and is dropped (the client sees the transport go away).
    reset: Option<Reset>,
    was_reset: bool,
    /// While held, reads and writes wait: bytes stay in the socket and the
    /// client never hears the server's HTTP/2 preface (see `fault::HoldConnections`).
    read_gate: Option<HoldGate>,
    write_gate: Option<HoldGate>,
}

/// Waits while the server holds its connections. One per direction, so
/// a read and a write polled from different tasks each get woken.
pub(crate) struct HoldGate {
    held: tokio::sync::watch::Receiver<bool>,
    waiting: Option<Reset>,
}

impl HoldGate {
    pub(crate) fn new(held: tokio::sync::watch::Receiver<bool>) -> Self {
        Self {
            held,
            waiting: None,
        }
    }

    fn poll_open(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !*self.held.borrow() {
            self.waiting = None;
            return Poll::Ready(());
        }
        let waiting = self.waiting.get_or_insert_with(|| {
            let mut held = self.held.clone();
            Box::pin(async move {
                // A dropped sender means the server is gone: stop holding.
                let _ = held.wait_for(|held| !*held).await;
            })
        });
        match waiting.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.waiting = None;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<IO> ServerConnection<IO> {
    /// Wraps `io` as connection `connection`; `on_close` runs when it drops.
    pub(crate) fn new(io: IO, connection: u64, on_close: OnClose) -> Self {
        Self {
            io,
            info: ConnectionInfo { connection },
            on_close: Some(on_close),
            reset: None,
            was_reset: false,
            read_gate: None,
            write_gate: None,
        }
    }

    /// Reads and writes wait while `held` is true.
    pub(crate) fn with_hold(mut self, held: tokio::sync::watch::Receiver<bool>) -> Self {
        self.read_gate = Some(HoldGate::new(held.clone()));
        self.write_gate = Some(HoldGate::new(held));
        self
    }

    /// The connection fails once `reset` resolves.
    pub(crate) fn with_reset(mut self, reset: Reset) -> Self {
        self.reset = Some(reset);
        self
    }

    /// Polls the reset signal: an error once the server reset connections.
    fn check_reset(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if !self.was_reset
            && let Some(reset) = &mut self.reset
            && reset.as_mut().poll(cx).is_ready()
        {
            self.was_reset = true;
        }
        if self.was_reset {
            Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the fake server reset its connections",
            ))
        } else {
            Ok(())
        }
    }

    /// The server's id for this connection.
    pub fn connection(&self) -> u64 {
        self.info.connection
    }
}

impl<IO> fmt::Debug for ServerConnection<IO> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConnection")
            .field("connection", &self.info.connection)
            .finish_non_exhaustive()
    }
}

impl<IO> Drop for ServerConnection<IO> {
    fn drop(&mut self) {
        if let Some(on_close) = self.on_close.take() {
            on_close();
        }
    }
}

impl<IO> Connected for ServerConnection<IO> {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.info
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for ServerConnection<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check_reset(cx)?;
        if let Some(gate) = &mut self.read_gate
            && gate.poll_open(cx).is_pending()
        {
            return Poll::Pending;
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for ServerConnection<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check_reset(cx)?;
        if let Some(gate) = &mut self.write_gate
            && gate.poll_open(cx).is_pending()
        {
            return Poll::Pending;
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check_reset(cx)?;
        if let Some(gate) = &mut self.write_gate
            && gate.poll_open(cx).is_pending()
        {
            return Poll::Pending;
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
