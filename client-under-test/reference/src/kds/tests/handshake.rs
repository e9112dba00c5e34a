//! The connection's opening: one connection, both RPCs, the zone's
//! headers and gzip, a `*` subscription per consumed type with Kuma's node
//! metadata, and ACKs that echo the nonce and say nothing else.

use xds_fake_server::ServingMode;
use xds_fake_server::handshake::KdsHandshake;
use xds_vocabulary::kds::{KdsRpc, metadata, types};
use xds_vocabulary::{CallService, RequestKind};

use super::*;
use crate::kds::REFERENCE_VERSION;
use crate::kds::worker::HEADER_FEATURES;

fn zones_headers(client_id: Option<&str>) -> KdsHandshake {
    KdsHandshake {
        client_id: client_id.map(str::to_string),
        kds_version: Some("v3".into()),
        features: HEADER_FEATURES.iter().map(|f| f.to_string()).collect(),
        version: Some(REFERENCE_VERSION.into()),
        gzip: true,
    }
}

#[tokio::test(start_paused = true)]
async fn one_connection_carries_both_rpcs_with_the_zones_headers_and_gzip() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    let streams = opened(&server);
    let rpcs: Vec<KdsRpc> = streams.iter().map(|(_, rpc, _)| *rpc).collect();
    assert_eq!(rpcs, [KdsRpc::GlobalToZoneSync, KdsRpc::ZoneToGlobalSync]);
    for (_, rpc, handshake) in &streams {
        assert_eq!(*handshake, zones_headers(Some(ZONE)), "{rpc}");
        assert_eq!(handshake.features, ["zone-ping-health", "hash-suffix"]);
    }
    let connections = events(&server)
        .iter()
        .filter(|(_, e)| matches!(e, ServerEvent::ConnectionAccepted { .. }))
        .count();
    assert_eq!(connections, 1);
    let lifecycle: Vec<ClientEvent> = heard.client().into_iter().map(|(_, e)| e).collect();
    assert_eq!(
        lifecycle,
        [
            ClientEvent::AdsCallStarted {
                server: GLOBAL.into(),
                service: CallService::Kds,
            },
            ClientEvent::Connected {
                server: GLOBAL.into(),
                connected: true
            },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_broken_zone_sends_no_client_id() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, _heard) = start(
        &network,
        config(ZoneDefects {
            no_client_id_header: true,
            ..Default::default()
        }),
    );
    settle().await;
    for (_, rpc, handshake) in opened(&server) {
        assert_eq!(handshake, zones_headers(None), "{rpc}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_zone_subscribes_star_to_every_consumed_type_with_kumas_node_metadata() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, _heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    let requests = requests(&server);
    let initial: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|r| r.kind == RequestKind::Initial)
        .collect();
    let order: Vec<&str> = initial.iter().map(|r| r.type_url.as_str()).collect();
    assert_eq!(
        order,
        types::GLOBAL_TO_ZONE,
        "every type, in the fixed order"
    );
    // All subscriptions go before any answer.
    assert!(
        requests[..45]
            .iter()
            .all(|r| r.kind == RequestKind::Initial)
    );
    for request in initial {
        assert_eq!(request.subscription(), ["*"]);
        assert_eq!(request.response_nonce, "");
        let node = request.node.as_ref().expect("a node");
        assert_eq!(node.id, ZONE);
        let fields = &node.metadata.as_ref().expect("metadata").fields;
        let mut keys: Vec<&str> = fields.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                metadata::CONFIG,
                metadata::CONTROL_PLANE_ID,
                metadata::FEATURES,
                metadata::VERSION
            ]
        );
        let delta = request.delta.as_ref().expect("delta");
        assert!(delta.initial_resource_versions.is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn an_ack_is_type_nonce_and_node_id_only() {
    let (server, network) = global(ServingMode::Auto);
    let (_zone, _heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    let acks: Vec<RecordedRequest> = requests(&server)
        .into_iter()
        .filter(|r| r.kind == RequestKind::Ack)
        .collect();
    assert_eq!(acks.len(), 45, "each type's first response is ACKed");
    for ack in &acks {
        assert!(!ack.response_nonce.is_empty());
        assert_eq!(ack.node.as_ref().map(|n| n.id.as_str()), Some(ZONE));
        assert_eq!(ack.node.as_ref().and_then(|n| n.metadata.as_ref()), None);
        let delta = ack.delta.as_ref().expect("delta");
        assert!(delta.subscribe.is_empty() && delta.unsubscribe.is_empty());
        assert!(ack.error_detail.is_none());
    }

    let (server, network) = global(ServingMode::Auto);
    let (_zone, _heard) = start(
        &network,
        config(ZoneDefects {
            ack_without_nonce: true,
            ..Default::default()
        }),
    );
    settle().await;
    let requests = requests(&server);
    assert!(requests.iter().all(|r| r.response_nonce.is_empty()));
    assert!(!requests.iter().any(|r| r.kind == RequestKind::Ack));
    assert_eq!(requests.len(), 90, "the ACKs went, without their nonces");
}

#[tokio::test(start_paused = true)]
async fn stopping_the_zone_cancels_both_rpcs() {
    let (server, network) = global(ServingMode::Auto);
    let (zone, _heard) = start(&network, config(ZoneDefects::default()));
    settle().await;
    assert!(closed(&server).is_empty());
    zone.shutdown();
    settle().await;
    assert_eq!(closed(&server), CANCELLED_BY_THE_ZONE);
    assert!(server.open_streams().is_empty());
}
