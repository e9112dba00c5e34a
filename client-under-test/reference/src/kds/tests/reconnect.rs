//! The connection's end and the next one: an undecodable resource ends it
//! without a NACK, any end of an RPC (an error, a clean EOF) ends it, and
//! the next starts after Kuma's backoff, subscribing afresh.

use envoy_types::pb::google::protobuf::Any;
use prost::Name;
use xds_fake_server::ServingMode;
use xds_fake_server::fault::{
    CloseStreams, CloseStreamsAfter, HoldConnections, RefuseConnections, ReleaseConnections,
};
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::{KumaResource, types};

use super::*;
use crate::backoff::SplitMix64;
use crate::kds::backoff::KumaBackoff;

/// The waits a zone seeded like [`config`]'s draws, attempt after attempt
/// (`lived`: how long each connection before it lived).
fn kumas_waits(lived: &[Duration]) -> Vec<Duration> {
    let mut rng = SplitMix64::new(config(ZoneDefects::default()).rng_seed);
    let mut backoff = KumaBackoff::new();
    lived
        .iter()
        .map(|lived| {
            backoff.ended_after(*lived);
            backoff.next_delay(&mut rng)
        })
        .collect()
}

/// When each `GlobalToZoneSync` stream opened.
fn connection_starts(server: &FakeAdsServer) -> Vec<Instant> {
    opened(server)
        .into_iter()
        .filter(|(_, rpc, _)| *rpc == KdsRpc::GlobalToZoneSync)
        .map(|(at, _, _)| at)
        .collect()
}

