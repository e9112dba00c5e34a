//! The `server_event` matcher: a connection or stream event on a server.

use schemars::JsonSchema;
use serde::Deserialize;
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::code_name;

use super::{Check, Compile, Description, Translate, eq};
use crate::scenario::file::Spanned;
use crate::scenario::load::{Checker, Problem, code, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerEventMatcherSpec {
    pub server: Option<Spanned<String>>,
    /// connection_accepted, connection_refused, connection_closed,
    /// stream_opened, stream_closed.
    pub event: Spanned<String>,
    pub code: Option<Spanned<String>>,
    pub by_client: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEventKind {
    ConnectionAccepted,
    ConnectionRefused,
    ConnectionClosed,
    StreamOpened,
    StreamClosed,
}

/// The events' names in scenario files.
const SERVER_EVENTS: &[(&str, ServerEventKind)] = &[
    ("connection_accepted", ServerEventKind::ConnectionAccepted),
    ("connection_refused", ServerEventKind::ConnectionRefused),
    ("connection_closed", ServerEventKind::ConnectionClosed),
    ("stream_opened", ServerEventKind::StreamOpened),
    ("stream_closed", ServerEventKind::StreamClosed),
];

#[derive(Clone, Debug, PartialEq)]
pub struct ServerEventMatcher {
    pub server: Option<String>,
    pub event: ServerEventKind,
    /// For stream_closed.
    pub code: Option<tonic::Code>,
    pub by_client: Option<bool>,
}

impl Compile for ServerEventMatcherSpec {
    type Matcher = ServerEventMatcher;

    fn compile(&self, scenario: &Checker) -> Result<ServerEventMatcher, Problem> {
        Ok(ServerEventMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            event: keyword(&self.event, "server event", SERVER_EVENTS)?,
            code: opt(self.code.as_ref(), code)?,
            by_client: self.by_client,
        })
    }
}

impl Check for ServerEventMatcher {
    fn matches(&self, event: &TimelineEvent, _text: Translate<'_>) -> bool {
        let EventKind::Server(e) = &event.kind else {
            return false;
        };
        if !eq(&self.server, &event.source) {
            return false;
        }
        match (self.event, &**e) {
            (ServerEventKind::ConnectionAccepted, ServerEvent::ConnectionAccepted { .. })
            | (ServerEventKind::ConnectionRefused, ServerEvent::ConnectionRefused { .. })
            | (ServerEventKind::ConnectionClosed, ServerEvent::ConnectionClosed { .. })
            | (ServerEventKind::StreamOpened, ServerEvent::StreamOpened { .. }) => true,
            (
                ServerEventKind::StreamClosed,
                ServerEvent::StreamClosed {
                    code, by_client, ..
                },
            ) => self.code.is_none_or(|c| c == *code) && eq(&self.by_client, by_client),
            _ => false,
        }
    }

    fn describe(&self) -> String {
        Description::new("server event")
            .given("server", self.server.as_ref())
            .field("event", format!("{:?}", self.event))
            .given("code", self.code.map(code_name))
            .given("by_client", self.by_client)
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use std::time::Duration;

    fn closed(by_client: bool) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: "primary".into(),
            kind: EventKind::Server(Box::new(ServerEvent::StreamClosed {
                stream: 1,
                code: tonic::Code::Unavailable,
                message: String::new(),
                by_client,
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
            "server event server=primary event=StreamClosed code=UNAVAILABLE by_client=false"
        );
    }
}
