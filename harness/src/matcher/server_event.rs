//! The `server_event` matcher: a connection or stream event on a server.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::event::{ServerEvent, TlsFailure};
use xds_vocabulary::code_name;

use super::{Check, Compare, Compile, Description, Translate, keyword_name};
use crate::check::Spanned;
use crate::check::{Checker, Problem, code, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerEventMatcherSpec {
    /// The server it happened on (default: any).
    pub server: Option<Spanned<String>>,
    /// connection_accepted, connection_refused, connection_closed,
    /// stream_opened, stream_closed, tls_established, tls_failed,
    /// kds_health_check (a Kuma zone's `GlobalKDSService/HealthCheck`).
    #[schemars(schema_with = "server_events")]
    pub event: Spanned<String>,
    /// stream_closed: the status code. Of a stream the client ended: OK
    /// for a half-close, CANCELLED for a RST_STREAM(CANCEL), or what its
    /// lost connection gave.
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// stream_closed: whether the client ended the stream.
    pub by_client: Option<bool>,
    /// tls_established: whether the client presented a certificate (which
    /// the server verified).
    pub client_certificate: Option<bool>,
    /// tls_failed: why, as the server saw it: `no_client_certificate`,
    /// `client_certificate_rejected`, `alert_from_client` (the client
    /// refused the server's certificate with an alert), `closed_by_client`
    /// (it closed the connection mid-handshake without one) or `other`.
    #[schemars(schema_with = "tls_failures")]
    #[serde(default)]
    pub failure: Option<Spanned<String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEventKind {
    ConnectionAccepted,
    ConnectionRefused,
    ConnectionClosed,
    StreamOpened,
    StreamClosed,
    TlsEstablished,
    TlsFailed,
    KdsHealthCheck,
}

/// How a TLS handshake failed, as scenarios name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsFailureKind {
    NoClientCertificate,
    ClientCertificateRejected,
    AlertFromClient,
    ClosedByClient,
    Other,
}

impl ServerEventKind {
    /// The kind of a connection or stream event; `None` for the others
    /// (requests, responses, faults, store changes).
    fn of(event: &ServerEvent) -> Option<Self> {
        Some(match event {
            ServerEvent::ConnectionAccepted { .. } => ServerEventKind::ConnectionAccepted,
            ServerEvent::ConnectionRefused { .. } => ServerEventKind::ConnectionRefused,
            ServerEvent::ConnectionClosed { .. } => ServerEventKind::ConnectionClosed,
            ServerEvent::StreamOpened { .. } => ServerEventKind::StreamOpened,
            ServerEvent::StreamClosed { .. } => ServerEventKind::StreamClosed,
            ServerEvent::TlsEstablished { .. } => ServerEventKind::TlsEstablished,
            ServerEvent::TlsFailed { .. } => ServerEventKind::TlsFailed,
            ServerEvent::KdsHealthCheck { .. } => ServerEventKind::KdsHealthCheck,
            _ => return None,
        })
    }
}

impl TlsFailureKind {
    fn of(failure: &TlsFailure) -> Self {
        match failure {
            TlsFailure::NoClientCertificate => TlsFailureKind::NoClientCertificate,
            TlsFailure::ClientCertificateRejected(_) => TlsFailureKind::ClientCertificateRejected,
            TlsFailure::AlertFromClient(_) => TlsFailureKind::AlertFromClient,
            TlsFailure::ClosedByClient => TlsFailureKind::ClosedByClient,
            TlsFailure::Other(_) => TlsFailureKind::Other,
        }
    }
}

pub(crate) const TLS_FAILURES: &[(&str, TlsFailureKind)] = &[
    ("no_client_certificate", TlsFailureKind::NoClientCertificate),
    (
        "client_certificate_rejected",
        TlsFailureKind::ClientCertificateRejected,
    ),
    ("alert_from_client", TlsFailureKind::AlertFromClient),
    ("closed_by_client", TlsFailureKind::ClosedByClient),
    ("other", TlsFailureKind::Other),
];

/// The events' names in scenario files.
pub(crate) const SERVER_EVENTS: &[(&str, ServerEventKind)] = &[
    ("connection_accepted", ServerEventKind::ConnectionAccepted),
    ("connection_refused", ServerEventKind::ConnectionRefused),
    ("connection_closed", ServerEventKind::ConnectionClosed),
    ("stream_opened", ServerEventKind::StreamOpened),
    ("stream_closed", ServerEventKind::StreamClosed),
    ("tls_established", ServerEventKind::TlsEstablished),
    ("tls_failed", ServerEventKind::TlsFailed),
    ("kds_health_check", ServerEventKind::KdsHealthCheck),
];

#[derive(Clone, Debug, PartialEq)]
pub struct ServerEventMatcher {
    pub server: Option<String>,
    pub event: ServerEventKind,
    /// For stream_closed.
    pub code: Option<tonic::Code>,
    pub by_client: Option<bool>,
    /// For tls_established.
    pub client_certificate: Option<bool>,
    /// For tls_failed.
    pub failure: Option<TlsFailureKind>,
}

impl Compile for ServerEventMatcherSpec {
    type Matcher = ServerEventMatcher;

    fn compile(&self, scenario: &Checker) -> Result<ServerEventMatcher, Problem> {
        let event = keyword(&self.event, "server event", SERVER_EVENTS)?;
        // A field of another kind of event could never match: say so
        // rather than wait for a scenario that cannot pass.
        let only_for = |given: bool, kind: ServerEventKind, field: &str, name: &str| {
            if given && event != kind {
                Err(Problem::at(
                    &self.event,
                    format!("server_event: `{field}` is only for event {name}"),
                ))
            } else {
                Ok(())
            }
        };
        only_for(
            self.code.is_some(),
            ServerEventKind::StreamClosed,
            "code",
            "stream_closed",
        )?;
        only_for(
            self.by_client.is_some(),
            ServerEventKind::StreamClosed,
            "by_client",
            "stream_closed",
        )?;
        only_for(
            self.client_certificate.is_some(),
            ServerEventKind::TlsEstablished,
            "client_certificate",
            "tls_established",
        )?;
        only_for(
            self.failure.is_some(),
            ServerEventKind::TlsFailed,
            "failure",
            "tls_failed",
        )?;
        Ok(ServerEventMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            event,
            code: opt(self.code.as_ref(), code)?,
            by_client: self.by_client,
            client_certificate: self.client_certificate,
            failure: opt(self.failure.as_ref(), |f| {
                keyword(f, "TLS failure", TLS_FAILURES)
            })?,
        })
    }
}

