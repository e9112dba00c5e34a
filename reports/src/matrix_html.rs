//! The conformance matrix as one self-contained HTML page: inline CSS, no
//! scripts, no external assets. A colour-coded scenario × client table,
//! then per scenario a collapsible section for every cell with something
//! to show: its detail, a link to its text timeline and its timeline as an
//! inline SVG. Failures (FAIL, ERROR) start open.

use std::fmt::Write as _;
use std::time::Duration;

use crate::escape::{short, url_path, xml};
use crate::matrix::{CellStatus, Matrix, MatrixCell};
use crate::matrix_md::{MISSING_LABEL, MISSING_REASON, STATUSES, cell, count, title};
use crate::svg::timeline_svg;

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
thead th{background:#f1f5f9;font-weight:600;white-space:nowrap}
thead th small{display:block;font-weight:400;color:#64748b}
.totals td.n{text-align:right;font-variant-numeric:tabular-nums;min-width:3.5em}
.totals td.zero{color:#cbd5e1}
.s-pass{--bg:#dcfce7;--fg:#166534;--edge:#16a34a;--tint:#f7fdf9}
.s-divergent{--bg:#fef3c7;--fg:#92400e;--edge:#d97706;--tint:#fffbeb}
.s-known{--bg:#ede9fe;--fg:#5b21b6;--edge:#7c3aed;--tint:#f5f3ff}
.s-na{--bg:#e2e8f0;--fg:#475569;--edge:#94a3b8;--tint:#f8fafc}
.s-fail{--bg:#dc2626;--fg:#fff;--edge:#dc2626;--tint:#fef2f2}
.s-error{--bg:#7f1d1d;--fg:#fff;--edge:#7f1d1d;--tint:#fef2f2}
.s-missing{--bg:#fff;--fg:#64748b;--edge:#94a3b8;--tint:#fff}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-weight:600;font-size:12px;white-space:nowrap;text-decoration:none;background:var(--bg);color:var(--fg)}
a.badge:hover{outline:2px solid var(--edge)}
.s-missing .badge{border:1px dashed var(--edge)}
.matrix td.cell{background:var(--tint);min-width:9em}
.matrix th.scn{white-space:nowrap}
.matrix th.scn a{color:#0f172a;text-decoration:none;font-weight:600}
.matrix th.scn a:hover{text-decoration:underline}
.why{display:block;font-size:12px;color:#475569;max-width:22em;margin-top:2px}
.tag{display:inline-block;font-size:11px;font-weight:600;padding:0 6px;border-radius:4px;background:#e0f2fe;color:#075985;margin:0 3px 2px 0}
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
.links{margin:0 0 8px;font-size:13px}
.tl{overflow-x:auto;border:1px solid #e2e8f0;border-radius:4px;background:#fff}
.tl svg{display:block}
.none{color:#64748b;font-style:italic}
"#;

/// CSS class of a status.
fn class(s: &CellStatus) -> &'static str {
    match s {
        CellStatus::Pass => "s-pass",
        CellStatus::Divergent => "s-divergent",
        CellStatus::KnownFailure => "s-known",
        CellStatus::NotApplicable => "s-na",
        CellStatus::Fail => "s-fail",
        CellStatus::Error => "s-error",
    }
}

fn meaning(s: &CellStatus) -> &'static str {
    match s {
        CellStatus::Pass => "every expectation held",
        CellStatus::Divergent => "passed through an alternative the scenario allows",
        CellStatus::KnownFailure => "fails in a way recorded as known for this client",
        CellStatus::NotApplicable => "the client lacks something the scenario needs",
        CellStatus::Fail => "an expectation did not hold",
        CellStatus::Error => "the run broke (crash, bad setup)",
    }
}

/// Whether a cell gets its own section: anything not a plain pass, or a
/// pass with something to look at.
fn has_section(c: &MatrixCell) -> bool {
    c.status != CellStatus::Pass
        || !c.detail.trim().is_empty()
        || c.timeline.is_some()
        || c.timeline_file.is_some()
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

/// Renders the matrix as one HTML page.
pub fn matrix_html(m: &Matrix) -> String {
    let mut out = String::new();
    let title = xml(title(m));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
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

    // Totals.
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

    // The matrix.
    out.push_str(
        "<h2>Matrix</h2>\n<table class=\"matrix\">\n<thead><tr><th>scenario</th><th>spec</th>",
    );
    for client in &m.clients {
        let _ = write!(out, "<th>{}", xml(&client.name));
        if !client.version.is_empty() {
            let _ = write!(out, "<small>{}</small>", xml(&client.version));
        }
        out.push_str("</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (r, row) in m.rows.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><th class=\"scn\" title=\"{}\"><a href=\"#s{r}\">{}</a></th><td>{}</td>",
            xml(&row.description),
            xml(&row.scenario),
            tags(&row.spec)
        );
        for c in 0..m.clients.len() {
            match cell(&row.cells, c) {
                None => {
                    let _ = write!(
                        out,
                        "<td class=\"cell s-missing\"><span class=\"badge\">{MISSING_LABEL}</span>\
                         <span class=\"why\">{MISSING_REASON}</span></td>"
                    );
                }
                Some(x) => {
                    let _ = write!(out, "<td class=\"cell {}\">", class(&x.status));
                    if has_section(x) {
                        let _ = write!(
                            out,
                            "<a class=\"badge\" href=\"#{}\">{}</a>",
                            cell_id(r, c),
                            xml(x.status.label())
                        );
                    } else {
                        let _ = write!(
                            out,
                            "<span class=\"badge\">{}</span>",
                            xml(x.status.label())
                        );
                    }
                    if x.status != CellStatus::Pass {
                        let _ = write!(
                            out,
                            "<span class=\"why\" title=\"{}\">{}</span>",
                            xml(&x.detail),
                            xml(&reason(x, 70))
                        );
                    }
                    out.push_str("</td>");
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    legend(&mut out);

    // One section per scenario, one collapsible run per cell.
    out.push_str("<h2>Runs</h2>\n");
    for (r, row) in m.rows.iter().enumerate() {
        let _ = write!(
            out,
            "<section class=\"scenario\" id=\"s{r}\">\n<h3><code>{}</code> {}</h3>\n",
            xml(&row.scenario),
            tags(&row.spec)
        );
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
            run_section(&mut out, x, &client.name, &cell_id(r, c));
        }
        out.push_str("</section>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn run_section(out: &mut String, x: &MatrixCell, client: &str, id: &str) {
    let _ = write!(
        out,
        "<details class=\"run {}\" id=\"{id}\"{}>\n<summary><span class=\"badge\">{}</span> <b>{}</b>",
        class(&x.status),
        if x.status.is_failure() { " open" } else { "" },
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
    match &x.timeline {
        Some(t) => {
            let _ = write!(out, "<div class=\"tl\">\n{}</div>\n", timeline_svg(t));
        }
        None => out.push_str("<p class=\"none\">no timeline recorded</p>\n"),
    }
    out.push_str("</div>\n</details>\n");
}

/// A cell's one-line reason for the table.
fn reason(x: &MatrixCell, max: usize) -> String {
    let s = short(&x.detail, max);
    if s.is_empty() {
        "(no reason recorded)".to_string()
    } else {
        s
    }
}

fn tags(spec: &[String]) -> String {
    spec.iter()
        .map(|t| format!("<span class=\"tag\">{}</span>", xml(t)))
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
    out.push_str("</p>\n<p class=\"legend\">Timelines: ");
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
         Hover an event for its full timeline line.</p>\n",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{ClientColumn, MatrixRow};
    use crate::matrix_sample::{sample_matrix, well_formed};

    /// The `<details>` section of a cell, if any.
    fn section<'a>(html: &'a str, id: &str) -> Option<&'a str> {
        let at = html.find(&format!("\" id=\"{id}\""))?;
        let open = html[..at].rfind("<details")?;
        let end = html[at..].find("</details>")? + at;
        Some(&html[open..end])
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
                if x.status == CellStatus::Pass {
                    continue;
                }
                let s = section(&html, &id).unwrap_or_else(|| panic!("no section {id}"));
                assert!(s.contains(&format!("class=\"run {}\"", class(&x.status))));
                assert!(s.contains(&xml(x.detail.trim_end())), "{id}");
                assert_eq!(s.matches("<svg").count(), x.timeline.is_some() as usize);
                if let Some(t) = &x.timeline {
                    assert!(s.contains(&timeline_svg(t)));
                }
                if let Some(f) = &x.timeline_file {
                    assert!(s.contains(&format!("href=\"{f}\"")));
                }
                assert_eq!(s.contains(" open>"), x.status.is_failure());
                // The table links to it.
                assert!(html.contains(&format!("href=\"#{id}\"")));
            }
        }
        let non_pass = m
            .rows
            .iter()
            .flat_map(|r| &r.cells)
            .filter(|x| x.status != CellStatus::Pass)
            .count();
        let pass_with_run = m
            .rows
            .iter()
            .flat_map(|r| &r.cells)
            .filter(|x| x.status == CellStatus::Pass && has_section(x))
            .count();
        assert_eq!(
            html.matches("<details class=\"run").count(),
            non_pass + pass_with_run
        );
    }

    #[test]
    fn html_is_well_formed_and_deterministic() {
        let html = matrix_html(&sample_matrix());
        assert_eq!(html, matrix_html(&sample_matrix()));
        // The page is written as XHTML-compatible markup apart from the
        // doctype, the void <meta> tags and boolean `open`.
        let body = &html[html.find("<body>").unwrap()..html.find("</body>").unwrap() + 7];
        well_formed(&body.replace(" open>", " open=\"\">")).unwrap();
        // Self-contained: no scripts, no external assets; links go to
        // anchors on the page or to the (relative) text timelines.
        for banned in ["<script", "src=", "<link", "url(", "@import", "https://"] {
            assert!(!html.contains(banned), "{banned}");
        }
        for href in html.split("href=\"").skip(1) {
            assert!(
                href.starts_with('#') || href.starts_with("timelines/"),
                "{}",
                &href[..20]
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
                source: None,
                cells: vec![x],
            }],
        };
        let html = matrix_html(&m);
        assert!(!html.contains(nasty));
        assert!(html.contains("&lt;&amp;&quot;&gt;&#39;"));
        assert!(html.contains("href=\"timelines/%3C%26%22%3E%27.txt\""));
        // The missing cell of `other` is explained.
        assert!(html.contains(MISSING_REASON));
        let body = &html[html.find("<body>").unwrap()..html.find("</body>").unwrap() + 7];
        well_formed(&body.replace(" open>", " open=\"\">")).unwrap();
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
