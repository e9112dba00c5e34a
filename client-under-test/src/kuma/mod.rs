//! The Kuma zone driver: a real `kuma-cp` as a Kuma zone under test,
//! driven the way an operator drives one. It starts `kuma-cp run` in zone
//! mode against the run's fake global (the bootstrap's first server), with
//! a free port for each of its listeners and a work directory of its own,
//! observes what the zone stores through its REST API ([`rest`]: polled,
//! each change an [`ObservedEvent::Zone`]), and hands it zone-origin
//! resources by `PUT` and `DELETE` on that API. It claims `kds_zone` and
//! nothing else: a zone is no xDS client of the harness's other kinds.
//!
//! kuma-cp runs in its own process group, asked to stop with SIGTERM (a
//! zone cancels its KDS streams) and killed as a whole after a grace:
//! no zone outlives its scenario.

pub mod rest;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use envoy_types::pb::envoy::service::status::v3::ClientStatusResponse;
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use xds_vocabulary::ResourceType;
use xds_vocabulary::kds::types::{GLOBAL_TO_ZONE, ZONE_TO_GLOBAL};
use xds_vocabulary::kds::{KdsName, KdsResource};

use crate::child::{TempFile, file_tail, kill_group, program, vm_hwm_bytes};
use crate::process::AdapterManifest;
use crate::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, EventSink, ObservedEvent,
    RpcOutcome, RpcRequest, Transport,
};

use rest::{RestApi, Stored, TypePath};

/// How long kuma-cp has to answer on its REST API after it is started
/// (measured: about 1 s on an idle machine; a hang guard, not a verdict).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How often what the zone stores is read. Real-time expectations allow
/// 300 ms of lateness; a read of a scenario's few resources takes a few
/// milliseconds.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// One REST request's budget.
const REST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a zone-origin resource waits for its Mesh: a zone refuses a
/// Dataplane (404 "Failed to retrieve Mesh") until its global has sent the
/// Mesh, which the scenario's global serves at the zone's first request.
const MESH_WAIT: Duration = Duration::from_secs(20);
/// Starts tried when kuma-cp finds a port taken: the ports are free when
/// picked and bound a moment later, and another process may take one in
/// between (seen once in a run of 36 with three zones at a time).
const PORT_ATTEMPTS: usize = 3;
/// SIGTERM to exit: kuma-cp waits 3 s after the signal before it stops.
const STOP_GRACE: Duration = Duration::from_secs(6);
/// Lines of kuma-cp's log kept for a crash report.
const LOG_TAIL_LINES: usize = 40;
/// The listeners a zone opens, each given a free port (KDS-FACTS
/// section 5): the API server's HTTP and HTTPS, the DP server,
/// diagnostics, monitoring assignment, inter-CP.
const PORT_VARIABLES: [&str; 6] = [
    "KUMA_API_SERVER_HTTP_PORT",
    "KUMA_API_SERVER_HTTPS_PORT",
    "KUMA_DP_SERVER_PORT",
    "KUMA_DIAGNOSTICS_SERVER_PORT",
    "KUMA_MONITORING_ASSIGNMENT_SERVER_PORT",
    "KUMA_INTER_CP_SERVER_PORT",
];

/// kuma-cp as a zone, started per run from the binary an `adapter.json`
/// names (`"driver": "kuma"`).
pub struct KumaZoneClient {
    repo_root: PathBuf,
    manifest: AdapterManifest,
    running: Option<Running>,
    /// Whether what the zone stores is read off its API (see
    /// [`KumaZoneClient::without_store_polling`]).
    store_polling: bool,
}

/// A work directory of one run's zone, removed with it.
struct WorkDir(PathBuf);

impl WorkDir {
    fn create() -> std::io::Result<WorkDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "xds-conformance-kuma-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(WorkDir(dir))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Running {
    pid: u32,
    exited: watch::Receiver<Option<String>>,
    log: TempFile,
    api: RestApi,
    /// Where each type the zone consumes or produces lives on its API.
    types: Vec<TypePath>,
    poller: Option<JoinHandle<()>>,
    /// The zone's starting resources still waiting for their Mesh (see
    /// [`KumaZoneClient::start`]); every later change waits for them.
    pending: Option<JoinHandle<Result<(), ClientError>>>,
    /// What kuma-cp started outside its group ends with it.
    _contained: crate::containment::Containment,
    /// Dropped last: the process is gone by then.
    _work_dir: WorkDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(poller) = &self.poller {
            poller.abort();
        }
        if let Some(pending) = &self.pending {
            pending.abort();
        }
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

