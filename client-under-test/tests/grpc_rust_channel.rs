//! grpc-rust's xDS channel (`tonic-xds` 0.1.0-alpha.4) and the bootstrap it
//! is given: why the adapter writes `http://` before a plaintext
//! `server_uri` (see `grpc_rust::with_plaintext_schemes`). Real TCP on
//! loopback: tonic-xds has no other transport.

use std::time::Duration;

use serde_json::json;
use tokio::net::TcpListener;
use tonic_xds::{BootstrapConfig, XdsChannelBuilder, XdsChannelConfig, XdsUri};
use xds_client_under_test::grpc_rust::with_plaintext_schemes;

fn bootstrap(server_uri: &str) -> String {
    json!({
        "xds_servers": [{"server_uri": server_uri, "channel_creds": [{"type": "insecure"}]}],
        "node": {"id": "node-1"},
    })
    .to_string()
}

/// Builds a channel for `xds:///svc` (tonic-xds subscribes to the Listener
/// at once) and says whether it reaches `listener` within `wait`.
async fn connects(listener: &TcpListener, bootstrap_json: &str, wait: Duration) -> bool {
    let bootstrap = BootstrapConfig::from_json(bootstrap_json).expect("tonic-xds takes it");
    let target = XdsUri::parse("xds:///svc").expect("a target");
    let _channel = XdsChannelBuilder::new(XdsChannelConfig::new(target).with_bootstrap(bootstrap))
        .build_grpc_channel()
        .expect("a channel");
    tokio::time::timeout(wait, listener.accept()).await.is_ok()
}

/// The evidence for the rewrite: with the bootstrap as gRFC A27 writes it
/// (`host:port`, insecure), tonic-xds never opens a connection (every
/// attempt fails in hyper-util's HttpConnector: "invalid URL, scheme is
/// missing"); with `http://host:port` it connects at once. When a tonic-xds
/// release connects with the first, this test fails: drop the rewrite.
#[tokio::test]
async fn a_plaintext_server_uri_needs_a_scheme() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = listener.local_addr().expect("an address").to_string();
    let verbatim = bootstrap(&address);
    // Two of its retries (1 s backoff, +-20 %) fit in 2.5 s.
    assert!(
        !connects(&listener, &verbatim, Duration::from_millis(2500)).await,
        "tonic-xds now reaches a scheme-less plaintext server_uri: the adapter's rewrite can go"
    );
    let rewritten = with_plaintext_schemes(&verbatim);
    assert!(
        connects(&listener, &rewritten, Duration::from_secs(30)).await,
        "tonic-xds did not connect with {rewritten}"
    );
}

#[test]
fn only_scheme_less_plaintext_uris_are_rewritten() {
    let original = json!({
        "xds_servers": [
            {"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]},
            {"server_uri": "127.0.0.1:2", "channel_creds": [{"type": "tls", "config": {}}]},
            {"server_uri": "http://127.0.0.1:3", "channel_creds": [{"type": "insecure"}]},
        ],
        "authorities": {
            "a.example": {"xds_servers": [
                {"server_uri": "127.0.0.1:4", "channel_creds": [{"type": "insecure"}]},
            ]},
            "b.example": {},
        },
        "node": {"id": "node-1"},
    });
    let rewritten: serde_json::Value =
        serde_json::from_str(&with_plaintext_schemes(&original.to_string())).expect("JSON");
    let uri = |pointer: &str| {
        rewritten
            .pointer(pointer)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    assert_eq!(
        uri("/xds_servers/0/server_uri").as_deref(),
        Some("http://127.0.0.1:1")
    );
    assert_eq!(
        uri("/xds_servers/1/server_uri").as_deref(),
        Some("127.0.0.1:2")
    );
    assert_eq!(
        uri("/xds_servers/2/server_uri").as_deref(),
        Some("http://127.0.0.1:3")
    );
    assert_eq!(
        uri("/authorities/a.example/xds_servers/0/server_uri").as_deref(),
        Some("http://127.0.0.1:4")
    );
    assert_eq!(rewritten["node"], original["node"]);
    assert_eq!(with_plaintext_schemes("not json"), "not json");
}
