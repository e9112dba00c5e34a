//! No scenario pins one implementation's words where no spec fixes them.
//!
//! A check of a client's error text (`error_contains` of a NACK or a CSDS
//! entry, `contains` of a watcher's error, an RPC's status, a serving
//! error, a CSDS reply) holds a client to what the spec fixes, and no spec
//! fixes those texts: the xDS `error_detail` "is only intended for
//! consumption during manual debugging, the string provided is not
//! guaranteed to be stable" (discovery.proto), gRFC A46 and A88 give no
//! words, gRFC A36 calls the NOT_SERVING error "language-idiomatic". So
//! each such string must be something the scenario itself names (a
//! resource, a server, a target, a value it serves or a status message its
//! server sends), an index (`index 1`), or a type URL; or the expectation
//! carries `wording_fixed_by:` quoting the spec sentence that fixes those
//! words.
//!
//! A line of a client's log (`client: { event: log, contains }`) is held
//! the same way: real clients' logs are checked too (the `logs`
//! capability), and no spec fixes their words either (gRFC A53 fixes the
//! levels, WARNING and INFO, not the words).
//!
//! Not held here: the summary of a `changed` value (the harness's own
//! rendering of a resource), and the other `client:` events, which only
//! the reference client reports (the harness writes their lines).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Keys whose values are prose or checks, not names the scenario uses.
const PROSE: &[&str] = &[
    "description",
    "divergence",
    "reason",
    "because",
    "wording_fixed_by",
    "contains",
    "error_contains",
    "detail_contains",
];

/// Matcher keys whose `contains`-like fields check a client's error text,
/// and which field.
fn error_checks(key: &str, matcher: &serde_json::Map<String, Value>) -> Vec<(&'static str, Value)> {
    let field = |name: &'static str| matcher.get(name).map(|v| (name, v.clone()));
    let checks = match key {
        "request" | "delta_request" | "kds_request" | "csds" => field("error_contains"),
        "rpc" => match matcher.get("code").and_then(Value::as_str) {
            Some("OK") => None,
            _ => field("contains"),
        },
        "serving" | "csds_reply" => field("contains"),
        "client" if matcher.get("event").and_then(Value::as_str) == Some("log") => {
            return [field("contains"), field("names")]
                .into_iter()
                .flatten()
                .collect();
        }
        "watcher" => {
            let event = matcher.get("event").and_then(Value::as_str);
            let error = matches!(event, Some("resource_error" | "ambient_error"))
                || matcher.contains_key("code");
            if error { field("contains") } else { None }
        }
        _ => None,
    };
    checks.into_iter().collect()
}

/// Every string the scenario itself uses as a value (names, addresses,
/// status messages its servers send), and its servers' and backends'
/// names: what a client's error may quote back.
fn names(value: &Value, under_prose: bool, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) if !under_prose => {
            out.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| names(v, under_prose, out)),
        Value::Object(map) => {
            // A log check's `names` is what it looks for, not a name the
            // scenario uses.
            let log = map.get("event").and_then(Value::as_str) == Some("log");
            for (k, v) in map {
                let prose = PROSE.contains(&k.as_str()) || (log && k == "names");
                names(v, under_prose || prose, out);
            }
        }
        _ => {}
    }
}

