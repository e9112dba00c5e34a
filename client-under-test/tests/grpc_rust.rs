//! grpc-rust's `xds-client` 0.1.0-alpha.4 against the real fake ADS server,
//! over the in-memory network on virtual time.
//!
//! These tests document what the client does. Where that differs from gRFC
//! A27/A46/A53/A57 as gRPC C-core implements them, the test says so in a
//! `C-core:` line; the differences are summed up in the adapter's report.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::cluster::v3::cluster::{
    DiscoveryType, EdsClusterConfig, LbPolicy,
};
use envoy_types::pb::envoy::config::core::v3::config_source::ConfigSourceSpecifier;
use envoy_types::pb::envoy::config::core::v3::{AggregatedConfigSource, ConfigSource};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};
use tokio::time::Instant;
use xds_client::resource::TypeUrl;
use xds_client::{Resource, ResourceEvent};
use xds_client_under_test::grpc_rust::{CrateConfig, ResourceGauge, build_client};
use xds_client_under_test::{
    ClientEnvironment, ClientError, ClientUnderTest, GrpcRustClient, ObservedEvent, RpcRequest,
    Transport, WatcherNotification,
};
use xds_fake_server::event::{RecordedRequest, RecordedResponse, ServerEvent, TlsFailure};
use xds_fake_server::fault::{AcceptConnections, CloseStreams, RefuseConnections};
use xds_fake_server::resource::ServedResource;
use xds_fake_server::tls::{ClientAuth, TlsSettings};
use xds_fake_server::{FakeAdsServer, ScriptedResponse, ServerConfig, ServingMode};
use xds_vocabulary::certificates::{Signer, TestPki};
use xds_vocabulary::network::MemoryNetwork;
use xds_vocabulary::{ClientBootstrap, RequestKind, ResourceType};

const CDS: &str = ResourceType::Cluster.type_url();
const LDS: &str = ResourceType::Listener.type_url();

const ADDRESS: &str = "primary:443";

// ---------------------------------------------------------------------------
// Support

fn bootstrap(server_features: &[&str]) -> String {
    serde_json::json!({
        "xds_servers": [{
            "server_uri": ADDRESS,
            "channel_creds": [{"type": "insecure"}],
            "server_features": server_features,
        }],
        "node": {
            "id": "node-1",
            "cluster": "cluster-1",
            "locality": {"region": "r", "zone": "z", "sub_zone": "s"},
            "metadata": {"GENERATOR": "grpc"},
        },
    })
    .to_string()
}

type Seen = Arc<Mutex<Vec<(Instant, ObservedEvent)>>>;

/// A fake server, the in-memory network it serves on, the adapter started
/// against it, and what the adapter reported.
struct Setup {
    server: FakeAdsServer,
    network: MemoryNetwork,
    client: GrpcRustClient,
    seen: Seen,
    start: Instant,
}

fn transport(network: &MemoryNetwork) -> Transport {
    Transport::InMemory {
        xds: Arc::new(network.clone()),
        data_plane: Arc::new(network.clone()),
    }
}

async fn setup(mode: ServingMode, server_features: &[&str]) -> Setup {
    setup_with(mode, None, bootstrap(server_features)).await
}

/// A server that serves TLS as `tls` says, and a client started from
/// `bootstrap_json`.
async fn setup_with(mode: ServingMode, tls: Option<&TlsSettings>, bootstrap_json: String) -> Setup {
    let network = MemoryNetwork::new();
    let server = FakeAdsServer::new(ServerConfig {
        name: "primary".into(),
        mode,
    });
    server.set_tls(tls).expect("valid TLS settings");
    server
        .serve_in_memory(&network, ADDRESS)
        .expect("serve in memory");
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let mut client = GrpcRustClient::new();
    client
        .start(ClientEnvironment {
            projection: None,
            bootstrap: ClientBootstrap::GrpcJson(bootstrap_json),
            transport: transport(&network),
            rng_seed: 1,
            profile: None,
            clock_epoch: SystemTime::UNIX_EPOCH,
            events: Arc::new(move |event| sink.lock().expect("lock").push((Instant::now(), event))),
            zone: None,
            env: Default::default(),
        })
        .await
        .expect("start");
    Setup {
        server,
        network,
        client,
        seen,
        start: Instant::now(),
    }
}

