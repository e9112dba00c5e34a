//! The two variants of the ADS protocol: state of the world
//! (`StreamAggregatedResources`: each response of LDS and CDS carries every
//! resource) and incremental, or delta (`DeltaAggregatedResources`: only
//! what changed travels, deletions are named).

use std::fmt;

/// An ADS protocol variant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdsProtocol {
    #[default]
    Sotw,
    Delta,
}

impl AdsProtocol {
    pub const ALL: [AdsProtocol; 2] = [AdsProtocol::Sotw, AdsProtocol::Delta];

    /// The name scenarios use: `sotw`, `delta`.
    pub fn name(self) -> &'static str {
        match self {
            AdsProtocol::Sotw => "sotw",
            AdsProtocol::Delta => "delta",
        }
    }

    /// The bootstrap's `api_type` for it, as Envoy's `ApiConfigSource`
    /// spells it (`GRPC`, `DELTA_GRPC`); gRPC has no standard key, and this
    /// one maps to Envoy's bootstrap as it is.
    pub fn api_type(self) -> &'static str {
        match self {
            AdsProtocol::Sotw => "GRPC",
            AdsProtocol::Delta => "DELTA_GRPC",
        }
    }

    pub fn from_api_type(api_type: &str) -> Option<AdsProtocol> {
        AdsProtocol::ALL
            .into_iter()
            .find(|p| p.api_type() == api_type)
    }
}

impl fmt::Display for AdsProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_types_round_trip() {
        for protocol in AdsProtocol::ALL {
            assert_eq!(
                AdsProtocol::from_api_type(protocol.api_type()),
                Some(protocol)
            );
        }
        assert_eq!(AdsProtocol::from_api_type("REST"), None);
    }
}
