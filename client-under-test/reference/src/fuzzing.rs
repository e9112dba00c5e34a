//! What the fuzz targets `response_decoding` and `bootstrap` (`fuzz/`) and
//! the corpus replay test run: the client's own handling of untrusted
//! input, with the properties that must hold for any input. Not an API.
//!
//! - `response`: a DiscoveryResponse or DeltaDiscoveryResponse as the ADS
//!   stream hands it to the worker: its type looked up, then every entry
//!   unwrapped, decoded, validated and named, duplicates and unparsable
//!   names turned into NACK errors (`sotw::parse` / `delta::parse`, the
//!   functions `Worker::on_response` calls).
//! - `bootstrap`: a bootstrap file's text through `Bootstrap::from_json`,
//!   then what the client derives from it (the node, listener names).

use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryResponse, DiscoveryResponse};
use envoy_types::pb::google::protobuf::Any;
use prost::Message;

use crate::bootstrap::Bootstrap;
use crate::client::ads::{Deletions, ParsedResponse, ResourceErrors, delta, sotw};
use crate::name::ResourceName;
use crate::resolver::XdsTarget;
use crate::resource::{DecodeContext, ResourceType, XdsResource, decode_resource};

/// What one input reached, so a replay can tell a corpus that exercises
/// validation from one that is all noise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// Responses of a known resource type parsed (SotW and delta).
    pub responses: usize,
    /// Entries that decoded and validated.
    pub valid: usize,
    /// Entries rejected (each an error of the NACK).
    pub invalid: usize,
}

/// Reads `data` as a DiscoveryResponse and as a DeltaDiscoveryResponse
/// (protobuf decoding is lenient: the same bytes are often both) and
/// parses each that decodes as the client would.
pub fn response(data: &[u8]) -> Decoded {
    let mut decoded = Decoded::default();
    if let Ok(response) = DiscoveryResponse::decode(data)
        && let Some(resource_type) = ResourceType::from_type_url(&response.type_url)
    {
        let entries = response.resources.len();
        let reported = response.resource_errors.len();
        let parsed = sotw::parse(
            &DecodeContext::default(),
            resource_type,
            response.clone(),
            ResourceErrors::Read,
        );
        check(&parsed, entries, 0, &mut decoded);
        check_server_errors(&parsed, reported);
        // Parsing is a function of the bytes: the same NACK every time
        // (hash-ordered maps in a resource must not leak into it).
        same(
            &parsed,
            &sotw::parse(
                &DecodeContext::default(),
                resource_type,
                response,
                ResourceErrors::Read,
            ),
        );
    }
    if let Ok(response) = DeltaDiscoveryResponse::decode(data)
        && let Some(resource_type) = ResourceType::from_type_url(&response.type_url)
    {
        let entries = response.resources.len();
        let removed = response.removed_resources.len();
        let reported = response.resource_errors.len();
        let parsed = delta::parse(
            &DecodeContext::default(),
            resource_type,
            response.clone(),
            ResourceErrors::Read,
        );
        check(&parsed, entries, removed, &mut decoded);
        check_server_errors(&parsed, reported);
        same(
            &parsed,
            &delta::parse(
                &DecodeContext::default(),
                resource_type,
                response,
                ResourceErrors::Read,
            ),
        );
    }
    decoded
}

/// Properties of the per-resource errors read from a response that
/// reported `reported` of them: each names its resource as it parses
/// back, and none vanishes without an error of the NACK.
fn check_server_errors(parsed: &ParsedResponse, reported: usize) {
    for error in &parsed.server_errors {
        assert_ne!(error.code, tonic::Code::Ok, "an OK status read as an error");
        assert_eq!(
            ResourceName::parse(&error.full_name, parsed.resource_type).as_ref(),
            Ok(&error.name),
        );
    }
    assert!(parsed.server_errors.len() <= reported);
    if parsed.errors.is_empty() {
        assert_eq!(
            parsed.server_errors.len(),
            reported,
            "a resource error vanished silently"
        );
    }
}

