//! KDS resource names: a delta `Resource`'s name and a `removed_resources`
//! entry are `<name>.<mesh>`, with an empty mesh for global-scoped types
//! (`mesh-1.`). Kuma builds them as `name + "." + mesh` and splits them at
//! the last `.` (mesh names are DNS labels, without dots; resource names
//! may have dots).

use std::fmt;

/// A Kuma resource's key as KDS names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KdsName {
    pub name: String,
    /// Empty for a global-scoped resource.
    pub mesh: String,
}

/// A string that is not a KDS resource name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KdsNameError {
    /// No `.` at all: a KDS name always has one, even for an empty mesh.
    /// (Kuma's zone reads such a name as global-scoped; a global never
    /// sends one.)
    #[error("{0:?} has no '.': a KDS name is <name>.<mesh> (<name>. without a mesh)")]
    NoMeshSeparator(String),
    #[error("{0:?} has an empty resource name before its '.'")]
    EmptyName(String),
}

impl KdsName {
    pub fn new(name: impl Into<String>, mesh: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            mesh: mesh.into(),
        }
    }

    /// A global-scoped resource's name (no mesh).
    pub fn global(name: impl Into<String>) -> Self {
        Self::new(name, "")
    }

    pub fn parse(text: &str) -> Result<KdsName, KdsNameError> {
        let (name, mesh) = text
            .rsplit_once('.')
            .ok_or_else(|| KdsNameError::NoMeshSeparator(text.to_string()))?;
        if name.is_empty() {
            return Err(KdsNameError::EmptyName(text.to_string()));
        }
        Ok(KdsName::new(name, mesh))
    }
}

impl fmt::Display for KdsName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.name, self.mesh)
    }
}

impl std::str::FromStr for KdsName {
    type Err = KdsNameError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        KdsName::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("mtp-1.default", "mtp-1", "default")]
    #[case("mesh-1.", "mesh-1", "")]
    #[case("web.kuma-system.default", "web.kuma-system", "default")]
    fn parses_at_the_last_dot_and_prints_back(
        #[case] text: &str,
        #[case] name: &str,
        #[case] mesh: &str,
    ) {
        let parsed = KdsName::parse(text).expect("a KDS name");
        assert_eq!(parsed, KdsName::new(name, mesh));
        assert_eq!(parsed.to_string(), text);
    }

    #[test]
    fn names_without_a_dot_or_a_name_are_errors() {
        assert_eq!(
            KdsName::parse("mesh-1"),
            Err(KdsNameError::NoMeshSeparator("mesh-1".into()))
        );
        assert_eq!(
            KdsName::parse(".default"),
            Err(KdsNameError::EmptyName(".default".into()))
        );
        assert_eq!(KdsName::global("m").to_string(), "m.");
    }
}