impl Setup {
    /// (time since setup, name, notification) of every watcher event.
    fn notifications(&self) -> Vec<(Duration, String, WatcherNotification)> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .filter_map(|(at, event)| match event {
                ObservedEvent::Watcher {
                    name, notification, ..
                } => Some((*at - self.start, name.clone(), notification.clone())),
                _ => None,
            })
            .collect()
    }

    fn notifications_of(&self, name: &str) -> Vec<(Duration, WatcherNotification)> {
        self.notifications()
            .into_iter()
            .filter(|(_, n, _)| n == name)
            .map(|(at, _, notification)| (at, notification))
            .collect()
    }

    /// (time since setup, event) of every server event.
    fn server_events(&self) -> Vec<(Duration, ServerEvent)> {
        self.server
            .events()
            .into_iter()
            .map(|r| (r.at - self.start, r.event))
            .collect()
    }

    fn requests(&self) -> Vec<(Duration, u64, RecordedRequest)> {
        self.server_events()
            .into_iter()
            .filter_map(|(at, e)| match e {
                ServerEvent::RequestReceived { stream, request } => Some((at, stream, request)),
                _ => None,
            })
            .collect()
    }

    fn requests_of(&self, type_url: &str) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .map(|(_, _, r)| r)
            .filter(|r| r.type_url == type_url)
            .collect()
    }

    fn responses(&self) -> Vec<RecordedResponse> {
        self.server_events()
            .into_iter()
            .filter_map(|(_, e)| match e {
                ServerEvent::ResponseSent { response, .. } => Some(response),
                _ => None,
            })
            .collect()
    }

    fn connections_accepted(&self) -> Vec<(Duration, u64)> {
        self.server_events()
            .into_iter()
            .filter_map(|(at, e)| match e {
                ServerEvent::ConnectionAccepted { connection } => Some((at, connection)),
                _ => None,
            })
            .collect()
    }

    fn stream_closes(&self) -> Vec<(Duration, bool)> {
        self.server_events()
            .into_iter()
            .filter_map(|(at, e)| match e {
                ServerEvent::StreamClosed { by_client, .. } => Some((at, by_client)),
                _ => None,
            })
            .collect()
    }

    fn send(&self, type_url: &str, version: &str, nonce: &str, resources: Vec<ServedResource>) {
        let sent = self.server.send_response(ScriptedResponse {
            resource_errors: Vec::new(),
            type_url: type_url.to_string(),
            version_info: Some(version.to_string()),
            nonce: Some(nonce.to_string()),
            resources,
        });
        assert_eq!(sent, 1, "one open stream");
    }
}

/// Lets everything that is ready run; under paused time the clock moves by
/// `d` only once all tasks are idle.
async fn run_for(d: Duration) {
    tokio::time::sleep(d).await;
}

async fn settle() {
    run_for(Duration::from_millis(10)).await;
}

fn eds_cluster(name: &str, service: &str) -> Cluster {
    Cluster {
        name: name.to_string(),
        cluster_discovery_type: Some(
            envoy_types::pb::envoy::config::cluster::v3::cluster::ClusterDiscoveryType::Type(
                DiscoveryType::Eds as i32,
            ),
        ),
        eds_cluster_config: Some(EdsClusterConfig {
            eds_config: Some(ConfigSource {
                config_source_specifier: Some(ConfigSourceSpecifier::Ads(
                    AggregatedConfigSource {},
                )),
                ..Default::default()
            }),
            service_name: service.to_string(),
        }),
        ..Default::default()
    }
}

fn cluster(name: &str, service: &str) -> ServedResource {
    ServedResource::from_message(name, &eds_cluster(name, service))
}

fn listener(name: &str) -> ServedResource {
    ServedResource::from_message(
        name,
        &Listener {
            name: name.to_string(),
            ..Default::default()
        },
    )
}

fn changed(summary_contains: &str) -> impl Fn(&WatcherNotification) -> bool + '_ {
    move |n| matches!(n, WatcherNotification::Changed { summary } if summary.contains(summary_contains))
}

// ---------------------------------------------------------------------------
// A27: request shape, ACK, watcher notification

