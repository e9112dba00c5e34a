//! What the zone stores from its global: every valid resource, a NACK
//! for invalid ones (their valid siblings stored), the full sync of a
//! type's first response, incremental updates and removals, and no change
//! for an equal resource.

use envoy_types::pb::google::protobuf::Any;
use xds_fake_server::ServingMode;
use xds_fake_server::fault::CloseStreams;
use xds_fake_server::{ScriptedDeltaResource, ScriptedDeltaResponse};
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::types;

use super::*;

const MESH: &str = types::MESH;
const TIMEOUT: &str = types::MESH_TIMEOUT;

fn mesh(name: &str, spec: serde_json::Value) -> ServedResource {
    served(MESH, KdsName::global(name), spec)
}

/// A MeshTimeout spec Kuma's validator takes.
fn timeout_spec() -> serde_json::Value {
    serde_json::json!({"to": [{"targetRef": {"kind": "Mesh"}, "default": {"idleTimeout": "1s"}}]})
}

fn nacks(server: &FakeAdsServer) -> Vec<RecordedRequest> {
    requests(server)
        .into_iter()
        .filter(|r| r.error_detail.is_some())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn what_the_global_sends_is_stored_with_its_labels_and_reported() {
    let (server, network) = global(ServingMode::Auto);
    server.set_resources(
        vec![
            mesh("m1", serde_json::json!({"mtls": {"skipValidation": true}})),
            served(TIMEOUT, KdsName::new("t1", "m1"), timeout_spec()),
        ],
        None,
    );
    let (zone, heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    assert_eq!(
        heard.changes(),
        [
            r#"+Mesh m1. {"mtls":{"skipValidation":true}}"#,
            // Hash-suffixed, as a 2.14 global names what it sends a zone
            // that lists `hash-suffix` (the fake's auto mode).
            r#"+MeshTimeout t1-w2vfxzv7wfw77d58.m1 {"to":[{"default":{"idleTimeout":"1s"},"targetRef":{"kind":"Mesh"}}]}"#,
        ]
    );
    let stored = zone.stored().await.expect("running");
    let labels: Vec<(String, BTreeMap<String, String>)> = stored
        .iter()
        .map(|r| (r.key().to_string(), r.labels()))
        .collect();
    let global_labels = BTreeMap::from([
        ("kuma.io/origin".to_string(), "global".to_string()),
        ("team".to_string(), "fake".to_string()),
    ]);
    let mut renamed = global_labels.clone();
    renamed.insert("kuma.io/display-name".to_string(), "t1".to_string());
    assert_eq!(
        labels,
        [
            ("m1.".to_string(), global_labels),
            ("t1-w2vfxzv7wfw77d58.m1".to_string(), renamed)
        ]
    );
    assert!(nacks(&server).is_empty());
}

#[tokio::test(start_paused = true)]
async fn invalid_resources_are_nacked_and_their_valid_siblings_stored() {
    let invalid = || {
        let mut nameless = mesh("x", serde_json::json!({}));
        let mut resource = kds::unpack(&nameless.entry).expect("a KumaResource");
        if let Some(meta) = resource.meta.as_mut() {
            meta.name.clear();
        }
        nameless.entry = kds::pack(&resource);
        vec![
            mesh(
                "bad",
                serde_json::json!({"mtls": {"enabledBackend": "nope"}}),
            ),
            mesh("default", serde_json::json!({})),
            nameless,
        ]
    };
    let (server, network) = global(ServingMode::Auto);
    server.set_resources(invalid(), None);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    assert_eq!(heard.changes(), ["+Mesh default. {}"], "only the valid one");
    let nacks = nacks(&server);
    assert_eq!(nacks.len(), 1, "one NACK, and nothing more for the type");
    let nack = &nacks[0];
    assert_eq!(nack.kind, RequestKind::Nack);
    assert_eq!(nack.type_url, MESH);
    assert_eq!(nack.subscription(), ["*"]);
    assert_eq!(nack.node.as_ref().map(|n| n.id.as_str()), Some(ZONE));
    let (code, message) = nack.error_detail.clone().expect("a detail");
    assert_eq!(code, tonic::Code::InvalidArgument as i32);
    for part in [
        "Mesh bad.: mtls.enabledBackend: has to be set to one of the backends in the mesh",
        "Mesh .: name: must not be empty",
    ] {
        assert!(message.contains(part), "{part:?} in {message:?}");
    }
    assert!(heard.logs().iter().any(|l| l.contains("NACK of Mesh")));

    let (server, network) = global(ServingMode::Auto);
    server.set_resources(invalid(), None);
    let (_zone, heard) = start(
        &network,
        config(ZoneDefects {
            stores_invalid: true,
            ..Default::default()
        }),
    );
    settle().await;
    assert!(super::storing::nacks(&server).is_empty(), "ACKed");
    assert_eq!(
        heard.changes().len(),
        3,
        "all stored: {:?}",
        heard.changes()
    );
}

#[tokio::test(start_paused = true)]
async fn the_first_response_is_a_full_sync_that_spares_the_zones_own() {
    for defects in [
        ZoneDefects::default(),
        ZoneDefects {
            no_full_sync_deletion: true,
            ..Default::default()
        },
        ZoneDefects {
            full_sync_deletes_zone_origin: true,
            ..Default::default()
        },
    ] {
        let (server, network) = global(ServingMode::Auto);
        server.set_resources(
            vec![
                served(TIMEOUT, KdsName::new("g1", "default"), timeout_spec()),
                served(TIMEOUT, KdsName::new("g2", "default"), timeout_spec()),
            ],
            None,
        );
        let mut config = config(defects);
        config.resources = vec![own(
            TIMEOUT,
            KdsName::new("own", "default"),
            serde_json::json!({}),
        )];
        let (zone, heard) = start(&network, config);
        settle().await;
        // The global drops the stream, and removes g2 while the zone is
        // away: the next stream's first response leaves g2 out.
        server.apply(CloseStreams {
            code: tonic::Code::Unavailable,
            message: "global restarting".into(),
        });
        server.remove_resources(TIMEOUT, &["g2.default".to_string()], None);
        tokio::time::sleep(Duration::from_secs(15)).await;
        assert_eq!(opened(&server).len(), 4, "reconnected: {defects:?}");
        let mut held: Vec<String> = zone
            .stored()
            .await
            .expect("running")
            .iter()
            .map(|r| r.key().to_string())
            .collect();
        held.sort();
        let removals: Vec<String> = heard
            .changes()
            .into_iter()
            .filter(|c| c.starts_with('-'))
            .collect();
        // The global's hash-suffixed (its auto mode, as a 2.14 global).
        let (g1, g2) = ("g1-b5297vxx59vc4z72.default", "g2-b5297fxx59vc4wdw.default");
        if defects.no_full_sync_deletion {
            assert!(removals.is_empty());
            assert_eq!(held, [g1, g2, "own.default"]);
        } else if defects.full_sync_deletes_zone_origin {
            assert_eq!(
                removals,
                [
                    "-MeshTimeout own.default".to_string(),
                    format!("-MeshTimeout {g2}")
                ],
                "the first connection's full sync took the zone's own already"
            );
            assert_eq!(held, [g1]);
            // The global no longer hears of the zone's own.
            assert!(global_view(&server, TIMEOUT).is_empty());
        } else {
            assert_eq!(removals, [format!("-MeshTimeout {g2}")]);
            assert_eq!(held, [g1, "own.default"]);
            // The global holds it under its hash-suffixed name.
            assert_eq!(
                global_view(&server, TIMEOUT),
                ["own-65vfdwwv2bbx824v.default"]
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn later_responses_add_update_and_remove_by_name_dot_mesh() {
    for removals_ignored in [false, true] {
        let (server, network) = global(ServingMode::Auto);
        server.set_resources(vec![mesh("m1", serde_json::json!({}))], None);
        let (_zone, heard) = start(
            &network,
            config(ZoneDefects {
                removals_ignored,
                ..Default::default()
            }),
        );
        settle().await;
        server.set_resources(
            vec![
                mesh("m1", serde_json::json!({"mtls": {"skipValidation": true}})),
                mesh("m2", serde_json::json!({})),
            ],
            None,
        );
        settle().await;
        server.remove_resources(MESH, &["m1.".to_string()], None);
        settle().await;
        let mut expected = vec![
            "+Mesh m1. {}",
            "+Mesh m1. {\"mtls\":{\"skipValidation\":true}}",
            "+Mesh m2. {}",
        ];
        if !removals_ignored {
            expected.push("-Mesh m1.");
        }
        assert_eq!(
            heard.changes(),
            expected,
            "removals ignored: {removals_ignored}"
        );
        assert!(nacks(&server).is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn an_equal_resource_is_no_change() {
    for equal_spec_is_a_change in [false, true] {
        let (server, network) = global(ServingMode::Auto);
        server.set_resources(
            vec![mesh(
                "m1",
                serde_json::json!({"mtls": {"skipValidation": true}}),
            )],
            None,
        );
        let (_zone, heard) = start(
            &network,
            config(ZoneDefects {
                equal_spec_is_a_change,
                ..Default::default()
            }),
        );
        settle().await;
        let again = mesh("m1", serde_json::json!({"mtls": {"skipValidation": true}}));
        let sent = server.send_kds_response(ScriptedDeltaResponse {
            type_url: MESH.into(),
            resources: vec![ScriptedDeltaResource {
                name: again.name.clone(),
                version: Some("v2".into()),
                entry: Some(again.entry),
                ttl: None,
            }],
            ..Default::default()
        });
        assert_eq!(sent, 1);
        settle().await;
        let expected = if equal_spec_is_a_change { 2 } else { 1 };
        assert_eq!(heard.changes().len(), expected, "{:?}", heard.changes());
        let last = requests(&server).pop().expect("a request");
        assert_eq!(last.kind, RequestKind::Ack, "the resend is ACKed");
    }
}

/// A spec Kuma's zone cannot decode (here a Mesh packed as a
/// `google.protobuf.Struct`, as the harness once sent) is a receive error:
/// the connection ends, no NACK (KDS-FACTS 4.8).
#[tokio::test(start_paused = true)]
async fn a_spec_not_encoded_as_kuma_encodes_it_ends_the_connection() {
    let (server, network) = global(ServingMode::Auto);
    let mut struct_spec = mesh("m1", serde_json::json!({}));
    let mut resource = kds::unpack(&struct_spec.entry).expect("a KumaResource");
    resource.spec = Some(Any {
        type_url: "type.googleapis.com/google.protobuf.Struct".into(),
        value: Vec::new(),
    });
    struct_spec.entry = kds::pack(&resource);
    server.set_resources(vec![struct_spec], None);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    assert!(nacks(&server).is_empty());
    assert!(heard.changes().is_empty());
    assert_eq!(closed(&server), CANCELLED_BY_THE_ZONE);
    assert!(
        heard
            .logs()
            .iter()
            .any(|l| l.contains("mismatched message type")),
        "{:?}",
        heard.logs()
    );
}

#[tokio::test(start_paused = true)]
async fn a_type_the_zone_does_not_consume_ends_the_connection() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    server.send_kds_response(ScriptedDeltaResponse {
        type_url: "NoSuchType".into(),
        ..Default::default()
    });
    settle().await;
    assert!(nacks(&server).is_empty());
    assert_eq!(closed(&server), CANCELLED_BY_THE_ZONE);
    assert!(
        heard
            .logs()
            .iter()
            .any(|l| l.contains("invalid resource type \"NoSuchType\"")),
        "{:?}",
        heard.logs()
    );
}
