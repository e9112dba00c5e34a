//! Drives an external xDS client (a third-party implementation running as
//! a child process behind an adapter) through the JSON-lines protocol of
//! `client-under-test/ADAPTER_PROTOCOL.md`.
//!
//! The child runs in its own process group and the whole group is killed
//! when the client is found broken, after `shutdown`, and on drop: adapters
//! start language runtimes that may start helpers of their own, and no
//! process may outlive its [`ProcessClient`].
//!
//! External clients run in real time (they are outside tokio's virtual
//! clock), so every wait here has a timeout, configurable through
//! [`ProcessTimeouts`] so tests of failure handling stay fast.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_client::ClientStatusDiscoveryServiceClient;
use envoy_types::pb::envoy::service::status::v3::{ClientStatusRequest, ClientStatusResponse};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use xds_vocabulary::{ClientEvent, LogLevel, ResourceType, XdsError, code_from_name, code_name};

use crate::child::{TempFile, file_tail, kill_group, program, vm_hwm_bytes};
use crate::{
    BACKEND_METHOD, Capabilities, ClientEnvironment, ClientError, ClientUnderTest, EventSink,
    ObservedEvent, PendingRpc, RpcOutcome, RpcRequest, Transport, WatchProjection,
    WatcherNotification,
};

/// The protocol version this driver speaks (`hello.protocol`).
pub const PROTOCOL_VERSION: u64 = 1;

/// Lines of the child's stderr kept for [`ClientError::Crashed`].
pub const STDERR_TAIL_LINES: usize = 40;

/// Longest stdout line accepted. Protocol lines are small (CSDS goes over
/// gRPC, not stdout): a longer one means the adapter is printing something
/// else, and reading it whole could take unbounded memory.
const MAX_STDOUT_LINE: usize = 1 << 20;

/// Bytes of one stderr line kept in the tail; the rest is dropped (debug
/// traces can print whole resources on one line).
const MAX_STDERR_LINE: usize = 4096;

/// How long to wait for the stderr reader to drain once the process is
/// dead or killed: the last lines are usually the reason it died.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// After stdout closes, how long to wait for the exit status, so that the
/// reason given names it rather than just "closed its stdout".
const EXIT_AFTER_EOF: Duration = Duration::from_secs(1);

/// After the group is killed, how long `shutdown` waits for the leader to
/// be reaped, so it is gone (not a zombie) when `shutdown` returns.
const REAP_AFTER_KILL: Duration = Duration::from_secs(2);

const INSTALL_POLL: Duration = Duration::from_millis(100);
const INSTALL_TAIL_LINES: usize = 40;
const TYPE_URL_PREFIX: &str = "type.googleapis.com/";

/// The timeouts of the protocol; [`Default`] gives the protocol's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessTimeouts {
    /// From spawn to `hello`.
    pub hello: Duration,
    /// For the reply to `dial`, `watch` and `cancel_watch`, and for a CSDS
    /// fetch.
    pub command: Duration,
    /// Added to an `rpc`'s own timeout to get the time allowed for its
    /// reply.
    pub rpc_grace: Duration,
    /// From `shutdown` to exit; then the process group is killed.
    pub shutdown: Duration,
    /// For the whole `install` command (pip and npm can take minutes).
    pub install: Duration,
}

impl Default for ProcessTimeouts {
    fn default() -> Self {
        ProcessTimeouts {
            hello: Duration::from_secs(60),
            command: Duration::from_secs(10),
            rpc_grace: Duration::from_secs(10),
            shutdown: Duration::from_secs(10),
            install: Duration::from_secs(30 * 60),
        }
    }
}

/// Capabilities as adapters declare them, in `adapter.json` and in
/// `hello`. Unknown keys are errors: a misspelt capability would otherwise
/// silently read as `false` and turn scenarios "not applicable".
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AdapterCapabilities {
    pub dial: bool,
    pub rpc: bool,
    pub watch: bool,
    /// Watches observed through channels (`watch` with `via`;
    /// ADAPTER_PROTOCOL.md, "Projected watches").
    pub projected_watch: bool,
    pub csds: bool,
    pub delta: bool,
    pub client_events: bool,
    /// gRFC A36 xDS-enabled servers: the `serve` op and `serving_status`
    /// events.
    pub serve: bool,
    /// A proxy: it serves targets on listeners, so RPCs go to a listener's
    /// address with the target as authority (ADAPTER_PROTOCOL.md, `rpc`).
    pub proxy: bool,
    pub profiles: Vec<String>,
}

impl AdapterCapabilities {
    pub fn to_capabilities(&self) -> Capabilities {
        let mut profiles = self.profiles.clone();
        // Sorted so that a different order in adapter.json and hello is
        // not reported as a difference.
        profiles.sort();
        profiles.dedup();
        Capabilities {
            watch: self.watch,
            projected_watch: self.projected_watch,
            dial: self.dial,
            rpc: self.rpc,
            // Real clients do not expose their resolved config.
            dial_config: false,
            csds: self.csds,
            csds_service: self.csds,
            resource_counts: false,
            // The adapter protocol has no way to say these.
            watch_in_callback: false,
            read_flow_control: false,
            // The adapter protocol matches replies to commands by id, and
            // adapters run each RPC on its own (thread, promise).
            background_rpc: self.rpc,
            client_events: self.client_events,
            serve: self.serve,
            delta: self.delta,
            // A separate process cannot run on the harness's virtual clock.
            virtual_time: false,
            channels_need_real_time: false,
            // What every gRPC client is; the adapter protocol is for them
            // (Envoy is driven through its admin API: the envoy driver).
            channel_states: self.dial,
            grpc_bootstrap: true,
            authorities: true,
            named_lds_cds: true,
            proxy: self.proxy,
            connects_at_start: false,
            admin: false,
            profiles,
        }
    }
}

/// How a client in a manifest is driven.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    /// `command` is an adapter speaking ADAPTER_PROTOCOL.md.
    #[default]
    Adapter,
    /// `command` is an Envoy binary: the harness renders Envoy's bootstrap,
    /// observes it through its admin API and sends RPCs through its
    /// listeners (see `client-under-test/adapters/envoy/README.md`).
    Envoy,
}

/// An adapter's `adapter.json`. Relative paths in it (`command`,
/// `install`, `installed`) resolve against its [`root`](Self::root), and
/// its commands run there.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterManifest {
    pub name: String,
    /// The folder relative paths resolve against, relative to the
    /// manifest's own folder: `.` (the default) for an adapter kept in a
    /// client's repository; the adapters this project ships say `../../..`
    /// (they install into the checkout's `.peers/`).
    #[serde(default)]
    pub root: Option<PathBuf>,
    #[serde(default)]
    pub description: String,
    /// Run when the `installed` marker is missing; must create it last.
    #[serde(default)]
    pub install: Option<Vec<String>>,
    /// The marker file `install` creates.
    #[serde(default)]
    pub installed: Option<PathBuf>,
    /// How the harness drives the client: through the adapter protocol
    /// (the default), or as Envoy.
    #[serde(default)]
    pub driver: Driver,
    /// Starts the adapter (the `adapter` driver), or is the Envoy binary.
    pub command: Vec<String>,
    /// Added to the adapter's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What the client can do, known without starting it.
    pub capabilities: AdapterCapabilities,
    /// The client's expectations file (which scenario runs it is expected
    /// to fail, and why), relative to the manifest's own folder: kept
    /// with the adapter, in the client's repository. The harness holds the
    /// client to it unless `--expectations` names another.
    #[serde(default)]
    pub expectations: Option<PathBuf>,
}

impl AdapterManifest {
    pub const FILE_NAME: &'static str = "adapter.json";

