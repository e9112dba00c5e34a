//! `delay_responses`: every response waits a while before it goes out.

use std::fmt;
use std::time::Duration;

/// Hold every response back for `by` before it goes out (recorded as sent
/// when it does); zero ends the delay (held ones still wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayResponses {
    pub by: Duration,
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
