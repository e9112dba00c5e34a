//! Serving TLS (and mTLS): the server's certificate, what it asks of
//! clients, and the handshake every accepted connection goes through
//! before tonic sees it.
//!
//! The handshake is done here, with tokio-rustls, rather than by tonic's
//! server TLS, for three reasons: it works the same on TCP and on the
//! in-memory network (virtual time: a handshake needs no timers); each
//! handshake's outcome is recorded on the server's timeline (a client that
//! refuses the server's certificate, or a client certificate the server
//! refuses, is visible to scenarios); and the handshake runs on top of
//! the server's own connection wrapper, so holding, resetting and
//! counting connections work for TLS connections as for plaintext ones.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::server::{NoServerSessionStorage, WebPkiClientVerifier};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::Connected;
use xds_vocabulary::certificates::Identity;

use crate::connection::ConnectionInfo;
use crate::event::{ServerEvent, TlsFailure};
use crate::shared::Inner;

/// How a server serves TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// The server's certificate (chain, leaf first) and private key.
    pub identity: Identity,
    /// What the server asks of clients.
    pub client_auth: ClientAuth,
}

/// Whether the server asks clients for a certificate, and which it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// It asks for none (TLS with server authentication only).
    None,
    /// It asks for one, verifies it against `roots_pem` if the client sends
    /// one, and also takes clients without.
    Optional { roots_pem: String },
    /// mTLS: a client without a certificate chaining to `roots_pem` is
    /// refused.
    Required { roots_pem: String },
}

/// The settings cannot make a TLS server.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("the server certificate is not PEM: {0}")]
    Certificate(rustls_pki_types::pem::Error),
    #[error("the server certificate PEM holds no certificate")]
    NoCertificate,
    #[error("the server's private key is not PEM: {0}")]
    PrivateKey(rustls_pki_types::pem::Error),
    #[error("the client roots are not PEM: {0}")]
    Roots(rustls_pki_types::pem::Error),
    #[error("a client root certificate is unusable: {0}")]
    Root(rustls::Error),
    #[error("cannot verify clients with these roots: {0}")]
    ClientVerifier(rustls::server::VerifierBuilderError),
    #[error("rustls refuses the configuration: {0}")]
    Config(rustls::Error),
}

/// Builds the acceptor every connection of a TLS server goes through.
pub(crate) fn acceptor(settings: &TlsSettings) -> Result<TlsAcceptor, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = CertificateDer::pem_slice_iter(settings.identity.certificate_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(TlsSetupError::Certificate)?;
    if chain.is_empty() {
        return Err(TlsSetupError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(settings.identity.private_key_pem.as_bytes())
        .map_err(TlsSetupError::PrivateKey)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsSetupError::Config)?;
    let builder = match &settings.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Optional { roots_pem } | ClientAuth::Required { roots_pem } => {
            let mut roots = rustls::RootCertStore::empty();
            for root in CertificateDer::pem_slice_iter(roots_pem.as_bytes()) {
                roots
                    .add(root.map_err(TlsSetupError::Roots)?)
                    .map_err(TlsSetupError::Root)?;
            }
            let mut verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            if matches!(settings.client_auth, ClientAuth::Optional { .. }) {
                verifier = verifier.allow_unauthenticated();
            }
            builder
                .with_client_cert_verifier(verifier.build().map_err(TlsSetupError::ClientVerifier)?)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(TlsSetupError::Config)?;
    // gRPC runs over HTTP/2 and its clients insist on ALPN "h2" (C-core
    // refuses a handshake without a selected protocol).
    config.alpn_protocols = vec![b"h2".to_vec()];
    // No resumption: every connection shows a full handshake, with the
    // client's certificate verified again, so each attempt on the
    // timeline says what the certificates decided.
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The connections of `incoming` once their TLS handshake succeeded.
/// Each handshake runs on its own task (a slow one holds up no other) and
/// its outcome is recorded; a failed one drops its connection.
pub(crate) fn handshakes<I, IO>(
    incoming: I,
    acceptor: TlsAcceptor,
    inner: &Arc<Inner>,
) -> UnboundedReceiverStream<io::Result<TlsConnection<IO>>>
where
    I: Stream<Item = io::Result<IO>> + Send + 'static,
    IO: AsyncRead + AsyncWrite + Connected<ConnectInfo = ConnectionInfo> + Unpin + Send + 'static,
{
    let (done, handshaken) = mpsc::unbounded_channel();
    let shutdown = inner.shutdown_signal();
    let inner = Arc::downgrade(inner);
    tokio::spawn(async move {
        tokio::pin!(incoming);
        tokio::pin!(shutdown);
        loop {
            let next = tokio::select! {
                _ = &mut shutdown => return,
                next = incoming.next() => next,
            };
            match next {
                None => return,
                Some(Err(error)) => {
                    if done.send(Err(error)).is_err() {
                        return;
                    }
                }
                Some(Ok(io)) => {
                    let Some(shutdown) = inner.upgrade().map(|i| i.shutdown_signal()) else {
                        return;
                    };
                    let handshake = handshake(io, acceptor.clone(), inner.clone(), done.clone());
                    // A handshake that never ends (held connections) ends
                    // with the server.
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = shutdown => {}
                            _ = handshake => {}
                        }
                    });
                }
            }
        }
    });
    UnboundedReceiverStream::new(handshaken)
}

async fn handshake<IO>(
    io: IO,
    acceptor: TlsAcceptor,
    inner: Weak<Inner>,
    done: mpsc::UnboundedSender<io::Result<TlsConnection<IO>>>,
) where
    IO: AsyncRead + AsyncWrite + Connected<ConnectInfo = ConnectionInfo> + Unpin,
{
    let connection = io.connect_info().connection;
    let record = |event| {
        if let Some(inner) = inner.upgrade() {
            inner.update(|state| state.record(event));
        }
    };
    match acceptor.accept(io).into_fallible().await {
        Ok(stream) => {
            let client_certificate = stream.get_ref().1.peer_certificates().is_some();
            record(ServerEvent::TlsEstablished {
                connection,
                client_certificate,
            });
            // If tonic's server is gone, the connection drops here.
            let _ = done.send(Ok(TlsConnection(stream)));
        }
        Err((error, io)) => {
            record(ServerEvent::TlsFailed {
                connection,
                failure: failure(&error),
            });
            // Dropped after the failure is recorded, so the timeline says
            // why before it says the connection closed.
            drop(io);
        }
    }
}

/// What a failed handshake's error says, in the terms scenarios use.
fn failure(error: &io::Error) -> TlsFailure {
    match error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::NoCertificatesPresented) => TlsFailure::NoClientCertificate,
        Some(rustls::Error::InvalidCertificate(reason)) => {
            TlsFailure::ClientCertificateRejected(format!("{reason:?}"))
        }
        Some(rustls::Error::AlertReceived(alert)) => {
            TlsFailure::AlertFromClient(format!("{alert:?}"))
        }
        Some(other) => TlsFailure::Other(other.to_string()),
        // tokio-rustls's end of input before the handshake was done.
        None if error.kind() == io::ErrorKind::UnexpectedEof => TlsFailure::ClosedByClient,
        None => TlsFailure::Other(error.to_string()),
    }
}

/// A connection after a successful handshake: what tonic serves.
pub(crate) struct TlsConnection<IO>(tokio_rustls::server::TlsStream<IO>);

impl<IO: Connected<ConnectInfo = ConnectionInfo>> Connected for TlsConnection<IO> {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        self.0.get_ref().0.connect_info()
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsConnection<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsConnection<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}
