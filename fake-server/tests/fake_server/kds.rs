//! Kuma's KDS (`kuma.mesh.v1alpha1.KDSSyncService`) against a hand-made
//! tonic zone, as Kuma's zone calls it (its headers, gzip, `*` per type):
//! both RPCs, the recording, gzip both ways, health pings (answered) and
//! the rest of Kuma's other KDS service (UNIMPLEMENTED), auto and scripted
//! `ZoneToGlobalSync`, faults ending and holding back KDS streams. In
//! memory on paused time, and over TCP.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, Resource,
};
use envoy_types::pb::google::protobuf::{Any, Empty};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::codec::CompressionEncoding;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Streaming};
use xds_fake_server::event::ServerEvent;
use xds_fake_server::fault::{CloseStreams, Hang, Resume};
use xds_fake_server::handshake::KdsHandshake;
use xds_fake_server::resource::ServedResource;
use xds_fake_server::{FakeAdsServer, ScriptedKdsRequest, ServingMode};
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::{self, KdsName, KdsRpc, types};

use crate::support::*;

/// One KDS stream as a zone holds it: what it sends, what it gets, and
/// the server's response headers.
pub(crate) struct ZoneStream<Out, In> {
    sent: mpsc::UnboundedSender<Out>,
    received: Streaming<In>,
    headers: MetadataMap,
}

impl<Out, In> ZoneStream<Out, In>
where
    Out: prost::Message + Send + Sync + 'static,
    In: prost::Message + Default + Send + Sync + 'static,
{
    /// Opens `path` as Kuma's zone does: its headers, gzip both ways.
    pub(crate) async fn open(
        channel: Channel,
        path: &'static str,
        gzip: bool,
    ) -> Result<Self, tonic::Status> {
        let mut grpc = tonic::client::Grpc::new(channel);
        if gzip {
            grpc = grpc
                .send_compressed(CompressionEncoding::Gzip)
                .accept_compressed(CompressionEncoding::Gzip);
        }
        grpc.ready().await.expect("channel ready");
        let (sent, rx) = mpsc::unbounded_channel();
        let mut request = Request::new(UnboundedReceiverStream::new(rx));
        let metadata = request.metadata_mut();
        metadata.insert("client-id", "zone-1".parse().expect("ascii"));
        metadata.insert("kds-version", "v3".parse().expect("ascii"));
        metadata.append("features", "zone-ping-health".parse().expect("ascii"));
        metadata.append("features", "hash-suffix".parse().expect("ascii"));
        metadata.insert("version", "2.14.3".parse().expect("ascii"));
        let response = grpc
            .streaming(
                request,
                http::uri::PathAndQuery::from_static(path),
                tonic_prost::ProstCodec::<Out, In>::default(),
            )
            .await?;
        let headers = response.metadata().clone();
        Ok(Self {
            sent,
            received: response.into_inner(),
            headers,
        })
    }

    pub(crate) fn send(&self, message: Out) {
        self.sent.send(message).expect("stream open");
    }

    pub(crate) async fn next(&mut self) -> In {
        tokio::time::timeout(QUIET, self.received.message())
            .await
            .expect("a message in time")
            .expect("stream ok")
            .expect("stream not ended")
    }

    async fn is_silent(&mut self) -> bool {
        tokio::time::timeout(QUIET, self.received.message())
            .await
            .is_err()
    }

    async fn ended_with(&mut self) -> Code {
        match tokio::time::timeout(QUIET, self.received.message())
            .await
            .expect("the stream ends in time")
        {
            Err(status) => status.code(),
            Ok(None) => Code::Ok,
            Ok(Some(_)) => panic!("a message, not the end"),
        }
    }
}

pub(crate) type GlobalToZone = ZoneStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;
type ZoneToGlobal = ZoneStream<DeltaDiscoveryResponse, DeltaDiscoveryRequest>;

async fn global_to_zone(network: &xds_vocabulary::network::MemoryNetwork) -> GlobalToZone {
    let channel = connect(network).await.expect("connect");
    ZoneStream::open(channel, KdsRpc::GlobalToZoneSync.path(), true)
        .await
        .expect("GlobalToZoneSync opens")
}

async fn zone_to_global(network: &xds_vocabulary::network::MemoryNetwork) -> ZoneToGlobal {
    let channel = connect(network).await.expect("connect");
    ZoneStream::open(channel, KdsRpc::ZoneToGlobalSync.path(), true)
        .await
        .expect("ZoneToGlobalSync opens")
}

