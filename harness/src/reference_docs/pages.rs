//! The reference pages' text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;
use xds_client_under_test::{AdapterCapabilities, Capabilities};

use super::schema::{Reader, anchor, cell};
use super::{Client, Declared, EXAMPLES_FILE, Examples, GENERATED, Sources, check_example};
use crate::clock::RunMode;
use crate::expectations::{Expected, INVARIANT_PREFIX};

/// A page's start.
fn head(title: &str, intro: &str) -> String {
    format!("{GENERATED}\n\n# {title}\n\n{}\n\n", intro.trim())
}

/// An entry's doc comment, or a problem.
fn doc<'a>(what: &str, entry: &'a Declared, problems: &mut Vec<String>) -> &'a str {
    let doc = entry.doc.trim();
    if doc.is_empty() {
        problems.push(format!(
            "{what} `{}` has no doc comment where it is declared",
            entry.name
        ));
    }
    doc
}

/// Examples naming kinds the code no longer declares.
fn stale(
    what: &str,
    examples: &BTreeMap<String, String>,
    declared: &[Declared],
    problems: &mut Vec<String>,
) {
    for name in examples.keys() {
        if !declared.iter().any(|d| d.name == *name) {
            problems.push(format!(
                "{EXAMPLES_FILE} has an example of {what} `{name}`, which the code does not declare"
            ));
        }
    }
}

/// The example of an entry, checked, as a YAML block; or a problem.
fn example(
    what: &str,
    name: &str,
    examples: &BTreeMap<String, String>,
    used: &str,
    problems: &mut Vec<String>,
) -> String {
    let Some(text) = examples.get(name) else {
        problems.push(format!("{what} `{name}` has no example in {EXAMPLES_FILE}"));
        return String::new();
    };
    if let Some(problem) = check_example(&format!("{what} `{name}`"), text, used) {
        problems.push(problem);
    }
    format!("Example:\n\n```yaml\n{}\n```\n", text.trim_end())
}

