//! Delta vs state of the world, one changed resource among N Clusters
//! (issue: "bytes on the wire per update, fake-server CPU time, and the
//! reference client's time to apply the update", measured in one run):
//!
//! ```sh
//! cargo run --release -p xds-conformance --example bench_delta            # N = 1000, 10000, 100000
//! cargo run --release -p xds-conformance --example bench_delta -- 1000 5000 --updates 9
//! cargo run --release -p xds-conformance --example bench_delta -- 100000 --only delta   # e.g. under a profiler
//! ```
//!
//! For each N and protocol: a fake server holding N Clusters serves a
//! reference client watching all N (in-memory transport, real time). Once
//! the client holds them all, one Cluster changes, `--updates` times (each
//! a new value). Per update:
//! - bytes: the encoded size of the response that carries it (measured at
//!   the fake server's egress: what goes into the gRPC frame), and, for
//!   comparison, the encoded size of the changed Cluster's `Any` alone;
//! - server CPU: CPU time of the fake server's thread from the store
//!   change until the client's ACK has arrived (deciding, building,
//!   encoding and writing the response, reading the ACK);
//! - client CPU: CPU time of the reference client's thread over the same
//!   span (reading and decoding the response, validating, applying it to
//!   the cache, telling the watcher, building and writing the ACK);
//! - wall: from the response being queued to the ACK being read, at the
//!   server.
//!
//! The server and the client each run on a current-thread runtime on a
//! thread of their own, so each thread's CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`) counts only its own side. The first
//! `--warmup` updates (20) are not counted: right after the initial sync
//! the allocator is still consolidating the memory the N-resource exchange
//! gave back (measured at N = 100,000: the first ~10 delta updates cost the
//! client 0.2-2.6 ms, nearly all in glibc's `malloc` while decoding the
//! response; then about 0.1 ms).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::cluster::v3::cluster::{
    ClusterDiscoveryType, DiscoveryType, EdsClusterConfig,
};
use envoy_types::pb::envoy::config::core::v3::config_source::ConfigSourceSpecifier;
use envoy_types::pb::envoy::config::core::v3::{AggregatedConfigSource, ConfigSource};
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryResponse, Resource};
use prost::Message;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use xds_fake_server::event::{Recorded, ServerEvent};
use xds_fake_server::{FakeAdsServer, ServedResource, ServerConfig, ServingMode};
use xds_reference_client::{Bootstrap, ResourceType, XdsClient, XdsClientConfig};
use xds_vocabulary::AdsProtocol;
use xds_vocabulary::network::MemoryNetwork;

fn cluster(i: usize, generation: u32) -> ServedResource {
    let name = format!("c{i}");
    let message = Cluster {
        name: name.clone(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        eds_cluster_config: Some(EdsClusterConfig {
            eds_config: Some(ConfigSource {
                config_source_specifier: Some(ConfigSourceSpecifier::Ads(
                    AggregatedConfigSource::default(),
                )),
                ..Default::default()
            }),
            service_name: format!("e{i}-{generation}"),
        }),
        ..Default::default()
    };
    ServedResource::from_message(name, &message)
}

/// A current-thread runtime on a thread of its own, kept alive until
/// dropped.
struct Side {
    handle: Handle,
    _stop: oneshot::Sender<()>,
}

impl Side {
    fn start(name: &str) -> Side {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                let _ = handle_tx.send(runtime.handle().clone());
                runtime.block_on(async move {
                    let _ = stopped.await;
                });
            })
            .expect("thread");
        Side {
            handle: handle_rx.recv().expect("runtime handle"),
            _stop: stop,
        }
    }

    /// Runs `f` on this side's thread and returns its result.
    fn run<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = tx.send(f());
        });
        rx.recv().expect("the side's thread is gone")
    }

    /// CPU time this side's thread has used so far.
    fn cpu(&self) -> Duration {
        self.run(thread_cpu)
    }
}

fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// What one update cost.
struct Update {
    bytes: usize,
    resource_bytes: usize,
    /// Delta: the same response without the resource's body (type URL,
    /// nonce, system version, the Resource's name and version).
    envelope_bytes: Option<usize>,
    server_cpu: Duration,
    client_cpu: Duration,
    wall: Duration,
}

/// The responses a server sent and the ACKs it read, as they happen.
#[derive(Default)]
struct Seen {
    responses: Vec<(tokio::time::Instant, String, usize, Option<usize>)>,
    acks: Vec<(tokio::time::Instant, String)>,
}

fn measure(n: usize, protocol: AdsProtocol, warmup: u32, updates: u32) -> Vec<Update> {
    let network = MemoryNetwork::new();
    let server_side = Side::start("fake-server");
    let client_side = Side::start("client");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (wake, mut woken) = mpsc::unbounded_channel::<()>();

    let server = {
        let network = network.clone();
        let seen = seen.clone();
        server_side.run(move || {
            let server = FakeAdsServer::new(ServerConfig {
                name: "primary".into(),
                mode: ServingMode::Auto,
            });
            server.set_observer(Arc::new(move |recorded: &Recorded<ServerEvent>| {
                let mut seen = seen.lock().expect("lock");
                match &recorded.event {
                    ServerEvent::ResponseSent { response, .. } => {
                        let envelope = response.delta.as_ref().map(|delta| {
                            DeltaDiscoveryResponse {
                                system_version_info: response.version_info.clone(),
                                resources: response
                                    .resource_names
                                    .iter()
                                    .zip(&delta.resources)
                                    .map(|(name, r)| Resource {
                                        name: name.clone(),
                                        version: r.version.clone(),
                                        ..Default::default()
                                    })
                                    .collect(),
                                type_url: response.type_url.clone(),
                                removed_resources: delta.removed_resources.clone(),
                                nonce: response.nonce.clone(),
                                ..Default::default()
                            }
                            .encoded_len()
                        });
                        seen.responses.push((
                            recorded.at,
                            response.nonce.clone(),
                            response.encoded_len,
                            envelope,
                        ))
                    }
                    ServerEvent::RequestReceived { request, .. }
                        if !request.response_nonce.is_empty() =>
                    {
                        seen.acks
                            .push((recorded.at, request.response_nonce.clone()));
                        let _ = wake.send(());
                    }
                    _ => {}
                }
            }));
            server
                .serve_in_memory(&network, "primary:443")
                .expect("serve");
            server.set_resources((0..n).map(|i| cluster(i, 0)).collect(), None);
            server
        })
    };

    let changed = Arc::new(AtomicU64::new(0));
    let client = {
        let changed = changed.clone();
        client_side.run(move || {
            let bootstrap = Bootstrap::from_json(
                &serde_json::json!({
                    "xds_servers": [{
                        "server_uri": "primary:443",
                        "channel_creds": [{"type": "insecure"}],
                        "api_type": protocol.api_type(),
                    }],
                    "node": {"id": "bench"},
                })
                .to_string(),
            )
            .expect("bootstrap");
            let mut config = XdsClientConfig::new(bootstrap);
            config.transport = Arc::new(network);
            let client = XdsClient::start(config);
            for i in 0..n {
                let changed = changed.clone();
                client.watch(
                    ResourceType::Cluster,
                    format!("c{i}"),
                    Arc::new(move |_| {
                        changed.fetch_add(1, Ordering::SeqCst);
                    }),
                );
            }
            client
        })
    };

    let wait_for = |woken: &mut mpsc::UnboundedReceiver<()>, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(300);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "no progress in 300 s");
            let _ = woken.blocking_recv();
        }
    };
    // Every Cluster received, and the last response ACKed.
    wait_for(&mut woken, &|| {
        let seen = seen.lock().expect("lock");
        changed.load(Ordering::SeqCst) >= n as u64
            && seen
                .responses
                .last()
                .is_some_and(|(_, nonce, _, _)| seen.acks.iter().any(|(_, n)| n == nonce))
    });

    let mut results = Vec::new();
    for generation in 1..=warmup + updates {
        let changed_before = changed.load(Ordering::SeqCst);
        let responses_before = seen.lock().expect("lock").responses.len();
        let (server_cpu0, client_cpu0) = (server_side.cpu(), client_side.cpu());
        let updated = cluster(n / 2, generation);
        let resource_bytes = updated.entry.encoded_len();
        {
            let server = server.clone();
            server_side.run(move || server.set_resources(vec![updated], None));
        }
        wait_for(&mut woken, &|| {
            let seen = seen.lock().expect("lock");
            changed.load(Ordering::SeqCst) > changed_before
                && seen.responses.len() > responses_before
                && seen
                    .acks
                    .iter()
                    .any(|(_, n)| *n == seen.responses[responses_before].1)
        });
        let (server_cpu1, client_cpu1) = (server_side.cpu(), client_side.cpu());
        let seen = seen.lock().expect("lock");
        let (sent_at, nonce, bytes, envelope_bytes) = seen.responses[responses_before].clone();
        let acked_at = seen
            .acks
            .iter()
            .find(|(_, n)| *n == nonce)
            .map(|(at, _)| *at)
            .unwrap_or(sent_at);
        if generation <= warmup {
            continue;
        }
        results.push(Update {
            bytes,
            resource_bytes,
            envelope_bytes,
            server_cpu: server_cpu1 - server_cpu0,
            client_cpu: client_cpu1 - client_cpu0,
            wall: acked_at - sent_at,
        });
    }
    drop(client);
    server.shutdown();
    results
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn main() {
    let mut sizes = Vec::new();
    let mut updates = 5;
    let mut warmup = 20;
    let mut protocols = AdsProtocol::ALL.to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--updates" {
            updates = args
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--updates N");
        } else if arg == "--warmup" {
            warmup = args
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--warmup N");
        } else if arg == "--only" {
            let name = args.next().unwrap_or_default();
            protocols = AdsProtocol::ALL
                .into_iter()
                .filter(|p| p.name() == name)
                .collect();
            assert!(!protocols.is_empty(), "--only sotw|delta");
        } else {
            sizes.push(arg.parse::<usize>().expect("N: a number of Clusters"));
        }
    }
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 100_000];
    }
    println!(
        "One Cluster changes among N; {updates} updates each after {warmup}; medians (CPU: thread time; wall: response queued -> ACK read)."
    );
    println!(
        "| N | protocol | bytes per update | changed Any | envelope | (bytes - envelope) / Any | server CPU ms | client CPU ms | wall ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        let mut bytes_by_protocol = Vec::new();
        for &protocol in &protocols {
            let results = measure(n, protocol, warmup, updates);
            let last = &results[results.len() - 1];
            let (bytes, resource_bytes) = (last.bytes, last.resource_bytes);
            bytes_by_protocol.push(bytes);
            // SotW has no envelope apart from its resources: every one of
            // them is payload.
            let envelope = last.envelope_bytes.unwrap_or(0);
            println!(
                "| {n} | {protocol} | {bytes} | {resource_bytes} | {} | {:.2} | {} | {} | {} |",
                last.envelope_bytes
                    .map_or_else(|| "-".to_string(), |e| e.to_string()),
                (bytes - envelope) as f64 / resource_bytes as f64,
                ms(median(results.iter().map(|r| r.server_cpu).collect())),
                ms(median(results.iter().map(|r| r.client_cpu).collect())),
                ms(median(results.iter().map(|r| r.wall).collect())),
            );
        }
        if let [sotw, delta] = bytes_by_protocol[..] {
            println!(
                "| {n} | SotW / delta bytes | {:.0} | | | | | | |",
                sotw as f64 / delta as f64
            );
        }
    }
}
