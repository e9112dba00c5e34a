//! `csds_request`: a CSDS request of the scenario's making; its answer
//! goes on the timeline for `csds_reply` expectations.

use envoy_types::pb::envoy::service::status::v3::ClientStatusRequest;
use envoy_types::pb::envoy::r#type::matcher::v3::string_matcher::MatchPattern;
use envoy_types::pb::envoy::r#type::matcher::v3::{NodeMatcher, StringMatcher};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_client_under_test::Capabilities;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem};
use crate::timeline::{CsdsReply, EventKind, Source};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsdsRequestSpec {
    /// The request's `node_matchers`: each matches a node by its id,
    /// exactly (a control plane's filter; a client has one node).
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub node_matchers: Vec<NodeMatcherSpec>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeMatcherSpec {
    /// The node id to match exactly.
    pub node_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsdsRequest {
    /// `node_matchers`, by node id.
    pub node_ids: Vec<String>,
}

impl Compile for CsdsRequestSpec {
    type Step = CsdsRequest;

    fn compile(&self, _script: &mut Script<'_>) -> Result<CsdsRequest, Problem> {
        Ok(CsdsRequest {
            node_ids: self
                .node_matchers
                .iter()
                .map(|m| m.node_id.clone())
                .collect(),
        })
    }
}

impl Kind for CsdsRequest {
    fn describe(&self) -> String {
        format!(
            "csds request with node_matchers [{}]",
            self.node_ids.join(",")
        )
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        (!caps.csds_service).then_some("a CSDS service")
    }
}

impl Play for CsdsRequest {
    async fn play(&self, stage: &mut dyn Stage, _at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let request = ClientStatusRequest {
            node_matchers: self
                .node_ids
                .iter()
                .map(|id| NodeMatcher {
                    node_id: Some(StringMatcher {
                        match_pattern: Some(MatchPattern::Exact(id.clone())),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let node_matchers = self.node_ids.len();
        let reply = match stage.client().csds_request(request).await? {
            Ok(response) => CsdsReply {
                node_matchers,
                code: tonic::Code::Ok,
                message: String::new(),
                configs: response.config.len(),
            },
            Err(status) => CsdsReply {
                node_matchers,
                code: status.code,
                message: status.message,
                configs: 0,
            },
        };
        stage.record(Source::Csds, EventKind::CsdsReply(reply));
        Ok(())
    }
}

impl Generate for CsdsRequestSpec {
    /// A plain request, or one with a node matcher.
    fn generate(_palette: &Palette) -> Option<BoxedStrategy<Self>> {
        Some(
            proptest::option::of(Just("xds-conformance-client".to_string()))
                .prop_map(|node_id| CsdsRequestSpec {
                    node_matchers: node_id
                        .into_iter()
                        .map(|node_id| NodeMatcherSpec { node_id })
                        .collect(),
                })
                .boxed(),
        )
    }
}
