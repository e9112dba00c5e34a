//! One connection to the global, carrying both KDS RPCs as Kuma's mux
//! client does (`pkg/kds/mux/client.go:86-141`): the zone's headers on
//! each, gzip both ways, both RPCs started together. Each RPC runs on a
//! task of its own (a pump) that sends what the worker queues and hands
//! the worker what arrives, then how the RPC ended.
//!
//! Dropping the connection cancels both RPCs (each one's request body
//! fails with an h2 CANCEL: see [`Cancellable`]) and aborts both pumps;
//! the tonic channel, and with it the transport connection, goes with the
//! last of them.
//!
//! Bounds: what arrives waits in a small bounded queue, so a pump reads
//! the next message only once the worker took the last (HTTP/2 flow
//! control holds the global back); what the zone sends waits in a bounded
//! queue too, and a global that lets it fill up (it reads none of what
//! the zone sends) ends the connection ([`Outbound::send`]).

use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::codec::CompressionEncoding;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::transport::Channel;
use xds_vocabulary::kds::{
    CLIENT_ID_HEADER, FEATURES_HEADER, HEALTH_CHECK_PATH, KDS_VERSION_HEADER, KdsRpc,
    VERSION_HEADER, ZoneHealthCheckRequest, ZoneHealthCheckResponse,
};

use super::MAX_MESSAGE;

/// What a pump hands the worker.
#[derive(Debug)]
pub(crate) enum Arrived {
    /// A response on `GlobalToZoneSync`.
    Response(DeltaDiscoveryResponse),
    /// A request of the global on `ZoneToGlobalSync` (boxed: a request
    /// with its node is three times a response's size).
    Request(Box<DeltaDiscoveryRequest>),
    /// The RPC ended with this status (OK: the global ended it cleanly).
    Ended(KdsRpc, tonic::Status),
    /// A health ping failed other than UNIMPLEMENTED: Kuma's zone restarts
    /// its connection.
    HealthCheckFailed(tonic::Status),
}

/// The messages that wait for the worker: a few, so a fast global waits on
/// flow control rather than on the zone's memory.
const ARRIVED_QUEUE: usize = 8;

/// The zone's headers on both RPCs.
#[derive(Clone, Debug)]
pub(crate) struct Headers {
    /// `None`: no `client-id` (a broken zone).
    pub client_id: Option<String>,
    /// The `features` header values.
    pub features: Vec<String>,
    /// The features of the first requests' node metadata (Kuma's list
    /// differs from its headers').
    pub node_features: Vec<String>,
    pub version: String,
}

impl Headers {
    fn apply(&self, metadata: &mut MetadataMap) {
        let value = |text: &str| AsciiMetadataValue::try_from(text).ok();
        if let Some(id) = self.client_id.as_deref().and_then(value) {
            metadata.insert(CLIENT_ID_HEADER, id);
        }
        if let Some(v3) = value("v3") {
            metadata.insert(KDS_VERSION_HEADER, v3);
        }
        for feature in self.features.iter().filter_map(|f| value(f)) {
            metadata.append(FEATURES_HEADER, feature);
        }
        if let Some(version) = value(&self.version) {
            metadata.insert(VERSION_HEADER, version);
        }
    }
}

/// The sending half of one RPC.
pub(crate) struct Outbound<T> {
    queue: mpsc::Sender<T>,
}

/// The global does not take what the zone sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}: the global reads none of what the zone sends (its queue is full)")]
pub(crate) struct Stalled(pub KdsRpc);

impl<T> Outbound<T> {
    /// Queues `message`; a full queue (or an RPC gone) is an error that
    /// ends the connection rather than a queue that grows.
    pub fn send(&self, rpc: KdsRpc, message: T) -> Result<(), Stalled> {
        match self.queue.try_send(message) {
            Ok(()) => Ok(()),
            // An RPC that is gone reports its end on its own.
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => Err(Stalled(rpc)),
        }
    }
}

pub(crate) struct Connection {
    pub requests: Outbound<DeltaDiscoveryRequest>,
    pub responses: Outbound<DeltaDiscoveryResponse>,
    pumps: [JoinHandle<()>; 3],
    /// Dropped with the connection: each cancels its RPC.
    _cancel: [oneshot::Sender<()>; 2],
}

