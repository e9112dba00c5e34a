//! The `kds_stream` matcher: a KDS stream a global saw opened, by its RPC
//! and what the zone said of itself in its gRPC headers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::event::ServerEvent;
use xds_vocabulary::kds::KdsRpc;

use super::{Check, Compare, Compile, Description, Translate, keyword_name, list, quoted};
use crate::check::kds::KDS_RPCS;
use crate::check::{Checker, Problem, Spanned, keyword, opt};
use crate::timeline::{EventKind, TimelineEvent};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KdsStreamMatcherSpec {
    /// The server (the global) it was opened to (default: any).
    pub server: Option<Spanned<String>>,
    /// `global_to_zone` or `zone_to_global` (default: either).
    #[schemars(schema_with = "rpcs")]
    #[serde(default)]
    pub rpc: Option<Spanned<String>>,
    /// The `client-id` header: the zone's name; `""`: none sent.
    pub client_id: Option<String>,
    /// The `kds-version` header (`v3`); `""`: none sent.
    pub kds_version: Option<String>,
    /// `features` header values that must be among those sent.
    pub features: Option<Vec<String>>,
    /// Whether the zone's messages are gzip-compressed.
    pub gzip: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct KdsStreamMatcher {
    pub server: Option<String>,
    pub rpc: Option<KdsRpc>,
    pub client_id: Option<String>,
    pub kds_version: Option<String>,
    pub features: Vec<String>,
    pub gzip: Option<bool>,
}

impl Compile for KdsStreamMatcherSpec {
    type Matcher = KdsStreamMatcher;

    fn compile(&self, scenario: &Checker) -> Result<KdsStreamMatcher, Problem> {
        Ok(KdsStreamMatcher {
            server: scenario.filter_server(self.server.as_ref())?,
            rpc: opt(self.rpc.as_ref(), |r| keyword(r, "KDS RPC", KDS_RPCS))?,
            client_id: self.client_id.clone(),
            kds_version: self.kds_version.clone(),
            features: self.features.clone().unwrap_or_default(),
            gzip: self.gzip,
        })
    }
}

impl Check for KdsStreamMatcher {
    fn compare(
        &self,
        event: &TimelineEvent,
        _text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        let (Some(source), EventKind::Server(e)) = (event.source.server(), &event.kind) else {
            return None;
        };
        let ServerEvent::KdsStreamOpened { rpc, handshake, .. } = &**e else {
            return None;
        };
        let header = |value: &Option<String>| value.clone().unwrap_or_default();
        fields
            .eq("server", self.server.as_deref(), source, str::to_string)
            .eq("rpc", self.rpc.as_ref(), rpc, |r| keyword_name(KDS_RPCS, r))
            .eq(
                "client_id",
                self.client_id.as_ref(),
                &header(&handshake.client_id),
                |v| quoted(v),
            )
            .eq(
                "kds_version",
                self.kds_version.as_ref(),
                &header(&handshake.kds_version),
                |v| quoted(v),
            )
            .check(
                "features",
                !self.features.is_empty(),
                || self.features.iter().all(|f| handshake.features.contains(f)),
                || list(&self.features),
                || list(&handshake.features),
            )
            .eq("gzip", self.gzip.as_ref(), &handshake.gzip, bool::to_string);
        Some(())
    }

    fn describe(&self) -> String {
        Description::new("KDS stream opened")
            .given("server", self.server.as_ref())
            .given("rpc", self.rpc.map(|r| keyword_name(KDS_RPCS, &r)))
            .given_debug("client_id", self.client_id.as_ref())
            .given_debug("kds_version", self.kds_version.as_ref())
            .given(
                "features",
                Some(list(&self.features)).filter(|_| !self.features.is_empty()),
            )
            .given("gzip", self.gzip)
            .into()
    }
}

fn rpcs(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(KDS_RPCS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_fake_server::handshake::KdsHandshake;

    #[test]
    fn checks_the_rpc_and_the_headers() {
        let event = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Server("global".into()),
            kind: EventKind::Server(Box::new(ServerEvent::KdsStreamOpened {
                stream: 1,
                connection: Some(1),
                rpc: KdsRpc::GlobalToZoneSync,
                handshake: KdsHandshake {
                    client_id: Some("zone-1".into()),
                    kds_version: Some("v3".into()),
                    features: vec!["zone-ping-health".into()],
                    version: None,
                    gzip: true,
                },
            })),
        };
        let good = KdsStreamMatcher {
            rpc: Some(KdsRpc::GlobalToZoneSync),
            client_id: Some("zone-1".into()),
            kds_version: Some("v3".into()),
            features: vec!["zone-ping-health".into()],
            gzip: Some(true),
            ..Default::default()
        };
        assert!(good.matches(&event, &as_written));
        for bad in [
            KdsStreamMatcher {
                rpc: Some(KdsRpc::ZoneToGlobalSync),
                ..good.clone()
            },
            KdsStreamMatcher {
                client_id: Some("zone-2".into()),
                ..good.clone()
            },
            KdsStreamMatcher {
                features: vec!["hash-suffix".into()],
                ..good.clone()
            },
            KdsStreamMatcher {
                gzip: Some(false),
                ..good.clone()
            },
        ] {
            assert!(!bad.matches(&event, &as_written), "{}", bad.describe());
        }
    }
}
