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
mod codec;
mod install;
mod manifest;
mod running;

pub use codec::*;
pub use manifest::*;
use running::*;

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

/// Errors of loading and installing adapters. (Running clients report
/// [`ClientError`]s.)
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot read {}: {source}", path.display())]
    ReadManifest {
        path: PathBuf,
        source: xds_vocabulary::files::ReadError,
    },
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
            capabilities: manifest.capabilities(),
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
            // The scenario's own (`client: {env: ...}`), over the
            // manifest's: they are what the run is about.
            .envs(&env.env)
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
        // ...also if the harness itself is killed, and what it starts
        // outside its group ends with the run too.
        let contained = crate::containment::Containment::new();
        crate::guardian::guard(&mut command, &contained);
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
            contained,
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
        // Its start does not share the cores with every other start
        // (crate::starting); the turn ends with the hello.
        let turn = crate::starting::turn().await;
        let running = self.spawn(&env).await?;
        drop(turn);

        let declared = self.manifest.capabilities();
        let said = running
            .hello
            .capabilities
            .with_env_not_read(&self.manifest.env_not_read);
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

    async fn zone_set(
        &mut self,
        _resources: Vec<xds_vocabulary::kds::KdsResource>,
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported("a Kuma zone (KDS)".into()))
    }

    async fn zone_remove(
        &mut self,
        _kuma_type: &str,
        _names: &[xds_vocabulary::kds::KdsName],
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported("a Kuma zone (KDS)".into()))
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
