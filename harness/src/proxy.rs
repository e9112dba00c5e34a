//! Resources as a proxy (Envoy) needs them, so channel-level scenarios
//! written for gRPC clients play on Envoy too wherever the behaviour is the
//! same (see `shared/notes/envoy.md`):
//!
//! - A gRPC client Listener (an `api_listener` holding the
//!   HttpConnectionManager) becomes a socket Listener on a free loopback
//!   port, its HCM in the one filter chain with `stat_prefix` set (Envoy
//!   requires one; Envoy only takes an api_listener from its bootstrap and
//!   skips one served over xDS). `xds:///svc` RPCs then go to the port of
//!   the Listener named `svc`, with authority `svc`.
//! - A Cluster without upstream protocol options gets HTTP/2 ones: the
//!   backends speak gRPC, and Envoy's default upstream is HTTP/1.1.
//!
//! Everything else (route configurations, endpoints, server Listeners,
//! invalid bytes, wrapped entries' bodies after unwrapping) is served as it
//! is. A port is chosen per Listener name once per run, never reused
//! across runs (Envoy binds listeners with SO_REUSEPORT: a stale Envoy on
//! the same port would take a share of the connections).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::{
    Address, Http2ProtocolOptions, SocketAddress, address, socket_address,
};
use envoy_types::pb::envoy::config::listener::v3::{Filter, FilterChain, Listener, filter};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
use envoy_types::pb::envoy::extensions::upstreams::http::v3::HttpProtocolOptions;
use envoy_types::pb::envoy::extensions::upstreams::http::v3::http_protocol_options::{
    ExplicitHttpConfig, UpstreamProtocolOptions, explicit_http_config::ProtocolConfig,
};
use envoy_types::pb::envoy::service::discovery::v3::Resource;
use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};
use xds_fake_server::ServedResource;

use crate::addresses::free_listening_address;

/// The key Envoy looks up upstream HTTP options by.
const HTTP_OPTIONS_KEY: &str = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
const HCM_FILTER: &str = "envoy.filters.network.http_connection_manager";

/// `resources` as the client is served them: in a proxy's shapes when
/// it is one, as they are otherwise.
pub fn served_to(
    proxy: Option<&mut ProxyListeners>,
    resources: Vec<ServedResource>,
) -> Result<Vec<ServedResource>, String> {
    match proxy {
        None => Ok(resources),
        Some(proxy) => proxy
            .shape(&resources)
            .map_err(|e| format!("cannot find a port for a proxy's listener: {e}")),
    }
}

/// The socket Listeners of one run: name -> where Envoy listens for it.
#[derive(Debug, Default)]
pub struct ProxyListeners {
    addresses: BTreeMap<String, SocketAddr>,
}

impl ProxyListeners {
    /// Where the Listener `name` listens (a port chosen now if it has none
    /// yet, so an RPC before the Listener is served is refused there).
    pub fn address(&mut self, name: &str) -> std::io::Result<SocketAddr> {
        if let Some(address) = self.addresses.get(name) {
            return Ok(*address);
        }
        let address = free_listening_address("127.0.0.1:0")?;
        self.addresses.insert(name.to_string(), address);
        Ok(address)
    }

    /// The listener name an `xds:///name` target is served by.
    pub fn listener_of(target: &str) -> &str {
        target.strip_prefix("xds:///").unwrap_or(target)
    }

    /// `resources` shaped for a proxy.
    pub fn shape(&mut self, resources: &[ServedResource]) -> std::io::Result<Vec<ServedResource>> {
        resources
            .iter()
            .map(|r| {
                Ok(ServedResource {
                    entry: self.shape_any(&r.entry)?,
                    ..r.clone()
                })
            })
            .collect()
    }

    fn shape_any(&mut self, any: &Any) -> std::io::Result<Any> {
        if any.type_url == Resource::type_url()
            && let Ok(mut wrapper) = Resource::decode(any.value.as_slice())
            && let Some(inner) = wrapper.resource.take()
        {
            wrapper.resource = Some(self.shape_any(&inner)?);
            return Ok(pack(&any.type_url, &wrapper));
        }
        if any.type_url == Listener::type_url()
            && let Ok(listener) = Listener::decode(any.value.as_slice())
        {
            return Ok(match self.socket_listener(listener)? {
                Some(shaped) => pack(&any.type_url, &shaped),
                None => any.clone(),
            });
        }
        if any.type_url == Cluster::type_url()
            && let Ok(mut cluster) = Cluster::decode(any.value.as_slice())
            && !cluster
                .typed_extension_protocol_options
                .contains_key(HTTP_OPTIONS_KEY)
        {
            cluster
                .typed_extension_protocol_options
                .insert(HTTP_OPTIONS_KEY.to_string(), http2_options());
            return Ok(pack(&any.type_url, &cluster));
        }
        Ok(any.clone())
    }

