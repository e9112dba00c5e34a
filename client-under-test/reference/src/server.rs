//! What an xDS-enabled gRPC server does with the XdsClient (gRFC A36): it
//! watches the Listener named by the bootstrap's
//! `server_listener_resource_name_template` for its listening address,
//! checks that the Listener is a TCP listener on that very address, waits
//! for the RouteConfigurations its filter chains name, and only then
//! serves. Its serving status is what the outside world sees, as C-core's
//! `XdsServerConfigFetcher::ListenerWatcher` reports it:
//! - SERVING once, on the first complete configuration (later good updates
//!   replace the configuration silently);
//! - NOT_SERVING on every fatal error: a resource error or does-not-exist
//!   for the Listener, a Listener that is not a TCP listener, or one whose
//!   address is not the listening address. The configuration in use is
//!   dropped, so the next good update reports SERVING again.
//!
//! Ambient errors change nothing: the server keeps its configuration.
//!
//! The data plane (accepting connections, matching filter chains, RBAC)
//! is not modelled: the harness observes a server through its serving
//! status, its requests on the wire and CSDS.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::mpsc;
use tonic::Code;

use crate::bootstrap::Bootstrap;
use crate::client::{WatchId, XdsClient};
use crate::resource::{
    FilterChainData, ResourceType, RouteSource, ServerListenerResource, XdsResource,
};
use crate::stop::StopOnDrop;
use crate::watcher::{WatcherEvent, XdsError};

/// The `client_scope` of the XdsClient that xDS-enabled servers share
/// (gRFC A71).
pub const SERVER_CLIENT_SCOPE: &str = "#server";

/// An xDS-enabled server's serving status.
#[derive(Clone, Debug, PartialEq)]
pub enum ServingStatus {
    Serving,
    NotServing(XdsError),
}

/// Receives serving-status changes, on the server's task, in order.
pub trait ServingStatusWatcher: Send + Sync + 'static {
    fn on_status(&self, status: ServingStatus);
}

impl<F: Fn(ServingStatus) + Send + Sync + 'static> ServingStatusWatcher for F {
    fn on_status(&self, status: ServingStatus) {
        self(status)
    }
}

/// The Listener resource name an xDS-enabled server on
/// `listening_address` watches. xdstp names get the address
/// percent-encoded, as for client listener names (gRFC A47).
pub fn listener_resource_name(
    bootstrap: &Bootstrap,
    listening_address: &str,
) -> Result<String, XdsError> {
    let template = bootstrap
        .server_listener_resource_name_template
        .as_deref()
        .ok_or_else(|| {
            XdsError::new(
                Code::FailedPrecondition,
                "server_listener_resource_name_template not provided in bootstrap file.",
            )
        })?;
    Ok(crate::name::fill_template(template, listening_address))
}

/// A running xDS-enabled server. Dropping it cancels its watches.
pub type Serve = StopOnDrop;

/// Starts an xDS-enabled server's watch for `listening_address`
/// (`ip:port`, IPv6 in brackets) on `client`; status changes go to
/// `watcher`. Without a name template it reports NOT_SERVING at once.
pub fn serve(
    client: XdsClient,
    bootstrap: &Bootstrap,
    listening_address: &str,
    watcher: Arc<dyn ServingStatusWatcher>,
) -> Serve {
    let (serve, stop_rx) = StopOnDrop::new();
    match listener_resource_name(bootstrap, listening_address) {
        Err(error) => watcher.on_status(ServingStatus::NotServing(error)),
        Ok(name) => {
            let (events_tx, events_rx) = mpsc::unbounded_channel();
            let server = ServerWatch {
                client,
                watcher,
                events: events_tx,
                listening_address: listening_address.to_string(),
                listener_watch: None,
                route_watches: BTreeMap::new(),
                routes_received: BTreeSet::new(),
                current: None,
                pending: None,
            };
            tokio::spawn(server.run(name, events_rx, stop_rx));
        }
    }
    serve
}

type Event = (ResourceType, String, WatcherEvent);

struct ServerWatch {
    client: XdsClient,
    watcher: Arc<dyn ServingStatusWatcher>,
    events: mpsc::UnboundedSender<Event>,
    listening_address: String,
    listener_watch: Option<WatchId>,
    route_watches: BTreeMap<String, WatchId>,
    /// RouteConfigurations that have had a first answer (a value or an
    /// error: either completes a filter chain, as in C-core).
    routes_received: BTreeSet<String>,
    /// The configuration in use: Some while serving.
    current: Option<Arc<ServerListenerResource>>,
    /// A newer Listener waiting for its RouteConfigurations.
    pending: Option<Arc<ServerListenerResource>>,
}

impl ServerWatch {
    async fn run(
        mut self,
        listener_name: String,
        mut events: mpsc::UnboundedReceiver<Event>,
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        self.listener_watch = Some(self.watch(ResourceType::Listener, &listener_name));
        loop {
            tokio::select! {
                biased;
                _ = &mut stop => break,
                event = events.recv() => match event {
                    Some((resource_type, name, event)) => self.on_event(resource_type, &name, event),
                    None => break,
                },
            }
        }
        if let Some(id) = self.listener_watch.take() {
            self.client.cancel_watch(id);
        }
        for (_, id) in std::mem::take(&mut self.route_watches) {
            self.client.cancel_watch(id);
        }
    }

    fn watch(&self, resource_type: ResourceType, name: &str) -> WatchId {
        let events = self.events.clone();
        let watched = name.to_string();
        self.client.watch(
            resource_type,
            name,
            Arc::new(move |event: WatcherEvent| {
                let _ = events.send((resource_type, watched.clone(), event));
            }),
        )
    }

