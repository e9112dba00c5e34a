//! Generating steps: what a generated step may name (the [`Palette`]), and
//! the strategies the step kinds share. Each kind's own strategy is in its
//! module (`Generate`); [`StepSpec::strategies`](super::StepSpec::strategies)
//! lists them.
//!
//! A generated step is a file form, so a generated script is written as
//! YAML like any other and goes through the loader: a step that does not
//! compile where it stands (a `cancel_watch` of a resource not watched) is
//! simply not taken there.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use xds_vocabulary::ResourceType;
use xds_vocabulary::status::STATUS_CODES;

use crate::check::Spanned;
use crate::check::duration::format_duration_in_units;
use crate::resource::file::ResourceSpec;

/// What generated steps may name: the scenario's servers, the resources
/// they may hold (by type), the targets a client may dial and the
/// backends endpoints may point at.
#[derive(Clone, Debug)]
pub struct Palette {
    /// Servers, in declaration order.
    pub servers: Vec<String>,
    /// Resource names by type.
    pub names: BTreeMap<ResourceType, Vec<String>>,
    /// `xds:` targets.
    pub targets: Vec<String>,
    /// Backends, by name.
    pub backends: Vec<String>,
}

impl Palette {
    /// A small world: one server, the Listener `svc` routing to clusters
    /// `c1` and `c2` through the route `r1`, two backends.
    pub fn small(servers: &[&str]) -> Palette {
        Palette {
            servers: servers.iter().map(|s| s.to_string()).collect(),
            names: BTreeMap::from([
                (ResourceType::Listener, vec!["svc".to_string()]),
                (ResourceType::RouteConfiguration, vec!["r1".to_string()]),
                (
                    ResourceType::Cluster,
                    vec!["c1".to_string(), "c2".to_string()],
                ),
                (
                    ResourceType::ClusterLoadAssignment,
                    vec!["c1".to_string(), "c2".to_string()],
                ),
            ]),
            targets: vec!["xds:///svc".to_string()],
            backends: vec!["b1".to_string(), "b2".to_string()],
        }
    }

    /// A resource type the palette has names of.
    pub fn resource_type(&self) -> BoxedStrategy<ResourceType> {
        let types: Vec<ResourceType> = self
            .names
            .iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(t, _)| *t)
            .collect();
        proptest::sample::select(types).boxed()
    }

    /// A type, spelt as scenarios spell it (`CDS`).
    pub fn type_name(&self) -> BoxedStrategy<Spanned<String>> {
        self.resource_type()
            .prop_map(|t| Spanned::new(t.short_name().to_string()))
            .boxed()
    }

    /// A type and one of its names; for full-state types (LDS, CDS)
    /// sometimes `*`, every resource of the type.
    pub fn watchable(&self) -> BoxedStrategy<(ResourceType, String)> {
        let names = self.names.clone();
        self.resource_type()
            .prop_flat_map(move |t| {
                let mut choices = names.get(&t).cloned().unwrap_or_default();
                if xds_vocabulary::resource_type::is_full_state(t.type_url()) {
                    choices.push("*".to_string());
                }
                proptest::sample::select(choices).prop_map(move |name| (t, name))
            })
            .boxed()
    }

    /// Some names of one type (possibly none).
    pub fn names_of(&self, resource_type: ResourceType) -> BoxedStrategy<Vec<String>> {
        let names = self.names.get(&resource_type).cloned().unwrap_or_default();
        let most = names.len();
        proptest::sample::subsequence(names, 0..=most).boxed()
    }

    /// The server a step names: left out when there is only one (as
    /// people write it), else one of them.
    pub fn server(&self) -> BoxedStrategy<Option<Spanned<String>>> {
        match self.servers.as_slice() {
            [_] => Just(None).boxed(),
            servers => proptest::sample::select(servers.to_vec())
                .prop_map(|s| Some(Spanned::new(s)))
                .boxed(),
        }
    }

    /// A target to dial or call.
    pub fn target(&self) -> BoxedStrategy<Spanned<String>> {
        proptest::sample::select(self.targets.clone())
            .prop_map(Spanned::new)
            .boxed()
    }

    /// What one response carries: the server it comes from, its type, and
    /// zero to three resources of that type (a subset of its names,
    /// possibly invalid, possibly repeated).
    pub fn response(&self) -> BoxedStrategy<Response> {
        let names = self.names.clone();
        let backends = self.backends.clone();
        (self.server(), self.resource_type())
            .prop_flat_map(move |(server, resource_type)| {
                (
                    Just(server),
                    Just(resource_type),
                    crate::resource::generate::resources_of(resource_type, &names, &backends),
                )
            })
            .boxed()
    }

    /// One to three resources of the palette, valid or not.
    pub fn resources(&self) -> BoxedStrategy<Vec<Spanned<ResourceSpec>>> {
        proptest::collection::vec(
            crate::resource::generate::resource(&self.names, &self.backends),
            1..=3,
        )
        .boxed()
    }
}

