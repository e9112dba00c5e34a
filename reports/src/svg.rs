//! A run's timeline as a self-contained SVG sequence diagram.
//!
//! One vertical lane per [`TimelineDoc::lanes`] entry, time flowing down.
//! The vertical scale is compressed: every event gets its own row (so many
//! events in the same millisecond never overlap), a change of time adds a
//! little space, and a gap of a second or more is drawn as a break (dotted
//! lanes, its length in the gutter) instead of as empty space. The time is shown in the left
//! gutter whenever it changes.
//!
//! Messages are arrows between lanes (requests blue, ACKs blue dashed,
//! NACKs red, responses green); faults are a red ✕ on their lane; steps are
//! a band across all lanes; connection events, client events and CSDS
//! changes are small labelled marks. Labels are short; every event's full
//! `detail` is its `<title>`, shown on hover.
//!
//! Lanes that events name but `lanes` lacks are appended on the right;
//! client events and CSDS changes on an unknown lane go to the `client`
//! lane. The output depends only on the input: no ids, no randomness, so
//! several diagrams can sit in one HTML page.

use std::fmt::Write as _;

use crate::escape::{short, xml};
use crate::matrix::{DocEvent, DocKind, TimelineDoc};

const MARGIN: i64 = 12;
/// Left gutter holding the times.
const GUTTER: i64 = 76;
const LANE_W: i64 = 210;
const HEAD_H: i64 = 24;
const ROW_H: i64 = 22;
/// Extra space when the time changes by less than [`BREAK_MS`].
const STEP_GAP: i64 = 6;
/// A gap of at least this long is drawn as a break.
const BREAK_MS: u64 = 1000;
const BREAK_H: i64 = 26;
/// Width of one character at the 11px monospace font used for labels.
const CHAR_W: f64 = 6.7;
const MAX_LABEL: usize = 60;
const MAX_LANE_LABEL: usize = 26;

const STYLE: &str = "\
.xtl text{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:11px;fill:#1e293b}\
.xtl .lbl{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}\
.xtl .time{font-size:10px;fill:#64748b}\
.xtl .lane{stroke:#cbd5e1;stroke-width:1.5}\
.xtl .brk rect{fill:#fff}\
.xtl .brk line{stroke:#94a3b8;stroke-width:1.5;stroke-dasharray:2 3}\
.xtl .brk text{font-style:italic;fill:#64748b}\
.xtl .head rect{fill:#1e293b}\
.xtl .head text{fill:#fff;font-weight:bold}\
.xtl .hit{fill:transparent}\
.xtl .ev:hover .hit{fill:#f1f5f9}\
.xtl .ev line{stroke:currentColor;stroke-width:1.5}\
.xtl .ev .fill{fill:currentColor}\
.xtl .ev .open{fill:#fff;stroke:currentColor;stroke-width:1.5}\
.xtl .ev text{fill:currentColor}\
.xtl .k-req{color:#2563eb}\
.xtl .k-ack{color:#2563eb}\
.xtl .k-ack line{stroke-dasharray:5 3}\
.xtl .k-nack{color:#dc2626}\
.xtl .k-nack line{stroke-width:2}\
.xtl .k-resp{color:#059669}\
.xtl .k-fault{color:#dc2626}\
.xtl .k-fault text{font-weight:bold}\
.xtl .k-fault line{stroke-width:2.5}\
.xtl .k-conn{color:#64748b}\
.xtl .k-step{color:#334155}\
.xtl .k-step rect.band{fill:#e2e8f0}\
.xtl .k-step text{font-weight:bold}\
.xtl .k-client{color:#7c3aed}\
.xtl .k-csds{color:#0e7490}";

/// How one event is drawn.
enum Shape {
    Arrow { from: usize, to: usize },
    Band,
    Mark { lane: usize },
}

struct Row<'a> {
    ev: &'a DocEvent,
    shape: Shape,
    label: String,
    /// Top of the row.
    y: i64,
    /// Whether the gutter shows this row's time.
    show_time: bool,
}

struct Break {
    y: i64,
    ms: u64,
}

