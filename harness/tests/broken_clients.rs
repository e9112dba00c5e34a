//! The scenarios catch clients that break the rules: the reference client
//! with one rule deliberately broken (`Defects`) must fail the scenario
//! that proves that rule, at the expectation that checks it. A scenario
//! that passes on a broken client proves nothing.

use rstest::rstest;
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::differential::run_variants;
use xds_conformance::scenario::load_file;
use xds_conformance::suite::manifest_dir;
use xds_conformance_reports::Verdict;
use xds_reference_client::{Defects, ServerErrorRule, ValidationRule};

fn defect(name: &str) -> Defects {
    let mut d = Defects::default();
    match name {
        "timer_while_connecting" => d.timer_while_connecting = true,
        "timer_from_watch" => d.timer_from_watch = true,
        "timer_on_channel_ready" => d.timer_on_channel_ready = true,
        "silent_stream_failures" => d.silent_stream_failures = true,
        "backoff_never_resets" => d.backoff_never_resets = true,
        "error_after_good_stream" => d.error_after_good_stream = true,
        "no_connect_timeout" => d.no_connect_timeout = true,
        "deletions_always_drop" => d.deletions_always_drop = true,
        "fallback_while_cached" => d.fallback_while_cached = true,
        "no_fall_forward" => d.no_fall_forward = true,
        "errors_from_every_server" => d.errors_from_every_server = true,
        "fallback_subscribes_only_uncached" => d.fallback_subscribes_only_uncached = true,
        "authorities_ignored" => d.authorities_ignored = true,
        "one_client_for_all_targets" => d.one_client_for_all_targets = true,
        "delta_removals_ignored" => d.delta_removals_ignored = true,
        "delta_claims_nothing" => d.delta_claims_nothing = true,
        "empty_first_request_is_sent" => d.empty_first_request_is_sent = true,
        "delta_wildcard_claims_nothing" => d.delta_wildcard_claims_nothing = true,
        "delta_restates_subscriptions" => d.delta_restates_subscriptions = true,
        "delta_nack_advances_versions" => d.delta_nack_advances_versions = true,
        "delta_nonce_on_every_request" => d.delta_nonce_on_every_request = true,
        "wildcard_as_a_name" => d.wildcard_as_a_name = true,
        "wildcard_misses_named_first" => d.wildcard_misses_named_first = true,
        "wildcard_misses_cached" => d.wildcard_misses_cached = true,
        "timers_for_cached" => d.timers_for_cached = true,
        "delta_claims_replaced_copies" => d.delta_claims_replaced_copies = true,
        "delta_memory_dies_with_its_channel" => d.delta_memory_dies_with_its_channel = true,
        "delta_confirms_replaced_claims" => d.delta_confirms_replaced_claims = true,
        "tls_accepts_any_server" => d.tls_accepts_any_server = true,
        "tls_no_identity" => d.tls_no_identity = true,
        "new_watcher_misses_pending_error" => d.new_watcher_misses_pending_error = true,
        "cache_dropped_on_cancel" => d.cache_dropped_on_cancel = true,
        "csds_old_error_state" => d.csds_old_error_state = true,
        "csds_nack_without_error_state" => d.csds_nack_without_error_state = true,
        "claims_no_client_features" => d.claims_no_client_features = true,
        "connectivity_errors_reach_one_type" => d.connectivity_errors_reach_one_type = true,
        "connectivity_errors_unlogged" => d.connectivity_errors_unlogged = true,
        "ignored_deletion_unlogged" => d.ignored_deletion_unlogged = true,
        "ignored_deletion_end_unlogged" => d.ignored_deletion_end_unlogged = true,
        "ignored_deletion_never_clears" => d.ignored_deletion_never_clears = true,
        "resolver_errors_keep_the_channel_state" => d.resolver_errors_keep_the_channel_state = true,
        "fallback_drops_the_failed_connection" => d.fallback_drops_the_failed_connection = true,
        "fallback_connection_kept" => d.fallback_connection_kept = true,
        "server_client_per_server" => d.server_client_per_server = true,
        "backoff_constant" => d.backoff_constant = true,
        "no_fallback" => d.no_fallback = true,
        "fallback_env_ignored" => d.fallback_env_ignored = true,
        "nack_drops_valid_resources" => d.nack_drops_valid_resources = true,
        "nack_names_first_only" => d.nack_names_first_only = true,
        "new_stream_keeps_cached" => d.new_stream_keeps_cached = true,
        "sotw_absence_deletes_every_type" => d.sotw_absence_deletes_every_type = true,
        "does_not_exist_timer_30s" => d.does_not_exist_timer_30s = true,
        "does_not_exist_timer_14s" => d.does_not_exist_timer_14s = true,
        "new_streams_resubscribe_late" => d.new_streams_resubscribe_late = true,
        "backoff_uncapped" => d.backoff_uncapped = true,
        "zone_subscribes_without_wildcard" => d.zone.subscribes_without_wildcard = true,
        "zone_subscribes_to_one_type" => d.zone.subscribes_to_one_type = true,
        "zone_answers_only_changes" => d.zone.answers_only_changes = true,
        "zone_no_zone_to_global_sync" => d.zone.no_zone_to_global_sync = true,
        "connectivity_error_without_reason" => d.connectivity_error_without_reason = true,
        "node_changes_on_later_requests" => d.node_changes_on_later_requests = true,
        "node_on_first_stream_only" => d.node_on_first_stream_only = true,
        "ambient_error_never_cleared" => d.ambient_error_never_cleared = true,
        "unchanged_update_keeps_failure" => d.unchanged_update_keeps_failure = true,
        "channel_per_authority" => d.channel_per_authority = true,
        "context_params_as_written" => d.context_params_as_written = true,
        "csds_fails_without_channels" => d.csds_fails_without_channels = true,
        "csds_without_node" => d.csds_without_node = true,
        "csds_fails_with_an_unknown_authority" => d.csds_fails_with_an_unknown_authority = true,
        "callback_watches_lost" => d.callback_watches_lost = true,
        "failures_counted_per_error" => d.failures_counted_per_error = true,
        "read_delays_ignored" => d.read_delays_ignored = true,
        "wait_for_ready_stuck_after_error" => d.wait_for_ready_stuck_after_error = true,
        "csds_node_matchers_match_nothing" => d.csds_node_matchers_match_nothing = true,
        "unwatched_type_unanswered" => d.unwatched_type_unanswered = true,
        "stale_watches_hold_the_config" => d.stale_watches_hold_the_config = true,
        "zone_no_full_sync_deletion" => d.zone.no_full_sync_deletion = true,
        "zone_full_sync_deletes_zone_origin" => d.zone.full_sync_deletes_zone_origin = true,
        "zone_stores_invalid" => d.zone.stores_invalid = true,
        "zone_nack_on_undecodable" => d.zone.nack_on_undecodable = true,
        "zone_no_reconnect_backoff" => d.zone.no_reconnect_backoff = true,
        "zone_ack_without_nonce" => d.zone.ack_without_nonce = true,
        "zone_equal_spec_is_a_change" => d.zone.equal_spec_is_a_change = true,
        "zone_removals_ignored" => d.zone.removals_ignored = true,
        "zone_sends_every_zone_resource" => d.zone.sends_every_zone_resource = true,
        "zone_no_zone_labels" => d.zone.no_zone_labels = true,
        "zone_no_client_id_header" => d.zone.no_client_id_header = true,
        "zone_resends_after_nack" => d.zone.resends_after_nack = true,
        "zone_no_origin_prefilter" => d.zone.no_origin_prefilter = true,
        "zone_mesh_kept_over_global" => d.zone.zone_mesh_kept_over_global = true,
        "zone_unsubscribed_type_drops_the_connection" => {
            d.zone.unsubscribed_type_drops_the_connection = true
        }
        "zone_global_overwrites_zone_origin" => d.zone.global_overwrites_zone_origin = true,
        "zone_policy_specs_unchecked" => d.zone.policy_specs_unchecked = true,
        "zone_no_kuma_features" => d.zone.no_kuma_features = true,
        "zone_no_hash_suffix" => d.zone.no_hash_suffix = true,
        "zone_stores_by_display_name" => d.zone.stores_by_display_name = true,
        "zone_keeps_deletion_grace_label" => d.zone.keeps_deletion_grace_label = true,
        "zone_ignores_kds_sync_label" => d.zone.ignores_kds_sync_label = true,
        "zone_sends_insight_generation" => d.zone.sends_insight_generation = true,
        "zone_reads_state_of_the_world" => d.zone.reads_state_of_the_world = true,
        "zone_ignores_refresh_interval" => d.zone.ignores_refresh_interval = true,
        "nacked_counts_as_cached" => d.nacked_counts_as_cached = true,
        "wait_for_ready_ignored" => d.wait_for_ready_ignored = true,
        other => panic!("unknown defect {other}"),
    }
    d
}

