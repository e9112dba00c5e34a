//! Delta (incremental) ADS streams against a real tonic client: auto mode
//! sends only what changed, names deletions, honours what the client holds
//! on reconnect; scripted delta responses go out as given; the recording
//! shows the delta fields; faults apply to delta streams as to SotW ones.

use std::collections::HashMap;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Streaming;
use xds_fake_server::event::{RecordedDeltaRequest, ServerEvent};
use xds_fake_server::fault::{CloseStreams, DropResponses};
use xds_fake_server::{ScriptedDeltaResource, ScriptedDeltaResponse, ServingMode};
use xds_vocabulary::network::MemoryNetwork;
use xds_vocabulary::{AdsProtocol, RequestKind};

use crate::support::*;

/// One client delta stream.
struct DeltaStream {
    requests: mpsc::UnboundedSender<DeltaDiscoveryRequest>,
    responses: Streaming<DeltaDiscoveryResponse>,
}

impl DeltaStream {
    async fn open(network: &MemoryNetwork) -> Self {
        let channel = connect(network).await.expect("connect");
        let (requests, rx) = mpsc::unbounded_channel();
        let responses = AggregatedDiscoveryServiceClient::new(channel)
            .delta_aggregated_resources(UnboundedReceiverStream::new(rx))
            .await
            .expect("open delta stream")
            .into_inner();
        Self {
            requests,
            responses,
        }
    }

    fn send(&self, type_url: &str, subscribe: &[&str], unsubscribe: &[&str], nonce: &str) {
        self.send_full(type_url, subscribe, unsubscribe, nonce, &[], false);
    }

    fn send_full(
        &self,
        type_url: &str,
        subscribe: &[&str],
        unsubscribe: &[&str],
        nonce: &str,
        initial: &[(&str, &str)],
        nack: bool,
    ) {
        let request = DeltaDiscoveryRequest {
            type_url: type_url.into(),
            resource_names_subscribe: subscribe.iter().map(|s| s.to_string()).collect(),
            resource_names_unsubscribe: unsubscribe.iter().map(|s| s.to_string()).collect(),
            initial_resource_versions: initial
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
            response_nonce: nonce.into(),
            error_detail: nack.then(|| RpcStatus {
                code: 3,
                message: "rejected".into(),
                details: vec![],
            }),
            ..Default::default()
        };
        self.requests.send(request).expect("request stream open");
    }

    async fn next(&mut self) -> DeltaDiscoveryResponse {
        tokio::time::timeout(QUIET, self.responses.message())
            .await
            .expect("a response in time")
            .expect("no stream error")
            .expect("stream not closed")
    }

    async fn is_silent(&mut self) -> bool {
        tokio::time::timeout(QUIET, self.responses.message())
            .await
            .is_err()
    }
}

/// (name, version) of each resource, and the removed names.
fn contents(response: &DeltaDiscoveryResponse) -> (Vec<(String, String)>, Vec<String>) {
    (
        response
            .resources
            .iter()
            .map(|r| (r.name.clone(), r.version.clone()))
            .collect(),
        response.removed_resources.clone(),
    )
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn only_changed_resources_travel_and_deletions_are_named() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(
        vec![cluster("a", "1"), cluster("b", "1"), cluster("c", "1")],
        None,
    );
    let mut stream = DeltaStream::open(&network).await;
    stream.send(CDS, &["a", "b", "c"], &[], "");
    let first = stream.next().await;
    assert_eq!(
        contents(&first),
        (pairs(&[("a", "1"), ("b", "1"), ("c", "1")]), vec![])
    );
    stream.send(CDS, &[], &[], &first.nonce);
    assert!(stream.is_silent().await, "an ACK gets nothing");

    server.set_resources(vec![cluster("b", "2")], None);
    let second = stream.next().await;
    assert_eq!(contents(&second), (pairs(&[("b", "2")]), vec![]));
    assert_eq!(second.system_version_info, "2");

    server.remove_resources(CDS, &["c".into()], None);
    let third = stream.next().await;
    assert_eq!(contents(&third), (vec![], vec!["c".to_string()]));
    assert_ne!(first.nonce, second.nonce);
}

#[tokio::test(start_paused = true)]
async fn an_unsubscribed_resource_changes_silently_and_a_resubscription_resends() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![endpoints("e1", "1")], None);
    let mut stream = DeltaStream::open(&network).await;
    stream.send(EDS, &["e1"], &[], "");
    let first = stream.next().await;
    stream.send(EDS, &[], &["e1"], &first.nonce);
    assert!(stream.is_silent().await, "an unsubscription gets nothing");
    server.set_resources(vec![endpoints("e1", "2")], None);
    assert!(stream.is_silent().await);
    stream.send(EDS, &["e1"], &[], "");
    assert_eq!(contents(&stream.next().await).0, pairs(&[("e1", "2")]));
    // Subscribed again while holding the latest: sent again all the same.
    stream.send(EDS, &["e1"], &[], "");
    assert_eq!(contents(&stream.next().await).0, pairs(&[("e1", "2")]));
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_with_initial_versions_gets_only_the_differences() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("a", "1"), cluster("b", "1")], None);
    server.set_resources(vec![cluster("b", "2")], None);
    let mut stream = DeltaStream::open(&network).await;
    stream.send_full(
        CDS,
        &["a", "b", "gone"],
        &[],
        "",
        &[("a", "1"), ("b", "1"), ("gone", "1")],
        false,
    );
    let response = stream.next().await;
    assert_eq!(
        contents(&response),
        (pairs(&[("b", "2")]), vec!["gone".to_string()])
    );
}

