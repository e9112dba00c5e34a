//! The conformance matrix: every scenario against every client, each cell
//! a verdict with its reason and its timeline (text, and the data for a
//! picture), into `xds_conformance_reports::matrix`.

use std::path::{Path, PathBuf};

use xds_client_under_test::ObservedEvent;
use xds_conformance_reports::matrix::{
    CellStatus, ClientColumn, DocEvent, DocKind, Matrix, MatrixCell, MatrixRow, TimelineDoc,
    TimelineMark,
};
use xds_conformance_reports::{RunReport, ScenarioReport, Verdict, timeline_path};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::RequestKind;

use crate::runner::RunOutcome;
use crate::scenario::Scenario;
use crate::schedule::{HeldTo, Progress, ScenarioRuns, run_all};
use crate::snapshot_files::SnapshotMode;
use crate::suite::{
    Loaded, Partition, ResultsFile, Selection, SuiteVersion, TestedClient, load_selected,
};
use crate::timeline::Mark;
use crate::timeline::{EventKind, TimelineEvent, describe, type_name};

/// One run of the matrix: the matrix itself, a report per client, and
/// every run's outcome (per client, in row order) for callers that check
/// more than the verdict (the peer tests' snapshots).
pub struct MatrixRun {
    pub matrix: Matrix,
    pub reports: Vec<RunReport>,
    pub outcomes: Vec<Vec<(Scenario, RunOutcome)>>,
    /// Per row of the matrix (and per result of each report): its file's
    /// place among the selected files and its protocol variant, the order
    /// of an unsharded run.
    pub order: Vec<(usize, usize)>,
}

/// Runs every scenario file against every client: the clients side by
/// side, each `jobs` scenarios at a time (see [`crate::schedule`]; `None`:
/// each client its own [`TestedClient::jobs`]), so the matrix takes about
/// as long as its slowest column does alone. Files that
/// do not load are an ERROR row for every client.
pub fn run_matrix(
    files: &[PathBuf],
    selection: &crate::suite::Selection,
    clients: &[TestedClient],
    jobs: Option<usize>,
    snapshots: Option<SnapshotMode>,
    progress: &Progress<'_>,
) -> MatrixRun {
    let loaded = load_selected(files, selection);
    let scenarios: Vec<&Scenario> = loaded
        .iter()
        .filter_map(|l| l.scenario.as_ref().ok())
        .collect();
    let columns: Vec<Vec<ScenarioRuns>> = std::thread::scope(|scope| {
        let running: Vec<_> = clients
            .iter()
            .map(|client| {
                let scenarios = &scenarios;
                scope.spawn(move || {
                    run_all(
                        scenarios,
                        client.factory.as_ref(),
                        jobs.unwrap_or(client.jobs),
                        selection.retries(&client.expectations),
                        &client.name,
                        HeldTo {
                            expectations: &client.expectations,
                            snapshots,
                        },
                        progress,
                    )
                })
            })
            .collect();
        running
            .into_iter()
            .map(|column| column.join().unwrap_or_default())
            .collect()
    });
    let mut columns: Vec<_> = columns.into_iter().map(Vec::into_iter).collect();
    let mut rows = Vec::new();
    let mut reports: Vec<RunReport> = clients
        .iter()
        .map(|c| RunReport {
            client: c.name.clone(),
            results: Vec::new(),
            wall_duration: Default::default(),
        })
        .collect();
    let mut outcomes: Vec<Vec<(Scenario, RunOutcome)>> =
        clients.iter().map(|_| Vec::new()).collect();
    let mut order = Vec::new();
    for Loaded {
        order: file_order,
        source,
        scenario,
    } in &loaded
    {
        let scenario = match scenario {
            Ok(scenario) => scenario,
            Err(e) => {
                let mut cells = Vec::new();
                for report in reports.iter_mut() {
                    let (cell, scenario_report) = error_cell(source, &e.to_string());
                    report.results.push(scenario_report);
                    cells.push(cell);
                }
                rows.push(MatrixRow {
                    scenario: source.clone(),
                    spec: Vec::new(),
                    description: String::new(),
                    source: Some(source.clone()),
                    cells,
                });
                order.push((*file_order, 0));
                continue;
            }
        };
        // Every run the scenario asks for (one per protocol), per client;
        // a row per run.
        let runs: Vec<ScenarioRuns> = columns
            .iter_mut()
            .map(|column| column.next().unwrap_or_default())
            .collect();
        for (index, variant) in scenario.variants().iter().enumerate() {
            let mut cells = Vec::new();
            for ((client, report), runs) in clients.iter().zip(reports.iter_mut()).zip(&runs) {
                let Some((_, outcome)) = runs.get(index) else {
                    continue;
                };
                let (cell, scenario_report) = cell(variant, source, client, outcome);
                report.wall_duration += scenario_report.wall_duration;
                report.results.push(scenario_report);
                cells.push(cell);
            }
            rows.push(MatrixRow {
                scenario: variant.name.clone(),
                spec: variant.spec.clone(),
                description: variant.description.trim().to_string(),
                source: Some(source.clone()),
                cells,
            });
            order.push((*file_order, index));
        }
        for (column, runs) in outcomes.iter_mut().zip(runs) {
            column.extend(runs);
        }
    }
    let matrix = Matrix {
        title: "xds-conformance matrix".to_string(),
        clients: clients
            .iter()
            .map(|c| ClientColumn {
                name: c.name.clone(),
                version: c.version.clone(),
            })
            .collect(),
        rows,
    };
    MatrixRun {
        matrix,
        reports,
        outcomes,
        order,
    }
}