#[rstest]
#[case::kds_full_sync(
    "zone_no_full_sync_deletion",
    "kds/first-response-of-a-new-stream-is-a-full-sync",
    ":42:5:"
)]
#[case::kds_full_sync_of_a_restarted_global(
    "zone_no_full_sync_deletion",
    "kds/global-restart-with-an-empty-store",
    ":28:5:"
)]
#[case::kds_full_sync_only_global_origin(
    "zone_full_sync_deletes_zone_origin",
    "kds/full-sync-deletes-only-global-origin",
    ":48:5:"
)]
#[case::kds_invalid_spec(
    "zone_stores_invalid",
    "kds/invalid-spec-is-nacked-valid-siblings-stored",
    ":21:5:"
)]
#[case::kds_undecodable(
    "zone_nack_on_undecodable",
    "kds/undecodable-resource-drops-the-connection",
    ":21:5:"
)]
#[case::kds_unknown_type(
    "zone_nack_on_undecodable",
    "kds/unknown-type-drops-the-connection",
    ":18:5:"
)]
#[case::kds_backoff("zone_no_reconnect_backoff", "kds/reconnect-backoff-grows", ":22:5:")]
#[case::kds_ack_nonce("zone_ack_without_nonce", "kds/ack-echoes-the-nonce", ":23:5:")]
#[case::kds_equal_spec("zone_equal_spec_is_a_change", "kds/equal-spec-is-no-update", ":28:5:")]
#[case::kds_equal_spec_after_reconnect(
    "zone_equal_spec_is_a_change",
    "kds/reconnect-after-cancelled",
    ":22:5:"
)]
#[case::kds_removal("zone_removals_ignored", "kds/removal-by-name-and-mesh", ":27:5:")]
#[case::kds_removal_dotted(
    "zone_removals_ignored",
    "kds/a-resource-with-dots-in-its-name",
    ":18:5:"
)]
#[case::kds_partial_then_removed(
    "zone_removals_ignored",
    "kds/a-later-partial-response-deletes-nothing",
    ":43:5:"
)]
#[case::kds_only_changes(
    "zone_sends_every_zone_resource",
    "kds/zone-sends-only-changed-dataplanes",
    ":27:5:"
)]
#[case::kds_zone_labels(
    "zone_no_zone_labels",
    "kds/zone-resources-carry-the-zone-labels",
    ":19:5:"
)]
#[case::kds_own_zone_labels("zone_no_zone_labels", "kds/each-zone-sends-only-its-own", ":24:5:")]
#[case::kds_client_id(
    "zone_no_client_id_header",
    "kds/handshake-headers-and-node-metadata",
    ":19:5:"
)]
#[case::kds_nack_from_global("zone_resends_after_nack", "kds/nack-from-the-global", ":28:5:")]
#[case::kds_origin_prefilter(
    "zone_no_origin_prefilter",
    "kds/origin-prefilter-skips-what-is-not-the-globals",
    ":38:5:"
)]
#[case::kds_global_mesh_wins(
    "zone_mesh_kept_over_global",
    "kds/the-globals-mesh-wins-over-the-zones",
    ":22:5:"
)]
#[case::kds_registered_unsubscribed_type(
    "zone_unsubscribed_type_drops_the_connection",
    "kds/a-registered-type-never-subscribed-is-stored",
    ":28:5:"
)]
#[case::kds_name_clash(
    "zone_global_overwrites_zone_origin",
    "kds/a-clash-with-the-zones-own-is-nacked",
    ":34:5:"
)]
#[case::kds_policy_validation(
    "zone_policy_specs_unchecked",
    "kds/a-policy-kuma-rejects-is-nacked",
    ":22:5:"
)]
#[case::kds_features(
    "zone_no_kuma_features",
    "kds/zone-advertises-kumas-features",
    ":16:5:"
)]
#[case::kds_hash_suffix("zone_no_hash_suffix", "kds/zone-names-are-hash-suffixed", ":22:5:")]
#[case::kds_hash_suffixed_removal(
    "zone_no_hash_suffix",
    "kds/zone-sends-only-changed-dataplanes",
    ":30:5:"
)]
#[case::kds_global_names_stored_as_sent(
    "zone_stores_by_display_name",
    "kds/the-globals-names-are-stored-as-sent",
    ":21:5:"
)]
#[case::kds_deletion_grace_label(
    "zone_keeps_deletion_grace_label",
    "kds/zone-to-global-drops-the-deletion-grace-label",
    ":23:5:"
)]
#[case::kds_sync_disabled(
    "zone_ignores_kds_sync_label",
    "kds/kds-sync-disabled-stays-in-the-zone",
    ":20:5:"
)]
#[case::kds_insight_generation(
    "zone_sends_insight_generation",
    "kds/an-insight-generation-alone-is-no-change",
    ":25:5:"
)]
#[case::timer_while_held(
    "timer_while_connecting",
    "a57/requests-held-before-the-handshake-start-no-timer",
    ":21:5:"
)]
#[case::timer_while_refused(
    "timer_from_watch",
    "a57/does-not-exist-timer-needs-a-connected-stream",
    ":18:5:"
)]
#[case::timer_in_backoff(
    "timer_from_watch",
    "a57/watch-during-backoff-waits-for-the-stream",
    ":22:5:"
)]
#[case::timer_across_streams(
    "timer_from_watch",
    "a57/timer-cancelled-when-the-stream-fails",
    ":25:5:"
)]
#[case::silent_uncached(
    "silent_stream_failures",
    "a57/stream-closed-before-response-uncached",
    ":20:5:"
)]
#[case::silent_cached(
    "silent_stream_failures",
    "a57/stream-closed-before-response-cached",
    ":41:5:"
)]
#[case::error_after_response(
    "error_after_good_stream",
    "a57/stream-closed-after-response-is-not-an-error",
    ":30:5:"
)]
#[case::backoff("backoff_never_resets", "a57/backoff-growth-and-reset", ":35:5:")]
#[case::blackhole(
    "no_connect_timeout",
    "a57/blackhole-times-out-the-connection-attempt",
    ":23:5:"
)]
#[case::channel_backoff(
    "backoff_never_resets",
    "a57/channel-backoff-growth-and-reset",
    ":69:5:"
)]
#[case::channel_blackhole(
    "no_connect_timeout",
    "a57/channel-blackhole-times-out-the-connection-attempt",
    ":31:5:"
)]
#[case::a53_ignored_deletion(
    "deletions_always_drop",
    "a53/ignored-listener-deletion-keeps-the-value",
    ":24:5:"
)]
#[case::a88_kept_deletion(
    "deletions_always_drop",
    "a88/deletion-is-an-ambient-not-found",
    ":23:5:"
)]
#[case::a71_no_fallback_while_cached(
    "fallback_while_cached",
    "a71/no-fallback-while-everything-is-cached",
    ":24:5:"
)]
#[case::a71_channel_no_fallback_while_cached(
    "fallback_while_cached",
    "a71/channel-no-fallback-while-everything-is-cached",
    ":37:5:"
)]
#[case::a71_does_not_exist_is_cached(
    "fallback_while_cached",
    "a71/does-not-exist-counts-as-cached",
    ":27:5:"
)]
#[case::a71_fall_forward("no_fall_forward", "a71/primary-down-at-start-uses-fallback", ":53:5:")]
#[case::a71_three_tier("no_fall_forward", "a71/three-tier-promotion", ":45:5:")]
#[case::a71_channel_three_tier("no_fall_forward", "a71/channel-three-tier-promotion", ":44:5:")]
#[case::a71_errors_when_all_fail(
    "errors_from_every_server",
    "a71/errors-only-when-every-server-fails",
    ":23:5:"
)]
#[case::a71_error_of_server_in_use(
    "errors_from_every_server",
    "a71/ambient-error-from-the-server-in-use",
    ":28:5:"
)]
#[case::a71_subscribe_everything(
    "fallback_subscribes_only_uncached",
    "a71/new-watch-while-failing-triggers-fallback",
    ":36:5:"
)]
#[case::a71_config_tear(
    "fallback_subscribes_only_uncached",
    "a71/config-tear-mixes-servers",
    ":37:5:"
)]
#[case::a71_per_target(
    "one_client_for_all_targets",
    "a71/channel-per-target-clients-fall-back-independently",
    ":46:5:"
)]
#[case::a71_server_scope(
    "one_client_for_all_targets",
    "a71/server-scope-falls-back-independently",
    ":45:5:"
)]
#[case::a47_authority_servers(
    "authorities_ignored",
    "a47/xdstp-names-go-to-their-authority-servers",
    ":30:5:"
)]
#[case::a47_channel_authority(
    "authorities_ignored",
    "a47/channel-target-with-an-authority",
    ":26:5:"
)]
#[case::a47_fallback_per_authority("authorities_ignored", "a47/fallback-per-authority", ":32:5:")]
#[case::delta_removal_of_any_type(
    "delta_removals_ignored",
    "delta/deletion-of-any-type-is-honoured",
    ":22:5:"
)]
#[case::delta_removal_of_a_never_received_resource(
    "delta_removals_ignored",
    "delta/removal-of-a-never-received-resource-is-does-not-exist",
    ":21:5:"
)]
#[case::delta_differential(
    "delta_removals_ignored",
    "delta/a-deletion-shows-the-same-on-both-protocols",
    "the client showed something else over delta than over sotw"
)]
#[case::delta_initial_versions(
    "delta_claims_nothing",
    "delta/reconnect-with-initial-versions-gets-only-differences",
    ":29:5:"
)]
#[case::delta_wildcard_claims(
    "delta_wildcard_claims_nothing",
    "delta/wildcard-reconnect-claims-what-it-holds",
    ":30:5:"
)]
#[case::delta_diffs(
    "delta_restates_subscriptions",
    "delta/subscription-changes-travel-as-diffs",
    ":21:5:"
)]
#[case::delta_nack_versions(
    "delta_nack_advances_versions",
    "delta/nack-keeps-valid-resources-and-versions",
    ":37:5:"
)]
#[case::node_changes_on_later_requests(
    "node_changes_on_later_requests",
    "a27/node-on-the-first-request-of-every-stream",
    ":46:5:"
)]
#[case::node_on_first_stream_only(
    "node_on_first_stream_only",
    "a27/node-on-the-first-request-of-every-stream",
    ":46:5:"
)]
#[case::empty_first_request(
    "empty_first_request_is_sent",
    "a27/names-gone-before-the-first-request-send-none",
    ":31:5:"
)]
#[case::delta_nonce(
    "delta_nonce_on_every_request",
    "delta/nonce-only-on-ack-and-nack",
    ":19:5:"
)]
#[case::wildcard("wildcard_as_a_name", "delta/wildcard-sync-of-a-whole-type", ":21:5:")]
#[case::wildcard_named_first(
    "wildcard_misses_named_first",
    "delta/wildcard-hears-a-resource-first-watched-by-name",
    ":29:5:"
)]
#[case::a57_timers_for_cached(
    "timers_for_cached",
    "a57/no-timer-for-cached-resources-on-a-new-stream",
    ":32:5:"
)]
#[case::wildcard_second_watcher(
    "wildcard_misses_cached",
    "delta/a-second-wildcard-watcher-hears-the-cache",
    ":28:5:"
)]
#[case::delta_back_on_the_primary(
    "delta_claims_replaced_copies",
    "delta/back-on-the-primary-claims-nothing-the-fallback-replaced",
    ":47:5:"
)]
#[case::delta_fallback_again(
    "delta_memory_dies_with_its_channel",
    "delta/fallback-again-claims-what-only-the-fallback-sent",
    ":53:5:"
)]
#[case::delta_replaced_claim(
    "delta_confirms_replaced_claims",
    "delta/a-confirmed-claim-of-a-replaced-copy-is-asked-again",
    ":48:5:"
)]
#[case::a65_untrusted_server(
    "tls_accepts_any_server",
    "a65/untrusted-server-certificate-is-a-connectivity-failure",
    ":20:5:"
)]
#[case::a65_fallback_from_an_untrusted_server(
    "tls_accepts_any_server",
    "a65/channel-fallback-from-an-untrusted-server",
    ":29:5:"
)]
#[case::a65_server_name(
    "tls_accepts_any_server",
    "a65/channel-server-certificate-for-another-host-fails-rpcs",
    ":23:5:"
)]
#[case::a65_stalled_handshake(
    "no_connect_timeout",
    "a65/stalled-handshake-times-out-the-connection-attempt",
    ":21:5:"
)]
#[case::a46_new_watcher_of_a_nacked_cached_resource(
    "new_watcher_misses_pending_error",
    "a46/new-watcher-of-nacked-cached-resource",
    ":33:5:"
)]
#[case::a46_new_watcher_of_nacked_endpoints(
    "new_watcher_misses_pending_error",
    "a46/new-watcher-of-nacked-endpoints-hears-the-value-then-the-error",
    ":36:5:"
)]
#[case::a88_new_watcher_after_a_nack(
    "new_watcher_misses_pending_error",
    "a88/new-watcher-after-a-nack-hears-the-value-then-the-error",
    ":37:5:"
)]
#[case::a88_new_watcher_after_a_kept_deletion(
    "new_watcher_misses_pending_error",
    "a88/new-watcher-after-a-kept-deletion-hears-the-value-then-not-found",
    ":24:5:"
)]
#[case::rewatch_keeps_the_cache(
    "cache_dropped_on_cancel",
    "a27/rewatch-before-the-unsubscription-is-sent-keeps-the-cache",
    ":36:5:"
)]
#[case::csds_timer_details(
    "csds_old_error_state",
    "a57/csds-says-does-not-exist-after-the-timer",
    ":18:5:"
)]
#[case::csds_nack_details(
    "csds_nack_without_error_state",
    "a46/csds-nack-shows-the-error-and-both-versions",
    ":31:5:"
)]
#[case::channel_csds_timer_details(
    "csds_old_error_state",
    "a57/channel-csds-says-does-not-exist-after-the-timer",
    ":21:5:"
)]
#[case::channel_csds_nack_details(
    "csds_nack_without_error_state",
    "a46/channel-csds-nack-shows-an-error",
    ":20:5:"
)]
#[case::node_client_features(
    "claims_no_client_features",
    "a27/channel-first-request-node-in-detail",
    ":25:5:"
)]
#[case::ambient_error_cleared(
    "ambient_error_never_cleared",
    "a57/ambient-error-cleared-by-a-response-that-changes-nothing",
    ":31:5:"
)]
#[case::a47_one_channel_per_server(
    "channel_per_authority",
    "a47/same-server-at-top-level-and-in-an-authority-is-one-channel",
    ":34:5:"
)]
#[case::a47_canonical_context_parameters(
    "context_params_as_written",
    "a47/context-parameters-in-canonical-order",
    ":19:5:"
)]
#[case::identical_update_after_nack(
    "unchanged_update_keeps_failure",
    "a46/identical-update-after-nack-clears-the-error",
    ":46:5:"
)]
#[case::csds_error_state_in_full("csds_old_error_state", "a46/csds-error-state-in-full", ":35:5:")]
#[case::csds_before_any_channel(
    "csds_fails_without_channels",
    "a71/channel-csds-before-any-xds-channel-is-empty",
    ":18:5:"
)]
#[case::wait_for_ready_released(
    "wait_for_ready_stuck_after_error",
    "a57/channel-wait-for-ready-rpc-goes-through-once-the-server-answers",
    ":40:5:"
)]
#[case::server_failure_figure(
    "failures_counted_per_error",
    "a57/server-failure-and-connected-figures",
    ":22:5:"
)]
#[case::server_connected_figure(
    "error_after_good_stream",
    "a57/server-failure-and-connected-figures",
    ":31:5:"
)]
#[case::read_flow_control("read_delays_ignored", "a27/watcher-holds-the-next-read", ":37:5:")]
#[case::watch_from_a_callback(
    "callback_watches_lost",
    "a27/watch-started-from-a-watcher-callback",
    ":34:5:"
)]
#[case::csds_node(
    "csds_without_node",
    "a27/channel-csds-client-config-carries-the-node",
    ":24:5:"
)]
#[case::csds_node_matchers(
    "csds_node_matchers_match_nothing",
    "a27/channel-csds-request-with-node-matchers",
    ":24:5:"
)]
#[case::csds_with_a_bad_bootstrap(
    "csds_fails_without_channels",
    "a71/channel-csds-with-a-bad-bootstrap-is-empty",
    ":24:5:"
)]
#[case::a65_mtls_identity("tls_no_identity", "a65/channel-mtls", ":20:5:")]
#[case::a65_watch_mtls_identity("tls_no_identity", "a65/watch-over-mtls", ":16:5:")]
#[case::a65_handshake_failure_is_a_connectivity_failure(
    "silent_stream_failures",
    "a65/untrusted-server-certificate-is-a-connectivity-failure",
    ":25:5:"
)]
#[case::a65_refused_client_certificate_is_a_connectivity_failure(
    "silent_stream_failures",
    "a65/client-certificate-rejected-is-a-connectivity-failure",
    ":32:5:"
)]
#[case::response_of_an_unwatched_type(
    "unwatched_type_unanswered",
    "a27/response-after-the-last-watch-of-its-type-is-answered",
    ":47:5:"
)]
#[case::stale_route_after_fallback(
    "stale_watches_hold_the_config",
    "a71/channel-fallback-config-waits-only-for-what-it-needs",
    ":45:5:"
)]
#[case::a57_every_watcher_of_every_type(
    "connectivity_errors_reach_one_type",
    "a57/stream-error-reaches-every-watcher",
    ":48:5:"
)]
#[case::a57_stream_failure_logged(
    "connectivity_errors_unlogged",
    "a57/stream-failure-is-logged",
    ":22:5:"
)]
#[case::a57_connection_failure_logged(
    "connectivity_errors_unlogged",
    "a57/connection-failure-is-logged",
    ":22:5:"
)]
#[case::a57_connectivity_failure_is_transient_failure(
    "silent_stream_failures",
    "a57/channel-connectivity-failure-is-transient-failure",
    ":22:5:"
)]
#[case::a53_ignored_deletion_warned(
    "ignored_deletion_unlogged",
    "a53/ignored-listener-deletion-keeps-the-value",
    ":24:5:"
)]
#[case::a53_first_ignored_deletion_warned(
    "ignored_deletion_unlogged",
    "a53/warning-only-on-the-first-ignored-deletion",
    ":22:5:"
)]
#[case::a53_info_when_it_comes_back(
    "ignored_deletion_end_unlogged",
    "a53/info-when-the-resource-comes-back",
    ":31:5:"
)]
#[case::a53_info_when_unsubscribed(
    "ignored_deletion_end_unlogged",
    "a53/info-when-unsubscribed",
    ":29:5:"
)]
#[case::a53_warned_again_after_it_came_back(
    "ignored_deletion_never_clears",
    "a53/info-when-the-resource-comes-back",
    ":41:5:"
)]
#[case::a53_feature_per_server(
    "deletions_always_drop",
    "a53/ignore-resource-deletion-is-per-server",
    ":44:5:"
)]
#[case::a53_listener_deletion_is_transient_failure(
    "resolver_errors_keep_the_channel_state",
    "a53/channel-listener-deletion-is-transient-failure",
    ":26:5:"
)]
#[case::a71_primary_connection_kept(
    "fallback_drops_the_failed_connection",
    "a71/fallback-when-streams-end-before-a-response",
    ":31:5:"
)]
#[case::a71_fallback_connection_closed(
    "fallback_connection_kept",
    "a71/fallback-when-streams-end-before-a-response",
    ":41:5:"
)]
#[case::a71_servers_share_one_client(
    "server_client_per_server",
    "a71/servers-share-one-server-xds-client",
    ":32:5:"
)]
#[case::a57_backoff_grows("backoff_constant", "a57/backoff-growth-and-reset", ":20:5:")]
#[case::a57_channel_backoff_grows(
    "backoff_constant",
    "a57/channel-backoff-growth-and-reset",
    ":36:5:"
)]
#[case::a71_fallback_after_the_connect_timeout(
    "no_fallback",
    "a71/fallback-after-the-connect-timeout",
    ":24:5:"
)]
#[case::a71_fallback_mid_update("no_fallback", "a71/channel-fallback-mid-update", ":56:5:")]
#[case::a71_fallback_at_start("no_fallback", "a71/primary-down-at-start-uses-fallback", ":25:5:")]
#[case::a71_fallback_updates_the_cache(
    "new_stream_keeps_cached",
    "a71/new-watch-while-failing-triggers-fallback",
    ":40:5:"
)]
#[case::a71_flapping("no_fallback", "a71/channel-flapping-between-servers", ":35:5:")]
#[case::a46_valid_resources_used(
    "nack_drops_valid_resources",
    "a46/nack-keeps-valid-resources",
    ":23:5:"
)]
#[case::a46_one_nack_names_every_bad_resource(
    "nack_names_first_only",
    "a46/nack-lists-every-bad-resource",
    ":25:5:"
)]
#[case::a53_only_lds_and_cds_delete(
    "sotw_absence_deletes_every_type",
    "a53/eds-absence-is-not-a-deletion",
    ":31:5:"
)]
#[case::a57_fifteen_second_timer(
    "does_not_exist_timer_30s",
    "a57/resource-at-15.1s-after-does-not-exist",
    ":18:5:"
)]
#[case::a57_timer_not_short_of_fifteen_seconds(
    "does_not_exist_timer_14s",
    "a57/resource-at-14.9s-beats-the-timer",
    ":22:5:"
)]
#[case::a47_csds_answers_beside_an_unknown_authority(
    "csds_fails_with_an_unknown_authority",
    "a47/csds-answers-while-an-unknown-authority-is-watched",
    ":30:5:"
)]
#[case::a57_stream_error_names_the_reason(
    "connectivity_error_without_reason",
    "a57/stream-closed-before-response-uncached",
    ":20:5:"
)]
#[case::a57_new_stream_resubscribes_at_once(
    "new_streams_resubscribe_late",
    "a57/stream-closed-after-response-is-not-an-error",
    ":25:5:"
)]
#[case::a57_backoff_capped("backoff_uncapped", "a57/backoff-levels-off-at-120s", ":24:5:")]
#[case::a57_channel_backoff_capped(
    "backoff_uncapped",
    "a57/channel-backoff-levels-off-at-120s",
    ":34:5:"
)]
#[case::a57_channel_backoff_reaches_the_cap(
    "backoff_constant",
    "a57/channel-backoff-levels-off-at-120s",
    ":31:5:"
)]
#[case::a71_fallback_turned_off(
    "fallback_env_ignored",
    "a71/fallback-turned-off-reads-one-server",
    ":27:5:"
)]
#[case::kds_subscribes_to_the_wildcard(
    "zone_subscribes_without_wildcard",
    "kds/subscribes-to-every-consumed-type",
    ":14:5:"
)]
#[case::kds_subscribes_to_every_consumed_type(
    "zone_subscribes_to_one_type",
    "kds/subscribes-to-every-consumed-type",
    ":14:5:"
)]
#[case::kds_zone_answers_the_globals_subscription(
    "zone_answers_only_changes",
    "kds/global-subscribes-and-zone-answers",
    ":19:5:"
)]
#[case::kds_two_rpcs(
    "zone_no_zone_to_global_sync",
    "kds/handshake-headers-and-node-metadata",
    ":21:5:"
)]
#[case::kds_delta_from_the_start(
    "zone_reads_state_of_the_world",
    "kds/a-later-partial-response-deletes-nothing",
    ":37:5:"
)]
#[case::kds_refresh_interval(
    "zone_ignores_refresh_interval",
    "kds/changes-within-one-refresh-interval-go-together",
    ":34:5:"
)]
#[case::a71_nacked_before_any_value_is_uncached(
    "nacked_counts_as_cached",
    "a71/a-resource-nacked-before-any-value-is-uncached",
    ":36:5:"
)]
#[case::a71_channel_nacked_cluster_is_uncached(
    "nacked_counts_as_cached",
    "a71/channel-a-cluster-nacked-before-any-value-is-uncached",
    ":34:5:"
)]
#[case::a57_wait_for_ready_keeps_one_call(
    "wait_for_ready_ignored",
    "a57/wait-for-ready-keeps-one-ads-call-through-refused-connections",
    ":30:5:"
)]
fn a_broken_rule_fails_its_scenario(
    #[case] defect_name: &str,
    #[case] scenario: &str,
    #[case] failing_at: &str,
) {
    fails_where_expected(defect_name, defect(defect_name), scenario, failing_at);
}

