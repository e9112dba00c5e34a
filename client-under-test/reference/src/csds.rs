//! CSDS (gRFC A40, with A71's `client_scope`): the clients' view of their
//! resources, served as `envoy.service.status.v3.ClientStatusDiscoveryService`.

use std::pin::Pin;
use std::sync::Arc;

use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_server::{
    ClientStatusDiscoveryService, ClientStatusDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use crate::client::XdsClient;

/// What a request may ask. `node_matchers` select among the nodes a
/// control plane knows; a client knows only itself and answers
/// INVALID_ARGUMENT, as grpc-go and grpc-java do (C-core ignores them and
/// answers in full).
#[allow(clippy::result_large_err)]
pub fn check_request(request: &ClientStatusRequest) -> Result<(), Status> {
    if request.node_matchers.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid_argument("node_matchers not supported"))
    }
}

/// Yields the clients to report on (e.g. every per-target client).
pub type ClientSource = Arc<dyn Fn() -> Vec<XdsClient> + Send + Sync>;

/// One ClientConfig per client, in the order the source gives them.
pub async fn client_status(clients: &[XdsClient]) -> ClientStatusResponse {
    let mut config = Vec::with_capacity(clients.len());
    for client in clients {
        if let Some(c) = client.dump().await {
            config.push(c);
        }
    }
    ClientStatusResponse { config }
}

#[derive(Clone)]
pub struct CsdsService {
    source: ClientSource,
}

impl CsdsService {
    pub fn new(source: ClientSource) -> Self {
        CsdsService { source }
    }

    pub fn into_server(self) -> ClientStatusDiscoveryServiceServer<CsdsService> {
        ClientStatusDiscoveryServiceServer::new(self)
    }
}

type ResponseStream = Pin<Box<dyn Stream<Item = Result<ClientStatusResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ClientStatusDiscoveryService for CsdsService {
    type StreamClientStatusStream = ResponseStream;

    async fn stream_client_status(
        &self,
        request: Request<Streaming<ClientStatusRequest>>,
    ) -> Result<Response<Self::StreamClientStatusStream>, Status> {
        let source = self.source.clone();
        let mut requests = request.into_inner();
        let stream = async_stream_like(move |tx| async move {
            while let Some(Ok(request)) = requests.next().await {
                if let Err(status) = check_request(&request) {
                    let _ = tx.send(Err(status));
                    break;
                }
                let clients = source();
                if tx.send(Ok(client_status(&clients).await)).is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(stream))
    }

    async fn fetch_client_status(
        &self,
        request: Request<ClientStatusRequest>,
    ) -> Result<Response<ClientStatusResponse>, Status> {
        check_request(request.get_ref())?;
        let clients = (self.source)();
        Ok(Response::new(client_status(&clients).await))
    }
}

/// A stream fed by a spawned task, without pulling in async-stream.
fn async_stream_like<F, Fut>(body: F) -> ResponseStream
where
    F: FnOnce(tokio::sync::mpsc::UnboundedSender<Result<ClientStatusResponse, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(body(tx));
    Box::pin(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
}
