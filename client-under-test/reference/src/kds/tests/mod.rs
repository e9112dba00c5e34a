//! The zone against a real fake global (`xds_fake_server`) over the
//! in-memory network, on tokio's paused clock: what the global records
//! is what went over the wire, what the observer heard is what the zone
//! reports. One file per part of the protocol; each rule's test also
//! shows that its broken zone (`ZoneDefects`) breaks it.

mod handshake;
mod reconnect;
mod storing;
mod zone_to_global;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use xds_fake_server::event::{RecordedRequest, RecordedResponse, ServerEvent};
use xds_fake_server::handshake::KdsHandshake;
use xds_fake_server::resource::ServedResource;
use xds_fake_server::{FakeAdsServer, ServerConfig, ServingMode};
use xds_vocabulary::AdsProtocol;
use xds_vocabulary::kds::spec;
use xds_vocabulary::kds::{self, KdsName, KdsResource, KdsRpc, ZoneStoreChange, kuma_resource};
use xds_vocabulary::network::MemoryNetwork;

use super::{KdsZone, KdsZoneConfig, ZoneObserver};
use crate::bootstrap::{ChannelCreds, XdsServerConfig};
use crate::observer::ClientEvent;
use crate::profile::ZoneDefects;

pub(super) const GLOBAL: &str = "global:5685";
pub(super) const ZONE: &str = "zone-1";

/// Long enough for every message in flight to arrive: under paused time
/// the clock jumps only once everything is idle.
pub(super) async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

pub(super) fn global(mode: ServingMode) -> (FakeAdsServer, MemoryNetwork) {
    let network = MemoryNetwork::new();
    let server = FakeAdsServer::new(ServerConfig {
        name: "global".into(),
        mode,
    });
    server
        .serve_in_memory(&network, GLOBAL)
        .expect("serve in memory");
    (server, network)
}

pub(super) fn config(defects: ZoneDefects) -> KdsZoneConfig {
    let global = XdsServerConfig {
        server_uri: GLOBAL.into(),
        channel_creds: ChannelCreds::Insecure,
        server_features: Vec::new(),
        protocol: AdsProtocol::Delta,
    };
    KdsZoneConfig {
        rng_seed: 7,
        defects,
        ..KdsZoneConfig::new(ZONE, global)
    }
}

/// What the zone told its observer, with when.
#[derive(Default)]
pub(super) struct Heard {
    events: Mutex<Vec<(Instant, Event)>>,
}

#[derive(Clone, Debug)]
pub(super) enum Event {
    Store(ZoneStoreChange),
    Client(ClientEvent),
}

impl ZoneObserver for Heard {
    fn on_store_change(&self, change: ZoneStoreChange) {
        self.push(Event::Store(change));
    }

    fn on_client_event(&self, event: ClientEvent) {
        self.push(Event::Client(event));
    }
}

impl Heard {
    fn push(&self, event: Event) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((Instant::now(), event));
    }

    fn all(&self) -> Vec<(Instant, Event)> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Store changes as `+Mesh m1. {spec}` and `-Mesh m1.`.
    pub fn changes(&self) -> Vec<String> {
        self.all()
            .into_iter()
            .filter_map(|(_, e)| match e {
                Event::Store(ZoneStoreChange::Stored {
                    kuma_type,
                    name,
                    spec,
                    ..
                }) => Some(format!("+{kuma_type} {name} {spec}")),
                Event::Store(ZoneStoreChange::Removed {
                    kuma_type, name, ..
                }) => Some(format!("-{kuma_type} {name}")),
                Event::Client(_) => None,
            })
            .collect()
    }

    pub fn client(&self) -> Vec<(Instant, ClientEvent)> {
        self.all()
            .into_iter()
            .filter_map(|(at, e)| match e {
                Event::Client(event) => Some((at, event)),
                Event::Store(_) => None,
            })
            .collect()
    }

    pub fn logs(&self) -> Vec<String> {
        self.client()
            .into_iter()
            .filter_map(|(_, e)| match e {
                ClientEvent::Log { message, .. } => Some(message),
                _ => None,
            })
            .collect()
    }

    pub fn retry_delays(&self) -> Vec<Duration> {
        self.client()
            .into_iter()
            .filter_map(|(_, e)| match e {
                ClientEvent::RetryScheduled { delay, .. } => Some(delay),
                _ => None,
            })
            .collect()
    }
}

