//! Projected watches: a scenario's watches, observed on a client that has
//! no resource watch API but channels (gRPC C-core through grpcio).
//!
//! A gRPC channel is itself a watcher of its XdsClient: its config chain
//! (Listener, route, Clusters, endpoints) decides what the client watches.
//! So a watch of Cluster `c1` becomes a channel whose route sends
//! everything to `c1`, and what the channel's own watcher of `c1` hears is
//! what the scenario's watcher hears (the client reports it: for C-core,
//! from its trace of the watcher callbacks; `client-under-test/adapters/
//! grpcio/README.md`). The Listener and route of that chain are
//! scaffolding, served by a server of their own through a gRFC A47
//! authority (`xds-conformance-scaffold`), so that nothing the scenario
//! does to its servers (faults, deletions) touches them, and their
//! requests never reach the scenario's servers: all projected channels
//! dial one target, `xds://xds-conformance-scaffold/watches`, share one
//! XdsClient (C-core keys them by target), and differ only in their
//! `:authority`, which picks the virtual host routing to their resource.
//!
//! What cannot be told apart from the scenario's own traffic is not
//! projected: a scenario whose watches could only be observed with
//! subscriptions mixed into its own is not applicable to such a client
//! (see [`plan`] for the reasons). One kind of extra subscription is
//! allowed and kept off the scenario's record: a watched Cluster of type
//! EDS makes its channel subscribe the Cluster's endpoints, so a scenario
//! that watches Clusters but no endpoints sees those EDS requests and
//! responses on its servers as scaffolding (`Source::Scaffold`, never
//! matched).

use std::collections::{BTreeMap, BTreeSet};

use xds_client_under_test::WatchProjection;
use xds_fake_server::ServedResource;
use xds_vocabulary::ResourceType;

use crate::check::Spanned;
use crate::resource::file::{
    ClusterSpec, ListenerSpec, ResourceSpec, RouteConfigSpec, RouteSpec, VirtualHostSpec,
};
use crate::resource::resource_list;
use crate::scenario::{BootstrapPlan, Scenario};
use crate::step::Step;

/// The authority (and the name of the server behind it) of the
/// scaffolding.
pub const SCAFFOLD: &str = "xds-conformance-scaffold";

/// The target every projected watch's channel dials.
pub const TARGET: &str = "xds://xds-conformance-scaffold/watches";

/// How a scenario's watches are projected.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What the client is told: the target, and each watch's authority.
    pub projection: WatchProjection,
    /// What the scaffold server holds.
    pub resources: Vec<ServedResource>,
    /// Resource types (type URLs) the channels subscribe on the scenario's
    /// servers without the scenario watching any of them: their requests
    /// and responses there are scaffolding.
    pub induced: BTreeSet<String>,
}

/// How `scenario`'s watches are observed on a client without a watch
/// API: `Ok(None)` if it has no watches, `Err` with why they cannot be
/// projected.
pub fn plan(scenario: &Scenario) -> Result<Option<Plan>, String> {
    let mut watched: Vec<(ResourceType, String)> = Vec::new();
    let mut channels = false;
    let mut counts_responses = false;
    for step in &scenario.steps {
        match &step.step {
            Step::Watch(w) => {
                let key = (w.resource_type, w.name.clone());
                if !watched.contains(&key) {
                    watched.push(key);
                }
            }
            Step::Dial(_) | Step::Rpc(_) | Step::Serve(_) => channels = true,
            Step::CloseStreamsAfter(f) | Step::DropResponses(f) => {
                counts_responses |= !matches!(
                    f.fault,
                    xds_fake_server::fault::Fault::CloseStreamsAfter(
                        xds_fake_server::fault::CloseStreamsAfter { responses: 0, .. }
                    )
                );
            }
            _ => {}
        }
    }
    if watched.is_empty() {
        return Ok(None);
    }
    if matches!(scenario.bootstrap, BootstrapPlan::Json(_)) {
        return Err("a verbatim bootstrap has no room for the scaffold's authority".into());
    }
    for (resource_type, name) in &watched {
        if !matches!(
            resource_type,
            ResourceType::Cluster | ResourceType::ClusterLoadAssignment
        ) {
            return Err(format!(
                "a {resource_type} watch (only Cluster and endpoint watches are projected: a \
                 channel has one Listener and one route)"
            ));
        }
        if name == "*" {
            return Err("a wildcard watch (a channel subscribes by name)".into());
        }
    }
    let types: BTreeSet<ResourceType> = watched.iter().map(|(t, _)| *t).collect();
    let mut induced = BTreeSet::new();
    if types.contains(&ResourceType::Cluster) {
        if types.contains(&ResourceType::ClusterLoadAssignment) {
            return Err(
                "Cluster and endpoint watches at once (a watched Cluster's channel \
                        subscribes its endpoints too, mixed with the watched ones)"
                    .into(),
            );
        }
        if channels {
            return Err("Cluster watches beside the scenario's own channels (their \
                        endpoint subscriptions would mix with the projection's)"
                .into());
        }
        if counts_responses {
            return Err("Cluster watches and a fault that counts responses (the \
                        projection's endpoint responses would count)"
                .into());
        }
        if scenario.servers.len() > 1 {
            return Err(
                "Cluster watches and several servers (the projection's endpoint \
                        subscriptions would take part in fallback, gRFC A71)"
                    .into(),
            );
        }
        induced.insert(ResourceType::ClusterLoadAssignment.type_url().to_string());
    }
    let mut authorities = BTreeMap::new();
    let mut hosts = Vec::new();
    let mut scaffold = Vec::new();
    for (index, (resource_type, name)) in watched.iter().enumerate() {
        let authority = format!("w{}", index + 1);
        let cluster = match resource_type {
            ResourceType::Cluster => name.clone(),
            // An endpoint watch: a Cluster of the scaffold's whose
            // endpoints are the watched resource.
            _ => {
                let cluster = scaffold_name("envoy.config.cluster.v3.Cluster", &authority);
                scaffold.push(ResourceSpec::Cluster(ClusterSpec {
                    name: cluster.clone(),
                    eds_service_name: Some(name.clone()),
                    ..ClusterSpec::default()
                }));
                cluster
            }
        };
        hosts.push(VirtualHostSpec {
            name: Some(authority.clone()),
            domains: vec![authority.clone()],
            routes: vec![RouteSpec {
                prefix: None,
                path: None,
                cluster: Some(cluster),
                weighted: None,
                non_forwarding: None,
            }],
        });
        authorities.insert((*resource_type, name.clone()), authority);
    }
    let route = scaffold_name("envoy.config.route.v3.RouteConfiguration", "watches");
    scaffold.push(ResourceSpec::Listener(ListenerSpec {
        name: scaffold_name("envoy.config.listener.v3.Listener", "watches"),
        rds: Some(route.clone()),
        ..ListenerSpec::default()
    }));
    scaffold.push(ResourceSpec::RouteConfig(RouteConfigSpec {
        name: route,
        virtual_hosts: Some(hosts),
        ..RouteConfigSpec::default()
    }));
    let specs: Vec<Spanned<ResourceSpec>> = scaffold.into_iter().map(Spanned::new).collect();
    let resources = resource_list(&specs, false, &scenario.backends)
        .map_err(|p| format!("cannot build the scaffold: {}", p.message))?;
    Ok(Some(Plan {
        projection: WatchProjection {
            target: TARGET.to_string(),
            authorities,
        },
        resources,
        induced,
    }))
}

