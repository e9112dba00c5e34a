//! Everything that leaves the server on a stream, whatever its protocol:
//! responses (each gets its nonce here, and every fault that shapes
//! responses applies here: drop, delay, the stream limit) and the end of
//! streams (trailers, or none at all for a restart). Each is recorded as
//! it happens.
//!
//! All of it runs under the server's state lock and only queues on
//! unbounded channels, so a store change or a scripted send reaches every
//! stream in stream-id order within one synchronous call.

use tonic::{Code, Status};

use crate::event::ServerEvent;
use crate::state::{Delayed, State, StreamLimit};
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
            if !stream.transmit(response) {
                return false;
            }
            None
        };
        stream
            .types
            .entry(type_url)
            .or_default()
            .nonces
            .insert(nonce);
        stream.responses_sent += 1;
        if let Some(response) = held {
            // Recorded when it really goes out (`send_delayed`).
            self.delayed_seq += 1;
            let due = tokio::time::Instant::now() + delay;
            self.delayed.insert(
                (due, self.delayed_seq),
                Delayed {
                    stream: stream_id,
                    response,
                    recorded,
                },
            );
            self.delay_changed = true;
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
                .is_some_and(|s| s.transmit(delayed.response));
            if sent {
                self.record(ServerEvent::ResponseSent {
                    stream: delayed.stream,
                    response: delayed.recorded,
                });
            }
        }
        None
    }

    /// Closes the stream if `Fault::CloseStreamsAfter` says its time has
    /// come; says whether it did.
    pub fn limit_reached(&mut self, stream_id: u64) -> bool {
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

    /// Starts `Fault::CloseStreamsAfter`; streams already past the limit
    /// are closed now.
    pub fn close_streams_after(&mut self, responses: u32, code: Code, message: String) {
        self.stream_limit = Some(StreamLimit {
            responses,
            code,
            message,
        });
        // Only streams that have been asked something: a stream that sent
        // no request yet is closed at its first one.
        let ids: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| s.asked_anything())
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.limit_reached(id);
        }
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
            self.streams.remove(&id);
            self.record(ServerEvent::StreamClosed {
                stream: id,
                code: Code::Unavailable,
                message: why.to_string(),
                by_client: false,
            });
        }
    }
}
