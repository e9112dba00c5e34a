//! `hold_streams` / `release_streams`: the connection stays up while the
//! server admits no new stream, as a real tonic client sees it.

use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::{HoldStreams, ReleaseStreams};
use xds_fake_server::{FakeAdsServer, ServingMode};
use xds_vocabulary::network::MemoryNetwork;

use crate::support::*;

/// A server whose streams can be held, serving.
fn holding() -> (FakeAdsServer, MemoryNetwork) {
    let network = MemoryNetwork::new();
    let server = server(ServingMode::Auto);
    server.watch_streams();
    server
        .serve_in_memory(&network, ADDRESS)
        .expect("serve in memory");
    (server, network)
}

fn opened(server: &FakeAdsServer) -> usize {
    events_only(server.events())
        .iter()
        .filter(|e| matches!(e, ServerEvent::StreamOpened { .. }))
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_held_server_admits_no_new_stream_until_released() {
    let (server, network) = holding();
    server.set_resources(vec![cluster("c1", "m")], None);
    let channel = connect(&network).await.expect("connect");
    let mut first = AdsStream::open(channel.clone()).await.expect("stream 1");
    first.request(CDS, &["c1"], None);
    let response = first.next().await;

    server.apply(HoldStreams);
    // The stream already open goes on.
    server.set_resources(vec![cluster("c1", "m2")], None);
    let response = {
        first.request(CDS, &["c1"], Some(&response));
        first.next().await
    };
    // A new one waits in the client: the server never sees it.
    let second = tokio::spawn(AdsStream::open(channel.clone()));
    tokio::time::sleep(QUIET).await;
    assert!(!second.is_finished());
    assert_eq!(opened(&server), 1, "{:?}", server.events());
    // The connection is as it was: the first stream still answers.
    server.set_resources(vec![cluster("c1", "m3")], None);
    first.request(CDS, &["c1"], Some(&response));
    first.next().await;

    server.apply(ReleaseStreams);
    let mut second = tokio::time::timeout(QUIET, second)
        .await
        .expect("opens once released")
        .expect("task")
        .expect("stream 2");
    second.request(CDS, &["c1"], None);
    second.next().await;
    assert_eq!(opened(&server), 2);
    // One connection all along.
    let accepted = events_only(server.events())
        .iter()
        .filter(|e| matches!(e, ServerEvent::ConnectionAccepted { .. }))
        .count();
    assert_eq!(accepted, 1);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_holds_no_streams_follows_no_frames() {
    // Not watched: the fault is recorded, and streams open as ever.
    let (server, network) = serving(ServingMode::Auto);
    server.apply(HoldStreams);
    let channel = connect(&network).await.expect("connect");
    let _stream = AdsStream::open(channel).await.expect("stream");
    assert_eq!(opened(&server), 1);
}
