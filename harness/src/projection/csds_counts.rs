//! `csds` checks observed through gRFC A78's resource gauge, on a client
//! that has the gauge but no CSDS (grpc-rust's `xds-client` and
//! `tonic-xds`).
//!
//! The gauge (`grpc.xds_client.resources`) counts an XdsClient's cached
//! resources per type and cache state, without names. A check that
//! resource N of type T is in state S reads exactly off it when N is the
//! only resource of type T the client can hold: then "one T resource is
//! S" is "N is S", and "no T resource" is "N is absent". What else a check
//! says (a version, an error, a node, a scope) the gauge cannot show: such
//! a check does not project ([`CsdsMatcher::counts_projection`]).
//!
//! Which names a client can hold is known from two sides: the scenario's
//! own watches (known before their requests leave), and every name the
//! client's requests carried (a channel subscribes what its config names).
//! Before the run, [`plan`] turns away a scenario whose watches alone
//! already mix names; during it, [`CountsView::read`] refuses to answer
//! while the view is not exact (another name of the type was requested, or
//! the gauge counts more resources than the one named). An expectation
//! that met such a moment makes the run not applicable, never passes.

use std::collections::{BTreeMap, BTreeSet};

use xds_client_under_test::ResourceCounts;
use xds_vocabulary::ResourceType;

use crate::matcher::Matcher;
use crate::matcher::csds::{CountsCheck, CsdsMatcher};
use crate::scenario::Scenario;
use crate::step::Step;
use crate::timeline::{CsdsStatus, csds_status_name, type_name};