/// Loads and runs each file, `jobs` scenarios at a time (see
/// [`crate::schedule`]; `None`: the client's own [`TestedClient::jobs`]); a file that does not load is an ERROR result
/// naming the file, line and column, and the run goes on. The matrix of
/// one client: [`run_matrix`] has the rest of what it
/// played.
pub fn run_files(
    files: &[PathBuf],
    selection: &Selection,
    client: &TestedClient,
    jobs: Option<usize>,
    snapshots: Option<SnapshotMode>,
    progress: &Progress<'_>,
) -> RunReport {
    let started = std::time::Instant::now();
    let run = run_matrix(
        files,
        selection,
        std::slice::from_ref(client),
        jobs,
        snapshots,
        progress,
    );
    let mut report = run.reports.into_iter().next().unwrap_or_else(|| RunReport {
        client: client.name.clone(),
        results: Vec::new(),
        wall_duration: Default::default(),
    });
    report.wall_duration = started.elapsed();
    report
}

/// Everything a matrix run wrote that another process needs to make one
/// matrix of several shards (`matrix.json`; see [`merge`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct MatrixRecord {
    pub suite: SuiteVersion,
    /// `K/N` for a shard.
    pub partition: Option<String>,
    pub matrix: Matrix,
    /// Per client, one result per row of the matrix.
    pub reports: Vec<RunReport>,
    /// Per row: see [`MatrixRun::order`].
    pub order: Vec<(usize, usize)>,
}

impl MatrixRun {
    /// What `matrix.json` keeps of this run.
    pub fn record(&self, suite: &SuiteVersion, partition: Option<Partition>) -> MatrixRecord {
        MatrixRecord {
            suite: suite.clone(),
            partition: partition.map(|p| p.to_string()),
            matrix: self.matrix.clone(),
            reports: self.reports.clone(),
            order: self.order.clone(),
        }
    }
}

