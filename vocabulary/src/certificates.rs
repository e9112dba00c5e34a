//! Certificates made for one run, for TLS on the xDS channel (gRFC A65):
//! a CA that clients and servers trust, another CA that nobody trusts,
//! and leaf certificates signed by either, for servers (valid for the
//! names and addresses a client dials) and for clients (mTLS).
//!
//! Everything is made fresh per run, in memory, as PEM text; whoever runs
//! the scenario decides where the files go (a temporary directory removed
//! with the run). Nothing here is a secret worth keeping: the keys live as
//! long as the run.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// Which CA signs a leaf certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signer {
    /// The CA every party of the run trusts ([`TestPki::ca_pem`]).
    TrustedCa,
    /// A CA no party trusts: its certificates must be refused.
    UntrustedCa,
}

/// Making a certificate failed (rcgen refused the parameters or could not
/// make a key).
#[derive(Debug, thiserror::Error)]
#[error("cannot make the {what}: {source}")]
pub struct CertificateError {
    what: &'static str,
    #[source]
    source: rcgen::Error,
}

/// A certificate and its private key, as PEM text.
#[derive(Clone, PartialEq, Eq)]
pub struct Identity {
    pub certificate_pem: String,
    pub private_key_pem: String,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is test material, but it still has no business in logs.
        f.debug_struct("Identity")
            .field("certificate_pem", &self.certificate_pem)
            .finish_non_exhaustive()
    }
}

/// One CA: its self-signed certificate and what signs with it.
struct Ca {
    certificate_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(common_name: &str) -> Result<Self, CertificateError> {
        let what = "CA certificate";
        let err = |source| CertificateError { what, source };
        let key = KeyPair::generate().map_err(err)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params.self_signed(&key).map_err(err)?;
        Ok(Ca {
            certificate_pem: certificate.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    fn sign(
        &self,
        what: &'static str,
        common_name: &str,
        subject_alt_names: Vec<SanType>,
        usage: ExtendedKeyUsagePurpose,
    ) -> Result<Identity, CertificateError> {
        let err = |source| CertificateError { what, source };
        let key = KeyPair::generate().map_err(err)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name(common_name);
        params.subject_alt_names = subject_alt_names;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let certificate = params.signed_by(&key, &self.issuer).map_err(err)?;
        Ok(Identity {
            certificate_pem: certificate.pem(),
            private_key_pem: key.serialize_pem(),
        })
    }
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "xds-conformance");
    dn.push(DnType::CommonName, common_name);
    dn
}

/// The two CAs of a run; leaf certificates are made on demand.
pub struct TestPki {
    trusted: Ca,
    untrusted: Ca,
}

impl std::fmt::Debug for TestPki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestPki").finish_non_exhaustive()
    }
}

/// The common name of the client certificates (what a server that logs
/// its peers would show).
pub const CLIENT_COMMON_NAME: &str = "xds-conformance client";

impl TestPki {
    /// Two fresh CAs. The untrusted one has a name of its own, so a
    /// verifier finds no issuer for its certificates (an unknown CA), as
    /// with a certificate from a stranger, rather than a bad signature.
    pub fn generate() -> Result<Self, CertificateError> {
        Ok(TestPki {
            trusted: Ca::new("xds-conformance CA")?,
            untrusted: Ca::new("xds-conformance untrusted CA")?,
        })
    }

    /// The trusted CA's certificate: the `ca_certificate_file` clients
    /// verify servers with, and the roots servers verify clients with.
    pub fn ca_pem(&self) -> &str {
        &self.trusted.certificate_pem
    }

    fn ca(&self, signer: Signer) -> &Ca {
        match signer {
            Signer::TrustedCa => &self.trusted,
            Signer::UntrustedCa => &self.untrusted,
        }
    }

    /// A server certificate valid for `names`: DNS names (`primary`,
    /// `localhost`) and IP addresses (`127.0.0.1`), as a client checks the
    /// host it dialled against them.
    pub fn server_identity(
        &self,
        names: &[String],
        signer: Signer,
    ) -> Result<Identity, CertificateError> {
        let what = "server certificate";
        let mut sans = Vec::with_capacity(names.len());
        for n in names {
            sans.push(match n.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(
                    n.clone()
                        .try_into()
                        .map_err(|source| CertificateError { what, source })?,
                ),
            });
        }
        let common_name = names.first().map_or("xds server", String::as_str);
        self.ca(signer)
            .sign(what, common_name, sans, ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate (for mTLS), named [`CLIENT_COMMON_NAME`].
    pub fn client_identity(&self, signer: Signer) -> Result<Identity, CertificateError> {
        self.ca(signer).sign(
            "client certificate",
            CLIENT_COMMON_NAME,
            Vec::new(),
            ExtendedKeyUsagePurpose::ClientAuth,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_pem_certificates_and_keys() {
        let pki = TestPki::generate().unwrap();
        assert!(pki.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        let server = pki
            .server_identity(
                &["primary".to_string(), "127.0.0.1".to_string()],
                Signer::TrustedCa,
            )
            .unwrap();
        assert!(
            server
                .certificate_pem
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(server.private_key_pem.contains("PRIVATE KEY-----"));
        let client = pki.client_identity(Signer::UntrustedCa).unwrap();
        assert_ne!(client.certificate_pem, server.certificate_pem);
        assert!(!format!("{client:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn a_name_that_is_no_dns_name_is_an_error() {
        let pki = TestPki::generate().unwrap();
        let err = pki
            .server_identity(&["nöt-ascii".to_string()], Signer::TrustedCa)
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot make the server certificate")
        );
    }
}