/// Renders `doc` as a standalone SVG document (also fit to be inlined in
/// HTML).
pub fn timeline_svg(doc: &TimelineDoc) -> String {
    let lanes = lanes_of(doc);
    let client = lanes
        .iter()
        .position(|l| l == "client")
        .unwrap_or(lanes.len().saturating_sub(1));
    let lane_of = |name: &str| lanes.iter().position(|l| l == name);

    // Events in time order; events at the same time keep their order.
    let mut events: Vec<&DocEvent> = doc.events.iter().collect();
    events.sort_by_key(|e| e.at_ms);

    // Vertical layout.
    let top = MARGIN + HEAD_H + 8;
    let mut y = top;
    let mut rows = Vec::with_capacity(events.len());
    let mut breaks = Vec::new();
    let mut prev: Option<u64> = None;
    for ev in events {
        let show_time = match prev {
            None => true,
            Some(p) if ev.at_ms == p => false,
            Some(p) if ev.at_ms - p >= BREAK_MS => {
                breaks.push(Break {
                    y,
                    ms: ev.at_ms - p,
                });
                y += BREAK_H;
                true
            }
            Some(_) => {
                y += STEP_GAP;
                true
            }
        };
        prev = Some(ev.at_ms);
        let own = lane_of(&ev.lane);
        let shape = match ev.kind {
            DocKind::Step => Shape::Band,
            DocKind::Request | DocKind::Ack | DocKind::Nack | DocKind::Response => {
                let to = ev.to_lane.as_deref().and_then(lane_of);
                match (own, to) {
                    (Some(from), Some(to)) if from != to => Shape::Arrow { from, to },
                    _ => Shape::Mark {
                        lane: own.unwrap_or(client),
                    },
                }
            }
            DocKind::ClientEvent | DocKind::Csds => Shape::Mark {
                lane: own.unwrap_or(client),
            },
            DocKind::Fault | DocKind::Connection => Shape::Mark {
                lane: own.unwrap_or(client),
            },
        };
        rows.push(Row {
            ev,
            shape,
            label: label_of(ev),
            y,
            show_time,
        });
        y += ROW_H;
    }
    if rows.is_empty() {
        y += ROW_H;
    }
    let bottom = y + 4;
    let height = bottom + MARGIN;

    // Horizontal extent: lanes, and every label's right end.
    let lanes_right = GUTTER + LANE_W * lanes.len().max(1) as i64;
    let mut right = lanes_right;
    for r in &rows {
        let w = text_width(&r.label);
        let end = match r.shape {
            Shape::Arrow { from, to } => (lane_x(from) + lane_x(to)) / 2 + w / 2 + 1,
            Shape::Band => GUTTER + 8 + w,
            Shape::Mark { lane } => lane_x(lane) + 10 + w,
        };
        right = right.max(end);
    }
    let width = right + MARGIN;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"xtl\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\">"
    );
    let _ = writeln!(
        out,
        "<title>{}</title>",
        xml(&format!(
            "Timeline: {} events on lanes {}",
            rows.len(),
            lanes.join(", ")
        ))
    );
    let _ = writeln!(out, "<style>{STYLE}</style>");
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#fff\"/>"
    );

    // Lanes, with their heads.
    for i in 0..lanes.len() {
        let x = lane_x(i);
        let _ = writeln!(
            out,
            "<line class=\"lane\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{bottom}\"/>",
            MARGIN + HEAD_H
        );
    }
    for b in &breaks {
        let _ = write!(
            out,
            "<g class=\"brk\"><rect x=\"{GUTTER}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            b.y + 3,
            lanes_right - GUTTER,
            BREAK_H - 6
        );
        for i in 0..lanes.len() {
            let x = lane_x(i);
            let _ = write!(
                out,
                "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>",
                b.y + 3,
                b.y + BREAK_H - 3
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text></g>",
            GUTTER - 10,
            b.y + BREAK_H / 2 + 4,
            xml(&format!("+{}", duration(b.ms)))
        );
    }
    for (i, name) in lanes.iter().enumerate() {
        let x = lane_x(i);
        let _ = writeln!(
            out,
            "<g class=\"head\"><title>{}</title><rect x=\"{}\" y=\"{MARGIN}\" width=\"{}\" \
             height=\"{HEAD_H}\" rx=\"4\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>",
            xml(name),
            x - (LANE_W - 30) / 2,
            LANE_W - 30,
            MARGIN + HEAD_H / 2 + 4,
            xml(&short(name, MAX_LANE_LABEL))
        );
    }

    // Events.
    for r in &rows {
        if r.show_time {
            let _ = writeln!(
                out,
                "<text class=\"time\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                GUTTER - 10,
                r.y + 15,
                seconds(r.ev.at_ms)
            );
        }
        let title = if r.ev.detail.trim().is_empty() {
            format!("{} {}", seconds(r.ev.at_ms), r.label)
        } else {
            r.ev.detail.trim().to_string()
        };
        let _ = write!(
            out,
            "<g class=\"ev {}\"><title>{}</title><rect class=\"hit\" x=\"{GUTTER}\" y=\"{}\" \
             width=\"{}\" height=\"{ROW_H}\"/>",
            kind_class(r.ev.kind),
            xml(&title),
            r.y,
            right - GUTTER
        );
        let label = xml(&r.label);
        match r.shape {
            Shape::Arrow { from, to } => {
                let (x1, x2) = (lane_x(from), lane_x(to));
                let s = if x2 > x1 { 1 } else { -1 };
                let ly = r.y + 17;
                let _ = write!(
                    out,
                    "<line x1=\"{x1}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\"/>\
                     <polygon class=\"fill\" points=\"{x2},{ly} {},{} {},{}\"/>\
                     <text class=\"lbl\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
                    x2 - s * 8,
                    x2 - s * 9,
                    ly - 4,
                    x2 - s * 9,
                    ly + 4,
                    (x1 + x2) / 2,
                    r.y + 12
                );
            }
            Shape::Band => {
                let _ = write!(
                    out,
                    "<rect class=\"band\" x=\"{GUTTER}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\"/>\
                     <text x=\"{}\" y=\"{}\">{label}</text>",
                    r.y + 2,
                    lanes_right - GUTTER,
                    ROW_H - 4,
                    GUTTER + 8,
                    r.y + 15
                );
            }
            Shape::Mark { lane } => {
                let (x, cy) = (lane_x(lane), r.y + 11);
                out.push_str(&mark(r.ev.kind, x, cy));
                let _ = write!(
                    out,
                    "<text class=\"lbl\" x=\"{}\" y=\"{}\">{label}</text>",
                    x + 10,
                    cy + 4
                );
            }
        }
        out.push_str("</g>\n");
    }
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "<text class=\"time\" x=\"{}\" y=\"{}\">(no events)</text>",
            GUTTER + 8,
            top + 15
        );
    }
    out.push_str("</svg>\n");
    out
}

