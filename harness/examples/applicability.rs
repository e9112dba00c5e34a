//! How much of the suite each client runs, decided before anything runs
//! (what `matrix` would mark n/a, from each client's capabilities), with
//! the reasons, most common first. The numbers of the coverage issue:
//!
//! ```sh
//! cargo run -p xds-conformance --example applicability -- scenarios
//! ```
//!
//! With `XDS_APPLICABILITY_LIST=<client>`, each reason of that client also
//! lists its runs (every protocol), to pick what to open next.
//!
//! A client's start can still refuse a set-up (Envoy and a third xDS
//! server): `matrix` counts those as n/a too, so its counts can be a few
//! lower.

use std::collections::BTreeMap;
use std::path::PathBuf;

use xds_client_under_test::{
    AdapterManifest, Capabilities, ClientUnderTest, GrpcRustClient, ReferenceClient,
};
use xds_conformance::runner::not_applicable;
use xds_conformance::suite::{ADAPTERS_DIR, default_matrix_clients, discover, load, repo_root};
use xds_vocabulary::AdsProtocol;

fn capabilities(name: &str) -> Capabilities {
    match name {
        "reference" => ReferenceClient::new().capabilities(),
        "grpc-rust" => GrpcRustClient::new().capabilities(),
        adapter => {
            let dir = repo_root()
                .expect("run from the checkout")
                .join(ADAPTERS_DIR)
                .join(adapter);
            let manifest = AdapterManifest::load(&dir).expect("manifest");
            let root = manifest.root_dir(&dir).expect("the manifest's root");
            xds_client_under_test::driven(&root, manifest).capabilities()
        }
    }
}

fn main() {
    let paths: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let paths = if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    };
    let runs: Vec<_> = discover(&paths)
        .expect("scenario paths")
        .iter()
        .filter_map(|f| load(f).ok())
        .flat_map(|s| s.variants())
        .collect();
    let list = std::env::var("XDS_APPLICABILITY_LIST").ok();
    for client in default_matrix_clients() {
        let caps = capabilities(&client);
        let mut listed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let (mut sotw, mut sotw_applicable, mut general, mut general_applicable) = (0, 0, 0, 0);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for run in &runs {
            // Envoy's own scenarios (scenarios/envoy/) are not general.
            let envoy_only = run.source.contains("scenarios/envoy/");
            let missing = not_applicable(run, &caps);
            if let (Some(reason), false, true) = (
                &missing,
                envoy_only,
                list.as_deref() == Some(client.as_str()),
            ) {
                listed
                    .entry(reason.clone())
                    .or_default()
                    .push(format!("{} ({:?})", run.name, run.protocol));
            }
            if !envoy_only {
                general += 1;
                general_applicable += usize::from(missing.is_none());
                if run.protocol == AdsProtocol::Sotw {
                    sotw += 1;
                    sotw_applicable += usize::from(missing.is_none());
                }
            }
            // The targets count SotW runs that are not Envoy-only, so those
            // are the reasons worth reading.
            if let (Some(reason), false, AdsProtocol::Sotw) = (missing, envoy_only, run.protocol) {
                *reasons.entry(reason).or_default() += 1;
            }
        }
        let percent = |a: usize, b: usize| (100 * a).checked_div(b).unwrap_or(0);
        println!(
            "{client}: SotW runs that are not Envoy-only: {sotw_applicable} of {sotw} ({}%); \
             all runs that are not Envoy-only: {general_applicable} of {general} ({}%)",
            percent(sotw_applicable, sotw),
            percent(general_applicable, general)
        );
        let mut reasons: Vec<_> = reasons.into_iter().collect();
        reasons.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
        for (reason, count) in &reasons {
            println!("    {count:>4}  {reason}");
        }
        for (reason, runs) in &listed {
            println!("  {reason}:");
            for run in runs {
                println!("      {run}");
            }
        }
    }
}