/// Properties of a parsed response of `entries` resources and `removed`
/// removals (delta).
fn check(parsed: &ParsedResponse, entries: usize, removed: usize, decoded: &mut Decoded) {
    let resource_type = parsed.resource_type;
    decoded.responses += 1;
    for entry in &parsed.entries {
        // The name the client keys its cache by reads back as itself.
        let full_name = entry.name.full_name(resource_type);
        assert_eq!(
            ResourceName::parse(&full_name, resource_type).as_ref(),
            Ok(&entry.name),
            "{full_name} does not parse back"
        );
        match &entry.resource {
            Ok((value, serialized)) => {
                decoded.valid += 1;
                assert_eq!(value.resource_type(), resource_type);
                assert!(!value.summary().is_empty());
                // CSDS shows the bytes kept: they decode to the same value.
                let again = decode_resource(
                    resource_type,
                    Some(entry.full_name.clone()),
                    &Any {
                        type_url: resource_type.type_url().to_string(),
                        value: serialized.clone(),
                    },
                );
                let again: Option<&XdsResource> = again.result.as_ref().ok().map(Arc::as_ref);
                assert_eq!(again, Some(value.as_ref()), "kept bytes decode differently");
            }
            Err(reason) => {
                decoded.invalid += 1;
                assert!(!reason.is_empty(), "a rejection without a reason");
            }
        }
    }
    let rejected = parsed
        .entries
        .iter()
        .filter(|e| e.resource.is_err())
        .count();
    // Every invalid entry is an error of the NACK; so is every entry or
    // removal the client could not use at all.
    assert!(parsed.errors.len() >= rejected);
    if parsed.errors.is_empty() {
        assert_eq!(parsed.entries.len(), entries, "an entry vanished silently");
        if let Deletions::Named(names) = &parsed.deletions {
            assert_eq!(names.len(), removed, "a removal vanished silently");
        }
    }
    let mut names: Vec<&str> = parsed
        .entries
        .iter()
        .map(|e| e.full_name.as_str())
        .collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "one name twice among the entries");
}

/// Two parses of the same response agree.
fn same(a: &ParsedResponse, b: &ParsedResponse) {
    assert_eq!(a.errors, b.errors, "the NACK differs between two parses");
    assert_eq!(a.deletions, b.deletions);
    assert_eq!(a.entries.len(), b.entries.len());
    for (x, y) in a.entries.iter().zip(&b.entries) {
        assert_eq!(x.full_name, y.full_name);
        assert_eq!(x.version, y.version);
        let x = x
            .resource
            .as_ref()
            .map(|(value, bytes)| (value.as_ref(), bytes));
        let y = y
            .resource
            .as_ref()
            .map(|(value, bytes)| (value.as_ref(), bytes));
        assert_eq!(x, y, "two parses of one entry differ");
    }
}

/// Parses `data` as a bootstrap file and derives from it what the client
/// does (the node it sends, the Listener names of targets and of a
/// server's address); `true` when it is a valid bootstrap.
pub fn bootstrap(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    match Bootstrap::from_json(text) {
        Ok(bootstrap) => {
            assert!(!bootstrap.xds_servers.is_empty(), "valid without servers");
            assert_eq!(Bootstrap::from_json(text).as_ref(), Ok(&bootstrap));
            let node = bootstrap.node_proto("fuzz", "0");
            assert_eq!(node.id, bootstrap.node_id());
            let mut targets = vec!["xds:///svc".to_string()];
            targets.extend(
                bootstrap
                    .authorities
                    .keys()
                    .map(|a| format!("xds://{a}/svc")),
            );
            for target in targets {
                // An authority's name may be anything, including what does
                // not parse as a target; those the client refuses to dial.
                if let Ok(target) = XdsTarget::parse(&target) {
                    let servers = bootstrap.servers_for_authority(target.authority.as_deref());
                    assert!(!servers.is_empty(), "{target:?} has no servers");
                    let _ = target.listener_name(&bootstrap);
                }
            }
            let _ = crate::server::listener_resource_name(&bootstrap, "[::]:8443");
            true
        }
        Err(error) => {
            assert!(!error.errors.is_empty(), "an error without a reason");
            assert!(
                error
                    .to_string()
                    .starts_with("errors validating bootstrap: [")
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_support::{any, eds_cluster};

    #[test]
    fn a_response_with_valid_invalid_and_duplicate_entries() {
        let message = DiscoveryResponse {
            type_url: ResourceType::Cluster.type_url().into(),
            resources: vec![
                any(&eds_cluster("c1")),
                any(&eds_cluster("c1")),
                Any {
                    type_url: ResourceType::Cluster.type_url().into(),
                    value: vec![0xff],
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            response(&message.encode_to_vec()),
            Decoded {
                responses: 1,
                valid: 1,
                invalid: 0
            }
        );
    }

    #[test]
    fn a_response_of_an_unknown_type_is_ignored() {
        let message = DiscoveryResponse {
            type_url: "type.googleapis.com/unknown".into(),
            ..Default::default()
        };
        assert_eq!(response(&message.encode_to_vec()), Decoded::default());
    }

    #[test]
    fn bootstraps() {
        let good = r#"{"xds_servers": [{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}]}],
                       "authorities": {"a": {}, "": {}}}"#;
        assert!(bootstrap(good.as_bytes()));
        assert!(!bootstrap(b"{}"));
        assert!(!bootstrap(b"\xff"));
    }
}