/// A Kuma resource as the global serves it.
pub(crate) fn kuma(type_name: &str, key: KdsName, marker: &str) -> ServedResource {
    let labels = BTreeMap::from([("kuma.io/origin".to_string(), "global".to_string())]);
    let spec = Any {
        type_url: format!("type.googleapis.com/kuma.mesh.v1alpha1.{type_name}"),
        value: marker.as_bytes().to_vec(),
    };
    let resource = kds::kuma_resource(&key, labels, Some(spec));
    ServedResource::raw(type_name, key.to_string(), kds::pack(&resource))
}

/// A zone's first request of a type, as Kuma's zone sends it.
pub(crate) fn subscribe_all(type_name: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: Some(Node {
            id: "zone-1".into(),
            ..Default::default()
        }),
        type_url: type_name.into(),
        resource_names_subscribe: vec!["*".into()],
        ..Default::default()
    }
}

fn ack(response: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: response.type_url.clone(),
        response_nonce: response.nonce.clone(),
        ..Default::default()
    }
}

pub(crate) fn names(response: &DeltaDiscoveryResponse) -> Vec<&str> {
    response.resources.iter().map(|r| r.name.as_str()).collect()
}

fn zone_handshake() -> KdsHandshake {
    KdsHandshake {
        client_id: Some("zone-1".into()),
        kds_version: Some("v3".into()),
        features: strings(&["zone-ping-health", "hash-suffix"]),
        version: Some("2.14.3".into()),
        gzip: true,
    }
}

fn kds_events(server: &FakeAdsServer) -> Vec<ServerEvent> {
    events_only(server.events())
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                ServerEvent::KdsStreamOpened { .. }
                    | ServerEvent::KdsRequestSent { .. }
                    | ServerEvent::KdsResponseReceived { .. }
            )
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn global_to_zone_serves_kuma_resources_by_name_dot_mesh_and_records_the_handshake() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(
        vec![
            kuma(types::MESH, KdsName::global("mesh-1"), "m1"),
            kuma(
                types::MESH_TRAFFIC_PERMISSION,
                KdsName::new("mtp", "mesh-1"),
                "p1",
            ),
        ],
        None,
    );
    let mut zone = global_to_zone(&network).await;
    assert_eq!(
        zone.headers.get("grpc-encoding").map(|v| v.to_str().ok()),
        Some(Some("gzip")),
        "the zone accepts gzip, so the global sends it"
    );
    zone.send(subscribe_all(types::MESH));
    let meshes = zone.next().await;
    assert_eq!(meshes.type_url, "Mesh");
    assert_eq!(names(&meshes), ["mesh-1."]);
    let body = meshes.resources[0].resource.as_ref().expect("a body");
    let resource = kds::unpack(body).expect("a KumaResource");
    assert_eq!(resource.kds_name(), KdsName::global("mesh-1"));
    assert_eq!(
        resource.meta.expect("meta").labels["kuma.io/origin"],
        "global"
    );
    zone.send(ack(&meshes));

    // A type the global holds nothing of still gets its first response
    // (the zone's full sync: it deletes what it held of the type).
    zone.send(subscribe_all(types::MESH_TIMEOUT));
    let timeouts = zone.next().await;
    assert_eq!(timeouts.type_url, "MeshTimeout");
    assert!(timeouts.resources.is_empty() && timeouts.removed_resources.is_empty());
    zone.send(ack(&timeouts));

    // Incremental from then on: a removal names `<name>.<mesh>`.
    server.remove_resources(types::MESH, &strings(&["mesh-1."]), None);
    let removal = zone.next().await;
    assert_eq!(removal.removed_resources, ["mesh-1."]);
    assert!(
        zone.is_silent().await,
        "nothing else: MTP was never asked for"
    );

    let events = events_only(server.events());
    assert_eq!(
        kds_events(&server)[0],
        ServerEvent::KdsStreamOpened {
            stream: 1,
            connection: Some(1),
            rpc: KdsRpc::GlobalToZoneSync,
            handshake: zone_handshake(),
        },
        "{events:#?}"
    );
    let first = events
        .iter()
        .find_map(|e| match e {
            ServerEvent::RequestReceived { request, .. } => Some(request),
            _ => None,
        })
        .expect("a request recorded");
    assert_eq!(first.type_url, "Mesh");
    assert_eq!(first.node.as_ref().map(|n| n.id.as_str()), Some("zone-1"));
    assert_eq!(first.kind, RequestKind::Initial);
    assert_eq!(first.subscription(), ["*"]);
}

