//! The conformance matrix: scenarios × clients, every cell explained, each
//! run's timeline attached (as text and as a picture).
//!
//! Inputs are plain data; how a timeline was produced is not this module's
//! business. Rendering lives in `matrix_markdown`, `matrix_html` and
//! `timeline_svg`.

use std::time::Duration;

/// One column of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientColumn {
    /// e.g. `reference`, `grpc-rust`, `grpcio`, `grpc-js`.
    pub name: String,
    /// e.g. `grpcio 1.85.0`; empty if unknown.
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Matrix {
    pub title: String,
    pub clients: Vec<ClientColumn>,
    pub rows: Vec<MatrixRow>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MatrixRow {
    /// e.g. `a46/nack-keeps-valid-resources`.
    pub scenario: String,
    pub spec: Vec<String>,
    pub description: String,
    /// The scenario file's path as the harness read it (absolute, or
    /// relative to the working directory); the HTML links it relative to
    /// the report directory. `None` when unknown.
    pub source: Option<String>,
    /// One per client, in `Matrix::clients` order.
    pub cells: Vec<MatrixCell>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum CellStatus {
    Pass,
    /// Passed through an alternative the scenario allows, marked as a
    /// divergence between clients (e.g. C-core's NACK version_info).
    Divergent,
    /// A real-time run that failed and passed when tried again; its
    /// detail names the failed tries.
    Flaky,
    /// Failed in a way the scenario records as a known failure of this
    /// client, with the reason.
    KnownFailure,
    /// The client lacks something the scenario needs.
    NotApplicable,
    Fail,
    /// The run broke (client crashed, bad setup).
    Error,
}

impl CellStatus {
    pub fn label(&self) -> &'static str {
        match self {
            CellStatus::Pass => "pass",
            CellStatus::Divergent => "divergent",
            CellStatus::Flaky => "flaky",
            CellStatus::KnownFailure => "known failure",
            CellStatus::NotApplicable => "n/a",
            CellStatus::Fail => "FAIL",
            CellStatus::Error => "ERROR",
        }
    }

    /// Whether this cell should fail a CI gate.
    pub fn is_failure(&self) -> bool {
        matches!(self, CellStatus::Fail | CellStatus::Error)
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MatrixCell {
    pub status: CellStatus,
    /// Why: the failure message, the n/a reason, the divergence or
    /// known-failure note. Empty for a plain pass.
    pub detail: String,
    /// The run's text timeline, relative to the report directory.
    pub timeline_file: Option<String>,
    /// The run's timeline as data, for the picture.
    pub timeline: Option<TimelineDoc>,
    /// What the verdict points at on that timeline, if anything.
    pub mark: Option<TimelineMark>,
    pub virtual_duration: Duration,
    pub wall_duration: Duration,
    /// An n/a cell's missing capabilities, each on its own (its `detail`
    /// lists them in one sentence): the page groups n/a by them. Absent
    /// from a `matrix.json` written before they were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// What a verdict points at on its run's timeline: the window the
/// expectation looked in and the event it is about, so the picture can
/// show the failure (or divergence) the text explains.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimelineMark {
    pub kind: MarkKind,
    /// The expectation's window, in milliseconds since the run started.
    pub window_ms: Option<(u64, u64)>,
    /// Index into [`TimelineDoc::events`] of the event the verdict is
    /// about (see [`MarkKind`]); `None` when there is none to point at.
    pub event: Option<usize>,
    /// What was expected, in one line (e.g. `watcher event type=CDS
    /// name=c1 event=changed`).
    pub expected: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MarkKind {
    /// An expectation failed: the event is the one that came at the wrong
    /// time, the one an `expect_none` forbade, or the nearest candidate
    /// when nothing matched.
    Failing,
    /// The event a divergent `any_of` alternative matched.
    Divergent,
}

/// A run's timeline, reduced to what the picture needs: lanes (servers and
/// the client) and events on them, some of them messages between lanes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimelineDoc {
    /// Lane names, left to right: servers first, then `client`.
    pub lanes: Vec<String>,
    pub events: Vec<DocEvent>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DocEvent {
    /// Milliseconds since the run started.
    pub at_ms: u64,
    /// The lane it happens on (the sender, for messages).
    pub lane: String,
    /// For messages: the receiving lane.
    pub to_lane: Option<String>,
    pub kind: DocKind,
    /// Short text shown beside it, e.g. `CDS v=1 n=1 [c1]`.
    pub label: String,
    /// The full timeline line, shown on hover.
    pub detail: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DocKind {
    /// client -> server DiscoveryRequest (initial / subscription change)
    Request,
    Ack,
    Nack,
    /// server -> client DiscoveryResponse
    Response,
    /// A fault applied to a server (close, refuse, ...).
    Fault,
    /// Connections and streams opening and closing.
    Connection,
    /// A script action.
    Step,
    /// What the client reported (watchers, dial, channel state, RPCs).
    ClientEvent,
    /// A CSDS state change.
    Csds,
}
