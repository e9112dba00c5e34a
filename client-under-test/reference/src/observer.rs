//! Who hears the client's own events (the vocabulary's [`ClientEvent`]:
//! the log lines gRFCs require, ADS call lifecycle, backoff, and the
//! per-server connectivity state of A57). A harness puts them on a timeline.

pub use xds_vocabulary::{CallService, ClientEvent, LogLevel};

/// Receives [`ClientEvent`]s, on the client's task, in order.
pub trait ClientObserver: Send + Sync + 'static {
    fn on_client_event(&self, event: ClientEvent);
}

impl<F: Fn(ClientEvent) + Send + Sync + 'static> ClientObserver for F {
    fn on_client_event(&self, event: ClientEvent) {
        self(event)
    }
}
