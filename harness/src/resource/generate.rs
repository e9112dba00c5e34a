//! Generating resources for chaos schedules: for each name a palette
//! offers, its valid form and forms clients must reject, as a scenario
//! file writes them (so a generated scenario reads like a written one).

use std::collections::BTreeMap;

use proptest::prelude::*;
use xds_vocabulary::ResourceType;

use super::file::{
    ClusterSpec, EndpointsSpec, ListenerSpec, LocalitySpec, RawSpec, ResourceErrorSpec,
    ResourceSpec, RouteConfigSpec,
};
use crate::check::Spanned;

/// One resource of the palette's names: valid most of the time.
pub fn resource(
    names: &BTreeMap<ResourceType, Vec<String>>,
    backends: &[String],
) -> BoxedStrategy<Spanned<ResourceSpec>> {
    let types: Vec<ResourceType> = names
        .iter()
        .filter(|(_, n)| !n.is_empty())
        .map(|(t, _)| *t)
        .collect();
    let names = names.clone();
    let backends = backends.to_vec();
    proptest::sample::select(types)
        .prop_flat_map(move |t| one_of(t, &names, &backends))
        .boxed()
}

/// Zero to three resources of one type (a subset of its names, possibly
/// invalid, possibly repeated): what one response may carry.
pub fn resources_of(
    resource_type: ResourceType,
    names: &BTreeMap<ResourceType, Vec<String>>,
    backends: &[String],
) -> BoxedStrategy<Vec<Spanned<ResourceSpec>>> {
    proptest::collection::vec(one_of(resource_type, names, backends), 0..=3).boxed()
}

/// A resource of type `t`, named from the palette.
fn one_of(
    t: ResourceType,
    names: &BTreeMap<ResourceType, Vec<String>>,
    backends: &[String],
) -> BoxedStrategy<Spanned<ResourceSpec>> {
    let own = names.get(&t).cloned().unwrap_or_default();
    let pick = |of: ResourceType| {
        let list = names.get(&of).cloned().unwrap_or_default();
        if list.is_empty() {
            Just(String::from("none")).boxed()
        } else {
            proptest::sample::select(list).boxed()
        }
    };
    let name = proptest::sample::select(own);
    let valid: BoxedStrategy<ResourceSpec> = match t {
        ResourceType::Listener => (name, pick(ResourceType::RouteConfiguration))
            .prop_map(|(name, route)| {
                ResourceSpec::Listener(ListenerSpec {
                    name,
                    rds: Some(route),
                    ..ListenerSpec::default()
                })
            })
            .boxed(),
        ResourceType::RouteConfiguration => (name, pick(ResourceType::Cluster))
            .prop_map(|(name, cluster)| {
                ResourceSpec::RouteConfig(RouteConfigSpec {
                    name,
                    routes_to: Some(cluster),
                    ..RouteConfigSpec::default()
                })
            })
            .boxed(),
        ResourceType::Cluster => (name, any::<bool>())
            .prop_map(|(name, invalid)| {
                ResourceSpec::Cluster(ClusterSpec {
                    name,
                    // gRPC rejects RANDOM (gRFC A27: ROUND_ROBIN or
                    // RING_HASH, or a load_balancing_policy).
                    lb_policy: invalid.then(|| Spanned::new("RANDOM".to_string())),
                    ..ClusterSpec::default()
                })
            })
            .boxed(),
        ResourceType::ClusterLoadAssignment => {
            let backends: Vec<String> = backends.iter().map(|b| format!("backend:{b}")).collect();
            let backend = if backends.is_empty() {
                Just("127.0.0.1:8080".to_string()).boxed()
            } else {
                proptest::sample::select(backends).boxed()
            };
            (name, backend)
                .prop_map(|(name, address)| {
                    ResourceSpec::Endpoints(EndpointsSpec {
                        name,
                        addresses: Some(vec![address]),
                        ..EndpointsSpec::default()
                    })
                })
                .boxed()
        }
    };
    let invalid = invalid(t, names, backends);
    let own = names.get(&t).cloned().unwrap_or_default();
    let undecodable = proptest::sample::select(own)
        .prop_map(move |name| {
            ResourceSpec::Raw(RawSpec {
                resource_type: Spanned::new(t.short_name().to_string()),
                name,
                type_url: None,
                hex: None,
                undecodable: Some(true),
            })
        })
        .boxed();
    prop_oneof![6 => valid, 1 => invalid, 1 => undecodable]
        .prop_map(Spanned::new)
        .boxed()
}

