//! A client's bootstrap as data: the xDS servers in priority order (with
//! their features and ADS protocol), the node, the authorities and the
//! listener name templates. The harness builds one; each client renders
//! its own format from it (gRPC's JSON here, [`ClientBootstrap::grpc_json`];
//! Envoy's bootstrap in the Envoy adapter), so no client's file format is
//! the harness's business.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::AdsProtocol;

/// One xDS server entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdsServerConfig {
    /// Where the client dials it: `host:port`, or an in-memory name.
    pub uri: String,
    /// The server's `server_features` beyond `xds_v3` (which every gRPC
    /// bootstrap entry carries): e.g. `ignore_resource_deletion`.
    pub features: Vec<String>,
    pub protocol: AdsProtocol,
    /// How the channel to it is secured.
    pub channel_creds: ChannelCredentials,
}

/// The channel credentials of a server entry (gRPC's `channel_creds`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ChannelCredentials {
    /// Plaintext (`{"type": "insecure"}`).
    #[default]
    Insecure,
    /// TLS, and mTLS with an identity (gRFC A65's `tls` type).
    Tls(TlsCredentials),
}

/// gRFC A65's `tls` channel credentials: certificate files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsCredentials {
    /// PEM roots the server's certificate must chain to
    /// (`ca_certificate_file`).
    pub ca_certificate_file: PathBuf,
    /// The client's own certificate and key, for mTLS; `None`: TLS with
    /// server authentication only.
    pub identity: Option<IdentityFiles>,
}

/// A certificate chain and its private key, as PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityFiles {
    pub certificate_file: PathBuf,
    pub private_key_file: PathBuf,
}

impl ChannelCredentials {
    /// The `channel_creds` list of a gRPC bootstrap entry. Paths are
    /// written as given (the harness gives absolute ones: a client process
    /// runs in a directory of its own choosing).
    pub fn grpc_json(&self) -> Value {
        match self {
            ChannelCredentials::Insecure => json!([{"type": "insecure"}]),
            ChannelCredentials::Tls(tls) => {
                let mut config = serde_json::Map::new();
                config.insert(
                    "ca_certificate_file".into(),
                    Value::String(tls.ca_certificate_file.display().to_string()),
                );
                if let Some(identity) = &tls.identity {
                    config.insert(
                        "certificate_file".into(),
                        Value::String(identity.certificate_file.display().to_string()),
                    );
                    config.insert(
                        "private_key_file".into(),
                        Value::String(identity.private_key_file.display().to_string()),
                    );
                }
                json!([{"type": "tls", "config": config}])
            }
        }
    }
}

/// The node the client identifies itself as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    pub id: String,
    pub cluster: String,
    /// region, zone, sub_zone
    pub locality: (String, String, String),
}

/// A gRFC A47 authority.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorityConfig {
    /// Empty: the top-level servers.
    pub servers: Vec<XdsServerConfig>,
    pub client_listener_resource_name_template: Option<String>,
}

/// The structured bootstrap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootstrapConfig {
    /// In priority order (gRFC A71: the first is the primary).
    pub servers: Vec<XdsServerConfig>,
    pub node: NodeConfig,
    pub client_default_listener_resource_name_template: Option<String>,
    pub server_listener_resource_name_template: Option<String>,
    pub authorities: BTreeMap<String, AuthorityConfig>,
}

/// What a client starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientBootstrap {
    Config(BootstrapConfig),
    /// A gRPC bootstrap file given verbatim by a scenario (for instance to
    /// test how a client reads one); only gRPC clients can use it.
    GrpcJson(String),
}

impl ClientBootstrap {
    /// gRPC's bootstrap JSON (gRFC A27, A47, A71).
    pub fn grpc_json(&self) -> String {
        match self {
            ClientBootstrap::GrpcJson(text) => text.clone(),
            ClientBootstrap::Config(config) => config.grpc_json(),
        }
    }

    pub fn config(&self) -> Option<&BootstrapConfig> {
        match self {
            ClientBootstrap::Config(config) => Some(config),
            ClientBootstrap::GrpcJson(_) => None,
        }
    }
}