    /// The folder its relative paths resolve against, for a manifest read
    /// from `adapter_dir`: its `root` there, made absolute; an error names
    /// the folder it looked for.
    pub fn root_dir(&self, adapter_dir: &Path) -> Result<PathBuf, ProcessError> {
        let wanted = adapter_dir.join(self.root.as_deref().unwrap_or(Path::new(".")));
        std::fs::canonicalize(&wanted).map_err(|source| ProcessError::Root {
            adapter: self.name.clone(),
            path: wanted,
            source,
        })
    }

    /// Reads and checks `<adapter_dir>/adapter.json`.
    pub fn load(adapter_dir: &Path) -> Result<AdapterManifest, ProcessError> {
        let path = adapter_dir.join(Self::FILE_NAME);
        let text = std::fs::read_to_string(&path).map_err(|source| ProcessError::ReadManifest {
            path: path.clone(),
            source,
        })?;
        Self::parse(&text, &path)
    }

    /// Parses and checks a manifest; `path` is only used in errors.
    pub fn parse(json: &str, path: &Path) -> Result<AdapterManifest, ProcessError> {
        let manifest: AdapterManifest =
            serde_json::from_str(json).map_err(|source| ProcessError::ParseManifest {
                path: path.to_path_buf(),
                source,
            })?;
        let invalid = |reason: &str| ProcessError::InvalidManifest {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        if manifest.name.trim().is_empty() {
            return Err(invalid("`name` is empty"));
        }
        if manifest.command.first().is_none_or(|p| p.is_empty()) {
            return Err(invalid("`command` is empty"));
        }
        match (&manifest.install, &manifest.installed) {
            (Some(install), Some(_)) if install.first().is_none_or(|p| p.is_empty()) => {
                return Err(invalid("`install` is empty"));
            }
            (Some(_), Some(_)) | (None, None) => {}
            (Some(_), None) => return Err(invalid("`install` needs an `installed` marker")),
            (None, Some(_)) => return Err(invalid("`installed` needs an `install` command")),
        }
        Ok(manifest)
    }
}

/// Why the install lock was not taken.
enum InstallLockError {
    Io(io::Error),
    TimedOut,
}

impl From<io::Error> for InstallLockError {
    fn from(e: io::Error) -> Self {
        InstallLockError::Io(e)
    }
}

/// Errors of loading and installing adapters. (Running clients report
/// [`ClientError`]s.)
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot read {}: {source}", path.display())]
    ReadManifest { path: PathBuf, source: io::Error },
    #[error("{}: {source}", path.display())]
    ParseManifest {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: {reason}", path.display())]
    InvalidManifest { path: PathBuf, reason: String },
    #[error("adapter {adapter}: its root folder {} is not there: {source}", path.display())]
    Root {
        adapter: String,
        path: PathBuf,
        source: io::Error,
    },
    #[error("adapter {adapter}: cannot run install command {command:?} in {}: {source}", dir.display())]
    InstallSpawn {
        adapter: String,
        command: Vec<String>,
        dir: PathBuf,
        source: io::Error,
    },
    #[error("adapter {adapter}: install {outcome}; last lines of its output:\n{output_tail}")]
    InstallFailed {
        adapter: String,
        /// e.g. "exited with exit status: 1", "timed out after 1800s".
        outcome: String,
        output_tail: String,
    },
    #[error("adapter {adapter}: install: {source}")]
    InstallIo { adapter: String, source: io::Error },
}

/// What the adapter said in its `hello`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct AdapterHello {
    pub protocol: u64,
    /// The client implementation, e.g. `grpcio`.
    #[serde(default)]
    pub client: String,
    /// Its version, e.g. `1.85.0`.
    #[serde(default)]
    pub version: String,
    pub capabilities: AdapterCapabilities,
    #[serde(default)]
    pub csds_address: Option<String>,
}

/// An external xDS client driven through its adapter. See the module docs.
pub struct ProcessClient {
    /// Where the manifest's relative paths resolve and its commands run
    /// (normally [`AdapterManifest::root_dir`]).
    repo_root: PathBuf,
    manifest: AdapterManifest,
    timeouts: ProcessTimeouts,
    /// The manifest's until `hello`, then the hello's.
    capabilities: Capabilities,
    /// Where projected watches are observed (from `start`).
    projection: Option<WatchProjection>,
    running: Option<Running>,
}

impl ProcessClient {
    /// Loads `<adapter_dir>/adapter.json`. Nothing is started or installed.
    pub fn load(repo_root: &Path, adapter_dir: &Path) -> Result<ProcessClient, ProcessError> {
        let manifest = AdapterManifest::load(adapter_dir)?;
        Ok(ProcessClient::new(repo_root, manifest))
    }

    pub fn new(repo_root: &Path, manifest: AdapterManifest) -> ProcessClient {
        ProcessClient {
            repo_root: repo_root.to_path_buf(),
            capabilities: manifest.capabilities.to_capabilities(),
            manifest,
            timeouts: ProcessTimeouts::default(),
            projection: None,
            running: None,
        }
    }

    pub fn with_timeouts(mut self, timeouts: ProcessTimeouts) -> ProcessClient {
        self.timeouts = timeouts;
        self
    }

    pub fn timeouts(&self) -> ProcessTimeouts {
        self.timeouts
    }

    pub fn manifest(&self) -> &AdapterManifest {
        &self.manifest
    }

    /// The running adapter's pid, which is also its process group id.
    pub fn pid(&self) -> Option<u32> {
        self.running.as_ref().map(|r| r.pid)
    }

    /// The adapter's `hello`, while it runs.
    pub fn hello(&self) -> Option<&AdapterHello> {
        self.running.as_ref().map(|r| &r.hello)
    }

