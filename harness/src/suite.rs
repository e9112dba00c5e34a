//! Running many scenario files against one client, into a report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance_reports::{RunReport, ScenarioReport, Verdict};

use crate::runner::run_scenario;
use crate::scenario::{ScenarioError, load_file};

/// Clients this build can drive, by name.
pub const CLIENTS: &[&str] = &["reference"];

pub type BoxedFactory = Box<dyn Fn() -> Box<dyn ClientUnderTest>>;

/// A factory for the named client, or None if there is no such client.
pub fn client_factory(name: &str) -> Option<BoxedFactory> {
    match name {
        "reference" => Some(Box::new(|| {
            Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
        })),
        _ => None,
    }
}

/// Every `.yaml`/`.yml` file under `paths` (files are taken as given),
/// sorted, so runs are in a stable order.
pub fn discover(paths: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut found)?;
        } else if path.exists() {
            found.push(path.clone());
        } else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{}: no such file or directory", path.display()),
            ));
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
    Ok(())
}

/// Loads and runs each file; a file that does not load is an ERROR
/// result naming the file, line and column, and the run goes on.
pub fn run_files(
    files: &[PathBuf],
    filter: Option<&str>,
    client: &str,
    factory: &BoxedFactory,
) -> RunReport {
    let started = std::time::Instant::now();
    let mut results = Vec::new();
    for file in files {
        let source = file.display().to_string();
        let scenario = match load_file(file) {
            Ok(s) => s,
            Err(e) => {
                if filter.is_none_or(|f| source.contains(f)) {
                    results.push(load_error(&source, &e));
                }
                continue;
            }
        };
        if filter.is_some_and(|f| !scenario.name.contains(f) && !source.contains(f)) {
            continue;
        }
        let outcome = run_scenario(&scenario, factory.as_ref());
        results.push(ScenarioReport {
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            spec: scenario.spec.clone(),
            source,
            verdict: outcome.verdict,
            virtual_duration: outcome.virtual_duration,
            wall_duration: outcome.wall_duration,
            timeline: outcome.timeline,
        });
    }
    RunReport {
        client: client.to_string(),
        results,
        wall_duration: started.elapsed(),
    }
}

fn load_error(source: &str, error: &ScenarioError) -> ScenarioReport {
    ScenarioReport {
        name: source.to_string(),
        description: String::new(),
        spec: Vec::new(),
        source: source.to_string(),
        verdict: Verdict::Error {
            message: error.to_string(),
        },
        virtual_duration: Duration::ZERO,
        wall_duration: Duration::ZERO,
        timeline: String::new(),
    }
}
