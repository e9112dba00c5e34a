//! `ProcessClient` against real child processes, in real time: the fixture
//! adapters in `tests/fixtures/` (see its README) follow the protocol, or
//! break it in one specific way each. Every test checks that no process
//! outlives the client.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use envoy_types::pb::envoy::service::status::v3::client_config::GenericXdsConfig;
use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_server::{
    ClientStatusDiscoveryService, ClientStatusDiscoveryServiceServer,
};
use envoy_types::pb::envoy::service::status::v3::{
    ClientConfig, ClientStatusRequest, ClientStatusResponse,
};
use serde_json::{Value, json};
use tonic::{Request, Response, Status, Streaming};
use xds_client_under_test::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, ConnectivityState,
    ObservedEvent, ProcessClient, ProcessError, ProcessTimeouts, RpcOutcome, RpcRequest, Transport,
    WatchProjection, WatcherNotification,
};
use xds_vocabulary::transport::{DataPlaneConnector, TcpTransport, XdsTransportFactory};
use xds_vocabulary::{ClientBootstrap, ClientEvent, LogLevel, ResourceType, XdsError};

/// Timeouts for fixtures: generous where a python fixture must start (a
/// loaded machine), short where a test waits for the timeout to fire.
fn timeouts() -> ProcessTimeouts {
    ProcessTimeouts {
        hello: Duration::from_secs(20),
        command: Duration::from_secs(5),
        rpc_grace: Duration::from_secs(5),
        shutdown: Duration::from_secs(5),
        install: Duration::from_secs(60),
    }
}

/// This crate's directory in the checkout running now: cargo sets it at
/// run time, and a test binary shared between checkouts (one target
/// directory for several clones) holds another checkout's compiled in.
fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn fixtures() -> PathBuf {
    crate_dir().join("tests/fixtures")
}

/// A fresh "repository root" for one test: it links `client-under-test/`
/// to the real one, so the fixtures' manifests work unchanged, while what
/// the fixtures write (pid files, install markers) stays in the scratch
/// directory.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new(test: &str) -> Scratch {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let root = std::env::temp_dir().join(format!(
            "xds-cut-process-{test}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(crate_dir(), root.join("client-under-test")).unwrap();
        Scratch { root }
    }

    fn client(&self, fixture: &str) -> ProcessClient {
        ProcessClient::load(&self.root, &fixtures().join(fixture))
            .unwrap()
            .with_timeouts(timeouts())
    }

    /// A variant of a fixture's manifest, written into the scratch
    /// directory (for settings that only exist at run time, e.g. ports).
    fn variant(&self, fixture: &str, edit: impl FnOnce(&mut Value)) -> ProcessClient {
        let text = std::fs::read_to_string(fixtures().join(fixture).join("adapter.json")).unwrap();
        let mut manifest: Value = serde_json::from_str(&text).unwrap();
        edit(&mut manifest);
        let dir = self.root.join(format!("variant-{fixture}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("adapter.json"), manifest.to_string()).unwrap();
        ProcessClient::load(&self.root, &dir)
            .unwrap()
            .with_timeouts(timeouts())
    }

    /// A pid a fixture wrote into its working directory.
    fn pid(&self, file: &str) -> i32 {
        let path = self.root.join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.trim().parse().unwrap()
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.root.join(file)).unwrap()
    }

    /// A FIFO in the fixtures' working directory, which a fixture writes a
    /// line into once it reached a point of its script (see `fail-hangs`
    /// and `fail-no-hello`).
    fn fifo(&self, file: &str) -> PathBuf {
        let path = self.root.join(file);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        path
    }
}

/// How long a test waits, in real time, for an event a correct driver and
/// fixture always bring (a line in a FIFO, the processes' end), before it
/// fails instead of hanging the test command: a guard, never a verdict.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// Waits, off the runtime's thread, until a fixture writes a line into
/// `fifo`; returns the line. On a paused clock a blocking task in flight
/// keeps tokio from auto-advancing it, so no timer of the driver fires
/// while a fixture takes its time on a busy machine.
async fn fifo_line(fifo: PathBuf) -> String {
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        // Opened for reading and writing, the open does not wait for the
        // writer, and the wait below has a guard.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .map_err(|e| format!("{}: {e}", fifo.display()))?;
        let mut poll = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(HANG_GUARD.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one pollfd we own.
        if unsafe { libc::poll(&mut poll, 1, ms) } != 1 {
            return Err(format!(
                "the fixture wrote nothing into {} within {HANG_GUARD:?}",
                fifo.display()
            ));
        }
        let mut line = [0u8; 256];
        let n = file.read(&mut line).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&line[..n]).trim().to_string())
    })
    .await
    .expect("the FIFO reader")
    .unwrap_or_else(|e: String| panic!("{e}"))
}

/// The paused clock held still, for a test that fires a timeout of the
/// driver on purpose: while a blocking task is in flight a paused
/// current-thread runtime does not auto-advance (tokio's test-util), so
/// no timeout fires, however long a fixture takes to start or to answer,
/// until the test lets go (drop) or advances the clock itself. It lets go
/// by itself after `HANG_GUARD` of real time, so that a driver stuck
/// on a timer fails the test instead of hanging it.
struct HeldClock {
    _release: std::sync::mpsc::Sender<()>,
}