    /// Runs the manifest's `install` from the repository root if its
    /// `installed` marker is missing, with stdout and stderr captured
    /// together; a failure carries the last lines of that output.
    ///
    /// Blocks (for minutes, for pip or npm): from async code, call it
    /// through `tokio::task::spawn_blocking`.
    pub fn ensure_installed(&self) -> Result<(), ProcessError> {
        let (Some(install), Some(marker)) = (&self.manifest.install, &self.manifest.installed)
        else {
            return Ok(());
        };
        let marker = self.repo_root.join(marker);
        if marker.exists() {
            return Ok(());
        }
        let adapter = self.manifest.name.clone();
        let io_error = |source| ProcessError::InstallIo {
            adapter: adapter.clone(),
            source,
        };
        // Two runs of the harness (or two test processes) may find the
        // marker missing at once; installs are not safe to run side by
        // side (pip's venv, npm's folder), so the second waits for the
        // first and then finds its marker. The lock is the kernel's
        // (flock): it goes with the process, however that ends.
        let _lock = self.install_lock(&marker).map_err(|e| match e {
            InstallLockError::Io(source) => io_error(source),
            InstallLockError::TimedOut => ProcessError::InstallFailed {
                adapter: adapter.clone(),
                outcome: format!(
                    "waited {} for another install of this adapter to finish",
                    human_duration(self.timeouts.install)
                ),
                output_tail: String::new(),
            },
        })?;
        if marker.exists() {
            return Ok(());
        }
        // One file for both streams keeps their lines interleaved as they
        // were written, and needs no reader threads to keep pipes drained.
        let log = TempFile::create(&format!("install-{adapter}"), ".log", b"").map_err(io_error)?;
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .map_err(io_error)?;
        let err = out.try_clone().map_err(io_error)?;
        let mut command = std::process::Command::new(program(&self.repo_root, &install[0]));
        command
            .args(&install[1..])
            .current_dir(&self.repo_root)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(|source| ProcessError::InstallSpawn {
                adapter: adapter.clone(),
                command: install.clone(),
                dir: self.repo_root.clone(),
                source,
            })?;
        let pgid = child.id() as i32;
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if started.elapsed() >= self.timeouts.install => {
                    break Err(format!(
                        "timed out after {}",
                        human_duration(self.timeouts.install)
                    ));
                }
                Ok(None) => std::thread::sleep(INSTALL_POLL),
                Err(e) => break Err(format!("could not be waited for: {e}")),
            }
        };
        // Whatever happened, nothing the install started keeps running
        // (package managers can leave helpers behind).
        kill_group(pgid);
        if status.is_err() {
            // Also by pid: if the install moved itself out of its group,
            // the wait would otherwise never end.
            let _ = child.kill();
            let _ = child.wait();
        }
        let failed = |outcome: String| ProcessError::InstallFailed {
            adapter: adapter.clone(),
            outcome,
            output_tail: file_tail(log.path(), INSTALL_TAIL_LINES),
        };
        match status {
            Err(outcome) => Err(failed(outcome)),
            Ok(status) if !status.success() => Err(failed(format!("exited with {status}"))),
            Ok(_) if !marker.exists() => Err(failed(format!(
                "finished but did not create its marker {}",
                marker.display()
            ))),
            Ok(_) => Ok(()),
        }
    }

    /// Takes the lock beside `marker` (`<marker>.lock`), waiting at most
    /// the install timeout for another holder to let go.
    fn install_lock(&self, marker: &Path) -> Result<std::fs::File, InstallLockError> {
        let mut name = marker.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        let path = marker.with_file_name(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(std::fs::TryLockError::WouldBlock) => {
                    if started.elapsed() >= self.timeouts.install {
                        return Err(InstallLockError::TimedOut);
                    }
                    std::thread::sleep(INSTALL_POLL);
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
            }
        }
    }

    fn running(&mut self) -> Result<&mut Running, ClientError> {
        self.running
            .as_mut()
            .ok_or_else(|| ClientError::Failed("client not started".into()))
    }

    fn require(&self, capable: bool, what: &str) -> Result<(), ClientError> {
        if capable {
            Ok(())
        } else {
            Err(ClientError::Unsupported(format!(
                "{what} (adapter {} does not declare it)",
                self.manifest.name
            )))
        }
    }

    async fn spawn(&self, env: &ClientEnvironment) -> Result<Running, ClientError> {
        let bootstrap = TempFile::create(
            &format!("bootstrap-{}", self.manifest.name),
            ".json",
            env.bootstrap.grpc_json().as_bytes(),
        )
        .map_err(|e| ClientError::Failed(format!("cannot write the bootstrap file: {e}")))?;
        let mut command = Command::new(program(&self.repo_root, &self.manifest.command[0]));
        command
            .args(&self.manifest.command[1..])
            .current_dir(&self.repo_root)
            .envs(&self.manifest.env)
            .env("GRPC_XDS_BOOTSTRAP", bootstrap.path())
            .env("XDS_CONFORMANCE_SEED", env.rng_seed.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The exit watcher owns the Child: if the runtime drops it
            // first, the leader still dies.
            .kill_on_drop(true)
            // Its own group, so the adapter and everything it started can
            // be killed together.
            .process_group(0);
        // ...also if the harness itself is killed.
        crate::guardian::guard(&mut command);
        // The harness's own environment must not leak a profile in.
        match &env.profile {
            Some(profile) => command.env("XDS_CONFORMANCE_PROFILE", profile),
            None => command.env_remove("XDS_CONFORMANCE_PROFILE"),
        };
        let mut child = command.spawn().map_err(|e| ClientError::Crashed {
            reason: format!(
                "cannot start {:?} in {}: {e}",
                self.manifest.command,
                self.repo_root.display()
            ),
            stderr_tail: String::new(),
        })?;
        let pid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            kill_group(pid as i32);
            return Err(ClientError::Crashed {
                reason: "the adapter's stdio pipes are missing".into(),
                stderr_tail: String::new(),
            });
        };

        let shared = Arc::new(Shared {
            adapter: self.manifest.name.clone(),
            pid: pid as i32,
            reaped: AtomicBool::new(false),
            sink: env.events.clone(),
            state: Mutex::default(),
        });
        let (exit_tx, exit_rx) = watch::channel(None);
        let (stderr_tx, stderr_rx) = watch::channel(false);
        let (hello_tx, hello_rx) = oneshot::channel();
        let stderr_task = tokio::spawn(read_stderr(stderr, shared.clone(), stderr_tx));
        let stdout_task = tokio::spawn(read_stdout(
            stdout,
            shared.clone(),
            hello_tx,
            exit_rx.clone(),
        ));
        tokio::spawn(watch_exit(child, shared.clone(), exit_tx));
        let mut running = Running {
            pid,
            shared,
            stdin,
            exit: exit_rx,
            stderr_eof: stderr_rx,
            readers: [stdout_task, stderr_task],
            next_id: 1,
            hello: AdapterHello {
                protocol: PROTOCOL_VERSION,
                client: String::new(),
                version: String::new(),
                capabilities: AdapterCapabilities::default(),
                csds_address: None,
            },
            csds: None,
            _bootstrap: bootstrap,
        };

        // On every error return below, dropping `running` kills the group
        // and deletes the bootstrap file.
        match tokio::time::timeout(self.timeouts.hello, hello_rx).await {
            Ok(Ok(hello)) => {
                running.hello = hello;
                Ok(running)
            }
            // The stdout reader gave up: the shared reason says why.
            Ok(Err(_)) => {
                let reason = running
                    .shared
                    .broken_reason()
                    .unwrap_or_else(|| "the adapter stopped before hello".into());
                Err(running.crashed(reason).await)
            }
            Err(_) => {
                let reason = running.shared.mark_broken(format!(
                    "no hello within {}",
                    human_duration(self.timeouts.hello)
                ));
                Err(running.crashed(reason).await)
            }
        }
    }
}

/// The reply to a command sent, once it comes.
type PendingReply = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Map<String, Value>, ClientError>> + Send>,
>;

/// A started adapter. Dropping it kills its process group.
struct Running {
    /// Also the process group id (`process_group(0)`).
    pid: u32,
    shared: Arc<Shared>,
    stdin: ChildStdin,
    /// The exit status, once the leader has exited.
    exit: watch::Receiver<Option<String>>,
    /// True once stderr is closed (everything written has been read).
    stderr_eof: watch::Receiver<bool>,
    readers: [JoinHandle<()>; 2],
    next_id: u64,
    hello: AdapterHello,
    csds: Option<ClientStatusDiscoveryServiceClient<Channel>>,
    _bootstrap: TempFile,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Synchronous, so it works without a runtime (and in panics).
        self.shared.kill();
        for reader in &self.readers {
            reader.abort();
        }
    }
}

impl Running {
    /// A `Crashed` error with the stderr tail, once stderr has drained.
    async fn crashed(&self, reason: String) -> ClientError {
        let mut eof = self.stderr_eof.clone();
        let _ = tokio::time::timeout(STDERR_DRAIN, eof.wait_for(|closed| *closed)).await;
        ClientError::Crashed {
            reason,
            stderr_tail: self.shared.stderr_tail(),
        }
    }

    /// `Crashed` if the process is broken (e.g. it died during a CSDS
    /// fetch), else `Failed(message)`.
    async fn failed_or_crashed(&self, message: String) -> ClientError {
        match self.shared.broken_reason() {
            Some(reason) => self.crashed(reason).await,
            None => ClientError::Failed(message),
        }
    }

