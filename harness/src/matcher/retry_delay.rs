//! The `retry_delay` matcher: a new ADS stream on a server, by how long
//! after the server's last stream ended it opened (a client's delay
//! between two stream attempts, gRFC A57's backoff), in a range.
//!
//! A range, because every gRPC client jitters its backoff (+-20 %,
//! gRPC's `connection-backoff.md`), so only the reference client's seeded
//! delays are exact; and measured between two server events, so a run on
//! real time decides on when things happened, not on when the harness got
//! round to a step's window.
//!
//! What the server measures on real time is the client's delay plus the
//! transport's: the client starts its backoff only once the end of the
//! stream has reached it, and its next stream reaches the server some
//! time after it opened it (144.003 s for a backoff within 144 s, grpc-go
//! in the peer matrix). So on real time a measured delay stands for a
//! backoff up to [`RunMode::lateness`] shorter, the slack every real-time
//! window gets (see [`RetryDelayMatcher::measured_on`]): the range stays
//! as written, the doubt goes to the client. In process, on the paused
//! clock, the delay is the backoff and is held exactly.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::event::ServerEvent;

use super::{Check, Compare, Compile, Description, Doubt, Translate};
use crate::check::duration::format_duration;
use crate::check::{Checker, Problem, Spanned, duration, opt};
use crate::clock::RunMode;
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryDelayMatcherSpec {
    /// The server it happened on (default: any).
    pub server: Option<Spanned<String>>,
    /// The shortest delay that matches, e.g. `96s` (`0s` for none).
    pub min: Spanned<String>,
    /// The longest delay that matches, e.g. `144s` (default: none).
    pub max: Option<Spanned<String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RetryDelayMatcher {
    pub server: Option<String>,
    pub min: Duration,
    pub max: Option<Duration>,
    /// How much of a measured delay may be the transport's, and which way
    /// that doubt goes: nothing as written (and in process).
    pub slack: Option<(Duration, Doubt)>,
}

impl RetryDelayMatcher {
    /// This matcher as a run in `mode` measures: on real time, a measured
    /// delay `d` stands for a backoff from `d - lateness` to `d` (see the
    /// module's doc), and `doubt` says whether one that may be in the
    /// range matches (an `expect`) or only one that surely is (an
    /// `expect_none`). On virtual time the delay is the backoff: exact.
    pub fn measured_on(&self, mode: RunMode, doubt: Doubt) -> Self {
        let lateness = mode.lateness();
        RetryDelayMatcher {
            slack: (!lateness.is_zero()).then_some((lateness, doubt)),
            ..self.clone()
        }
    }

    /// Whether the backoff a server measured as `delay` is in the range.
    fn in_range(&self, delay: Duration) -> bool {
        let within = |shortest: Duration, longest: Duration| {
            shortest >= self.min && self.max.is_none_or(|max| longest <= max)
        };
        match self.slack {
            None => within(delay, delay),
            // It may be in the range: its longest may reach `min`, its
            // shortest `max`.
            Some((slack, Doubt::Match)) => {
                delay >= self.min
                    && self
                        .max
                        .is_none_or(|max| delay.saturating_sub(slack) <= max)
            }
            // It surely is: every backoff it may stand for is.
            Some((slack, Doubt::Miss)) => within(delay.saturating_sub(slack), delay),
        }
    }
}

impl Compile for RetryDelayMatcherSpec {
    type Matcher = RetryDelayMatcher;

    fn compile(&self, scenario: &Checker) -> Result<RetryDelayMatcher, Problem> {
        let min = duration(&self.min, "retry_delay.min")?;
        let max = opt(self.max.as_ref(), |d| duration(d, "retry_delay.max"))?;
        if let (Some(written), Some(max)) = (&self.max, max)
            && max < min
        {
            return Err(Problem::at(
                written,
                format!(
                    "retry_delay: `max` ({}) is shorter than `min` ({})",
                    format_duration(max),
                    format_duration(min)
                ),
            ));
        }
        Ok(RetryDelayMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            min,
            max,
            slack: None,
        })
    }
}