    fn check_alive(&self) -> Result<(), ClientError> {
        match self.exit_status() {
            Some(status) => Err(self.crashed(format!("kuma-cp exited unexpectedly ({status})"))),
            None => Ok(()),
        }
    }

    fn type_path(&self, kuma_type: &str) -> Result<&TypePath, ClientError> {
        self.types
            .iter()
            .find(|t| t.kuma_type == kuma_type)
            .ok_or_else(|| {
                ClientError::Unsupported(format!(
                    "{kuma_type} resources through the zone's REST API (it lists no path for them)"
                ))
            })
    }
}

impl KumaZoneClient {
    pub fn new(repo_root: &Path, manifest: AdapterManifest) -> KumaZoneClient {
        KumaZoneClient {
            repo_root: repo_root.to_path_buf(),
            manifest,
            running: None,
            store_polling: true,
        }
    }

    /// Does not read what the zone stores (no `ObservedEvent::Zone`), for
    /// `bench-kds`: with 10,000 Dataplanes in the zone a read lists them
    /// all, ten times a second, and kuma-cp would spend the measured time
    /// answering the harness. A scenario that checks the zone's store fails
    /// without it; the benchmark's checks none.
    pub fn without_store_polling(mut self) -> KumaZoneClient {
        self.store_polling = false;
        self
    }

    /// Waits for the starting resources still being created, and says
    /// why if they could not be.
    async fn settle(&mut self) -> Result<(), ClientError> {
        let Some(pending) = self.running.as_mut().and_then(|r| r.pending.take()) else {
            return Ok(());
        };
        match pending.await {
            Ok(result) => result,
            Err(e) => Err(ClientError::Failed(format!(
                "creating the zone's starting resources: {e}"
            ))),
        }
    }

