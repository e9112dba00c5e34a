//! The reference client behind the client-under-test interface. Watches
//! go to one XdsClient; each dial gets its own per-target XdsClient, as
//! gRFC A71 has gRPC do, so CSDS shows one `client_scope` per target.

use std::collections::BTreeMap;
use std::sync::Arc;

use envoy_types::pb::envoy::service::status::v3::ClientStatusResponse;
use xds_reference_client::resolver::{self, ClusterConfig, Dial, DialUpdate};
use xds_reference_client::{
    Bootstrap, ClientProfile, ResourceType, RetryAfterGoodStream, TcpTransport, WatchId,
    WatcherEvent, XdsClient, XdsClientConfig, XdsTransportFactory,
};

use crate::{
    Capabilities, ClientEnvironment, ClientError, ClientUnderTest, DialNotification, ObservedEvent,
    RpcOutcome, RpcRequest, Transport, WatcherNotification,
};

/// Profiles the reference client accepts.
pub const PROFILES: &[&str] = &["reference", "immediate-retry-after-good-stream"];

/// The scope of the client that serves resource-level watches.
const WATCH_SCOPE: &str = "";

#[derive(Default)]
pub struct ReferenceClient {
    started: Option<Started>,
    watches: BTreeMap<(ResourceType, String), Vec<WatchId>>,
    dials: Vec<(XdsClient, Dial)>,
}

struct Started {
    bootstrap: Bootstrap,
    env: ClientEnvironment,
    profile: ClientProfile,
    transport: Arc<dyn XdsTransportFactory>,
    watch_client: XdsClient,
}

impl ReferenceClient {
    pub fn new() -> Self {
        Self::default()
    }

    fn started(&self) -> Result<&Started, ClientError> {
        self.started
            .as_ref()
            .ok_or_else(|| ClientError::Failed("client not started".into()))
    }
}

fn profile(name: Option<&str>) -> Result<ClientProfile, ClientError> {
    let mut profile = ClientProfile::default();
    match name.unwrap_or("reference") {
        "reference" => {}
        "immediate-retry-after-good-stream" => {
            profile.retry_after_good_stream = RetryAfterGoodStream::Immediately;
        }
        other => {
            return Err(ClientError::Unsupported(format!(
                "profile \"{other}\" (known: {})",
                PROFILES.join(", ")
            )));
        }
    }
    profile.name = name.unwrap_or("reference").to_string();
    Ok(profile)
}

fn new_client(
    started_env: &ClientEnvironment,
    bootstrap: &Bootstrap,
    profile: &ClientProfile,
    transport: &Arc<dyn XdsTransportFactory>,
    scope: &str,
) -> XdsClient {
    let sink = started_env.events.clone();
    let mut config = XdsClientConfig::new(bootstrap.clone());
    config.transport = transport.clone();
    config.profile = profile.clone();
    config.rng_seed = started_env.rng_seed;
    config.client_scope = scope.to_string();
    config.clock_epoch = started_env.clock_epoch;
    config.observer = Some(Arc::new(move |event| sink(ObservedEvent::Client(event))));
    XdsClient::start(config)
}

