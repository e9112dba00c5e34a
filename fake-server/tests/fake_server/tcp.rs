//! The same server over real TCP (real time: these tests do not wait for
//! silence, only for things that happen).

use std::net::SocketAddr;

use tonic::transport::{Channel, Endpoint};
use xds_fake_server::ServingMode;
use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::{AcceptConnections, RefuseConnections};

use crate::support::*;

async fn tcp_channel(addr: SocketAddr) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_shared(format!("http://{addr}"))
        .expect("valid uri")
        .connect()
        .await
}

#[tokio::test]
async fn auto_mode_over_tcp_with_refuse_and_accept() {
    let server = server(ServingMode::Auto);
    server.set_resources(vec![listener("a", "1")], None);
    let addr = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve tcp");
    assert_ne!(addr.port(), 0);

    let channel = tcp_channel(addr).await.expect("connect");
    let mut client = AdsStream::open(channel).await.expect("stream");
    client.request(LDS, &[], None);
    let response = client.next().await;
    assert_eq!(entries(&response), vec![&listener("a", "1").entry]);
    client.request(LDS, &[], Some(&response));

    server.apply(RefuseConnections);
    assert!(
        tcp_channel(addr).await.is_err(),
        "the port no longer listens"
    );
    // The open connection keeps working.
    server.set_resources(vec![listener("a", "2")], None);
    assert_eq!(
        entries(&client.next().await),
        vec![&listener("a", "2").entry]
    );

    server
        .try_apply(AcceptConnections)
        .expect("re-bind the same port");
    let mut again = AdsStream::open(tcp_channel(addr).await.expect("reconnect"))
        .await
        .expect("stream");
    again.request(LDS, &["a"], None);
    assert_eq!(
        entries(&again.next().await),
        vec![&listener("a", "2").entry]
    );

    let events = events_only(server.events());
    assert!(events.contains(&ServerEvent::StreamOpened {
        stream: 1,
        connection: Some(1),
        protocol: xds_vocabulary::AdsProtocol::Sotw,
        after_close: None,
    }));
    assert!(events.contains(&ServerEvent::StreamOpened {
        stream: 2,
        connection: Some(2),
        protocol: xds_vocabulary::AdsProtocol::Sotw,
        after_close: None,
    }));
    server.shutdown();
    let status = client.responses.message().await.expect_err("closed");
    assert_eq!(status.code(), tonic::Code::Unavailable);
}

/// A refusing server keeps its port: nobody else can be given it while it
/// refuses (here with no connection open, which would hold it anyway), so
/// a client reconnecting meets a refusal, never another run's server.
#[tokio::test]
async fn a_refusing_server_keeps_its_port() {
    let server = server(ServingMode::Auto);
    let addr = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve tcp");

    server.apply(RefuseConnections);
    let refused = tokio::net::TcpStream::connect(addr)
        .await
        .err()
        .map(|e| e.kind());
    assert_eq!(refused, Some(std::io::ErrorKind::ConnectionRefused));
    let taken = std::net::TcpListener::bind(addr).err().map(|e| e.kind());
    assert_eq!(
        taken,
        Some(std::io::ErrorKind::AddrInUse),
        "another listener was given the refusing server's port"
    );

    server
        .try_apply(AcceptConnections)
        .expect("listen again on the same port");
    tcp_channel(addr).await.expect("connect again");
}