    /// Sends one command and waits for its reply; returns the reply's
    /// fields when it is `ok`.
    async fn command(
        &mut self,
        op: &str,
        fields: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Map<String, Value>, ClientError> {
        self.start_command(op, fields, timeout).await?.await
    }

    /// Sends one command and returns at once: the future is its reply
    /// (other commands may be sent meanwhile; replies carry their ids).
    async fn start_command(
        &mut self,
        op: &str,
        mut fields: Map<String, Value>,
        timeout: Duration,
    ) -> Result<PendingReply, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let (reply_tx, reply_rx) = oneshot::channel();
        let already_broken = {
            let mut state = self.shared.lock();
            if state.broken.is_none() {
                state.pending.insert(id, reply_tx);
            }
            state.broken.clone()
        };
        if let Some(reason) = already_broken {
            return Err(self.crashed(reason).await);
        }
        fields.insert("id".into(), json!(id));
        fields.insert("op".into(), json!(op));
        let mut line = Value::Object(fields).to_string().into_bytes();
        line.push(b'\n');

        // The write counts against the timeout too: a child that stops
        // reading stdin would otherwise block us on a full pipe.
        let deadline = tokio::time::Instant::now() + timeout;
        let stdin = &mut self.stdin;
        let written = tokio::time::timeout_at(deadline, async {
            stdin.write_all(&line).await?;
            stdin.flush().await
        })
        .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                // Most likely the process is gone (EPIPE): prefer the
                // reason that names its exit status.
                let mut exit = self.exit.clone();
                let _ = tokio::time::timeout(EXIT_AFTER_EOF, exit.wait_for(Option::is_some)).await;
                let reason = self
                    .shared
                    .mark_broken(format!("cannot send {op} to the adapter's stdin: {e}"));
                return Err(self.crashed(reason).await);
            }
            Err(_) => {
                let reason = self.shared.mark_broken(format!(
                    "no reply to {op} within {}",
                    human_duration(timeout)
                ));
                return Err(self.crashed(reason).await);
            }
        }
        let shared = self.shared.clone();
        let stderr_eof = self.stderr_eof.clone();
        let op = op.to_string();
        Ok(Box::pin(async move {
            let crashed = |reason: String| async {
                let mut eof = stderr_eof.clone();
                let _ = tokio::time::timeout(STDERR_DRAIN, eof.wait_for(|closed| *closed)).await;
                ClientError::Crashed {
                    reason,
                    stderr_tail: shared.stderr_tail(),
                }
            };
            match tokio::time::timeout_at(deadline, reply_rx).await {
                Ok(Ok(reply)) => reply.into_result(),
                // The pending reply was dropped: the client broke meanwhile.
                Ok(Err(_)) => {
                    let reason = shared
                        .broken_reason()
                        .unwrap_or_else(|| "the adapter stopped".into());
                    Err(crashed(format!("{reason} (while waiting for the reply to {op})")).await)
                }
                Err(_) => {
                    let reason = shared.mark_broken(format!(
                        "no reply to {op} within {}",
                        human_duration(timeout)
                    ));
                    Err(crashed(reason).await)
                }
            }
        }))
    }
}

#[derive(Default)]
struct SharedState {
    /// Commands waiting for their reply, by id.
    pending: HashMap<u64, oneshot::Sender<Reply>>,
    /// Why the client is unusable; set once, first cause wins.
    broken: Option<String>,
    /// `shutdown` was sent (or we are killing it on purpose): an exit now
    /// is expected, not a crash.
    shutting_down: bool,
    hello_seen: bool,
    stderr_tail: VecDeque<String>,
}

/// State shared by the client and its reader tasks.
struct Shared {
    adapter: String,
    /// The adapter's pid, which is also its process group id.
    pid: i32,
    /// The leader has been waited for: its pid may be reused now.
    reaped: AtomicBool,
    sink: EventSink,
    state: Mutex<SharedState>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, SharedState> {
        // The critical sections cannot leave the state half-updated, so a
        // poisoned lock (a panic elsewhere while holding it) is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn broken_reason(&self) -> Option<String> {
        self.lock().broken.clone()
    }

    /// Records why the client is unusable (the first reason wins, and is
    /// returned), fails every pending command, kills the process group and
    /// puts the reason on the timeline.
    fn mark_broken(&self, reason: String) -> String {
        {
            let mut state = self.lock();
            if let Some(first) = &state.broken {
                return first.clone();
            }
            state.broken = Some(reason.clone());
            // Dropping the senders wakes the waiting commands.
            state.pending.clear();
        }
        // A client that broke the protocol or stopped answering cannot be
        // trusted with anything further; the harness gets the reason from
        // the next command, and the fake servers stop hearing from it.
        self.kill();
        (self.sink)(ObservedEvent::Client(ClientEvent::Log {
            level: LogLevel::Error,
            message: format!("adapter {}: {reason}", self.adapter),
        }));
        reason
    }

