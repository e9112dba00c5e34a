//! The CommonTlsContext of a Cluster's UpstreamTlsContext (gRFC A29), as
//! C-core's `CommonTlsContextParse` reads it: certificates come only from
//! certificate provider instances the bootstrap declares (or, for roots,
//! the system's), and every way of configuring TLS gRPC does not implement
//! is an error rather than something silently dropped.

use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CertificateValidationContext, CommonTlsContext, common_tls_context::ValidationContextType,
};
use envoy_types::pb::envoy::r#type::matcher::v3::{StringMatcher, string_matcher::MatchPattern};

use super::DecodeContext;
use super::common::check_regex;
use super::validation::{FieldScope, ValidationRule};

/// Validates `common` under `scope` (its own field); true when it names
/// root certificates, which a client's context must.
// C-core still honours the deprecated provider-instance fields.
#[allow(deprecated)]
pub(super) fn validate_common_tls_context(
    common: &CommonTlsContext,
    context: &DecodeContext,
    scope: &mut FieldScope<'_>,
) -> bool {
    let mut ca_certs = CaCerts::None;
    match &common.validation_context_type {
        Some(ValidationContextType::CombinedValidationContext(combined)) => {
            let mut scope = scope.at(".combined_validation_context");
            if let Some(default) = &combined.default_validation_context {
                ca_certs = validate_validation_context(
                    default,
                    context,
                    &mut scope.at(".default_validation_context"),
                );
            }
            // The deprecated instance still counts unless the default
            // context named one (system roots do not stop it).
            if ca_certs != CaCerts::Instance
                && let Some(instance) = &combined.validation_context_certificate_provider_instance
            {
                check_instance_name(
                    &instance.instance_name,
                    context,
                    &mut scope.at(".validation_context_certificate_provider_instance"),
                );
                ca_certs = CaCerts::Instance;
            }
        }
        Some(ValidationContextType::ValidationContext(validation)) => {
            ca_certs = validate_validation_context(
                validation,
                context,
                &mut scope.at(".validation_context"),
            );
        }
        Some(ValidationContextType::ValidationContextSdsSecretConfig(_)) => {
            unsupported(&mut scope.at(".validation_context_sds_secret_config"));
        }
        // The deprecated field C-core does not read, or none.
        _ => {}
    }
    if let Some(instance) = &common.tls_certificate_provider_instance {
        check_instance_name(
            &instance.instance_name,
            context,
            &mut scope.at(".tls_certificate_provider_instance"),
        );
    } else if let Some(instance) = &common.tls_certificate_certificate_provider_instance {
        check_instance_name(
            &instance.instance_name,
            context,
            &mut scope.at(".tls_certificate_certificate_provider_instance"),
        );
    } else {
        if !common.tls_certificates.is_empty() {
            unsupported(&mut scope.at(".tls_certificates"));
        }
        if !common.tls_certificate_sds_secret_configs.is_empty() {
            unsupported(&mut scope.at(".tls_certificate_sds_secret_configs"));
        }
    }
    if common.tls_params.is_some() {
        unsupported(&mut scope.at(".tls_params"));
    }
    if common.custom_handshaker.is_some() {
        unsupported(&mut scope.at(".custom_handshaker"));
    }
    ca_certs != CaCerts::None
}

/// Where root certificates come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CaCerts {
    None,
    System,
    Instance,
}

