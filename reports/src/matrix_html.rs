//! The conformance matrix as one self-contained HTML page: inline CSS, an
//! inline script for the filters, no external assets (it is opened from
//! `file://`). Without the script the page shows everything.
//!
//! - Totals per client, then the scenario × client table, its rows grouped
//!   by spec (a scenario's first tag), each group headed by a link to its
//!   gRFC; the table fits its window (five clients at 1400 px): a cell is a
//!   badge, a link to its text timeline and a short reason.
//! - Reasons that repeat (n/a, known failures, divergences: "the client
//!   lacks a resource watch API" on 170 cells) are numbered notes, listed
//!   once under the table with their counts; the full text of every reason
//!   is the cell's `title` and in its run below.
//! - Per scenario, its description, a link to its scenario file and a
//!   collapsible run per cell: the whole reason, the text timeline, the
//!   timeline as an SVG with what the verdict points at drawn on it.
//!   Failures (FAIL, ERROR) start open.
//! - Filters (by verdict, client, spec, scenario name), kept in the URL
//!   hash: see `matrix_filter.js`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::MAX_LINE;
use crate::escape::{short, url_path, xml};
use crate::matrix::{CellStatus, Matrix, MatrixCell, MatrixRow};
use crate::matrix_md::{MISSING_LABEL, MISSING_REASON, NO_REASON, STATUSES, cell, count, title};
use crate::paths::{scenario_copy_path, source_href};
use crate::specs::{group_of, group_rank, spec};
use crate::svg::{timeline_svg_file, timeline_svg_inline};
use xds_vocabulary::cut::cut;

const SCRIPT: &str = include_str!("matrix_filter.js");

