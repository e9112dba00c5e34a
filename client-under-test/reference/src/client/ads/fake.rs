//! A scripted ADS channel for unit tests, at the level of messages (as
//! gRPC C-core's `FakeXdsTransportFactory`): the test receives each ADS
//! call the client starts, reads the requests it sends, and plays the
//! server's side (connection ready, responses, the end of the stream) on
//! virtual time. No tonic, no bytes.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::call::{CallEvent, CallId, CallMessage};
use super::channel::{AdsChannel, AdsChannelFactory};
use super::wire::{Request, Response};
use crate::bootstrap::XdsServerConfig;
use crate::read_delay::ReadDelayHandle;
use crate::resource::ResourceType;

/// The client's side: hands every started call to the test.
pub(crate) struct FakeChannels {
    calls: mpsc::UnboundedSender<FakeCall>,
}

/// The test's side: the calls the client started, in order.
pub(crate) struct FakeCalls {
    calls: mpsc::UnboundedReceiver<FakeCall>,
}

pub(crate) fn fake_channels() -> (Arc<FakeChannels>, FakeCalls) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Arc::new(FakeChannels { calls: tx }),
        FakeCalls { calls: rx },
    )
}

impl AdsChannelFactory for FakeChannels {
    fn open(&self, _server: &XdsServerConfig) -> Box<dyn AdsChannel> {
        Box::new(FakeChannel {
            calls: self.calls.clone(),
        })
    }
}

struct FakeChannel {
    calls: mpsc::UnboundedSender<FakeCall>,
}

impl AdsChannel for FakeChannel {
    fn start_call(
        &self,
        call: CallId,
        requests: mpsc::UnboundedReceiver<Request>,
        events: mpsc::UnboundedSender<CallMessage>,
    ) -> JoinHandle<()> {
        let _ = self.calls.send(FakeCall {
            call,
            requests,
            events,
        });
        // The call lives in the test's hands; this task is only aborted.
        tokio::spawn(async {})
    }
}

impl FakeCalls {
    /// The next call the client starts.
    pub async fn next(&mut self) -> FakeCall {
        self.calls.recv().await.expect("the client is gone")
    }

    /// A call started by now, if any.
    pub fn try_next(&mut self) -> Option<FakeCall> {
        self.calls.try_recv().ok()
    }
}

/// One ADS call, as its server sees it.
pub(crate) struct FakeCall {
    call: CallId,
    requests: mpsc::UnboundedReceiver<Request>,
    events: mpsc::UnboundedSender<CallMessage>,
}

impl FakeCall {
    pub fn server_uri(&self) -> &str {
        &self.call.server.server_uri
    }

    fn send(&self, event: CallEvent) {
        let _ = self.events.send(CallMessage {
            call: self.call.clone(),
            event,
        });
    }

    /// The connection under the call is ready (the server's preface).
    pub fn connected(&self) {
        self.send(CallEvent::Connected);
    }

    /// Takes the next request off the wire (the transport reports it taken,
    /// as the real pump does); `None` once the client cancelled the call.
    pub async fn request(&mut self) -> Option<Request> {
        let request = self.requests.recv().await?;
        if let Some(t) = ResourceType::from_type_url(request.type_url()) {
            self.send(CallEvent::RequestTaken(t));
        }
        Some(request)
    }

    /// A request sent by now, if any.
    pub fn try_request(&mut self) -> Option<Request> {
        let request = self.requests.try_recv().ok()?;
        if let Some(t) = ResourceType::from_type_url(request.type_url()) {
            self.send(CallEvent::RequestTaken(t));
        }
        Some(request)
    }

    pub fn respond(&self, response: Response) {
        self.send(CallEvent::Response(response, ReadDelayHandle::no_wait()));
    }

    /// The server ends the stream with this status.
    pub fn finish(&self, status: tonic::Status) {
        self.send(CallEvent::Finished(status));
    }

    /// The client dropped the call (its request queue is closed).
    pub fn is_cancelled(&self) -> bool {
        self.requests.is_closed()
    }
}
