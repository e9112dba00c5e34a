//! What the fuzz target `fake_server_requests` (`fuzz/`) and the corpus
//! replay test run: a byte string read as what clients and a scenario do
//! to one auto-mode server — requests on streams of either protocol, store
//! changes, hangs, streams ending — fed through the server's own handling
//! (`State::on_sotw_request` / `on_delta_request`, the calls the tonic
//! service makes for each decoded request), checking after each step what
//! must hold whatever a client sends. Not an API.
//!
//! Frames: `op: u8, len: u16 little-endian, payload` (a short last frame
//! takes what is left):
//! - `op & 3 == 0`: a request, `op & 4` set: a `DeltaDiscoveryRequest`,
//!   else a `DiscoveryRequest`. It goes on the open stream when that one
//!   speaks its protocol; otherwise the open stream is half-closed and a
//!   new one opens (a reconnect). An undecodable payload ends the stream
//!   as tonic's decode error does: closed by the client.
//! - `op & 3 == 1`: a store change, the payload a `DeltaDiscoveryResponse`
//!   (its `type_url`; `resources` set under their names, `removed_resources`
//!   removed; a non-empty `system_version_info` names the new version).
//! - `op & 3 == 2`: the client half-closes the open stream.
//! - `op & 3 == 3`: `Hang` (of the payload's type URL, or of every
//!   type when empty) when nothing hangs, else `Resume`.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use prost::Message;
use tokio::sync::oneshot;
use tonic::Code;
use xds_vocabulary::RequestKind;
use xds_vocabulary::resource_type::is_full_state;

use crate::config::ServingMode;
use crate::delta::DeltaStream;
use crate::effect::Verb;
use crate::event::{CLIENT_HALF_CLOSED, ServerEvent};
use crate::fault::{Hang, Resume};
use crate::outbox::{Taken, outbox};
use crate::resource::ServedResource;
use crate::sotw::SotwStream;
use crate::state::State;
use crate::stream::Stream;

/// One frame of the input (see the module's comment).
#[derive(Debug, PartialEq)]
pub enum Frame<'a> {
    Request { delta: bool, bytes: &'a [u8] },
    StoreChange(&'a [u8]),
    HalfClose,
    HangOrResume(&'a [u8]),
}

/// Splits `data` into frames.
pub fn frames(mut data: &[u8]) -> Vec<Frame<'_>> {
    let mut frames = Vec::new();
    while let Some((&op, rest)) = data.split_first() {
        let len = match rest {
            [lo, hi, ..] => usize::from(u16::from_le_bytes([*lo, *hi])),
            _ => 0,
        };
        let rest = rest.get(2..).unwrap_or_default();
        let (payload, next) = rest.split_at(len.min(rest.len()));
        frames.push(match op & 3 {
            0 => Frame::Request {
                delta: op & 4 != 0,
                bytes: payload,
            },
            1 => Frame::StoreChange(payload),
            2 => Frame::HalfClose,
            _ => Frame::HangOrResume(payload),
        });
        data = next;
    }
    frames
}

/// Encodes frames (for seed corpora): the inverse of [`frames`] for
/// payloads of at most 65,535 bytes. `None` for a longer payload.
pub fn encode(frames: &[Frame<'_>]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for frame in frames {
        let (op, payload): (u8, &[u8]) = match frame {
            Frame::Request {
                delta: false,
                bytes,
            } => (0, bytes),
            Frame::Request { delta: true, bytes } => (4, bytes),
            Frame::StoreChange(bytes) => (1, bytes),
            Frame::HalfClose => (2, &[]),
            Frame::HangOrResume(bytes) => (3, bytes),
        };
        out.push(op);
        out.extend_from_slice(&u16::try_from(payload.len()).ok()?.to_le_bytes());
        out.extend_from_slice(payload);
    }
    Some(out)
}

/// What one input exercised, so a replay can tell a corpus that reaches
/// the server's rules from one that is all noise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Played {
    /// Requests decoded and handled.
    pub requests: usize,
    /// Responses the streams received (each checked).
    pub responses: usize,
}

/// Plays `data` against a fresh auto-mode server; panics when a property
/// fails.
pub fn requests(data: &[u8]) -> Played {
    let mut run = Run::new();
    for frame in frames(data) {
        run.apply(frame);
        run.drain_and_check();
    }
    run.played
}

