//! The tonic face of a fake server for Kuma's KDS: the
//! `kuma.mesh.v1alpha1.KDSSyncService` service, written by hand (its
//! messages are Envoy's delta messages, which envoy-types has; only the
//! routing is this service's own). Streams open and are read as every
//! service's are (`incoming`), with the zone's headers taken first.
//!
//! gzip is accepted (Kuma's zone compresses every message) and sent when
//! the zone accepts it. Of Kuma's other KDS service (`GlobalKDSService`)
//! only `HealthCheck` is served ([`GlobalKdsService`]): the rest is
//! UNIMPLEMENTED, which a zone tolerates.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use tonic::codec::CompressionEncoding;
use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
use tonic::server::{Grpc, NamedService, StreamingService};
use tonic::{Request, Response, Status, Streaming};
use xds_vocabulary::kds::{
    GLOBAL_KDS_SERVICE, HEALTH_CHECK_PATH, KdsRpc, SYNC_SERVICE, ZoneHealthCheckRequest,
    ZoneHealthCheckResponse,
};

use crate::event::ServerEvent;
use crate::handshake::KdsHandshake;
use crate::incoming::open_stream;
use crate::kds::{GlobalToZone, ZoneToGlobal};
use crate::outbox::Taken;
use crate::shared::Inner;
use crate::state::State;

/// Kuma's message size limit (`KUMA_MULTIZONE_*_KDS_MAX_MSG_SIZE`'s
/// default, 10 MiB): a zone's responses up to it are taken, as its global
/// would.
pub const MAX_KDS_MESSAGE: usize = 10 << 20;

/// The `KDSSyncService` of one fake server.
#[derive(Clone)]
pub(crate) struct KdsSyncService {
    inner: Arc<Inner>,
}

impl KdsSyncService {
    pub fn new(inner: Arc<Inner>) -> Self {
        Self { inner }
    }
}

impl NamedService for KdsSyncService {
    const NAME: &'static str = SYNC_SERVICE;
}

/// What opening a stream answers: the stream of what the server sends.
type Opened<Out> = Result<Response<Taken<Out>>, Status>;

/// One RPC's stream opening: what its messages are and how a stream of it
/// starts.
struct Rpc<In, Out> {
    inner: Arc<Inner>,
    open: fn(&Arc<Inner>, Request<Streaming<In>>) -> Opened<Out>,
}

impl<In: Send + 'static, Out: Send + 'static> StreamingService<In> for Rpc<In, Out> {
    type Response = Out;
    type ResponseStream = Taken<Out>;
    type Future = std::future::Ready<Opened<Out>>;

    fn call(&mut self, request: Request<Streaming<In>>) -> Self::Future {
        std::future::ready((self.open)(&self.inner, request))
    }
}

fn global_to_zone(
    inner: &Arc<Inner>,
    request: Request<Streaming<DeltaDiscoveryRequest>>,
) -> Opened<DeltaDiscoveryResponse> {
    let handshake = KdsHandshake::from_metadata(request.metadata());
    open_stream(
        inner,
        request,
        |sender| GlobalToZone::new(sender, handshake),
        State::on_kds_zone_request,
        |_, _| {},
    )
}

fn zone_to_global(
    inner: &Arc<Inner>,
    request: Request<Streaming<DeltaDiscoveryResponse>>,
) -> Opened<DeltaDiscoveryRequest> {
    let handshake = KdsHandshake::from_metadata(request.metadata());
    open_stream(
        inner,
        request,
        |sender| ZoneToGlobal::new(sender, handshake),
        State::on_kds_zone_response,
        State::on_kds_zone_to_global_open,
    )
}

/// Serves one streaming RPC with prost's codec, gzip both ways.
async fn serve<In, Out, B>(
    rpc: Rpc<In, Out>,
    request: http::Request<B>,
) -> http::Response<tonic::body::Body>
where
    In: prost::Message + Default + Send + 'static,
    Out: prost::Message + Send + 'static,
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    let codec = tonic_prost::ProstCodec::<Out, In>::default();
    let mut grpc = Grpc::new(codec)
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(MAX_KDS_MESSAGE);
    grpc.streaming(rpc, request).await
}

impl<B> Service<http::Request<B>> for KdsSyncService
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        match KdsRpc::from_path(request.uri().path()) {
            Some(KdsRpc::GlobalToZoneSync) => {
                let rpc = Rpc {
                    inner,
                    open: global_to_zone,
                };
                Box::pin(async move { Ok(serve(rpc, request).await) })
            }
            Some(KdsRpc::ZoneToGlobalSync) => {
                let rpc = Rpc {
                    inner,
                    open: zone_to_global,
                };
                Box::pin(async move { Ok(serve(rpc, request).await) })
            }
            // A method of this service that Kuma does not have.
            None => Box::pin(async move {
                Ok(Status::unimplemented("not a method of KDSSyncService").into_http())
            }),
        }
    }
}

/// Kuma's `GlobalKDSService` of one fake server: `HealthCheck` only, the
/// pings of a zone that advertises `zone-ping-health`, each recorded with
/// the zone's headers and answered as Kuma's global answers when no
/// `zoneHealthCheck.pollInterval` is configured (its default): an interval
/// of zero, so the zone keeps its own (`pkg/kds/service/server.go:90-116`
/// at v2.14.3). Its streaming methods are UNIMPLEMENTED, which a zone
/// tolerates.
#[derive(Clone)]
pub(crate) struct GlobalKdsService {
    inner: Arc<Inner>,
}

impl GlobalKdsService {
    pub fn new(inner: Arc<Inner>) -> Self {
        Self { inner }
    }
}

impl NamedService for GlobalKdsService {
    const NAME: &'static str = GLOBAL_KDS_SERVICE;
}

/// One health ping: recorded, answered.
struct HealthCheck {
    inner: Arc<Inner>,
}

impl tonic::server::UnaryService<ZoneHealthCheckRequest> for HealthCheck {
    type Response = ZoneHealthCheckResponse;
    type Future = std::future::Ready<Result<Response<ZoneHealthCheckResponse>, Status>>;

    fn call(&mut self, request: Request<ZoneHealthCheckRequest>) -> Self::Future {
        let handshake = KdsHandshake::from_metadata(request.metadata());
        self.inner
            .update(|state| state.record(ServerEvent::KdsHealthCheck { handshake }));
        std::future::ready(Ok(Response::new(ZoneHealthCheckResponse {
            interval: Some(Default::default()),
        })))
    }
}

impl<B> Service<http::Request<B>> for GlobalKdsService
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if request.uri().path() != HEALTH_CHECK_PATH {
            return Box::pin(async move {
                Ok(Status::unimplemented("the fake global serves only HealthCheck").into_http())
            });
        }
        let inner = self.inner.clone();
        Box::pin(async move {
            let codec =
                tonic_prost::ProstCodec::<ZoneHealthCheckResponse, ZoneHealthCheckRequest>::default(
                );
            let mut grpc = Grpc::new(codec)
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip);
            Ok(grpc.unary(HealthCheck { inner }, request).await)
        })
    }
}
