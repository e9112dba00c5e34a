//! `hang` / `resume`: a hang is kept in force (`in_force::Hung`, which
//! auto mode asks before it answers); `resume` ends it and sends what the
//! streams are owed.

use super::Verb;
use crate::fault::{Hang, Resume};
use crate::state::State;

impl Verb for Hang {
    fn apply(&self, state: &mut State) {
        let hung = &mut state.faults.hung;
        match &self.type_url {
            Some(type_url) => {
                hung.types.insert(type_url.clone());
            }
            None => hung.all = true,
        }
    }
}

impl Verb for Resume {
    /// Ends every hang; auto mode sends what the streams are owed.
    fn apply(&self, state: &mut State) {
        let was = std::mem::take(&mut state.faults.hung);
        let owed: Vec<(u64, String)> = state
            .streams
            .iter()
            .flat_map(|(id, stream)| {
                stream
                    .requested_types()
                    .filter(|type_url| was.covers(type_url))
                    .map(move |type_url| (*id, type_url.to_string()))
            })
            .collect();
        for (id, type_url) in owed {
            state.auto_respond(id, &type_url, None);
        }
    }
}
