//! The reference client as an external process: an adapter that speaks the
//! JSON-lines protocol of `client-under-test/ADAPTER_PROTOCOL.md` on stdin
//! and stdout, so the harness drives it exactly as it drives grpcio or
//! grpc-js (real TCP, real time, its own process and memory).
//!
//! It is [`ReferenceClient`] behind the protocol, through the
//! [`ClientUnderTest`] methods: the bootstrap comes from
//! `GRPC_XDS_BOOTSTRAP`, the jitter seed from `XDS_CONFORMANCE_SEED`, the
//! profile from `XDS_CONFORMANCE_PROFILE`. CSDS is served on
//! `127.0.0.1:<port>` by a `ClientStatusDiscoveryService` whose handlers ask
//! the same client. Watcher notifications become `watcher` events; the
//! client's own log lines and its dial reports (which the protocol has no
//! event for) become `log` events; its other lifecycle events go to stderr.
//! stdout carries the protocol and nothing else; diagnostics go to stderr.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, Write as _};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_server::{
    ClientStatusDiscoveryService, ClientStatusDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use serde_json::{Map, Value, json};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_stream::Stream;
use tokio_stream::wrappers::{TcpListenerStream, UnboundedReceiverStream};
use tonic::{Request, Response, Status, Streaming};
use xds_client_under_test::{
    BACKEND_METHOD, ClientEnvironment, ClientError, ClientUnderTest, DialNotification,
    ObservedEvent, PROTOCOL_VERSION, ReferenceClient, RpcRequest, Transport, WatcherNotification,
    event_line,
};
use xds_vocabulary::{ClientEvent, ResourceType, XdsError, code_name};

/// Longest `summary` or `log` message put on a line: the protocol caps
/// lines at 1 MiB, and a summary of a resource with 10,000 entries would
/// not fit. Scenarios match short substrings near the start.
const MAX_TEXT: usize = 64 * 1024;

/// Longest dial report put in a `log` event: these are for people reading
/// a timeline, and a config with thousands of clusters is not readable.
const MAX_DIAL_LOG: usize = 500;

#[derive(Debug, thiserror::Error)]
enum AdapterError {
    #[error("{0} is not set (the harness sets it)")]
    MissingEnv(&'static str),
    #[error("cannot read the bootstrap file {path}: {source}")]
    ReadBootstrap {
        path: String,
        source: xds_vocabulary::files::ReadError,
    },
    #[error("XDS_CONFORMANCE_SEED={0:?} is not an unsigned 64-bit integer")]
    BadSeed(String),
    #[error("the reference client did not start: {0}")]
    Start(ClientError),
    #[error("cannot serve CSDS on 127.0.0.1: {0}")]
    Csds(std::io::Error),
    #[error("reading stdin: {0}")]
    Stdin(std::io::Error),
}

#[tokio::main]
async fn main() {
    let code = match run().await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xds-reference-adapter: {e}");
            1
        }
    };
    // Exits here rather than by dropping the runtime: tokio reads stdin on
    // a blocking thread that a runtime shutdown would wait for.
    std::process::exit(code)
}

