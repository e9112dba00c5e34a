//! `drop_responses`: the next responses are lost on their way.

use std::fmt;

/// Lose the next `count` responses (of `type_url`, or of any type): the
/// server does all it would do to send them (nonce, auto-mode bookkeeping)
/// but they never reach the wire, as if lost in transit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropResponses {
    pub count: u32,
    pub type_url: Option<String>,
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