fn undecodable() -> ServedResource {
    let garbage = Any {
        type_url: KumaResource::type_url(),
        value: vec![0xff, 0xff, 0xff],
    };
    ServedResource::raw(types::MESH, "broken.", garbage)
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_resource_ends_the_whole_connection_without_a_nack() {
    let (server, network) = global(ServingMode::Auto);
    server.set_resources(vec![undecodable()], None);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    assert!(requests(&server).iter().all(|r| r.error_detail.is_none()));
    assert_eq!(closed(&server), CANCELLED_BY_THE_ZONE, "both RPCs end");
    let lifecycle: Vec<ClientEvent> = heard.client().into_iter().map(|(_, e)| e).collect();
    let first_wait = kumas_waits(&[Duration::ZERO])[0];
    assert!(
        matches!(&lifecycle[..], [
            ClientEvent::AdsCallStarted { .. },
            ClientEvent::Connected { connected: true, .. },
            ClientEvent::Log { message, .. },
            ClientEvent::Connected { connected: false, .. },
            ClientEvent::AdsCallFinished { status, seen_response: true, .. },
            ClientEvent::RetryScheduled { server, delay, .. },
        ] if message.contains("Mesh resource #0") && status.code == tonic::Code::Cancelled
            && server == GLOBAL && *delay == first_wait),
        "{lifecycle:#?}"
    );

    // The next connection subscribes afresh, `first_wait` later.
    tokio::time::sleep(first_wait).await;
    let starts = connection_starts(&server);
    assert!(starts.len() >= 2, "reconnected");
    assert_eq!(starts[1] - starts[0], first_wait);
    let initial = requests(&server)
        .into_iter()
        .filter(|r| r.kind == RequestKind::Initial && r.subscription() == ["*"])
        .filter(|r| r.node.as_ref().is_some_and(|n| n.metadata.is_some()))
        .count();
    assert_eq!(initial, 90, "45 types, twice");
}

#[tokio::test(start_paused = true)]
async fn a_broken_zone_nacks_an_undecodable_resource_and_stays() {
    let (server, network) = global(ServingMode::Auto);
    server.set_resources(
        vec![
            undecodable(),
            served(types::MESH, KdsName::global("ok"), serde_json::json!({})),
        ],
        None,
    );
    let (_zone, heard) = start(
        &network,
        config(ZoneDefects {
            nack_on_undecodable: true,
            ..Default::default()
        }),
    );
    settle().await;
    let nacks: Vec<RecordedRequest> = requests(&server)
        .into_iter()
        .filter(|r| r.error_detail.is_some())
        .collect();
    assert_eq!(nacks.len(), 1);
    assert!(closed(&server).is_empty());
    assert_eq!(heard.changes(), ["+Mesh ok. {}"]);
}

#[tokio::test(start_paused = true)]
async fn reconnects_wait_kumas_backoff_doubling_to_a_minute() {
    let (server, network) = global(ServingMode::Auto);
    server.apply(CloseStreamsAfter {
        responses: 0,
        code: tonic::Code::Unavailable,
        message: "not now".into(),
    });
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    tokio::time::sleep(Duration::from_secs(300)).await;
    let delays = heard.retry_delays();
    assert!(delays.len() >= 6, "{delays:?}");
    let expected = kumas_waits(&[Duration::ZERO; 6]);
    assert_eq!(delays[..6], expected[..]);
    for (delay, nominal) in delays.iter().zip([5u64, 10, 20, 40, 60, 60]) {
        let secs = delay.as_secs_f64();
        assert!(
            secs >= nominal as f64 - 5.0 && secs <= nominal as f64 + 5.0,
            "{delays:?}"
        );
    }
    let starts = connection_starts(&server);
    for (i, delay) in expected.iter().enumerate() {
        assert_eq!(starts[i + 1] - starts[i], *delay, "attempt {}", i + 1);
    }
}

#[tokio::test(start_paused = true)]
async fn a_clean_end_of_the_stream_is_an_error_with_the_same_backoff() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    server.apply(CloseStreams {
        code: tonic::Code::Ok,
        message: String::new(),
    });
    settle().await;
    let finished: Vec<tonic::Code> = heard
        .client()
        .into_iter()
        .filter_map(|(_, e)| match e {
            ClientEvent::AdsCallFinished { status, .. } => Some(status.code),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [tonic::Code::Ok]);
    let wait = kumas_waits(&[Duration::from_secs(1)])[0];
    assert_eq!(heard.retry_delays(), [wait]);
    assert!(wait > Duration::ZERO);
    tokio::time::sleep(wait).await;
    let starts = connection_starts(&server);
    assert_eq!(starts.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_lived_over_a_minute_starts_the_backoff_over() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    let close = || {
        server.apply(CloseStreams {
            code: tonic::Code::Unavailable,
            message: "bye".into(),
        })
    };
    settle().await;
    close();
    tokio::time::sleep(Duration::from_secs(16)).await;
    close();
    // Back within 15 s, then up for over a minute.
    tokio::time::sleep(Duration::from_secs(80)).await;
    close();
    settle().await;
    let expected = kumas_waits(&[
        Duration::from_secs(1),
        Duration::from_secs(1),
        Duration::from_secs(61),
    ]);
    assert_eq!(heard.retry_delays(), expected);
    assert!(expected[1] >= Duration::from_secs(5), "attempt 2");
    assert!(expected[2] <= Duration::from_secs(10), "attempt 1 again");
    assert!(connection_starts(&server).len() >= 3);
}

#[tokio::test(start_paused = true)]
async fn a_broken_zone_reconnects_at_once() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, heard) = start(
        &network,
        config(ZoneDefects {
            no_reconnect_backoff: true,
            ..Default::default()
        }),
    );
    settle().await;
    server.apply(CloseStreams {
        code: tonic::Code::Unavailable,
        message: "bye".into(),
    });
    settle().await;
    assert_eq!(heard.retry_delays(), [Duration::ZERO]);
    let starts = connection_starts(&server);
    assert_eq!(starts.len(), 2);
    assert!(starts[1] - starts[0] < Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_global_that_never_speaks_or_refuses_is_retried_with_the_backoff() {
    let (server, network) = global(ServingMode::Auto);
    server.apply(HoldConnections);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    tokio::time::sleep(crate::kds::worker::CONNECT_TIMEOUT).await;
    settle().await;
    let finished: Vec<(tonic::Code, bool)> = heard
        .client()
        .into_iter()
        .filter_map(|(_, e)| match e {
            ClientEvent::AdsCallFinished {
                status,
                seen_response,
                ..
            } => Some((status.code, seen_response)),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [(tonic::Code::Unavailable, false)]);
    assert_eq!(
        heard.retry_delays(),
        kumas_waits(&[Duration::from_secs(20)])
    );

    server.apply(ReleaseConnections);
    server.apply(RefuseConnections);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let refused = heard
        .client()
        .into_iter()
        .filter(|(_, e)| matches!(e, ClientEvent::AdsCallFinished { status, .. } if status.code == tonic::Code::Unavailable))
        .count();
    assert!(refused >= 2, "{:?}", heard.client());
    assert!(opened(&server).is_empty(), "never reached");
}
