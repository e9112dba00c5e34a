//! How each timeline event reads: one line per event, as snapshots,
//! reports and failure messages show it.

use std::fmt::Write as _;

use xds_client_under_test::{
    AdminObservation, DialNotification, ObservedEvent, WatcherNotification,
};
use xds_fake_server::backend::BackendEvent;
use xds_fake_server::event::{RecordedRequest, RecordedResponse, ServerEvent};
use xds_vocabulary::RequestKind;
use xds_vocabulary::kds::ZoneStoreChange;
use xds_vocabulary::{AdsProtocol, ClientEvent, LogLevel, ResourceType, XdsError, code_name};

use super::*;

/// Renders events, numbering none; `from` only offsets nothing — it lets
/// failure reports show a window of the timeline.
pub fn render_events(events: &[TimelineEvent], from: usize) -> String {
    let mut out = String::new();
    for event in events.iter().skip(from) {
        if let Some(line) = render_line(event) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The last lines of [`render_events`] that fit in `max` bytes, after a
/// line saying how many lines before them are not kept: rendered from the
/// end, so a timeline of a hundred thousand events is never rendered whole
/// to be cut (reports write at most this much of it anyway).
pub fn render_events_tail(events: &[TimelineEvent], max: usize) -> String {
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    let mut rest = events.len();
    for (index, event) in events.iter().enumerate().rev() {
        let Some(line) = render_line(event) else {
            rest = index;
            continue;
        };
        if bytes + line.len() + 1 > max {
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
        rest = index;
    }
    let dropped = events[..rest]
        .iter()
        .filter(|e| describe(&e.kind).is_some())
        .count();
    let mut out = String::with_capacity(bytes + 64);
    if dropped > 0 {
        let _ = writeln!(
            out,
            "[... the first {dropped} lines are not kept: the timeline is longer than {} MiB]",
            max >> 20
        );
    }
    for line in kept.iter().rev() {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// How much of one event a timeline line shows. Matchers see the whole
/// event; a line of a megabyte (a response naming thousands of resources
/// with long names) reads no better than its first 16 KiB, and would make
/// the rendered timeline as large as the events again. The suite's
/// longest line is about 1.2 KB.
pub const MAX_LINE: usize = 16 << 10;

/// One line, e.g.
/// `   0.000s  primary  <- [s1] DiscoveryRequest CDS names=[c1] version="" nonce="" node=yes (initial)`.
/// None for events too fine-grained to show (they can still be matched).
pub fn render_line(event: &TimelineEvent) -> Option<String> {
    let text = describe(&event.kind)?;
    // One event, one line: failure messages number events by the written
    // timeline's lines.
    let text = if text.contains(['\n', '\r']) {
        text.replace('\r', "\\r").replace('\n', "\\n")
    } else {
        text
    };
    let text = xds_vocabulary::cut::cut(&text, MAX_LINE);
    Some(format!(
        "{:>9.3}s  {:<8} {}",
        event.at.as_secs_f64(),
        event.source,
        text
    ))
}

/// Per event, its line number (from 1) in the written timeline
/// ([`render_events`] of all events), or `None` for an event not shown.
pub fn line_numbers(events: &[TimelineEvent]) -> Vec<Option<usize>> {
    let mut line = 0;
    events
        .iter()
        .map(|event| {
            describe(&event.kind).map(|_| {
                line += 1;
                line
            })
        })
        .collect()
}

pub fn type_name(type_url: &str) -> String {
    match ResourceType::from_type_url(type_url) {
        Some(t) => t.short_name().to_string(),
        None if type_url.is_empty() => "\"\"".to_string(),
        None => type_url.to_string(),
    }
}

fn names(list: &[String]) -> String {
    format!("[{}]", list.join(","))
}

fn error_text(e: &XdsError) -> String {
    status_text(e.code, &e.message)
}

fn status_text(code: tonic::Code, message: &str) -> String {
    if message.is_empty() {
        code_name(code).to_string()
    } else {
        format!("{}: {message}", code_name(code))
    }
}

pub fn describe(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::Step(text) => format!("== {text}"),
        EventKind::Note(text) => format!("!! {text}"),
        EventKind::Barrier => return None,
        EventKind::Server(e) => describe_server(e),
        EventKind::Client(e) => describe_client(e)?,
        EventKind::Csds(c) => describe_csds(c),
        EventKind::CsdsReply(reply) => {
            let answer = if reply.code == tonic::Code::Ok {
                format!("OK, {} client configs", reply.configs)
            } else {
                status_text(reply.code, &reply.message)
            };
            format!(
                "CSDS request with {} node_matchers: {answer}",
                reply.node_matchers
            )
        }
        EventKind::Rpc {
            target,
            outcome,
            settling,
        } => {
            let text = match &outcome.backend {
                Some(backend) if outcome.code == tonic::Code::Ok => {
                    format!("rpc {target}: OK from {backend}")
                }
                _ => format!(
                    "rpc {target}: {}",
                    status_text(outcome.code, &outcome.message)
                ),
            };
            if *settling {
                format!("{text} (settling)")
            } else {
                text
            }
        }
        EventKind::Backend(BackendEvent::RpcServed { method }) => format!("served {method}"),
    })
}

fn describe_server(event: &ServerEvent) -> String {
    match event {
        ServerEvent::ConnectionAccepted { connection } => {
            format!("connection {connection} accepted")
        }
        ServerEvent::ConnectionRefused { address } => format!("connection to {address} refused"),
        ServerEvent::ConnectionClosed { connection } => format!("connection {connection} closed"),
        ServerEvent::TlsEstablished {
            connection,
            client_certificate,
        } => {
            let client = if *client_certificate {
                "client certificate verified"
            } else {
                "no client certificate"
            };
            format!("connection {connection}: TLS established, {client}")
        }
        ServerEvent::TlsFailed {
            connection,
            failure,
        } => format!("connection {connection}: TLS handshake failed: {failure}"),
        ServerEvent::StreamOpened {
            stream,
            connection,
            protocol,
            ..
        } => {
            let kind = match protocol {
                AdsProtocol::Sotw => "ADS stream",
                AdsProtocol::Delta => "delta ADS stream",
            };
            match connection {
                Some(c) => format!("[s{stream}] {kind} opened on connection {c}"),
                None => format!("[s{stream}] {kind} opened"),
            }
        }
        ServerEvent::KdsStreamOpened {
            stream,
            connection,
            rpc,
            handshake,
        } => {
            let on = connection.map_or_else(String::new, |c| format!(" on connection {c}"));
            let header = |value: &Option<String>| value.as_deref().unwrap_or("(none)").to_string();
            format!(
                "[s{stream}] KDS {rpc} stream opened{on}: client-id={} kds-version={} \
                 features=[{}] version={}{}",
                header(&handshake.client_id),
                header(&handshake.kds_version),
                handshake.features.join(","),
                header(&handshake.version),
                if handshake.gzip { " (gzip)" } else { "" }
            )
        }
        ServerEvent::KdsHealthCheck { handshake } => format!(
            "KDS health check from client-id={}",
            handshake.client_id.as_deref().unwrap_or("(none)")
        ),
        ServerEvent::KdsRequestSent { stream, request } => {
            describe_request_going("->", *stream, request)
        }
        ServerEvent::KdsResponseReceived { stream, response } => {
            describe_response("<-", *stream, response)
        }
        ServerEvent::StreamClosed {
            stream,
            code,
            message,
            by_client,
            kds,
        } => {
            let who = if *by_client { "by client" } else { "by server" };
            let what = kds.map_or_else(|| "ADS".to_string(), |rpc| format!("KDS {rpc}"));
            format!(
                "[s{stream}] {what} stream closed {who}: {}",
                status_text(*code, message)
            )
        }
        ServerEvent::RequestReceived { stream, request } => describe_request(*stream, request),
        ServerEvent::ResponseSent { stream, response } => {
            describe_response("->", *stream, response)
        }
        ServerEvent::ResponseDropped { stream, response } => format!(
            "{} (dropped: never reaches the client)",
            describe_response("-x", *stream, response)
        ),
        ServerEvent::FaultApplied { fault } => format!("fault: {fault}"),
        ServerEvent::ResourcesChanged {
            type_url,
            version,
            updated,
            removed,
        } => {
            let mut s = format!("store {} version={version:?}", type_name(type_url));
            if !updated.is_empty() {
                let _ = write!(s, " set={}", names(updated));
            }
            if !removed.is_empty() {
                let _ = write!(s, " removed={}", names(removed));
            }
            s
        }
    }
}

/// How much of a node id a timeline line shows.
const MAX_NODE_ID: usize = 256;

fn describe_request(stream: u64, r: &RecordedRequest) -> String {
    describe_request_going("<-", stream, r)
}

/// A request as the timeline reads it; `arrow`: `<-` for one the server
/// received, `->` for one it sent (KDS's `ZoneToGlobalSync`).
fn describe_request_going(arrow: &str, stream: u64, r: &RecordedRequest) -> String {
    let node = match &r.node {
        // Cut: a node id is the scenario's to choose, up to the file's
        // size, and every stream's first request carries it.
        Some(n) => format!(" node={:?}", xds_vocabulary::cut::cut(&n.id, MAX_NODE_ID)),
        None => String::new(),
    };
    let kind = match r.kind {
        RequestKind::Initial => "(initial)".to_string(),
        RequestKind::Ack => "(ACK)".to_string(),
        RequestKind::UnknownNonce => "(unknown nonce)".to_string(),
        RequestKind::Nack | RequestKind::NackOfUnknownNonce => {
            let of = if r.kind == RequestKind::NackOfUnknownNonce {
                " of unknown nonce"
            } else {
                ""
            };
            match &r.error_detail {
                Some((code, message)) => format!(
                    "(NACK{of} {}: {message})",
                    code_name(tonic::Code::from_i32(*code))
                ),
                None => format!("(NACK{of})"),
            }
        }
    };
    let Some(delta) = &r.delta else {
        return format!(
            "{arrow} [s{stream}] DiscoveryRequest {} names={} version={:?} nonce={:?}{node} {kind}",
            type_name(&r.type_url),
            names(&r.resource_names),
            r.version_info,
            r.response_nonce
        );
    };
    // What changed travels: `+` subscribes, `-` unsubscribes.
    let mut changes = format!("+{}", names(&delta.subscribe));
    if !delta.unsubscribe.is_empty() {
        let _ = write!(changes, " -{}", names(&delta.unsubscribe));
    }
    if !delta.initial_resource_versions.is_empty() {
        let initial: Vec<String> = delta
            .initial_resource_versions
            .iter()
            .map(|(name, version)| format!("{name}:{version:?}"))
            .collect();
        let _ = write!(changes, " initial={{{}}}", initial.join(","));
    }
    format!(
        "{arrow} [s{stream}] DeltaDiscoveryRequest {} {changes} nonce={:?}{node} {kind}",
        type_name(&r.type_url),
        r.response_nonce
    )
}

fn describe_response(arrow: &str, stream: u64, response: &RecordedResponse) -> String {
    let mut s = describe_response_body(arrow, stream, response);
    if !response.resource_errors.is_empty() {
        let errors: Vec<String> = response
            .resource_errors
            .iter()
            .map(|e| {
                let name = e.name.as_deref().unwrap_or("(no name)");
                match &e.status {
                    Some((code, message)) => format!(
                        "{name}:{}",
                        status_text(tonic::Code::from_i32(*code), message)
                    ),
                    None => format!("{name}:(no error_detail)"),
                }
            })
            .collect();
        let _ = write!(s, " resource_errors=[{}]", errors.join(","));
    }
    s
}

fn describe_response_body(arrow: &str, stream: u64, response: &RecordedResponse) -> String {
    let Some(delta) = &response.delta else {
        return format!(
            "{arrow} [s{stream}] DiscoveryResponse {} version={:?} nonce={:?} resources={}",
            type_name(&response.type_url),
            response.version_info,
            response.nonce,
            names(&response.resource_names)
        );
    };
    // Each resource with its own version (and TTL, or a missing body).
    let resources: Vec<String> = response
        .resource_names
        .iter()
        .zip(&delta.resources)
        .map(|(name, r)| {
            let mut s = format!("{name}:{:?}", r.version);
            if let Some(ttl) = r.ttl {
                let _ = write!(s, " ttl={:.3}s", ttl.as_secs_f64());
            }
            if !r.body {
                s.push_str(" (no body)");
            }
            s
        })
        .collect();
    let mut s = format!(
        "{arrow} [s{stream}] DeltaDiscoveryResponse {} system_version={:?} nonce={:?} resources=[{}]",
        type_name(&response.type_url),
        response.version_info,
        response.nonce,
        resources.join(",")
    );
    if !delta.removed_resources.is_empty() {
        let _ = write!(s, " removed={}", names(&delta.removed_resources));
    }
    s
}

fn describe_client(event: &ObservedEvent) -> Option<String> {
    Some(match event {
        ObservedEvent::Watcher {
            resource_type,
            name,
            notification,
        } => {
            let what = match notification {
                WatcherNotification::Changed { summary } => format!("changed: {summary}"),
                WatcherNotification::ResourceError(e) => {
                    format!("resource error {}", error_text(e))
                }
                WatcherNotification::AmbientError(e) => format!("ambient error {}", error_text(e)),
                WatcherNotification::AmbientErrorCleared => "ambient error cleared".to_string(),
                WatcherNotification::DoesNotExist => "does not exist".to_string(),
            };
            format!("watcher {resource_type} {name}: {what}")
        }
        ObservedEvent::Dial { target, update } => match update {
            DialNotification::Config { summary, .. } => format!("dial {target}: config {summary}"),
            DialNotification::Error(e) => format!("dial {target}: error {}", error_text(e)),
        },
        ObservedEvent::ChannelState { target, state } => {
            format!("channel {target}: {}", state.name())
        }
        ObservedEvent::ServingStatus { address, status } => match status {
            Ok(()) => format!("server {address}: SERVING"),
            Err(e) => format!("server {address}: NOT_SERVING {}", error_text(e)),
        },
        ObservedEvent::Client(e) => describe_client_event(e)?,
        ObservedEvent::Admin(observation) => describe_admin(observation),
        ObservedEvent::Zone(change) => describe_zone(change),
    })
}

/// `zone Mesh default.: stored {"mtls":...} labels={kuma.io/origin=global}`,
/// `zone Mesh default.: removed`.
pub fn describe_zone(change: &ZoneStoreChange) -> String {
    match change {
        ZoneStoreChange::Stored {
            kuma_type,
            name,
            labels,
            spec,
        } => {
            let mut text = format!("zone {kuma_type} {name}: stored {spec}");
            if !labels.is_empty() {
                let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = write!(text, " labels={{{}}}", labels.join(","));
            }
            text
        }
        ZoneStoreChange::Removed {
            kuma_type,
            name,
            display_name,
        } => match display_name {
            Some(display) => format!("zone {kuma_type} {name}: removed ({display})"),
            None => format!("zone {kuma_type} {name}: removed"),
        },
    }
}

/// `admin CDS svc-cluster: active v1`, `admin EDS svc-endpoints: active
/// [127.0.0.1:1]`, `admin stat cluster_manager.cds.update_rejected = 1`.
pub fn describe_admin(observation: &AdminObservation) -> String {
    match observation {
        AdminObservation::Resource {
            resource_type,
            name,
            version,
            state,
            detail,
        } => {
            let mut text = format!("admin {resource_type} {name}: {}", state.name());
            if let Some(version) = version {
                text.push_str(&format!(" v{version}"));
            }
            if !detail.is_empty() {
                text.push_str(&format!(" {detail}"));
            }
            text
        }
        AdminObservation::Stat { name, value } => format!("admin stat {name} = {value}"),
    }
}

fn describe_client_event(event: &ClientEvent) -> Option<String> {
    Some(match event {
        ClientEvent::AdsCallStarted { server, service } => {
            format!("{service} call to {server} started")
        }
        ClientEvent::AdsCallFinished {
            server,
            service,
            status,
            seen_response,
        } => format!(
            "{service} call to {server} ended ({}): {}",
            if *seen_response {
                "after a response"
            } else {
                "no response"
            },
            error_text(status)
        ),
        ClientEvent::Connected {
            server,
            connected: true,
        } => format!("connected to {server}"),
        ClientEvent::Connected {
            server,
            connected: false,
        } => format!("no longer connected to {server}"),
        ClientEvent::RetryScheduled {
            server,
            service,
            delay,
        } => format!(
            "next {service} call to {server} in {:.3}s",
            delay.as_secs_f64()
        ),
        ClientEvent::ServerStatus {
            server,
            error: None,
            failures,
        } => {
            format!("server {server} healthy (failures={failures})")
        }
        ClientEvent::ServerStatus {
            server,
            error: Some(e),
            failures,
        } => {
            format!(
                "server {server} failing (failures={failures}): {}",
                error_text(e)
            )
        }
        ClientEvent::ResourceTimerStarted {
            resource_type,
            name,
            timeout,
        } => {
            format!(
                "does-not-exist timer for {resource_type} {name} started ({}s)",
                timeout.as_secs_f64()
            )
        }
        // Every request already has its own line, from the server.
        ClientEvent::SubscriptionSent { .. } => return None,
        ClientEvent::FallbackStarted { authority, server } => {
            format!("authority {authority:?} falls back to {server}")
        }
        ClientEvent::FellForward { authority, server } => {
            format!("authority {authority:?} back on {server}")
        }
        ClientEvent::Log { level, message } => {
            let level = match level {
                LogLevel::Info => "INFO",
                LogLevel::Warning => "WARNING",
                LogLevel::Error => "ERROR",
            };
            format!("log {level}: {message}")
        }
    })
}

pub fn csds_status_name(status: CsdsStatus) -> &'static str {
    match status {
        CsdsStatus::Requested => "REQUESTED",
        CsdsStatus::Acked => "ACKED",
        CsdsStatus::Nacked => "NACKED",
        CsdsStatus::DoesNotExist => "DOES_NOT_EXIST",
        CsdsStatus::ReceivedError => "RECEIVED_ERROR",
        CsdsStatus::Timeout => "TIMEOUT",
        CsdsStatus::Absent => "ABSENT",
    }
}

fn describe_entry(entry: &Option<CsdsEntry>) -> String {
    match entry {
        None => "ABSENT".to_string(),
        Some(e) => {
            let mut s = csds_status_name(e.status).to_string();
            if !e.version.is_empty() {
                let _ = write!(s, " version={:?}", e.version);
            }
            s
        }
    }
}

fn describe_csds(c: &CsdsChange) -> String {
    let scope = if c.client_scope.is_empty() {
        String::new()
    } else {
        format!("[{}] ", c.client_scope)
    };
    format!(
        "{scope}{} {}: {} -> {}",
        type_name(&c.type_url),
        c.name,
        describe_entry(&c.from),
        describe_entry(&c.to)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tls_handshakes_say_how_they_ended() {
        use xds_fake_server::event::TlsFailure;
        let lines = [
            (
                ServerEvent::TlsEstablished {
                    connection: 1,
                    client_certificate: true,
                },
                "connection 1: TLS established, client certificate verified",
            ),
            (
                ServerEvent::TlsEstablished {
                    connection: 2,
                    client_certificate: false,
                },
                "connection 2: TLS established, no client certificate",
            ),
            (
                ServerEvent::TlsFailed {
                    connection: 3,
                    failure: TlsFailure::AlertFromClient("UnknownCA".into()),
                },
                "connection 3: TLS handshake failed: the client sent alert UnknownCA",
            ),
            (
                ServerEvent::TlsFailed {
                    connection: 4,
                    failure: TlsFailure::ClosedByClient,
                },
                "connection 4: TLS handshake failed: the client closed the connection without an alert",
            ),
            (
                ServerEvent::TlsFailed {
                    connection: 5,
                    failure: TlsFailure::NoClientCertificate,
                },
                "connection 5: TLS handshake failed: the client sent no certificate",
            ),
        ];
        for (event, text) in lines {
            assert_eq!(describe_server(&event), text);
        }
    }
}
