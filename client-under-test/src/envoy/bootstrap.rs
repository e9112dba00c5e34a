//! Envoy's bootstrap, rendered from the structured one (JSON, which Envoy
//! reads as YAML): ADS over the servers in priority order, each a STATIC
//! HTTP/2 cluster (over TLS when its channel credentials say so); LDS and
//! CDS over ADS; the admin API on a free port of Envoy's choosing (the
//! driver reads it from `--admin-address-path`).

use std::net::IpAddr;

use serde_json::{Value, json};
use xds_vocabulary::{
    AdsProtocol, BootstrapConfig, ChannelCredentials, ClientBootstrap, TlsCredentials,
};

/// The runtime flag without which Envoy refuses a second `grpc_services`
/// entry (`must have no more than 1 gRPC services specified`).
const FAILOVER_FLAG: &str = "envoy.restart_features.xds_failover_support";

/// Why a bootstrap cannot be rendered for Envoy.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("Envoy reads its own bootstrap format, not a gRPC bootstrap file given verbatim")]
    GrpcJson,
    #[error("the bootstrap has no xDS server")]
    NoServer,
    #[error("Envoy's ADS takes a primary and one failover server; the bootstrap has {0} servers")]
    TooManyServers(usize),
    #[error("Envoy's ADS has one api_type for all its servers; the bootstrap mixes SotW and delta")]
    MixedProtocols,
    #[error("Envoy has no gRFC A47 authorities or listener name templates")]
    Authorities,
    #[error("server URI {0:?} is not host:port")]
    Uri(String),
}

/// The cluster name of the `index`th xDS server.
pub fn xds_cluster_name(index: usize) -> String {
    format!("xds_server_{index}")
}

/// Envoy's bootstrap for `bootstrap`.
pub fn render(bootstrap: &ClientBootstrap) -> Result<String, RenderError> {
    let config = bootstrap.config().ok_or(RenderError::GrpcJson)?;
    let doc = render_config(config)?;
    Ok(serde_json::to_string_pretty(&doc).unwrap_or_default())
}

fn render_config(config: &BootstrapConfig) -> Result<Value, RenderError> {
    let primary = config.servers.first().ok_or(RenderError::NoServer)?;
    if config.servers.len() > 2 {
        return Err(RenderError::TooManyServers(config.servers.len()));
    }
    if config
        .servers
        .iter()
        .any(|s| s.protocol != primary.protocol)
    {
        return Err(RenderError::MixedProtocols);
    }
    if !config.authorities.is_empty()
        || config
            .client_default_listener_resource_name_template
            .is_some()
    {
        return Err(RenderError::Authorities);
    }
    let mut clusters = Vec::new();
    let mut services = Vec::new();
    for (index, server) in config.servers.iter().enumerate() {
        let (host, port) = server
            .uri
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .ok_or_else(|| RenderError::Uri(server.uri.clone()))?;
        let name = xds_cluster_name(index);
        services.push(json!({"envoy_grpc": {"cluster_name": name}}));
        let mut cluster = json!({
            "name": name,
            "type": "STATIC",
            "connect_timeout": "1s",
            "typed_extension_protocol_options": http2_options(),
            "load_assignment": {
                "cluster_name": name,
                "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {
                    "socket_address": {"address": host, "port_value": port}
                }}}]}],
            },
        });
        if let ChannelCredentials::Tls(tls) = &server.channel_creds {
            cluster["transport_socket"] = tls_transport_socket(tls, host);
        }
        clusters.push(cluster);
    }
    let (region, zone, sub_zone) = &config.node.locality;
    let api_type = match primary.protocol {
        AdsProtocol::Sotw => "GRPC",
        AdsProtocol::Delta => "DELTA_GRPC",
    };
    let mut doc = json!({
        "node": {
            "id": config.node.id,
            "cluster": config.node.cluster,
            "locality": {"region": region, "zone": zone, "sub_zone": sub_zone},
        },
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 0}}},
        "dynamic_resources": {
            "ads_config": {
                "api_type": api_type,
                "transport_api_version": "V3",
                // As gRPC clients do: the node only on a stream's first
                // request (Envoy's default repeats it in every one).
                "set_node_on_first_message_only": true,
                "grpc_services": services,
            },
            "lds_config": {"ads": {}, "resource_api_version": "V3"},
            "cds_config": {"ads": {}, "resource_api_version": "V3"},
        },
        "static_resources": {"clusters": clusters},
    });
    if config.servers.len() > 1 {
        doc["layered_runtime"] = json!({"layers": [{
            "name": "static",
            "static_layer": {FAILOVER_FLAG: true},
        }]});
    }
    Ok(doc)
}

/// gRFC A65's `tls` credentials as Envoy's upstream TLS: the roots, the
/// identity for mTLS, ALPN h2. Envoy checks only the chain unless told
/// which names to expect, so the server's certificate must also name the
/// host dialled, as gRPC clients check; SNI only for a host name (an
/// address is no server name).
fn tls_transport_socket(tls: &TlsCredentials, host: &str) -> Value {
    let path = |p: &std::path::Path| json!({"filename": p.display().to_string()});
    let is_ip = host.parse::<IpAddr>().is_ok();
    let san_type = if is_ip { "IP_ADDRESS" } else { "DNS" };
    let mut common = json!({
        "alpn_protocols": ["h2"],
        "validation_context": {
            "trusted_ca": path(&tls.ca_certificate_file),
            "match_typed_subject_alt_names": [
                {"san_type": san_type, "matcher": {"exact": host}}
            ],
        },
    });
    if let Some(identity) = &tls.identity {
        common["tls_certificates"] = json!([{
            "certificate_chain": path(&identity.certificate_file),
            "private_key": path(&identity.private_key_file),
        }]);
    }
    let mut context = json!({
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
        "common_tls_context": common,
    });
    if !is_ip {
        context["sni"] = Value::String(host.to_string());
    }
    json!({"name": "envoy.transport_sockets.tls", "typed_config": context})
}

