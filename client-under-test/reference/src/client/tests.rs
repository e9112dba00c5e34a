//! The XdsClient against scripted ADS calls ([`super::ads::fake`]), on
//! virtual time: each test reads as the conversation it checks. The
//! scenario suite checks the same rules end to end over real gRPC; these
//! pin them at the level of single messages, where a failure names the
//! message that went wrong.

use std::sync::Arc;
use std::time::Duration;

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Resource,
};
use envoy_types::pb::google::protobuf::Any;
use tokio::sync::mpsc;
use tonic::Code;

use super::ads::fake::{FakeCall, FakeCalls, fake_channels};
use super::ads::wire::{Request, Response};
use super::{XdsClient, XdsClientConfig};
use crate::bootstrap::Bootstrap;
use crate::resource::ResourceType;
use crate::resource::test_support::{any, eds_cluster};
use crate::watcher::WatcherEvent;

const CDS: ResourceType = ResourceType::Cluster;

fn start(server_features: &[&str]) -> (XdsClient, FakeCalls) {
    start_with(server_features, "GRPC")
}

/// A client of one server, spoken to with `api_type` (`GRPC`: SotW;
/// `DELTA_GRPC`: delta).
fn start_with(server_features: &[&str], api_type: &str) -> (XdsClient, FakeCalls) {
    let bootstrap = Bootstrap::from_json(
        &serde_json::json!({
            "xds_servers": [{
                "server_uri": "primary:443",
                "channel_creds": [{"type": "insecure"}],
                "server_features": server_features,
                "api_type": api_type,
            }],
            "node": {"id": "n1"},
        })
        .to_string(),
    )
    .expect("bootstrap");
    let (channels, calls) = fake_channels();
    let client = XdsClient::start_with_channels(XdsClientConfig::new(bootstrap), channels);
    (client, calls)
}

/// A watcher whose events the test reads in order.
struct Watcher(mpsc::UnboundedReceiver<WatcherEvent>);

impl Watcher {
    fn on(client: &XdsClient, resource_type: ResourceType, name: &str) -> Watcher {
        let (tx, rx) = mpsc::unbounded_channel();
        client.watch(
            resource_type,
            name,
            Arc::new(move |event| {
                let _ = tx.send(event);
            }),
        );
        Watcher(rx)
    }

    async fn next(&mut self) -> WatcherEvent {
        self.0.recv().await.expect("the client is gone")
    }

    /// Nothing was delivered (after letting the client run).
    async fn is_quiet(&mut self) -> bool {
        settle().await;
        self.0.try_recv().is_err()
    }
}

/// Lets every task run until all are idle, without moving the clock.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

async fn sotw_request(call: &mut FakeCall) -> DiscoveryRequest {
    match call.request().await.expect("the call was cancelled") {
        Request::Sotw(request) => request,
        Request::Delta(request) => panic!("a delta request on a SotW stream: {request:?}"),
    }
}

fn clusters(version: &str, nonce: &str, resources: Vec<Any>) -> Response {
    Response::Sotw(DiscoveryResponse {
        version_info: version.into(),
        nonce: nonce.into(),
        type_url: CDS.type_url().into(),
        resources,
        ..Default::default()
    })
}

fn cluster(name: &str) -> Any {
    any(&eds_cluster(name))
}

/// A Cluster gRPC rejects (`lb_policy: RANDOM`).
fn bad_cluster(name: &str) -> Any {
    let mut cluster = eds_cluster(name);
    cluster.lb_policy = 3;
    any(&cluster)
}

