//! `hang` / `resume`: the server keeps its streams open and records
//! requests, but answers nothing by itself (auto mode) for one type or for
//! every type, until `resume` sends what it owes.

use std::fmt;

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
