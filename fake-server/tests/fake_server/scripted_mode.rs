//! Scripted mode and `send_response`: the server says exactly what it is told.

use envoy_types::pb::envoy::service::discovery::v3::Resource;
use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};
use xds_fake_server::event::{RecordedResponse, ServerEvent};
use xds_fake_server::resource::ServedResource;
use xds_fake_server::{ScriptedResponse, ServingMode};
use xds_vocabulary::RequestKind;

use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_scripted_server_never_answers_by_itself() {
    let (server, network) = serving(ServingMode::Scripted);
    server.set_resources(vec![listener("a", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;

    client.request(LDS, &[], None);
    assert!(client.is_silent().await);
    server.set_resources(vec![listener("a", "2")], None);
    assert!(client.is_silent().await);

    let requests = events_only(server.events())
        .into_iter()
        .filter(|e| matches!(e, ServerEvent::RequestReceived { .. }))
        .count();
    assert_eq!(requests, 1);
    assert!(sent(&server).is_empty());
}

#[tokio::test(start_paused = true)]
async fn send_response_sends_exactly_what_it_is_given() {
    let (server, network) = serving(ServingMode::Scripted);
    // The store holds a and b; the script sends a subset, an extra that is
    // not in the store, and a duplicate.
    server.set_resources(vec![cluster("a", "1"), cluster("b", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(CDS, &["a", "b"], None);
    assert!(client.is_silent().await);

    let resources = vec![cluster("a", "1"), cluster("x", "9"), cluster("a", "1")];
    let streams = server.send_response(ScriptedResponse {
        resource_errors: Vec::new(),
        type_url: CDS.into(),
        version_info: Some("v-script".into()),
        nonce: Some("n-script".into()),
        resources: resources.clone(),
    });
    assert_eq!(streams, 1);

    let response = client.next().await;
    assert_eq!(response.version_info, "v-script");
    assert_eq!(response.nonce, "n-script");
    assert_eq!(response.type_url, CDS);
    let expected: Vec<&Any> = resources.iter().map(|r| &r.entry).collect();
    assert_eq!(entries(&response), expected);
    assert!(
        events_only(server.events()).contains(&ServerEvent::ResponseSent {
            stream: 1,
            response: RecordedResponse {
                delta: None,
                resource_errors: Vec::new(),
                bodies: resources.iter().map(|r| Some(r.entry.clone())).collect(),
                type_url: CDS.into(),
                version_info: "v-script".into(),
                nonce: "n-script".into(),
                resource_names: strings(&["a", "x", "a"]),
                encoded_len: prost::Message::encoded_len(&response),
            },
        })
    );

    // The client ACKs the scripted nonce: the server knows it sent it.
    client.request(CDS, &["a", "b"], Some(&response));
    assert!(client.is_silent().await);
    let last_kind = server
        .events()
        .into_iter()
        .rev()
        .find_map(|r| match r.event {
            ServerEvent::RequestReceived { request, .. } => Some(request.kind),
            _ => None,
        });
    assert_eq!(last_kind, Some(RequestKind::Ack));
}

#[tokio::test(start_paused = true)]
async fn send_response_defaults_to_the_store_version_and_the_next_nonce() {
    let (server, network) = serving(ServingMode::Scripted);
    server.set_resources(vec![route("r", "1")], None);
    server.set_resources(vec![route("r", "2")], None);
    let mut client = AdsStream::open_in_memory(&network).await;

    for _ in 0..2 {
        server.send_response(ScriptedResponse {
            resource_errors: Vec::new(),
            type_url: RDS.into(),
            version_info: None,
            nonce: None,
            resources: vec![route("r", "2")],
        });
    }

    let (first, second) = (client.next().await, client.next().await);
    assert_eq!(
        (first.version_info.as_str(), first.nonce.as_str()),
        ("2", "1")
    );
    assert_eq!(
        (second.version_info.as_str(), second.nonce.as_str()),
        ("2", "2")
    );
}

#[tokio::test(start_paused = true)]
async fn wrapped_and_invalid_entries_go_on_the_wire_as_given() {
    let (server, network) = serving(ServingMode::Scripted);
    let mut client = AdsStream::open_in_memory(&network).await;
    let wrapped = listener("w", "1").wrapped(Some("rv1".into()));
    let garbage = ServedResource::raw(
        LDS,
        "garbage",
        Any {
            type_url: LDS.into(),
            value: vec![0xff, 0xff, 0xff],
        },
    );
    let untyped = ServedResource::raw(
        LDS,
        "untyped",
        Any {
            type_url: String::new(),
            value: vec![],
        },
    );
    let wrong_type = ServedResource::raw(LDS, "wrong", cluster("wrong", "1").entry);

    server.send_response(ScriptedResponse {
        resource_errors: Vec::new(),
        type_url: LDS.into(),
        version_info: Some("1".into()),
        nonce: None,
        resources: vec![
            wrapped.clone(),
            garbage.clone(),
            untyped.clone(),
            wrong_type.clone(),
        ],
    });
    let response = client.next().await;

    assert_eq!(
        entries(&response),
        vec![
            &wrapped.entry,
            &garbage.entry,
            &untyped.entry,
            &wrong_type.entry
        ]
    );
    let first = &response.resources[0];
    assert_eq!(first.type_url, Resource::type_url());
    let resource = Resource::decode(first.value.as_slice()).expect("a Resource wrapper");
    assert_eq!(resource.name, "w");
    assert_eq!(resource.version, "rv1");
    assert_eq!(resource.resource.as_ref(), Some(&listener("w", "1").entry));
}

#[tokio::test(start_paused = true)]
async fn send_response_reaches_every_open_stream_with_its_own_nonce() {
    let (server, network) = serving(ServingMode::Scripted);
    let response = ScriptedResponse {
        resource_errors: Vec::new(),
        type_url: EDS.into(),
        version_info: Some("1".into()),
        nonce: None,
        resources: vec![endpoints("c", "1")],
    };
    assert_eq!(server.send_response(response.clone()), 0, "no stream yet");

    let channel = connect(&network).await.expect("connect");
    let mut one = AdsStream::open(channel.clone()).await.expect("stream 1");
    let mut two = AdsStream::open(channel).await.expect("stream 2");
    // Opening a stream waits for the server's response headers, which the
    // server sends once it has registered the stream.
    assert_eq!(server.open_streams(), vec![1, 2]);

    assert_eq!(server.send_response(response), 2);
    assert_eq!(one.next().await.nonce, "1");
    assert_eq!(two.next().await.nonce, "2");
}

#[tokio::test(start_paused = true)]
async fn a_scripted_send_in_auto_mode_does_not_move_the_auto_baseline() {
    let (server, network) = serving(ServingMode::Auto);
    server.set_resources(vec![listener("a", "1")], None);
    let mut client = AdsStream::open_in_memory(&network).await;
    client.request(LDS, &["a"], None);
    let first = client.next().await;
    client.request(LDS, &["a"], Some(&first));

    server.send_response(ScriptedResponse {
        resource_errors: Vec::new(),
        type_url: LDS.into(),
        version_info: Some("bogus".into()),
        nonce: None,
        resources: vec![listener("a", "bogus")],
    });
    let scripted = client.next().await;
    assert_eq!(entries(&scripted), vec![&listener("a", "bogus").entry]);

    // Auto mode still believes the client has a@1, so re-storing a@1 is no
    // change, and a@2 is.
    server.set_resources(vec![listener("a", "1")], None);
    assert!(client.is_silent().await);
    server.set_resources(vec![listener("a", "2")], None);
    assert_eq!(
        entries(&client.next().await),
        vec![&listener("a", "2").entry]
    );
}
