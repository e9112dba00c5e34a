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

/// A name with Kuma's hash suffix, as a 2.14 control plane renames what it
/// sends over KDS (`pkg/kds/hash/hash.go` at v2.14.3, `HashedName`):
/// `<display name, cut to 236 bytes>-<16 characters>`, the characters being
/// the hex digits of a 64-bit FNV-1a over `mesh`, `display_name` and
/// `values` (the values of the labels the mapper names, e.g. the
/// `kuma.io/zone` of a zone's resource), concatenated without separators,
/// each digit mapped into `bcdfghjklmnpqrstvwxz2456789` (Kubernetes'
/// `SafeEncodeString`).
pub fn hash_suffixed(mesh: &str, display_name: &str, values: &[&str]) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    // 253 (Kubernetes' name limit) minus the dash and the suffix.
    const KEEP: usize = 253 - 17;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [mesh, display_name].iter().chain(values) {
        for byte in part.as_bytes() {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let suffix: String = format!("{hash:016x}")
        .bytes()
        .map(|digit| char::from(ALPHANUMS[usize::from(digit) % ALPHANUMS.len()]))
        .collect();
    let mut cut = display_name.len().min(KEEP);
    // Kuma cuts bytes; a name is ASCII in practice, and a cut inside a
    // character is moved before it rather than producing invalid UTF-8.
    while !display_name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{suffix}", &display_name[..cut])
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
    fn hash_suffixes_are_kumas() {
        // Observed on kuma-cp 2.14.3 (KDS-FACTS 3b and 5): a zone's
        // Dataplane and a global's MeshTimeout.
        assert_eq!(
            hash_suffixed("default", "dp-1", &["zone-1"]),
            "dp-1-dff6z597w47d46xx"
        );
        assert_eq!(
            hash_suffixed("default", "mt-1", &[]),
            "mt-1-xz8287465c2624wz"
        );
        assert_eq!(
            hash_suffixed("", "local-mesh-external-service", &["zone-1"]),
            "local-mesh-external-service-6b28v9789424f4wx"
        );
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