async fn run() -> Result<(), AdapterError> {
    let path = std::env::var("GRPC_XDS_BOOTSTRAP")
        .map_err(|_| AdapterError::MissingEnv("GRPC_XDS_BOOTSTRAP"))?;
    // A bootstrap is a small JSON file: a FIFO or device is refused.
    let bootstrap_json =
        xds_vocabulary::files::read_regular_text(std::path::Path::new(&path), 16 << 20).map_err(
            |source| AdapterError::ReadBootstrap {
                path: path.clone(),
                source,
            },
        )?;
    let rng_seed = match std::env::var("XDS_CONFORMANCE_SEED") {
        // The scenario format's default seed.
        Err(_) => 1,
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| AdapterError::BadSeed(text))?,
    };
    let profile = std::env::var("XDS_CONFORMANCE_PROFILE")
        .ok()
        .filter(|p| !p.is_empty());

    let (out, lines) = mpsc::unbounded_channel();
    std::thread::spawn(move || write_stdout(lines));
    let events = out.clone();
    let env = ClientEnvironment {
        projection: None,
        bootstrap: xds_vocabulary::ClientBootstrap::GrpcJson(bootstrap_json),
        transport: Transport::Tcp,
        rng_seed,
        profile,
        clock_epoch: SystemTime::now(),
        events: Arc::new(move |event| forward(&events, event)),
        zone: None,
        // gRPC's variables, which the harness set from the scenario on
        // this process (the in-process client reads them from here).
        env: std::env::vars()
            .filter(|(name, _)| name.starts_with("GRPC_"))
            .collect(),
    };
    let mut client = ReferenceClient::new();
    let capabilities = client.capabilities();
    client.start(env).await.map_err(AdapterError::Start)?;
    let client = Arc::new(Mutex::new(client));

    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(AdapterError::Csds)?;
    let csds_address = listener.local_addr().map_err(AdapterError::Csds)?;
    let service = ClientStatusDiscoveryServiceServer::new(Csds {
        client: client.clone(),
    });
    tokio::spawn(async move {
        let served = tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener))
            .await;
        if let Err(e) = served {
            eprintln!("xds-reference-adapter: the CSDS server stopped: {e}");
        }
    });

    // client_events is false: the protocol's events cannot carry the
    // reference client's lifecycle events (ADS calls, backoff, timers).
    send(
        &out,
        json!({
            "event": "hello",
            "protocol": PROTOCOL_VERSION,
            "client": "xds-reference-client",
            "version": env!("CARGO_PKG_VERSION"),
            "capabilities": {
                "dial": capabilities.dial,
                "rpc": capabilities.rpc,
                "watch": capabilities.watch,
                "csds": capabilities.csds,
                "delta": capabilities.delta,
                "serve": capabilities.serve,
                "wildcard_watch": capabilities.wildcard_watch,
                "client_events": false,
                "profiles": capabilities.profiles,
            },
            "csds_address": csds_address.to_string(),
        }),
    );

    let mut stdin = read_stdin();
    let mut state = CommandState::default();
    loop {
        let line = match stdin.recv().await {
            Some(Ok(line)) => line,
            // The harness is gone: nobody is left to talk to.
            None => break,
            Some(Err(e)) => {
                client.lock().await.shutdown().await;
                return Err(AdapterError::Stdin(e));
            }
        };
        let Some((id, op, command)) = parse_command(&line) else {
            continue;
        };
        if op == "shutdown" {
            client.lock().await.shutdown().await;
            send(&out, json!({"id": id, "ok": true}));
            break;
        }
        if op == "rpc" {
            // Answered when it ends, by a task of its own: a call that
            // waits (for ready, for its deadline) holds neither the next
            // commands nor CSDS behind it; replies name their command.
            match start_rpc(&client, &command).await {
                Ok(pending) => {
                    let out = out.clone();
                    tokio::spawn(async move {
                        let reply = match pending.await {
                            Ok(outcome) => {
                                let mut result = json!({
                                    "code": code_name(outcome.code),
                                    "message": outcome.message,
                                });
                                if let Some(backend) = outcome.backend {
                                    result["backend"] = json!(backend);
                                }
                                json!({"id": id, "ok": true, "result": result})
                            }
                            Err(e) => json!({"id": id, "ok": false, "error": reason(e)}),
                        };
                        send(&out, reply);
                    });
                }
                Err(error) => send(&out, json!({"id": id, "ok": false, "error": error})),
            }
            continue;
        }
        let reply = match execute(&client, &mut state, &op, &command).await {
            Ok(fields) => {
                let mut reply = fields;
                reply.insert("id".into(), json!(id));
                reply.insert("ok".into(), json!(true));
                Value::Object(reply)
            }
            Err(error) => json!({"id": id, "ok": false, "error": error}),
        };
        send(&out, reply);
    }
    flush(&out).await;
    Ok(())
}

