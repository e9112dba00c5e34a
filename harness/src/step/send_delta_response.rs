//! `send_delta_response`: exactly this DeltaDiscoveryResponse, now, on
//! every open delta stream of a server.

use std::collections::BTreeMap;
use std::time::Duration;

use indexmap::IndexMap;
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xds_fake_server::{
    ScriptedDeltaResource, ScriptedDeltaResponse, ScriptedResourceError, ServedResource,
};
use xds_vocabulary::ResourceType;

use super::{Compile, Generate, Kind, Palette, Play, Script, Stage, StepError};
use crate::check::{Location, Problem, Spanned, duration, parse_resource_type};
use crate::resource::file::{ResourceErrorSpec, ResourceSpec};
use crate::resource::{resource_errors, resource_list};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendDeltaResponseSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::check::schema::resource_type")]
    pub resource_type: Spanned<String>,
    /// system_version_info (default: the server's current version of the
    /// type).
    pub system_version: Option<String>,
    /// nonce (default: the server's next nonce).
    pub nonce: Option<String>,
    /// Exactly these resources, in this order: a subset, extras,
    /// duplicates, invalid ones, or none.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub resources: Vec<Spanned<ResourceSpec>>,
    /// Resource name -> its version (default: the server's version of the
    /// resource, else the system version).
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub versions: IndexMap<String, String>,
    /// Resource name -> its TTL, e.g. `30s`.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub ttl: IndexMap<String, Spanned<String>>,
    /// Names sent as a `Resource` with a version but no body (a TTL
    /// heartbeat, or nothing a client can use), after `resources`.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub no_body: Vec<String>,
    /// removed_resources, as given (names never sent, duplicates allowed).
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub removed: Vec<String>,
    /// Per-resource errors the server reports (xRFC TP3 `resource_errors`).
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub resource_errors: Vec<ResourceErrorSpec>,
}

#[derive(Clone, Debug)]
pub struct SendDeltaResponse {
    pub server: String,
    pub resource_type: ResourceType,
    pub system_version: Option<String>,
    pub nonce: Option<String>,
    pub resources: Vec<ServedResource>,
    /// Resource name -> version (default: the server's).
    pub versions: BTreeMap<String, String>,
    pub ttl: BTreeMap<String, Duration>,
    /// Names sent without a body, after `resources`.
    pub no_body: Vec<String>,
    pub removed: Vec<String>,
    pub resource_errors: Vec<ScriptedResourceError>,
}

impl Compile for SendDeltaResponseSpec {
    type Step = SendDeltaResponse;

    fn compile(&self, script: &mut Script<'_>) -> Result<SendDeltaResponse, Problem> {
        let mut ttl = BTreeMap::new();
        for (name, t) in &self.ttl {
            ttl.insert(name.clone(), duration(t, "ttl")?);
        }
        Ok(SendDeltaResponse {
            server: script.server(self.server.as_ref())?,
            resource_type: parse_resource_type(&self.resource_type)?,
            system_version: self.system_version.clone(),
            nonce: self.nonce.clone(),
            // Duplicates allowed: they test how clients cope.
            resources: resource_list(&self.resources, true, script.checker().backends())?,
            versions: self.versions.clone().into_iter().collect(),
            ttl,
            no_body: self.no_body.clone(),
            removed: self.removed.clone(),
            resource_errors: resource_errors(&self.resource_errors)?,
        })
    }
}

impl Kind for SendDeltaResponse {
    fn describe(&self) -> String {
        format!(
            "{}: send {} delta response",
            self.server, self.resource_type
        )
    }
}

impl Play for SendDeltaResponse {
    async fn play(&self, stage: &mut dyn Stage, at: &Location) -> Result<(), StepError> {
        stage.act(self.describe());
        let resources = stage.served(&self.resources)?;
        // Names as the server knows them (over TCP a server Listener's
        // name embeds its real listening address).
        let name = |n: &String| stage.resource_name(n);
        let versions: BTreeMap<String, String> = self
            .versions
            .iter()
            .map(|(k, v)| (name(k), v.clone()))
            .collect();
        let ttl: BTreeMap<String, Duration> = self.ttl.iter().map(|(k, v)| (name(k), *v)).collect();
        let mut entries: Vec<ScriptedDeltaResource> = resources
            .into_iter()
            .map(ScriptedDeltaResource::from_served)
            .collect();
        entries.extend(self.no_body.iter().map(|n| ScriptedDeltaResource {
            name: name(n),
            version: None,
            entry: None,
            ttl: None,
        }));
        for entry in &mut entries {
            entry.version = versions.get(&entry.name).cloned();
            entry.ttl = ttl.get(&entry.name).copied();
        }
        let response = ScriptedDeltaResponse {
            type_url: self.resource_type.type_url().to_string(),
            system_version_info: self.system_version.clone(),
            nonce: self.nonce.clone(),
            resources: entries,
            removed: self.removed.iter().map(name).collect(),
            resource_errors: self
                .resource_errors
                .iter()
                .map(|e| ScriptedResourceError {
                    name: e.name.as_ref().map(name),
                    ..e.clone()
                })
                .collect(),
        };
        let sent = stage.server(&self.server)?.send_delta_response(response);
        if sent == 0 {
            return Err(StepError::failed(format!(
                "{at}: send_delta_response: {} has no open delta ADS stream; \
                 expect the client's request before sending",
                self.server
            )));
        }
        Ok(())
    }
}

impl Generate for SendDeltaResponseSpec {
    /// Some resources of one type and some names removed.
    fn generate(palette: &Palette) -> Option<BoxedStrategy<Self>> {
        let palette = palette.clone();
        Some(
            palette
                .response()
                .prop_flat_map(move |(server, resource_type, resources)| {
                    palette
                        .names_of(resource_type)
                        .prop_map(move |removed| SendDeltaResponseSpec {
                            server: server.clone(),
                            resource_type: Spanned::new(resource_type.short_name().to_string()),
                            resources: resources.clone(),
                            removed,
                            ..SendDeltaResponseSpec::default()
                        })
                })
                .boxed(),
        )
    }
}
