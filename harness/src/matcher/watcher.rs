//! The `watcher` matcher: a notification to one of the client's watchers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_vocabulary::{ResourceType, code_name};

use super::{Check, Compare, Compile, Description, Translate, keyword_name};
use crate::check::Spanned;
use crate::check::{Checker, Problem, Reachable, code, keyword, opt, parse_resource_type};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatcherMatcherSpec {
    /// Resource type: LDS, RDS, CDS or EDS (default: any).
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    #[serde(default)]
    pub resource_type: Option<Spanned<String>>,
    /// Resource name (default: any).
    pub name: Option<String>,
    /// changed, resource_error, ambient_error, ambient_error_cleared, does_not_exist.
    #[schemars(schema_with = "watcher_events")]
    #[serde(default)]
    pub event: Option<Spanned<String>>,
    /// Status code name of an error.
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// Substring of the error message or of the resource summary.
    pub contains: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatcherEventKind {
    Changed,
    ResourceError,
    AmbientError,
    AmbientErrorCleared,
    DoesNotExist,
}

/// The events' names in scenario files.
pub(crate) const WATCHER_EVENTS: &[(&str, WatcherEventKind)] = &[
    ("changed", WatcherEventKind::Changed),
    ("resource_error", WatcherEventKind::ResourceError),
    ("ambient_error", WatcherEventKind::AmbientError),
    (
        "ambient_error_cleared",
        WatcherEventKind::AmbientErrorCleared,
    ),
    ("does_not_exist", WatcherEventKind::DoesNotExist),
];

#[derive(Clone, Debug, PartialEq)]
pub struct WatcherMatcher {
    pub resource_type: Option<ResourceType>,
    pub name: Option<String>,
    pub event: Option<WatcherEventKind>,
    pub code: Option<tonic::Code>,
    /// Substring of the error message, or of the resource summary.
    pub contains: Option<String>,
}

impl Compile for WatcherMatcherSpec {
    type Matcher = WatcherMatcher;

    fn compile(&self, _scenario: &Checker) -> Result<WatcherMatcher, Problem> {
        Ok(WatcherMatcher {
            resource_type: opt(self.resource_type.as_ref(), parse_resource_type)?,
            name: self.name.clone(),
            event: opt(self.event.as_ref(), |e| {
                keyword(e, "watcher event", WATCHER_EVENTS)
            })?,
            code: opt(self.code.as_ref(), code)?,
            contains: self.contains.clone(),
        })
    }
}

impl Check for WatcherMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::Watcher {
            resource_type,
            name,
            notification,
        }) = &event.kind
        else {
            return None;
        };
        let (kind, code, reported) = match notification {
            WatcherNotification::Changed { summary } => {
                (WatcherEventKind::Changed, None, summary.as_str())
            }
            WatcherNotification::ResourceError(e) => (
                WatcherEventKind::ResourceError,
                Some(e.code),
                e.message.as_str(),
            ),
            WatcherNotification::AmbientError(e) => (
                WatcherEventKind::AmbientError,
                Some(e.code),
                e.message.as_str(),
            ),
            WatcherNotification::AmbientErrorCleared => {
                (WatcherEventKind::AmbientErrorCleared, None, "")
            }
            WatcherNotification::DoesNotExist => (WatcherEventKind::DoesNotExist, None, ""),
        };
        fields
            .eq("type", self.resource_type.as_ref(), resource_type, |t| {
                t.short_name().to_string()
            })
            .eq("name", self.name.as_deref(), name.as_str(), str::to_string)
            .eq("event", self.event.as_ref(), &kind, |k| {
                keyword_name(WATCHER_EVENTS, k)
            })
            .eq("code", self.code.map(Some).as_ref(), &code, |c| {
                c.map(code_name).unwrap_or("(none)").to_string()
            })
            .contains("contains", &self.contains, reported, text);
        Some(())
    }

    fn never_met(&self, reach: &Reachable) -> Option<String> {
        let name = self.name.as_ref()?;
        let types: Vec<ResourceType> = match self.resource_type {
            Some(t) => vec![t],
            None => ResourceType::ALL.to_vec(),
        };
        (!reach.is_watched(&types, name)).then(|| {
            let what = self
                .resource_type
                .map_or_else(|| "any type".to_string(), |t| t.to_string());
            format!("no watch step before it watches {what} `{name}`, so no watcher hears of it")
        })
    }

    fn describe(&self) -> String {
        Description::new("watcher event")
            .given("type", self.resource_type.map(ResourceType::short_name))
            .given("name", self.name.as_ref())
            .given(
                "event",
                self.event.map(|k| keyword_name(WATCHER_EVENTS, &k)),
            )
            .given("code", self.code.map(code_name))
            .given_debug("contains", self.contains.as_ref())
            .into()
    }
}

fn watcher_events(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(WATCHER_EVENTS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_vocabulary::XdsError;

    #[test]
    fn checks_kind_code_and_text() {
        let event = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Watcher {
                resource_type: ResourceType::Cluster,
                name: "c1".into(),
                notification: WatcherNotification::AmbientError(XdsError::new(
                    tonic::Code::Unavailable,
                    "xDS channel down",
                )),
            }),
        };
        let m = |event, code, contains: Option<&str>| WatcherMatcher {
            resource_type: Some(ResourceType::Cluster),
            name: Some("c1".into()),
            event,
            code,
            contains: contains.map(String::from),
        };
        let matches = |m: WatcherMatcher| m.matches(&event, &as_written);
        assert!(matches(m(
            Some(WatcherEventKind::AmbientError),
            Some(tonic::Code::Unavailable),
            Some("down")
        )));
        assert!(!matches(m(
            Some(WatcherEventKind::ResourceError),
            None,
            None
        )));
        assert!(!matches(m(None, Some(tonic::Code::NotFound), None)));
        assert!(!matches(m(None, None, Some("up"))));
        assert!(!crate::matcher::request::RequestMatcher::default().matches(&event, &as_written));
        assert_eq!(
            m(Some(WatcherEventKind::AmbientError), None, Some("down")).describe(),
            "watcher event type=CDS name=c1 event=ambient_error contains=\"down\""
        );
    }
}
