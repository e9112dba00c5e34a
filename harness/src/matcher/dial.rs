//! The `dial` matcher: an update of a dial (the config a channel would use,
//! or the error its RPCs would fail with).

use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::{Capabilities, DialNotification, ObservedEvent};
use xds_vocabulary::code_name;

use super::{Check, Compare, Compile, Description, Translate, same_set};
use crate::check::Spanned;
use crate::check::{Checker, Problem, Reachable, code, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DialMatcherSpec {
    /// The dialled target, e.g. `xds:///svc` (default: any).
    pub target: Option<String>,
    /// true: a config; false: an error.
    pub resolved: Option<bool>,
    /// Status code name of a resolution error (e.g. UNAVAILABLE).
    #[schemars(schema_with = "crate::check::schema::status_code")]
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// Substring of the error message, or of the resolved config's summary.
    pub contains: Option<String>,
    /// cluster -> endpoint addresses (exact set).
    pub clusters: Option<IndexMap<String, Vec<String>>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DialMatcher {
    pub target: Option<String>,
    /// true: a config; false: an error.
    pub resolved: Option<bool>,
    pub code: Option<tonic::Code>,
    pub contains: Option<String>,
    /// cluster -> its endpoint addresses (exact, order ignored); an empty
    /// list matches a cluster in error or without endpoints.
    pub clusters: Option<BTreeMap<String, Vec<String>>>,
}

impl Compile for DialMatcherSpec {
    type Matcher = DialMatcher;

    fn compile(&self, _scenario: &Checker) -> Result<DialMatcher, Problem> {
        Ok(DialMatcher {
            target: self.target.clone(),
            resolved: self.resolved,
            code: opt(self.code.as_ref(), code)?,
            contains: self.contains.clone(),
            clusters: self
                .clusters
                .as_ref()
                .map(|c| c.clone().into_iter().collect()),
        })
    }
}

impl Check for DialMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let EventKind::Client(ObservedEvent::Dial { target, update }) = &event.kind else {
            return None;
        };
        let (error, summary, clusters) = match update {
            DialNotification::Error(e) => (Some(e), e.message.as_str(), None),
            DialNotification::Config { summary, clusters } => {
                (None, summary.as_str(), Some(clusters))
            }
        };
        let got_clusters = || {
            clusters.map_or("(none: an error)".into(), |clusters| {
                let shown: BTreeMap<&String, Vec<String>> = clusters
                    .iter()
                    .map(|(name, addresses)| match addresses {
                        Ok(a) => (name, a.iter().map(|a| text(a).into_owned()).collect()),
                        Err(e) => (name, vec![format!("(error: {e})")]),
                    })
                    .collect();
                format!("{shown:?}")
            })
        };
        fields
            .eq(
                "target",
                self.target.as_deref(),
                target.as_str(),
                str::to_string,
            )
            .eq(
                "resolved",
                self.resolved.as_ref(),
                &error.is_none(),
                bool::to_string,
            )
            .eq(
                "code",
                self.code.map(Some).as_ref(),
                &error.map(|e| e.code),
                |c| c.map_or("(none: resolved)", code_name).to_string(),
            )
            .contains("contains", &self.contains, summary, text)
            .check(
                "clusters",
                self.clusters.is_some(),
                || {
                    let (Some(want), Some(clusters)) = (&self.clusters, clusters) else {
                        return false;
                    };
                    want.len() == clusters.len()
                        && want.iter().all(|(name, addresses)| {
                            let got: &[String] = match clusters.get(name) {
                                Some(Ok(a)) => a,
                                Some(Err(_)) => &[],
                                None => return false,
                            };
                            same_set(
                                &Some(addresses.clone()),
                                got.iter().map(String::as_str),
                                text,
                            )
                        })
                },
                || format!("{:?}", self.clusters.clone().unwrap_or_default()),
                got_clusters,
            );
        Some(())
    }

    fn never_met(&self, reach: &Reachable) -> Option<String> {
        let target = self.target.as_ref()?;
        (!reach.is_dialled(target))
            .then(|| format!("no dial or rpc step before it dials `{target}`"))
    }

    fn describe(&self) -> String {
        Description::new("dial update")
            .given("target", self.target.as_ref())
            .given("resolved", self.resolved)
            .given("code", self.code.map(code_name))
            .given_debug("contains", self.contains.as_ref())
            .given_debug("clusters", self.clusters.as_ref())
            .into()
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.dial_config).then_some("reports of the resolved config")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_vocabulary::XdsError;

    fn config(clusters: &[(&str, Result<&[&str], ()>)]) -> TimelineEvent {
        let clusters = clusters
            .iter()
            .map(|(name, addresses)| {
                let addresses = match addresses {
                    Ok(list) => Ok(list.iter().map(|a| a.to_string()).collect()),
                    Err(()) => Err(XdsError::new(tonic::Code::Unavailable, "no endpoints")),
                };
                (name.to_string(), addresses)
            })
            .collect();
        TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::Dial {
                target: "xds:///svc".into(),
                update: DialNotification::Config {
                    summary: "route to c1".into(),
                    clusters,
                },
            }),
        }
    }

    #[test]
    fn checks_clusters_as_exact_sets() {
        let m = DialMatcher {
            target: Some("xds:///svc".into()),
            resolved: Some(true),
            code: None,
            contains: None,
            clusters: Some(BTreeMap::from([
                ("c1".to_string(), vec!["a:1".to_string(), "b:1".to_string()]),
                ("c2".to_string(), vec![]),
            ])),
        };
        let matches = |event: &TimelineEvent| m.matches(event, &as_written);
        assert!(matches(&config(&[
            ("c1", Ok(&["b:1", "a:1"])),
            ("c2", Err(()))
        ])));
        assert!(!matches(&config(&[("c1", Ok(&["a:1"])), ("c2", Ok(&[]))])));
        assert!(!matches(&config(&[("c1", Ok(&["a:1", "b:1"]))])));
        let error = DialMatcher {
            resolved: Some(false),
            clusters: None,
            ..m.clone()
        };
        assert!(!error.matches(&config(&[("c1", Ok(&[]))]), &as_written));
        assert_eq!(
            error.describe(),
            "dial update target=xds:///svc resolved=false"
        );
    }
}