/// A stream's receiving end, as the client holds it.
enum Receiver {
    Sotw(Taken<DiscoveryResponse>),
    Delta(Taken<DeltaDiscoveryResponse>),
}

struct OpenStream {
    id: u64,
    receiver: Receiver,
    /// Per type URL, the nonces this stream received: what an ACK may echo.
    nonces: BTreeMap<String, BTreeSet<String>>,
    /// The type URLs the client asked for on this stream.
    requested: BTreeSet<String>,
    received: u32,
}

struct Run {
    state: State,
    open: Option<OpenStream>,
    /// Every nonce any stream received: the server's must never repeat.
    nonces: HashSet<String>,
    hung: bool,
    played: Played,
}

impl Run {
    fn new() -> Self {
        Run {
            state: State::new("fuzz".into(), ServingMode::Auto),
            open: None,
            nonces: HashSet::new(),
            hung: false,
            played: Played::default(),
        }
    }

    fn apply(&mut self, frame: Frame<'_>) {
        match frame {
            Frame::Request { delta, bytes } => self.request(delta, bytes),
            Frame::StoreChange(bytes) => {
                // Not a client's input: an undecodable change is no change.
                if let Ok(change) = DeltaDiscoveryResponse::decode(bytes) {
                    self.store_change(change);
                }
            }
            Frame::HalfClose => self.half_close(),
            Frame::HangOrResume(type_url) => {
                if self.hung {
                    Resume.apply(&mut self.state);
                } else {
                    let type_url = String::from_utf8_lossy(type_url);
                    let hang = Hang {
                        type_url: (!type_url.is_empty()).then(|| type_url.into_owned()),
                    };
                    hang.apply(&mut self.state);
                }
                self.hung = !self.hung;
            }
        }
    }

    fn store_change(&mut self, change: DeltaDiscoveryResponse) {
        let version =
            (!change.system_version_info.is_empty()).then_some(change.system_version_info);
        let set: Vec<ServedResource> = change
            .resources
            .into_iter()
            .filter_map(|r| {
                let entry = r.resource?;
                Some(ServedResource::raw(change.type_url.clone(), r.name, entry))
            })
            .collect();
        if !set.is_empty() {
            self.state.set_resources(set, version.clone());
            // Each store change sends at its own version: check what it
            // sent before the removal below moves the store on.
            self.drain_and_check();
        }
        if !change.removed_resources.is_empty() {
            self.state
                .remove_resources(&change.type_url, &change.removed_resources, version);
        }
    }

    fn half_close(&mut self) {
        if let Some(open) = self.open.take() {
            self.state
                .close_stream(open.id, Code::Ok, CLIENT_HALF_CLOSED.into(), true);
        }
    }

    fn open_stream(&mut self, delta: bool) -> &mut OpenStream {
        let speaks_delta = |open: &OpenStream| matches!(open.receiver, Receiver::Delta(_));
        if self.open.as_ref().is_some_and(|o| speaks_delta(o) != delta) {
            self.half_close();
        }
        let state = &mut self.state;
        self.open.get_or_insert_with(|| {
            // The server never stops a stream's reader here: nothing reads.
            let (stop_reader, _) = oneshot::channel();
            let (stream, receiver) = if delta {
                let (responses, rx) = outbox();
                let protocol = DeltaStream::new(responses);
                (Stream::new(protocol, stop_reader), Receiver::Delta(rx))
            } else {
                let (responses, rx) = outbox();
                let protocol = SotwStream::new(responses);
                (Stream::new(protocol, stop_reader), Receiver::Sotw(rx))
            };
            let id = state
                .open_stream(None, stream)
                .expect("the server is not shut down");
            OpenStream {
                id,
                receiver,
                nonces: BTreeMap::new(),
                requested: BTreeSet::new(),
                received: 0,
            }
        })
    }

