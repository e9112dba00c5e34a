//! `drop_responses`: sets what is still to be lost; the egress path loses
//! it (`in_force::InForce::lose`).

use super::Verb;
use crate::fault::DropResponses;
use crate::in_force::Drops;
use crate::state::State;

impl Verb for DropResponses {
    fn apply(&self, state: &mut State) {
        state.faults.drops = (self.count > 0).then(|| Drops {
            left: self.count,
            type_url: self.type_url.clone(),
        });
    }
}
