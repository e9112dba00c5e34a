//! Seed inputs for the fuzz targets in `fuzz/`, generated from the
//! repository's scenarios and from the traffic of playing them against the
//! in-process reference client:
//!
//! - `scenario_loader`: every scenario file, and every broken one of
//!   `harness/tests/broken/`.
//! - `bootstrap`: the bootstrap JSON the harness renders for each run.
//! - `response_decoding`: every DiscoveryResponse / DeltaDiscoveryResponse
//!   a fake server sent, as it went over the wire.
//! - `fake_server_requests`: per fake server of a run, its initial store as
//!   store changes, then every request each ADS stream carried, in order,
//!   as the target's frames (`xds_fake_server::fuzzing`).
//! - `adapter_line_codec`: the adapter-protocol lines for what the client
//!   reported (`event_line`), the replies an adapter gives for the RPCs of
//!   the runs, and each adapter's hello from its manifest.
//!
//! The wire messages are read off the client's in-memory connections
//! (HTTP/2 DATA frames, then gRPC's length-prefixed messages), so they are
//! the bytes the fake servers really sent and received.
//!
//! ```sh
//! cargo run -p xds-conformance --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! writes `fuzz/seeds/<target>/<hash>`; `fuzz/seed-corpus.sh` runs it and
//! minimizes the result into `fuzz/corpus/` with `cargo fuzz cmin`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryResponse, Resource};
use envoy_types::pb::envoy::service::status::v3::ClientStatusResponse;
use prost::Message;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use xds_client_under_test::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, ReferenceClient, RpcOutcome,
    RpcRequest, Transport, event_line,
};
use xds_conformance::bootstrap::client_bootstrap;
use xds_conformance::runner::{run_scenario, server_uri};
use xds_conformance::scenario::{Scenario, load_file};
use xds_conformance::suite::discover;
use xds_conformance::timeline::EventKind;
use xds_fake_server::fuzzing::{Frame, encode};
use xds_vocabulary::transport::{BoxIo, ConnectFuture, XdsTransportFactory};
use xds_vocabulary::{AdsProtocol, ResourceType, code_name};

/// The HTTP/2 client connection preface.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn main() -> io::Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/seeds".to_string()),
    );
    let root = xds_conformance::suite::repo_root().unwrap_or_else(|| PathBuf::from("."));
    let mut seeds = Seeds::new(&out);

    let broken = root.join("harness/tests/broken");
    for path in discover(&[root.join("scenarios"), broken.clone()])? {
        seeds.add("scenario_loader", &std::fs::read(&path)?)?;
        if path.starts_with(&broken) {
            continue;
        }
        let scenario = load_file(&path).map_err(io::Error::other)?;
        for variant in scenario.variants() {
            let bootstrap =
                client_bootstrap(&variant, &server_uri, &std::collections::BTreeMap::new())
                    .grpc_json();
            seeds.add("bootstrap", bootstrap.as_bytes())?;
            play(&variant, &mut seeds)?;
        }
    }
    for manifest in discover_manifests(&root.join("client-under-test/adapters"))? {
        let text = std::fs::read_to_string(&manifest)?;
        let manifest: Value = serde_json::from_str(&text).map_err(io::Error::other)?;
        let hello = json!({
            "event": "hello",
            "protocol": xds_client_under_test::PROTOCOL_VERSION,
            "client": manifest["name"],
            "version": "0",
            "capabilities": manifest["capabilities"],
        });
        seeds.add("adapter_line_codec", hello.to_string().as_bytes())?;
    }
    for (target, count) in &seeds.counts {
        println!("{target}: {count} seeds");
    }
    Ok(())
}

