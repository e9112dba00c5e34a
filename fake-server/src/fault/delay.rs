//! `delay_responses`: every response waits a while before it goes out.
//! The responses waiting are kept here, by due time; the server's delayer
//! task (`serve.rs`) sends them when due.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::Verb;
use crate::event::{RecordedResponse, ServerEvent};
use crate::state::State;
use crate::stream::Outgoing;

/// Hold every response back for `by` before it goes out (recorded as sent
/// when it does); zero ends the delay (held ones still wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayResponses {
    pub by: Duration,
}

/// The delay in force and the responses waiting it out.
#[derive(Default)]
pub(crate) struct Delay {
    /// How long each response waits (zero: none).
    pub by: Duration,
    /// Responses waiting out their delay, by due time (and order).
    waiting: BTreeMap<(Instant, u64), Delayed>,
    seq: u64,
    /// Set when `waiting` gained an entry; the delayer task clears it.
    pub changed: bool,
}

/// A response waiting out `delay_responses`.
pub(crate) struct Delayed {
    pub stream: u64,
    pub response: Outgoing,
    pub recorded: RecordedResponse,
}

impl Delay {
    /// Holds `delayed` back for the delay in force; it is recorded when it
    /// really goes out.
    pub fn hold(&mut self, delayed: Delayed) {
        self.seq += 1;
        let due = Instant::now() + self.by;
        self.waiting.insert((due, self.seq), delayed);
        self.changed = true;
    }
}

impl Verb for DelayResponses {
    fn apply(&self, state: &mut State) {
        state.faults.delay.by = self.by;
    }
}

impl State {
    /// Sends the delayed responses that are due; returns when the next one
    /// is due. A response whose stream has gone is not sent.
    pub fn send_delayed(&mut self) -> Option<Instant> {
        let now = Instant::now();
        while let Some(entry) = self.faults.delay.waiting.first_entry() {
            if entry.key().0 > now {
                return Some(entry.key().0);
            }
            let delayed = entry.remove();
            if self.transmit(delayed.stream, delayed.response) {
                self.record(ServerEvent::ResponseSent {
                    stream: delayed.stream,
                    response: delayed.recorded,
                });
            }
        }
        None
    }
}

impl fmt::Display for DelayResponses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.by.is_zero() {
            f.write_str("stop delaying responses")
        } else {
            write!(f, "delay every response by {:.3}s", self.by.as_secs_f64())
        }
    }
}