impl BootstrapConfig {
    pub fn grpc_json(&self) -> String {
        let server_entry = |s: &XdsServerConfig| {
            let features: Vec<&str> = std::iter::once("xds_v3")
                .chain(s.features.iter().map(String::as_str))
                .collect();
            let mut entry = json!({
                "server_uri": s.uri,
                "channel_creds": s.channel_creds.grpc_json(),
                "server_features": features,
            });
            // SotW is the default; only delta servers say so, with Envoy's
            // `ApiConfigSource.api_type` spelling (gRPC has no standard key).
            if s.protocol != AdsProtocol::Sotw {
                entry["api_type"] = Value::String(s.protocol.api_type().to_string());
            }
            entry
        };
        let (region, zone, sub_zone) = &self.node.locality;
        let mut doc = json!({
            "xds_servers": self.servers.iter().map(server_entry).collect::<Vec<_>>(),
            "node": {
                "id": self.node.id,
                "cluster": self.node.cluster,
                "locality": {"region": region, "zone": zone, "sub_zone": sub_zone},
            },
        });
        if let Some(t) = &self.client_default_listener_resource_name_template {
            doc["client_default_listener_resource_name_template"] = Value::String(t.clone());
        }
        if let Some(t) = &self.server_listener_resource_name_template {
            doc["server_listener_resource_name_template"] = Value::String(t.clone());
        }
        if !self.authorities.is_empty() {
            let mut map = serde_json::Map::new();
            for (name, authority) in &self.authorities {
                let mut a = serde_json::Map::new();
                if !authority.servers.is_empty() {
                    a.insert(
                        "xds_servers".into(),
                        authority.servers.iter().map(server_entry).collect(),
                    );
                }
                if let Some(t) = &authority.client_listener_resource_name_template {
                    a.insert(
                        "client_listener_resource_name_template".into(),
                        Value::String(t.clone()),
                    );
                }
                map.insert(name.clone(), Value::Object(a));
            }
            doc["authorities"] = Value::Object(map);
        }
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BootstrapConfig {
        BootstrapConfig {
            servers: vec![
                XdsServerConfig {
                    uri: "127.0.0.1:1".into(),
                    features: vec!["ignore_resource_deletion".into()],
                    protocol: AdsProtocol::Sotw,
                    channel_creds: ChannelCredentials::Insecure,
                },
                XdsServerConfig {
                    uri: "127.0.0.1:2".into(),
                    features: vec![],
                    protocol: AdsProtocol::Delta,
                    channel_creds: ChannelCredentials::Tls(TlsCredentials {
                        ca_certificate_file: "/run/ca.pem".into(),
                        identity: Some(IdentityFiles {
                            certificate_file: "/run/client.pem".into(),
                            private_key_file: "/run/client.key".into(),
                        }),
                    }),
                },
            ],
            node: NodeConfig {
                id: "n".into(),
                cluster: "c".into(),
                locality: ("r".into(), "z".into(), "s".into()),
            },
            client_default_listener_resource_name_template: None,
            server_listener_resource_name_template: Some("l/%s".into()),
            authorities: BTreeMap::from([(
                "a".to_string(),
                AuthorityConfig {
                    servers: vec![],
                    client_listener_resource_name_template: Some("xdstp://a/%s".into()),
                },
            )]),
        }
    }

    #[test]
    fn grpc_json_has_every_part() {
        let doc: Value = serde_json::from_str(&config().grpc_json()).unwrap();
        assert_eq!(doc["xds_servers"][0]["server_uri"], "127.0.0.1:1");
        assert_eq!(
            doc["xds_servers"][0]["server_features"],
            json!(["xds_v3", "ignore_resource_deletion"])
        );
        assert!(doc["xds_servers"][0].get("api_type").is_none());
        assert_eq!(
            doc["xds_servers"][0]["channel_creds"],
            json!([{"type": "insecure"}])
        );
        // gRFC A65's form, which C-core reads.
        assert_eq!(
            doc["xds_servers"][1]["channel_creds"],
            json!([{"type": "tls", "config": {
                "ca_certificate_file": "/run/ca.pem",
                "certificate_file": "/run/client.pem",
                "private_key_file": "/run/client.key",
            }}])
        );
        assert_eq!(doc["xds_servers"][1]["api_type"], "DELTA_GRPC");
        assert_eq!(doc["node"]["locality"]["sub_zone"], "s");
        assert_eq!(doc["server_listener_resource_name_template"], "l/%s");
        assert!(
            doc.get("client_default_listener_resource_name_template")
                .is_none()
        );
        assert_eq!(
            doc["authorities"]["a"],
            json!({"client_listener_resource_name_template": "xdstp://a/%s"})
        );
    }

    #[test]
    fn verbatim_json_is_kept() {
        let given = ClientBootstrap::GrpcJson("{not json".into());
        assert_eq!(given.grpc_json(), "{not json");
        assert!(given.config().is_none());
    }
}
