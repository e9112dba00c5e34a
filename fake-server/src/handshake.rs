//! What a KDS zone says of itself when it opens a stream: its gRPC
//! headers, as the recording keeps them (`ServerEvent::KdsStreamOpened`).
//!
//! The headers are the zone's to send: each kept value is cut to
//! [`MAX_HEADER_VALUE`] bytes and at most [`MAX_FEATURES`] features are
//! kept, so a stream's opening stays a few kilobytes whatever arrives.

use tonic::metadata::MetadataMap;
use xds_vocabulary::cut::cut;
use xds_vocabulary::kds::{CLIENT_ID_HEADER, FEATURES_HEADER, KDS_VERSION_HEADER, VERSION_HEADER};

/// The longest header value kept (real ones are a zone name, `v3`, a
/// feature name, a version: tens of bytes).
pub const MAX_HEADER_VALUE: usize = 256;

/// How many `features` values are kept; one more says how many were left
/// out.
pub const MAX_FEATURES: usize = 16;

/// A KDS stream's opening headers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KdsHandshake {
    /// `client-id`: the zone's name. Kuma's global refuses a stream
    /// without it; the fake records its absence.
    pub client_id: Option<String>,
    /// `kds-version` (`v3`).
    pub kds_version: Option<String>,
    /// Every `features` value, in order (Kuma sends one header per
    /// feature).
    pub features: Vec<String>,
    /// `version`: the zone's Kuma version, if sent.
    pub version: Option<String>,
    /// The zone's messages are gzip-compressed (`grpc-encoding: gzip`).
    pub gzip: bool,
}

impl KdsHandshake {
    pub fn from_metadata(metadata: &MetadataMap) -> Self {
        let one = |key: &str| {
            metadata
                .get(key)
                .map(|value| kept(value.to_str().unwrap_or("[not ASCII]")))
        };
        let all: Vec<String> = metadata
            .get_all(FEATURES_HEADER)
            .iter()
            .map(|value| kept(value.to_str().unwrap_or("[not ASCII]")))
            .collect();
        let mut features: Vec<String> = all.iter().take(MAX_FEATURES).cloned().collect();
        if all.len() > MAX_FEATURES {
            features.push(format!("[... {} more features]", all.len() - MAX_FEATURES));
        }
        KdsHandshake {
            client_id: one(CLIENT_ID_HEADER),
            kds_version: one(KDS_VERSION_HEADER),
            features,
            version: one(VERSION_HEADER),
            gzip: metadata
                .get("grpc-encoding")
                .is_some_and(|encoding| encoding == "gzip"),
        }
    }
}

fn kept(value: &str) -> String {
    cut(value, MAX_HEADER_VALUE).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_kept_cut_and_counted() {
        let mut metadata = MetadataMap::new();
        metadata.insert("client-id", "zone-1".parse().expect("ascii"));
        metadata.insert("kds-version", "v3".parse().expect("ascii"));
        metadata.insert("version", "x".repeat(1000).parse().expect("ascii"));
        metadata.insert("grpc-encoding", "gzip".parse().expect("ascii"));
        for i in 0..20 {
            metadata.append("features", format!("f{i}").parse().expect("ascii"));
        }
        let handshake = KdsHandshake::from_metadata(&metadata);
        assert_eq!(handshake.client_id.as_deref(), Some("zone-1"));
        assert_eq!(handshake.kds_version.as_deref(), Some("v3"));
        assert!(handshake.gzip);
        assert!(handshake.version.as_ref().expect("version").len() < 300);
        assert_eq!(handshake.features.len(), MAX_FEATURES + 1);
        assert_eq!(handshake.features[0], "f0");
        assert_eq!(handshake.features[MAX_FEATURES], "[... 4 more features]");
        assert_eq!(
            KdsHandshake::from_metadata(&MetadataMap::new()),
            KdsHandshake::default()
        );
    }
}
