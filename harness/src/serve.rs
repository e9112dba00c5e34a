//! `xds-conformance serve`: a scenario's fake servers on real TCP, for
//! pointing a client at by hand.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use xds_fake_server::{FakeAdsServer, ServerConfig, ServingMode};

use crate::runner::bootstrap_json;
use crate::scenario::Scenario;
use crate::timeline::{EventKind, Timeline, render_line};

/// Serves until Ctrl-C. Server events are printed as timeline lines.
pub async fn serve_tcp(scenario: &Scenario, bootstrap_out: &Path) -> Result<(), String> {
    let timeline = Timeline::new(tokio::time::Instant::now());
    let mut addresses = BTreeMap::new();
    let mut servers = Vec::new();
    for def in &scenario.servers {
        let mode = if def.scripted {
            ServingMode::Scripted
        } else {
            ServingMode::Auto
        };
        let server = FakeAdsServer::new(ServerConfig {
            name: def.name.clone(),
            mode,
        });
        let tl = timeline.clone();
        server.set_observer(Arc::new(move |recorded| {
            tl.record_at(
                recorded.at,
                recorded.server.clone(),
                EventKind::Server(Box::new(recorded.event.clone())),
            );
            if let Some(line) = tl.events().last().and_then(render_line) {
                println!("{line}");
            }
        }));
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
    let json = bootstrap_json(scenario, &|name| {
        addresses.get(name).cloned().unwrap_or_default()
    });
    if let Some(dir) = bootstrap_out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(bootstrap_out, &json)
        .map_err(|e| format!("{}: {e}", bootstrap_out.display()))?;
    println!(
        "bootstrap written to {} (GRPC_XDS_BOOTSTRAP={0})",
        bootstrap_out.display()
    );
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    for server in &servers {
        server.shutdown();
    }
    Ok(())
}
