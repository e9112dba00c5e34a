//! `xds-conformance serve`: a scenario's fake servers on real TCP, for
//! pointing a client at by hand.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use crate::bootstrap::client_bootstrap;
use crate::runner::fake_server;
use crate::scenario::Scenario;
use crate::timeline::{Timeline, render_line};
use crate::tls::{RunCertificates, channel_creds_of};

/// Serves until Ctrl-C. Server events are printed as timeline lines.
pub async fn serve_tcp(scenario: &Scenario, bootstrap_out: &Path) -> Result<(), String> {
    let timeline = Timeline::new(tokio::time::Instant::now());
    // Print every event as it is recorded, and forget it: a server that
    // runs for hours must not hold every request it got.
    let printer = timeline.clone();
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        loop {
            // Checked between lines: Ctrl-C must not wait for a backlog of
            // events to be printed to a slow reader.
            for event in printer.take_events() {
                if stopped.is_cancelled() {
                    return;
                }
                if let Some(line) = render_line(&event) {
                    println!("{line}");
                }
            }
            tokio::select! {
                _ = printer.changed() => {}
                _ = stopped.cancelled() => return,
            }
        }
    });
    let mut addresses = BTreeMap::new();
    let mut servers = Vec::new();
    // Kept until the servers stop: the bootstrap names its files.
    let certificates = RunCertificates::for_scenario(scenario).map_err(|e| e.to_string())?;
    if let Some(certificates) = &certificates {
        println!("TLS certificates in {}", certificates.dir().display());
    }
    for def in &scenario.servers {
        let server = fake_server(def, &timeline);
        if let Some(certificates) = &certificates {
            let settings = certificates
                .server_settings(def)
                .map_err(|e| e.to_string())?;
            server
                .set_tls(settings.as_ref())
                .map_err(|e| format!("cannot serve TLS on {}: {e}", def.name))?;
        }
        let addr: SocketAddr = server
            .serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| format!("cannot serve {}: {e}", def.name))?;
        if !def.resources.is_empty() {
            server.set_resources(def.resources.clone(), None);
        }
        println!("server {} listening on {addr}", def.name);
        addresses.insert(def.name.clone(), addr.to_string());
        servers.push(server);
    }
    let json = client_bootstrap(
        scenario,
        &|name| addresses.get(name).cloned().unwrap_or_default(),
        &channel_creds_of(scenario, certificates.as_ref()),
    )
    .grpc_json();
    if let Some(dir) = bootstrap_out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    xds_conformance_reports::write_whole(bootstrap_out, json.as_bytes())
        .map_err(|e| format!("{}: {e}", bootstrap_out.display()))?;
    println!(
        "bootstrap written to {} (GRPC_XDS_BOOTSTRAP={0})",
        bootstrap_out.display()
    );
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    stop.cancel();
    for server in &servers {
        server.shutdown();
    }
    Ok(())
}
