//! The `zone` matcher: a change in what a Kuma zone stores from its global
//! (KDS runs), as the zone reports it: the KDS analogue of `watcher`.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::{Capabilities, ObservedEvent};
use xds_vocabulary::kds::ZoneStoreChange;

use super::{Check, Compare, Compile, Description, Translate, keyword_name, quoted};
use crate::check::kds::{kds_name, kuma_type};
use crate::check::{Checker, Problem, Spanned, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZoneMatcherSpec {
    /// The Kuma type: `Mesh`, ...
    #[serde(rename = "type")]
    #[serde(default)]
    pub kuma_type: Option<Spanned<String>>,
    /// The resource, `<name>.<mesh>`: the name it is stored under, or the
    /// one its user gave it (its `kuma.io/display-name`, which a name a
    /// Kuma 2.14 global hash-suffixed carries).
    pub name: Option<Spanned<String>>,
    /// `stored` (new, or replaced by a different one) or `removed`.
    #[schemars(schema_with = "zone_events")]
    #[serde(default)]
    pub event: Option<Spanned<String>>,
    /// Substring of the stored spec, as one line of JSON with sorted keys.
    pub contains: Option<String>,
    /// Labels the stored resource carries (others may be there too).
    pub labels: Option<IndexMap<String, String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneEventKind {
    Stored,
    Removed,
}

const ZONE_EVENTS: &[(&str, ZoneEventKind)] = &[
    ("stored", ZoneEventKind::Stored),
    ("removed", ZoneEventKind::Removed),
];

#[derive(Clone, Debug, PartialEq)]
pub struct ZoneMatcher {
    pub kuma_type: Option<String>,
    pub name: Option<String>,
    pub event: Option<ZoneEventKind>,
    pub contains: Option<String>,
    pub labels: Vec<(String, String)>,
}

impl Compile for ZoneMatcherSpec {
    type Matcher = ZoneMatcher;

    fn compile(&self, scenario: &Checker) -> Result<ZoneMatcher, Problem> {
        let at = self
            .kuma_type
            .as_ref()
            .map(|t| Spanned {
                value: (),
                line: t.line,
                column: t.column,
            })
            .or_else(|| {
                self.name.as_ref().map(|n| Spanned {
                    value: (),
                    line: n.line,
                    column: n.column,
                })
            })
            .unwrap_or_else(|| Spanned::new(()));
        scenario.needs_zone(&at, "the `zone` matcher")?;
        let event = opt(self.event.as_ref(), |e| {
            keyword(e, "zone event", ZONE_EVENTS)
        })?;
        if event == Some(ZoneEventKind::Removed)
            && let Some(field) = [
                ("contains", self.contains.is_some()),
                ("labels", self.labels.is_some()),
            ]
            .iter()
            .find(|(_, set)| *set)
        {
            let at = self.event.as_ref().expect("an event was given");
            return Err(Problem::at(
                at,
                format!("{}: a removal has no spec or labels to check", field.0),
            ));
        }
        Ok(ZoneMatcher {
            kuma_type: opt(self.kuma_type.as_ref(), kuma_type)?,
            name: opt(self.name.as_ref(), |n| kds_name(n).map(|k| k.to_string()))?,
            event,
            contains: self.contains.clone(),
            labels: self
                .labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
    }
}

impl Check for ZoneMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::Zone(change)) = &event.kind else {
            return None;
        };
        let (kind, spec, labels) = match change {
            ZoneStoreChange::Stored { spec, labels, .. } => {
                (ZoneEventKind::Stored, spec.as_str(), Some(labels))
            }
            ZoneStoreChange::Removed { .. } => (ZoneEventKind::Removed, "", None),
        };
        fields
            .eq(
                "type",
                self.kuma_type.as_deref(),
                change.kuma_type(),
                str::to_string,
            )
            .check(
                "name",
                self.name.is_some(),
                || {
                    let want = self.name.as_deref();
                    want == Some(change.name().to_string().as_str())
                        || change
                            .display_name()
                            .is_some_and(|d| want == Some(d.to_string().as_str()))
                },
                || self.name.as_deref().map(quoted).unwrap_or_default(),
                || match change.display_name() {
                    Some(display) => format!(
                        "{} (display name {})",
                        quoted(&change.name().to_string()),
                        quoted(&display.to_string())
                    ),
                    None => quoted(&change.name().to_string()),
                },
            )
            .eq("event", self.event.as_ref(), &kind, |k| {
                keyword_name(ZONE_EVENTS, k)
            })
            .contains("contains", &self.contains, spec, text)
            .check(
                "labels",
                !self.labels.is_empty(),
                || {
                    labels.is_some_and(|labels| {
                        self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
                    })
                },
                || format!("{:?}", self.labels),
                || labels.map_or("(removed)".into(), |l| format!("{l:?}")),
            );
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("zone store change")
            .given("type", self.kuma_type.as_ref())
            .given("name", self.name.as_ref())
            .given("event", self.event.map(|k| keyword_name(ZONE_EVENTS, &k)))
            .given_debug("contains", self.contains.as_ref())
            .given_debug("labels", Some(&self.labels).filter(|l| !l.is_empty()))
            .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.kds_zone).then_some("a Kuma zone (KDS)")
    }
}