/// A resource of type `t` that decodes, names itself, and is invalid: the
/// client NACKs it and can tell the resource's watchers why (an
/// undecodable one it cannot name).
fn invalid(
    t: ResourceType,
    names: &BTreeMap<ResourceType, Vec<String>>,
    backends: &[String],
) -> BoxedStrategy<ResourceSpec> {
    let (names, backends) = (names.clone(), backends.to_vec());
    proptest::sample::select(names.get(&t).cloned().unwrap_or_default())
        .prop_map(move |name| invalid_form(t, name, &names, &backends))
        .boxed()
}

/// `resource` with another value of the same validity, where its kind has
/// one to spare: a Cluster with its own EDS service name, endpoints at the
/// other backend, a route to the other cluster. Others as they are.
pub fn variant(resource: &ResourceSpec, backends: &[String]) -> ResourceSpec {
    let mut other = resource.clone();
    match &mut other {
        ResourceSpec::Cluster(cluster) => {
            cluster.eds_service_name = Some(format!("{}-elsewhere", cluster.name));
        }
        ResourceSpec::Endpoints(EndpointsSpec {
            addresses: Some(addresses),
            ..
        }) => {
            for address in addresses.iter_mut() {
                if let Some(next) = backends
                    .iter()
                    .map(|b| format!("backend:{b}"))
                    .find(|b| b != address)
                {
                    *address = next;
                }
            }
        }
        ResourceSpec::RouteConfig(RouteConfigSpec {
            routes_to: Some(cluster),
            ..
        }) => {
            *cluster = format!("{cluster}-elsewhere");
        }
        _ => {}
    }
    other
}

/// The palette's first name of type `of` (`none` if it has none): what a
/// resource written here refers to.
fn first_of(names: &BTreeMap<ResourceType, Vec<String>>, of: ResourceType) -> String {
    names
        .get(&of)
        .and_then(|list| list.first().cloned())
        .unwrap_or_else(|| "none".to_string())
}

/// The palette's first backend as an endpoint address.
fn first_backend(backends: &[String]) -> String {
    backends
        .first()
        .map_or_else(|| "127.0.0.1:8080".to_string(), |b| format!("backend:{b}"))
}

/// The resource `name` of type `t` in a valid form; what it refers to is
/// the palette's first of each type.
pub fn valid_form(
    t: ResourceType,
    name: String,
    names: &BTreeMap<ResourceType, Vec<String>>,
    backends: &[String],
) -> ResourceSpec {
    let first = |of: ResourceType| first_of(names, of);
    match t {
        ResourceType::Listener => ResourceSpec::Listener(ListenerSpec {
            name,
            rds: Some(first(ResourceType::RouteConfiguration)),
            ..ListenerSpec::default()
        }),
        ResourceType::RouteConfiguration => ResourceSpec::RouteConfig(RouteConfigSpec {
            name,
            routes_to: Some(first(ResourceType::Cluster)),
            ..RouteConfigSpec::default()
        }),
        ResourceType::Cluster => ResourceSpec::Cluster(ClusterSpec {
            name,
            ..ClusterSpec::default()
        }),
        ResourceType::ClusterLoadAssignment => ResourceSpec::Endpoints(EndpointsSpec {
            name,
            addresses: Some(vec![first_backend(backends)]),
            ..EndpointsSpec::default()
        }),
    }
}

