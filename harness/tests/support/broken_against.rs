//! The client broken on purpose that each chaos invariant catches: the
//! chaos tests (`tests/chaos.rs`) and the catch benchmark
//! (`examples/chaos_catch.rs`) share it.

use std::sync::Arc;

use xds_client_under_test::broken::{Broken, Command};
use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::suite::BoxedFactory;
use xds_reference_client::Defects;
use xds_vocabulary::AdsProtocol;

/// The reference client with the defects `set` sets.
pub fn defective(set: fn(&mut Defects)) -> BoxedFactory {
    Box::new(move || {
        let mut defects = Defects::default();
        set(&mut defects);
        Box::new(ReferenceClient::with_defects(defects)) as Box<dyn ClientUnderTest>
    })
}

/// A client broken against each invariant, and the protocol its defect
/// shows on.
pub fn broken_against(invariant: &str) -> (BoxedFactory, AdsProtocol) {
    match invariant {
        // Delta subscription changes that echo the last nonce: a second
        // answer to the response.
        "answered-once" => (
            defective(|d| d.delta_nonce_on_every_request = true),
            AdsProtocol::Delta,
        ),
        // A later request whose node is not the stream's first's.
        "node-on-first-request" => (
            defective(|d| d.node_changes_on_later_requests = true),
            AdsProtocol::Sotw,
        ),
        // Cancels that do nothing: the watcher goes on hearing.
        "silent-after-cancel" => (
            Box::new(|| {
                let rule = Arc::new(|command: &Command<'_>| match command {
                    Command::CancelWatch(..) => Some(Ok(())),
                    _ => None,
                });
                Box::new(Broken::new(
                    ReferenceClient::new(),
                    "cancel-does-nothing",
                    rule,
                )) as Box<dyn ClientUnderTest>
            }),
            AdsProtocol::Sotw,
        ),
        // Falls back on any failure, with everything cached.
        "fallback-only-when-uncached" => (
            defective(|d| d.fallback_while_cached = true),
            AdsProtocol::Sotw,
        ),
        // Stays on a fallback server when a higher-priority one answers
        // again (gRFC A71: back on it, the fallback's stream closed).
        "falls-forward" => (defective(|d| d.no_fall_forward = true), AdsProtocol::Sotw),
        // Tells watchers of every server's failure, also while a fallback
        // serves (gRFC A71: only once every server has failed).
        "errors-only-when-all-failed" => (
            defective(|d| d.errors_from_every_server = true),
            AdsProtocol::Sotw,
        ),
        // Claims nothing on a new stream.
        "delta-claims-what-it-holds" => (
            defective(|d| d.delta_claims_nothing = true),
            AdsProtocol::Delta,
        ),
        // Wildcard watchers are told only of resources a watch named.
        "wildcard-hears-every-resource" => (
            defective(|d| d.wildcard_misses_new = true),
            AdsProtocol::Sotw,
        ),
        // Timers start when a request is handed to a transport that is
        // not connected yet (gRFC A57: only on a connected stream).
        // Timers re-armed on a new stream for cached resources too.
        "cached-never-times-out" => (defective(|d| d.timers_for_cached = true), AdsProtocol::Sotw),
        "does-not-exist-timer" => (
            defective(|d| d.timer_while_connecting = true),
            AdsProtocol::Sotw,
        ),
        // Delta removals change nothing: the watchers never hear the name
        // is gone, and a new stream claims it still.
        "removed-names-gone" => (
            defective(|d| d.delta_removals_ignored = true),
            AdsProtocol::Delta,
        ),
        // A new watcher of a cached resource with a pending data error
        // hears the value only (C-core, grpc-go: the value, then the error).
        "new-watcher-hears-value-then-error" => (
            defective(|d| d.new_watcher_misses_pending_error = true),
            AdsProtocol::Sotw,
        ),
        // A resource first watched by name while a wildcard watch is on is
        // never told to the wildcard watcher.
        "every-watcher-hears-each-change" => (
            defective(|d| d.wildcard_misses_named_first = true),
            AdsProtocol::Sotw,
        ),
        // Tells watchers of every resource each response carries, changed
        // or not.
        "unchanged-not-notified-again" => (
            defective(|d| d.renotifies_unchanged = true),
            AdsProtocol::Sotw,
        ),
        // Keeps what it holds when a new stream's first response says
        // otherwise (the server's value changed meanwhile, or another
        // server's copy differs).
        "eventually-consistent" => (
            defective(|d| d.new_stream_keeps_cached = true),
            AdsProtocol::Sotw,
        ),
        other => panic!("no client broken against {other}"),
    }
}
