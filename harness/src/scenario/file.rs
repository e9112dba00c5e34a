//! The scenario file format, as serde and JSON Schema see it. Every struct
//! denies unknown keys; values that need checking later keep their source
//! position (`Spanned`). Doc comments here become the schema's
//! descriptions, which editors show while completing a file.
//!
//! The matchers' file forms (`request: {...}` in an `expect`) are with the
//! rest of each matcher kind, in `crate::matcher`.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

pub use crate::check::Spanned;
use crate::resource::file::{ResourceErrorSpec, ResourceSpec};

/// A scenario: servers, an xDS client, and a linear script of steps.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Defaults to the file's path under `scenarios/`, without `.yaml`.
    pub name: Option<String>,
    /// What this scenario proves, and why the expected behaviour is right.
    pub description: String,
    /// The specs it tests: A27, A36, A46, A47, A53, A57, A65, A71, A88,
    /// delta.
    #[serde(default)]
    pub spec: Vec<Spanned<String>>,
    /// Free-form tags for selecting scenarios, e.g. `slow-on-real-time`
    /// (timers that take their full 15 s on a real client), which
    /// `--skip-tag` leaves out.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Data-plane backends, by name: gRPC servers that answer with their
    /// name. Endpoints refer to them as `backend:NAME`.
    #[serde(default)]
    pub backends: IndexMap<String, BackendSpec>,
    /// The ADS protocol variants to play the scenario with: `[sotw]`
    /// (default), `[delta]`, or `[sotw, delta]`: then it is played once per
    /// protocol, and what the client shows (watcher events, dial updates,
    /// RPC results, channel and serving states, CSDS statuses) must be the
    /// same in both runs.
    #[serde(default)]
    pub protocols: Vec<Spanned<String>>,
    /// Fake ADS servers, by name, in priority order.
    pub servers: Spanned<IndexMap<String, ServerSpec>>,
    /// The client's bootstrap; generated from `servers` when absent.
    pub bootstrap: Option<BootstrapSpec>,
    /// Client settings.
    pub client: Option<ClientSpec>,
    /// The script, played in order.
    pub steps: Vec<Spanned<StepSpec>>,
    /// Clients known to fail this scenario, by client name, with the reason
    /// (e.g. a gRFC they do not implement). Such a failure is reported as a
    /// known failure; a pass is an error until the entry is removed.
    #[serde(default)]
    pub known_failures: Spanned<IndexMap<String, String>>,
    /// Compare the timeline with its stored insta snapshot (default true).
    pub snapshot: Option<bool>,
    /// Real clients whose timeline for this scenario differs from run to
    /// run even normalised, by client name, with the reason: their runs
    /// are checked by the expectations only, not against a snapshot.
    #[serde(default)]
    pub no_snapshot_for: Spanned<IndexMap<String, String>>,
    /// How long a run may take, when the defaults (10m of scenario time,
    /// 5m of real time per run) are not enough; the command line's
    /// `--virtual-limit` / `--wall-limit` override both.
    pub limits: Option<LimitsSpec>,
}

/// Time limits of one run.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// The scenario's own time (virtual on in-process runs): the most its
    /// waits and windows may add up to, e.g. `30m` (at most `24h`).
    pub virtual_time: Option<Spanned<String>>,
    /// Real time for one run, e.g. `10m` (at most `1h`).
    pub wall_time: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// `auto` (default): answers like a normal control plane. `scripted`:
    /// never answers by itself; only `send_response` steps send.
    pub mode: Option<Spanned<String>>,
    /// `server_features` of this server in the generated bootstrap, e.g.
    /// `ignore_resource_deletion`.
    #[serde(default)]
    pub server_features: Vec<String>,
    /// The protocol the client speaks to this server whatever the run's
    /// protocol: `sotw` or `delta` (for lists mixing both). In the
    /// generated bootstrap a delta server has `"api_type": "DELTA_GRPC"`.
    pub protocol: Option<Spanned<String>>,
    /// Resources the server holds at the start.
    #[serde(default)]
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
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// `trusted` (default): signed by the CA of the client's
    /// `ca_certificate_file`. `untrusted`: signed by a CA the client does
    /// not know, so the client must refuse the server. `wrong_host`:
    /// signed by the client's CA but valid only for another host name, so
    /// the client must refuse it too.
    pub server_certificate: Option<Spanned<String>>,
    /// The certificate the client's bootstrap gives it to present
    /// (`certificate_file`, `private_key_file`): `none` (default),
    /// `trusted` (signed by the CA the server verifies clients with) or
    /// `untrusted` (signed by another CA, so the server must refuse it).
    pub client_certificate: Option<Spanned<String>>,
    /// Whether the server asks clients for a certificate: `none`,
    /// `optional` (verified when presented) or `required` (mTLS: a client
    /// without a certificate the server trusts is refused). Default:
    /// `required` when the client has a certificate, else `none`.
    pub client_auth: Option<Spanned<String>>,
}

