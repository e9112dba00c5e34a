//! The fake server's modules import each other in one direction: what a
//! fault is (`fault`, a leaf) under what the recording says (`event`),
//! under the stream core (`stream`), under the server's state and the
//! faults in force (`state`, `in_force`, `egress`), under the protocols
//! (`sotw`, `delta`, `kds`: siblings sharing the stream core; `delta` and
//! `kds` share the incremental rules, `incremental`, under them) and the
//! shared handle, under the tonic services and the listeners (`incoming`,
//! `ads`, `kds_service`, `serve`),
//! under what faults do (`effect`), under the public handle (`server`). An
//! import circle ties every module in it to every other: thirteen of them
//! once were one circle (`event` named a fault, whose module changed the
//! state and reached the listeners; the state held streams, whose core
//! listed the protocols, which change the state). This test finds one, in
//! the source, outside test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module -> the top-level modules it names as `crate::x`.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in std::fs::read_dir(&path).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let name = relative.to_string_lossy();
            if !name.ends_with(".rs") || name == "lib.rs" {
                continue;
            }
            let module = name.split(['/', '.']).next().expect("a module").to_string();
            let text = std::fs::read_to_string(&path).expect("read a module");
            // Test modules may reach anywhere.
            let code = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default();
            let named = graph.entry(module.clone()).or_default();
            for part in code.split("crate::").skip(1) {
                let target: String = part
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                // Lower case names a module; an item at the crate's root
                // (`crate::FakeAdsServer`) is re-exported by lib.rs.
                if target.starts_with(|c: char| c.is_ascii_lowercase()) && target != module {
                    named.insert(target);
                }
            }
        }
    }
    graph
}

/// Every module `start` reaches through its imports.
fn reach(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&String> = graph[start].iter().collect();
    while let Some(next) = todo.pop() {
        if seen.insert(next.clone()) {
            todo.extend(graph.get(next).into_iter().flatten());
        }
    }
    seen
}

fn source() -> PathBuf {
    // Asked at run time: a target directory shared between checkouts holds
    // whichever checkout's path was compiled in.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("src")
}

#[test]
fn modules_import_each_other_in_one_direction() {
    let graph = imports(&source());
    assert!(graph.len() > 15, "read too few modules: {graph:?}");
    // A module in a circle reaches itself.
    let circles: Vec<&String> = graph
        .keys()
        .filter(|start| reach(&graph, start).contains(*start))
        .collect();
    assert!(
        circles.is_empty(),
        "modules in an import circle: {circles:?}\n{graph:#?}"
    );
}

#[test]
fn the_stream_core_knows_no_protocol_and_faults_are_words() {
    let graph = imports(&source());
    // A protocol is a sibling module sharing the stream core: the core,
    // and what it stands on, reach none of them, nor one protocol another.
    let protocols = ["sotw", "delta", "kds"];
    for module in ["stream", "state", "egress"] {
        let reached = reach(&graph, module);
        for protocol in protocols {
            assert!(
                !reached.contains(protocol),
                "{module} reaches {protocol}: {:?}",
                graph[module]
            );
        }
    }
    for protocol in protocols {
        let reached = reach(&graph, protocol);
        for other in protocols.iter().filter(|other| **other != protocol) {
            assert!(
                !reached.contains(*other),
                "{protocol} reaches {other}: {graph:#?}"
            );
        }
    }
    // The incremental rules are shared by two protocols (delta ADS, KDS's
    // GlobalToZoneSync), not a copy in each: they stand on the core and
    // know neither, and the core does not know them.
    let incremental = reach(&graph, "incremental");
    for protocol in protocols {
        assert!(
            !incremental.contains(protocol),
            "incremental reaches {protocol}: {:?}",
            graph["incremental"]
        );
    }
    for module in ["stream", "state", "egress"] {
        assert!(
            !reach(&graph, module).contains("incremental"),
            "{module}: {graph:#?}"
        );
    }
    for protocol in ["delta", "kds"] {
        assert!(
            graph[protocol].contains("incremental"),
            "{protocol} does not stand on the incremental rules: {:?}",
            graph[protocol]
        );
    }
    // What a fault is, as a timeline says it, is a leaf: the recording
    // (`event`) names faults without standing on what they do.
    assert!(
        graph["fault"].is_empty(),
        "fault imports {:?}",
        graph["fault"]
    );
}
