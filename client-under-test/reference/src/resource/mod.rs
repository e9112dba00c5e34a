//! xDS resource types: what each one is called on the wire, how a response
//! entry is unwrapped and decoded, and the validated values watchers receive.
//!
//! Decoding follows gRPC's XdsClient: an entry may be wrapped in
//! `envoy.service.discovery.v3.Resource`; its type_url must match the
//! response's; the name comes from the wrapper or the decoded message; a
//! message that decodes but fails validation still has a name, so it can be
//! NACKed per resource (gRFC A46).
//!
//! Validation follows gRPC C-core's parsers (`src/core/xds/grpc/*_parser.cc`)
//! for the fields a gRPC client uses. Deliberate deviations:
//! - LEAST_REQUEST is supported (gRFC A48), with `choice_count` >= 2;
//!   C-core rejects it as "LB policy is not supported".
//! - No cluster-specifier plugin is implemented (C-core has RLS): a route
//!   naming a non-optional plugin is an error, an optional one is skipped.
//! - Percentages saturate where C-core's unsigned multiply would wrap.
//! - `failure_percentage_threshold` itself is range-checked (gRFC A50;
//!   C-core checks another field there).
//! - A server Listener with `listener_filters` is NACKed, as gRFC A36
//!   requires; C-core 1.85 ignores the field (it ACKs and serves).
//! - Rust `regex` stands in for RE2 (near-identical dialects); IPv6 zone ids
//!   are not accepted in addresses.
//! - A server Listener's DownstreamTlsContext is not put through the
//!   CommonTlsContext checks a Cluster's gets (unsupported features,
//!   certificate provider instances the bootstrap must declare).
//! - Not validated: metadata, deep RBAC / StatefulSession / GcpAuthn
//!   configs (decoded only), custom LB policies given as TypedStruct
//!   (skipped), the bootstrap's certificate provider configs (only their
//!   names are read).

mod cluster;
mod common;
mod endpoint;
mod http_filters;
mod lb_policy_registry;
mod listener;
mod route;
mod server_listener;
#[cfg(test)]
pub(crate) mod test_support;
mod tls;
mod validation;

pub use cluster::{ClusterKind, ClusterResource, LbPolicy};
pub use endpoint::{
    DropCategory, Endpoint, EndpointsResource, HealthStatus, Locality, LocalityName, Priority,
};
pub use listener::{HttpConnectionManager, HttpFilter, ListenerResource, RouteSource};
pub use route::{
    HeaderMatch, HeaderMatcher, PathMatcher, Route, RouteAction, RouteConfigResource, RouteMatch,
    VirtualHost, WeightedCluster,
};
pub use server_listener::{
    CidrRange, DestinationIp, DownstreamTls, FilterChainData, FilterChainMap,
    ServerListenerResource, SourceIp,
};
pub use validation::{ValidationErrors, ValidationRule};

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use envoy_types::pb::google::protobuf::Any;
use xds_vocabulary::codec::{self, Unwrapped, WrapperError};

pub use xds_vocabulary::ResourceType;
pub use xds_vocabulary::resource_type::TYPE_URL_PREFIX;

/// A validated resource, as delivered to watchers.
#[derive(Clone, Debug, PartialEq)]
pub enum XdsResource {
    Listener(ListenerResource),
    /// A Listener with an address: an xDS-enabled server's (gRFC A36).
    ServerListener(ServerListenerResource),
    RouteConfiguration(RouteConfigResource),
    Cluster(ClusterResource),
    ClusterLoadAssignment(EndpointsResource),
}

impl XdsResource {
    pub fn resource_type(&self) -> ResourceType {
        match self {
            XdsResource::Listener(_) | XdsResource::ServerListener(_) => ResourceType::Listener,
            XdsResource::RouteConfiguration(_) => ResourceType::RouteConfiguration,
            XdsResource::Cluster(_) => ResourceType::Cluster,
            XdsResource::ClusterLoadAssignment(_) => ResourceType::ClusterLoadAssignment,
        }
    }

    /// A one-line summary for timelines and logs, stable across runs.
    pub fn summary(&self) -> String {
        match self {
            XdsResource::Listener(l) => l.summary(),
            XdsResource::ServerListener(l) => l.summary(),
            XdsResource::RouteConfiguration(r) => r.summary(),
            XdsResource::Cluster(c) => c.summary(),
            XdsResource::ClusterLoadAssignment(e) => e.summary(),
        }
    }
}

/// The outcome of decoding one entry of a DiscoveryResponse.
#[derive(Debug)]
pub struct DecodedEntry {
    /// The resource name, when it could be determined (from the Resource
    /// wrapper or from the decoded message). Without a name the error cannot
    /// be attributed to a resource and only goes into the NACK.
    pub name: Option<String>,
    /// The validated resource, or why it is not acceptable.
    pub result: Result<Arc<XdsResource>, DecodeError>,
    /// The serialized resource (inner message bytes), kept for CSDS.
    pub serialized: Vec<u8>,
}

