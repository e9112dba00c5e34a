//! Auto mode's triggers that are not a request: a store change (and the
//! end of a hang, `effect::hang`). Each stream answers by its own
//! protocol's rules: this is where the protocols meet, above them all.

use std::collections::BTreeSet;

use xds_vocabulary::AdsProtocol;
use xds_vocabulary::kds::KdsRpc;

use crate::resource::ServedResource;
use crate::state::State;
use crate::stream::StreamKind;

impl State {
    /// Auto mode's answer for `type_url` on one stream, by its protocol;
    /// `changed`: the names that may have changed, if known (SotW looks at
    /// everything anyway: each response carries the whole state).
    pub(crate) fn auto_respond(
        &mut self,
        stream_id: u64,
        type_url: &str,
        changed: Option<&BTreeSet<String>>,
    ) {
        match self.streams.get(&stream_id).map(|s| s.protocol.kind()) {
            Some(StreamKind::Ads(AdsProtocol::Sotw)) => self.sotw_auto_respond(stream_id, type_url),
            Some(StreamKind::Ads(AdsProtocol::Delta)) => {
                self.delta_auto_respond(stream_id, type_url, changed)
            }
            Some(StreamKind::Kds(KdsRpc::GlobalToZoneSync)) => {
                self.kds_auto_respond(stream_id, type_url, changed)
            }
            // The zone answers there: the store is not what it asks for.
            Some(StreamKind::Kds(KdsRpc::ZoneToGlobalSync)) | None => {}
        }
    }

    /// Adds or replaces resources: one store change per type touched, each
    /// recorded and followed by auto-mode pushes.
    pub fn set_resources(&mut self, resources: Vec<ServedResource>, version: Option<String>) {
        for change in self.store.set(resources, version) {
            let type_url = change.type_url.clone();
            let changed = change.names();
            self.record(change.into_event());
            self.on_store_change(&type_url, &changed);
        }
    }

    /// Removes resources of one type: one store change, recorded, then
    /// auto-mode pushes.
    pub fn remove_resources(&mut self, type_url: &str, names: &[String], version: Option<String>) {
        let change = self.store.remove(type_url, names, version);
        let changed = change.names();
        self.record(change.into_event());
        self.on_store_change(type_url, &changed);
    }

    /// A store change of `type_url` (of the names `changed`): every stream
    /// gets what its rules say, in stream-id order.
    pub fn on_store_change(&mut self, type_url: &str, changed: &BTreeSet<String>) {
        for id in self.open_stream_ids() {
            self.auto_respond(id, type_url, Some(changed));
        }
    }
}
