//! The `envoy.service.discovery.v3.Resource` wrapper: how an entry of a
//! SotW response may carry its name and version around the resource, and
//! the form every resource takes in a delta response.

use envoy_types::pb::envoy::service::discovery::v3::Resource;
use envoy_types::pb::google::protobuf::Any;
use prost::Message;

/// Type URL of an entry wrapped in `envoy.service.discovery.v3.Resource`.
pub const RESOURCE_WRAPPER_TYPE_URL: &str =
    "type.googleapis.com/envoy.service.discovery.v3.Resource";

/// `entry` wrapped in a `Resource` carrying `name` and `version`, packed
/// as an `Any` (a SotW response entry).
pub fn wrap(name: &str, version: &str, entry: Any) -> Any {
    let wrapper = Resource {
        name: name.to_string(),
        version: version.to_string(),
        resource: Some(entry),
        ..Default::default()
    };
    Any {
        type_url: RESOURCE_WRAPPER_TYPE_URL.to_string(),
        value: wrapper.encode_to_vec(),
    }
}

/// A SotW response entry with any `Resource` wrapper taken off.
#[derive(Debug, PartialEq)]
pub enum Unwrapped<'a> {
    /// Not wrapped: the entry is the resource.
    Plain(&'a Any),
    /// Wrapped: the wrapper's name (empty when it has none) and the inner
    /// resource.
    Wrapped { name: String, resource: Any },
}

/// Why a wrapped entry has no resource to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WrapperError {
    #[error("Can't decode Resource proto wrapper")]
    Undecodable,
    #[error("No resource present in Resource proto wrapper")]
    Empty,
}

/// Takes the `Resource` wrapper off `entry`, if it has one.
pub fn unwrap(entry: &Any) -> Result<Unwrapped<'_>, WrapperError> {
    if entry.type_url != RESOURCE_WRAPPER_TYPE_URL {
        return Ok(Unwrapped::Plain(entry));
    }
    let wrapper =
        Resource::decode(entry.value.as_slice()).map_err(|_| WrapperError::Undecodable)?;
    let resource = wrapper.resource.ok_or(WrapperError::Empty)?;
    Ok(Unwrapped::Wrapped {
        name: wrapper.name,
        resource,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Name;

    fn any(value: u8) -> Any {
        Any {
            type_url: "t".into(),
            value: vec![value],
        }
    }

    #[test]
    fn the_wrapper_type_url_is_the_protos() {
        assert_eq!(RESOURCE_WRAPPER_TYPE_URL, Resource::type_url());
    }

    #[test]
    fn wrap_then_unwrap_gives_the_name_and_the_resource_back() {
        let wrapped = wrap("c1", "v9", any(1));
        assert_eq!(
            unwrap(&wrapped),
            Ok(Unwrapped::Wrapped {
                name: "c1".into(),
                resource: any(1)
            })
        );
        let plain = any(2);
        assert_eq!(unwrap(&plain), Ok(Unwrapped::Plain(&plain)));
    }

    #[test]
    fn broken_wrappers_say_why() {
        let bad = Any {
            type_url: RESOURCE_WRAPPER_TYPE_URL.into(),
            value: vec![0xff, 0xff],
        };
        assert_eq!(unwrap(&bad), Err(WrapperError::Undecodable));
        let empty = Any {
            type_url: RESOURCE_WRAPPER_TYPE_URL.into(),
            value: Resource::default().encode_to_vec(),
        };
        assert_eq!(unwrap(&empty), Err(WrapperError::Empty));
    }
}
