//! The `client` matcher: an event the reference client reports about itself
//! (see `xds_vocabulary::ClientEvent`), or a line of a client's own log;
//! such scenarios need a client that reports them.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::{Capabilities, ObservedEvent};
use xds_vocabulary::{ClientEvent, LogLevel};

use super::{Check, Compare, Compile, Description, Translate, keyword_name};
use crate::check::Spanned;
use crate::check::{Checker, Problem, duration, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent, describe};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientMatcherSpec {
    /// ads_call_started, ads_call_finished, retry_scheduled, server_status,
    /// connected,
    /// resource_timer_started, subscription_sent, fallback_started,
    /// fell_forward, log.
    #[schemars(schema_with = "client_events")]
    pub event: Spanned<String>,
    /// The server it concerns, by name (`primary`) or URI (`primary:443`).
    pub server: Option<Spanned<String>>,
    /// retry_scheduled delay, e.g. `1.1s`.
    pub delay: Option<Spanned<String>>,
    /// log level: info, warning, error.
    #[schemars(schema_with = "log_levels")]
    #[serde(default)]
    pub level: Option<Spanned<String>>,
    /// Substring of the event as the timeline writes it.
    pub contains: Option<String>,
    /// A name the event's line holds whole (a resource, `c2`): not inside
    /// a longer name or a number, as `c2` is inside `c2-new` or a pointer
    /// `0xc000c2a0`. For a log line, which names what it is about in the
    /// client's own words around it.
    pub names: Option<String>,
    /// server_status: the server's failure count so far (C-core's
    /// `grpc.xds_client.server_failure` counter, gRFC A78: a server going
    /// from healthy to failing, as A57 defines failing).
    pub failures: Option<u64>,
    /// server_status: whether the server is healthy (C-core's
    /// `grpc.xds_client.connected` gauge: 0 from a connectivity failure or
    /// a stream that ends without a response, 1 from the next response).
    pub connected: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEventKind {
    AdsCallStarted,
    AdsCallFinished,
    RetryScheduled,
    ServerStatus,
    Connected,
    ResourceTimerStarted,
    SubscriptionSent,
    FallbackStarted,
    FellForward,
    Log,
}

/// The events' names in scenario files.
pub(crate) const CLIENT_EVENTS: &[(&str, ClientEventKind)] = &[
    ("ads_call_started", ClientEventKind::AdsCallStarted),
    ("ads_call_finished", ClientEventKind::AdsCallFinished),
    ("retry_scheduled", ClientEventKind::RetryScheduled),
    ("server_status", ClientEventKind::ServerStatus),
    ("connected", ClientEventKind::Connected),
    (
        "resource_timer_started",
        ClientEventKind::ResourceTimerStarted,
    ),
    ("subscription_sent", ClientEventKind::SubscriptionSent),
    ("fallback_started", ClientEventKind::FallbackStarted),
    ("fell_forward", ClientEventKind::FellForward),
    ("log", ClientEventKind::Log),
];

#[derive(Clone, Debug, PartialEq)]
pub struct ClientEventMatcher {
    pub event: ClientEventKind,
    pub server: Option<String>,
    /// For retry_scheduled: the delay, ms precision.
    pub delay: Option<Duration>,
    /// For log.
    pub level: Option<LogLevel>,
    /// Substring of the rendered event.
    pub contains: Option<String>,
    /// A name the rendered event holds whole.
    pub names: Option<String>,
    /// For server_status: the failure count and the connected figure.
    pub failures: Option<u64>,
    pub connected: Option<bool>,
}

impl Compile for ClientMatcherSpec {
    type Matcher = ClientEventMatcher;

    fn compile(&self, scenario: &Checker) -> Result<ClientEventMatcher, Problem> {
        let event = keyword(&self.event, "client event", CLIENT_EVENTS)?;
        if (self.failures.is_some() || self.connected.is_some())
            && event != ClientEventKind::ServerStatus
        {
            return Err(Problem::at(
                &self.event,
                "client: `failures` and `connected` are figures of a server_status event",
            ));
        }
        Ok(ClientEventMatcher {
            event,
            failures: self.failures,
            connected: self.connected,
            server: scenario.filter_server(self.server.as_ref())?,
            delay: opt(self.delay.as_ref(), |d| duration(d, "delay"))?,
            level: opt(self.level.as_ref(), |l| {
                keyword(l, "log level", &LogLevel::ALL.map(|l| (l.name(), l)))
            })?,
            contains: self.contains.clone(),
            names: self.names.clone(),
        })
    }
}

impl Check for ClientEventMatcher {
    // `contains` reads the line as the scenario writes it: a real client's
    // log names the servers' and backends' real addresses (over real TCP),
    // which `text` turns back into the scenario's. The other fields are
    // the harness's own (only in-process clients report lifecycle events).
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::Client(e)) = &event.kind else {
            return None;
        };
        let (kind, server) = match e {
            ClientEvent::AdsCallStarted { server, .. } => {
                (ClientEventKind::AdsCallStarted, Some(server))
            }
            ClientEvent::AdsCallFinished { server, .. } => {
                (ClientEventKind::AdsCallFinished, Some(server))
            }
            ClientEvent::RetryScheduled { server, .. } => {
                (ClientEventKind::RetryScheduled, Some(server))
            }
            ClientEvent::ServerStatus { server, .. } => {
                (ClientEventKind::ServerStatus, Some(server))
            }
            ClientEvent::Connected { server, .. } => (ClientEventKind::Connected, Some(server)),
            ClientEvent::ResourceTimerStarted { .. } => {
                (ClientEventKind::ResourceTimerStarted, None)
            }
            ClientEvent::SubscriptionSent { server, .. } => {
                (ClientEventKind::SubscriptionSent, Some(server))
            }
            ClientEvent::FallbackStarted { server, .. } => {
                (ClientEventKind::FallbackStarted, Some(server))
            }
            ClientEvent::FellForward { server, .. } => (ClientEventKind::FellForward, Some(server)),
            ClientEvent::Log { .. } => (ClientEventKind::Log, None),
        };
        let delay = match e {
            ClientEvent::RetryScheduled { delay, .. } => Some(delay.as_millis()),
            _ => None,
        };
        let level = match e {
            ClientEvent::Log { level, .. } => Some(*level),
            _ => None,
        };
        let (failures, connected) = match e {
            ClientEvent::ServerStatus {
                failures, error, ..
            } => (Some(*failures), Some(error.is_none())),
            _ => (None, None),
        };
        fields
            .eq("event", Some(&self.event), &kind, |k| {
                keyword_name(CLIENT_EVENTS, k)
            })
            // Servers are named by URI in client events (`primary:443`); a
            // scenario names them by server name, which is the URI's host.
            .check(
                "server",
                self.server.is_some(),
                || {
                    self.server.as_ref().is_some_and(|want| {
                        server.is_some_and(|s| {
                            s == want || s.split(':').next() == Some(want.as_str())
                        })
                    })
                },
                || self.server.clone().unwrap_or_default(),
                || server.cloned().unwrap_or_else(|| "(none)".into()),
            )
            .eq(
                "delay",
                self.delay.map(|d| Some(d.as_millis())).as_ref(),
                &delay,
                |ms| ms.map_or("(none)".into(), |ms| format!("{:.3}s", ms as f64 / 1000.0)),
            )
            .eq("level", self.level.map(Some).as_ref(), &level, |l| {
                l.map_or("(none)", LogLevel::name).to_string()
            })
            .eq(
                "failures",
                self.failures.map(Some).as_ref(),
                &failures,
                |f| f.map_or("(none)".into(), |f| f.to_string()),
            )
            .eq(
                "connected",
                self.connected.map(Some).as_ref(),
                &connected,
                |c| c.map_or("(none)".into(), |c| c.to_string()),
            )
            .contains(
                "contains",
                &self.contains,
                &describe(&event.kind).unwrap_or_default(),
                text,
            );
        if let Some(name) = &self.names {
            let line = describe(&event.kind).unwrap_or_default();
            let line = text(&line);
            fields.check(
                "names",
                true,
                || names_whole(&line, name),
                || format!("{name:?}"),
                || format!("{line:?}"),
            );
        }
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("client event")
            .field("event", keyword_name(CLIENT_EVENTS, &self.event))
            .given("server", self.server.as_ref())
            .given(
                "delay",
                self.delay.map(|v| format!("{:.3}s", v.as_secs_f64())),
            )
            .given("level", self.level.map(LogLevel::name))
            .given("failures", self.failures)
            .given("connected", self.connected)
            .given_debug("contains", self.contains.as_ref())
            .given("names", self.names.as_ref())
            .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        if self.event != ClientEventKind::Log {
            return (!caps.client_events).then_some("client events");
        }
        // A check at no level is met by a line of any level: each must be
        // the client's own log, or a trace line could meet it.
        let wanted = match &self.level {
            Some(level) => std::slice::from_ref(level),
            None => &LogLevel::ALL[..],
        };
        wanted
            .iter()
            .find(|level| !caps.logs.iter().any(|have| have == level.name()))
            .map(|level| match level {
                LogLevel::Info => "INFO log lines",
                LogLevel::Warning => "WARNING log lines",
                LogLevel::Error => "ERROR log lines",
            })
    }
}

