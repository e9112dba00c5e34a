//! `unchanged-not-notified-again`: a watcher is told a resource when its
//! value changes, not each time a response carries it again (a SotW
//! LDS/CDS response re-sends every resource, a server re-sends what a
//! reconnecting client holds). gRFC A28: "The xDS client should try to
//! filter out the duplicate responses, and not notify the watchers";
//! C-core (`ParseResource`: "If the resource didn't change, inhibit
//! watcher notifications"), grpc-java (`onData`: `!Objects.equals(oldData,
//! data)`), grpc-js (`resourcesEqual`) and grpc-go (`handleADSResourceUpdate`)
//! compare and tell only changes. grpc-go tells an unchanged value again
//! after a NACK, to end the ambient error (gRFC A88: an error is cleared
//! when `OnResourceChanged()` is invoked): so a value told again after its
//! watchers heard an error is not read.
//!
//! The timeline records one event per watcher told, not which, so it is
//! read by counting, instant by instant: the watchers of a resource hear
//! a value other than the last one they heard (since an error or
//! does-not-exist, any value is news), and each value at most once per
//! watch of it (of its name, and wildcard watches of its type).
//!
//! What the count cannot settle is not read: an instant where a watch of
//! the resource (or a wildcard of its type) starts or is cancelled, or
//! one after a watch started since its watchers last heard of it (a new
//! watcher may hear the cached value late, grpc-rust: seed 5, schedule
//! 44); a type a watch from a callback watches. Held on virtual time
//! only, where one instant is one moment.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use xds_client_under_test::{ObservedEvent, WatcherNotification};
use xds_vocabulary::ResourceType;

use super::{Invariant, Violation, WatchStep, Watches, held};
use crate::scenario::Scenario;
use crate::timeline::{EventKind, TimelineEvent};

pub const INVARIANT: Invariant = Invariant {
    name: "unchanged-not-notified-again",
    rule: "a watcher is told a resource when its value changes, not again when a response \
           re-sends it unchanged",
    held_to: held::with_watches_on_virtual_time,
    check,
};

/// The wildcard watch's name.
const WILDCARD: &str = "*";

type Key<'a> = (ResourceType, &'a str);

/// What one instant told the watchers of one resource.
struct Told<'a> {
    /// Its watches when the instant began.
    watches: usize,
    /// The value of the run of `changed` events going on, and how many.
    value: Option<&'a str>,
    run: usize,
    /// The first event breaking the rule, and why.
    broken: Option<(usize, String)>,
}

fn check(_: &Scenario, events: &[TimelineEvent]) -> Option<Violation> {
    let from_callback: HashSet<ResourceType> = super::types_watched_from_callbacks(events);
    let mut watches = Watches::default();
    let mut instant: Option<Duration> = None;
    // What the watchers of each resource last heard: a value, or nothing
    // that makes a value old news (`None`: any value is news).
    let mut known: HashMap<Key<'_>, &str> = HashMap::new();
    // Resources whose watches changed since their watchers last heard of
    // them, and types whose wildcard watches did.
    let mut stirred = Stirred::default();
    let mut told: HashMap<Key<'_>, Told<'_>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        if instant != Some(event.at) {
            if let Some(violation) = judge(&mut told, &mut stirred, &mut known) {
                return Some(violation);
            }
            instant = Some(event.at);
        }
        match &event.kind {
            EventKind::Step(text) => match watches.read(text) {
                Some(WatchStep::Started(watched) | WatchStep::Cancelled { watched, .. }) => {
                    stirred.stir(watched);
                }
                None => {}
            },
            EventKind::Client(ObservedEvent::Watcher {
                resource_type,
                name,
                notification,
            }) if !from_callback.contains(resource_type) => {
                let key = (*resource_type, name.as_str());
                let count = |watched| watches.counts().get(&watched).copied().unwrap_or(0);
                let told = told.entry(key).or_insert_with(|| Told {
                    watches: count(key) + count((*resource_type, WILDCARD)),
                    value: known.get(&key).copied(),
                    run: 0,
                    broken: None,
                });
                match notification {
                    WatcherNotification::Changed { summary } => {
                        let broken = if told.value != Some(summary.as_str()) {
                            told.value = Some(summary);
                            told.run = 1;
                            None
                        } else if told.run == 0 {
                            Some(format!(
                                "its watchers were told {summary} again, unchanged since they \
                                 last heard it"
                            ))
                        } else {
                            told.run += 1;
                            (told.watches > 0 && told.run > told.watches).then(|| {
                                format!(
                                    "{} watchers were told {summary} in one instant; {} watch{} it",
                                    told.run,
                                    told.watches,
                                    if told.watches == 1 { "es" } else { "" }
                                )
                            })
                        };
                        if told.broken.is_none() {
                            told.broken = broken.map(|why| (index, why));
                        }
                    }
                    // After an error or does-not-exist any value is news.
                    WatcherNotification::DoesNotExist
                    | WatcherNotification::ResourceError(_)
                    | WatcherNotification::AmbientError(_) => {
                        told.value = None;
                        told.run = 0;
                    }
                    WatcherNotification::AmbientErrorCleared => {}
                }
            }
            _ => {}
        }
    }
    judge(&mut told, &mut stirred, &mut known)
}

/// The resources whose watches changed since their watchers last heard
/// of them.
#[derive(Default)]
struct Stirred<'a> {
    names: HashSet<Key<'a>>,
    /// Types whose wildcard watches changed, with the names heard of since.
    wildcards: HashMap<ResourceType, HashSet<&'a str>>,
}