/// Why one response entry was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The `envoy.service.discovery.v3.Resource` wrapper could not be
    /// decoded, or has no inner resource.
    Wrapper(WrapperError),
    /// The entry's type_url does not match the response's.
    WrongType { got: String, expected: String },
    /// The bytes are not a valid protobuf of the expected message.
    Undecodable {
        message_type: &'static str,
        reason: String,
    },
    /// Decoded, but fails gRPC's validation.
    Invalid(ValidationErrors),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Wrapper(e) => e.fmt(f),
            DecodeError::WrongType { got, expected } => {
                write!(
                    f,
                    "incorrect resource type \"{got}\" (should be \"{expected}\")"
                )
            }
            DecodeError::Undecodable {
                message_type,
                reason,
            } => {
                write!(f, "Can't parse {message_type} resource: {reason}")
            }
            DecodeError::Invalid(errors) => errors.fmt(f),
        }
    }
}

/// What validation depends on beyond a resource's bytes, as C-core's
/// `XdsResourceType::DecodeContext` gives its parsers the bootstrap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodeContext {
    /// The bootstrap's `certificate_providers` instance names: a TLS
    /// context may only name these.
    pub certificate_providers: BTreeSet<String>,
    /// The one rule a deliberately broken client does not enforce
    /// (`Defects::broken_validation`); `None` in every real profile.
    pub broken_rule: Option<ValidationRule>,
}

/// Decodes one entry of a (SotW) DiscoveryResponse whose `type_url` is
/// `expected.type_url()`: the entry itself, or the resource inside its
/// `Resource` wrapper, whose name then names it. Validated as for a
/// bootstrap without certificate providers.
pub fn decode_entry(expected: ResourceType, entry: &Any) -> DecodedEntry {
    decode_entry_in(&DecodeContext::default(), expected, entry)
}

/// [`decode_entry`] under `context`.
pub fn decode_entry_in(
    context: &DecodeContext,
    expected: ResourceType,
    entry: &Any,
) -> DecodedEntry {
    match codec::unwrap(entry) {
        Ok(Unwrapped::Plain(any)) => decode_resource_in(context, expected, None, any),
        Ok(Unwrapped::Wrapped { name, resource }) => {
            // Broken, the wrapper's name is dropped: a body that does
            // not decode is then nobody's.
            let named = !name.is_empty()
                && context.broken_rule != Some(ValidationRule::WrapperNamesItsResource);
            decode_resource_in(context, expected, named.then_some(name), &resource)
        }
        Err(e) => failed(None, DecodeError::Wrapper(e)),
    }
}

/// Decodes one resource of type `expected`; `name`, when given (a
/// `Resource` wrapper's, or a delta response's), names it whatever the
/// message says. Validated as for a bootstrap without certificate
/// providers.
pub fn decode_resource(expected: ResourceType, name: Option<String>, any: &Any) -> DecodedEntry {
    decode_resource_in(&DecodeContext::default(), expected, name, any)
}

/// [`decode_resource`] under `context`.
pub fn decode_resource_in(
    context: &DecodeContext,
    expected: ResourceType,
    name: Option<String>,
    any: &Any,
) -> DecodedEntry {
    if any.type_url != expected.type_url() {
        return failed(
            name,
            DecodeError::WrongType {
                got: any.type_url.clone(),
                expected: expected.type_url().to_string(),
            },
        );
    }
    let bytes = any.value.as_slice();
    let (decoded_name, result) = match expected {
        ResourceType::Listener => listener::decode(bytes, context),
        ResourceType::RouteConfiguration => route::decode(bytes, context),
        ResourceType::Cluster => cluster::decode(bytes, context),
        ResourceType::ClusterLoadAssignment => endpoint::decode(bytes, context),
    };
    DecodedEntry {
        name: name.or(decoded_name),
        result: result.map(Arc::new),
        serialized: bytes.to_vec(),
    }
}

