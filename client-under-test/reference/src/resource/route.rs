//! RouteConfiguration resources: virtual hosts and the routes gRPC supports.

use std::collections::HashMap;

use envoy_types::pb::envoy::config::route::v3::{
    self as proto, header_matcher::HeaderMatchSpecifier, route::Action,
    route_action::ClusterSpecifier, route_action::hash_policy::PolicySpecifier,
    route_match::PathSpecifier,
};
use envoy_types::pb::envoy::r#type::matcher::v3::{StringMatcher, string_matcher::MatchPattern};
use envoy_types::pb::google::protobuf::Any;
use prost::Message;

use super::common::{
    Extension, ExtensionValue, check_regex, extract_extension, parse_duration, parts_per_million,
};
use super::http_filters::KnownFilter;
use super::validation::FieldScope;
use super::{DecodeContext, DecodeError, ValidationErrors, ValidationRule, XdsResource};

const FILTER_CONFIG_TYPE: &str = "envoy.config.route.v3.FilterConfig";

#[derive(Clone, Debug, PartialEq)]
pub struct RouteConfigResource {
    pub virtual_hosts: Vec<VirtualHost>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VirtualHost {
    pub name: String,
    pub domains: Vec<String>,
    /// Routes gRPC can use, in order. Routes gRPC ignores (e.g. with query
    /// parameter matchers or a `cluster_header` action) are left out.
    pub routes: Vec<Route>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    pub matcher: RouteMatch,
    pub action: RouteAction,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RouteMatch {
    pub path: PathMatcher,
    /// `case_sensitive`, default true.
    pub case_sensitive: bool,
    pub headers: Vec<HeaderMatcher>,
    /// `runtime_fraction.default_value` converted to parts per million.
    pub fraction_per_million: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathMatcher {
    Prefix(String),
    Path(String),
    SafeRegex(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct HeaderMatcher {
    pub name: String,
    pub matcher: HeaderMatch,
    pub invert: bool,
    /// False only for a `string_match` with `ignore_case` (not applied to
    /// regexes); the legacy `*_match` fields are case-sensitive.
    pub case_sensitive: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum HeaderMatch {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
    SafeRegex(String),
    Present(bool),
    Range { start: i64, end: i64 },
}

#[derive(Clone, Debug, PartialEq)]
pub enum RouteAction {
    Cluster(String),
    WeightedClusters(Vec<WeightedCluster>),
    /// A route gRPC recognises but cannot forward on (redirect,
    /// direct_response, filter_action): RPCs matching it fail.
    NonForwarding,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedCluster {
    pub name: String,
    pub weight: u32,
}

impl RouteConfigResource {
    /// e.g. `vhosts=[vh{*}: prefix "" -> c1]`.
    pub fn summary(&self) -> String {
        let vhosts: Vec<String> = self
            .virtual_hosts
            .iter()
            .map(|vh| {
                let routes: Vec<String> = vh.routes.iter().map(Route::summary).collect();
                format!(
                    "{}{{{}}}: {}",
                    vh.name,
                    vh.domains.join(","),
                    routes.join(", ")
                )
            })
            .collect();
        format!("vhosts=[{}]", vhosts.join("; "))
    }
}

impl Route {
    pub fn summary(&self) -> String {
        let path = match &self.matcher.path {
            PathMatcher::Prefix(p) => format!("prefix {p:?}"),
            PathMatcher::Path(p) => format!("path {p:?}"),
            PathMatcher::SafeRegex(r) => format!("regex {r:?}"),
        };
        let action = match &self.action {
            RouteAction::Cluster(c) => c.clone(),
            RouteAction::WeightedClusters(ws) => {
                let parts: Vec<String> = ws
                    .iter()
                    .map(|w| format!("{}:{}", w.name, w.weight))
                    .collect();
                format!("weighted[{}]", parts.join(","))
            }
            RouteAction::NonForwarding => "non-forwarding".to_string(),
        };
        format!("{path} -> {action}")
    }
}

/// Decodes and validates a serialized `envoy.config.route.v3.RouteConfiguration`.
pub(super) fn decode(
    bytes: &[u8],
    context: &DecodeContext,
) -> (Option<String>, Result<XdsResource, DecodeError>) {
    let route_config = match proto::RouteConfiguration::decode(bytes) {
        Ok(route_config) => route_config,
        Err(e) => {
            return (
                None,
                Err(DecodeError::Undecodable {
                    message_type: "RouteConfiguration",
                    reason: e.to_string(),
                }),
            );
        }
    };
    let mut errors = ValidationErrors::in_context("RouteConfiguration", context);
    let parsed = parse_route_configuration(&route_config, &mut FieldScope::root(&mut errors));
    let result = errors
        .into_result(Some(parsed))
        .map(XdsResource::RouteConfiguration)
        .map_err(DecodeError::Invalid);
    (Some(route_config.name), result)
}

/// C-core's `XdsRouteConfigResourceParse`; also used for a RouteConfiguration
/// inlined in a Listener. Errors go under `scope`; the value is only
/// meaningful if none were added.
pub(super) fn parse_route_configuration(
    route_config: &proto::RouteConfiguration,
    scope: &mut FieldScope<'_>,
) -> RouteConfigResource {
    let plugins = parse_cluster_specifier_plugins(route_config, scope);
    let virtual_hosts = route_config
        .virtual_hosts
        .iter()
        .enumerate()
        .map(|(i, vhost)| {
            parse_virtual_host(
                vhost,
                &plugins,
                &mut scope.at(&format!(".virtual_hosts[{i}]")),
            )
        })
        .collect();
    RouteConfigResource { virtual_hosts }
}

/// A cluster specifier plugin a route may name. This client implements no
/// plugin type (C-core implements RLS), so each is either optional, making
/// the routes that use it ignored, or already an error.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Plugin {
    OptionalUnsupported,
    Invalid,
}

fn parse_cluster_specifier_plugins(
    route_config: &proto::RouteConfiguration,
    scope: &mut FieldScope<'_>,
) -> HashMap<String, Plugin> {
    let mut plugins = HashMap::new();
    for (i, plugin) in route_config.cluster_specifier_plugins.iter().enumerate() {
        let mut scope = scope.at(&format!(".cluster_specifier_plugins[{i}].extension"));
        let Some(extension_config) = &plugin.extension else {
            scope.error("field not present");
            continue;
        };
        let name = extension_config.name.clone();
        if plugins.contains_key(&name) {
            scope
                .at(".name")
                .error(format!("duplicate name \"{name}\""));
        } else {
            plugins.insert(name.clone(), Plugin::Invalid);
        }
        let mut scope = scope.at(".typed_config");
        let Some(extension) = extract_extension(extension_config.typed_config.as_ref(), &mut scope)
        else {
            continue;
        };
        // A client that skips the type check treats every plugin as optional.
        if plugin.is_optional || !scope.enforces(ValidationRule::PluginType) {
            plugins.insert(name, Plugin::OptionalUnsupported);
        } else {
            scope
                .at(&extension.field)
                .error("unsupported ClusterSpecifierPlugin type");
        }
    }
    plugins
}

fn parse_virtual_host(
    vhost: &proto::VirtualHost,
    plugins: &HashMap<String, Plugin>,
    scope: &mut FieldScope<'_>,
) -> VirtualHost {
    for (j, domain) in vhost.domains.iter().enumerate() {
        if !is_valid_domain_pattern(domain) {
            scope
                .at(&format!(".domains[{j}]"))
                .error(format!("invalid domain pattern \"{domain}\""));
        }
    }
    if vhost.domains.is_empty() {
        scope.at(".domains").error("must be non-empty");
    }
    parse_typed_per_filter_config(
        &vhost.typed_per_filter_config,
        &mut scope.at(".typed_per_filter_config"),
    );
    if let Some(retry_policy) = &vhost.retry_policy {
        validate_retry_policy(retry_policy, &mut scope.at(".retry_policy"));
    }
    let mut routes_scope = scope.at(".routes");
    let routes = vhost
        .routes
        .iter()
        .enumerate()
        .filter_map(|(j, route)| {
            parse_route(route, plugins, &mut routes_scope.at(&format!("[{j}]")))
        })
        .collect();
    VirtualHost {
        name: vhost.name.clone(),
        domains: vhost.domains.clone(),
        routes,
    }
}

/// Exact (`foo.com`), suffix (`*.foo.com`), prefix (`foo.*`) or `*`; a `*`
/// anywhere else cannot be matched (C-core's `DomainPatternMatchType`).
fn is_valid_domain_pattern(domain: &str) -> bool {
    !domain.is_empty()
        && (!domain.contains('*') || domain.starts_with('*') || domain.ends_with('*'))
}

/// A route gRPC can use, `None` for one it ignores (or that has errors).
fn parse_route(
    route: &proto::Route,
    plugins: &HashMap<String, Plugin>,
    scope: &mut FieldScope<'_>,
) -> Option<Route> {
    let matcher = {
        let mut scope = scope.at(".match");
        let Some(route_match) = &route.r#match else {
            scope.error("field not present");
            return None;
        };
        // gRPC cannot see query parameters, so such a route never matches.
        if !route_match.query_parameters.is_empty() {
            return None;
        }
        let path = parse_path_matcher(route_match, &mut scope)?;
        RouteMatch {
            path,
            case_sensitive: route_match.case_sensitive.is_none_or(|b| b.value),
            headers: parse_header_matchers(route_match, &mut scope),
            fraction_per_million: parse_runtime_fraction(route_match, &mut scope),
        }
    };
    let action = match &route.action {
        Some(Action::Route(route_action)) => {
            parse_route_action(route_action, plugins, &mut scope.at(".route"))?
        }
        // non_forwarding_action, redirect, direct_response, filter_action
        // or nothing: kept, and RPCs matching it fail.
        _ => RouteAction::NonForwarding,
    };
    parse_typed_per_filter_config(
        &route.typed_per_filter_config,
        &mut scope.at(".typed_per_filter_config"),
    );
    Some(Route { matcher, action })
}

/// `None` (with no error) for a prefix or path that can never match a gRPC
/// method path `/service/method`: C-core ignores such routes.
fn parse_path_matcher(
    route_match: &proto::RouteMatch,
    scope: &mut FieldScope<'_>,
) -> Option<PathMatcher> {
    match &route_match.path_specifier {
        Some(PathSpecifier::Prefix(prefix)) => {
            prefix_can_match(prefix).then(|| PathMatcher::Prefix(prefix.clone()))
        }
        Some(PathSpecifier::Path(path)) => {
            is_method_path(path).then(|| PathMatcher::Path(path.clone()))
        }
        Some(PathSpecifier::SafeRegex(regex)) => {
            match check_regex(&regex.regex) {
                Ok(()) => Some(PathMatcher::SafeRegex(regex.regex.clone())),
                // One that skips the check drops the route without a word.
                Err(_) if !scope.enforces(ValidationRule::PathRegex) => None,
                Err(e) => {
                    scope.error(format!("error creating path matcher: Invalid regex string specified in matcher: {e}"));
                    None
                }
            }
        }
        _ => {
            scope.error("invalid path specifier");
            None
        }
    }
}

/// Empty, or `/`-led with at most one more `/` and no `//` at the start.
fn prefix_can_match(prefix: &str) -> bool {
    if prefix.is_empty() {
        return true;
    }
    let Some(rest) = prefix.strip_prefix('/') else {
        return false;
    };
    let parts: Vec<&str> = rest.splitn(3, '/').collect();
    match parts.as_slice() {
        [_] => true,
        [service, _] => !service.is_empty(),
        _ => false,
    }
}

/// Exactly `/service/method`, both non-empty.
fn is_method_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let parts: Vec<&str> = rest.splitn(3, '/').collect();
    matches!(parts.as_slice(), [service, method] if !service.is_empty() && !method.is_empty())
}

// The legacy `*_match` fields are deprecated in Envoy but gRPC still reads them.
#[allow(deprecated)]
fn parse_header_matchers(
    route_match: &proto::RouteMatch,
    scope: &mut FieldScope<'_>,
) -> Vec<HeaderMatcher> {
    let mut matchers = Vec::new();
    for (i, header) in route_match.headers.iter().enumerate() {
        let mut scope = scope.at(&format!(".headers[{i}]"));
        let (matcher, case_sensitive) = match &header.header_match_specifier {
            Some(HeaderMatchSpecifier::ExactMatch(v)) => (HeaderMatch::Exact(v.clone()), true),
            Some(HeaderMatchSpecifier::PrefixMatch(v)) => (HeaderMatch::Prefix(v.clone()), true),
            Some(HeaderMatchSpecifier::SuffixMatch(v)) => (HeaderMatch::Suffix(v.clone()), true),
            Some(HeaderMatchSpecifier::ContainsMatch(v)) => {
                (HeaderMatch::Contains(v.clone()), true)
            }
            Some(HeaderMatchSpecifier::SafeRegexMatch(r)) => {
                (HeaderMatch::SafeRegex(r.regex.clone()), true)
            }
            Some(HeaderMatchSpecifier::RangeMatch(r)) => (
                HeaderMatch::Range {
                    start: r.start,
                    end: r.end,
                },
                true,
            ),
            Some(HeaderMatchSpecifier::PresentMatch(present)) => {
                (HeaderMatch::Present(*present), true)
            }
            Some(HeaderMatchSpecifier::StringMatch(string_matcher)) => {
                match string_match(string_matcher) {
                    Some(matcher) => (matcher, !string_matcher.ignore_case),
                    None => {
                        if scope.enforces(ValidationRule::HeaderMatchSpecifier) {
                            scope.at(".string_match").error("invalid string matcher");
                        }
                        continue;
                    }
                }
            }
            None => {
                if scope.enforces(ValidationRule::HeaderMatchSpecifier) {
                    scope.error("invalid header matcher");
                }
                continue;
            }
        };
        let problem = match &matcher {
            HeaderMatch::SafeRegex(regex) => check_regex(regex).err().map(|e| {
                (
                    ValidationRule::HeaderRegex,
                    format!("Invalid regex string specified in matcher: {e}"),
                )
            }),
            HeaderMatch::Range { start, end } if start > end => Some((
                ValidationRule::HeaderRange,
                "Invalid range specifier specified: end cannot be smaller than start.".to_string(),
            )),
            _ => None,
        };
        if let Some((rule, problem)) = problem {
            // A client that skips the check drops the matcher without a word.
            if scope.enforces(rule) {
                scope.error(format!("cannot create header matcher: {problem}"));
            }
            continue;
        }
        matchers.push(HeaderMatcher {
            name: header.name.clone(),
            matcher,
            invert: header.invert_match,
            case_sensitive,
        });
    }
    matchers
}

fn string_match(matcher: &StringMatcher) -> Option<HeaderMatch> {
    Some(match matcher.match_pattern.as_ref()? {
        MatchPattern::Exact(v) => HeaderMatch::Exact(v.clone()),
        MatchPattern::Prefix(v) => HeaderMatch::Prefix(v.clone()),
        MatchPattern::Suffix(v) => HeaderMatch::Suffix(v.clone()),
        MatchPattern::Contains(v) => HeaderMatch::Contains(v.clone()),
        MatchPattern::SafeRegex(r) => HeaderMatch::SafeRegex(r.regex.clone()),
        MatchPattern::Custom(_) => return None,
    })
}

fn parse_runtime_fraction(
    route_match: &proto::RouteMatch,
    scope: &mut FieldScope<'_>,
) -> Option<u32> {
    let fraction = route_match
        .runtime_fraction
        .as_ref()?
        .default_value
        .as_ref()?;
    let ppm = parts_per_million(fraction.numerator, fraction.denominator);
    if ppm.is_none() {
        scope
            .at(".runtime_fraction.default_value.denominator")
            .error("unknown denominator type");
    }
    ppm
}

/// `None` for an action gRPC ignores the route for (`cluster_header`, no
/// cluster specifier, an optional unsupported plugin) or cannot build.
fn parse_route_action(
    action: &proto::RouteAction,
    plugins: &HashMap<String, Plugin>,
    scope: &mut FieldScope<'_>,
) -> Option<RouteAction> {
    // Checked before the cluster specifier, so they count even on a route
    // that is then ignored, as in C-core.
    if let Some(max_stream_duration) = &action.max_stream_duration {
        let mut scope = scope.at(".max_stream_duration");
        if let Some(d) = &max_stream_duration.grpc_timeout_header_max {
            parse_duration(d, &mut scope.at(".grpc_timeout_header_max"));
        } else if let Some(d) = &max_stream_duration.max_stream_duration {
            parse_duration(d, &mut scope.at(".max_stream_duration"));
        }
    }
    for (i, hash_policy) in action.hash_policy.iter().enumerate() {
        if let Some(PolicySpecifier::Header(header)) = &hash_policy.policy_specifier {
            validate_header_hash_policy(
                header,
                &mut scope.at(&format!(".hash_policy[{i}].header")),
            );
        }
    }
    if let Some(retry_policy) = &action.retry_policy {
        validate_retry_policy(retry_policy, &mut scope.at(".retry_policy"));
    }
    match &action.cluster_specifier {
        Some(ClusterSpecifier::Cluster(name)) => {
            if name.is_empty() {
                scope.at(".cluster").error("must be non-empty");
            }
            Some(RouteAction::Cluster(name.clone()))
        }
        Some(ClusterSpecifier::WeightedClusters(weighted)) => Some(RouteAction::WeightedClusters(
            parse_weighted_clusters(weighted, &mut scope.at(".weighted_clusters")),
        )),
        Some(ClusterSpecifier::ClusterSpecifierPlugin(name)) => {
            let mut scope = scope.at(".cluster_specifier_plugin");
            if name.is_empty() {
                scope.error("must be non-empty");
            } else if !plugins.contains_key(name) {
                scope.error(format!("unknown cluster specifier plugin name \"{name}\""));
            } else if !scope.enforces(ValidationRule::OptionalPluginRoutesIgnored) {
                scope.error("optional cluster specifier plugin is not supported");
            }
            None
        }
        // `cluster_header`, or none: gRPC ignores the route.
        _ => {
            if !scope.enforces(ValidationRule::UnsupportedClusterSpecifierIgnored) {
                scope.error("unsupported cluster specifier");
            }
            None
        }
    }
}

fn validate_header_hash_policy(
    header: &proto::route_action::hash_policy::Header,
    scope: &mut FieldScope<'_>,
) {
    if header.header_name.is_empty() {
        scope.at(".header_name").error("must be non-empty");
    }
    if let Some(rewrite) = &header.regex_rewrite {
        let mut scope = scope.at(".regex_rewrite.pattern");
        match &rewrite.pattern {
            None => scope.error("field not present"),
            Some(pattern) if pattern.regex.is_empty() => {
                scope.at(".regex").error("field not present")
            }
            Some(pattern) => {
                if let Err(e) = check_regex(&pattern.regex) {
                    scope
                        .at(".regex")
                        .error(format!("errors compiling regex: {e}"));
                }
            }
        }
    }
}

fn validate_retry_policy(retry_policy: &proto::RetryPolicy, scope: &mut FieldScope<'_>) {
    if retry_policy.num_retries.is_some_and(|n| n.value == 0)
        && scope.enforces(ValidationRule::RetryNumRetries)
    {
        scope.at(".num_retries").error("must be greater than 0");
    }
    if let Some(back_off) = &retry_policy.retry_back_off {
        let mut scope = scope.at(".retry_back_off");
        match &back_off.base_interval {
            None if !scope.enforces(ValidationRule::RetryBaseInterval) => {}
            None => scope.at(".base_interval").error("field not present"),
            Some(d) => {
                parse_duration(d, &mut scope.at(".base_interval"));
            }
        }
        if let Some(d) = &back_off.max_interval {
            parse_duration(d, &mut scope.at(".max_interval"));
        }
    }
}

/// Clusters with weight 0 are dropped, as in C-core.
fn parse_weighted_clusters(
    weighted: &proto::WeightedCluster,
    scope: &mut FieldScope<'_>,
) -> Vec<WeightedCluster> {
    let mut clusters = Vec::new();
    let mut total_weight: u64 = 0;
    for (i, cluster) in weighted.clusters.iter().enumerate() {
        let mut scope = scope.at(&format!(".clusters[{i}]"));
        parse_typed_per_filter_config(
            &cluster.typed_per_filter_config,
            &mut scope.at(".typed_per_filter_config"),
        );
        if cluster.name.is_empty() {
            scope.at(".name").error("must be non-empty");
        }
        let weight = match cluster.weight {
            // A client that skips the check takes a missing weight as 0.
            None if !scope.enforces(ValidationRule::WeightedClusterWeight) => continue,
            None => {
                scope.at(".weight").error("field not present");
                0
            }
            Some(weight)
                if weight.value == 0
                    && scope.enforces(ValidationRule::ZeroWeightClustersDropped) =>
            {
                continue;
            }
            Some(weight) => weight.value,
        };
        total_weight += u64::from(weight);
        clusters.push(WeightedCluster {
            name: cluster.name.clone(),
            weight,
        });
    }
    if clusters.is_empty() {
        if scope.enforces(ValidationRule::WeightedClustersNonEmpty) {
            scope.error("no valid clusters specified");
        }
    } else if total_weight > u64::from(u32::MAX)
        && scope.enforces(ValidationRule::WeightedClustersTotal)
    {
        scope.error("sum of cluster weights exceeds uint32 max");
    }
    clusters
}

/// Per-filter overrides on a virtual host, route or weighted cluster.
/// Visited in key order so errors come out the same every time.
fn parse_typed_per_filter_config(configs: &HashMap<String, Any>, scope: &mut FieldScope<'_>) {
    let mut entries: Vec<(&String, &Any)> = configs.iter().collect();
    entries.sort_by_key(|(key, _)| *key);
    for (key, any) in entries {
        let mut scope = scope.at(&format!("[{key}]"));
        if key.is_empty() {
            scope.error("filter name must be non-empty");
        }
        let Some(extension) = extract_extension(Some(any), &mut scope) else {
            continue;
        };
        let mut scope = scope.at(&extension.field);
        if extension.type_name != FILTER_CONFIG_TYPE {
            validate_override(&extension, false, &mut scope);
            continue;
        }
        // A FilterConfig wrapper can mark the override optional.
        let filter_config = match &extension.value {
            ExtensionValue::Proto(bytes) => proto::FilterConfig::decode(bytes.as_slice()).ok(),
            ExtensionValue::Json => None,
        };
        let Some(filter_config) = filter_config else {
            scope.error("could not parse FilterConfig");
            continue;
        };
        let mut scope = scope.at(".config");
        let Some(inner) = extract_extension(filter_config.config.as_ref(), &mut scope) else {
            continue;
        };
        validate_override(
            &inner,
            filter_config.is_optional,
            &mut scope.at(&inner.field),
        );
    }
}

fn validate_override(extension: &Extension, is_optional: bool, scope: &mut FieldScope<'_>) {
    match KnownFilter::for_override_type(&extension.type_name) {
        Some(filter) => filter.validate_override(extension, scope),
        None if !is_optional => scope.error("unsupported filter type"),
        None => {}
    }
}

// The legacy header `*_match` fields are deprecated but still read by gRPC.
#[allow(deprecated)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_support::*;
    use envoy_types::pb::envoy::config::core::v3::{
        RuntimeFractionalPercent, TypedExtensionConfig,
    };
    use envoy_types::pb::envoy::config::route::v3::{
        DirectResponseAction, FilterAction, HeaderMatcher as HeaderMatcherProto,
        NonForwardingAction, QueryParameterMatcher, RedirectAction, route_action,
        weighted_cluster::ClusterWeight,
    };
    use envoy_types::pb::envoy::extensions::filters::http::fault::v3::HttpFault;
    use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
    use envoy_types::pb::envoy::r#type::matcher::v3::{RegexMatchAndSubstitute, RegexMatcher};
    use envoy_types::pb::envoy::r#type::v3::{FractionalPercent, Int64Range};
    use envoy_types::pb::google::protobuf::{self, BoolValue, UInt32Value};
    use rstest::rstest;

    const ROUTE0: &str = "virtual_hosts[0].routes[0]";

    fn decode_rc(
        rc: &proto::RouteConfiguration,
    ) -> (Option<String>, Result<XdsResource, DecodeError>) {
        decode(&rc.encode_to_vec(), &DecodeContext::default())
    }

    fn value(decoded: (Option<String>, Result<XdsResource, DecodeError>)) -> RouteConfigResource {
        match valid(decoded) {
            XdsResource::RouteConfiguration(rc) => rc,
            other => panic!("not a route configuration: {other:?}"),
        }
    }

    /// Decodes a RouteConfiguration with one virtual host holding `routes`.
    fn decode_routes(
        routes: Vec<proto::Route>,
    ) -> (Option<String>, Result<XdsResource, DecodeError>) {
        decode_rc(&route_config("rc", vec![vhost(&["*"], routes)]))
    }

    fn routes_of(routes: Vec<proto::Route>) -> Vec<Route> {
        value(decode_routes(routes)).virtual_hosts.remove(0).routes
    }

    fn single_route(route: proto::Route) -> Route {
        let mut routes = routes_of(vec![route]);
        assert_eq!(routes.len(), 1, "route was ignored");
        routes.remove(0)
    }

    fn errors_of_route(route: proto::Route) -> ValidationErrors {
        invalid(decode_routes(vec![route]))
    }

    fn route_field(suffix: &str) -> String {
        format!("{ROUTE0}{suffix}")
    }

    fn with_match(f: impl FnOnce(&mut proto::RouteMatch)) -> proto::Route {
        let mut route = prefix_route("", "c1");
        if let Some(m) = route.r#match.as_mut() {
            f(m);
        }
        route
    }

    fn with_action(f: impl FnOnce(&mut proto::RouteAction)) -> proto::Route {
        let mut action = cluster_action("c1");
        f(&mut action);
        route_with(PathSpecifier::Prefix(String::new()), action)
    }

    fn header(specifier: HeaderMatchSpecifier) -> HeaderMatcherProto {
        HeaderMatcherProto {
            name: "h".into(),
            header_match_specifier: Some(specifier),
            ..Default::default()
        }
    }

    fn string_matcher(pattern: MatchPattern, ignore_case: bool) -> HeaderMatchSpecifier {
        HeaderMatchSpecifier::StringMatch(StringMatcher {
            match_pattern: Some(pattern),
            ignore_case,
        })
    }

    fn regex(r: &str) -> RegexMatcher {
        RegexMatcher {
            regex: r.to_string(),
            ..Default::default()
        }
    }

    fn weighted(clusters: &[(&str, Option<u32>)]) -> ClusterSpecifier {
        ClusterSpecifier::WeightedClusters(proto::WeightedCluster {
            clusters: clusters
                .iter()
                .map(|(name, weight)| ClusterWeight {
                    name: name.to_string(),
                    weight: weight.map(|value| UInt32Value { value }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }

    #[test]
    fn minimal_route_configuration() {
        let decoded = decode_routes(vec![prefix_route("", "c1")]);
        assert_eq!(decoded.0.as_deref(), Some("rc"));
        let rc = value(decoded);
        assert_eq!(
            rc,
            RouteConfigResource {
                virtual_hosts: vec![VirtualHost {
                    name: "vh".into(),
                    domains: vec!["*".into()],
                    routes: vec![Route {
                        matcher: RouteMatch {
                            path: PathMatcher::Prefix(String::new()),
                            case_sensitive: true,
                            headers: vec![],
                            fraction_per_million: None,
                        },
                        action: RouteAction::Cluster("c1".into()),
                    }],
                }],
            }
        );
        assert_eq!(rc.summary(), "vhosts=[vh{*}: prefix \"\" -> c1]");
    }

    #[test]
    fn no_virtual_hosts_is_valid() {
        assert_eq!(
            value(decode_rc(&route_config("rc", vec![]))).virtual_hosts,
            vec![]
        );
    }

    #[test]
    fn undecodable_bytes() {
        let (name, result) = decode(b"\xff", &DecodeContext::default());
        assert_eq!(name, None);
        assert!(matches!(
            result,
            Err(DecodeError::Undecodable {
                message_type: "RouteConfiguration",
                ..
            })
        ));
    }

    #[rstest]
    #[case("*", true)]
    #[case("foo.com", true)]
    #[case("*.foo.com", true)]
    #[case("foo.*", true)]
    #[case("*foo*", true)]
    #[case("foo*bar", false)]
    #[case("", false)]
    fn domain_patterns(#[case] domain: &str, #[case] ok: bool) {
        let decoded = decode_rc(&route_config("rc", vec![vhost(&["x", domain], vec![])]));
        if ok {
            assert!(decoded.1.is_ok());
        } else {
            let errors = invalid(decoded);
            assert_eq!(
                errors.errors,
                vec![(
                    "virtual_hosts[0].domains[1]".into(),
                    format!("invalid domain pattern \"{domain}\"")
                )]
            );
        }
    }

    #[test]
    fn domains_must_be_non_empty() {
        let errors = invalid(decode_rc(&route_config(
            "rc",
            vec![vhost(&["*"], vec![]), vhost(&[], vec![])],
        )));
        assert_eq!(
            errors.errors,
            vec![(
                "virtual_hosts[1].domains".into(),
                "must be non-empty".into()
            )]
        );
    }

    #[rstest]
    #[case(PathSpecifier::Prefix("".into()), Some(PathMatcher::Prefix("".into())))]
    #[case(PathSpecifier::Prefix("/".into()), Some(PathMatcher::Prefix("/".into())))]
    #[case(PathSpecifier::Prefix("/svc".into()), Some(PathMatcher::Prefix("/svc".into())))]
    #[case(PathSpecifier::Prefix("/svc/".into()), Some(PathMatcher::Prefix("/svc/".into())))]
    #[case(PathSpecifier::Prefix("/svc/me".into()), Some(PathMatcher::Prefix("/svc/me".into())))]
    #[case(PathSpecifier::Prefix("svc".into()), None)]
    #[case(PathSpecifier::Prefix("//svc".into()), None)]
    #[case(PathSpecifier::Prefix("/svc/m/x".into()), None)]
    #[case(PathSpecifier::Path("/svc/m".into()), Some(PathMatcher::Path("/svc/m".into())))]
    #[case(PathSpecifier::Path("".into()), None)]
    #[case(PathSpecifier::Path("svc/m".into()), None)]
    #[case(PathSpecifier::Path("/svc".into()), None)]
    #[case(PathSpecifier::Path("/svc/".into()), None)]
    #[case(PathSpecifier::Path("//m".into()), None)]
    #[case(PathSpecifier::Path("/svc/m/x".into()), None)]
    #[case(PathSpecifier::SafeRegex(regex("/svc/.*")), Some(PathMatcher::SafeRegex("/svc/.*".into())))]
    #[case(PathSpecifier::SafeRegex(regex("")), Some(PathMatcher::SafeRegex("".into())))]
    fn path_specifiers(#[case] path: PathSpecifier, #[case] expected: Option<PathMatcher>) {
        // A route that can never match a gRPC method is ignored, not an error.
        let routes = routes_of(vec![route_with(path, cluster_action("c1"))]);
        assert_eq!(routes.into_iter().next().map(|r| r.matcher.path), expected);
    }

    #[rstest]
    #[case(
        Some(PathSpecifier::SafeRegex(regex("("))),
        "error creating path matcher: Invalid regex string"
    )]
    #[case(None, "invalid path specifier")]
    #[case(Some(PathSpecifier::PathSeparatedPrefix("/a".into())), "invalid path specifier")]
    fn invalid_path_specifiers(#[case] path: Option<PathSpecifier>, #[case] message: &str) {
        let errors = errors_of_route(with_match(|m| m.path_specifier = path));
        assert_error(&errors, &route_field(".match"), message);
    }

    #[test]
    fn missing_match() {
        let mut route = prefix_route("", "c1");
        route.r#match = None;
        assert_error(
            &errors_of_route(route),
            &route_field(".match"),
            "field not present",
        );
    }

    #[test]
    fn case_sensitive_defaults_to_true() {
        assert!(
            single_route(prefix_route("/svc", "c1"))
                .matcher
                .case_sensitive
        );
        let route = with_match(|m| m.case_sensitive = Some(BoolValue { value: false }));
        assert!(!single_route(route).matcher.case_sensitive);
    }

    #[test]
    fn query_parameter_routes_are_ignored() {
        let route = with_match(|m| m.query_parameters = vec![QueryParameterMatcher::default()]);
        assert_eq!(routes_of(vec![route, prefix_route("/svc", "c2")]).len(), 1);
    }

    #[rstest]
    #[case(HeaderMatchSpecifier::ExactMatch("v".into()), HeaderMatch::Exact("v".into()), true)]
    #[case(HeaderMatchSpecifier::PrefixMatch("v".into()), HeaderMatch::Prefix("v".into()), true)]
    #[case(HeaderMatchSpecifier::SuffixMatch("v".into()), HeaderMatch::Suffix("v".into()), true)]
    #[case(HeaderMatchSpecifier::ContainsMatch("v".into()), HeaderMatch::Contains("v".into()), true)]
    #[case(HeaderMatchSpecifier::SafeRegexMatch(regex("a+")), HeaderMatch::SafeRegex("a+".into()), true)]
    #[case(
        HeaderMatchSpecifier::PresentMatch(true),
        HeaderMatch::Present(true),
        true
    )]
    #[case(
        HeaderMatchSpecifier::RangeMatch(Int64Range { start: 1, end: 5 }),
        HeaderMatch::Range { start: 1, end: 5 },
        true
    )]
    #[case(string_matcher(MatchPattern::Exact("v".into()), false), HeaderMatch::Exact("v".into()), true)]
    #[case(string_matcher(MatchPattern::Exact("v".into()), true), HeaderMatch::Exact("v".into()), false)]
    #[case(string_matcher(MatchPattern::Prefix("v".into()), true), HeaderMatch::Prefix("v".into()), false)]
    #[case(string_matcher(MatchPattern::Suffix("v".into()), false), HeaderMatch::Suffix("v".into()), true)]
    #[case(string_matcher(MatchPattern::Contains("v".into()), false), HeaderMatch::Contains("v".into()), true)]
    #[case(string_matcher(MatchPattern::SafeRegex(regex("b")), false), HeaderMatch::SafeRegex("b".into()), true)]
    fn header_matchers(
        #[case] specifier: HeaderMatchSpecifier,
        #[case] expected: HeaderMatch,
        #[case] case_sensitive: bool,
    ) {
        for invert in [false, true] {
            let mut h = header(specifier.clone());
            h.invert_match = invert;
            let route = single_route(with_match(|m| m.headers = vec![h]));
            assert_eq!(
                route.matcher.headers,
                vec![HeaderMatcher {
                    name: "h".into(),
                    matcher: expected.clone(),
                    invert,
                    case_sensitive
                }]
            );
        }
    }

    #[rstest]
    #[case(
        HeaderMatcherProto { name: "h".into(), header_match_specifier: None, ..Default::default() },
        "",
        "invalid header matcher"
    )]
    #[case(
        header(HeaderMatchSpecifier::StringMatch(StringMatcher::default())),
        ".string_match",
        "invalid string matcher"
    )]
    #[case(
        header(HeaderMatchSpecifier::RangeMatch(Int64Range { start: 5, end: 1 })),
        "",
        "cannot create header matcher: Invalid range specifier specified: end cannot be smaller than start."
    )]
    #[case(
        header(HeaderMatchSpecifier::SafeRegexMatch(regex("(("))),
        "",
        "cannot create header matcher: Invalid regex string specified in matcher"
    )]
    #[case(
        header(string_matcher(MatchPattern::SafeRegex(regex("((")), false)),
        "",
        "cannot create header matcher: Invalid regex string specified in matcher"
    )]
    fn invalid_header_matchers(
        #[case] h: HeaderMatcherProto,
        #[case] suffix: &str,
        #[case] message: &str,
    ) {
        let errors = errors_of_route(with_match(|m| {
            m.headers = vec![header(HeaderMatchSpecifier::PresentMatch(true)), h]
        }));
        assert_eq!(errors.errors.len(), 1, "{errors}");
        assert_error(
            &errors,
            &route_field(&format!(".match.headers[1]{suffix}")),
            message,
        );
    }

    #[rstest]
    #[case(25, 0, Some(250_000))]
    #[case(25, 1, Some(2_500))]
    #[case(25, 2, Some(25))]
    fn runtime_fraction(
        #[case] numerator: u32,
        #[case] denominator: i32,
        #[case] expected: Option<u32>,
    ) {
        let route = single_route(with_match(|m| {
            m.runtime_fraction = Some(RuntimeFractionalPercent {
                default_value: Some(FractionalPercent {
                    numerator,
                    denominator,
                }),
                ..Default::default()
            })
        }));
        assert_eq!(route.matcher.fraction_per_million, expected);
    }

    #[test]
    fn runtime_fraction_unknown_denominator() {
        let errors = errors_of_route(with_match(|m| {
            m.runtime_fraction = Some(RuntimeFractionalPercent {
                default_value: Some(FractionalPercent {
                    numerator: 1,
                    denominator: 9,
                }),
                ..Default::default()
            })
        }));
        assert_error(
            &errors,
            &route_field(".match.runtime_fraction.default_value.denominator"),
            "unknown denominator type",
        );
    }

    #[test]
    fn runtime_fraction_without_default_value_is_unset() {
        let route = single_route(with_match(|m| {
            m.runtime_fraction = Some(RuntimeFractionalPercent::default())
        }));
        assert_eq!(route.matcher.fraction_per_million, None);
    }

    #[test]
    fn cluster_name_must_be_non_empty() {
        let errors = errors_of_route(prefix_route("", ""));
        assert_eq!(
            errors.errors,
            vec![(route_field(".route.cluster"), "must be non-empty".into())]
        );
    }

    #[test]
    fn weighted_clusters() {
        let route = single_route(with_action(|a| {
            a.cluster_specifier = Some(weighted(&[
                ("a", Some(10)),
                ("zero", Some(0)),
                ("b", Some(20)),
            ]))
        }));
        // Weight-0 clusters are dropped, as in C-core.
        assert_eq!(
            route.action,
            RouteAction::WeightedClusters(vec![
                WeightedCluster {
                    name: "a".into(),
                    weight: 10
                },
                WeightedCluster {
                    name: "b".into(),
                    weight: 20
                },
            ])
        );
        assert_eq!(route.summary(), "prefix \"\" -> weighted[a:10,b:20]");
    }

    #[rstest]
    #[case(&[], "", "no valid clusters specified")]
    #[case(&[("a", Some(0))], "", "no valid clusters specified")]
    #[case(&[("a", Some(u32::MAX)), ("b", Some(1))], "", "sum of cluster weights exceeds uint32 max")]
    #[case(&[("a", None)], ".clusters[0].weight", "field not present")]
    #[case(&[("", Some(1))], ".clusters[0].name", "must be non-empty")]
    fn invalid_weighted_clusters(
        #[case] clusters: &[(&str, Option<u32>)],
        #[case] suffix: &str,
        #[case] message: &str,
    ) {
        let errors = errors_of_route(with_action(|a| {
            a.cluster_specifier = Some(weighted(clusters))
        }));
        assert_error(
            &errors,
            &route_field(&format!(".route.weighted_clusters{suffix}")),
            message,
        );
    }

    #[rstest]
    #[case(Some(ClusterSpecifier::ClusterHeader("x-cluster".into())))]
    #[case(None)]
    fn unsupported_cluster_specifiers_ignore_the_route(
        #[case] specifier: Option<ClusterSpecifier>,
    ) {
        let routes = routes_of(vec![
            with_action(|a| a.cluster_specifier = specifier),
            prefix_route("/b", "c2"),
        ]);
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].action, RouteAction::Cluster("c2".into()));
    }

    #[rstest]
    #[case(Some(Action::Redirect(RedirectAction::default())))]
    #[case(Some(Action::DirectResponse(DirectResponseAction::default())))]
    #[case(Some(Action::FilterAction(FilterAction::default())))]
    #[case(Some(Action::NonForwardingAction(NonForwardingAction::default())))]
    #[case(None)]
    fn non_forwarding_actions(#[case] action: Option<Action>) {
        let mut route = prefix_route("", "c1");
        route.action = action;
        assert_eq!(single_route(route).action, RouteAction::NonForwarding);
    }

    fn plugin(name: &str, is_optional: bool) -> proto::ClusterSpecifierPlugin {
        proto::ClusterSpecifierPlugin {
            extension: Some(TypedExtensionConfig {
                name: name.to_string(),
                typed_config: Some(protobuf::Any {
                    type_url: "type.googleapis.com/grpc.lookup.v1.RouteLookupClusterSpecifier"
                        .into(),
                    value: vec![],
                }),
            }),
            is_optional,
        }
    }

    fn plugin_route(name: &str) -> proto::Route {
        with_action(|a| {
            a.cluster_specifier = Some(ClusterSpecifier::ClusterSpecifierPlugin(name.to_string()))
        })
    }

    #[test]
    fn optional_unsupported_plugin_ignores_its_routes() {
        let mut rc = route_config(
            "rc",
            vec![vhost(
                &["*"],
                vec![plugin_route("rls"), prefix_route("", "c1")],
            )],
        );
        rc.cluster_specifier_plugins = vec![plugin("rls", true)];
        let rc = value(decode_rc(&rc));
        assert_eq!(rc.virtual_hosts[0].routes.len(), 1);
    }

    #[test]
    fn cluster_specifier_plugin_errors() {
        let mut rc = route_config(
            "rc",
            vec![vhost(
                &["*"],
                vec![
                    plugin_route("rls"),
                    plugin_route("missing"),
                    plugin_route(""),
                ],
            )],
        );
        rc.cluster_specifier_plugins = vec![
            plugin("rls", false),
            plugin("rls", true),
            proto::ClusterSpecifierPlugin {
                extension: None,
                is_optional: false,
            },
        ];
        let errors = invalid(decode_rc(&rc));
        assert_error(
            &errors,
            "cluster_specifier_plugins[0].extension.typed_config.value[grpc.lookup.v1.RouteLookupClusterSpecifier]",
            "unsupported ClusterSpecifierPlugin type",
        );
        assert_error(
            &errors,
            "cluster_specifier_plugins[1].extension.name",
            "duplicate name \"rls\"",
        );
        assert_error(
            &errors,
            "cluster_specifier_plugins[2].extension",
            "field not present",
        );
        assert_error(
            &errors,
            "virtual_hosts[0].routes[1].route.cluster_specifier_plugin",
            "unknown cluster specifier plugin name \"missing\"",
        );
        assert_error(
            &errors,
            "virtual_hosts[0].routes[2].route.cluster_specifier_plugin",
            "must be non-empty",
        );
        assert_eq!(errors.errors.len(), 5, "{errors}");
    }

    #[test]
    fn retry_policies_are_validated() {
        let bad_policy = proto::RetryPolicy {
            num_retries: Some(UInt32Value { value: 0 }),
            retry_back_off: Some(proto::retry_policy::RetryBackOff {
                base_interval: None,
                max_interval: Some(protobuf::Duration {
                    seconds: 0,
                    nanos: -1,
                }),
            }),
            ..Default::default()
        };
        let mut vh = vhost(
            &["*"],
            vec![with_action(|a| a.retry_policy = Some(bad_policy.clone()))],
        );
        vh.retry_policy = Some(bad_policy);
        let errors = invalid(decode_rc(&route_config("rc", vec![vh])));
        for prefix in [
            "virtual_hosts[0].retry_policy",
            "virtual_hosts[0].routes[0].route.retry_policy",
        ] {
            assert_error(
                &errors,
                &format!("{prefix}.num_retries"),
                "must be greater than 0",
            );
            assert_error(
                &errors,
                &format!("{prefix}.retry_back_off.base_interval"),
                "field not present",
            );
            assert_error(
                &errors,
                &format!("{prefix}.retry_back_off.max_interval.nanos"),
                "value must be in the range",
            );
        }
        assert_eq!(errors.errors.len(), 6, "{errors}");
    }

    #[test]
    fn valid_retry_policy() {
        let policy = proto::RetryPolicy {
            retry_on: "unavailable,cancelled".into(),
            retry_back_off: Some(proto::retry_policy::RetryBackOff {
                base_interval: Some(protobuf::Duration {
                    seconds: 1,
                    nanos: 0,
                }),
                max_interval: None,
            }),
            ..Default::default()
        };
        single_route(with_action(|a| a.retry_policy = Some(policy)));
    }

    #[test]
    fn hash_policies_are_validated() {
        use route_action::hash_policy::{FilterState, Header};
        let header_policy = |name: &str, pattern: Option<&str>| route_action::HashPolicy {
            policy_specifier: Some(PolicySpecifier::Header(Header {
                header_name: name.to_string(),
                regex_rewrite: pattern.map(|p| RegexMatchAndSubstitute {
                    pattern: Some(regex(p)),
                    substitution: String::new(),
                }),
            })),
            ..Default::default()
        };
        let channel_id = route_action::HashPolicy {
            policy_specifier: Some(PolicySpecifier::FilterState(FilterState {
                key: "io.grpc.channel_id".into(),
            })),
            ..Default::default()
        };
        single_route(with_action(|a| {
            a.hash_policy = vec![header_policy("h", Some("a+")), channel_id]
        }));
        let errors = errors_of_route(with_action(|a| {
            a.hash_policy = vec![
                header_policy("", None),
                header_policy("h", Some("")),
                header_policy("h", Some("((")),
            ]
        }));
        assert_error(
            &errors,
            &route_field(".route.hash_policy[0].header.header_name"),
            "must be non-empty",
        );
        assert_error(
            &errors,
            &route_field(".route.hash_policy[1].header.regex_rewrite.pattern.regex"),
            "field not present",
        );
        assert_error(
            &errors,
            &route_field(".route.hash_policy[2].header.regex_rewrite.pattern.regex"),
            "errors compiling regex",
        );
    }

    #[test]
    fn max_stream_duration_is_validated() {
        let errors = errors_of_route(with_action(|a| {
            a.max_stream_duration = Some(route_action::MaxStreamDuration {
                grpc_timeout_header_max: Some(protobuf::Duration {
                    seconds: -1,
                    nanos: 0,
                }),
                ..Default::default()
            })
        }));
        assert_error(
            &errors,
            &route_field(".route.max_stream_duration.grpc_timeout_header_max.seconds"),
            "value must be",
        );
    }

    fn filter_config(config: protobuf::Any, is_optional: bool) -> protobuf::Any {
        any(&proto::FilterConfig {
            config: Some(config),
            is_optional,
            disabled: false,
        })
    }

    fn unknown_filter() -> protobuf::Any {
        protobuf::Any {
            type_url: "type.googleapis.com/my.Filter".into(),
            value: vec![],
        }
    }

    #[test]
    fn typed_per_filter_config_accepts_known_overrides() {
        let mut vh = vhost(&["*"], vec![prefix_route("", "c1")]);
        vh.typed_per_filter_config = HashMap::from([
            ("fault".to_string(), any(&HttpFault::default())),
            (
                "wrapped".to_string(),
                filter_config(any(&HttpFault::default()), false),
            ),
            (
                "optional".to_string(),
                filter_config(unknown_filter(), true),
            ),
        ]);
        assert!(decode_rc(&route_config("rc", vec![vh])).1.is_ok());
    }

    #[test]
    fn typed_per_filter_config_errors() {
        let mut route = with_action(|a| a.cluster_specifier = Some(weighted(&[("a", Some(1))])));
        route.typed_per_filter_config = HashMap::from([
            ("router".to_string(), any(&Router::default())),
            ("unknown".to_string(), unknown_filter()),
            (
                "wrapped".to_string(),
                filter_config(unknown_filter(), false),
            ),
            (String::new(), any(&HttpFault::default())),
        ]);
        if let Some(Action::Route(action)) = route.action.as_mut()
            && let Some(ClusterSpecifier::WeightedClusters(w)) = action.cluster_specifier.as_mut()
        {
            w.clusters[0].typed_per_filter_config =
                HashMap::from([("u".to_string(), unknown_filter())]);
        }
        let errors = errors_of_route(route);
        let tpfc = route_field(".typed_per_filter_config");
        assert_error(
            &errors,
            &format!("{tpfc}[]"),
            "filter name must be non-empty",
        );
        assert_error(
            &errors,
            &format!("{tpfc}[router].value[envoy.extensions.filters.http.router.v3.Router]"),
            "router filter does not support config override",
        );
        assert_error(
            &errors,
            &format!("{tpfc}[unknown].value[my.Filter]"),
            "unsupported filter type",
        );
        assert_error(
            &errors,
            &format!(
                "{tpfc}[wrapped].value[envoy.config.route.v3.FilterConfig].config.value[my.Filter]"
            ),
            "unsupported filter type",
        );
        assert_error(
            &errors,
            &route_field(
                ".route.weighted_clusters.clusters[0].typed_per_filter_config[u].value[my.Filter]",
            ),
            "unsupported filter type",
        );
        assert_eq!(errors.errors.len(), 5, "{errors}");
    }

    #[test]
    fn every_error_is_collected_in_order() {
        let rc = route_config(
            "rc",
            vec![
                vhost(
                    &[],
                    vec![
                        prefix_route("", ""),
                        with_match(|m| m.path_specifier = None),
                    ],
                ),
                vhost(&["a*b"], vec![]),
            ],
        );
        let errors = invalid(decode_rc(&rc));
        let fields: Vec<&str> = errors.errors.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "virtual_hosts[0].domains",
                "virtual_hosts[0].routes[0].route.cluster",
                "virtual_hosts[0].routes[1].match",
                "virtual_hosts[1].domains[0]",
            ]
        );
        assert!(
            errors.to_string().starts_with(
                "errors validating RouteConfiguration resource: [field:virtual_hosts[0].domains error:must be non-empty; "
            ),
            "{errors}"
        );
    }
}
