//! `connect::tonic_channel`: a tonic client reaches a fake server over the
//! in-memory network, on the paused clock, by the server's name.

use std::sync::Arc;

use tokio_stream::StreamExt as _;

use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use xds_client_under_test::connect::{plaintext_endpoint, tonic_channel};
use xds_fake_server::{FakeAdsServer, ServedResource, ServerConfig, ServingMode};
use xds_vocabulary::ResourceType;
use xds_vocabulary::network::MemoryNetwork;

#[tokio::test(start_paused = true)]
async fn a_tonic_client_reaches_a_fake_server_in_memory() {
    let network = MemoryNetwork::new();
    let server = FakeAdsServer::new(ServerConfig {
        name: "primary".into(),
        mode: ServingMode::Auto,
    });
    server
        .serve_in_memory(&network, "primary:443")
        .expect("serves");
    server.set_resources(
        vec![ServedResource::from_message(
            "c1",
            &envoy_types::pb::envoy::config::cluster::v3::Cluster {
                name: "c1".into(),
                ..Default::default()
            },
        )],
        None,
    );
    let channel = tonic_channel(
        Arc::new(network),
        "primary:443",
        plaintext_endpoint("primary:443").expect("an endpoint"),
    );
    let mut client = AggregatedDiscoveryServiceClient::new(channel);
    let request = DiscoveryRequest {
        type_url: ResourceType::Cluster.type_url().into(),
        resource_names: vec!["c1".into()],
        ..Default::default()
    };
    let mut responses = client
        .stream_aggregated_resources(tokio_stream::iter([request]).chain(tokio_stream::pending()))
        .await
        .expect("a stream")
        .into_inner();
    let response = responses
        .message()
        .await
        .expect("a response")
        .expect("not the end");
    assert_eq!(response.resources.len(), 1);
}
