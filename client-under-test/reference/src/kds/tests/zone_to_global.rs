//! `ZoneToGlobalSync`: the zone answers the global's `*` subscriptions
//! from its own resources, labelled with its zone, then sends only what
//! changed; a NACK from the global sends nothing until the next change.

use xds_fake_server::{ScriptedKdsRequest, ServingMode};
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::types;

use super::*;

const DP: &str = types::DATAPLANE;

fn dataplane(name: &str, port: u64) -> KdsResource {
    own(
        DP,
        KdsName::new(name, "default"),
        serde_json::json!({"networking": {"address": "10.0.0.1", "inbound": [{"port": port}]}}),
    )
}

/// The labels of each resource of a recorded response.
fn labels_of(response: &RecordedResponse) -> Vec<BTreeMap<String, String>> {
    response
        .bodies
        .iter()
        .map(|body| {
            let any = body.as_ref().expect("a body");
            let resource = kds::unpack(any).expect("a KumaResource");
            resource.meta.expect("meta").labels
        })
        .collect()
}

fn removed(response: &RecordedResponse) -> &[String] {
    &response.delta.as_ref().expect("delta").removed_resources
}

#[tokio::test(start_paused = true)]
async fn the_zone_answers_each_subscription_at_once_with_its_own_labelled() {
    let (server, network) = global(ServingMode::Auto);
    let mut config = config(ZoneDefects::default());
    config.resources = vec![dataplane("dp-1", 80), dataplane("dp-2", 80)];
    let (_zone, _heard) = start(&network, config);
    settle().await;
    let answers: Vec<RecordedResponse> = events(&server)
        .into_iter()
        .filter_map(|(_, e)| match e {
            ServerEvent::KdsResponseReceived { response, .. } => Some(response),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), types::ZONE_TO_GLOBAL.len(), "one per type");
    let nonces: Vec<String> = answers.iter().map(|r| r.nonce.clone()).collect();
    let counted: Vec<String> = (1..=answers.len()).map(|n| n.to_string()).collect();
    assert_eq!(nonces, counted);
    for answer in &answers {
        assert_eq!(answer.version_info, "");
        if answer.type_url != DP {
            assert!(answer.resource_names.is_empty(), "{}", answer.type_url);
        }
    }
    let dataplanes = zone_responses(&server, DP);
    assert_eq!(
        dataplanes[0].resource_names,
        [
            "dp-1-dff6z597w47d46xx.default",
            "dp-2-xw6954dw4969cdfz.default"
        ]
    );
    for (mut labels, name) in labels_of(&dataplanes[0]).into_iter().zip(["dp-1", "dp-2"]) {
        // The name it was given, beside the hash-suffixed one.
        assert_eq!(labels.remove("kuma.io/display-name").as_deref(), Some(name));
        assert_eq!(
            labels,
            BTreeMap::from([
                ("kuma.io/origin".to_string(), "zone".to_string()),
                ("kuma.io/zone".to_string(), ZONE.to_string()),
                ("team".to_string(), "zone".to_string()),
            ])
        );
    }
    let versions: Vec<&str> = dataplanes[0]
        .delta
        .as_ref()
        .expect("delta")
        .resources
        .iter()
        .map(|r| r.version.as_str())
        .collect();
    assert!(versions.iter().all(|v| v.len() == 16) && versions[0] != versions[1]);
}

#[tokio::test(start_paused = true)]
async fn a_broken_zone_leaves_out_its_labels() {
    let (server, network) = global(ServingMode::Auto);
    let mut config = config(ZoneDefects {
        no_zone_labels: true,
        ..Default::default()
    });
    config.resources = vec![dataplane("dp-1", 80)];
    let (_zone, _heard) = start(&network, config);
    settle().await;
    let labels = labels_of(&zone_responses(&server, DP)[0]);
    assert_eq!(
        labels,
        [BTreeMap::from([
            ("kuma.io/display-name".to_string(), "dp-1".to_string()),
            ("team".to_string(), "zone".to_string())
        ])]
    );
}

