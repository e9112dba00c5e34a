//! The scenario file format, as serde and JSON Schema see it. Every struct
//! denies unknown keys; values that need checking later keep their source
//! position (`Spanned`). Doc comments here become the schema's
//! descriptions, which editors show while completing a file.
//!
//! The steps' file forms (`- watch: {...}`) are with the rest of each step
//! kind, in `crate::step`; the matchers' (`request: {...}` in an `expect`)
//! with each matcher kind, in `crate::matcher`; the resources' in
//! `crate::resource`.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::check::Spanned;
use crate::resource::file::ResourceSpec;
pub use crate::step::StepSpec;

/// A scenario: servers, an xDS client, and a linear script of steps.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Defaults to the file's path under `scenarios/`, without `.yaml`.
    /// At most 200 bytes, no control characters, `/`-separated parts
    /// that are neither empty nor `.` or `..`: it names report files.
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    /// What this scenario proves, and why the expected behaviour is right.
    pub description: String,
    /// The specs it tests: A27, A36, A46, A47, A53, A57, A65, A71, A88,
    /// delta.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub spec: Vec<Spanned<String>>,
    /// Which clients the rule this scenario checks binds, when not every
    /// xDS client: `{clients: grpc, because: "<the spec sentence>"}` (a
    /// gRFC rule of gRPC's XdsClient), or `proxy`. A run on a client the
    /// rule does not bind is n/a with `because`, not a failure.
    pub applies_to: Option<Spanned<AppliesToSpec>>,
    /// Free-form tags for selecting scenarios, e.g. `slow-on-real-time`
    /// (timers that take their full 15 s on a real client), which
    /// `--skip-tag` leaves out.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub tags: Vec<String>,
    /// The rules of the spec catalogue (`catalogue/`) this scenario
    /// checks, by id, e.g. `[A57-04, A57-05]`: it fails on a client that
    /// breaks any of them. The book's spec-coverage page lists them.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub covers: Vec<Spanned<String>>,
    /// Data-plane backends, by name: gRPC servers that answer with their
    /// name. Endpoints refer to them as `backend:NAME`.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub backends: IndexMap<String, BackendSpec>,
    /// The ADS protocol variants to play the scenario with: `[sotw]`
    /// (default), `[delta]`, or `[sotw, delta]`: then it is played once per
    /// protocol, and what the client shows (watcher events, dial updates,
    /// RPC results, channel and serving states, CSDS statuses) must be the
    /// same in both runs.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    #[schemars(schema_with = "crate::check::schema::protocols")]
    pub protocols: Vec<Spanned<String>>,
    /// Fake ADS servers, by name, in priority order.
    pub servers: Spanned<IndexMap<String, ServerSpec>>,
    /// The client's bootstrap; generated from `servers` when absent.
    pub bootstrap: Option<BootstrapSpec>,
    /// Client settings.
    pub client: Option<ClientSpec>,
    /// A KDS run: the client plays this Kuma zone, the first server (of
    /// the bootstrap) being its global, which serves Kuma resources
    /// (`kuma:` entries) on `GlobalToZoneSync` and asks for the zone's own
    /// on `ZoneToGlobalSync`.
    pub zone: Option<Spanned<ZoneSpec>>,
    /// The script, played in order.
    pub steps: Vec<Spanned<StepSpec>>,
    /// Clients known to fail this scenario, by client name, with the reason
    /// (e.g. a gRFC they do not implement). Such a failure is reported as a
    /// known failure; a pass is an error until the entry is removed.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub known_failures: Spanned<IndexMap<String, String>>,
    /// Compare the timeline with its stored insta snapshot (default true).
    pub snapshot: Option<bool>,
    /// Real clients whose timeline for this scenario differs from run to
    /// run even normalised, by client name, with the reason: their runs
    /// are checked by the expectations only, not against a snapshot.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub no_snapshot_for: Spanned<IndexMap<String, String>>,
    /// How long a run may take, when the defaults (10m of scenario time,
    /// 5m of real time per run) are not enough; the command line's
    /// `--virtual-limit` / `--wall-limit` override both.
    pub limits: Option<LimitsSpec>,
}

/// Whom a scenario's rule binds (see `scenario::applicability`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppliesToSpec {
    /// `grpc` (gRPC clients), `proxy` (Envoy) or `any` (the default).
    #[schemars(schema_with = "super::applicability::clients_schema")]
    pub clients: Spanned<String>,
    /// Why the rule binds only those clients: the spec's words, quoted.
    #[serde(default)]
    pub because: String,
}

