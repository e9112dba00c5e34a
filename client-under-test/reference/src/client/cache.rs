//! The resource cache: one entry per watched resource, and every way an
//! entry can change, written once as methods of [`ResourceState`] (as
//! C-core's `XdsClient::ResourceState`). Each transition returns what the
//! entry's watchers must hear; the caller decides when they hear it.
//!
//! The cache knows nothing of streams, protocols or servers: an ADS stream
//! (state of the world or delta) reports updates and removals, and the
//! worker applies them here with the data-error policy of the server they
//! came from.

use std::collections::BTreeSet;
use std::sync::Arc;

use envoy_types::pb::envoy::admin::v3::{ClientResourceStatus, UpdateFailureState};
use envoy_types::pb::envoy::service::status::v3::client_config::GenericXdsConfig;
use envoy_types::pb::google::protobuf::{Any, Timestamp};
use tokio::time::Instant;
use tonic::Code;

use super::WatchId;
use crate::profile::DataErrorHandling;
use crate::resource::XdsResource;
use crate::watcher::{WatcherEvent, XdsError};

/// CSDS's view of a cached resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CacheStatus {
    Requested,
    Acked,
    Nacked,
    DoesNotExist,
    /// A88 with `resource_timer_is_transient_error`: the timer fired.
    Timeout,
    /// A88: the server reported an error for the resource (xRFC TP3).
    ReceivedError,
}

/// One watched resource: its watchers, its value, and what CSDS says.
pub(crate) struct ResourceState {
    pub watchers: BTreeSet<WatchId>,
    value: Option<Arc<XdsResource>>,
    /// The value's bytes as received, for CSDS.
    serialized: Vec<u8>,
    status: CacheStatus,
    version: String,
    update_time: Option<Instant>,
    failed_version: String,
    failed_details: String,
    /// The code of an error the server reported (`ReceivedError`).
    received_code: Code,
    failed_update_time: Option<Instant>,
    /// A53: a deletion of this resource was ignored and not yet cleared.
    ignored_deletion: bool,
}

/// What A88 reports for a resource the server does not have (C-core's
/// `ResourceState` status for a deletion or a fired timer).
pub(crate) fn does_not_exist() -> XdsError {
    XdsError::new(Code::NotFound, "does not exist")
}

impl ResourceState {
    pub fn new() -> Self {
        ResourceState {
            watchers: BTreeSet::new(),
            value: None,
            serialized: Vec::new(),
            status: CacheStatus::Requested,
            version: String::new(),
            update_time: None,
            failed_version: String::new(),
            failed_details: String::new(),
            received_code: Code::Unknown,
            failed_update_time: None,
            ignored_deletion: false,
        }
    }

    /// A value is cached (whatever errors followed it).
    pub fn is_cached(&self) -> bool {
        self.value.is_some()
    }

    /// The cached value and its bytes, if any.
    pub fn cached(&self) -> Option<(Arc<XdsResource>, Vec<u8>)> {
        self.value
            .as_ref()
            .map(|value| (value.clone(), self.serialized.clone()))
    }

    /// Neither a value nor an answer yet: what A71 fallback looks for.
    pub fn is_awaited(&self) -> bool {
        self.status == CacheStatus::Requested
    }

    /// NACKed, with no value accepted before: nothing a watcher can use
    /// (gRFC A71 counts it as not cached).
    pub fn is_rejected_without_value(&self) -> bool {
        self.status == CacheStatus::Nacked && self.value.is_none()
    }

    /// A53: the resource's deletion is being ignored.
    pub fn deletion_ignored(&self) -> bool {
        self.ignored_deletion
    }

