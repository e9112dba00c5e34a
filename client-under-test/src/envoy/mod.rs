//! The Envoy driver: Envoy as a client under test, driven the way an
//! operator drives it. It starts the binary with a bootstrap rendered from
//! the harness's structured one, observes it through its admin API
//! ([`admin`]: config dump and stats become [`ObservedEvent::Admin`]), and
//! sends RPCs through its listeners ([`data_plane`]). Envoy is a proxy, not
//! a library: it has no watch API, no channels and no CSDS, and it always
//! subscribes to every Listener and Cluster (see [`Capabilities`]).
//!
//! Envoy runs in its own process group, killed as a whole on shutdown and
//! on drop: no Envoy outlives its scenario (a stale one would keep a share
//! of its listener ports through SO_REUSEPORT).

pub mod admin;
pub mod bootstrap;
pub mod data_plane;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use envoy_types::pb::envoy::service::status::v3::ClientStatusResponse;
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use xds_vocabulary::ResourceType;

use crate::child::{TempFile, file_tail, kill_group, program, vm_hwm_bytes};
use crate::process::AdapterManifest;
use crate::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, EventSink, ObservedEvent,
    RpcOutcome, RpcRequest, Transport,
};

/// How long Envoy has to write its admin address after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How often the admin API is read. Real-time expectations allow 300 ms
/// of lateness; a poll takes a few milliseconds on a small config.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// One admin request's budget.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long shutdown waits for a killed Envoy to be reaped.
const REAP_AFTER_KILL: Duration = Duration::from_secs(2);
/// Lines of Envoy's log kept for a crash report.
const LOG_TAIL_LINES: usize = 40;

/// Envoy, started per run from the binary an `adapter.json` names
/// (`"driver": "envoy"`).
pub struct EnvoyClient {
    repo_root: PathBuf,
    manifest: AdapterManifest,
    logging: EnvoyLogging,
    /// Whether the admin API is read into observations (see
    /// [`EnvoyClient::without_admin_polling`]).
    poll_admin: bool,
    running: Option<Running>,
}

/// How much Envoy logs (its `-l` and `--component-log-level` options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EnvoyLogging {
    /// Info, and debug for the `config` component: conformance runs. The
    /// config component's debug lines (`gRPC config for <type> rejected`,
    /// stream closes, initial fetch timeouts) are what explains a failed
    /// scenario, and the log tail goes into a crash report.
    #[default]
    ConfigDebug,
    /// Info: Envoy's default level, as a deployment runs it. For
    /// measurements, where logging would be measured too.
    Info,
}

impl EnvoyLogging {
    /// Envoy's command-line options for this level.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            EnvoyLogging::ConfigDebug => &["-l", "info", "--component-log-level", "config:debug"],
            EnvoyLogging::Info => &["-l", "info"],
        }
    }
}

struct Running {
    pid: u32,
    /// The exit status text, once Envoy has exited (set by the task that
    /// waits for it).
    exited: watch::Receiver<Option<String>>,
    log: TempFile,
    /// Kept for Envoy's lifetime: it may read its bootstrap late.
    _bootstrap: TempFile,
    admin_path: TempFile,
    poller: Option<JoinHandle<()>>,
    /// What Envoy started outside its group ends with it (dropped after
    /// the group is killed: it sweeps what is left).
    _contained: crate::containment::Containment,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(poller) = &self.poller {
            poller.abort();
        }
        // The task waiting for Envoy then reaps it and records its exit.
        kill_group(self.pid as i32);
    }
}

impl Running {
    fn exit_status(&self) -> Option<String> {
        self.exited.borrow().clone()
    }

    fn crashed(&self, reason: String) -> ClientError {
        ClientError::Crashed {
            reason,
            stderr_tail: file_tail(self.log.path(), LOG_TAIL_LINES),
        }
    }

    /// Fails if Envoy is gone.
    fn check_alive(&self) -> Result<(), ClientError> {
        match self.exit_status() {
            Some(status) => Err(self.crashed(format!("envoy exited unexpectedly ({status})"))),
            None => Ok(()),
        }
    }
}

