//! `silent-after-cancel`: once the last watch of a resource is cancelled,
//! its watchers hear nothing more of it until it is watched again (gRFC
//! A27's watcher API: a cancelled watcher is never called again), unless a
//! wildcard watch of its type hears every resource of the type.

use std::collections::HashMap;

use xds_client_under_test::ObservedEvent;
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, WatchStep, Watches, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "silent-after-cancel",
    rule: "a resource whose watches were all cancelled is not reported to watchers until \
           it is watched again",
    held_to: held::with_watches,
    check,
};

fn check(_scenario: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    let mut watches = Watches::default();
    // (type, name) -> the event of the cancel that ended its last watch.
    let mut cancelled: HashMap<(ResourceType, &str), usize> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Step(text) => match watches.read(text) {
                Some(WatchStep::Started(watched)) => {
                    cancelled.remove(&watched);
                }
                Some(WatchStep::Cancelled {
                    watched,
                    last: true,
                    ..
                }) => {
                    cancelled.insert(watched, index);
                }
                _ => {}
            },
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                ..
            }) => {
                if watches.wildcard(*resource_type) {
                    continue;
                }
                if let Some(cancel) = cancelled.get(&(*resource_type, name.as_str())) {
                    return Some(Violation {
                        event: index,
                        message: format!(
                            "the watchers of {resource_type} {name} are told of it after its last \
                             watch was cancelled (at #{})",
                            cancel + 1
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use xds_client_under_test::WatcherNotification;

    use super::*;
    use crate::invariant::test_events::{self, step, test_scenario};

    fn heard(name: &str) -> TimelineEvent {
        test_events::heard(name, WatcherNotification::DoesNotExist)
    }

    #[test]
    fn events_after_the_last_cancel_are_caught_and_a_new_watch_or_a_wildcard_excuses_them() {
        let twice_watched = vec![
            step("watch CDS c1"),
            step("watch CDS c1"),
            step("cancel watch CDS c1"),
            heard("c1"),
        ];
        assert_eq!(check(&test_scenario(), &twice_watched), None);
        let mut events = vec![
            step("watch CDS c1"),
            heard("c1"),
            step("cancel watch CDS c1"),
            heard("c1"),
        ];
        let v = check(&test_scenario(), &events).expect("an event after the cancel");
        assert_eq!(v.event, 3);
        assert!(v.message.contains("(at #3)"), "{v:?}");
        events.insert(3, step("watch CDS c1 from the next callback of CDS c2"));
        assert_eq!(check(&test_scenario(), &events), None);
        events.remove(3);
        events.insert(3, step("watch CDS *"));
        assert_eq!(check(&test_scenario(), &events), None);
    }
}