/// C-core's `CertificateValidationContextParse`.
// `match_subject_alt_names` is deprecated in Envoy; gRPC still reads it.
#[allow(deprecated)]
fn validate_validation_context(
    validation: &CertificateValidationContext,
    context: &DecodeContext,
    scope: &mut FieldScope<'_>,
) -> CaCerts {
    for (i, matcher) in validation.match_subject_alt_names.iter().enumerate() {
        validate_string_matcher(
            matcher,
            &mut scope.at(&format!(".match_subject_alt_names[{i}]")),
        );
    }
    let ca_certs = if let Some(instance) = &validation.ca_certificate_provider_instance {
        check_instance_name(
            &instance.instance_name,
            context,
            &mut scope.at(".ca_certificate_provider_instance"),
        );
        CaCerts::Instance
    } else if validation.system_root_certs.is_some() {
        CaCerts::System
    } else {
        CaCerts::None
    };
    if !validation.verify_certificate_spki.is_empty() {
        unsupported(&mut scope.at(".verify_certificate_spki"));
    }
    if !validation.verify_certificate_hash.is_empty() {
        unsupported(&mut scope.at(".verify_certificate_hash"));
    }
    if validation
        .require_signed_certificate_timestamp
        .is_some_and(|b| b.value)
    {
        unsupported(&mut scope.at(".require_signed_certificate_timestamp"));
    }
    if validation.crl.is_some() {
        unsupported(&mut scope.at(".crl"));
    }
    if validation.custom_validator_config.is_some() {
        unsupported(&mut scope.at(".custom_validator_config"));
    }
    ca_certs
}

/// A way of configuring TLS that gRPC does not implement.
fn unsupported(scope: &mut FieldScope<'_>) {
    if scope.enforces(ValidationRule::TlsUnsupportedFeature) {
        scope.error("feature unsupported");
    }
}

/// Certificates come from the bootstrap's provider instances only.
fn check_instance_name(name: &str, context: &DecodeContext, scope: &mut FieldScope<'_>) {
    if !context.certificate_providers.contains(name)
        && scope.enforces(ValidationRule::TlsCertificateProviderInstance)
    {
        scope.at(".instance_name").error(format!(
            "unrecognized certificate provider instance name: {name}"
        ));
    }
}

