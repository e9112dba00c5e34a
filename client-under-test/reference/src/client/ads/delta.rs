//! Incremental (delta) xDS (`DeltaAggregatedResources`): a request says
//! what changed in the subscription since the last one on the stream
//! (`resource_names_subscribe` / `_unsubscribe`); the first request of a
//! type on a stream also says which versions the client holds
//! (`initial_resource_versions`), so the server sends only what differs.
//! A response carries only new or changed resources, each with its own
//! version, and names deletions (`removed_resources`) of any type.
//!
//! There is no gRPC standard for delta: the rules follow Envoy's
//! `xds_protocol` and its delta client, with gRPC's per-resource NACK
//! semantics (gRFC A46): a response's valid resources are used even when
//! others in it are rejected.

use std::collections::{BTreeMap, BTreeSet};

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse,
};
use xds_vocabulary::codec::WrapperError;

use super::{Deletions, ParsedResponse, ResourceErrors, TypeState, nack_status};
use crate::name::ResourceName;
use crate::profile::Defects;
use crate::resource::{DecodeContext, DecodeError, DecodedEntry, ResourceType, decode_resource_in};

/// What a delta channel remembers across its streams: the version of each
/// resource accepted from the server (what `initial_resource_versions`
/// claims on the next stream).
#[derive(Default)]
pub(crate) struct DeltaMemory {
    versions: BTreeMap<(ResourceType, ResourceName), String>,
    /// Names whose copy from this server another server's response
    /// replaced, until this server sends them again: a claim of one
    /// written before the replacement is not the client's to confirm.
    replaced: BTreeSet<(ResourceType, ResourceName)>,
}

impl DeltaMemory {
    /// A response was handled: its valid resources are held at their
    /// versions (a rejected one keeps the version held before, as Envoy),
    /// and deleted ones are no longer held.
    pub fn update(&mut self, parsed: &ParsedResponse, defects: &Defects) {
        for entry in &parsed.entries {
            if entry.resource.is_ok() || defects.delta_nack_advances_versions {
                self.versions.insert(
                    (parsed.resource_type, entry.name.clone()),
                    entry.version.clone(),
                );
            }
            self.replaced
                .remove(&(parsed.resource_type, entry.name.clone()));
        }
        if let Deletions::Named(names) = &parsed.deletions
            && !defects.delta_removals_ignored
        {
            for name in names {
                self.versions.remove(&(parsed.resource_type, name.clone()));
                self.replaced.remove(&(parsed.resource_type, name.clone()));
            }
        }
    }

    /// Another server's response was handled: what it brought or deleted
    /// is no longer this server's copy, so this server's versions of those
    /// names claim nothing (a version is its server's own: back on the
    /// primary after a fallback, claiming its old version of the
    /// fallback's copy would keep the primary from resending it; gRFC
    /// A71). A rejected entry leaves the copy as it was (gRFC A46).
    pub fn replaced_elsewhere(&mut self, parsed: &ParsedResponse) {
        let names = parsed
            .entries
            .iter()
            .filter(|e| e.resource.is_ok())
            .map(|e| &e.name);
        let removed = match &parsed.deletions {
            Deletions::Named(names) => names.as_slice(),
            _ => &[],
        };
        for name in names.chain(removed) {
            let key = (parsed.resource_type, name.clone());
            if self.versions.remove(&key).is_some() {
                self.replaced.insert(key);
            }
        }
    }

    /// Whether another server's copy replaced this server's `name` since
    /// the client last held it from here.
    pub fn replaced(&self, resource_type: ResourceType, name: &ResourceName) -> bool {
        self.replaced.contains(&(resource_type, name.clone()))
    }

    /// The name is no longer subscribed: the client will not hold it.
    pub fn forget(&mut self, resource_type: ResourceType, name: &ResourceName) {
        self.versions.remove(&(resource_type, name.clone()));
        self.replaced.remove(&(resource_type, name.clone()));
    }

