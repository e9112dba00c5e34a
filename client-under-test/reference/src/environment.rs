//! The environment variables the reference client reads, as a gRPC client
//! reads its own. They come as a map, not from the process: the harness
//! runs many clients in one process, which would share one environment
//! (the process adapter hands over its own).

use std::collections::BTreeMap;

/// gRFC A71's temporary protection: "If this variable is unset or is
/// false, only one xDS server will be read from the bootstrap file."
pub const XDS_FALLBACK: &str = "GRPC_EXPERIMENTAL_XDS_FALLBACK";

/// Whether A71 fallback is on: off only when [`XDS_FALLBACK`] says
/// `false` (in any case, around spaces ignored). Unset is on: the
/// protection's first stage, in which unset meant off, is over in gRPC's
/// releases (grpc-java 1.85 reads the variable with `true` as its
/// default; grpc-go 1.85 no longer reads it), and fallback scenarios set
/// nothing.
pub fn xds_fallback(vars: &BTreeMap<String, String>) -> bool {
    vars.get(XDS_FALLBACK)
        .is_none_or(|value| !value.trim().eq_ignore_ascii_case("false"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_false_turns_fallback_off() {
        let with = |value: &str| BTreeMap::from([(XDS_FALLBACK.to_string(), value.to_string())]);
        assert!(xds_fallback(&BTreeMap::new()));
        assert!(xds_fallback(&with("true")));
        assert!(!xds_fallback(&with("false")));
        assert!(!xds_fallback(&with(" FALSE ")));
        // Another variable says nothing about fallback.
        let other = BTreeMap::from([("GRPC_TRACE".to_string(), "false".to_string())]);
        assert!(xds_fallback(&other));
    }
}