/// C-core's `StringMatcherParse` for subject alternative names.
fn validate_string_matcher(matcher: &StringMatcher, scope: &mut FieldScope<'_>) {
    match &matcher.match_pattern {
        Some(MatchPattern::SafeRegex(regex)) => {
            if let Err(e) = check_regex(&regex.regex) {
                scope.error(format!("Invalid regex string specified in matcher: {e}"));
            } else if matcher.ignore_case {
                scope
                    .at(".ignore_case")
                    .error("not supported for regex matcher");
            }
        }
        Some(
            MatchPattern::Exact(_)
            | MatchPattern::Prefix(_)
            | MatchPattern::Suffix(_)
            | MatchPattern::Contains(_),
        ) => {}
        Some(MatchPattern::Custom(_)) | None => scope.error("invalid string matcher"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ValidationErrors;
    use envoy_types::pb::envoy::config::core::v3::{
        DataSource, TypedExtensionConfig, data_source::Specifier,
    };
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
        CertificateProviderPluginInstance, SdsSecretConfig, TlsCertificate, TlsParameters,
        certificate_validation_context::SystemRootCerts,
        common_tls_context::{CertificateProviderInstance, CombinedCertificateValidationContext},
    };
    use envoy_types::pb::envoy::r#type::matcher::v3::RegexMatcher;
    use envoy_types::pb::google::protobuf::BoolValue;
    use rstest::rstest;

    fn context_with(providers: &[&str]) -> DecodeContext {
        DecodeContext {
            certificate_providers: providers.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        }
    }

    /// `(has CA certs, errors as (field, message))` of `common`.
    fn validate(
        common: &CommonTlsContext,
        context: &DecodeContext,
    ) -> (bool, Vec<(String, String)>) {
        let mut errors = ValidationErrors::in_context("Cluster", context);
        let has_ca_certs = validate_common_tls_context(
            common,
            context,
            &mut FieldScope::root(&mut errors).at(".common_tls_context"),
        );
        (has_ca_certs, errors.errors)
    }

    fn plugin(name: &str) -> Option<CertificateProviderPluginInstance> {
        Some(CertificateProviderPluginInstance {
            instance_name: name.to_string(),
            certificate_name: String::new(),
        })
    }

    fn with_validation(validation: CertificateValidationContext) -> CommonTlsContext {
        CommonTlsContext {
            validation_context_type: Some(ValidationContextType::ValidationContext(validation)),
            ..Default::default()
        }
    }

    fn roots(name: &str) -> CertificateValidationContext {
        CertificateValidationContext {
            ca_certificate_provider_instance: plugin(name),
            ..Default::default()
        }
    }

    #[test]
    fn roots_from_a_declared_instance_or_the_system() {
        let context = context_with(&["roots"]);
        assert_eq!(
            validate(&with_validation(roots("roots")), &context),
            (true, vec![])
        );
        let system = CertificateValidationContext {
            system_root_certs: Some(SystemRootCerts::default()),
            ..Default::default()
        };
        assert_eq!(validate(&with_validation(system), &context), (true, vec![]));
        assert_eq!(
            validate(&CommonTlsContext::default(), &context),
            (false, vec![])
        );
    }

    #[test]
    fn instance_names_must_be_in_the_bootstrap() {
        let common = CommonTlsContext {
            tls_certificate_provider_instance: plugin("identity"),
            ..with_validation(roots("roots"))
        };
        let (has_ca_certs, errors) = validate(&common, &context_with(&["roots"]));
        assert!(has_ca_certs, "roots are named, if not usable");
        assert_eq!(
            errors,
            vec![(
                "common_tls_context.tls_certificate_provider_instance.instance_name".into(),
                "unrecognized certificate provider instance name: identity".into()
            )]
        );
        let (_, errors) = validate(&common, &context_with(&[]));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(
            errors[0].0,
            "common_tls_context.validation_context.ca_certificate_provider_instance.instance_name"
        );
    }

    #[test]
    #[allow(deprecated)]
    fn deprecated_instances_are_read_too() {
        let combined = CombinedCertificateValidationContext {
            default_validation_context: Some(CertificateValidationContext::default()),
            validation_context_certificate_provider_instance: Some(CertificateProviderInstance {
                instance_name: "old".into(),
                certificate_name: String::new(),
            }),
            ..Default::default()
        };
        let common = CommonTlsContext {
            validation_context_type: Some(ValidationContextType::CombinedValidationContext(
                combined,
            )),
            ..Default::default()
        };
        assert_eq!(validate(&common, &context_with(&["old"])), (true, vec![]));
        let (_, errors) = validate(&common, &context_with(&[]));
        assert_eq!(
            errors[0].0,
            "common_tls_context.combined_validation_context.validation_context_certificate_provider_instance.instance_name"
        );
    }

    fn inline_bytes() -> DataSource {
        DataSource {
            specifier: Some(Specifier::InlineBytes(vec![1])),
            ..Default::default()
        }
    }

    #[rstest]
    #[case(CertificateValidationContext { verify_certificate_spki: vec!["x".into()], ..roots("r") }, ".validation_context.verify_certificate_spki")]
    #[case(CertificateValidationContext { verify_certificate_hash: vec!["x".into()], ..roots("r") }, ".validation_context.verify_certificate_hash")]
    #[case(CertificateValidationContext { require_signed_certificate_timestamp: Some(BoolValue { value: true }), ..roots("r") }, ".validation_context.require_signed_certificate_timestamp")]
    #[case(CertificateValidationContext { crl: Some(inline_bytes()), ..roots("r") }, ".validation_context.crl")]
    #[case(CertificateValidationContext { custom_validator_config: Some(TypedExtensionConfig::default()), ..roots("r") }, ".validation_context.custom_validator_config")]
    fn unsupported_validation_features(
        #[case] validation: CertificateValidationContext,
        #[case] field: &str,
    ) {
        let (_, errors) = validate(&with_validation(validation), &context_with(&["r"]));
        assert_eq!(
            errors,
            vec![(
                format!("common_tls_context{field}"),
                "feature unsupported".into()
            )]
        );
    }

    #[rstest]
    #[case(CommonTlsContext { tls_params: Some(TlsParameters::default()), ..with_validation(roots("r")) }, ".tls_params")]
    #[case(CommonTlsContext { custom_handshaker: Some(TypedExtensionConfig::default()), ..with_validation(roots("r")) }, ".custom_handshaker")]
    #[case(CommonTlsContext { tls_certificates: vec![TlsCertificate::default()], ..with_validation(roots("r")) }, ".tls_certificates")]
    #[case(CommonTlsContext { tls_certificate_sds_secret_configs: vec![SdsSecretConfig::default()], ..with_validation(roots("r")) }, ".tls_certificate_sds_secret_configs")]
    #[case(
        CommonTlsContext {
            validation_context_type: Some(ValidationContextType::ValidationContextSdsSecretConfig(SdsSecretConfig::default())),
            ..Default::default()
        },
        ".validation_context_sds_secret_config"
    )]
    fn unsupported_context_features(#[case] common: CommonTlsContext, #[case] field: &str) {
        let (_, errors) = validate(&common, &context_with(&["r"]));
        assert_eq!(
            errors,
            vec![(
                format!("common_tls_context{field}"),
                "feature unsupported".into()
            )]
        );
    }

    #[test]
    fn an_identity_instance_makes_inline_certificates_moot() {
        let common = CommonTlsContext {
            tls_certificate_provider_instance: plugin("r"),
            tls_certificates: vec![TlsCertificate::default()],
            ..with_validation(roots("r"))
        };
        assert_eq!(validate(&common, &context_with(&["r"])), (true, vec![]));
    }

    fn san(pattern: Option<MatchPattern>, ignore_case: bool) -> StringMatcher {
        StringMatcher {
            match_pattern: pattern,
            ignore_case,
        }
    }

    fn regex(r: &str) -> Option<MatchPattern> {
        Some(MatchPattern::SafeRegex(RegexMatcher {
            regex: r.into(),
            ..Default::default()
        }))
    }

    #[rstest]
    #[case(san(Some(MatchPattern::Exact("a".into())), true), None)]
    #[case(san(regex("a.*"), false), None)]
    #[case(san(None, false), Some(("", "invalid string matcher")))]
    #[case(san(regex("("), false), Some(("", "Invalid regex string specified in matcher")))]
    #[case(san(regex("a"), true), Some((".ignore_case", "not supported for regex matcher")))]
    fn subject_alt_name_matchers(
        #[case] matcher: StringMatcher,
        #[case] expected: Option<(&str, &str)>,
    ) {
        // `match_subject_alt_names` is deprecated in Envoy; gRPC still reads it.
        #[allow(deprecated)]
        let validation = CertificateValidationContext {
            match_subject_alt_names: vec![matcher],
            ..roots("r")
        };
        let (_, errors) = validate(&with_validation(validation), &context_with(&["r"]));
        match expected {
            None => assert!(errors.is_empty(), "{errors:?}"),
            Some((suffix, message)) => {
                assert_eq!(errors.len(), 1, "{errors:?}");
                assert_eq!(
                    errors[0].0,
                    format!(
                        "common_tls_context.validation_context.match_subject_alt_names[0]{suffix}"
                    )
                );
                assert!(errors[0].1.contains(message), "{errors:?}");
            }
        }
    }

    #[test]
    fn a_broken_client_lets_one_rule_go() {
        let common = CommonTlsContext {
            tls_params: Some(TlsParameters::default()),
            ..with_validation(roots("unknown"))
        };
        let broken = |rule| DecodeContext {
            broken_rule: Some(rule),
            ..Default::default()
        };
        let (_, errors) = validate(&common, &broken(ValidationRule::TlsUnsupportedFeature));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].1.contains("unrecognized certificate provider"));
        let (_, errors) = validate(
            &common,
            &broken(ValidationRule::TlsCertificateProviderInstance),
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].1, "feature unsupported");
    }
}