impl Check for ServerEventMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        _text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        // Scaffolding (`Source::Scaffold`) is never the scenario's.
        let (Some(source), EventKind::Server(e)) = (event.source.server(), &event.kind) else {
            return None;
        };
        let kind = ServerEventKind::of(e)?;
        let (code, by_client) = match &**e {
            ServerEvent::StreamClosed {
                code, by_client, ..
            } => (Some(*code), Some(*by_client)),
            _ => (None, None),
        };
        let client_certificate = match &**e {
            ServerEvent::TlsEstablished {
                client_certificate, ..
            } => Some(*client_certificate),
            _ => None,
        };
        let failure = match &**e {
            ServerEvent::TlsFailed { failure, .. } => Some(TlsFailureKind::of(failure)),
            _ => None,
        };
        let or_none = |v: Option<String>| v.unwrap_or_else(|| "(none)".into());
        fields
            .eq("server", self.server.as_deref(), source, str::to_string)
            .eq("event", Some(&self.event), &kind, |k| {
                keyword_name(SERVER_EVENTS, k)
            })
            .eq("code", self.code.map(Some).as_ref(), &code, |c| {
                or_none(c.map(|c| code_name(c).to_string()))
            })
            .eq(
                "by_client",
                self.by_client.map(Some).as_ref(),
                &by_client,
                |b| or_none(b.map(|b| b.to_string())),
            )
            .eq(
                "client_certificate",
                self.client_certificate.map(Some).as_ref(),
                &client_certificate,
                |b| or_none(b.map(|b| b.to_string())),
            )
            .eq("failure", self.failure.map(Some).as_ref(), &failure, |f| {
                or_none(f.map(|f| keyword_name(TLS_FAILURES, &f)))
            });
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("server event")
            .given("server", self.server.as_ref())
            .field("event", keyword_name(SERVER_EVENTS, &self.event))
            .given("code", self.code.map(code_name))
            .given("by_client", self.by_client)
            .given("client_certificate", self.client_certificate)
            .given(
                "failure",
                self.failure.map(|f| keyword_name(TLS_FAILURES, &f)),
            )
            .into()
    }
}

fn server_events(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(SERVER_EVENTS)
}

fn tls_failures(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(TLS_FAILURES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;

    fn closed(by_client: bool) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::StreamClosed {
                stream: 1,
                code: tonic::Code::Unavailable,
                message: String::new(),
                by_client,
                kds: None,
            })),
        }
    }

    #[test]
    fn checks_the_event_and_how_a_stream_closed() {
        let m = ServerEventMatcher {
            server: Some("primary".into()),
            event: ServerEventKind::StreamClosed,
            code: Some(tonic::Code::Unavailable),
            by_client: Some(false),
            client_certificate: None,
            failure: None,
        };
        assert!(m.matches(&closed(false), &as_written));
        assert!(!m.matches(&closed(true), &as_written));
        let opened = ServerEventMatcher {
            event: ServerEventKind::StreamOpened,
            ..m.clone()
        };
        assert!(!opened.matches(&closed(false), &as_written));
        assert_eq!(
            m.describe(),
            "server event server=primary event=stream_closed code=UNAVAILABLE by_client=false"
        );
    }

    #[test]
    fn checks_how_a_tls_handshake_ended() {
        let event = |event: ServerEvent| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(event)),
        };
        let failed = |failure| {
            event(ServerEvent::TlsFailed {
                connection: 1,
                failure,
            })
        };
        let refused = ServerEventMatcher {
            server: None,
            event: ServerEventKind::TlsFailed,
            code: None,
            by_client: None,
            client_certificate: None,
            failure: Some(TlsFailureKind::NoClientCertificate),
        };
        assert!(refused.matches(&failed(TlsFailure::NoClientCertificate), &as_written));
        assert!(!refused.matches(&failed(TlsFailure::ClosedByClient), &as_written));
        let any_failure = ServerEventMatcher {
            failure: None,
            ..refused.clone()
        };
        assert!(any_failure.matches(&failed(TlsFailure::Other("eof".into())), &as_written));
        let mtls = ServerEventMatcher {
            event: ServerEventKind::TlsEstablished,
            client_certificate: Some(true),
            failure: None,
            ..refused
        };
        let established = |client_certificate| {
            event(ServerEvent::TlsEstablished {
                connection: 1,
                client_certificate,
            })
        };
        assert!(mtls.matches(&established(true), &as_written));
        assert!(!mtls.matches(&established(false), &as_written));
        assert_eq!(
            mtls.describe(),
            "server event event=tls_established client_certificate=true"
        );
    }
}
