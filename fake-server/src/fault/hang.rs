//! `hang` / `resume`: the server keeps its streams open and records
//! requests, but answers nothing by itself (auto mode) for one type or for
//! every type, until `resume` sends what it owes.

use std::collections::BTreeSet;
use std::fmt;

use super::Verb;
use crate::state::State;

/// Keep streams open and requests recorded, but send nothing by itself
/// (auto mode) for `type_url`, or for every type if `None`. Scripted sends
/// still go out: the scenario asked for them.
#[derive(Clone, Debug, PartialEq)]
pub struct Hang {
    pub type_url: Option<String>,
}

/// End every hang; auto mode then answers what it owes at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume;

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

impl fmt::Display for Hang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.type_url {
            None => f.write_str("hang (every type)"),
            Some(type_url) => write!(f, "hang {}", super::type_name(type_url)),
        }
    }
}

impl fmt::Display for Resume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("resume")
    }
}