    /// Kills the process group, and the leader by pid while it has not
    /// been reaped (in case it moved itself to another group).
    fn kill(&self) {
        kill_group(self.pid);
        if !self.reaped.load(Ordering::Acquire) && self.pid > 1 {
            // SAFETY: kill only sends a signal.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
    }

    fn stderr_tail(&self) -> String {
        let state = self.lock();
        let lines: Vec<&str> = state.stderr_tail.iter().map(String::as_str).collect();
        lines.join("\n")
    }

    fn log(&self, level: LogLevel, message: String) {
        (self.sink)(ObservedEvent::Client(ClientEvent::Log { level, message }));
    }
}

struct Reply {
    ok: bool,
    error: String,
    fields: Map<String, Value>,
}

impl Reply {
    fn into_result(self) -> Result<Map<String, Value>, ClientError> {
        if self.ok {
            return Ok(self.fields);
        }
        match self.error.strip_prefix("unsupported") {
            Some(what) => Err(ClientError::Unsupported(
                what.trim_start_matches(':').trim().to_string(),
            )),
            None => Err(ClientError::Failed(self.error)),
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum EventLine {
    /// Only valid as the first line; here it is recognised to be refused.
    Hello(serde::de::IgnoredAny),
    ChannelState {
        target: String,
        state: String,
    },
    Watcher {
        #[serde(rename = "type")]
        resource_type: String,
        name: String,
        kind: String,
        #[serde(default)]
        summary: String,
        /// For `changed`: the resource as a base64 `google.protobuf.Any`,
        /// summarised here as the reference client does.
        #[serde(default)]
        resource: Option<String>,
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: String,
    },
    Log {
        level: String,
        #[serde(default)]
        message: String,
    },
    ServingStatus {
        address: String,
        state: String,
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: String,
    },
}

#[derive(Deserialize)]
struct RpcResult {
    code: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    backend: Option<String>,
}

/// Waits for the leader to exit; an exit nobody asked for breaks the
/// client.
async fn watch_exit(mut child: Child, shared: Arc<Shared>, exit: watch::Sender<Option<String>>) {
    let status = match child.wait().await {
        Ok(status) => status.to_string(),
        Err(e) => format!("could not be waited for: {e}"),
    };
    shared.reaped.store(true, Ordering::Release);
    let (expected, hello_seen) = {
        let state = shared.lock();
        (state.shutting_down, state.hello_seen)
    };
    if !expected {
        shared.mark_broken(if hello_seen {
            format!("client process exited unexpectedly ({status})")
        } else {
            format!("client process exited before hello ({status})")
        });
    }
    // Published after mark_broken, so whoever wakes on it finds the reason
    // that names the exit status.
    exit.send_replace(Some(status));
}

/// Keeps the last lines of stderr. Reading it all the time also keeps the
/// child from blocking on a full pipe when it logs a lot (debug tracing).
async fn read_stderr(stderr: ChildStderr, shared: Arc<Shared>, eof: watch::Sender<bool>) {
    let mut reader = BufReader::new(stderr);
    while let Ok(Some((bytes, truncated))) = read_line_capped(&mut reader, MAX_STDERR_LINE).await {
        let mut line = String::from_utf8_lossy(&bytes).into_owned();
        if line.ends_with('\r') {
            line.pop();
        }
        if truncated {
            line.push_str(" [...]");
        }
        let mut state = shared.lock();
        if state.stderr_tail.len() == STDERR_TAIL_LINES {
            state.stderr_tail.pop_front();
        }
        state.stderr_tail.push_back(line);
    }
    eof.send_replace(true);
}

/// Reads the protocol from stdout: the hello, then replies and events.
async fn read_stdout(
    stdout: ChildStdout,
    shared: Arc<Shared>,
    hello: oneshot::Sender<AdapterHello>,
    mut exit: watch::Receiver<Option<String>>,
) {
    let mut reader = BufReader::new(stdout);
    let mut hello = Some(hello);
    loop {
        match read_line_capped(&mut reader, MAX_STDOUT_LINE).await {
            Ok(Some((_, true))) => {
                shared.mark_broken(format!(
                    "printed a line longer than {MAX_STDOUT_LINE} bytes on stdout"
                ));
                return;
            }
            Ok(Some((line, false))) => {
                if let Err(reason) = handle_line(&shared, &mut hello, &line) {
                    shared.mark_broken(reason);
                    return;
                }
            }
            Ok(None) => {
                // stdout closes when the process exits: give the exit
                // watcher a moment to report the status, which says more.
                let _ = tokio::time::timeout(EXIT_AFTER_EOF, exit.wait_for(Option::is_some)).await;
                if !shared.lock().shutting_down {
                    shared.mark_broken("the adapter closed its stdout".into());
                }
                return;
            }
            Err(e) => {
                shared.mark_broken(format!("reading the adapter's stdout failed: {e}"));
                return;
            }
        }
    }
}

/// Handles one stdout line; `Err` is a protocol violation, with the reason.
fn handle_line(
    shared: &Shared,
    hello: &mut Option<oneshot::Sender<AdapterHello>>,
    line: &[u8],
) -> Result<(), String> {
    match parse_line(line, hello.is_some()).map_err(|e| e.to_string())? {
        AdapterLine::Hello(said) => {
            shared.lock().hello_seen = true;
            // If `start` gave up waiting meanwhile, the process is being
            // killed anyway.
            if let Some(hello_tx) = hello.take() {
                let _ = hello_tx.send(said);
            }
        }
        AdapterLine::Reply {
            id,
            ok,
            error,
            fields,
        } => {
            let waiting = shared.lock().pending.remove(&id).ok_or_else(|| {
                format!(
                    "replied to command {id}, which is not waiting for a reply: {}",
                    excerpt(line)
                )
            })?;
            let _ = waiting.send(Reply { ok, error, fields });
        }
        AdapterLine::Event(observed) => (shared.sink)(observed),
    }
    Ok(())
}

/// One stdout line of an adapter, decoded: the harness's half of the line
/// codec of `ADAPTER_PROTOCOL.md`.
#[derive(Clone, Debug, PartialEq)]
pub enum AdapterLine {
    Hello(AdapterHello),
    /// The reply to command `id`; `fields` is the whole line (a command's
    /// results are fields of its reply).
    Reply {
        id: u64,
        ok: bool,
        /// The adapter's `error`; empty when ok.
        error: String,
        fields: Map<String, Value>,
    },
    Event(ObservedEvent),
}

/// Why a stdout line breaks the protocol. `line` is an excerpt of it:
/// bounded and printable, for the reason the client is broken.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("printed a line that is not JSON ({error}): {line}")]
    NotJson {
        error: serde_json::Error,
        line: String,
    },
    #[error("printed a line that is neither a reply nor an event: {line}")]
    NeitherReplyNorEvent { line: String },
    #[error("printed a line before hello: {line}")]
    BeforeHello { line: String },
    #[error("sent a malformed hello ({error}): {line}")]
    MalformedHello {
        error: serde_json::Error,
        line: String,
    },
    #[error("speaks adapter protocol {said} (the harness speaks {PROTOCOL_VERSION})")]
    WrongProtocol { said: u64 },
    #[error("sent a reply whose id is not an integer: {line}")]
    IdNotInteger { line: String },
    #[error("sent a reply without a boolean `ok`: {line}")]
    NoOk { line: String },
    #[error("sent a malformed event ({error}): {line}")]
    MalformedEvent {
        error: serde_json::Error,
        line: String,
    },
    #[error("{problem}: {line}")]
    BadEvent { problem: EventProblem, line: String },
}

/// What is wrong with an event line that has the right shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventProblem {
    #[error("sent a second hello")]
    SecondHello,
    #[error("sent an unknown channel state {0:?}")]
    UnknownChannelState(String),
    #[error("sent an unknown resource type {0:?}")]
    UnknownResourceType(String),
    #[error("sent a {0} watcher event without a `code`")]
    WatcherWithoutCode(String),
    #[error("sent an unknown status code {0:?}")]
    UnknownCode(String),
    #[error("sent an unknown watcher event kind {0:?}")]
    UnknownWatcherKind(String),
    #[error("sent an unknown log level {0:?}")]
    UnknownLogLevel(String),
    #[error("sent a NOT_SERVING serving_status event without a `code`")]
    NotServingWithoutCode,
    #[error("sent an unknown serving state {0:?}")]
    UnknownServingState(String),
    #[error("sent a watcher `resource` that is not a base64 google.protobuf.Any: {0}")]
    BadResource(String),
}

/// A watcher event's `resource` (a base64 `google.protobuf.Any`),
/// summarised as the reference client summarises what it accepted, so
/// timelines compare across clients.
fn summarise(resource_type: ResourceType, encoded: &str) -> Result<String, EventProblem> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| EventProblem::BadResource(e.to_string()))?;
    let any = <envoy_types::pb::google::protobuf::Any as prost::Message>::decode(bytes.as_slice())
        .map_err(|e| EventProblem::BadResource(e.to_string()))?;
    Ok(
        crate::summary::of_entry(resource_type, &any).unwrap_or_else(|e| {
            format!(
                "{} ({} bytes, accepted by the client; the reference client would reject it: {e})",
                resource_type.short_name(),
                any.value.len()
            )
        }),
    )
}

/// Decodes one stdout line (without its `\n`); `expecting_hello`: no
/// line came before it, so it must be the hello.
pub fn parse_line(line: &[u8], expecting_hello: bool) -> Result<AdapterLine, LineError> {
    let value: Value = serde_json::from_slice(line).map_err(|error| LineError::NotJson {
        error,
        line: excerpt(line),
    })?;
    let Value::Object(object) = value else {
        return Err(LineError::NeitherReplyNorEvent {
            line: excerpt(line),
        });
    };

    if expecting_hello {
        if object.get("event").and_then(Value::as_str) != Some("hello") {
            return Err(LineError::BeforeHello {
                line: excerpt(line),
            });
        }
        let said: AdapterHello =
            serde_json::from_value(Value::Object(object)).map_err(|error| {
                LineError::MalformedHello {
                    error,
                    line: excerpt(line),
                }
            })?;
        if said.protocol != PROTOCOL_VERSION {
            return Err(LineError::WrongProtocol {
                said: said.protocol,
            });
        }
        return Ok(AdapterLine::Hello(said));
    }

    if let Some(id) = object.get("id") {
        let id = id.as_u64().ok_or_else(|| LineError::IdNotInteger {
            line: excerpt(line),
        })?;
        let ok = object
            .get("ok")
            .and_then(Value::as_bool)
            .ok_or_else(|| LineError::NoOk {
                line: excerpt(line),
            })?;
        let error = match object.get("error") {
            Some(Value::String(error)) => error.clone(),
            _ if ok => String::new(),
            _ => "(the adapter gave no error text)".into(),
        };
        return Ok(AdapterLine::Reply {
            id,
            ok,
            error,
            fields: object,
        });
    }

    if object.contains_key("event") {
        let event: EventLine = serde_json::from_value(Value::Object(object)).map_err(|error| {
            LineError::MalformedEvent {
                error,
                line: excerpt(line),
            }
        })?;
        return observed_event(event)
            .map(AdapterLine::Event)
            .map_err(|problem| LineError::BadEvent {
                problem,
                line: excerpt(line),
            });
    }

    Err(LineError::NeitherReplyNorEvent {
        line: excerpt(line),
    })
}