    fn request(&mut self, delta: bool, bytes: &[u8]) {
        let id = self.open_stream(delta).id;
        let before = self.state.recording.events.len();
        let (type_url, nonce, has_error) = if delta {
            let Ok(request) = DeltaDiscoveryRequest::decode(bytes) else {
                return self.broken(id);
            };
            let seen = (
                request.type_url.clone(),
                request.response_nonce.clone(),
                request.error_detail.is_some(),
            );
            self.state.on_delta_request(id, request);
            seen
        } else {
            let Ok(request) = DiscoveryRequest::decode(bytes) else {
                return self.broken(id);
            };
            let seen = (
                request.type_url.clone(),
                request.response_nonce.clone(),
                request.error_detail.is_some(),
            );
            self.state.on_sotw_request(id, request);
            seen
        };
        let open = self.open.as_mut().expect("opened above");
        // Classified from what this stream really received, not from the
        // server's own bookkeeping.
        let received = open.nonces.get(&type_url);
        let expected = RequestKind::classify(&nonce, has_error, |n| {
            received.is_some_and(|nonces| nonces.contains(n))
        });
        match self.state.recording.events.get(before).map(|r| &r.event) {
            Some(ServerEvent::RequestReceived { stream, request }) => {
                assert_eq!(*stream, id, "recorded on another stream");
                assert_eq!(request.type_url, type_url);
                assert_eq!(request.kind, expected, "request classified wrongly");
            }
            other => panic!("a decoded request is recorded before anything else: {other:?}"),
        }
        open.requested.insert(type_url);
        self.played.requests += 1;
    }

    /// The stream's next message could not be decoded: tonic ends it, and
    /// the server records it closed by the client.
    fn broken(&mut self, id: u64) {
        self.state
            .close_stream(id, Code::Internal, "decode error".into(), true);
        self.open = None;
    }

    /// Takes every response the open stream was sent and checks each.
    fn drain_and_check(&mut self) {
        let Run {
            state,
            open,
            nonces,
            played,
            ..
        } = self;
        let Some(open) = open else {
            return;
        };
        let stream = state
            .streams
            .get(&open.id)
            .expect("only the client ends streams here");
        loop {
            let (type_url, nonce) = match &mut open.receiver {
                Receiver::Sotw(rx) => match rx.try_take() {
                    Some(Ok(response)) => {
                        check_sotw(state, stream, &response);
                        (response.type_url, response.nonce)
                    }
                    Some(Err(status)) => panic!("the server ended the stream: {status:?}"),
                    None => break,
                },
                Receiver::Delta(rx) => match rx.try_take() {
                    Some(Ok(response)) => {
                        check_delta(state, stream, &response);
                        (response.type_url, response.nonce)
                    }
                    Some(Err(status)) => panic!("the server ended the stream: {status:?}"),
                    None => break,
                },
            };
            assert!(
                open.requested.contains(&type_url),
                "a response of a type the stream never asked for"
            );
            assert!(
                !state.faults.hung.covers(&type_url),
                "a response of a hung type"
            );
            assert!(!nonce.is_empty(), "a response without a nonce");
            assert!(nonces.insert(nonce.clone()), "nonce {nonce} sent twice");
            open.nonces.entry(type_url).or_default().insert(nonce);
            open.received += 1;
            played.responses += 1;
        }
        assert_eq!(
            stream.responses_sent, open.received,
            "responses counted as sent but never received"
        );
    }
}

/// A SotW response carries current store entries the stream subscribes
/// to at the type's version; a full-state type's carries all of them.
fn check_sotw(state: &State, stream: &Stream, response: &DiscoveryResponse) {
    let type_url = &response.type_url;
    assert_eq!(response.version_info, state.store.version(type_url));
    let Some(SotwStream { types, .. }) = stream.protocol_ref() else {
        panic!("a SotW response on a delta stream");
    };
    let subscription = &types
        .get(type_url)
        .expect("a response of a type the stream asked for")
        .subscription;
    let covered: Vec<&ServedResource> = state
        .store
        .resources(type_url)
        .into_iter()
        .flat_map(|stored| stored.values())
        .filter(|resource| subscription.covers(&resource.name))
        .collect();
    for entry in &response.resources {
        assert!(
            covered.iter().any(|resource| &resource.entry == entry),
            "sent an entry that is no subscribed resource as stored"
        );
    }
    if is_full_state(type_url) {
        assert_eq!(
            response.resources.len(),
            covered.len(),
            "a full-state response carries every subscribed resource"
        );
    }
}