    fn on_event(&mut self, resource_type: ResourceType, name: &str, event: WatcherEvent) {
        match resource_type {
            ResourceType::Listener => self.on_listener(event),
            ResourceType::RouteConfiguration => {
                if !self.route_watches.contains_key(name) {
                    return; // From a watch already cancelled.
                }
                match event {
                    WatcherEvent::Changed(_)
                    | WatcherEvent::ResourceError(_)
                    | WatcherEvent::DoesNotExist => {
                        self.routes_received.insert(name.to_string());
                        self.maybe_promote();
                    }
                    WatcherEvent::AmbientError(_) | WatcherEvent::AmbientErrorCleared => {}
                }
            }
            _ => {}
        }
    }

    fn on_listener(&mut self, event: WatcherEvent) {
        match event {
            WatcherEvent::Changed(value) => match &*value {
                XdsResource::ServerListener(listener) => {
                    if listener.address != self.listening_address {
                        return self.fatal(XdsError::new(
                            Code::FailedPrecondition,
                            "Address in LDS update does not match listening address",
                        ));
                    }
                    if self.current.as_deref() == Some(listener) {
                        return; // Unchanged: nothing to do.
                    }
                    self.pending = Some(Arc::new(listener.clone()));
                    self.update_route_watches();
                    self.maybe_promote();
                }
                _ => self.fatal(XdsError::new(
                    Code::FailedPrecondition,
                    "LDS resource is not a TCP listener",
                )),
            },
            WatcherEvent::ResourceError(e) => self.fatal(XdsError::new(
                e.code,
                format!("LDS resource: {}", e.message),
            )),
            WatcherEvent::DoesNotExist => self.fatal(XdsError::new(
                Code::NotFound,
                "LDS resource: does not exist",
            )),
            // The configuration in use stays in use.
            WatcherEvent::AmbientError(_) | WatcherEvent::AmbientErrorCleared => {}
        }
    }

    /// Stops serving (if it was) and says why.
    fn fatal(&mut self, error: XdsError) {
        self.pending = None;
        self.current = None;
        self.update_route_watches();
        self.watcher.on_status(ServingStatus::NotServing(error));
    }

    /// The pending Listener becomes the one in use once every filter
    /// chain has its RouteConfiguration.
    fn maybe_promote(&mut self) {
        let Some(pending) = &self.pending else {
            return;
        };
        if !route_names(pending)
            .iter()
            .all(|name| self.routes_received.contains(name))
        {
            return;
        }
        let first_good_update = self.current.is_none();
        self.current = self.pending.take();
        self.update_route_watches();
        if first_good_update {
            self.watcher.on_status(ServingStatus::Serving);
        }
    }

    /// Watches the RouteConfigurations of the current and pending
    /// Listeners; new watches start before stale ones are cancelled.
    fn update_route_watches(&mut self) {
        let needed: BTreeSet<String> = [&self.current, &self.pending]
            .into_iter()
            .flatten()
            .flat_map(|l| route_names(l))
            .collect();
        for name in &needed {
            if !self.route_watches.contains_key(name) {
                let id = self.watch(ResourceType::RouteConfiguration, name);
                self.route_watches.insert(name.clone(), id);
            }
        }
        let stale: Vec<String> = self
            .route_watches
            .keys()
            .filter(|name| !needed.contains(*name))
            .cloned()
            .collect();
        for name in stale {
            if let Some(id) = self.route_watches.remove(&name) {
                self.client.cancel_watch(id);
            }
            self.routes_received.remove(&name);
        }
    }
}

/// The RouteConfiguration names a server Listener's filter chains use.
fn route_names(listener: &ServerListenerResource) -> BTreeSet<String> {
    filter_chains(listener)
        .filter_map(|chain| match &chain.http_connection_manager.route_source {
            RouteSource::Rds(name) => Some(name.clone()),
            RouteSource::Inline(_) => None,
        })
        .collect()
}

/// Every filter chain of a Listener, the default one included.
fn filter_chains(listener: &ServerListenerResource) -> impl Iterator<Item = &FilterChainData> {
    listener
        .filter_chain_map
        .destination_ips
        .iter()
        .flat_map(|d| d.source_types.iter().flatten())
        .flat_map(|s| s.ports.values().map(|chain| chain.as_ref()))
        .chain(listener.default_filter_chain.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bootstrap(template: Option<&str>) -> Bootstrap {
        let mut json = serde_json::json!({
            "xds_servers": [{"server_uri": "a", "channel_creds": [{"type": "insecure"}]}],
        });
        if let Some(t) = template {
            json["server_listener_resource_name_template"] = t.into();
        }
        Bootstrap::from_json(&json.to_string()).expect("bootstrap")
    }

    #[test]
    fn the_listener_name_comes_from_the_template() {
        let b = bootstrap(Some("grpc/server?xds.resource.listening_address=%s"));
        assert_eq!(
            listener_resource_name(&b, "0.0.0.0:8443").unwrap(),
            "grpc/server?xds.resource.listening_address=0.0.0.0:8443"
        );
        let b = bootstrap(Some("xdstp://a/envoy.config.listener.v3.Listener/s/%s"));
        assert_eq!(
            listener_resource_name(&b, "[::1]:80").unwrap(),
            "xdstp://a/envoy.config.listener.v3.Listener/s/%5B::1%5D:80"
        );
        let e = listener_resource_name(&bootstrap(None), "0.0.0.0:1").unwrap_err();
        assert_eq!(e.code, Code::FailedPrecondition);
        assert!(e.message.contains("server_listener_resource_name_template"));
    }
}