/// Whether `name` is in `text` whole: the characters around it (if any)
/// are not of a name (letters, digits, `-`, `_`).
fn names_whole(text: &str, name: &str) -> bool {
    let of_a_name = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    !name.is_empty()
        && text.match_indices(name).any(|(at, _)| {
            !text[..at].chars().next_back().is_some_and(of_a_name)
                && !text[at + name.len()..]
                    .chars()
                    .next()
                    .is_some_and(of_a_name)
        })
}

fn client_events(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(CLIENT_EVENTS)
}

fn log_levels(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::words(xds_vocabulary::LogLevel::ALL.iter().map(|l| l.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use xds_vocabulary::CallService;

    fn retry(server: &str, delay_ms: u64) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Client(ClientEvent::RetryScheduled {
                server: server.into(),
                service: CallService::Ads,
                delay: Duration::from_millis(delay_ms),
            })),
        }
    }

    #[test]
    fn checks_the_event_its_server_by_host_and_the_delay() {
        let m = ClientEventMatcher {
            event: ClientEventKind::RetryScheduled,
            server: Some("primary".into()),
            delay: Some(Duration::from_millis(1100)),
            level: None,
            contains: None,
            names: None,
            failures: None,
            connected: None,
        };
        assert!(m.matches(&retry("primary:443", 1100), &as_written));
        assert!(!m.matches(&retry("primary:443", 1200), &as_written));
        assert!(!m.matches(&retry("fallback:443", 1100), &as_written));
        assert_eq!(
            m.describe(),
            "client event event=retry_scheduled server=primary delay=1.100s"
        );
    }

    fn log_check(level: Option<LogLevel>) -> ClientEventMatcher {
        ClientEventMatcher {
            event: ClientEventKind::Log,
            server: None,
            delay: None,
            level,
            contains: Some("primary:443".into()),
            names: None,
            failures: None,
            connected: None,
        }
    }

    /// A log check needs the levels it can be met at reported apart from
    /// traces; client events are not needed for it, and other client
    /// events need them whatever the logs.
    #[test]
    fn log_checks_need_the_levels_they_read() {
        let caps = |levels: &[&str], client_events: bool| Capabilities {
            logs: levels.iter().map(|l| l.to_string()).collect(),
            client_events,
            ..Capabilities::default()
        };
        let all = caps(&["info", "warning", "error"], false);
        assert_eq!(log_check(None).missing_capability(&all), None);
        let no_info = caps(&["warning", "error"], false);
        assert_eq!(
            log_check(None).missing_capability(&no_info),
            Some("INFO log lines")
        );
        assert_eq!(
            log_check(Some(LogLevel::Warning)).missing_capability(&no_info),
            None
        );
        assert_eq!(
            log_check(Some(LogLevel::Error)).missing_capability(&caps(&[], true)),
            Some("ERROR log lines")
        );
        let retry = ClientEventMatcher {
            event: ClientEventKind::RetryScheduled,
            ..log_check(None)
        };
        assert_eq!(retry.missing_capability(&all), Some("client events"));
    }

    /// A real client's log names the real address of a server; the check
    /// reads it as the scenario names it.
    #[test]
    fn log_lines_are_read_with_addresses_translated() {
        let line = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Client(ClientEvent::Log {
                level: LogLevel::Warning,
                message: "ADS stream closed: dial tcp 127.0.0.1:5000: connection refused".into(),
            })),
        };
        fn translate(text: &str) -> std::borrow::Cow<'_, str> {
            text.replace("127.0.0.1:5000", "primary:443").into()
        }
        assert!(log_check(Some(LogLevel::Warning)).matches(&line, &translate));
        assert!(!log_check(Some(LogLevel::Warning)).matches(&line, &as_written));
        assert!(!log_check(Some(LogLevel::Error)).matches(&line, &translate));
    }

    /// A name is found whole only: not in a longer name, a number or a
    /// pointer.
    #[test]
    fn names_are_found_whole() {
        assert!(names_whole(
            r#"Ignoring resource deletion for resource "c2""#,
            "c2"
        ));
        assert!(names_whole("ignoring deletion: type T name c2", "c2"));
        assert!(names_whole("c2", "c2"));
        assert!(!names_whole(
            "[xds-client 0xc0001c2b40] ADS stream closed",
            "c2"
        ));
        assert!(!names_whole("cluster c2-new", "c2"));
        assert!(!names_whole("cluster c22", "c2"));
        assert!(!names_whole("anything", ""));
        let line = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Client(ClientEvent::Log {
                level: LogLevel::Info,
                message: "[xds-client 0xc0001c2b40] resource \"c2\" back".into(),
            })),
        };
        let m = ClientEventMatcher {
            names: Some("c2".into()),
            contains: None,
            ..log_check(Some(LogLevel::Info))
        };
        assert!(m.matches(&line, &as_written));
        assert_eq!(m.describe(), "client event event=log level=info names=c2");
    }

    fn status(failures: u64, failing: bool) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Client(ClientEvent::ServerStatus {
                server: "primary:443".into(),
                error: failing
                    .then(|| xds_vocabulary::XdsError::new(tonic::Code::Unavailable, "down")),
                failures,
            })),
        }
    }

    #[test]
    fn checks_a_servers_failure_count_and_connected_figure() {
        let m = ClientEventMatcher {
            event: ClientEventKind::ServerStatus,
            server: Some("primary".into()),
            delay: None,
            level: None,
            contains: None,
            names: None,
            failures: Some(2),
            connected: Some(false),
        };
        assert!(m.matches(&status(2, true), &as_written));
        assert!(!m.matches(&status(1, true), &as_written));
        assert!(!m.matches(&status(2, false), &as_written));
        assert_eq!(
            m.describe(),
            "client event event=server_status server=primary failures=2 connected=false"
        );
    }
}
