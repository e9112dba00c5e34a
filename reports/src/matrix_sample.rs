//! Test data for the matrix renderers: a sample matrix (2 clients, 4
//! scenarios, every status), a sample timeline (request, response, ACK,
//! NACK, fault, steps, watcher events, CSDS changes, a 15 s gap), and a
//! small XML well-formedness check.

use std::time::Duration;

use crate::matrix::{
    CellStatus, ClientColumn, DocEvent, DocKind, MarkKind, Matrix, MatrixCell, MatrixRow,
    TimelineDoc, TimelineMark,
};

fn ev(
    at_ms: u64,
    lane: &str,
    to: Option<&str>,
    kind: DocKind,
    label: &str,
    line: &str,
) -> DocEvent {
    DocEvent {
        at_ms,
        lane: lane.to_string(),
        to_lane: to.map(str::to_string),
        kind,
        label: label.to_string(),
        detail: format!("{:>3}.{:03}s  {line}", at_ms / 1000, at_ms % 1000),
    }
}

/// One server, the client; every kind of event; a 15 s gap and a 1 s one.
pub(crate) fn sample_timeline() -> TimelineDoc {
    use DocKind::*;
    let p = Some("primary");
    let c = Some("client");
    TimelineDoc {
        lanes: vec!["primary".into(), "client".into()],
        events: vec![
            ev(
                0,
                "step",
                None,
                Step,
                "watch CDS c1",
                "step     == watch CDS c1",
            ),
            ev(
                0,
                "step",
                None,
                Step,
                "watch CDS c2",
                "step     == watch CDS c2",
            ),
            ev(
                0,
                "primary",
                None,
                Connection,
                "[s1] stream opened",
                "primary  [s1] ADS stream opened on connection 1",
            ),
            ev(
                0,
                "client",
                p,
                Request,
                "CDS [c1,c2] (initial)",
                "primary  <- [s1] DiscoveryRequest CDS names=[c1,c2] version=\"\" nonce=\"\" node=\"xds-conformance-client\" (initial)",
            ),
            ev(
                0,
                "client",
                None,
                Csds,
                "CDS c1: ABSENT -> REQUESTED",
                "csds     CDS c1: ABSENT -> REQUESTED",
            ),
            ev(
                0,
                "step",
                None,
                Step,
                "primary: send CDS response",
                "step     == primary: send CDS response",
            ),
            ev(
                0,
                "primary",
                c,
                Response,
                "CDS v=1 n=A [c1,c2]",
                "primary  -> [s1] DiscoveryResponse CDS version=\"1\" nonce=\"A\" resources=[c1,c2]",
            ),
            ev(
                0,
                "client",
                None,
                ClientEvent,
                "watcher CDS c1: changed",
                "client   watcher CDS c1: changed: EDS service=e1 lb=ROUND_ROBIN",
            ),
            ev(
                0,
                "client",
                p,
                Nack,
                "CDS NACK n=A: index 1: c2",
                "primary  <- [s1] DiscoveryRequest CDS names=[c1,c2] version=\"\" nonce=\"A\" (NACK INVALID_ARGUMENT: xDS response validation errors: [resource index 1: c2: INVALID_ARGUMENT: errors validating Cluster resource: [field:lb_policy error:LB policy is not supported]])",
            ),
            ev(
                0,
                "client",
                None,
                Csds,
                "CDS c2: REQUESTED -> NACKED",
                "csds     CDS c2: REQUESTED -> NACKED",
            ),
            ev(
                15_000,
                "client",
                None,
                ClientEvent,
                "watcher CDS c3: does not exist",
                "client   watcher CDS c3: resource does not exist",
            ),
            ev(
                15_000,
                "step",
                None,
                Step,
                "primary: send CDS response",
                "step     == primary: send CDS response",
            ),
            ev(
                15_000,
                "primary",
                c,
                Response,
                "CDS v=2 n=B [c1,c2]",
                "primary  -> [s1] DiscoveryResponse CDS version=\"2\" nonce=\"B\" resources=[c1,c2]",
            ),
            ev(
                15_002,
                "client",
                p,
                Ack,
                "CDS ACK v=2 n=B",
                "primary  <- [s1] DiscoveryRequest CDS names=[c1,c2] version=\"2\" nonce=\"B\" (ACK)",
            ),
            ev(
                15_002,
                "client",
                None,
                Csds,
                "CDS c2: NACKED -> ACKED v=2",
                "csds     CDS c2: NACKED -> ACKED version=\"2\"",
            ),
            ev(
                15_002,
                "step",
                None,
                Step,
                "primary: close streams",
                "step     == primary: close streams",
            ),
            ev(
                15_002,
                "primary",
                None,
                Fault,
                "close streams: UNAVAILABLE",
                "primary  fault: close streams with UNAVAILABLE: rebalancing",
            ),
            ev(
                15_002,
                "primary",
                None,
                Connection,
                "[s1] closed by server",
                "primary  [s1] ADS stream closed by server: UNAVAILABLE: rebalancing",
            ),
            ev(
                16_029,
                "primary",
                None,
                Connection,
                "[s2] stream opened",
                "primary  [s2] ADS stream opened on connection 1",
            ),
        ],
    }
}

