//! The xDS resource types a gRPC client subscribes to, by every name they
//! go by: the type URL on the wire, the message name inside `xdstp://`
//! names, the discovery-service short name (LDS, RDS, CDS, EDS).

use std::fmt;

/// Prefix every v3 type URL carries on the wire.
pub const TYPE_URL_PREFIX: &str = "type.googleapis.com/";

/// The four resource types a gRPC client subscribes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceType {
    Listener,
    RouteConfiguration,
    Cluster,
    ClusterLoadAssignment,
}

impl ResourceType {
    pub const ALL: [ResourceType; 4] = [
        ResourceType::Listener,
        ResourceType::RouteConfiguration,
        ResourceType::Cluster,
        ResourceType::ClusterLoadAssignment,
    ];

    /// Full type URL, as in `DiscoveryRequest.type_url`.
    pub const fn type_url(self) -> &'static str {
        match self {
            ResourceType::Listener => "type.googleapis.com/envoy.config.listener.v3.Listener",
            ResourceType::RouteConfiguration => {
                "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
            }
            ResourceType::Cluster => "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            ResourceType::ClusterLoadAssignment => {
                "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
            }
        }
    }

    /// The type URL without its `type.googleapis.com/` prefix (the form
    /// `xdstp://` resource names carry).
    pub fn message_name(self) -> &'static str {
        &self.type_url()[TYPE_URL_PREFIX.len()..]
    }

    /// The short discovery-service name: LDS, RDS, CDS, EDS.
    pub fn short_name(self) -> &'static str {
        match self {
            ResourceType::Listener => "LDS",
            ResourceType::RouteConfiguration => "RDS",
            ResourceType::Cluster => "CDS",
            ResourceType::ClusterLoadAssignment => "EDS",
        }
    }

    pub fn from_type_url(type_url: &str) -> Option<ResourceType> {
        ResourceType::ALL
            .into_iter()
            .find(|t| t.type_url() == type_url)
    }

    /// Accepts `LDS`, `Listener`, a message name or a full type URL.
    pub fn parse(s: &str) -> Option<ResourceType> {
        ResourceType::ALL.into_iter().find(|t| {
            s.eq_ignore_ascii_case(t.short_name())
                || s == t.type_url()
                || s == t.message_name()
                || s.eq_ignore_ascii_case(t.rust_name())
        })
    }

    fn rust_name(self) -> &'static str {
        match self {
            ResourceType::Listener => "Listener",
            ResourceType::RouteConfiguration => "RouteConfiguration",
            ResourceType::Cluster => "Cluster",
            ResourceType::ClusterLoadAssignment => "ClusterLoadAssignment",
        }
    }

    /// In SotW, LDS and CDS responses carry every subscribed resource, so a
    /// resource missing from a response has been deleted. RDS and EDS
    /// responses may carry a subset.
    pub fn all_resources_required_in_sotw(self) -> bool {
        matches!(self, ResourceType::Listener | ResourceType::Cluster)
    }

    /// For RDS and EDS an empty `resource_names` means "nothing"; only LDS
    /// and CDS have a wildcard.
    pub fn supports_wildcard(self) -> bool {
        self.all_resources_required_in_sotw()
    }
}

/// [`ResourceType::all_resources_required_in_sotw`] for any type URL a
/// server may be asked about; false for types outside the four.
pub fn is_full_state(type_url: &str) -> bool {
    ResourceType::from_type_url(type_url).is_some_and(ResourceType::all_resources_required_in_sotw)
}

impl fmt::Display for ResourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::config::cluster::v3::Cluster;
    use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
    use envoy_types::pb::envoy::config::listener::v3::Listener;
    use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
    use prost::Name;
    use rstest::rstest;

    #[test]
    fn type_urls_match_the_protos() {
        assert_eq!(ResourceType::Listener.type_url(), Listener::type_url());
        assert_eq!(
            ResourceType::RouteConfiguration.type_url(),
            RouteConfiguration::type_url()
        );
        assert_eq!(ResourceType::Cluster.type_url(), Cluster::type_url());
        assert_eq!(
            ResourceType::ClusterLoadAssignment.type_url(),
            ClusterLoadAssignment::type_url()
        );
    }

    #[rstest]
    #[case("LDS", Some(ResourceType::Listener))]
    #[case("eds", Some(ResourceType::ClusterLoadAssignment))]
    #[case("RouteConfiguration", Some(ResourceType::RouteConfiguration))]
    #[case("envoy.config.cluster.v3.Cluster", Some(ResourceType::Cluster))]
    #[case(
        "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        Some(ResourceType::Cluster)
    )]
    #[case("SDS", None)]
    fn parses_every_spelling(#[case] text: &str, #[case] expected: Option<ResourceType>) {
        assert_eq!(ResourceType::parse(text), expected);
    }

    #[test]
    fn only_listeners_and_clusters_are_full_state() {
        assert!(is_full_state(ResourceType::Listener.type_url()));
        assert!(is_full_state(ResourceType::Cluster.type_url()));
        assert!(!is_full_state(ResourceType::RouteConfiguration.type_url()));
        assert!(!is_full_state(
            ResourceType::ClusterLoadAssignment.type_url()
        ));
        assert!(!is_full_state("type.googleapis.com/some.Other"));
    }
}