impl HeldClock {
    fn hold() -> HeldClock {
        let (release, released) = std::sync::mpsc::channel::<()>();
        tokio::task::spawn_blocking(move || {
            let _ = released.recv_timeout(HANG_GUARD);
        });
        HeldClock { _release: release }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<ObservedEvent>>>);

impl Events {
    fn all(&self) -> Vec<ObservedEvent> {
        self.0.lock().unwrap().clone()
    }

    fn logs(&self, level: LogLevel) -> Vec<String> {
        self.all()
            .into_iter()
            .filter_map(|e| match e {
                ObservedEvent::Client(ClientEvent::Log { level: l, message }) if l == level => {
                    Some(message)
                }
                _ => None,
            })
            .collect()
    }

    /// The first log line of `level`, waiting for it: events printed
    /// after a reply may arrive after the command returned.
    async fn first_log(&self, level: LogLevel) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(first) = self.logs(level).into_iter().next() {
                return first;
            }
            assert!(
                Instant::now() < deadline,
                "no {level:?} log in {:?}",
                self.all()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn env(events: &Events) -> ClientEnvironment {
    let sink = events.0.clone();
    ClientEnvironment {
        bootstrap: ClientBootstrap::GrpcJson(r#"{"fixture": "bootstrap"}"#.into()),
        projection: None,
        transport: Transport::Tcp,
        rng_seed: 42,
        profile: None,
        clock_epoch: SystemTime::UNIX_EPOCH,
        events: Arc::new(move |event| sink.lock().unwrap().push(event)),
        zone: None,
        env: Default::default(),
    }
}

/// Is the process there (and not a zombie)? Zombies count as gone: a
/// grandchild reparented to a PID 1 that does not reap stays a zombie, but
/// it runs nothing.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_fields(&stat).is_some_and(|(state, _)| state != "Z"),
        Err(_) => false,
    }
}

/// (state, pgrp) from /proc/<pid>/stat; the command name in parentheses
/// may contain spaces, so fields are counted after its closing paren.
fn stat_fields(stat: &str) -> Option<(String, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Live (non-zombie) members of a process group.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            && let Some((state, pgrp)) = stat_fields(&stat)
            && pgrp == pgid
            && state != "Z"
        {
            members.push(pid);
        }
    }
    members
}

/// `kill -0`: does the pid exist at all (a zombie counts)?
fn signalable(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Waits (a little: SIGKILL is asynchronous) until none of `pids` runs and
/// the group `pgid` is empty. The 3 s bound only guards a hang: killed
/// processes end in the kernel, whatever the load. Off the runtime's
/// thread, with real sleeps, so that it works the same on a paused clock.
async fn assert_all_gone(pgid: i32, pids: &[i32]) {
    let pids = pids.to_vec();
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let running: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
            let members = group_members(pgid);
            if running.is_empty() && members.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "still running: {running:?}; group {pgid} members: {members:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .expect("the wait for the processes' end")
    .unwrap_or_else(|e: String| panic!("{e}"));
}

fn crashed(result: Result<impl std::fmt::Debug, ClientError>) -> (String, String) {
    match result {
        Err(ClientError::Crashed {
            reason,
            stderr_tail,
        }) => (reason, stderr_tail),
        other => panic!("expected Crashed, got {other:?}"),
    }
}

fn rpc(target: &str) -> RpcRequest {
    RpcRequest {
        target: target.into(),
        method: "/xds_conformance.Backend/Who".into(),
        timeout: Duration::from_millis(1500),
        wait_for_ready: true,
        authority: None,
    }
}

// ---- the happy path of the driver ----

#[tokio::test]
async fn minimal_fixture_start_passes_the_environment() {
    let scratch = Scratch::new("start");
    let events = Events::default();
    let mut client = scratch.client("minimal");
    assert_eq!(client.name(), "fixture-minimal");
    let mut environment = env(&events);
    environment.profile = Some("p1".into());
    client.start(environment).await.unwrap();

    let pid = client.pid().unwrap() as i32;
    // The pid we hold is the adapter itself (pyenv's shim execs python).
    assert_eq!(scratch.pid("fixture.pid"), pid);
    let hello = client.hello().unwrap();
    assert_eq!(
        (hello.client.as_str(), hello.version.as_str()),
        ("fixture", "0.0.1")
    );
    assert_eq!(
        client.capabilities(),
        Capabilities {
            dial: true,
            rpc: true,
            // Replies carry ids: an RPC can run while other commands go on.
            background_rpc: true,
            watch: true,
            serve: true,
            profiles: vec!["p1".into()],
            // What every adapter-protocol (gRPC) client is.
            channel_states: true,
            grpc_bootstrap: true,
            authorities: true,
            named_lds_cds: true,
            // The harness sets a scenario's variables on the process.
            env: true,
            ..Capabilities::default()
        }
    );

    // The fixture's first event echoes its environment.
    let echoed: Value = serde_json::from_str(&events.first_log(LogLevel::Info).await).unwrap();
    let bootstrap_path = PathBuf::from(echoed["bootstrap_path"].as_str().unwrap());
    assert!(bootstrap_path.starts_with(std::env::temp_dir()));
    assert_eq!(echoed["bootstrap"], r#"{"fixture": "bootstrap"}"#);
    assert_eq!(echoed["profile"], "p1");
    assert_eq!(echoed["seed"], "42");
    assert_eq!(echoed["fixture_env"], "from-manifest");
    assert!(bootstrap_path.exists());

    client.shutdown().await;
    assert!(client.pid().is_none());
    // Reaped by the time shutdown returns: not even a zombie is left.
    assert!(!signalable(pid));
    assert_all_gone(pid, &[pid]).await;
    assert!(!bootstrap_path.exists(), "the bootstrap file is deleted");
    // A clean exit: no warnings, no errors on the timeline.
    assert_eq!(events.logs(LogLevel::Warning), Vec::<String>::new());
    assert_eq!(events.logs(LogLevel::Error), Vec::<String>::new());
}

#[tokio::test]
async fn minimal_fixture_dial_and_rpc() {
    let scratch = Scratch::new("dial-rpc");
    let events = Events::default();
    let mut client = scratch.client("minimal");
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;

    client.dial("xds:///svc").await.unwrap();
    // Events the adapter printed before its reply are delivered before the
    // command returns, in order.
    let states: Vec<ObservedEvent> = events
        .all()
        .into_iter()
        .filter(|e| matches!(e, ObservedEvent::ChannelState { .. }))
        .collect();
    assert_eq!(
        states,
        [ConnectivityState::Connecting, ConnectivityState::Ready].map(|state| {
            ObservedEvent::ChannelState {
                target: "xds:///svc".into(),
                state,
            }
        })
    );

    assert_eq!(
        client.rpc(&rpc("xds:///svc")).await.unwrap(),
        RpcOutcome {
            code: tonic::Code::Ok,
            message: String::new(),
            backend: Some("b1".into()),
        }
    );
    assert_eq!(
        client.rpc(&rpc("xds:///unavailable")).await.unwrap(),
        RpcOutcome {
            code: tonic::Code::Unavailable,
            message: "no healthy upstream".into(),
            backend: None,
        }
    );
    // The command as the adapter received it.
    let echoed = events
        .logs(LogLevel::Info)
        .into_iter()
        .find_map(|m| m.strip_prefix("rpc ").map(str::to_string))
        .unwrap();
    let echoed: Value = serde_json::from_str(&echoed).unwrap();
    assert_eq!(
        echoed,
        json!({"id": 2, "op": "rpc", "target": "xds:///svc",
               "method": "/xds_conformance.Backend/Who", "timeout_ms": 1500,
               "wait_for_ready": true})
    );
    // A proxy's RPC: a listener's address, with the target as authority.
    let mut through_listener = rpc("127.0.0.1:41000");
    through_listener.authority = Some("svc".into());
    client.rpc(&through_listener).await.unwrap();
    let echoed: Vec<Value> = events
        .logs(LogLevel::Info)
        .into_iter()
        .filter_map(|m| m.strip_prefix("rpc ").map(str::to_string))
        .map(|m| serde_json::from_str(&m).unwrap())
        .collect();
    assert_eq!(echoed.last().unwrap()["target"], "127.0.0.1:41000");
    assert_eq!(echoed.last().unwrap()["authority"], "svc");
    assert!(
        echoed
            .iter()
            .rev()
            .skip(1)
            .all(|c| c.get("authority").is_none())
    );

    // Not declared by the fixture: refused without asking it.
    assert!(matches!(
        client.csds().await,
        Err(ClientError::Unsupported(_))
    ));

    client.shutdown().await;
    assert_all_gone(pid, &[pid]).await;
}

#[tokio::test]
async fn minimal_fixture_watch_events_map_to_notifications() {
    let scratch = Scratch::new("watch");
    let events = Events::default();
    let mut client = scratch.client("minimal");
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;

    client.watch(ResourceType::Cluster, "c1").await.unwrap();
    let notifications: Vec<WatcherNotification> = events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            ObservedEvent::Watcher {
                resource_type: ResourceType::Cluster,
                name,
                notification,
            } if name == "c1" => Some(notification),
            _ => None,
        })
        .collect();
    assert_eq!(
        notifications,
        vec![
            // The fixture echoes the type it was sent: the full type URL.
            WatcherNotification::Changed {
                summary: "fixture type.googleapis.com/envoy.config.cluster.v3.Cluster c1".into()
            },
            WatcherNotification::AmbientError(XdsError::new(
                tonic::Code::Unavailable,
                "server down"
            )),
            WatcherNotification::AmbientErrorCleared,
            WatcherNotification::ResourceError(XdsError::new(tonic::Code::InvalidArgument, "bad")),
            WatcherNotification::DoesNotExist,
        ]
    );

    client
        .cancel_watch(ResourceType::Cluster, "c1")
        .await
        .unwrap();
    // The adapter's own error comes back as Failed, and the client is
    // still usable afterwards.
    assert_eq!(
        client.cancel_watch(ResourceType::Cluster, "c1").await,
        Err(ClientError::Failed(
            "no watch on type.googleapis.com/envoy.config.cluster.v3.Cluster c1".into()
        ))
    );
    client.dial("xds:///after").await.unwrap();

    client.shutdown().await;
    assert_all_gone(pid, &[pid]).await;
}

/// A client without a watch API observes a watch through the channel the
/// harness's projection names; its value comes back as a resource, read
/// as the reference client reads one.
#[tokio::test]
async fn projected_watches_go_through_their_channel() {
    let scratch = Scratch::new("projected");
    let events = Events::default();
    let mut client = scratch.client("projected");
    assert!(client.capabilities().projected_watch && !client.capabilities().watch);
    let mut environment = env(&events);
    environment.projection = Some(WatchProjection {
        target: "xds://xds-conformance-scaffold/watches".into(),
        authorities: [((ResourceType::Cluster, "c1".to_string()), "w1".to_string())].into(),
    });
    client.start(environment).await.unwrap();
    let pid = client.pid().unwrap() as i32;

    client.watch(ResourceType::Cluster, "c1").await.unwrap();
    let logs = events.logs(LogLevel::Info);
    assert!(
        logs.iter().any(|l| l
            == r#"via {"authority": "w1", "target": "xds://xds-conformance-scaffold/watches"}"#),
        "{logs:?}"
    );
    let changed = events.all().into_iter().find_map(|e| match e {
        ObservedEvent::Watcher {
            notification: WatcherNotification::Changed { summary },
            ..
        } => Some(summary),
        _ => None,
    });
    // What the reference client's decoder says of that Cluster.
    assert_eq!(changed.as_deref(), Some("EDS lb=ROUND_ROBIN"));
    // A resource the projection has no channel for is not watched.
    assert!(matches!(
        client.watch(ResourceType::Cluster, "c2").await,
        Err(ClientError::Unsupported(_))
    ));
    client
        .cancel_watch(ResourceType::Cluster, "c1")
        .await
        .unwrap();
    client.shutdown().await;
    assert_all_gone(pid, &[pid]).await;
}

#[tokio::test]
async fn minimal_fixture_serving_status_events() {
    let scratch = Scratch::new("serve");
    let events = Events::default();
    let mut client = scratch.client("minimal");
    client.start(env(&events)).await.unwrap();
    assert!(client.capabilities().serve);
    client.serve("0.0.0.0:8443").await.unwrap();
    let statuses: Vec<(String, Result<(), XdsError>)> = events
        .all()
        .into_iter()
        .filter_map(|e| match e {
            ObservedEvent::ServingStatus { address, status } => Some((address, status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            (
                "0.0.0.0:8443".to_string(),
                Err(XdsError::new(tonic::Code::NotFound, "no listener yet"))
            ),
            ("0.0.0.0:8443".to_string(), Ok(())),
        ]
    );
    client.shutdown().await;
}

#[tokio::test]
async fn hello_capabilities_override_the_manifest_with_a_warning() {
    let scratch = Scratch::new("caps");
    let events = Events::default();
    let mut client = scratch.variant("minimal", |m| {
        m["env"]["FIXTURE_HELLO_CAPABILITIES"] =
            json!(json!({"dial": true, "watch": true, "profiles": ["p2", "p1"]}).to_string());
    });
    let declared = client.capabilities();
    assert!(declared.rpc);
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;

    let said = client.capabilities();
    assert_eq!(
        said,
        Capabilities {
            dial: true,
            watch: true,
            profiles: vec!["p1".into(), "p2".into()],
            channel_states: true,
            grpc_bootstrap: true,
            authorities: true,
            named_lds_cds: true,
            env: true,
            ..Capabilities::default()
        }
    );
    let warnings = events.logs(LogLevel::Warning);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(r#"rpc: adapter.json true, hello false; serve: adapter.json true, hello false; profiles: adapter.json ["p1"], hello ["p1", "p2"]"#),
        "{}",
        warnings[0]
    );
    // What the hello does not declare is refused.
    assert!(matches!(
        client.rpc(&rpc("xds:///svc")).await,
        Err(ClientError::Unsupported(_))
    ));

    client.shutdown().await;
    assert_all_gone(pid, &[pid]).await;
}

/// Serves one fixed ClientStatusResponse, with a bare type URL as grpc-js
/// reports them.
struct FixedCsds;

#[tonic::async_trait]
impl ClientStatusDiscoveryService for FixedCsds {
    type StreamClientStatusStream =
        Pin<Box<dyn tokio_stream::Stream<Item = Result<ClientStatusResponse, Status>> + Send>>;

    async fn stream_client_status(
        &self,
        _request: Request<Streaming<ClientStatusRequest>>,
    ) -> Result<Response<Self::StreamClientStatusStream>, Status> {
        Err(Status::unimplemented("fixture"))
    }

    async fn fetch_client_status(
        &self,
        _request: Request<ClientStatusRequest>,
    ) -> Result<Response<ClientStatusResponse>, Status> {
        let entry = |type_url: &str, name: &str| GenericXdsConfig {
            type_url: type_url.into(),
            name: name.into(),
            ..Default::default()
        };
        Ok(Response::new(ClientStatusResponse {
            config: vec![ClientConfig {
                client_scope: "xds:///svc".into(),
                generic_xds_configs: vec![
                    entry("envoy.config.cluster.v3.Cluster", "c1"),
                    entry(ResourceType::Listener.type_url(), "l1"),
                ],
                ..Default::default()
            }],
        }))
    }
}

#[tokio::test]
async fn csds_is_fetched_from_the_hello_address_with_full_type_urls() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ClientStatusDiscoveryServiceServer::new(FixedCsds))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let scratch = Scratch::new("csds");
    let events = Events::default();
    let mut client = scratch.variant("minimal", |m| {
        m["capabilities"]["csds"] = json!(true);
        m["env"]["FIXTURE_HELLO_CAPABILITIES"] = json!(m["capabilities"].to_string());
        m["env"]["FIXTURE_CSDS_ADDRESS"] = json!(address.to_string());
    });
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;

    for _ in 0..2 {
        // (The second fetch reuses the channel.)
        let response = client.csds().await.unwrap();
        let config = &response.config[0];
        assert_eq!(config.client_scope, "xds:///svc");
        let entries: Vec<(&str, &str)> = config
            .generic_xds_configs
            .iter()
            .map(|g| (g.type_url.as_str(), g.name.as_str()))
            .collect();
        assert_eq!(
            entries,
            [
                (ResourceType::Cluster.type_url(), "c1"),
                (ResourceType::Listener.type_url(), "l1"),
            ]
        );
    }

    client.shutdown().await;
    assert_all_gone(pid, &[pid]).await;
}

#[tokio::test]
async fn unsupported_settings_start_nothing() {
    let scratch = Scratch::new("unsupported");
    let events = Events::default();
    let mut client = scratch.client("minimal");

    let mut in_memory = env(&events);
    let transport: Arc<dyn XdsTransportFactory> = Arc::new(TcpTransport);
    let data_plane: Arc<dyn DataPlaneConnector> = Arc::new(TcpTransport);
    in_memory.transport = Transport::InMemory {
        xds: transport,
        data_plane,
    };
    assert!(matches!(
        client.start(in_memory).await,
        Err(ClientError::Unsupported(_))
    ));

    let mut profiled = env(&events);
    profiled.profile = Some("a88".into());
    match client.start(profiled).await {
        Err(ClientError::Unsupported(what)) => assert!(what.contains("\"a88\""), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // Refused from the manifest alone: no process was started.
    assert!(!scratch.root.join("fixture.pid").exists());
    assert!(client.pid().is_none());
    assert!(matches!(
        client.dial("xds:///svc").await,
        Err(ClientError::Failed(_))
    ));
}

// ---- failures ----

#[tokio::test]
async fn crash_before_hello() {
    let scratch = Scratch::new("before-hello");
    let events = Events::default();
    let mut client = scratch.client("fail-before-hello");
    let (reason, stderr_tail) = crashed(client.start(env(&events)).await);
    assert_eq!(
        reason,
        "client process exited before hello (exit status: 3)"
    );
    assert_eq!(
        stderr_tail,
        "fail-before-hello: cannot load the client library\nfail-before-hello: giving up"
    );
    assert!(client.pid().is_none());
    let pid = scratch.pid("fixture.pid");
    assert_all_gone(pid, &[pid]).await;
    assert_eq!(
        events.logs(LogLevel::Error),
        ["adapter fixture-fail-before-hello: client process exited before hello (exit status: 3)"]
    );
}

/// On the paused clock: the hello timeout fires once the fixture has
/// started its child and said so on stderr (its FIFO), never before, so
/// that a slow start on a busy machine cannot leave no child to check.
#[tokio::test(start_paused = true)]
async fn no_hello_times_out_and_kills_the_group() {
    let scratch = Scratch::new("no-hello");
    let events = Events::default();
    let mut client = scratch
        .client("fail-no-hello")
        .with_timeouts(ProcessTimeouts {
            hello: Duration::from_millis(700),
            ..timeouts()
        });
    let ready = scratch.fifo("ready.fifo");
    let started = tokio::time::Instant::now();
    let (started_up, said) = tokio::join!(client.start(env(&events)), fifo_line(ready));
    assert_eq!(said, "initialising");
    let (reason, stderr_tail) = crashed(started_up);
    assert!(started.elapsed() >= Duration::from_millis(700));
    assert_eq!(reason, "no hello within 700ms");
    assert_eq!(stderr_tail, "fail-no-hello: initialising forever");
    let (pid, grandchild) = (scratch.pid("fixture.pid"), scratch.pid("grandchild.pid"));
    assert_all_gone(pid, &[pid, grandchild]).await;
}

#[tokio::test]
async fn printing_before_hello_fails_the_start() {
    let scratch = Scratch::new("print-before-hello");
    let events = Events::default();
    let mut client = scratch.variant("fail-no-hello", |m| {
        m["command"] = json!(["bash", "-c", "echo $$ > fixture.pid; echo '{\"event\": \"log\", \"level\": \"info\"}'; exec sleep 1000"]);
    });
    let (reason, _) = crashed(client.start(env(&events)).await);
    assert_eq!(
        reason,
        r#"printed a line before hello: {"event": "log", "level": "info"}"#
    );
    let pid = scratch.pid("fixture.pid");
    assert_all_gone(pid, &[pid]).await;
}

#[tokio::test]
async fn crash_on_dial() {
    let scratch = Scratch::new("crash-on-dial");
    let events = Events::default();
    let mut client = scratch.client("fail-crash-on-dial");
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;

    let (reason, stderr_tail) = crashed(client.dial("xds:///svc").await);
    assert_eq!(
        reason,
        "client process exited unexpectedly (exit status: 4) (while waiting for the reply to dial)"
    );
    assert_eq!(stderr_tail, "fail-crash-on-dial: simulated crash in dial");
    // Every later command fails the same way, at once.
    let (reason, stderr_tail) = crashed(client.rpc(&rpc("xds:///svc")).await);
    assert_eq!(
        reason,
        "client process exited unexpectedly (exit status: 4)"
    );
    assert_eq!(stderr_tail, "fail-crash-on-dial: simulated crash in dial");
    assert_eq!(
        events.logs(LogLevel::Error),
        ["adapter fixture-fail-crash-on-dial: client process exited unexpectedly (exit status: 4)"]
    );

    client.shutdown().await;
    assert_all_gone(pid, &[pid]).await;
}

#[tokio::test]
async fn garbage_on_stdout_breaks_the_client() {
    let scratch = Scratch::new("garbage");
    let events = Events::default();
    let mut client = scratch.client("fail-garbage");
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;

    let (reason, stderr_tail) = crashed(client.dial("xds:///svc").await);
    assert!(
        reason.starts_with("printed a line that is not JSON (")
            && reason.ends_with("): this is not json (while waiting for the reply to dial)"),
        "{reason}"
    );
    assert_eq!(stderr_tail, "fail-garbage: about to print garbage");
    // Killed at once, before any shutdown.
    assert_all_gone(pid, &[pid]).await;
    assert!(matches!(
        client.dial("xds:///svc").await,
        Err(ClientError::Crashed { .. })
    ));
    client.shutdown().await;
}

/// On the paused clock, held until the fixture has taken the `rpc` and
/// said so on stderr (its FIFO): the reply's deadline passes after that,
/// however slowly the fixture started or read the command.
#[tokio::test(start_paused = true)]
async fn unanswered_rpc_times_out_and_kills_the_group() {
    let scratch = Scratch::new("rpc-timeout");
    let events = Events::default();
    let mut client = scratch.client("fail-hangs").with_timeouts(ProcessTimeouts {
        rpc_grace: Duration::from_millis(300),
        ..timeouts()
    });
    let held = HeldClock::hold();
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;
    let grandchild = scratch.pid("grandchild.pid");
    assert!(alive(grandchild));
    client.dial("xds:///svc").await.unwrap();

    let taken = scratch.fifo("rpc.fifo");
    let started = tokio::time::Instant::now();
    let request = RpcRequest {
        timeout: Duration::from_millis(200),
        ..rpc("xds:///svc")
    };
    let (answer, ()) = tokio::join!(client.rpc(&request), async move {
        assert_eq!(fifo_line(taken).await, "taken");
        drop(held);
    });
    let (reason, stderr_tail) = crashed(answer);
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_eq!(reason, "no reply to rpc within 500ms");
    assert_eq!(stderr_tail, "fail-hangs: not answering rpc");
    // Killed at once, with its child, before any shutdown.
    assert_all_gone(pid, &[pid, grandchild]).await;
    client.shutdown().await;
}

/// On the paused clock, held: the test moves it by the shutdown timeout
/// once the fixture has taken `shutdown` (its FIFO), and no further, so
/// that `shutdown` returns at 500 ms of the clock exactly: killed then,
/// and reaped on the kill's own event, not after another timer. (It was
/// "took < 3 s" of the wall clock, which a busy machine can break.)
#[tokio::test(start_paused = true)]
async fn ignored_shutdown_is_followed_by_a_kill() {
    let scratch = Scratch::new("ignore-shutdown");
    let events = Events::default();
    let mut client = scratch.client("fail-hangs").with_timeouts(ProcessTimeouts {
        shutdown: Duration::from_millis(500),
        ..timeouts()
    });
    let held = HeldClock::hold();
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;
    let grandchild = scratch.pid("grandchild.pid");
    let bootstrap = PathBuf::from(scratch.read("bootstrap.path"));
    assert!(bootstrap.exists());

    let taken = scratch.fifo("shutdown.fifo");
    let started = tokio::time::Instant::now();
    tokio::join!(client.shutdown(), async move {
        assert_eq!(fifo_line(taken).await, "taken");
        tokio::time::advance(Duration::from_millis(500)).await;
    });
    let took = started.elapsed();
    drop(held);
    assert_eq!(took, Duration::from_millis(500));
    assert!(
        !signalable(pid),
        "the leader is reaped when shutdown returns"
    );
    assert_all_gone(pid, &[pid, grandchild]).await;
    assert!(!bootstrap.exists());
    assert_eq!(
        events.logs(LogLevel::Warning),
        ["adapter fixture-fail-hangs: did not exit within 500ms of shutdown; killed"]
    );
    // Killing it on purpose is not a crash.
    assert_eq!(events.logs(LogLevel::Error), Vec::<String>::new());
}

#[tokio::test]
async fn drop_kills_the_group_without_shutdown() {
    let scratch = Scratch::new("drop");
    let events = Events::default();
    let mut client = scratch.client("fail-hangs");
    client.start(env(&events)).await.unwrap();
    let pid = client.pid().unwrap() as i32;
    let grandchild = scratch.pid("grandchild.pid");
    let bootstrap = PathBuf::from(scratch.read("bootstrap.path"));

    drop(client);
    assert!(!bootstrap.exists());
    assert_all_gone(pid, &[pid, grandchild]).await;
}

// ---- install ----

#[test]
fn install_runs_once() {
    let scratch = Scratch::new("install");
    let client = scratch.client("install-counter");
    let marker = scratch.root.join("peers/install-counter/.installed");
    assert!(!marker.exists());
    client.ensure_installed().unwrap();
    assert!(marker.exists());
    client.ensure_installed().unwrap();
    assert_eq!(scratch.read("peers/install-counter/runs"), "run\n");
}

#[test]
fn a_changed_install_input_installs_again() {
    let scratch = Scratch::new("install-inputs");
    // `variant` writes the manifest into this folder: the inputs are
    // relative to it.
    let dir = scratch.root.join("variant-install-counter");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("lock.txt"), "v1").unwrap();
    std::fs::write(dir.join("src/main.go"), "package main").unwrap();
    let client = scratch.variant("install-counter", |m| {
        m["install_inputs"] = json!(["lock.txt", "src"]);
    });
    client.ensure_installed().unwrap();
    client.ensure_installed().unwrap();
    assert_eq!(scratch.read("peers/install-counter/runs"), "run\n");
    let marker = scratch.read("peers/install-counter/.installed");
    assert!(marker.starts_with("install inputs sha256 "), "{marker}");

    // A changed lock file installs again, and so does a changed file in a
    // folder named as an input; each only once.
    std::fs::write(dir.join("lock.txt"), "v2").unwrap();
    client.ensure_installed().unwrap();
    client.ensure_installed().unwrap();
    assert_eq!(scratch.read("peers/install-counter/runs"), "run\nrun\n");
    std::fs::write(dir.join("src/main.go"), "package main // changed").unwrap();
    client.ensure_installed().unwrap();
    client.ensure_installed().unwrap();
    assert_eq!(
        scratch.read("peers/install-counter/runs"),
        "run\nrun\nrun\n"
    );
    // One inputs line, whatever the install left in the marker.
    let marker = scratch.read("peers/install-counter/.installed");
    assert_eq!(
        marker.matches("install inputs sha256 ").count(),
        1,
        "{marker}"
    );
}

#[test]
fn a_missing_install_input_is_an_error_that_names_it() {
    let scratch = Scratch::new("install-input-missing");
    let client = scratch.variant("install-counter", |m| {
        m["install_inputs"] = json!(["gone.lock"]);
    });
    match client.ensure_installed() {
        Err(ProcessError::InstallIo { source, .. }) => {
            assert!(source.to_string().contains("gone.lock"), "{source}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!scratch.root.join("peers/install-counter/runs").exists());
}

/// Holds the install lock of the `install-counter` fixture in `scratch`, as
/// another harness process installing the same adapter would.
fn hold_install_lock(scratch: &Scratch) -> std::fs::File {
    let dir = scratch.root.join("peers/install-counter");
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::File::create(dir.join(".installed.lock")).unwrap();
    lock.lock().unwrap();
    lock
}

#[test]
fn an_install_waits_while_another_holds_the_lock() {
    let scratch = Scratch::new("install-locked");
    let client = scratch
        .client("install-counter")
        .with_timeouts(ProcessTimeouts {
            install: Duration::from_millis(300),
            ..timeouts()
        });
    let _other = hold_install_lock(&scratch);
    match client.ensure_installed() {
        Err(ProcessError::InstallFailed { outcome, .. }) => assert_eq!(
            outcome,
            "waited 300ms for another install of this adapter to finish"
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        !scratch.root.join("peers/install-counter/runs").exists(),
        "the install ran beside the other one"
    );
}

#[test]
fn an_install_that_waited_finds_the_other_ones_marker() {
    let scratch = Scratch::new("install-after-other");
    let client = scratch.client("install-counter");
    let other = hold_install_lock(&scratch);
    let waiting = std::thread::spawn(move || client.ensure_installed());
    // The other install finishes: marker first, then the lock goes.
    std::fs::write(scratch.root.join("peers/install-counter/.installed"), "").unwrap();
    drop(other);
    waiting.join().unwrap().unwrap();
    assert!(
        !scratch.root.join("peers/install-counter/runs").exists(),
        "installed again after the other install had finished"
    );
}

#[test]
fn failed_install_reports_the_output_tail() {
    let scratch = Scratch::new("install-fails");
    let client = scratch.client("fail-install");
    let error = client.ensure_installed().unwrap_err();
    let ProcessError::InstallFailed {
        adapter,
        outcome,
        output_tail,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(adapter, "fixture-fail-install");
    assert_eq!(outcome, "exited with exit status: 7");
    // The last 40 lines, stdout and stderr interleaved as written.
    let lines: Vec<&str> = output_tail.lines().collect();
    assert_eq!(lines.len(), 40);
    assert_eq!(lines[0], "fail-install: progress 63");
    assert_eq!(
        lines[37..],
        [
            "fail-install: progress 100",
            "fail-install: ERROR: could not download the client (stderr)",
            "fail-install: giving up (stdout)",
        ]
    );
}

#[test]
fn install_without_its_marker_fails() {
    let scratch = Scratch::new("install-no-marker");
    let client = scratch.variant("install-counter", |m| {
        m["install"] = json!(["bash", "-c", "echo done"]);
    });
    match client.ensure_installed() {
        Err(ProcessError::InstallFailed {
            outcome,
            output_tail,
            ..
        }) => {
            assert!(
                outcome.starts_with("finished but did not create its marker ")
                    && outcome.ends_with("peers/install-counter/.installed"),
                "{outcome}"
            );
            assert_eq!(output_tail, "done");
        }
        other => panic!("{other:?}"),
    }
}

/// The install's timeout is the wall clock's (the install runs on this
/// thread), so whether the install got as far as its child before the
/// timeout fired depends on the machine's load. Decided on what the
/// install left: a try whose output says `waiting` (printed after both
/// pids were written) must have both killed; a try the machine kept from
/// getting there says nothing of the kill and is played again (ten at
/// most: a guard, not a verdict).
#[test]
fn install_timeout_kills_the_install() {
    for _ in 0..10 {
        let scratch = Scratch::new("install-timeout");
        let client = scratch
            .variant("install-counter", |m| {
                // With a child, so that killing bash alone is not enough.
                m["install"] = json!([
                    "bash",
                    "-c",
                    "echo $$ > install.pid; sleep 1000 & echo $! > install-child.pid; echo waiting; wait"
                ]);
            })
            .with_timeouts(ProcessTimeouts {
                install: Duration::from_millis(500),
                ..timeouts()
            });
        let output_tail = match client.ensure_installed() {
            Err(ProcessError::InstallFailed {
                outcome,
                output_tail,
                ..
            }) => {
                assert_eq!(outcome, "timed out after 500ms");
                output_tail
            }
            other => panic!("{other:?}"),
        };
        if output_tail.is_empty() {
            // Timed out before the install started its child.
            continue;
        }
        assert_eq!(output_tail, "waiting");
        let (pid, child) = (scratch.pid("install.pid"), scratch.pid("install-child.pid"));
        assert!(!signalable(pid), "the install's leader is reaped");
        let deadline = Instant::now() + Duration::from_secs(3);
        while alive(child) || !group_members(pid).is_empty() {
            assert!(Instant::now() < deadline, "{:?}", group_members(pid));
            std::thread::sleep(Duration::from_millis(20));
        }
        return;
    }
    panic!("in ten tries the install never started its child within 500 ms");
}

// ---- manifests ----

fn manifest_error(json: &str) -> ProcessError {
    xds_client_under_test::AdapterManifest::parse(json, Path::new("x/adapter.json")).unwrap_err()
}

#[test]
fn manifest_errors() {
    let error = manifest_error(r#"{"name": "a", "command": ["x"]}"#);
    assert!(
        matches!(&error, ProcessError::ParseManifest { .. })
            && error.to_string().contains("missing field `capabilities`"),
        "{error}"
    );
    // A misspelt capability would silently read as false.
    let error =
        manifest_error(r#"{"name": "a", "command": ["x"], "capabilities": {"dail": true}}"#);
    assert!(
        error.to_string().contains("unknown field `dail`"),
        "{error}"
    );
    let error = manifest_error(r#"{"name": "a", "command": ["x"], "capabilties": {}}"#);
    assert!(
        error.to_string().contains("unknown field `capabilties`"),
        "{error}"
    );
    let error =
        manifest_error(r#"{"name": "a", "command": ["x"], "install": ["i"], "capabilities": {}}"#);
    assert_eq!(
        error.to_string(),
        "x/adapter.json: `install` needs an `installed` marker"
    );
    let error = manifest_error(r#"{"name": "a", "command": [], "capabilities": {}}"#);
    assert_eq!(error.to_string(), "x/adapter.json: `command` is empty");

    let missing = ProcessClient::load(Path::new("/"), Path::new("/nonexistent"));
    assert!(matches!(missing, Err(ProcessError::ReadManifest { .. })));

    // No runs at all is no setting: refused, not read as one or as the
    // default.
    let error = manifest_error(r#"{"name": "a", "command": ["x"], "capabilities": {}, "jobs": 0}"#);
    assert!(error.to_string().contains("expected a nonzero"), "{error}");
}

#[test]
fn a_manifest_says_how_many_of_its_runs_go_at_once() {
    let parse = |json: &str| {
        xds_client_under_test::AdapterManifest::parse(json, Path::new("x/adapter.json")).unwrap()
    };
    let manifest = parse(r#"{"name": "a", "command": ["x"], "capabilities": {}, "jobs": 12}"#);
    assert_eq!(manifest.jobs.map(|j| j.get()), Some(12));
    let manifest = parse(r#"{"name": "a", "command": ["x"], "capabilities": {}}"#);
    assert_eq!(manifest.jobs, None);
}

/// Every fixture manifest (and so the documented shape) loads.
#[test]
fn fixture_manifests_load() {
    for entry in std::fs::read_dir(fixtures()).unwrap().flatten() {
        if entry.path().is_dir() {
            ProcessClient::load(Path::new("/"), &entry.path()).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The real adapters' manifests (grpcio, grpc-js, ...) follow the
/// documented shape. Loading installs and starts nothing.
#[test]
fn real_adapter_manifests_load() {
    let adapters = crate_dir().join("adapters");
    let Ok(entries) = std::fs::read_dir(&adapters) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.path().join("adapter.json").is_file() {
            let client = ProcessClient::load(Path::new("/"), &entry.path())
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(!client.capabilities().virtual_time);
        }
    }
}

/// Processes an adapter started outside its process group (a session of
/// their own, a double fork) end with the run: on shutdown, and when the
/// client is dropped without one.
#[tokio::test]
async fn processes_that_left_the_adapters_group_end_with_the_run() {
    for graceful in [true, false] {
        let scratch = Scratch::new(if graceful {
            "escapes-shutdown"
        } else {
            "escapes-drop"
        });
        let events = Events::default();
        let mut client = scratch.client("escapes");
        client.start(env(&events)).await.unwrap();
        let escaped = [scratch.pid("setsid.pid"), scratch.pid("double-fork.pid")];
        let pid = client.pid().unwrap() as i32;
        for p in escaped {
            assert!(alive(p), "{p} runs while the client does");
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap();
            let (_, pgrp) = stat_fields(&stat).unwrap();
            assert_ne!(pgrp, pid, "{p} left the adapter's group");
        }
        if graceful {
            client.shutdown().await;
        } else {
            drop(client);
        }
        assert_all_gone(pid, &escaped).await;
    }
}