/// Plays one run against the reference client, its connections tapped,
/// and keeps what went over them and what the client reported.
fn play(scenario: &Scenario, seeds: &mut Seeds) -> io::Result<()> {
    let connections: Tapped = Arc::default();
    let tap = connections.clone();
    let factory = move || {
        Box::new(TappedClient {
            inner: ReferenceClient::new(),
            connections: tap.clone(),
        }) as Box<dyn ClientUnderTest>
    };
    let outcome = run_scenario(scenario, &factory);

    let connections = connections.lock().unwrap_or_else(PoisonError::into_inner);
    let traffic: Vec<Traffic> = connections
        .iter()
        .map(|connection| {
            let connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
            let server = connection.server_uri.trim_end_matches(":443").to_string();
            Traffic {
                protocol: scenario.protocol_of(&server),
                server,
                requests: grpc_messages(connection.up.strip_prefix(PREFACE).unwrap_or_default()),
                responses: grpc_messages(&connection.down)
                    .into_iter()
                    .flatten()
                    .collect(),
            }
        })
        .collect();
    // Per server: its streams' requests in order; responses one by one.
    let mut requests: BTreeMap<String, Vec<Vec<Frame<'_>>>> = BTreeMap::new();
    for Traffic {
        server,
        protocol,
        requests: streams,
        responses,
    } in &traffic
    {
        for response in responses {
            seeds.add("response_decoding", response)?;
        }
        let delta = *protocol == AdsProtocol::Delta;
        let frames = requests.entry(server.clone()).or_default();
        for stream in streams {
            frames.push(
                stream
                    .iter()
                    .map(|bytes| Frame::Request { delta, bytes })
                    .collect(),
            );
        }
    }
    for (server, streams) in requests {
        let Some(def) = scenario.servers.iter().find(|s| s.name == server) else {
            continue;
        };
        // The server's initial store, one change per type.
        let mut by_type: BTreeMap<&str, Vec<Resource>> = BTreeMap::new();
        for resource in &def.resources {
            by_type
                .entry(resource.type_url.as_str())
                .or_default()
                .push(Resource {
                    name: resource.name.clone(),
                    resource: Some(resource.entry.clone()),
                    ..Default::default()
                });
        }
        let changes: Vec<Vec<u8>> = by_type
            .into_iter()
            .map(|(type_url, resources)| {
                DeltaDiscoveryResponse {
                    type_url: type_url.to_string(),
                    resources,
                    ..Default::default()
                }
                .encode_to_vec()
            })
            .collect();
        let mut frames: Vec<Frame<'_>> = changes.iter().map(|c| Frame::StoreChange(c)).collect();
        for stream in streams {
            frames.extend(stream);
            frames.push(Frame::HalfClose);
        }
        // Runs whose messages do not fit a frame give no seed.
        if let Some(bytes) = encode(&frames) {
            seeds.add("fake_server_requests", &bytes)?;
        }
    }

    let mut id = 0;
    for event in &outcome.events {
        match &event.kind {
            EventKind::Client(observed) => {
                if let Some(line) = event_line(observed) {
                    seeds.add("adapter_line_codec", line.to_string().as_bytes())?;
                }
            }
            EventKind::Rpc { outcome, .. } => {
                id += 1;
                seeds.add("adapter_line_codec", rpc_reply(id, outcome).as_bytes())?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// What went over one connection of a run.
struct Traffic {
    server: String,
    protocol: AdsProtocol,
    /// Per HTTP/2 stream, the requests the client sent on it.
    requests: Vec<Vec<Vec<u8>>>,
    responses: Vec<Vec<u8>>,
}

/// The reply an adapter gives to an `rpc` command that ended so.
fn rpc_reply(id: u64, outcome: &RpcOutcome) -> String {
    let mut result = json!({"code": code_name(outcome.code), "message": outcome.message});
    if let Some(backend) = &outcome.backend {
        result["backend"] = json!(backend);
    }
    json!({"id": id, "ok": true, "result": result}).to_string()
}

/// The gRPC messages of each HTTP/2 stream of one direction of a
/// connection, in stream order. Only DATA frames matter (their padding
/// removed); a truncated tail is dropped.
fn grpc_messages(mut bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut data: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    while bytes.len() >= 9 {
        let len = usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
        let (kind, flags) = (bytes[3], bytes[4]);
        let stream = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & 0x7fff_ffff;
        let Some(payload) = bytes.get(9..9 + len) else {
            break;
        };
        if kind == 0 {
            let payload = if flags & 0x8 != 0 {
                let pad = usize::from(payload.first().copied().unwrap_or(0));
                payload
                    .get(1..payload.len().saturating_sub(pad))
                    .unwrap_or_default()
            } else {
                payload
            };
            data.entry(stream).or_default().extend_from_slice(payload);
        }
        bytes = &bytes[9 + len..];
    }
    data.into_values()
        .map(|stream| {
            let mut messages = Vec::new();
            let mut rest = stream.as_slice();
            while rest.len() >= 5 {
                let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]);
                let Some(message) = usize::try_from(len).ok().and_then(|l| rest.get(5..5 + l))
                else {
                    break;
                };
                messages.push(message.to_vec());
                rest = &rest[5 + message.len()..];
            }
            messages
        })
        .collect()
}

fn discover_manifests(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let manifest = entry?.path().join("adapter.json");
        if manifest.is_file() {
            found.push(manifest);
        }
    }
    found.sort();
    Ok(found)
}

/// Seed files by target, named by a hash of their content (duplicates
/// collapse).
struct Seeds {
    out: PathBuf,
    counts: BTreeMap<&'static str, usize>,
}

impl Seeds {
    fn new(out: &Path) -> Self {
        Seeds {
            out: out.to_path_buf(),
            counts: BTreeMap::new(),
        }
    }

    fn add(&mut self, target: &'static str, bytes: &[u8]) -> io::Result<()> {
        let dir = self.out.join(target);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{:016x}", fnv1a(bytes)));
        if !path.exists() {
            std::fs::write(path, bytes)?;
            *self.counts.entry(target).or_default() += 1;
        }
        Ok(())
    }
}

/// FNV-1a, 64 bits: stable across Rust versions, unlike std's hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One connection the client opened: to which server, and every byte each
/// way.
#[derive(Default)]
struct Connection {
    server_uri: String,
    up: Vec<u8>,
    down: Vec<u8>,
}

type Tapped = Arc<Mutex<Vec<Arc<Mutex<Connection>>>>>;

/// Opens the inner factory's connections and records them.
struct Tap {
    inner: Arc<dyn XdsTransportFactory>,
    connections: Tapped,
}

impl XdsTransportFactory for Tap {
    fn connect(&self, server_uri: &str) -> ConnectFuture {
        let connecting = self.inner.connect(server_uri);
        let record = Arc::new(Mutex::new(Connection {
            server_uri: server_uri.to_string(),
            ..Default::default()
        }));
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record.clone());
        Box::pin(async move {
            let inner = connecting.await?;
            Ok(Box::new(TapIo { inner, record }) as BoxIo)
        })
    }
}

