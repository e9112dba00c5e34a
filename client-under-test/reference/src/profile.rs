//! Behaviour choices where gRPC implementations legitimately differ, or
//! where a later gRFC changes semantics behind an opt-in.

use std::time::Duration;

use crate::backoff::BackoffConfig;

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

#[derive(Clone, Debug, PartialEq)]
pub struct ClientProfile {
    pub name: String,
    pub backoff: BackoffConfig,
    pub retry_after_good_stream: RetryAfterGoodStream,
    /// The does-not-exist timer (gRFC A57: 15 s).
    pub resource_request_timeout: Duration,
    pub data_errors: DataErrorHandling,
}

impl Default for ClientProfile {
    /// The reference behaviour: gRPC C-core's.
    fn default() -> Self {
        ClientProfile {
            name: "reference".to_string(),
            backoff: BackoffConfig::default(),
            retry_after_good_stream: RetryAfterGoodStream::InitialBackoff,
            resource_request_timeout: Duration::from_secs(15),
            data_errors: DataErrorHandling::A53,
        }
    }
}
