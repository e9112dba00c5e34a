//! A resource's one-line summary, as every client's timeline writes what
//! its watchers heard: the reference decoder's, so that timelines compare
//! across clients, and what a server sent compares with what a watcher
//! heard (the chaos invariant `eventually-consistent`).

use envoy_types::pb::google::protobuf::Any;
use xds_vocabulary::ResourceType;

/// The summary of a SotW response's entry (the resource, or its
/// `Resource` wrapper), or why the reference decoder rejects it.
pub fn of_entry(resource_type: ResourceType, entry: &Any) -> Result<String, String> {
    xds_reference_client::resource::decode_entry(resource_type, entry)
        .result
        .map(|resource| resource.summary())
        .map_err(|e| e.to_string())
}

/// The summary of a delta response's resource body, named `name`, or why
/// the reference decoder rejects it.
pub fn of_resource(resource_type: ResourceType, name: &str, body: &Any) -> Result<String, String> {
    xds_reference_client::resource::decode_resource(resource_type, Some(name.to_string()), body)
        .result
        .map(|resource| resource.summary())
        .map_err(|e| e.to_string())
}
