//! The page of defects: every deliberate defect of the reference client
//! (`xds_client_under_test::defect`: its name and the doc comment where it
//! is declared), the scenarios that catch each and where (the table of
//! catches, `crate::defects::CAUGHT_FILE`), and how to play one on a file
//! (`run --client reference --defect NAME`). As current as `reference
//! --check` keeps it: a new defect, catch or moved line changes it.

use std::fmt::Write as _;

use super::schema::{anchor, cell};
use super::{Declared, GENERATED, Sources};
use crate::defects::{CAUGHT_FILE, Caught};

/// Where the page goes, under the reference folder.
pub const PAGE: &str = "defects.md";

/// The page's sections, in order: the heading, and what its defects are.
const SECTIONS: [(&str, &str); 4] = [
    (
        "The xDS client",
        "The switches of `Defects` (`client-under-test/reference/src/profile.rs`): what the \
         broken client does, and the rule that forbids it.",
    ),
    (
        "The KDS zone",
        "The switches of `ZoneDefects`: the reference zone breaking one rule a Kuma zone keeps \
         on KDS. A file under `scenarios/kds/` plays the zone.",
    ),
    (
        "Resource validation",
        "One rule of gRPC's resource validation not enforced (`ValidationRule`, \
         `client-under-test/reference/src/resource/validation.rs`); each text is the rule. \
         Broken, what it rejects is accepted, and what it ignores is used, or rejected.",
    ),
    (
        "Server-reported resource errors",
        "One rule of gRFC A88 for the errors a server reports per resource (xRFC TP3 \
         `resource_errors`) not kept (`ServerErrorRule`); each text is the rule, and what the \
         broken client does instead.",
    ),
];

/// A defect's section (an index of [`SECTIONS`]), by the form of its
/// name; `None` for rules of a kind the page does not know.
fn section(name: &str) -> Option<usize> {
    match name.split_once("::") {
        Some(("ValidationRule", _)) => Some(2),
        Some(("ServerErrorRule", _)) => Some(3),
        Some(_) => None,
        None if name.starts_with("zone_") => Some(1),
        None => Some(0),
    }
}

/// The page, or a problem when the table of catches cannot be read or
/// names a scenario the checkout lacks.
pub fn page(sources: &Sources, problems: &mut Vec<String>) -> String {
    let caught: &[Caught] = match &sources.caught {
        Ok(caught) => caught,
        Err(e) => {
            problems.push(format!("the defects page: {e}"));
            return String::new();
        }
    };
    if let Ok(coverage) = &sources.coverage {
        for catch in caught {
            if !coverage.loaded.contains_key(&catch.scenario) {
                problems.push(format!(
                    "the defects page: {CAUGHT_FILE} says {catch} catches {}, but there is no \
                     scenario {} under scenarios/",
                    catch.defect, catch.scenario
                ));
            }
        }
    }
    for defect in &sources.defects {
        if defect.doc.trim().is_empty() {
            problems.push(format!(
                "the defects page: defect `{}` has no doc comment where it is declared",
                defect.name
            ));
        }
        if section(&defect.name).is_none() {
            problems.push(format!(
                "the defects page: defect `{}` is of a kind the page has no section for",
                defect.name
            ));
        }
    }
    let catching = |defect: &Declared| -> Vec<&Caught> {
        caught.iter().filter(|c| c.defect == defect.name).collect()
    };
    let with_a_catch = sources
        .defects
        .iter()
        .filter(|d| !catching(d).is_empty())
        .count();
    let mut scenarios: Vec<&str> = caught.iter().map(|c| c.scenario.as_str()).collect();
    scenarios.sort_unstable();
    scenarios.dedup();
    let mut text = format!(
        "{GENERATED}\n\n# Defects of the reference client\n\n\
         The reference client broken on purpose, one rule at a time. A scenario is only worth \
         what it catches: a check that cannot fail proves nothing. To see a file catch a \
         defect, play it on the reference client with the defect:\n\n\
         ```sh\n\
         xds-conformance run scenarios/a57/backoff-growth-and-reset.yaml --client reference \
         --defect backoff_never_resets\n\
         ```\n\n\
         Without `--defect` the file passes; with it a run FAILs (exit code 1) at the \
         expectation that checks the rule, its message naming the file, line and column. A \
         KDS file plays the reference zone, and takes its defects (`zone_…`). Reports call the \
         client `reference-broken`. A name the client does not have is broken input (exit \
         code 2), answered with the nearest names; so is `--defect` with any other client \
         (`--client reference` only).\n\n\
         The catches below are `{CAUGHT_FILE}`, which `harness/tests/broken_clients.rs` plays \
         line by line: the scenario passes on the reference client and FAILs at that place \
         with the defect (or, for a defect that takes an alternative the spec allows beside \
         the behaviour it prefers, reports every run divergent with the note shown). A \
         scenario that catches a defect gets its line there. A defect \
         without one is caught by no scenario file: the chaos invariants catch some \
         ([Invariants](invariants.md)), and some are behaviour the specs allow, as their text \
         says.\n\n\
         {} defects, {with_a_catch} of them caught by {} scenarios ({} catches).\n\n",
        sources.defects.len(),
        scenarios.len(),
        caught.len(),
    );
    text.push_str("| section | defects | caught by a scenario |\n|---|---|---|\n");
    for (index, (heading, _)) in SECTIONS.iter().enumerate() {
        let defects: Vec<&Declared> = sources
            .defects
            .iter()
            .filter(|d| section(&d.name) == Some(index))
            .collect();
        let _ = writeln!(
            text,
            "| [{heading}](#{}) | {} | {} |",
            anchor(heading),
            defects.len(),
            defects.iter().filter(|d| !catching(d).is_empty()).count()
        );
    }
    text.push('\n');
    for (index, (heading, intro)) in SECTIONS.iter().enumerate() {
        let _ = write!(
            text,
            "## {heading}\n\n{intro}\n\n| defect | what it breaks | caught by |\n|---|---|---|\n"
        );
        for defect in sources
            .defects
            .iter()
            .filter(|d| section(&d.name) == Some(index))
        {
            let catches = catching(defect);
            let by = if catches.is_empty() {
                "—".to_string()
            } else {
                catches
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(text, "| `{}` | {} | {by} |", defect.name, cell(&defect.doc));
        }
        text.push('\n');
    }
    text
}
