//! TLS servers: the handshake before ADS, over the in-memory network and
//! over TCP, with tonic's own TLS client on the other side, and each
//! handshake's outcome on the recording.

use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint, Identity as TonicIdentity,
};
use xds_fake_server::ServingMode;
use xds_fake_server::event::{ServerEvent, TlsFailure};
use xds_fake_server::tls::{ClientAuth, TlsSettings};
use xds_vocabulary::certificates::{Identity, Signer, TestPki};
use xds_vocabulary::network::MemoryNetwork;

use crate::support::*;

struct Pki {
    pki: TestPki,
}

impl Pki {
    fn new() -> Self {
        Pki {
            pki: TestPki::generate().expect("certificates"),
        }
    }

    fn server_settings(&self, signer: Signer, client_auth: ClientAuth) -> TlsSettings {
        TlsSettings {
            identity: self
                .pki
                .server_identity(&["primary".into(), "127.0.0.1".into()], signer)
                .expect("server certificate"),
            client_auth,
        }
    }

    fn required(&self) -> ClientAuth {
        ClientAuth::Required {
            roots_pem: self.pki.ca_pem().to_string(),
        }
    }

    /// tonic's client TLS trusting the run's CA, with `identity` for mTLS.
    fn client(&self, identity: Option<&Identity>) -> ClientTlsConfig {
        let config =
            ClientTlsConfig::new().ca_certificate(Certificate::from_pem(self.pki.ca_pem()));
        match identity {
            Some(i) => config.identity(TonicIdentity::from_pem(
                &i.certificate_pem,
                &i.private_key_pem,
            )),
            None => config,
        }
    }
}

/// A TLS server at [`ADDRESS`] on a fresh in-memory network.
fn tls_serving(settings: &TlsSettings) -> (xds_fake_server::FakeAdsServer, MemoryNetwork) {
    let network = MemoryNetwork::new();
    let server = server(ServingMode::Auto);
    server.set_tls(Some(settings)).expect("valid TLS settings");
    server.set_resources(vec![listener("a", "1")], None);
    server
        .serve_in_memory(&network, ADDRESS)
        .expect("serve in memory");
    (server, network)
}

async fn tls_connect(
    network: &MemoryNetwork,
    tls: ClientTlsConfig,
) -> Result<Channel, tonic::transport::Error> {
    let network = network.clone();
    Endpoint::from_static("https://primary")
        .tls_config(tls)?
        .connect_with_connector(tower::service_fn(move |_uri| {
            let network = network.clone();
            async move {
                network
                    .connect(ADDRESS)
                    .await
                    .map(hyper_util::rt::TokioIo::new)
            }
        }))
        .await
}

/// A listener fetched over `channel`: the whole ADS path works.
async fn fetch_listener(channel: Channel) -> Result<(), tonic::Status> {
    let mut client = AdsStream::open(channel).await?;
    client.request(LDS, &["a"], None);
    let response = client.responses.message().await?.expect("a response");
    assert_eq!(entries(&response), vec![&listener("a", "1").entry]);
    Ok(())
}

fn tls_events(server: &xds_fake_server::FakeAdsServer) -> Vec<ServerEvent> {
    server
        .events()
        .into_iter()
        .map(|r| r.event)
        .filter(is_tls_event)
        .collect()
}

/// The connection-level events the TLS tests look at.
fn is_tls_event(e: &ServerEvent) -> bool {
    matches!(
        e,
        ServerEvent::ConnectionAccepted { .. }
            | ServerEvent::TlsEstablished { .. }
            | ServerEvent::TlsFailed { .. }
            | ServerEvent::ConnectionClosed { .. }
            | ServerEvent::StreamOpened { .. }
    )
}