/// Time limits of one run.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// The scenario's own time (virtual on in-process runs): the most its
    /// waits and windows may add up to, e.g. `30m` (at most `24h`).
    pub virtual_time: Option<Spanned<String>>,
    /// Real time for one run, e.g. `10m` (at most `1h`).
    pub wall_time: Option<Spanned<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// `auto` (default): answers like a normal control plane. `scripted`:
    /// never answers by itself; only `send_response` steps send.
    #[schemars(schema_with = "super::load::server_modes")]
    #[serde(default)]
    pub mode: Option<Spanned<String>>,
    /// `server_features` of this server in the generated bootstrap, e.g.
    /// `ignore_resource_deletion`.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub server_features: Vec<String>,
    /// The protocol the client speaks to this server whatever the run's
    /// protocol: `sotw` or `delta` (for lists mixing both). In the
    /// generated bootstrap a delta server has `"api_type": "DELTA_GRPC"`.
    #[schemars(schema_with = "crate::check::schema::protocol")]
    #[serde(default)]
    pub protocol: Option<Spanned<String>>,
    /// Resources the server holds at the start.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub resources: Vec<Spanned<ResourceSpec>>,
    /// gRPC's MAX_CONNECTION_AGE, e.g. `30s`: each connection gets an
    /// HTTP/2 GOAWAY at that age; streams still open are cut
    /// `max_connection_age_grace` later (default 1s).
    pub max_connection_age: Option<Spanned<String>>,
    /// How long streams may stay open after `max_connection_age`'s GOAWAY (default 1s).
    pub max_connection_age_grace: Option<Spanned<String>>,
    /// TLS on the channel to this server (gRFC A65). The server serves TLS
    /// with certificates made for the run (valid for the server's name,
    /// `localhost` and `127.0.0.1`), and the generated bootstrap gives the
    /// client `channel_creds` of type `tls` naming the run's CA (and its
    /// own certificate for mTLS). `tls: {}`: a server certificate the
    /// client trusts, no client certificate. Needs a generated bootstrap.
    pub tls: Option<Spanned<TlsSpec>>,
}

/// Both sides of a TLS channel: what the server presents and asks for,
/// and what the client's bootstrap gives it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// `trusted` (default): signed by the CA of the client's
    /// `ca_certificate_file`. `untrusted`: signed by a CA the client does
    /// not know, so the client must refuse the server. `wrong_host`:
    /// signed by the client's CA but valid only for another host name, so
    /// the client must refuse it too.
    #[schemars(schema_with = "super::load::server_certificates")]
    #[serde(default)]
    pub server_certificate: Option<Spanned<String>>,
    /// The certificate the client's bootstrap gives it to present
    /// (`certificate_file`, `private_key_file`): `none` (default),
    /// `trusted` (signed by the CA the server verifies clients with) or
    /// `untrusted` (signed by another CA, so the server must refuse it).
    #[schemars(schema_with = "super::load::client_certificates")]
    #[serde(default)]
    pub client_certificate: Option<Spanned<String>>,
    /// Whether the server asks clients for a certificate: `none`,
    /// `optional` (verified when presented) or `required` (mTLS: a client
    /// without a certificate the server trusts is refused). Default:
    /// `required` when the client has a certificate, else `none`.
    #[schemars(schema_with = "super::load::client_auths")]
    #[serde(default)]
    pub client_auth: Option<Spanned<String>>,
}

/// A data-plane backend (no settings yet).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackendSpec {}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BootstrapSpec {
    /// Top-level `xds_servers`, by server name, in priority order
    /// (default: every server, in declaration order).
    pub servers: Option<Vec<Spanned<String>>>,
    /// The bootstrap's node: id, cluster, locality.
    pub node: Option<NodeSpec>,
    /// gRFC A47 authorities.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub authorities: IndexMap<String, AuthoritySpec>,
    /// gRFC A47: the Listener name template for targets without an authority (default `%s`).
    pub client_default_listener_resource_name_template: Option<String>,
    /// The Listener an xDS-enabled server on `%s` (`ip:port`) watches
    /// (gRFC A36), e.g. `grpc/server?xds.resource.listening_address=%s`.
    pub server_listener_resource_name_template: Option<String>,
    /// A complete bootstrap JSON document instead of a generated one;
    /// `${server:NAME}` becomes that server's URI. Excludes the other keys.
    pub json: Option<Spanned<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// node.id.
    pub id: Option<String>,
    /// node.cluster.
    pub cluster: Option<String>,
    /// node.locality.region.
    pub region: Option<String>,
    /// node.locality.zone.
    pub zone: Option<String>,
    /// node.locality.sub_zone.
    pub sub_zone: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthoritySpec {
    /// The authority's servers, by name; empty = the top-level ones.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub servers: Vec<Spanned<String>>,
    /// gRFC A47: how a target's Listener name is made for this authority, e.g. `xdstp://a.example/envoy.config.listener.v3.Listener/%s`.
    pub client_listener_resource_name_template: Option<String>,
}

/// The Kuma zone a KDS run's client plays.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    /// The zone's name: its `client-id` header and `node.id` (default
    /// `zone-1`).
    pub name: Option<Spanned<String>>,
    /// Zone-origin resources it holds from the start (Dataplanes, ...),
    /// which it syncs to the global when asked.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub resources: Vec<Spanned<crate::resource::file::KumaSpec>>,
    /// How the zone is set up, as an operator configures kuma-cp.
    pub config: Option<ZoneConfigSpec>,
}

/// A zone's settings (kuma-cp's `multizone.zone.kds`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZoneConfigSpec {
    /// How often the zone recomputes what it sends its global, e.g. `5s`
    /// (kuma-cp's `KUMA_MULTIZONE_ZONE_KDS_REFRESH_INTERVAL`, 1 s by
    /// default): its own resources' changes go out on that tick, those
    /// made between two ticks in one response. Without it the reference
    /// zone sends each change at once, and kuma-cp ticks every second.
    pub refresh_interval: Option<Spanned<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Seed of the backoff jitter (default 1).
    pub seed: Option<u64>,
    /// A named client profile, e.g. `reference`.
    pub profile: Option<Spanned<String>>,
    /// Environment variables the client starts with, by name, e.g.
    /// `GRPC_EXPERIMENTAL_XDS_FALLBACK: "false"` (gRFC A71). A client that
    /// cannot be given them (an in-process client that reads only the
    /// shared process environment) is not applicable.
    #[serde(default, skip_serializing_if = "crate::check::is_empty")]
    pub env: Spanned<IndexMap<String, String>>,
}