impl<'a> Stirred<'a> {
    fn stir(&mut self, (t, name): Key<'a>) {
        if name == WILDCARD {
            self.wildcards.insert(t, HashSet::new());
        } else {
            self.names.insert((t, name));
        }
    }

    fn contains(&self, key: &Key<'a>) -> bool {
        self.names.contains(key)
            || self
                .wildcards
                .get(&key.0)
                .is_some_and(|heard| !heard.contains(key.1))
    }

    /// The watchers of `key` heard of it.
    fn settle(&mut self, (t, name): Key<'a>) {
        self.names.remove(&(t, name));
        if let Some(heard) = self.wildcards.get_mut(&t) {
            heard.insert(name);
        }
    }
}

/// The first resource of the instant told a value again, unless its
/// watches changed since its watchers last heard of it; then what its
/// watchers know is this instant's last news, and its watches settled.
fn judge<'a>(
    told: &mut HashMap<Key<'a>, Told<'a>>,
    stirred: &mut Stirred<'a>,
    known: &mut HashMap<Key<'a>, &'a str>,
) -> Option<Violation> {
    let violation = told
        .iter()
        .filter(|(key, _)| !stirred.contains(key))
        .filter_map(|((t, name), told)| {
            let (event, why) = told.broken.as_ref()?;
            Some(Violation {
                event: *event,
                message: format!("{t} {name}: {why}"),
            })
        })
        .min_by_key(|v| v.event);
    if violation.is_some() {
        return violation;
    }
    for (key, told) in told.drain() {
        stirred.settle(key);
        match told.value {
            Some(value) => known.insert(key, value),
            None => known.remove(&key),
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use xds_client_under_test::WatcherNotification;
    use xds_vocabulary::XdsError;

    use super::*;
    use crate::invariant::test_events::{self, step, test_scenario};

    fn later(ms: u64, mut event: TimelineEvent) -> TimelineEvent {
        event.at = Duration::from_millis(ms);
        event
    }

    fn changed(ms: u64, value: &str) -> TimelineEvent {
        later(
            ms,
            test_events::heard(
                "c1",
                WatcherNotification::Changed {
                    summary: value.into(),
                },
            ),
        )
    }

    #[test]
    fn a_value_told_again_unchanged_is_caught() {
        let mut events = vec![
            step("watch CDS c1"),
            changed(100, "a"),
            changed(1_000, "b"),
            changed(2_000, "a"),
        ];
        assert_eq!(check(&test_scenario(), &events), None);
        // b again, unchanged (renotifies_unchanged; grpc-rust).
        events.push(changed(3_000, "a"));
        let v = check(&test_scenario(), &events).expect("told again");
        assert_eq!(v.event, 4);
        assert!(v.message.contains("told a again, unchanged"), "{v:?}");
        // Twice in one instant to one watcher.
        let twice = vec![
            step("watch CDS c1"),
            changed(100, "a"),
            changed(1_000, "b"),
            changed(1_000, "b"),
        ];
        let v = check(&test_scenario(), &twice).expect("two tellings, one watch");
        assert!(v.message.contains("2 watchers were told b"), "{v:?}");
        // Two watches: once each.
        let two = vec![
            step("watch CDS c1"),
            step("watch CDS c1"),
            changed(100, "a"),
            changed(100, "a"),
            changed(1_000, "b"),
            changed(1_000, "b"),
        ];
        assert_eq!(check(&test_scenario(), &two), None);
    }

    #[test]
    fn a_value_after_an_error_or_a_new_watch_is_not_read() {
        // grpc-go tells the value again after a NACK, to end the error.
        let error = XdsError {
            code: tonic::Code::InvalidArgument,
            message: "nack".into(),
        };
        let after_error = vec![
            step("watch CDS c1"),
            changed(100, "a"),
            later(
                1_000,
                test_events::heard("c1", WatcherNotification::AmbientError(error)),
            ),
            changed(2_000, "a"),
        ];
        assert_eq!(check(&test_scenario(), &after_error), None);
        // Does-not-exist, then the value: news.
        let after_gone = vec![
            step("watch CDS c1"),
            changed(100, "a"),
            later(
                1_000,
                test_events::heard("c1", WatcherNotification::DoesNotExist),
            ),
            changed(2_000, "a"),
        ];
        assert_eq!(check(&test_scenario(), &after_gone), None);
        // A second watch, told the cached value later (grpc-rust, seed 5,
        // schedule 44); then the value again is read.
        let mut late = vec![
            step("watch CDS c1"),
            changed(100, "a"),
            later(1_000, step("watch CDS c1")),
            changed(7_000, "a"),
        ];
        assert_eq!(check(&test_scenario(), &late), None);
        late.push(changed(9_000, "a"));
        assert!(check(&test_scenario(), &late).is_some());
        // A wildcard watch started: every name of the type may hear late.
        let wildcard = vec![
            step("watch CDS c1"),
            changed(100, "a"),
            later(1_000, step("watch CDS *")),
            changed(7_000, "a"),
        ];
        assert_eq!(check(&test_scenario(), &wildcard), None);
        // A type a callback watches.
        let callback = vec![
            step("watch CDS c1"),
            step("watch CDS c1 from the next callback of CDS c2"),
            changed(100, "a"),
            changed(1_000, "a"),
        ];
        assert_eq!(check(&test_scenario(), &callback), None);
    }
}
