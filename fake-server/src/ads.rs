//! The tonic face of a fake server: the `AggregatedDiscoveryService`
//! implementation shared by every transport.
//!
//! Each SotW stream gets a task that reads its requests and feeds them to the
//! server state; responses flow back through an unbounded channel that the
//! state writes to, so sends never wait on the transport.

use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::AggregatedDiscoveryService;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DiscoveryRequest, DiscoveryResponse,
};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Code, Request, Response, Status, Streaming};

use crate::connection::ConnectionInfo;
use crate::delta;
use crate::shared::Inner;
use crate::stream::{Protocol, Stream};

/// The ADS service of one fake server.
pub(crate) struct AdsService {
    inner: Arc<Inner>,
}

impl AdsService {
    pub fn new(inner: Arc<Inner>) -> Self {
        Self { inner }
    }
}

#[tonic::async_trait]
impl AggregatedDiscoveryService for AdsService {
    type StreamAggregatedResourcesStream =
        UnboundedReceiverStream<Result<DiscoveryResponse, Status>>;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamAggregatedResourcesStream>, Status> {
        let connection = request
            .extensions()
            .get::<ConnectionInfo>()
            .map(|info| info.connection);
        let (responses, responses_rx) = mpsc::unbounded_channel();
        let (stop_reader, stopped) = oneshot::channel();
        let stream = Stream::new(
            Protocol::Sotw {
                responses,
                types: Default::default(),
            },
            stop_reader,
        );
        let Some(stream_id) = self
            .inner
            .update(|state| state.open_stream(connection, stream))
        else {
            return Err(Status::unavailable("server is shut down"));
        };
        tokio::spawn(read_requests(
            self.inner.clone(),
            stream_id,
            request.into_inner(),
            stopped,
        ));
        Ok(Response::new(UnboundedReceiverStream::new(responses_rx)))
    }

    type DeltaAggregatedResourcesStream = delta::DeltaResponseStream;

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaAggregatedResourcesStream>, Status> {
        delta::delta_aggregated_resources(&self.inner, request).await
    }
}

/// Reads one stream's requests until the client ends the stream or the
/// server closes it (`stopped` resolves when the server drops the stream).
async fn read_requests(
    inner: Arc<Inner>,
    stream_id: u64,
    mut requests: Streaming<DiscoveryRequest>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            // The server's close wins over a request that raced it: the
            // stream is already recorded as closed.
            biased;
            _ = &mut stopped => return,
            message = requests.message() => match message {
                Ok(Some(request)) => inner.update(|state| state.on_sotw_request(stream_id, request)),
                Ok(None) => {
                    inner.update(|state| {
                        state.close_stream(stream_id, Code::Ok, "client half-closed".into(), true)
                    });
                    return;
                }
                Err(status) => {
                    // Cancellation, a lost connection or an undecodable
                    // message: the client side of the stream is gone either way.
                    inner.update(|state| {
                        state.close_stream(stream_id, status.code(), status.message().into(), true)
                    });
                    return;
                }
            },
        }
    }
}
