//! `every-watcher-hears-each-change`: a change of a resource reaches every
//! watcher of it, each watch of its name and each wildcard watch of its
//! type (gRFC A27's watcher API: every watcher is told; the xDS protocol's
//! wildcard subscription is to every resource of the type, the ones first
//! watched by name too).
//!
//! The timeline records one event per watcher told, without saying which
//! watcher; so it is read by counting. In an instant where watchers of a
//! resource hear a new value (a `changed` whose value differs from the
//! last one its watchers heard, or the first since it was dropped), there
//! are at least as many `changed` events of it as the script has watches
//! of it then: of its name, and wildcard watches of its type. (A value
//! heard again is no change: a new watcher told the cached value late, or
//! a client telling an unchanged resource again, is not read here.) One fewer is a watcher left with an old value or
//! none (the reference client's defect `wildcard_misses_named_first`: a
//! resource first watched by name while a wildcard watch was on never
//! reached the wildcard watcher, `delta/wildcard-hears-a-resource-first-
//! watched-by-name`).
//!
//! What the count cannot settle is not read:
//! - an instant with a watch or a cancel of the resource, or of a wildcard
//!   of its type: a new watcher may hear the cached value there, a
//!   cancelled one nothing;
//! - a type a watch from a callback watches (it starts when the callback
//!   runs, in some other step's instant);
//! - runs with other XdsClients or authorities (`one_client`).
//!
//! Held on virtual time only, where one instant is one moment: on real
//! time a client's notifications to its watchers may straddle two.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, WatchStep, Watches, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "every-watcher-hears-each-change",
    rule: "a change of a resource reaches every watcher of it: each watch of its name and \
           each wildcard watch of its type",
    held_to: held::with_watches_on_virtual_time,
    check,
};

/// The wildcard watch's name.
const WILDCARD: &str = "*";

/// The `changed` events of one resource in one instant.
struct Told<'a> {
    /// The first one's event.
    first: usize,
    /// How many.
    count: usize,
    /// Watches of its name and wildcard watches of its type at the first.
    named: usize,
    wildcard: usize,
    /// Whether one told a value other than the last its watchers heard
    /// before the instant.
    new: bool,
    /// The value its watchers know at the end of the instant (`None`:
    /// dropped).
    last: Option<&'a str>,
}

fn check(scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    super::one_client(scenario)?;
    // Types a watch from a callback watches.
    let from_callback: HashSet<ResourceType> = super::types_watched_from_callbacks(events);
    let mut watches = Watches::default();
    let mut instant: Option<Duration> = None;
    // This instant's `changed` events per resource, and the resources
    // (and types, for a wildcard) a step watched or cancelled in it.
    let mut told: HashMap<(ResourceType, &str), Told<'_>> = HashMap::new();
    let mut stirred: HashSet<(ResourceType, &str)> = HashSet::new();
    // The value the watchers of each resource last heard, before this
    // instant.
    let mut known: HashMap<(ResourceType, &str), &str> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        if instant != Some(event.at) {
            if let Some(violation) = judge(&told, &stirred) {
                return Some(violation);
            }
            for (key, told) in told.drain() {
                match told.last {
                    Some(value) => known.insert(key, value),
                    None => known.remove(&key),
                };
            }
            stirred.clear();
            instant = Some(event.at);
        }
        match &event.kind {
            EventKind::Step(text) => match watches.read(text) {
                Some(WatchStep::Started(watched) | WatchStep::Cancelled { watched, .. }) => {
                    stirred.insert(watched);
                }
                None => {}
            },
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) if !from_callback.contains(resource_type) => {
                let key = (*resource_type, name.as_str());
                let before = known.get(&key).copied();
                let count = |watched| watches.counts().get(&watched).copied().unwrap_or(0);
                let told = told.entry(key).or_insert_with(|| Told {
                    first: index,
                    count: 0,
                    named: count(key),
                    wildcard: count((*resource_type, WILDCARD)),
                    new: false,
                    last: before,
                });
                match notification {
                    WatcherNotification::Changed { summary } => {
                        told.count += 1;
                        told.new |= before != Some(summary.as_str());
                        told.last = Some(summary);
                    }
                    WatcherNotification::DoesNotExist | WatcherNotification::ResourceError(_) => {
                        told.last = None;
                    }
                    WatcherNotification::AmbientError(_)
                    | WatcherNotification::AmbientErrorCleared => {}
                }
            }
            _ => {}
        }
    }
    judge(&told, &stirred)
}

