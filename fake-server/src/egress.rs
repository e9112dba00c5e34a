//! Everything that leaves the server on a stream, whatever its protocol:
//! responses (each gets its nonce here, and every fault in force that
//! shapes responses applies here: `drop_responses`, `delay_responses`,
//! `close_streams_after`; their state is in `crate::in_force`) and the end
//! of streams (trailers, or none at all for a restart). Each is recorded
//! as it happens.
//!
//! All of it runs under the server's state lock and only queues (on each
//! stream's outbox, bounded in bytes: see `outbox`), so a store change or
//! a scripted send reaches every stream in stream-id order within one
//! synchronous call.

use tokio::time::Instant;
use tonic::{Code, Status};

use crate::event::ServerEvent;
use crate::in_force::Delayed;
use crate::outbox::{MAX_BACKLOG, Refused};
use crate::state::State;
use crate::stream::Outgoing;

impl State {
    /// Sends `response` on one stream and records it; false if the stream
    /// is gone. `nonce`: as given, or the server's next one (a nonce is
    /// taken only for a response that is sent). `names` are the served
    /// entries' names, for the recording.
    pub fn send(
        &mut self,
        stream_id: u64,
        mut response: Outgoing,
        nonce: Option<String>,
        names: Vec<String>,
    ) -> bool {
        if !self.streams.get(&stream_id).is_some_and(|s| s.is_open()) {
            return false;
        }
        let nonce = nonce.unwrap_or_else(|| self.next_nonce());
        response.set_nonce(nonce.clone());
        let type_url = response.type_url().to_string();
        let recorded = response.recorded(names);
        let drop_it = self.faults.lose(&type_url);
        let delay = self.faults.delay.by;
        // A delayed response waits in `held`; a dropped one goes nowhere.
        let held = if drop_it {
            None
        } else if !delay.is_zero() {
            Some(response)
        } else {
            if !self.transmit(stream_id, response) {
                return false;
            }
            None
        };
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return false;
        };
        stream
            .types
            .entry(type_url)
            .or_default()
            .nonces
            .insert(nonce);
        stream.responses_sent += 1;
        if let Some(response) = held {
            self.faults.delay.hold(Delayed {
                stream: stream_id,
                response,
                recorded,
            });
        } else {
            self.record(if drop_it {
                ServerEvent::ResponseDropped {
                    stream: stream_id,
                    response: recorded,
                }
            } else {
                ServerEvent::ResponseSent {
                    stream: stream_id,
                    response: recorded,
                }
            });
        }
        self.limit_reached(stream_id);
        true
    }

    /// Sends the responses held back by `delay_responses` that are due;
    /// returns when the next one is due. A response whose stream has gone
    /// is not sent.
    pub fn send_delayed(&mut self) -> Option<Instant> {
        let now = Instant::now();
        while let Some(delayed) = self.faults.delay.take_due(now) {
            if self.transmit(delayed.stream, delayed.response) {
                self.record(ServerEvent::ResponseSent {
                    stream: delayed.stream,
                    response: delayed.recorded,
                });
            }
        }
        self.faults.delay.next_due()
    }

    /// Closes the stream if `close_streams_after` says its time has come;
    /// says whether it did.
    pub fn limit_reached(&mut self, stream_id: u64) -> bool {
        let Some(limit) = self.faults.stream_limit.clone() else {
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

    /// Hands `response` to a stream's transport; false if it did not go.
    /// A client that has left more than [`MAX_BACKLOG`] bytes of responses
    /// unread loses the stream, as a real control plane must end it: what
    /// was queued is dropped at once and the stream ends with
    /// RESOURCE_EXHAUSTED, recorded as closed by the server.
    pub(crate) fn transmit(&mut self, stream_id: u64, response: Outgoing) -> bool {
        let Some(stream) = self.streams.get(&stream_id) else {
            return false;
        };
        match stream.transmit(response) {
            Ok(()) => true,
            Err(refused) => {
                self.refused(stream_id, refused);
                false
            }
        }
    }

    /// What follows a stream's outbox refusing a message: nothing if the
    /// stream is gone; if its peer has left more than [`MAX_BACKLOG`]
    /// bytes unread, the stream ends (see [`State::transmit`]).
    pub(crate) fn refused(&mut self, stream_id: u64, refused: Refused) {
        let Refused::Backlog(unread) = refused else {
            return;
        };
        let message = format!(
            "the client has not read {unread} bytes of responses, and the server queues \
             at most {} MiB per stream",
            MAX_BACKLOG >> 20
        );
        let kds = self.streams.remove(&stream_id).and_then(|stream| {
            stream.abort(Status::resource_exhausted(message.clone()));
            stream.kds_rpc()
        });
        self.record(ServerEvent::StreamClosed {
            stream: stream_id,
            code: Code::ResourceExhausted,
            message,
            by_client: false,
            kds,
        });
    }

    /// Ends a stream once. The server ends it with `code`/`message` in the
    /// trailers; a client-ended stream just goes away (after a half-close the
    /// response ends with OK).
    pub fn close_stream(&mut self, stream_id: u64, code: Code, message: String, by_client: bool) {
        let Some(stream) = self.streams.remove(&stream_id) else {
            return;
        };
        if !by_client {
            stream.end(Status::new(code, message.clone()));
        }
        self.record(ServerEvent::StreamClosed {
            stream: stream_id,
            code,
            message,
            by_client,
            kds: stream.kds_rpc(),
        });
        // Dropping `stream` here ends its response stream and stops its reader.
    }

    /// Closes every open stream with the same status, in stream-id order.
    pub fn close_all_streams(&mut self, code: Code, message: &str) {
        for id in self.open_stream_ids() {
            self.close_stream(id, code, message.to_string(), false);
        }
    }

    /// Drops every open stream without trailers, as a process that died
    /// would (the connection reset that follows is what the client sees).
    /// Recorded as closed by the server with UNAVAILABLE and `why`.
    pub fn drop_all_streams(&mut self, why: &str) {
        for id in self.open_stream_ids() {
            // Removing the stream ends its response stream without a status.
            let kds = self.streams.remove(&id).and_then(|stream| stream.kds_rpc());
            self.record(ServerEvent::StreamClosed {
                stream: id,
                code: Code::Unavailable,
                message: why.to_string(),
                by_client: false,
                kds,
            });
        }
    }
}
