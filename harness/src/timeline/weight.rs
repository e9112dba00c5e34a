//! How many bytes a recorded event keeps alive: what bounds a timeline in
//! memory, not only in events. A client reconnecting as fast as it can,
//! each stream opened with a node of a megabyte, stays far under the event
//! cap and would still take gigabytes.
//!
//! An estimate from above of what an event owns: its inline size, every
//! string and list it holds, a node by its encoded size. A delta request's
//! subscription is shared with the server and with every later request
//! that left it unchanged, so it is counted once, by the caller (see
//! [`delta_subscription`]).

use std::mem::size_of;
use std::sync::Arc;

use prost::Message;
use xds_fake_server::event::{RecordedRequest, RecordedResponse, ServerEvent};

use super::{EventKind, Source, TimelineEvent, describe};

/// A `String` or `Vec` element's inline size plus its heap bytes.
fn string(s: &str) -> usize {
    size_of::<String>() + s.len()
}

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> usize {
    items.into_iter().map(|s| string(s)).sum()
}

/// Bytes `event` holds, its delta subscription left out.
pub fn weight(event: &TimelineEvent) -> usize {
    let source = match &event.source {
        Source::Server(name) | Source::Backend(name) | Source::Scaffold(name) => name.len(),
        _ => 0,
    };
    size_of::<TimelineEvent>() + source + kind(&event.kind)
}

fn kind(kind: &EventKind) -> usize {
    match kind {
        EventKind::Step(text) | EventKind::Note(text) => text.len(),
        EventKind::Barrier => 0,
        EventKind::Server(event) => size_of::<ServerEvent>() + server(event),
        // What a client, a CSDS poll, an RPC or a backend reported is all
        // in the line it renders as (names, addresses, messages), which
        // owns each of those bytes once plus a few words of labels.
        other => describe(other).map_or(0, |text| text.len()),
    }
}

fn server(event: &ServerEvent) -> usize {
    match event {
        ServerEvent::RequestReceived { request, .. } => request_bytes(request),
        ServerEvent::ResponseSent { response, .. }
        | ServerEvent::ResponseDropped { response, .. } => response_bytes(response),
        ServerEvent::ResourcesChanged {
            type_url,
            version,
            updated,
            removed,
        } => type_url.len() + version.len() + strings(updated) + strings(removed),
        ServerEvent::StreamClosed { message, .. } => message.len(),
        ServerEvent::ConnectionRefused { address } => address.len(),
        // Fixed-size, or a fault or a TLS failure: a few short strings.
        other => format!("{other:?}").len(),
    }
}

fn request_bytes(request: &RecordedRequest) -> usize {
    let mut bytes = request.type_url.len()
        + strings(&request.resource_names)
        + request.version_info.len()
        + request.response_nonce.len()
        + request.error_detail.as_ref().map_or(0, |(_, m)| m.len())
        + request.node.as_ref().map_or(0, |node| node.encoded_len());
    if let Some(delta) = &request.delta {
        bytes += strings(&delta.subscribe)
            + strings(&delta.unsubscribe)
            + delta
                .initial_resource_versions
                .iter()
                .map(|(name, version)| string(name) + string(version))
                .sum::<usize>();
    }
    bytes
}

fn response_bytes(response: &RecordedResponse) -> usize {
    let mut bytes = response.type_url.len()
        + response.version_info.len()
        + response.nonce.len()
        + strings(&response.resource_names)
        + response
            .resource_errors
            .iter()
            .map(|e| {
                e.name.as_deref().map_or(0, string)
                    + e.status.as_ref().map_or(0, |(_, m)| string(m))
            })
            .sum::<usize>();
    if let Some(delta) = &response.delta {
        bytes += strings(&delta.removed_resources)
            + delta
                .resources
                .iter()
                .map(|r| {
                    size_of::<xds_fake_server::event::RecordedDeltaResource>() + r.version.len()
                })
                .sum::<usize>();
    }
    bytes
}

/// The subscription snapshot a delta request carries, as a key (its
/// address) and its bytes: the timeline counts each snapshot once however
/// many requests share it. The address cannot be reused while the
/// timeline holds the snapshot, and the timeline holds it for the run.
pub fn delta_subscription(event: &TimelineEvent) -> Option<(usize, usize)> {
    let EventKind::Server(server) = &event.kind else {
        return None;
    };
    let ServerEvent::RequestReceived { request, .. } = &**server else {
        return None;
    };
    let subscription = &request.delta.as_ref()?.subscription;
    Some((
        Arc::as_ptr(subscription) as *const String as usize,
        strings(subscription.iter()),
    ))
}