    /// Every resource of `resource_type` held, with its version.
    pub fn held(&self, resource_type: ResourceType) -> impl Iterator<Item = (&ResourceName, &str)> {
        self.versions
            .iter()
            .filter(move |((t, _), _)| *t == resource_type)
            .map(|((_, name), version)| (name, version.as_str()))
    }

    pub fn version(&self, resource_type: ResourceType, name: &ResourceName) -> Option<&str> {
        self.versions
            .get(&(resource_type, name.clone()))
            .map(String::as_str)
    }
}

/// What a delta stream has told the server of one type.
#[derive(Default)]
pub(crate) struct DeltaSent {
    /// The names subscribed as of the last request.
    subscribed: BTreeSet<ResourceName>,
    /// A request of the type went out on this stream.
    any: bool,
    /// Names subscribed or unsubscribed since the last request: what the
    /// next one says (a request costs what changed, not what is
    /// subscribed).
    changed: BTreeSet<ResourceName>,
    /// The versions the first request claimed, until the first response
    /// of the type answers them.
    claimed: BTreeMap<ResourceName, String>,
}

impl DeltaSent {
    /// `name` was subscribed or unsubscribed.
    pub fn changed(&mut self, name: &ResourceName) {
        if self.any {
            self.changed.insert(name.clone());
        }
    }

    /// The claims the first response of the type confirms: those it
    /// neither sends nor removes (the server holds the version claimed).
    /// Taken once: later responses confirm nothing.
    pub fn confirmed_by(&mut self, parsed: &ParsedResponse) -> Vec<(ResourceName, String)> {
        let removed: &[ResourceName] = match &parsed.deletions {
            Deletions::Named(names) => names,
            _ => &[],
        };
        let claimed = std::mem::take(&mut self.claimed);
        if claimed.is_empty() {
            return Vec::new();
        }
        let sent = parsed.names();
        claimed
            .into_iter()
            .filter(|(name, _)| !sent.contains(name) && !removed.contains(name))
            .collect()
    }
}

/// The request for `resource_type`: on the stream's first request of the
/// type, every subscribed name and the versions held (`held` says which
/// version of a subscribed name the client holds, if any; under the
/// wildcard subscription, `held_of_type` lists every resource of the type
/// held, which the wildcard brought and no name subscribes: the protocol's
/// first request on a new stream claims every resource the client has);
/// after that, the
/// subscription's changes since the last request (a name unsubscribed and
/// subscribed again is subscribed again: the client dropped its copy).
/// Also the nonce of a response not yet answered with its ACK or NACK, and
/// the node on the stream's first request.
pub(crate) fn request(
    resource_type: ResourceType,
    type_state: &mut TypeState,
    sent: &mut DeltaSent,
    held: impl Fn(&ResourceName) -> Option<String>,
    held_of_type: impl Fn() -> Vec<(ResourceName, String)>,
    node: Option<Node>,
    defects: &Defects,
) -> DeltaDiscoveryRequest {
    let mut subscribe = Vec::new();
    let mut unsubscribe = Vec::new();
    let mut initial_resource_versions = std::collections::HashMap::new();
    // The broken client restates the whole subscription whenever it
    // changes (restating it in ACKs too would livelock against a server
    // that resends what is subscribed again, as the protocol says).
    let restate = defects.delta_restates_subscriptions && !sent.changed.is_empty();
    if !sent.any || restate {
        let names: Vec<ResourceName> = type_state.subscribed.keys().cloned().collect();
        let claims = !sent.any && !defects.delta_claims_nothing;
        if claims
            && !defects.delta_wildcard_claims_nothing
            && names.iter().any(|name| name.key == super::WILDCARD)
        {
            for (name, version) in held_of_type() {
                if !type_state.subscribed.contains_key(&name) {
                    sent.claimed.insert(name.clone(), version.clone());
                    initial_resource_versions.insert(name.full_name(resource_type), version);
                }
            }
        }
        for name in names {
            if claims && let Some(version) = held(&name) {
                sent.claimed.insert(name.clone(), version.clone());
                initial_resource_versions.insert(name.full_name(resource_type), version);
            }
            subscribe.push(name.full_name(resource_type));
            type_state.mark_sent(&name);
            sent.subscribed.insert(name);
        }
    }
    for name in std::mem::take(&mut sent.changed) {
        if type_state.subscribed.contains_key(&name) {
            if !restate {
                subscribe.push(name.full_name(resource_type));
                type_state.mark_sent(&name);
            }
            sent.subscribed.insert(name);
        } else if sent.subscribed.remove(&name) {
            unsubscribe.push(name.full_name(resource_type));
        }
    }
    sent.any = true;
    DeltaDiscoveryRequest {
        node,
        type_url: resource_type.type_url().to_string(),
        resource_names_subscribe: subscribe,
        resource_names_unsubscribe: unsubscribe,
        initial_resource_versions,
        // Only an ACK or NACK carries a nonce, once; a later request that
        // only changes the subscription has none ("unlike in
        // DiscoveryRequest", says the proto).
        response_nonce: if defects.delta_nonce_on_every_request {
            type_state.nonce.clone()
        } else {
            std::mem::take(&mut type_state.nonce)
        },
        error_detail: type_state.nack.take().map(nack_status),
        ..Default::default()
    }
}

