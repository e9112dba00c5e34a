//! How many bytes a recorded event keeps alive: what bounds a timeline in
//! memory, not only in events. A client reconnecting as fast as it can,
//! each stream opened with a node of a megabyte, stays far under the event
//! cap and would still take gigabytes.
//!
//! An estimate from above of what an event owns: its inline size, every
//! string and list it holds, a node by its encoded size. A delta request's
//! subscription is a persistent set shared with the server and with the
//! stream's earlier requests: a request counts what it changed in it
//! ([`RecordedDeltaRequest::subscription_bytes`]), and an ACK nothing.
//!
//! [`RecordedDeltaRequest::subscription_bytes`]: xds_fake_server::event::RecordedDeltaRequest::subscription_bytes

use std::mem::size_of;

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

/// Bytes `event` holds.
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
        ServerEvent::RequestReceived { request, .. }
        | ServerEvent::KdsRequestSent { request, .. } => request_bytes(request),
        ServerEvent::ResponseSent { response, .. }
        | ServerEvent::ResponseDropped { response, .. }
        | ServerEvent::KdsResponseReceived { response, .. } => response_bytes(response),
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
                .sum::<usize>()
            + delta.subscription_bytes();
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
            .sum::<usize>()
        + response
            .bodies
            .iter()
            .map(|b| {
                size_of::<Option<prost_types::Any>>()
                    + b.as_ref().map_or(0, |a| a.type_url.len() + a.value.len())
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
