//! One ADS stream attempt: a pump between tonic and the client's worker.
//!
//! It owns no protocol state. It forwards responses and the final status,
//! and tells the worker when a request has been taken by the transport and
//! when the connection under it is ready — together these are C-core's
//! "send_message completed", which starts does-not-exist timers (A57).
//! The transport takes a request only once its stream is open: hyper
//! pipes a body only into a stream h2 has opened, one the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS admits. So a stream the server does
//! not admit yet (`hold_streams`) starts no timer: A57's preferred
//! "indication from the stream that it is being sent", not the channel's
//! READY.

use std::pin::Pin;
use std::task::{Context, Poll};

use std::future::Future;

use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tonic::Streaming;
use tonic::transport::Channel;
use xds_vocabulary::AdsProtocol;

use super::wire::{Request, Response};
use crate::bootstrap::XdsServerConfig;
use crate::read_delay::{self, ReadDelayHandle, ReadGate};
use crate::resource::ResourceType;
use crate::transport::ConnectionState;

/// Identifies a stream attempt: the server and a client-wide counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallId {
    pub server: XdsServerConfig,
    pub id: u64,
}

pub(crate) enum CallEvent {
    /// The transport took the request for this type off the queue.
    RequestTaken(ResourceType),
    /// The connection carrying the stream is ready (server preface seen).
    Connected,
    /// A response, and the handle that holds the stream's next read.
    Response(Response, ReadDelayHandle),
    /// The stream ended, with this status (OK if the server ended it cleanly).
    Finished(tonic::Status),
}

pub(crate) struct CallMessage {
    pub call: CallId,
    pub event: CallEvent,
}

/// Requests queued for the wire, as the protocol's message type; reports
/// each one the transport takes.
struct Outbound<T> {
    queue: mpsc::UnboundedReceiver<Request>,
    call: CallId,
    events: mpsc::UnboundedSender<CallMessage>,
    /// The request as this protocol's message (`None`: another protocol's,
    /// which the worker never queues here).
    convert: fn(Request) -> Option<T>,
}

impl<T> Stream for Outbound<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        loop {
            let Some(request) = std::task::ready!(self.queue.poll_recv(cx)) else {
                return Poll::Ready(None);
            };
            if let Some(t) = ResourceType::from_type_url(request.type_url()) {
                let _ = self.events.send(CallMessage {
                    call: self.call.clone(),
                    event: CallEvent::RequestTaken(t),
                });
            }
            if let Some(message) = (self.convert)(request) {
                return Poll::Ready(Some(message));
            }
        }
    }
}

/// Runs one ADS call, in its server's protocol, until it ends or the task
/// is dropped (which cancels it).
pub(crate) async fn run(
    channel: Channel,
    connection: watch::Receiver<ConnectionState>,
    call: CallId,
    queue: mpsc::UnboundedReceiver<Request>,
    events: mpsc::UnboundedSender<CallMessage>,
) {
    // Responses of 10k resources are larger than tonic's 4 MiB default.
    let mut client =
        AggregatedDiscoveryServiceClient::new(channel).max_decoding_message_size(usize::MAX);
    match call.server.protocol {
        AdsProtocol::Sotw => {
            let outbound = Outbound {
                queue,
                call: call.clone(),
                events: events.clone(),
                convert: |r| match r {
                    Request::Sotw(r) => Some(r),
                    Request::Delta(_) => None,
                },
            };
            let started = client.stream_aggregated_resources(outbound);
            pump(connection, call, events, started, Response::Sotw).await;
        }
        AdsProtocol::Delta => {
            let outbound = Outbound {
                queue,
                call: call.clone(),
                events: events.clone(),
                convert: |r| match r {
                    Request::Delta(r) => Some(r),
                    Request::Sotw(_) => None,
                },
            };
            let started = client.delta_aggregated_resources(outbound);
            pump(connection, call, events, started, Response::Delta).await;
        }
    }
}

/// Reports the call's connection, responses and end, whatever its protocol.
async fn pump<M>(
    mut connection: watch::Receiver<ConnectionState>,
    call: CallId,
    events: mpsc::UnboundedSender<CallMessage>,
    started: impl Future<Output = Result<tonic::Response<Streaming<M>>, tonic::Status>>,
    wrap: fn(M) -> Response,
) {
    let send = |event| {
        let _ = events.send(CallMessage {
            call: call.clone(),
            event,
        });
    };
    let mut connected = false;
    let check_connected = |state: &ConnectionState, connected: &mut bool| {
        if !*connected && *state == ConnectionState::Ready {
            *connected = true;
            send(CallEvent::Connected);
        }
    };
    check_connected(&connection.borrow_and_update(), &mut connected);
    tokio::pin!(started);
    let mut responses = loop {
        tokio::select! {
            biased;
            changed = connection.changed(), if !connected => {
                if changed.is_err() { return; }
                check_connected(&connection.borrow_and_update(), &mut connected);
            }
            result = &mut started => match result {
                Ok(response) => break response.into_inner(),
                Err(status) => { send(CallEvent::Finished(transport_status(status, &connection))); return; }
            },
        }
    };
    // Read flow control: the next response is read only once every
    // handle of the last one is dropped.
    let gate = ReadGate::new();
    let mut permit = None;
    loop {
        tokio::select! {
            biased;
            changed = connection.changed(), if !connected => {
                if changed.is_err() { return; }
                check_connected(&connection.borrow_and_update(), &mut connected);
            }
            ready = gate.ready(), if permit.is_none() => permit = Some(ready),
            message = responses.message(), if permit.is_some() => match message {
                Ok(Some(response)) => {
                    let read = permit.take().map(read_delay::handle).unwrap_or_default();
                    send(CallEvent::Response(wrap(response), read));
                }
                Ok(None) => { send(CallEvent::Finished(tonic::Status::new(tonic::Code::Ok, "stream closed by server"))); return; }
                Err(status) => { send(CallEvent::Finished(transport_status(status, &connection))); return; }
            },
        }
    }
}

/// gRPC reports a lost transport as UNAVAILABLE; tonic reports the h2 or
/// hyper error behind it as UNKNOWN, or as CANCELLED when the connection
/// went before the call had its response headers (hyper cancels the
/// calls it was carrying). Only errors with a transport source are
/// mapped: an UNKNOWN or CANCELLED a server sent in trailers stays as it
/// is (and this client never cancels a call through hyper: it drops the
/// call's task). When the connection broke with a reason (a TLS alert),
/// the reason is added: hyper's own message does not carry it.
fn transport_status(
    status: tonic::Status,
    connection: &watch::Receiver<ConnectionState>,
) -> tonic::Status {
    use std::error::Error as _;
    let transport = status.source().is_some()
        && matches!(status.code(), tonic::Code::Unknown | tonic::Code::Cancelled);
    if !transport {
        return status;
    }
    match &*connection.borrow() {
        ConnectionState::Broken(reason) => {
            tonic::Status::unavailable(format!("{}: {reason}", status.message()))
        }
        _ => tonic::Status::unavailable(status.message().to_string()),
    }
}