pub(super) fn start(network: &MemoryNetwork, config: KdsZoneConfig) -> (KdsZone, Arc<Heard>) {
    let heard = Arc::new(Heard::default());
    let zone = KdsZone::start(config, Arc::new(network.clone()), heard.clone()).expect("starts");
    (zone, heard)
}

/// A global-origin resource as the global serves it, its spec a JSON
/// object.
pub(super) fn served(kuma_type: &str, key: KdsName, spec: serde_json::Value) -> ServedResource {
    let labels = BTreeMap::from([
        ("kuma.io/origin".to_string(), "global".to_string()),
        ("team".to_string(), "fake".to_string()),
    ]);
    let spec = spec.as_object().expect("an object").clone();
    let packed = spec::pack(kuma_type, &spec).expect("the spec fits the type");
    let resource = kuma_resource(&key, labels, Some(packed));
    ServedResource::raw(kuma_type, key.to_string(), kds::pack(&resource))
}

/// A zone-origin resource as the harness hands it.
pub(super) fn own(kuma_type: &str, key: KdsName, spec: serde_json::Value) -> KdsResource {
    let spec = spec.as_object().expect("an object").clone();
    KdsResource {
        kuma_type: kuma_type.into(),
        resource: kuma_resource(
            &key,
            BTreeMap::from([("team".to_string(), "zone".to_string())]),
            Some(spec::pack(kuma_type, &spec).expect("the spec fits the type")),
        ),
    }
}

pub(super) fn events(server: &FakeAdsServer) -> Vec<(Instant, ServerEvent)> {
    server
        .events()
        .into_iter()
        .map(|r| (r.at, r.event))
        .collect()
}

/// The zone's requests on `GlobalToZoneSync`.
pub(super) fn requests(server: &FakeAdsServer) -> Vec<RecordedRequest> {
    events(server)
        .into_iter()
        .filter_map(|(_, e)| match e {
            ServerEvent::RequestReceived { request, .. } => Some(request),
            _ => None,
        })
        .collect()
}

/// The zone's responses on `ZoneToGlobalSync`, of one type.
pub(super) fn zone_responses(server: &FakeAdsServer, kuma_type: &str) -> Vec<RecordedResponse> {
    events(server)
        .into_iter()
        .filter_map(|(_, e)| match e {
            ServerEvent::KdsResponseReceived { response, .. } if response.type_url == kuma_type => {
                Some(response)
            }
            _ => None,
        })
        .collect()
}

/// What the global was told of the zone's `kuma_type` on the latest
/// `ZoneToGlobalSync` stream: its responses folded, names only.
pub(super) fn global_view(server: &FakeAdsServer, kuma_type: &str) -> Vec<String> {
    let responses: Vec<(u64, RecordedResponse)> = events(server)
        .into_iter()
        .filter_map(|(_, e)| match e {
            ServerEvent::KdsResponseReceived { stream, response }
                if response.type_url == kuma_type =>
            {
                Some((stream, response))
            }
            _ => None,
        })
        .collect();
    let latest = responses.iter().map(|(s, _)| *s).max();
    let mut view = std::collections::BTreeSet::new();
    for (_, response) in responses.iter().filter(|(s, _)| Some(*s) == latest) {
        view.extend(response.resource_names.iter().cloned());
        for removed in &response.delta.as_ref().expect("delta").removed_resources {
            view.remove(removed);
        }
    }
    view.into_iter().collect()
}

/// Each KDS stream opened: when, which RPC, the zone's headers.
pub(super) fn opened(server: &FakeAdsServer) -> Vec<(Instant, KdsRpc, KdsHandshake)> {
    events(server)
        .into_iter()
        .filter_map(|(at, e)| match e {
            ServerEvent::KdsStreamOpened { rpc, handshake, .. } => Some((at, rpc, handshake)),
            _ => None,
        })
        .collect()
}

/// Both RPCs as the fake global records the zone cancelling them: the
/// zone resets each with RST_STREAM(CANCEL), as Kuma's does, and a
/// grpc-go global sees CANCELLED (a half-close would be OK).
pub(super) const CANCELLED_BY_THE_ZONE: [(bool, tonic::Code); 2] = [
    (true, tonic::Code::Cancelled),
    (true, tonic::Code::Cancelled),
];

/// Streams closed: (by the client, code).
pub(super) fn closed(server: &FakeAdsServer) -> Vec<(bool, tonic::Code)> {
    events(server)
        .into_iter()
        .filter_map(|(_, e)| match e {
            ServerEvent::StreamClosed {
                by_client, code, ..
            } => Some((by_client, code)),
            _ => None,
        })
        .collect()
}