    /// What a watcher added to an entry that is already watched hears at
    /// once, in order: what the other watchers have seen, in the order they
    /// saw it (C-core's `WatchResource`, then `NotifyWatchersOnError`;
    /// grpc-go's `authority.watchResource`).
    ///
    /// A53: the cached value, and then a NACK of it as an ambient error;
    /// without a value, the answer the entry has (does not exist, or the
    /// NACK as a resource error). A watcher that joined after the NACK
    /// and heard the value alone would use a value the others know to be
    /// in error (found by chaos: `new-watcher-hears-value-then-error`).
    ///
    /// A88 ("New Watchers Started After Ambient Errors"): the cached
    /// value, and then the pending data error (a NACK, a deletion kept in
    /// cache, a fired timer, an error from the server), as an ambient
    /// error when there is a value and a resource error when there is
    /// none.
    pub fn events_for_new_watcher(&self, handling: DataErrorHandling) -> Vec<WatcherEvent> {
        match handling {
            DataErrorHandling::A53 => self.events_for_new_watcher_a53(),
            DataErrorHandling::A88 => {
                let mut events = Vec::new();
                if let Some(value) = &self.value {
                    events.push(WatcherEvent::Changed(value.clone()));
                }
                if let Some(error) = self.failed_status() {
                    events.push(if self.value.is_some() {
                        WatcherEvent::AmbientError(error)
                    } else {
                        WatcherEvent::ResourceError(error)
                    });
                }
                events
            }
        }
    }

    /// A88: the data error the entry holds (C-core's `failed_status`), by
    /// the status that recorded it; `None` once a valid update cleared it.
    fn failed_status(&self) -> Option<XdsError> {
        let code = match self.status {
            CacheStatus::Nacked => {
                return Some(XdsError::new(
                    Code::InvalidArgument,
                    format!("invalid resource: {}", self.failed_details),
                ));
            }
            // The server's status, whatever its message.
            CacheStatus::ReceivedError => self.received_code,
            _ if self.failed_details.is_empty() => return None,
            CacheStatus::DoesNotExist => Code::NotFound,
            CacheStatus::Timeout => Code::Unavailable,
            CacheStatus::Requested | CacheStatus::Acked => return None,
        };
        Some(XdsError::new(code, self.failed_details.clone()))
    }

    /// [`Self::events_for_new_watcher`] before A88.
    fn events_for_new_watcher_a53(&self) -> Vec<WatcherEvent> {
        let nack = || {
            XdsError::new(
                Code::InvalidArgument,
                format!("invalid resource: {}", self.failed_details),
            )
        };
        let nacked = self.status == CacheStatus::Nacked;
        match &self.value {
            Some(value) if nacked => vec![
                WatcherEvent::Changed(value.clone()),
                WatcherEvent::AmbientError(nack()),
            ],
            Some(value) => vec![WatcherEvent::Changed(value.clone())],
            None if self.status == CacheStatus::DoesNotExist => vec![WatcherEvent::DoesNotExist],
            None if nacked => vec![WatcherEvent::ResourceError(nack())],
            None => Vec::new(),
        }
    }

    /// Whether `value` is the cached value.
    pub fn holds(&self, value: &XdsResource) -> bool {
        self.value.as_deref() == Some(value)
    }

    /// A valid resource arrived with `version`. A new value is news; an
    /// identical one is not, unless it ends an ambient connectivity error
    /// (`channel_failing`). A failed entry (NACKed, or an A88 deletion kept
    /// in cache) is accepted again; an accepted one keeps the version it
    /// was received with.
    pub fn accept(
        &mut self,
        value: Arc<XdsResource>,
        serialized: Vec<u8>,
        version: &str,
        now: Instant,
        channel_failing: bool,
    ) -> Option<WatcherEvent> {
        if self.value.as_deref() == Some(&*value) {
            if self.status != CacheStatus::Acked {
                self.set_acked(version, now);
            }
            channel_failing.then_some(WatcherEvent::AmbientErrorCleared)
        } else {
            self.value = Some(value.clone());
            self.serialized = serialized;
            self.set_acked(version, now);
            Some(WatcherEvent::Changed(value))
        }
    }

    fn set_acked(&mut self, version: &str, now: Instant) {
        self.status = CacheStatus::Acked;
        self.version = version.to_string();
        self.update_time = Some(now);
        self.clear_failure();
    }

    fn clear_failure(&mut self) {
        self.failed_version.clear();
        self.failed_details.clear();
        self.failed_update_time = None;
    }

    /// An invalid resource arrived (the response is NACKed): the cached
    /// value stays, with an ambient error, unless `drop_value` (A88's
    /// `fail_on_data_errors`); without a value it is a resource error.
    pub fn reject(
        &mut self,
        details: &str,
        version: &str,
        now: Instant,
        drop_value: bool,
    ) -> WatcherEvent {
        self.status = CacheStatus::Nacked;
        self.failed_version = version.to_string();
        self.failed_details = details.to_string();
        self.failed_update_time = Some(now);
        if drop_value {
            self.drop_value();
        }
        let error = XdsError::new(
            Code::InvalidArgument,
            format!("invalid resource: {details}"),
        );
        if self.value.is_some() {
            WatcherEvent::AmbientError(error)
        } else {
            WatcherEvent::ResourceError(error)
        }
    }