impl Check for RetryDelayMatcher {
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
        // A stream with no stream before it, or opened beside another,
        // is no retry.
        let ServerEvent::StreamOpened {
            after_close: Some(delay),
            ..
        } = &**e
        else {
            return None;
        };
        let delay = *delay;
        let range = || {
            let written = format!(
                "{} to {}",
                format_duration(self.min),
                self.max
                    .map(format_duration)
                    .unwrap_or_else(|| "any".into())
            );
            match self.slack {
                None => written,
                Some((slack, _)) => format!(
                    "{written} (measured on real time: up to {:.3}s of it the transport's)",
                    slack.as_secs_f64()
                ),
            }
        };
        fields
            .eq("server", self.server.as_deref(), source, str::to_string)
            .check(
                "delay",
                true,
                || self.in_range(delay),
                range,
                || format!("{:.3}s", delay.as_secs_f64()),
            );
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("retry delay")
            .given("server", self.server.as_ref())
            .field("min", format_duration(self.min))
            .given("max", self.max.map(format_duration))
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use xds_vocabulary::AdsProtocol;

    fn opened(after_close: Option<Duration>) -> TimelineEvent {
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("primary".into()),
            kind: EventKind::Server(Box::new(ServerEvent::StreamOpened {
                stream: 2,
                connection: Some(1),
                protocol: AdsProtocol::Sotw,
                after_close,
            })),
        }
    }

    #[test]
    fn matches_a_retry_in_its_range_and_nothing_else() {
        let m = RetryDelayMatcher {
            server: Some("primary".into()),
            min: Duration::from_secs(96),
            max: Some(Duration::from_secs(144)),
            slack: None,
        };
        let after = |ms| opened(Some(Duration::from_millis(ms)));
        assert!(m.matches(&after(96_000), &as_written));
        assert!(m.matches(&after(144_000), &as_written));
        assert!(!m.matches(&after(95_999), &as_written));
        assert!(!m.matches(&after(144_001), &as_written));
        // The first stream, or one beside another: no retry at all.
        assert!(!m.matches(&opened(None), &as_written));
        assert!(m.explain_fields(&opened(None), &as_written).is_none());
        let fields = m.explain_fields(&after(176_000), &as_written).unwrap();
        let delay = fields.iter().find(|f| f.name == "delay").unwrap();
        assert_eq!(
            (delay.want.as_str(), delay.got.as_str(), delay.ok),
            ("96s to 144s", "176.000s", false)
        );
        assert_eq!(m.describe(), "retry delay server=primary min=96s max=144s");
        let at_least = RetryDelayMatcher {
            server: None,
            min: Duration::from_secs(1),
            max: None,
            slack: None,
        };
        assert!(at_least.matches(&after(500_000), &as_written));
        assert!(!at_least.matches(&after(999), &as_written));
    }

    #[test]
    fn on_real_time_a_delay_may_be_the_transports_by_the_real_time_slack() {
        let written = RetryDelayMatcher {
            server: None,
            min: Duration::from_secs(96),
            max: Some(Duration::from_secs(144)),
            slack: None,
        };
        let after = |ms| opened(Some(Duration::from_millis(ms)));
        // In process the delay is the backoff: held exactly, either way.
        for doubt in [Doubt::Match, Doubt::Miss] {
            let exact = written.measured_on(RunMode::Virtual, doubt);
            assert_eq!(exact, written);
            assert!(!exact.matches(&after(144_003), &as_written));
            assert!(exact.matches(&after(96_000), &as_written));
        }
        // An `expect` on real time: grpc-go's 144.003 s may be a backoff
        // within 144 s, so it matches; past the slack it does not, and
        // the slack never makes a delay shorter than `min` match (the
        // transport only lengthens what the server sees).
        let expect = written.measured_on(RunMode::RealTime, Doubt::Match);
        assert!(expect.matches(&after(144_003), &as_written));
        assert!(expect.matches(&after(144_300), &as_written));
        assert!(!expect.matches(&after(144_301), &as_written));
        assert!(!expect.matches(&after(95_999), &as_written));
        let fields = expect.explain_fields(&after(176_000), &as_written).unwrap();
        let delay = fields.iter().find(|f| f.name == "delay").unwrap();
        assert_eq!(
            delay.want,
            "96s to 144s (measured on real time: up to 0.300s of it the transport's)"
        );
        // The scenario's words are unchanged.
        assert_eq!(expect.describe(), "retry delay min=96s max=144s");
        // An `expect_none` on real time: only a delay surely in the range
        // counts, so 96.1 s (a backoff of 95.8 s, perhaps) does not.
        let none = written.measured_on(RunMode::RealTime, Doubt::Miss);
        assert!(!none.matches(&after(96_100), &as_written));
        assert!(none.matches(&after(96_300), &as_written));
        assert!(none.matches(&after(144_000), &as_written));
        assert!(!none.matches(&after(144_001), &as_written));
    }
}