/// A failed expectation on [`sample_timeline`]: a watcher event for c1
/// within 1 s of the 15 s mark; the nearest candidate was c3's
/// does-not-exist (event 10).
pub(crate) fn sample_failing_mark() -> TimelineMark {
    TimelineMark {
        kind: MarkKind::Failing,
        window_ms: Some((15_000, 16_000)),
        event: Some(10),
        expected: "watcher event type=CDS name=c1 event=changed".into(),
    }
}

/// A divergent alternative on [`sample_timeline`]: the NACK (event 8)
/// carried the rejected version.
pub(crate) fn sample_divergent_mark() -> TimelineMark {
    TimelineMark {
        kind: MarkKind::Divergent,
        window_ms: Some((0, 0)),
        event: Some(8),
        expected: "request type=CDS kind=nack version=\"1\"".into(),
    }
}

/// Two servers and the client: fallback after the primary goes away.
fn fallback_timeline() -> TimelineDoc {
    use DocKind::*;
    let f = Some("fallback");
    let c = Some("client");
    TimelineDoc {
        lanes: vec!["primary".into(), "fallback".into(), "client".into()],
        events: vec![
            ev(
                0,
                "step",
                None,
                Step,
                "primary: refuse connections",
                "step     == primary: refuse connections",
            ),
            ev(
                0,
                "primary",
                None,
                Fault,
                "refuse connections",
                "primary  fault: refuse connections",
            ),
            ev(
                0,
                "step",
                None,
                Step,
                "watch LDS l1",
                "step     == watch LDS l1",
            ),
            ev(
                0,
                "primary",
                None,
                Connection,
                "connection refused",
                "primary  connection refused",
            ),
            ev(
                0,
                "client",
                None,
                ClientEvent,
                "ADS call to primary failed",
                "client   ADS call to primary:443 ended: UNAVAILABLE: connection refused",
            ),
            ev(
                0,
                "fallback",
                None,
                Connection,
                "[s1] stream opened",
                "fallback [s1] ADS stream opened on connection 1",
            ),
            ev(
                0,
                "client",
                f,
                Request,
                "LDS [l1] (initial)",
                "fallback <- [s1] DiscoveryRequest LDS names=[l1] version=\"\" nonce=\"\" (initial)",
            ),
            ev(
                0,
                "fallback",
                c,
                Response,
                "LDS v=7 n=1 [l1]",
                "fallback -> [s1] DiscoveryResponse LDS version=\"7\" nonce=\"1\" resources=[l1]",
            ),
            ev(
                0,
                "client",
                f,
                Ack,
                "LDS ACK v=7 n=1",
                "fallback <- [s1] DiscoveryRequest LDS names=[l1] version=\"7\" nonce=\"1\" (ACK)",
            ),
            ev(
                3,
                "client",
                None,
                ClientEvent,
                "client exited (signal 6)",
                "client   adapter process exited: signal 6 (SIGABRT)",
            ),
        ],
    }
}

fn cell(status: CellStatus, detail: &str, name: &str, timeline: Option<TimelineDoc>) -> MatrixCell {
    MatrixCell {
        status,
        detail: detail.to_string(),
        timeline_file: Some(format!("timelines/{name}.txt")),
        timeline,
        mark: None,
        virtual_duration: Duration::from_millis(16_029),
        wall_duration: Duration::from_micros(2_500),
        missing: Vec::new(),
    }
}

