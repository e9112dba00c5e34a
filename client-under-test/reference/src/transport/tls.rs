//! TLS channel credentials (gRFC A65): the byte stream to an xDS server
//! wrapped in TLS, verifying the server against the configured roots and
//! presenting the configured identity (mTLS).
//!
//! The handshake runs inside the channel's connector, so a failed one is a
//! failed connection attempt like a refused connection: the call fails
//! UNAVAILABLE before any response, which gRFC A57 makes a connectivity
//! failure (backoff, fallback to the next server, errors to watchers).
//!
//! As gRPC does: the server's certificate must chain to
//! `ca_certificate_file` and be valid for the host of `server_uri`; ALPN
//! offers `h2` and the server must select it (C-core refuses a handshake
//! without a selected protocol). The files are read on every attempt.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls;

use super::BoxIo;
use crate::bootstrap::TlsCreds;

/// Why a TLS connection attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not PEM: {source}", path.display())]
    Pem {
        path: PathBuf,
        source: rustls_pki_types::pem::Error,
    },
    #[error("{} holds no certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("a root certificate in {} is unusable: {source}", path.display())]
    Root {
        path: PathBuf,
        source: rustls::Error,
    },
    /// A65 takes the system's roots then; the reference client has none.
    #[error("no ca_certificate_file, and the reference client has no system root store")]
    NoRoots,
    #[error("the client certificate and key are unusable: {0}")]
    Identity(rustls::Error),
    #[error("{0:?} is no host name or address a certificate can be checked against")]
    ServerName(String),
    #[error("TLS handshake failed: {0}")]
    Handshake(io::Error),
    #[error("the server selected no ALPN protocol; gRPC needs h2")]
    NoAlpn,
}

/// What the client skips on purpose in a broken build (see
/// `Defects::tls_accepts_any_server` and `Defects::tls_no_identity`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsDefects {
    pub accepts_any_server: bool,
    pub no_identity: bool,
}

/// Wraps `io`, a fresh connection to `server_uri`, in TLS as `creds` say.
pub(crate) async fn connect(
    io: BoxIo,
    server_uri: &str,
    creds: &TlsCreds,
    defects: TlsDefects,
) -> Result<BoxIo, TlsError> {
    let config = client_config(creds, defects)?;
    let host = host_of(server_uri);
    let name =
        ServerName::try_from(host.to_string()).map_err(|_| TlsError::ServerName(host.into()))?;
    let stream = TlsConnector::from(Arc::new(config))
        .connect(name, io)
        .await
        .map_err(TlsError::Handshake)?;
    if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
        return Err(TlsError::NoAlpn);
    }
    Ok(Box::new(stream))
}

fn client_config(creds: &TlsCreds, defects: TlsDefects) -> Result<rustls::ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Identity)?;
    let builder = if defects.accepts_any_server {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(broken::AcceptsAnyServer::new()))
    } else {
        let path = creds
            .ca_certificate_file
            .as_ref()
            .ok_or(TlsError::NoRoots)?;
        let mut roots = rustls::RootCertStore::empty();
        for root in certificates(path)? {
            roots.add(root).map_err(|source| TlsError::Root {
                path: path.clone(),
                source,
            })?;
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &creds.identity {
        Some((certificate, key)) if !defects.no_identity => {
            let chain = certificates(certificate)?;
            let key =
                PrivateKeyDer::from_pem_slice(&read(key)?).map_err(|source| TlsError::Pem {
                    path: key.clone(),
                    source,
                })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(TlsError::Identity)?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Every certificate in a PEM file; at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            path: path.to_path_buf(),
            source,
        })?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certificates)
}

/// The host a certificate must be valid for: `server_uri` without a
/// `dns:///` scheme, a port, or IPv6 brackets.
fn host_of(server_uri: &str) -> &str {
    let authority = server_uri.trim_start_matches("dns:///");
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    };
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The verifier of a deliberately broken client: it takes any server
/// certificate (tests of the scenarios only).
mod broken {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::client::danger::{
        HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
    };
    use tokio_rustls::rustls::crypto::{
        CryptoProvider, verify_tls12_signature, verify_tls13_signature,
    };
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use tokio_rustls::rustls::{DigitallySignedStruct, SignatureScheme};