/// An upstream that speaks HTTP/2 (gRPC); Envoy's default is HTTP/1.1.
pub fn http2_options() -> Value {
    json!({
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {"http2_protocol_options": {}},
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use xds_vocabulary::{AuthorityConfig, NodeConfig, XdsServerConfig};

    fn server(uri: &str, protocol: AdsProtocol) -> XdsServerConfig {
        XdsServerConfig {
            uri: uri.into(),
            features: vec![],
            protocol,
            channel_creds: ChannelCredentials::Insecure,
        }
    }

    fn config(servers: Vec<XdsServerConfig>) -> BootstrapConfig {
        BootstrapConfig {
            servers,
            node: NodeConfig {
                id: "node-1".into(),
                cluster: "c".into(),
                locality: ("r".into(), "z".into(), "".into()),
            },
            client_default_listener_resource_name_template: None,
            server_listener_resource_name_template: None,
            authorities: BTreeMap::new(),
        }
    }

    #[test]
    fn one_sotw_server() {
        let doc =
            render_config(&config(vec![server("127.0.0.1:4000", AdsProtocol::Sotw)])).unwrap();
        let ads = &doc["dynamic_resources"]["ads_config"];
        assert_eq!(ads["api_type"], "GRPC");
        assert_eq!(
            ads["grpc_services"],
            json!([{"envoy_grpc": {"cluster_name": "xds_server_0"}}])
        );
        let cluster = &doc["static_resources"]["clusters"][0];
        assert_eq!(
            cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"],
            json!({"address": "127.0.0.1", "port_value": 4000})
        );
        assert_eq!(doc["node"]["id"], "node-1");
        assert!(doc.get("layered_runtime").is_none());
    }

    #[test]
    fn tls_credentials_become_an_upstream_tls_context() {
        let mut tls = server("127.0.0.1:4000", AdsProtocol::Sotw);
        tls.channel_creds = ChannelCredentials::Tls(TlsCredentials {
            ca_certificate_file: "/run/ca.pem".into(),
            identity: Some(xds_vocabulary::IdentityFiles {
                certificate_file: "/run/client.pem".into(),
                private_key_file: "/run/client.key".into(),
            }),
        });
        let doc = render_config(&config(vec![tls])).unwrap();
        let socket = &doc["static_resources"]["clusters"][0]["transport_socket"];
        assert_eq!(socket["name"], "envoy.transport_sockets.tls");
        let context = &socket["typed_config"];
        assert!(context.get("sni").is_none(), "no SNI for an address");
        let common = &context["common_tls_context"];
        assert_eq!(common["alpn_protocols"], json!(["h2"]));
        assert_eq!(
            common["validation_context"],
            json!({
                "trusted_ca": {"filename": "/run/ca.pem"},
                "match_typed_subject_alt_names": [
                    {"san_type": "IP_ADDRESS", "matcher": {"exact": "127.0.0.1"}}
                ],
            })
        );
        assert_eq!(
            common["tls_certificates"],
            json!([{
                "certificate_chain": {"filename": "/run/client.pem"},
                "private_key": {"filename": "/run/client.key"},
            }])
        );
        let plain = render_config(&config(vec![server("127.0.0.1:1", AdsProtocol::Sotw)])).unwrap();
        assert!(
            plain["static_resources"]["clusters"][0]
                .get("transport_socket")
                .is_none()
        );
    }

    #[test]
    fn two_delta_servers_fail_over_with_the_runtime_flag() {
        let doc = render_config(&config(vec![
            server("127.0.0.1:1", AdsProtocol::Delta),
            server("127.0.0.1:2", AdsProtocol::Delta),
        ]))
        .unwrap();
        assert_eq!(
            doc["dynamic_resources"]["ads_config"]["api_type"],
            "DELTA_GRPC"
        );
        assert_eq!(
            doc["dynamic_resources"]["ads_config"]["grpc_services"][1],
            json!({"envoy_grpc": {"cluster_name": "xds_server_1"}})
        );
        assert_eq!(
            doc["layered_runtime"]["layers"][0]["static_layer"][FAILOVER_FLAG],
            true
        );
    }

    #[test]
    fn what_envoy_cannot_take_is_refused() {
        let sotw = |uri: &str| server(uri, AdsProtocol::Sotw);
        assert_eq!(
            render(&ClientBootstrap::GrpcJson("{}".into())),
            Err(RenderError::GrpcJson)
        );
        assert_eq!(render_config(&config(vec![])), Err(RenderError::NoServer));
        assert_eq!(
            render_config(&config(vec![sotw("a:1"), sotw("b:2"), sotw("c:3")])),
            Err(RenderError::TooManyServers(3))
        );
        assert_eq!(
            render_config(&config(vec![
                sotw("a:1"),
                server("b:2", AdsProtocol::Delta)
            ])),
            Err(RenderError::MixedProtocols)
        );
        let mut with_authority = config(vec![sotw("a:1")]);
        with_authority
            .authorities
            .insert("a".into(), AuthorityConfig::default());
        assert_eq!(
            render_config(&with_authority),
            Err(RenderError::Authorities)
        );
        assert_eq!(
            render_config(&config(vec![sotw("in-memory")])),
            Err(RenderError::Uri("in-memory".into()))
        );
    }
}
