//! gRFC A78's `grpc.xds_client.resources` gauge, kept as last reported.
//!
//! grpc-rust's XdsClient (the watch client, and each tonic-xds channel's)
//! has no CSDS; this gauge is the only view of its cache it gives: how many
//! resources it holds per type and cache state, without names. The harness
//! projects a scenario's `csds` checks onto it where that is exact.

use std::sync::{Arc, Mutex};

use xds_client::metrics::{attrs, instruments};
use xds_client::{Instrument, KeyValue, MetricsRecorder, Value};

use crate::{ResourceCountKey, ResourceCounts};

/// Receives the crate's A78 measurements and keeps the resource gauge.
#[derive(Default)]
pub struct ResourceGauge {
    counts: Mutex<ResourceCounts>,
}

impl ResourceGauge {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Every bucket's last value (buckets at 0 left out).
    pub fn snapshot(&self) -> ResourceCounts {
        self.counts.lock().expect("gauge lock").clone()
    }
}

fn attr(attrs: &[KeyValue], key: &str) -> String {
    attrs
        .iter()
        .find(|a| a.key == key)
        .map(|a| match &a.value {
            Value::Str(s) => s.to_string(),
            other => format!("{other:?}"),
        })
        .unwrap_or_default()
}

impl MetricsRecorder for ResourceGauge {
    // The counters (updates valid/invalid, server failures) say what
    // happened, not what is held: CSDS is a state, so only the gauge
    // stands in for it.
    fn add_counter_u64(&self, _: &'static Instrument, _: u64, _: &[KeyValue]) {}

    fn add_up_down_counter_i64(&self, _: &'static Instrument, _: i64, _: &[KeyValue]) {}

    fn record_histogram_f64(&self, _: &'static Instrument, _: f64, _: &[KeyValue]) {}

    fn record_gauge_i64(&self, instrument: &'static Instrument, value: i64, attrs: &[KeyValue]) {
        if instrument.name != instruments::XDS_CLIENT_RESOURCES.name {
            return;
        }
        let key = ResourceCountKey {
            target: attr(attrs, attrs::GRPC_TARGET),
            authority: attr(attrs, attrs::GRPC_XDS_AUTHORITY),
            type_url: attr(attrs, attrs::GRPC_XDS_RESOURCE_TYPE),
            cache_state: attr(attrs, attrs::GRPC_XDS_CACHE_STATE),
        };
        let mut counts = self.counts.lock().expect("gauge lock");
        // A bucket that emptied is pushed as 0 (the crate's push gauge);
        // dropping it keeps the view to what is held.
        if value == 0 {
            counts.remove(&key);
        } else {
            counts.insert(key, value);
        }
    }
}
