//! What the fuzz target `scenario_loader` (`fuzz/`) and the corpus replay
//! test (`tests/fuzz_corpus.rs`) run: scenario text through the loader
//! (YAML, then proto3-JSON resources, matchers, durations, names), with
//! the properties that must hold for any text. Not an API.

use crate::bootstrap::client_bootstrap;
use crate::runner::server_uri;
use crate::scenario::load_str;

/// The name the text is loaded under: a path under `scenarios/`, as the
/// suite's files are (the default scenario name comes from it).
const SOURCE: &str = "scenarios/fuzz/input.yaml";

/// Loads `data` as a scenario file; `true` when it is a valid one. Panics
/// when a property fails.
pub fn scenario_loader(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    match load_str(SOURCE, text) {
        Ok(scenario) => {
            // Loading is a function of the text.
            let again = load_str(SOURCE, text).expect("loaded once, loads again");
            assert_eq!(format!("{scenario:?}"), format!("{again:?}"));
            let variants = scenario.variants();
            assert_eq!(variants.len(), scenario.protocols.len());
            for variant in &variants {
                // Every client starts from the bootstrap the harness
                // renders; a generated one is always JSON. (TLS servers'
                // credentials exist only in a run, with its certificate
                // files: insecure here.)
                let bootstrap =
                    client_bootstrap(variant, &server_uri, &std::collections::BTreeMap::new());
                if bootstrap.config().is_some() {
                    let json = bootstrap.grpc_json();
                    assert!(
                        serde_json::from_str::<serde_json::Value>(&json).is_ok(),
                        "a generated bootstrap that is not JSON: {json}"
                    );
                }
            }
            true
        }
        Err(error) => {
            assert!(!error.message.is_empty(), "an error without a message");
            assert_eq!(error.file, SOURCE);
            // A located error shows its line with a caret (see
            // `ScenarioError`): the position points into the text.
            if error.line > 0 {
                assert!(error.column > 0, "a line without a column");
                assert!(
                    !error.snippet.is_empty(),
                    "line {} has no source to show",
                    error.line
                );
            }
            assert!(error.to_string().starts_with(SOURCE));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_broken_scenarios() {
        let valid = "
description: a watch
protocols: [sotw, delta]
servers:
  main:
    resources:
      - cluster: { name: c1 }
steps:
  - watch: { type: CDS, name: c1 }
";
        assert!(scenario_loader(valid.as_bytes()));
        assert!(!scenario_loader(b"steps: [{watch: {type: XDS}}]"));
        assert!(!scenario_loader(b"\xff"));
    }
}
