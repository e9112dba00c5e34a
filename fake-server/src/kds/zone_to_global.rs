//! `ZoneToGlobalSync`: the zone is the delta server and the global the
//! client. The server's requests go out on the stream (recorded as
//! `KdsRequestSent`), the zone's responses come in (recorded as
//! `KdsResponseReceived`).
//!
//! What the global sends, as Kuma's global does (`pkg/kds/v2/client`,
//! which the global runs on this stream): the first request of a type
//! subscribes `*`; an ACK is `{type_url, response_nonce}`; every request
//! names the zone (its `client-id`) as `node.id`. The faults that shape
//! responses (`hang`, `drop_responses`, `delay_responses`,
//! `close_streams_after`) shape what the global answers on
//! `GlobalToZoneSync`; the requests here go out as they are made. The
//! faults that end or stall streams and connections apply here as
//! everywhere.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use envoy_types::pb::google::rpc::Status as RpcStatus;
use tonic::Status;
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::KdsRpc;

use crate::config::{ScriptedKdsRequest, ServingMode};
use crate::event::{RecordedRequest, RecordedResponse, ServerEvent};
use crate::handshake::KdsHandshake;
use crate::outbox::Refused;
use crate::state::State;
use crate::stream::{Outgoing, Protocol, Sender, StreamKind};
use crate::subscribed::{SubscribedNames, WILDCARD};

/// The longest nonce of a zone's response the server keeps to ACK (a
/// zone's nonces are short counters or hashes); a longer one is ACKed as
/// it came but not remembered past its own ACK.
const MAX_KEPT_NONCE: usize = 256;

/// A `ZoneToGlobalSync` stream's own state.
pub(crate) struct ZoneToGlobal {
    requests: Sender<DeltaDiscoveryRequest>,
    handshake: KdsHandshake,
    /// Per Kuma type: what the global subscribes to and the zone's last
    /// response.
    types: BTreeMap<String, ZoneType>,
}

/// What the global tracks of one type on one `ZoneToGlobalSync` stream.
#[derive(Default)]
struct ZoneType {
    subscription: SubscribedNames,
    /// The nonce of the zone's last response of the type (what an ACK
    /// echoes), if short enough to keep.
    last_nonce: Option<String>,
}

impl ZoneToGlobal {
    pub fn new(requests: Sender<DeltaDiscoveryRequest>, handshake: KdsHandshake) -> Self {
        Self {
            requests,
            handshake,
            types: BTreeMap::new(),
        }
    }

    /// The zone's name as the global's requests give it (`node.id`).
    fn node(&self) -> Node {
        Node {
            id: self.handshake.client_id.clone().unwrap_or_default(),
            ..Default::default()
        }
    }
}

impl Protocol for ZoneToGlobal {
    fn kind(&self) -> StreamKind {
        StreamKind::Kds(KdsRpc::ZoneToGlobalSync)
    }

    fn opened(&self, stream: u64, connection: Option<u64>) -> ServerEvent {
        ServerEvent::KdsStreamOpened {
            stream,
            connection,
            rpc: KdsRpc::ZoneToGlobalSync,
            handshake: self.handshake.clone(),
        }
    }

    fn is_open(&self) -> bool {
        !self.requests.is_closed()
    }

    /// No response goes to a zone on this RPC: the server sends requests
    /// (`State::send_kds_request`).
    fn transmit(&self, _response: Outgoing) -> Result<(), Refused> {
        Err(Refused::Gone)
    }

    fn end(&self, status: Status) {
        self.requests.end(status);
    }

    fn abort(&self, status: Status) {
        self.requests.abort(status);
    }
}

impl State {
    /// A `ZoneToGlobalSync` stream opened: in auto mode the global
    /// subscribes `*` to each zone-origin type it is set to ask for.
    pub fn on_kds_zone_to_global_open(&mut self, stream_id: u64) {
        if self.mode != ServingMode::Auto {
            return;
        }
        for type_url in self.kds_zone_types.clone() {
            self.send_kds_request(
                stream_id,
                DeltaDiscoveryRequest {
                    type_url,
                    resource_names_subscribe: vec![WILDCARD.to_string()],
                    ..Default::default()
                },
            );
        }
    }