/// A delta response sends subscribed resources as stored, at their own
/// versions, and removes only subscribed names the store no longer holds;
/// no name twice.
fn check_delta(state: &State, stream: &Stream, response: &DeltaDiscoveryResponse) {
    let type_url = &response.type_url;
    assert_eq!(response.system_version_info, state.store.version(type_url));
    let Some(DeltaStream { types, .. }) = stream.protocol_ref() else {
        panic!("a delta response on a SotW stream");
    };
    let subscription = &types
        .get(type_url)
        .expect("a response of a type the stream asked for")
        .subscription;
    let stored = state.store.resources(type_url);
    let mut names = HashSet::new();
    for resource in &response.resources {
        let name = &resource.name;
        assert!(names.insert(name), "{name} twice in one response");
        assert!(subscription.covers(name), "sent {name}, not subscribed");
        let held = stored
            .and_then(|s| s.get(name))
            .unwrap_or_else(|| panic!("sent {name}, which the store does not hold"));
        assert_eq!(resource.resource.as_ref(), Some(&held.entry));
        assert_eq!(
            Some(resource.version.as_str()),
            state.store.resource_version(type_url, name)
        );
    }
    for name in &response.removed_resources {
        assert!(names.insert(name), "{name} sent and removed at once");
        assert!(subscription.covers(name), "removed {name}, not subscribed");
        assert!(
            !stored.is_some_and(|s| s.contains_key(name)),
            "removed {name}, which the store holds"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let frames_in = vec![
            Frame::Request {
                delta: false,
                bytes: b"ab",
            },
            Frame::Request {
                delta: true,
                bytes: b"",
            },
            Frame::StoreChange(b"xyz"),
            Frame::HalfClose,
            Frame::HangOrResume(b"t"),
        ];
        let bytes = encode(&frames_in).expect("short payloads");
        assert_eq!(frames(&bytes), frames_in);
    }

    fn store_change(type_url: &str, names: &[&str]) -> Vec<u8> {
        DeltaDiscoveryResponse {
            type_url: type_url.into(),
            resources: names
                .iter()
                .map(
                    |name| envoy_types::pb::envoy::service::discovery::v3::Resource {
                        name: name.to_string(),
                        resource: Some(envoy_types::pb::google::protobuf::Any {
                            type_url: type_url.into(),
                            value: name.as_bytes().to_vec(),
                        }),
                        ..Default::default()
                    },
                )
                .collect(),
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn a_subscription_and_its_ack_are_checked() {
        const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
        let change = store_change(CDS, &["c1", "c2"]);
        let subscribe = DiscoveryRequest {
            type_url: CDS.into(),
            resource_names: vec!["c1".into()],
            ..Default::default()
        }
        .encode_to_vec();
        // The server's first nonce is "1".
        let ack = DiscoveryRequest {
            type_url: CDS.into(),
            resource_names: vec!["c1".into()],
            response_nonce: "1".into(),
            version_info: "1".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let delta_subscribe = DeltaDiscoveryRequest {
            type_url: CDS.into(),
            resource_names_subscribe: vec!["*".into()],
            ..Default::default()
        }
        .encode_to_vec();
        let input = encode(&[
            Frame::StoreChange(&change),
            Frame::Request {
                delta: false,
                bytes: &subscribe,
            },
            Frame::Request {
                delta: false,
                bytes: &ack,
            },
            Frame::Request {
                delta: true,
                bytes: &delta_subscribe,
            },
        ])
        .expect("short payloads");
        // The SotW response (c1), nothing for the ACK, the delta one (c1, c2).
        assert_eq!(
            requests(&input),
            Played {
                requests: 3,
                responses: 2
            }
        );
    }

    #[test]
    fn an_undecodable_request_ends_the_stream() {
        let input = encode(&[Frame::Request {
            delta: false,
            bytes: &[0xff],
        }])
        .expect("short payloads");
        assert_eq!(requests(&input), Played::default());
    }

    #[test]
    fn a_short_last_frame_takes_what_is_left() {
        assert_eq!(frames(&[1, 9, 0, b'a']), vec![Frame::StoreChange(b"a")]);
        assert_eq!(frames(&[2]), vec![Frame::HalfClose]);
    }
}
