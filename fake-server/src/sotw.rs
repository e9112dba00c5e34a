//! State-of-the-world ADS streams: what the server knows about each open
//! stream, and everything that happens on one (requests, auto-mode and
//! scripted responses, closing).
//!
//! All of it runs under the server's state lock and only queues responses on
//! an unbounded channel, so a store change or a scripted send reaches every
//! stream in stream-id order within one synchronous call.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::protobuf::Any;
use tokio::sync::{mpsc, oneshot};
use tonic::{Code, Status};

use crate::auto::{self, Subscription};
use xds_vocabulary::RequestKind;

use crate::event::{RecordedRequest, RecordedResponse, ServerEvent};
use crate::resource::ServedResource;
use crate::server::{ScriptedResponse, ServingMode};
use crate::state::State;

/// Where a stream's responses go; an `Err` ends the stream with that status.
pub(crate) type ResponseSender = mpsc::UnboundedSender<Result<DiscoveryResponse, Status>>;

/// One open SotW stream.
pub(crate) struct SotwStream {
    responses: ResponseSender,
    /// Never sent on: dropping it (when the stream leaves the server's map)
    /// tells the stream's request reader the server is done with it.
    _stop_reader: oneshot::Sender<()>,
    types: BTreeMap<String, StreamType>,
    /// Responses sent on this stream, scripted ones included.
    responses_sent: u32,
}

/// One stream's view of one resource type.
#[derive(Default)]
struct StreamType {
    /// The client has sent a request for this type (auto mode only pushes
    /// store changes to types the stream asked for).
    requested: bool,
    subscription: Subscription,
    /// What auto mode last sent (or counts as sent), by name.
    sent: BTreeMap<String, Any>,
    /// Every nonce sent for this type on this stream, scripted ones included.
    nonces: BTreeSet<String>,
}

impl SotwStream {
    pub fn new(responses: ResponseSender, stop_reader: oneshot::Sender<()>) -> Self {
        Self {
            responses,
            _stop_reader: stop_reader,
            types: BTreeMap::new(),
            responses_sent: 0,
        }
    }
}

impl State {
    /// Registers a new stream; `None` once the server is shut down.
    pub fn open_stream(&mut self, connection: Option<u64>, stream: SotwStream) -> Option<u64> {
        if self.shut_down {
            return None;
        }
        let id = self.next_stream();
        self.streams.insert(id, stream);
        self.record(ServerEvent::StreamOpened {
            stream: id,
            connection,
        });
        Some(id)
    }