    /// A zone's response on `ZoneToGlobalSync`: recorded and, in auto
    /// mode, ACKed.
    pub fn on_kds_zone_response(&mut self, stream_id: u64, response: DeltaDiscoveryResponse) {
        let Some(stream) = self
            .streams
            .get_mut(&stream_id)
            .and_then(|s| s.protocol_mut::<ZoneToGlobal>())
        else {
            return;
        };
        let zone_type = stream.types.entry(response.type_url.clone()).or_default();
        zone_type.last_nonce =
            (response.nonce.len() <= MAX_KEPT_NONCE).then(|| response.nonce.clone());
        let names = response.resources.iter().map(|r| r.name.clone()).collect();
        self.record(ServerEvent::KdsResponseReceived {
            stream: stream_id,
            response: RecordedResponse::delta(&response, names),
        });
        if self.mode == ServingMode::Auto {
            self.send_kds_request(
                stream_id,
                DeltaDiscoveryRequest {
                    type_url: response.type_url,
                    response_nonce: response.nonce,
                    ..Default::default()
                },
            );
        }
    }

    /// Sends a scripted request on every open `ZoneToGlobalSync` stream;
    /// returns how many got it.
    pub fn send_kds_scripted_request(&mut self, scripted: &ScriptedKdsRequest) -> usize {
        let ids: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| s.protocol_ref::<ZoneToGlobal>().is_some())
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter(|&id| {
                let nonce = scripted.response_nonce.clone().unwrap_or_else(|| {
                    self.streams
                        .get(&id)
                        .and_then(|s| s.protocol_ref::<ZoneToGlobal>())
                        .and_then(|z| z.types.get(&scripted.type_url))
                        .and_then(|t| t.last_nonce.clone())
                        .unwrap_or_default()
                });
                let request = DeltaDiscoveryRequest {
                    type_url: scripted.type_url.clone(),
                    resource_names_subscribe: scripted.subscribe.clone(),
                    resource_names_unsubscribe: scripted.unsubscribe.clone(),
                    response_nonce: nonce,
                    error_detail: scripted
                        .error_detail
                        .as_ref()
                        .map(|(code, message)| RpcStatus {
                            code: *code,
                            message: message.clone(),
                            details: Vec::new(),
                        }),
                    ..Default::default()
                };
                self.send_kds_request(id, request)
            })
            .count()
    }

    /// Sends `request` (with the zone as its node) on one
    /// `ZoneToGlobalSync` stream and records it; false if the stream is
    /// gone.
    fn send_kds_request(&mut self, stream_id: u64, mut request: DeltaDiscoveryRequest) -> bool {
        let Some(stream) = self
            .streams
            .get_mut(&stream_id)
            .and_then(|s| s.protocol_mut::<ZoneToGlobal>())
        else {
            return false;
        };
        request.node = Some(stream.node());
        let zone_type = stream.types.entry(request.type_url.clone()).or_default();
        let subscription = &mut zone_type.subscription;
        for name in &request.resource_names_subscribe {
            if name == WILDCARD {
                subscription.set_wildcard(true);
            } else {
                subscription.insert(name);
            }
        }
        for name in &request.resource_names_unsubscribe {
            if name == WILDCARD {
                subscription.set_wildcard(false);
            } else {
                subscription.remove(name);
            }
        }
        // Against the zone's responses: the last one of the type is what
        // an ACK or a NACK names.
        let last = zone_type.last_nonce.as_deref();
        let kind = RequestKind::classify(
            &request.response_nonce,
            request.error_detail.is_some(),
            |nonce| last == Some(nonce),
        );
        let recorded = RecordedRequest::delta(&request, kind, subscription.clone());
        if let Err(refused) = stream.requests.send(request) {
            self.refused(stream_id, refused);
            return false;
        }
        self.record(ServerEvent::KdsRequestSent {
            stream: stream_id,
            request: recorded,
        });
        true
    }
}