#[tokio::test(start_paused = true)]
async fn zone_to_global_in_auto_mode_subscribes_every_zone_type_and_acks_each_response() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_kds_zone_types(strings(&[types::DATAPLANE, types::ZONE_INGRESS]));
    let mut zone = zone_to_global(&network).await;
    let mut asked = Vec::new();
    for _ in 0..2 {
        let request = zone.next().await;
        assert_eq!(request.resource_names_subscribe, ["*"]);
        assert_eq!(request.response_nonce, "");
        assert_eq!(request.node.map(|n| n.id).as_deref(), Some("zone-1"));
        asked.push(request.type_url);
    }
    assert_eq!(asked, ["Dataplane", "ZoneIngress"]);

    zone.send(DeltaDiscoveryResponse {
        type_url: types::DATAPLANE.into(),
        nonce: "n-1".into(),
        resources: vec![Resource {
            name: "dp-1.default".into(),
            version: "v1".into(),
            resource: Some(kuma(types::DATAPLANE, KdsName::new("dp-1", "default"), "d").entry),
            ..Default::default()
        }],
        removed_resources: strings(&["dp-0.default"]),
        ..Default::default()
    });
    let ack = zone.next().await;
    assert_eq!(
        (ack.type_url.as_str(), ack.response_nonce.as_str()),
        ("Dataplane", "n-1")
    );
    assert!(ack.error_detail.is_none() && ack.resource_names_subscribe.is_empty());

    let events = kds_events(&server);
    assert!(matches!(
        &events[0],
        ServerEvent::KdsStreamOpened { rpc: KdsRpc::ZoneToGlobalSync, handshake, .. }
            if *handshake == zone_handshake()
    ));
    let kinds: Vec<(String, RequestKind)> = events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::KdsRequestSent { request, .. } => {
                Some((request.type_url.clone(), request.kind))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("Dataplane".to_string(), RequestKind::Initial),
            ("ZoneIngress".to_string(), RequestKind::Initial),
            ("Dataplane".to_string(), RequestKind::Ack),
        ]
    );
    let received = events
        .iter()
        .find_map(|e| match e {
            ServerEvent::KdsResponseReceived { response, .. } => Some(response),
            _ => None,
        })
        .expect("the zone's response recorded");
    assert_eq!(received.type_url, "Dataplane");
    assert_eq!(received.nonce, "n-1");
    assert_eq!(received.resource_names, ["dp-1.default"]);
    let delta = received.delta.as_ref().expect("delta fields");
    assert_eq!(delta.resources[0].version, "v1");
    assert_eq!(delta.removed_resources, ["dp-0.default"]);
}

#[tokio::test(start_paused = true)]
async fn zone_to_global_in_scripted_mode_sends_only_what_it_is_told_and_nacks_with_a_detail() {
    let (server, network) = serving(ServingMode::Scripted);
    let mut zone = zone_to_global(&network).await;
    assert!(zone.is_silent().await, "no subscription by itself");
    let subscribe = ScriptedKdsRequest {
        type_url: types::DATAPLANE.into(),
        subscribe: strings(&["*"]),
        ..Default::default()
    };
    assert_eq!(server.send_kds_request(subscribe), 1);
    assert_eq!(zone.next().await.resource_names_subscribe, ["*"]);
    zone.send(DeltaDiscoveryResponse {
        type_url: types::DATAPLANE.into(),
        nonce: "7".into(),
        ..Default::default()
    });
    assert!(zone.is_silent().await, "no ACK by itself");
    let nack = ScriptedKdsRequest {
        type_url: types::DATAPLANE.into(),
        error_detail: Some((3, "dp-1.default: invalid spec".into())),
        ..Default::default()
    };
    assert_eq!(server.send_kds_request(nack), 1);
    let nack = zone.next().await;
    assert_eq!(nack.response_nonce, "7", "the last response's nonce");
    let detail = nack.error_detail.expect("a NACK");
    assert_eq!(
        (detail.code, detail.message.as_str()),
        (3, "dp-1.default: invalid spec")
    );
    let sent: Vec<(RequestKind, Option<(i32, String)>)> = kds_events(&server)
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::KdsRequestSent { request, .. } => {
                Some((request.kind, request.error_detail))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        [
            (RequestKind::Initial, None),
            (
                RequestKind::Nack,
                Some((3, "dp-1.default: invalid spec".to_string()))
            ),
        ]
    );
    assert_eq!(
        server.send_kds_response(Default::default()),
        0,
        "no GlobalToZoneSync stream is open"
    );
}

