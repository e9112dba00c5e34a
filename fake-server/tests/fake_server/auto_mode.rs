//! Auto mode: the server behaves like a normal SotW control plane.

use xds_fake_server::ServingMode;
use xds_fake_server::event::ServerEvent;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn lds_wildcard_gets_every_listener_with_version_and_nonce() {
    let (server, network) = serving(ServingMode::Auto);
    let a = listener("a", "1");
    let b = listener("b", "1");
    server.set_resources(vec![b.clone(), a.clone()], None);
    let mut client = AdsStream::open_in_memory(&network).await;

    client.request(LDS, &[], None);
    let response = client.next().await;

    assert_eq!(response.type_url, LDS);
    assert_eq!(response.version_info, "1");
    assert_eq!(response.nonce, "1");
    assert_eq!(entries(&response), vec![&a.entry, &b.entry]);
}

#[tokio::test(start_paused = true)]
async fn cds_named_subscription_gets_only_the_named_clusters() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(
        vec![cluster("a", "1"), cluster("b", "1"), cluster("c", "1")],
        None,
    );
    let mut client = AdsStream::open_in_memory(&network).await;

    client.request(CDS, &["c", "a", "missing"], None);
    let response = client.next().await;

    assert_eq!(
        entries(&response),
        vec![&cluster("a", "1").entry, &cluster("c", "1").entry]
    );
}

#[tokio::test(start_paused = true)]
async fn lds_change_resends_the_full_state() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("a", "1"), listener("b", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(LDS, &["a", "b"], None);
    let first = client.next().await;
    client.request(LDS, &["a", "b"], Some(&first));
    assert!(client.is_silent().await, "an ACK changes nothing");

    server.set_resources(vec![listener("b", "2")], None);
    let pushed = client.next().await;

    assert_eq!(pushed.version_info, "2");
    assert_eq!(
        entries(&pushed),
        vec![&listener("a", "1").entry, &listener("b", "2").entry],
        "full state: the unchanged listener comes along"
    );
}

#[tokio::test(start_paused = true)]
async fn lds_deletion_sends_the_remaining_listeners() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("a", "1"), listener("b", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(LDS, &[], None);
    let first = client.next().await;
    client.request(LDS, &[], Some(&first));

    server.remove_resources(LDS, &strings(&["a"]), None);
    let pushed = client.next().await;

    assert_eq!(pushed.version_info, "2");
    assert_eq!(entries(&pushed), vec![&listener("b", "1").entry]);
}

#[tokio::test(start_paused = true)]
async fn cds_deleting_the_last_cluster_sends_an_empty_response() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("a", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &["a"], None);
    let first = client.next().await;
    client.request(CDS, &["a"], Some(&first));

    server.remove_resources(CDS, &strings(&["a"]), Some("gone".into()));
    let pushed = client.next().await;

    assert_eq!(pushed.version_info, "gone");
    assert!(pushed.resources.is_empty());
}

#[tokio::test(start_paused = true)]
async fn cds_pure_unsubscription_gets_no_response_and_resubscription_resends() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![cluster("a", "1"), cluster("b", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &["a", "b"], None);
    let first = client.next().await;

    client.request(CDS, &["a"], Some(&first));
    assert!(client.is_silent().await);

    client.request(CDS, &["a", "b"], Some(&first));
    let again = client.next().await;
    assert_eq!(
        entries(&again),
        vec![&cluster("a", "1").entry, &cluster("b", "1").entry]
    );
}

