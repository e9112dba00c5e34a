//! Parsers for the xDS building blocks every resource type shares (C-core's
//! `xds_common_types_parser.cc`): typed extensions, durations, fractions,
//! config sources, socket addresses and regexes.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::{
    Address, ConfigSource, address, config_source::ConfigSourceSpecifier,
    socket_address::PortSpecifier,
};
use envoy_types::pb::envoy::r#type::v3::fractional_percent::DenominatorType;
use envoy_types::pb::google::protobuf;
use prost::Message;

use super::validation::{FieldScope, ValidationRule};

/// Both spellings of the TypedStruct wrapper gRPC unwraps.
const TYPED_STRUCT_TYPES: [&str; 2] = ["xds.type.v3.TypedStruct", "udpa.type.v1.TypedStruct"];

/// `xds.type.v3.TypedStruct` (wire-identical to `udpa.type.v1.TypedStruct`);
/// envoy-types does not ship it.
#[derive(Clone, PartialEq, Message)]
pub(super) struct TypedStruct {
    #[prost(string, tag = "1")]
    pub(super) type_url: String,
    #[prost(message, optional, tag = "2")]
    pub(super) value: Option<protobuf::Struct>,
}

/// The payload of a typed extension.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ExtensionValue {
    /// A serialized protobuf of `Extension::type_name`.
    Proto(Vec<u8>),
    /// Config given as JSON through a TypedStruct wrapper. gRPC's built-in
    /// extensions only accept protobuf; only custom ones take this form.
    Json,
}

/// A `google.protobuf.Any` holding an extension config, unwrapped as C-core's
/// `ExtractXdsExtension` does.
#[derive(Clone, Debug)]
pub(super) struct Extension {
    /// Message type without its URL prefix, e.g.
    /// `envoy.extensions.filters.http.router.v3.Router`.
    pub(super) type_name: String,
    /// The type URL as written (the TypedStruct's inner one when wrapped).
    pub(super) type_url: String,
    pub(super) value: ExtensionValue,
    /// Field-path suffix errors about the contents go under, e.g.
    /// `.value[envoy.extensions.filters.http.router.v3.Router]`.
    pub(super) field: String,
}

/// Unwraps an extension's `Any` (and a TypedStruct inside it). Errors are
/// reported under `scope`; `None` means the extension type is unknowable.
pub(super) fn extract_extension(
    any: Option<&protobuf::Any>,
    scope: &mut FieldScope<'_>,
) -> Option<Extension> {
    let Some(any) = any else {
        scope.error("field not present");
        return None;
    };
    let type_name = strip_type_prefix(&any.type_url, scope)?;
    let field = format!(".value[{type_name}]");
    if !TYPED_STRUCT_TYPES.contains(&type_name.as_str()) {
        return Some(Extension {
            type_name,
            type_url: any.type_url.clone(),
            value: ExtensionValue::Proto(any.value.clone()),
            field,
        });
    }
    let mut wrapper_scope = scope.at(&field);
    let Ok(typed_struct) = TypedStruct::decode(any.value.as_slice()) else {
        wrapper_scope.error("could not parse");
        return None;
    };
    let inner_name = strip_type_prefix(&typed_struct.type_url, &mut wrapper_scope)?;
    let field = format!("{field}.value[{inner_name}]");
    Some(Extension {
        type_name: inner_name,
        type_url: typed_struct.type_url,
        value: ExtensionValue::Json,
        field,
    })
}

/// `type.googleapis.com/a.b.C` -> `a.b.C`. As in C-core, a URL without a
/// usable `/` is reported but still used whole; only an empty one stops.
fn strip_type_prefix(type_url: &str, scope: &mut FieldScope<'_>) -> Option<String> {
    if type_url.is_empty() {
        scope.at(".type_url").error("field not present");
        return None;
    }
    match type_url.rsplit_once('/') {
        Some((_, name)) if !name.is_empty() => Some(name.to_string()),
        _ => {
            scope
                .at(".type_url")
                .error(format!("invalid value \"{type_url}\""));
            Some(type_url.to_string())
        }
    }
}

/// Validates a `google.protobuf.Duration` the way C-core's `ParseDuration`
/// does (non-negative, within the proto's documented range). `None` when
/// invalid; the errors are already reported.
pub(super) fn parse_duration(
    duration: &protobuf::Duration,
    scope: &mut FieldScope<'_>,
) -> Option<Duration> {
    if !scope.enforces(ValidationRule::DurationRange) {
        // Any duration is taken; one that cannot be a Duration counts as 0.
        let seconds = u64::try_from(duration.seconds).unwrap_or(0);
        let nanos = u32::try_from(duration.nanos).unwrap_or(0).min(999_999_999);
        return Some(Duration::new(seconds, nanos));
    }
    let seconds = u64::try_from(duration.seconds)
        .ok()
        .filter(|s| *s <= 315_576_000_000);
    if seconds.is_none() {
        scope
            .at(".seconds")
            .error("value must be in the range [0, 315576000000]");
    }
    let nanos = u32::try_from(duration.nanos)
        .ok()
        .filter(|n| *n <= 999_999_999);
    if nanos.is_none() {
        scope
            .at(".nanos")
            .error("value must be in the range [0, 999999999]");
    }
    Some(Duration::new(seconds?, nanos?))
}

