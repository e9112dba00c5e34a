//! The data plane of a dialled target: what a gRPC channel does with a
//! resolved xDS config when an RPC is made — pick the route for the method,
//! the cluster (weighted clusters by a seeded random draw), the endpoint,
//! then make a real unary call over tonic.
//!
//! It is deliberately small, and says so: endpoints are taken from the
//! highest priority that has any, in round-robin order, skipping those that
//! refuse connections (as round robin skips subchannels that are not
//! READY); locality weights, health checking, outlier detection and retries
//! are not applied. An aggregate cluster uses its first leaf with endpoints.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::Code;
use tonic::transport::{Channel, Endpoint};
use xds_vocabulary::data_plane::RawCodec;

use crate::backoff::SplitMix64;
use crate::resolver::{ClusterConfig, ResolvedConfig};
use crate::resource::{HeaderMatch, PathMatcher, Route, RouteAction};
use crate::transport::DataPlaneConnector;
use crate::watcher::XdsError;

/// How one RPC ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcResult {
    pub code: Code,
    pub message: String,
    /// The response payload as text (the backend's name, for the harness's
    /// backends), when the RPC succeeded.
    pub response: Option<String>,
}

impl RpcResult {
    fn error(e: XdsError) -> Self {
        RpcResult {
            code: e.code,
            message: e.message,
            response: None,
        }
    }
}

pub struct DataPlane {
    connector: Arc<dyn DataPlaneConnector>,
    state: Mutex<PickState>,
}

struct PickState {
    rng: SplitMix64,
    /// Next endpoint index per cluster, for round robin.
    next: BTreeMap<String, usize>,
    channels: BTreeMap<String, Channel>,
}