    /// One start of kuma-cp on fresh ports (see [`PORT_ATTEMPTS`]).
    async fn start_once(&mut self, env: &ClientEnvironment) -> Result<(), ClientError> {
        if !matches!(env.transport, Transport::Tcp) {
            return Err(ClientError::Unsupported(
                "kuma-cp runs in real time over TCP".into(),
            ));
        }
        let Some(zone) = &env.zone else {
            return Err(ClientError::Unsupported(
                "a run without a zone (kuma-cp here is a Kuma zone)".into(),
            ));
        };
        let global = env
            .bootstrap
            .config()
            .and_then(|c| c.servers.first())
            .map(|s| s.uri.clone())
            .ok_or_else(|| {
                ClientError::Failed("a Kuma zone needs a global: the bootstrap names none".into())
            })?;
        let io = |what: &str, e: std::io::Error| ClientError::Failed(format!("{what}: {e}"));
        let work_dir = WorkDir::create().map_err(|e| io("cannot create a work directory", e))?;
        let ports = free_ports(PORT_VARIABLES.len()).map_err(|e| io("no free port", e))?;
        let turn = crate::starting::turn().await;
        let mut command = Command::new(program(&self.repo_root, &self.manifest.command[0]));
        command
            .args(&self.manifest.command[1..])
            .arg("run")
            .env("KUMA_MODE", "zone")
            .env("KUMA_ENVIRONMENT", "universal")
            .env("KUMA_STORE_TYPE", "memory")
            .env("KUMA_MULTIZONE_ZONE_NAME", &zone.name)
            .env(
                "KUMA_MULTIZONE_ZONE_GLOBAL_ADDRESS",
                format!("grpc://{global}"),
            )
            .env("KUMA_API_SERVER_HTTP_INTERFACE", "127.0.0.1")
            .env("KUMA_API_SERVER_HTTPS_INTERFACE", "127.0.0.1")
            .env("KUMA_INTER_CP_CATALOG_INSTANCE_ADDRESS", "127.0.0.1")
            .env("KUMA_GENERAL_WORK_DIR", &work_dir.0)
            .env("HOME", &work_dir.0)
            .envs(
                PORT_VARIABLES
                    .iter()
                    .zip(&ports)
                    .map(|(v, p)| (*v, p.to_string())),
            )
            .envs(&self.manifest.env)
            .current_dir(&self.repo_root);
        if let Some(interval) = zone.refresh_interval {
            // kuma-cp reads a Go duration (`config_types.Duration`).
            command.env(
                "KUMA_MULTIZONE_ZONE_KDS_REFRESH_INTERVAL",
                format!("{}ms", interval.as_millis()),
            );
        }
        let started = crate::logged::spawn(
            command,
            &format!("kuma-cp ({})", self.manifest.command[0]),
            "kuma-cp-log",
        )?;
        let api = RestApi {
            address: SocketAddr::from((Ipv4Addr::LOCALHOST, ports[0])),
            timeout: REST_TIMEOUT,
        };
        let mut running = Running {
            pid: started.pid,
            exited: started.exited,
            log: started.log,
            api: api.clone(),
            types: Vec::new(),
            poller: None,
            pending: None,
            _contained: started.contained,
            _work_dir: work_dir,
        };
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        while !api.is_up().await {
            running.check_alive()?;
            if tokio::time::Instant::now() >= deadline {
                return Err(running.crashed(format!(
                    "kuma-cp's REST API did not answer within {START_TIMEOUT:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(turn);
        let kinds: Vec<&str> = GLOBAL_TO_ZONE
            .iter()
            .chain(&ZONE_TO_GLOBAL)
            .copied()
            .collect();
        running.types = api
            .paths(&kinds)
            .await
            .map_err(|e| running.crashed(format!("kuma-cp's REST API: {e}")))?;
        // Every registered type, not only those the zone subscribes to: a
        // zone stores a response of a registered type it never asked for
        // (KDS-FACTS 4.7), and what it stores is what is checked.
        if self.store_polling {
            running.poller = Some(tokio::spawn(poll_store(
                api,
                running.types.clone(),
                env.events.clone(),
                running.exited.clone(),
            )));
        }
        // The zone's starting resources. A mesh-scoped one cannot exist
        // on a real zone before its global has sent the Mesh (404), and a
        // scripted global sends the Mesh only when the scenario's steps
        // run, after this returns: what waits for its Mesh is created in
        // the background, and every later change waits for it. What the
        // zone refuses outright (405) is said here, before any step.
        let mut resources = zone.resources.clone();
        while let Some(resource) = resources.first() {
            let at = running.type_path(&resource.kuma_type)?.clone();
            match running.api.put(resource, &at).await {
                Ok(()) => {
                    resources.remove(0);
                }
                Err(rest::RestError::Status { status: 404, .. }) => break,
                Err(e) => {
                    running.check_alive()?;
                    return Err(refused(resource, e));
                }
            }
        }
        if !resources.is_empty() {
            let (api, types, exited) = (
                running.api.clone(),
                running.types.clone(),
                running.exited.clone(),
            );
            running.pending = Some(tokio::spawn(async move {
                put_all(&api, &types, &exited, &resources).await
            }));
        }
        self.running = Some(running);
        Ok(())
    }

    fn running(&self) -> Result<&Running, ClientError> {
        let running = self
            .running
            .as_ref()
            .ok_or_else(|| ClientError::Failed("kuma-cp not started".into()))?;
        running.check_alive()?;
        Ok(running)
    }
}

/// Free TCP ports on the loopback, one per listener. They are free when
/// asked for and kuma-cp binds them a moment later; another process taking
/// one in between makes kuma-cp fail to start, reported as such.
fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<Result<_, _>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// Reads what the zone stores every `POLL_EVERY` and reports what changed,
/// until kuma-cp exits.
async fn poll_store(
    api: RestApi,
    types: Vec<TypePath>,
    events: EventSink,
    exited: watch::Receiver<Option<String>>,
) {
    let mut seen = Stored::new();
    let mut reported_error = false;
    loop {
        if exited.borrow().is_some() {
            return;
        }
        match api.stored(&types).await {
            Ok(now) => {
                for change in rest::changes(&seen, &now) {
                    events(ObservedEvent::Zone(change));
                }
                seen = now;
                reported_error = false;
            }
            // Said once per run of failures, not every poll.
            Err(e) if !reported_error => {
                reported_error = true;
                events(ObservedEvent::Client(xds_vocabulary::ClientEvent::Log {
                    level: xds_vocabulary::LogLevel::Warning,
                    message: format!("kuma-cp REST API: {e}"),
                }));
            }
            Err(_) => {}
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Why the zone did not take `resource`: a type a zone may not create
/// (a Mesh: only the global makes one in a federated zone, 405) means the
/// run cannot be played on a real zone.
fn refused(resource: &KdsResource, e: rest::RestError) -> ClientError {
    match e {
        rest::RestError::Status { status: 405, .. } => ClientError::Unsupported(format!(
            "zone-origin {} resources (a Kuma zone refuses to create them: 405)",
            resource.kuma_type
        )),
        e => ClientError::Failed(format!(
            "kuma-cp refused {} {}: {e}",
            resource.kuma_type,
            resource.key()
        )),
    }
}

/// Creates each of `resources` on the zone, each waiting up to
/// [`MESH_WAIT`] for its Mesh to come from the global (404 until then).
async fn put_all(
    api: &RestApi,
    types: &[TypePath],
    exited: &watch::Receiver<Option<String>>,
    resources: &[KdsResource],
) -> Result<(), ClientError> {
    let gone = || {
        exited
            .borrow()
            .clone()
            .map(|status| ClientError::Failed(format!("kuma-cp exited unexpectedly ({status})")))
    };
    for resource in resources {
        let at = types
            .iter()
            .find(|t| t.kuma_type == resource.kuma_type)
            .ok_or_else(|| {
                ClientError::Unsupported(format!(
                    "{} resources through the zone's REST API (it lists no path for them)",
                    resource.kuma_type
                ))
            })?;
        let deadline = tokio::time::Instant::now() + MESH_WAIT;
        loop {
            match api.put(resource, at).await {
                Ok(()) => break,
                Err(rest::RestError::Status { status: 404, .. })
                    if tokio::time::Instant::now() < deadline =>
                {
                    if let Some(e) = gone() {
                        return Err(e);
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(gone().unwrap_or_else(|| refused(resource, e))),
            }
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl ClientUnderTest for KumaZoneClient {
    fn name(&self) -> &str {
        &self.manifest.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            kds_zone: true,
            ..Capabilities::default()
        }
    }

    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        let mut attempt = 1;
        loop {
            match self.start_once(&env).await {
                Err(ClientError::Crashed { stderr_tail, .. })
                    if attempt < PORT_ATTEMPTS
                        && stderr_tail.contains("address already in use") =>
                {
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn zone_set(&mut self, resources: Vec<KdsResource>) -> Result<(), ClientError> {
        self.settle().await?;
        let running = self.running()?;
        put_all(&running.api, &running.types, &running.exited, &resources).await
    }

    async fn zone_remove(&mut self, kuma_type: &str, names: &[KdsName]) -> Result<(), ClientError> {
        self.settle().await?;
        let running = self.running()?;
        let at = running.type_path(kuma_type)?;
        for name in names {
            running
                .api
                .delete(&rest::resource_path(at, name))
                .await
                .map_err(|e| {
                    ClientError::Failed(format!("kuma-cp did not delete {kuma_type} {name}: {e}"))
                })?;
        }
        Ok(())
    }

    async fn shutdown(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let mut exited = running.exited.clone();
        // SIGTERM first: the zone ends its KDS streams as it would in a
        // deployment; the group is killed after the grace either way.
        // SAFETY: kill takes a pid and a signal; a gone process is ESRCH.
        unsafe { libc::kill(running.pid as i32, libc::SIGTERM) };
        let _ = tokio::time::timeout(STOP_GRACE, exited.wait_for(Option::is_some)).await;
        drop(running);
    }

    fn peak_rss_bytes(&self) -> Option<u64> {
        let running = self.running.as_ref()?;
        if running.exit_status().is_some() {
            return None;
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", running.pid)).ok()?;
        vm_hwm_bytes(&status)
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!(
            "watch {resource_type} {name} (a Kuma zone has no watch API)"
        )))
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!(
            "cancel watch {resource_type} {name} (a Kuma zone has no watch API)"
        )))
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
        Err(ClientError::Unsupported("read flow control".into()))
    }

    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!(
            "dial {target} (a Kuma zone has no channels)"
        )))
    }

    async fn serve(&mut self, address: &str) -> Result<(), ClientError> {
        Err(ClientError::Unsupported(format!("serve {address}")))
    }

    async fn rpc(&mut self, _request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        Err(ClientError::Unsupported(
            "RPCs (a Kuma zone has no channels)".into(),
        ))
    }

    async fn start_rpc(&mut self, _request: &RpcRequest) -> Result<crate::PendingRpc, ClientError> {
        Err(ClientError::Unsupported("RPCs in the background".into()))
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        Err(ClientError::Unsupported(
            "csds (a Kuma zone is observed through its REST API)".into(),
        ))
    }

    async fn resource_counts(&mut self) -> Result<crate::ResourceCounts, ClientError> {
        Err(ClientError::Unsupported("resource counts".into()))
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

    #[test]
    fn a_zone_claims_kds_and_nothing_else() {
        let manifest = AdapterManifest::parse(
            r#"{"name": "kuma", "driver": "kuma", "command": [".peers/kuma/bin/kuma-cp"],
                "capabilities": {}}"#,
            Path::new("adapter.json"),
        )
        .unwrap();
        let caps = KumaZoneClient::new(Path::new("/repo"), manifest).capabilities();
        assert_eq!(
            caps,
            Capabilities {
                kds_zone: true,
                ..Capabilities::default()
            }
        );
    }

    #[test]
    fn free_ports_are_distinct() {
        let ports = free_ports(PORT_VARIABLES.len()).unwrap();
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), PORT_VARIABLES.len());
    }
}
