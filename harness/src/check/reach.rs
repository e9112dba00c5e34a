//! What a script makes reachable as it goes: the resources it watched,
//! the targets it dialled, the ones it sent RPCs to. An expectation of
//! something nothing before it could cause can never be met, so the loader
//! rejects it (see `Check::never_met` of the matcher kinds).

use std::collections::BTreeSet;

use xds_vocabulary::ResourceType;

/// What the steps so far watched, dialled and called.
#[derive(Debug, Default)]
pub struct Reachable {
    watched: BTreeSet<(ResourceType, String)>,
    dialled: BTreeSet<String>,
    called: BTreeSet<String>,
}

impl Reachable {
    /// A watch of `name` (`*`: every resource of the type).
    pub fn watched(&mut self, resource_type: ResourceType, name: &str) {
        self.watched.insert((resource_type, canonical(name)));
    }

    /// A dial of `target`.
    pub fn dialled(&mut self, target: &str) {
        self.dialled.insert(target.to_string());
    }

    /// RPCs to `target` (which dials it too).
    pub fn called(&mut self, target: &str) {
        self.dialled(target);
        self.called.insert(target.to_string());
    }

    /// Whether a watcher hears of `name` of one of `types`.
    pub fn is_watched(&self, types: &[ResourceType], name: &str) -> bool {
        let name = canonical(name);
        types.iter().any(|t| {
            self.watched
                .iter()
                .any(|(w, watched)| w == t && (watched == "*" || *watched == name))
        })
    }

    pub fn is_dialled(&self, target: &str) -> bool {
        self.dialled.contains(target)
    }

    pub fn is_called(&self, target: &str) -> bool {
        self.called.contains(target)
    }
}

/// A resource name as clients key it: an xdstp:// name's context
/// parameters sorted (gRFC A47), so `?b=2&a=1` and `?a=1&b=2` are one name.
fn canonical(name: &str) -> String {
    match name.split_once('?') {
        Some((path, query)) if name.starts_with("xdstp:") => {
            let mut params: Vec<&str> = query.split('&').collect();
            params.sort_unstable();
            format!("{path}?{}", params.join("&"))
        }
        _ => name.to_string(),
    }
}
