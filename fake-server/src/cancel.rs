//! How the server tells a client's CANCEL from its half-close.
//!
//! A client ends its side of a stream in one of two ways: END_STREAM (a
//! half-close: it sends nothing more and may still read), or
//! RST_STREAM(CANCEL) (it abandons the stream; gRPC clients do this when
//! a call is cancelled, and Kuma's zone ends its KDS streams this way).
//! hyper hands the CANCEL to tonic as a body error with code CANCELLED,
//! and tonic's decoder turns that error into the end of the request
//! stream (tonic 0.14.9, `src/codec/decode.rs`, `poll_frame`), so the
//! service reading the stream sees both as `Ok(None)`. A layer below the
//! decoder sees the error first: it notes it in the request's
//! extensions, where the reading task finds it at the end.
//!
//! (hyper itself reads a reset with NO_ERROR as a clean end, RFC 9113
//! section 8.1; such a reset stays a half-close here.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::BodyExt;
use tonic::body::Body;
use tonic::{Code, Status};

/// Set when the request body of a stream ended with a CANCEL reset.
#[derive(Clone, Debug, Default)]
pub(crate) struct ClientCancel(Arc<AtomicBool>);

impl ClientCancel {
    /// Whether the client cancelled the stream.
    pub(crate) fn cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn note(&self, status: &Status) {
        if status.code() == Code::Cancelled {
            self.0.store(true, Ordering::Release);
        }
    }
}

/// Gives `request` a [`ClientCancel`] that its body sets when it ends
/// with a CANCEL (for `tower::ServiceBuilder::map_request`, below
/// tonic's router).
pub(crate) fn note_cancel(mut request: http::Request<Body>) -> http::Request<Body> {
    let cancel = ClientCancel::default();
    request.extensions_mut().insert(cancel.clone());
    request.map(|body| {
        Body::new(body.map_err(move |status| {
            cancel.note(&status);
            status
        }))
    })
}