/// `request` with a node listing `features` in its metadata, as Kuma's
/// zone's first request of a type has.
fn with_node_features(
    mut request: DeltaDiscoveryRequest,
    features: &[&str],
) -> DeltaDiscoveryRequest {
    use envoy_types::pb::google::protobuf::{ListValue, Struct, Value, value::Kind};
    let list = Value {
        kind: Some(Kind::ListValue(ListValue {
            values: features
                .iter()
                .map(|f| Value {
                    kind: Some(Kind::StringValue(f.to_string())),
                })
                .collect(),
        })),
    };
    if let Some(node) = request.node.as_mut() {
        node.metadata = Some(Struct {
            fields: [("features".to_string(), list)].into(),
        });
    }
    request
}

#[tokio::test(start_paused = true)]
async fn global_to_zone_hash_suffixes_names_for_a_zone_that_lists_hash_suffix() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(
        vec![
            kuma(types::MESH, KdsName::global("mesh-1"), "m1"),
            kuma(
                types::MESH_TRAFFIC_PERMISSION,
                KdsName::new("mtp", "mesh-1"),
                "p1",
            ),
        ],
        None,
    );
    // Kuma's zone lists `hash-suffix` in the node of every first request;
    // the global reads the stream's first.
    let mut zone = global_to_zone(&network).await;
    zone.send(with_node_features(
        subscribe_all(types::MESH),
        &["zone-token", "hash-suffix"],
    ));
    let meshes = zone.next().await;
    assert_eq!(
        names(&meshes),
        ["mesh-1."],
        "a Mesh keeps its name (SkipKDSHash)"
    );
    zone.send(ack(&meshes));
    zone.send(subscribe_all(types::MESH_TRAFFIC_PERMISSION));
    let policies = zone.next().await;
    // hash_suffixed("mesh-1", "mtp", []), as Kuma's HashSuffixMapper.
    assert_eq!(names(&policies), ["mtp-cwvbbbcbw82ccvxz.mesh-1"]);
    let body = policies.resources[0].resource.as_ref().expect("a body");
    let meta = kds::unpack(body)
        .expect("a KumaResource")
        .meta
        .expect("meta");
    assert_eq!(meta.name, "mtp-cwvbbbcbw82ccvxz");
    assert_eq!(meta.labels["kuma.io/display-name"], "mtp");
    assert_eq!(meta.labels["kuma.io/origin"], "global");
    zone.send(ack(&policies));
    // An update goes under the same name; a removal names it too.
    server.set_resources(
        vec![kuma(
            types::MESH_TRAFFIC_PERMISSION,
            KdsName::new("mtp", "mesh-1"),
            "p2",
        )],
        None,
    );
    let update = zone.next().await;
    assert_eq!(names(&update), ["mtp-cwvbbbcbw82ccvxz.mesh-1"]);
    assert!(update.removed_resources.is_empty());
    zone.send(ack(&update));
    server.remove_resources(
        types::MESH_TRAFFIC_PERMISSION,
        &strings(&["mtp.mesh-1"]),
        None,
    );
    let removal = zone.next().await;
    assert_eq!(removal.removed_resources, ["mtp-cwvbbbcbw82ccvxz.mesh-1"]);

    // A zone whose first request lists no `hash-suffix` gets the names as
    // they are.
    server.set_resources(
        vec![kuma(
            types::MESH_TRAFFIC_PERMISSION,
            KdsName::new("mtp", "mesh-1"),
            "p3",
        )],
        None,
    );
    let mut plain = global_to_zone(&network).await;
    plain.send(with_node_features(
        subscribe_all(types::MESH_TRAFFIC_PERMISSION),
        &["zone-token"],
    ));
    let policies = plain.next().await;
    assert_eq!(names(&policies), ["mtp.mesh-1"]);
}

#[tokio::test(start_paused = true)]
async fn zone_health_ping_is_recorded_and_answered_without_an_interval() {
    let (server, network) = serving(ServingMode::Auto);
    let channel = connect(&network).await.expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel)
        .send_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Gzip);
    grpc.ready().await.expect("ready");
    let mut request = Request::new(kds::ZoneHealthCheckRequest {});
    let metadata = request.metadata_mut();
    metadata.insert("client-id", "zone-1".parse().expect("ascii"));
    metadata.insert("kds-version", "v3".parse().expect("ascii"));
    metadata.append("features", "zone-ping-health".parse().expect("ascii"));
    metadata.append("features", "hash-suffix".parse().expect("ascii"));
    metadata.insert("version", "2.14.3".parse().expect("ascii"));
    let answer = grpc
        .unary(
            request,
            http::uri::PathAndQuery::from_static(kds::HEALTH_CHECK_PATH),
            tonic_prost::ProstCodec::<kds::ZoneHealthCheckRequest, kds::ZoneHealthCheckResponse>::default(),
        )
        .await
        .expect("HealthCheck is served");
    // Kuma's global without `zoneHealthCheck.pollInterval` answers a zero
    // interval: the zone keeps its own.
    let interval = answer.into_inner().interval.expect("an interval");
    assert_eq!((interval.seconds, interval.nanos), (0, 0));
    let pings: Vec<KdsHandshake> = events_only(server.events())
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::KdsHealthCheck { handshake } => Some(handshake),
            _ => None,
        })
        .collect();
    assert_eq!(pings, [zone_handshake()]);
}