impl Connection {
    /// Starts both RPCs on `channel`. `queue`: how many messages each RPC
    /// may have waiting to go. Without `zone_to_global` (the defect
    /// `ZoneDefects::no_zone_to_global_sync`) only GlobalToZoneSync is
    /// opened, and what the zone would send the global is dropped.
    pub fn open(
        channel: Channel,
        headers: Arc<Headers>,
        queue: usize,
        arrived: mpsc::Sender<Arrived>,
        zone_to_global: bool,
        pings: bool,
    ) -> Connection {
        let health = if pings {
            tokio::spawn(ping_health(
                channel.clone(),
                headers.clone(),
                arrived.clone(),
            ))
        } else {
            tokio::spawn(async {})
        };
        let (requests, requests_rx) = mpsc::channel(queue.max(1));
        let (responses, responses_rx) = mpsc::channel(queue.max(1));
        let (cancel_down, cancel_down_rx) = oneshot::channel();
        let (cancel_up, cancel_up_rx) = oneshot::channel();
        let global_to_zone = tokio::spawn(pump(
            Cancellable {
                channel: channel.clone(),
                cancel: Some(cancel_down_rx),
            },
            headers.clone(),
            KdsRpc::GlobalToZoneSync,
            requests_rx,
            arrived.clone(),
            Arrived::Response,
        ));
        let zone_to_global = if zone_to_global {
            tokio::spawn(pump(
                Cancellable {
                    channel,
                    cancel: Some(cancel_up_rx),
                },
                headers,
                KdsRpc::ZoneToGlobalSync,
                responses_rx,
                arrived,
                |request| Arrived::Request(Box::new(request)),
            ))
        } else {
            let mut dropped = responses_rx;
            tokio::spawn(async move { while dropped.recv().await.is_some() {} })
        };
        Connection {
            requests: Outbound { queue: requests },
            responses: Outbound { queue: responses },
            pumps: [global_to_zone, zone_to_global, health],
            _cancel: [cancel_down, cancel_up],
        }
    }

    /// The arrival queue's size (for the worker's channel).
    pub const ARRIVED_QUEUE: usize = ARRIVED_QUEUE;
}

impl Drop for Connection {
    fn drop(&mut self) {
        for pump in &self.pumps {
            pump.abort();
        }
    }
}

/// The interval between health pings while the global asks for none
/// (Kuma 2.14's zone, `pkg/kds/mux/client.go:310`).
pub const HEALTH_PING_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// Kuma's zone's health pings (`startHealthCheck`,
/// `pkg/kds/mux/client.go:301-340` at v2.14.3), on the connection's
/// channel with the zone's headers: `GlobalKDSService/HealthCheck` at
/// once, then every interval the global's answer gives (while it gives
/// none, [`HEALTH_PING_INTERVAL`]). UNIMPLEMENTED stops the pings (a
/// global without the service); any other error ends the connection.
async fn ping_health(channel: Channel, headers: Arc<Headers>, arrived: mpsc::Sender<Arrived>) {
    let mut interval = HEALTH_PING_INTERVAL;
    loop {
        let mut grpc = tonic::client::Grpc::new(channel.clone())
            .send_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Gzip);
        let answer = match grpc.ready().await {
            Err(e) => Err(tonic::Status::unavailable(format!(
                "the channel is not ready: {e}"
            ))),
            Ok(()) => {
                let mut request = tonic::Request::new(ZoneHealthCheckRequest {});
                headers.apply(request.metadata_mut());
                grpc.unary(
                    request,
                    http::uri::PathAndQuery::from_static(HEALTH_CHECK_PATH),
                    tonic_prost::ProstCodec::<ZoneHealthCheckRequest, ZoneHealthCheckResponse>::default(),
                )
                .await
            }
        };
        match answer {
            Ok(response) => {
                let asked = response
                    .into_inner()
                    .interval
                    .map(|d| {
                        std::time::Duration::new(
                            u64::try_from(d.seconds).unwrap_or(0),
                            u32::try_from(d.nanos).unwrap_or(0),
                        )
                    })
                    .unwrap_or_default();
                if !asked.is_zero() {
                    interval = asked;
                }
            }
            Err(status) if status.code() == tonic::Code::Unimplemented => return,
            Err(status) => {
                let _ = arrived.send(Arrived::HealthCheckFailed(status)).await;
                return;
            }
        }
        tokio::time::sleep(interval).await;
    }
}

