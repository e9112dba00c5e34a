//! A run's TLS material (gRFC A65 scenarios): fresh certificates for the
//! servers that serve TLS, as settings for the fake servers and as files
//! that the client's bootstrap names, in a temporary directory that is
//! removed when the run is over (also when it fails or panics: it is
//! removed when this value is dropped).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use xds_fake_server::tls::{ClientAuth, TlsSettings};
use xds_vocabulary::certificates::{CertificateError, Identity, Signer, TestPki};
use xds_vocabulary::{ChannelCredentials, IdentityFiles, TlsCredentials};

use crate::scenario::{ClientAuthPlan, Scenario, ServerCertificatePlan, ServerDef, TlsPlan};

/// The only name a `wrong_host` server certificate is valid for.
const WRONG_HOST: &str = "elsewhere.invalid";

/// Making a run's TLS material failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsMaterialError {
    #[error(transparent)]
    Certificate(#[from] CertificateError),
    #[error("cannot write the run's certificates to {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// The certificates of one run.
pub struct RunCertificates {
    /// Removed on drop, with every file in it.
    dir: tempfile::TempDir,
    pki: TestPki,
    ca_file: PathBuf,
    /// The client's certificate and key files, by who signed them.
    client_files: BTreeMap<Signer, IdentityFiles>,
}

impl std::fmt::Debug for RunCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunCertificates")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl RunCertificates {
    /// The material `scenario`'s TLS servers need; `None` when none serves
    /// TLS (nothing is made or written then).
    pub fn for_scenario(scenario: &Scenario) -> Result<Option<Self>, TlsMaterialError> {
        let plans: Vec<TlsPlan> = scenario.servers.iter().filter_map(|s| s.tls).collect();
        if plans.is_empty() {
            return Ok(None);
        }
        let dir = tempfile::Builder::new()
            .prefix("xds-conformance-tls-")
            .tempdir()
            .map_err(|source| TlsMaterialError::Write {
                path: std::env::temp_dir(),
                source,
            })?;
        let pki = TestPki::generate()?;
        let ca_file = write(dir.path(), "ca.pem", pki.ca_pem())?;
        let mut client_files = BTreeMap::new();
        for signer in plans.iter().filter_map(|p| p.client_certificate) {
            if client_files.contains_key(&signer) {
                continue;
            }
            let stem = match signer {
                Signer::TrustedCa => "client",
                Signer::UntrustedCa => "client-untrusted",
            };
            let files = write_identity(dir.path(), stem, &pki.client_identity(signer)?)?;
            client_files.insert(signer, files);
        }
        Ok(Some(RunCertificates {
            dir,
            pki,
            ca_file,
            client_files,
        }))
    }

    /// Where the files are.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The fake server settings for `server`; `None`: it serves
    /// plaintext. Its certificate is valid for its name (its in-memory
    /// host), `localhost` and `127.0.0.1` (where it listens over TCP); a
    /// `wrong_host` one only for a name no client dials.
    pub fn server_settings(
        &self,
        server: &ServerDef,
    ) -> Result<Option<TlsSettings>, TlsMaterialError> {
        let Some(plan) = server.tls else {
            return Ok(None);
        };
        let dialled = vec![
            server.name.clone(),
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ];
        let (names, signer) = match plan.server_certificate {
            ServerCertificatePlan::Trusted => (dialled, Signer::TrustedCa),
            ServerCertificatePlan::Untrusted => (dialled, Signer::UntrustedCa),
            ServerCertificatePlan::WrongHost => (vec![WRONG_HOST.to_string()], Signer::TrustedCa),
        };
        let identity = self.pki.server_identity(&names, signer)?;
        let roots_pem = self.pki.ca_pem().to_string();
        let client_auth = match plan.client_auth {
            ClientAuthPlan::None => ClientAuth::None,
            ClientAuthPlan::Optional => ClientAuth::Optional { roots_pem },
            ClientAuthPlan::Required => ClientAuth::Required { roots_pem },
        };
        Ok(Some(TlsSettings {
            identity,
            client_auth,
        }))
    }

    /// The channel credentials of `server`'s bootstrap entries.
    pub fn channel_creds(&self, server: &ServerDef) -> ChannelCredentials {
        match server.tls {
            None => ChannelCredentials::Insecure,
            Some(plan) => ChannelCredentials::Tls(TlsCredentials {
                ca_certificate_file: self.ca_file.clone(),
                identity: plan
                    .client_certificate
                    .and_then(|signer| self.client_files.get(&signer).cloned()),
            }),
        }
    }
}

