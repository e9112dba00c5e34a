//! Field-level validation errors, collected (not short-circuited) so a NACK
//! names every problem in a resource, as gRPC's ValidationErrors does.

use std::fmt;

use super::DecodeContext;

/// Every problem found in one resource: `(field path, message)` pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationErrors {
    /// The message type validated, e.g. "Cluster".
    pub resource: &'static str,
    /// The text the list follows, e.g. "errors validating Cluster resource"
    /// (C-core words EDS's differently).
    pub heading: String,
    pub errors: Vec<(String, String)>,
    /// The rule this validation breaks on purpose
    /// (`Defects::broken_validation`); `None` in every real profile.
    broken_rule: Option<ValidationRule>,
}

impl ValidationErrors {
    pub fn new(resource: &'static str) -> Self {
        ValidationErrors {
            resource,
            heading: format!("errors validating {resource} resource"),
            errors: Vec::new(),
            broken_rule: None,
        }
    }

    /// Errors of a resource validated under `context`: the rule it breaks
    /// on purpose, if any, is not enforced.
    pub(super) fn in_context(resource: &'static str, context: &DecodeContext) -> Self {
        ValidationErrors {
            broken_rule: context.broken_rule,
            ..ValidationErrors::new(resource)
        }
    }

    /// The same errors under another heading.
    pub(super) fn with_heading(mut self, heading: &str) -> Self {
        self.heading = heading.to_string();
        self
    }

    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push((field.into(), message.into()));
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// The parsed value if nothing was wrong, else these errors. A parser
    /// that gave up without saying why still yields an error, so an invalid
    /// resource can never pass silently.
    pub(super) fn into_result<T>(mut self, value: Option<T>) -> Result<T, ValidationErrors> {
        match value {
            Some(value) if self.is_empty() => Ok(value),
            None if self.is_empty() => {
                self.add("", "resource could not be parsed");
                Err(self)
            }
            _ => Err(self),
        }
    }
}

impl fmt::Display for ValidationErrors {
    /// `errors validating Cluster resource: [field:lb_policy error:...; ...]`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: [", self.heading)?;
        for (i, (field, message)) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "field:{field} error:{message}")?;
        }
        f.write_str("]")
    }
}

/// A position in a resource being validated: errors added here are recorded
/// under the field path built so far. Nesting mirrors C-core's
/// `ValidationErrors::ScopedField`, so paths read the same as gRPC's NACKs:
/// `root.at(".virtual_hosts[0]").at(".domains")` is `virtual_hosts[0].domains`
/// (a top-level field loses its leading dot, as in C-core).
pub(super) struct FieldScope<'a> {
    errors: &'a mut ValidationErrors,
    path: String,
}

impl<'a> FieldScope<'a> {
    pub(super) fn root(errors: &'a mut ValidationErrors) -> Self {
        FieldScope {
            errors,
            path: String::new(),
        }
    }

    /// The scope of a sub-field: `ext` is appended as written (`.name`,
    /// `[3]`, `.value[type]`).
    pub(super) fn at(&mut self, ext: &str) -> FieldScope<'_> {
        let ext = if self.path.is_empty() {
            ext.strip_prefix('.').unwrap_or(ext)
        } else {
            ext
        };
        FieldScope {
            errors: self.errors,
            path: format!("{}{ext}", self.path),
        }
    }

    pub(super) fn error(&mut self, message: impl Into<String>) {
        self.errors.add(self.path.clone(), message);
    }

    /// How many errors the whole resource has so far; comparing two counts
    /// tells whether a sub-parse failed, as C-core's `errors->size()` does.
    pub(super) fn error_count(&self) -> usize {
        self.errors.errors.len()
    }

    /// Whether `rule` holds here: false only in a client built to break it
    /// (`Defects::broken_validation`), so every check names the rule it
    /// makes and the broken clients can lift one at a time.
    pub(super) fn enforces(&self, rule: ValidationRule) -> bool {
        self.errors.broken_rule != Some(rule)
    }
}

