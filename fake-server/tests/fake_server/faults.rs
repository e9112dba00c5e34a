//! Faults: closing streams with a status (now or after N responses),
//! hanging and resuming, restarting, refusing and accepting
//! connections, shutting down.

use std::io;

use tonic::Code;
use xds_fake_server::ServingMode;
use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::{
    AcceptConnections, CloseStreams, CloseStreamsAfter, DelayResponses, DropResponses, Fault, Hang,
    KeepStreams, RefuseConnections, Restart, Resume,
};

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn close_streams_ends_every_stream_with_the_given_status() {
    let (server, network) = serving(ServingMode::Auto);
    let channel = connect(&network).await.expect("connect");
    let mut one = AdsStream::open(channel.clone()).await.expect("stream 1");
    let mut two = AdsStream::open(channel.clone()).await.expect("stream 2");

    let fault = Fault::from(CloseStreams {
        code: Code::Unavailable,
        message: "maintenance".into(),
    });
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
        kds: None,
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
            protocol: xds_vocabulary::AdsProtocol::Sotw,
            // Right after the server closed the other two.
            after_close: Some(std::time::Duration::ZERO),
        })
    );
}

#[tokio::test(start_paused = true)]
async fn close_streams_with_any_code_reaches_the_client() {
    let (server, network) = serving(ServingMode::Scripted);
    let mut client = AdsStream::open_in_memory(&network).await;
    server.apply(CloseStreams {
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

    server.apply(RefuseConnections);

    let refused = network.connect(ADDRESS).await.err().map(|e| e.kind());
    assert_eq!(refused, Some(io::ErrorKind::ConnectionRefused));
    assert!(
        connect(&network).await.is_err(),
        "a tonic channel cannot connect"
    );
    let events = events_only(server.events());
    assert!(events.contains(&ServerEvent::FaultApplied {
        fault: RefuseConnections.into()
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

    server.apply(AcceptConnections);

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

#[tokio::test(start_paused = true)]
async fn hang_withholds_one_type_until_resume_sends_what_is_owed() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("l1", "a"), cluster("c1", "a")], None);
    server.apply(Hang {
        type_url: Some(CDS.into()),
    });
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &["c1"], None);
    assert!(client.is_silent().await, "a hung type gets nothing");
    // Other types are answered; the stream stays open.
    client.request(LDS, &["l1"], None);
    assert_eq!(client.next().await.type_url, LDS);
    assert!(client.is_silent().await);

    server.apply(Resume);
    let owed = client.next().await;
    assert_eq!((owed.type_url.as_str(), owed.resources.len()), (CDS, 1));
}

#[tokio::test(start_paused = true)]
async fn hang_of_every_type_still_lets_scripted_sends_through() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("c1", "a")], None);
    server.apply(Hang { type_url: None });
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &["c1"], None);
    assert!(client.is_silent().await);
    server.send_response(xds_fake_server::ScriptedResponse {
        resource_errors: Vec::new(),
        type_url: CDS.into(),
        version_info: Some("scripted".into()),
        nonce: None,
        resources: vec![],
    });
    assert_eq!(client.next().await.version_info, "scripted");
}

#[tokio::test(start_paused = true)]
async fn close_streams_after_counts_responses_per_stream() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("c1", "a")], None);
    server.apply(CloseStreamsAfter {
        responses: 1,
        code: Code::Unavailable,
        message: "max responses".into(),
    });
    let channel = connect(&network).await.expect("connect");
    let mut client = AdsStream::open(channel.clone()).await.expect("stream");
    client.request(CDS, &["c1"], None);
    assert_eq!(client.next().await.resources.len(), 1);
    let status = client
        .responses
        .message()
        .await
        .expect_err("closed after 1");
    assert_eq!(
        (status.code(), status.message()),
        (Code::Unavailable, "max responses")
    );

    // 0: closed at the first request, before any response.
    server.apply(CloseStreamsAfter {
        responses: 0,
        code: Code::ResourceExhausted,
        message: String::new(),
    });
    let mut second = AdsStream::open(channel.clone()).await.expect("stream");
    second.request(CDS, &["c1"], None);
    let status = second
        .responses
        .message()
        .await
        .expect_err("closed at once");
    assert_eq!(status.code(), Code::ResourceExhausted);

    server.apply(KeepStreams);
    let mut third = AdsStream::open(channel).await.expect("stream");
    third.request(CDS, &["c1"], None);
    assert_eq!(third.next().await.resources.len(), 1);
    assert!(third.is_silent().await, "no longer closed");
}

#[tokio::test(start_paused = true)]
async fn restart_drops_connections_and_can_lose_the_store() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("c1", "a")], None);
    let channel = connect(&network).await.expect("connect");
    let mut client = AdsStream::open(channel).await.expect("stream");
    client.request(CDS, &["c1"], None);
    assert_eq!(client.next().await.version_info, "1");

    server.apply(Restart {
        keep_resources: false,
    });
    // No trailers: the transport goes away under the stream.
    let status = client.responses.message().await.expect_err("reset");
    assert_ne!(status.message(), "server restarting");
    let events = events_only(server.events());
    assert!(events.contains(&ServerEvent::ConnectionClosed { connection: 1 }));
    assert!(server.resource_names(CDS).is_empty());
    assert_eq!(server.type_version(CDS), "");

    // A new connection works; versions start again from 1.
    server.set_resources(vec![cluster("c1", "b")], None);
    let mut again = AdsStream::open_in_memory(&network).await;
    again.request(CDS, &["c1"], None);
    assert_eq!(again.next().await.version_info, "1");
}

