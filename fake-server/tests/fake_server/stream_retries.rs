//! What the server records of a client's delay between two stream
//! attempts (`StreamOpened::after_close`, the `retry_delay` matcher's).

use std::time::Duration;

use tonic::Code;
use xds_fake_server::ServingMode;
use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::CloseStreams;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_stream_records_how_long_after_the_last_one_ended_it_opened() {
    let (server, network) = serving(ServingMode::Auto);
    let channel = connect(&network).await.expect("connect");
    let _one = AdsStream::open(channel.clone()).await.expect("stream 1");
    server.apply(CloseStreams {
        code: Code::Unavailable,
        message: "m".into(),
    });
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let _two = AdsStream::open(channel.clone()).await.expect("stream 2");
    // Beside another open stream, a stream is no retry.
    let _three = AdsStream::open(channel).await.expect("stream 3");
    let after: Vec<Option<Duration>> = events_only(server.events())
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::StreamOpened { after_close, .. } => Some(after_close),
            _ => None,
        })
        .collect();
    assert_eq!(after, [None, Some(Duration::from_millis(2500)), None]);
}