crate::defect::breakable_rules! {
/// A validation rule of gRPC C-core's parsers that a scenario under
/// `scenarios/validation/` checks, by name, so a deliberately broken
/// reference client can break exactly one (`Defects::broken_validation`).
/// A rule that rejects something is broken by accepting it; a rule that
/// ignores something (a route, a cluster, an endpoint) is broken by
/// using it or rejecting the resource instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValidationRule {
    // Listener: the HttpConnectionManager (gRFC A41).
    /// `xff_num_trusted_hops` must be zero.
    XffNumTrustedHops,
    /// `original_ip_detection_extensions` must be empty.
    OriginalIpDetectionExtensions,
    // RouteConfiguration (gRFC A28, A44).
    /// A route's `safe_regex` path matcher must compile.
    PathRegex,
    /// A header matcher's regex must compile.
    HeaderRegex,
    /// A header matcher must say how it matches (a `string_match` too).
    HeaderMatchSpecifier,
    /// A header `range_match` must not end before it starts.
    HeaderRange,
    /// A route whose cluster specifier gRPC does not support
    /// (`cluster_header`, none) is ignored, not an error.
    UnsupportedClusterSpecifierIgnored,
    /// A route naming an optional cluster specifier plugin of a type gRPC
    /// does not support is ignored, not an error.
    OptionalPluginRoutesIgnored,
    /// A non-optional cluster specifier plugin must be of a supported type.
    PluginType,
    /// `retry_policy.num_retries` must be greater than 0.
    RetryNumRetries,
    /// `retry_policy.retry_back_off` must have a `base_interval`.
    RetryBaseInterval,
    /// Every weighted cluster must have a weight.
    WeightedClusterWeight,
    /// Weighted clusters must leave at least one cluster with a weight.
    WeightedClustersNonEmpty,
    /// Weighted clusters' weights must sum to at most 2^32 - 1.
    WeightedClustersTotal,
    /// A weighted cluster of weight 0 is dropped, never used.
    ZeroWeightClustersDropped,
    // Cluster (gRFC A27, A29, A37, A42, A50).
    /// The discovery type must be EDS, LOGICAL_DNS or an aggregate cluster.
    DiscoveryType,
    /// The legacy `lb_policy` must be one gRPC supports (gRFC A46: "an
    /// individual resource that sets a supported field to an unsupported
    /// value will be considered invalid"); broken, it is read as
    /// ROUND_ROBIN.
    LbPolicySupported,
    /// `eds_cluster_config.eds_config` must be ADS or self.
    EdsConfigSource,
    /// A `cluster_type` extension must be an aggregate cluster's config.
    CustomClusterType,
    /// A LOGICAL_DNS cluster has exactly one locality with one endpoint.
    LogicalDnsShape,
    /// `lrs_server` must be `self`.
    LrsServerSelf,
    /// Outlier detection's percentages must be at most 100.
    OutlierDetectionPercent,
    /// A duration must be non-negative and in protobuf's range.
    DurationRange,
    /// Ring sizes must be in 1..=8388608, the minimum not above the maximum.
    RingHashSizes,
    /// A `transport_socket` must be an UpstreamTlsContext.
    TransportSocketType,
    /// An UpstreamTlsContext must name CA certificates.
    TlsCaCertificates,
    /// CommonTlsContext features gRPC does not support must be unset.
    TlsUnsupportedFeature,
    /// A certificate provider instance must be one the bootstrap declares.
    TlsCertificateProviderInstance,
    // ClusterLoadAssignment (gRFC A27, A61).
    /// A locality with a weight must have a `locality`.
    LocalityPresent,
    /// Priorities must run from 0 without a gap (so none reaches the
    /// number of localities, which C-core checks first).
    PrioritiesContiguous,
    /// A locality may appear once per priority.
    LocalitiesUnique,
    /// An address may appear once in the whole resource.
    AddressesUnique,
    /// A port must fit in 16 bits.
    PortRange,
    /// An endpoint address must be an IP address.
    AddressIsIp,
    /// An endpoint's `load_balancing_weight`, if set, must be above 0.
    EndpointWeight,
    // Any type (xds.config.resource-in-sotw).
    /// A `Resource` wrapper's name names what it wraps, a body that does
    /// not decode too: its error is that name's.
    WrapperNamesItsResource,
}
}