#[tokio::test(start_paused = true)]
async fn ads_over_tls_with_server_authentication() {
    let pki = Pki::new();
    let (server, network) = tls_serving(&pki.server_settings(Signer::TrustedCa, ClientAuth::None));
    let channel = tls_connect(&network, pki.client(None))
        .await
        .expect("handshake");
    fetch_listener(channel).await.expect("ADS over TLS");
    let events = tls_events(&server);
    assert_eq!(
        events[..3],
        [
            ServerEvent::ConnectionAccepted { connection: 1 },
            ServerEvent::TlsEstablished {
                connection: 1,
                client_certificate: false,
            },
            ServerEvent::StreamOpened {
                stream: 1,
                connection: Some(1),
                protocol: xds_vocabulary::AdsProtocol::Sotw,
                after_close: None,
            },
        ],
        "{events:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn kds_is_served_over_tls_on_the_same_port() {
    use crate::kds::{GlobalToZone, ZoneStream, kuma, names, subscribe_all};
    use xds_vocabulary::kds::{KdsName, KdsRpc, types};
    let pki = Pki::new();
    let (server, network) = tls_serving(&pki.server_settings(Signer::TrustedCa, ClientAuth::None));
    server.set_resources(vec![kuma(types::MESH, KdsName::global("m"), "1")], None);
    let channel = tls_connect(&network, pki.client(None))
        .await
        .expect("handshake");
    let mut zone: GlobalToZone = ZoneStream::open(channel, KdsRpc::GlobalToZoneSync.path(), true)
        .await
        .expect("GlobalToZoneSync over TLS");
    zone.send(subscribe_all(types::MESH));
    assert_eq!(names(&zone.next().await), ["m."]);
    assert!(
        events_only(server.events()).contains(&ServerEvent::TlsEstablished {
            connection: 1,
            client_certificate: false,
        })
    );
}

#[tokio::test(start_paused = true)]
async fn mtls_verifies_the_client_certificate() {
    let pki = Pki::new();
    let (server, network) = tls_serving(&pki.server_settings(Signer::TrustedCa, pki.required()));
    let identity = pki
        .pki
        .client_identity(Signer::TrustedCa)
        .expect("client certificate");
    let channel = tls_connect(&network, pki.client(Some(&identity)))
        .await
        .expect("handshake");
    fetch_listener(channel).await.expect("ADS over mTLS");
    assert!(tls_events(&server).contains(&ServerEvent::TlsEstablished {
        connection: 1,
        client_certificate: true,
    }));
}

/// The client's attempt fails (with TLS 1.3 the client may finish its side
/// of the handshake before the server refuses it, so the failure can come
/// at connect or at the first call); the server records why, then closes.
async fn refused(
    server: &xds_fake_server::FakeAdsServer,
    network: &MemoryNetwork,
    tls: ClientTlsConfig,
) -> TlsFailure {
    let (tx, mut closes) = tokio::sync::mpsc::unbounded_channel();
    // With an observer the server keeps no events: the observer does.
    let seen: std::sync::Arc<std::sync::Mutex<Vec<ServerEvent>>> = Default::default();
    let keep = seen.clone();
    server.set_observer(std::sync::Arc::new(move |recorded| {
        keep.lock().expect("lock").push(recorded.event.clone());
        if matches!(recorded.event, ServerEvent::ConnectionClosed { .. }) {
            let _ = tx.send(());
        }
    }));
    let outcome = match tls_connect(network, tls).await {
        Ok(channel) => fetch_listener(channel).await.map_err(|_| ()),
        Err(_) => Err(()),
    };
    assert!(outcome.is_err(), "the connection should have failed");
    // The client may give up before the server is done with the
    // connection: wait until the server has closed it.
    let closed = tokio::time::timeout(QUIET, closes.recv()).await;
    assert!(
        matches!(closed, Ok(Some(()))),
        "the server never closed the connection"
    );
    let events: Vec<ServerEvent> = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|e| is_tls_event(e))
        .cloned()
        .collect();
    let failure = events.iter().find_map(|e| match e {
        ServerEvent::TlsFailed {
            connection: 1,
            failure,
        } => Some(failure.clone()),
        _ => None,
    });
    let position = |wanted: fn(&ServerEvent) -> bool| events.iter().position(wanted);
    assert!(
        position(|e| matches!(e, ServerEvent::TlsFailed { .. }))
            < position(|e| matches!(e, ServerEvent::ConnectionClosed { .. })),
        "the failure is recorded before the close: {events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ServerEvent::StreamOpened { .. })),
        "no stream on a refused connection: {events:?}"
    );
    failure.unwrap_or_else(|| panic!("no TLS failure recorded: {events:?}"))
}

#[tokio::test(start_paused = true)]
async fn mtls_refuses_a_client_without_a_certificate() {
    let pki = Pki::new();
    let (server, network) = tls_serving(&pki.server_settings(Signer::TrustedCa, pki.required()));
    assert_eq!(
        refused(&server, &network, pki.client(None)).await,
        TlsFailure::NoClientCertificate
    );
}

