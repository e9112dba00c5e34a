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
//! What a verdict points at ([`TimelineMark`], red for a failure, amber for
//! a divergence) is drawn over that: the expectation's window as a shaded
//! band across all lanes between a "window opens" and a "window closes"
//! row (their times in the gutter), the event outlined with a ring on it,
//! and a row under it saying what was expected. These rows take their own
//! place in time order, so they never cover an event, and a window that
//! runs past the last event (nothing came) ends where it ends, after a
//! break.
//!
//! Lanes that events name but `lanes` lacks are appended on the right;
//! client events and CSDS changes on an unknown lane go to the `client`
//! lane. The output depends only on the input: no ids, no randomness, so
//! several diagrams can sit in one HTML page.

use std::fmt::Write as _;

use crate::escape::{short, xml};
use crate::matrix::{DocEvent, DocKind, MarkKind, TimelineDoc, TimelineMark};

const MARGIN: i64 = 12;
/// Left gutter holding the times.
const GUTTER: i64 = 76;
const LANE_W: i64 = 210;
const HEAD_H: i64 = 24;
const ROW_H: i64 = 22;
/// Height of a "window opens/closes" row.
const EDGE_H: i64 = 18;
/// Height of the "expected: ..." row.
const NOTE_H: i64 = 20;
/// Extra space when the time changes by less than [`BREAK_MS`].
const STEP_GAP: i64 = 6;
/// A gap of at least this long is drawn as a break.
const BREAK_MS: u64 = 1000;
const BREAK_H: i64 = 26;
/// Width of one character at the 11px monospace font used for labels.
const CHAR_W: f64 = 6.7;
const MAX_LABEL: usize = 60;
const MAX_LANE_LABEL: usize = 26;
/// The "expected: ..." text; the whole of it is the row's `<title>`.
const MAX_NOTE: usize = 110;

/// The picture's style, every rule scoped to `.xtl`: a standalone SVG
/// carries it; a page that inlines several pictures carries it once.
pub(crate) const STYLE: &str = "\
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
.xtl .k-csds{color:#0e7490}\
.xtl .mk-failing{color:#dc2626}\
.xtl .mk-divergent{color:#d97706}\
.xtl .mk-band{fill:currentColor;fill-opacity:.1}\
.xtl .mk-edge line{stroke:currentColor;stroke-width:1.5;stroke-dasharray:6 3}\
.xtl .mk text{fill:currentColor;font-weight:bold}\
.xtl .mk-row{fill:none;stroke:currentColor;stroke-width:2}\
.xtl .mk-ring{fill:none;stroke:currentColor;stroke-width:2.5}";

/// How one event is drawn.
enum Shape {
    Arrow { from: usize, to: usize },
    Band,
    Mark { lane: usize },
}

/// What a row of the diagram holds.
enum What<'a> {
    Event {
        ev: &'a DocEvent,
        shape: Shape,
        label: String,
        /// The event the mark points at.
        marked: bool,
    },
    /// The expectation's window opens (`true`) or closes here.
    Edge { opens: bool },
    /// What was expected.
    Note,
}

struct Row<'a> {
    what: What<'a>,
    at_ms: u64,
    /// Top of the row.
    y: i64,
    /// Whether the gutter shows this row's time.
    show_time: bool,
}

struct Break {
    y: i64,
    ms: u64,
}

/// Where each row goes, before drawing.
struct Layout<'a> {
    rows: Vec<Row<'a>>,
    breaks: Vec<Break>,
    /// The window band's top and bottom, when the mark has a window.
    band: Option<(i64, i64)>,
    bottom: i64,
}

/// Renders `doc` as a standalone SVG document (also fit to be inlined in
/// HTML).
pub fn timeline_svg(doc: &TimelineDoc) -> String {
    timeline_svg_marked(doc, None)
}

/// The middle of a row of `height` starting at `y`.
fn mid(y: i64, height: i64) -> i64 {
    y + height / 2
}

