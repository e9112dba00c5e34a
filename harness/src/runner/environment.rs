//! What a scenario runs against: its fake servers and backends, started on
//! the in-memory network (virtual time) or on loopback TCP (real time);
//! the real addresses that stand for the scenario's canonical ones; the
//! servers' initial resources; and the [`ClientEnvironment`] the client
//! under test is started with.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use xds_client_under_test::{Capabilities, ClientEnvironment, Transport};
use xds_fake_server::backend::Backend;
use xds_fake_server::event::ServerEvent;
use xds_fake_server::{FakeAdsServer, ServerConfig, ServingMode};
use xds_vocabulary::network::MemoryNetwork;
use xds_vocabulary::{
    AdsProtocol, AuthorityConfig, ChannelCredentials, ClientBootstrap, XdsServerConfig,
};

use super::RunMode;
use crate::addresses::AddressMap;
use crate::addresses::free_listening_address;
use crate::bootstrap::client_bootstrap;
use crate::check::backend_address;
use crate::projection;
use crate::proxy::{ProxyListeners, served_to};
use crate::scenario::{Scenario, ServerDef};
use crate::step::Step;
use crate::timeline::{EventKind, Source, Timeline};
use crate::tls::{RunCertificates, channel_creds_of};

/// CSDS timestamps count from here, so they are the same on every run.
pub const CLOCK_EPOCH_UNIX_SECONDS: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// The in-memory address (and bootstrap `server_uri`) of a fake server.
pub fn server_uri(name: &str) -> String {
    format!("{name}:443")
}

/// A scenario's fake server, recording into `timeline`.
pub fn fake_server(def: &ServerDef, timeline: &Timeline) -> FakeAdsServer {
    serving_scaffolding(def, timeline, &BTreeSet::new())
}

/// [`fake_server`], whose requests and responses of the `induced` types
/// (type URLs) are the scaffolding's (projected watches), not the
/// scenario's: recorded as [`Source::Scaffold`].
fn serving_scaffolding(
    def: &ServerDef,
    timeline: &Timeline,
    induced: &BTreeSet<String>,
) -> FakeAdsServer {
    let mode = if def.scripted {
        ServingMode::Scripted
    } else {
        ServingMode::Auto
    };
    let server = FakeAdsServer::new(ServerConfig {
        name: def.name.clone(),
        mode,
    });
    server.set_max_connection_age(def.max_connection_age);
    let tl = timeline.clone();
    let induced = induced.clone();
    server.set_observer(Arc::new(move |recorded| {
        let type_url = match &recorded.event {
            ServerEvent::RequestReceived { request, .. } => Some(&request.type_url),
            ServerEvent::ResponseSent { response, .. }
            | ServerEvent::ResponseDropped { response, .. } => Some(&response.type_url),
            _ => None,
        };
        let source = if type_url.is_some_and(|t| induced.contains(t)) {
            Source::Scaffold(recorded.server.clone())
        } else {
            Source::Server(recorded.server.clone())
        };
        tl.record_at(
            recorded.at,
            source,
            EventKind::Server(Box::new(recorded.event.clone())),
        )
    }));
    server
}

/// The server of the scaffolding projected watches need (see
/// [`crate::projection`]), recording as [`Source::Scaffold`].
fn scaffold_server(plan: &projection::Plan, timeline: &Timeline) -> FakeAdsServer {
    let server = FakeAdsServer::new(ServerConfig {
        name: projection::SCAFFOLD.to_string(),
        mode: ServingMode::Auto,
    });
    let tl = timeline.clone();
    server.set_observer(Arc::new(move |recorded| {
        tl.record_at(
            recorded.at,
            Source::Scaffold("scaffold".into()),
            EventKind::Server(Box::new(recorded.event.clone())),
        )
    }));
    server.set_resources(plan.resources.clone(), None);
    server
}

/// A scenario's environment, running.
pub(super) struct Environment {
    pub(super) servers: BTreeMap<String, FakeAdsServer>,
    pub(super) backends: Vec<Backend>,
    /// Endpoint addresses as served (real TCP runs rewrite them).
    pub(super) addresses: AddressMap,
    /// For a proxy client: where its listeners are (see [`ProxyListeners`]).
    pub(super) proxy: Option<ProxyListeners>,
    /// What the client is started with.
    pub(super) client: ClientEnvironment,
    /// The run's certificates (TLS scenarios): their files must last as
    /// long as the client may read them, and go with the run.
    pub(super) certificates: Option<RunCertificates>,
}