impl DataPlane {
    pub fn new(connector: Arc<dyn DataPlaneConnector>, seed: u64) -> Self {
        DataPlane {
            connector,
            state: Mutex::new(PickState {
                rng: SplitMix64::new(seed),
                next: BTreeMap::new(),
                channels: BTreeMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PickState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Routes `method` through `config` and calls the chosen endpoint.
    pub async fn call(
        &self,
        config: &ResolvedConfig,
        method: &str,
        timeout: Duration,
    ) -> RpcResult {
        let cluster = match self.pick_cluster(config, method) {
            Ok(c) => c,
            Err(e) => return RpcResult::error(e),
        };
        let addresses = match endpoints_of(config, &cluster) {
            Ok(a) => a,
            Err(e) => return RpcResult::error(e),
        };
        if addresses.is_empty() {
            return RpcResult::error(unavailable(format!("cluster {cluster} has no endpoints")));
        }
        let start = {
            let mut state = self.lock();
            let next = state.next.entry(cluster.clone()).or_insert(0);
            let start = *next % addresses.len();
            *next = start + 1;
            start
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last_error = None;
        for offset in 0..addresses.len() {
            let address = &addresses[(start + offset) % addresses.len()];
            let channel = self.channel(address);
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(remaining, unary(channel, method)).await {
                Err(_) => {
                    return RpcResult {
                        code: Code::DeadlineExceeded,
                        message: "deadline exceeded".into(),
                        response: None,
                    };
                }
                Ok(Ok(bytes)) => {
                    return RpcResult {
                        code: Code::Ok,
                        message: String::new(),
                        response: Some(String::from_utf8_lossy(&bytes).into_owned()),
                    };
                }
                // Not connected: round robin would not have picked it.
                Ok(Err(CallError::Connect(e))) => last_error = Some(format!("{address}: {e}")),
                Ok(Err(CallError::Status(status))) => {
                    return RpcResult {
                        code: status.code(),
                        message: status.message().to_string(),
                        response: None,
                    };
                }
            }
        }
        RpcResult::error(unavailable(format!(
            "no endpoint of cluster {cluster} is reachable: {}",
            last_error.unwrap_or_default()
        )))
    }

    fn channel(&self, address: &str) -> Channel {
        let mut state = self.lock();
        if let Some(c) = state.channels.get(address) {
            return c.clone();
        }
        let connector = self.connector.clone();
        let target = address.to_string();
        let channel = Endpoint::from_static("http://backend").connect_with_connector_lazy(
            tower::service_fn(move |_uri: http::Uri| {
                let connect = connector.connect(&target);
                async move { connect.await.map(hyper_util::rt::TokioIo::new) }
            }),
        );
        state.channels.insert(address.to_string(), channel.clone());
        channel
    }

    fn pick_cluster(&self, config: &ResolvedConfig, method: &str) -> Result<String, XdsError> {
        let route = config
            .routes
            .iter()
            .find(|r| route_matches(r, method))
            .ok_or_else(|| {
                unavailable("No matching route found in xDS route config".to_string())
            })?;
        match &route.action {
            RouteAction::Cluster(c) => Ok(c.clone()),
            RouteAction::NonForwarding => Err(unavailable(
                "Matching route has inappropriate action".to_string(),
            )),
            RouteAction::WeightedClusters(ws) => {
                let total: u64 = ws.iter().map(|w| u64::from(w.weight)).sum();
                if total == 0 {
                    return Err(unavailable("weighted clusters have no weight".to_string()));
                }
                let mut draw = self.lock().rng.next_u64() % total;
                for w in ws {
                    if draw < u64::from(w.weight) {
                        return Ok(w.name.clone());
                    }
                    draw -= u64::from(w.weight);
                }
                Ok(ws.last().map(|w| w.name.clone()).unwrap_or_default())
            }
        }
    }
}

/// The endpoints to use for `cluster`: the highest priority with any; for
/// an aggregate, its first leaf that has endpoints.
fn endpoints_of(config: &ResolvedConfig, cluster: &str) -> Result<Vec<String>, XdsError> {
    match config.clusters.get(cluster) {
        None => Err(unavailable(format!(
            "cluster {cluster} is not in the config"
        ))),
        Some(Err(e)) => Err(e.clone()),
        Some(Ok(ClusterConfig::Endpoints { endpoints, .. })) => Ok(endpoints
            .priorities
            .iter()
            .map(|p| {
                p.localities
                    .values()
                    .flat_map(|l| l.endpoints.iter())
                    .filter_map(|e| e.addresses.first().cloned())
                    .collect::<Vec<_>>()
            })
            .find(|addresses| !addresses.is_empty())
            .unwrap_or_default()),
        Some(Ok(ClusterConfig::LogicalDns { hostname })) => Ok(vec![hostname.clone()]),
        Some(Ok(ClusterConfig::Aggregate { leaf_clusters })) => {
            let mut last = None;
            for leaf in leaf_clusters {
                match endpoints_of(config, leaf) {
                    Ok(a) if !a.is_empty() => return Ok(a),
                    Ok(_) => {}
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| {
                unavailable(format!("aggregate cluster {cluster} has no endpoints"))
            }))
        }
    }
}

/// Route matching as gRPC does it for a request with only the method path
/// and gRPC's own headers.
fn route_matches(route: &Route, method: &str) -> bool {
    let m = &route.matcher;
    let (path, pattern_ok) = if m.case_sensitive {
        (method.to_string(), true)
    } else {
        (method.to_lowercase(), true)
    };
    let fold = |p: &str| {
        if m.case_sensitive {
            p.to_string()
        } else {
            p.to_lowercase()
        }
    };
    let path_ok = pattern_ok
        && match &m.path {
            PathMatcher::Prefix(p) => path.starts_with(&fold(p)),
            PathMatcher::Path(p) => path == fold(p),
            PathMatcher::SafeRegex(r) => {
                regex::Regex::new(&format!("^(?:{r})$")).is_ok_and(|re| re.is_match(method))
            }
        };
    path_ok
        && m.headers.iter().all(|h| {
            // Only content-type is present on our requests.
            let value = (h.name == "content-type").then_some("application/grpc");
            let matched = match (&h.matcher, value) {
                (HeaderMatch::Present(p), v) => v.is_some() == *p,
                (_, None) => false,
                (HeaderMatch::Exact(x), Some(v)) => v == x,
                (HeaderMatch::Prefix(x), Some(v)) => v.starts_with(x.as_str()),
                (HeaderMatch::Suffix(x), Some(v)) => v.ends_with(x.as_str()),
                (HeaderMatch::Contains(x), Some(v)) => v.contains(x.as_str()),
                (HeaderMatch::SafeRegex(r), Some(v)) => {
                    regex::Regex::new(&format!("^(?:{r})$")).is_ok_and(|re| re.is_match(v))
                }
                (HeaderMatch::Range { .. }, Some(_)) => false,
            };
            matched != h.invert
        })
}

fn unavailable(message: String) -> XdsError {
    XdsError::new(Code::Unavailable, message)
}

enum CallError {
    Connect(String),
    Status(tonic::Status),
}

async fn unary(channel: Channel, method: &str) -> Result<Vec<u8>, CallError> {
    let path = http::uri::PathAndQuery::try_from(method)
        .map_err(|e| CallError::Status(tonic::Status::invalid_argument(e.to_string())))?;
    let mut client = tonic::client::Grpc::new(channel);
    client
        .ready()
        .await
        .map_err(|e| CallError::Connect(e.to_string()))?;
    match client
        .unary(tonic::Request::new(Vec::new()), path, RawCodec)
        .await
    {
        Ok(response) => Ok(response.into_inner()),
        // tonic reports a failed connection attempt as UNAVAILABLE with a
        // transport-error source: that endpoint is simply not connected.
        Err(status) if status.code() == Code::Unavailable && is_connect_error(&status) => {
            Err(CallError::Connect(status.message().to_string()))
        }
        Err(status) => Err(CallError::Status(status)),
    }
}

fn is_connect_error(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
            )
        {
            return true;
        }
        if e.to_string().contains("tcp connect error")
            || e.to_string().contains("error trying to connect")
        {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{RouteMatch, WeightedCluster};

    fn route(path: PathMatcher, action: RouteAction) -> Route {
        Route {
            matcher: RouteMatch {
                path,
                case_sensitive: true,
                headers: vec![],
                fraction_per_million: None,
            },
            action,
        }
    }

    #[test]
    fn routes_match_by_prefix_path_and_regex() {
        let m = "/xds_conformance.Backend/Who";
        assert!(route_matches(
            &route(PathMatcher::Prefix("".into()), RouteAction::NonForwarding),
            m
        ));
        assert!(route_matches(
            &route(
                PathMatcher::Prefix("/xds_conformance.".into()),
                RouteAction::NonForwarding
            ),
            m
        ));
        assert!(!route_matches(
            &route(
                PathMatcher::Prefix("/other".into()),
                RouteAction::NonForwarding
            ),
            m
        ));
        assert!(route_matches(
            &route(PathMatcher::Path(m.into()), RouteAction::NonForwarding),
            m
        ));
        assert!(route_matches(
            &route(
                PathMatcher::SafeRegex(".*/Who".into()),
                RouteAction::NonForwarding
            ),
            m
        ));
        assert!(!route_matches(
            &route(
                PathMatcher::SafeRegex("Who".into()),
                RouteAction::NonForwarding
            ),
            m
        ));
    }

    #[test]
    fn weighted_picks_follow_the_weights_and_the_seed() {
        struct Nowhere;
        impl DataPlaneConnector for Nowhere {
            fn connect(&self, _: &str) -> crate::transport::ConnectFuture {
                Box::pin(async { Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)) })
            }
        }
        let config = ResolvedConfig {
            listener: "l".into(),
            route_config: None,
            virtual_host: "vh".into(),
            routes: vec![route(
                PathMatcher::Prefix("".into()),
                RouteAction::WeightedClusters(vec![
                    WeightedCluster {
                        name: "a".into(),
                        weight: 90,
                    },
                    WeightedCluster {
                        name: "b".into(),
                        weight: 10,
                    },
                ]),
            )],
            clusters: BTreeMap::new(),
        };
        let picks = |seed| {
            let dp = DataPlane::new(Arc::new(Nowhere), seed);
            (0..1000)
                .map(|_| dp.pick_cluster(&config, "/x/y").unwrap())
                .collect::<Vec<_>>()
        };
        let a = picks(3).iter().filter(|c| *c == "a").count();
        assert!(
            (850..=950).contains(&a),
            "{a} of 1000 picks went to a (weight 90%)"
        );
        assert_eq!(picks(3), picks(3));
    }
}
