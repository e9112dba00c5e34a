//! The harness's modules import each other in one direction: data flows
//! scenario -> runner -> timeline -> verdicts, and the toolkit under them
//! (`check`, `resource`, `step`, `matcher`) imports nothing above it. An
//! import circle ties every module in it to every other (the loader once
//! imported `suite`, which made loading a file depend on the adapters
//! folder of the machine it ran on): this test finds one, in the source,
//! outside test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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
            if !name.ends_with(".rs") || name == "main.rs" || name == "lib.rs" {
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
                if !target.is_empty() && target != module {
                    named.insert(target);
                }
            }
        }
    }
    graph
}

#[test]
fn modules_import_each_other_in_one_direction() {
    let src = xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports(&src);
    assert!(graph.len() > 15, "read too few modules: {graph:?}");
    // A module in a circle reaches itself.
    let mut circles = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&String> = graph[start].iter().collect();
        while let Some(next) = todo.pop() {
            if seen.insert(next.clone()) {
                todo.extend(graph.get(next).into_iter().flatten());
            }
        }
        if seen.contains(start) {
            circles.push(start.clone());
        }
    }
    assert!(
        circles.is_empty(),
        "modules in an import circle: {circles:?}\n{graph:#?}"
    );
    // The loader and the steps know nothing of the clients there are.
    for module in ["scenario", "step", "check", "resource", "matcher"] {
        assert!(
            !graph[module].contains("suite"),
            "{module} imports suite: {:?}",
            graph[module]
        );
        assert!(
            !graph[module].contains("runner"),
            "{module} imports runner: {:?}",
            graph[module]
        );
    }
}