/// Runs one RPC until it ends or the pump is aborted.
async fn pump<Out, In>(
    channel: Cancellable,
    headers: Arc<Headers>,
    rpc: KdsRpc,
    outbound: mpsc::Receiver<Out>,
    arrived: mpsc::Sender<Arrived>,
    wrap: fn(In) -> Arrived,
) where
    Out: prost::Message + Send + 'static,
    In: prost::Message + Default + Send + 'static,
{
    let status = run(channel, &headers, rpc, outbound, &arrived, wrap).await;
    // The worker may be gone (the zone stopped): nothing to tell.
    let _ = arrived.send(Arrived::Ended(rpc, status)).await;
}

async fn run<Out, In>(
    channel: Cancellable,
    headers: &Headers,
    rpc: KdsRpc,
    outbound: mpsc::Receiver<Out>,
    arrived: &mpsc::Sender<Arrived>,
    wrap: fn(In) -> Arrived,
) -> tonic::Status
where
    Out: prost::Message + Send + 'static,
    In: prost::Message + Default + Send + 'static,
{
    let mut grpc = tonic::client::Grpc::new(channel)
        .send_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    if let Err(e) = grpc.ready().await {
        return tonic::Status::unavailable(format!("the channel is not ready: {e}"));
    }
    // The request stream never ends by itself (the queue's sender goes
    // with the connection): the RPC ends by its cancellation.
    let outbound = ReceiverStream::new(outbound).chain(tokio_stream::pending());
    let mut request = tonic::Request::new(outbound);
    headers.apply(request.metadata_mut());
    let path = http::uri::PathAndQuery::from_static(rpc.path());
    let codec = tonic_prost::ProstCodec::<Out, In>::default();
    let mut stream = match grpc.streaming(request, path, codec).await {
        Ok(response) => response.into_inner(),
        Err(status) => return status,
    };
    loop {
        match stream.message().await {
            Ok(Some(message)) => {
                if arrived.send(wrap(message)).await.is_err() {
                    return tonic::Status::cancelled("the zone stopped");
                }
            }
            Ok(None) => return tonic::Status::new(tonic::Code::Ok, "the global ended the stream"),
            Err(status) => return status,
        }
    }
}

/// A tonic channel whose one call's request body fails with an h2 CANCEL
/// once `cancel`'s sender goes: hyper then resets the stream with
/// RST_STREAM(CANCEL), and the global sees the RPC CANCELLED, as when
/// Kuma's zone cancels its context (KDS-FACTS: "All six RPCs end (the
/// global sees CANCELLED)"). tonic has no other way to cancel a client
/// stream: dropping the response leaves the request half open, and ending
/// the request stream half-closes it cleanly (the global would see the
/// zone end it with OK).
struct Cancellable {
    channel: Channel,
    cancel: Option<oneshot::Receiver<()>>,
}

impl tower::Service<http::Request<tonic::body::Body>> for Cancellable {
    type Response = http::Response<tonic::body::Body>;
    type Error = tonic::transport::Error;
    type Future = <Channel as tower::Service<http::Request<tonic::body::Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        tower::Service::poll_ready(&mut self.channel, cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let (parts, body) = request.into_parts();
        let body = match self.cancel.take() {
            Some(cancel) => tonic::body::Body::new(CancelledBody { body, cancel }),
            None => body,
        };
        self.channel.call(http::Request::from_parts(parts, body))
    }
}

/// A request body that fails with an h2 CANCEL when `cancel` resolves
/// (its sender dropped).
struct CancelledBody {
    body: tonic::body::Body,
    cancel: oneshot::Receiver<()>,
}

impl http_body::Body for CancelledBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if Pin::new(&mut self.cancel).poll(cx).is_ready() {
            let cancel = h2::Error::from(h2::Reason::CANCEL);
            return Poll::Ready(Some(Err(tonic::Status::from_error(Box::new(cancel)))));
        }
        Pin::new(&mut self.body).poll_frame(cx)
    }
}
