//! A real tonic ADS client over the in-memory network (or TCP), plus resource
//! builders, for driving fake servers in tests.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::{Locality, Node};
use envoy_types::pb::envoy::config::endpoint::v3::{ClusterLoadAssignment, LocalityLbEndpoints};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tonic::{Status, Streaming};
use xds_fake_server::event::{Recorded, ServerEvent};
use xds_fake_server::resource::ServedResource;
use xds_fake_server::{FakeAdsServer, ServerConfig, ServingMode};

use xds_vocabulary::ResourceType;
use xds_vocabulary::network::{MemoryNetwork, MemoryStream};

pub const LDS: &str = ResourceType::Listener.type_url();
pub const RDS: &str = ResourceType::RouteConfiguration.type_url();
pub const CDS: &str = ResourceType::Cluster.type_url();
pub const EDS: &str = ResourceType::ClusterLoadAssignment.type_url();

pub const ADDRESS: &str = "primary:443";

/// Long enough that any response the server was going to send has arrived:
/// under paused time the clock only jumps once everything is idle.
pub const QUIET: Duration = Duration::from_secs(30);

pub fn server(mode: ServingMode) -> FakeAdsServer {
    FakeAdsServer::new(ServerConfig {
        name: "primary".into(),
        mode,
    })
}

/// A server serving on a fresh in-memory network at [`ADDRESS`].
pub fn serving(mode: ServingMode) -> (FakeAdsServer, MemoryNetwork) {
    let network = MemoryNetwork::new();
    let server = server(mode);
    server
        .serve_in_memory(&network, ADDRESS)
        .expect("serve in memory");
    (server, network)
}

pub async fn connect(network: &MemoryNetwork) -> Result<Channel, tonic::transport::Error> {
    let network = network.clone();
    Endpoint::from_static("http://primary")
        .connect_with_connector(tower::service_fn(move |_uri| {
            let network = network.clone();
            async move {
                network
                    .connect(ADDRESS)
                    .await
                    .map(hyper_util::rt::TokioIo::new)
            }
        }))
        .await
}

/// A channel whose connection can be cut from the client side, as when the
/// client process dies: tonic gives a client no way to reset a bidi stream
/// without half-closing it first.
pub async fn connect_killable(
    network: &MemoryNetwork,
) -> Result<(Channel, KillSwitch), tonic::transport::Error> {
    let switch = KillSwitch::default();
    let network = network.clone();
    let slot = switch.clone();
    let channel = Endpoint::from_static("http://primary")
        .connect_with_connector(tower::service_fn(move |_uri| {
            let network = network.clone();
            let slot = slot.clone();
            async move {
                let stream = network.connect(ADDRESS).await?;
                *slot.0.lock().expect("lock") = Some(stream);
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(slot))
            }
        }))
        .await?;
    Ok((channel, switch))
}

/// The client end of a connection that [`KillSwitch::kill`] drops.
#[derive(Clone, Default)]
pub struct KillSwitch(Arc<Mutex<Option<MemoryStream>>>);

impl KillSwitch {
    pub fn kill(&self) {
        self.0.lock().expect("lock").take();
    }

    fn with<R>(
        &self,
        f: impl FnOnce(Pin<&mut MemoryStream>) -> Poll<std::io::Result<R>>,
    ) -> Poll<std::io::Result<R>> {
        match self.0.lock().expect("lock").as_mut() {
            Some(stream) => f(Pin::new(stream)),
            None => Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into())),
        }
    }
}

impl AsyncRead for KillSwitch {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.with(|s| s.poll_read(cx, buf))
    }
}

impl AsyncWrite for KillSwitch {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.with(|s| s.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.with(|s| s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.with(|s| s.poll_shutdown(cx))
    }
}

/// One client ADS stream.
pub struct AdsStream {
    requests: Option<mpsc::UnboundedSender<DiscoveryRequest>>,
    pub responses: Streaming<DiscoveryResponse>,
}

impl AdsStream {
    pub async fn open(channel: Channel) -> Result<Self, Status> {
        let (requests, rx) = mpsc::unbounded_channel();
        let responses = AggregatedDiscoveryServiceClient::new(channel)
            .stream_aggregated_resources(UnboundedReceiverStream::new(rx))
            .await?
            .into_inner();
        Ok(Self {
            requests: Some(requests),
            responses,
        })
    }

