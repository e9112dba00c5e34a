//! `send_response`: exactly this DiscoveryResponse, now, on every open
//! SotW stream of a server.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::event::ServerEvent;
use xds_fake_server::{ScriptedResourceError, ScriptedResponse, ServedResource};
use xds_vocabulary::ResourceType;
use xds_vocabulary::codec::RESOURCE_WRAPPER_TYPE_URL;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned, parse_resource_type};
use crate::resource::file::{ResourceErrorSpec, ResourceSpec};
use crate::resource::{resource_errors, resource_list};
use crate::timeline::{EventKind, Source, Timeline};

/// The client feature that lets a server send SotW entries wrapped in
/// `envoy.service.discovery.v3.Resource`, as gRPC's clients claim it;
/// api/xds_protocol.rst ("SotW TTL") spells it as the second.
const RESOURCE_IN_SOTW: [&str; 2] = [
    "xds.config.resource-in-sotw",
    "xds.config.supports-resource-in-sotw",
];

/// Whether the latest node the client sent `server` claims
/// [`RESOURCE_IN_SOTW`] (a stream's first request carries the node).
fn claims_resource_in_sotw(timeline: &Timeline, server: &str) -> bool {
    let mut claims = false;
    timeline.find_from(0, |_, event| {
        if matches!(&event.source, Source::Server(name) if name == server)
            && let EventKind::Server(recorded) = &event.kind
            && let ServerEvent::RequestReceived { request, .. } = recorded.as_ref()
            && let Some(node) = &request.node
        {
            claims = node
                .client_features
                .iter()
                .any(|f| RESOURCE_IN_SOTW.contains(&f.as_str()));
        }
        false
    });
    claims
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendResponseSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    pub resource_type: Spanned<String>,
    /// version_info (default: the server's current version of the type).
    pub version: Option<String>,
    /// nonce (default: the server's next nonce).
    pub nonce: Option<String>,
    /// Exactly these entries, in this order: a subset, extras, duplicates,
    /// invalid or wrapped ones, or none.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub resources: Vec<Spanned<ResourceSpec>>,
    /// Per-resource errors the server reports (xRFC TP3 `resource_errors`,
    /// read by gRFC A88 clients), after the resources.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub resource_errors: Vec<ResourceErrorSpec>,
}

#[derive(Clone, Debug)]
pub struct SendResponse {
    pub server: String,
    pub resource_type: ResourceType,
    pub version: Option<String>,
    pub nonce: Option<String>,
    pub resources: Vec<ServedResource>,
    pub resource_errors: Vec<ScriptedResourceError>,
}

impl Compile for SendResponseSpec {
    type Step = SendResponse;

    fn compile(&self, script: &mut Script<'_>) -> Result<SendResponse, Problem> {
        Ok(SendResponse {
            server: script.server(self.server.as_ref())?,
            resource_type: parse_resource_type(&self.resource_type)?,
            version: self.version.clone(),
            nonce: self.nonce.clone(),
            // Duplicates allowed: they test how clients cope.
            resources: resource_list(&self.resources, true, script.checker().backends())?,
            resource_errors: resource_errors(&self.resource_errors)?,
        })
    }
}

impl Kind for SendResponse {
    fn describe(&self) -> String {
        format!("{}: send {} response", self.server, self.resource_type)
    }
}

impl Play for SendResponse {
    async fn play(&self, stage: &mut dyn Stage, at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let resources = stage.served(&self.resources)?;
        // A server sends wrappers in SotW only to a client that claims
        // them: sent to one that does not, the run would hold the client
        // to what no server does, so the rule does not bind it.
        if resources
            .iter()
            .any(|r| r.entry.type_url == RESOURCE_WRAPPER_TYPE_URL)
            && !claims_resource_in_sotw(&stage.timeline(), &self.server)
        {
            return Err(StepError::NotApplicable(format!(
                "the client does not claim {} in its node, so no server sends it \
                 Resource wrappers in SotW (api/xds_protocol.rst, \"SotW TTL\": \"This \
                 feature is gated by the xds.config.supports-resource-in-sotw client \
                 feature\")",
                RESOURCE_IN_SOTW[0]
            )));
        }
        let resource_errors = self
            .resource_errors
            .iter()
            .map(|e| ScriptedResourceError {
                name: e.name.as_deref().map(|n| stage.resource_name(n)),
                ..e.clone()
            })
            .collect();
        let sent = stage.server(&self.server)?.send_response(ScriptedResponse {
            type_url: self.resource_type.type_url().to_string(),
            version_info: self.version.clone(),
            nonce: self.nonce.clone(),
            resources,
            resource_errors,
        });
        if sent == 0 {
            // Actions do not wait; a response needs a stream to go on.
            return Err(StepError::failed(format!(
                "{at}: send_response: {} has no open ADS stream; \
                 expect the client's request before sending",
                self.server
            )));
        }
        Ok(())
    }
}

impl Generate for SendResponseSpec {
    /// Some resources of one type (a subset, invalid ones, duplicates),
    /// sometimes with a server-reported error about one of its names.
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        let names = palette.names.clone();
        Some(
            palette
                .response()
                .prop_flat_map(move |(server, resource_type, resources)| {
                    let own = names.get(&resource_type).cloned().unwrap_or_default();
                    crate::resource::generate::resource_errors(own).prop_map(move |errors| {
                        SendResponseSpec {
                            server: server.clone(),
                            resource_type: Spanned::new(resource_type.short_name().to_string()),
                            version: None,
                            nonce: None,
                            resources: resources.clone(),
                            resource_errors: errors,
                        }
                    })
                })
                .boxed(),
        )
    }
}