    /// A gRPC client Listener as a socket Listener; None for any other.
    fn socket_listener(&mut self, listener: Listener) -> std::io::Result<Option<Listener>> {
        let Some(hcm_any) = listener
            .api_listener
            .as_ref()
            .and_then(|a| a.api_listener.as_ref())
        else {
            return Ok(None);
        };
        if listener.address.is_some() || hcm_any.type_url != HttpConnectionManager::type_url() {
            return Ok(None);
        }
        let Ok(mut hcm) = HttpConnectionManager::decode(hcm_any.value.as_slice()) else {
            // Undecodable on purpose: the client is meant to see that.
            return Ok(None);
        };
        if hcm.stat_prefix.is_empty() {
            hcm.stat_prefix = stat_prefix(&listener.name);
        }
        let at = self.address(&listener.name)?;
        Ok(Some(Listener {
            api_listener: None,
            address: Some(Address {
                address: Some(address::Address::SocketAddress(SocketAddress {
                    address: at.ip().to_string(),
                    port_specifier: Some(socket_address::PortSpecifier::PortValue(u32::from(
                        at.port(),
                    ))),
                    ..Default::default()
                })),
            }),
            filter_chains: vec![FilterChain {
                filters: vec![Filter {
                    name: HCM_FILTER.into(),
                    config_type: Some(filter::ConfigType::TypedConfig(Any {
                        type_url: HttpConnectionManager::type_url(),
                        value: hcm.encode_to_vec(),
                    })),
                }],
                ..Default::default()
            }],
            ..listener
        }))
    }
}

/// Envoy names stats after the prefix: keep it to characters that read
/// well in a stat name.
fn stat_prefix(listener: &str) -> String {
    let prefix: String = listener
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if prefix.is_empty() {
        "listener".into()
    } else {
        prefix
    }
}

fn http2_options() -> Any {
    let options = HttpProtocolOptions {
        upstream_protocol_options: Some(UpstreamProtocolOptions::ExplicitHttpConfig(
            ExplicitHttpConfig {
                protocol_config: Some(ProtocolConfig::Http2ProtocolOptions(
                    Http2ProtocolOptions::default(),
                )),
            },
        )),
        ..Default::default()
    };
    Any {
        type_url: HttpProtocolOptions::type_url(),
        value: options.encode_to_vec(),
    }
}

fn pack<M: Message>(type_url: &str, message: &M) -> Any {
    Any {
        type_url: type_url.to_string(),
        value: message.encode_to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::config::listener::v3::ApiListener;

    fn client_listener(name: &str) -> ServedResource {
        let hcm = HttpConnectionManager::default();
        ServedResource::from_message(
            name,
            &Listener {
                name: name.into(),
                api_listener: Some(ApiListener {
                    api_listener: Some(Any {
                        type_url: HttpConnectionManager::type_url(),
                        value: hcm.encode_to_vec(),
                    }),
                }),
                ..Default::default()
            },
        )
    }

    #[test]
    fn a_client_listener_becomes_a_socket_listener_on_its_port() {
        let mut proxy = ProxyListeners::default();
        let shaped = proxy.shape(&[client_listener("svc.a")]).unwrap();
        let listener = Listener::decode(shaped[0].entry.value.as_slice()).unwrap();
        assert_eq!(listener.name, "svc.a");
        assert!(listener.api_listener.is_none());
        let Some(address::Address::SocketAddress(socket)) =
            listener.address.and_then(|a| a.address)
        else {
            panic!("no socket address");
        };
        let port = proxy.address("svc.a").unwrap().port();
        assert_eq!(
            socket.port_specifier,
            Some(socket_address::PortSpecifier::PortValue(u32::from(port)))
        );
        let Some(filter::ConfigType::TypedConfig(any)) =
            &listener.filter_chains[0].filters[0].config_type
        else {
            panic!("no HCM");
        };
        let hcm = HttpConnectionManager::decode(any.value.as_slice()).unwrap();
        assert_eq!(hcm.stat_prefix, "svc_a");
        // The same name keeps its port; another gets its own.
        let again = proxy.shape(&[client_listener("svc.a")]).unwrap();
        assert_eq!(again[0].entry, shaped[0].entry);
        assert_ne!(proxy.address("other").unwrap().port(), port);
    }

    #[test]
    fn clusters_get_http2_unless_they_say_otherwise() {
        let mut proxy = ProxyListeners::default();
        let plain = ServedResource::from_message(
            "c",
            &Cluster {
                name: "c".into(),
                ..Default::default()
            },
        );
        let shaped = proxy.shape(std::slice::from_ref(&plain)).unwrap();
        let cluster = Cluster::decode(shaped[0].entry.value.as_slice()).unwrap();
        assert_eq!(
            cluster.typed_extension_protocol_options[HTTP_OPTIONS_KEY],
            http2_options()
        );
        let again = proxy.shape(&shaped).unwrap();
        assert_eq!(again, shaped);
    }

    #[test]
    fn other_entries_are_served_as_they_are() {
        let mut proxy = ProxyListeners::default();
        let bytes = ServedResource {
            type_url: Listener::type_url(),
            name: "bad".into(),
            entry: Any {
                type_url: Listener::type_url(),
                value: vec![0xff, 0xff, 0xff, 0xff, 0x0f],
            },
        };
        let server_listener = ServedResource::from_message(
            "srv",
            &Listener {
                name: "srv".into(),
                address: Some(Address::default()),
                ..Default::default()
            },
        );
        let given = vec![bytes, server_listener];
        assert_eq!(proxy.shape(&given).unwrap(), given);
    }
}