fn observed_event(event: EventLine) -> Result<ObservedEvent, EventProblem> {
    match event {
        EventLine::Hello(_) => Err(EventProblem::SecondHello),
        EventLine::ChannelState { target, state } => {
            let state = crate::ConnectivityState::parse(&state)
                .ok_or(EventProblem::UnknownChannelState(state))?;
            Ok(ObservedEvent::ChannelState { target, state })
        }
        EventLine::Watcher {
            resource_type,
            name,
            kind,
            summary,
            resource,
            code,
            message,
        } => {
            let parsed_type = ResourceType::parse(&resource_type)
                .ok_or_else(|| EventProblem::UnknownResourceType(resource_type.clone()))?;
            let error = || -> Result<XdsError, EventProblem> {
                let code = code
                    .as_deref()
                    .ok_or_else(|| EventProblem::WatcherWithoutCode(kind.clone()))?;
                let code = code_from_name(code)
                    .ok_or_else(|| EventProblem::UnknownCode(code.to_string()))?;
                Ok(XdsError::new(code, message.clone()))
            };
            let notification = match kind.as_str() {
                "changed" => WatcherNotification::Changed {
                    summary: match resource {
                        Some(encoded) => summarise(parsed_type, &encoded)?,
                        None => summary,
                    },
                },
                "resource_error" => WatcherNotification::ResourceError(error()?),
                "ambient_error" => WatcherNotification::AmbientError(error()?),
                "ambient_error_cleared" => WatcherNotification::AmbientErrorCleared,
                "does_not_exist" => WatcherNotification::DoesNotExist,
                _ => return Err(EventProblem::UnknownWatcherKind(kind)),
            };
            Ok(ObservedEvent::Watcher {
                resource_type: parsed_type,
                name,
                notification,
            })
        }
        EventLine::Log { level, message } => {
            let level = match level.to_ascii_lowercase().as_str() {
                "info" => LogLevel::Info,
                "warning" => LogLevel::Warning,
                "error" => LogLevel::Error,
                _ => return Err(EventProblem::UnknownLogLevel(level)),
            };
            Ok(ObservedEvent::Client(ClientEvent::Log { level, message }))
        }
        EventLine::ServingStatus {
            address,
            state,
            code,
            message,
        } => {
            let status = match state.as_str() {
                "SERVING" => Ok(()),
                "NOT_SERVING" => {
                    let code = code.as_deref().ok_or(EventProblem::NotServingWithoutCode)?;
                    let code = code_from_name(code)
                        .ok_or_else(|| EventProblem::UnknownCode(code.to_string()))?;
                    Err(XdsError::new(code, message))
                }
                _ => return Err(EventProblem::UnknownServingState(state)),
            };
            Ok(ObservedEvent::ServingStatus { address, status })
        }
    }
}

/// The adapter's half of the codec: the event line an adapter prints for
/// `event`, for the events the protocol has (`None` for the others, which
/// an adapter reports on stderr if at all). [`parse_line`] reads it back
/// as the same event.
pub fn event_line(event: &ObservedEvent) -> Option<Value> {
    let error_fields = |line: &mut Value, e: &XdsError| {
        line["code"] = json!(code_name(e.code));
        line["message"] = json!(e.message);
    };
    Some(match event {
        ObservedEvent::Watcher {
            resource_type,
            name,
            notification,
        } => {
            let mut line = json!({
                "event": "watcher",
                "type": resource_type.type_url(),
                "name": name,
            });
            match notification {
                WatcherNotification::Changed { summary } => {
                    line["kind"] = json!("changed");
                    line["summary"] = json!(summary);
                }
                WatcherNotification::ResourceError(e) => {
                    line["kind"] = json!("resource_error");
                    error_fields(&mut line, e);
                }
                WatcherNotification::AmbientError(e) => {
                    line["kind"] = json!("ambient_error");
                    error_fields(&mut line, e);
                }
                WatcherNotification::AmbientErrorCleared => {
                    line["kind"] = json!("ambient_error_cleared");
                }
                WatcherNotification::DoesNotExist => line["kind"] = json!("does_not_exist"),
            }
            line
        }
        ObservedEvent::ServingStatus { address, status } => {
            let mut line = json!({"event": "serving_status", "address": address});
            match status {
                Ok(()) => line["state"] = json!("SERVING"),
                Err(e) => {
                    line["state"] = json!("NOT_SERVING");
                    error_fields(&mut line, e);
                }
            }
            line
        }
        ObservedEvent::ChannelState { target, state } => {
            json!({"event": "channel_state", "target": target, "state": state.name()})
        }
        ObservedEvent::Client(ClientEvent::Log { level, message }) => {
            let level = match level {
                LogLevel::Info => "info",
                LogLevel::Warning => "warning",
                LogLevel::Error => "error",
            };
            json!({"event": "log", "level": level, "message": message})
        }
        ObservedEvent::Dial { .. } | ObservedEvent::Admin(_) | ObservedEvent::Client(_) => {
            return None;
        }
    })
}

/// Reads one `\n`-terminated line (without the `\n`), keeping at most
/// `max` bytes of it; the flag says whether bytes were dropped. `None` at
/// end of input. Unlike `read_line`, a child printing without newlines
/// cannot make this take unbounded memory.
async fn read_line_capped<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut truncated = false;
    let mut read_any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(read_any.then_some((line, truncated)));
        }
        read_any = true;
        let (chunk, consumed, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(newline) => (&buf[..newline], newline + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = max.saturating_sub(line.len());
        if chunk.len() > room {
            truncated = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        reader.consume(consumed);
        if complete {
            return Ok(Some((line, truncated)));
        }
    }
}

/// A line as it can appear in a reason: bounded, printable (control
/// characters, which an adapter printing garbage sends too, become spaces,
/// so a reason never breaks a report's line or a terminal).
fn excerpt(line: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end();
    let printable = |text: &str| -> String {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    };
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", printable(&text[..cut])),
        None => printable(text),
    }
}

fn human_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The `rpc` command's fields. `authority` goes only with a target that is
/// a listener's address (a proxy's: see [`RpcRequest::authority`]).
fn rpc_fields(request: &RpcRequest, method: &str) -> Value {
    let mut fields = json!({
        "target": request.target,
        "method": method,
        "timeout_ms": u64::try_from(request.timeout.as_millis()).unwrap_or(u64::MAX),
        "wait_for_ready": request.wait_for_ready,
    });
    if let Some(authority) = &request.authority {
        fields["authority"] = json!(authority);
    }
    fields
}

/// gRPC-Node (grpc-js-xds) reports CSDS type URLs without the
/// `type.googleapis.com/` prefix (`envoy.config.cluster.v3.Cluster`);
/// C-core and Envoy report full URLs. That is a difference of presentation,
/// not of xDS behaviour, and scenarios compare against full URLs, so it is
/// removed here rather than failing every CSDS expectation on grpc-js.
fn normalize_type_urls(response: &mut ClientStatusResponse) {
    fn add_prefix(url: &mut String) {
        if !url.is_empty() && !url.contains('/') {
            url.insert_str(0, TYPE_URL_PREFIX);
        }
    }
    for config in &mut response.config {
        for generic in &mut config.generic_xds_configs {
            add_prefix(&mut generic.type_url);
            if let Some(any) = &mut generic.xds_config {
                add_prefix(&mut any.type_url);
            }
        }
    }
}

