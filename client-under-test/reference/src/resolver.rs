//! "Dial `xds:///target`": what a gRPC channel's xDS resolver does with the
//! XdsClient. It follows Listener -> RouteConfiguration -> Cluster
//! (aggregate clusters recursively) -> ClusterLoadAssignment, like C-core's
//! XdsDependencyManager (gRFC A74), and reports a complete config only when
//! every resource it needs has arrived or failed — or the error a channel
//! would fail its RPCs with.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use tokio::sync::mpsc;
use tonic::Code;

use crate::bootstrap::Bootstrap;
use crate::client::{WatchId, XdsClient};
use crate::resource::{
    ClusterKind, ClusterResource, EndpointsResource, ListenerResource, ResourceType, Route,
    RouteAction, RouteConfigResource, RouteSource, VirtualHost, XdsResource,
};
use crate::stop::StopOnDrop;
use crate::watcher::{WatcherEvent, XdsError};

/// gRPC's limit on aggregate cluster nesting.
const MAX_AGGREGATE_DEPTH: usize = 16;

/// What a channel to the target would use.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedConfig {
    pub listener: String,
    /// The RDS resource name; None when the route config is inline.
    pub route_config: Option<String>,
    pub virtual_host: String,
    pub routes: Vec<Route>,
    /// Every cluster the routes can reach, aggregate children included.
    pub clusters: BTreeMap<String, Result<ClusterConfig, XdsError>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ClusterConfig {
    Endpoints {
        eds_name: String,
        endpoints: EndpointsResource,
    },
    LogicalDns {
        hostname: String,
    },
    /// The leaf clusters, in priority order.
    Aggregate {
        leaf_clusters: Vec<String>,
    },
}

/// One update of a dial: a config to use, or the error RPCs fail with.
#[derive(Clone, Debug, PartialEq)]
pub enum DialUpdate {
    Config(ResolvedConfig),
    Error(XdsError),
}

impl fmt::Display for ResolvedConfig {
    /// `routes=[prefix "" -> c1] clusters=[c1: EDS e1 [10.0.0.1:80]]`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let routes: Vec<String> = self.routes.iter().map(Route::summary).collect();
        write!(f, "routes=[{}] clusters=[", routes.join(", "))?;
        for (i, (name, config)) in self.clusters.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match config {
                Ok(ClusterConfig::Endpoints {
                    eds_name,
                    endpoints,
                }) => write!(
                    f,
                    "{name}: EDS {eds_name} [{}]",
                    endpoints.addresses().join(",")
                )?,
                Ok(ClusterConfig::LogicalDns { hostname }) => {
                    write!(f, "{name}: LOGICAL_DNS {hostname}")?
                }
                Ok(ClusterConfig::Aggregate { leaf_clusters }) => {
                    write!(f, "{name}: AGGREGATE [{}]", leaf_clusters.join(","))?
                }
                Err(e) => write!(f, "{name}: error {e}")?,
            }
        }
        f.write_str("]")
    }
}

/// Receives dial updates, on the resolver's task, in order.
pub trait DialWatcher: Send + Sync + 'static {
    fn on_update(&self, update: DialUpdate);
}

impl<F: Fn(DialUpdate) + Send + Sync + 'static> DialWatcher for F {
    fn on_update(&self, update: DialUpdate) {
        self(update)
    }
}

/// A target's parts, per gRFC A27/A47: `xds:[//authority]/name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdsTarget {
    pub authority: Option<String>,
    /// The data-plane authority: the name virtual hosts are matched against.
    pub name: String,
}

impl XdsTarget {
    pub fn parse(target: &str) -> Result<XdsTarget, XdsError> {
        let bad = || {
            XdsError::new(
                Code::InvalidArgument,
                format!("invalid xds target URI \"{target}\""),
            )
        };
        let rest = target.strip_prefix("xds:").ok_or_else(bad)?;
        let (authority, path) = match rest.strip_prefix("//") {
            Some(after) => {
                let (authority, path) = after.split_once('/').unwrap_or((after, ""));
                ((!authority.is_empty()).then(|| authority.to_string()), path)
            }
            None => (None, rest.trim_start_matches('/')),
        };
        if path.is_empty() {
            return Err(bad());
        }
        Ok(XdsTarget {
            authority,
            name: percent_decode(path),
        })
    }

