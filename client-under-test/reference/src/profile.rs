//! Behaviour choices where gRPC implementations legitimately differ, or
//! where a later gRFC changes semantics behind an opt-in.

use std::time::Duration;

use crate::backoff::BackoffConfig;
use crate::resource::ValidationRule;

/// What the client does after an ADS stream that had received a response
/// closes. Both reset the backoff (gRFC A57).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfterGoodStream {
    /// Wait one (jittered) initial backoff before the next attempt, as
    /// C-core's `RetryableCall::OnCallFinishedLocked` does: it avoids a
    /// tight loop against a server that accepts and closes streams.
    InitialBackoff,
    /// Start the next attempt at once, as grpc-go's `backoff.RunF` does on
    /// `ErrResetBackoff`.
    Immediately,
}

/// How deletions and does-not-exist are surfaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataErrorHandling {
    /// gRFC A53: a deletion is honoured unless the server has the
    /// `ignore_resource_deletion` feature.
    A53,
    /// gRFC A88: deletions of cached resources are ignored by default and
    /// surfaced as an ambient NOT_FOUND; `fail_on_data_errors` restores
    /// A53; `resource_timer_is_transient_error` makes the timer 30 s and a
    /// transient error.
    A88,
}

crate::defect::defect_switches! {
/// Deliberate violations of the gRFCs, off in every real profile. They
/// exist to prove that the scenarios catch a client that breaks a rule
/// (the harness's `broken_clients` tests): a check that cannot fail is
/// worth nothing. Each is named in [`crate::defect`]: a field's doc
/// comment is its defect's text in the book.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Defects {
    /// Start does-not-exist timers when a request is handed to the
    /// transport, connected or not (A57: only on a connected stream).
    pub timer_while_connecting: bool,
    /// Count a subscription as sent once it is queued on a READY channel,
    /// though its stream waits unsent for the server to admit it (A57 lets
    /// a client go by the channel's READY "if that is not feasible", as
    /// "less appropriate" than "some indication from the stream that it
    /// is being sent"): a divergence, not a failure.
    pub timer_on_channel_ready: bool,
    /// Start does-not-exist timers on a new stream for cached resources
    /// too, and let them fire on the cached value (A57: "only if the
    /// resource is not already cached").
    pub timers_for_cached: bool,
    /// One does-not-exist timer per resource, started at its first watch
    /// and blind to streams and connections (A57: per stream, only while
    /// connected).
    pub timer_from_watch: bool,
    /// Tell watchers nothing when a stream fails before any response (A57:
    /// a connectivity error for every watcher).
    pub silent_stream_failures: bool,
    /// Report a stream that ends after a response as a connectivity error
    /// too (A57: it is normal operation, e.g. a max connection age).
    pub error_after_good_stream: bool,
    /// Never reset the backoff, even after a stream that got a response.
    pub backoff_never_resets: bool,
    /// A connectivity error reaches only the watchers of one resource type
    /// (the first the authority holds), not every watcher subscribed on
    /// the failed stream or channel (A57: "all watchers").
    pub connectivity_errors_reach_one_type: bool,
    /// A failed stream or connection is told to the watchers but not
    /// logged (A57: "It should log the error").
    pub connectivity_errors_unlogged: bool,
    /// An ignored deletion writes no WARNING (A53: a WARNING, or ERROR,
    /// the first time the bit is set).
    pub ignored_deletion_unlogged: bool,
    /// The end of an ignored deletion writes no INFO, neither when the
    /// resource comes back nor when it is unsubscribed (A53: INFO both
    /// times).
    pub ignored_deletion_end_unlogged: bool,
    /// A resource that comes back after an ignored deletion keeps the bit
    /// set (its INFO is still written): a second deletion is not warned of
    /// (A53: the INFO "unset\[s\] the bit").
    pub ignored_deletion_never_clears: bool,
    /// The ADS stream's backoff does not grow: every retry waits the
    /// initial delay (A57: exponential backoff, as gRPC's connection
    /// backoff, growing by 1.6 up to 120 s).
    pub backoff_constant: bool,
    /// Never fall back to a lower-priority server (A71: with an uncached
    /// resource watched, a connectivity failure connects to the next
    /// server of the bootstrap).
    pub no_fallback: bool,
    /// A resource NACKed before any value was accepted counts as cached:
    /// its watcher alone does not start fallback (A71 counts as cached
    /// only resources "successfully received and can be used" and those
    /// known not to exist; C-core and grpc-go do this).
    pub nacked_counts_as_cached: bool,
    /// Read every server of the bootstrap even with
    /// `GRPC_EXPERIMENTAL_XDS_FALLBACK=false` in the client's environment
    /// (A71: "only one xDS server will be read from the bootstrap file").
    pub fallback_env_ignored: bool,
    /// A response with an invalid resource is rejected whole: its valid
    /// resources are not used either (A46: "gRPC will still use all valid
    /// resources from the response").
    pub nack_drops_valid_resources: bool,
    /// A NACK names only the response's first invalid resource (A46: one
    /// NACK per response, for every resource it rejects).
    pub nack_names_first_only: bool,
    /// SotW: a response of any type that leaves a cached resource out
    /// deletes it, EDS and RDS too (A53: deletion "will affect only LDS
    /// and CDS"; only their responses carry every resource).
    pub sotw_absence_deletes_every_type: bool,
    /// The ADS stream's backoff has no cap (A57, gRPC's connection
    /// backoff: it stops growing at 120 s).
    pub backoff_uncapped: bool,
    /// With `ads_wait_for_ready`, the ADS call still fails with each
    /// connection that fails, and the next waits the stream's backoff,
    /// which grows (A57: wait_for_ready "prevents unnecessarily increasing
    /// the backoff delay after each stream failure").
    pub wait_for_ready_ignored: bool,
    /// A stream after the channel's first subscribes to nothing until a
    /// watch changes (A57: after a disconnect the XdsClient "will start a
    /// new ADS stream and immediately send the subscription requests").
    pub new_streams_resubscribe_late: bool,
    /// The does-not-exist timer is 30 s (A57: "a 15-second timeout").
    pub does_not_exist_timer_30s: bool,
    /// The does-not-exist timer is 14 s, short of A57's "15-second
    /// timeout": a resource sent 14.9 s after its request is declared
    /// missing first.
    pub does_not_exist_timer_14s: bool,
    /// A connectivity error tells watchers that the channel failed, not
    /// why (A57: the message "should include the reason for the
    /// connectivity failure").
    pub connectivity_error_without_reason: bool,
    /// Falling back drops the connection to the server that failed (A71:
    /// "does not close gRPC connections to the higher-priority servers").
    pub fallback_drops_the_failed_connection: bool,
    /// Back on a higher-priority server, the lower-priority one's stream
    /// closes but its connection stays open (A71: the client "will close
    /// connections to the lower-priority server(s)").
    pub fallback_connection_kept: bool,
    /// Each xDS-enabled server gets an XdsClient of its own (A71: they
    /// share the one keyed "#server").
    pub server_client_per_server: bool,
    /// A dialled channel whose resolver fails keeps the state it had,
    /// READY after a config (gRPC: the channel goes TRANSIENT_FAILURE,
    /// e.g. on a Listener's deletion, A53's background).
    pub resolver_errors_keep_the_channel_state: bool,
    /// No connect timeout: wait on a stalled handshake forever.
    pub no_connect_timeout: bool,
    /// Drop a cached LDS/CDS resource the server deleted, whatever the
    /// server's features and the profile say (A53: not with
    /// `ignore_resource_deletion`; A88: only with `fail_on_data_errors`).
    pub deletions_always_drop: bool,
    /// Fall back on any connectivity failure, even with everything cached
    /// (A71: only when a watched resource is not cached).
    pub fallback_while_cached: bool,
    /// Stay on a fallback server when a higher-priority one answers again
    /// (A71: its first response brings the client back to it).
    pub no_fall_forward: bool,
    /// Tell watchers of every server's failure, also while falling back
    /// (A71: only when every server has failed, with the last one's error).
    pub errors_from_every_server: bool,
    /// Ask a fallback server only for what is not cached (A71: for every
    /// watched resource).
    pub fallback_subscribes_only_uncached: bool,
    /// Send xdstp:// names to the top-level servers (A47: to their
    /// authority's servers).
    pub authorities_ignored: bool,
    /// One XdsClient for every channel target and xDS-enabled server
    /// (A71: one per target and one `#server`, each with its own CSDS
    /// client_scope).
    pub one_client_for_all_targets: bool,
    /// Delta: ignore `removed_resources` (a deletion is a deletion for
    /// every type; a removal of what was never received says it does not
    /// exist).
    pub delta_removals_ignored: bool,
    /// Send a stream's first request of a type even when it names nothing
    /// (its names went while it waited its turn): an empty first request
    /// is the wildcard, so the client subscribes to every resource of the
    /// type by accident.
    pub empty_first_request_is_sent: bool,
    /// Delta: claim nothing in `initial_resource_versions` on a new stream
    /// (it lists what the client holds, so only differences travel).
    pub delta_claims_nothing: bool,
    /// Delta: under a wildcard subscription, claim nothing the wildcard
    /// brought in a new stream's `initial_resource_versions` (the client
    /// claims every resource it holds; found by the chaos invariant
    /// `delta-claims-what-it-holds`).
    pub delta_wildcard_claims_nothing: bool,
    /// Delta: subscribe every name again in each request that changes the
    /// subscription (a request says only what changed).
    pub delta_restates_subscriptions: bool,
    /// Delta: hold the version of a resource the client rejected (a NACK
    /// advances no version).
    pub delta_nack_advances_versions: bool,
    /// Delta: send the last nonce with every request (only an ACK or NACK
    /// carries one).
    pub delta_nonce_on_every_request: bool,
    /// Delta: keep a server's versions of resources another server's
    /// response replaced, and claim them on that server's next stream
    /// (back on the primary after a fallback, its old version of the
    /// fallback's copy: the primary never resends it).
    pub delta_claims_replaced_copies: bool,
    /// Delta: forget a server's versions when its channel is released
    /// (back on the primary, the fallback's), though the client still
    /// holds that server's copies: the next stream to it claims none of
    /// them (found by the chaos invariant `delta-claims-what-it-holds`).
    pub delta_memory_dies_with_its_channel: bool,
    /// Delta: take a server's confirmation of a claim as confirming the
    /// copy held now, though another server's copy replaced the claimed
    /// one since the claim was written: the fallback's copy then counts
    /// as the primary's (found by the chaos invariant
    /// `delta-claims-what-it-holds`).
    pub delta_confirms_replaced_claims: bool,
    /// Take a wildcard watch (`*`) for a watch of a resource named `*`.
    pub wildcard_as_a_name: bool,
    /// A new wildcard watcher is not told of the resources of its type the
    /// client already holds (only of those that change after it started).
    pub wildcard_misses_cached: bool,
    /// A resource new to the client, arriving for a wildcard watch, is not
    /// told to the wildcard watchers (only resources some watch already
    /// named are).
    pub wildcard_misses_new: bool,
    /// A resource first watched by name while a wildcard watch of its type
    /// is on is not told to the wildcard watchers (only to its named
    /// watchers).
    pub wildcard_misses_named_first: bool,
    /// A held resource keeps its cached value when the first response of
    /// its type on a new stream carries another one (a client that reads a
    /// reconnect's first response as a replay of what it holds): the
    /// response is ACKed as if taken, and the watchers hear nothing. The
    /// server's value changed meanwhile, or another server's copy differs
    /// (A71: a fallback's data replaces what the client holds).
    pub new_stream_keeps_cached: bool,
    /// Tell watchers a resource again when a response re-sends it
    /// unchanged (C-core and grpc-go compare and tell only changes).
    pub renotifies_unchanged: bool,
    /// TLS: accept any server certificate (A65: it must chain to
    /// `ca_certificate_file` and be valid for the server's host).
    pub tls_accepts_any_server: bool,
    /// TLS: never present the configured client certificate (A65: with
    /// `certificate_file` and `private_key_file` the client does mTLS).
    pub tls_no_identity: bool,
    /// A new watcher of a cached resource with a pending data error hears
    /// the cached value only (A88: the value, then the error).
    pub new_watcher_misses_pending_error: bool,
    /// Call a watcher with what was queued for it before its cancel was
    /// handled, after the cancel returned (a cancelled watcher is never
    /// called again; found by the chaos invariant `silent-after-cancel`).
    pub callbacks_after_cancel: bool,
    /// Drop a cache entry as soon as its last watch is cancelled (C-core:
    /// only once the request that unsubscribes it goes out).
    pub cache_dropped_on_cancel: bool,
    /// CSDS as C-core before A88 filled it: an error state for NACKs only,
    /// the details without "invalid resource: ".
    pub csds_old_error_state: bool,
    /// CSDS shows a NACKed resource with no error state at all (gRFC A88:
    /// NACKED "The error will indicate the validation failure").
    pub csds_nack_without_error_state: bool,
    /// The node in every request of a stream (allowed: xds_protocol.rst
    /// guarantees it only in a stream's first; grpc-rust's xds-client
    /// 0.1.0-alpha.4 sends it every time).
    pub node_in_every_request: bool,
    /// A later request of a stream carries a node other than its first's
    /// (xds_protocol.rst: "The node identifier should always be identical
    /// if present more than once on the stream").
    pub node_changes_on_later_requests: bool,
    /// The node in the client's first request only, not in the first of
    /// each new stream (A27: every stream starts with it).
    pub node_on_first_stream_only: bool,
    /// The node claims no client features (gRPC clients claim
    /// `envoy.lb.does_not_support_overprovisioning` and
    /// `xds.config.resource-in-sotw`).
    pub claims_no_client_features: bool,
    /// An unchanged resource on a stream after a failure tells watchers
    /// nothing (A57: the connectivity error is over).
    pub ambient_error_never_cleared: bool,
    /// A valid resource equal to the cached one changes nothing, not even
    /// a NACK's failure: CSDS keeps NACKED (grpc-js 1.14.1's
    /// `parseResource` returns before it records the acceptance).
    pub unchanged_update_keeps_failure: bool,
    /// A server an authority names gets a channel of its own, even when
    /// the top level (or another authority) names the same server (A47:
    /// one channel per server).
    pub channel_per_authority: bool,
    /// An xdstp:// name keeps its context parameters in the order written
    /// (A47: sorted, so equivalent names are one).
    pub context_params_as_written: bool,
    /// CSDS fails before any target is dialled (gRPC answers an empty
    /// response: no XdsClient is no error).
    pub csds_fails_without_channels: bool,
    /// CSDS ClientConfigs without the client's node (gRPC fills it).
    pub csds_without_node: bool,
    /// CSDS fails as a whole while a watch names an authority the
    /// bootstrap lacks (grpc-java 1.85.1: that watch's subscriber has no
    /// metadata, and the dump throws), where gRFC A47 makes the unknown
    /// authority an error of that watch alone.
    pub csds_fails_with_an_unknown_authority: bool,
    /// Count every failed attempt as a server failure (C-core's
    /// server_failure counts a healthy server going failing).
    pub failures_counted_per_error: bool,
    /// Read on while a watcher holds a response's ReadDelayHandle (gRPC:
    /// the stream's next read waits until every handle is dropped).
    pub read_delays_ignored: bool,
    /// A watch started from inside a watcher's callback is lost (gRPC:
    /// it starts, and nothing deadlocks).
    pub callback_watches_lost: bool,
    /// A wait_for_ready RPC that saw the channel fail stays queued until
    /// its deadline, even once a config arrives (gRPC: it goes through).
    pub wait_for_ready_stuck_after_error: bool,
    /// A response of a type whose last watch is gone is dropped
    /// unanswered, neither ACKed nor NACKed (xds_protocol.rst: "The xDS
    /// client should ACK or NACK every DiscoveryResponse"; grpc-java
    /// 1.85.1 forgets the type with its last watch and ignores the
    /// response as one of an unknown type).
    pub unwatched_type_unanswered: bool,
    /// A dial reports no configuration while any watch it holds lacks a
    /// result, needed or not: a route the previous Listener named, that
    /// never arrived, holds back the configuration the current Listener
    /// leads to, complete as it is (gRFC A74: a configuration "once all
    /// necessary dependencies have been obtained"; grpc-java 1.85.1's
    /// `XdsDependencyManager.maybePublishConfig` waits on every watcher,
    /// and drops the unused ones only after it built a configuration).
    pub stale_watches_hold_the_config: bool,
    /// A CSDS request with `node_matchers` answered with no ClientConfig
    /// at all, as if none matched (gRPC answers INVALID_ARGUMENT, or, as
    /// C-core, ignores them).
    pub csds_node_matchers_match_nothing: bool,
    /// One validation rule of gRPC's resource parsers not enforced: what
    /// it rejects is accepted, what it ignores is used (or rejected). One
    /// field for all of them, so each rule a scenario checks can be broken
    /// on its own.
    pub broken_validation: Option<ValidationRule>,
    /// One rule of gRFC A88's handling of server-reported resource errors
    /// (xRFC TP3) not kept.
    pub broken_server_errors: Option<ServerErrorRule>,
    /// The KDS zone's rules ([`crate::kds`]), one per field.
    pub zone: ZoneDefects,
}
}