fn zone_events(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(ZONE_EVENTS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::collections::BTreeMap;
    use std::time::Duration;
    use xds_vocabulary::kds::KdsName;

    #[test]
    fn checks_type_name_event_spec_and_labels() {
        let stored = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Zone(ZoneStoreChange::Stored {
                kuma_type: "Mesh".into(),
                name: KdsName::global("default"),
                labels: BTreeMap::from([("kuma.io/origin".into(), "global".into())]),
                spec: r#"{"mtls":{"enabledBackend":"ca-1"}}"#.into(),
            })),
        };
        let good = ZoneMatcher {
            kuma_type: Some("Mesh".into()),
            name: Some("default.".into()),
            event: Some(ZoneEventKind::Stored),
            contains: Some("ca-1".into()),
            labels: vec![("kuma.io/origin".into(), "global".into())],
        };
        assert!(good.matches(&stored, &as_written));
        for bad in [
            ZoneMatcher {
                name: Some("default.other".into()),
                ..good.clone()
            },
            ZoneMatcher {
                event: Some(ZoneEventKind::Removed),
                contains: None,
                labels: Vec::new(),
                ..good.clone()
            },
            ZoneMatcher {
                contains: Some("ca-2".into()),
                ..good.clone()
            },
            ZoneMatcher {
                labels: vec![("kuma.io/origin".into(), "zone".into())],
                ..good.clone()
            },
        ] {
            assert!(!bad.matches(&stored, &as_written), "{}", bad.describe());
        }
    }

    #[test]
    fn a_hash_suffixed_resource_is_found_by_its_display_name_or_its_own() {
        let event = |change: ZoneStoreChange| TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Zone(change)),
        };
        let stored = event(ZoneStoreChange::Stored {
            kuma_type: "MeshTimeout".into(),
            name: KdsName::new("mt-1-xz8287465c2624wz", "default"),
            labels: BTreeMap::from([("kuma.io/display-name".into(), "mt-1".into())]),
            spec: "{}".into(),
        });
        let removed = event(ZoneStoreChange::Removed {
            kuma_type: "MeshTimeout".into(),
            name: KdsName::new("mt-1-xz8287465c2624wz", "default"),
            display_name: Some("mt-1".into()),
        });
        let named = |name: &str| ZoneMatcher {
            kuma_type: Some("MeshTimeout".into()),
            name: Some(name.into()),
            event: None,
            contains: None,
            labels: Vec::new(),
        };
        for change in [&stored, &removed] {
            assert!(named("mt-1.default").matches(change, &as_written));
            assert!(named("mt-1-xz8287465c2624wz.default").matches(change, &as_written));
            // The display name is the mesh's: another mesh's is another.
            assert!(!named("mt-1.other").matches(change, &as_written));
            assert!(!named("mt-2.default").matches(change, &as_written));
        }
    }
}