    #[derive(Debug)]
    pub(super) struct AcceptsAnyServer(CryptoProvider);

    impl AcceptsAnyServer {
        pub(super) fn new() -> Self {
            AcceptsAnyServer(rustls::crypto::ring::default_provider())
        }
    }

    impl ServerCertVerifier for AcceptsAnyServer {
        fn verify_server_cert(
            &self,
            _end_entity: &CertificateDer<'_>,
            _intermediates: &[CertificateDer<'_>],
            _server_name: &ServerName<'_>,
            _ocsp_response: &[u8],
            _now: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        // The handshake's signatures are still checked: the defect is
        // trusting the certificate, not a broken TLS stack.
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            verify_tls12_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            verify_tls13_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::{ChannelCreds, DEFAULT_REFRESH_INTERVAL, XdsServerConfig};
    use crate::transport::{ConnectionState, XdsTransport, XdsTransportFactory};
    use rustls::server::WebPkiClientVerifier;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio::sync::mpsc;
    use xds_vocabulary::AdsProtocol;
    use xds_vocabulary::certificates::{Identity, Signer, TestPki};
    use xds_vocabulary::transport::ConnectFuture;

    #[test]
    fn hosts_of_server_uris() {
        assert_eq!(host_of("primary:443"), "primary");
        assert_eq!(host_of("127.0.0.1:5000"), "127.0.0.1");
        assert_eq!(host_of("dns:///xds.example.com:443"), "xds.example.com");
        assert_eq!(host_of("[::1]:443"), "::1");
        assert_eq!(host_of("in-memory"), "in-memory");
    }

    /// A run's certificates as files, and a server to talk to.
    struct Setup {
        pki: TestPki,
        dir: tempfile::TempDir,
    }

    impl Setup {
        fn new() -> Self {
            Setup {
                pki: TestPki::generate().expect("certificates"),
                dir: tempfile::tempdir().expect("temporary directory"),
            }
        }

        fn write(&self, name: &str, contents: &str) -> PathBuf {
            let path = self.dir.path().join(name);
            std::fs::write(&path, contents).expect("write");
            path
        }

        /// Credentials trusting the run's CA, with a client certificate
        /// from `identity` for mTLS.
        fn creds(&self, identity: Option<Signer>) -> TlsCreds {
            TlsCreds {
                ca_certificate_file: Some(self.write("ca.pem", self.pki.ca_pem())),
                identity: identity.map(|signer| {
                    let id = self.pki.client_identity(signer).expect("client");
                    (
                        self.write("client.pem", &id.certificate_pem),
                        self.write("client.key", &id.private_key_pem),
                    )
                }),
                refresh_interval: DEFAULT_REFRESH_INTERVAL,
            }
        }

        fn server_identity(&self, signer: Signer) -> Identity {
            self.pki
                .server_identity(&["primary".to_string()], signer)
                .expect("server certificate")
        }
    }

    /// How a test server treats clients.
    #[derive(Clone, Copy)]
    enum Asks {
        Nothing,
        ClientCertificate,
    }

    fn server_config(
        setup: &Setup,
        identity: &Identity,
        asks: Asks,
        alpn: bool,
    ) -> rustls::ServerConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("protocol versions");
        let builder = match asks {
            Asks::Nothing => builder.with_no_client_auth(),
            Asks::ClientCertificate => {
                let mut roots = rustls::RootCertStore::empty();
                for root in CertificateDer::pem_slice_iter(setup.pki.ca_pem().as_bytes()) {
                    roots.add(root.expect("PEM")).expect("root");
                }
                builder.with_client_cert_verifier(
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .expect("verifier"),
                )
            }
        };
        let chain = CertificateDer::pem_slice_iter(identity.certificate_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("PEM");
        let key = PrivateKeyDer::from_pem_slice(identity.private_key_pem.as_bytes()).expect("key");
        let mut config = builder.with_single_cert(chain, key).expect("config");
        if alpn {
            config.alpn_protocols = vec![b"h2".to_vec()];
        }
        config
    }

    /// What the server side of one connection saw: whether the handshake
    /// worked, and whether the client presented a certificate.
    type Seen = Result<bool, String>;

    /// Serves `config` on the other end of a new pipe: completes the
    /// handshake, then writes `hello` (the server's first bytes).
    fn serve(config: rustls::ServerConfig, seen: mpsc::UnboundedSender<Seen>) -> DuplexStream {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        tokio::spawn(async move {
            match acceptor.accept(server).await {
                Ok(mut stream) => {
                    let _ = seen.send(Ok(stream.get_ref().1.peer_certificates().is_some()));
                    let _ = stream.write_all(b"hello").await;
                    let _ = stream.flush().await;
                    // Hold the connection until the client is done.
                    let mut rest = Vec::new();
                    let _ = stream.read_to_end(&mut rest).await;
                }
                Err(e) => {
                    let _ = seen.send(Err(e.to_string()));
                }
            }
        });
        client
    }

    async fn connect_to(
        config: rustls::ServerConfig,
        creds: &TlsCreds,
        defects: TlsDefects,
    ) -> (Result<BoxIo, TlsError>, mpsc::UnboundedReceiver<Seen>) {
        let (seen, seen_rx) = mpsc::unbounded_channel();
        let io = serve(config, seen);
        let result = connect(Box::new(io), "primary:443", creds, defects).await;
        (result, seen_rx)
    }

    #[tokio::test(start_paused = true)]
    async fn tls_to_a_server_the_ca_vouches_for() {
        let setup = Setup::new();
        let config = server_config(
            &setup,
            &setup.server_identity(Signer::TrustedCa),
            Asks::Nothing,
            true,
        );
        let (result, mut seen) =
            connect_to(config, &setup.creds(None), TlsDefects::default()).await;
        let mut io = result.expect("handshake");
        let mut hello = [0u8; 5];
        io.read_exact(&mut hello).await.expect("the server's bytes");
        assert_eq!(&hello, b"hello");
        assert_eq!(seen.recv().await, Some(Ok(false)), "no client certificate");
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_from_another_ca_is_refused() {
        let setup = Setup::new();
        let config = server_config(
            &setup,
            &setup.server_identity(Signer::UntrustedCa),
            Asks::Nothing,
            true,
        );
        let (result, mut seen) =
            connect_to(config.clone(), &setup.creds(None), TlsDefects::default()).await;
        let err = result.err().expect("refused").to_string();
        assert_eq!(
            err,
            "TLS handshake failed: invalid peer certificate: UnknownIssuer"
        );
        // The client says why (vectored writes reach the server whole).
        let server_saw = seen.recv().await.expect("the server's outcome");
        assert_eq!(
            server_saw,
            Err("received fatal alert: UnknownCA".to_string())
        );
        // A broken client takes it.
        let broken = TlsDefects {
            accepts_any_server: true,
            ..TlsDefects::default()
        };
        let (result, _) = connect_to(config, &setup.creds(None), broken).await;
        assert!(result.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn the_certificate_must_name_the_host_dialled() {
        let setup = Setup::new();
        let elsewhere = setup
            .pki
            .server_identity(&["elsewhere".to_string()], Signer::TrustedCa)
            .expect("certificate");
        let config = server_config(&setup, &elsewhere, Asks::Nothing, true);
        let (result, _) = connect_to(config, &setup.creds(None), TlsDefects::default()).await;
        let err = result.err().expect("refused").to_string();
        assert!(
            err.contains(r#"certificate not valid for name "primary""#),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_without_alpn_h2_is_refused() {
        let setup = Setup::new();
        let config = server_config(
            &setup,
            &setup.server_identity(Signer::TrustedCa),
            Asks::Nothing,
            false,
        );
        let (result, _) = connect_to(config, &setup.creds(None), TlsDefects::default()).await;
        assert!(matches!(result, Err(TlsError::NoAlpn)));
    }

    #[tokio::test(start_paused = true)]
    async fn mtls_presents_the_configured_identity() {
        let setup = Setup::new();
        let config = server_config(
            &setup,
            &setup.server_identity(Signer::TrustedCa),
            Asks::ClientCertificate,
            true,
        );
        let creds = setup.creds(Some(Signer::TrustedCa));
        let (result, mut seen) = connect_to(config.clone(), &creds, TlsDefects::default()).await;
        let mut io = result.expect("handshake");
        let mut hello = [0u8; 5];
        io.read_exact(&mut hello).await.expect("the server's bytes");
        assert_eq!(seen.recv().await, Some(Ok(true)), "a verified certificate");
        // A broken client keeps its certificate to itself: with TLS 1.3 its
        // handshake still completes; the server refuses it afterwards.
        let broken = TlsDefects {
            no_identity: true,
            ..TlsDefects::default()
        };
        let (_, mut seen) = connect_to(config, &creds, broken).await;
        let server_saw = seen.recv().await.expect("the server's outcome");
        assert_eq!(server_saw, Err("peer sent no certificates".to_string()));
    }

    #[tokio::test(start_paused = true)]
    async fn unreadable_files_fail_the_attempt() {
        let setup = Setup::new();
        let config = server_config(
            &setup,
            &setup.server_identity(Signer::TrustedCa),
            Asks::Nothing,
            true,
        );
        let mut creds = setup.creds(None);
        creds.ca_certificate_file = Some(setup.dir.path().join("missing.pem"));
        let (result, _) = connect_to(config.clone(), &creds, TlsDefects::default()).await;
        assert!(matches!(result, Err(TlsError::Read { .. })));
        let not_pem = setup.write("not.pem", "no certificates here");
        creds.ca_certificate_file = Some(not_pem);
        let (result, _) = connect_to(config.clone(), &creds, TlsDefects::default()).await;
        assert!(matches!(result, Err(TlsError::NoCertificate { .. })));
        creds.ca_certificate_file = None;
        let (result, _) = connect_to(config, &creds, TlsDefects::default()).await;
        assert!(matches!(result, Err(TlsError::NoRoots)));
    }

    /// Hands out the client end of a pipe per connection attempt, each
    /// served with `config`.
    struct Pipes {
        config: rustls::ServerConfig,
        seen: mpsc::UnboundedSender<Seen>,
    }

    impl XdsTransportFactory for Pipes {
        fn connect(&self, _server_uri: &str) -> ConnectFuture {
            let io = serve(self.config.clone(), self.seen.clone());
            Box::pin(async move { Ok(Box::new(io) as BoxIo) })
        }
    }

    /// With TLS 1.3 the client's handshake is done before the server has
    /// checked the client's certificate; a refused certificate then ends
    /// the connection before the server's first bytes. The connection must
    /// never count as READY (A57 starts timers only on a connected stream),
    /// and it ends broken, with the server's alert as the reason.
    #[tokio::test(start_paused = true)]
    async fn a_refused_client_certificate_is_never_ready() {
        let setup = Setup::new();
        let config = server_config(
            &setup,
            &setup.server_identity(Signer::TrustedCa),
            Asks::ClientCertificate,
            true,
        );
        let (seen, mut seen_rx) = mpsc::unbounded_channel();
        let server = XdsServerConfig {
            server_uri: "primary:443".into(),
            channel_creds: ChannelCreds::Tls(setup.creds(Some(Signer::UntrustedCa))),
            server_features: vec![],
            protocol: AdsProtocol::Sotw,
        };
        let transport = XdsTransport::new(
            Arc::new(Pipes { config, seen }),
            &server,
            TlsDefects::default(),
        );
        let mut state = transport.state.clone();
        let mut states = Vec::new();
        let call = tokio::spawn({
            let channel = transport.channel.clone();
            async move {
                let mut client = envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient::new(channel);
                client
                    .stream_aggregated_resources(tokio_stream::iter(Vec::new()))
                    .await
                    .map(|_| ())
            }
        });
        loop {
            let current = state.borrow_and_update().clone();
            let broken = matches!(current, ConnectionState::Broken(_));
            states.push(current);
            if broken || state.changed().await.is_err() {
                break;
            }
        }
        assert!(call.await.expect("the call's task").is_err());
        assert!(!states.contains(&ConnectionState::Ready), "{states:?}");
        assert_eq!(
            states.last(),
            Some(&ConnectionState::Broken(
                "received fatal alert: UnknownCA".into()
            )),
            "{states:?}"
        );
        assert_eq!(
            seen_rx.recv().await,
            Some(Err("invalid peer certificate: UnknownIssuer".to_string()))
        );
    }
}