/// The first resource of an instant whose change reached fewer watchers
/// than watch it, unless a step of the instant stirred its watches.
fn judge(
    told: &HashMap<(ResourceType, &str), Told<'_>>,
    stirred: &HashSet<(ResourceType, &str)>,
) -> Option<Violation> {
    told.iter()
        .filter(|((t, name), _)| {
            !stirred.contains(&(*t, name)) && !stirred.contains(&(*t, WILDCARD))
        })
        .filter(|(_, told)| told.new && told.count < told.named + told.wildcard)
        .min_by_key(|(_, told)| told.first)
        .map(|((t, name), told)| Violation {
            event: told.first,
            message: format!(
                "{t} {name} changed, and {} of its watchers heard it in that instant; {} \
                 watch{} it ({} by name, {} wildcard)",
                told.count,
                told.named + told.wildcard,
                if told.named + told.wildcard == 1 {
                    "es"
                } else {
                    ""
                },
                told.named,
                told.wildcard
            ),
        })
}

#[cfg(test)]
mod tests {
    use xds_client_under_test::WatcherNotification;

    use super::*;
    use crate::invariant::test_events::{self, at, step, test_scenario};
    use crate::timeline::Source;

    fn changed(name: &str) -> TimelineEvent {
        test_events::heard(
            name,
            WatcherNotification::Changed {
                summary: "v".into(),
            },
        )
    }

    fn later(ms: u64, mut event: TimelineEvent) -> TimelineEvent {
        event.at = Duration::from_millis(ms);
        event
    }

    #[test]
    fn a_change_told_to_fewer_watchers_than_watch_it_is_caught() {
        // A wildcard watch, then c1 watched by name: c1's value reaches
        // both watchers, later.
        let mut events = vec![
            step("watch CDS *"),
            step("watch CDS c1"),
            later(1_000, changed("c1")),
            later(1_000, changed("c1")),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // The wildcard watcher missed it (wildcard_misses_named_first).
        events.pop();
        let v = check(&test_scenario(), &events).expect("one of two told");
        assert_eq!(v.event, 2);
        assert!(v.message.contains("1 of its watchers"), "{v:?}");
        assert!(v.message.contains("1 by name, 1 wildcard"), "{v:?}");
        // Two named watchers, one told.
        let two = vec![
            step("watch CDS c1"),
            step("watch CDS c1"),
            later(1_000, changed("c1")),
        ];
        assert!(check(&test_scenario(), &two).is_some());
        // A resource nobody watches by name or wildcard: nothing owed.
        let none = vec![step("watch CDS c2"), later(1_000, changed("c1"))];
        assert_eq!(check(&test_scenario(), &none), None);
    }

    /// grpc-rust (seed 5, schedule 44): a watch during an outage is told
    /// the cached value only once the client reconnects, in an instant of
    /// its own: a value heard again is no change.
    #[test]
    fn a_value_heard_again_is_no_change() {
        let mut events = vec![
            step("watch CDS *"),
            later(100, changed("c1")),
            later(1_000, step("watch CDS c1")),
            later(7_000, changed("c1")),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // Dropped, then the same value again: a change.
        events.insert(
            3,
            later(
                6_000,
                test_events::heard("c1", WatcherNotification::DoesNotExist),
            ),
        );
        assert!(check(&test_scenario(), &events).is_some());
    }

    #[test]
    fn an_instant_that_stirred_the_watches_is_not_read() {
        // The second watch in the instant of the change: it may hear the
        // cached value before the change, or not.
        let stirred = vec![
            step("watch CDS c1"),
            later(1_000, step("watch CDS c1")),
            later(1_000, changed("c1")),
        ];
        assert_eq!(check(&test_scenario(), &stirred), None);
        // A cancel of a wildcard in the instant stirs every name.
        let cancelled = vec![
            step("watch CDS *"),
            step("watch CDS c1"),
            later(1_000, step("cancel watch CDS *")),
            later(1_000, changed("c1")),
        ];
        assert_eq!(check(&test_scenario(), &cancelled), None);
        // A watch from a callback of the type: its count is unknown.
        let callback = vec![
            step("watch CDS c1"),
            step("watch CDS c1 from the next callback of CDS c2"),
            later(1_000, changed("c1")),
        ];
        assert_eq!(check(&test_scenario(), &callback), None);
        // A change in another instant than the watch is read.
        let read = vec![
            step("watch CDS c1"),
            step("watch CDS c1"),
            later(1_000, changed("c1")),
            later(
                2_000,
                at(2_000, Source::Step, EventKind::Step("wait 1s".into())),
            ),
        ];
        assert!(check(&test_scenario(), &read).is_some());
    }
}