#[tokio::test(start_paused = true)]
async fn the_zone_sends_only_what_changed() {
    for sends_every_zone_resource in [false, true] {
        let (server, network) = global(ServingMode::Auto);
        let mut config = config(ZoneDefects {
            sends_every_zone_resource,
            ..Default::default()
        });
        config.resources = vec![dataplane("dp-1", 80), dataplane("dp-2", 80)];
        let (zone, _heard) = start(&network, config);
        settle().await;
        zone.put(vec![dataplane("dp-1", 81)]).await.expect("put");
        settle().await;
        zone.put(vec![dataplane("dp-1", 81)]).await.expect("put");
        settle().await;
        zone.put(vec![dataplane("dp-3", 80)]).await.expect("put");
        settle().await;
        zone.remove(DP, &[KdsName::new("dp-2", "default")])
            .await
            .expect("remove");
        settle().await;
        // Not a type the global subscribed to: nothing goes.
        zone.put(vec![own(
            types::MESH,
            KdsName::global("m"),
            serde_json::json!({}),
        )])
        .await
        .expect("put");
        settle().await;
        let sent: Vec<(Vec<String>, Vec<String>)> = zone_responses(&server, DP)
            .iter()
            .map(|r| (r.resource_names.clone(), removed(r).to_vec()))
            .collect();
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let expected = if sends_every_zone_resource {
            vec![
                (
                    names(&[
                        "dp-1-dff6z597w47d46xx.default",
                        "dp-2-xw6954dw4969cdfz.default",
                    ]),
                    names(&[]),
                ),
                (
                    names(&[
                        "dp-1-dff6z597w47d46xx.default",
                        "dp-2-xw6954dw4969cdfz.default",
                    ]),
                    names(&[]),
                ),
                (
                    names(&[
                        "dp-1-dff6z597w47d46xx.default",
                        "dp-2-xw6954dw4969cdfz.default",
                        "dp-3-28z89w8xx4wwxxbb.default",
                    ]),
                    names(&[]),
                ),
                (
                    names(&[
                        "dp-1-dff6z597w47d46xx.default",
                        "dp-3-28z89w8xx4wwxxbb.default",
                    ]),
                    names(&["dp-2-xw6954dw4969cdfz.default"]),
                ),
            ]
        } else {
            vec![
                (
                    names(&[
                        "dp-1-dff6z597w47d46xx.default",
                        "dp-2-xw6954dw4969cdfz.default",
                    ]),
                    names(&[]),
                ),
                (names(&["dp-1-dff6z597w47d46xx.default"]), names(&[])),
                (names(&["dp-3-28z89w8xx4wwxxbb.default"]), names(&[])),
                (names(&[]), names(&["dp-2-xw6954dw4969cdfz.default"])),
            ]
        };
        assert_eq!(
            sent, expected,
            "every resource: {sends_every_zone_resource}"
        );
        assert!(zone_responses(&server, types::MESH).is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn after_a_nack_from_the_global_nothing_goes_until_the_next_change() {
    for resends_after_nack in [false, true] {
        let (server, network) = global(ServingMode::Scripted);
        let mut config = config(ZoneDefects {
            resends_after_nack,
            ..Default::default()
        });
        config.resources = vec![dataplane("dp-1", 80)];
        let (zone, heard) = start(&network, config);
        settle().await;
        let asked = server.send_kds_request(ScriptedKdsRequest {
            type_url: DP.into(),
            subscribe: vec!["*".into()],
            ..Default::default()
        });
        assert_eq!(asked, 1);
        settle().await;
        // Unanswered: a change waits for the global's answer.
        zone.put(vec![dataplane("dp-2", 80)]).await.expect("put");
        settle().await;
        assert_eq!(zone_responses(&server, DP).len(), 1);
        server.send_kds_request(ScriptedKdsRequest {
            type_url: DP.into(),
            error_detail: Some((3, "dp-1.default: bad".into())),
            ..Default::default()
        });
        settle().await;
        assert!(
            heard
                .logs()
                .iter()
                .any(|l| l.contains("NACKed Dataplane") && l.contains("dp-1.default: bad")),
            "{:?}",
            heard.logs()
        );
        let sent: Vec<Vec<String>> = zone_responses(&server, DP)
            .iter()
            .map(|r| r.resource_names.clone())
            .collect();
        let kinds: Vec<RequestKind> = events(&server)
            .into_iter()
            .filter_map(|(_, e)| match e {
                ServerEvent::KdsRequestSent { request, .. } => Some(request.kind),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, [RequestKind::Initial, RequestKind::Nack]);
        if resends_after_nack {
            assert_eq!(
                sent,
                [
                    vec!["dp-1-dff6z597w47d46xx.default"],
                    vec![
                        "dp-1-dff6z597w47d46xx.default",
                        "dp-2-xw6954dw4969cdfz.default"
                    ]
                ]
            );
        } else {
            // dp-2 changed while the response was unanswered: it goes
            // now, and only it.
            assert_eq!(
                sent,
                [
                    vec!["dp-1-dff6z597w47d46xx.default"],
                    vec!["dp-2-xw6954dw4969cdfz.default"]
                ]
            );
            server.send_kds_request(ScriptedKdsRequest {
                type_url: DP.into(),
                error_detail: Some((3, "dp-2.default: bad".into())),
                ..Default::default()
            });
            settle().await;
            assert_eq!(zone_responses(&server, DP).len(), 2, "nothing more");
            zone.put(vec![dataplane("dp-2", 81)]).await.expect("put");
            settle().await;
            assert_eq!(zone_responses(&server, DP).len(), 3, "the next change");
        }
    }
}

/// Kuma's KDS refresh interval: the zone publishes its own resources on a
/// tick, from the global's first request; what changes between two ticks
/// goes in one response, nothing before the tick. The broken zone that
/// ignores the interval sends each change at once.
#[tokio::test(start_paused = true)]
async fn with_a_refresh_interval_changes_wait_for_the_tick_and_go_together() {
    for ignores in [false, true] {
        let (server, network) = global(ServingMode::Auto);
        let mut config = config(ZoneDefects {
            ignores_refresh_interval: ignores,
            ..Default::default()
        });
        config.resources = vec![dataplane("dp-1", 80)];
        config.refresh_interval = Some(Duration::from_secs(5));
        let (zone, _heard) = start(&network, config);
        settle().await;
        // The first tick answers the subscription at once.
        let first = zone_responses(&server, DP);
        assert_eq!(first.len(), 1, "ignores {ignores}");
        zone.put(vec![dataplane("dp-2", 80)]).await.expect("put");
        settle().await;
        zone.put(vec![dataplane("dp-3", 80)]).await.expect("put");
        settle().await;
        let before_the_tick = zone_responses(&server, DP).len();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let sent: Vec<Vec<String>> = zone_responses(&server, DP)
            .into_iter()
            .map(|r| r.resource_names)
            .collect();
        let display = |names: &[String]| -> Vec<String> {
            names
                .iter()
                .map(|n| n.split('-').take(2).collect::<Vec<_>>().join("-"))
                .collect()
        };
        if ignores {
            assert_eq!(before_the_tick, 3, "each change at once");
        } else {
            assert_eq!(before_the_tick, 1, "nothing before the tick");
            assert_eq!(sent.len(), 2, "{sent:?}");
            assert_eq!(display(&sent[1]), ["dp-2", "dp-3"], "{sent:?}");
        }
    }
}