/// `doc.lanes`, then lanes events name that it lacks (in order of first
/// use). Steps name no lane; client events and CSDS changes on an unknown
/// lane are drawn on the client lane.
fn lanes_of(doc: &TimelineDoc) -> Vec<String> {
    let mut lanes = doc.lanes.clone();
    if lanes.is_empty() {
        lanes.push("client".to_string());
    }
    for ev in &doc.events {
        let mut names = vec![];
        match ev.kind {
            DocKind::Step | DocKind::ClientEvent | DocKind::Csds => {}
            _ => {
                names.push(ev.lane.as_str());
                names.extend(ev.to_lane.as_deref());
            }
        }
        for n in names {
            if !n.is_empty() && !lanes.iter().any(|l| l == n) {
                lanes.push(n.to_string());
            }
        }
    }
    lanes
}

fn lane_x(i: usize) -> i64 {
    GUTTER + LANE_W * i as i64 + LANE_W / 2
}

fn text_width(s: &str) -> i64 {
    (s.chars().count() as f64 * CHAR_W).ceil() as i64
}

fn label_of(ev: &DocEvent) -> String {
    let text = if ev.label.trim().is_empty() {
        &ev.detail
    } else {
        &ev.label
    };
    let s = short(text, MAX_LABEL);
    if s.is_empty() {
        kind_class(ev.kind).trim_start_matches("k-").to_string()
    } else {
        s
    }
}

fn kind_class(kind: DocKind) -> &'static str {
    match kind {
        DocKind::Request => "k-req",
        DocKind::Ack => "k-ack",
        DocKind::Nack => "k-nack",
        DocKind::Response => "k-resp",
        DocKind::Fault => "k-fault",
        DocKind::Connection => "k-conn",
        DocKind::Step => "k-step",
        DocKind::ClientEvent => "k-client",
        DocKind::Csds => "k-csds",
    }
}

/// The symbol of a mark centred on (`x`, `y`).
fn mark(kind: DocKind, x: i64, y: i64) -> String {
    match kind {
        DocKind::Fault => format!(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            x - 5,
            y - 5,
            x + 5,
            y + 5,
            x - 5,
            y + 5,
            x + 5,
            y - 5
        ),
        DocKind::ClientEvent => format!(
            "<rect class=\"fill\" x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" rx=\"1\"/>",
            x - 4,
            y - 4
        ),
        DocKind::Csds => format!(
            "<polygon class=\"open\" points=\"{x},{} {},{y} {x},{} {},{y}\"/>",
            y - 5,
            x + 5,
            y + 5,
            x - 5
        ),
        DocKind::Connection => format!("<circle class=\"open\" cx=\"{x}\" cy=\"{y}\" r=\"3.5\"/>"),
        _ => format!("<circle class=\"fill\" cx=\"{x}\" cy=\"{y}\" r=\"3.5\"/>"),
    }
}