/// Whether `check` is something a client's error may be held to.
fn allowed(check: &str, names: &BTreeSet<String>, servers: &[String]) -> bool {
    let check = check.trim().trim_end_matches(':').trim();
    let index = check
        .strip_prefix("index ")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let type_url = check.starts_with("type.googleapis.com/")
        || (check.starts_with("envoy.") || check.starts_with("kuma."))
            && check
                .split('.')
                .next_back()
                .is_some_and(|last| last.chars().next().is_some_and(char::is_uppercase));
    let server = servers.iter().any(|s| {
        check == s
            || check
                .strip_prefix(s.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .is_some_and(|port| port.bytes().all(|b| b.is_ascii_digit()))
    });
    index || type_url || server || names.contains(check)
}

struct Pinned {
    file: PathBuf,
    line: usize,
    column: usize,
    text: String,
    matcher: String,
}

/// Walks `value` for expectations (maps holding a matcher key) and checks
/// each error check of each.
fn walk(
    value: &Value,
    file: &Path,
    source: &str,
    names: &BTreeSet<String>,
    servers: &[String],
    out: &mut Vec<Pinned>,
) {
    match value {
        Value::Array(items) => {
            for v in items {
                walk(v, file, source, names, servers, out);
            }
        }
        Value::Object(map) => {
            let fixed = map.contains_key("wording_fixed_by");
            for (key, v) in map {
                if let (false, Value::Object(matcher)) = (fixed, v) {
                    for (field, checked) in error_checks(key, matcher) {
                        let strings: Vec<String> = match checked {
                            Value::String(s) => vec![s],
                            Value::Array(a) => a
                                .into_iter()
                                .filter_map(|v| v.as_str().map(str::to_string))
                                .collect(),
                            _ => Vec::new(),
                        };
                        for s in strings {
                            if !allowed(&s, names, servers) {
                                let (line, column) = locate(source, field, &s);
                                out.push(Pinned {
                                    file: file.to_path_buf(),
                                    line,
                                    column,
                                    text: s,
                                    matcher: format!("{key}.{field}"),
                                });
                            }
                        }
                    }
                }
                walk(v, file, source, names, servers, out);
            }
        }
        _ => {}
    }
}

/// Where `text`, checked under `field`, is written: its first line that
/// holds both (1:1 when the file spells it otherwise, e.g. escaped).
fn locate(source: &str, field: &str, text: &str) -> (usize, usize) {
    source
        .lines()
        .enumerate()
        .find_map(|(i, line)| {
            let at = line.find(text)?;
            line.contains(field).then_some((i + 1, at + 1))
        })
        .unwrap_or((1, 1))
}

fn scenario_files() -> Vec<PathBuf> {
    let root = xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness is in the workspace")
        .join("scenarios");
    xds_conformance::suite::discover(&[root]).expect("scenarios/ is readable")
}

fn pinned_in(file: &Path) -> Vec<Pinned> {
    let source =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let value: Value =
        serde_saphyr::from_str(&source).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut used = BTreeSet::new();
    names(&value, false, &mut used);
    let servers: Vec<String> = value
        .get("servers")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    walk(&value, file, &source, &used, &servers, &mut out);
    out
}

const HOW: &str = "\
No spec fixes these words (discovery.proto: error_detail \"is only intended for consumption \
during manual debugging, the string provided is not guaranteed to be stable\"; gRFC A46 and A88 \
give no text). Check what the spec fixes instead:
  - a NACK names the bad resource: any_of [{error_contains: \"<its name>\"}, {error_contains: \"index <N>\"}],
    and a control step (the same resource with only the field under test fixed is ACKed) shows
    the NACK is for that field;
  - a watcher error: its event (ambient_error / resource_error), and a code only where gRFC A88
    fixes one (NOT_FOUND for the timer and deletions);
  - CSDS: status, error_version, error: true.
If a spec does fix the words, quote its sentence in `wording_fixed_by:` on the expectation.";

#[test]
fn no_scenario_pins_one_implementations_words() {
    let files = scenario_files();
    assert!(
        files.len() > 200,
        "found only {} scenario files",
        files.len()
    );
    let mut pinned = Vec::new();
    for file in &files {
        pinned.extend(pinned_in(file));
    }
    let report: Vec<String> = pinned
        .iter()
        .map(|p| {
            format!(
                "{}:{}:{}: {} \"{}\"",
                p.file.display(),
                p.line,
                p.column,
                p.matcher,
                p.text
            )
        })
        .collect();
    assert!(
        report.is_empty(),
        "{} checks pin an implementation's words:\n{}\n\n{HOW}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn the_rule_catches_words_and_lets_names_indexes_and_type_urls_through() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.yaml");
    std::fs::write(
        &file,
        "description: d\nservers: {primary: {}}\nsteps:\n  - watch: {type: CDS, name: c2}\n  \
         - expect: {request: {type: CDS, kind: nack, error_contains: [\"c2\", \"index 1\"]}}\n  \
         - expect: {request: {type: CDS, kind: nack, error_contains: \"type.googleapis.com/envoy.config.cluster.v3.Cluster\"}}\n  \
         - expect: {watcher: {type: CDS, name: c2, event: ambient_error, contains: \"primary:443\"}}\n  \
         - expect: {watcher: {type: CDS, name: c2, event: changed, contains: \"service=e1\"}}\n  \
         - expect: {csds: {type: CDS, name: c2, status: NACKED, error_contains: \"invalid resource: \"}}\n  \
         - expect:\n      any_of:\n        - watcher: {type: CDS, name: c2, event: resource_error, contains: \"lb_policy\"}\n        \
         - rpc: {code: UNAVAILABLE, contains: \"does not exist\"}\n          wording_fixed_by: \"a quoted sentence\"\n  \
         - expect: {client: {event: log, level: warning, contains: \"c2\"}}\n  \
         - expect: {client: {event: log, contains: \"ignoring deletion\", names: l9}}\n  \
         - expect: {client: {event: retry_scheduled, contains: \"1.000s\"}}\n",
    )
    .unwrap();
    let found: Vec<(usize, String, String)> = pinned_in(&file)
        .into_iter()
        .map(|p| (p.line, p.matcher, p.text))
        .collect();
    assert_eq!(
        found,
        [
            (
                9,
                "csds.error_contains".to_string(),
                "invalid resource: ".to_string()
            ),
            (12, "watcher.contains".to_string(), "lb_policy".to_string()),
            (
                16,
                "client.contains".to_string(),
                "ignoring deletion".to_string()
            ),
            (16, "client.names".to_string(), "l9".to_string()),
        ]
    );
}
