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

    #[test]
    fn hosts_of_server_uris() {
        assert_eq!(host_of("primary:443"), "primary");
        assert_eq!(host_of("127.0.0.1:5000"), "127.0.0.1");
        assert_eq!(host_of("dns:///xds.example.com:443"), "xds.example.com");
        assert_eq!(host_of("[::1]:443"), "::1");
        assert_eq!(host_of("in-memory"), "in-memory");
    }
}
