//! Every known failure a shipped client keeps names the line of the
//! client's source that causes it (issue 44, part 5).
//!
//! An `expect: fail` entry says a client does not do what a scenario asks.
//! Without the client's line that does otherwise, such an entry cannot be
//! told from a scenario that asks too much (issue 44's triage found a
//! third of them were), cannot be checked again when the client moves on,
//! and cannot be sent to the client's maintainers. So each entry's
//! `reason` holds at least one `PATH.EXT:LINE` (or `:FIRST-LAST`) of a
//! source file, as `internal/xds/clients/xdsclient/authority.go:545`,
//! `src/core/xds/xds_client/xds_client.cc:215-222` or
//! `XdsNameResolver.java:919`. A file without a line, a test's name or a
//! quoted log line is not enough: a line is what a reader can open.
//!
//! The files held to it are the ones the project ships: each adapter's
//! manifest names its own (`expectations`), and grpc-rust's travels in
//! the binary.

use std::path::PathBuf;

use xds_conformance::expectations::{Expectations, Expected};

/// Extensions of the source files the clients are written in.
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "go", "java", "kt", "ts", "js", "mjs", "cc", "cpp", "c", "h", "hpp", "py", "pyx", "pxi",
];

/// Whether `text` names a source line: `PATH.EXT:DIGITS` with EXT one of
/// [`SOURCE_EXTENSIONS`]. An address (`fallback:443`, `127.0.0.1:80`,
/// `xds.example.com:443`) has no source extension before its colon.
fn names_a_source_line(text: &str) -> bool {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    text.match_indices(':').any(|(at, _)| {
        let digit_follows = text[at + 1..].starts_with(|c: char| c.is_ascii_digit());
        let start = text[..at]
            .rfind(|c: char| !is_path_char(c))
            .map_or(0, |i| i + 1);
        let path = &text[start..at];
        digit_follows
            && path.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty() && !stem.ends_with('/') && SOURCE_EXTENSIONS.contains(&ext)
            })
    })
}

fn root() -> PathBuf {
    xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness is in the workspace")
        .to_path_buf()
}

/// (client, file) for every expectations file the project ships.
fn shipped_files() -> Vec<(String, PathBuf)> {
    let root = root();
    let adapters = root.join("client-under-test/adapters");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&adapters)
        .unwrap_or_else(|e| panic!("{}: {e}", adapters.display()))
        .map(|entry| entry.expect("a readable directory entry").path())
        .collect();
    dirs.sort();
    let mut files = Vec::new();
    for dir in dirs {
        let manifest = dir.join("adapter.json");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let json: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        if let Some(file) = json.get("expectations").and_then(|v| v.as_str()) {
            let name = dir.file_name().expect("a named folder").to_string_lossy();
            files.push((name.into_owned(), dir.join(file)));
        }
    }
    files.push((
        "grpc-rust".into(),
        root.join(xds_client_under_test::grpc_rust::EXPECTATIONS_FILE),
    ));
    files
}

/// The line an entry's key is on, for the message.
fn line_of(source: &str, key: &str) -> usize {
    let head = format!("{key}:");
    source
        .lines()
        .position(|l| l == head || l == format!("\"{key}\":"))
        .map_or(1, |i| i + 1)
}

const HOW: &str = "\
Name the client's source line that makes it fail, in the entry's reason: PATH.EXT:LINE or \
PATH.EXT:FIRST-LAST of the version the adapter pins (e.g. \
\"... (internal/xds/clients/xdsclient/authority.go:545)\"). If no line can be found, the entry \
may not be a defect of the client: read the scenario against the spec first (issue 44).";

#[test]
fn every_known_failure_names_the_clients_source_line() {
    let files = shipped_files();
    for client in [
        "envoy",
        "grpc-go",
        "grpc-java",
        "grpc-js",
        "grpcio",
        "grpc-rust",
    ] {
        assert!(
            files.iter().any(|(c, _)| c == client),
            "{client}'s expectations not found in {files:?}"
        );
    }
    let mut untraced = Vec::new();
    for (client, file) in &files {
        let source =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let expectations = Expectations::parse(file, &source).unwrap_or_else(|e| panic!("{e}"));
        for (id, entry) in &expectations.entries {
            if entry.expect != Expected::Fail {
                continue;
            }
            if !names_a_source_line(&entry.reason) {
                untraced.push(format!(
                    "{client}: {}:{}: {id}: \"{}\"",
                    file.strip_prefix(root()).unwrap_or(file).display(),
                    line_of(&source, id),
                    entry.reason
                ));
            }
        }
    }
    assert!(
        untraced.is_empty(),
        "{} known failures name no source line of their client:\n{}\n\n{HOW}",
        untraced.len(),
        untraced.join("\n")
    );
}

#[test]
fn a_source_line_is_a_path_with_a_source_extension_and_a_line() {
    for named in [
        "(internal/xds/clients/xdsclient/authority.go:545)",
        "src/core/xds/xds_client/xds_client.cc:215-222",
        "XdsNameResolver.java:919",
        "src/python/grpcio/grpc/_cython/_cygrpc/server.pyx.pxi:60-69, and",
        "src/xds-client.ts:106-120",
        "(tonic 0.14.9 src/transport/channel/endpoint.rs:619)",
    ] {
        assert!(names_a_source_line(named), "{named}");
    }
    for not_named in [
        "src/message.rs has no field",
        "client-under-test/tests/grpc_rust.rs: stream_closed_without_a_response",
        "connects to fallback:443 at once",
        "127.0.0.1:80",
        "xds.example.com:443",
        "xdstp://auth-a/envoy.config.listener.v3.Listener/c1",
        "the C-core 1.85 log says 'not serving on 0.0.0.0:8443'",
        "a file named .rs:12",
    ] {
        assert!(!names_a_source_line(not_named), "{not_named}");
    }
}