pub fn index(sources: &Sources) -> String {
    let mut text = head(
        "Reference",
        "Everything a scenario, an adapter or the command line can say, generated \
         from the code where each is declared, so it cannot drift from it. Each entry \
         shows its fields with their types and a minimal example, which the scenario \
         loader accepts (`harness/tests/reference_docs.rs` loads every one).",
    );
    let _ = writeln!(
        text,
        "| page | what | declared in |\n|---|---|---|\n\
         | [Step kinds](steps.md) | {} kinds of step a script is made of | `step_kinds!` in `harness/src/step/mod.rs`, one module each |\n\
         | [Fault verbs](faults.md) | {} verbs of the fake server, and the step that applies each | `fault_verbs!` in `fake-server/src/fault/mod.rs` |\n\
         | [Matchers](matchers.md) | {} kinds of event an expectation looks for | `matcher_kinds!` in `harness/src/matcher/mod.rs` |\n\
         | [Resource kinds](resources.md) | {} forms of a resource | `ResourceSpec` in `harness/src/resource/file.rs` |\n\
         | [Capabilities](capabilities.md) | {} things a client can be asked to do | `Capabilities` in `client-under-test/src/lib.rs` |\n\
         | [Invariants](invariants.md) | {} rules every chaos run keeps | `ALL` in `harness/src/invariant/mod.rs` |\n\
         | [Command line](cli.md) | every subcommand and flag | clap's `Command` in `harness/src/main.rs` |\n\
         | [Spec coverage](spec-coverage.md) | {} rules of the specs, the scenarios that check each, and what each client is expected to do | `catalogue/`, and each scenario's `covers:` |\n\
         | [Defects](defects.md) | {} deliberate defects of the reference client, the scenarios that catch each, and how to play one (`run --defect`) | `Defects` in `client-under-test/reference/src/profile.rs`, and `harness/tests/broken_clients.yaml` |\n",
        sources.steps.len(),
        sources.faults.len(),
        sources.matchers.len(),
        sources.resources.len(),
        sources.capabilities.len(),
        sources.invariants.len(),
        sources
            .coverage
            .as_ref()
            .map_or(0, |c| c.catalogue.rules().count()),
        sources.defects.len(),
    );
    let _ = writeln!(
        text,
        "A page per client, from its manifest, capabilities and expectations file: {}.\n",
        sources
            .clients
            .iter()
            .map(|c| format!("[{0}](clients/{0}.md)", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    text.push_str(
        "The whole scenario format is also a JSON Schema, which editors read \
         (`xds-conformance schema`, checked in as `harness/scenario.schema.json`).\n\n\
         These pages are written by\n\n```sh\ncargo run -p xds-conformance -- reference --out docs/src/reference\n```\n\n\
         and CI checks them with `--check`. A step kind, fault, matcher, resource kind, \
         capability or invariant without a doc comment, or without its example in \
         `harness/src/reference_docs/examples.yaml`, fails the generator and so CI.\n",
    );
    text
}

pub fn steps(sources: &Sources, examples: &Examples, problems: &mut Vec<String>) -> String {
    let mut text = head(
        "Step kinds",
        "A scenario's `steps:` is a list; each step is a one-key map, `- KIND: {...}`. \
         Steps play in order; an action (a watch, a dial, a server action) happens at \
         once, an expectation waits for its window ([The format, annotated](../scenarios/format.md)).",
    );
    let mut reader = Reader::new(&sources.schema);
    let branches = sources
        .schema
        .get("$defs")
        .and_then(|d| d.get("StepSpec"))
        .and_then(|d| d.get("oneOf"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let form = |key: &str| -> Option<Value> {
        branches
            .iter()
            .find_map(|b| b.get("properties")?.get(key).cloned())
    };
    link_matchers(sources, &mut reader);
    for entry in &sources.steps {
        if let Some(f) = form(&entry.name)
            && let Some(object) = reader.object_of(&f)
        {
            reader
                .skip
                .entry(object)
                .or_insert_with(|| format!("#{}", anchor(&entry.name)));
        }
    }
    let _ = writeln!(
        text,
        "{}\n",
        sources
            .steps
            .iter()
            .map(|s| format!("[`{0}`](#{1})", s.name, anchor(&s.name)))
            .collect::<Vec<_>>()
            .join(" · ")
    );
    stale("step kind", &examples.steps, &sources.steps, problems);
    for entry in &sources.steps {
        let doc = doc("step kind", entry, problems);
        let _ = writeln!(text, "## `{}`\n\n{doc}\n", entry.name);
        match form(&entry.name) {
            Some(f) => {
                let definition = reader
                    .object_of(&f)
                    .and_then(|name| reader.definition(&name))
                    .unwrap_or(&f);
                let fields = reader.fields(definition);
                let _ = writeln!(text, "{fields}");
            }
            None => problems.push(format!(
                "step kind `{}` is not in the scenario JSON Schema",
                entry.name
            )),
        }
        let used = format!("{}:", entry.name);
        let _ = writeln!(
            text,
            "{}",
            example("step kind", &entry.name, &examples.steps, &used, problems)
        );
    }
    text.push_str(&reader.objects());
    text
}

/// On a page other than the matchers', a matcher's form links there.
fn link_matchers(sources: &Sources, reader: &mut Reader<'_>) {
    let Some(expect) = sources
        .schema
        .get("$defs")
        .and_then(|d| d.get("ExpectSpec"))
        .and_then(|d| d.get("properties"))
    else {
        return;
    };
    for entry in &sources.matchers {
        let Some(field) = expect.get(&entry.name) else {
            continue;
        };
        let reference = field.get("$ref").cloned().or_else(|| {
            field
                .get("anyOf")?
                .as_array()?
                .iter()
                .find_map(|a| a.get("$ref").cloned())
        });
        if let Some(reference) = reference
            && let Some(object) = reader.object_of(&serde_json::json!({ "$ref": reference }))
        {
            reader
                .skip
                .insert(object, format!("matchers.md#{}", anchor(&entry.name)));
        }
    }
}

pub fn faults(sources: &Sources, examples: &Examples, problems: &mut Vec<String>) -> String {
    let mut text = head(
        "Fault verbs",
        "What the fake server can be made to do, each a verb of the server \
         (`fake-server/src/fault/`) applied by a step. Every applied fault is \
         recorded on the timeline as `fault: ...`, next to what the client did \
         about it. A step's `server:` picks the server (default: the first). \
         GOAWAY is a server setting, not a fault (`max_connection_age`). How to \
         use them: [Faults](../scenarios/faults.md).",
    );
    for (verb, step) in &examples.faults {
        if !sources.faults.iter().any(|d| d.name == *verb) {
            problems.push(format!(
                "{EXAMPLES_FILE} names fault verb `{verb}`, which the fake server does not declare"
            ));
        }
        if !sources.steps.iter().any(|s| s.name == *step) {
            problems.push(format!(
                "{EXAMPLES_FILE}: fault verb `{verb}` is applied by step `{step}`, which is no step kind"
            ));
        }
    }
    let _ = writeln!(
        text,
        "| verb | step | what the server does |\n|---|---|---|"
    );
    for entry in &sources.faults {
        let doc = doc("fault verb", entry, problems);
        let step = examples.faults.get(&entry.name);
        let _ = writeln!(
            text,
            "| [{0}](#{1}) | {2} | {3} |",
            entry.name,
            anchor(&entry.name),
            step.map(|s| format!("[`{s}`](steps.md#{})", anchor(s)))
                .unwrap_or_default(),
            cell(doc)
        );
    }
    text.push('\n');
    let mut reader = Reader::new(&sources.schema);
    let branches = sources
        .schema
        .get("$defs")
        .and_then(|d| d.get("StepSpec"))
        .and_then(|d| d.get("oneOf"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for entry in &sources.faults {
        let _ = writeln!(text, "## {}\n\n{}\n", entry.name, entry.doc.trim());
        let Some(step) = examples.faults.get(&entry.name) else {
            problems.push(format!(
                "fault verb `{}` has no step in {EXAMPLES_FILE} (faults:)",
                entry.name
            ));
            continue;
        };
        let step_doc = sources
            .steps
            .iter()
            .find(|s| s.name == *step)
            .map(|s| s.doc.trim().to_string())
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "Applied by the step [`{step}`](steps.md#{}): {}\n",
            anchor(step),
            step_doc
        );
        if let Some(form) = branches
            .iter()
            .find_map(|b| b.get("properties")?.get(step.as_str()).cloned())
        {
            let definition = reader
                .object_of(&form)
                .and_then(|name| reader.definition(&name))
                .unwrap_or(&form);
            let fields = reader.fields(definition);
            let _ = writeln!(text, "{fields}");
        }
        let used = format!("{step}:");
        let _ = writeln!(
            text,
            "{}",
            example("step kind", step, &examples.steps, &used, &mut Vec::new())
        );
    }
    text.push_str(&reader.objects());
    text
}

pub fn matchers(sources: &Sources, examples: &Examples, problems: &mut Vec<String>) -> String {
    let mut text = head(
        "Matchers",
        "What an `expect`, an `any_of` or `in_order` alternative, or an `expect_none` \
         looks for on the timeline: one matcher key, with the fields below; every \
         field given must match, fields left out match anything. An `expect` also \
         takes `within` (default `1s`) or `at`, and `expect_none` takes `for` \
         ([Step kinds](steps.md#expect)).",
    );
    let mut reader = Reader::new(&sources.schema);
    let expect = sources
        .schema
        .get("$defs")
        .and_then(|d| d.get("ExpectSpec"))
        .and_then(|d| d.get("properties"))
        .cloned()
        .unwrap_or_default();
    let form = |key: &str| -> Option<Value> {
        let field = expect.get(key)?;
        // Option<Spec>: `anyOf: [{$ref}, {type: null}]`, or a bare `$ref`.
        if field.get("$ref").is_some() {
            return Some(field.clone());
        }
        field
            .get("anyOf")?
            .as_array()?
            .iter()
            .find(|a| a.get("$ref").is_some())
            .cloned()
    };
    for entry in &sources.matchers {
        if let Some(f) = form(&entry.name)
            && let Some(object) = reader.object_of(&f)
        {
            reader
                .skip
                .entry(object)
                .or_insert_with(|| format!("#{}", anchor(&entry.name)));
        }
    }
    stale("matcher", &examples.matchers, &sources.matchers, problems);
    for entry in &sources.matchers {
        let doc = doc("matcher", entry, problems);
        let _ = writeln!(text, "## `{}`\n\n{doc}\n", entry.name);
        match form(&entry.name) {
            Some(f) => {
                let definition = reader
                    .object_of(&f)
                    .and_then(|name| reader.definition(&name))
                    .unwrap_or(&f);
                let fields = reader.fields(definition);
                let _ = writeln!(text, "{fields}");
            }
            None => problems.push(format!(
                "matcher `{}` is not in the scenario JSON Schema",
                entry.name
            )),
        }
        let used = format!("{}:", entry.name);
        let _ = writeln!(
            text,
            "{}",
            example("matcher", &entry.name, &examples.matchers, &used, problems)
        );
    }
    text.push_str(&reader.objects());
    text
}

pub fn resources(sources: &Sources, examples: &Examples, problems: &mut Vec<String>) -> String {
    let mut text = head(
        "Resource kinds",
        "A resource, in a server's `resources:` or a step that sends some, is a \
         one-key map: a compact form for the common shapes, full proto3 JSON, or raw \
         bytes. Invalid resources are written the same way: the fake server sends \
         what it is given.",
    );
    let mut reader = Reader::new(&sources.schema);
    let branches = sources
        .schema
        .get("$defs")
        .and_then(|d| d.get("ResourceSpec"))
        .and_then(|d| d.get("oneOf"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let form = |key: &str| -> Option<Value> {
        branches
            .iter()
            .find_map(|b| b.get("properties")?.get(key).cloned())
    };
    for entry in &sources.resources {
        if let Some(f) = form(&entry.name)
            && let Some(object) = reader.object_of(&f)
        {
            reader
                .skip
                .entry(object)
                .or_insert_with(|| format!("#{}", anchor(&entry.name)));
        }
    }
    stale(
        "resource kind",
        &examples.resources,
        &sources.resources,
        problems,
    );
    for entry in &sources.resources {
        let doc = doc("resource kind", entry, problems);
        let _ = writeln!(text, "## `{}`\n\n{doc}\n", entry.name);
        if let Some(f) = form(&entry.name) {
            let definition = reader
                .object_of(&f)
                .and_then(|name| reader.definition(&name))
                .unwrap_or(&f);
            let fields = reader.fields(definition);
            let _ = writeln!(text, "{fields}");
        }
        let used = format!("{}:", entry.name);
        let _ = writeln!(
            text,
            "{}",
            example(
                "resource kind",
                &entry.name,
                &examples.resources,
                &used,
                problems
            )
        );
    }
    text.push_str(&reader.objects());
    text
}

/// A client's value of a capability, in words.
fn capability_value(capabilities: &Capabilities, name: &str) -> Option<String> {
    let value = serde_json::to_value(capabilities).ok()?;
    match value.get(name)? {
        Value::Bool(true) => Some("yes".into()),
        Value::Bool(false) => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        // A map's keys (`env_not_read`: the variables; their whys are the
        // adapter's).
        Value::Object(map) if map.is_empty() => None,
        Value::Object(map) => Some(map.keys().cloned().collect::<Vec<_>>().join(", ")),
        other => Some(other.to_string()),
    }
}

pub fn capabilities(sources: &Sources, examples: &Examples, problems: &mut Vec<String>) -> String {
    let mut text = head(
        "Capabilities",
        "What a client can be asked to do. A scenario that needs a capability the \
         client lacks is not applicable to it, never failed, and the report names the \
         capability. An adapter declares some of them in its `adapter.json` and its \
         `hello` (`capabilities`, `client-under-test/ADAPTER_PROTOCOL.md`); the others \
         the harness knows of the clients it drives itself.",
    );
    let mut reader = Reader::new(&sources.capability_schema);
    let properties = sources
        .capability_schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "| capability | {} |\n|---|{}",
        sources
            .clients
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(sources.clients.len())
    );
    for entry in &sources.capabilities {
        let _ = writeln!(
            text,
            "| [`{0}`](#{1}) | {2} |",
            entry.name,
            anchor(&entry.name),
            sources
                .clients
                .iter()
                .map(|c| capability_value(&c.capabilities, &entry.name).unwrap_or("-".into()))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    text.push('\n');
    for name in examples.capabilities.keys() {
        if !sources.declarable.contains(name) {
            problems.push(format!(
                "{EXAMPLES_FILE} has an example of capability `{name}`, which adapters cannot declare"
            ));
        }
    }
    for entry in &sources.capabilities {
        let doc = doc("capability", entry, problems);
        let _ = writeln!(text, "## `{}`\n\n{doc}\n", entry.name);
        let t = properties
            .get(&entry.name)
            .map(|p| reader.type_of(p))
            .unwrap_or_default();
        let having: Vec<String> = sources
            .clients
            .iter()
            .filter(|c| capability_value(&c.capabilities, &entry.name).is_some())
            .map(|c| format!("[{0}](clients/{0}.md)", c.name))
            .collect();
        let _ = writeln!(
            text,
            "Type: {t}. Clients that have it: {}.\n",
            if having.is_empty() {
                "none of this project's".to_string()
            } else {
                having.join(", ")
            }
        );
        if !sources.declarable.contains(&entry.name) {
            text.push_str(
                "Not declared by adapters: the harness knows it of the clients it drives \
                 in-process or with a driver of its own (Envoy).\n\n",
            );
            continue;
        }
        let Some(json) = examples.capabilities.get(&entry.name) else {
            problems.push(format!(
                "capability `{}` (adapters declare it) has no example in {EXAMPLES_FILE}",
                entry.name
            ));
            continue;
        };
        match serde_json::from_str::<AdapterCapabilities>(json) {
            Ok(_) if !json.contains(&format!("\"{}\"", entry.name)) => problems.push(format!(
                "the example of capability `{}` in {EXAMPLES_FILE} does not declare it",
                entry.name
            )),
            Ok(_) => {}
            Err(e) => problems.push(format!(
                "the example of capability `{}` in {EXAMPLES_FILE} is no adapter.json `capabilities`: {e}",
                entry.name
            )),
        }
        let _ = writeln!(
            text,
            "Declared by adapters. Example, in `adapter.json`:\n\n```json\n\"capabilities\": {}\n```\n",
            json.trim()
        );
    }
    text
}

/// Which clients an invariant holds, in words, from its `held_to`.
fn held_by(held: fn(&Capabilities, RunMode) -> bool) -> String {
    let watch = Capabilities {
        watch: true,
        ..Capabilities::default()
    };
    let none = Capabilities::default();
    let cases = [
        held(&none, RunMode::RealTime),
        held(&watch, RunMode::RealTime),
        held(&watch, RunMode::Virtual),
    ];
    match cases {
        [true, true, true] => "every client".into(),
        [false, true, true] => "clients with a watch API".into(),
        [false, false, true] => "clients with a watch API, on virtual time".into(),
        _ => "some clients (see the clients below)".into(),
    }
}

pub fn invariants(sources: &Sources, examples: &Examples, problems: &mut Vec<String>) -> String {
    let mut text = head(
        "Invariants",
        "What every chaos run must show whatever its schedule, each read over the \
         run's timeline once it is over ([Chaos](../chaos/invariants.md)). A scenario \
         states one with the step `expect_invariant: NAME`: the run so far keeps it. \
         A client the invariant does not hold makes that run not applicable.",
    );
    stale(
        "invariant",
        &examples.invariants,
        &sources.invariants,
        problems,
    );
    for entry in &sources.invariants {
        let rule = doc("invariant", entry, problems);
        let invariant = crate::invariant::ALL.iter().find(|i| i.name == entry.name);
        let _ = writeln!(text, "## `{}`\n\n{rule}\n", entry.name);
        if let Some(invariant) = invariant {
            let holds: Vec<String> = sources
                .clients
                .iter()
                .filter(|c| {
                    let mode = if c.capabilities.virtual_time {
                        RunMode::Virtual
                    } else {
                        RunMode::RealTime
                    };
                    (invariant.held_to)(&c.capabilities, mode)
                })
                .map(|c| format!("[{0}](clients/{0}.md)", c.name))
                .collect();
            let _ = writeln!(
                text,
                "Held by: {}. This project's clients it holds: {}.\n",
                held_by(invariant.held_to),
                if holds.is_empty() {
                    "none".to_string()
                } else {
                    holds.join(", ")
                }
            );
        }
        let used = format!("expect_invariant: {}", entry.name);
        let _ = writeln!(
            text,
            "{}",
            example(
                "invariant",
                &entry.name,
                &examples.invariants,
                &used,
                problems
            )
        );
    }
    text
}

/// The command line's page, from clap's command tree.
pub fn cli(
    cli: &clap::Command,
    examples: &BTreeMap<String, String>,
) -> Result<String, Vec<String>> {
    let mut problems = Vec::new();
    let mut cli = cli.clone();
    cli.build();
    let mut text = head(
        "Command line",
        "Every subcommand of `xds-conformance` and its flags, from the command's own \
         parser (`xds-conformance help SUBCOMMAND` prints the same). In the checkout, \
         run it as `cargo run -p xds-conformance -- SUBCOMMAND ...`.",
    );
    if let Some(after) = cli.get_after_help() {
        let _ = writeln!(text, "{}\n", after.to_string().trim());
    }
    let names: Vec<String> = cli
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    for name in examples.keys() {
        if !names.contains(name) {
            problems.push(format!(
                "{EXAMPLES_FILE} has an example of subcommand `{name}`, which the command does not have"
            ));
        }
    }
    for name in &names {
        let Some(sub) = cli.find_subcommand(name) else {
            continue;
        };
        let about = sub
            .get_long_about()
            .or(sub.get_about())
            .map(|a| a.to_string())
            .unwrap_or_default();
        if about.trim().is_empty() {
            problems.push(format!("subcommand `{name}` has no doc comment"));
        }
        let _ = writeln!(text, "## `{name}`\n\n{}\n", about.trim());
        let mut usage = sub.clone();
        let usage = usage.render_usage().to_string();
        let usage = usage.trim().trim_start_matches("Usage:").trim();
        let _ = writeln!(
            text,
            "```text\nxds-conformance {}\n```\n",
            usage
                .trim_start_matches(name)
                .trim_start_matches("xds-conformance")
                .trim()
        );
        let _ = writeln!(
            text,
            "| argument | value | default | description |\n|---|---|---|---|"
        );
        for arg in sub.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            let takes_value = arg.get_action().takes_values();
            let value_name = arg
                .get_value_names()
                .map(|v| {
                    v.iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_else(|| id.to_uppercase());
            let argument = match arg.get_long() {
                Some(long) => format!("`--{long}`"),
                None => format!("`<{value_name}>`"),
            };
            let value = if !takes_value {
                "flag".to_string()
            } else {
                let possible: Vec<String> = arg
                    .get_possible_values()
                    .iter()
                    .map(|p| format!("`{}`", p.get_name()))
                    .collect();
                let many = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
                    " ..."
                } else {
                    ""
                };
                if possible.is_empty() {
                    format!("`{value_name}`{many}")
                } else {
                    format!("{}{many}", possible.join(" \\| "))
                }
            };
            let default: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().to_string())
                .collect();
            let default = if default.is_empty() {
                if arg.is_required_set() {
                    "required".to_string()
                } else {
                    String::new()
                }
            } else {
                format!("`{}`", default.join(","))
            };
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "| {argument} | {value} | {default} | {} |",
                cell(&help)
            );
        }
        text.push('\n');
        match examples.get(name) {
            None => problems.push(format!(
                "subcommand `{name}` has no example in {EXAMPLES_FILE} (cli:)"
            )),
            Some(line) => {
                let words: Vec<&str> = line.split_whitespace().collect();
                match cli.clone().try_get_matches_from(&words) {
                    Ok(matches) if matches.subcommand_name() == Some(name.as_str()) => {}
                    Ok(_) => problems.push(format!(
                        "the example of subcommand `{name}` in {EXAMPLES_FILE} runs another subcommand"
                    )),
                    Err(e) => problems.push(format!(
                        "the example of subcommand `{name}` in {EXAMPLES_FILE} does not parse: {}",
                        e.to_string().lines().next().unwrap_or_default()
                    )),
                }
                let _ = writeln!(text, "Example:\n\n```sh\n{}\n```\n", line.trim());
            }
        }
    }
    if problems.is_empty() {
        Ok(text)
    } else {
        Err(problems)
    }
}

/// How a client is observed, in words, from its capabilities.
fn observed(c: &Capabilities) -> Vec<&'static str> {
    let mut seen =
        vec!["the wire: every request it sends and response it gets, on the fake servers"];
    if c.watch {
        seen.push("its watcher callbacks (resource watches)");
    }
    if c.projected_watch {
        seen.push("projected watches: a Cluster or endpoints watch observed through a channel whose config makes the client watch exactly that resource");
    }
    if c.dial_config {
        seen.push("the config a dial resolved to");
    }
    if c.rpc {
        seen.push("RPC outcomes (code, backend)");
    }
    if c.channel_states {
        seen.push("channel connectivity states");
    }
    if c.csds {
        seen.push("CSDS (polled at every checkpoint)");
    }
    if c.resource_counts {
        seen.push(
            "gRFC A78's `grpc.xds_client.resources` gauge, standing in for CSDS where it is exact",
        );
    }
    if c.admin {
        seen.push("its admin API (config dump and stats), standing in for CSDS where it is exact");
    }
    if c.client_events {
        seen.push("its own events (call lifecycle, backoff, timers, logs)");
    }
    if c.serve {
        seen.push("xDS-enabled servers' serving states");
    }
    if c.kds_zone {
        seen.push("what it stores from its global, as a Kuma zone (its store changes)");
    }
    seen
}

pub fn client(client: &Client, sources: &Sources) -> String {
    let c = &client.capabilities;
    let mut text = head(
        &format!("`{}`", client.name),
        &format!(
            "{}\n\nGenerated from its {}capabilities and expectations file. The \
             [clients page](../../clients/index.md) compares the clients; \
             [Capabilities](../capabilities.md) says what each capability means.",
            if client.description.is_empty() {
                "A client under test."
            } else {
                client.description.as_str()
            },
            if client.manifest.is_some() {
                "manifest, "
            } else {
                ""
            }
        ),
    );
    text.push_str("## How it runs\n\n");
    match &client.manifest {
        None => {
            let _ = writeln!(
                text,
                "- In the harness's process (`--client {}`).",
                client.name
            );
        }
        Some(m) => {
            let _ = writeln!(
                text,
                "- {}; `--client {}` runs it, started as `{}`.",
                match m.driver {
                    xds_client_under_test::Driver::Adapter =>
                        "A process speaking the adapter protocol (`client-under-test/ADAPTER_PROTOCOL.md`)",
                    xds_client_under_test::Driver::Envoy =>
                        "A process driven as Envoy: its own bootstrap, admin API and listeners",
                    xds_client_under_test::Driver::Kuma =>
                        "A kuma-cp driven as a Kuma zone: its global is the run's, its store read and written over its REST API",
                },
                client.name,
                m.command.join(" ")
            );
            if let Some(install) = &m.install {
                let _ = writeln!(
                    text,
                    "- Installed on first use by `{}`{}.",
                    install.join(" "),
                    m.installed
                        .as_ref()
                        .map(|i| format!(" (done when `{}` exists)", i.display()))
                        .unwrap_or_default()
                );
            }
            if !m.env.is_empty() {
                let _ = writeln!(
                    text,
                    "- Environment: {}.",
                    m.env
                        .iter()
                        .map(|(k, v)| format!("`{k}={v}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
    }
    let _ = writeln!(
        text,
        "- Time: {}.",
        if c.virtual_time && c.channels_need_real_time {
            "virtual (in-memory transport) for watches; a scenario that dials or sends RPCs plays on real time over TCP on loopback"
        } else if c.virtual_time {
            "virtual, over the in-memory transport"
        } else {
            "real, over TCP on loopback"
        }
    );
    if c.kds_only() {
        text.push_str("- Protocols: Kuma's KDS (delta xDS between a zone and its global) only.\n");
    } else {
        let _ = writeln!(
            text,
            "- Protocols: state of the world{}{}.",
            if c.delta { " and delta" } else { " only" },
            if c.kds_zone {
                ", and Kuma's KDS as a zone"
            } else {
                ""
            }
        );
    }
    if !c.profiles.is_empty() {
        let _ = writeln!(text, "- Profiles: {}.", c.profiles.join(", "));
    }
    text.push_str("\n## How it is observed\n\n");
    for line in observed(c) {
        let _ = writeln!(text, "- {line}");
    }
    text.push_str("\n## Capabilities\n\n| capability | it has |\n|---|---|\n");
    for entry in &sources.capabilities {
        let _ = writeln!(
            text,
            "| [`{0}`](../capabilities.md#{1}) | {2} |",
            entry.name,
            anchor(&entry.name),
            capability_value(c, &entry.name).unwrap_or("-".into())
        );
    }
    text.push('\n');
    if !c.env_not_read.is_empty() {
        text.push_str(
            "Variables a scenario may set that its release does not read, and why \
             (a scenario setting one is not applicable to it):\n\n",
        );
        for (name, why) in &c.env_not_read {
            let _ = writeln!(text, "- `{name}`: {why}");
        }
        text.push('\n');
    }
    // What the gate covers of each spec (a checkout whose scenarios do not
    // load has nothing to tell: its spec-coverage page says why).
    if let Ok(coverage) = &sources.coverage {
        let tallies = super::client_specs::expected_per_spec(client, coverage.loaded.values());
        text.push_str(&super::client_specs::section(&tallies));
    }
    text.push_str("## Expectations\n\n");
    let Some(file) = &client.expectations_file else {
        text.push_str("It keeps no expectations file: it is held to every scenario as written.\n");
        return text;
    };
    let entries = &client.expectations.entries;
    let count = |e: Expected, chaos: bool| {
        entries
            .iter()
            .filter(|(id, entry)| entry.expect == e && id.starts_with(INVARIANT_PREFIX) == chaos)
            .count()
    };
    let _ = writeln!(
        text,
        "Held to `{file}`: {} known failures, {} flaky, {} skipped, {} chaos invariants \
         known broken ([Expectations](../../ci/expectations.md)).\n",
        count(Expected::Fail, false),
        count(Expected::Flaky, false),
        count(Expected::Skip, false),
        entries
            .keys()
            .filter(|id| id.starts_with(INVARIANT_PREFIX))
            .count()
    );
    let sections = [
        ("Known failures", Expected::Fail, false),
        ("Flaky", Expected::Flaky, false),
        ("Skipped", Expected::Skip, false),
    ];
    for (title, expected, chaos) in sections {
        let list: Vec<_> = entries
            .iter()
            .filter(|(id, e)| e.expect == expected && id.starts_with(INVARIANT_PREFIX) == chaos)
            .collect();
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(text, "### {title}\n");
        for (id, entry) in list {
            let _ = write!(text, "- `{id}`: {}", cell(&entry.reason));
            if let Some(link) = &entry.link {
                let _ = write!(text, " ({link})");
            }
            text.push('\n');
        }
        text.push('\n');
    }
    let chaos: Vec<_> = entries
        .iter()
        .filter(|(id, _)| id.starts_with(INVARIANT_PREFIX))
        .collect();
    if !chaos.is_empty() {
        text.push_str("### Chaos invariants known broken\n\n");
        for (id, entry) in chaos {
            let name = id.trim_start_matches(INVARIANT_PREFIX);
            let _ = writeln!(
                text,
                "- [`{name}`](../invariants.md#{}): {}",
                anchor(name),
                cell(&entry.reason)
            );
        }
        text.push('\n');
    }
    text
}