#[async_trait::async_trait]
impl ClientUnderTest for ProcessClient {
    fn name(&self) -> &str {
        &self.manifest.name
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        self.projection = env.projection.clone();
        if !matches!(env.transport, Transport::Tcp) {
            return Err(ClientError::Unsupported(
                "in-memory transport: an external client is a separate process and reaches \
                 the fake servers over TCP"
                    .into(),
            ));
        }
        if self.running.is_some() {
            return Err(ClientError::Failed("client already started".into()));
        }
        // Checked against the manifest first, so an inapplicable profile
        // costs no process start.
        if let Some(profile) = &env.profile {
            self.require(
                self.capabilities.profiles.contains(profile),
                &format!("profile {profile:?}"),
            )?;
        }
        let running = self.spawn(&env).await?;

        let declared = self.manifest.capabilities.to_capabilities();
        let said = running.hello.capabilities.to_capabilities();
        if said != declared {
            running.shared.log(
                LogLevel::Warning,
                format!(
                    "adapter {}: the client's hello declares other capabilities than \
                     adapter.json ({}); using the hello's. Fix adapter.json: the harness \
                     decides \"not applicable\" from it before starting the client",
                    self.manifest.name,
                    capability_differences(&declared, &said)
                ),
            );
        }
        self.capabilities = said;
        if let Some(profile) = &env.profile
            && !self.capabilities.profiles.contains(profile)
        {
            running.shared.lock().shutting_down = true;
            drop(running);
            return Err(ClientError::Unsupported(format!(
                "profile {profile:?} (adapter {}'s hello does not declare it)",
                self.manifest.name
            )));
        }
        self.running = Some(running);
        Ok(())
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        let mut fields = json!({"type": resource_type.type_url(), "name": name});
        if !self.capabilities.watch {
            self.require(self.capabilities.projected_watch, "watch")?;
            let projection = self.projection.as_ref().ok_or_else(|| {
                ClientError::Unsupported("watch: no projection for this scenario".into())
            })?;
            let authority = projection
                .authorities
                .get(&(resource_type, name.to_string()))
                .ok_or_else(|| {
                    ClientError::Unsupported(format!(
                        "watch: the projection has no channel for {resource_type} {name}"
                    ))
                })?;
            fields["via"] = json!({"target": projection.target, "authority": authority});
        }
        let timeout = self.timeouts.command;
        self.running()?
            .command("watch", into_map(fields), timeout)
            .await
            .map(drop)
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        self.require(
            self.capabilities.watch || self.capabilities.projected_watch,
            "watch",
        )?;
        let timeout = self.timeouts.command;
        let fields = json!({"type": resource_type.type_url(), "name": name});
        self.running()?
            .command("cancel_watch", into_map(fields), timeout)
            .await
            .map(drop)
    }

    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        self.require(self.capabilities.dial, "dial")?;
        let timeout = self.timeouts.command;
        self.running()?
            .command("dial", into_map(json!({"target": target})), timeout)
            .await
            .map(drop)
    }

    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        self.require(self.capabilities.serve, "serve")?;
        let timeout = self.timeouts.command;
        self.running()?
            .command("serve", into_map(json!({"address": address})), timeout)
            .await
            .map(drop)
    }

    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.start_rpc(request).await?.await
    }

    async fn start_rpc(&mut self, request: &RpcRequest) -> Result<PendingRpc, ClientError> {
        self.require(self.capabilities.rpc, "rpc")?;
        let timeout = request.timeout + self.timeouts.rpc_grace;
        let method = if request.method.is_empty() {
            BACKEND_METHOD
        } else {
            &request.method
        };
        let fields = rpc_fields(request, method);
        let reply = self
            .running()?
            .start_command("rpc", into_map(fields), timeout)
            .await?;
        Ok(Box::pin(async move {
            let mut reply = reply.await?;
            let malformed =
                |why: String| ClientError::Failed(format!("malformed rpc reply: {why}"));
            let result: RpcResult =
                serde_json::from_value(reply.remove("result").unwrap_or_default())
                    .map_err(|e| malformed(format!("`result`: {e}")))?;
            let code = code_from_name(&result.code)
                .ok_or_else(|| malformed(format!("unknown status code {:?}", result.code)))?;
            Ok(RpcOutcome {
                code,
                message: result.message,
                // Only a successful call has a backend (see RpcOutcome).
                backend: result.backend.filter(|_| code == tonic::Code::Ok),
            })
        }))
    }

    async fn resource_counts(&mut self) -> Result<crate::ResourceCounts, ClientError> {
        Err(ClientError::Unsupported(
            "resource counts (the adapter protocol has no command for them)".into(),
        ))
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        match self.fetch_csds(ClientStatusRequest::default()).await? {
            Ok(response) => Ok(response),
            Err(status) => {
                let address = self
                    .running()?
                    .hello
                    .csds_address
                    .clone()
                    .unwrap_or_default();
                let running = self.running()?;
                Err(running
                    .failed_or_crashed(format!("the client's CSDS at {address}: {status}"))
                    .await)
            }
        }
    }

    async fn csds_request(
        &mut self,
        request: ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, XdsError>, ClientError> {
        Ok(self
            .fetch_csds(request)
            .await?
            .map_err(|status| XdsError::new(status.code(), status.message())))
    }

    /// `VmHWM` of the adapter process from `/proc/<pid>/status`, while it
    /// runs (Linux only; None elsewhere, and once it has exited). That is
    /// the group leader: the client library runs in it (python, node, or
    /// the binary itself); helpers it starts are not counted.
    fn peak_rss_bytes(&self) -> Option<u64> {
        let running = self.running.as_ref()?;
        if running.shared.reaped.load(Ordering::Acquire) {
            // The pid may belong to another process by now.
            return None;
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", running.pid)).ok()?;
        vm_hwm_bytes(&status)
    }

    async fn shutdown(&mut self) {
        let Some(mut running) = self.running.take() else {
            return;
        };
        let was_broken = {
            let mut state = running.shared.lock();
            state.shutting_down = true;
            state.broken.is_some()
        };
        // A broken client has been killed already; dropping `running`
        // below makes sure of it.
        if !was_broken {
            let deadline = tokio::time::Instant::now() + self.timeouts.shutdown;
            let id = running.next_id;
            running.next_id += 1;
            // Registered so the reply is accepted; what it says does not
            // matter, the exit does.
            let (reply_tx, _reply_rx) = oneshot::channel();
            running.shared.lock().pending.insert(id, reply_tx);
            let line = format!("{}\n", json!({"id": id, "op": "shutdown"}));
            let stdin = &mut running.stdin;
            let _ = tokio::time::timeout_at(deadline, async {
                stdin.write_all(line.as_bytes()).await?;
                stdin.flush().await
            })
            .await;
            let mut exit = running.exit.clone();
            let exited =
                match tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await {
                    Ok(Ok(status)) => status.clone(),
                    _ => None,
                };
            match exited {
                None => running.shared.log(
                    LogLevel::Warning,
                    format!(
                        "adapter {}: did not exit within {} of shutdown; killed",
                        self.manifest.name,
                        human_duration(self.timeouts.shutdown)
                    ),
                ),
                Some(status) if status != "exit status: 0" => running.shared.log(
                    LogLevel::Warning,
                    format!(
                        "adapter {}: exited with {status} after shutdown",
                        self.manifest.name
                    ),
                ),
                Some(_) => {}
            }
        }
        let mut exit = running.exit.clone();
        // Kills the group (the leader if it is still there, and whatever it
        // left behind) and deletes the bootstrap file.
        drop(running);
        let _ = tokio::time::timeout(REAP_AFTER_KILL, exit.wait_for(Option::is_some)).await;
    }

    async fn watch_in_callback(
        &mut self,
        _resource_type: ResourceType,
        _name: &str,
        _of: (ResourceType, &str),
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(
            "watches started from a watcher's callback".into(),
        ))
    }

    async fn hold_reads(
        &mut self,
        _resource_type: ResourceType,
        _name: &str,
        _hold: bool,
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(
            "read flow control (a watcher holding the next read)".into(),
        ))
    }

    // The adapter protocol has no command for these (ADAPTER_PROTOCOL.md).
}