/// The channel credentials for each server of `scenario` (by name), given
/// its certificates (`None`: no server serves TLS).
pub fn channel_creds_of(
    scenario: &Scenario,
    certificates: Option<&RunCertificates>,
) -> BTreeMap<String, ChannelCredentials> {
    scenario
        .servers
        .iter()
        .map(|def| {
            let creds = certificates
                .map(|c| c.channel_creds(def))
                .unwrap_or_default();
            (def.name.clone(), creds)
        })
        .collect()
}

fn write(dir: &Path, name: &str, contents: &str) -> Result<PathBuf, TlsMaterialError> {
    let path = dir.join(name);
    std::fs::write(&path, contents).map_err(|source| TlsMaterialError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

fn write_identity(
    dir: &Path,
    stem: &str,
    identity: &Identity,
) -> Result<IdentityFiles, TlsMaterialError> {
    Ok(IdentityFiles {
        certificate_file: write(dir, &format!("{stem}.pem"), &identity.certificate_pem)?,
        private_key_file: write(dir, &format!("{stem}.key"), &identity.private_key_pem)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    #[test]
    fn plaintext_scenarios_make_nothing() {
        let s = load_str("t.yaml", "description: d\nservers: {a: {}}\nsteps: []\n").unwrap();
        assert!(RunCertificates::for_scenario(&s).unwrap().is_none());
        assert_eq!(
            channel_creds_of(&s, None)["a"],
            ChannelCredentials::Insecure
        );
    }

    #[test]
    fn files_for_the_bootstrap_and_settings_for_the_servers() {
        let s = load_str(
            "t.yaml",
            "description: d\nservers:\n  plain: {}\n  tls: {tls: {server_certificate: untrusted}}\n  \
             mtls: {tls: {client_certificate: untrusted}}\nsteps: []\n",
        )
        .unwrap();
        let certificates = RunCertificates::for_scenario(&s).unwrap().unwrap();
        let dir = certificates.dir().to_path_buf();
        let creds = channel_creds_of(&s, Some(&certificates));
        assert_eq!(creds["plain"], ChannelCredentials::Insecure);
        let ChannelCredentials::Tls(tls) = &creds["tls"] else {
            panic!("{creds:?}")
        };
        assert_eq!(tls.ca_certificate_file, dir.join("ca.pem"));
        assert_eq!(tls.identity, None);
        let ChannelCredentials::Tls(mtls) = &creds["mtls"] else {
            panic!("{creds:?}")
        };
        let identity = mtls.identity.clone().unwrap();
        assert_eq!(identity.certificate_file, dir.join("client-untrusted.pem"));
        let ca = std::fs::read_to_string(&tls.ca_certificate_file).unwrap();
        assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(
            std::fs::read_to_string(&identity.private_key_file)
                .unwrap()
                .contains("PRIVATE KEY")
        );
        // The client certificate only made where a server plan asks for it.
        assert!(!dir.join("client.pem").exists());

        assert_eq!(certificates.server_settings(&s.servers[0]).unwrap(), None);
        let tls_settings = certificates
            .server_settings(&s.servers[1])
            .unwrap()
            .unwrap();
        assert_eq!(tls_settings.client_auth, ClientAuth::None);
        let mtls_settings = certificates
            .server_settings(&s.servers[2])
            .unwrap()
            .unwrap();
        assert_eq!(
            mtls_settings.client_auth,
            ClientAuth::Required { roots_pem: ca }
        );

        drop(certificates);
        assert!(!dir.exists(), "the run's directory outlived it");
    }
}