/// gRPC's resource validation, one rule broken at a time: the rules
/// `scenarios/validation/` checks, each against its scenario, failing at
/// the expectation that sees the resource accepted (a NACK expected),
/// rejected (an ACK expected) or used (a subscription that must not
/// happen).
#[rstest]
#[case::xff_num_trusted_hops(
    ValidationRule::XffNumTrustedHops,
    "validation/hcm-xff-num-trusted-hops-is-rejected",
    ":31:5:"
)]
#[case::original_ip_detection_extensions(
    ValidationRule::OriginalIpDetectionExtensions,
    "validation/hcm-original-ip-detection-extensions-are-rejected",
    ":44:5:"
)]
#[case::path_regex(
    ValidationRule::PathRegex,
    "validation/route-invalid-path-regex-is-rejected",
    ":33:5:"
)]
#[case::header_regex(
    ValidationRule::HeaderRegex,
    "validation/route-invalid-header-regex-is-rejected",
    ":41:5:"
)]
#[case::header_match_specifier(
    ValidationRule::HeaderMatchSpecifier,
    "validation/route-header-matcher-without-a-match-is-rejected",
    ":34:5:"
)]
#[case::header_range(
    ValidationRule::HeaderRange,
    "validation/route-header-range-end-before-start-is-rejected",
    ":44:5:"
)]
#[case::unsupported_cluster_specifier_ignored(
    ValidationRule::UnsupportedClusterSpecifierIgnored,
    "validation/route-unsupported-cluster-specifier-is-ignored",
    ":34:5:"
)]
#[case::optional_plugin_routes_ignored(
    ValidationRule::OptionalPluginRoutesIgnored,
    "validation/route-optional-unsupported-plugin-is-ignored",
    ":40:5:"
)]
#[case::plugin_type(
    ValidationRule::PluginType,
    "validation/route-unsupported-plugin-is-rejected",
    ":34:5:"
)]
#[case::retry_num_retries(
    ValidationRule::RetryNumRetries,
    "validation/route-retry-zero-retries-is-rejected",
    ":40:5:"
)]
#[case::retry_base_interval(
    ValidationRule::RetryBaseInterval,
    "validation/route-retry-backoff-without-base-interval-is-rejected",
    ":33:5:"
)]
#[case::weighted_cluster_weight(
    ValidationRule::WeightedClusterWeight,
    "validation/route-weighted-cluster-without-weight-is-rejected",
    ":45:5:"
)]
#[case::weighted_clusters_non_empty(
    ValidationRule::WeightedClustersNonEmpty,
    "validation/route-weighted-clusters-all-zero-is-rejected",
    ":23:5:"
)]
#[case::weighted_clusters_total(
    ValidationRule::WeightedClustersTotal,
    "validation/route-weighted-cluster-weights-overflow-is-rejected",
    ":24:5:"
)]
#[case::zero_weight_clusters_dropped(
    ValidationRule::ZeroWeightClustersDropped,
    "validation/route-weighted-cluster-zero-weight-is-dropped",
    ":27:5:"
)]
#[case::discovery_type(
    ValidationRule::DiscoveryType,
    "validation/cds-static-discovery-type-is-rejected",
    ":49:5:"
)]
#[case::eds_config_source(
    ValidationRule::EdsConfigSource,
    "validation/cds-eds-config-source-must-be-ads-or-self",
    ":26:5:"
)]
#[case::custom_cluster_type(
    ValidationRule::CustomClusterType,
    "validation/cds-custom-cluster-type-must-be-aggregate",
    ":28:5:"
)]
#[case::logical_dns_shape(
    ValidationRule::LogicalDnsShape,
    "validation/cds-logical-dns-needs-exactly-one-endpoint",
    ":28:5:"
)]
#[case::lrs_server_self(
    ValidationRule::LrsServerSelf,
    "validation/cds-lrs-server-must-be-self",
    ":26:5:"
)]
#[case::outlier_detection_percent(
    ValidationRule::OutlierDetectionPercent,
    "validation/cds-outlier-detection-percentages-over-100-are-rejected",
    ":39:5:"
)]
#[case::duration_range(
    ValidationRule::DurationRange,
    "validation/cds-outlier-detection-negative-interval-is-rejected",
    ":26:5:"
)]
#[case::ring_hash_sizes(
    ValidationRule::RingHashSizes,
    "validation/cds-ring-hash-ring-size-is-bounded",
    ":26:5:"
)]
#[case::transport_socket_type(
    ValidationRule::TransportSocketType,
    "validation/cds-transport-socket-must-be-tls",
    ":29:5:"
)]
#[case::tls_ca_certificates(
    ValidationRule::TlsCaCertificates,
    "validation/cds-tls-without-ca-certificates-is-rejected",
    ":32:5:"
)]
#[case::tls_unsupported_feature(
    ValidationRule::TlsUnsupportedFeature,
    "validation/cds-tls-unsupported-features-are-rejected",
    ":36:5:"
)]
#[case::tls_certificate_provider_instance(
    ValidationRule::TlsCertificateProviderInstance,
    "validation/cds-tls-unknown-certificate-provider-is-rejected",
    ":34:5:"
)]
#[case::locality_present(
    ValidationRule::LocalityPresent,
    "validation/eds-locality-without-name-is-rejected",
    ":28:5:"
)]
#[case::priorities_contiguous(
    ValidationRule::PrioritiesContiguous,
    "validation/eds-priority-gap-is-rejected",
    ":37:5:"
)]
// Priorities past the number of localities are the same rule: such a
// priority always leaves a gap, and C-core's bound is that check made
// early (no client behaviour tells them apart).
#[case::priorities_contiguous_past_the_bound(
    ValidationRule::PrioritiesContiguous,
    "validation/eds-priority-beyond-the-locality-count-is-rejected",
    ":33:5:"
)]
#[case::localities_unique(
    ValidationRule::LocalitiesUnique,
    "validation/eds-duplicate-locality-is-rejected",
    ":25:5:"
)]
#[case::addresses_unique(
    ValidationRule::AddressesUnique,
    "validation/eds-duplicate-address-is-rejected",
    ":34:5:"
)]
#[case::port_range(
    ValidationRule::PortRange,
    "validation/eds-port-out-of-range-is-rejected",
    ":26:5:"
)]
#[case::address_is_ip(
    ValidationRule::AddressIsIp,
    "validation/eds-non-ip-address-is-rejected",
    ":29:5:"
)]
#[case::endpoint_weight(
    ValidationRule::EndpointWeight,
    "validation/eds-endpoint-weight-zero-is-rejected",
    ":36:5:"
)]
#[case::watch_xff(
    ValidationRule::XffNumTrustedHops,
    "validation/watch-listener-errors-reach-only-their-watchers",
    ":53:5:"
)]
#[case::watch_original_ip(
    ValidationRule::OriginalIpDetectionExtensions,
    "validation/watch-listener-errors-reach-only-their-watchers",
    ":55:5:"
)]
#[case::watch_path_regex(
    ValidationRule::PathRegex,
    "validation/watch-route-errors-reach-only-their-watchers",
    ":48:5:"
)]
#[case::watch_num_retries(
    ValidationRule::RetryNumRetries,
    "validation/watch-route-errors-reach-only-their-watchers",
    ":50:5:"
)]
#[case::watch_discovery_type(
    ValidationRule::DiscoveryType,
    "validation/watch-cluster-errors-reach-only-their-watchers",
    ":39:5:"
)]
#[case::watch_lrs_server(
    ValidationRule::LrsServerSelf,
    "validation/watch-cluster-errors-reach-only-their-watchers",
    ":41:5:"
)]
#[case::watch_duplicate_locality(
    ValidationRule::LocalitiesUnique,
    "validation/watch-endpoints-errors-reach-only-their-watchers",
    ":41:5:"
)]
#[case::watch_port(
    ValidationRule::PortRange,
    "validation/watch-endpoints-errors-reach-only-their-watchers",
    ":43:5:"
)]
#[case::wrapper_names_its_resource(
    ValidationRule::WrapperNamesItsResource,
    "a46/wrapped-undecodable-body-is-charged-to-its-name",
    ":23:5:"
)]
#[case::a46_unsupported_value_is_invalid(
    ValidationRule::LbPolicySupported,
    "a46/nack-keeps-valid-resources",
    ":25:5:"
)]
fn a_broken_validation_rule_fails_its_scenario(
    #[case] rule: ValidationRule,
    #[case] scenario: &str,
    #[case] failing_at: &str,
) {
    let defects = Defects {
        broken_validation: Some(rule),
        ..Defects::default()
    };
    fails_where_expected(&format!("{rule:?}"), defects, scenario, failing_at);
}