impl EnvoyClient {
    /// Envoy as conformance runs drive it: config debug logging, admin
    /// API read every `POLL_EVERY`.
    pub fn new(repo_root: &Path, manifest: AdapterManifest) -> EnvoyClient {
        EnvoyClient {
            repo_root: repo_root.to_path_buf(),
            manifest,
            logging: EnvoyLogging::default(),
            poll_admin: true,
            running: None,
        }
    }

    /// Envoy whose admin API is not read: no [`ObservedEvent::Admin`]
    /// observations, and `admin` is not among its capabilities (so
    /// scenarios that need it are n/a). For measurements: reading
    /// `/config_dump` every `POLL_EVERY` costs Envoy real work with
    /// thousands of resources, which would be measured too. (The admin
    /// address is still waited for: it says Envoy has started.)
    pub fn without_admin_polling(mut self) -> EnvoyClient {
        self.poll_admin = false;
        self
    }

    pub fn with_logging(mut self, logging: EnvoyLogging) -> EnvoyClient {
        self.logging = logging;
        self
    }

    fn running(&self) -> Result<&Running, ClientError> {
        let running = self
            .running
            .as_ref()
            .ok_or_else(|| ClientError::Failed("envoy not started".into()))?;
        running.check_alive()?;
        Ok(running)
    }