#[tokio::test(start_paused = true)]
async fn dropped_responses_are_recorded_but_never_arrive() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("l1", "a"), cluster("c1", "a")], None);
    server.apply(DropResponses {
        count: 1,
        type_url: Some(CDS.into()),
    });
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &["c1"], None);
    assert!(client.is_silent().await, "the CDS response is lost");
    // Other types are not affected, and only one response is dropped.
    client.request(LDS, &["l1"], None);
    assert_eq!(client.next().await.type_url, LDS);
    server.set_resources(vec![cluster("c1", "b")], None);
    let healed = client.next().await;
    assert_eq!(
        (healed.type_url.as_str(), healed.version_info.as_str()),
        (CDS, "2")
    );

    let dropped: Vec<_> = events_only(server.events())
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::ResponseDropped { response, .. } => Some(response.version_info),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, ["1"]);
}

#[tokio::test(start_paused = true)]
async fn max_connection_age_ends_connections_after_the_grace() {
    let server = server(ServingMode::Auto);
    server.set_max_connection_age(Some(xds_fake_server::MaxConnectionAge {
        age: std::time::Duration::from_secs(10),
        grace: std::time::Duration::from_secs(1),
    }));
    let network = xds_vocabulary::network::MemoryNetwork::new();
    server.serve_in_memory(&network, ADDRESS).expect("serve");
    server.set_resources(vec![cluster("c1", "a")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &["c1"], None);
    assert_eq!(client.next().await.resources.len(), 1);

    let started = tokio::time::Instant::now();
    let ended = client.responses.message().await;
    assert!(!matches!(ended, Ok(Some(_))), "the stream ends: {ended:?}");
    let after = started.elapsed();
    assert!(
        after >= std::time::Duration::from_secs(10) && after <= std::time::Duration::from_secs(12),
        "{after:?}"
    );
    assert!(
        events_only(server.events()).contains(&ServerEvent::ConnectionClosed { connection: 1 })
    );
}

#[tokio::test(start_paused = true)]
async fn delayed_responses_go_out_and_are_recorded_when_due() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("c1", "a")], None);
    server.apply(DelayResponses {
        by: std::time::Duration::from_secs(16),
    });
    let mut client = AdsStream::open_in_memory(&network).await;
    let asked = tokio::time::Instant::now();
    client.request(CDS, &["c1"], None);
    let response = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        client.responses.message(),
    )
    .await
    .expect("in 20 s")
    .expect("ok")
    .expect("a response");
    assert_eq!(response.resources.len(), 1);
    assert_eq!(asked.elapsed(), std::time::Duration::from_secs(16));
    let sent_at = server
        .events()
        .into_iter()
        .find(|e| matches!(e.event, ServerEvent::ResponseSent { .. }))
        .expect("recorded")
        .at;
    assert_eq!(sent_at - asked, std::time::Duration::from_secs(16));

    // Zero ends the delay.
    server.apply(DelayResponses {
        by: std::time::Duration::ZERO,
    });
    server.set_resources(vec![cluster("c1", "b")], None);
    assert_eq!(client.next().await.version_info, "2");
    assert_eq!(asked.elapsed(), std::time::Duration::from_secs(16));
}

/// A client that never reads: HTTP/2 flow control stops the transport
/// taking more, and what the server sends after that waits in the
/// stream's outbox. Past its bound the stream is ended with
/// RESOURCE_EXHAUSTED and what was queued is dropped; other streams go on.
#[tokio::test(start_paused = true)]
async fn a_client_that_never_reads_loses_its_stream_at_the_backlog_bound() {
    use xds_fake_server::outbox::MAX_BACKLOG;
    let (server, network) = serving(ServingMode::Auto);
    let channel = connect(&network).await.expect("connect");
    // Reads nothing after subscribing.
    let stuck = AdsStream::open(channel.clone()).await.expect("stream 1");
    stuck.request(CDS, &[], None);
    // Reads everything.
    let mut reading = AdsStream::open(channel).await.expect("stream 2");
    reading.request(CDS, &["c1"], None);
    tokio::time::sleep(QUIET).await;
    // 1 MiB Clusters, changed over and over: the stuck stream is sent a
    // megabyte each time.
    let big = "x".repeat(1 << 20);
    let mut changes = 0;
    while server.open_streams().contains(&1) {
        changes += 1;
        assert!(changes < 64, "the stuck stream was never ended");
        server.set_resources(vec![cluster("c1", &format!("{changes}{big}"))], None);
        let _ = reading.next().await;
    }
    // Ended no later than the bound allows: what HTTP/2 took before the
    // window closed, plus MAX_BACKLOG, plus the response that crossed it.
    assert!(changes <= (MAX_BACKLOG >> 20) + 4, "{changes} changes");
    let events = events_only(server.events());
    let closed = events
        .iter()
        .find_map(|e| match e {
            ServerEvent::StreamClosed {
                stream: 1,
                code,
                message,
                by_client: false,
                kds: None,
            } => Some((*code, message.clone())),
            _ => None,
        })
        .expect("the stuck stream was closed by the server");
    assert_eq!(closed.0, Code::ResourceExhausted);
    assert!(closed.1.contains("has not read"), "{}", closed.1);
    // The reading stream is still served.
    server.set_resources(vec![cluster("c1", "after")], None);
    assert_eq!(reading.next().await.resources.len(), 1);
    assert_eq!(server.open_streams(), vec![2]);
    drop(stuck);
}