/// An xdstp name of the scaffold's authority (gRFC A47).
fn scaffold_name(message: &str, id: &str) -> String {
    format!("xdstp://{SCAFFOLD}/{message}/{id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    fn scenario(steps: &str) -> Scenario {
        load_str(
            "t.yaml",
            &format!("description: d\nservers: {{main: {{}}}}\nsteps:\n{steps}"),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn each_watched_resource_gets_a_virtual_host_of_its_own() {
        let plan = plan(&scenario(
            "  - watch: {type: CDS, name: c1}\n  - watch: {type: CDS, name: c2}\n  \
             - watch: {type: CDS, name: c1}\n  - cancel_watch: {type: CDS, name: c1}\n",
        ))
        .expect("projectable")
        .expect("watches");
        assert_eq!(plan.projection.target, TARGET);
        let authorities: Vec<(&str, &str)> = plan
            .projection
            .authorities
            .iter()
            .map(|((_, name), a)| (name.as_str(), a.as_str()))
            .collect();
        assert_eq!(authorities, [("c1", "w1"), ("c2", "w2")]);
        let names: Vec<&str> = plan.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "xdstp://xds-conformance-scaffold/envoy.config.listener.v3.Listener/watches",
                "xdstp://xds-conformance-scaffold/envoy.config.route.v3.RouteConfiguration/watches"
            ]
        );
        assert_eq!(
            plan.induced,
            BTreeSet::from([ResourceType::ClusterLoadAssignment.type_url().to_string()])
        );
    }

    #[test]
    fn an_endpoint_watch_goes_through_a_scaffold_cluster() {
        let plan = plan(&scenario("  - watch: {type: EDS, name: e1}\n"))
            .expect("projectable")
            .expect("watches");
        assert!(plan.induced.is_empty());
        assert!(plan.resources.iter().any(
            |r| r.name == "xdstp://xds-conformance-scaffold/envoy.config.cluster.v3.Cluster/w1"
        ));
    }

    #[test]
    fn what_cannot_be_told_apart_is_not_projected() {
        for (steps, why) in [
            ("  - watch: {type: LDS, name: l}\n", "a LDS watch"),
            ("  - watch: {type: CDS, name: \"*\"}\n", "a wildcard watch"),
            (
                "  - watch: {type: CDS, name: c}\n  - watch: {type: EDS, name: c}\n",
                "Cluster and endpoint watches at once",
            ),
            (
                "  - watch: {type: CDS, name: c}\n  - dial: xds:///svc\n",
                "beside the scenario's own channels",
            ),
            (
                "  - watch: {type: CDS, name: c}\n  - close_streams_after: {responses: 1}\n",
                "a fault that counts responses",
            ),
        ] {
            let error = plan(&scenario(steps)).expect_err(steps);
            assert!(error.contains(why), "{steps}: {error}");
        }
        // Closing at the first request counts nothing.
        plan(&scenario(
            "  - watch: {type: CDS, name: c}\n  - close_streams_after: {responses: 0}\n",
        ))
        .expect("projectable");
        assert!(
            plan(&scenario("  - wait: 1s\n"))
                .expect("no watches")
                .is_none()
        );
    }
}