/// Decodes a response's resources in order, each named by its `Resource`
/// and carrying its own version; then its deletions. A name met twice
/// (among resources, among removals, or in both) is an error of the NACK,
/// and its later occurrence is ignored. Then the per-resource errors the
/// server reports, if `errors` says to read them (a NOT_FOUND among them
/// is read as gRFC A88 reads any server error, not as a removal).
pub(crate) fn parse(
    context: &DecodeContext,
    resource_type: ResourceType,
    response: DeltaDiscoveryResponse,
    errors: ResourceErrors,
) -> ParsedResponse {
    let mut parsed =
        ParsedResponse::new(resource_type, response.nonce, response.system_version_info);
    for (index, resource) in response.resources.into_iter().enumerate() {
        let name = (!resource.name.is_empty()).then_some(resource.name);
        let decoded = match &resource.resource {
            Some(any) => decode_resource_in(context, resource_type, name, any),
            // No TTL support (the client does not claim
            // `xds.config.supports-resource-ttl`): a Resource without a
            // body is no heartbeat here, and not usable.
            None => DecodedEntry {
                name,
                result: Err(DecodeError::Wrapper(WrapperError::Empty)),
                serialized: Vec::new(),
            },
        };
        parsed.add(index, decoded, resource.version);
    }
    let mut removed = Vec::new();
    for (index, name) in response.removed_resources.into_iter().enumerate() {
        let prefix = format!("removed resource index {index}: {name}: ");
        if !parsed.names_in_response.insert(name.clone()) {
            parsed
                .errors
                .push(format!("{prefix}duplicate resource name in response"));
            continue;
        }
        match ResourceName::parse(&name, resource_type) {
            Ok(parsed_name) => removed.push(parsed_name),
            Err(_) => parsed
                .errors
                .push(format!("{prefix}Cannot parse xDS resource name")),
        }
    }
    parsed.deletions = Deletions::Named(removed);
    parsed.add_resource_errors(&response.resource_errors, errors);
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ads::ResourceTimer;
    use crate::resource::test_support::{any, eds_cluster};
    use envoy_types::pb::envoy::service::discovery::v3::Resource;

    fn name(key: &str) -> ResourceName {
        ResourceName {
            authority: None,
            key: key.into(),
        }
    }

    fn subscribed(names: &[&str]) -> TypeState {
        let mut state = TypeState::default();
        for n in names {
            state.subscribed.insert(name(n), ResourceTimer::default());
        }
        state
    }

    #[test]
    fn under_the_wildcard_the_first_request_claims_every_resource_held() {
        let held = |n: &ResourceName| (n.key == "a").then(|| "3".to_string());
        let of_type = || vec![(name("a"), "3".to_string()), (name("x"), "7".to_string())];
        let claims = |defects: &Defects| {
            let mut sent = DeltaSent::default();
            let mut state = subscribed(&["*", "a"]);
            let mut claimed: Vec<(String, String)> = request(
                ResourceType::Cluster,
                &mut state,
                &mut sent,
                held,
                of_type,
                None,
                defects,
            )
            .initial_resource_versions
            .into_iter()
            .collect();
            claimed.sort();
            claimed
        };
        assert_eq!(
            claims(&Defects::default()),
            [
                ("a".to_string(), "3".to_string()),
                ("x".to_string(), "7".to_string())
            ]
        );
        let broken = Defects {
            delta_wildcard_claims_nothing: true,
            ..Defects::default()
        };
        assert_eq!(claims(&broken), [("a".to_string(), "3".to_string())]);
    }

    #[test]
    fn requests_carry_the_changes_and_the_first_one_what_is_held() {
        let mut sent = DeltaSent::default();
        let mut state = subscribed(&["a", "b"]);
        let held = |n: &ResourceName| (n.key == "a").then(|| "3".to_string());
        let first = request(
            ResourceType::Cluster,
            &mut state,
            &mut sent,
            held,
            Vec::new,
            None,
            &Defects::default(),
        );
        assert_eq!(first.resource_names_subscribe, ["a", "b"]);
        assert!(first.resource_names_unsubscribe.is_empty());
        assert_eq!(
            first.initial_resource_versions.get("a").map(String::as_str),
            Some("3")
        );
        assert_eq!(first.initial_resource_versions.len(), 1);

        state.subscribed.remove(&name("a"));
        state.subscribed.insert(name("c"), ResourceTimer::default());
        sent.changed(&name("a"));
        sent.changed(&name("c"));
        state.nonce = "5".into();
        let second = request(
            ResourceType::Cluster,
            &mut state,
            &mut sent,
            held,
            Vec::new,
            None,
            &Defects::default(),
        );
        assert_eq!(second.resource_names_subscribe, ["c"]);
        assert_eq!(second.resource_names_unsubscribe, ["a"]);
        assert!(
            second.initial_resource_versions.is_empty(),
            "first request only"
        );
        assert_eq!(second.response_nonce, "5");

        let ack = request(
            ResourceType::Cluster,
            &mut state,
            &mut sent,
            held,
            Vec::new,
            None,
            &Defects::default(),
        );
        assert!(
            ack.resource_names_subscribe.is_empty() && ack.resource_names_unsubscribe.is_empty()
        );
    }

    #[test]
    fn responses_name_their_resources_versions_and_deletions() {
        let response = DeltaDiscoveryResponse {
            system_version_info: "9".into(),
            nonce: "n".into(),
            type_url: ResourceType::Cluster.type_url().into(),
            resources: vec![
                Resource {
                    name: "c1".into(),
                    version: "4".into(),
                    resource: Some(any(&eds_cluster("c1"))),
                    ..Default::default()
                },
                Resource {
                    name: "c2".into(),
                    version: "1".into(),
                    resource: None,
                    ..Default::default()
                },
            ],
            removed_resources: vec!["c3".into(), "c1".into(), "c3".into()],
            ..Default::default()
        };
        let parsed = parse(
            &DecodeContext::default(),
            ResourceType::Cluster,
            response,
            ResourceErrors::Read,
        );
        assert_eq!(parsed.entries.len(), 2);
        assert_eq!(parsed.entries[0].version, "4");
        assert!(parsed.entries[0].resource.is_ok());
        assert!(parsed.entries[1].resource.is_err(), "no body");
        assert_eq!(parsed.deletions, Deletions::Named(vec![name("c3")]));
        assert_eq!(parsed.errors.len(), 3, "{:?}", parsed.errors);
        assert!(parsed.errors[0].starts_with("resource index 1: c2: "));
        assert!(parsed.errors[1].starts_with("removed resource index 1: c1: duplicate"));
        assert!(parsed.errors[2].starts_with("removed resource index 2: c3: duplicate"));

        let mut memory = DeltaMemory::default();
        memory.update(&parsed, &Defects::default());
        assert_eq!(
            memory.version(ResourceType::Cluster, &name("c1")),
            Some("4")
        );
        assert_eq!(
            memory.version(ResourceType::Cluster, &name("c2")),
            None,
            "rejected"
        );
    }
}
