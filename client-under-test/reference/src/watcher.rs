//! What watchers hear, and the errors they hear about.

use std::sync::Arc;

use crate::read_delay::ReadDelayHandle;
use crate::resource::XdsResource;

pub use xds_vocabulary::status::{XdsError, code_name};

/// One notification to a resource watcher.
#[derive(Clone, Debug, PartialEq)]
pub enum WatcherEvent {
    /// A new value (a valid, changed resource) to use from now on.
    Changed(Arc<XdsResource>),
    /// Nothing usable: no value was ever received, or the one held is gone
    /// (an invalid first version, a connectivity failure before any data,
    /// or, in the A88 profile, a deletion treated as a data error).
    ResourceError(XdsError),
    /// A problem that does not take the cached value away: keep using it.
    AmbientError(XdsError),
    /// An earlier ambient error is over (an identical resource arrived on
    /// a channel that had failed).
    AmbientErrorCleared,
    /// The resource does not exist (deleted, or the 15 s timer fired).
    DoesNotExist,
}

/// Receives the events of one watch. Called on the client's own task, in
/// order; it must not block (send to a channel if there is work to do).
pub trait ResourceWatcher: Send + Sync + 'static {
    fn on_event(&self, event: WatcherEvent);

    /// An event about the resource `name`: the watched one, or for a
    /// wildcard watch (`*`) the resource it is about (`*` for what
    /// concerns the whole watch, such as a channel error).
    fn on_resource_event(&self, name: &str, event: WatcherEvent) {
        let _ = name;
        self.on_event(event)
    }

    /// [`Self::on_resource_event`], with the handle of the stream read
    /// that caused it: keeping a clone holds the stream's next read until
    /// the watcher drops it (gRPC's ReadDelayHandle). By default it is
    /// dropped at once.
    fn on_resource_event_with_read(&self, name: &str, event: WatcherEvent, read: ReadDelayHandle) {
        drop(read);
        self.on_resource_event(name, event)
    }
}

impl<F: Fn(WatcherEvent) + Send + Sync + 'static> ResourceWatcher for F {
    fn on_event(&self, event: WatcherEvent) {
        self(event)
    }
}
