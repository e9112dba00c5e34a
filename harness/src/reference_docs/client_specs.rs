//! A client's page, per spec: of the runs of this checkout's scenarios
//! tagged with it (a run counts under each tag of its scenario's `spec:`
//! list), how many the gate holds the client to pass, how many its
//! expectations (or a scenario's `known_failures`) expect to fail, and how
//! many it cannot be asked (n/a, by what it lacks, or skipped by its
//! expectations file). What the gate expects, read from capabilities and
//! expectations without running anything: results are the matrix's; a
//! run's own summary gives the same counts from what it played.

use std::fmt::Write as _;

use xds_conformance_reports::spec_tally::{NO_SPEC, SpecTally};
use xds_conformance_reports::specs::group_rank;

use super::Client;
use crate::expectations::Expected;
use crate::scenario::Scenario;

/// The tallies of `client` over `scenarios`: `pass` counts the runs it is
/// held to pass, `known` those expected to fail.
pub fn expected_per_spec<'a>(
    client: &Client,
    scenarios: impl IntoIterator<Item = &'a Scenario>,
) -> Vec<SpecTally> {
    let mut tallies: std::collections::BTreeMap<String, SpecTally> = Default::default();
    for scenario in scenarios {
        for run in scenario.variants() {
            let missing = crate::runner::missing_capabilities(&run, &client.capabilities);
            let entry = client.expectations.entries.get(&run.name).map(|e| e.expect);
            let tags: Vec<&str> = if run.spec.is_empty() {
                vec![NO_SPEC]
            } else {
                run.spec.iter().map(String::as_str).collect()
            };
            for tag in tags {
                let tally = tallies.entry(tag.to_string()).or_insert_with(|| SpecTally {
                    spec: tag.to_string(),
                    ..SpecTally::default()
                });
                if !missing.is_empty() {
                    *tally.not_applicable.entry(missing.join(" + ")).or_default() += 1;
                    continue;
                }
                match entry {
                    Some(Expected::Skip) => {
                        *tally
                            .not_applicable
                            .entry("skipped by its expectations file".to_string())
                            .or_default() += 1;
                    }
                    Some(Expected::Fail | Expected::Flaky) => tally.known += 1,
                    None if scenario.known_failures.contains_key(&client.name) => {
                        tally.known += 1;
                    }
                    None => tally.pass += 1,
                }
            }
        }
    }
    let mut out: Vec<SpecTally> = tallies.into_values().collect();
    out.sort_by_key(|t| group_rank((t.spec != NO_SPEC).then_some(t.spec.as_str())));
    out
}

/// The page's section: a table, one row per spec.
pub fn section(tallies: &[SpecTally]) -> String {
    let mut text = String::from(
        "## Per spec\n\n\
         What the gate holds it to on this checkout's scenarios, per tag of \
         their `spec:` lists (a run counts under each tag of its scenario): \
         the runs it must pass, those its expectations expect to fail, and \
         those it cannot be asked (n/a, by what it lacks). Expected, not \
         results: a run's summary counts what it played, and the \
         [matrix](../../clients/matrix.md) shows it.\n\n\
         | spec | runs | held to pass | expected to fail | n/a |\n|---|---|---|---|---|\n",
    );
    for t in tallies {
        let mut groups: Vec<(&String, &usize)> = t.not_applicable.iter().collect();
        groups.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let na: usize = t.not_applicable.values().sum();
        let na = if na == 0 {
            "0".to_string()
        } else {
            format!(
                "{na}: {}",
                groups
                    .iter()
                    .map(|(why, n)| format!("{n} {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} |",
            t.spec,
            t.runs(),
            t.pass,
            t.known,
            na.replace('|', "\\|")
        );
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expectations::Expectations;
    use crate::scenario::load_str;
    use xds_client_under_test::Capabilities;

    fn scenario(name: &str, spec: &str, protocols: &str) -> Scenario {
        load_str(
            &format!("scenarios/{name}.yaml"),
            &format!(
                "description: d\nspec: [{spec}]\nprotocols: [{protocols}]\nservers:\n  \
                 primary: {{}}\nsteps:\n  - watch: {{ type: CDS, name: c1 }}\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A client with watches and no delta: held to pass what it can
    /// run, expected to fail what its file says, n/a the delta run; each
    /// run under each of its tags.
    #[test]
    fn what_the_gate_expects_is_counted_per_spec() {
        let client = Client {
            name: "c".into(),
            description: String::new(),
            capabilities: Capabilities {
                watch: true,
                grpc_bootstrap: true,
                authorities: true,
                named_lds_cds: true,
                ..Capabilities::default()
            },
            manifest: None,
            expectations_file: None,
            expectations: Expectations::parse(
                std::path::Path::new("e.yaml"),
                "a46/x: {expect: fail, reason: r}\na27/y: {expect: skip, reason: hangs}\n",
            )
            .unwrap_or_else(|e| panic!("{e}")),
        };
        let scenarios = [
            scenario("a46/x", "A46, A27", "sotw, delta"),
            scenario("a27/y", "A27", "sotw"),
            scenario("a27/z", "A27", "sotw"),
        ];
        let tallies = expected_per_spec(&client, &scenarios);
        let rows: Vec<(&str, usize, usize, usize)> = tallies
            .iter()
            .map(|t| (t.spec.as_str(), t.runs(), t.pass, t.known))
            .collect();
        assert_eq!(rows, [("A27", 4, 1, 1), ("A46", 2, 0, 1)]);
        assert_eq!(
            tallies[0]
                .not_applicable
                .get("skipped by its expectations file"),
            Some(&1)
        );
        let page = section(&tallies);
        assert!(
            page.contains("| A46 | 2 | 0 | 1 | 1: 1 incremental (delta) xDS |"),
            "{page}"
        );
    }
}