/// Why the environment could not be set up.
pub(super) struct SetUpError {
    pub(super) message: String,
    /// The addresses mapped so far: the timeline up to the failure is
    /// still rendered with the scenario's names.
    pub(super) addresses: AddressMap,
}

/// Starts `scenario`'s fake servers and backends, recording into
/// `timeline`, and describes them to the client; resources are shaped for
/// a `proxy` client.
pub(super) async fn set_up(
    scenario: &Scenario,
    timeline: &Timeline,
    mode: RunMode,
    caps: &Capabilities,
) -> Result<Environment, SetUpError> {
    // A client without a watch API observes the watches through channels
    // (see `crate::projection`; a scenario that cannot be projected is not
    // applicable to it, so it never gets here).
    let plan = (caps.projected_watch && !caps.watch)
        .then(|| projection::plan(scenario).ok().flatten())
        .flatten();
    let induced = plan.as_ref().map(|p| p.induced.clone()).unwrap_or_default();
    let network = MemoryNetwork::new();
    let mut addresses = AddressMap::identity();
    let mut uris = BTreeMap::new();
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut servers = BTreeMap::new();
    let certificates = match RunCertificates::for_scenario(scenario) {
        Ok(certificates) => certificates,
        Err(e) => {
            return Err(SetUpError {
                message: format!("cannot make the run's certificates: {e}"),
                addresses,
            });
        }
    };
    for def in &scenario.servers {
        let server = serving_scaffolding(def, timeline, &induced);
        if holds_streams(scenario, &def.name) {
            server.watch_streams();
        }
        if let Some(certificates) = &certificates {
            let tls = certificates
                .server_settings(def)
                .map_err(|e| e.to_string())
                .and_then(|settings| server.set_tls(settings.as_ref()).map_err(|e| e.to_string()));
            if let Err(message) = tls {
                return Err(SetUpError {
                    message: format!("cannot serve TLS on server {}: {message}", def.name),
                    addresses,
                });
            }
        }
        let uri = match mode {
            RunMode::Virtual => match server.serve_in_memory(&network, &server_uri(&def.name)) {
                Ok(()) => server_uri(&def.name),
                Err(e) => {
                    return Err(SetUpError {
                        message: format!("cannot start server {}: {e}", def.name),
                        addresses,
                    });
                }
            },
            RunMode::RealTime => match server.serve_tcp(loopback).await {
                Ok(addr) => {
                    addresses.add_server(&server_uri(&def.name), addr);
                    addr.to_string()
                }
                Err(e) => {
                    return Err(SetUpError {
                        message: format!("cannot start server {}: {e}", def.name),
                        addresses,
                    });
                }
            },
        };
        uris.insert(def.name.clone(), uri);
        servers.insert(def.name.clone(), server);
    }
    if let Some(plan) = &plan {
        let server = scaffold_server(plan, timeline);
        let name = projection::SCAFFOLD;
        let uri = match mode {
            RunMode::Virtual => server
                .serve_in_memory(&network, &server_uri(name))
                .map(|()| server_uri(name))
                .map_err(|e| e.to_string()),
            RunMode::RealTime => match server.serve_tcp(loopback).await {
                Ok(addr) => {
                    addresses.add_server(&server_uri(name), addr);
                    Ok(addr.to_string())
                }
                Err(e) => Err(e.to_string()),
            },
        };
        match uri {
            Ok(uri) => uris.insert(name.to_string(), uri),
            Err(e) => {
                return Err(SetUpError {
                    message: format!("cannot start the scaffold server: {e}"),
                    addresses,
                });
            }
        };
        servers.insert(name.to_string(), server);
    }
    let mut backends = Vec::new();
    for (index, name) in scenario.backends.iter().enumerate() {
        let backend = Backend::new(name.clone());
        let tl = timeline.clone();
        backend.set_observer(Arc::new(move |recorded| {
            tl.record_at(
                recorded.at,
                Source::Backend(recorded.server.clone()),
                EventKind::Backend(recorded.event.clone()),
            )
        }));
        let served = match mode {
            RunMode::Virtual => backend
                .serve_in_memory(&network, &backend_address(index))
                .map_err(|e| e.to_string()),
            RunMode::RealTime => match backend.serve_tcp(loopback).await {
                Ok(addr) => {
                    addresses.add_backend(&backend_address(index), addr);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            },
        };
        if let Err(e) = served {
            return Err(SetUpError {
                message: format!("cannot start backend {name}: {e}"),
                addresses,
            });
        }
        backends.push(backend);
    }
    // xDS-enabled servers in the client listen for real, on free ports.
    if mode == RunMode::RealTime {
        for address in serve_addresses(scenario) {
            match free_listening_address(&address) {
                Ok(real) => addresses.add_listening(&address, real),
                Err(e) => {
                    return Err(SetUpError {
                        message: format!("cannot find a port to serve {address} on: {e}"),
                        addresses,
                    });
                }
            }
        }
    }
    // Initial resources, with endpoint addresses where they really are,
    // in the shapes a proxy needs.
    let mut proxy = caps.proxy.then(ProxyListeners::default);
    for def in &scenario.servers {
        if !def.resources.is_empty()
            && let Some(server) = servers.get(&def.name)
        {
            let rewritten = addresses.rewrite(&def.resources);
            match served_to(proxy.as_mut(), rewritten) {
                Ok(resources) => server.set_resources(resources, None),
                Err(message) => return Err(SetUpError { message, addresses }),
            }
        }
    }
    let sink_timeline = timeline.clone();
    let transport = match mode {
        RunMode::Virtual => Transport::InMemory {
            xds: Arc::new(network.clone()),
            data_plane: Arc::new(network),
        },
        RunMode::RealTime => Transport::Tcp,
    };
    let mut bootstrap = client_bootstrap(
        scenario,
        &|name| uris.get(name).cloned().unwrap_or_default(),
        &channel_creds_of(scenario, certificates.as_ref()),
    );
    if plan.is_some()
        && let ClientBootstrap::Config(config) = &mut bootstrap
    {
        config.authorities.insert(
            projection::SCAFFOLD.to_string(),
            AuthorityConfig {
                servers: vec![XdsServerConfig {
                    uri: uris.get(projection::SCAFFOLD).cloned().unwrap_or_default(),
                    features: Vec::new(),
                    protocol: AdsProtocol::Sotw,
                    channel_creds: ChannelCredentials::default(),
                }],
                client_listener_resource_name_template: None,
            },
        );
    }
    let client = ClientEnvironment {
        bootstrap,
        projection: plan.map(|p| p.projection),
        transport,
        rng_seed: scenario.client.seed,
        profile: scenario.client.profile.clone(),
        clock_epoch: SystemTime::UNIX_EPOCH + Duration::from_secs(CLOCK_EPOCH_UNIX_SECONDS),
        events: Arc::new(move |event| {
            sink_timeline.record(Source::Client, EventKind::Client(event))
        }),
        zone: scenario
            .zone
            .as_ref()
            .map(|zone| xds_client_under_test::ZoneSettings {
                name: zone.name.clone(),
                resources: zone.resources.clone(),
                refresh_interval: zone.refresh_interval,
            }),
        env: scenario.client.env.clone(),
    };
    Ok(Environment {
        servers,
        backends,
        addresses,
        proxy,
        client,
        certificates,
    })
}

/// Whether a step holds `server`'s streams: only then do its connections'
/// frames need following (see `FakeAdsServer::watch_streams`).
fn holds_streams(scenario: &Scenario, server: &str) -> bool {
    scenario
        .steps
        .iter()
        .any(|s| matches!(&s.step, Step::HoldStreams(fault) if fault.server == server))
}

/// Every address a `serve` step names, once each, in order.
fn serve_addresses(scenario: &Scenario) -> Vec<String> {
    let mut seen = BTreeSet::new();
    scenario
        .steps
        .iter()
        .filter_map(|s| match &s.step {
            Step::Serve(serve) => Some(serve.address.clone()),
            _ => None,
        })
        .filter(|a| seen.insert(a.clone()))
        .collect()
}