fn lay_out<'a>(doc: &'a TimelineDoc, lanes: &[String], mark: Option<&TimelineMark>) -> Layout<'a> {
    let client = lanes
        .iter()
        .position(|l| l == "client")
        .unwrap_or(lanes.len().saturating_sub(1));
    let lane_of = |name: &str| lanes.iter().position(|l| l == name);

    // Rows in time order; events at the same time keep their order. The
    // window's edges go around the events inside it (an event at either
    // bound is inside), the note right under the event it explains, or
    // under the window when there is no event, or on top when there is
    // neither.
    enum Slot {
        Event(usize),
        Edge(bool, u64),
        Note,
    }
    let mut order: Vec<usize> = (0..doc.events.len()).collect();
    order.sort_by_key(|&i| doc.events[i].at_ms);
    let window = mark
        .and_then(|m| m.window_ms)
        .map(|(a, b)| (a.min(b), a.max(b)));
    let marked = mark.and_then(|m| m.event).filter(|&i| i < doc.events.len());
    let note_after_window = mark.is_some() && marked.is_none() && window.is_some();
    let mut slots = Vec::with_capacity(order.len() + 3);
    if mark.is_some() && marked.is_none() && window.is_none() {
        slots.push(Slot::Note);
    }
    let (mut opened, mut closed) = (false, false);
    for i in order {
        let at = doc.events[i].at_ms;
        if let Some((start, end)) = window {
            if !opened && at >= start {
                slots.push(Slot::Edge(true, start));
                opened = true;
            }
            if opened && !closed && at > end {
                slots.push(Slot::Edge(false, end));
                closed = true;
                if note_after_window {
                    slots.push(Slot::Note);
                }
            }
        }
        slots.push(Slot::Event(i));
        if marked == Some(i) {
            slots.push(Slot::Note);
        }
    }
    if let Some((start, end)) = window {
        if !opened {
            slots.push(Slot::Edge(true, start));
        }
        if !closed {
            slots.push(Slot::Edge(false, end));
            if note_after_window {
                slots.push(Slot::Note);
            }
        }
    }

    // Vertical layout.
    let mut y = MARGIN + HEAD_H + 8;
    let mut rows = Vec::with_capacity(slots.len());
    let mut breaks = Vec::new();
    let (mut band_top, mut band_bottom) = (None, None);
    let mut prev: Option<u64> = None;
    for slot in slots {
        let at_ms = match slot {
            Slot::Event(i) => doc.events[i].at_ms,
            Slot::Edge(_, at) => at,
            // A note belongs to the row above: no time of its own.
            Slot::Note => prev.unwrap_or(0),
        };
        let show_time = match (&slot, prev) {
            (Slot::Note, _) => false,
            (Slot::Edge(..), None) => true,
            (_, None) => true,
            (_, Some(p)) if at_ms == p => matches!(slot, Slot::Edge(..)),
            (_, Some(p)) if at_ms - p >= BREAK_MS => {
                breaks.push(Break { y, ms: at_ms - p });
                y += BREAK_H;
                true
            }
            (_, Some(_)) => {
                y += STEP_GAP;
                true
            }
        };
        prev = Some(at_ms);
        let (what, height) = match slot {
            Slot::Event(i) => {
                let ev = &doc.events[i];
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
                    DocKind::ClientEvent | DocKind::Csds | DocKind::Fault | DocKind::Connection => {
                        Shape::Mark {
                            lane: own.unwrap_or(client),
                        }
                    }
                };
                let what = What::Event {
                    ev,
                    shape,
                    label: label_of(ev),
                    marked: marked == Some(i),
                };
                (what, ROW_H)
            }
            Slot::Edge(opens, _) => {
                let line = mid(y, EDGE_H);
                if opens {
                    band_top = Some(line);
                } else {
                    band_bottom = Some(line);
                }
                (What::Edge { opens }, EDGE_H)
            }
            Slot::Note => (What::Note, NOTE_H),
        };
        rows.push(Row {
            what,
            at_ms,
            y,
            show_time,
        });
        y += height;
    }
    if rows.is_empty() {
        y += ROW_H;
    }
    Layout {
        rows,
        breaks,
        band: band_top.zip(band_bottom),
        bottom: y + 4,
    }
}

/// The text of the note row.
fn note_text(mark: &TimelineMark) -> String {
    let expected = mark.expected.trim();
    let expected = if expected.is_empty() {
        "(not recorded)"
    } else {
        expected
    };
    match mark.kind {
        MarkKind::Failing => format!("expected: {expected}"),
        MarkKind::Divergent => format!("divergent alternative: {expected}"),
    }
}