struct TapIo {
    inner: BoxIo,
    record: Arc<Mutex<Connection>>,
}

impl TapIo {
    fn record(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AsyncRead for TapIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.record()
                .down
                .extend_from_slice(&buf.filled()[before..]);
        }
        polled
    }
}

impl AsyncWrite for TapIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled {
            self.record().up.extend_from_slice(&buf[..written]);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The reference client, its xDS connections tapped.
struct TappedClient {
    inner: ReferenceClient,
    connections: Tapped,
}

#[async_trait::async_trait]
impl ClientUnderTest for TappedClient {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn start(&mut self, mut env: ClientEnvironment) -> Result<(), ClientError> {
        if let Transport::InMemory { xds, data_plane } = env.transport {
            let xds = Arc::new(Tap {
                inner: xds,
                connections: self.connections.clone(),
            });
            env.transport = Transport::InMemory { xds, data_plane };
        }
        self.inner.start(env).await
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        self.inner.watch(resource_type, name).await
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        self.inner.cancel_watch(resource_type, name).await
    }

    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        self.inner.dial(target).await
    }

    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        self.inner.serve(address).await
    }

    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.inner.rpc(request).await
    }

    async fn resource_counts(
        &mut self,
    ) -> Result<xds_client_under_test::ResourceCounts, ClientError> {
        self.inner.resource_counts().await
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        self.inner.csds().await
    }

    async fn watch_in_callback(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        of: (ResourceType, &str),
    ) -> Result<(), ClientError> {
        self.inner.watch_in_callback(resource_type, name, of).await
    }

    async fn hold_reads(
        &mut self,
        resource_type: ResourceType,
        name: &str,
        hold: bool,
    ) -> Result<(), ClientError> {
        self.inner.hold_reads(resource_type, name, hold).await
    }

    async fn start_rpc(
        &mut self,
        request: &RpcRequest,
    ) -> Result<xds_client_under_test::PendingRpc, ClientError> {
        self.inner.start_rpc(request).await
    }

    async fn csds_request(
        &mut self,
        request: envoy_types::pb::envoy::service::status::v3::ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, xds_vocabulary::XdsError>, ClientError> {
        self.inner.csds_request(request).await
    }

    async fn zone_set(
        &mut self,
        resources: Vec<xds_vocabulary::kds::KdsResource>,
    ) -> Result<(), xds_client_under_test::ClientError> {
        self.inner.zone_set(resources).await
    }

    async fn zone_remove(
        &mut self,
        kuma_type: &str,
        names: &[xds_vocabulary::kds::KdsName],
    ) -> Result<(), xds_client_under_test::ClientError> {
        self.inner.zone_remove(kuma_type, names).await
    }

    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}
