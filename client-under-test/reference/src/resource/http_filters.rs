//! The HTTP filters gRPC knows (C-core's `xds_http_filter_registry.cc` and
//! its per-filter files): their config types, where they may run, which one
//! is terminal, and how much of their config is checked at validation time.

use envoy_types::pb::envoy::extensions::filters::common::fault::v3::fault_delay::FaultDelaySecifier;
use envoy_types::pb::envoy::extensions::filters::http::fault::v3::{
    HttpFault, fault_abort::ErrorType,
};
use envoy_types::pb::envoy::extensions::filters::http::{
    gcp_authn, rbac, router, stateful_session,
};
use prost::Message;

use super::common::{Extension, ExtensionValue, parse_duration};
use super::validation::FieldScope;

pub(super) const ROUTER_TYPE: &str = "envoy.extensions.filters.http.router.v3.Router";
pub(super) const FAULT_TYPE: &str = "envoy.extensions.filters.http.fault.v3.HTTPFault";
pub(super) const RBAC_TYPE: &str = "envoy.extensions.filters.http.rbac.v3.RBAC";
pub(super) const RBAC_PER_ROUTE_TYPE: &str = "envoy.extensions.filters.http.rbac.v3.RBACPerRoute";
pub(super) const STATEFUL_SESSION_TYPE: &str =
    "envoy.extensions.filters.http.stateful_session.v3.StatefulSession";
pub(super) const STATEFUL_SESSION_PER_ROUTE_TYPE: &str =
    "envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute";
pub(super) const GCP_AUTHN_TYPE: &str =
    "envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig";

/// gRPC's built-in filter registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KnownFilter {
    Router,
    Fault,
    Rbac,
    StatefulSession,
    GcpAuthn,
}

impl KnownFilter {
    const ALL: [KnownFilter; 5] = [
        KnownFilter::Router,
        KnownFilter::Fault,
        KnownFilter::Rbac,
        KnownFilter::StatefulSession,
        KnownFilter::GcpAuthn,
    ];

    pub(super) fn config_type(self) -> &'static str {
        match self {
            KnownFilter::Router => ROUTER_TYPE,
            KnownFilter::Fault => FAULT_TYPE,
            KnownFilter::Rbac => RBAC_TYPE,
            KnownFilter::StatefulSession => STATEFUL_SESSION_TYPE,
            KnownFilter::GcpAuthn => GCP_AUTHN_TYPE,
        }
    }

    /// The separate per-route override message, for filters that have one.
    fn override_type(self) -> Option<&'static str> {
        match self {
            KnownFilter::Rbac => Some(RBAC_PER_ROUTE_TYPE),
            KnownFilter::StatefulSession => Some(STATEFUL_SESSION_PER_ROUTE_TYPE),
            _ => None,
        }
    }

    /// The filter for an HCM `http_filters[].typed_config` type.
    pub(super) fn for_top_level_type(type_name: &str) -> Option<KnownFilter> {
        KnownFilter::ALL
            .into_iter()
            .find(|f| f.config_type() == type_name)
    }

    /// The filter for a `typed_per_filter_config` type: C-core looks the
    /// type up among both top-level and override config types.
    pub(super) fn for_override_type(type_name: &str) -> Option<KnownFilter> {
        KnownFilter::ALL
            .into_iter()
            .find(|f| f.config_type() == type_name || f.override_type() == Some(type_name))
    }

    /// RBAC only runs on servers (gRFC A41); everything else runs on clients.
    pub(super) fn supported_on_clients(self) -> bool {
        self != KnownFilter::Rbac
    }

    /// Only the router and RBAC run on servers (C-core: fault injection,
    /// stateful session and GCP authentication are client filters).
    pub(super) fn supported_on_servers(self) -> bool {
        matches!(self, KnownFilter::Router | KnownFilter::Rbac)
    }

    /// Only the router ends a filter chain.
    pub(super) fn is_terminal(self) -> bool {
        self == KnownFilter::Router
    }

    /// Checks an HCM-level filter config. `scope` is the extension's value
    /// field. Built-in filters accept only protobuf configs, so a config
    /// given as a TypedStruct fails to parse, as in C-core.
    pub(super) fn validate_top_level(self, extension: &Extension, scope: &mut FieldScope<'_>) {
        match self {
            KnownFilter::Router => {
                decode::<router::v3::Router>(
                    extension,
                    scope,
                    "could not parse router filter config",
                );
            }
            KnownFilter::Fault => validate_fault(extension, scope),
            KnownFilter::Rbac => {
                decode::<rbac::v3::Rbac>(
                    extension,
                    scope,
                    "could not parse HTTP RBAC filter config",
                );
            }
            KnownFilter::StatefulSession => {
                decode::<stateful_session::v3::StatefulSession>(
                    extension,
                    scope,
                    "could not parse stateful session filter config",
                );
            }
            KnownFilter::GcpAuthn => {
                decode::<gcp_authn::v3::GcpAuthnFilterConfig>(
                    extension,
                    scope,
                    "could not parse GCP auth filter config",
                );
            }
        }
    }

    /// Checks a `typed_per_filter_config` override for this filter.
    pub(super) fn validate_override(self, extension: &Extension, scope: &mut FieldScope<'_>) {
        match self {
            KnownFilter::Router => scope.error("router filter does not support config override"),
            KnownFilter::GcpAuthn => {
                scope.error("GCP auth filter does not support config override")
            }
            // The fault filter uses the same message at both levels.
            KnownFilter::Fault => validate_fault(extension, scope),
            KnownFilter::Rbac => {
                decode::<rbac::v3::RbacPerRoute>(extension, scope, "could not parse RBACPerRoute");
            }
            KnownFilter::StatefulSession => {
                decode::<stateful_session::v3::StatefulSessionPerRoute>(
                    extension,
                    scope,
                    "could not parse stateful session filter override config",
                );
            }
        }
    }
}

