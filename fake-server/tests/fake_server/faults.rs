//! Faults: closing streams with a status, refusing and accepting
//! connections, shutting down.

use std::io;

use tonic::Code;
use xds_fake_server::ServingMode;
use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::Fault;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn close_streams_ends_every_stream_with_the_given_status() {
    let (server, network) = serving(ServingMode::Auto);
    let channel = connect(&network).await.expect("connect");
    let mut one = AdsStream::open(channel.clone()).await.expect("stream 1");
    let mut two = AdsStream::open(channel.clone()).await.expect("stream 2");

    let fault = Fault::CloseStreams {
        code: Code::Unavailable,
        message: "maintenance".into(),
    };
    server.apply(fault.clone());

    for stream in [&mut one, &mut two] {
        let status = stream
            .responses
            .message()
            .await
            .expect_err("the stream ends with the status");
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "maintenance");
    }
    let closed = |stream| ServerEvent::StreamClosed {
        stream,
        code: Code::Unavailable,
        message: "maintenance".into(),
        by_client: false,
    };
    let events = events_only(server.events());
    let at = events
        .iter()
        .position(|e| {
            *e == ServerEvent::FaultApplied {
                fault: fault.clone(),
            }
        })
        .expect("fault recorded");
    assert_eq!(events[at + 1..], [closed(1), closed(2)]);
    assert!(server.open_streams().is_empty());

    // The connection is still up: a new stream opens on it.
    let _three = AdsStream::open(channel).await.expect("stream 3");
    assert!(
        events_only(server.events()).contains(&ServerEvent::StreamOpened {
            stream: 3,
            connection: Some(1),
        })
    );
}

#[tokio::test(start_paused = true)]
async fn close_streams_with_any_code_reaches_the_client() {
    let (server, network) = serving(ServingMode::Scripted);
    let mut client = AdsStream::open_in_memory(&network).await;
    server.apply(Fault::CloseStreams {
        code: Code::PermissionDenied,
        message: "go away".into(),
    });
    let status = client.responses.message().await.expect_err("closed");
    assert_eq!(
        (status.code(), status.message()),
        (Code::PermissionDenied, "go away")
    );
}

#[tokio::test(start_paused = true)]
async fn refused_connections_fail_and_are_recorded_until_accepted_again() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("a", "1")], None);
    let mut open = AdsStream::open_in_memory(&network).await;
    open.request(LDS, &[], None);
    let first = open.next().await;
    open.request(LDS, &[], Some(&first));

    server.apply(Fault::RefuseConnections);

    let refused = network.connect(ADDRESS).await.err().map(|e| e.kind());
    assert_eq!(refused, Some(io::ErrorKind::ConnectionRefused));
    assert!(
        connect(&network).await.is_err(),
        "a tonic channel cannot connect"
    );
    let events = events_only(server.events());
    assert!(events.contains(&ServerEvent::FaultApplied {
        fault: Fault::RefuseConnections
    }));
    assert_eq!(
        events
            .iter()
            .filter(|e| **e
                == ServerEvent::ConnectionRefused {
                    address: ADDRESS.into()
                })
            .count(),
        2
    );
    // The open connection is untouched.
    server.set_resources(vec![listener("a", "2")], None);
    assert_eq!(entries(&open.next().await), vec![&listener("a", "2").entry]);

    server.apply(Fault::AcceptConnections);

    let mut again = AdsStream::open_in_memory(&network).await;
    again.request(LDS, &[], None);
    assert_eq!(
        entries(&again.next().await),
        vec![&listener("a", "2").entry]
    );
    assert!(
        events_only(server.events()).contains(&ServerEvent::ConnectionAccepted { connection: 2 })
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_closes_streams_and_stops_listening() {
    let (server, network) = serving(ServingMode::Auto);
    let mut client = AdsStream::open_in_memory(&network).await;

    server.shutdown();

    let status = client.responses.message().await.expect_err("closed");
    assert_eq!(status.code(), Code::Unavailable);
    let refused = network.connect(ADDRESS).await.err().map(|e| e.kind());
    assert_eq!(refused, Some(io::ErrorKind::ConnectionRefused));
    assert!(network.addresses().is_empty());
    assert!(server.serve_in_memory(&network, ADDRESS).is_err());
    // The server drains and drops the connection (virtual time: instant).
    tokio::time::sleep(QUIET).await;
    assert!(
        events_only(server.events()).contains(&ServerEvent::ConnectionClosed { connection: 1 })
    );
}

#[tokio::test(start_paused = true)]
async fn two_servers_cannot_share_an_address() {
    let (_first, network) = serving(ServingMode::Auto);
    let second = server(ServingMode::Auto);
    assert!(matches!(
        second.serve_in_memory(&network, ADDRESS),
        Err(xds_fake_server::ServeError::AddressInUse(_))
    ));
}