    pub async fn open_in_memory(network: &MemoryNetwork) -> Self {
        let channel = connect(network).await.expect("connect");
        Self::open(channel).await.expect("open stream")
    }

    pub fn send(&self, request: DiscoveryRequest) {
        self.requests
            .as_ref()
            .expect("stream not half-closed")
            .send(request)
            .expect("request stream open");
    }

    /// A request for `names` of `type_url` acknowledging `acked` (or the
    /// initial request when `None`).
    pub fn request(&self, type_url: &str, names: &[&str], acked: Option<&DiscoveryResponse>) {
        self.send(request(type_url, names, acked));
    }

    pub fn nack(&self, names: &[&str], rejected: &DiscoveryResponse) {
        let mut request = request(&rejected.type_url, names, None);
        request.response_nonce = rejected.nonce.clone();
        request.error_detail = Some(RpcStatus {
            code: 3,
            message: "rejected".into(),
            details: vec![],
        });
        self.send(request);
    }

    /// Ends the request side (gRPC half-close).
    pub fn half_close(&mut self) {
        self.requests = None;
    }

    pub async fn next(&mut self) -> DiscoveryResponse {
        tokio::time::timeout(QUIET, self.responses.message())
            .await
            .expect("a response in time")
            .expect("stream ok")
            .expect("stream not ended")
    }

    /// True if nothing arrives (and the stream stays open) for [`QUIET`].
    pub async fn is_silent(&mut self) -> bool {
        tokio::time::timeout(QUIET, self.responses.message())
            .await
            .is_err()
    }
}

pub fn request(
    type_url: &str,
    names: &[&str],
    acked: Option<&DiscoveryResponse>,
) -> DiscoveryRequest {
    DiscoveryRequest {
        version_info: acked.map(|r| r.version_info.clone()).unwrap_or_default(),
        node: Some(Node {
            id: "test-node".into(),
            ..Default::default()
        }),
        resource_names: names.iter().map(|n| n.to_string()).collect(),
        type_url: type_url.into(),
        response_nonce: acked.map(|r| r.nonce.clone()).unwrap_or_default(),
        ..Default::default()
    }
}

pub fn listener(name: &str, marker: &str) -> ServedResource {
    ServedResource::from_message(
        name,
        &Listener {
            name: name.into(),
            stat_prefix: marker.into(),
            ..Default::default()
        },
    )
}

pub fn cluster(name: &str, marker: &str) -> ServedResource {
    ServedResource::from_message(
        name,
        &Cluster {
            name: name.into(),
            alt_stat_name: marker.into(),
            ..Default::default()
        },
    )
}

pub fn route(name: &str, marker: &str) -> ServedResource {
    ServedResource::from_message(
        name,
        &RouteConfiguration {
            name: name.into(),
            internal_only_headers: vec![marker.into()],
            ..Default::default()
        },
    )
}

pub fn endpoints(name: &str, marker: &str) -> ServedResource {
    ServedResource::from_message(
        name,
        &ClusterLoadAssignment {
            cluster_name: name.into(),
            endpoints: vec![LocalityLbEndpoints {
                locality: Some(Locality {
                    zone: marker.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        },
    )
}

/// The `ServedResource`s a response carries, matched back to the store's
/// entries by comparing the packed `Any`s.
pub fn entries(response: &DiscoveryResponse) -> Vec<&envoy_types::pb::google::protobuf::Any> {
    response.resources.iter().collect()
}

pub fn events_only(events: Vec<Recorded<ServerEvent>>) -> Vec<ServerEvent> {
    events.into_iter().map(|recorded| recorded.event).collect()
}

/// Every stream close the server recorded: (code, message, by client).
pub fn stream_closes(server: &FakeAdsServer) -> Vec<(tonic::Code, String, bool)> {
    events_only(server.events())
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::StreamClosed {
                code,
                message,
                by_client,
                ..
            } => Some((code, message, by_client)),
            _ => None,
        })
        .collect()
}

/// The responses the server recorded as sent, as (stream, names) pairs.
pub fn sent(server: &FakeAdsServer) -> Vec<(u64, String, Vec<String>)> {
    server
        .events()
        .into_iter()
        .filter_map(|recorded| match recorded.event {
            ServerEvent::ResponseSent { stream, response } => {
                Some((stream, response.type_url, response.resource_names))
            }
            _ => None,
        })
        .collect()
}

pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