/// A `FractionalPercent` numerator scaled to parts per million, or `None`
/// for a denominator gRPC does not know. Saturates rather than wrapping the
/// way C-core's unsigned multiply would.
pub(super) fn parts_per_million(numerator: u32, denominator: i32) -> Option<u32> {
    let scale = match DenominatorType::try_from(denominator).ok()? {
        DenominatorType::Hundred => 10_000,
        DenominatorType::TenThousand => 100,
        DenominatorType::Million => 1,
    };
    Some(numerator.saturating_mul(scale))
}

/// gRPC only follows config sources that point back at the xDS server the
/// resource came from.
pub(super) fn is_ads_or_self(config_source: &ConfigSource) -> bool {
    matches!(
        config_source.config_source_specifier,
        Some(ConfigSourceSpecifier::Ads(_) | ConfigSourceSpecifier::Self_(_))
    )
}

/// An `envoy.config.core.v3.Address` that must be an IP socket address, as
/// C-core's `ParseXdsAddress` requires for endpoints.
pub(super) fn parse_socket_address(
    address: Option<&Address>,
    scope: &mut FieldScope<'_>,
) -> Option<SocketAddr> {
    let Some(address) = address else {
        scope.error("field not present");
        return None;
    };
    let mut scope = scope.at(".socket_address");
    let Some(address::Address::SocketAddress(socket_address)) = &address.address else {
        scope.error("field not present");
        return None;
    };
    // C-core reads `port_value` unconditionally, so an unset port is 0.
    let port = match socket_address.port_specifier {
        Some(PortSpecifier::PortValue(port)) => port,
        _ => 0,
    };
    let port = match u16::try_from(port) {
        Ok(port) => port,
        // A client that skips the check keeps the low 16 bits, as a C cast.
        Err(_) if !scope.enforces(ValidationRule::PortRange) => port as u16,
        Err(_) => {
            scope.at(".port_value").error("invalid port");
            return None;
        }
    };
    match socket_address.address.parse::<IpAddr>() {
        Ok(ip) => Some(SocketAddr::new(ip, port)),
        // One that skips it drops the endpoint without a word.
        Err(_) if !scope.enforces(ValidationRule::AddressIsIp) => None,
        Err(_) => {
            scope.error(format!(
                "Failed to parse address:{}",
                join_host_port(&socket_address.address, port.into())
            ));
            None
        }
    }
}