/// `scenario` passes on the reference client and fails at `failing_at`
/// (`:LINE:COL:` of the expectation) on one with `defects`.
fn fails_where_expected(defect_name: &str, defects: Defects, scenario: &str, failing_at: &str) {
    let path =
        manifest_dir(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{scenario}.yaml"));
    let scenario = load_file(&path).unwrap_or_else(|e| panic!("{e}"));

    // Every run the scenario asks for (one per protocol) passes on the
    // reference client...
    for (run, good) in run_variants(&scenario, &|| {
        Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
    }) {
        assert_eq!(
            good.verdict,
            Verdict::Pass,
            "{}\n{}",
            run.name,
            good.timeline
        );
    }

    // ...and one fails, there, on the broken one.
    let runs = run_variants(&scenario, &|| {
        Box::new(ReferenceClient::with_defects(defects)) as Box<dyn ClientUnderTest>
    });
    let failures: Vec<&String> = runs
        .iter()
        .filter_map(|(_, broken)| match &broken.verdict {
            Verdict::Fail { message } => Some(message),
            _ => None,
        })
        .collect();
    assert!(
        failures.iter().any(|message| message.contains(failing_at)),
        "{defect_name} on {}: expected a FAIL at {failing_at}, got {:?}",
        scenario.name,
        runs.iter().map(|(_, r)| &r.verdict).collect::<Vec<_>>()
    );
    // A failed expectation points the picture at its window, and at an
    // event of the run when it names one.
    for (run, broken) in &runs {
        if let Verdict::Fail { message } = &broken.verdict
            && message.contains(": expected ")
        {
            let mark = broken
                .mark
                .as_ref()
                .unwrap_or_else(|| panic!("{}: a failure without a mark: {message}", run.name));
            assert!(mark.window.is_some(), "{}: {mark:?}", run.name);
            assert!(
                mark.event.is_none_or(|e| e < broken.events.len()),
                "{}: {mark:?}",
                run.name
            );
        }
    }
}

/// A rule that states a preference beside an alternative the spec allows
/// ("it is preferred to ...; an implementation may instead ..."): the
/// reference client, which follows the preference, passes; with a defect
/// that takes the alternative, the scenario tells it apart and reports a
/// divergence with its note, never a failure (a real client taking the
/// alternative breaks no rule). Cases are named `allowed_*`
/// (`tests/catalogue.rs` reads them as a rule's `divergent_by`).
#[rstest]
#[case::allowed_timer_on_channel_ready(
    "timer_on_channel_ready",
    "a57/no-timer-while-the-server-admits-no-stream",
    "consider the channel connected when it reports state READY"
)]
fn an_allowed_alternative_is_reported_divergent(
    #[case] defect_name: &str,
    #[case] scenario: &str,
    #[case] note: &str,
) {
    let path =
        manifest_dir(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{scenario}.yaml"));
    let scenario = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    for (run, good) in run_variants(&scenario, &|| {
        Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
    }) {
        assert_eq!(
            good.verdict,
            Verdict::Pass,
            "{}\n{}",
            run.name,
            good.timeline
        );
    }
    let defects = defect(defect_name);
    for (run, broken) in run_variants(&scenario, &|| {
        Box::new(ReferenceClient::with_defects(defects)) as Box<dyn ClientUnderTest>
    }) {
        match &broken.verdict {
            Verdict::Divergent { note: said } if said.contains(note) => {}
            other => panic!(
                "{defect_name} on {}: expected a divergence noting {note:?}, got {other:?}\n{}",
                run.name, broken.timeline
            ),
        }
    }
}

/// Each rule of gRFC A88 for errors a server reports per resource (xRFC
/// TP3 `resource_errors`), broken on its own, fails the scenario that
/// checks it, at the expectation that checks it.
#[rstest]
#[case::read(
    ServerErrorRule::Read,
    "a88/server-error-without-a-value-is-a-resource-error",
    ":27:5:"
)]
#[case::read_on_delta(
    ServerErrorRule::Read,
    "delta/a88-server-errors-in-a-delta-response",
    ":37:5:"
)]
#[case::ambient_when_cached(
    ServerErrorRule::AmbientWhenCached,
    "a88/server-error-with-a-cached-value-is-ambient",
    ":36:5:"
)]
#[case::drop_only_for_data_errors(
    ServerErrorRule::DropOnlyForDataErrors,
    "a88/fail-on-data-errors-drops-the-value-for-not-found-only",
    ":34:5:"
)]
#[case::not_a_deletion(
    ServerErrorRule::NotADeletion,
    "a88/server-error-is-not-a-deletion",
    ":40:5:"
)]
#[case::stops_the_timer(
    ServerErrorRule::StopsTheTimer,
    "a88/server-error-without-a-value-is-a-resource-error",
    ":44:5:"
)]
#[case::malformed_nacked(
    ServerErrorRule::MalformedNacked,
    "a88/malformed-server-errors-are-nacked",
    ":26:5:"
)]
#[case::csds_received_error(
    ServerErrorRule::CsdsReceivedError,
    "a88/server-error-without-a-value-is-a-resource-error",
    ":33:5:"
)]
fn a_broken_server_error_rule_fails_its_scenario(
    #[case] rule: ServerErrorRule,
    #[case] scenario: &str,
    #[case] failing_at: &str,
) {
    let defects = Defects {
        broken_server_errors: Some(rule),
        ..Defects::default()
    };
    fails_where_expected(&format!("{rule:?}"), defects, scenario, failing_at);
}