const STYLE: &str = r#"
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px 32px;color:#0f172a;background:#f8fafc}
h1{font-size:24px;margin:0 0 2px}
h2{font-size:18px;margin:28px 0 10px}
h3{font-size:15px;margin:0 0 4px}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
a{color:#1d4ed8}
.sub{color:#475569;margin:0 0 18px}
table{border-collapse:collapse;background:#fff;box-shadow:0 1px 2px #0f172a14}
th,td{border:1px solid #e2e8f0;padding:6px 10px;text-align:left;vertical-align:top}
thead th{background:#f1f5f9;font-weight:600}
thead th small{display:block;font-weight:400;color:#64748b;overflow-wrap:anywhere}
.totals thead th{white-space:nowrap}
.totals td.n{text-align:right;font-variant-numeric:tabular-nums;min-width:3.5em}
.totals td.zero{color:#cbd5e1}
.glance{border-collapse:collapse;margin:0 0 12px}
.glance th,.glance td{padding:3px 8px;border-bottom:1px solid #e2e8f0;text-align:left;white-space:nowrap}
.glance td a{text-decoration:none;margin-right:3px}
.glance th .n{color:#64748b;font-weight:normal}
.s-pass{--bg:#dcfce7;--fg:#166534;--edge:#16a34a;--tint:#f7fdf9}
.s-divergent{--bg:#fef3c7;--fg:#92400e;--edge:#d97706;--tint:#fffbeb}
.s-known{--bg:#ede9fe;--fg:#5b21b6;--edge:#7c3aed;--tint:#f5f3ff}
.s-flaky{--bg:#e0f2fe;--fg:#075985;--edge:#0284c7;--tint:#f0f9ff}
.s-na{--bg:#e2e8f0;--fg:#475569;--edge:#94a3b8;--tint:#f8fafc}
.s-fail{--bg:#dc2626;--fg:#fff;--edge:#dc2626;--tint:#fef2f2}
.s-error{--bg:#7f1d1d;--fg:#fff;--edge:#7f1d1d;--tint:#fef2f2}
.s-missing{--bg:#fff;--fg:#64748b;--edge:#94a3b8;--tint:#fff}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px;white-space:nowrap;text-decoration:none;background:var(--bg);color:var(--fg)}
a.badge:hover{outline:2px solid var(--edge)}
.s-missing .badge{border:1px dashed var(--edge)}
.filters{display:flex;flex-wrap:wrap;gap:6px 22px;align-items:center;background:#fff;border:1px solid #e2e8f0;border-radius:6px;padding:8px 12px;margin:0 0 8px;font-size:13px}
.filters fieldset{border:0;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:4px 10px;align-items:center}
.filters legend{float:left;font-weight:600;color:#334155;margin-right:4px;padding:0}
.filters label{white-space:nowrap;cursor:pointer}
.filters label .n{color:#64748b;font-size:12px}
.filters input[type=search]{width:14em}
.shown{color:#475569;font-size:13px;margin:0 0 8px}
.matrix{width:100%;table-layout:fixed}
.matrix th.scn{width:23%;overflow-wrap:anywhere}
.matrix thead th{position:sticky;top:0;z-index:2;box-shadow:0 1px 0 #cbd5e1;overflow-wrap:anywhere}
.matrix th.scn>a{color:#0f172a;text-decoration:none;font-weight:600}
.matrix th.scn>a:hover{text-decoration:underline}
.matrix .meta{font-weight:400;font-size:12px;margin-left:6px;white-space:nowrap}
.matrix td,.matrix tbody th{padding:5px 8px}
.matrix tr.grp th{background:#1e293b;color:#fff;font-weight:600;padding:5px 10px}
.matrix tr.grp a{color:#fff}
.matrix tr.grp .t{font-weight:400;color:#cbd5e1;margin-left:6px}
.matrix tr.grp .n{font-weight:400;color:#94a3b8;margin-left:10px;font-size:12px}
.matrix td.cell{background:var(--tint);overflow-wrap:anywhere}
.matrix td.cell.off>*{opacity:.3}
.matrix td.cell.off{background:#fff}
a.txt{font-size:11px;color:#64748b;margin-left:6px}
sup.fn{font-size:11px;font-weight:700;margin-left:2px}
sup.fn a{text-decoration:none}
.why{font-size:12px;color:#475569;margin-top:2px;overflow:hidden;display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:3;line-clamp:3}
.tag{display:inline-block;font-size:11px;font-weight:600;padding:0 6px;border-radius:4px;background:#e0f2fe;color:#075985;margin:0 3px 2px 0;text-decoration:none}
a.tag:hover{text-decoration:underline}
a.yaml{font-size:11px;margin-left:4px}
ol.notes{background:#fff;border:1px solid #e2e8f0;border-radius:6px;padding:8px 12px 8px 44px;margin:0;font-size:13px}
ol.notes li{margin:3px 0}
ol.notes li:target{background:#fef9c3}
ol.notes .count{color:#0f172a;font-weight:600;margin-left:6px;white-space:nowrap}
ol.notes .by{color:#64748b;font-size:12px;margin-left:6px}
ol.lacks .alone{color:#334155;font-size:12px;margin-left:8px}
.legend{margin:12px 0 0;color:#334155;font-size:13px;max-width:1100px}
.legend .badge{margin-right:2px}
.legend span.k{white-space:nowrap;margin-right:12px}
section.scenario{background:#fff;border:1px solid #e2e8f0;border-radius:6px;padding:12px 16px;margin:0 0 14px}
.desc{color:#475569;margin:0 0 10px;white-space:pre-line}
details.run{border:1px solid #e2e8f0;border-left:5px solid var(--edge);border-radius:4px;margin:8px 0;background:#fff}
details.run>summary{cursor:pointer;padding:6px 10px;background:var(--tint);list-style-position:inside}
details.run>summary .why{display:inline;margin-left:8px}
details.run[open]>summary .why{display:none}
details.run>summary .dur{color:#64748b;font-size:12px;margin-left:8px;white-space:nowrap}
details.run .body{padding:8px 12px 12px}
pre.detail{background:#f8fafc;border:1px solid #e2e8f0;border-radius:4px;padding:8px 10px;margin:0 0 8px;white-space:pre-wrap;overflow-wrap:anywhere}
.expected{margin:0 0 8px;font-size:13px}
.expected.mk-failing b{color:#dc2626}
.expected.mk-divergent b{color:#b45309}
.links{margin:0 0 8px;font-size:13px}
.tl{overflow-x:auto;border:1px solid #e2e8f0;border-radius:4px;background:#fff}
.tl svg,.tl iframe{display:block;border:0}
.none{color:#64748b;font-style:italic}
"#;

/// CSS class of a status.
pub(crate) fn class(s: &CellStatus) -> &'static str {
    match s {
        CellStatus::Pass => "s-pass",
        CellStatus::Divergent => "s-divergent",
        CellStatus::Flaky => "s-flaky",
        CellStatus::KnownFailure => "s-known",
        CellStatus::NotApplicable => "s-na",
        CellStatus::Fail => "s-fail",
        CellStatus::Error => "s-error",
    }
}

/// The name of a status in the filters and the URL hash.
pub(crate) fn key(s: &CellStatus) -> &'static str {
    &class(s)[2..]
}

const MISSING_KEY: &str = "missing";

fn meaning(s: &CellStatus) -> &'static str {
    match s {
        CellStatus::Pass => "every expectation held",
        CellStatus::Divergent => "passed through an alternative the scenario allows",
        CellStatus::Flaky => "failed, then passed when tried again (real time)",
        CellStatus::KnownFailure => "fails in a way recorded as known for this client",
        CellStatus::NotApplicable => "the client lacks something the scenario needs",
        CellStatus::Fail => "an expectation did not hold",
        CellStatus::Error => "the run broke (crash, bad setup)",
    }
}

/// Whether a cell gets its own run section: a verdict with something to
/// look at. An n/a that never ran has only its reason, which the table
/// already gives (hundreds of them on a real matrix would bury the runs).
fn has_section(c: &MatrixCell) -> bool {
    let ran = c.timeline.is_some() || c.timeline_file.is_some();
    match c.status {
        CellStatus::Pass => ran || !c.detail.trim().is_empty(),
        CellStatus::NotApplicable => ran,
        _ => true,
    }
}

fn cell_id(row: usize, client: usize) -> String {
    format!("r{row}c{client}")
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 1000.0 {
        format!("{:.3}s", d.as_secs_f64())
    } else {
        format!("{ms:.1}ms")
    }
}

/// The group a row is shown in: its first spec tag as the spec table
/// spells it, or `(untagged)`.
pub(crate) fn group_key(row: &MatrixRow) -> String {
    match group_of(&row.spec) {
        Some(tag) => spec(tag).map_or(tag, |s| s.tag).to_string(),
        None => UNTAGGED.to_string(),
    }
}

const UNTAGGED: &str = "(untagged)";

/// Rows in the order the page shows them: by group (see
/// [`group_rank`]), in file order within a group.
fn display_order(m: &Matrix) -> Vec<usize> {
    let mut order: Vec<usize> = (0..m.rows.len()).collect();
    order.sort_by_cached_key(|&r| {
        let key = group_key(&m.rows[r]);
        group_rank((key != UNTAGGED).then_some(key.as_str()))
    });
    order
}

/// The part of a cell's reason that repeats from row to row: an n/a's
/// reason, a divergence's note, a known failure's recorded reason (its
/// first paragraph; the failure message after it is the run's own).
/// Failures and errors are each their own story: never collapsed.
fn shared_reason(x: Option<&MatrixCell>) -> Option<(&'static str, &'static str, String)> {
    let Some(x) = x else {
        return Some((MISSING_KEY, MISSING_LABEL, MISSING_REASON.to_string()));
    };
    let text = match x.status {
        CellStatus::NotApplicable | CellStatus::Divergent => x.detail.trim(),
        CellStatus::KnownFailure => x.detail.trim().split("\n\n").next().unwrap_or("").trim(),
        CellStatus::Pass | CellStatus::Flaky | CellStatus::Fail | CellStatus::Error => {
            return None;
        }
    };
    let text = if text.is_empty() { NO_REASON } else { text };
    Some((key(&x.status), x.status.label(), text.to_string()))
}

/// A reason shared by several cells, shown once as a numbered note.
struct Note {
    key: &'static str,
    label: &'static str,
    text: String,
    /// Cells per client.
    per_client: Vec<usize>,
}

/// The numbered notes (reasons on at least two cells, numbered as they
/// first appear down the page) and each one's number by (status, text).
fn notes(m: &Matrix, order: &[usize]) -> (Vec<Note>, HashMap<(&'static str, String), usize>) {
    let mut counts: HashMap<(&'static str, String), usize> = HashMap::new();
    for &r in order {
        for c in 0..m.clients.len() {
            if let Some((key, _, text)) = shared_reason(cell(&m.rows[r].cells, c)) {
                *counts.entry((key, text)).or_default() += 1;
            }
        }
    }
    let mut notes: Vec<Note> = Vec::new();
    let mut number = HashMap::new();
    for &r in order {
        for c in 0..m.clients.len() {
            let Some((key, label, text)) = shared_reason(cell(&m.rows[r].cells, c)) else {
                continue;
            };
            let id = (key, text);
            if counts[&id] < 2 {
                continue;
            }
            let n = *number.entry(id.clone()).or_insert_with(|| {
                notes.push(Note {
                    key,
                    label,
                    text: id.1.clone(),
                    per_client: vec![0; m.clients.len()],
                });
                notes.len()
            });
            notes[n - 1].per_client[c] += 1;
        }
    }
    (notes, number)
}

/// Renders the matrix as one HTML page, scenario files linked by their
/// paths as given (see [`matrix_html_in`]).
pub fn matrix_html(m: &Matrix) -> String {
    render(m, &|source| url_path(source), None)
}

/// Renders the matrix as one HTML page to be written into `report_dir`:
/// each row links its scenario file relative to that directory (relative
/// sources are taken from the working directory). Every picture is inline;
/// [`write_matrix`](crate::write_matrix) keeps the page light instead.
pub fn matrix_html_in(m: &Matrix, report_dir: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    render(
        m,
        &|source| source_href(source, report_dir, cwd.as_deref()),
        None,
    )
}

/// The page as [`matrix_html_in`] renders it, with the picture of every
/// run that is not failing in a file of its own beside its text timeline
/// (`grpc-js/a46/x.svg` beside `grpc-js/a46/x.txt`), loaded when its run
/// is opened: 800 inline pictures were 10 MB of a 12 MB page, drawn at
/// load. Failing runs, open from the start, keep theirs inline. Returns the
/// page and the files to write, by path relative to `report_dir`.
///
/// The scenario files rows link are copied into the folder too
/// (`scenarios/...`, see [`scenario_copy_path`]) and linked there, so the
/// links hold when the folder is uploaded alone (a CI artifact); a file
/// that cannot be read here (a merge of shards made elsewhere) is linked
/// where it was.
pub(crate) fn matrix_page_in(m: &Matrix, report_dir: &Path) -> (String, Vec<(PathBuf, String)>) {
    let cwd = std::env::current_dir().ok();
    let mut files = Vec::new();
    let mut copies: HashMap<&str, PathBuf> = HashMap::new();
    for source in m.rows.iter().filter_map(|r| r.source.as_deref()) {
        if copies.contains_key(source) {
            continue;
        }
        let Ok(text) =
            xds_vocabulary::files::read_regular_text(Path::new(source), MAX_SCENARIO_COPY)
        else {
            continue;
        };
        let mut path = scenario_copy_path(source);
        // Two files that land on one name (from two folders) keep apart.
        if copies.values().any(|p| *p == path) {
            path = PathBuf::from(format!("scenarios/{}", copies.len()))
                .join(path.strip_prefix("scenarios").unwrap_or(&path));
        }
        files.push((path.clone(), text));
        copies.insert(source, path);
    }
    let page = render(
        m,
        &|source| match copies.get(source) {
            Some(copy) => url_path(&copy.to_string_lossy()),
            None => source_href(source, report_dir, cwd.as_deref()),
        },
        Some(&mut files),
    );
    (page, files)
}

/// The largest scenario file copied into a report folder: the loader
/// reads none larger than 1 MiB (harness `scenario::limits`); what is
/// larger is no scenario file, and is linked, not copied.
const MAX_SCENARIO_COPY: u64 = 1 << 20;

/// Where a run's picture goes as a file: its text timeline's path with
/// `.svg` for `.txt`, if that path stays inside the report folder (a
/// merged `matrix.json` is input: its paths are checked, not trusted).
fn picture_file(x: &MatrixCell) -> Option<PathBuf> {
    let text = Path::new(x.timeline_file.as_deref()?);
    let inside = text
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    (inside && text.extension().is_some_and(|e| e == "txt")).then(|| text.with_extension("svg"))
}

fn render(
    m: &Matrix,
    source_link: &dyn Fn(&str) -> String,
    mut files: Option<&mut Vec<(PathBuf, String)>>,
) -> String {
    let mut out = String::new();
    let title = xml(title(m));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}{}</style>\n</head>\n<body>\n<h1>{title}</h1>\n",
        crate::svg::STYLE
    );
    let failing = m
        .rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|c| c.status.is_failure())
        .count();
    let _ = writeln!(
        out,
        "<p class=\"sub\">{} scenarios × {} clients · {} failing cell{}</p>",
        m.rows.len(),
        m.clients.len(),
        failing,
        if failing == 1 { "" } else { "s" }
    );
    totals(&mut out, m);

    let order = display_order(m);
    crate::matrix_glance::glance(&mut out, m, &order);
    let (notes, note_number) = notes(m, &order);
    let (lacks, lack_index) = crate::matrix_lacks::lacks(m);
    out.push_str("<h2>Matrix</h2>\n");
    filters(&mut out, m, &order);
    let shared = Shared {
        notes: note_number,
        lacks: lack_index,
    };
    table(&mut out, m, &order, &shared, source_link);
    if !notes.is_empty() {
        notes_list(&mut out, m, &notes);
    }
    if !lacks.is_empty() {
        crate::matrix_lacks::lacks_list(&mut out, m, &lacks);
    }
    legend(&mut out);

    // One section per scenario, one collapsible run per cell.
    out.push_str("<h2>Runs</h2>\n");
    for &r in &order {
        let row = &m.rows[r];
        let _ = write!(
            out,
            "<section class=\"scenario\" id=\"s{r}\">\n<h3><code>{}</code> {}",
            xml(&row.scenario),
            tags(&row.spec)
        );
        if let Some(source) = &row.source {
            let _ = write!(
                out,
                " <a class=\"yaml\" href=\"{}\" title=\"{}\">scenario file</a>",
                xml(&source_link(source)),
                xml(source)
            );
        }
        out.push_str("</h3>\n");
        if !row.description.trim().is_empty() {
            let _ = writeln!(out, "<p class=\"desc\">{}</p>", xml(row.description.trim()));
        }
        for (c, client) in m.clients.iter().enumerate() {
            let Some(x) = cell(&row.cells, c) else {
                let _ = writeln!(
                    out,
                    "<p class=\"none\">{}: {MISSING_REASON}.</p>",
                    xml(&client.name)
                );
                continue;
            };
            if !has_section(x) {
                continue;
            }
            run_section(&mut out, x, &client.name, r, c, files.as_deref_mut());
        }
        out.push_str("</section>\n");
    }
    let _ = write!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

fn totals(out: &mut String, m: &Matrix) {
    out.push_str("<table class=\"totals\">\n<thead><tr><th>client</th><th>version</th>");
    for s in &STATUSES {
        let _ = write!(
            out,
            "<th class=\"{}\"><span class=\"badge\">{}</span></th>",
            class(s),
            xml(s.label())
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (c, client) in m.clients.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td>",
            xml(&client.name),
            xml(&client.version)
        );
        for s in &STATUSES {
            let n = count(m, c, s);
            let _ = write!(
                out,
                "<td class=\"n{}\">{n}</td>",
                if n == 0 { " zero" } else { "" }
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The filter bar: hidden until the script shows it (it does nothing
/// without the script).
fn filters(out: &mut String, m: &Matrix, order: &[usize]) {
    out.push_str(
        "<form id=\"filters\" class=\"filters\" hidden=\"\">\n<fieldset><legend>Verdicts</legend>",
    );
    let cells = || m.rows.iter().flat_map(|r| &r.cells);
    for s in &STATUSES {
        let n = cells().filter(|x| &x.status == s).count();
        let _ = write!(
            out,
            "<label class=\"{}\"><input type=\"checkbox\" name=\"s\" value=\"{}\" checked=\"\"/> \
             <span class=\"badge\">{}</span> <span class=\"n\">{n}</span></label>",
            class(s),
            key(s),
            xml(s.label())
        );
    }
    let missing: usize = m
        .rows
        .iter()
        .map(|r| m.clients.len().saturating_sub(r.cells.len()))
        .sum();
    if missing > 0 {
        let _ = write!(
            out,
            "<label class=\"s-missing\"><input type=\"checkbox\" name=\"s\" value=\"{MISSING_KEY}\" \
             checked=\"\"/> <span class=\"badge\">{MISSING_LABEL}</span> <span class=\"n\">{missing}</span></label>"
        );
    }
    out.push_str("</fieldset>\n<fieldset><legend>Clients</legend>");
    for client in &m.clients {
        let _ = write!(
            out,
            "<label><input type=\"checkbox\" name=\"c\" data-name=\"{0}\" checked=\"\"/> {0}</label>",
            xml(&client.name)
        );
    }
    out.push_str(
        "</fieldset>\n<fieldset><legend>Spec</legend><select name=\"spec\">\
         <option value=\"\">all</option>",
    );
    let mut groups: Vec<(String, usize)> = Vec::new();
    for &r in order {
        let g = group_key(&m.rows[r]);
        match groups.last_mut() {
            Some((last, n)) if *last == g => *n += 1,
            _ => groups.push((g, 1)),
        }
    }
    for (g, n) in &groups {
        let _ = write!(out, "<option value=\"{0}\">{0} ({n})</option>", xml(g));
    }
    out.push_str(
        "</select></fieldset>\n<fieldset><legend>Scenario</legend>\
         <input type=\"search\" name=\"q\" placeholder=\"name contains…\" aria-label=\"scenario name contains\"/>\
         </fieldset>\n<button type=\"button\" name=\"reset\">show all</button>\n</form>\n\
         <p id=\"shown\" class=\"shown\" hidden=\"\"></p>\n",
    );
}

/// What cells point at below the table: numbered notes by (status,
/// reason), missing capabilities by name.
struct Shared {
    notes: HashMap<(&'static str, String), usize>,
    lacks: HashMap<String, usize>,
}

fn table(
    out: &mut String,
    m: &Matrix,
    order: &[usize],
    shared: &Shared,
    source_link: &dyn Fn(&str) -> String,
) {
    out.push_str(
        "<table class=\"matrix\" id=\"matrix\">\n<thead><tr><th class=\"scn\">scenario</th>",
    );
    for (c, client) in m.clients.iter().enumerate() {
        let _ = write!(out, "<th class=\"cl c{c}\">{}", xml(&client.name));
        if !client.version.is_empty() {
            let _ = write!(out, "<small>{}</small>", xml(&client.version));
        }
        out.push_str("</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let columns = m.clients.len() + 1;
    let mut current: Option<String> = None;
    for &r in order {
        let row = &m.rows[r];
        let group = group_key(row);
        if current.as_ref() != Some(&group) {
            let size = order
                .iter()
                .filter(|&&o| group_key(&m.rows[o]) == group)
                .count();
            group_header(out, &group, size, columns);
            current = Some(group.clone());
        }
        let _ = write!(
            out,
            "<tr class=\"row\" data-r=\"{r}\" data-group=\"{}\" data-name=\"{}\">\
             <th class=\"scn\" title=\"{}\"><a href=\"#s{r}\">{}</a><span class=\"meta\">{}",
            xml(&group),
            xml(&row.scenario),
            xml(row.description.trim()),
            xml(&row.scenario),
            tags(&row.spec)
        );
        if let Some(source) = &row.source {
            let _ = write!(
                out,
                "<a class=\"yaml\" href=\"{}\" title=\"{}\">YAML</a>",
                xml(&source_link(source)),
                xml(source)
            );
        }
        out.push_str("</span></th>");
        for c in 0..m.clients.len() {
            table_cell(out, cell(&row.cells, c), r, c, shared);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

fn group_header(out: &mut String, group: &str, size: usize, columns: usize) {
    let _ = write!(
        out,
        "<tr class=\"grp\" data-group=\"{}\"><th colspan=\"{columns}\" scope=\"colgroup\">",
        xml(group)
    );
    match spec(group) {
        Some(s) => {
            let _ = write!(
                out,
                "<a class=\"spec\" href=\"{}\">{}</a><span class=\"t\">{}</span>",
                xml(&s.url()),
                xml(s.tag),
                xml(s.title)
            );
        }
        None => out.push_str(&xml(group)),
    }
    let _ = writeln!(
        out,
        "<span class=\"n\">{size} scenario{}</span></th></tr>",
        if size == 1 { "" } else { "s" }
    );
}

fn table_cell(out: &mut String, x: Option<&MatrixCell>, r: usize, c: usize, numbers: &Shared) {
    let shared = shared_reason(x);
    let note = shared
        .as_ref()
        .and_then(|(key, _, text)| numbers.notes.get(&(*key, text.clone())).copied());
    let Some(x) = x else {
        let _ = write!(
            out,
            "<td class=\"cell s-missing c{c}\" data-s=\"{MISSING_KEY}\">\
             <span class=\"badge\" title=\"{MISSING_REASON}\">{MISSING_LABEL}</span>"
        );
        match note {
            Some(n) => footnote(out, n, MISSING_REASON),
            None => {
                let _ = write!(out, "<span class=\"why\">{MISSING_REASON}</span>");
            }
        }
        out.push_str("</td>");
        return;
    };
    let _ = write!(
        out,
        "<td class=\"cell {} c{c}\" data-s=\"{}\"{}>",
        class(&x.status),
        key(&x.status),
        crate::matrix_lacks::cell_attribute(&x.missing, &numbers.lacks)
    );
    let full = x.detail.trim();
    // A tooltip is for a reason, not for a 64 KB failure message (twice
    // per cell): that one is whole in the run.
    let title = if full.is_empty() {
        String::new()
    } else {
        format!(" title=\"{}\"", xml(&cut(full, MAX_LINE)))
    };
    if has_section(x) {
        let _ = write!(
            out,
            "<a class=\"badge\" href=\"#{}\"{title}>{}</a>",
            cell_id(r, c),
            xml(x.status.label())
        );
    } else {
        let _ = write!(
            out,
            "<span class=\"badge\"{title}>{}</span>",
            xml(x.status.label())
        );
    }
    if let (Some(n), Some((_, _, text))) = (note, &shared) {
        footnote(out, n, text);
    }
    if let Some(f) = &x.timeline_file {
        let _ = write!(
            out,
            "<a class=\"txt\" href=\"{}\" title=\"text timeline\">txt</a>",
            xml(&url_path(f))
        );
    }
    if note.is_none() && x.status != CellStatus::Pass {
        let _ = write!(
            out,
            "<span class=\"why\"{title}>{}</span>",
            xml(&reason(x, 160))
        );
    }
    out.push_str("</td>");
}

fn footnote(out: &mut String, n: usize, text: &str) {
    let _ = write!(
        out,
        "<sup class=\"fn\"><a href=\"#note{n}\" title=\"{}\">{n}</a></sup>",
        xml(text)
    );
}

fn notes_list(out: &mut String, m: &Matrix, notes: &[Note]) {
    out.push_str("<h2 id=\"notes\">Reasons shared by several cells</h2>\n<ol class=\"notes\">\n");
    for (i, note) in notes.iter().enumerate() {
        let n = i + 1;
        let total: usize = note.per_client.iter().sum();
        let by: Vec<String> = m
            .clients
            .iter()
            .zip(&note.per_client)
            .filter(|(_, k)| **k > 0)
            .map(|(client, k)| format!("{} {k}", xml(&client.name)))
            .collect();
        let _ = writeln!(
            out,
            "<li id=\"note{n}\" value=\"{n}\" class=\"s-{}\" data-count=\"{total}\">\
             <span class=\"badge\">{}</span> <span class=\"text\">{}</span>\
             <span class=\"count\">× {total}</span><span class=\"by\">{}</span></li>",
            note.key,
            xml(note.label),
            xml(&note.text),
            by.join(" · ")
        );
    }
    out.push_str("</ol>\n");
}

fn run_section(
    out: &mut String,
    x: &MatrixCell,
    client: &str,
    r: usize,
    c: usize,
    files: Option<&mut Vec<(PathBuf, String)>>,
) {
    let _ = write!(
        out,
        "<details class=\"run {}\" id=\"{}\" data-c=\"{c}\" data-s=\"{}\"{}>\n<summary><span class=\"badge\">{}</span> <b>{}</b>",
        class(&x.status),
        cell_id(r, c),
        key(&x.status),
        if x.status.is_failure() {
            " open=\"\""
        } else {
            ""
        },
        xml(x.status.label()),
        xml(client)
    );
    if x.status != CellStatus::Pass {
        let _ = write!(out, "<span class=\"why\">{}</span>", xml(&reason(x, 110)));
    }
    let _ = writeln!(
        out,
        "<span class=\"dur\">virtual {} · wall {}</span></summary>\n<div class=\"body\">",
        ms(x.virtual_duration),
        ms(x.wall_duration)
    );
    if !x.detail.trim().is_empty() {
        let _ = writeln!(
            out,
            "<pre class=\"detail\">{}</pre>",
            xml(x.detail.trim_end())
        );
    }
    if let Some(mark) = &x.mark {
        let (kind, what) = match mark.kind {
            crate::matrix::MarkKind::Failing => ("mk-failing", "expected"),
            crate::matrix::MarkKind::Divergent => ("mk-divergent", "divergent alternative"),
        };
        let _ = write!(
            out,
            "<p class=\"expected {kind}\"><b>{what}:</b> <code>{}</code>",
            xml(mark.expected.trim())
        );
        if let Some((a, b)) = mark.window_ms {
            let _ = write!(
                out,
                " in the window {}–{}",
                seconds(a.min(b)),
                seconds(a.max(b))
            );
        }
        out.push_str("</p>\n");
    }
    match &x.timeline_file {
        Some(f) => {
            let _ = writeln!(
                out,
                "<p class=\"links\"><a href=\"{}\">text timeline</a> <code>{}</code></p>",
                xml(&url_path(f)),
                xml(f)
            );
        }
        None => out.push_str("<p class=\"links none\">no text timeline</p>\n"),
    }
    let file = files
        .filter(|_| !x.status.is_failure())
        .and_then(|files| Some((files, picture_file(x)?)));
    match (&x.timeline, file) {
        (Some(t), Some((files, path))) => {
            let svg = timeline_svg_file(t, x.mark.as_ref());
            let _ = writeln!(
                out,
                "<div class=\"tl\"><iframe loading=\"lazy\" src=\"{}\" width=\"{}\" height=\"{}\" \
                 title=\"timeline on {}\"></iframe></div>",
                xml(&url_path(&path.to_string_lossy())),
                svg.width,
                svg.height,
                xml(client)
            );
            files.push((path, svg.text));
        }
        (Some(t), None) => {
            let _ = write!(
                out,
                "<div class=\"tl\">\n{}</div>\n",
                timeline_svg_inline(t, x.mark.as_ref()).text
            );
        }
        (None, _) => out.push_str("<p class=\"none\">no timeline recorded</p>\n"),
    }
    out.push_str("</div>\n</details>\n");
}

/// `15.000s`.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// A cell's one-line reason for the table.
fn reason(x: &MatrixCell, max: usize) -> String {
    let s = short(&x.detail, max);
    if s.is_empty() {
        NO_REASON.to_string()
    } else {
        s
    }
}

/// Spec tags, each linked to its spec when known.
fn tags(spec_tags: &[String]) -> String {
    spec_tags
        .iter()
        .map(|t| match spec(t) {
            Some(s) => format!(
                "<a class=\"tag\" href=\"{}\" title=\"{}\">{}</a>",
                xml(&s.url()),
                xml(&format!("{}: {}", s.tag, s.title)),
                xml(t)
            ),
            None => format!("<span class=\"tag\">{}</span>", xml(t)),
        })
        .collect()
}

fn legend(out: &mut String) {
    out.push_str("<p class=\"legend\">");
    for s in &STATUSES {
        let _ = write!(
            out,
            "<span class=\"k {}\"><span class=\"badge\">{}</span> {}</span> ",
            class(s),
            xml(s.label()),
            meaning(s)
        );
    }
    out.push_str(
        "</p>\n<p class=\"legend\">A number beside a verdict is a reason several cells share, \
         listed above; <b>txt</b> is the run's text timeline; hover a cell for its whole reason.</p>\n\
         <p class=\"legend\">Timelines: ",
    );
    for (colour, sym, what) in [
        ("#2563eb", "→", "request"),
        ("#2563eb", "⇢", "ACK"),
        ("#dc2626", "→", "NACK"),
        ("#059669", "←", "response"),
        ("#dc2626", "✕", "fault"),
        ("#64748b", "○", "connection"),
        ("#7c3aed", "■", "client event"),
        ("#0e7490", "◇", "CSDS change"),
        ("#334155", "▬", "script step"),
    ] {
        let _ = write!(
            out,
            "<span class=\"k\"><b style=\"color:{colour}\">{sym}</b> {what}</span>"
        );
    }
    out.push_str(
        " Time flows down; long idle gaps are cut short and labelled. \
         Hover an event for its full timeline line. What a verdict points at is drawn \
         in red (a failure) or amber (a divergence): the expectation's window as a shaded \
         band, the event ringed, what was expected under it.</p>\n",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{ClientColumn, MatrixRow};
    use crate::matrix_sample::{sample_matrix, sample_timeline, well_formed};
    use crate::specs::spec_url;
    use crate::svg::{timeline_svg, timeline_svg_marked};

    /// The `<details>` section of a cell, if any.
    fn section<'a>(html: &'a str, id: &str) -> Option<&'a str> {
        let at = html.find(&format!("\" id=\"{id}\""))?;
        let open = html[..at].rfind("<details")?;
        let end = html[at..].find("</details>")? + at;
        Some(&html[open..end])
    }

    /// The page's body without its script, which is not XML.
    fn body_without_script(html: &str) -> String {
        let body = &html[html.find("<body>").unwrap()..html.find("</body>").unwrap() + 7];
        let start = body.find("<script>").unwrap();
        let end = body.find("</script>").unwrap() + "</script>".len();
        format!("{}{}", &body[..start], &body[end..])
    }

    /// The matrix table's rows, as (tr class, data-r or data-group).
    fn table_rows(html: &str) -> Vec<(String, String)> {
        let table = &html[html.find("<table class=\"matrix\"").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        table
            .split("<tr class=\"")
            .skip(1)
            .map(|tr| {
                let class = tr[..tr.find('"').unwrap()].to_string();
                let attr = if class == "row" {
                    "data-r=\""
                } else {
                    "data-group=\""
                };
                let at = tr.find(attr).unwrap() + attr.len();
                (class, tr[at..at + tr[at..].find('"').unwrap()].to_string())
            })
            .collect()
    }

    fn row(scenario: &str, spec: &[&str], cells: Vec<MatrixCell>) -> MatrixRow {
        MatrixRow {
            scenario: scenario.into(),
            spec: spec.iter().map(|s| s.to_string()).collect(),
            description: String::new(),
            source: None,
            cells,
        }
    }

    fn plain(status: CellStatus, detail: &str) -> MatrixCell {
        MatrixCell {
            status,
            detail: detail.into(),
            timeline_file: None,
            timeline: None,
            mark: None,
            virtual_duration: Duration::ZERO,
            wall_duration: Duration::ZERO,
            missing: Vec::new(),
        }
    }

    fn clients(names: &[&str]) -> Vec<ClientColumn> {
        names
            .iter()
            .map(|n| ClientColumn {
                name: n.to_string(),
                version: String::new(),
            })
            .collect()
    }

    #[test]
    fn one_section_with_svg_per_non_pass_cell() {
        let m = sample_matrix();
        let html = matrix_html(&m);
        for (r, row) in m.rows.iter().enumerate() {
            for (c, x) in row.cells.iter().enumerate() {
                let id = cell_id(r, c);
                assert_eq!(
                    html.matches(&format!("id=\"{id}\"")).count(),
                    has_section(x) as usize,
                    "{id}"
                );
                if !has_section(x) {
                    continue;
                }
                let s = section(&html, &id).unwrap_or_else(|| panic!("no section {id}"));
                assert!(s.contains(&format!("class=\"run {}\"", class(&x.status))));
                assert!(s.contains(&xml(x.detail.trim_end())), "{id}");
                assert_eq!(s.matches("<svg").count(), x.timeline.is_some() as usize);
                if let Some(t) = &x.timeline {
                    assert!(s.contains(&timeline_svg_inline(t, x.mark.as_ref()).text));
                }
                if let Some(f) = &x.timeline_file {
                    assert!(s.contains(&format!("href=\"{f}\"")));
                }
                assert_eq!(s.contains(" open=\"\">"), x.status.is_failure());
                // The table links to it.
                assert!(html.contains(&format!("href=\"#{id}\"")));
            }
        }
        // Every verdict that ran has its run; the n/a that did not run
        // (a71 on grpc-js) has none, and its badge links nowhere.
        let cells = || m.rows.iter().flat_map(|r| &r.cells);
        let ran = cells()
            .filter(|x| x.timeline.is_some() || x.timeline_file.is_some())
            .count();
        assert_eq!(ran, 7);
        assert_eq!(html.matches("<details class=\"run").count(), ran);
        assert!(!html.contains("id=\"r3c1\""));
        assert!(!html.contains("href=\"#r3c1\""));
    }

    #[test]
    fn marks_are_drawn_in_their_runs() {
        let m = sample_matrix();
        let html = matrix_html(&m);
        // The failure (a57 on reference) and the divergence (a46 on grpc-js).
        let fail = section(&html, "r2c0").unwrap();
        assert!(fail.contains("<rect class=\"mk-band\""));
        assert!(fail.contains("class=\"mk-ring\""));
        assert!(fail.contains(
            "<p class=\"expected mk-failing\"><b>expected:</b> \
             <code>watcher event type=CDS name=c1 event=changed</code> in the window 15.000s–16.000s</p>"
        ));
        let divergent = section(&html, "r1c1").unwrap();
        assert!(divergent.contains("<g class=\"mk mk-note mk-divergent\">"));
        assert!(divergent.contains("<p class=\"expected mk-divergent\">"));
        // An unmarked run has an unmarked picture.
        let plain = section(&html, "r1c0").unwrap();
        assert!(plain.contains(&timeline_svg_inline(&sample_timeline(), None).text));
        assert!(!plain.contains("<style>"), "the page holds the style once");
        assert!(
            timeline_svg(&sample_timeline()).contains("<style>"),
            "a file holds its own"
        );
        assert!(!plain.contains("class=\"expected"));
    }

    #[test]
    fn a_written_page_frames_the_pictures_of_runs_that_are_not_failing() {
        let mut m = sample_matrix();
        // A path out of the report folder (a hostile matrix.json) keeps
        // its picture inline.
        m.rows[1].cells[0].timeline_file = Some("../../outside.txt".into());
        let (page, files) = matrix_page_in(&m, Path::new("reports"));
        well_formed(&body_without_script(&page)).unwrap();
        let cells = || m.rows.iter().flat_map(|r| &r.cells);
        for (r, row) in m.rows.iter().enumerate() {
            for (c, x) in row.cells.iter().enumerate() {
                let Some(t) = &x.timeline else { continue };
                let s = section(&page, &cell_id(r, c)).unwrap();
                let inline = x.status.is_failure() || picture_file(x).is_none();
                assert_eq!(s.contains("<svg"), inline, "r{r}c{c}");
                assert_eq!(s.contains("<iframe loading=\"lazy\""), !inline, "r{r}c{c}");
                if !inline {
                    let path = picture_file(x).unwrap();
                    let (_, svg) = files.iter().find(|(p, _)| *p == path).unwrap();
                    assert_eq!(*svg, timeline_svg_marked(t, x.mark.as_ref()));
                    assert!(s.contains(&format!("src=\"{}\"", path.display())));
                }
            }
        }
        let framed = cells()
            .filter(|x| x.timeline.is_some() && !x.status.is_failure() && picture_file(x).is_some())
            .count();
        assert!(framed > 0);
        assert_eq!(files.len(), framed);
        assert!(
            files
                .iter()
                .all(|(p, _)| p.extension().is_some_and(|e| e == "svg"))
        );
        assert!(
            !files
                .iter()
                .any(|(p, _)| p.to_string_lossy().contains(".."))
        );
    }

    #[test]
    fn a_page_of_2000_runs_stays_light() {
        // 400 scenarios × 5 clients, each run with a timeline of its own.
        let sample = sample_matrix();
        let template = sample.rows[0].clone();
        let mut m = sample.clone();
        m.clients = (0..5)
            .map(|i| ClientColumn {
                name: format!("client-{i}"),
                version: String::new(),
            })
            .collect();
        m.rows = (0..400)
            .map(|i| {
                let mut row = template.clone();
                row.scenario = format!("a27/scenario-{i}");
                row.cells = (0..5)
                    .map(|c| {
                        let mut x = template.cells[0].clone();
                        x.timeline_file = Some(format!("client-{c}/a27/scenario-{i}.txt"));
                        x
                    })
                    .collect();
                row
            })
            .collect();
        let inline = matrix_html(&m);
        let (page, files) = matrix_page_in(&m, Path::new("reports"));
        assert_eq!(files.len(), 2_000);
        eprintln!(
            "2,000 runs: the page is {} KiB ({} KiB with every picture inline)",
            page.len() >> 10,
            inline.len() >> 10
        );
        // What each run costs the page: its row cell and its section.
        assert!(page.len() < 2_000 * 1_200, "{} bytes", page.len());
        assert!(page.len() * 4 < inline.len());
    }

    #[test]
    fn html_is_well_formed_and_deterministic() {
        let html = matrix_html(&sample_matrix());
        assert_eq!(html, matrix_html(&sample_matrix()));
        // The page is written as XHTML-compatible markup apart from the
        // doctype, the void <meta> tags and the script.
        well_formed(&body_without_script(&html)).unwrap();
        // Self-contained: one inline script, no external assets.
        assert_eq!(html.matches("<script").count(), 1);
        assert!(html.contains("<script>\n"));
        for banned in ["src=", "<link", "url(", "@import"] {
            assert!(!html.contains(banned), "{banned}");
        }
        // Nothing in the script can end its element early.
        assert!(!SCRIPT.contains("</"));
        // Links go to anchors on the page, to the (relative) text
        // timelines, or to the specs.
        for href in html.split("href=\"").skip(1) {
            let href = &href[..href.find('"').unwrap()];
            assert!(
                href.starts_with('#')
                    || href.starts_with("timelines/")
                    || crate::specs::SPECS.iter().any(|s| s.url() == href),
                "{href}"
            );
        }
    }

    #[test]
    fn html_escapes_all_text() {
        let nasty = "<&\">'";
        let mut x = sample_matrix().rows[2].cells[0].clone();
        x.detail = format!("{nasty}\n{nasty}");
        x.timeline_file = Some(format!("timelines/{nasty}.txt"));
        let m = Matrix {
            title: nasty.into(),
            clients: vec![
                ClientColumn {
                    name: nasty.into(),
                    version: nasty.into(),
                },
                ClientColumn {
                    name: "other".into(),
                    version: String::new(),
                },
            ],
            rows: vec![MatrixRow {
                scenario: nasty.into(),
                spec: vec![nasty.into()],
                description: nasty.into(),
                source: Some(format!("/{nasty}.yaml")),
                cells: vec![x],
            }],
        };
        let html = matrix_html(&m);
        assert!(!body_without_script(&html).contains(nasty));
        assert!(html.contains("&lt;&amp;&quot;&gt;&#39;"));
        assert!(html.contains("href=\"timelines/%3C%26%22%3E%27.txt\""));
        assert!(html.contains("href=\"/%3C%26%22%3E%27.yaml\""));
        // The missing cell of `other` is explained.
        assert!(html.contains(MISSING_REASON));
        well_formed(&body_without_script(&html)).unwrap();
    }

    /// A flaky cell has its own colour, filter and section, naming its
    /// failed tries; it counts apart from passes.
    #[test]
    fn a_flaky_cell_is_shown_as_flaky_with_its_tries() {
        let detail = "passed on try 2, failed on 1 other (timelines: grpc-js/timelines/a57__one.try1.txt); the first failure:\n\nexpected X";
        let m = Matrix {
            title: String::new(),
            clients: clients(&["grpc-js"]),
            rows: vec![row(
                "a57/one",
                &["A57"],
                vec![plain(CellStatus::Flaky, detail)],
            )],
        };
        let html = matrix_html(&m);
        assert!(html.contains("class=\"s-flaky"), "{html}");
        assert!(html.contains("a57__one.try1.txt"));
        assert!(html.contains("data-status=\"flaky\""), "{html}");
        well_formed(&body_without_script(&html)).unwrap();
        let md = crate::matrix_markdown(&m);
        assert!(md.contains("| grpc-js |  | 0 | 1 |"), "{md}");
    }

    /// Groups by first tag: the known specs in table order, then other
    /// tags by name, then untagged rows; file order within a group.
    #[test]
    fn rows_are_grouped_by_their_first_spec() {
        let pass = || vec![plain(CellStatus::Pass, "")];
        let m = Matrix {
            title: String::new(),
            clients: clients(&["reference"]),
            rows: vec![
                row("a57/one", &["A57"], pass()),
                row("delta/one", &["delta", "A46"], pass()),
                row("a27/one", &["A27"], pass()),
                row("a46/one", &["a46", "A27"], pass()),
                row("zz/one", &["zz"], pass()),
                row("broken.yaml", &[], pass()),
                row("a27/two", &["A27", "A57"], pass()),
            ],
        };
        let html = matrix_html(&m);
        let rows: Vec<String> = table_rows(&html)
            .into_iter()
            .map(|(class, v)| format!("{class}:{v}"))
            .collect();
        assert_eq!(
            rows,
            [
                "grp:A27",
                "row:2",
                "row:6",
                "grp:A46",
                "row:3",
                "grp:A57",
                "row:0",
                "grp:delta",
                "row:1",
                "grp:zz",
                "row:4",
                "grp:(untagged)",
                "row:5"
            ]
        );
        // Headers link their spec and count their rows.
        let a27 = spec_url("A27").unwrap();
        assert!(html.contains(&format!(
            "<tr class=\"grp\" data-group=\"A27\"><th colspan=\"2\" scope=\"colgroup\">\
             <a class=\"spec\" href=\"{a27}\">A27</a><span class=\"t\">xDS-Based Global Load Balancing</span>\
             <span class=\"n\">2 scenarios</span></th></tr>"
        )));
        let delta = spec_url("delta").unwrap();
        assert!(html.contains(&format!("<a class=\"spec\" href=\"{delta}\">delta</a>")));
        // A row's tags link the same way; unknown tags are plain.
        assert!(html.contains(&format!(
            "<a class=\"tag\" href=\"{}\" title=\"A57: XdsClient Failure Mode Behavior\">A57</a>",
            spec_url("A57").unwrap()
        )));
        assert!(html.contains("<span class=\"tag\">zz</span>"));
        // The spec filter offers each group once, with its size.
        assert!(html.contains("<option value=\"A27\">A27 (2)</option>"));
        assert_eq!(html.matches("<option value=\"A46\">").count(), 1);
        // The runs below follow the same order.
        let sections: Vec<usize> = html
            .split("<section class=\"scenario\" id=\"s")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
            .collect();
        assert_eq!(sections, [2, 6, 3, 0, 1, 4, 5]);
    }

    /// A reason on several cells is a numbered note, listed once with its
    /// count; a reason on one cell is shown in it.
    #[test]
    fn repeated_reasons_are_notes_listed_once_with_their_count() {
        let lacks =
            "needs capability `fallback`: the grpc-js adapter cannot configure fallback servers";
        let na = || plain(CellStatus::NotApplicable, lacks);
        let known = |message: &str| {
            plain(
                CellStatus::KnownFailure,
                &format!("grpc-js ACKs a bad listener\n\n{message}"),
            )
        };
        let long = "x ".repeat(300);
        let m = Matrix {
            title: String::new(),
            clients: clients(&["reference", "grpc-js", "envoy"]),
            rows: vec![
                row(
                    "a71/one",
                    &["A71"],
                    vec![plain(CellStatus::Pass, ""), na(), na()],
                ),
                row(
                    "a71/two",
                    &["A71"],
                    vec![plain(CellStatus::Pass, ""), na(), known("step 3: saw ACK")],
                ),
                row(
                    "a71/three",
                    &["A71"],
                    vec![plain(CellStatus::Fail, &long), known("step 5: other"), na()],
                ),
                row(
                    "a71/four",
                    &["A71"],
                    vec![plain(CellStatus::NotApplicable, "only once")],
                ),
            ],
        };
        let html = matrix_html(&m);
        let notes = &html[html.find("<ol class=\"notes\">").unwrap()..];
        let notes = &notes[..notes.find("</ol>").unwrap()];
        assert_eq!(notes.matches("<li ").count(), 3, "{notes}");
        // Numbered in order of first appearance, once each, with counts.
        assert!(notes.contains(&format!(
            "<li id=\"note1\" value=\"1\" class=\"s-na\" data-count=\"4\"><span class=\"badge\">n/a</span> \
             <span class=\"text\">{}</span><span class=\"count\">× 4</span>\
             <span class=\"by\">grpc-js 2 · envoy 2</span></li>",
            xml(lacks)
        )));
        // A known failure's shared reason is its recorded reason, without
        // the run's own message.
        assert!(notes.contains(
            "<li id=\"note2\" value=\"2\" class=\"s-known\" data-count=\"2\"><span class=\"badge\">known failure</span> \
             <span class=\"text\">grpc-js ACKs a bad listener</span><span class=\"count\">× 2</span>"
        ));
        assert!(notes.contains("id=\"note3\"") && notes.contains(MISSING_REASON));
        // Elsewhere only as titles: the badge's and the note link's (n/a
        // runs that did not run have no section).
        assert_eq!(
            html.matches(&format!("title=\"{}\"", xml(lacks))).count(),
            4 * 2
        );
        assert_eq!(html.matches(&xml(lacks)).count(), 4 * 2 + 1);
        let table = &html[html.find("<table class=\"matrix\"").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        assert_eq!(
            table
                .matches("<sup class=\"fn\"><a href=\"#note1\"")
                .count(),
            4
        );
        assert_eq!(
            table
                .matches("<sup class=\"fn\"><a href=\"#note2\"")
                .count(),
            2
        );
        assert_eq!(
            table
                .matches("<sup class=\"fn\"><a href=\"#note3\"")
                .count(),
            2
        );
        assert!(!table.contains(&format!(">{}</span>", xml(lacks))));
        // Reasons on one cell are shown in it; a long one is cut there and
        // whole in its title and its run.
        assert!(table.contains("<span class=\"why\" title=\"only once\">only once</span>"));
        let why = table
            .split("<span class=\"why\"")
            .skip(1)
            .find(|w| w.contains("x x"))
            .unwrap();
        let shown = &why[why.find('>').unwrap() + 1..why.find("</span>").unwrap()];
        assert!(
            shown.chars().count() <= 160 && shown.ends_with('…'),
            "{shown}"
        );
        assert!(why.contains(&format!("title=\"{}\"", long.trim())));
    }

    #[test]
    fn a_huge_message_is_whole_in_its_run_only() {
        let mut m = sample_matrix();
        let huge = format!("step 7: expected it\n{}", "y".repeat(100_000));
        m.rows[2].cells[0].detail = huge.clone();
        let html = matrix_html(&m);
        let table = &html[html.find("<table class=\"matrix\"").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        assert!(table.len() < 20_000, "{}", table.len());
        assert!(table.contains("more bytes]\""));
        assert!(section(&html, "r2c0").unwrap().contains(&huge));
    }

    #[test]
    fn rows_link_their_scenario_file_and_cells_their_timeline() {
        let mut m = sample_matrix();
        m.rows[0].source =
            Some("/repo/scenarios/a27/node-on-the-first-request-of-every-stream.yaml".into());
        m.rows[1].source = Some("scenarios/a46/nack-keeps-valid-resources.yaml".into());
        let html = matrix_html_in(&m, Path::new("/repo/reports-out/matrix"));
        assert!(html.contains(
            "<a class=\"yaml\" href=\"../../scenarios/a27/node-on-the-first-request-of-every-stream.yaml\" \
             title=\"/repo/scenarios/a27/node-on-the-first-request-of-every-stream.yaml\">YAML</a>"
        ));
        // Relative to the working directory, which is not /repo.
        let cwd = std::env::current_dir().unwrap();
        let expected = source_href(
            "scenarios/a46/nack-keeps-valid-resources.yaml",
            Path::new("/repo/reports-out/matrix"),
            Some(&cwd),
        );
        assert!(expected.starts_with("../../../"), "{expected}");
        assert!(html.contains(&format!("<a class=\"yaml\" href=\"{expected}\"")));
        // Without a directory: as given.
        let html = matrix_html(&m);
        assert!(html.contains("href=\"scenarios/a46/nack-keeps-valid-resources.yaml\""));
        // Every cell with a text timeline links it from the table.
        let table = &html[html.find("<table class=\"matrix\"").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        for x in m.rows.iter().flat_map(|r| &r.cells) {
            if let Some(f) = &x.timeline_file {
                assert!(
                    table.contains(&format!("<a class=\"txt\" href=\"{}\"", url_path(f))),
                    "{f}"
                );
            }
        }
        let with_file = m
            .rows
            .iter()
            .flat_map(|r| &r.cells)
            .filter(|x| x.timeline_file.is_some())
            .count();
        assert_eq!(table.matches("<a class=\"txt\"").count(), with_file);
    }

    /// The filter bar is there for the script to show: a box per status
    /// and per client, a spec choice, a name search.
    #[test]
    fn filters_wait_for_the_script() {
        let m = sample_matrix();
        let html = matrix_html(&m);
        assert!(html.contains("<form id=\"filters\" class=\"filters\" hidden=\"\">"));
        for s in &STATUSES {
            assert!(html.contains(&format!("name=\"s\" value=\"{}\" checked=\"\"/>", key(s))));
        }
        assert!(!html.contains("value=\"missing\""));
        for c in &m.clients {
            assert!(html.contains(&format!(
                "name=\"c\" data-name=\"{}\" checked=\"\"/>",
                c.name
            )));
        }
        assert!(html.contains("<select name=\"spec\"><option value=\"\">all</option>"));
        assert!(html.contains("<input type=\"search\" name=\"q\""));
        // Every cell says its status for the filters, and its column; so
        // does every run.
        let table = &html[html.find("<table class=\"matrix\"").unwrap()..];
        let (table, runs) = table.split_at(table.find("</table>").unwrap());
        assert_eq!(table.matches("data-s=\"").count(), 8);
        assert_eq!(runs.matches("data-s=\"").count(), 7);
        assert!(runs.contains(
            "<details class=\"run s-fail\" id=\"r2c0\" data-c=\"0\" data-s=\"fail\" open=\"\">"
        ));
        assert_eq!(
            table
                .matches("<td class=\"cell s-pass c0\" data-s=\"pass\">")
                .count(),
            2
        );
        // A row short of a cell: the filters count it as missing.
        let mut short = m.clone();
        short.rows[0].cells.pop();
        let html = matrix_html(&short);
        assert!(html.contains("value=\"missing\" checked=\"\"/> <span class=\"badge\">missing</span> <span class=\"n\">1</span>"));
        assert!(html.contains("<td class=\"cell s-missing c1\" data-s=\"missing\">"));
    }

    /// With `XDS_MATRIX_SAMPLE_DIR` set, writes the sample matrix there
    /// (for `reports/screenshot.sh`).
    #[test]
    fn write_sample_when_asked() {
        if let Some(dir) = std::env::var_os("XDS_MATRIX_SAMPLE_DIR") {
            let written =
                crate::matrix_write::write_matrix(&sample_matrix(), std::path::Path::new(&dir))
                    .unwrap();
            eprintln!("wrote {written:?}");
        }
    }
}
