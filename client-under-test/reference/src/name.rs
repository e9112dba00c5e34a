//! Resource names: old-style names, and `xdstp://` names (gRFC A47) whose
//! authority selects the servers to ask.

use std::collections::BTreeMap;

use crate::resource::ResourceType;

/// A parsed resource name. Old-style names have no authority.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceName {
    pub authority: Option<String>,
    /// The id, plus canonically ordered query parameters for xdstp names.
    pub key: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Unable to parse resource name {name}: {reason}")]
pub struct NameError {
    pub name: String,
    pub reason: &'static str,
}

impl ResourceName {
    pub fn parse(name: &str, resource_type: ResourceType) -> Result<ResourceName, NameError> {
        let Some(rest) = name.strip_prefix("xdstp:") else {
            return Ok(ResourceName {
                authority: None,
                key: name.to_string(),
            });
        };
        let err = |reason| NameError {
            name: name.to_string(),
            reason,
        };
        let rest = rest
            .strip_prefix("//")
            .ok_or_else(|| err("xdstp names need an authority (xdstp://...)"))?;
        let (authority, path_and_query) = rest
            .split_once('/')
            .ok_or_else(|| err("missing resource path"))?;
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        let (type_part, id) = path.split_once('/').unwrap_or((path, ""));
        if type_part != resource_type.message_name() {
            return Err(err("xdstp URI path must indicate valid xDS resource type"));
        }
        let mut key = id.to_string();
        if let Some(query) = query {
            // Canonical order, as gRPC does, so equivalent names match.
            let params: BTreeMap<&str, &str> = query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').unwrap_or((p, "")))
                .collect();
            if !params.is_empty() {
                let joined: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                key.push('?');
                key.push_str(&joined.join("&"));
            }
        }
        Ok(ResourceName {
            authority: Some(authority.to_string()),
            key,
        })
    }

    /// The name as sent on the wire.
    pub fn full_name(&self, resource_type: ResourceType) -> String {
        match &self.authority {
            None => self.key.clone(),
            Some(authority) => format!(
                "xdstp://{authority}/{}/{}",
                resource_type.message_name(),
                self.key
            ),
        }
    }
}

/// A bootstrap name template with `%s` replaced by `value`: percent-encoded
/// as a URI path for an `xdstp:` template (gRFC A47), as it is otherwise.
pub fn fill_template(template: &str, value: &str) -> String {
    let value = if template.starts_with("xdstp:") {
        percent_encode_path(value)
    } else {
        value.to_string()
    };
    template.replace("%s", &value)
}

fn percent_encode_path(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_percent_encode_only_for_xdstp() {
        assert_eq!(
            fill_template("grpc/server?xds.resource.listening_address=%s", "[::]:80"),
            "grpc/server?xds.resource.listening_address=[::]:80"
        );
        assert_eq!(
            fill_template(
                "xdstp://auth/envoy.config.listener.v3.Listener/%s",
                "[::]:80 a?b"
            ),
            "xdstp://auth/envoy.config.listener.v3.Listener/%5B::%5D:80%20a%3Fb"
        );
    }
    use rstest::rstest;

    #[rstest]
    #[case("listener-1", None, "listener-1")]
    #[case(
        "xdstp://a.example/envoy.config.listener.v3.Listener/svc",
        Some("a.example"),
        "svc"
    )]
    #[case(
        "xdstp://a/envoy.config.listener.v3.Listener/x/y?b=2&a=1",
        Some("a"),
        "x/y?a=1&b=2"
    )]
    #[case("xdstp:///envoy.config.listener.v3.Listener/svc", Some(""), "svc")]
    fn parses(#[case] name: &str, #[case] authority: Option<&str>, #[case] key: &str) {
        let n = ResourceName::parse(name, ResourceType::Listener).unwrap();
        assert_eq!(n.authority.as_deref(), authority);
        assert_eq!(n.key, key);
    }

    #[rstest]
    #[case("xdstp:a/b", "xdstp names need an authority (xdstp://...)")]
    #[case("xdstp://a", "missing resource path")]
    #[case(
        "xdstp://a/envoy.config.cluster.v3.Cluster/c",
        "xdstp URI path must indicate valid xDS resource type"
    )]
    fn rejects(#[case] name: &str, #[case] reason: &str) {
        assert_eq!(
            ResourceName::parse(name, ResourceType::Listener)
                .unwrap_err()
                .reason,
            reason
        );
    }

    #[test]
    fn full_name_round_trips_canonically() {
        let n = ResourceName::parse(
            "xdstp://a/envoy.config.cluster.v3.Cluster/c?z=1&y=2",
            ResourceType::Cluster,
        )
        .unwrap();
        assert_eq!(
            n.full_name(ResourceType::Cluster),
            "xdstp://a/envoy.config.cluster.v3.Cluster/c?y=2&z=1"
        );
    }
}