/// A client's name as a file name (`junit-<client>.xml`): anything but
/// letters, digits, `.`, `_` and `-` becomes `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes the matrix (Markdown and HTML), a JUnit file and a results file
/// per client, every cell's timeline, and `matrix.json` (for [`merge`])
/// under `dir`.
pub fn write_reports(record: &MatrixRecord, dir: &Path) -> std::io::Result<()> {
    use xds_conformance_reports::{MAX_TIMELINE_FILE, try_timeline_path, write_whole};
    use xds_vocabulary::cut::cut_keeping_end;
    // What links come last: the timelines first, then the files that
    // link them, so a run stopped while writing (a second signal, a full
    // disk) never leaves a page linking files that are not there.
    for report in &record.reports {
        for r in &report.results {
            let timelines =
                std::iter::once((cell_timeline_path(&report.client, &r.name), &r.timeline)).chain(
                    r.failed_tries.iter().enumerate().map(|(n, failed)| {
                        (
                            Path::new(&report.client).join(try_timeline_path(&r.name, n + 1)),
                            &failed.timeline,
                        )
                    }),
                );
            for (path, timeline) in timelines {
                let path = dir.join(path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                write_whole(
                    &path,
                    cut_keeping_end(timeline, MAX_TIMELINE_FILE).as_bytes(),
                )?;
            }
        }
    }
    for report in &record.reports {
        let client = file_safe(&report.client);
        write_whole(
            &dir.join(format!("junit-{client}.xml")),
            xds_conformance_reports::junit_xml(report).as_bytes(),
        )?;
        let partition = record
            .partition
            .as_deref()
            .and_then(|p| Partition::parse(p).ok());
        write_whole(
            &dir.join(format!("results-{client}.json")),
            ResultsFile::new(report, &record.suite, partition)
                .to_json()
                .as_bytes(),
        )?;
    }
    write_whole(
        &dir.join("matrix.json"),
        &serde_json::to_vec(record).unwrap_or_default(),
    )?;
    xds_conformance_reports::write_matrix(&record.matrix, dir)?;
    // The spec catalogue's rules, as this matrix checked them, when the
    // checkout has a catalogue and its scenarios load (a harness run on
    // other scenarios has none to tell).
    if let Some(root) = crate::suite::repo_root()
        && let Ok(coverage) = crate::coverage::Coverage::of_checkout(&root)
    {
        write_whole(
            &dir.join("spec-coverage.md"),
            coverage.matrix_page(&record.matrix).as_bytes(),
        )?;
    }
    Ok(())
}

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge")]
    Nothing,
    #[error("the shards come from different runs: {0} and {1}")]
    OtherSuite(SuiteVersion, SuiteVersion),
    #[error("the shards ran other clients: [{0}] and [{1}]")]
    OtherClients(String, String),
    #[error("{0} is in two shards")]
    Overlap(String),
    /// Shards merged without the rest of their run: a partial matrix
    /// must not read as a result.
    #[error(
        "shard{s} {missing} of {count} {are} missing (given: {given}): a partial matrix is not \
         a result; merge every shard of the run",
        s = if missing.contains(',') { "s" } else { "" },
        are = if missing.contains(',') { "are" } else { "is" }
    )]
    Incomplete {
        missing: String,
        count: u32,
        given: String,
    },
    /// A record that is not a shard (no `--partition`), among others.
    #[error("{0}: merge takes the shards of one run (`--partition K/N`, every K of one N)")]
    NotAShard(String),
    #[error("shard {0} is given twice")]
    Twice(String),
}