crate::defect::defect_switches! {
/// Deliberate violations of the rules a Kuma zone keeps on KDS
/// ([`crate::kds`]), one per rule, off in the reference: each exists so a
/// scenario can prove it catches a zone that breaks that rule. Each is
/// named in [`crate::defect`] as `zone_` and its field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneDefects {
    /// A type's first response on a stream deletes nothing (Kuma: it is a
    /// full sync; the global-origin resources it leaves out go).
    pub no_full_sync_deletion: bool,
    /// The full sync deletes the zone's own (zone-origin) resources of the
    /// type too (Kuma: only global-origin ones).
    pub full_sync_deletes_zone_origin: bool,
    /// A resource that breaks a validation rule is stored and the response
    /// ACKed (Kuma: not stored, NACKed).
    pub stores_invalid: bool,
    /// An undecodable resource, or a response of a type the zone does not
    /// consume, is NACKed and the connection kept (Kuma: no NACK, the
    /// whole connection ends).
    pub nack_on_undecodable: bool,
    /// Reconnect at once after a connection ends (Kuma: 5 s doubling to
    /// 1 min, ±5 s of jitter).
    pub no_reconnect_backoff: bool,
    /// ACKs carry no `response_nonce` (an ACK echoes the response's).
    pub ack_without_nonce: bool,
    /// A resource equal to the stored one (same labels and spec) is
    /// reported as stored again (Kuma: no change, no update).
    pub equal_spec_is_a_change: bool,
    /// `removed_resources` is ignored (Kuma deletes what it names).
    pub removals_ignored: bool,
    /// ZoneToGlobalSync: each change resends every zone-origin resource of
    /// the type (the MADR's point: only what changed travels).
    pub sends_every_zone_resource: bool,
    /// ZoneToGlobalSync: resources go without `kuma.io/origin: zone` and
    /// `kuma.io/zone: <zone>`.
    pub no_zone_labels: bool,
    /// No `client-id` header on the KDS RPCs (the global needs the zone's
    /// name).
    pub no_client_id_header: bool,
    /// ZoneToGlobalSync: after the global's NACK, resend the type's
    /// resources at once (Kuma: nothing until the next change).
    pub resends_after_nack: bool,
    /// A resource of a type zones may create, arriving without
    /// `kuma.io/origin: global`, is stored (Kuma: filtered out, the
    /// response still ACKed; `PrefilterBy`, KDS-FACTS 4.1).
    pub no_origin_prefilter: bool,
    /// For a type a zone cannot create (Mesh), the zone's own copy is kept
    /// over the global's: the global's is NACKed and the full sync spares
    /// it (Kuma: the global's wins, KDS-FACTS 4.2).
    pub mesh_kept_over_global: bool,
    /// A response of a registered type the zone never subscribed to ends
    /// the connection (Kuma: looked up in its registry, stored and ACKed,
    /// KDS-FACTS 4.7).
    pub unsubscribed_type_drops_the_connection: bool,
    /// A global resource whose key equals a zone-origin one, of a type
    /// zones create, replaces the zone's (the reference: NACKed, the
    /// zone's kept; Kuma 2.14.3 ends the connection in a loop, KDS-FACTS
    /// 4.1).
    pub global_overwrites_zone_origin: bool,
    /// New-style policy specs go unchecked: a MeshTimeout with a
    /// `targetRef.kind` it does not support, or without `to`, `from` or
    /// `rules`, is stored (Kuma: NACKed, KDS-FACTS 4.3).
    pub policy_specs_unchecked: bool,
    /// The zone never pings `GlobalKDSService/HealthCheck`, though it
    /// advertises `zone-ping-health` (Kuma's zone pings on each
    /// connection, `pkg/kds/mux/client.go:301-340`).
    pub no_health_pings: bool,
    /// The zone advertises neither `zone-ping-health` nor `hash-suffix`
    /// (Kuma 2.14 advertises both, KDS-FACTS 4.4).
    pub no_kuma_features: bool,
    /// ZoneToGlobalSync: names go as the user wrote them (Kuma: hash-suffixed,
    /// with `kuma.io/display-name`, KDS-FACTS 4.5).
    pub no_hash_suffix: bool,
    /// GlobalToZoneSync: a resource is stored under its
    /// `kuma.io/display-name` (the name before the global hash-suffixed
    /// it), not the name it came with, so a removal of that name misses it
    /// (Kuma stores the name as sent: "KDS Client doesn't need to know
    /// anything about hashes", MADR 029).
    pub stores_by_display_name: bool,
    /// ZoneToGlobalSync: `kuma.io/deletion-grace-period-started-at` goes to
    /// the global (Kuma drops it, KDS-FACTS 4.6).
    pub keeps_deletion_grace_label: bool,
    /// ZoneToGlobalSync: a resource labelled `kuma.io/kds-sync: disabled`
    /// is sent (Kuma keeps it from the global, KDS-FACTS 4.6).
    pub ignores_kds_sync_label: bool,
    /// ZoneToGlobalSync: an insight whose only change is a subscription's
    /// `generation` is sent again (Kuma zeroes the generation first, so
    /// nothing changed, KDS-FACTS 4.6).
    pub sends_insight_generation: bool,
    /// GlobalToZoneSync: a type's first request subscribes to no names
    /// (delta's implicit wildcard) instead of `*` (the MADR's flow, step
    /// 1: `resource_names_subscribe: "*"`).
    pub subscribes_without_wildcard: bool,
    /// GlobalToZoneSync: the zone subscribes to its first consumed type
    /// only (Kuma: one subscription per type it consumes from the
    /// global).
    pub subscribes_to_one_type: bool,
    /// ZoneToGlobalSync: the global's subscription to a type is not
    /// answered until the zone's resources of it change (Kuma: answered
    /// at once, with what the zone holds, empty or not).
    pub answers_only_changes: bool,
    /// The zone opens GlobalToZoneSync only, never ZoneToGlobalSync (the
    /// MADR: "2 separate RPCs for synchronization of resources").
    pub no_zone_to_global_sync: bool,
    /// GlobalToZoneSync: every response is read as the whole type, as a
    /// state-of-the-world client reads one, so a later response naming
    /// some resources deletes the others (the MADR: "we are going to use
    /// delta xDS since the beginning": after the first, a response
    /// carries changes).
    pub reads_state_of_the_world: bool,
    /// ZoneToGlobalSync: with a refresh interval, each change still goes
    /// to the global at once (Kuma: on the interval's next tick, with
    /// every other change made since the last; the MADR keeps that
    /// "configuration option that allows to specify how often it should
    /// refresh").
    pub ignores_refresh_interval: bool,
}
}