impl ProcessClient {
    /// Sends `request` to the adapter's CSDS service: its answer, or the
    /// status it answered with; a client that cannot be reached is an
    /// error of the harness's.
    async fn fetch_csds(
        &mut self,
        request: ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, tonic::Status>, ClientError> {
        self.require(self.capabilities.csds, "csds")?;
        let timeout = self.timeouts.command;
        let adapter = self.manifest.name.clone();
        let running = self.running()?;
        if let Some(reason) = running.shared.broken_reason() {
            return Err(running.crashed(reason).await);
        }
        let Some(address) = running.hello.csds_address.clone() else {
            return Err(ClientError::Unsupported(format!(
                "csds (adapter {adapter}'s hello gave no csds_address)"
            )));
        };
        let mut client = match &running.csds {
            Some(client) => client.clone(),
            None => {
                let endpoint = Channel::from_shared(format!("http://{address}"))
                    .map_err(|e| ClientError::Failed(format!("bad csds_address {address:?}: {e}")))?
                    .connect_timeout(timeout)
                    .tcp_nodelay(true);
                let channel = match endpoint.connect().await {
                    Ok(channel) => channel,
                    Err(e) => {
                        return Err(running
                            .failed_or_crashed(format!(
                                "cannot connect to the client's CSDS at {address}: {e}"
                            ))
                            .await);
                    }
                };
                let client = ClientStatusDiscoveryServiceClient::new(channel);
                running.csds = Some(client.clone());
                client
            }
        };
        let fetched = tokio::time::timeout(timeout, client.fetch_client_status(request)).await;
        let mut response = match fetched {
            Ok(Ok(response)) => response.into_inner(),
            Ok(Err(status)) => return Ok(Err(status)),
            Err(_) => {
                return Err(running
                    .failed_or_crashed(format!(
                        "the client's CSDS at {address} did not answer within {}",
                        human_duration(timeout)
                    ))
                    .await);
            }
        };
        normalize_type_urls(&mut response);
        Ok(Ok(response))
    }
}

fn into_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// "dial: adapter.json true, hello false; profiles: adapter.json [], hello [a88]"
fn capability_differences(declared: &Capabilities, said: &Capabilities) -> String {
    let flags = [
        ("dial", declared.dial, said.dial),
        ("rpc", declared.rpc, said.rpc),
        ("watch", declared.watch, said.watch),
        (
            "projected_watch",
            declared.projected_watch,
            said.projected_watch,
        ),
        ("csds", declared.csds, said.csds),
        ("delta", declared.delta, said.delta),
        ("client_events", declared.client_events, said.client_events),
        ("serve", declared.serve, said.serve),
    ];
    let mut differences: Vec<String> = flags
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(name, a, b)| format!("{name}: adapter.json {a}, hello {b}"))
        .collect();
    if declared.profiles != said.profiles {
        differences.push(format!(
            "profiles: adapter.json {:?}, hello {:?}",
            declared.profiles, said.profiles
        ));
    }
    differences.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn read_line_capped_bounds_lines() {
        let input: &[u8] = b"short\nthis one is long\nlast";
        let mut reader = BufReader::with_capacity(4, input);
        let mut lines = Vec::new();
        while let Some(line) = read_line_capped(&mut reader, 8).await.unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            vec![
                (b"short".to_vec(), false),
                (b"this one".to_vec(), true),
                (b"last".to_vec(), false),
            ]
        );
    }

    #[test]
    fn codes_by_name() {
        assert_eq!(code_from_name("OK"), Some(tonic::Code::Ok));
        assert_eq!(
            code_from_name("UNAVAILABLE"),
            Some(tonic::Code::Unavailable)
        );
        assert_eq!(
            code_from_name("UNAUTHENTICATED"),
            Some(tonic::Code::Unauthenticated)
        );
        assert_eq!(code_from_name("unavailable"), None);
        assert_eq!(code_from_name("14"), None);
    }

    #[test]
    fn rpc_names_an_authority_only_for_a_listener_address() {
        let mut request = RpcRequest {
            target: "xds:///svc".into(),
            method: String::new(),
            timeout: Duration::from_millis(1500),
            wait_for_ready: true,
            authority: None,
        };
        let fields = rpc_fields(&request, BACKEND_METHOD);
        assert_eq!(
            fields,
            json!({"target": "xds:///svc", "method": BACKEND_METHOD, "timeout_ms": 1500, "wait_for_ready": true})
        );
        request.target = "127.0.0.1:41000".into();
        request.authority = Some("svc".into());
        let fields = rpc_fields(&request, BACKEND_METHOD);
        assert_eq!(fields["target"], "127.0.0.1:41000");
        assert_eq!(fields["authority"], "svc");
    }

    #[test]
    fn bare_type_urls_get_the_prefix() {
        use envoy_types::pb::envoy::service::status::v3::ClientConfig;
        use envoy_types::pb::envoy::service::status::v3::client_config::GenericXdsConfig;
        let entry = |type_url: &str| GenericXdsConfig {
            type_url: type_url.into(),
            ..Default::default()
        };
        let mut response = ClientStatusResponse {
            config: vec![ClientConfig {
                generic_xds_configs: vec![
                    entry("envoy.config.cluster.v3.Cluster"),
                    entry("type.googleapis.com/envoy.config.listener.v3.Listener"),
                ],
                ..Default::default()
            }],
        };
        normalize_type_urls(&mut response);
        let urls: Vec<&str> = response.config[0]
            .generic_xds_configs
            .iter()
            .map(|g| g.type_url.as_str())
            .collect();
        assert_eq!(
            urls,
            [
                ResourceType::Cluster.type_url(),
                ResourceType::Listener.type_url()
            ]
        );
    }

    #[test]
    fn peak_rss_from_proc_status() {
        let status =
            "Name:\tpython3\nVmPeak:\t  400000 kB\nVmHWM:\t   12345 kB\nVmRSS:\t   10000 kB\n";
        assert_eq!(vm_hwm_bytes(status), Some(12345 * 1024));
        assert_eq!(vm_hwm_bytes("Name:\tkthreadd\n"), None);
        assert_eq!(vm_hwm_bytes("VmHWM:\t 12 MB\n"), None);
        if cfg!(target_os = "linux") {
            let own = std::fs::read_to_string("/proc/self/status").unwrap();
            assert!(vm_hwm_bytes(&own).is_some_and(|b| b > 0));
        }
    }

    #[test]
    fn excerpts_are_bounded() {
        let long = "x".repeat(500);
        assert_eq!(excerpt(long.as_bytes()).len(), 203);
        assert_eq!(excerpt(b"garbage\r"), "garbage");
    }

    #[test]
    fn excerpts_are_printable() {
        // Found by the adapter_line_codec fuzz target: a NUL in a line
        // went into the reason as it was.
        assert_eq!(excerpt(b"a\0b\x1b[31m\tc\nd"), "a b [31m c d");
    }
}