/// 2 clients × 4 scenarios, covering every status; the failure and the
/// divergence carry marks.
pub(crate) fn sample_matrix() -> Matrix {
    let t = || Some(sample_timeline());
    Matrix {
        title: "xDS client conformance".into(),
        clients: vec![
            ClientColumn {
                name: "reference".into(),
                version: "xds-reference-client 0.1.0".into(),
            },
            ClientColumn {
                name: "grpc-js".into(),
                version: "@grpc/grpc-js 1.12.6".into(),
            },
        ],
        rows: vec![
            MatrixRow {
                scenario: "a27/node-on-the-first-request-of-every-stream".into(),
                spec: vec!["A27".into()],
                description: "The first request of every stream carries the node.".into(),
                source: None,
                cells: vec![
                    cell(CellStatus::Pass, "", "reference/a27__node-on-the-first-request-of-every-stream", t()),
                    cell(CellStatus::Pass, "", "grpc-js/a27__node-on-the-first-request-of-every-stream", None),
                ],
            },
            MatrixRow {
                scenario: "a46/nack-keeps-valid-resources".into(),
                spec: vec!["A46".into()],
                description: "A CDS response with one valid and one invalid Cluster is NACKed once; the valid one is still used.".into(),
                source: None,
                cells: vec![
                    cell(CellStatus::Pass, "", "reference/a46__nack-keeps-valid-resources", t()),
                    MatrixCell {
                        mark: Some(sample_divergent_mark()),
                        ..cell(
                            CellStatus::Divergent,
                            "NACK version_info: sent the rejected version \"1\" (allowed alternative `nack-version: rejected`; the reference sends the last ACKed \"\")",
                            "grpc-js/a46__nack-keeps-valid-resources",
                            t(),
                        )
                    },
                ],
            },
            MatrixRow {
                scenario: "a57/ignore-resource-deletion".into(),
                spec: vec!["A57".into(), "A53".into()],
                description: "With ignore_resource_deletion, a resource missing from a SotW response stays cached.".into(),
                source: None,
                cells: vec![
                    MatrixCell {
                        mark: Some(sample_failing_mark()),
                        ..cell(
                            CellStatus::Fail,
                            "step 7: expected watcher CDS c1 changed within 1s\n  saw instead at 15.000s: watcher CDS c1: resource does not exist\n  (a deleted resource must be kept: server feature `ignore_resource_deletion`)",
                            "reference/a57__ignore-resource-deletion",
                            t(),
                        )
                    },
                    cell(
                        CellStatus::KnownFailure,
                        "known failure: grpc-js does not implement ignore_resource_deletion (tracked upstream)",
                        "grpc-js/a57__ignore-resource-deletion",
                        t(),
                    ),
                ],
            },
            MatrixRow {
                scenario: "a71/fallback-to-secondary".into(),
                spec: vec!["A71".into()],
                description: "When the primary server is unreachable the client uses the fallback server.".into(),
                source: None,
                cells: vec![
                    cell(
                        CellStatus::Error,
                        "client under test exited: signal 6 (SIGABRT) after 3ms",
                        "reference/a71__fallback-to-secondary",
                        Some(fallback_timeline()),
                    ),
                    MatrixCell {
                        timeline_file: None,
                        ..cell(
                            CellStatus::NotApplicable,
                            "needs capability `fallback`: the grpc-js adapter cannot configure fallback servers",
                            "",
                            None,
                        )
                    },
                ],
            },
        ],
    }
}