#[async_trait::async_trait]
impl ClientUnderTest for ReferenceClient {
    fn name(&self) -> &str {
        "reference"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            watch: true,
            dial: true,
            rpc: true,
            csds: true,
            client_events: true,
            fallback: true,
            delta: false,
            virtual_time: true,
            profiles: PROFILES.iter().map(|p| p.to_string()).collect(),
        }
    }

    async fn start(&mut self, env: ClientEnvironment) -> Result<(), ClientError> {
        let bootstrap = Bootstrap::from_json(&env.bootstrap_json)
            .map_err(|e| ClientError::Failed(e.to_string()))?;
        let profile = profile(env.profile.as_deref())?;
        let transport: Arc<dyn XdsTransportFactory> = match &env.transport {
            Transport::InMemory { xds, .. } => xds.clone(),
            Transport::Tcp => Arc::new(TcpTransport),
        };
        let watch_client = new_client(&env, &bootstrap, &profile, &transport, WATCH_SCOPE);
        self.started = Some(Started {
            bootstrap,
            env,
            profile,
            transport,
            watch_client,
        });
        Ok(())
    }

    async fn watch(&mut self, resource_type: ResourceType, name: &str) -> Result<(), ClientError> {
        let started = self.started()?;
        let sink = started.env.events.clone();
        let watched = name.to_string();
        let id = started.watch_client.watch(
            resource_type,
            name,
            Arc::new(move |event: WatcherEvent| {
                let notification = match event {
                    WatcherEvent::Changed(value) => WatcherNotification::Changed {
                        summary: value.summary(),
                    },
                    WatcherEvent::ResourceError(e) => WatcherNotification::ResourceError(e),
                    WatcherEvent::AmbientError(e) => WatcherNotification::AmbientError(e),
                    WatcherEvent::AmbientErrorCleared => WatcherNotification::AmbientErrorCleared,
                    WatcherEvent::DoesNotExist => WatcherNotification::DoesNotExist,
                };
                sink(ObservedEvent::Watcher {
                    resource_type,
                    name: watched.clone(),
                    notification,
                });
            }),
        );
        self.watches
            .entry((resource_type, name.to_string()))
            .or_default()
            .push(id);
        Ok(())
    }

    async fn cancel_watch(
        &mut self,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), ClientError> {
        let key = (resource_type, name.to_string());
        let id = self
            .watches
            .get_mut(&key)
            .and_then(Vec::pop)
            .ok_or_else(|| ClientError::Failed(format!("no watch on {resource_type} {name}")))?;
        self.started()?.watch_client.cancel_watch(id);
        Ok(())
    }

    async fn dial(&mut self, target: &str) -> Result<(), ClientError> {
        let started = self.started()?;
        let client = new_client(
            &started.env,
            &started.bootstrap,
            &started.profile,
            &started.transport,
            target,
        );
        let sink = started.env.events.clone();
        let dialed = target.to_string();
        let dial = resolver::dial(
            client.clone(),
            &started.bootstrap,
            target,
            Arc::new(move |update: DialUpdate| {
                sink(ObservedEvent::Dial {
                    target: dialed.clone(),
                    update: notification(update),
                });
            }),
        );
        self.dials.push((client, dial));
        Ok(())
    }

    async fn rpc(&mut self, _request: &RpcRequest) -> Result<RpcOutcome, ClientError> {
        Err(ClientError::Unsupported(
            "rpc (data plane being written)".into(),
        ))
    }

    async fn csds(&mut self) -> Result<ClientStatusResponse, ClientError> {
        let started = self.started()?;
        let mut clients = vec![started.watch_client.clone()];
        clients.extend(self.dials.iter().map(|(c, _)| c.clone()));
        Ok(xds_reference_client::csds::client_status(&clients).await)
    }

    async fn shutdown(&mut self) {
        self.dials.clear();
        self.watches.clear();
        self.started = None;
    }
}

fn notification(update: DialUpdate) -> DialNotification {
    match update {
        DialUpdate::Error(e) => DialNotification::Error(e),
        DialUpdate::Config(config) => {
            let mut clusters = BTreeMap::new();
            for (name, cluster) in &config.clusters {
                let addresses = cluster.as_ref().map_err(Clone::clone).map(|c| match c {
                    ClusterConfig::Endpoints { endpoints, .. } => endpoints.addresses(),
                    ClusterConfig::LogicalDns { hostname } => vec![hostname.clone()],
                    ClusterConfig::Aggregate { leaf_clusters } => leaf_clusters
                        .iter()
                        .flat_map(|leaf| match config.clusters.get(leaf) {
                            Some(Ok(ClusterConfig::Endpoints { endpoints, .. })) => {
                                endpoints.addresses()
                            }
                            Some(Ok(ClusterConfig::LogicalDns { hostname })) => {
                                vec![hostname.clone()]
                            }
                            _ => Vec::new(),
                        })
                        .collect(),
                });
                clusters.insert(name.clone(), addresses);
            }
            DialNotification::Config {
                summary: config.to_string(),
                clusters,
            }
        }
    }
}
