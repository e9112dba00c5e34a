//! `drop_responses`: the next responses are lost on their way.

use std::fmt;

use super::Verb;
use crate::state::State;

/// Lose the next `count` responses (of `type_url`, or of any type): the
/// server does all it would do to send them (nonce, auto-mode bookkeeping)
/// but they never reach the wire, as if lost in transit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropResponses {
    pub count: u32,
    pub type_url: Option<String>,
}

/// Responses still to lose, and of which type (`None`: any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Drops {
    left: u32,
    type_url: Option<String>,
}

impl Verb for DropResponses {
    fn apply(&self, state: &mut State) {
        state.faults.drops = (self.count > 0).then(|| Drops {
            left: self.count,
            type_url: self.type_url.clone(),
        });
    }
}

impl State {
    /// Whether a response of `type_url` about to be sent is lost (and
    /// counted against the drops in force).
    pub fn lose(&mut self, type_url: &str) -> bool {
        let Some(drops) = &mut self.faults.drops else {
            return false;
        };
        if drops.type_url.as_deref().is_some_and(|t| t != type_url) {
            return false;
        }
        drops.left -= 1;
        if drops.left == 0 {
            self.faults.drops = None;
        }
        true
    }
}

impl fmt::Display for DropResponses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.type_url {
            None => write!(f, "drop the next {} response(s)", self.count),
            Some(type_url) => write!(
                f,
                "drop the next {} {} response(s)",
                self.count,
                super::type_name(type_url)
            ),
        }
    }
}