    /// Envoy's admin address, once it has written it.
    async fn wait_for_admin(
        &self,
        running: &Running,
        admin_path: &Path,
    ) -> Result<SocketAddr, ClientError> {
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            running.check_alive()?;
            if let Ok(text) = std::fs::read_to_string(admin_path)
                && let Ok(address) = text.trim().parse()
            {
                return Ok(address);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(running.crashed(format!(
                    "envoy wrote no admin address within {START_TIMEOUT:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Reads the admin API every `POLL_EVERY` and reports what changed,
/// until Envoy exits.
async fn poll_admin(
    address: SocketAddr,
    events: EventSink,
    exited: watch::Receiver<Option<String>>,
) {
    let mut seen = admin::AdminView::default();
    let mut reported_error = false;
    loop {
        if exited.borrow().is_some() {
            return;
        }
        match admin::poll(address, ADMIN_TIMEOUT).await {
            Ok(view) => {
                for change in view.changes_since(&seen) {
                    events(ObservedEvent::Admin(change));
                }
                seen = view;
                reported_error = false;
            }
            // Said once per run of failures, not every 100 ms.
            Err(e) if !reported_error => {
                reported_error = true;
                events(ObservedEvent::Client(xds_vocabulary::ClientEvent::Log {
                    level: xds_vocabulary::LogLevel::Warning,
                    message: format!("envoy admin: {e}"),
                }));
            }
            Err(_) => {}
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

#[async_trait::async_trait]
impl ClientUnderTest for EnvoyClient {
    fn name(&self) -> &str {
        &self.manifest.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            dial_config: false,
            channel_states: false,
            grpc_bootstrap: false,
            authorities: false,
            named_lds_cds: false,
            proxy: true,
            connects_at_start: true,
            admin: self.poll_admin,
            background_rpc: false,
            // The driver starts Envoy with no scenario variables: Envoy
            // reads none of gRPC's.
            env: false,
            ..self.manifest.capabilities()
        }
    }

    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        if !matches!(env.transport, Transport::Tcp) {
            return Err(ClientError::Unsupported(
                "Envoy runs in real time over TCP".into(),
            ));
        }
        if env.profile.is_some() {
            return Err(ClientError::Unsupported("profiles (Envoy has none)".into()));
        }
        let rendered = bootstrap::render(&env.bootstrap)
            .map_err(|e| ClientError::Unsupported(e.to_string()))?;
        let io = |what: &str, e: std::io::Error| ClientError::Failed(format!("{what}: {e}"));
        let bootstrap_file = TempFile::create("envoy-bootstrap", ".json", rendered.as_bytes())
            .map_err(|e| io("cannot write the bootstrap", e))?;
        let admin_path = TempFile::create("envoy-admin", ".txt", b"")
            .map_err(|e| io("cannot create the admin address file", e))?;
        // Its start does not share the cores with every other start
        // (crate::starting); the turn ends once its admin API is up.
        let turn = crate::starting::turn().await;
        let mut command = Command::new(program(&self.repo_root, &self.manifest.command[0]));
        command
            .args(&self.manifest.command[1..])
            .arg("-c")
            .arg(bootstrap_file.path())
            // Several Envoys at once (and none shares a domain socket).
            .arg("--disable-hot-restart")
            .args(["--concurrency", "1"])
            .arg("--admin-address-path")
            .arg(admin_path.path())
            .args(self.logging.args())
            .envs(&self.manifest.env)
            .current_dir(&self.repo_root);
        let started = crate::logged::spawn(
            command,
            &format!("envoy ({})", self.manifest.command[0]),
            "envoy-log",
        )?;
        let mut running = Running {
            pid: started.pid,
            exited: started.exited,
            log: started.log,
            _bootstrap: bootstrap_file,
            admin_path,
            poller: None,
            _contained: started.contained,
        };
        let admin_file = running.admin_path.path().to_path_buf();
        let address = match self.wait_for_admin(&running, &admin_file).await {
            Ok(a) => a,
            Err(e) => {
                drop(running);
                return Err(e);
            }
        };
        drop(turn);
        if self.poll_admin {
            running.poller = Some(tokio::spawn(poll_admin(
                address,
                env.events.clone(),
                running.exited.clone(),
            )));
        }
        self.running = Some(running);
        Ok(())
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!(
            "watch {resource_type} {name} (Envoy has no watch API)"
        )))
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!(
            "cancel watch {resource_type} {name} (Envoy has no watch API)"
        )))
    }

    /// Envoy has no channels: what it serves is configured by what it
    /// subscribes to at start-up. A dial only checks it is still there.
    async fn dial(&mut self, _target: &str) -> Result<(), ClientError> {
        self.running().map(|_| ())
    }

    async fn rpc(&mut self, request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        self.running()?;
        let outcome = data_plane::call(request).await;
        // An RPC that failed because Envoy died is not Envoy's answer.
        self.running()?;
        Ok(outcome)
    }

    async fn resource_counts(&mut self) -> Result<crate::ResourceCounts, ClientError> {
        Err(ClientError::Unsupported(
            "resource counts (Envoy is observed through its admin API)".into(),
        ))
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        Err(ClientError::Unsupported(
            "csds (Envoy has none: it is observed through its admin API)".into(),
        ))
    }

    fn peak_rss_bytes(&self) -> Option<u64> {
        let running = self.running.as_ref()?;
        if running.exit_status().is_some() {
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
        let Some(running) = self.running.take() else {
            return;
        };
        let mut exited = running.exited.clone();
        // Kills the group; Envoy needs no graceful exit here. Waiting for
        // the reap means it is gone, not a zombie, when shutdown returns.
        drop(running);
        let _ = tokio::time::timeout(REAP_AFTER_KILL, exited.wait_for(Option::is_some)).await;
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

    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!("serve {address}")))
    }

    async fn start_rpc(&mut self, _request: &RpcRequest) -> Result<crate::PendingRpc, ClientError> {
        Err(ClientError::Unsupported("RPCs in the background".into()))
    }

    async fn csds_request(
        &mut self,
        _request: envoy_types::pb::envoy::service::status::v3::ClientStatusRequest,
    ) -> Result<Result<ClientStatusResponse, xds_vocabulary::XdsError>, ClientError> {
        Err(ClientError::Unsupported("a CSDS service".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn manifest() -> AdapterManifest {
        AdapterManifest::parse(
            r#"{"name": "envoy", "driver": "envoy", "command": [".peers/envoy/envoy"],
                "capabilities": {"dial": true, "rpc": true, "watch": false, "csds": false}}"#,
            Path::new("adapter.json"),
        )
        .unwrap()
    }

    #[test]
    fn conformance_runs_read_the_admin_api_and_log_config_at_debug() {
        let client = EnvoyClient::new(Path::new("/repo"), manifest());
        assert!(client.capabilities().admin);
        assert_eq!(
            client.logging.args(),
            ["-l", "info", "--component-log-level", "config:debug"]
        );
    }

    #[test]
    fn without_admin_polling_admin_is_not_a_capability() {
        let client = EnvoyClient::new(Path::new("/repo"), manifest())
            .without_admin_polling()
            .with_logging(EnvoyLogging::Info);
        let caps = client.capabilities();
        assert!(!caps.admin);
        assert!(caps.proxy && !caps.named_lds_cds);
        assert_eq!(client.logging.args(), ["-l", "info"]);
    }
}