#[tokio::test(start_paused = true)]
async fn kumas_other_kds_methods_and_unknown_methods_are_unimplemented() {
    let (_server, network) = serving(ServingMode::Auto);
    for path in [
        "/kuma.mesh.v1alpha1.GlobalKDSService/NoSuchMethod",
        "/kuma.mesh.v1alpha1.KDSSyncService/NoSuchMethod",
    ] {
        let channel = connect(&network).await.expect("connect");
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.expect("ready");
        let status = grpc
            .unary(
                Request::new(Empty {}),
                http::uri::PathAndQuery::from_static(path),
                tonic_prost::ProstCodec::<Empty, Empty>::default(),
            )
            .await
            .expect_err("not served");
        assert_eq!(status.code(), Code::Unimplemented, "{path}: {status:?}");
    }
    let channel = connect(&network).await.expect("connect");
    let streams = ZoneStream::<Empty, Empty>::open(
        channel,
        "/kuma.mesh.v1alpha1.GlobalKDSService/StreamXDSConfigs",
        true,
    )
    .await;
    assert_eq!(
        streams.err().map(|status| status.code()),
        Some(Code::Unimplemented)
    );
}

#[tokio::test(start_paused = true)]
async fn faults_hold_back_and_end_kds_streams_as_they_do_ads_streams() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(
        vec![kuma(types::MESH, KdsName::global("mesh-1"), "m1")],
        None,
    );
    let mut down = global_to_zone(&network).await;
    let mut up = zone_to_global(&network).await;
    for _ in types::ZONE_TO_GLOBAL {
        up.next().await;
    }
    server.apply(Hang {
        type_url: Some(types::MESH.into()),
    });
    down.send(subscribe_all(types::MESH));
    assert!(down.is_silent().await, "a hung type gets no answer");
    server.apply(Resume);
    assert_eq!(names(&down.next().await), ["mesh-1."]);

    server.apply(CloseStreams {
        code: Code::Unavailable,
        message: "global going away".into(),
    });
    assert_eq!(down.ended_with().await, Code::Unavailable);
    assert_eq!(up.ended_with().await, Code::Unavailable);
    // Each end names the RPC its stream was, as its opening did.
    let closed: Vec<(u64, Option<KdsRpc>)> = events_only(server.events())
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::StreamClosed {
                stream,
                by_client: false,
                kds,
                ..
            } => Some((stream, kds)),
            _ => None,
        })
        .collect();
    assert_eq!(
        closed,
        [
            (1, Some(KdsRpc::GlobalToZoneSync)),
            (2, Some(KdsRpc::ZoneToGlobalSync))
        ]
    );
    assert!(server.open_streams().is_empty());
}

#[tokio::test]
async fn global_to_zone_over_tcp_plaintext_with_and_without_gzip() {
    let server = server(ServingMode::Auto);
    server.set_resources(
        vec![kuma(types::MESH, KdsName::global("mesh-1"), "m1")],
        None,
    );
    let addr = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve tcp");
    for gzip in [true, false] {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .expect("uri")
            .connect()
            .await
            .expect("connect");
        let mut zone: GlobalToZone =
            ZoneStream::open(channel, KdsRpc::GlobalToZoneSync.path(), gzip)
                .await
                .expect("open");
        zone.send(subscribe_all(types::MESH));
        assert_eq!(names(&zone.next().await), ["mesh-1."]);
        assert_eq!(zone.headers.get("grpc-encoding").is_some(), gzip);
    }
    let gzips: Vec<bool> = events_only(server.events())
        .into_iter()
        .filter_map(|e| match e {
            ServerEvent::KdsStreamOpened { handshake, .. } => Some(handshake.gzip),
            _ => None,
        })
        .collect();
    assert_eq!(gzips, [true, false]);
    server.shutdown();
}
