//! The faults in force on one server, part of its state: what a verb
//! leaves behind between applications (`hang` until `resume`, the limit of
//! `close_streams_after`, the responses `delay_responses` holds back,
//! what `drop_responses` is still to lose). The verbs' effects set it;
//! auto mode and the egress path obey it.
//!
//! Apart from the verbs' effects (`effect`): the state holds it, and the
//! effects change the state.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::time::Instant;
use tonic::Code;

use crate::event::RecordedResponse;
use crate::stream::Outgoing;

/// The faults in force on one server.
#[derive(Default)]
pub(crate) struct InForce {
    /// `refuse_connections`, until `accept_connections`.
    pub refusing: bool,
    /// What `hang` stopped, until `resume`.
    pub hung: Hung,
    /// `close_streams_after`, until `keep_streams`.
    pub stream_limit: Option<StreamLimit>,
    /// `delay_responses`, and the responses waiting it out.
    pub delay: Delay,
    /// `drop_responses`: what is still to be lost.
    pub drops: Option<Drops>,
}

impl InForce {
    /// Whether a response of `type_url` about to be sent is lost (and
    /// counted against the drops in force).
    pub fn lose(&mut self, type_url: &str) -> bool {
        let Some(drops) = &mut self.drops else {
            return false;
        };
        if drops.type_url.as_deref().is_some_and(|t| t != type_url) {
            return false;
        }
        drops.left -= 1;
        if drops.left == 0 {
            self.drops = None;
        }
        true
    }
}

/// What `hang` stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hung {
    pub all: bool,
    pub types: BTreeSet<String>,
}

impl Hung {
    pub fn covers(&self, type_url: &str) -> bool {
        self.all || self.types.contains(type_url)
    }
}

/// Streams are closed with `code`/`message` after `responses` responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamLimit {
    pub responses: u32,
    pub code: Code,
    pub message: String,
}

/// Responses still to lose, and of which type (`None`: any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Drops {
    pub left: u32,
    pub type_url: Option<String>,
}

/// The delay in force and the responses waiting it out, by due time; the
/// server's delayer task (`serve.rs`) sends them when due.
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

    /// The first response due by `now`, in due order.
    pub fn take_due(&mut self, now: Instant) -> Option<Delayed> {
        let entry = self.waiting.first_entry()?;
        (entry.key().0 <= now).then(|| entry.remove())
    }

    /// When the next response waiting is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.waiting.keys().next().map(|(due, _)| *due)
    }
}