    /// The Listener resource name for this target (gRFC A47 templates).
    pub fn listener_name(&self, bootstrap: &Bootstrap) -> Result<String, XdsError> {
        let template = match &self.authority {
            None => bootstrap
                .client_default_listener_resource_name_template
                .clone(),
            Some(a) => {
                let authority = bootstrap.authorities.get(a).ok_or_else(|| {
                    XdsError::new(
                        Code::InvalidArgument,
                        format!("authority \"{a}\" not present in bootstrap config"),
                    )
                })?;
                authority
                    .client_listener_resource_name_template
                    .clone()
                    .unwrap_or_else(|| format!("xdstp://{a}/envoy.config.listener.v3.Listener/%s"))
            }
        };
        Ok(crate::name::fill_template(&template, &self.name))
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A running dial. Dropping it cancels its watches.
pub type Dial = StopOnDrop;

/// Starts resolving `target` with `client`; updates go to `watcher`.
pub fn dial(
    client: XdsClient,
    bootstrap: &Bootstrap,
    target: &str,
    watcher: Arc<dyn DialWatcher>,
) -> Dial {
    let (dial, stop_rx) = StopOnDrop::new();
    let listener =
        XdsTarget::parse(target).and_then(|t| t.listener_name(bootstrap).map(|l| (t, l)));
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    match listener {
        Err(error) => watcher.on_update(DialUpdate::Error(error)),
        Ok((target, listener)) => {
            let resolver = Resolver {
                client,
                watcher,
                events: events_tx,
                authority: target.name,
                listener_name: listener,
                watches: BTreeMap::new(),
                cache: BTreeMap::new(),
                last: None,
            };
            tokio::spawn(resolver.run(events_rx, stop_rx));
        }
    }
    dial
}

type Key = (ResourceType, String);

/// What the resolver knows of one watched resource.
#[derive(Clone, Debug)]
enum Known {
    Value(Arc<XdsResource>),
    Error(XdsError),
    Missing,
}

struct Resolver {
    client: XdsClient,
    watcher: Arc<dyn DialWatcher>,
    events: mpsc::UnboundedSender<(Key, WatcherEvent)>,
    authority: String,
    listener_name: String,
    watches: BTreeMap<Key, WatchId>,
    cache: BTreeMap<Key, Known>,
    last: Option<DialUpdate>,
}

/// Outcome of walking the dependency graph.
enum Walk {
    /// Something needed has not arrived yet.
    Pending,
    Done(DialUpdate),
}

impl Resolver {
    async fn run(
        mut self,
        mut events: mpsc::UnboundedReceiver<(Key, WatcherEvent)>,
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        self.update_watches();
        loop {
            tokio::select! {
                biased;
                _ = &mut stop => break,
                event = events.recv() => match event {
                    Some((key, event)) => {
                        // A response about N resources queues N events:
                        // apply all that are already here, then walk the
                        // graph once (a walk per event is quadratic).
                        let mut changed = self.on_event(key, event);
                        while let Ok((key, event)) = events.try_recv() {
                            changed |= self.on_event(key, event);
                        }
                        if changed {
                            self.update_watches();
                        }
                    }
                    None => break,
                },
            }
        }
        for (_, id) in std::mem::take(&mut self.watches) {
            self.client.cancel_watch(id);
        }
    }

    /// Records `event`; says whether the graph must be walked again.
    fn on_event(&mut self, key: Key, event: WatcherEvent) -> bool {
        if !self.watches.contains_key(&key) {
            return false; // From a watch already cancelled.
        }
        match event {
            WatcherEvent::Changed(value) => {
                self.cache.insert(key, Known::Value(value));
            }
            WatcherEvent::ResourceError(e) => {
                self.cache.insert(key, Known::Error(e));
            }
            WatcherEvent::DoesNotExist => {
                self.cache.insert(key, Known::Missing);
            }
            // A cached value stays in use.
            WatcherEvent::AmbientError(_) | WatcherEvent::AmbientErrorCleared => return false,
        }
        true
    }

    /// Watches exactly what the current graph needs, then reports. New
    /// watches start before stale ones are cancelled, as C-core's
    /// dependency manager does, so a type's subscription never passes
    /// through empty (which for LDS and CDS would mean "everything").
    fn update_watches(&mut self) {
        let (needed, walk) = self.walk();
        let mut added = false;
        for key in &needed {
            if self.watches.contains_key(key) {
                continue;
            }
            let events = self.events.clone();
            let k = key.clone();
            let id = self.client.watch(
                key.0,
                key.1.clone(),
                Arc::new(move |event: WatcherEvent| {
                    let _ = events.send((k.clone(), event));
                }),
            );
            self.watches.insert(key.clone(), id);
            added = true;
        }
        // Defects::stale_watches_hold_the_config: nothing is reported, and
        // no stale watch cancelled, while any watch lacks a result.
        if self.client.defects().stale_watches_hold_the_config
            && self.watches.keys().any(|key| !self.cache.contains_key(key))
        {
            return;
        }
        let stale: Vec<Key> = self
            .watches
            .keys()
            .filter(|k| !needed.contains(*k))
            .cloned()
            .collect();
        for key in stale {
            if let Some(id) = self.watches.remove(&key) {
                self.client.cancel_watch(id);
            }
            self.cache.remove(&key);
        }
        if added {
            return; // New watches: wait for them before reporting.
        }
        if let Walk::Done(update) = walk
            && self.last.as_ref() != Some(&update)
        {
            self.last = Some(update.clone());
            self.watcher.on_update(update);
        }
    }

    fn known(&self, resource_type: ResourceType, name: &str) -> Option<&Known> {
        self.cache.get(&(resource_type, name.to_string()))
    }

    /// Walks listener -> routes -> clusters -> endpoints as far as the cache
    /// allows; returns every resource the walk needs watched.
    fn walk(&self) -> (BTreeSet<Key>, Walk) {
        let mut needed = BTreeSet::new();
        let listener_key = (ResourceType::Listener, self.listener_name.clone());
        needed.insert(listener_key);
        let listener = match self.known(ResourceType::Listener, &self.listener_name) {
            None => return (needed, Walk::Pending),
            Some(Known::Missing) => {
                let e = unavailable(format!(
                    "{}: xDS listener resource does not exist",
                    self.listener_name
                ));
                return (needed, Walk::Done(DialUpdate::Error(e)));
            }
            Some(Known::Error(e)) => {
                let e = unavailable(format!(
                    "{}: xDS listener resource error: {}",
                    self.listener_name, e.message
                ));
                return (needed, Walk::Done(DialUpdate::Error(e)));
            }
            Some(Known::Value(v)) => match &**v {
                XdsResource::Listener(l) => l.clone(),
                // C-core's resolver: a server's Listener is no use to a channel.
                XdsResource::ServerListener(_) => {
                    let e = unavailable(format!(
                        "{}: xDS listener resource error: not an API listener",
                        self.listener_name
                    ));
                    return (needed, Walk::Done(DialUpdate::Error(e)));
                }
                _ => return (needed, Walk::Pending),
            },
        };
        let (route_config_name, route_config) = match self.route_config(&listener, &mut needed) {
            Ok(Some(found)) => found,
            Ok(None) => return (needed, Walk::Pending),
            Err(e) => return (needed, Walk::Done(DialUpdate::Error(e))),
        };
        let Some(vhost) = find_virtual_host(&route_config.virtual_hosts, &self.authority) else {
            let e = unavailable(format!(
                "could not find VirtualHost for {} in RouteConfiguration {}",
                self.authority,
                route_config_name.as_deref().unwrap_or(&self.listener_name)
            ));
            return (needed, Walk::Done(DialUpdate::Error(e)));
        };
        let mut roots = BTreeSet::new();
        for route in &vhost.routes {
            match &route.action {
                RouteAction::Cluster(c) => {
                    roots.insert(c.clone());
                }
                RouteAction::WeightedClusters(ws) => {
                    roots.extend(ws.iter().map(|w| w.name.clone()))
                }
                RouteAction::NonForwarding => {}
            }
        }
        let mut clusters = BTreeMap::new();
        let mut pending = false;
        for root in &roots {
            let mut stack = Vec::new();
            pending |= self.walk_cluster(root, 0, &mut stack, &mut needed, &mut clusters);
        }
        if pending {
            return (needed, Walk::Pending);
        }
        let config = ResolvedConfig {
            listener: self.listener_name.clone(),
            route_config: route_config_name,
            virtual_host: vhost.name.clone(),
            routes: vhost.routes.clone(),
            clusters,
        };
        (needed, Walk::Done(DialUpdate::Config(config)))
    }

    fn route_config(
        &self,
        listener: &ListenerResource,
        needed: &mut BTreeSet<Key>,
    ) -> Result<Option<(Option<String>, RouteConfigResource)>, XdsError> {
        match &listener.http_connection_manager.route_source {
            RouteSource::Inline(rc) => Ok(Some((None, rc.clone()))),
            RouteSource::Rds(name) => {
                needed.insert((ResourceType::RouteConfiguration, name.clone()));
                match self.known(ResourceType::RouteConfiguration, name) {
                    None => Ok(None),
                    Some(Known::Missing) => Err(unavailable(format!(
                        "{name}: xDS route configuration resource does not exist"
                    ))),
                    Some(Known::Error(e)) => Err(unavailable(format!(
                        "{name}: xDS route configuration resource error: {}",
                        e.message
                    ))),
                    Some(Known::Value(v)) => match &**v {
                        XdsResource::RouteConfiguration(rc) => {
                            Ok(Some((Some(name.clone()), rc.clone())))
                        }
                        _ => Ok(None),
                    },
                }
            }
        }
    }

    /// Adds `name` (and, for aggregates, its children) to `out`. True if
    /// something it needs is still pending.
    fn walk_cluster(
        &self,
        name: &str,
        depth: usize,
        stack: &mut Vec<String>,
        needed: &mut BTreeSet<Key>,
        out: &mut BTreeMap<String, Result<ClusterConfig, XdsError>>,
    ) -> bool {
        if out.contains_key(name) || stack.iter().any(|s| s == name) {
            return false; // Seen (or a cycle): C-core skips it.
        }
        if depth >= MAX_AGGREGATE_DEPTH {
            out.insert(
                name.to_string(),
                Err(unavailable(
                    "aggregate cluster graph exceeds max depth".to_string(),
                )),
            );
            return false;
        }
        needed.insert((ResourceType::Cluster, name.to_string()));
        let cluster: ClusterResource = match self.known(ResourceType::Cluster, name) {
            None => return true,
            Some(Known::Missing) => {
                out.insert(
                    name.to_string(),
                    Err(unavailable(format!("CDS resource {name} does not exist"))),
                );
                return false;
            }
            Some(Known::Error(e)) => {
                out.insert(
                    name.to_string(),
                    Err(unavailable(format!("CDS resource {name}: {}", e.message))),
                );
                return false;
            }
            Some(Known::Value(v)) => match &**v {
                XdsResource::Cluster(c) => c.clone(),
                _ => return true,
            },
        };
        match &cluster.kind {
            ClusterKind::Eds { .. } => {
                let eds_name = cluster.eds_resource_name(name).unwrap_or(name).to_string();
                needed.insert((ResourceType::ClusterLoadAssignment, eds_name.clone()));
                let result = match self.known(ResourceType::ClusterLoadAssignment, &eds_name) {
                    None => return true,
                    Some(Known::Missing) => Err(unavailable(format!(
                        "EDS resource {eds_name} does not exist"
                    ))),
                    Some(Known::Error(e)) => Err(unavailable(format!(
                        "EDS resource {eds_name}: {}",
                        e.message
                    ))),
                    Some(Known::Value(v)) => match &**v {
                        XdsResource::ClusterLoadAssignment(e) => Ok(ClusterConfig::Endpoints {
                            eds_name: eds_name.clone(),
                            endpoints: e.clone(),
                        }),
                        _ => return true,
                    },
                };
                out.insert(name.to_string(), result);
                false
            }
            ClusterKind::LogicalDns { hostname } => {
                out.insert(
                    name.to_string(),
                    Ok(ClusterConfig::LogicalDns {
                        hostname: hostname.clone(),
                    }),
                );
                false
            }
            ClusterKind::Aggregate {
                prioritized_cluster_names,
            } => {
                stack.push(name.to_string());
                let mut pending = false;
                for child in prioritized_cluster_names {
                    pending |= self.walk_cluster(child, depth + 1, stack, needed, out);
                }
                stack.pop();
                if pending {
                    return true;
                }
                let mut leaves = Vec::new();
                collect_leaves(name, out, &mut leaves, &mut BTreeSet::new(), self);
                let result = if leaves.is_empty() {
                    Err(unavailable(format!(
                        "aggregate cluster {name} has no leaf clusters"
                    )))
                } else {
                    Ok(ClusterConfig::Aggregate {
                        leaf_clusters: leaves,
                    })
                };
                out.insert(name.to_string(), result);
                false
            }
        }
    }
}

/// Leaf clusters under aggregate `name`, depth first, each once.
fn collect_leaves(
    name: &str,
    out: &BTreeMap<String, Result<ClusterConfig, XdsError>>,
    leaves: &mut Vec<String>,
    visiting: &mut BTreeSet<String>,
    resolver: &Resolver,
) {
    if !visiting.insert(name.to_string()) {
        return;
    }
    let children = match resolver.known(ResourceType::Cluster, name) {
        Some(Known::Value(v)) => match &**v {
            XdsResource::Cluster(ClusterResource {
                kind:
                    ClusterKind::Aggregate {
                        prioritized_cluster_names,
                    },
                ..
            }) => Some(prioritized_cluster_names.clone()),
            _ => None,
        },
        _ => None,
    };
    match children {
        Some(children) => {
            for child in children {
                collect_leaves(&child, out, leaves, visiting, resolver);
            }
        }
        None => {
            if matches!(out.get(name), Some(Ok(_))) && !leaves.iter().any(|l| l == name) {
                leaves.push(name.to_string());
            }
        }
    }
}

fn unavailable(message: String) -> XdsError {
    XdsError::new(Code::Unavailable, message)
}

/// gRPC's virtual host selection: an exact domain wins, then the longest
/// suffix wildcard (`*.foo`), then the longest prefix wildcard (`foo.*`),
/// then `*`.
pub fn find_virtual_host<'a>(
    vhosts: &'a [VirtualHost],
    authority: &str,
) -> Option<&'a VirtualHost> {
    let authority = authority.to_ascii_lowercase();
    let mut best: Option<(u8, usize, &VirtualHost)> = None;
    for vh in vhosts {
        for domain in &vh.domains {
            let domain = domain.to_ascii_lowercase();
            let rank = if domain == authority {
                Some((0u8, domain.len()))
            } else if domain == "*" {
                Some((3, 0))
            } else if let Some(suffix) = domain.strip_prefix('*') {
                authority.ends_with(suffix).then_some((1, domain.len()))
            } else if let Some(prefix) = domain.strip_suffix('*') {
                authority.starts_with(prefix).then_some((2, domain.len()))
            } else {
                None
            };
            if let Some((kind, len)) = rank {
                let better = match best {
                    None => true,
                    Some((bk, blen, _)) => kind < bk || (kind == bk && len > blen),
                };
                if better {
                    best = Some((kind, len, vh));
                }
            }
        }
    }
    best.map(|(_, _, vh)| vh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn vh(name: &str, domains: &[&str]) -> VirtualHost {
        VirtualHost {
            name: name.into(),
            domains: domains.iter().map(|d| d.to_string()).collect(),
            routes: vec![],
        }
    }

    #[rstest]
    #[case("foo.example.com", "exact")]
    #[case("bar.example.com", "suffix")]
    #[case("foo.other", "prefix")]
    #[case("unrelated", "any")]
    fn picks_virtual_host_like_grpc(#[case] authority: &str, #[case] expected: &str) {
        let hosts = vec![
            vh("any", &["*"]),
            vh("prefix", &["foo.*"]),
            vh("suffix", &["*.com", "*.example.com"]),
            vh("exact", &["foo.example.com"]),
        ];
        assert_eq!(
            find_virtual_host(&hosts, authority).map(|v| v.name.as_str()),
            Some(expected)
        );
    }

    #[test]
    fn no_virtual_host_without_match() {
        assert!(find_virtual_host(&[vh("a", &["a.com"])], "b.com").is_none());
    }

    #[rstest]
    #[case("xds:///svc", None, "svc")]
    #[case("xds:svc", None, "svc")]
    #[case("xds://auth.example/svc%20a", Some("auth.example"), "svc a")]
    fn parses_targets(#[case] target: &str, #[case] authority: Option<&str>, #[case] name: &str) {
        let t = XdsTarget::parse(target).unwrap();
        assert_eq!(t.authority.as_deref(), authority);
        assert_eq!(t.name, name);
    }

    #[test]
    fn rejects_bad_targets() {
        assert!(XdsTarget::parse("dns:///svc").is_err());
        assert!(XdsTarget::parse("xds:///").is_err());
    }

    #[test]
    fn listener_names_follow_templates() {
        let b = Bootstrap::from_json(
            r#"{"xds_servers":[{"server_uri":"s","channel_creds":[{"type":"insecure"}]}],
                "client_default_listener_resource_name_template":"prefix/%s",
                "authorities":{"a":{},"b":{"client_listener_resource_name_template":"xdstp://b/envoy.config.listener.v3.Listener/x/%s"}}}"#,
        )
        .unwrap();
        let name = |t: &str| XdsTarget::parse(t).unwrap().listener_name(&b);
        assert_eq!(name("xds:///svc").unwrap(), "prefix/svc");
        assert_eq!(
            name("xds://a/svc").unwrap(),
            "xdstp://a/envoy.config.listener.v3.Listener/svc"
        );
        assert_eq!(
            name("xds://b/s v").unwrap(),
            "xdstp://b/envoy.config.listener.v3.Listener/x/s%20v"
        );
        assert!(
            name("xds://c/svc")
                .unwrap_err()
                .message
                .contains("authority \"c\"")
        );
    }
}