#[tokio::test(start_paused = true)]
async fn mtls_rejects_a_certificate_from_another_ca() {
    let pki = Pki::new();
    let (server, network) = tls_serving(&pki.server_settings(Signer::TrustedCa, pki.required()));
    let stranger = pki
        .pki
        .client_identity(Signer::UntrustedCa)
        .expect("client certificate");
    assert_eq!(
        refused(&server, &network, pki.client(Some(&stranger))).await,
        TlsFailure::ClientCertificateRejected("UnknownIssuer".into())
    );
}

#[tokio::test(start_paused = true)]
async fn optional_client_auth_takes_clients_with_and_without() {
    let pki = Pki::new();
    let settings = pki.server_settings(
        Signer::TrustedCa,
        ClientAuth::Optional {
            roots_pem: pki.pki.ca_pem().to_string(),
        },
    );
    let (server, network) = tls_serving(&settings);
    let identity = pki.pki.client_identity(Signer::TrustedCa).expect("cert");
    for tls in [pki.client(None), pki.client(Some(&identity))] {
        let channel = tls_connect(&network, tls).await.expect("handshake");
        fetch_listener(channel).await.expect("ADS");
    }
    let established: Vec<bool> = tls_events(&server)
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::TlsEstablished {
                client_certificate, ..
            } => Some(client_certificate),
            _ => None,
        })
        .collect();
    assert_eq!(established, [false, true]);
}

#[tokio::test(start_paused = true)]
async fn a_client_that_does_not_trust_the_server_says_so() {
    let pki = Pki::new();
    let (server, network) =
        tls_serving(&pki.server_settings(Signer::UntrustedCa, ClientAuth::None));
    let failure = refused(&server, &network, pki.client(None)).await;
    assert!(
        matches!(failure, TlsFailure::AlertFromClient(_)),
        "{failure:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_plaintext_client_fails_the_handshake() {
    let pki = Pki::new();
    let (server, network) = tls_serving(&pki.server_settings(Signer::TrustedCa, ClientAuth::None));
    let outcome = match connect(&network).await {
        Ok(channel) => fetch_listener(channel).await.map_err(|_| ()),
        Err(_) => Err(()),
    };
    assert!(outcome.is_err(), "plaintext to a TLS server cannot work");
    assert!(
        tls_events(&server).iter().any(|e| matches!(
            e,
            ServerEvent::TlsFailed {
                failure: TlsFailure::Other(_),
                ..
            }
        )),
        "{:?}",
        tls_events(&server)
    );
}

#[tokio::test]
async fn tls_over_tcp() {
    let pki = Pki::new();
    let server = server(ServingMode::Auto);
    server
        .set_tls(Some(
            &pki.server_settings(Signer::TrustedCa, ClientAuth::None),
        ))
        .expect("valid TLS settings");
    server.set_resources(vec![listener("a", "1")], None);
    let addr = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve tcp");
    let channel = Endpoint::from_shared(format!("https://{addr}"))
        .expect("uri")
        .tls_config(pki.client(None))
        .expect("tls config")
        .connect()
        .await
        .expect("handshake over TCP, valid for 127.0.0.1");
    fetch_listener(channel).await.expect("ADS over TLS on TCP");
    server.shutdown();
}

#[test]
fn settings_that_are_not_pem_are_refused() {
    let server = server(ServingMode::Auto);
    let bad = TlsSettings {
        identity: Identity {
            certificate_pem: "not a certificate".into(),
            private_key_pem: "not a key".into(),
        },
        client_auth: ClientAuth::None,
    };
    let err = server.set_tls(Some(&bad)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the server certificate PEM holds no certificate"
    );
    assert!(server.set_tls(None).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_client_that_hangs_up_mid_handshake_sends_no_alert() {
    let pki = Pki::new();
    let (server, network) = tls_serving(&pki.server_settings(Signer::TrustedCa, ClientAuth::None));
    let (tx, mut failures) = tokio::sync::mpsc::unbounded_channel();
    server.set_observer(std::sync::Arc::new(move |recorded| {
        if let ServerEvent::TlsFailed { failure, .. } = &recorded.event {
            let _ = tx.send(failure.clone());
        }
    }));
    drop(network.connect(ADDRESS).await.expect("connect"));
    let failure = tokio::time::timeout(QUIET, failures.recv()).await;
    assert_eq!(failure, Ok(Some(TlsFailure::ClosedByClient)));
}