fn mark_class(kind: MarkKind) -> &'static str {
    match kind {
        MarkKind::Failing => "mk-failing",
        MarkKind::Divergent => "mk-divergent",
    }
}

/// Renders `doc` with what `mark` points at drawn over it (see the module
/// docs); with no mark, as [`timeline_svg`].
pub fn timeline_svg_marked(doc: &TimelineDoc, mark: Option<&TimelineMark>) -> String {
    render(doc, mark, true).text
}

/// As [`timeline_svg_marked`], without the style: for a page that holds
/// [`STYLE`] once for all its pictures.
pub(crate) fn timeline_svg_inline(doc: &TimelineDoc, mark: Option<&TimelineMark>) -> Svg {
    render(doc, mark, false)
}

/// As [`timeline_svg_marked`], with its size: a picture in a file of its
/// own, framed by a page that must know how large it is.
pub(crate) fn timeline_svg_file(doc: &TimelineDoc, mark: Option<&TimelineMark>) -> Svg {
    render(doc, mark, true)
}

/// A rendered picture and its size in pixels.
pub(crate) struct Svg {
    pub text: String,
    pub width: i64,
    pub height: i64,
}

fn render(doc: &TimelineDoc, mark: Option<&TimelineMark>, standalone: bool) -> Svg {
    let lanes = lanes_of(doc);
    let layout = lay_out(doc, &lanes, mark);
    let rows = &layout.rows;
    let bottom = layout.bottom;
    let height = bottom + MARGIN;
    let note = mark.map(note_text);

    // Horizontal extent: lanes, and every label's right end.
    let lanes_right = GUTTER + LANE_W * lanes.len().max(1) as i64;
    let mut right = lanes_right;
    for r in rows {
        let end = match &r.what {
            What::Event { shape, label, .. } => {
                let w = text_width(label);
                match *shape {
                    Shape::Arrow { from, to } => (lane_x(from) + lane_x(to)) / 2 + w / 2 + 1,
                    Shape::Band => GUTTER + 8 + w,
                    Shape::Mark { lane } => lane_x(lane) + 10 + w,
                }
            }
            What::Note => GUTTER + 8 + text_width(&short(note.as_deref().unwrap_or(""), MAX_NOTE)),
            What::Edge { .. } => lanes_right,
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
    let events = rows
        .iter()
        .filter(|r| matches!(r.what, What::Event { .. }))
        .count();
    let mut title = format!("Timeline: {events} events on lanes {}", lanes.join(", "));
    if let (Some(m), Some(note)) = (mark, &note) {
        if let Some((start, end)) = m.window_ms {
            let _ = write!(
                title,
                "; window {}–{}",
                seconds(start.min(end)),
                seconds(start.max(end))
            );
        }
        let _ = write!(title, "; {note}");
    }
    let _ = writeln!(out, "<title>{}</title>", xml(&title));
    if standalone {
        let _ = writeln!(out, "<style>{STYLE}</style>");
    }
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
    for b in &layout.breaks {
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
    // The window, translucent over lanes and breaks, under the events.
    if let (Some(m), Some((top, bot))) = (mark, layout.band) {
        let (start, end) = m.window_ms.map_or((0, 0), |(a, b)| (a.min(b), a.max(b)));
        let _ = writeln!(
            out,
            "<g class=\"mk {}\"><title>{}</title><rect class=\"mk-band\" x=\"{GUTTER}\" y=\"{top}\" \
             width=\"{}\" height=\"{}\"/></g>",
            mark_class(m.kind),
            xml(&format!(
                "the expectation's window: {} to {}",
                seconds(start),
                seconds(end)
            )),
            lanes_right - GUTTER,
            bot - top
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

    // Events, and the mark's rows.
    let mark_kind = mark.map_or("", |m| mark_class(m.kind));
    for r in rows {
        if r.show_time {
            let class = if matches!(r.what, What::Edge { .. }) {
                format!("time mk {mark_kind}")
            } else {
                "time".to_string()
            };
            let baseline = match r.what {
                What::Edge { .. } => mid(r.y, EDGE_H) + 4,
                _ => r.y + 15,
            };
            let _ = writeln!(
                out,
                "<text class=\"{class}\" x=\"{}\" y=\"{baseline}\" text-anchor=\"end\">{}</text>",
                GUTTER - 10,
                seconds(r.at_ms)
            );
        }
        match &r.what {
            What::Event {
                ev,
                shape,
                label,
                marked,
            } => {
                if *marked {
                    let _ = write!(
                        out,
                        "<g class=\"mk {mark_kind}\"><rect class=\"mk-row\" x=\"{}\" y=\"{}\" \
                         width=\"{}\" height=\"{}\" rx=\"5\"/></g>",
                        GUTTER + 2,
                        r.y + 1,
                        // Past the longest label: the outline must not
                        // cross the marked event's text.
                        right - GUTTER + 2,
                        ROW_H - 2
                    );
                }
                event(&mut out, r, ev, shape, label, right, lanes_right);
                if *marked {
                    let (cx, cy) = anchor(shape, r.y);
                    let _ = write!(
                        out,
                        "<g class=\"mk {mark_kind}\"><circle class=\"mk-ring\" cx=\"{cx}\" \
                         cy=\"{cy}\" r=\"9\"/></g>"
                    );
                }
                out.push('\n');
            }
            What::Edge { opens } => {
                let line = mid(r.y, EDGE_H);
                let _ = writeln!(
                    out,
                    "<g class=\"mk mk-edge {mark_kind}\"><line x1=\"{GUTTER}\" y1=\"{line}\" \
                     x2=\"{lanes_right}\" y2=\"{line}\"/><text class=\"lbl\" x=\"{}\" y=\"{}\" \
                     text-anchor=\"end\">{}</text></g>",
                    lanes_right - 6,
                    line - 3,
                    if *opens {
                        "window opens"
                    } else {
                        "window closes"
                    }
                );
            }
            What::Note => {
                let text = note.as_deref().unwrap_or("");
                let _ = writeln!(
                    out,
                    "<g class=\"mk mk-note {mark_kind}\"><title>{}</title><text x=\"{}\" \
                     y=\"{}\">{}</text></g>",
                    xml(text),
                    GUTTER + 8,
                    r.y + 14,
                    xml(&short(text, MAX_NOTE))
                );
            }
        }
    }
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "<text class=\"time\" x=\"{}\" y=\"{}\">(no events)</text>",
            GUTTER + 8,
            MARGIN + HEAD_H + 8 + 15
        );
    }
    out.push_str("</svg>\n");
    Svg {
        text: out,
        width,
        height,
    }
}

/// Where the ring of a marked event goes: the arrow's head, the mark, or
/// the step band's left end.
fn anchor(shape: &Shape, y: i64) -> (i64, i64) {
    match *shape {
        Shape::Arrow { to, .. } => (lane_x(to), y + 17),
        Shape::Mark { lane } => (lane_x(lane), y + 11),
        Shape::Band => (GUTTER + 12, y + 11),
    }
}

/// One event's group (not newline-terminated: a ring may follow).
fn event(
    out: &mut String,
    r: &Row,
    ev: &DocEvent,
    shape: &Shape,
    label: &str,
    right: i64,
    lanes_right: i64,
) {
    let title = if ev.detail.trim().is_empty() {
        format!("{} {}", seconds(ev.at_ms), label)
    } else {
        ev.detail.trim().to_string()
    };
    let _ = write!(
        out,
        "<g class=\"ev {}\"><title>{}</title><rect class=\"hit\" x=\"{GUTTER}\" y=\"{}\" \
         width=\"{}\" height=\"{ROW_H}\"/>",
        kind_class(ev.kind),
        xml(&title),
        r.y,
        right - GUTTER
    );
    let label = xml(label);
    match *shape {
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
            out.push_str(&mark(ev.kind, x, cy));
            let _ = write!(
                out,
                "<text class=\"lbl\" x=\"{}\" y=\"{}\">{label}</text>",
                x + 10,
                cy + 4
            );
        }
    }
    out.push_str("</g>");
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
    use crate::matrix_sample::{
        sample_divergent_mark, sample_failing_mark, sample_timeline, well_formed,
    };

    /// The numbers of attribute `name` on every element of `class` in `svg`.
    fn attr_of(svg: &str, class: &str, name: &str) -> Vec<i64> {
        svg.split(&format!("class=\"{class}\""))
            .skip(1)
            .map(|rest| {
                let tag = &rest[..rest.find('>').unwrap()];
                let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
                tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
            })
            .collect()
    }

    fn event(at_ms: u64, lane: &str, kind: DocKind, label: &str) -> DocEvent {
        DocEvent {
            at_ms,
            lane: lane.into(),
            to_lane: None,
            kind,
            label: label.into(),
            detail: String::new(),
        }
    }

    #[test]
    fn sample_timeline_svg() {
        let svg = timeline_svg(&sample_timeline());
        well_formed(&svg).unwrap();
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn marked_sample_timeline_svg() {
        let svg = timeline_svg_marked(&sample_timeline(), Some(&sample_failing_mark()));
        well_formed(&svg).unwrap();
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn no_mark_draws_nothing_of_one() {
        let doc = sample_timeline();
        let svg = timeline_svg_marked(&doc, None);
        assert_eq!(svg, timeline_svg(&doc));
        assert!(!svg.contains("class=\"mk"));
        let marked = timeline_svg_marked(&doc, Some(&sample_failing_mark()));
        assert!(marked.contains("class=\"mk"));
    }

    /// The band starts above the first event inside the window and ends
    /// below the last, and no event outside the window is under it.
    #[test]
    fn window_band_covers_exactly_the_events_inside_it() {
        let doc = sample_timeline();
        let lanes = lanes_of(&doc);
        for (start, end) in [(15_000, 16_000), (0, 0), (1, 15_001), (15_002, 15_002)] {
            let mark = TimelineMark {
                window_ms: Some((start, end)),
                ..sample_failing_mark()
            };
            let layout = lay_out(&doc, &lanes, Some(&mark));
            let (top, bottom) = layout.band.unwrap();
            let mut inside = 0;
            for r in &layout.rows {
                if !matches!(r.what, What::Event { .. }) {
                    continue;
                }
                if (start..=end).contains(&r.at_ms) {
                    inside += 1;
                    assert!(
                        top <= r.y && r.y + ROW_H <= bottom,
                        "{start}..{end}: {}",
                        r.at_ms
                    );
                } else {
                    assert!(
                        r.y + ROW_H <= top || bottom <= r.y,
                        "{start}..{end}: {}",
                        r.at_ms
                    );
                }
            }
            let expected = doc
                .events
                .iter()
                .filter(|e| (start..=end).contains(&e.at_ms))
                .count();
            assert_eq!(inside, expected, "{start}..{end}");
            // The SVG draws that band, with the window's bounds as times.
            let svg = timeline_svg_marked(&doc, Some(&mark));
            assert_eq!(attr_of(&svg, "mk-band", "y"), [top]);
            assert_eq!(attr_of(&svg, "mk-band", "height"), [bottom - top]);
            assert!(svg.contains(&format!(
                "time mk mk-failing\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                GUTTER - 10,
                top + 4,
                seconds(start)
            )));
            assert!(svg.contains(&format!(">{}</text>", seconds(end))));
        }
    }

    #[test]
    fn marked_event_is_outlined_ringed_and_explained() {
        let doc = sample_timeline();
        let mark = sample_failing_mark();
        let lanes = lanes_of(&doc);
        let layout = lay_out(&doc, &lanes, Some(&mark));
        let at = layout
            .rows
            .iter()
            .position(|r| matches!(r.what, What::Event { marked: true, .. }))
            .unwrap();
        let row = &layout.rows[at];
        let What::Event { ev, .. } = &row.what else {
            unreachable!()
        };
        assert_eq!(*ev, &doc.events[10]);
        assert!(matches!(layout.rows[at + 1].what, What::Note));
        let svg = timeline_svg_marked(&doc, Some(&mark));
        // One outline around the event's row, one ring on its mark (a
        // client event, on the client lane).
        assert_eq!(attr_of(&svg, "mk-row", "y"), [row.y + 1]);
        assert_eq!(attr_of(&svg, "mk-ring", "cx"), [lane_x(1)]);
        assert_eq!(attr_of(&svg, "mk-ring", "cy"), [row.y + 11]);
        assert_eq!(
            svg.matches("<g class=\"mk mk-note mk-failing\">").count(),
            1
        );
        assert!(svg.contains(">expected: watcher event type=CDS name=c1 event=changed</text>"));
        assert!(!svg.contains("mk-divergent\""));
    }

    #[test]
    fn divergent_marks_are_amber_and_say_so() {
        let svg = timeline_svg_marked(&sample_timeline(), Some(&sample_divergent_mark()));
        well_formed(&svg).unwrap();
        assert!(svg.contains("<g class=\"mk mk-note mk-divergent\">"));
        assert!(svg.contains("divergent alternative: request type=CDS kind=nack"));
        assert!(!svg.contains("<g class=\"mk mk-failing"));
        assert!(!svg.contains(">expected: "));
        // The NACK is an arrow to the primary lane: the ring is on its head.
        assert_eq!(attr_of(&svg, "mk-ring", "cx"), [lane_x(0)]);
    }

    /// Nothing came: the window runs past the last event, after a break,
    /// and the note says what was expected under it.
    #[test]
    fn a_window_past_the_end_closes_after_a_break() {
        let doc = TimelineDoc {
            lanes: vec!["primary".into(), "client".into()],
            events: vec![
                event(0, "primary", DocKind::Connection, "opened"),
                event(3, "client", DocKind::ClientEvent, "watcher CDS c1: changed"),
            ],
        };
        let mark = TimelineMark {
            kind: MarkKind::Failing,
            window_ms: Some((0, 15_000)),
            event: None,
            expected: "watcher event type=CDS name=c2".into(),
        };
        let layout = lay_out(&doc, &lanes_of(&doc), Some(&mark));
        let kinds: Vec<&str> = layout
            .rows
            .iter()
            .map(|r| match r.what {
                What::Event { .. } => "event",
                What::Edge { opens: true } => "opens",
                What::Edge { opens: false } => "closes",
                What::Note => "note",
            })
            .collect();
        assert_eq!(kinds, ["opens", "event", "event", "closes", "note"]);
        assert_eq!(layout.breaks.len(), 1);
        assert_eq!(layout.breaks[0].ms, 14_997);
        let svg = timeline_svg_marked(&doc, Some(&mark));
        well_formed(&svg).unwrap();
        assert!(svg.contains(">+14.997s</text>"));
        assert!(svg.contains(">15.000s</text>"));
        assert!(!svg.contains("class=\"mk-ring\"") && !svg.contains("class=\"mk-row\""));
    }

    #[test]
    fn odd_marks_still_draw() {
        let doc = sample_timeline();
        let nasty = "<&\">'";
        // An event index past the end, a reversed window, markup in the text.
        let mark = TimelineMark {
            kind: MarkKind::Failing,
            window_ms: Some((16_000, 15_000)),
            event: Some(999),
            expected: nasty.into(),
        };
        let svg = timeline_svg_marked(&doc, Some(&mark));
        well_formed(&svg).unwrap();
        assert!(!svg.contains("class=\"mk-ring\""));
        assert!(!svg.contains(nasty));
        assert!(svg.contains("expected: &lt;&amp;&quot;&gt;&#39;"));
        assert!(svg.contains("window 15.000s–16.000s"));
        // No window and no event: the note sits on top, before any event.
        let mark = TimelineMark {
            window_ms: None,
            event: None,
            ..sample_failing_mark()
        };
        let layout = lay_out(&doc, &lanes_of(&doc), Some(&mark));
        assert!(matches!(layout.rows[0].what, What::Note));
        assert!(layout.band.is_none());
        let svg = timeline_svg_marked(&doc, Some(&mark));
        assert!(!svg.contains("class=\"mk-band\""));
        assert!(svg.contains(">expected: watcher event"));
        // An empty timeline with a mark.
        let svg = timeline_svg_marked(&TimelineDoc::default(), Some(&sample_failing_mark()));
        well_formed(&svg).unwrap();
        assert!(svg.contains("window opens") && svg.contains("window closes"));
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
