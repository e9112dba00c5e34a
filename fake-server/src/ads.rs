//! The tonic face of a fake server for ADS: the
//! `AggregatedDiscoveryService` implementation shared by every transport,
//! for both protocols. Streams open and are read as every service's are
//! (`incoming`).

use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_server::AggregatedDiscoveryService;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use tonic::{Request, Response, Status, Streaming};

use crate::delta::DeltaStream;
use crate::incoming::open_stream;
use crate::outbox::Taken;
use crate::shared::Inner;
use crate::sotw::SotwStream;
use crate::state::State;

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
    type StreamAggregatedResourcesStream = Taken<DiscoveryResponse>;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamAggregatedResourcesStream>, Status> {
        open_stream(
            &self.inner,
            request,
            SotwStream::new,
            State::on_sotw_request,
            |_, _| {},
        )
    }

    type DeltaAggregatedResourcesStream = Taken<DeltaDiscoveryResponse>;

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaAggregatedResourcesStream>, Status> {
        open_stream(
            &self.inner,
            request,
            DeltaStream::new,
            State::on_delta_request,
            |_, _| {},
        )
    }
}
