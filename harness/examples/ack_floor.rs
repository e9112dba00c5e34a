//! Calibration for `bench-peers`: the fake server's response -> ACK time
//! for a client that does nothing but ACK. It decodes the
//! DiscoveryResponse (the resources stay opaque `Any`s) and replies at
//! once, so what remains is the server's encoding and writing, loopback
//! TCP, HTTP/2 and the server's decoding of a 10,000-name request: the
//! floor under every client's number.
//!
//! The fake server runs on its own thread and runtime, as in `bench-peers`
//! (where it shares its thread with the runner, a little slower).
//!
//! ```sh
//! cargo run --release -p xds-conformance --example ack_floor -- 10000
//! ```
use std::net::SocketAddr;
use std::time::Duration;

use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use xds_conformance::runner::fake_server;
use xds_conformance::scenario::load_str;
use xds_conformance::timeline::{EventKind, Timeline};
use xds_fake_server::event::ServerEvent;

const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let mut yaml = String::from("description: floor\nservers:\n  primary:\n    resources:\n");
    for i in 0..n {
        yaml.push_str(&format!("      - cluster: {{ name: c{i} }}\n"));
    }
    yaml.push_str("steps:\n  - wait: 1s\n");
    let scenario = load_str("floor", &yaml).unwrap();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
    let (tl_tx, tl_rx) = std::sync::mpsc::channel::<Timeline>();
    let def = scenario.servers[0].clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let timeline = Timeline::new(tokio::time::Instant::now());
            let server = fake_server(&def, &timeline);
            let addr = server
                .serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0)))
                .await
                .unwrap();
            server.set_resources(def.resources.clone(), None);
            addr_tx.send(addr).unwrap();
            tl_tx.send(timeline).unwrap();
            tokio::time::sleep(Duration::from_secs(3600)).await;
        })
    });
    let addr = addr_rx.recv().unwrap();
    let timeline = tl_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        for run in 0..5 {
            let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{addr}"))
                .await
                .unwrap()
                .max_decoding_message_size(64 << 20);
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            tx.send(DiscoveryRequest {
                type_url: CDS.into(),
                resource_names: (0..n).map(|i| format!("c{i}")).collect(),
                node: Some(Default::default()),
                ..Default::default()
            })
            .unwrap();
            let mut responses = client
                .stream_aggregated_resources(tokio_stream::wrappers::UnboundedReceiverStream::new(
                    rx,
                ))
                .await
                .unwrap()
                .into_inner();
            let r = responses.message().await.unwrap().unwrap();
            tx.send(DiscoveryRequest {
                type_url: CDS.into(),
                version_info: r.version_info.clone(),
                response_nonce: r.nonce.clone(),
                resource_names: (0..n).map(|i| format!("c{i}")).collect(),
                ..Default::default()
            })
            .unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            let events = timeline.events();
            let sent = events
                .iter()
                .rev()
                .find_map(|e| match &e.kind {
                    EventKind::Server(s) => match &**s {
                        ServerEvent::ResponseSent { response, .. } if response.nonce == r.nonce => {
                            Some(e.at)
                        }
                        _ => None,
                    },
                    _ => None,
                })
                .unwrap();
            let acked = events
                .iter()
                .rev()
                .find_map(|e| match &e.kind {
                    EventKind::Server(s) => match &**s {
                        ServerEvent::RequestReceived { request, .. }
                            if request.response_nonce == r.nonce =>
                        {
                            Some(e.at)
                        }
                        _ => None,
                    },
                    _ => None,
                })
                .unwrap();
            println!(
                "run {run}: response -> ACK {:.1} ms ({} resources)",
                (acked - sent).as_secs_f64() * 1000.0,
                r.resources.len()
            );
        }
    });
}
