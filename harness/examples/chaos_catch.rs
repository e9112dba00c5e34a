//! How fast chaos catches each invariant's client broken on purpose: for
//! each invariant, campaigns of `--seeds` seeds (1, 2, ...) on its broken
//! client, each stopped at its first finding of that invariant, within
//! 1,000 schedules. Prints, per invariant, the median number of schedules
//! played until it was caught, the slowest seed, and how many seeds caught
//! it at all.
//!
//! `cargo run --release -p xds-conformance --example chaos_catch -- --seeds 21`

#[path = "../tests/support/broken_against.rs"]
mod broken_against;

use xds_client_under_test::ReferenceClient;
use xds_conformance::chaos::{Rules, Shape, campaign, invariant};

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
        let shape = Shape {
            protocol,
            ..Shape::default()
        };
        let mut counts = Vec::new();
        for seed in 1..=seeds {
            let caught = (0..WITHIN).find(|index| {
                let done = campaign(
                    (&factory, &rules),
                    seed,
                    (*index, 1),
                    None,
                    &shape,
                    None,
                    &mut |_, _| {},
                );
                done.findings.iter().any(|f| f.broke == invariant.name)
            });
            // Schedules played until caught: the index of the catching one
            // plus one.
            counts.push(caught.map(|index| index + 1));
        }
        let mut caught: Vec<u64> = counts.iter().flatten().copied().collect();
        caught.sort_unstable();
        all_caught &= caught.len() as u64 == seeds;
        let median = caught
            .get(caught.len() / 2)
            .map_or("-".to_string(), u64::to_string);
        let slowest = caught.last().map_or("-".to_string(), u64::to_string);
        println!(
            "| `{}` ({protocol}) | {median} | {slowest} | {}/{seeds} |",
            invariant.name,
            caught.len()
        );
    }
    if !all_caught {
        eprintln!("a broken client went uncaught within {WITHIN} schedules of some seed");
        std::process::exit(1);
    }
}