/// What [`Palette::response`] generates: the server (left out when it is
/// the only one), the type, the resources.
pub type Response = (
    Option<Spanned<String>>,
    ResourceType,
    Vec<Spanned<ResourceSpec>>,
);

/// A status code name, as scenarios write it.
pub fn status_code() -> BoxedStrategy<Spanned<String>> {
    proptest::sample::select(
        STATUS_CODES
            .iter()
            .filter(|(name, _)| *name != "OK")
            .map(|(name, _)| name.to_string())
            .collect::<Vec<_>>(),
    )
    .prop_map(Spanned::new)
    .boxed()
}

/// A duration among those that matter to xDS clients: below and above a
/// backoff, the 15 s does-not-exist timer, the 30 s one of gRFC A88.
pub fn duration(choices: &[Duration]) -> BoxedStrategy<Spanned<String>> {
    proptest::sample::select(choices.to_vec())
        .prop_map(|d| Spanned::new(format_duration_in_units(d)))
        .boxed()
}

#[cfg(test)]
mod tests {
    use indexmap::IndexMap;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use super::*;
    use crate::scenario::file::{BackendSpec, ScenarioFile, ServerSpec};
    use crate::scenario::{load_str, to_yaml};
    use crate::step::watch::WatchSpec;
    use crate::step::{STEP_KEYS, StepSpec};

    /// A scenario of the palette's servers and backends playing `steps`.
    fn file(palette: &Palette, steps: Vec<StepSpec>) -> ScenarioFile {
        ScenarioFile {
            description: "generated".into(),
            servers: Spanned::new(
                palette
                    .servers
                    .iter()
                    .map(|s| (s.clone(), ServerSpec::default()))
                    .collect(),
            ),
            backends: palette
                .backends
                .iter()
                .map(|b| (b.clone(), BackendSpec {}))
                .collect::<IndexMap<_, _>>(),
            steps: steps.into_iter().map(Spanned::new).collect(),
            ..ScenarioFile::default()
        }
    }

    /// A watch of every resource the palette names, and of every
    /// resource of each full-state type.
    fn watch_everything(palette: &Palette) -> Vec<StepSpec> {
        let mut watches = Vec::new();
        for (t, names) in &palette.names {
            let wildcard = xds_vocabulary::resource_type::is_full_state(t.type_url());
            for name in names
                .iter()
                .map(String::as_str)
                .chain(wildcard.then_some("*"))
            {
                watches.push(StepSpec::Watch(WatchSpec {
                    resource_type: Spanned::new(t.short_name().to_string()),
                    name: name.to_string(),
                }));
            }
        }
        watches
    }

    #[test]
    fn every_kind_but_serve_kds_and_the_expectations_is_generated() {
        let generated: Vec<&str> = StepSpec::strategies(&Palette::small(&["main"]))
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        // Chaos schedules are ADS runs: KDS's steps need a zone.
        let kds = [
            "set_zone_resources",
            "remove_zone_resources",
            "remove_kuma_resources",
            "send_kds_response",
            "send_kds_request",
        ];
        let expected: Vec<&str> = STEP_KEYS
            .iter()
            .copied()
            .filter(|k| !["serve", "expect", "expect_none", "expect_invariant"].contains(k))
            .filter(|k| !kds.contains(k))
            // Chaos holds no streams (see `step::hold_streams`).
            .filter(|k| !["hold_streams", "release_streams"].contains(k))
            .collect();
        assert_eq!(generated, expected);
    }

    /// Each kind writes what it generates as YAML that loads into a step
    /// of that kind, and reads back into the same text.
    #[test]
    fn generated_steps_write_as_yaml_that_loads_back() {
        for servers in [&["main"][..], &["primary", "fallback"]] {
            let palette = Palette::small(servers);
            let mut runner = TestRunner::deterministic();
            for (key, strategy) in StepSpec::strategies(&palette) {
                for _ in 0..30 {
                    let step = strategy.new_tree(&mut runner).expect("a value").current();
                    let mut steps = watch_everything(&palette);
                    steps.push(step);
                    let yaml = to_yaml(&file(&palette, steps));
                    let scenario = load_str("generated.yaml", &yaml)
                        .unwrap_or_else(|e| panic!("{key}: {e}\n{yaml}"));
                    let last = scenario.steps.last().expect("a step");
                    assert_eq!(last.step.key(), key, "{yaml}");
                    let reread: ScenarioFile =
                        serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
                    assert_eq!(to_yaml(&reread), yaml);
                }
            }
        }
    }

    /// A kind that needs what the script has not got does not compile: a
    /// generator takes that as "not here" (proptest-state-machine's
    /// preconditions are these).
    #[test]
    fn a_step_that_needs_an_active_watch_does_not_compile_without_one() {
        let palette = Palette::small(&["main"]);
        let cancel: StepSpec =
            serde_saphyr::from_str("cancel_watch: {type: CDS, name: c1}").expect("a step");
        let e = load_str("generated.yaml", &to_yaml(&file(&palette, vec![cancel])))
            .expect_err("no watch to cancel");
        assert!(
            e.message.contains("no watch on CDS `c1` is active here"),
            "{e}"
        );
    }
}