/// stdin's lines, read on a thread of their own (blocking reads; the
/// process exits without waiting for it).
fn read_stdin() -> mpsc::UnboundedReceiver<std::io::Result<String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let failed = line.is_err();
            if tx.send(line).is_err() || failed {
                break;
            }
        }
    });
    rx
}

/// `(id, op, the command)` of a command line; None (with a note on stderr)
/// for a line that cannot be answered because it has no integer id.
fn parse_command(line: &str) -> Option<(u64, String, Map<String, Value>)> {
    let command = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(command)) => command,
        _ => {
            eprintln!("xds-reference-adapter: ignoring a line that is not a JSON object: {line}");
            return None;
        }
    };
    let Some(id) = command.get("id").and_then(Value::as_u64) else {
        eprintln!("xds-reference-adapter: ignoring a command without an integer id: {line}");
        return None;
    };
    let op = command
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some((id, op, command))
}

/// What the command loop remembers between commands.
#[derive(Default)]
struct CommandState {
    /// Watchers per resource, to know when a watch can get a cached value.
    watchers: BTreeMap<(ResourceType, String), usize>,
}

/// Starts the RPC a command asks for, under the client's lock; the call
/// itself is awaited without it.
async fn start_rpc(
    client: &Mutex<ReferenceClient>,
    command: &Map<String, Value>,
) -> Result<xds_client_under_test::PendingRpc, String> {
    let text = |key: &str| -> Result<String, String> {
        command
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("rpc: missing string field `{key}`"))
    };
    let timeout_ms = command
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .ok_or("rpc: missing integer field `timeout_ms`")?;
    let request = RpcRequest {
        target: text("target")?,
        method: text("method").unwrap_or_else(|_| BACKEND_METHOD.to_string()),
        timeout: Duration::from_millis(timeout_ms),
        wait_for_ready: command
            .get("wait_for_ready")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        // The reference client is not a proxy.
        authority: None,
    };
    client
        .lock()
        .await
        .start_rpc(&request)
        .await
        .map_err(reason)
}

/// Runs one command; the reply's extra fields, or its error text
/// (`unsupported: ...` for what the client cannot do).
async fn execute(
    client: &Mutex<ReferenceClient>,
    state: &mut CommandState,
    op: &str,
    command: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let text = |key: &str| -> Result<String, String> {
        command
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{op}: missing string field `{key}`"))
    };
    let resource_type = || -> Result<ResourceType, String> {
        let name = text("type")?;
        ResourceType::parse(&name).ok_or_else(|| format!("{op}: unknown resource type {name:?}"))
    };
    match op {
        "watch" => {
            let (resource_type, name) = (resource_type()?, text("name")?);
            let mut client = client.lock().await;
            client.watch(resource_type, &name).await.map_err(reason)?;
            let watchers = state.watchers.entry((resource_type, name)).or_default();
            *watchers += 1;
            if *watchers > 1 {
                // A second watcher gets the cached value at once, on the
                // client's task. The client handles requests in order, so
                // once a CSDS dump asked for after the watch is answered,
                // that notification is in the outbox: it goes out before
                // the reply, as the protocol asks of events a command
                // causes. (A first watcher has nothing cached to get, and
                // waiting would only let its subscription race ahead of
                // the script's next step.)
                client.csds().await.map_err(reason)?;
            }
            Ok(Map::new())
        }
        "cancel_watch" => {
            let (resource_type, name) = (resource_type()?, text("name")?);
            let mut client = client.lock().await;
            client
                .cancel_watch(resource_type, &name)
                .await
                .map_err(reason)?;
            if let Some(watchers) = state.watchers.get_mut(&(resource_type, name)) {
                *watchers = watchers.saturating_sub(1);
            }
            Ok(Map::new())
        }
        "dial" => {
            let target = text("target")?;
            client.lock().await.dial(&target).await.map_err(reason)?;
            Ok(Map::new())
        }
        "serve" => {
            let address = text("address")?;
            client.lock().await.serve(&address).await.map_err(reason)?;
            Ok(Map::new())
        }
        "rpc" => Err("rpc: answered by its own task (see `start_rpc`)".into()),
        other => Err(format!("unsupported: op {other:?}")),
    }
}

