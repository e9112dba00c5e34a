//! State of the world (`StreamAggregatedResources`): every request restates
//! the whole subscription of its type with the last version accepted in
//! full; a response's entries share one version, and an LDS or CDS
//! response carries every resource, so a cached one it leaves out was
//! deleted.

use std::collections::BTreeMap;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};

use super::{Deletions, ParsedResponse, ResourceErrors, TypeState, nack_status};
use crate::resource::{DecodeContext, ResourceType, decode_entry_in};

/// What a SotW channel remembers across its streams: per type, the
/// version of the last response accepted in full (a NACK carries it).
#[derive(Default)]
pub(crate) struct SotwMemory {
    versions: BTreeMap<ResourceType, String>,
}

impl SotwMemory {
    /// A response was accepted in full.
    pub fn accepted(&mut self, resource_type: ResourceType, version: String) {
        self.versions.insert(resource_type, version);
    }
}

/// The request for `resource_type`: every subscribed name, the last
/// accepted version, the last nonce, a pending NACK, and the node on the
/// stream's first request.
pub(crate) fn request(
    resource_type: ResourceType,
    type_state: &mut TypeState,
    memory: &SotwMemory,
    node: Option<Node>,
) -> DiscoveryRequest {
    let mut resource_names = Vec::with_capacity(type_state.subscribed.len());
    type_state.mark_all_sent(|name| resource_names.push(name.full_name(resource_type)));
    DiscoveryRequest {
        version_info: memory
            .versions
            .get(&resource_type)
            .cloned()
            .unwrap_or_default(),
        node,
        resource_names,
        type_url: resource_type.type_url().to_string(),
        response_nonce: type_state.nonce.clone(),
        error_detail: type_state.nack.take().map(nack_status),
        ..Default::default()
    }
}

/// Decodes a response's entries in order. What cannot be used (an entry
/// without a name, a name given twice, an invalid resource, an unparsable
/// name) becomes an error of the NACK; an invalid resource with a name is
/// still an entry, so its watchers hear of it (gRFC A46). Then the
/// per-resource errors the server reports, if `errors` says to read them.
pub(crate) fn parse(
    context: &DecodeContext,
    resource_type: ResourceType,
    response: DiscoveryResponse,
    errors: ResourceErrors,
) -> ParsedResponse {
    let mut parsed = ParsedResponse::new(resource_type, response.nonce, response.version_info);
    for (index, entry) in response.resources.iter().enumerate() {
        let decoded = decode_entry_in(context, resource_type, entry);
        let version = parsed.version.clone();
        parsed.add(index, decoded, version);
    }
    parsed.add_resource_errors(&response.resource_errors, errors);
    if resource_type.all_resources_required_in_sotw() {
        parsed.deletions = Deletions::AllOthers;
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::ResourceName;
    use envoy_types::pb::envoy::config::cluster::v3::Cluster;
    use envoy_types::pb::google::protobuf::Any;
    use prost::{Message, Name};

    fn cluster(name: &str) -> Any {
        Any {
            type_url: Cluster::type_url(),
            value: Cluster {
                name: name.into(),
                ..Default::default()
            }
            .encode_to_vec(),
        }
    }

    fn name(key: &str) -> ResourceName {
        ResourceName {
            authority: None,
            key: key.into(),
        }
    }

    #[test]
    fn a_request_restates_the_subscription_with_the_last_full_version() {
        let mut state = TypeState::default();
        state.subscribed.insert(name("b"), Default::default());
        state.subscribed.insert(name("a"), Default::default());
        state.nonce = "7".into();
        state.nack = Some("bad".into());
        let mut memory = SotwMemory::default();
        memory.accepted(ResourceType::Cluster, "3".into());
        let request = request(ResourceType::Cluster, &mut state, &memory, None);
        assert_eq!(request.resource_names, ["a", "b"]);
        assert_eq!(request.version_info, "3");
        assert_eq!(request.response_nonce, "7");
        assert_eq!(
            request.error_detail.map(|e| e.message).as_deref(),
            Some("bad")
        );
        assert!(state.nack.is_none(), "a NACK is sent once");
        assert!(state.subscribed.values().all(|t| t.subscription_sent));
    }

    #[test]
    fn a_full_state_response_names_its_entries_and_its_errors() {
        let response = DiscoveryResponse {
            version_info: "1".into(),
            nonce: "A".into(),
            type_url: Cluster::type_url(),
            resources: vec![cluster("c1"), cluster("c1"), Any::default()],
            ..Default::default()
        };
        let parsed = parse(
            &DecodeContext::default(),
            ResourceType::Cluster,
            response,
            ResourceErrors::Read,
        );
        assert_eq!(parsed.entries.len(), 1);
        assert_eq!(parsed.entries[0].name, name("c1"));
        assert_eq!(parsed.entries[0].version, "1");
        assert_eq!(parsed.deletions, Deletions::AllOthers);
        // A default Cluster is invalid for gRPC: still an entry, and an error.
        assert!(parsed.entries[0].resource.is_err());
        assert!(parsed.errors[0].starts_with("resource index 0: c1: INVALID_ARGUMENT: "));
        assert_eq!(
            parsed.errors[1],
            "resource index 1: c1: duplicate resource name in response"
        );
        assert!(parsed.errors[2].starts_with("resource index 2: "));
        assert_eq!(parsed.errors.len(), 3);
    }

    #[test]
    fn rds_and_eds_responses_delete_nothing() {
        let parsed = parse(
            &DecodeContext::default(),
            ResourceType::ClusterLoadAssignment,
            DiscoveryResponse::default(),
            ResourceErrors::Read,
        );
        assert_eq!(parsed.deletions, Deletions::None);
    }
}
