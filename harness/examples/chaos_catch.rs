//! How fast chaos catches each invariant's client broken on purpose: for
//! each invariant, campaigns of `--seeds` seeds (1, 2, ...) on its broken
//! client, each stopped at its first finding of that invariant, within
//! 1,000 schedules. Prints, per invariant, the median number of schedules
//! played until it was caught, the slowest seed, and how many seeds caught
//! it at all. Then the same for the reference client's own defects that
//! issue 22 asks chaos to find (each put back as the defect its regression
//! scenario's broken client has), by the invariant meant to find it.
//!
//! `cargo run --release -p xds-conformance --example chaos_catch -- --seeds 21`

#[path = "../tests/support/broken_against.rs"]
mod broken_against;

use xds_client_under_test::ReferenceClient;
use xds_conformance::chaos::{Rules, Shape, campaign, invariant};
use xds_vocabulary::AdsProtocol;

/// Schedules a broken client must be caught within (issue 22).
const WITHIN: u64 = 1_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seeds: u64 = args
        .iter()
        .position(|a| a == "--seeds")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("--seeds takes a number"))
        .unwrap_or(21);
    use xds_client_under_test::ClientUnderTest as _;
    let rules = Rules::new(ReferenceClient::new().capabilities());
    println!(
        "| invariant | broken client caught after (median schedules) | slowest seed | caught within {WITHIN} |"
    );
    println!("|---|---:|---:|---:|");
    let mut all_caught = true;
    for invariant in invariant::ALL {
        let (factory, protocol) = broken_against::broken_against(invariant.name);
        let label = format!("`{}`", invariant.name);
        let (caught, _) = row(
            &rules,
            seeds,
            (&factory, protocol),
            Some(invariant.name),
            &label,
        );
        all_caught &= caught;
    }
    println!();
    println!(
        "| reference defect (its regression scenario) | invariant meant to find it | caught after (median schedules) | slowest seed | caught within {WITHIN} | by |"
    );
    println!("|---|---|---:|---:|---:|---|");
    for (defect, set, scenario, name, protocol) in REFERENCE_DEFECTS {
        let factory = broken_against::defective(*set);
        let label = format!("`{defect}` ({scenario}) | `{name}`");
        // Any invariant that catches it found it: the reference client
        // breaks none on these seeds.
        let (_, by) = row(&rules, seeds, (&factory, *protocol), None, &label);
        println!("{by}");
    }
    if !all_caught {
        eprintln!("a broken client went uncaught within {WITHIN} schedules of some seed");
        std::process::exit(1);
    }
}

/// A reference defect: its name, how to put it back, its regression
/// scenario, the invariant meant to catch it, the protocol it shows on.
type ReferenceDefect = (
    &'static str,
    fn(&mut xds_reference_client::Defects),
    &'static str,
    &'static str,
    AdsProtocol,
);

/// The reference client's defects chaos is to find on its own (issue 22).
const REFERENCE_DEFECTS: &[ReferenceDefect] = &[
    (
        "new_watcher_misses_pending_error",
        |d| d.new_watcher_misses_pending_error = true,
        "a46/new-watcher-of-nacked-endpoints-hears-the-value-then-the-error",
        "new-watcher-hears-value-then-error",
        AdsProtocol::Sotw,
    ),
    (
        "delta_wildcard_claims_nothing",
        |d| d.delta_wildcard_claims_nothing = true,
        "delta/wildcard-reconnect-claims-what-it-holds",
        "delta-claims-what-it-holds",
        AdsProtocol::Delta,
    ),
    (
        "delta_claims_replaced_copies",
        |d| d.delta_claims_replaced_copies = true,
        "delta/back-on-the-primary-claims-nothing-the-fallback-replaced",
        "delta-claims-what-it-holds",
        AdsProtocol::Delta,
    ),
    (
        "delta_memory_dies_with_its_channel",
        |d| d.delta_memory_dies_with_its_channel = true,
        "delta/fallback-again-claims-what-only-the-fallback-sent",
        "delta-claims-what-it-holds",
        AdsProtocol::Delta,
    ),
    (
        "wildcard_misses_named_first",
        |d| d.wildcard_misses_named_first = true,
        "delta/wildcard-hears-a-resource-first-watched-by-name",
        "every-watcher-hears-each-change",
        AdsProtocol::Delta,
    ),
];

/// Plays `seeds` campaigns on the client `factory` makes, each until its
/// first finding of `invariant` (of any, for `None`; at most [`WITHIN`]
/// schedules), and prints the row `label` (without ending it for `None`):
/// whether every seed caught it, and which invariants did.
fn row(
    rules: &Rules,
    seeds: u64,
    (factory, protocol): (&xds_conformance::suite::BoxedFactory, AdsProtocol),
    invariant: Option<&str>,
    label: &str,
) -> (bool, String) {
    let shape = Shape {
        protocol,
        ..Shape::default()
    };
    let mut counts = Vec::new();
    let mut by = std::collections::BTreeMap::<&str, u64>::new();
    for seed in 1..=seeds {
        let caught = (0..WITHIN).find_map(|index| {
            let done = campaign(
                (factory, rules),
                seed,
                (index, 1),
                None,
                &shape,
                None,
                &mut |_, _| {},
            );
            done.findings
                .iter()
                .find(|f| invariant.is_none_or(|name| f.broke == name))
                .map(|f| (index, f.broke))
        });
        if let Some((_, broke)) = caught {
            *by.entry(broke).or_default() += 1;
        }
        // Schedules played until caught: the index of the catching one
        // plus one.
        counts.push(caught.map(|(index, _)| index + 1));
    }
    let mut caught: Vec<u64> = counts.iter().flatten().copied().collect();
    caught.sort_unstable();
    let median = caught
        .get(caught.len() / 2)
        .map_or("-".to_string(), u64::to_string);
    let slowest = caught.last().map_or("-".to_string(), u64::to_string);
    let end = if invariant.is_some() { "\n" } else { "" };
    print!(
        "| {label} ({protocol}) | {median} | {slowest} | {}/{seeds} |{end}",
        caught.len()
    );
    let by: Vec<String> = by
        .iter()
        .map(|(name, n)| format!(" `{name}` {n}"))
        .collect();
    (caught.len() as u64 == seeds, format!("{} |", by.join(",")))
}
