//! KDS values as scenario files write them: Kuma type names, `<name>.<mesh>`
//! resource names and the two RPCs, each read the one way every KDS step,
//! matcher and resource form reads it, with located errors.

use std::collections::BTreeSet;

use xds_vocabulary::kds::types::{GLOBAL_TO_ZONE, ZONE_TO_GLOBAL};
use xds_vocabulary::kds::{KdsName, KdsRpc};

use super::{Problem, Spanned, closest};

/// The RPCs' names in scenario files.
pub(crate) const KDS_RPCS: &[(&str, KdsRpc)] = &[
    ("global_to_zone", KdsRpc::GlobalToZoneSync),
    ("zone_to_global", KdsRpc::ZoneToGlobalSync),
];

/// Every Kuma type KDS carries (Kuma v2.14.3's, either way), sorted.
pub(crate) fn kuma_types() -> Vec<String> {
    GLOBAL_TO_ZONE
        .iter()
        .chain(ZONE_TO_GLOBAL.iter())
        .map(|t| t.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// A Kuma type name KDS carries (`Mesh`, `Dataplane`), exactly as Kuma
/// spells it: a type URL on KDS is the bare name, compared as written.
pub(crate) fn kuma_type(s: &Spanned<String>) -> Result<String, Problem> {
    let known = kuma_types();
    if known.contains(&s.value) {
        return Ok(s.value.clone());
    }
    let hint = closest(&s.value, &known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    Err(Problem::at(
        s,
        format!(
            "unknown Kuma type `{}`{hint}: KDS carries Kuma v2.14.3's types, e.g. Mesh, \
             MeshTrafficPermission, Dataplane, ZoneIngress (`unknown_type: true` sends \
             any name on purpose)",
            s.value
        ),
    ))
}

/// A KDS resource name, `<name>.<mesh>` (`<name>.` for a global-scoped
/// type).
pub(crate) fn kds_name(s: &Spanned<String>) -> Result<KdsName, Problem> {
    KdsName::parse(&s.value).map_err(|e| Problem::at(s, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_type_is_named_with_the_nearest() {
        let problem = kuma_type(&Spanned::new("Dataplan".to_string())).unwrap_err();
        assert!(
            problem.message().contains("did you mean `Dataplane`"),
            "{}",
            problem.message()
        );
        assert_eq!(
            kuma_type(&Spanned::new("Mesh".to_string())).unwrap(),
            "Mesh"
        );
        // Kuma compares type URLs as written.
        assert!(kuma_type(&Spanned::new("mesh".to_string())).is_err());
    }

    #[test]
    fn a_name_needs_its_mesh_separator() {
        assert_eq!(
            kds_name(&Spanned::new("dp-1.default".to_string())).unwrap(),
            KdsName::new("dp-1", "default")
        );
        assert_eq!(
            kds_name(&Spanned::new("m1.".to_string())).unwrap(),
            KdsName::global("m1")
        );
        let problem = kds_name(&Spanned::new("dp-1".to_string())).unwrap_err();
        assert!(
            problem.message().contains("<name>.<mesh>"),
            "{}",
            problem.message()
        );
    }
}