    fn drop_value(&mut self) {
        self.value = None;
        self.serialized.clear();
    }

    /// The resource arrived again after its deletion was ignored (A53):
    /// true if that ends an ignored deletion (which gRPC logs).
    pub fn end_ignored_deletion(&mut self) -> bool {
        std::mem::take(&mut self.ignored_deletion)
    }

    /// A88: the server reported `error` for the resource (xRFC TP3) in a
    /// response of `version`. The value stays unless `drop_value`
    /// (`fail_on_data_errors` with NOT_FOUND or PERMISSION_DENIED); then
    /// watchers hear an ambient error with a value, a resource error
    /// without. CSDS says RECEIVED_ERROR with the server's message
    /// (`as_nack`: `ServerErrorRule::CsdsReceivedError` broken).
    pub fn received_error(
        &mut self,
        error: XdsError,
        version: &str,
        now: Instant,
        drop_value: bool,
        as_nack: bool,
    ) -> WatcherEvent {
        self.status = if as_nack {
            CacheStatus::Nacked
        } else {
            CacheStatus::ReceivedError
        };
        self.failed_version = version.to_string();
        self.failed_details = error.message.clone();
        self.received_code = error.code;
        self.failed_update_time = Some(now);
        if drop_value {
            self.drop_value();
        }
        if self.value.is_some() {
            WatcherEvent::AmbientError(error)
        } else {
            WatcherEvent::ResourceError(error)
        }
    }

    /// A53, `ignore_resource_deletion`: the deletion changes nothing but a
    /// flag; true the first time (which gRPC logs once).
    pub fn ignore_deletion(&mut self) -> bool {
        !std::mem::replace(&mut self.ignored_deletion, true)
    }

    /// A53: the server deleted the resource; the value goes. CSDS shows
    /// the deletion as C-core records it: "does not exist", with the
    /// version of the response that deleted it.
    pub fn delete(&mut self, version: &str, now: Instant) -> WatcherEvent {
        self.value = None;
        self.serialized.clear();
        self.status = CacheStatus::DoesNotExist;
        self.failed_version = version.to_string();
        self.failed_details = does_not_exist().message;
        self.failed_update_time = Some(now);
        WatcherEvent::DoesNotExist
    }

    /// A88: a deletion is a data error. The value stays, with an ambient
    /// NOT_FOUND, unless `drop_value` (`fail_on_data_errors`); CSDS says
    /// DOES_NOT_EXIST either way.
    pub fn delete_as_data_error(
        &mut self,
        version: &str,
        now: Instant,
        drop_value: bool,
    ) -> WatcherEvent {
        self.status = CacheStatus::DoesNotExist;
        self.failed_version = version.to_string();
        let error = does_not_exist();
        self.failed_details = error.message.clone();
        self.failed_update_time = Some(now);
        if drop_value {
            self.drop_value();
            WatcherEvent::ResourceError(error)
        } else {
            WatcherEvent::AmbientError(error)
        }
    }

    /// The does-not-exist timer fired (A57): nothing for a cached
    /// resource; otherwise [`Self::not_found`], unless the server's timer
    /// is a transient error (A88, `transient_from`: its URI): then
    /// UNAVAILABLE, and CSDS says TIMEOUT.
    pub fn timer_fired(
        &mut self,
        handling: DataErrorHandling,
        transient_from: Option<&str>,
    ) -> Option<WatcherEvent> {
        match (handling, transient_from) {
            (DataErrorHandling::A88, Some(server_uri)) if self.value.is_none() => {
                self.status = CacheStatus::Timeout;
                let error = XdsError::new(
                    Code::Unavailable,
                    format!("timeout obtaining resource from xDS server {server_uri}"),
                );
                self.failed_version.clear();
                self.failed_details = error.message.clone();
                Some(WatcherEvent::ResourceError(error))
            }
            _ => self.not_found(handling),
        }
    }

