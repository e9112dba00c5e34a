//! CSDS served over real gRPC: a ClientStatusDiscoveryService client
//! fetches (unary and streaming) what the XdsClient knows.

use std::sync::Arc;

use envoy_types::pb::envoy::admin::v3::ClientResourceStatus;
use envoy_types::pb::envoy::service::status::v3::ClientStatusRequest;
use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_client::ClientStatusDiscoveryServiceClient;
use tokio_stream::StreamExt;
use xds_reference_client::csds::CsdsService;
use xds_reference_client::{Bootstrap, ResourceType, WatcherEvent, XdsClient, XdsClientConfig};

#[tokio::test]
async fn csds_is_served_over_grpc() {
    // Nothing listens on the xDS server's port: the resource stays REQUESTED.
    let unused = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = unused.local_addr().unwrap();
    drop(unused);
    let bootstrap = Bootstrap::from_json(&format!(
        r#"{{"xds_servers":[{{"server_uri":"{dead}","channel_creds":[{{"type":"insecure"}}]}}],"node":{{"id":"node-1"}}}}"#
    ))
    .unwrap();
    let mut config = XdsClientConfig::new(bootstrap);
    config.client_scope = "xds:///svc".to_string();
    let client = XdsClient::start(config);
    client.watch(ResourceType::Cluster, "c1", Arc::new(|_: WatcherEvent| {}));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let clients = client.clone();
    let service = CsdsService::new(Arc::new(move || vec![clients.clone()])).into_server();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let mut stub = ClientStatusDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let response = stub
        .fetch_client_status(ClientStatusRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.config.len(), 1);
    let config = &response.config[0];
    assert_eq!(config.client_scope, "xds:///svc");
    assert_eq!(config.node.as_ref().unwrap().id, "node-1");
    assert_eq!(config.generic_xds_configs.len(), 1);
    let entry = &config.generic_xds_configs[0];
    assert_eq!(entry.name, "c1");
    assert_eq!(entry.type_url, ResourceType::Cluster.type_url());
    assert_eq!(entry.client_status, ClientResourceStatus::Requested as i32);

    let requests = tokio_stream::iter(vec![
        ClientStatusRequest::default(),
        ClientStatusRequest::default(),
    ]);
    let mut stream = stub
        .stream_client_status(requests)
        .await
        .unwrap()
        .into_inner();
    for _ in 0..2 {
        let response = stream.next().await.unwrap().unwrap();
        assert_eq!(response.config[0].generic_xds_configs[0].name, "c1");
    }
}