/// `host:port`, bracketing IPv6 literals (C-core's `JoinHostPort`).
pub(super) fn join_host_port(host: &str, port: u32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Compiles a `safe_regex` (RE2 syntax) so an invalid one is rejected at
/// validation time as C-core does; Rust's `regex` accepts the RE2 dialect.
pub(super) fn check_regex(pattern: &str) -> Result<(), String> {
    regex::Regex::new(pattern)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ValidationErrors;
    use envoy_types::pb::envoy::config::core::v3::{
        AggregatedConfigSource, SelfConfigSource, SocketAddress,
    };
    use rstest::rstest;

    fn any(type_url: &str, value: Vec<u8>) -> protobuf::Any {
        protobuf::Any {
            type_url: type_url.to_string(),
            value,
        }
    }

    fn with_scope<T>(f: impl FnOnce(&mut FieldScope<'_>) -> T) -> (T, ValidationErrors) {
        let mut errors = ValidationErrors::new("Test");
        let out = f(&mut FieldScope::root(&mut errors).at(".f"));
        (out, errors)
    }

    #[test]
    fn extension_plain_any() {
        let (ext, errors) =
            with_scope(|s| extract_extension(Some(&any("type.googleapis.com/a.B", vec![1])), s));
        let ext = ext.unwrap();
        assert!(errors.is_empty());
        assert_eq!(ext.type_name, "a.B");
        assert_eq!(ext.value, ExtensionValue::Proto(vec![1]));
        assert_eq!(ext.field, ".value[a.B]");
    }

    #[test]
    fn extension_missing_and_empty_type() {
        let (ext, errors) = with_scope(|s| extract_extension(None, s));
        assert!(ext.is_none());
        assert_eq!(
            errors.errors,
            vec![("f".into(), "field not present".into())]
        );
        let (ext, errors) = with_scope(|s| extract_extension(Some(&any("", vec![])), s));
        assert!(ext.is_none());
        assert_eq!(
            errors.errors,
            vec![("f.type_url".into(), "field not present".into())]
        );
    }

    #[test]
    fn extension_type_url_without_slash_is_reported_but_used() {
        let (ext, errors) = with_scope(|s| extract_extension(Some(&any("a.B", vec![])), s));
        assert_eq!(ext.unwrap().type_name, "a.B");
        assert_eq!(
            errors.errors,
            vec![("f.type_url".into(), "invalid value \"a.B\"".into())]
        );
    }

    #[rstest]
    #[case("type.googleapis.com/xds.type.v3.TypedStruct")]
    #[case("type.googleapis.com/udpa.type.v1.TypedStruct")]
    fn extension_typed_struct_is_unwrapped(#[case] wrapper: &str) {
        let inner = TypedStruct {
            type_url: "type.googleapis.com/c.D".into(),
            value: None,
        };
        let (ext, errors) =
            with_scope(|s| extract_extension(Some(&any(wrapper, inner.encode_to_vec())), s));
        let ext = ext.unwrap();
        assert!(errors.is_empty());
        assert_eq!(ext.type_name, "c.D");
        assert_eq!(ext.type_url, "type.googleapis.com/c.D");
        assert_eq!(ext.value, ExtensionValue::Json);
        let wrapper_name = wrapper.rsplit('/').next().unwrap();
        assert_eq!(ext.field, format!(".value[{wrapper_name}].value[c.D]"));
    }

    #[test]
    fn extension_bad_typed_struct() {
        let (ext, errors) = with_scope(|s| {
            extract_extension(
                Some(&any(
                    "type.googleapis.com/xds.type.v3.TypedStruct",
                    vec![0xff],
                )),
                s,
            )
        });
        assert!(ext.is_none());
        assert_eq!(
            errors.errors,
            vec![(
                "f.value[xds.type.v3.TypedStruct]".into(),
                "could not parse".into()
            )]
        );
    }

    #[rstest]
    #[case(0, 0, Some(Duration::ZERO))]
    #[case(5, 500, Some(Duration::new(5, 500)))]
    #[case(-1, 0, None)]
    #[case(0, -1, None)]
    #[case(315_576_000_001, 0, None)]
    #[case(0, 1_000_000_000, None)]
    fn durations(#[case] seconds: i64, #[case] nanos: i32, #[case] expected: Option<Duration>) {
        let (d, errors) = with_scope(|s| parse_duration(&protobuf::Duration { seconds, nanos }, s));
        assert_eq!(d, expected);
        assert_eq!(errors.is_empty(), expected.is_some());
    }

    #[rstest]
    #[case(5, DenominatorType::Hundred as i32, Some(50_000))]
    #[case(5, DenominatorType::TenThousand as i32, Some(500))]
    #[case(5, DenominatorType::Million as i32, Some(5))]
    #[case(u32::MAX, DenominatorType::Hundred as i32, Some(u32::MAX))]
    #[case(5, 7, None)]
    fn fractions(#[case] numerator: u32, #[case] denominator: i32, #[case] expected: Option<u32>) {
        assert_eq!(parts_per_million(numerator, denominator), expected);
    }

    #[test]
    fn config_sources() {
        let ads = ConfigSource {
            config_source_specifier: Some(ConfigSourceSpecifier::Ads(AggregatedConfigSource {})),
            ..Default::default()
        };
        let self_ = ConfigSource {
            config_source_specifier: Some(
                ConfigSourceSpecifier::Self_(SelfConfigSource::default()),
            ),
            ..Default::default()
        };
        assert!(is_ads_or_self(&ads));
        assert!(is_ads_or_self(&self_));
        assert!(!is_ads_or_self(&ConfigSource::default()));
    }

    fn socket(address: &str, port: Option<u32>) -> Address {
        Address {
            address: Some(address::Address::SocketAddress(SocketAddress {
                address: address.to_string(),
                port_specifier: port.map(PortSpecifier::PortValue),
                ..Default::default()
            })),
        }
    }

    #[rstest]
    #[case(socket("10.0.0.1", Some(80)), Ok("10.0.0.1:80"))]
    #[case(socket("::1", Some(443)), Ok("[::1]:443"))]
    #[case(socket("10.0.0.1", None), Ok("10.0.0.1:0"))]
    #[case(socket("10.0.0.1", Some(70000)), Err(("f.socket_address.port_value", "invalid port")))]
    #[case(socket("example.com", Some(80)), Err(("f.socket_address", "Failed to parse address:example.com:80")))]
    #[case(socket("", Some(80)), Err(("f.socket_address", "Failed to parse address")))]
    #[case(Address { address: None }, Err(("f.socket_address", "field not present")))]
    fn socket_addresses(#[case] address: Address, #[case] expected: Result<&str, (&str, &str)>) {
        let (parsed, errors) = with_scope(|s| parse_socket_address(Some(&address), s));
        match expected {
            Ok(rendered) => {
                assert_eq!(parsed.unwrap().to_string(), rendered);
                assert!(errors.is_empty());
            }
            Err((field, message)) => {
                assert!(parsed.is_none());
                assert_eq!(errors.errors.len(), 1, "{errors}");
                assert_eq!(errors.errors[0].0, field);
                assert!(errors.errors[0].1.contains(message), "{errors}");
            }
        }
    }

    #[test]
    fn regexes() {
        assert!(check_regex("").is_ok());
        assert!(check_regex("/svc/.*").is_ok());
        assert!(check_regex("(").is_err());
    }
}