    /// Records a decoded request, updates the stream's subscription and, in
    /// auto mode, answers it if the rules say so.
    pub fn on_request(&mut self, stream_id: u64, request: DiscoveryRequest) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        let type_state = stream.types.entry(request.type_url.clone()).or_default();
        let kind = RequestKind::classify(
            &request.response_nonce,
            request.error_detail.is_some(),
            |nonce| type_state.nonces.contains(nonce),
        );
        let previous = type_state.requested.then_some(&type_state.subscription);
        type_state.subscription =
            Subscription::from_request(&request.type_url, &request.resource_names, previous);
        type_state.requested = true;
        self.record(ServerEvent::RequestReceived {
            stream: stream_id,
            request: RecordedRequest::new(&request, kind),
        });
        if self.limit_reached(stream_id) {
            return;
        }
        if self.mode == ServingMode::Auto {
            self.auto_respond(stream_id, &request.type_url);
        }
    }

    /// Closes the stream if `Fault::CloseStreamsAfter` says its time has
    /// come; says whether it did.
    fn limit_reached(&mut self, stream_id: u64) -> bool {
        let Some(limit) = self.stream_limit.clone() else {
            return false;
        };
        let sent = match self.streams.get(&stream_id) {
            Some(stream) => stream.responses_sent,
            None => return false,
        };
        if sent < limit.responses {
            return false;
        }
        self.close_stream(stream_id, limit.code, limit.message, false);
        true
    }

    pub fn hang(&mut self, type_url: Option<String>) {
        match type_url {
            Some(type_url) => {
                self.hung.types.insert(type_url);
            }
            None => self.hung.all = true,
        }
    }

    /// Ends every hang; auto mode sends what the streams are owed.
    pub fn resume(&mut self) {
        let was = std::mem::take(&mut self.hung);
        if self.mode != ServingMode::Auto {
            return;
        }
        let owed: Vec<(u64, String)> = self
            .streams
            .iter()
            .flat_map(|(id, stream)| {
                stream
                    .types
                    .iter()
                    .filter(|(type_url, t)| t.requested && was.covers(type_url))
                    .map(move |(type_url, _)| (*id, type_url.clone()))
            })
            .collect();
        for (id, type_url) in owed {
            self.auto_respond(id, &type_url);
        }
    }

    /// Starts `Fault::CloseStreamsAfter`; streams already past the limit
    /// are closed now.
    pub fn close_streams_after(&mut self, responses: u32, code: Code, message: String) {
        self.stream_limit = Some(crate::state::StreamLimit {
            responses,
            code,
            message,
        });
        // Only streams that have been asked something: a stream that sent
        // no request yet is closed at its first one.
        let ids: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| s.types.values().any(|t| t.requested))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.limit_reached(id);
        }
    }

    /// A store change of `type_url`: in auto mode, every stream gets what
    /// the rules say, in stream-id order.
    pub fn on_store_change(&mut self, type_url: &str) {
        if self.mode != ServingMode::Auto {
            return;
        }
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            self.auto_respond(id, type_url);
        }
    }

    fn auto_respond(&mut self, stream_id: u64, type_url: &str) {
        // Hung: nothing is decided, so `resume` finds everything owed.
        if self.hung.covers(type_url) {
            return;
        }
        let Some(type_state) = self
            .streams
            .get_mut(&stream_id)
            .and_then(|stream| stream.types.get_mut(type_url))
            .filter(|type_state| type_state.requested)
        else {
            return;
        };
        let decision = auto::decide(
            type_url,
            &type_state.subscription,
            self.store.resources(type_url),
            &type_state.sent,
        );
        type_state.sent = decision.sent;
        if let Some(resources) = decision.respond {
            let version = self.store.version(type_url);
            self.send(stream_id, type_url, version, None, &resources);
        }
    }

    /// Sends a scripted response to every open stream; returns how many got
    /// it. Auto mode's bookkeeping is left alone: a scripted send is a
    /// one-off, not a new baseline.
    pub fn send_scripted(&mut self, response: &ScriptedResponse) -> usize {
        let version = response
            .version_info
            .clone()
            .unwrap_or_else(|| self.store.version(&response.type_url));
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        ids.into_iter()
            .filter(|&id| {
                self.send(
                    id,
                    &response.type_url,
                    version.clone(),
                    response.nonce.clone(),
                    &response.resources,
                )
            })
            .count()
    }

    /// Queues one response on one stream and records it; false if the
    /// stream is gone. A nonce is taken only for a response that is sent.
    fn send(
        &mut self,
        stream_id: u64,
        type_url: &str,
        version_info: String,
        nonce: Option<String>,
        resources: &[ServedResource],
    ) -> bool {
        let open = self
            .streams
            .get(&stream_id)
            .is_some_and(|stream| !stream.responses.is_closed());
        if !open {
            return false;
        }
        let nonce = nonce.unwrap_or_else(|| self.next_nonce());
        let response = DiscoveryResponse {
            version_info: version_info.clone(),
            resources: resources.iter().map(|r| r.entry.clone()).collect(),
            type_url: type_url.to_string(),
            nonce: nonce.clone(),
            ..Default::default()
        };
        let drop_it = match &mut self.drops {
            Some((count, of_type)) if of_type.as_deref().is_none_or(|t| t == type_url) => {
                *count -= 1;
                if *count == 0 {
                    self.drops = None;
                }
                true
            }
            _ => false,
        };
        let delay = self.delay;
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return false;
        };
        // A delayed response waits in `held`; a dropped one goes nowhere.
        let held = if drop_it {
            None
        } else if !delay.is_zero() {
            Some(response)
        } else {
            if stream.responses.send(Ok(response)).is_err() {
                return false;
            }
            None
        };
        stream
            .types
            .entry(type_url.to_string())
            .or_default()
            .nonces
            .insert(nonce.clone());
        stream.responses_sent += 1;
        let recorded = RecordedResponse {
            type_url: type_url.to_string(),
            version_info,
            nonce,
            resource_names: resources.iter().map(|r| r.name.clone()).collect(),
        };
        if let Some(response) = held {
            // Recorded when it really goes out (`send_delayed`).
            self.delayed_seq += 1;
            let due = tokio::time::Instant::now() + delay;
            self.delayed.insert(
                (due, self.delayed_seq),
                crate::state::Delayed {
                    stream: stream_id,
                    response,
                    recorded,
                },
            );
            self.delay_changed = true;
            self.limit_reached(stream_id);
            return true;
        }
        let response = recorded;
        self.record(if drop_it {
            ServerEvent::ResponseDropped {
                stream: stream_id,
                response,
            }
        } else {
            ServerEvent::ResponseSent {
                stream: stream_id,
                response,
            }
        });
        self.limit_reached(stream_id);
        true
    }

    /// Ends a stream once. The server ends it with `code`/`message` in the
    /// trailers; a client-ended stream just goes away (after a half-close the
    /// response ends with OK).
    pub fn close_stream(&mut self, stream_id: u64, code: Code, message: String, by_client: bool) {
        let Some(stream) = self.streams.remove(&stream_id) else {
            return;
        };
        if !by_client {
            // If the client is already gone there is nobody to tell.
            let _ = stream
                .responses
                .send(Err(Status::new(code, message.clone())));
        }
        self.record(ServerEvent::StreamClosed {
            stream: stream_id,
            code,
            message,
            by_client,
        });
        // Dropping `stream` here ends its response stream and stops its reader.
    }

    /// Sends the delayed responses that are due; returns when the next one
    /// is due. A response whose stream has gone is not sent.
    pub fn send_delayed(&mut self) -> Option<tokio::time::Instant> {
        let now = tokio::time::Instant::now();
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                return Some(entry.key().0);
            }
            let delayed = entry.remove();
            let sent = self
                .streams
                .get(&delayed.stream)
                .is_some_and(|s| s.responses.send(Ok(delayed.response)).is_ok());
            if sent {
                self.record(ServerEvent::ResponseSent {
                    stream: delayed.stream,
                    response: delayed.recorded,
                });
            }
        }
        None
    }

    /// Drops every open stream without trailers, as a process that died
    /// would (the connection reset that follows is what the client sees).
    /// Recorded as closed by the server with UNAVAILABLE and `why`.
    pub fn drop_all_streams(&mut self, why: &str) {
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            // Removing the stream ends its response stream without a status.
            self.streams.remove(&id);
            self.record(ServerEvent::StreamClosed {
                stream: id,
                code: Code::Unavailable,
                message: why.to_string(),
                by_client: false,
            });
        }
    }

    /// Closes every open stream with the same status, in stream-id order.
    pub fn close_all_streams(&mut self, code: Code, message: &str) {
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            self.close_stream(id, code, message.to_string(), false);
        }
    }

    pub fn open_stream_ids(&self) -> Vec<u64> {
        self.streams.keys().copied().collect()
    }
}
