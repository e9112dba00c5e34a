//! How the client reaches an xDS server: a factory of byte streams (the
//! vocabulary's TCP, or its in-memory network under test), wrapped in TLS
//! when the server's channel credentials say so ([`tls`]), under one tonic
//! channel per server.
//!
//! The channel's connector watches its connection, because gRFC A57 starts
//! the does-not-exist timer only once a subscription was sent on a
//! *connected* stream. An HTTP/2 client may send before the server said a
//! word, so "connected" here means what C-core's READY means: the server's
//! first bytes (its SETTINGS preface) have arrived; over TLS, its first
//! bytes after the handshake (with TLS 1.3 a client finishes its handshake
//! before the server has checked the client's certificate, so the
//! handshake alone does not make a connection READY).

pub mod tls;

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tonic::transport::{Channel, Endpoint};

use crate::bootstrap::{ChannelCreds, XdsServerConfig};
use tls::TlsDefects;

pub use xds_vocabulary::transport::{
    BoxIo, ConnectFuture, DataPlaneConnector, Io, TcpTransport, XdsTransportFactory,
};

/// The state of the channel's current connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectionState {
    Idle,
    Connecting,
    /// Bytes can flow (over TLS: the handshake is done) but the server has
    /// not spoken yet.
    Handshaking,
    /// The server's preface arrived: streams on it are "connected" (A57).
    Ready,
    /// The last connection attempt failed, with this reason.
    Failed(String),
    /// The connection ended.
    Closed,
    /// The connection broke: reading from it failed, with this reason
    /// (over TLS, e.g. the server's alert refusing the client's
    /// certificate).
    Broken(String),
}

/// One tonic channel to one xDS server, plus the state of its connection.
pub(crate) struct XdsTransport {
    pub channel: Channel,
    pub state: watch::Receiver<ConnectionState>,
}

impl XdsTransport {
    pub fn new(
        factory: Arc<dyn XdsTransportFactory>,
        server: &XdsServerConfig,
        tls_defects: TlsDefects,
    ) -> XdsTransport {
        let (state_tx, state_rx) = watch::channel(ConnectionState::Idle);
        let state_tx = Arc::new(state_tx);
        let generation = Arc::new(AtomicU64::new(0));
        let server = server.clone();
        // The URI only sets :authority; the connector decides where bytes go.
        let endpoint =
            Endpoint::from_shared(format!("http://{}", authority_of(&server.server_uri)))
                .unwrap_or_else(|_| Endpoint::from_static("http://xds-server"));
        let connector = tower::service_fn(move |_uri: http::Uri| {
            let factory = factory.clone();
            let server = server.clone();
            let state = state_tx.clone();
            let generation = generation.clone();
            async move {
                // Only the newest connection may speak for the channel.
                let mine = generation.fetch_add(1, Ordering::SeqCst) + 1;
                let watch = ConnectionWatch {
                    state,
                    generation,
                    mine,
                };
                watch.set(ConnectionState::Connecting);
                let connected = match factory.connect(&server.server_uri).await {
                    Ok(io) => match &server.channel_creds {
                        ChannelCreds::Insecure => Ok(io),
                        // A failed handshake fails the attempt like a
                        // refused connection.
                        ChannelCreds::Tls(creds) => {
                            tls::connect(io, &server.server_uri, creds, tls_defects)
                                .await
                                .map_err(io::Error::other)
                        }
                    },
                    Err(e) => Err(e),
                };
                match connected {
                    Ok(io) => {
                        watch.set(ConnectionState::Handshaking);
                        Ok(TokioIo::new(WatchedIo {
                            inner: io,
                            watch,
                            heard_server: false,
                        }))
                    }
                    Err(e) => {
                        watch.set(ConnectionState::Failed(e.to_string()));
                        Err(e)
                    }
                }
            }
        });
        XdsTransport {
            channel: endpoint.connect_with_connector_lazy(connector),
            state: state_rx,
        }
    }
}

fn authority_of(server_uri: &str) -> String {
    let s = server_uri.trim_start_matches("dns:///");
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:[]".contains(c))
    {
        s.to_string()
    } else {
        "xds-server".to_string()
    }
}

struct ConnectionWatch {
    state: Arc<watch::Sender<ConnectionState>>,
    generation: Arc<AtomicU64>,
    mine: u64,
}

impl ConnectionWatch {
    fn set(&self, state: ConnectionState) {
        if self.generation.load(Ordering::SeqCst) == self.mine {
            self.state.send_replace(state);
        }
    }

    /// The connection is gone; a broken one keeps its reason (the call it
    /// carried may report its end only after the connection is dropped).
    fn close(&self) {
        if self.generation.load(Ordering::SeqCst) == self.mine {
            self.state.send_if_modified(|state| {
                if matches!(state, ConnectionState::Broken(_)) {
                    false
                } else {
                    *state = ConnectionState::Closed;
                    true
                }
            });
        }
    }
}

/// A connection that reports when the server is first heard from, and when
/// it ends.
struct WatchedIo {
    inner: BoxIo,
    watch: ConnectionWatch,
    heard_server: bool,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let had_room = buf.remaining() > 0;
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(outcome) = &result {
            let got_bytes = buf.filled().len() > before;
            if outcome.is_ok() && got_bytes {
                if !self.heard_server {
                    self.heard_server = true;
                    self.watch.set(ConnectionState::Ready);
                }
            } else if let Err(e) = outcome {
                self.watch.set(ConnectionState::Broken(e.to_string()));
            } else if had_room {
                // End of stream.
                self.watch.set(ConnectionState::Closed);
            }
        }
        result
    }
}

impl AsyncWrite for WatchedIo {
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
}

impl Drop for WatchedIo {
    fn drop(&mut self) {
        self.watch.close();
    }
}