fn failed(name: Option<String>, error: DecodeError) -> DecodedEntry {
    DecodedEntry {
        name,
        result: Err(error),
        serialized: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use envoy_types::pb::envoy::config::cluster::v3::Cluster;
    use envoy_types::pb::envoy::service::discovery::v3::Resource;
    use prost::Message;
    use rstest::rstest;

    fn wrapped(name: &str, resource: Option<Any>) -> Any {
        let wrapper = Resource {
            name: name.to_string(),
            resource,
            ..Default::default()
        };
        Any {
            type_url: codec::RESOURCE_WRAPPER_TYPE_URL.to_string(),
            value: wrapper.encode_to_vec(),
        }
    }

    fn listener_any(name: &str) -> Any {
        any(&api_listener(name, &hcm_rds("r")))
    }

    #[rstest]
    #[case(ResourceType::Listener, listener_any("l1"), "l1")]
    #[case(ResourceType::RouteConfiguration, any(&route_config("r1", vec![])), "r1")]
    #[case(ResourceType::Cluster, any(&eds_cluster("c1")), "c1")]
    #[case(ResourceType::ClusterLoadAssignment, any(&cla("e1", vec![])), "e1")]
    fn plain_entries_of_each_type(
        #[case] resource_type: ResourceType,
        #[case] entry: Any,
        #[case] name: &str,
    ) {
        let decoded = decode_entry(resource_type, &entry);
        assert_eq!(decoded.name.as_deref(), Some(name));
        assert_eq!(decoded.result.unwrap().resource_type(), resource_type);
        assert_eq!(decoded.serialized, entry.value);
    }

    #[test]
    fn wrapper_is_unwrapped_and_names_the_resource() {
        let inner = listener_any("inner-name");
        let decoded = decode_entry(
            ResourceType::Listener,
            &wrapped("wrapper-name", Some(inner.clone())),
        );
        assert_eq!(decoded.name.as_deref(), Some("wrapper-name"));
        assert!(decoded.result.is_ok());
        assert_eq!(
            decoded.serialized, inner.value,
            "CSDS keeps the inner message"
        );
    }

    #[test]
    fn wrapper_without_name_falls_back_to_the_message() {
        let decoded = decode_entry(
            ResourceType::Listener,
            &wrapped("", Some(listener_any("l1"))),
        );
        assert_eq!(decoded.name.as_deref(), Some("l1"));
    }

    #[test]
    fn wrapper_without_resource() {
        let decoded = decode_entry(ResourceType::Listener, &wrapped("l1", None));
        assert_eq!(decoded.name, None);
        assert_eq!(
            decoded.result.unwrap_err(),
            DecodeError::Wrapper(WrapperError::Empty)
        );
    }

    #[test]
    fn bad_wrapper_bytes() {
        let entry = Any {
            type_url: codec::RESOURCE_WRAPPER_TYPE_URL.to_string(),
            value: vec![0xff, 0xff],
        };
        let decoded = decode_entry(ResourceType::Cluster, &entry);
        assert_eq!(decoded.name, None);
        assert_eq!(
            decoded.result.unwrap_err(),
            DecodeError::Wrapper(WrapperError::Undecodable)
        );
    }

    #[test]
    fn wrong_type_url() {
        let decoded = decode_entry(ResourceType::Cluster, &listener_any("l1"));
        assert_eq!(decoded.name, None);
        let expected = DecodeError::WrongType {
            got: ResourceType::Listener.type_url().to_string(),
            expected: ResourceType::Cluster.type_url().to_string(),
        };
        assert_eq!(decoded.result.unwrap_err(), expected);
        // Inside a wrapper the wrapper's name still identifies the resource.
        let decoded = decode_entry(
            ResourceType::Cluster,
            &wrapped("c1", Some(listener_any("l1"))),
        );
        assert_eq!(decoded.name.as_deref(), Some("c1"));
        assert!(matches!(decoded.result, Err(DecodeError::WrongType { .. })));
    }

    #[rstest]
    #[case(ResourceType::Listener, "Listener")]
    #[case(ResourceType::RouteConfiguration, "RouteConfiguration")]
    #[case(ResourceType::Cluster, "Cluster")]
    #[case(ResourceType::ClusterLoadAssignment, "ClusterLoadAssignment")]
    fn undecodable_bytes(#[case] resource_type: ResourceType, #[case] message_type: &str) {
        let entry = Any {
            type_url: resource_type.type_url().to_string(),
            value: vec![0x0a, 0x10, b'x'],
        };
        let decoded = decode_entry(resource_type, &entry);
        assert_eq!(decoded.name, None);
        let error = decoded.result.unwrap_err();
        assert!(
            matches!(&error, DecodeError::Undecodable { message_type: m, .. } if *m == message_type),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with(&format!("Can't parse {message_type} resource: ")),
            "{error}"
        );
    }

    #[test]
    fn invalid_resource_keeps_its_name() {
        let decoded = decode_entry(
            ResourceType::Cluster,
            &any(&Cluster {
                name: "c1".into(),
                ..Default::default()
            }),
        );
        assert_eq!(decoded.name.as_deref(), Some("c1"));
        let error = decoded.result.unwrap_err();
        assert_eq!(
            error.to_string(),
            "errors validating Cluster resource: [field:type error:unknown discovery type]"
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap fuzz: every prefix of valid resources and some noise.
        let mut inputs: Vec<Vec<u8>> = vec![
            listener_any("l").value,
            any(&route_config(
                "r",
                vec![vhost(&["*"], vec![prefix_route("/a/b", "c")])],
            ))
            .value,
            any(&eds_cluster("c")).value,
            any(&cla(
                "e",
                vec![locality("r", Some(1), 3, vec![lb_endpoint("::1", 1)])],
            ))
            .value,
        ];
        let noise: Vec<u8> = (0..=255u8).collect();
        inputs.push(noise);
        for bytes in &inputs {
            for end in 0..=bytes.len() {
                for resource_type in ResourceType::ALL {
                    let entry = Any {
                        type_url: resource_type.type_url().to_string(),
                        value: bytes[..end].to_vec(),
                    };
                    let _ = decode_entry(resource_type, &entry);
                }
            }
        }
    }
}