#[tokio::test(start_paused = true)]
async fn rds_sends_only_new_or_changed_routes() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![route("r1", "1"), route("r2", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(RDS, &["r1", "r2"], None);
    let first = client.next().await;
    assert_eq!(first.resources.len(), 2);
    client.request(RDS, &["r1", "r2"], Some(&first));

    server.set_resources(vec![route("r2", "2")], None);
    let pushed = client.next().await;
    assert_eq!(entries(&pushed), vec![&route("r2", "2").entry]);

    client.request(RDS, &["r1", "r2", "r3"], Some(&pushed));
    assert!(client.is_silent().await, "r3 does not exist yet");
    server.set_resources(vec![route("r3", "1")], None);
    let added = client.next().await;
    assert_eq!(entries(&added), vec![&route("r3", "1").entry]);
}

#[tokio::test(start_paused = true)]
async fn eds_empty_names_mean_nothing() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![endpoints("c1", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;

    client.request(EDS, &[], None);

    assert!(client.is_silent().await);
    server.set_resources(vec![endpoints("c1", "2")], None);
    assert!(client.is_silent().await, "not subscribed to anything");
}

#[tokio::test(start_paused = true)]
async fn eds_deletion_is_silent_and_a_readded_resource_is_sent_again() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![endpoints("c1", "1"), endpoints("c2", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(EDS, &["c1", "c2"], None);
    let first = client.next().await;
    client.request(EDS, &["c1", "c2"], Some(&first));

    server.remove_resources(EDS, &strings(&["c2"]), None);
    assert!(client.is_silent().await);

    server.set_resources(vec![endpoints("c2", "1")], None);
    let pushed = client.next().await;
    assert_eq!(entries(&pushed), vec![&endpoints("c2", "1").entry]);
}

#[tokio::test(start_paused = true)]
async fn a_nack_gets_no_resend() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("a", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(LDS, &["a"], None);
    let first = client.next().await;

    client.nack(&["a"], &first);

    assert!(client.is_silent().await);
    // A later fix is pushed as usual.
    server.set_resources(vec![listener("a", "2")], None);
    assert_eq!(
        entries(&client.next().await),
        vec![&listener("a", "2").entry]
    );
}

#[tokio::test(start_paused = true)]
async fn an_unchanged_request_gets_no_response() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![route("r1", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(RDS, &["r1"], None);
    let first = client.next().await;

    client.request(RDS, &["r1"], Some(&first));
    client.request(RDS, &["r1"], Some(&first));

    assert!(client.is_silent().await);
    assert_eq!(sent(&server).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_store_change_is_pushed_to_every_subscribed_stream_in_stream_order() {
    let (server, network) = serving(ServingMode::Auto);
    let channel = connect(&network).await.expect("connect");
    let mut one = AdsStream::open(channel.clone()).await.expect("stream 1");
    let mut two = AdsStream::open(channel.clone()).await.expect("stream 2");
    let mut other = AdsStream::open(channel).await.expect("stream 3");
    one.request(CDS, &[], None);
    two.request(CDS, &["c"], None);
    other.request(LDS, &[], None);
    // A first wildcard request is answered even with nothing stored (as
    // go-control-plane answers it: Envoy waits for it); a name is not.
    assert!(entries(&one.next().await).is_empty());
    assert!(entries(&other.next().await).is_empty());
    assert!(one.is_silent().await, "nothing stored yet");
    assert!(two.is_silent().await, "nothing stored yet");

    server.set_resources(vec![cluster("c", "1")], None);

    let (r1, r2) = (one.next().await, two.next().await);
    assert_eq!(entries(&r1), vec![&cluster("c", "1").entry]);
    assert_eq!(entries(&r2), vec![&cluster("c", "1").entry]);
    assert_eq!((r1.nonce.as_str(), r2.nonce.as_str()), ("3", "4"));
    assert!(
        other.is_silent().await,
        "a stream that never asked for CDS gets none"
    );
    assert_eq!(
        sent(&server),
        vec![
            (1, CDS.to_string(), strings(&[])),
            (3, LDS.to_string(), strings(&[])),
            (1, CDS.to_string(), strings(&["c"])),
            (2, CDS.to_string(), strings(&["c"])),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_explicit_version_is_the_response_version() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(
        vec![listener("a", "1"), cluster("c", "1")],
        Some("v42".into()),
    );
    let mut client = AdsStream::open_in_memory(&network).await;

    client.request(CDS, &[], None);

    assert_eq!(client.next().await.version_info, "v42");
    assert_eq!(server.type_version(LDS), "v42");
    let changes: Vec<_> = events_only(server.events())
        .into_iter()
        .filter(|e| matches!(e, ServerEvent::ResourcesChanged { .. }))
        .collect();
    assert_eq!(
        changes,
        vec![
            ServerEvent::ResourcesChanged {
                type_url: CDS.into(),
                version: "v42".into(),
                updated: strings(&["c"]),
                removed: vec![],
            },
            ServerEvent::ResourcesChanged {
                type_url: LDS.into(),
                version: "v42".into(),
                updated: strings(&["a"]),
                removed: vec![],
            },
        ],
        "one change per type, in type URL order"
    );
}

#[tokio::test(start_paused = true)]
async fn resource_names_reflect_the_store() {
    let server = server(ServingMode::Auto);
    server.set_resources(vec![route("b", "1"), route("a", "1")], None);
    server.remove_resources(RDS, &strings(&["b"]), None);
    assert_eq!(server.resource_names(RDS), strings(&["a"]));
    assert_eq!(server.type_version(RDS), "2");
    assert!(server.resource_names(LDS).is_empty());
}