#[tokio::test(start_paused = true)]
async fn a_legacy_wildcard_gets_every_resource_and_new_ones() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("l1", "1")], None);
    let mut stream = DeltaStream::open(&network).await;
    stream.send(LDS, &[], &[], "");
    assert_eq!(contents(&stream.next().await).0, pairs(&[("l1", "1")]));
    server.set_resources(vec![listener("l2", "1")], None);
    assert_eq!(contents(&stream.next().await).0, pairs(&[("l2", "2")]));
}

#[tokio::test(start_paused = true)]
async fn requests_are_recorded_with_their_delta_fields_and_kinds() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("a", "1")], None);
    let mut stream = DeltaStream::open(&network).await;
    stream.send_full(CDS, &["a"], &[], "", &[("x", "9")], false);
    let response = stream.next().await;
    stream.send_full(CDS, &[], &["a"], &response.nonce, &[], true);
    assert!(stream.is_silent().await);
    let requests: Vec<_> = server
        .events()
        .into_iter()
        .filter_map(|e| match e.event {
            ServerEvent::RequestReceived { request, .. } => Some(request),
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].kind, RequestKind::Initial);
    assert_eq!(
        requests[0].subscription(),
        ["a"],
        "the subscription after it"
    );
    assert_eq!(
        requests[0].delta,
        Some(RecordedDeltaRequest {
            subscribe: vec!["a".into()],
            unsubscribe: vec![],
            initial_resource_versions: [("x".to_string(), "9".to_string())].into(),
            subscription: ["a"].into_iter().collect(),
        })
    );
    assert_eq!(requests[1].kind, RequestKind::Nack);
    assert!(requests[1].subscription().is_empty());
    let opened = server.events().into_iter().any(|e| {
        matches!(
            e.event,
            ServerEvent::StreamOpened {
                protocol: AdsProtocol::Delta,
                ..
            }
        )
    });
    assert!(opened);
}

#[tokio::test(start_paused = true)]
async fn scripted_delta_responses_go_out_as_given() {
    let (server, network) = serving(ServingMode::Scripted);
    let mut stream = DeltaStream::open(&network).await;
    stream.send(CDS, &["a"], &[], "");
    tokio::task::yield_now().await;
    let sent = server.send_delta_response(ScriptedDeltaResponse {
        resource_errors: Vec::new(),
        type_url: CDS.into(),
        system_version_info: Some("sys".into()),
        nonce: Some("N".into()),
        resources: vec![
            ScriptedDeltaResource::from_served(cluster("a", "1")),
            ScriptedDeltaResource {
                name: "a".into(),
                version: Some("v2".into()),
                entry: None,
                ttl: Some(std::time::Duration::from_secs(30)),
            },
        ],
        removed: vec!["a".into(), "never".into()],
    });
    assert_eq!(sent, 1);
    let response = stream.next().await;
    assert_eq!(response.nonce, "N");
    assert_eq!(response.system_version_info, "sys");
    assert_eq!(
        contents(&response),
        (
            pairs(&[("a", "sys"), ("a", "v2")]),
            vec!["a".to_string(), "never".to_string()]
        )
    );
    assert!(response.resources[1].resource.is_none());
    assert_eq!(
        response.resources[1].ttl.as_ref().map(|t| t.seconds),
        Some(30)
    );
    // A SotW scripted send does not reach a delta stream.
    assert_eq!(
        server.send_response(xds_fake_server::ScriptedResponse {
            resource_errors: Vec::new(),
            type_url: CDS.into(),
            version_info: None,
            nonce: None,
            resources: vec![],
        }),
        0
    );
}

#[tokio::test(start_paused = true)]
async fn faults_apply_to_delta_streams() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("a", "1")], None);
    server.apply(DropResponses {
        count: 1,
        type_url: None,
    });
    let mut stream = DeltaStream::open(&network).await;
    stream.send(CDS, &["a"], &[], "");
    assert!(stream.is_silent().await, "the first response was dropped");
    let dropped = server
        .events()
        .into_iter()
        .any(|e| matches!(e.event, ServerEvent::ResponseDropped { .. }));
    assert!(dropped);
    server.apply(CloseStreams {
        code: tonic::Code::Unavailable,
        message: "bye".into(),
    });
    let status = tokio::time::timeout(QUIET, stream.responses.message())
        .await
        .expect("in time")
        .expect_err("the stream ends with a status");
    assert_eq!(status.code(), tonic::Code::Unavailable);
}
