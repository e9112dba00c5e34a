//! The tonic face of a fake server: the `AggregatedDiscoveryService`
//! implementation shared by every transport, for both protocols.
//!
//! Each stream gets a task that reads its requests and feeds them to the
//! server state; responses flow back through the stream's outbox, which
//! the state writes to without waiting on the transport (bounded in bytes:
//! see `outbox`).

use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::AggregatedDiscoveryService;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use tokio::sync::oneshot;
use tonic::{Code, Request, Response, Status, Streaming};

use crate::connection::ConnectionInfo;
use crate::delta::DeltaStream;
use crate::outbox::{Taken, outbox};
use crate::shared::Inner;
use crate::sotw::SotwStream;
use crate::state::State;
use crate::stream::{Protocol, Sender, Stream};

/// The ADS service of one fake server.
pub(crate) struct AdsService {
    inner: Arc<Inner>,
}

impl AdsService {
    pub fn new(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// Registers a stream of the protocol `protocol` makes from its
    /// response sender, and starts reading its requests into `on_request`.
    fn open<Req, Resp, P: Protocol>(
        &self,
        request: Request<Streaming<Req>>,
        protocol: impl FnOnce(Sender<Resp>) -> P,
        on_request: fn(&mut State, u64, Req),
    ) -> Result<Response<Taken<Resp>>, Status>
    where
        Req: Send + 'static,
    {
        let connection = request
            .extensions()
            .get::<ConnectionInfo>()
            .map(|info| info.connection);
        let (responses, taken) = outbox();
        let (stop_reader, stopped) = oneshot::channel();
        let stream = Stream::new(protocol(responses), stop_reader);
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
            on_request,
        ));
        Ok(Response::new(taken))
    }
}

#[tonic::async_trait]
impl AggregatedDiscoveryService for AdsService {
    type StreamAggregatedResourcesStream = Taken<DiscoveryResponse>;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamAggregatedResourcesStream>, Status> {
        self.open(request, SotwStream::new, State::on_sotw_request)
    }

    type DeltaAggregatedResourcesStream = Taken<DeltaDiscoveryResponse>;

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaAggregatedResourcesStream>, Status> {
        self.open(request, DeltaStream::new, State::on_delta_request)
    }
}

/// Whether a request stream failed because a message was over the size
/// limit (tonic's decoder: OUT_OF_RANGE, "decoded message length too
/// large").
fn is_oversize(status: &Status) -> bool {
    status.code() == Code::OutOfRange && status.message().contains("message length too large")
}

/// Reads one stream's requests until the client ends the stream or the
/// server closes it (`stopped` resolves when the server drops the stream).
async fn read_requests<Req>(
    inner: Arc<Inner>,
    stream_id: u64,
    mut requests: Streaming<Req>,
    mut stopped: oneshot::Receiver<()>,
    on_request: fn(&mut State, u64, Req),
) {
    loop {
        tokio::select! {
            // The server's close wins over a request that raced it: the
            // stream is already recorded as closed.
            biased;
            _ = &mut stopped => return,
            message = requests.message() => match message {
                Ok(Some(request)) => inner.update(|state| on_request(state, stream_id, request)),
                Ok(None) => {
                    inner.update(|state| {
                        state.close_stream(stream_id, Code::Ok, "client half-closed".into(), true)
                    });
                    return;
                }
                Err(status) if is_oversize(&status) => {
                    // A request past the server's size limit: the server
                    // ends the stream, as gRPC servers do, with
                    // RESOURCE_EXHAUSTED (tonic's decoder says OUT_OF_RANGE,
                    // which the client would never see anyway).
                    inner.update(|state| {
                        state.close_stream(
                            stream_id,
                            Code::ResourceExhausted,
                            format!("request too large: {}", status.message()),
                            false,
                        )
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