/// Checks that `partitions` (each record's `K/N`, or `None` for a run
/// that was not sharded) are every shard of one run, each once: a single
/// unsharded record is complete too.
fn check_complete(partitions: &[Option<String>]) -> Result<(), MergeError> {
    if let [None] = partitions {
        return Ok(());
    }
    let mut parsed = Vec::new();
    for p in partitions {
        let text = p.clone().unwrap_or_else(|| "a record".into());
        let shard = p
            .as_deref()
            .and_then(|p| Partition::parse(p).ok())
            .ok_or(MergeError::NotAShard(text))?;
        parsed.push(shard);
    }
    let count = parsed.first().map_or(1, |p| p.count);
    if let Some(other) = parsed.iter().find(|p| p.count != count) {
        return Err(MergeError::NotAShard(format!(
            "{}/{} among shards of {count}",
            other.index, other.count
        )));
    }
    let mut seen = vec![false; count as usize];
    for p in &parsed {
        let slot = &mut seen[p.index as usize - 1];
        if *slot {
            return Err(MergeError::Twice(format!("{}/{count}", p.index)));
        }
        *slot = true;
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| !seen[*k as usize - 1])
        .map(|k| format!("{k}/{count}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut given: Vec<String> = parsed
        .iter()
        .map(|p| format!("{}/{count}", p.index))
        .collect();
    given.sort();
    Err(MergeError::Incomplete {
        missing: missing.join(", "),
        count,
        given: given.join(", "),
    })
}

/// One matrix of several shards' (`--partition K/N` runs of one suite on
/// the same clients): the rows of all, in the order one run would have
/// them, each client's results likewise. Apart from times, the result is
/// what one unsharded run writes.
pub fn merge(records: Vec<MatrixRecord>) -> Result<MatrixRecord, MergeError> {
    if records.is_empty() {
        return Err(MergeError::Nothing);
    }
    check_complete(
        &records
            .iter()
            .map(|r| r.partition.clone())
            .collect::<Vec<_>>(),
    )?;
    let mut records = records.into_iter();
    let first = records.next().ok_or(MergeError::Nothing)?;
    let names = |m: &Matrix| {
        m.clients
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    // Row -> (order, row, one result per client).
    let mut rows: Vec<((usize, usize), MatrixRow, Vec<ScenarioReport>)> = Vec::new();
    let mut wall = vec![std::time::Duration::ZERO; first.reports.len()];
    let mut take =
        |record: MatrixRecord, rows: &mut Vec<((usize, usize), MatrixRow, Vec<ScenarioReport>)>| {
            let mut results: Vec<_> = record
                .reports
                .into_iter()
                .enumerate()
                .map(|(i, report)| {
                    wall[i] += report.wall_duration;
                    report.results.into_iter()
                })
                .collect();
            for (order, row) in record.order.into_iter().zip(record.matrix.rows) {
                let cells: Vec<ScenarioReport> =
                    results.iter_mut().filter_map(Iterator::next).collect();
                rows.push((order, row, cells));
            }
        };
    let suite = first.suite.clone();
    let columns = first.matrix.clients.clone();
    let title = first.matrix.title.clone();
    let clients: Vec<String> = first.reports.iter().map(|r| r.client.clone()).collect();
    let first_names = names(&first.matrix);
    take(first, &mut rows);
    for record in records {
        if record.suite != suite {
            return Err(MergeError::OtherSuite(suite, record.suite));
        }
        if names(&record.matrix) != first_names {
            return Err(MergeError::OtherClients(first_names, names(&record.matrix)));
        }
        take(record, &mut rows);
    }
    rows.sort_by_key(|(order, _, _)| *order);
    if let Some(pair) = rows.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(MergeError::Overlap(pair[1].1.scenario.clone()));
    }
    let mut reports: Vec<RunReport> = clients
        .into_iter()
        .zip(wall)
        .map(|(client, wall_duration)| RunReport {
            client,
            results: Vec::new(),
            wall_duration,
        })
        .collect();
    let mut order = Vec::new();
    let mut matrix_rows = Vec::new();
    for (key, row, results) in rows {
        for (report, result) in reports.iter_mut().zip(results) {
            report.results.push(result);
        }
        order.push(key);
        matrix_rows.push(row);
    }
    Ok(MatrixRecord {
        suite,
        partition: None,
        matrix: Matrix {
            title,
            clients: columns,
            rows: matrix_rows,
        },
        reports,
        order,
    })
}

/// A scenario file as a cell's reason names it: from its `scenarios/`
/// folder on when the path is absolute (the peer tests find the files by
/// absolute path), so reasons read the same on every machine and carry
/// no home directory.
fn shown_path(source: &str) -> &str {
    match source.rfind("/scenarios/") {
        Some(i) if source.starts_with('/') => &source[i + 1..],
        _ => source,
    }
}

fn error_cell(source: &str, message: &str) -> (MatrixCell, ScenarioReport) {
    let cell = MatrixCell {
        status: CellStatus::Error,
        detail: message.replace(source, shown_path(source)),
        timeline_file: None,
        timeline: None,
        mark: None,
        virtual_duration: Default::default(),
        wall_duration: Default::default(),
        missing: Vec::new(),
    };
    let report = ScenarioReport {
        name: source.to_string(),
        description: String::new(),
        spec: Vec::new(),
        source: source.to_string(),
        verdict: Verdict::Error {
            message: message.to_string(),
        },
        virtual_duration: Default::default(),
        wall_duration: Default::default(),
        timeline: String::new(),
        failed_tries: Vec::new(),
        observed: None,
    };
    (cell, report)
}

fn cell(
    scenario: &Scenario,
    source: &str,
    client: &TestedClient,
    outcome: &RunOutcome,
) -> (MatrixCell, ScenarioReport) {
    let (status, detail) = match &outcome.verdict {
        Verdict::Pass => (CellStatus::Pass, String::new()),
        Verdict::Fail { message } => (CellStatus::Fail, message.clone()),
        Verdict::NotApplicable { reason } => (CellStatus::NotApplicable, reason.clone()),
        Verdict::Error { message } => (CellStatus::Error, message.clone()),
        Verdict::Interrupted { message } => (CellStatus::Error, format!("interrupted: {message}")),
        Verdict::Divergent { note } => (CellStatus::Divergent, note.clone()),
        Verdict::KnownFailure { reason, message } => {
            (CellStatus::KnownFailure, format!("{reason}\n\n{message}"))
        }
        Verdict::Flaky { message, passed_on } => (
            CellStatus::Flaky,
            format!(
                "passed on try {passed_on}, failed on {} other (timelines: {}); the first \
                 failure:\n\n{message}",
                outcome.failed_tries.len(),
                (1..=outcome.failed_tries.len())
                    .map(|n| {
                        Path::new(&client.name)
                            .join(xds_conformance_reports::try_timeline_path(
                                &scenario.name,
                                n,
                            ))
                            .display()
                            .to_string()
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    };
    let has_timeline = !outcome.events.is_empty();
    let timeline_file = has_timeline.then(|| cell_timeline_path(&client.name, &scenario.name));
    let cell = MatrixCell {
        status,
        detail: detail.replace(source, shown_path(source)),
        timeline_file: timeline_file.clone().map(|p| p.display().to_string()),
        timeline: has_timeline.then(|| timeline_doc(&outcome.events)),
        mark: outcome
            .mark
            .as_ref()
            .filter(|_| has_timeline)
            .map(|mark| timeline_mark(&outcome.events, mark)),
        virtual_duration: outcome.virtual_duration,
        wall_duration: outcome.wall_duration,
        missing: outcome.missing.clone(),
    };
    let report = ScenarioReport {
        name: scenario.name.clone(),
        description: scenario.description.clone(),
        spec: scenario.spec.clone(),
        source: source.to_string(),
        verdict: outcome.verdict.clone(),
        virtual_duration: outcome.virtual_duration,
        wall_duration: outcome.wall_duration,
        timeline: outcome.timeline.clone(),
        failed_tries: outcome.failed_tries.clone(),
        observed: outcome.observed.clone(),
    };
    (cell, report)
}

/// Where a cell's text timeline goes, relative to the report directory.
pub fn cell_timeline_path(client: &str, scenario: &str) -> PathBuf {
    Path::new(client).join(timeline_path(scenario))
}

/// Whether the picture shows an event.
fn pictured(event: &TimelineEvent) -> bool {
    !matches!(event.kind, EventKind::Barrier) && describe(&event.kind).is_some()
}

/// A run's [`Mark`] as the picture places it: its event counted among
/// the events [`timeline_doc`] shows (the nearest shown one after it if
/// it is not shown itself).
pub fn timeline_mark(events: &[TimelineEvent], mark: &Mark) -> TimelineMark {
    let millis = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let event = mark.event.and_then(|index| {
        let shown = events
            .iter()
            .filter(|e| pictured(e))
            .count()
            .min(MAX_DOC_EVENTS);
        let before = events.iter().take(index).filter(|e| pictured(e)).count();
        (before < shown).then_some(before)
    });
    TimelineMark {
        kind: mark.kind,
        window_ms: mark.window.map(|(from, to)| (millis(from), millis(to))),
        event,
        expected: mark.expected.clone(),
    }
}

/// How many events a picture shows, at most: more is no picture a person
/// reads, and a flooding client's 100,000 events would be held (and
/// written into the matrix) once more. The text timeline has them all.
pub const MAX_DOC_EVENTS: usize = 20_000;

/// How much of an event's text a picture keeps (its label, its detail).
const MAX_DOC_LABEL: usize = 256;
const MAX_DOC_DETAIL: usize = 2048;

/// The picture's view of a timeline: servers and backends as lanes in order
/// of appearance, then the client; requests and responses as messages.
/// The first [`MAX_DOC_EVENTS`] shown events.
pub fn timeline_doc(events: &[TimelineEvent]) -> TimelineDoc {
    use xds_vocabulary::cut::cut;
    let mut lanes: Vec<String> = Vec::new();
    let mut doc_events = Vec::new();
    for event in events.iter().filter(|e| pictured(e)).take(MAX_DOC_EVENTS) {
        let Some(detail) = describe(&event.kind) else {
            continue;
        };
        let at_ms = u64::try_from(event.at.as_millis()).unwrap_or(u64::MAX);
        let source = event.source.as_str().to_string();
        let (lane, to_lane, kind, label) = match &event.kind {
            EventKind::Server(e) => match &**e {
                ServerEvent::RequestReceived { request, .. } => {
                    let kind = match request.kind {
                        RequestKind::Ack => DocKind::Ack,
                        RequestKind::Nack | RequestKind::NackOfUnknownNonce => DocKind::Nack,
                        RequestKind::Initial | RequestKind::UnknownNonce => DocKind::Request,
                    };
                    let label = format!(
                        "{} v={} n={} [{}]",
                        type_name(&request.type_url),
                        request.version_info,
                        request.response_nonce,
                        request.resource_names.join(",")
                    );
                    ("client".to_string(), Some(source), kind, label)
                }
                ServerEvent::ResponseSent { response, .. } => {
                    let label = format!(
                        "{} v={} n={} [{}]",
                        type_name(&response.type_url),
                        response.version_info,
                        response.nonce,
                        response.resource_names.join(",")
                    );
                    (source, Some("client".to_string()), DocKind::Response, label)
                }
                ServerEvent::FaultApplied { .. } => (source, None, DocKind::Fault, detail.clone()),
                ServerEvent::ResourcesChanged { .. } => {
                    (source, None, DocKind::Step, detail.clone())
                }
                _ => (source, None, DocKind::Connection, detail.clone()),
            },
            EventKind::Step(text) => (source, None, DocKind::Step, text.clone()),
            EventKind::Csds(_) => ("client".to_string(), None, DocKind::Csds, detail.clone()),
            EventKind::Backend(_) => (source, None, DocKind::ClientEvent, detail.clone()),
            EventKind::Client(ObservedEvent::Watcher { .. })
            | EventKind::Client(_)
            | EventKind::Rpc { .. }
            | EventKind::CsdsReply(_)
            | EventKind::Note(_)
            | EventKind::Barrier => (
                "client".to_string(),
                None,
                DocKind::ClientEvent,
                detail.clone(),
            ),
        };
        for l in [Some(&lane), to_lane.as_ref()].into_iter().flatten() {
            if l != "step" && l != "client" && !lanes.contains(l) {
                lanes.push(l.clone());
            }
        }
        doc_events.push(DocEvent {
            at_ms,
            lane,
            to_lane,
            kind,
            label: cut(&label, MAX_DOC_LABEL).into_owned(),
            detail: cut(&detail, MAX_DOC_DETAIL).into_owned(),
        });
    }
    lanes.push("client".to_string());
    TimelineDoc {
        lanes,
        events: doc_events,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use xds_conformance_reports::matrix::MarkKind;

    use super::*;

    #[test]
    fn reasons_name_scenario_files_from_their_scenarios_folder() {
        assert_eq!(
            shown_path("/work/main/harness/../scenarios/a57/x.yaml"),
            "scenarios/a57/x.yaml"
        );
        assert_eq!(shown_path("scenarios/a57/x.yaml"), "scenarios/a57/x.yaml");
        assert_eq!(shown_path("/tmp/mine/x.yaml"), "/tmp/mine/x.yaml");
        let (cell, _) = error_cell(
            "/home/u/xds/scenarios/a46/y.yaml",
            "/home/u/xds/scenarios/a46/y.yaml:3:5: bad",
        );
        assert_eq!(cell.detail, "scenarios/a46/y.yaml:3:5: bad");
    }
    use crate::timeline::Source;

    fn event(ms: u64, kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at: Duration::from_millis(ms),
            source: Source::Step,
            kind,
        }
    }

    #[test]
    fn a_mark_points_at_its_event_among_the_pictured_ones() {
        let events = vec![
            event(0, EventKind::Step("watch".into())),
            event(0, EventKind::Barrier),
            event(5, EventKind::Step("wait 1s".into())),
            event(1005, EventKind::Note("late".into())),
        ];
        let doc = timeline_doc(&events);
        let mark = Mark {
            kind: MarkKind::Divergent,
            window: Some((Duration::from_millis(5), Duration::from_millis(1005))),
            event: Some(3),
            expected: "x".into(),
        };
        let placed = timeline_mark(&events, &mark);
        // The barrier is not pictured: event 3 is the picture's third.
        assert_eq!(placed.event, Some(2));
        assert_eq!(doc.events[2].label, describe(&events[3].kind).unwrap());
        assert_eq!(placed.window_ms, Some((5, 1005)));
        assert_eq!(placed.kind, MarkKind::Divergent);
        // An event past the end (none pictured after it) points nowhere.
        let past = Mark {
            event: Some(4),
            ..mark
        };
        assert_eq!(timeline_mark(&events, &past).event, None);
    }
}
