//! Listener resources: as a gRPC client uses them, an `api_listener`
//! holding an HttpConnectionManager; one with an `address` instead is a
//! server's (`server_listener`).

use std::collections::HashSet;
use std::time::Duration;

use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager as HcmProto, http_connection_manager::RouteSpecifier,
    http_filter::ConfigType,
};
use prost::Message;

use super::common::{Extension, ExtensionValue, extract_extension, is_ads_or_self, parse_duration};
use super::http_filters::KnownFilter;
use super::validation::FieldScope;
use super::{
    DecodeContext, DecodeError, RouteConfigResource, ValidationErrors, ValidationRule, XdsResource,
};

const HCM_TYPE: &str =
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

#[derive(Clone, Debug, PartialEq)]
pub struct ListenerResource {
    pub http_connection_manager: HttpConnectionManager,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HttpConnectionManager {
    pub route_source: RouteSource,
    /// In order; the last one is the router.
    pub http_filters: Vec<HttpFilter>,
    /// `common_http_protocol_options.max_stream_duration`.
    pub http_max_stream_duration: Option<Duration>,
}

/// Where the route configuration comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum RouteSource {
    /// `rds` over ADS: the RouteConfiguration resource name to watch.
    Rds(String),
    /// `route_config` inlined in the listener.
    Inline(RouteConfigResource),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpFilter {
    pub name: String,
    /// Type URL of the filter's `typed_config` (after unwrapping TypedStruct).
    pub config_type_url: String,
}

impl ListenerResource {
    /// e.g. `rds=route-1 filters=[router]` or `inline {…} filters=[router]`.
    pub fn summary(&self) -> String {
        let hcm = &self.http_connection_manager;
        let filters: Vec<&str> = hcm.http_filters.iter().map(|f| f.name.as_str()).collect();
        let routes = match &hcm.route_source {
            RouteSource::Rds(name) => format!("rds={name}"),
            RouteSource::Inline(rc) => format!("inline {{{}}}", rc.summary()),
        };
        format!("{routes} filters=[{}]", filters.join(","))
    }
}

/// Decodes and validates a serialized `envoy.config.listener.v3.Listener`.
/// Returns the resource name whenever the message decoded, even if invalid.
pub(super) fn decode(
    bytes: &[u8],
    context: &DecodeContext,
) -> (Option<String>, Result<XdsResource, DecodeError>) {
    let listener = match Listener::decode(bytes) {
        Ok(listener) => listener,
        Err(e) => {
            return (
                None,
                Err(DecodeError::Undecodable {
                    message_type: "Listener",
                    reason: e.to_string(),
                }),
            );
        }
    };
    let mut errors = ValidationErrors::in_context("Listener", context);
    let mut scope = FieldScope::root(&mut errors);
    // C-core: an api_listener makes it a client's, else an address a
    // server's (a Listener with both is a client's, for Istio's sake).
    let parsed = match (&listener.api_listener, &listener.address) {
        (Some(_), _) => parse_listener(&listener, &mut scope).map(XdsResource::Listener),
        (None, Some(_)) => super::server_listener::parse_server_listener(&listener, &mut scope)
            .map(XdsResource::ServerListener),
        (None, None) => {
            scope.error("Listener has neither address nor ApiListener");
            None
        }
    };
    let result = errors.into_result(parsed).map_err(DecodeError::Invalid);
    (Some(listener.name), result)
}

/// Which side reads an HttpConnectionManager: HTTP filters run on one side
/// or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Client,
    Server,
}

/// C-core's `LdsResourceParseClient`: only the `api_listener` matters.
fn parse_listener(listener: &Listener, scope: &mut FieldScope<'_>) -> Option<ListenerResource> {
    let api_listener = listener.api_listener.as_ref()?;
    let mut scope = scope.at(".api_listener.api_listener");
    let extension = extract_extension(api_listener.api_listener.as_ref(), &mut scope)?;
    let http_connection_manager =
        parse_hcm(&extension, &mut scope.at(&extension.field), Side::Client)?;
    Some(ListenerResource {
        http_connection_manager,
    })
}

