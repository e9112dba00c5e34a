//! One ADS stream attempt: a pump between tonic and the client's worker.
//!
//! It owns no protocol state. It forwards responses and the final status,
//! and tells the worker when a request has been taken by the transport and
//! when the connection under it is ready — together these are C-core's
//! "send_message completed", which starts does-not-exist timers (A57).

use std::pin::Pin;
use std::task::{Context, Poll};

use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tonic::transport::Channel;

use super::wire::{Request, Response};
use crate::bootstrap::XdsServerConfig;
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
    Response(Response),
    /// The stream ended, with this status (OK if the server ended it cleanly).
    Finished(tonic::Status),
}

pub(crate) struct CallMessage {
    pub call: CallId,
    pub event: CallEvent,
}

/// Requests queued for the wire; reports each one the transport takes.
struct Outbound {
    queue: mpsc::UnboundedReceiver<Request>,
    call: CallId,
    events: mpsc::UnboundedSender<CallMessage>,
}

impl Stream for Outbound {
    type Item = DiscoveryRequest;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<DiscoveryRequest>> {
        let polled = self.queue.poll_recv(cx);
        if let Poll::Ready(Some(request)) = &polled
            && let Some(t) = ResourceType::from_type_url(request.type_url())
        {
            let _ = self.events.send(CallMessage {
                call: self.call.clone(),
                event: CallEvent::RequestTaken(t),
            });
        }
        polled.map(|request| {
            request.map(|request| match request {
                Request::Sotw(request) => request,
            })
        })
    }
}

/// Runs one ADS call until it ends or the task is dropped (which cancels it).
pub(crate) async fn run(
    channel: Channel,
    mut connection: watch::Receiver<ConnectionState>,
    call: CallId,
    queue: mpsc::UnboundedReceiver<Request>,
    events: mpsc::UnboundedSender<CallMessage>,
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

    // Responses of 10k resources are larger than tonic's 4 MiB default.
    let mut client =
        AggregatedDiscoveryServiceClient::new(channel).max_decoding_message_size(usize::MAX);
    let outbound = Outbound {
        queue,
        call: call.clone(),
        events: events.clone(),
    };
    let started = client.stream_aggregated_resources(outbound);
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
                Err(status) => { send(CallEvent::Finished(transport_status(status))); return; }
            },
        }
    };
    loop {
        tokio::select! {
            biased;
            changed = connection.changed(), if !connected => {
                if changed.is_err() { return; }
                check_connected(&connection.borrow_and_update(), &mut connected);
            }
            message = responses.message() => match message {
                Ok(Some(response)) => send(CallEvent::Response(Response::Sotw(response))),
                Ok(None) => { send(CallEvent::Finished(tonic::Status::new(tonic::Code::Ok, "stream closed by server"))); return; }
                Err(status) => { send(CallEvent::Finished(transport_status(status))); return; }
            },
        }
    }
}

/// gRPC reports a lost transport as UNAVAILABLE; tonic reports the h2 or
/// hyper error behind it as UNKNOWN. Only errors with a transport source
/// are mapped: an UNKNOWN a server sent in trailers stays UNKNOWN.
fn transport_status(status: tonic::Status) -> tonic::Status {
    use std::error::Error as _;
    if status.code() == tonic::Code::Unknown && status.source().is_some() {
        tonic::Status::unavailable(status.message().to_string())
    } else {
        status
    }
}