/// Checks that `s` is one well-formed XML element: tags nest and match,
/// attributes are quoted and unique, `&` only starts a known or numeric
/// entity, no `<` in text or attribute values. Comments are allowed;
/// processing instructions and DOCTYPEs are not (we never write them).
pub(crate) fn well_formed(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let err = |i: usize, what: &str| {
        Err(format!(
            "{what} at byte {i}: {:?}",
            s.get(i..)
                .unwrap_or("")
                .chars()
                .take(40)
                .collect::<String>()
        ))
    };
    while i < b.len() {
        if b[i] != b'<' {
            let end = s[i..].find('<').map_or(s.len(), |n| i + n);
            let text = &s[i..end];
            if stack.is_empty() && !text.trim().is_empty() {
                return err(i, "text outside the root element");
            }
            check_entities(text).map_err(|e| format!("{e} at byte {i}"))?;
            i = end;
            continue;
        }
        if s[i..].starts_with("<!--") {
            match s[i + 4..].find("-->") {
                Some(n) => i += 4 + n + 3,
                None => return err(i, "unterminated comment"),
            }
            continue;
        }
        let close = b.get(i + 1) == Some(&b'/');
        let name_start = if close { i + 2 } else { i + 1 };
        let name_end = s[name_start..]
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .map_or(s.len(), |n| name_start + n);
        let name = &s[name_start..name_end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        {
            return err(i, "bad tag name");
        }
        let mut j = name_end;
        if close {
            j += s[j..].len() - s[j..].trim_start().len();
            if b.get(j) != Some(&b'>') {
                return err(i, "bad closing tag");
            }
            if stack.pop() != Some(name) {
                return err(i, "mismatched closing tag");
            }
            i = j + 1;
            continue;
        }
        if stack.is_empty() {
            roots += 1;
            if roots > 1 {
                return err(i, "second root element");
            }
        }
        let mut attrs: Vec<&str> = Vec::new();
        loop {
            j += s[j..].len() - s[j..].trim_start().len();
            match b.get(j) {
                Some(b'>') => {
                    stack.push(name);
                    i = j + 1;
                    break;
                }
                Some(b'/') if b.get(j + 1) == Some(&b'>') => {
                    i = j + 2;
                    break;
                }
                Some(_) => {
                    let eq = match s[j..].find('=') {
                        Some(n) => j + n,
                        None => return err(j, "attribute without value"),
                    };
                    let attr = s[j..eq].trim_end();
                    if attr.is_empty()
                        || !attr
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
                    {
                        return err(j, "bad attribute name");
                    }
                    if attrs.contains(&attr) {
                        return err(j, "duplicate attribute");
                    }
                    attrs.push(attr);
                    let q = eq + 1 + (s[eq + 1..].len() - s[eq + 1..].trim_start().len());
                    let quote = match b.get(q) {
                        Some(&c @ (b'"' | b'\'')) => c as char,
                        _ => return err(q, "unquoted attribute value"),
                    };
                    let vend = match s[q + 1..].find(quote) {
                        Some(n) => q + 1 + n,
                        None => return err(q, "unterminated attribute value"),
                    };
                    let value = &s[q + 1..vend];
                    if value.contains('<') {
                        return err(q, "'<' in attribute value");
                    }
                    check_entities(value).map_err(|e| format!("{e} at byte {q}"))?;
                    j = vend + 1;
                    if !matches!(b.get(j), Some(b' ' | b'\t' | b'\n' | b'\r' | b'>' | b'/')) {
                        return err(j, "no space after attribute");
                    }
                }
                None => return err(i, "unterminated tag"),
            }
        }
    }
    if let Some(open) = stack.last() {
        return Err(format!("unclosed element <{open}>"));
    }
    if roots != 1 {
        return Err("no root element".into());
    }
    Ok(())
}

fn check_entities(text: &str) -> Result<(), String> {
    let mut rest = text;
    while let Some(n) = rest.find('&') {
        rest = &rest[n + 1..];
        let end = rest.find(';').ok_or("'&' without ';'")?;
        let name = &rest[..end];
        let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
            || name
                .strip_prefix("#x")
                .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
            || name
                .strip_prefix('#')
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(format!("unknown entity &{name};"));
        }
        rest = &rest[end + 1..];
    }
    for c in text.chars() {
        if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') {
            return Err(format!("forbidden character U+{:04X}", c as u32));
        }
    }
    Ok(())
}

#[test]
fn the_checker_rejects_broken_xml() {
    for bad in [
        "<a>",
        "<a></b>",
        "<a>x & y</a>",
        "<a b=c/>",
        "<a b=\"<\"/>",
        "<a b=\"1\" b=\"2\"/>",
        "<a/><b/>",
        "<a>&nbsp;</a>",
        "<a>\u{1}</a>",
        "text<a/>",
    ] {
        assert!(well_formed(bad).is_err(), "{bad}");
    }
    well_formed("<a x=\"1\" y='&amp;&#39;'><!-- c --><b/>t &lt; &#x41;</a>\n").unwrap();
}