    /// The resource does not exist (the timer fired, or a delta server said
    /// so): nothing for a cached resource. A53: does not exist. A88: a
    /// NOT_FOUND resource error.
    pub fn not_found(&mut self, handling: DataErrorHandling) -> Option<WatcherEvent> {
        if self.value.is_some() {
            return None;
        }
        self.status = CacheStatus::DoesNotExist;
        // C-core records "does not exist" (no version: no response said
        // it) whatever the profile; CSDS shows it.
        let error = does_not_exist();
        self.failed_version.clear();
        self.failed_update_time = None;
        self.failed_details = error.message.clone();
        Some(match handling {
            DataErrorHandling::A53 => WatcherEvent::DoesNotExist,
            DataErrorHandling::A88 => WatcherEvent::ResourceError(error),
        })
    }

    /// `Defects::timer_from_watch`: a timer blind to streams fired; only
    /// an entry that has heard nothing at all is affected.
    pub fn watch_timer_fired(&mut self) -> Option<WatcherEvent> {
        if self.value.is_some() || self.status != CacheStatus::Requested {
            return None;
        }
        self.status = CacheStatus::DoesNotExist;
        Some(WatcherEvent::DoesNotExist)
    }

    /// The entry as CSDS reports it, as current C-core fills it (for both
    /// profiles: the shape did not change with A88). `old_shape` is
    /// `Defects::csds_old_error_state`.
    pub fn csds(
        &self,
        type_url: &str,
        name: String,
        old_shape: bool,
        timestamp: impl Fn(Instant) -> Timestamp,
    ) -> GenericXdsConfig {
        let client_status = match self.status {
            CacheStatus::Requested => ClientResourceStatus::Requested,
            CacheStatus::Acked => ClientResourceStatus::Acked,
            CacheStatus::Nacked => ClientResourceStatus::Nacked,
            CacheStatus::DoesNotExist => ClientResourceStatus::DoesNotExist,
            CacheStatus::Timeout => ClientResourceStatus::Timeout,
            CacheStatus::ReceivedError => ClientResourceStatus::ReceivedError,
        };
        let mut entry = GenericXdsConfig {
            type_url: type_url.to_string(),
            name,
            client_status: client_status as i32,
            ..Default::default()
        };
        if self.value.is_some() {
            entry.version_info = self.version.clone();
            entry.last_updated = self.update_time.map(&timestamp);
            entry.xds_config = Some(Any {
                type_url: type_url.to_string(),
                value: self.serialized.clone(),
            });
        }
        // C-core's FillGenericXdsConfig: an error state while a failure is
        // recorded (a NACK, a deletion, the timer, a timeout), its details
        // the status message (a NACK's with "invalid resource: "), and the
        // version and time only when a response caused it.
        let failed = matches!(
            self.status,
            CacheStatus::Nacked | CacheStatus::ReceivedError
        ) || !self.failed_details.is_empty();
        if failed && !old_shape {
            let details = if self.status == CacheStatus::Nacked {
                format!("invalid resource: {}", self.failed_details)
            } else {
                self.failed_details.clone()
            };
            let from_a_response = !self.failed_version.is_empty();
            entry.error_state = Some(UpdateFailureState {
                last_update_attempt: self
                    .failed_update_time
                    .filter(|_| from_a_response)
                    .map(&timestamp),
                details,
                version_info: self.failed_version.clone(),
                failed_configuration: None,
            });
        } else if old_shape && self.status == CacheStatus::Nacked {
            // `Defects::csds_old_error_state`: NACKs only, bare details.
            entry.error_state = Some(UpdateFailureState {
                last_update_attempt: self.failed_update_time.map(&timestamp),
                details: self.failed_details.clone(),
                version_info: self.failed_version.clone(),
                failed_configuration: None,
            });
        }
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{ClusterKind, ClusterResource, LbPolicy};

    fn cluster(service: &str) -> Arc<XdsResource> {
        Arc::new(XdsResource::Cluster(ClusterResource {
            kind: ClusterKind::Eds {
                eds_service_name: Some(service.to_string()),
            },
            lb_policy: LbPolicy::RoundRobin,
            lrs_load_reporting: false,
            max_concurrent_requests: 1024,
        }))
    }

    fn now() -> Instant {
        Instant::now()
    }

    fn status(entry: &ResourceState) -> i32 {
        entry
            .csds("t", "c1".into(), false, |_| Timestamp::default())
            .client_status
    }

    #[test]
    fn a_new_value_is_news_and_an_identical_one_is_not() {
        let mut entry = ResourceState::new();
        assert!(entry.is_awaited());
        let event = entry.accept(cluster("e1"), vec![1], "1", now(), false);
        assert!(matches!(event, Some(WatcherEvent::Changed(_))));
        assert_eq!(
            entry.accept(cluster("e1"), vec![1], "2", now(), false),
            None
        );
        assert_eq!(
            entry.accept(cluster("e1"), vec![1], "3", now(), true),
            Some(WatcherEvent::AmbientErrorCleared)
        );
        // An accepted entry keeps the version it was first received with.
        let csds = entry.csds("t", "c1".into(), false, |_| Timestamp::default());
        assert_eq!(csds.version_info, "1");
    }

    #[test]
    fn a_rejection_keeps_the_value_as_an_ambient_error_unless_told_to_drop_it() {
        let mut entry = ResourceState::new();
        assert!(matches!(
            entry.reject("bad", "1", now(), false),
            WatcherEvent::ResourceError(_)
        ));
        entry.accept(cluster("e1"), vec![1], "2", now(), false);
        assert!(matches!(
            entry.reject("bad", "3", now(), false),
            WatcherEvent::AmbientError(_)
        ));
        assert!(entry.is_cached());
        assert_eq!(status(&entry), ClientResourceStatus::Nacked as i32);
        assert!(matches!(
            entry.reject("bad", "4", now(), true),
            WatcherEvent::ResourceError(_)
        ));
        assert!(!entry.is_cached());
        // A new watcher hears the NACK.
        assert!(matches!(
            entry.events_for_new_watcher_a53().as_slice(),
            [WatcherEvent::ResourceError(e)] if e.message == "invalid resource: bad"
        ));
    }

    #[test]
    fn deletions_a53_and_a88() {
        let mut entry = ResourceState::new();
        entry.accept(cluster("e1"), vec![1], "1", now(), false);
        assert!(entry.ignore_deletion());
        assert!(!entry.ignore_deletion(), "logged once");
        assert!(entry.end_ignored_deletion());
        assert_eq!(entry.delete("2", now()), WatcherEvent::DoesNotExist);
        assert_eq!(
            entry.events_for_new_watcher_a53(),
            [WatcherEvent::DoesNotExist]
        );

        let mut entry = ResourceState::new();
        entry.accept(cluster("e1"), vec![1], "1", now(), false);
        assert!(matches!(
            entry.delete_as_data_error("2", now(), false),
            WatcherEvent::AmbientError(e) if e.code == Code::NotFound
        ));
        assert!(entry.is_cached());
        assert_eq!(status(&entry), ClientResourceStatus::DoesNotExist as i32);
        assert!(matches!(
            entry.delete_as_data_error("3", now(), true),
            WatcherEvent::ResourceError(_)
        ));
        assert!(!entry.is_cached());
    }

    #[test]
    fn the_timer_spares_cached_values_and_follows_the_profile() {
        let mut cached = ResourceState::new();
        cached.accept(cluster("e1"), vec![1], "1", now(), false);
        assert_eq!(cached.timer_fired(DataErrorHandling::A53, None), None);

        let mut entry = ResourceState::new();
        assert_eq!(
            entry.timer_fired(DataErrorHandling::A53, None),
            Some(WatcherEvent::DoesNotExist)
        );
        let mut entry = ResourceState::new();
        assert!(matches!(
            entry.timer_fired(DataErrorHandling::A88, Some("primary:443")),
            Some(WatcherEvent::ResourceError(e)) if e.code == Code::Unavailable
        ));
        assert_eq!(status(&entry), ClientResourceStatus::Timeout as i32);
    }

    #[test]
    fn new_watchers_hear_the_value_then_the_pending_error() {
        use DataErrorHandling::{A53, A88};
        let kinds = |events: Vec<WatcherEvent>| -> Vec<String> {
            events
                .iter()
                .map(|e| match e {
                    WatcherEvent::Changed(_) => "changed".to_string(),
                    WatcherEvent::AmbientError(e) => format!("ambient {:?}: {}", e.code, e.message),
                    WatcherEvent::ResourceError(e) => {
                        format!("resource {:?}: {}", e.code, e.message)
                    }
                    WatcherEvent::DoesNotExist => "does not exist".to_string(),
                    other => format!("{other:?}"),
                })
                .collect()
        };
        // A NACK after a value: the value, then the NACK as ambient.
        let mut entry = ResourceState::new();
        entry.accept(cluster("e1"), vec![1], "1", now(), false);
        entry.reject("bad", "2", now(), false);
        assert_eq!(
            kinds(entry.events_for_new_watcher(A88)),
            ["changed", "ambient InvalidArgument: invalid resource: bad"]
        );
        // Before A88 too.
        assert_eq!(
            kinds(entry.events_for_new_watcher(A53)),
            ["changed", "ambient InvalidArgument: invalid resource: bad"]
        );
        // A valid update clears it.
        entry.accept(cluster("e2"), vec![2], "3", now(), false);
        assert_eq!(kinds(entry.events_for_new_watcher(A88)), ["changed"]);
        // A deletion kept in cache: the value, then NOT_FOUND.
        entry.delete_as_data_error("4", now(), false);
        assert_eq!(
            kinds(entry.events_for_new_watcher(A88)),
            ["changed", "ambient NotFound: does not exist"]
        );
        // The timer on an entry without a value: the error the others had.
        let mut entry = ResourceState::new();
        entry.timer_fired(A88, None);
        assert_eq!(
            kinds(entry.events_for_new_watcher(A88)),
            ["resource NotFound: does not exist"]
        );
        let mut entry = ResourceState::new();
        entry.timer_fired(A88, Some("primary:443"));
        assert_eq!(
            kinds(entry.events_for_new_watcher(A88)),
            ["resource Unavailable: timeout obtaining resource from xDS server primary:443"]
        );
        // Nothing known yet: nothing to hear.
        assert!(ResourceState::new().events_for_new_watcher(A88).is_empty());
    }

    /// C-core's FillGenericXdsConfig, state by state.
    #[test]
    fn csds_error_state_is_shaped_as_c_core_fills_it() {
        use DataErrorHandling::{A53, A88};
        let shown = |entry: &ResourceState, old: bool| {
            let config = entry.csds("t", "c1".into(), old, |_| Timestamp {
                seconds: 7,
                nanos: 0,
            });
            config
                .error_state
                .map(|e| (e.details, e.version_info, e.last_update_attempt.is_some()))
        };
        let mut entry = ResourceState::new();
        assert_eq!(shown(&entry, false), None, "REQUESTED");
        entry.accept(cluster("e1"), vec![1], "1", now(), false);
        assert_eq!(shown(&entry, false), None, "ACKED");
        entry.reject("bad", "2", now(), false);
        assert_eq!(
            shown(&entry, false),
            Some(("invalid resource: bad".into(), "2".into(), true)),
            "NACKED with a cached value"
        );
        assert_eq!(
            shown(&entry, true),
            Some(("bad".into(), "2".into(), true)),
            "before A88"
        );
        entry.accept(cluster("e1"), vec![1], "3", now(), false);
        assert_eq!(shown(&entry, false), None, "cleared by a valid update");
        entry.delete("4", now());
        assert_eq!(
            shown(&entry, false),
            Some(("does not exist".into(), "4".into(), true)),
            "DOES_NOT_EXIST by a deletion"
        );
        assert_eq!(shown(&entry, true), None, "before A88: NACKs only");
        for handling in [A53, A88] {
            let mut entry = ResourceState::new();
            entry.timer_fired(handling, None);
            assert_eq!(
                shown(&entry, false),
                Some(("does not exist".into(), String::new(), false)),
                "DOES_NOT_EXIST by the timer ({handling:?})"
            );
        }
        let mut entry = ResourceState::new();
        entry.timer_fired(A88, Some("primary:443"));
        assert_eq!(
            shown(&entry, false),
            Some((
                "timeout obtaining resource from xDS server primary:443".into(),
                String::new(),
                false
            )),
            "TIMEOUT"
        );
        let mut entry = ResourceState::new();
        entry.reject("bad", "1", now(), false);
        assert_eq!(
            shown(&entry, false),
            Some(("invalid resource: bad".into(), "1".into(), true)),
            "NACKED without a cached value"
        );
    }
}
