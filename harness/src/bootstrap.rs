//! A scenario's bootstrap plan, with its servers' addresses filled in, as
//! the structured bootstrap every client renders in its own format.

use std::collections::BTreeMap;

use xds_vocabulary::{
    AuthorityConfig, BootstrapConfig, ChannelCredentials, ClientBootstrap, NodeConfig,
    XdsServerConfig,
};

use crate::scenario::{BootstrapPlan, Scenario};

/// The bootstrap `scenario` plans, with `uri(server name)` for each server
/// and its channel credentials from `creds` (by server name; plaintext for
/// a server it does not name).
pub fn client_bootstrap(
    scenario: &Scenario,
    uri: &dyn Fn(&str) -> String,
    creds: &BTreeMap<String, ChannelCredentials>,
) -> ClientBootstrap {
    let server = |name: &str| XdsServerConfig {
        uri: uri(name),
        features: scenario
            .servers
            .iter()
            .filter(|s| s.name == name)
            .flat_map(|s| s.server_features.clone())
            .collect(),
        protocol: scenario.protocol_of(name),
        channel_creds: creds.get(name).cloned().unwrap_or_default(),
    };
    match &scenario.bootstrap {
        BootstrapPlan::Json(text) => {
            let mut text = text.clone();
            for s in &scenario.servers {
                text = text.replace(&format!("${{server:{}}}", s.name), &uri(&s.name));
            }
            ClientBootstrap::GrpcJson(text)
        }
        BootstrapPlan::Generated {
            servers,
            node_id,
            node_cluster,
            locality,
            client_default_listener_resource_name_template,
            server_listener_resource_name_template,
            authorities,
        } => ClientBootstrap::Config(BootstrapConfig {
            servers: servers.iter().map(|s| server(s)).collect(),
            node: NodeConfig {
                id: node_id.clone(),
                cluster: node_cluster.clone(),
                locality: locality.clone(),
            },
            client_default_listener_resource_name_template:
                client_default_listener_resource_name_template.clone(),
            server_listener_resource_name_template: server_listener_resource_name_template.clone(),
            authorities: authorities
                .iter()
                .map(|(name, (servers, template))| {
                    let authority = AuthorityConfig {
                        servers: servers.iter().map(|s| server(s)).collect(),
                        client_listener_resource_name_template: template.clone(),
                    };
                    (name.clone(), authority)
                })
                .collect(),
        }),
    }
}