crate::defect::breakable_rules! {
/// The rules of gRFC A88 for errors a server reports per resource in a
/// response (xRFC TP3 `resource_errors`), each breakable on its own by
/// `Defects::broken_server_errors`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerErrorRule {
    /// They are read at all (broken: ignored, as before A88).
    Read,
    /// With a cached value the error is ambient (broken: always a
    /// resource error, as if nothing were cached).
    AmbientWhenCached,
    /// `fail_on_data_errors` drops the value for NOT_FOUND and
    /// PERMISSION_DENIED only (broken: for every code).
    DropOnlyForDataErrors,
    /// A SotW LDS/CDS response reporting an error for a resource does not
    /// delete it (broken: the resource counts as left out).
    NotADeletion,
    /// The error answers the subscription: the does-not-exist timer stops
    /// (broken: it keeps running).
    StopsTheTimer,
    /// A malformed one (no name, an OK status) is NACKed (broken: skipped).
    MalformedNacked,
    /// CSDS says RECEIVED_ERROR with the server's message (broken: NACKED).
    CsdsReceivedError,
}
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClientProfile {
    pub name: String,
    pub backoff: BackoffConfig,
    pub retry_after_good_stream: RetryAfterGoodStream,
    /// The does-not-exist timer (gRFC A57: 15 s).
    pub resource_request_timeout: Duration,
    /// The ADS call is made with wait_for_ready, as C-core's is
    /// (`xds_client.cc:733-734` at 1.85.0; gRFC A57: a client that learns
    /// of connectivity failures from its channel's state "should use
    /// wait_for_ready on the ADS stream"): a connection that fails or
    /// times out does not end the call; the channel reports the failure
    /// and connects again on gRPC's connection backoff, and the call goes
    /// out on the next connection, its own backoff untouched. Off (the
    /// default): the call fails with its connection and is retried on the
    /// stream's backoff, as grpc-go's and grpc-java's are.
    pub ads_wait_for_ready: bool,
    pub data_errors: DataErrorHandling,
    /// All off, except in tests of the scenarios themselves.
    pub defects: Defects,
}

impl Default for ClientProfile {
    /// The reference behaviour: gRPC C-core's.
    fn default() -> Self {
        ClientProfile {
            name: "reference".to_string(),
            backoff: BackoffConfig::default(),
            retry_after_good_stream: RetryAfterGoodStream::InitialBackoff,
            resource_request_timeout: Duration::from_secs(15),
            ads_wait_for_ready: false,
            data_errors: DataErrorHandling::A53,
            defects: Defects::default(),
        }
    }
}