/// A client error as a reply's `error` text.
fn reason(e: ClientError) -> String {
    match e {
        ClientError::Unsupported(what) => format!("unsupported: {what}"),
        ClientError::Failed(message) => message,
        crashed @ ClientError::Crashed { .. } => crashed.to_string(),
    }
}

/// What the client reports, as protocol events (or stderr lines).
fn forward(out: &Outbox, event: ObservedEvent) {
    match event {
        ObservedEvent::Dial { target, update } => {
            let text = match update {
                DialNotification::Config { summary, clusters } => format!(
                    "dial {target}: config ({} clusters) {}",
                    clusters.len(),
                    bounded(&summary, MAX_DIAL_LOG)
                ),
                DialNotification::Error(e) => format!(
                    "dial {target}: error {}: {}",
                    code_name(e.code),
                    bounded(&e.message, MAX_DIAL_LOG)
                ),
            };
            send(
                out,
                json!({"event": "log", "level": "info", "message": text}),
            );
        }
        // The reference client has no admin API.
        ObservedEvent::Admin(_) => {}
        ObservedEvent::Client(other) if !matches!(other, ClientEvent::Log { .. }) => {
            // Lifecycle events have no protocol event: stderr, one short
            // line each (subscriptions can name thousands of resources),
            // and only when tracing is on, as gRPC's own clients log: a
            // line per does-not-exist timer is 10,000 writes on a large
            // subscription, which `bench-peers` would measure.
            if !tracing() {
                return;
            }
            let mut line = String::from("xds-reference-adapter: ");
            match other {
                ClientEvent::SubscriptionSent {
                    server,
                    resource_type,
                    names,
                } => {
                    let _ = write!(
                        line,
                        "subscription sent to {server}: {resource_type} ({} names)",
                        names.len()
                    );
                }
                other => {
                    let _ = write!(line, "{}", bounded(&format!("{other:?}"), MAX_DIAL_LOG));
                }
            }
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
        // Watcher, serving-status, channel-state and log events: the
        // protocol's own lines, in the harness's codec.
        event => {
            if let Some(line) = event_line(&bounded_texts(event)) {
                send(out, line);
            }
        }
    }
}

/// `event` with its free texts (summaries, error and log messages) cut to
/// [`MAX_TEXT`].
fn bounded_texts(event: ObservedEvent) -> ObservedEvent {
    let error = |e: XdsError| XdsError::new(e.code, bounded(&e.message, MAX_TEXT));
    match event {
        ObservedEvent::Watcher {
            resource_type,
            name,
            notification,
        } => ObservedEvent::Watcher {
            resource_type,
            name,
            notification: match notification {
                WatcherNotification::Changed { summary } => WatcherNotification::Changed {
                    summary: bounded(&summary, MAX_TEXT),
                },
                WatcherNotification::ResourceError(e) => {
                    WatcherNotification::ResourceError(error(e))
                }
                WatcherNotification::AmbientError(e) => WatcherNotification::AmbientError(error(e)),
                other => other,
            },
        },
        ObservedEvent::ServingStatus { address, status } => ObservedEvent::ServingStatus {
            address,
            status: status.map_err(error),
        },
        ObservedEvent::Client(ClientEvent::Log { level, message }) => {
            ObservedEvent::Client(ClientEvent::Log {
                level,
                message: bounded(&message, MAX_TEXT),
            })
        }
        other => other,
    }
}

/// Whether `GRPC_TRACE` asks for any tracer, as C-core and grpc-js read it.
fn tracing() -> bool {
    static TRACING: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACING.get_or_init(|| std::env::var("GRPC_TRACE").is_ok_and(|v| !v.trim().is_empty()))
}

/// `text`, cut at a char boundary to at most `max` bytes (plus "...").
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

/// One writer owns stdout, so replies and events go out whole and in the
/// order they were produced (events a command causes before its reply).
enum Out {
    Line(String),
    /// Answered once everything before it is written and flushed.
    Flush(oneshot::Sender<()>),
}

type Outbox = mpsc::UnboundedSender<Out>;

fn send(out: &Outbox, value: Value) {
    // Only fails once the writer has stopped (stdout is gone).
    let _ = out.send(Out::Line(value.to_string()));
}

async fn flush(out: &Outbox) {
    let (done_tx, done) = oneshot::channel();
    if out.send(Out::Flush(done_tx)).is_ok() {
        let _ = done.await;
    }
}

/// Runs on a thread of its own: stdout writes block.
fn write_stdout(mut lines: mpsc::UnboundedReceiver<Out>) {
    let mut stdout = std::io::stdout().lock();
    while let Some(first) = lines.blocking_recv() {
        // Whatever is queued goes out in one write and one flush.
        let mut batch = Vec::new();
        let mut flushed = Vec::new();
        let mut next = Some(first);
        while let Some(item) = next {
            match item {
                Out::Line(line) => {
                    batch.extend_from_slice(line.as_bytes());
                    batch.push(b'\n');
                }
                Out::Flush(done) => flushed.push(done),
            }
            next = lines.try_recv().ok();
        }
        if let Err(e) = stdout.write_all(&batch).and_then(|()| stdout.flush()) {
            eprintln!("xds-reference-adapter: writing stdout failed: {e}");
            std::process::exit(1);
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// CSDS: each request dumps the client's view through
/// [`ClientUnderTest::csds`].
struct Csds {
    client: Arc<Mutex<ReferenceClient>>,
}

async fn dump(client: &Mutex<ReferenceClient>) -> Result<ClientStatusResponse, Status> {
    client
        .lock()
        .await
        .csds()
        .await
        .map_err(|e| Status::internal(e.to_string()))
}

type CsdsStream = Pin<Box<dyn Stream<Item = Result<ClientStatusResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ClientStatusDiscoveryService for Csds {
    type StreamClientStatusStream = CsdsStream;

    async fn stream_client_status(
        &self,
        request: Request<Streaming<ClientStatusRequest>>,
    ) -> Result<Response<CsdsStream>, Status> {
        let client = self.client.clone();
        let mut requests = request.into_inner();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(_)) = requests.message().await {
                if tx.send(dump(&client).await).is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(UnboundedReceiverStream::new(rx))))
    }

    async fn fetch_client_status(
        &self,
        request: Request<ClientStatusRequest>,
    ) -> Result<Response<ClientStatusResponse>, Status> {
        // The request as the client's own CSDS reads it (its node
        // matchers): the in-process reference client answers the same.
        match self
            .client
            .lock()
            .await
            .csds_request(request.into_inner())
            .await
        {
            Ok(Ok(response)) => Ok(Response::new(response)),
            Ok(Err(e)) => Err(Status::new(e.code, e.message)),
            Err(e) => Err(Status::internal(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_char_boundaries() {
        assert_eq!(bounded("short", 10), "short");
        assert_eq!(bounded("abcdef", 3), "abc...");
        assert_eq!(bounded("aé", 2), "a...");
    }

    #[test]
    fn commands_need_an_integer_id() {
        assert!(parse_command("not json").is_none());
        assert!(parse_command(r#"{"op":"dial"}"#).is_none());
        let (id, op, _) = parse_command(r#"{"id":3,"op":"dial","target":"xds:///a"}"#).unwrap();
        assert_eq!((id, op.as_str()), (3, "dial"));
    }
}
