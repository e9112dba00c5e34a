//! What a client reports about itself beyond watcher notifications: the
//! log lines gRFCs require (A53's WARNING/INFO), the ADS call lifecycle,
//! backoff, and the per-server connectivity state (A57). The reference
//! client emits them; adapters of other clients may report some; the
//! harness puts them on a timeline.

use std::time::Duration;

use crate::resource_type::ResourceType;
use crate::status::XdsError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Info,
    Warning,
    Error,
}

impl LogLevel {
    pub const ALL: [LogLevel; 3] = [LogLevel::Info, LogLevel::Warning, LogLevel::Error];

    /// `info`, `warning`, `error`.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Info => "info",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
        }
    }
}

/// Which service a client's call to a server speaks: an xDS client's ADS
/// stream, or a Kuma zone's KDS connection (its `KDSSyncService` streams,
/// opened and ended together), so that a zone's timeline says KDS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CallService {
    #[default]
    Ads,
    Kds,
}

impl std::fmt::Display for CallService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CallService::Ads => "ADS",
            CallService::Kds => "KDS",
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ClientEvent {
    /// A new call (an ADS stream attempt, or a zone's KDS connection) to
    /// `server`.
    AdsCallStarted {
        server: String,
        service: CallService,
    },
    /// A subscription request went out on a connected stream; the
    /// does-not-exist timers of the named resources may start now.
    SubscriptionSent {
        server: String,
        resource_type: ResourceType,
        names: Vec<String>,
    },
    /// The call ended.
    AdsCallFinished {
        server: String,
        service: CallService,
        status: XdsError,
        seen_response: bool,
    },
    /// The A57 "connected" flag of `server`'s current ADS call: true once
    /// the transport under it heard the server (its HTTP/2 preface), false
    /// when that call ends. Does-not-exist timers start only while true.
    Connected { server: String, connected: bool },
    /// The next attempt to `server` starts after `delay`.
    RetryScheduled {
        server: String,
        service: CallService,
        delay: Duration,
    },
    /// The xDS channel's health changed: `error` is None when healthy.
    /// `failures` counts transitions from healthy to failing.
    ServerStatus {
        server: String,
        error: Option<XdsError>,
        failures: u64,
    },
    /// A resource's does-not-exist timer started (15 s by default).
    ResourceTimerStarted {
        resource_type: ResourceType,
        name: String,
        timeout: Duration,
    },
    /// An authority now also uses a lower-priority server (gRFC A71).
    FallbackStarted { authority: String, server: String },
    /// An authority is back on a higher-priority server (gRFC A71).
    FellForward { authority: String, server: String },
    /// A log line gRPC would write (e.g. gRFC A53's WARNING and INFO).
    Log { level: LogLevel, message: String },
}