/// `1.027s`, as the text timeline writes times.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// A gap's length: `15s`, `1.027s`, `2m 5s`.
fn duration(ms: u64) -> String {
    let (s, rest) = (ms / 1000, ms % 1000);
    if s >= 60 && rest == 0 {
        match s % 60 {
            0 => format!("{}m", s / 60),
            r => format!("{}m {r}s", s / 60),
        }
    } else if rest == 0 {
        format!("{s}s")
    } else {
        seconds(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix_sample::{sample_timeline, well_formed};

    #[test]
    fn sample_timeline_svg() {
        let svg = timeline_svg(&sample_timeline());
        well_formed(&svg).unwrap();
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn svg_is_deterministic() {
        assert_eq!(
            timeline_svg(&sample_timeline()),
            timeline_svg(&sample_timeline())
        );
    }

    #[test]
    fn svg_escapes_all_text() {
        let nasty = "<&\">'";
        let doc = TimelineDoc {
            lanes: vec![nasty.into(), "client".into()],
            events: vec![
                DocEvent {
                    at_ms: 0,
                    lane: "client".into(),
                    to_lane: Some(nasty.into()),
                    kind: DocKind::Request,
                    label: format!("CDS [{nasty}]"),
                    detail: format!("detail {nasty}\u{0}"),
                },
                DocEvent {
                    at_ms: 1,
                    lane: nasty.into(),
                    to_lane: None,
                    kind: DocKind::Fault,
                    label: nasty.into(),
                    detail: String::new(),
                },
                DocEvent {
                    at_ms: 2,
                    lane: "step".into(),
                    to_lane: None,
                    kind: DocKind::Step,
                    label: nasty.into(),
                    detail: nasty.into(),
                },
            ],
        };
        let svg = timeline_svg(&doc);
        well_formed(&svg).unwrap();
        assert!(!svg.contains(nasty));
        assert!(svg.contains("&lt;&amp;&quot;&gt;&#39;"));
        assert!(!svg.contains('\u{0}'));
    }

    #[test]
    fn empty_and_odd_timelines_render() {
        for doc in [
            TimelineDoc::default(),
            TimelineDoc {
                lanes: vec!["primary".into()],
                events: vec![
                    // A message to an unknown lane adds the lane; one to itself is a mark.
                    DocEvent {
                        at_ms: 5,
                        lane: "primary".into(),
                        to_lane: Some("elsewhere".into()),
                        kind: DocKind::Response,
                        label: String::new(),
                        detail: String::new(),
                    },
                    DocEvent {
                        at_ms: 2,
                        lane: "primary".into(),
                        to_lane: Some("primary".into()),
                        kind: DocKind::Ack,
                        label: "é".repeat(500),
                        detail: "x".into(),
                    },
                    DocEvent {
                        at_ms: u64::MAX,
                        lane: "csds".into(),
                        to_lane: None,
                        kind: DocKind::Csds,
                        label: "late".into(),
                        detail: String::new(),
                    },
                ],
            },
        ] {
            let svg = timeline_svg(&doc);
            well_formed(&svg).unwrap();
        }
    }

    #[test]
    fn unknown_lanes_are_appended_and_csds_goes_to_client() {
        let doc = TimelineDoc {
            lanes: vec!["primary".into(), "client".into()],
            events: vec![
                DocEvent {
                    at_ms: 0,
                    lane: "csds".into(),
                    to_lane: None,
                    kind: DocKind::Csds,
                    label: "c1 ACKED".into(),
                    detail: String::new(),
                },
                DocEvent {
                    at_ms: 0,
                    lane: "fallback".into(),
                    to_lane: Some("client".into()),
                    kind: DocKind::Response,
                    label: "r".into(),
                    detail: String::new(),
                },
            ],
        };
        assert_eq!(lanes_of(&doc), ["primary", "client", "fallback"]);
        let svg = timeline_svg(&doc);
        // The CSDS mark sits on the client lane (the second lane).
        assert!(svg.contains(&format!("<polygon class=\"open\" points=\"{},", lane_x(1))));
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(seconds(15_000), "15.000s");
        assert_eq!(seconds(1_027), "1.027s");
        assert_eq!(duration(15_000), "15s");
        assert_eq!(duration(1_027), "1.027s");
        assert_eq!(duration(125_000), "2m 5s");
        assert_eq!(duration(120_000), "2m");
    }
}
