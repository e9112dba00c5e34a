//! What servers record: ids, request kinds, stream and connection ends,
//! observers, and virtual timestamps.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::Code;
use xds_fake_server::event::{Recorded, RecordedRequest, ServerEvent};
use xds_fake_server::fault::RefuseConnections;
use xds_fake_server::{FakeAdsServer, ServingMode};
use xds_vocabulary::RequestKind;

use crate::support::*;

fn request_kinds(server: &FakeAdsServer) -> Vec<(u64, RequestKind)> {
    server
        .events()
        .into_iter()
        .filter_map(|r| match r.event {
            ServerEvent::RequestReceived { stream, request } => Some((stream, request.kind)),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn requests_are_classified_per_stream_and_type() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("a", "1"), cluster("c", "1")], None);
    let channel = connect(&network).await.expect("connect");
    let mut one = AdsStream::open(channel.clone()).await.expect("stream 1");
    let two = AdsStream::open(channel).await.expect("stream 2");

    one.request(LDS, &[], None); // Initial
    let lds = one.next().await;
    one.request(LDS, &[], Some(&lds)); // Ack
    one.nack(&[], &lds); // Nack
    let mut stale = request(LDS, &[], None);
    stale.response_nonce = "999".into();
    one.send(stale); // UnknownNonce
    let mut bogus_nack = request(LDS, &[], None);
    bogus_nack.response_nonce = "998".into();
    bogus_nack.error_detail = Some(envoy_types::pb::google::rpc::Status {
        code: 3,
        message: "rejecting a response never sent".into(),
        details: vec![],
    });
    one.send(bogus_nack); // NackOfUnknownNonce
    one.request(CDS, &[], None); // Initial for CDS
    let cds = one.next().await;
    let mut cross = request(LDS, &[], None);
    cross.response_nonce = cds.nonce.clone();
    one.send(cross); // a CDS nonce on LDS: UnknownNonce
    assert!(
        one.is_silent().await,
        "stream 1 is done before stream 2 speaks"
    );
    let mut elsewhere = request(LDS, &[], None);
    elsewhere.response_nonce = lds.nonce.clone();
    two.send(elsewhere); // another stream's nonce: UnknownNonce
    tokio::time::sleep(QUIET).await;

    assert_eq!(
        request_kinds(&server),
        vec![
            (1, RequestKind::Initial),
            (1, RequestKind::Ack),
            (1, RequestKind::Nack),
            (1, RequestKind::UnknownNonce),
            (1, RequestKind::NackOfUnknownNonce),
            (1, RequestKind::Initial),
            (1, RequestKind::UnknownNonce),
            (2, RequestKind::UnknownNonce),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_is_recorded_with_everything_a_check_needs() {
    let (server, network) = serving(ServingMode::Scripted);
    let client = AdsStream::open_in_memory(&network).await;
    let mut nack = request(RDS, &["r2", "r1"], None);
    nack.version_info = "7".into();
    nack.response_nonce = "5".into();
    nack.error_detail = Some(envoy_types::pb::google::rpc::Status {
        code: 3,
        message: "bad route".into(),
        details: vec![],
    });
    client.send(nack.clone());
    tokio::time::sleep(QUIET).await;

    let recorded = server.events().into_iter().find_map(|r| match r.event {
        ServerEvent::RequestReceived { request, .. } => Some(request),
        _ => None,
    });
    assert_eq!(
        recorded,
        Some(RecordedRequest {
            delta: None,
            type_url: RDS.into(),
            resource_names: strings(&["r2", "r1"]),
            version_info: "7".into(),
            response_nonce: "5".into(),
            error_detail: Some((3, "bad route".into())),
            node: nack.node.clone(),
            // Nonce "5" was never sent on this stream.
            kind: RequestKind::NackOfUnknownNonce,
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_session_records_connections_and_streams_in_order() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![route("r", "1")], None);
    let channel = connect(&network).await.expect("connect");
    let mut client = AdsStream::open(channel.clone()).await.expect("stream");
    client.request(RDS, &["r"], None);
    let response = client.next().await;

    client.half_close();
    assert_eq!(
        client.responses.message().await.ok().flatten(),
        None,
        "after a half-close the server ends the stream with OK"
    );
    drop(client);
    drop(channel);
    tokio::time::sleep(QUIET).await;

    let events = events_only(server.events());
    let request = match &events[3] {
        ServerEvent::RequestReceived { request, .. } => request.clone(),
        other => panic!("expected the request, got {other:?}"),
    };
    assert_eq!(
        events,
        vec![
            ServerEvent::ResourcesChanged {
                type_url: RDS.into(),
                version: "1".into(),
                updated: strings(&["r"]),
                removed: vec![],
            },
            ServerEvent::ConnectionAccepted { connection: 1 },
            ServerEvent::StreamOpened {
                stream: 1,
                connection: Some(1),
                protocol: xds_vocabulary::AdsProtocol::Sotw,
                after_close: None,
            },
            ServerEvent::RequestReceived { stream: 1, request },
            ServerEvent::ResponseSent {
                stream: 1,
                response: xds_fake_server::event::RecordedResponse {
                    delta: None,
                    resource_errors: Vec::new(),
                    // Each entry as sent.
                    bodies: response.resources.iter().cloned().map(Some).collect(),
                    type_url: RDS.into(),
                    version_info: "1".into(),
                    nonce: response.nonce.clone(),
                    resource_names: strings(&["r"]),
                    // What the client received, to the byte.
                    encoded_len: prost::Message::encoded_len(&response),
                },
            },
            ServerEvent::StreamClosed {
                stream: 1,
                code: Code::Ok,
                message: xds_fake_server::event::CLIENT_HALF_CLOSED.into(),
                by_client: true,
                kds: None,
            },
            ServerEvent::ConnectionClosed { connection: 1 },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_lost_connection_is_recorded_as_closed_by_the_client() {
    let (server, network) = serving(ServingMode::Auto);
    let (channel, switch) = connect_killable(&network).await.expect("connect");
    let _client = AdsStream::open(channel).await.expect("stream");

    switch.kill();
    tokio::time::sleep(QUIET).await;

    let closed = server.events().into_iter().find_map(|r| match r.event {
        ServerEvent::StreamClosed {
            stream,
            by_client,
            code,
            ..
        } => Some((stream, by_client, code)),
        _ => None,
    });
    // tonic reports a lost connection as UNKNOWN ("h2 protocol error: ...");
    // what matters is that it is the client's doing and not a clean end.
    assert_eq!(closed, Some((1, true, Code::Unknown)));
    assert!(server.open_streams().is_empty());
    assert!(
        events_only(server.events()).contains(&ServerEvent::ConnectionClosed { connection: 1 })
    );
}

#[tokio::test(start_paused = true)]
async fn the_observer_sees_every_event_in_order_and_may_call_back() {
    let (server, network) = serving(ServingMode::Auto);
    let seen: Arc<Mutex<Vec<Recorded<ServerEvent>>>> = Arc::default();
    let streams: Arc<Mutex<Vec<usize>>> = Arc::default();
    {
        let (seen, streams, server_handle) = (seen.clone(), streams.clone(), server.clone());
        server.set_observer(Arc::new(move |event| {
            seen.lock().expect("lock").push(event.clone());
            // Calling back into the server from the observer must not deadlock.
            streams
                .lock()
                .expect("lock")
                .push(server_handle.open_streams().len());
        }));
    }

    server.set_resources(vec![cluster("c", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &[], None);
    let response = client.next().await;
    client.request(CDS, &[], Some(&response));
    client.half_close();
    tokio::time::sleep(QUIET).await;

    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 7, "{seen:#?}");
    assert!(matches!(
        seen[0].event,
        ServerEvent::ResourcesChanged { .. }
    ));
    // Handed over, not kept: a long-running server holds none of them.
    assert!(server.events().is_empty());
    // The observer ran once per event, calling back every time.
    assert_eq!(streams.lock().expect("lock").len(), 7);
}

#[tokio::test(start_paused = true)]
async fn timestamps_follow_virtual_time() {
    let start = tokio::time::Instant::now();
    let (server, network) = serving(ServingMode::Auto);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(LDS, &["a"], None);

    tokio::time::sleep(Duration::from_secs(15)).await;
    server.set_resources(vec![listener("a", "1")], None);
    let _ = client.next().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    server.apply(RefuseConnections);

    let stamps: Vec<(Duration, &'static str)> = server
        .events()
        .into_iter()
        .map(|r| {
            let what = match r.event {
                ServerEvent::ConnectionAccepted { .. } => "accepted",
                ServerEvent::StreamOpened { .. } => "opened",
                ServerEvent::RequestReceived { .. } => "request",
                ServerEvent::ResourcesChanged { .. } => "changed",
                ServerEvent::ResponseSent { .. } => "response",
                ServerEvent::FaultApplied { .. } => "fault",
                _ => "other",
            };
            (r.at - start, what)
        })
        .collect();
    assert_eq!(
        stamps,
        vec![
            (Duration::ZERO, "accepted"),
            (Duration::ZERO, "opened"),
            (Duration::ZERO, "request"),
            (Duration::from_secs(15), "changed"),
            (Duration::from_secs(15), "response"),
            (Duration::from_secs(20), "fault"),
        ]
    );
    assert!(server.events().iter().all(|r| r.server == "primary"));
}

/// A request over the server's 4 MiB limit ends the stream the way a gRPC
/// server ends it: RESOURCE_EXHAUSTED to the client, recorded as the
/// server's close with that code (not as the client going away).
#[tokio::test(start_paused = true)]
async fn an_oversize_request_is_answered_with_resource_exhausted() {
    let (server, network) = serving(ServingMode::Auto);
    let mut stream = AdsStream::open_in_memory(&network).await;
    // ~5.4 MB of names: over the 4 MiB a gRPC server takes by default.
    let names: Vec<String> = (0..300_000).map(|i| format!("cluster-{i:08}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    stream.request(CDS, &names, None);
    let status = tokio::time::timeout(Duration::from_secs(5), stream.responses.message())
        .await
        .unwrap_or_else(|_| panic!("no status; server saw {:#?}", events_only(server.events())))
        .expect_err("the stream ends with a status");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let closed = stream_closes(&server)
        .into_iter()
        .next()
        .expect("the close is recorded");
    assert_eq!(closed.0, Code::ResourceExhausted);
    assert!(closed.1.starts_with("request too large: "), "{}", closed.1);
    assert!(!closed.2, "closed by the server");
    // No request was recorded: it never decoded.
    assert!(request_kinds(&server).is_empty());
}