/// A data-plane backend (no settings yet).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackendSpec {}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BootstrapSpec {
    /// Top-level `xds_servers`, by server name, in priority order
    /// (default: every server, in declaration order).
    pub servers: Option<Vec<Spanned<String>>>,
    /// The bootstrap's node: id, cluster, locality.
    pub node: Option<NodeSpec>,
    /// gRFC A47 authorities.
    #[serde(default)]
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

#[derive(Debug, Default, Deserialize, JsonSchema)]
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

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthoritySpec {
    /// The authority's servers, by name; empty = the top-level ones.
    #[serde(default)]
    pub servers: Vec<Spanned<String>>,
    /// gRFC A47: how a target's Listener name is made for this authority, e.g. `xdstp://a.example/envoy.config.listener.v3.Listener/%s`.
    pub client_listener_resource_name_template: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Seed of the backoff jitter (default 1).
    pub seed: Option<u64>,
    /// A named client profile, e.g. `reference`.
    pub profile: Option<Spanned<String>>,
}

/// One step of the script. Each is a single-key map: `- watch: {...}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StepSpec {
    /// Start a watch on the client: `{type: CDS, name: c1}`.
    Watch(WatchSpec),
    /// Cancel a watch started earlier.
    CancelWatch(WatchSpec),
    /// From now on the most recent watcher of the resource keeps the read
    /// handle of each notification a response causes (gRPC's
    /// ReadDelayHandle): the ADS stream reads no further response until
    /// `release_reads`.
    HoldReads(WatchSpec),
    /// The watcher lets go of the reads it holds, and holds no more.
    ReleaseReads(WatchSpec),
    /// Arm the most recent watcher of `of`: inside its next callback it
    /// starts this watch (a client must not deadlock). Not cancellable.
    WatchInCallback(WatchInCallbackSpec),
    /// Resolve an `xds:` target as a gRPC channel would.
    Dial(Spanned<String>),
    /// Start an xDS-enabled server (gRFC A36) listening on `ip:port`: it
    /// watches the Listener the bootstrap's
    /// `server_listener_resource_name_template` names for that address.
    Serve(Spanned<String>),
    /// Send unary RPCs on the channel to a target (dialling it if needed);
    /// each result goes on the timeline.
    Rpc(RpcSpec),
    /// Send the client's CSDS service a request of the scenario's making
    /// (e.g. with `node_matchers`); its answer goes on the timeline, for
    /// `csds_reply` expectations.
    CsdsRequest(CsdsRequestSpec),
    /// Add or replace resources on a server (auto mode pushes them).
    SetResources(SetResourcesSpec),
    /// Delete resources from a server.
    RemoveResources(RemoveResourcesSpec),
    /// Send exactly this DiscoveryResponse now, on every open SotW stream.
    SendResponse(SendResponseSpec),
    /// Send exactly this DeltaDiscoveryResponse now, on every open delta
    /// stream.
    SendDeltaResponse(SendDeltaResponseSpec),
    /// Close the server's ADS streams with a gRPC status.
    CloseStream(CloseStreamSpec),
    /// The server stops accepting connections.
    RefuseConnections(ServerRef),
    /// The server accepts connections again.
    AcceptConnections(ServerRef),
    /// The server keeps its streams open but answers nothing by itself:
    /// for one type (`type: CDS`), or every type.
    Hang(HangSpec),
    /// End every hang: the server sends what it owes at once.
    Resume(ServerRef),
    /// From now on the server closes every ADS stream with a status once it
    /// has sent it `responses` responses (0: at its first request).
    CloseStreamsAfter(CloseStreamsAfterSpec),
    /// Stop closing streams (ends `close_streams_after`).
    KeepStreams(ServerRef),
    /// The server restarts: its streams end and its connections drop;
    /// `keep_resources: false` also empties its store (versions restart).
    Restart(RestartSpec),
    /// Connections are accepted but no bytes move on them (new or open):
    /// the client never hears the server's HTTP/2 preface, so its
    /// requests stay queued (not on a connected stream). Never released,
    /// it is a blackhole.
    HoldConnections(ServerRef),
    /// Held connections go on: the handshake completes, queued requests
    /// arrive.
    ReleaseConnections(ServerRef),
    /// Every response waits this long before it goes out (`{by: 2s}`;
    /// `0s` ends it).
    DelayResponses(DelayResponsesSpec),
    /// The next `count` responses (of `type`, or any) are lost on their way:
    /// the server counts them as sent, the client never gets them.
    DropResponses(DropResponsesSpec),
    /// Let virtual time pass: `15s`, `250ms`, `1.5s`, `2m`.
    Wait(Spanned<String>),
    /// An event must happen (after the last action or match).
    Expect(ExpectSpec),
    /// No such event may happen for `for`.
    ExpectNone(ExpectNoneSpec),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchInCallbackSpec {
    /// LDS, RDS, CDS or EDS: the watch to start.
    #[serde(rename = "type")]
    pub resource_type: Spanned<String>,
    /// Resource name of the watch to start.
    pub name: String,
    /// The watched resource whose watcher starts it from its callback.
    pub of: WatchSpec,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsdsRequestSpec {
    /// The request's `node_matchers`: each matches a node by its id,
    /// exactly (a control plane's filter; a client has one node).
    #[serde(default)]
    pub node_matchers: Vec<NodeMatcherSpec>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeMatcherSpec {
    /// The node id to match exactly.
    pub node_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RpcSpec {
    /// `xds:///svc`.
    pub target: Spanned<String>,
    /// How many RPCs, one after the other (default 1).
    pub count: Option<u32>,
    /// Deadline of each RPC (default 1s).
    pub timeout: Option<Spanned<String>>,
    /// Wait while the channel is failing instead of failing fast.
    pub wait_for_ready: Option<bool>,
    /// Full method path (default the backends' `/xds_conformance.Backend/Who`).
    pub method: Option<String>,
    /// Repeat the RPC (10 ms apart, for at most 2 s) until one ends with
    /// this status code: a real client applies a config some time after
    /// it ACKs it, so the first RPC after an ACK may still see the old
    /// one. RPCs before the matching one are marked `(settling)`.
    pub until: Option<Spanned<String>>,
    /// Like `until`, but until an RPC succeeds on this backend: waits for
    /// traffic to move (a new route, weight or endpoint) rather than
    /// hoping the client was quick.
    pub until_backend: Option<Spanned<String>>,
    /// Start the RPCs and go on at once: each result goes on the timeline
    /// when it comes, so a later step can release a waiting RPC (e.g. a
    /// `wait_for_ready` one sent while the channel fails). Not with
    /// `until`.
    pub background: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchSpec {
    /// LDS, RDS, CDS or EDS (or a type URL).
    #[serde(rename = "type")]
    pub resource_type: Spanned<String>,
    /// Resource name.
    pub name: String,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerRef {
    /// Server name; may be left out when there is only one.
    pub server: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetResourcesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// version_info of the change (default: the type's next number).
    pub version: Option<String>,
    /// The resources to add or replace (others of their types stay).
    pub resources: Vec<Spanned<ResourceSpec>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveResourcesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    pub resource_type: Spanned<String>,
    /// Names of the resources to remove.
    pub names: Vec<String>,
    /// The type's version after the change (default: the next number).
    pub version: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendResponseSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    pub resource_type: Spanned<String>,
    /// version_info (default: the server's current version of the type).
    pub version: Option<String>,
    /// nonce (default: the server's next nonce).
    pub nonce: Option<String>,
    /// Exactly these entries, in this order: a subset, extras, duplicates,
    /// invalid or wrapped ones, or none.
    #[serde(default)]
    pub resources: Vec<Spanned<ResourceSpec>>,
    /// Per-resource errors the server reports (xRFC TP3 `resource_errors`,
    /// read by gRFC A88 clients), after the resources.
    #[serde(default)]
    pub resource_errors: Vec<ResourceErrorSpec>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendDeltaResponseSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Resource type: LDS, RDS, CDS or EDS.
    #[serde(rename = "type")]
    pub resource_type: Spanned<String>,
    /// system_version_info (default: the server's current version of the
    /// type).
    pub system_version: Option<String>,
    /// nonce (default: the server's next nonce).
    pub nonce: Option<String>,
    /// Exactly these resources, in this order: a subset, extras,
    /// duplicates, invalid ones, or none.
    #[serde(default)]
    pub resources: Vec<Spanned<ResourceSpec>>,
    /// Resource name -> its version (default: the server's version of the
    /// resource, else the system version).
    #[serde(default)]
    pub versions: IndexMap<String, String>,
    /// Resource name -> its TTL, e.g. `30s`.
    #[serde(default)]
    pub ttl: IndexMap<String, Spanned<String>>,
    /// Names sent as a `Resource` with a version but no body (a TTL
    /// heartbeat, or nothing a client can use), after `resources`.
    #[serde(default)]
    pub no_body: Vec<String>,
    /// removed_resources, as given (names never sent, duplicates allowed).
    #[serde(default)]
    pub removed: Vec<String>,
    /// Per-resource errors the server reports (xRFC TP3 `resource_errors`).
    #[serde(default)]
    pub resource_errors: Vec<ResourceErrorSpec>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseStreamSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// gRPC status code name (default UNAVAILABLE).
    pub code: Option<Spanned<String>>,
    /// The status message sent with the close.
    pub message: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HangSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// LDS, RDS, CDS or EDS (default: every type).
    #[serde(rename = "type")]
    pub resource_type: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelayResponsesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// e.g. `2s`, `250ms`.
    pub by: Spanned<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropResponsesSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// How many (default 1).
    pub count: Option<u32>,
    /// LDS, RDS, CDS or EDS (default: any type).
    #[serde(rename = "type")]
    pub resource_type: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestartSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Keep the store (default true).
    pub keep_resources: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseStreamsAfterSpec {
    /// Which server (default: the only one).
    pub server: Option<Spanned<String>>,
    /// Responses a stream gets before it is closed (0: none).
    pub responses: u32,
    /// gRPC status code name (default UNAVAILABLE).
    pub code: Option<Spanned<String>>,
    /// The status message sent with each close.
    pub message: Option<String>,
}

// The three forms that take one matcher; their matcher keys (`request`,
// `watcher`, ...) come from the list of kinds in `crate::matcher`.

crate::matcher::with_matcher_keys! {
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ExpectSpec {
        /// Alternatives, any of which meets the expectation; one with a
        /// `divergence` note marks the run as a divergence between clients.
        pub any_of: Option<Vec<AlternativeSpec>>,
        /// Several events, each after the one before, all in the window:
        /// e.g. the cached value, then the ambient error.
        pub in_order: Option<Vec<OrderedSpec>>,
        /// At most this long after the step starts (default 1s).
        pub within: Option<Spanned<String>>,
        /// Exactly at this virtual time since the start, e.g. `15s`.
        pub at: Option<Spanned<String>>,
    }
}

crate::matcher::with_matcher_keys! {
    /// One alternative of `any_of`: one matcher, and the note that makes it
    /// a recorded divergence (e.g. "gRPC C-core: NACK carries the new version").
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct AlternativeSpec {
        /// Why this alternative is allowed, and whose behaviour it is.
        pub divergence: Option<String>,
        /// `true` instead of a matcher: nothing at all happening by the end
        /// of the window is allowed too (the step then waits the whole
        /// window).
        pub nothing: Option<bool>,
    }
}

crate::matcher::with_matcher_keys! {
    /// One event of `in_order`: one matcher.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct OrderedSpec {}
}

crate::matcher::with_matcher_keys! {
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ExpectNoneSpec {
        /// How long nothing may match, e.g. `15s`.
        #[serde(rename = "for")]
        pub duration: Spanned<String>,
    }
}