fn decode<M: Message + Default>(
    extension: &Extension,
    scope: &mut FieldScope<'_>,
    error: &str,
) -> Option<M> {
    let decoded = match &extension.value {
        ExtensionValue::Proto(bytes) => M::decode(bytes.as_slice()).ok(),
        ExtensionValue::Json => None,
    };
    if decoded.is_none() {
        scope.error(error);
    }
    decoded
}

/// The parts of HTTPFault gRPC turns into its fault-injection policy and can
/// reject: the abort status code and the delay duration.
fn validate_fault(extension: &Extension, scope: &mut FieldScope<'_>) {
    let Some(fault) = decode::<HttpFault>(
        extension,
        scope,
        "could not parse fault injection filter config",
    ) else {
        return;
    };
    if let Some(abort) = &fault.abort
        && let Some(ErrorType::GrpcStatus(code)) = abort.error_type
        && code > 16
    {
        scope
            .at(".abort.grpc_status")
            .error(format!("invalid gRPC status code: {code}"));
    }
    if let Some(delay) = &fault.delay
        && let Some(FaultDelaySecifier::FixedDelay(duration)) = &delay.fault_delay_secifier
    {
        parse_duration(duration, &mut scope.at(".delay.fixed_delay"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ValidationErrors;
    use envoy_types::pb::envoy::extensions::filters::common::fault::v3::FaultDelay;
    use envoy_types::pb::envoy::extensions::filters::http::fault::v3::FaultAbort;
    use envoy_types::pb::google::protobuf::Duration;
    use rstest::rstest;

    fn extension(type_name: &str, value: ExtensionValue) -> Extension {
        Extension {
            type_name: type_name.to_string(),
            type_url: format!("type.googleapis.com/{type_name}"),
            value,
            field: String::new(),
        }
    }

    fn run(f: impl FnOnce(&mut FieldScope<'_>)) -> ValidationErrors {
        let mut errors = ValidationErrors::new("Test");
        f(&mut FieldScope::root(&mut errors).at(".x"));
        errors
    }

    #[rstest]
    #[case(ROUTER_TYPE, Some(KnownFilter::Router))]
    #[case(FAULT_TYPE, Some(KnownFilter::Fault))]
    #[case(RBAC_TYPE, Some(KnownFilter::Rbac))]
    #[case(STATEFUL_SESSION_TYPE, Some(KnownFilter::StatefulSession))]
    #[case(GCP_AUTHN_TYPE, Some(KnownFilter::GcpAuthn))]
    #[case(RBAC_PER_ROUTE_TYPE, None)]
    #[case("envoy.extensions.filters.http.lua.v3.Lua", None)]
    fn top_level_lookup(#[case] type_name: &str, #[case] expected: Option<KnownFilter>) {
        assert_eq!(KnownFilter::for_top_level_type(type_name), expected);
    }

    #[test]
    fn override_lookup_accepts_both_message_types() {
        assert_eq!(
            KnownFilter::for_override_type(RBAC_PER_ROUTE_TYPE),
            Some(KnownFilter::Rbac)
        );
        assert_eq!(
            KnownFilter::for_override_type(RBAC_TYPE),
            Some(KnownFilter::Rbac)
        );
        assert_eq!(
            KnownFilter::for_override_type(STATEFUL_SESSION_PER_ROUTE_TYPE),
            Some(KnownFilter::StatefulSession)
        );
        assert_eq!(KnownFilter::for_override_type("x.Y"), None);
    }

    #[test]
    fn only_rbac_is_server_only_and_only_router_is_terminal() {
        for f in KnownFilter::ALL {
            assert_eq!(f.supported_on_clients(), f != KnownFilter::Rbac);
            assert_eq!(f.is_terminal(), f == KnownFilter::Router);
        }
    }

    #[rstest]
    #[case(KnownFilter::Router, "could not parse router filter config")]
    #[case(KnownFilter::Fault, "could not parse fault injection filter config")]
    #[case(
        KnownFilter::StatefulSession,
        "could not parse stateful session filter config"
    )]
    fn builtin_configs_must_be_protobuf(#[case] filter: KnownFilter, #[case] message: &str) {
        let errors = run(|s| {
            filter.validate_top_level(&extension(filter.config_type(), ExtensionValue::Json), s)
        });
        assert_eq!(errors.errors, vec![("x".into(), message.into())]);
        let errors = run(|s| {
            filter.validate_top_level(
                &extension(filter.config_type(), ExtensionValue::Proto(vec![0xff])),
                s,
            )
        });
        assert_eq!(errors.errors, vec![("x".into(), message.into())]);
    }

    #[test]
    fn valid_configs_pass() {
        for filter in KnownFilter::ALL {
            let errors = run(|s| {
                filter.validate_top_level(
                    &extension(filter.config_type(), ExtensionValue::Proto(vec![])),
                    s,
                )
            });
            assert!(errors.is_empty(), "{filter:?}: {errors}");
        }
    }

    #[test]
    fn fault_abort_status_and_delay_are_checked() {
        let fault = HttpFault {
            abort: Some(FaultAbort {
                error_type: Some(ErrorType::GrpcStatus(17)),
                ..Default::default()
            }),
            delay: Some(FaultDelay {
                fault_delay_secifier: Some(FaultDelaySecifier::FixedDelay(Duration {
                    seconds: -1,
                    nanos: 0,
                })),
                ..Default::default()
            }),
            ..Default::default()
        };
        let ext = extension(FAULT_TYPE, ExtensionValue::Proto(fault.encode_to_vec()));
        let errors = run(|s| KnownFilter::Fault.validate_top_level(&ext, s));
        assert_eq!(
            errors.errors,
            vec![
                (
                    "x.abort.grpc_status".into(),
                    "invalid gRPC status code: 17".into()
                ),
                (
                    "x.delay.fixed_delay.seconds".into(),
                    "value must be in the range [0, 315576000000]".into()
                ),
            ]
        );
    }

    #[rstest]
    #[case(
        KnownFilter::Router,
        Some("router filter does not support config override")
    )]
    #[case(
        KnownFilter::GcpAuthn,
        Some("GCP auth filter does not support config override")
    )]
    #[case(KnownFilter::Fault, None)]
    #[case(KnownFilter::Rbac, None)]
    #[case(KnownFilter::StatefulSession, None)]
    fn overrides(#[case] filter: KnownFilter, #[case] error: Option<&str>) {
        let ext = extension(filter.config_type(), ExtensionValue::Proto(vec![]));
        let errors = run(|s| filter.validate_override(&ext, s));
        assert_eq!(
            errors.errors,
            error
                .map(|e| ("x".to_string(), e.to_string()))
                .into_iter()
                .collect::<Vec<_>>()
        );
    }
}
