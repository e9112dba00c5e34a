//! `delay_responses`: sets the delay in force. The egress path holds
//! responses back for it (`in_force::Delay`), and the server's delayer
//! task (`serve.rs`) sends them when due.

use super::Verb;
use crate::fault::DelayResponses;
use crate::state::State;

impl Verb for DelayResponses {
    fn apply(&self, state: &mut State) {
        state.faults.delay.by = self.by;
    }
}
