//! The other direction of the Kuma work (issue 45 part 5): a real kuma-cp
//! v2.14.3 as the *global* (in-memory store, its ports moved, KDS without
//! TLS) and the reference zone against it, over TCP on real time. The
//! reference zone is judged by what Kuma's own zone does with the same
//! global (KDS-FACTS section 5): it stores the global's Mesh and a
//! MeshTimeout made on the global's REST API, hash-suffixed with their
//! display names and `kuma.io/origin: global`, and its own Dataplane
//! reaches the global as a real zone's does.
//!
//! kuma-cp installs itself into `.peers/kuma/` on first use (minutes
//! cold). Every wait here ends on what is awaited; the minute each is
//! allowed guards a hang.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use xds_client_under_test::http1;
use xds_client_under_test::{AdapterManifest, ProcessClient};
use xds_client_under_test::{
    ClientEnvironment, ClientUnderTest, ObservedEvent, ReferenceClient, Transport, ZoneSettings,
};
use xds_vocabulary::bootstrap::ClientBootstrap;
use xds_vocabulary::kds::{KdsName, KdsResource, ZoneStoreChange, kuma_resource, spec};

const GUARD: Duration = Duration::from_secs(60);

fn repo_root() -> PathBuf {
    // The checkout running now (cargo sets it at run time): a test binary
    // shared between checkouts holds another one's path compiled in.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

/// kuma-cp as a global, killed (with its group) when dropped.
struct Global {
    child: Child,
    api: SocketAddr,
    kds: SocketAddr,
    _work: tempfile::TempDir,
}

impl Drop for Global {
    fn drop(&mut self) {
        // SAFETY: kill takes a process group and a signal.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap())
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

fn start_global() -> Global {
    let root = repo_root();
    let adapter = root.join("client-under-test/adapters/kuma");
    let manifest = AdapterManifest::load(&adapter).expect("kuma's adapter.json");
    ProcessClient::new(&manifest.root_dir(&adapter).unwrap(), manifest.clone())
        .ensure_installed()
        .expect("kuma-cp installs");
    let work = tempfile::tempdir().unwrap();
    let ports = free_ports(5);
    let mut command = Command::new(root.join(&manifest.command[0]));
    use std::os::unix::process::CommandExt;
    command
        .arg("run")
        .env("KUMA_MODE", "global")
        .env("KUMA_ENVIRONMENT", "universal")
        .env("KUMA_STORE_TYPE", "memory")
        .env("KUMA_MULTIZONE_GLOBAL_KDS_TLS_ENABLED", "false")
        .env("KUMA_API_SERVER_HTTP_INTERFACE", "127.0.0.1")
        .env("KUMA_API_SERVER_HTTPS_INTERFACE", "127.0.0.1")
        .env("KUMA_INTER_CP_CATALOG_INSTANCE_ADDRESS", "127.0.0.1")
        .env("KUMA_API_SERVER_HTTP_PORT", ports[0].to_string())
        .env("KUMA_API_SERVER_HTTPS_PORT", ports[1].to_string())
        .env("KUMA_DIAGNOSTICS_SERVER_PORT", ports[2].to_string())
        .env("KUMA_MULTIZONE_GLOBAL_KDS_GRPC_PORT", ports[3].to_string())
        .env("KUMA_INTER_CP_SERVER_PORT", ports[4].to_string())
        .env("KUMA_GENERAL_WORK_DIR", work.path())
        .env("HOME", work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let child = command.spawn().expect("start kuma-cp");
    Global {
        child,
        api: SocketAddr::from((Ipv4Addr::LOCALHOST, ports[0])),
        kds: SocketAddr::from((Ipv4Addr::LOCALHOST, ports[3])),
        _work: work,
    }
}

async fn rest(
    global: &Global,
    method: http::Method,
    path: &str,
    body: Option<Value>,
) -> http1::Answer {
    http1::request(
        global.api,
        method,
        path,
        body.map(|b| b.to_string().into_bytes()),
        Duration::from_secs(5),
        16 << 20,
    )
    .await
    .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Waits until `found` holds of what the zone reported, at most a minute.
async fn zone_reports(
    seen: &Arc<Mutex<Vec<ZoneStoreChange>>>,
    what: &str,
    found: impl Fn(&ZoneStoreChange) -> bool,
) -> ZoneStoreChange {
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        if let Some(change) = seen.lock().unwrap().iter().find(|c| found(c)) {
            return change.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the reference zone never stored {what}: {:#?}",
            seen.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn stored_labels(change: &ZoneStoreChange) -> BTreeMap<String, String> {
    match change {
        ZoneStoreChange::Stored { labels, .. } => labels.clone(),
        ZoneStoreChange::Removed { .. } => BTreeMap::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_zone_syncs_with_a_real_kuma_global() {
    let global = start_global();
    let deadline = tokio::time::Instant::now() + GUARD;
    while !http1::request(global.api, http::Method::GET, "/", None, GUARD, 1 << 20)
        .await
        .is_ok_and(|a| a.is_success())
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the global never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A policy made on the global, as an operator makes one.
    let made = rest(
        &global,
        http::Method::PUT,
        "/meshes/default/meshtimeouts/mt-1",
        Some(
            json!({"type": "MeshTimeout", "mesh": "default", "name": "mt-1",
                    "spec": {"targetRef": {"kind": "Mesh"},
                             "to": [{"targetRef": {"kind": "Mesh"},
                                     "default": {"idleTimeout": "20s"}}]}}),
        ),
    )
    .await;
    assert!(made.is_success(), "{made:?}");

    let seen: Arc<Mutex<Vec<ZoneStoreChange>>> = Arc::default();
    let sink = seen.clone();
    let bootstrap = json!({
        "xds_servers": [{"server_uri": global.kds.to_string(),
                         "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
        "node": {"id": "zone-1", "cluster": "zone-1",
                 "locality": {"region": "r", "zone": "z", "sub_zone": "s"}},
    });
    let mut zone = ReferenceClient::new();
    zone.start(ClientEnvironment {
        projection: None,
        bootstrap: ClientBootstrap::GrpcJson(bootstrap.to_string()),
        transport: Transport::Tcp,
        rng_seed: 1,
        profile: None,
        clock_epoch: SystemTime::UNIX_EPOCH,
        events: Arc::new(move |event| {
            if let ObservedEvent::Zone(change) = event {
                sink.lock().unwrap().push(change);
            }
        }),
        zone: Some(ZoneSettings {
            name: "zone-1".into(),
            resources: Vec::new(),
            refresh_interval: None,
        }),
        env: Default::default(),
    })
    .await
    .expect("the reference zone starts");

    // Mesh keeps its name (SkipKDSHash); the policy is hash-suffixed and
    // carries its display name and the global's origin (KDS-FACTS 4.5, 4.8).
    let mesh = zone_reports(&seen, "Mesh default", |c| {
        matches!(c, ZoneStoreChange::Stored { kuma_type, name, .. }
            if kuma_type == "Mesh" && *name == KdsName::global("default"))
    })
    .await;
    assert_eq!(
        stored_labels(&mesh)
            .get("kuma.io/origin")
            .map(String::as_str),
        Some("global")
    );
    let timeout = zone_reports(&seen, "MeshTimeout mt-1", |c| {
        matches!(c, ZoneStoreChange::Stored { kuma_type, .. } if kuma_type == "MeshTimeout")
            && stored_labels(c)
                .get("kuma.io/display-name")
                .map(String::as_str)
                == Some("mt-1")
    })
    .await;
    let name = timeout.name().clone();
    assert!(
        name.name.starts_with("mt-1-") && name.mesh == "default",
        "{name}"
    );
    assert_eq!(
        stored_labels(&timeout)
            .get("kuma.io/origin")
            .map(String::as_str),
        Some("global")
    );

    // Zone to global: the zone's own Dataplane reaches the global as a
    // real zone's does (hash-suffixed, with its display name and zone).
    let dataplane = spec::pack(
        "Dataplane",
        json!({"networking": {"address": "10.0.0.1",
                              "inbound": [{"port": 8080, "tags": {"kuma.io/service": "web"}}]}})
        .as_object()
        .unwrap(),
    )
    .expect("a Dataplane spec");
    zone.zone_set(vec![KdsResource {
        kuma_type: "Dataplane".into(),
        resource: kuma_resource(
            &KdsName::new("dp-1", "default"),
            [("kuma.io/origin".to_string(), "zone".to_string())].into(),
            Some(dataplane),
        ),
    }])
    .await
    .expect("zone_set");
    let deadline = tokio::time::Instant::now() + GUARD;
    let item = loop {
        let listed = rest(
            &global,
            http::Method::GET,
            "/meshes/default/dataplanes",
            None,
        )
        .await;
        let body: Value = serde_json::from_str(&listed.body).unwrap();
        if let Some(item) = body["items"].as_array().and_then(|items| {
            items
                .iter()
                .find(|i| i["labels"]["kuma.io/display-name"] == "dp-1")
                .cloned()
        }) {
            break item;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the global never got dp-1: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(item["labels"]["kuma.io/zone"], "zone-1", "{item}");
    assert_eq!(item["labels"]["kuma.io/origin"], "zone", "{item}");
    assert!(
        item["name"].as_str().unwrap().starts_with("dp-1-"),
        "{item}"
    );
    zone.shutdown().await;
}