#[tokio::test(start_paused = true)]
async fn first_request_ack_and_watcher_notification() {
    let mut s = setup(ServingMode::Auto, &[]).await;
    s.server.set_resources(vec![cluster("c1", "e1")], None);
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;

    let requests = s.requests_of(CDS);
    assert_eq!(requests.len(), 2, "{requests:#?}");

    // The first request: the watched name, empty version and nonce, the node.
    let first = &requests[0];
    assert_eq!(first.kind, RequestKind::Initial);
    assert_eq!(first.resource_names, vec!["c1".to_string()]);
    assert_eq!(first.version_info, "");
    assert_eq!(first.response_nonce, "");
    assert_eq!(first.error_detail, None);
    let node = first.node.as_ref().expect("node in the first request");
    assert_eq!(node.id, "node-1");
    assert_eq!(node.cluster, "cluster-1");
    assert_eq!(node.user_agent_name, "grpc-rust xds-client");
    assert_eq!(node.locality.as_ref().map(|l| l.zone.as_str()), Some("z"));
    assert!(
        node.metadata
            .as_ref()
            .is_some_and(|m| m.fields.contains_key("GENERATOR"))
    );
    // C-core sends client_features ["envoy.lb.does_not_support_overprovisioning",
    // "xds.config.resource-in-sotw"]; this client sends none.
    assert!(node.client_features.is_empty());

    // The ACK repeats the response's version and nonce.
    let response = &s.responses()[0];
    let ack = &requests[1];
    assert_eq!(ack.kind, RequestKind::Ack);
    assert_eq!(ack.version_info, response.version_info);
    assert_eq!(ack.response_nonce, response.nonce);
    assert_eq!(ack.resource_names, vec!["c1".to_string()]);
    assert_eq!(ack.error_detail, None);
    // C-core sends the node only in the first request of a stream; this
    // client sends it in every request.
    assert!(ack.node.is_some());

    // The watcher heard the value, summarised as the reference client does.
    let events = s.notifications_of("c1");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(
        changed("EDS service=e1 lb=ROUND_ROBIN")(&events[0].1),
        "{events:#?}"
    );
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn unsupported_operations_and_capabilities() {
    let mut s = setup(ServingMode::Auto, &[]).await;
    let caps = s.client.capabilities();
    assert!(caps.watch && caps.virtual_time);
    // Channels are tonic-xds's, which reaches its xDS server over TCP only.
    assert!(caps.dial && caps.rpc && caps.channels_need_real_time);
    assert!(!caps.channel_states && !caps.csds && !caps.client_events);
    assert!(!caps.delta && caps.profiles.is_empty());
    assert!(matches!(
        s.client.dial("xds:///x").await,
        Err(ClientError::Unsupported(_))
    ));
    let rpc = RpcRequest {
        target: "xds:///x".into(),
        method: xds_client_under_test::BACKEND_METHOD.into(),
        timeout: Duration::from_secs(1),
        wait_for_ready: false,
        authority: None,
    };
    assert!(matches!(
        s.client.rpc(&rpc).await,
        Err(ClientError::Unsupported(_))
    ));
    assert!(matches!(
        s.client.csds().await,
        Err(ClientError::Unsupported(_))
    ));
    assert!(matches!(
        s.client.cancel_watch(ResourceType::Cluster, "never").await,
        Err(ClientError::Failed(_))
    ));
    s.client.shutdown().await;

    let mut unstarted = GrpcRustClient::new();
    assert!(matches!(
        unstarted.watch(ResourceType::Cluster, "c1").await,
        Err(ClientError::Failed(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn bad_bootstrap_and_profiles_are_errors() {
    let network = MemoryNetwork::new();
    let env = |bootstrap_json: &str, profile: Option<&str>| ClientEnvironment {
        projection: None,
        bootstrap: ClientBootstrap::GrpcJson(bootstrap_json.to_string()),
        transport: transport(&network),
        rng_seed: 1,
        profile: profile.map(str::to_string),
        clock_epoch: SystemTime::UNIX_EPOCH,
        events: Arc::new(|_| {}),
        zone: None,
        env: Default::default(),
    };
    let mut client = GrpcRustClient::new();
    assert!(matches!(
        client.start(env("{", None)).await,
        Err(ClientError::Failed(_))
    ));
    assert!(matches!(
        client.start(env(r#"{"xds_servers": []}"#, None)).await,
        Err(ClientError::Failed(_))
    ));
    assert!(matches!(
        client.start(env(&bootstrap(&[]), Some("reference"))).await,
        Err(ClientError::Unsupported(_))
    ));
}

// ---------------------------------------------------------------------------
// A46: NACK

#[tokio::test(start_paused = true)]
async fn undecodable_entry_is_nacked_and_the_valid_one_used() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    let garbage = ServedResource::raw(
        CDS,
        "garbage",
        Any {
            type_url: Cluster::type_url(),
            value: vec![0xff, 0xff, 0xff, 0xff, 0x0f],
        },
    );
    s.send(CDS, "1", "A", vec![garbage, cluster("c1", "e1")]);
    settle().await;

    let nack = s.requests_of(CDS).pop().expect("a NACK");
    assert_eq!(nack.kind, RequestKind::Nack);
    assert_eq!(nack.response_nonce, "A");
    // The NACK carries the last fully accepted version: none yet. (C-core
    // takes the new version when part of the response was valid, as c1 is
    // here; see scenarios/a46/nack-version-is-last-accepted.yaml.)
    assert_eq!(nack.version_info, "");
    let (code, message) = nack.error_detail.clone().expect("error detail");
    assert_eq!(code, 3, "INVALID_ARGUMENT, as C-core");
    // C-core: "xDS response validation errors: [resource index 0: Can't
    // parse Cluster resource]"; this client names no index.
    assert!(message.starts_with("top level errors: "), "{message}");
    assert!(!message.contains("index"), "{message}");

    // A46: the valid resource of the NACKed response is used.
    let events = s.notifications_of("c1");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(changed("service=e1")(&events[0].1));

    // A later good response is ACKed with its version.
    s.send(CDS, "2", "B", vec![cluster("c1", "e2")]);
    settle().await;
    let ack = s.requests_of(CDS).pop().expect("an ACK");
    assert_eq!(
        (
            ack.kind,
            ack.version_info.as_str(),
            ack.response_nonce.as_str()
        ),
        (RequestKind::Ack, "2", "B")
    );
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn no_grpc_validation_invalid_cluster_is_acked() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    let mut bad = eds_cluster("c1", "e1");
    bad.lb_policy = LbPolicy::Random as i32;
    s.send(
        CDS,
        "1",
        "A",
        vec![ServedResource::from_message("c1", &bad)],
    );
    settle().await;

    // C-core NACKs a Cluster with lb_policy RANDOM ("invalid resource"); this
    // client validates nothing, ACKs it and hands it to the watcher.
    let ack = s.requests_of(CDS).pop().expect("an ACK");
    assert_eq!(ack.kind, RequestKind::Ack);
    assert_eq!(ack.version_info, "1");
    let events = s.notifications_of("c1");
    assert_eq!(events.len(), 1, "{events:#?}");
    match &events[0].1 {
        WatcherNotification::Changed { summary } => {
            assert!(summary.contains("accepted unvalidated"), "{summary}");
            assert!(summary.contains("lb_policy"), "{summary}");
        }
        other => panic!("expected Changed, got {other:?}"),
    }
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn entry_type_url_is_not_checked() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    // A Cluster's bytes under a Listener type_url, in a CDS response.
    let mislabeled = ServedResource::raw(
        CDS,
        "c1",
        Any {
            type_url: Listener::type_url(),
            value: eds_cluster("c1", "e1").encode_to_vec(),
        },
    );
    s.send(CDS, "1", "A", vec![mislabeled]);
    settle().await;

    // C-core NACKs 'incorrect resource type'; this client decodes the bytes
    // as the stream's type whatever the entry says, ACKs and uses them.
    let ack = s.requests_of(CDS).pop().expect("an ACK");
    assert_eq!(ack.kind, RequestKind::Ack);
    let events = s.notifications_of("c1");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(changed("service=e1")(&events[0].1));
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn resource_wrapper_is_not_unwrapped() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    s.send(CDS, "1", "A", vec![cluster("c1", "e1").wrapped(None)]);
    settle().await;

    // C-core unwraps envoy.service.discovery.v3.Resource and uses c1; this
    // client decodes the wrapper's bytes as a Cluster, which fails: NACK,
    // and the watcher hears nothing.
    let nack = s.requests_of(CDS).pop().expect("a NACK");
    assert_eq!(nack.kind, RequestKind::Nack, "{nack:#?}");
    assert!(s.notifications_of("c1").is_empty());
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn duplicate_names_are_all_used_and_acked() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    s.send(
        CDS,
        "1",
        "A",
        vec![cluster("c1", "first"), cluster("c1", "second")],
    );
    settle().await;

    // C-core NACKs "duplicate resource name" and uses the first entry; this
    // client ACKs and notifies once per entry, so the last one wins.
    let ack = s.requests_of(CDS).pop().expect("an ACK");
    assert_eq!(ack.kind, RequestKind::Ack);
    let events = s.notifications_of("c1");
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(changed("service=first")(&events[0].1));
    assert!(changed("service=second")(&events[1].1));
    s.client.shutdown().await;
}

/// A consumer-supplied Cluster type whose `validate` rejects clusters whose
/// EDS service name is "invalid": the crate's per-resource error path.
#[derive(Debug)]
struct StrictCluster;

impl Resource for StrictCluster {
    type Message = Cluster;
    const TYPE_URL: TypeUrl = TypeUrl::new("type.googleapis.com/envoy.config.cluster.v3.Cluster");

    fn deserialize(bytes: bytes::Bytes) -> xds_client::Result<Cluster> {
        Ok(Cluster::decode(bytes)?)
    }

    fn name(message: &Cluster) -> &str {
        &message.name
    }

    fn validate(message: Cluster) -> xds_client::Result<Self> {
        match message.eds_cluster_config {
            Some(c) if c.service_name == "invalid" => {
                Err(xds_client::Error::Validation("invalid service name".into()))
            }
            _ => Ok(StrictCluster),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn invalid_update_of_a_cached_resource_drops_it() {
    let network = MemoryNetwork::new();
    let server = FakeAdsServer::new(ServerConfig {
        name: "primary".into(),
        mode: ServingMode::Scripted,
    });
    server.serve_in_memory(&network, ADDRESS).unwrap();
    let config = CrateConfig::from_bootstrap_json(&bootstrap(&[])).unwrap();
    let (client, _cutoff) = build_client(&config, &transport(&network), ResourceGauge::new());
    let mut watcher = client.watch::<StrictCluster>("c1").await;
    settle().await;
    let send = |version: &str, service: &str| {
        server.send_response(ScriptedResponse {
            resource_errors: Vec::new(),
            type_url: CDS.into(),
            version_info: Some(version.into()),
            nonce: None,
            resources: vec![cluster("c1", service)],
        })
    };
    send("1", "good");
    let first = watcher.next().await.expect("an event");
    assert!(matches!(
        first,
        ResourceEvent::ResourceChanged { result: Ok(_), .. }
    ));
    drop(first);
    send("2", "invalid");
    let second = watcher.next().await.expect("an event");
    // C-core (A46, and A88's data errors): an invalid update of a cached
    // resource is an ambient error and the cached value stays in use. This
    // client delivers a cache-invalidating ResourceChanged(Err) (a resource
    // error) and drops the cached value.
    assert!(
        matches!(
            &second,
            ResourceEvent::ResourceChanged { result: Err(xds_client::Error::Validation(m)), .. }
                if m == "resource validation failed: invalid service name"
        ),
        "{second:?}"
    );
    drop(second);
    // A new watcher gets the error, not the last good value.
    let mut late = client.watch::<StrictCluster>("c1").await;
    let cached = late.next().await.expect("an event");
    assert!(
        matches!(
            cached,
            ResourceEvent::ResourceChanged {
                result: Err(xds_client::Error::Validation(_)),
                ..
            }
        ),
        "{cached:?}"
    );
}

// ---------------------------------------------------------------------------
// A27: caching, notifications, deletion, unsubscription

#[tokio::test(start_paused = true)]
async fn unchanged_resource_is_notified_again() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    s.send(CDS, "1", "A", vec![cluster("c1", "e1")]);
    settle().await;
    s.send(CDS, "2", "B", vec![cluster("c1", "e1")]);
    settle().await;
    let ack = s.requests_of(CDS).pop().expect("an ACK");
    assert_eq!(
        (ack.kind, ack.version_info.as_str()),
        (RequestKind::Ack, "2")
    );
    // C-core does not notify watchers of a resource that did not change.
    let events = s.notifications_of("c1");
    assert_eq!(events.len(), 2, "{events:#?}");
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn unrequested_resources_are_cached_and_served_to_later_watchers() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    s.send(
        CDS,
        "1",
        "A",
        vec![cluster("c1", "e1"), cluster("extra", "x")],
    );
    settle().await;
    assert_eq!(s.requests_of(CDS).pop().unwrap().kind, RequestKind::Ack);
    assert!(s.notifications_of("extra").is_empty());

    // A later watcher of "extra" is told its value at once, from a response
    // sent before it subscribed. C-core ignores unrequested resources and
    // waits for the server to send "extra" after the new subscription.
    let before = s.start.elapsed();
    s.client
        .watch(ResourceType::Cluster, "extra")
        .await
        .unwrap();
    settle().await;
    let events = s.notifications_of("extra");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(changed("service=x")(&events[0].1));
    assert!(events[0].0 - before < Duration::from_millis(10));
    let last = s.requests_of(CDS).pop().unwrap();
    let mut names = last.resource_names.clone();
    names.sort();
    assert_eq!(names, vec!["c1".to_string(), "extra".to_string()]);
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn lds_deletion_by_omission_even_with_ignore_resource_deletion() {
    // The bootstrap asks for gRFC A53 ignore_resource_deletion; the crate
    // has no place for server features.
    let mut s = setup(ServingMode::Auto, &["ignore_resource_deletion"]).await;
    s.server
        .set_resources(vec![listener("l1"), listener("l2")], None);
    s.client.watch(ResourceType::Listener, "l1").await.unwrap();
    s.client.watch(ResourceType::Listener, "l2").await.unwrap();
    settle().await;
    assert_eq!(s.notifications_of("l2").len(), 1);
    s.server.remove_resources(LDS, &["l2".to_string()], None);
    settle().await;
    // Without the feature this is what C-core does too; with it, C-core keeps
    // using l2 and only logs the deletion.
    let events = s.notifications_of("l2");
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events[1].1, WatcherNotification::DoesNotExist);
    // l1 is notified once per response that carries it, unchanged or not
    // (see unchanged_resource_is_notified_again).
    let l1_responses = s
        .responses()
        .iter()
        .filter(|r| r.resource_names.contains(&"l1".to_string()))
        .count();
    let l1 = s.notifications_of("l1");
    assert_eq!(l1.len(), l1_responses, "{l1:#?}");
    assert!(l1.iter().all(|(_, n)| changed("")(n)));
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_last_watches_sends_nothing_and_keeps_the_stream() {
    let mut s = setup(ServingMode::Auto, &[]).await;
    s.server
        .set_resources(vec![listener("l1"), cluster("c1", "e1")], None);
    s.client.watch(ResourceType::Listener, "l1").await.unwrap();
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    let before = s.requests().len();

    // C-core sends a CDS request with empty resource_names when the last
    // CDS watch goes; this client sends nothing.
    s.client
        .cancel_watch(ResourceType::Cluster, "c1")
        .await
        .unwrap();
    run_for(Duration::from_secs(5)).await;
    assert_eq!(s.requests().len(), before, "{:#?}", s.requests());

    // C-core closes the ADS stream when the last watch goes; this client
    // keeps it open.
    s.client
        .cancel_watch(ResourceType::Listener, "l1")
        .await
        .unwrap();
    run_for(Duration::from_secs(60)).await;
    assert_eq!(s.requests().len(), before);
    assert!(s.stream_closes().is_empty(), "{:#?}", s.stream_closes());
    s.client.shutdown().await;
}

// ---------------------------------------------------------------------------
// A57: does-not-exist timer, stream and connectivity failures

#[tokio::test(start_paused = true)]
async fn does_not_exist_after_30_seconds() {
    let mut s = setup(ServingMode::Auto, &[]).await;
    s.server.set_resources(vec![cluster("c1", "e1")], None);
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    s.client
        .watch(ResourceType::Cluster, "missing")
        .await
        .unwrap();
    run_for(Duration::from_secs(15)).await;
    // C-core (A57): does-not-exist after 15 s.
    assert!(s.notifications_of("missing").is_empty());
    run_for(Duration::from_secs(20)).await;
    let events = s.notifications_of("missing");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].0, Duration::from_secs(30));
    assert_eq!(events[0].1, WatcherNotification::DoesNotExist);
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn unreachable_server_is_silent_and_the_timer_fires_on_connect() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.server.apply(RefuseConnections);
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    run_for(Duration::from_secs(2)).await;
    s.client.watch(ResourceType::Cluster, "c2").await.unwrap();
    run_for(Duration::from_secs(38)).await;

    // C-core (A57): a connectivity failure is reported to the watchers.
    // This client reports nothing. Its worker does not read commands while
    // it connects or backs off, so c1's does-not-exist timer (started at the
    // watch) fired at 30 s but has not been handled, and c2's watch has not
    // even been seen.
    assert!(s.notifications().is_empty(), "{:#?}", s.notifications());
    assert!(s.requests().is_empty());

    // Reconnect attempts back off 1 s, 2 s, 4 s, 8 s, ... each ±20 %
    // (multiplier 2, at most 30 s; C-core: 1 s × 1.6ⁿ ±20 %, at most 120 s).
    let refused: Vec<Duration> = s
        .server_events()
        .into_iter()
        .filter_map(|(at, e)| matches!(e, ServerEvent::ConnectionRefused { .. }).then_some(at))
        .collect();
    assert!(refused.len() >= 5, "{refused:?}");
    assert_eq!(refused[0], Duration::ZERO);
    for (i, pair) in refused.windows(2).take(4).enumerate() {
        let base = Duration::from_secs(1 << i);
        let gap = pair[1] - pair[0];
        assert!(
            gap >= base.mul_f64(0.8) && gap <= base.mul_f64(1.2),
            "attempt {i}: {gap:?} not within 20 % of {base:?} ({refused:?})"
        );
    }

    s.server.apply(AcceptConnections);
    run_for(Duration::from_secs(100)).await;
    let requests = s.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let connected_at = requests[0].0;
    assert!(connected_at > Duration::from_secs(40));
    assert_eq!(requests[0].2.resource_names, vec!["c1".to_string()]);
    let mut names = requests[1].2.resource_names.clone();
    names.sort();
    assert_eq!(names, vec!["c1".to_string(), "c2".to_string()]);

    // The expired timer is handled the moment the stream is up, before the
    // server could answer: c1 "does not exist" although the client never
    // asked for it before. C-core starts the timer only once the request is
    // sent on a connected stream.
    assert_eq!(
        s.notifications_of("c1"),
        vec![(connected_at, WatcherNotification::DoesNotExist)]
    );
    // c2's timer started when its queued watch was handled, on connect.
    assert_eq!(
        s.notifications_of("c2"),
        vec![(
            connected_at + Duration::from_secs(30),
            WatcherNotification::DoesNotExist
        )]
    );
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn stream_closed_without_a_response() {
    let mut s = setup(ServingMode::Scripted, &[]).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    run_for(Duration::from_secs(10)).await;
    let closed_at = s.start.elapsed();
    s.server.apply(CloseStreams {
        code: tonic::Code::Unavailable,
        message: "boom".into(),
    });
    run_for(Duration::from_secs(5)).await;

    // C-core (A57): a stream that ends before any response is a
    // connectivity error, reported to every watcher. This client reports
    // nothing.
    assert!(s.notifications_of("c1").is_empty());

    // It comes back after its backoff (1 s ± 20 %), on a new connection:
    // it builds a new channel for every stream (C-core keeps the channel
    // and starts a new stream on it).
    let requests = s.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let (at, stream, again) = &requests[1];
    assert_ne!(*stream, requests[0].1);
    let gap = *at - closed_at;
    assert!(
        gap >= Duration::from_millis(800) && gap <= Duration::from_millis(1200),
        "{gap:?}"
    );
    assert_eq!(
        (
            again.kind,
            again.version_info.as_str(),
            again.node.is_some()
        ),
        (RequestKind::Initial, "", true)
    );
    let connections = s.connections_accepted();
    assert_eq!(connections.len(), 2, "{connections:?}");

    // The timer is not restarted on the new stream (A57 restarts it there
    // for resources not cached): it still fires 30 s after the watch.
    run_for(Duration::from_secs(20)).await;
    assert_eq!(
        s.notifications_of("c1"),
        vec![(Duration::from_secs(30), WatcherNotification::DoesNotExist)]
    );
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn stream_closed_after_a_response() {
    let mut s = setup(ServingMode::Auto, &[]).await;
    s.server.set_resources(vec![cluster("c1", "e1")], None);
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    let version = s.responses()[0].version_info.clone();
    let closed_at = s.start.elapsed();
    s.server.apply(CloseStreams {
        code: tonic::Code::Unavailable,
        message: "rebalancing".into(),
    });
    run_for(Duration::from_secs(60)).await;

    // Not an error (A57): the watcher hears nothing but the one value.
    assert_eq!(
        s.notifications_of("c1").len(),
        2,
        "resent c1 is notified again"
    );
    assert!(
        s.notifications_of("c1")
            .iter()
            .all(|(_, n)| matches!(n, WatcherNotification::Changed { .. }))
    );

    // The backoff was reset by the response, so it waits 1 s ± 20 % and
    // re-subscribes with the last accepted version and an empty nonce.
    let resubscribe = s
        .requests()
        .into_iter()
        .find(|(at, _, _)| *at > closed_at)
        .expect("a new stream");
    let gap = resubscribe.0 - closed_at;
    assert!(
        gap >= Duration::from_millis(800) && gap <= Duration::from_millis(1200),
        "{gap:?}"
    );
    let request = resubscribe.2;
    assert_eq!(request.kind, RequestKind::Initial);
    assert_eq!(request.version_info, version);
    assert_eq!(request.response_nonce, "");
    assert_eq!(request.resource_names, vec!["c1".to_string()]);
    assert!(request.node.is_some());
    s.client.shutdown().await;
}

// ---------------------------------------------------------------------------
// Shutdown

#[tokio::test(start_paused = true)]
async fn shutdown_closes_the_stream() {
    let mut s = setup(ServingMode::Auto, &[]).await;
    s.server.set_resources(vec![cluster("c1", "e1")], None);
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    s.client.shutdown().await;
    run_for(Duration::from_secs(60)).await;
    let closes = s.stream_closes();
    assert_eq!(closes.len(), 1, "{closes:?}");
    assert!(closes[0].1, "closed by the client");
    // Nothing after: no reconnection.
    assert_eq!(s.connections_accepted().len(), 1);
    assert_eq!(s.requests().len(), 2);
    let _ = &s.network;
}

#[tokio::test(start_paused = true)]
async fn dropping_every_handle_leaves_the_crate_connected() {
    let network = MemoryNetwork::new();
    let server = FakeAdsServer::new(ServerConfig {
        name: "primary".into(),
        mode: ServingMode::Auto,
    });
    server.serve_in_memory(&network, ADDRESS).unwrap();
    server.set_resources(vec![cluster("c1", "e1")], None);
    let config = CrateConfig::from_bootstrap_json(&bootstrap(&[])).unwrap();
    let (client, cutoff) = build_client(&config, &transport(&network), ResourceGauge::new());
    let mut watcher = client.watch::<StrictCluster>("c1").await;
    drop(watcher.next().await);
    // The crate documents that its worker stops when every XdsClient handle
    // is dropped. It does not: the worker keeps a sender of its own command
    // channel, so the channel never closes and the ADS stream stays open.
    drop(watcher);
    drop(client);
    run_for(Duration::from_secs(120)).await;
    let closed = server
        .events()
        .into_iter()
        .any(|r| matches!(r.event, ServerEvent::StreamClosed { .. }));
    assert!(!closed, "{:#?}", server.events());
    // The adapter's cutoff takes it off the network.
    cutoff.cut();
    run_for(Duration::from_secs(1)).await;
    let closed = server
        .events()
        .into_iter()
        .any(|r| matches!(r.event, ServerEvent::StreamClosed { .. }));
    assert!(closed);
}

// ---------------------------------------------------------------------------
// TCP

#[tokio::test]
async fn works_over_tcp() {
    let server = FakeAdsServer::new(ServerConfig {
        name: "primary".into(),
        mode: ServingMode::Auto,
    });
    let address = server
        .serve_tcp("127.0.0.1:0".parse().unwrap())
        .await
        .expect("serve tcp");
    server.set_resources(vec![cluster("c1", "e1")], None);
    let bootstrap = bootstrap(&[]).replace(ADDRESS, &address.to_string());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut client = GrpcRustClient::new();
    client
        .start(ClientEnvironment {
            projection: None,
            bootstrap: ClientBootstrap::GrpcJson(bootstrap),
            transport: Transport::Tcp,
            rng_seed: 1,
            profile: None,
            clock_epoch: SystemTime::UNIX_EPOCH,
            events: Arc::new(move |event| {
                let _ = tx.send(event);
            }),
            zone: None,
            env: Default::default(),
        })
        .await
        .expect("start");
    client.watch(ResourceType::Cluster, "c1").await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("an event in time")
        .expect("an event");
    match event {
        ObservedEvent::Watcher {
            name, notification, ..
        } => {
            assert_eq!(name, "c1");
            assert!(changed("service=e1")(&notification), "{notification:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
    client.shutdown().await;
    server.shutdown();
}

// ---------------------------------------------------------------------------
// TLS (gRFC A65): the adapter turns the bootstrap's `tls` channel_creds into
// the crate's own TLS path (tonic's ClientTlsConfig, made per attempt).

/// A TLS server whose certificate `server` signed, asking for a client
/// certificate when `client` is given (signed by `client`), and a client
/// with A65 `tls` credentials for it. The directory holds the files.
async fn setup_tls(server: Signer, client: Option<Signer>) -> (Setup, tempfile::TempDir) {
    let pki = TestPki::generate().expect("certificates");
    let dir = tempfile::tempdir().expect("temporary directory");
    let write = |name: &str, contents: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).expect("write");
        path.display().to_string()
    };
    let mut config = serde_json::json!({"ca_certificate_file": write("ca.pem", pki.ca_pem())});
    let client_auth = match client {
        None => ClientAuth::None,
        Some(signer) => {
            let identity = pki.client_identity(signer).expect("client certificate");
            config["certificate_file"] = write("client.pem", &identity.certificate_pem).into();
            config["private_key_file"] = write("client.key", &identity.private_key_pem).into();
            ClientAuth::Required {
                roots_pem: pki.ca_pem().to_string(),
            }
        }
    };
    let settings = TlsSettings {
        identity: pki
            .server_identity(&["primary".to_string()], server)
            .expect("server certificate"),
        client_auth,
    };
    let mut json: serde_json::Value = serde_json::from_str(&bootstrap(&[])).expect("JSON");
    json["xds_servers"][0]["channel_creds"] =
        serde_json::json!([{"type": "tls", "config": config}]);
    let s = setup_with(ServingMode::Auto, Some(&settings), json.to_string()).await;
    (s, dir)
}

impl Setup {
    fn tls_events(&self) -> Vec<(Duration, ServerEvent)> {
        self.server_events()
            .into_iter()
            .filter(|(_, e)| {
                matches!(
                    e,
                    ServerEvent::TlsEstablished { .. } | ServerEvent::TlsFailed { .. }
                )
            })
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn mtls_to_the_server() {
    let (mut s, _dir) = setup_tls(Signer::TrustedCa, Some(Signer::TrustedCa)).await;
    s.server.set_resources(vec![cluster("c1", "e1")], None);
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    settle().await;
    assert_eq!(
        s.tls_events(),
        vec![(
            Duration::ZERO,
            ServerEvent::TlsEstablished {
                connection: 1,
                client_certificate: true,
            }
        )]
    );
    let events = s.notifications_of("c1");
    assert!(
        events.len() == 1 && changed("EDS service=e1")(&events[0].1),
        "{events:#?}"
    );
    s.client.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn tls_failures_are_silent() {
    // The server's certificate is from a CA the client does not trust.
    let (mut s, _dir) = setup_tls(Signer::UntrustedCa, None).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    run_for(Duration::from_secs(5)).await;
    // The crate refuses the server (tonic's rustls, with an alert), and
    // retries with its backoff (1 s, 2 s, ... +-20 %).
    let failures = s.tls_events();
    assert!(failures.len() >= 3, "{failures:#?}");
    for (_, event) in &failures {
        assert!(
            matches!(event, ServerEvent::TlsFailed { failure: TlsFailure::AlertFromClient(alert), .. } if alert == "UnknownCA"),
            "{event:?}"
        );
    }
    // C-core (A57): a connectivity failure is reported to the watchers, as
    // UNAVAILABLE. This client reports nothing, as for any failed
    // connection attempt (see unreachable_server_is_silent_and_the_timer_fires_on_connect).
    assert!(s.notifications().is_empty(), "{:#?}", s.notifications());
    s.client.shutdown().await;

    // The server refuses the client's certificate: with TLS 1.3 tonic's
    // handshake is done before that, so each attempt builds a channel, and
    // tonic connects a second time at once when the first connection dies
    // under the stream. Still nothing for the watchers.
    let (mut s, _dir) = setup_tls(Signer::TrustedCa, Some(Signer::UntrustedCa)).await;
    s.client.watch(ResourceType::Cluster, "c1").await.unwrap();
    run_for(Duration::from_secs(5)).await;
    let failures = s.tls_events();
    assert!(failures.len() >= 3, "{failures:#?}");
    assert!(failures.iter().all(|(_, e)| matches!(
        e,
        ServerEvent::TlsFailed {
            failure: TlsFailure::ClientCertificateRejected(_),
            ..
        }
    )));
    assert!(s.notifications().is_empty(), "{:#?}", s.notifications());
    s.client.shutdown().await;
}
