//! How every service's streams open and are read, whatever the RPC: a
//! stream is registered with the protocol state its RPC speaks, and a task
//! reads what the peer sends (requests on ADS; on KDS's
//! `ZoneToGlobalSync`, the zone's responses) into the server state.
//! What the server sends flows back through the stream's outbox, which
//! the state writes to without waiting on the transport (bounded in bytes:
//! see `outbox`).

use std::sync::Arc;

use tokio::sync::oneshot;
use tonic::{Code, Request, Response, Status, Streaming};

use crate::cancel::ClientCancel;
use crate::connection::ConnectionInfo;
use crate::event::{CLIENT_CANCELLED, CLIENT_HALF_CLOSED};
use crate::outbox::{Taken, outbox};
use crate::shared::Inner;
use crate::state::State;
use crate::stream::{Protocol, Sender, Stream};

/// Registers a stream of the protocol `protocol` makes from its sender,
/// runs `on_open` on it (in the same state change, so nothing comes
/// between its opening and what the server does first), and starts
/// reading what the peer sends into `on_message`.
pub(crate) fn open_stream<In, Out, P: Protocol>(
    inner: &Arc<Inner>,
    request: Request<Streaming<In>>,
    protocol: impl FnOnce(Sender<Out>) -> P,
    on_message: fn(&mut State, u64, In),
    on_open: fn(&mut State, u64),
) -> Result<Response<Taken<Out>>, Status>
where
    In: Send + 'static,
{
    let connection = request
        .extensions()
        .get::<ConnectionInfo>()
        .map(|info| info.connection);
    // Absent only where a request did not come through `serve` (the
    // fuzzing entry): a cancel is then never noted.
    let cancel = request
        .extensions()
        .get::<ClientCancel>()
        .cloned()
        .unwrap_or_default();
    let (sender, taken) = outbox();
    let (stop_reader, stopped) = oneshot::channel();
    let stream = Stream::new(protocol(sender), stop_reader);
    let Some(stream_id) = inner.update(|state| {
        let id = state.open_stream(connection, stream)?;
        on_open(state, id);
        Some(id)
    }) else {
        return Err(Status::unavailable("server is shut down"));
    };
    tokio::spawn(read_messages(
        inner.clone(),
        stream_id,
        request.into_inner(),
        cancel,
        stopped,
        on_message,
    ));
    Ok(Response::new(taken))
}

/// Whether a request stream failed because a message was over the size
/// limit (tonic's decoder: OUT_OF_RANGE, "decoded message length too
/// large").
fn is_oversize(status: &Status) -> bool {
    status.code() == Code::OutOfRange && status.message().contains("message length too large")
}

/// Reads what one stream's peer sends until it ends the stream or the
/// server closes it (`stopped` resolves when the server drops the stream).
async fn read_messages<In>(
    inner: Arc<Inner>,
    stream_id: u64,
    mut requests: Streaming<In>,
    cancel: ClientCancel,
    mut stopped: oneshot::Receiver<()>,
    on_request: fn(&mut State, u64, In),
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
                    let (code, message) = if cancel.cancelled() {
                        (Code::Cancelled, CLIENT_CANCELLED)
                    } else {
                        (Code::Ok, CLIENT_HALF_CLOSED)
                    };
                    inner.update(|state| state.close_stream(stream_id, code, message.into(), true));
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
