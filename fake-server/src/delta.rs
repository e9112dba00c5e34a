//! Delta (incremental) ADS: `DeltaAggregatedResources`.
//!
//! Not served yet: every delta stream is refused with `UNIMPLEMENTED`, which
//! is also what a SotW-only control plane answers, so clients fall back or
//! report it. Delta support (its own per-stream state, recorded requests and
//! responses, auto and scripted modes) lands here.

use std::pin::Pin;
use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

use crate::shared::Inner;

/// The response stream type of a delta ADS stream.
pub(crate) type DeltaResponseStream =
    Pin<Box<dyn Stream<Item = Result<DeltaDiscoveryResponse, Status>> + Send + 'static>>;

pub(crate) async fn delta_aggregated_resources(
    _inner: &Arc<Inner>,
    _request: Request<Streaming<DeltaDiscoveryRequest>>,
) -> Result<Response<DeltaResponseStream>, Status> {
    Err(Status::unimplemented(
        "delta xDS is not implemented by this fake server",
    ))
}