/// Every `csds` matcher in the scenario's expectations, alternatives and
/// sequences included.
pub fn csds_matchers(scenario: &Scenario) -> Vec<&CsdsMatcher> {
    fn walk<'m>(matcher: &'m Matcher, out: &mut Vec<&'m CsdsMatcher>) {
        match matcher {
            Matcher::Csds(m) => out.push(m),
            Matcher::AnyOf(alternatives) => {
                for a in alternatives {
                    walk(&a.matcher, out);
                }
            }
            Matcher::InOrder(sequence) => {
                for m in sequence {
                    walk(m, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for step in &scenario.steps {
        match &step.step {
            Step::Expect(e) => walk(&e.matcher, &mut out),
            Step::ExpectNone(e) => walk(&e.matcher, &mut out),
            _ => {}
        }
    }
    out
}

/// The names the scenario itself watches, by type.
fn watched(scenario: &Scenario) -> BTreeMap<ResourceType, BTreeSet<String>> {
    let mut watched: BTreeMap<ResourceType, BTreeSet<String>> = BTreeMap::new();
    for step in &scenario.steps {
        let (resource_type, name) = match &step.step {
            Step::Watch(w) => (w.resource_type, &w.name),
            Step::WatchInCallback(w) => (w.resource_type, &w.name),
            _ => continue,
        };
        watched
            .entry(resource_type)
            .or_default()
            .insert(name.clone());
    }
    watched
}

/// Why the scenario's `csds` checks cannot be read off the gauge, if it
/// can already tell before the run: a check that says more than the gauge
/// shows (any alternative of an `any_of` too: the one a client meets must
/// be checkable), or watches that mix names.
pub fn plan(scenario: &Scenario) -> Result<(), String> {
    let watched = watched(scenario);
    for matcher in csds_matchers(scenario) {
        let check = matcher.counts_projection().map_err(str::to_string)?;
        let Some(names) = watched.get(&check.resource_type) else {
            continue;
        };
        if names.contains("*") {
            return Err(format!(
                "a wildcard {} watch (A78's resource counts do not name resources)",
                check.resource_type
            ));
        }
        if let Some(other) = names.iter().find(|n| **n != check.name) {
            return Err(format!(
                "{} watches of {} and {other} (A78's resource counts cannot tell them apart)",
                check.resource_type, check.name
            ));
        }
    }
    Ok(())
}

/// The gauge as last read, and the names the client may hold.
#[derive(Debug, Default)]
pub struct CountsView {
    counts: ResourceCounts,
    /// By type URL: the scenario's watches and every name a request of the
    /// client carried.
    known: BTreeMap<String, BTreeSet<String>>,
}

impl CountsView {
    /// A view that knows the scenario's watches from the start.
    pub fn new(scenario: &Scenario) -> Self {
        let known = watched(scenario)
            .into_iter()
            .map(|(t, names)| (t.type_url().to_string(), names))
            .collect();
        CountsView {
            counts: ResourceCounts::new(),
            known,
        }
    }

    /// A name of `type_url` the client asked for.
    pub fn requested(&mut self, type_url: &str, name: &str) {
        if !self.known.get(type_url).is_some_and(|n| n.contains(name)) {
            self.known
                .entry(type_url.to_string())
                .or_default()
                .insert(name.to_string());
        }
    }

    /// Makes `now` the gauge; returns each bucket that changed, as a
    /// timeline line says it.
    pub fn replace(&mut self, now: ResourceCounts) -> Vec<String> {
        let mut changes = Vec::new();
        let keys: BTreeSet<_> = self.counts.keys().chain(now.keys()).cloned().collect();
        for key in keys {
            let (from, to) = (
                self.counts.get(&key).copied().unwrap_or(0),
                now.get(&key).copied().unwrap_or(0),
            );
            if from != to {
                let scope = if key.target.is_empty() {
                    String::new()
                } else {
                    format!("[{}] ", key.target)
                };
                changes.push(format!(
                    "A78 resources {scope}{} {}: {from} -> {to}",
                    type_name(&key.type_url),
                    key.cache_state
                ));
            }
        }
        self.counts = now;
        changes
    }

    /// Whether the gauge shows what `check` describes; `Err` with why it
    /// cannot tell while the client may hold other resources of the type.
    pub fn read(&self, check: &CountsCheck) -> Result<bool, String> {
        let type_url = check.resource_type.type_url();
        if let Some(other) = self
            .known
            .get(type_url)
            .and_then(|names| names.iter().find(|n| **n != check.name))
        {
            return Err(format!(
                "the client asked for {} {other} besides {} (A78's resource counts cannot \
                 tell them apart)",
                check.resource_type, check.name
            ));
        }
        // Per XdsClient (a channel has its own): at most the one resource.
        let mut per_target: BTreeMap<&str, Vec<(&str, i64)>> = BTreeMap::new();
        for (key, count) in &self.counts {
            if key.type_url == type_url && *count > 0 {
                per_target
                    .entry(&key.target)
                    .or_default()
                    .push((&key.cache_state, *count));
            }
        }
        for (target, buckets) in &per_target {
            let total: i64 = buckets.iter().map(|(_, c)| c).sum();
            if total > 1 {
                return Err(format!(
                    "A78's resource counts show {total} {} resources in {target:?} where the \
                     client asked only for {}",
                    check.resource_type, check.name
                ));
            }
        }
        Ok(match check.status {
            CsdsStatus::Absent => per_target.is_empty(),
            status => per_target
                .values()
                .flatten()
                .any(|(state, _)| status_of(state) == Some(status)),
        })
    }

    /// The gauge, one bucket a line, for failure messages.
    pub fn describe(&self) -> String {
        if self.counts.is_empty() {
            return "  (A78 resource counts: nothing held)\n".to_string();
        }
        let mut out = String::new();
        for (key, count) in &self.counts {
            out.push_str(&format!(
                "  A78 resources [{}] {} {}: {count}\n",
                key.target,
                type_name(&key.type_url),
                key.cache_state
            ));
        }
        out
    }
}

/// The CSDS status a gRFC A78 cache state stands for.
fn status_of(cache_state: &str) -> Option<CsdsStatus> {
    match cache_state {
        "requested" => Some(CsdsStatus::Requested),
        "acked" => Some(CsdsStatus::Acked),
        // With or without the last good value, CSDS says NACKED.
        "nacked" | "nacked_but_cached" => Some(CsdsStatus::Nacked),
        "does_not_exist" => Some(CsdsStatus::DoesNotExist),
        _ => None,
    }
}

/// A check's text, for reasons.
pub fn describe_check(check: &CountsCheck) -> String {
    format!(
        "{} {} {}",
        check.resource_type,
        check.name,
        csds_status_name(check.status)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;
    use xds_client_under_test::ResourceCountKey;

    fn scenario(steps: &str) -> Scenario {
        load_str(
            "t.yaml",
            &format!("description: d\nservers: {{main: {{}}}}\nsteps:\n{steps}"),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn check(status: CsdsStatus) -> CountsCheck {
        CountsCheck {
            resource_type: ResourceType::Cluster,
            name: "c1".into(),
            status,
        }
    }

    fn counts(buckets: &[(&str, &str, i64)]) -> ResourceCounts {
        buckets
            .iter()
            .map(|(target, state, count)| {
                (
                    ResourceCountKey {
                        target: target.to_string(),
                        authority: String::new(),
                        type_url: ResourceType::Cluster.type_url().to_string(),
                        cache_state: state.to_string(),
                    },
                    *count,
                )
            })
            .collect()
    }

    #[test]
    fn one_resource_of_the_type_reads_exactly() {
        let mut view = CountsView::new(&scenario("  - watch: {type: CDS, name: c1}\n"));
        assert_eq!(view.read(&check(CsdsStatus::Absent)), Ok(true));
        assert_eq!(view.read(&check(CsdsStatus::Requested)), Ok(false));
        let changes = view.replace(counts(&[("t", "requested", 1)]));
        assert_eq!(changes, ["A78 resources [t] CDS requested: 0 -> 1"]);
        assert_eq!(view.read(&check(CsdsStatus::Requested)), Ok(true));
        assert_eq!(view.read(&check(CsdsStatus::Absent)), Ok(false));
        view.replace(counts(&[("t", "nacked_but_cached", 1)]));
        assert_eq!(view.read(&check(CsdsStatus::Nacked)), Ok(true));
        assert_eq!(view.read(&check(CsdsStatus::Acked)), Ok(false));
        // Each channel's XdsClient holds its own copy.
        view.replace(counts(&[("a", "acked", 1), ("b", "does_not_exist", 1)]));
        assert_eq!(view.read(&check(CsdsStatus::Acked)), Ok(true));
        assert_eq!(view.read(&check(CsdsStatus::DoesNotExist)), Ok(true));
    }

    #[test]
    fn another_name_of_the_type_makes_the_view_inexact() {
        let mut view = CountsView::new(&scenario("  - watch: {type: CDS, name: c1}\n"));
        view.replace(counts(&[("t", "acked", 2)]));
        let why = view.read(&check(CsdsStatus::Acked)).unwrap_err();
        assert!(why.contains("show 2 CDS resources"), "{why}");
        view.replace(counts(&[("t", "acked", 1)]));
        view.requested(ResourceType::Cluster.type_url(), "c2");
        let why = view.read(&check(CsdsStatus::Acked)).unwrap_err();
        assert!(why.contains("asked for CDS c2 besides c1"), "{why}");
        // Other types do not matter.
        view.requested(ResourceType::Listener.type_url(), "l1");
        view.requested(ResourceType::Listener.type_url(), "l2");
        let mut other = CountsView::new(&scenario("  - watch: {type: CDS, name: c1}\n"));
        other.requested(ResourceType::Listener.type_url(), "l2");
        other.replace(counts(&[("t", "acked", 1)]));
        assert_eq!(other.read(&check(CsdsStatus::Acked)), Ok(true));
    }

    #[test]
    fn the_plan_turns_away_watches_that_mix_names_and_checks_counts_cannot_show() {
        let csds = "  - expect: {csds: {type: CDS, name: c1, status: ACKED}}\n";
        plan(&scenario(&format!(
            "  - watch: {{type: CDS, name: c1}}\n{csds}"
        )))
        .expect("exact");
        let mixed = plan(&scenario(&format!(
            "  - watch: {{type: CDS, name: c1}}\n  - watch: {{type: CDS, name: c2}}\n{csds}"
        )))
        .unwrap_err();
        assert!(mixed.contains("watches of c1 and c2"), "{mixed}");
        let wildcard = plan(&scenario(&format!(
            "  - watch: {{type: CDS, name: \"*\"}}\n{csds}"
        )))
        .unwrap_err();
        assert!(wildcard.contains("wildcard"), "{wildcard}");
        let versioned = scenario(
            "  - watch: {type: CDS, name: c1}\n  - expect: {csds: {type: CDS, name: c1, status: ACKED, version: \"1\"}}\n",
        );
        assert_eq!(csds_matchers(&versioned).len(), 1);
        let why = plan(&versioned).unwrap_err();
        assert!(
            why.contains("more than a type, a name and a status"),
            "{why}"
        );
        // An alternative the gauge cannot check turns the run away too.
        let alternative = scenario(
            "  - watch: {type: CDS, name: c1}\n  - expect:\n      any_of:\n        - csds: {type: CDS, name: c1, status: ACKED}\n        - csds: {type: CDS, name: c1, status: TIMEOUT}\n          divergence: d\n",
        );
        let why = plan(&alternative).unwrap_err();
        assert!(why.contains("RECEIVED_ERROR or TIMEOUT"), "{why}");
    }
}