/// C-core's `HttpConnectionManagerParse`. `scope` is the extension's value
/// field.
pub(super) fn parse_hcm(
    extension: &Extension,
    scope: &mut FieldScope<'_>,
    side: Side,
) -> Option<HttpConnectionManager> {
    if extension.type_name != HCM_TYPE {
        scope.error("unsupported filter type");
        return None;
    }
    let ExtensionValue::Proto(bytes) = &extension.value else {
        scope.error("could not parse HttpConnectionManager config");
        return None;
    };
    let Ok(hcm) = HcmProto::decode(bytes.as_slice()) else {
        scope.error("could not parse HttpConnectionManager config");
        return None;
    };
    // gRFC A41: gRPC never trusts forwarded-for headers.
    if hcm.xff_num_trusted_hops != 0 && scope.enforces(ValidationRule::XffNumTrustedHops) {
        scope.at(".xff_num_trusted_hops").error("must be zero");
    }
    if !hcm.original_ip_detection_extensions.is_empty()
        && scope.enforces(ValidationRule::OriginalIpDetectionExtensions)
    {
        scope
            .at(".original_ip_detection_extensions")
            .error("must be empty");
    }
    // Only a client bounds its streams' duration.
    let http_max_stream_duration = hcm
        .common_http_protocol_options
        .as_ref()
        .filter(|_| side == Side::Client)
        .and_then(|options| options.max_stream_duration.as_ref())
        .and_then(|d| {
            parse_duration(
                d,
                &mut scope.at(".common_http_protocol_options.max_stream_duration"),
            )
        });
    let http_filters = parse_http_filters(&hcm, &mut scope.at(".http_filters"), side);
    let route_source = parse_route_source(&hcm, scope)?;
    Some(HttpConnectionManager {
        route_source,
        http_filters,
        http_max_stream_duration,
    })
}

fn parse_http_filters(hcm: &HcmProto, scope: &mut FieldScope<'_>, side: Side) -> Vec<HttpFilter> {
    let errors_before = scope.error_count();
    let mut names_seen = HashSet::new();
    let mut filters: Vec<(HttpFilter, KnownFilter)> = Vec::new();
    for (i, filter) in hcm.http_filters.iter().enumerate() {
        let mut scope = scope.at(&format!("[{i}]"));
        if filter.name.is_empty() {
            scope.at(".name").error("empty filter name");
            continue;
        }
        if !names_seen.insert(filter.name.as_str()) {
            scope
                .at(".name")
                .error(format!("duplicate HTTP filter name: {}", filter.name));
            continue;
        }
        let mut scope = scope.at(".typed_config");
        // A filter delivered by ECDS (`config_discovery`) has no typed_config.
        let any = match &filter.config_type {
            Some(ConfigType::TypedConfig(any)) => Some(any),
            _ => None,
        };
        let Some(extension) = extract_extension(any, &mut scope) else {
            continue;
        };
        let mut scope = scope.at(&extension.field);
        let Some(known) = KnownFilter::for_top_level_type(&extension.type_name) else {
            if !filter.is_optional {
                scope.error("unsupported filter type");
            }
            continue;
        };
        let supported = match side {
            Side::Client => known.supported_on_clients(),
            Side::Server => known.supported_on_servers(),
        };
        if !supported {
            if !filter.is_optional {
                let side = if side == Side::Client {
                    "clients"
                } else {
                    "servers"
                };
                scope.error(format!("filter is not supported on {side}"));
            }
            continue;
        }
        known.validate_top_level(&extension, &mut scope);
        filters.push((
            HttpFilter {
                name: filter.name.clone(),
                config_type_url: extension.type_url,
            },
            known,
        ));
    }
    if scope.error_count() == errors_before && filters.is_empty() {
        scope.error("expected at least one HTTP filter");
    }
    // Checked over the filters kept, so an optional filter that was skipped
    // does not count as the last one (as in C-core).
    let last = filters.len().saturating_sub(1);
    for (i, (_, known)) in filters.iter().enumerate() {
        if i != last && known.is_terminal() {
            scope.error(format!(
                "terminal filter for config type {} must be the last filter in the chain",
                known.config_type()
            ));
        } else if i == last && !known.is_terminal() {
            scope.error(format!(
                "non-terminal filter for config type {} is the last filter in the chain",
                known.config_type()
            ));
        }
    }
    filters.into_iter().map(|(filter, _)| filter).collect()
}