#[tokio::test(start_paused = true)]
async fn a_watch_is_requested_answered_and_acked() {
    let (client, mut calls) = start(&[]);
    let mut watcher = Watcher::on(&client, CDS, "c1");
    let mut call = calls.next().await;
    assert_eq!(call.server_uri(), "primary:443");
    call.connected();
    let first = sotw_request(&mut call).await;
    assert_eq!(first.resource_names, ["c1"]);
    assert_eq!(
        (first.version_info.as_str(), first.response_nonce.as_str()),
        ("", "")
    );
    assert_eq!(first.node.map(|n| n.id).as_deref(), Some("n1"));

    call.respond(clusters("1", "A", vec![cluster("c1")]));
    assert!(matches!(watcher.next().await, WatcherEvent::Changed(_)));
    let ack = sotw_request(&mut call).await;
    assert_eq!(
        (ack.version_info.as_str(), ack.response_nonce.as_str()),
        ("1", "A")
    );
    assert!(ack.error_detail.is_none() && ack.node.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_partly_invalid_response_is_nacked_with_the_last_full_version_and_its_valid_part_used() {
    let (client, mut calls) = start(&[]);
    let mut good = Watcher::on(&client, CDS, "c1");
    let mut bad = Watcher::on(&client, CDS, "c2");
    let mut call = calls.next().await;
    call.connected();
    sotw_request(&mut call).await;
    assert_eq!(sotw_request(&mut call).await.resource_names, ["c1", "c2"]);
    call.respond(clusters("1", "A", vec![cluster("c1"), cluster("c2")]));
    good.next().await;
    bad.next().await;
    sotw_request(&mut call).await;

    call.respond(clusters("2", "B", vec![cluster("c1"), bad_cluster("c2")]));
    assert!(
        matches!(bad.next().await, WatcherEvent::AmbientError(e) if e.code == Code::InvalidArgument)
    );
    let nack = sotw_request(&mut call).await;
    assert_eq!(
        (nack.version_info.as_str(), nack.response_nonce.as_str()),
        ("1", "B")
    );
    let error = nack.error_detail.expect("a NACK");
    assert_eq!(error.code, Code::InvalidArgument as i32);
    assert!(
        error.message.contains("resource index 1: c2: "),
        "{}",
        error.message
    );
    assert!(good.is_quiet().await, "c1 did not change");
}

#[tokio::test(start_paused = true)]
async fn the_does_not_exist_timer_runs_only_on_a_connected_stream() {
    let (client, mut calls) = start(&[]);
    let mut watcher = Watcher::on(&client, CDS, "c1");
    let mut call = calls.next().await;
    sotw_request(&mut call).await;
    // Sent, but the server has not been heard from: no timer (A57).
    tokio::time::advance(Duration::from_secs(16)).await;
    assert!(watcher.is_quiet().await);
    call.connected();
    settle().await;
    let connected_at = tokio::time::Instant::now();
    assert!(matches!(watcher.next().await, WatcherEvent::DoesNotExist));
    assert_eq!(connected_at.elapsed(), Duration::from_secs(15));
}

#[tokio::test(start_paused = true)]
async fn one_request_at_a_time_and_later_changes_coalesce() {
    let (client, mut calls) = start(&[]);
    let _c1 = Watcher::on(&client, CDS, "c1");
    let mut call = calls.next().await;
    call.connected();
    settle().await;
    let _c2 = Watcher::on(&client, CDS, "c2");
    let _c3 = Watcher::on(&client, CDS, "c3");
    settle().await;
    // The first request is still on its way: c2 and c3 wait, together.
    assert_eq!(sotw_request(&mut call).await.resource_names, ["c1"]);
    assert_eq!(
        sotw_request(&mut call).await.resource_names,
        ["c1", "c2", "c3"]
    );
    settle().await;
    assert!(call.try_request().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_fails_before_any_response_is_a_connectivity_error() {
    let (client, mut calls) = start(&[]);
    let mut watcher = Watcher::on(&client, CDS, "c1");
    let mut call = calls.next().await;
    call.connected();
    sotw_request(&mut call).await;
    call.finish(tonic::Status::unavailable("gone"));
    assert!(matches!(
        watcher.next().await,
        WatcherEvent::ResourceError(e) if e.code == Code::Unavailable && e.message.contains("gone")
    ));
    // The next attempt comes after a backoff, asking again from scratch.
    let mut retry = calls.next().await;
    retry.connected();
    let again = sotw_request(&mut retry).await;
    assert_eq!(again.resource_names, ["c1"]);
    assert!(
        again.node.is_some(),
        "a new stream's first request names the node"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_after_a_response_is_no_error_and_versions_survive() {
    let (client, mut calls) = start(&[]);
    let mut watcher = Watcher::on(&client, CDS, "c1");
    let mut call = calls.next().await;
    call.connected();
    sotw_request(&mut call).await;
    call.respond(clusters("7", "A", vec![cluster("c1")]));
    watcher.next().await;
    sotw_request(&mut call).await;
    call.finish(tonic::Status::unavailable("max age"));
    let mut retry = calls.next().await;
    retry.connected();
    let again = sotw_request(&mut retry).await;
    assert_eq!(
        (again.version_info.as_str(), again.response_nonce.as_str()),
        ("7", "")
    );
    assert!(
        watcher.is_quiet().await,
        "no error for a stream that had a response"
    );
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_last_watch_closes_the_stream() {
    let (client, mut calls) = start(&[]);
    let first = Arc::new(|_| {});
    let id = client.watch(CDS, "c1", first);
    let mut call = calls.next().await;
    call.connected();
    sotw_request(&mut call).await;
    client.cancel_watch(id);
    settle().await;
    assert!(call.is_cancelled());
    assert!(calls.try_next().is_none());
}

#[tokio::test(start_paused = true)]
async fn a53_a_deletion_is_honoured_unless_the_server_says_ignore_it() {
    for (features, deleted) in [(&[][..], true), (&["ignore_resource_deletion"][..], false)] {
        let (client, mut calls) = start(features);
        let mut watcher = Watcher::on(&client, CDS, "c1");
        let mut call = calls.next().await;
        call.connected();
        sotw_request(&mut call).await;
        call.respond(clusters("1", "A", vec![cluster("c1")]));
        watcher.next().await;
        sotw_request(&mut call).await;
        call.respond(clusters("2", "B", vec![]));
        if deleted {
            assert_eq!(watcher.next().await, WatcherEvent::DoesNotExist);
        } else {
            assert!(watcher.is_quiet().await, "{features:?}");
        }
    }
}

// ----- delta --------------------------------------------------------------

async fn delta_request(call: &mut FakeCall) -> DeltaDiscoveryRequest {
    match call.request().await.expect("the call was cancelled") {
        Request::Delta(request) => request,
        Request::Sotw(request) => panic!("a SotW request on a delta stream: {request:?}"),
    }
}

fn delta_clusters(nonce: &str, resources: &[(&str, &str, Any)], removed: &[&str]) -> Response {
    Response::Delta(DeltaDiscoveryResponse {
        system_version_info: "sys".into(),
        nonce: nonce.into(),
        type_url: CDS.type_url().into(),
        resources: resources
            .iter()
            .map(|(name, version, body)| Resource {
                name: name.to_string(),
                version: version.to_string(),
                resource: Some(body.clone()),
                ..Default::default()
            })
            .collect(),
        removed_resources: removed.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[tokio::test(start_paused = true)]
async fn delta_requests_carry_subscription_changes() {
    let (client, mut calls) = start_with(&[], "DELTA_GRPC");
    let _c1 = Watcher::on(&client, CDS, "c1");
    let mut call = calls.next().await;
    call.connected();
    let first = delta_request(&mut call).await;
    assert_eq!(first.resource_names_subscribe, ["c1"]);
    assert!(first.node.is_some() && first.initial_resource_versions.is_empty());
    let c2 = client.watch(CDS, "c2", Arc::new(|_| {}));
    let second = delta_request(&mut call).await;
    assert_eq!(second.resource_names_subscribe, ["c2"]);
    assert!(second.node.is_none());
    client.cancel_watch(c2);
    let third = delta_request(&mut call).await;
    assert!(third.resource_names_subscribe.is_empty());
    assert_eq!(third.resource_names_unsubscribe, ["c2"]);
}

#[tokio::test(start_paused = true)]
async fn a_delta_reconnect_claims_the_versions_held_and_a_nack_advances_none() {
    let (client, mut calls) = start_with(&[], "DELTA_GRPC");
    let mut c1 = Watcher::on(&client, CDS, "c1");
    let mut c2 = Watcher::on(&client, CDS, "c2");
    let _c3 = Watcher::on(&client, CDS, "c3");
    let mut call = calls.next().await;
    call.connected();
    delta_request(&mut call).await;
    delta_request(&mut call).await;
    call.respond(delta_clusters(
        "A",
        &[("c1", "1", cluster("c1")), ("c2", "1", cluster("c2"))],
        &[],
    ));
    c1.next().await;
    c2.next().await;
    let ack = delta_request(&mut call).await;
    assert_eq!(ack.response_nonce, "A");
    assert!(ack.error_detail.is_none());
    // c1 moves on; c2's new version is invalid.
    call.respond(delta_clusters(
        "B",
        &[("c1", "2", cluster("c1")), ("c2", "2", bad_cluster("c2"))],
        &[],
    ));
    assert!(matches!(c2.next().await, WatcherEvent::AmbientError(_)));
    let nack = delta_request(&mut call).await;
    assert!(nack.error_detail.is_some_and(|e| e.message.contains("c2")));
    call.finish(tonic::Status::unavailable("gone"));
    let mut retry = calls.next().await;
    retry.connected();
    let again = delta_request(&mut retry).await;
    assert_eq!(sorted(again.resource_names_subscribe), ["c1", "c2", "c3"]);
    let held: std::collections::BTreeMap<_, _> =
        again.initial_resource_versions.into_iter().collect();
    assert_eq!(
        held,
        [
            ("c1".to_string(), "2".to_string()),
            ("c2".to_string(), "1".to_string())
        ]
        .into(),
        "c1 at its new version, c2 at the one before the NACK, c3 never held"
    );
}

#[tokio::test(start_paused = true)]
async fn a_delta_removal_deletes_any_type_and_says_never_existing_ones_do_not_exist() {
    let (client, mut calls) = start_with(&[], "DELTA_GRPC");
    let mut held = Watcher::on(&client, CDS, "c1");
    let mut never = Watcher::on(&client, CDS, "c2");
    let mut call = calls.next().await;
    call.connected();
    delta_request(&mut call).await;
    delta_request(&mut call).await;
    call.respond(delta_clusters("A", &[("c1", "1", cluster("c1"))], &[]));
    held.next().await;
    delta_request(&mut call).await;
    call.respond(delta_clusters("B", &[], &["c1", "c2", "unwatched"]));
    assert_eq!(held.next().await, WatcherEvent::DoesNotExist);
    assert_eq!(
        never.next().await,
        WatcherEvent::DoesNotExist,
        "at once, not after 15 s"
    );
    let ack = delta_request(&mut call).await;
    assert!(
        ack.error_detail.is_none(),
        "removing what the client never had is no error"
    );
}