/// The resource `name` of type `t` in a form that decodes and is invalid,
/// by a rule gRPC clients keep (as the validation scenarios show); what
/// it refers to is the palette's first of each type.
pub fn invalid_form(
    t: ResourceType,
    name: String,
    names: &BTreeMap<ResourceType, Vec<String>>,
    backends: &[String],
) -> ResourceSpec {
    let first = |of: ResourceType| first_of(names, of);
    match t {
        // No router filter (gRFC A39: the last filter must be the router).
        ResourceType::Listener => ResourceSpec::Listener(ListenerSpec {
            name,
            rds: Some(first(ResourceType::RouteConfiguration)),
            http_filters: Some(Vec::new()),
            ..ListenerSpec::default()
        }),
        // Weighted clusters whose weights are all 0 (gRFC A28).
        ResourceType::RouteConfiguration => ResourceSpec::RouteConfig(RouteConfigSpec {
            name,
            weighted: Some([(first(ResourceType::Cluster), 0)].into_iter().collect()),
            ..RouteConfigSpec::default()
        }),
        // An LB policy gRPC does not have (gRFC A27).
        ResourceType::Cluster => ResourceSpec::Cluster(ClusterSpec {
            name,
            lb_policy: Some(Spanned::new("RANDOM".to_string())),
            ..ClusterSpec::default()
        }),
        // Priorities with a gap (gRFC A27: they run from 0 without one).
        ResourceType::ClusterLoadAssignment => {
            let address = first_backend(backends);
            let locality = |zone: &str, priority| LocalitySpec {
                region: Some("r1".to_string()),
                zone: Some(zone.to_string()),
                sub_zone: None,
                weight: None,
                priority: Some(priority),
                addresses: vec![address.clone()],
            };
            ResourceSpec::Endpoints(EndpointsSpec {
                name,
                localities: Some(vec![locality("z1", 0), locality("z2", 5)]),
                ..EndpointsSpec::default()
            })
        }
    }
}

/// Usually none; sometimes an error the server reports about one of
/// `names` (xRFC TP3, read by gRFC A88 clients).
pub fn resource_errors(names: Vec<String>) -> BoxedStrategy<Vec<ResourceErrorSpec>> {
    if names.is_empty() {
        return Just(Vec::new()).boxed();
    }
    let one = (
        proptest::sample::select(names),
        proptest::sample::select(vec!["NOT_FOUND", "PERMISSION_DENIED", "UNAVAILABLE"]),
    )
        .prop_map(|(name, code)| {
            vec![ResourceErrorSpec {
                name: Some(name),
                code: Spanned::new(code.to_string()),
                message: "reported by the server".to_string(),
            }]
        });
    prop_oneof![4 => Just(Vec::new()), 1 => one].boxed()
}

impl ResourceSpec {
    /// What a store files it under: its type (as written) and name.
    pub fn identity(&self) -> (String, String) {
        match self {
            ResourceSpec::Listener(l) => ("LDS".into(), l.name.clone()),
            ResourceSpec::RouteConfig(r) => ("RDS".into(), r.name.clone()),
            ResourceSpec::Cluster(c) => ("CDS".into(), c.name.clone()),
            ResourceSpec::Endpoints(e) => ("EDS".into(), e.name.clone()),
            ResourceSpec::Raw(r) => (r.resource_type.value.clone(), r.name.clone()),
            ResourceSpec::Kuma(k) => (
                k.kuma_type.value.clone(),
                format!("{}.{}", k.name, k.mesh.as_deref().unwrap_or_default()),
            ),
            ResourceSpec::Wrapped(inner) => inner.value.identity(),
            ResourceSpec::Proto(json) => {
                let field = |key: &str| {
                    json.value
                        .get(key)
                        .map(|(_, v)| v.value.to_json().to_string())
                        .unwrap_or_default()
                };
                (field("@type"), field("name"))
            }
        }
    }
}