fn parse_route_source(hcm: &HcmProto, scope: &mut FieldScope<'_>) -> Option<RouteSource> {
    match &hcm.route_specifier {
        Some(RouteSpecifier::RouteConfig(route_config)) => Some(RouteSource::Inline(
            super::route::parse_route_configuration(route_config, &mut scope.at(".route_config")),
        )),
        Some(RouteSpecifier::Rds(rds)) => {
            let mut scope = scope.at(".rds.config_source");
            match &rds.config_source {
                None => scope.error("field not present"),
                Some(source) if !is_ads_or_self(source) => {
                    scope.error("ConfigSource does not specify ADS or SELF")
                }
                Some(_) => {}
            }
            // C-core does not insist on a non-empty name: it watches "".
            Some(RouteSource::Rds(rds.route_config_name.clone()))
        }
        Some(RouteSpecifier::ScopedRoutes(_)) => {
            scope.error(
                "neither route_config nor rds fields are present (scoped_routes is not supported)",
            );
            None
        }
        None => {
            scope.error("neither route_config nor rds fields are present");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_support::*;
    use envoy_types::pb::envoy::config::core::v3::{HttpProtocolOptions, TypedExtensionConfig};
    use envoy_types::pb::envoy::config::listener::v3::ApiListener;
    use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
    use envoy_types::pb::envoy::extensions::filters::http::fault::v3::HttpFault;
    use envoy_types::pb::envoy::extensions::filters::http::rbac::v3::Rbac;
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
        HttpFilter as HttpFilterProto, Rds, ScopedRoutes,
    };
    use envoy_types::pb::google::protobuf::{self, Any};
    use rstest::rstest;

    const HCM: &str = "api_listener.api_listener.value[envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager]";

    fn field(suffix: &str) -> String {
        format!("{HCM}{suffix}")
    }

    fn decode_hcm(hcm: &HcmProto) -> (Option<String>, Result<XdsResource, DecodeError>) {
        decode(
            &api_listener("l1", hcm).encode_to_vec(),
            &DecodeContext::default(),
        )
    }

    fn listener_value(
        decoded: (Option<String>, Result<XdsResource, DecodeError>),
    ) -> ListenerResource {
        match valid(decoded) {
            XdsResource::Listener(l) => l,
            other => panic!("not a listener: {other:?}"),
        }
    }

    fn with_filters(filters: Vec<HttpFilterProto>) -> HcmProto {
        HcmProto {
            http_filters: filters,
            ..hcm_rds("route-1")
        }
    }

    fn optional(mut filter: HttpFilterProto) -> HttpFilterProto {
        filter.is_optional = true;
        filter
    }

    fn unknown_config() -> Any {
        Any {
            type_url: "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua".into(),
            value: vec![],
        }
    }

    #[test]
    fn minimal_rds_listener() {
        let decoded = decode_hcm(&hcm_rds("route-1"));
        assert_eq!(decoded.0.as_deref(), Some("l1"));
        let listener = listener_value(decoded);
        let hcm = &listener.http_connection_manager;
        assert_eq!(hcm.route_source, RouteSource::Rds("route-1".into()));
        assert_eq!(
            hcm.http_filters,
            vec![HttpFilter {
                name: "router".into(),
                config_type_url:
                    "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router".into()
            }]
        );
        assert_eq!(hcm.http_max_stream_duration, None);
        assert_eq!(listener.summary(), "rds=route-1 filters=[router]");
    }

    #[test]
    fn rds_over_self_config_source() {
        let mut hcm = hcm_rds("route-1");
        hcm.route_specifier = Some(RouteSpecifier::Rds(Rds {
            config_source: Some(self_source()),
            route_config_name: "route-1".into(),
        }));
        assert!(decode_hcm(&hcm).1.is_ok());
    }

    #[test]
    fn empty_rds_name_is_accepted_like_c_core() {
        let listener = listener_value(decode_hcm(&hcm_rds("")));
        assert_eq!(
            listener.http_connection_manager.route_source,
            RouteSource::Rds(String::new())
        );
    }

    #[test]
    fn inline_route_config() {
        let rc = route_config("inline", vec![vhost(&["*"], vec![prefix_route("", "c1")])]);
        let hcm = HcmProto {
            route_specifier: Some(RouteSpecifier::RouteConfig(rc)),
            ..hcm_rds("")
        };
        let listener = listener_value(decode_hcm(&hcm));
        let RouteSource::Inline(rc) = &listener.http_connection_manager.route_source else {
            panic!("not inline")
        };
        assert_eq!(rc.virtual_hosts.len(), 1);
        assert_eq!(
            listener.summary(),
            "inline {vhosts=[vh{*}: prefix \"\" -> c1]} filters=[router]"
        );
    }

    #[test]
    fn inline_route_config_errors_are_nested() {
        let rc = route_config("inline", vec![vhost(&[], vec![prefix_route("", "c1")])]);
        let hcm = HcmProto {
            route_specifier: Some(RouteSpecifier::RouteConfig(rc)),
            ..hcm_rds("")
        };
        let errors = invalid(decode_hcm(&hcm));
        assert_error(
            &errors,
            &field(".route_config.virtual_hosts[0].domains"),
            "must be non-empty",
        );
    }

    #[test]
    fn undecodable_bytes() {
        let (name, result) = decode(&[0xff, 0xff], &DecodeContext::default());
        assert_eq!(name, None);
        assert!(
            matches!(
                result,
                Err(DecodeError::Undecodable {
                    message_type: "Listener",
                    ..
                })
            ),
            "{result:?}"
        );
    }

    #[rstest]
    #[case(Listener { name: "l".into(), ..Default::default() }, "", "Listener has neither address nor ApiListener")]
    #[case(
        Listener { name: "l".into(), address: Some(socket_address("0.0.0.0", 80)), ..Default::default() },
        "default_filter_chain",
        "must be set if filter_chains is unset"
    )]
    #[case(
        Listener { name: "l".into(), api_listener: Some(ApiListener { api_listener: None }), ..Default::default() },
        "api_listener.api_listener",
        "field not present"
    )]
    #[case(
        Listener {
            name: "l".into(),
            api_listener: Some(ApiListener { api_listener: Some(any(&RouteConfiguration::default())) }),
            ..Default::default()
        },
        "api_listener.api_listener.value[envoy.config.route.v3.RouteConfiguration]",
        "unsupported filter type"
    )]
    #[case(
        Listener {
            name: "l".into(),
            api_listener: Some(ApiListener {
                api_listener: Some(Any { type_url: format!("type.googleapis.com/{HCM_TYPE}"), value: vec![0xff] }),
            }),
            ..Default::default()
        },
        HCM,
        "could not parse HttpConnectionManager config"
    )]
    #[case(
        Listener {
            name: "l".into(),
            api_listener: Some(ApiListener { api_listener: Some(typed_struct(&format!("type.googleapis.com/{HCM_TYPE}"))) }),
            ..Default::default()
        },
        &format!("api_listener.api_listener.value[xds.type.v3.TypedStruct].value[{HCM_TYPE}]"),
        "could not parse HttpConnectionManager config"
    )]
    fn invalid_api_listener(
        #[case] listener: Listener,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        let decoded = decode(&listener.encode_to_vec(), &DecodeContext::default());
        assert_eq!(
            decoded.0.as_deref(),
            Some("l"),
            "name is returned even when invalid"
        );
        let errors = invalid(decoded);
        assert_error(&errors, field, message);
        assert_eq!(errors.errors.len(), 1, "{errors}");
    }

    #[rstest]
    #[case(Rds { config_source: None, route_config_name: "r".into() }, "field not present")]
    #[case(
        Rds { config_source: Some(Default::default()), route_config_name: "r".into() },
        "ConfigSource does not specify ADS or SELF"
    )]
    fn rds_config_source_must_be_ads_or_self(#[case] rds: Rds, #[case] message: &str) {
        let hcm = HcmProto {
            route_specifier: Some(RouteSpecifier::Rds(rds)),
            ..hcm_rds("")
        };
        assert_error(
            &invalid(decode_hcm(&hcm)),
            &field(".rds.config_source"),
            message,
        );
    }

    #[rstest]
    #[case(
        Some(RouteSpecifier::ScopedRoutes(ScopedRoutes::default())),
        "scoped_routes is not supported"
    )]
    #[case(None, "neither route_config nor rds fields are present")]
    fn route_specifier_required(#[case] specifier: Option<RouteSpecifier>, #[case] message: &str) {
        let hcm = HcmProto {
            route_specifier: specifier,
            ..hcm_rds("")
        };
        assert_error(&invalid(decode_hcm(&hcm)), HCM, message);
    }

    #[test]
    fn http_filters_must_not_be_empty() {
        let errors = invalid(decode_hcm(&with_filters(vec![])));
        assert_error(
            &errors,
            &field(".http_filters"),
            "expected at least one HTTP filter",
        );
    }

    #[test]
    fn only_optional_unknown_filters_leave_none() {
        let errors = invalid(decode_hcm(&with_filters(vec![optional(http_filter(
            "lua",
            unknown_config(),
        ))])));
        assert_eq!(
            errors.errors,
            vec![(
                field(".http_filters"),
                "expected at least one HTTP filter".into()
            )]
        );
    }

    #[test]
    fn filter_names_must_be_non_empty_and_unique() {
        let errors = invalid(decode_hcm(&with_filters(vec![
            http_filter("", any(&HttpFault::default())),
            http_filter("fault", any(&HttpFault::default())),
            http_filter("fault", any(&HttpFault::default())),
            router_filter(),
        ])));
        assert_error(
            &errors,
            &field(".http_filters[0].name"),
            "empty filter name",
        );
        assert_error(
            &errors,
            &field(".http_filters[2].name"),
            "duplicate HTTP filter name: fault",
        );
        assert_eq!(errors.errors.len(), 2, "{errors}");
    }

    #[test]
    fn last_filter_must_be_the_router() {
        let errors = invalid(decode_hcm(&with_filters(vec![http_filter(
            "fault",
            any(&HttpFault::default()),
        )])));
        assert_eq!(
            errors.errors,
            vec![(
                field(".http_filters"),
                "non-terminal filter for config type envoy.extensions.filters.http.fault.v3.HTTPFault is the last \
                 filter in the chain"
                    .into()
            )]
        );
    }

    #[test]
    fn router_must_not_come_before_the_end() {
        let errors = invalid(decode_hcm(&with_filters(vec![
            router_filter(),
            http_filter("fault", any(&HttpFault::default())),
        ])));
        assert_error(
            &errors,
            &field(".http_filters"),
            "terminal filter for config type envoy.extensions.filters.http.router.v3.Router must be the last filter",
        );
        assert_error(
            &errors,
            &field(".http_filters"),
            "non-terminal filter for config type",
        );
    }

    #[test]
    fn fault_then_router_is_valid() {
        let listener = listener_value(decode_hcm(&with_filters(vec![
            http_filter("fault", any(&HttpFault::default())),
            router_filter(),
        ])));
        let names: Vec<&str> = listener
            .http_connection_manager
            .http_filters
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["fault", "router"]);
    }

    #[test]
    fn unknown_filter_type_is_an_error_unless_optional() {
        let errors = invalid(decode_hcm(&with_filters(vec![
            http_filter("lua", unknown_config()),
            router_filter(),
        ])));
        assert_eq!(
            errors.errors,
            vec![(
                field(
                    ".http_filters[0].typed_config.value[envoy.extensions.filters.http.lua.v3.Lua]"
                ),
                "unsupported filter type".into()
            )]
        );
        // Optional: skipped, even after the router.
        let listener = listener_value(decode_hcm(&with_filters(vec![
            optional(http_filter("lua", unknown_config())),
            router_filter(),
            optional(http_filter("lua2", unknown_config())),
        ])));
        assert_eq!(listener.http_connection_manager.http_filters.len(), 1);
    }

    #[test]
    fn rbac_is_not_supported_on_clients() {
        let errors = invalid(decode_hcm(&with_filters(vec![
            http_filter("rbac", any(&Rbac::default())),
            router_filter(),
        ])));
        assert_error(
            &errors,
            &field(
                ".http_filters[0].typed_config.value[envoy.extensions.filters.http.rbac.v3.RBAC]",
            ),
            "filter is not supported on clients",
        );
        let listener = listener_value(decode_hcm(&with_filters(vec![
            optional(http_filter("rbac", any(&Rbac::default()))),
            router_filter(),
        ])));
        assert_eq!(listener.http_connection_manager.http_filters.len(), 1);
    }

    #[test]
    fn filter_without_typed_config() {
        let filter = HttpFilterProto {
            name: "ecds".into(),
            config_type: None,
            ..Default::default()
        };
        let errors = invalid(decode_hcm(&with_filters(vec![filter, router_filter()])));
        assert_eq!(
            errors.errors,
            vec![(
                field(".http_filters[0].typed_config"),
                "field not present".into()
            )]
        );
    }

    #[test]
    fn typed_struct_wrapped_filters() {
        // A built-in filter cannot take its config as a TypedStruct.
        let router = http_filter(
            "router",
            typed_struct(&format!(
                "type.googleapis.com/{}",
                super::super::http_filters::ROUTER_TYPE
            )),
        );
        let errors = invalid(decode_hcm(&with_filters(vec![router])));
        assert_error(
            &errors,
            &field(
                ".http_filters[0].typed_config.value[xds.type.v3.TypedStruct].value[envoy.extensions.filters.http.router.v3.Router]",
            ),
            "could not parse router filter config",
        );
        // An unknown optional filter wrapped in a TypedStruct is skipped.
        let listener = listener_value(decode_hcm(&with_filters(vec![
            optional(http_filter(
                "custom",
                typed_struct("type.googleapis.com/my.Filter"),
            )),
            router_filter(),
        ])));
        assert_eq!(listener.http_connection_manager.http_filters.len(), 1);
    }

    #[test]
    fn max_stream_duration() {
        let mut hcm = hcm_rds("r");
        hcm.common_http_protocol_options = Some(HttpProtocolOptions {
            max_stream_duration: Some(protobuf::Duration {
                seconds: 5,
                nanos: 0,
            }),
            ..Default::default()
        });
        let listener = listener_value(decode_hcm(&hcm));
        assert_eq!(
            listener.http_connection_manager.http_max_stream_duration,
            Some(Duration::from_secs(5))
        );

        hcm.common_http_protocol_options = Some(HttpProtocolOptions {
            max_stream_duration: Some(protobuf::Duration {
                seconds: -5,
                nanos: 0,
            }),
            ..Default::default()
        });
        assert_error(
            &invalid(decode_hcm(&hcm)),
            &field(".common_http_protocol_options.max_stream_duration.seconds"),
            "value must be in the range",
        );
    }

    #[test]
    fn client_side_rbac_fields_must_be_unset() {
        let mut hcm = hcm_rds("r");
        hcm.xff_num_trusted_hops = 1;
        hcm.original_ip_detection_extensions = vec![TypedExtensionConfig::default()];
        let errors = invalid(decode_hcm(&hcm));
        assert_error(&errors, &field(".xff_num_trusted_hops"), "must be zero");
        assert_error(
            &errors,
            &field(".original_ip_detection_extensions"),
            "must be empty",
        );
    }

    #[test]
    fn every_error_is_collected() {
        let hcm = HcmProto {
            xff_num_trusted_hops: 2,
            http_filters: vec![
                http_filter("", any(&HttpFault::default())),
                http_filter("lua", unknown_config()),
            ],
            route_specifier: Some(RouteSpecifier::Rds(Rds {
                config_source: None,
                route_config_name: "r".into(),
            })),
            ..Default::default()
        };
        let errors = invalid(decode_hcm(&hcm));
        let fields: Vec<&str> = errors
            .errors
            .iter()
            .map(|(f, _)| f.strip_prefix(HCM).unwrap_or(f))
            .collect();
        assert_eq!(
            fields,
            [
                ".xff_num_trusted_hops",
                ".http_filters[0].name",
                ".http_filters[1].typed_config.value[envoy.extensions.filters.http.lua.v3.Lua]",
                ".rds.config_source",
            ]
        );
        assert!(
            errors
                .to_string()
                .starts_with("errors validating Listener resource: [field:"),
            "{errors}"
        );
    }
}
