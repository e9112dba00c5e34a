//! Explaining a failed expectation the way a reader needs it: what was
//! expected and in which window, the events that came closest with a
//! field-by-field comparison, and the timeline around them, numbered as
//! the written timeline's lines are (`#12` is line 12 of
//! `timelines/<scenario>.txt`).
//!
//! Knows nothing of how events were found or waited for: it is given the
//! events, the matcher and the window, and only renders.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

use xds_conformance_reports::matrix::MarkKind;

use crate::matcher::{Explained, Matcher, Translate};
use crate::timeline::{Mark, TimelineEvent, line_numbers, render_line};

/// How many candidates a message shows.
const CANDIDATES: usize = 3;

/// An event of the kind the matcher looks for, and how it compares.
#[derive(Debug)]
pub(super) struct Candidate {
    pub index: usize,
    pub explained: Explained,
    /// Why it was not taken even if every field matched, if not for that.
    pub aside: Option<Aside>,
}

/// In the order candidates rank: an event that came late says most about
/// a failure, one from before the last action least.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Aside {
    /// It happened after the window closed.
    AfterWindow,
    /// An earlier expectation used it.
    Used,
    /// It happened before the last action: expectations look after it.
    BeforeSearch,
}

impl Aside {
    fn says(self) -> &'static str {
        match self {
            Aside::Used => "already matched by an earlier expectation",
            Aside::BeforeSearch => {
                "before the last action step: an expectation looks only at what follows it"
            }
            Aside::AfterWindow => "after the window closed",
        }
    }
}

/// What the search looked at.
pub(super) struct Search<'a> {
    pub events: &'a [TimelineEvent],
    /// Index of the first event the expectation could use.
    pub from: usize,
    pub used: &'a BTreeSet<usize>,
    /// The window, since the run started.
    pub window: (Duration, Duration),
    pub text: Translate<'a>,
    /// How a line reads in the scenario's terms (real TCP runs rewrite
    /// addresses).
    pub line: &'a dyn Fn(&str) -> String,
}

impl Search<'_> {
    /// Every event of the matcher's kind, closest first: fewest differing
    /// fields, then those the search could have taken, then nearest the
    /// window.
    pub(super) fn candidates(&self, matcher: &Matcher) -> Vec<Candidate> {
        let (open, close) = self.window;
        let mut found: Vec<Candidate> = self
            .events
            .iter()
            .enumerate()
            .filter_map(|(index, event)| {
                let explained = matcher.explain(event, self.text)?;
                let aside = if self.used.contains(&index) {
                    Some(Aside::Used)
                } else if index < self.from {
                    Some(Aside::BeforeSearch)
                } else if event.at > close {
                    Some(Aside::AfterWindow)
                } else {
                    None
                };
                Some(Candidate {
                    index,
                    explained,
                    aside,
                })
            })
            .collect();
        let distance = |c: &Candidate| {
            let at = self.events[c.index].at;
            if at < open {
                open - at
            } else {
                at.saturating_sub(close)
            }
        };
        found.sort_by_key(|c| (c.explained.mismatches(), c.aside, distance(c), c.index));
        // The closest event the search could have taken decides the
        // failure: it is what the client did when the scenario asked.
        // Events it could not take (used, before the last action, late)
        // may differ in fewer fields, and three of them (a client that
        // answered the same way before the action) pushed it out: it is
        // always shown, in the last place if not before.
        if let Some(at) = found.iter().position(|c| c.aside.is_none())
            && at >= CANDIDATES
        {
            let decisive = found.remove(at);
            found.insert(CANDIDATES - 1, decisive);
        }
        found.truncate(CANDIDATES);
        found
    }

    /// The message for "nothing matched": what was expected, the
    /// candidates compared field by field, the timeline around the best.
    pub(super) fn nothing_matched(&self, head: &str, matcher: &Matcher) -> (String, Mark) {
        let numbers = line_numbers(self.events);
        let candidates = self.candidates(matcher);
        let mut out = head.to_string();
        let start = first_line_from(&numbers, self.from);
        let _ = write!(out, "; nothing matched from #{start} on");
        if candidates.is_empty() {
            out.push_str("\nno event of that kind happened at all");
        } else {
            out.push_str("\nnearest candidates:");
            for candidate in &candidates {
                self.write_candidate(&mut out, &numbers, candidate, matcher);
            }
        }
        let focus = candidates.first().map(|c| c.index);
        let marked: BTreeSet<usize> = candidates.iter().map(|c| c.index).collect();
        out.push('\n');
        out.push_str(&self.context(&numbers, focus.unwrap_or(self.from), &marked));
        let mark = Mark {
            kind: MarkKind::Failing,
            window: Some(self.window),
            event: focus,
            expected: matcher.describe(),
        };
        (out, mark)
    }

    fn write_candidate(
        &self,
        out: &mut String,
        numbers: &[Option<usize>],
        candidate: &Candidate,
        matcher: &Matcher,
    ) {
        let event = &self.events[candidate.index];
        let line = render_line(event)
            .map(|l| (self.line)(&l))
            .unwrap_or_else(|| {
                format!("{:>9.3}s  (not shown in timelines)", event.at.as_secs_f64())
            });
        let number = numbers[candidate.index].map_or("#-".to_string(), |n| format!("#{n}"));
        let _ = write!(out, "\n  {number:<5}{}", line.trim_start());
        if let Some(aside) = candidate.aside {
            let _ = write!(out, "\n         ({})", aside.says());
        }
        if let (Some(i), Matcher::AnyOf(alternatives)) = (candidate.explained.alternative, matcher)
        {
            let _ = write!(
                out,
                "\n         closest alternative {} of {}",
                i + 1,
                alternatives.len()
            );
        }
        let width = candidate
            .explained
            .fields
            .iter()
            .map(|f| f.name.len())
            .max()
            .unwrap_or(0);
        for field in &candidate.explained.fields {
            if field.ok {
                let _ = write!(out, "\n         ok  {:<width$}  {}", field.name, field.want);
            } else {
                let _ = write!(
                    out,
                    "\n         NO  {:<width$}  want {}, got {}",
                    field.name, field.want, field.got
                );
            }
        }
    }

    /// The timeline around event `focus`, each line numbered as in the
    /// written timeline, `marked` events flagged with `>`.
    pub(super) fn context(
        &self,
        numbers: &[Option<usize>],
        focus: usize,
        marked: &BTreeSet<usize>,
    ) -> String {
        context(self.events, numbers, focus, marked, self.line)
    }
}

/// The timeline around event `focus` (5 lines before, 25 after), each
/// line numbered as in the written timeline, `marked` events flagged.
pub(super) fn context(
    events: &[TimelineEvent],
    numbers: &[Option<usize>],
    focus: usize,
    marked: &BTreeSet<usize>,
    line: &dyn Fn(&str) -> String,
) -> String {
    let shown: Vec<usize> = (0..events.len())
        .filter(|&i| numbers[i].is_some())
        .collect();
    let at = shown.partition_point(|&i| i < focus);
    let from = at.saturating_sub(5);
    let to = (at + 25).min(shown.len());
    let total = numbers.iter().flatten().count();
    let mut out = match (shown.get(from), shown.get(to.saturating_sub(1))) {
        (Some(&a), Some(&b)) => format!(
            "timeline #{}..#{} of {total} (numbered as the lines of the written timeline):\n",
            numbers[a].unwrap_or(0),
            numbers[b].unwrap_or(0)
        ),
        _ => "timeline: empty\n".to_string(),
    };
    for &index in &shown[from..to] {
        let Some(rendered) = render_line(&events[index]) else {
            continue;
        };
        let flag = if marked.contains(&index) { ">" } else { " " };
        let number = numbers[index].unwrap_or(0);
        let _ = writeln!(out, "{flag}#{number:<4}{}", line(&rendered));
    }
    out
}

/// The line number of the first shown event at or after `index` (one
/// past the last line if there is none).
pub(super) fn first_line_from(numbers: &[Option<usize>], index: usize) -> usize {
    numbers
        .iter()
        .skip(index)
        .flatten()
        .next()
        .copied()
        .unwrap_or_else(|| numbers.iter().flatten().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::as_written;
    use crate::matcher::watcher::{WatcherEventKind, WatcherMatcher};
    use crate::matcher::{Alternative, channel::ChannelMatcher};
    use crate::timeline::Source;
    use crate::timeline::{EventKind, render_events};
    use xds_client_under_test::{ConnectivityState, ObservedEvent, WatcherNotification};
    use xds_vocabulary::ResourceType;

    fn at(ms: u64, source: Source, kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at: Duration::from_millis(ms),
            source,
            kind,
        }
    }

    fn watcher(ms: u64, name: &str, notification: WatcherNotification) -> TimelineEvent {
        at(
            ms,
            Source::Client,
            EventKind::Client(ObservedEvent::Watcher {
                resource_type: ResourceType::Cluster,
                name: name.into(),
                notification,
            }),
        )
    }

    fn changed(ms: u64, name: &str) -> TimelineEvent {
        let summary = format!("EDS service={name}");
        watcher(ms, name, WatcherNotification::Changed { summary })
    }

    fn step(ms: u64, text: &str) -> TimelineEvent {
        at(ms, Source::Step, EventKind::Step(text.into()))
    }

    fn wants(name: &str, event: WatcherEventKind) -> Matcher {
        Matcher::Watcher(WatcherMatcher {
            resource_type: Some(ResourceType::Cluster),
            name: Some(name.into()),
            event: Some(event),
            code: None,
            contains: None,
        })
    }

    /// A script: c1 changed, a barrier (not shown), the step, c2 changed,
    /// c1 changed again (used by an earlier expectation), c1 does not exist.
    fn script() -> Vec<TimelineEvent> {
        vec![
            changed(0, "c1"),
            at(0, Source::Harness, EventKind::Barrier),
            step(1000, "watch CDS c1"),
            changed(1000, "c2"),
            changed(1000, "c1"),
            watcher(2000, "c1", WatcherNotification::DoesNotExist),
        ]
    }

    fn explain(events: &[TimelineEvent], used: &[usize], matcher: &Matcher) -> (String, Mark) {
        let used: BTreeSet<usize> = used.iter().copied().collect();
        let search = Search {
            events,
            from: 2,
            used: &used,
            window: (Duration::from_millis(1000), Duration::from_millis(1500)),
            text: &as_written,
            line: &|l| l.to_string(),
        };
        search.nothing_matched("x.yaml:9:5: expected it", matcher)
    }

    #[test]
    fn candidates_come_closest_first_each_compared_field_by_field() {
        let events = script();
        let (message, mark) = explain(&events, &[4], &wants("c1", WatcherEventKind::AmbientError));
        let expected = "\
x.yaml:9:5: expected it; nothing matched from #2 on
nearest candidates:
  #5   2.000s  client   watcher CDS c1: does not exist
         (after the window closed)
         ok  type   CDS
         ok  name   c1
         NO  event  want ambient_error, got does_not_exist
  #4   1.000s  client   watcher CDS c1: changed: EDS service=c1
         (already matched by an earlier expectation)
         ok  type   CDS
         ok  name   c1
         NO  event  want ambient_error, got changed
  #3   1.000s  client   watcher CDS c2: changed: EDS service=c2
         ok  type   CDS
         NO  name   want c1, got c2
         NO  event  want ambient_error, got changed
";
        // (#3, the one event the search could take, ranks after #1 by its
        // fields, and takes its place: what came in the window is shown.)
        assert!(message.starts_with(expected), "{message}");
        assert_eq!(mark.event, Some(5));
        assert_eq!(mark.kind, MarkKind::Failing);
        assert_eq!(
            mark.window,
            Some((Duration::from_millis(1000), Duration::from_millis(1500)))
        );
        assert_eq!(
            mark.expected,
            "watcher event type=CDS name=c1 event=ambient_error"
        );
    }

    /// The client answered as expected three times before the action,
    /// and otherwise in the window: the window's event is the decisive
    /// one, and is shown though the earlier ones differ in fewer fields.
    #[test]
    fn the_event_the_search_could_take_is_always_a_candidate() {
        let error = || {
            WatcherNotification::AmbientError(xds_vocabulary::XdsError::new(
                tonic::Code::Unavailable,
                "down",
            ))
        };
        let events = vec![
            watcher(0, "c1", error()),
            watcher(100, "c1", error()),
            watcher(200, "c1", error()),
            step(1000, "watch CDS c1"),
            changed(1200, "c1"),
        ];
        let used = BTreeSet::new();
        let search = Search {
            events: &events,
            from: 3,
            used: &used,
            window: (Duration::from_millis(1000), Duration::from_millis(1500)),
            text: &as_written,
            line: &|l| l.to_string(),
        };
        let wanted = wants("c1", WatcherEventKind::AmbientError);
        let shown: Vec<(usize, Option<Aside>)> = search
            .candidates(&wanted)
            .iter()
            .map(|c| (c.index, c.aside))
            .collect();
        assert_eq!(
            shown,
            [
                (2, Some(Aside::BeforeSearch)),
                (1, Some(Aside::BeforeSearch)),
                (4, None)
            ]
        );
        let (message, _) = search.nothing_matched("x.yaml:9:5: expected it", &wanted);
        assert!(
            message.contains("#5   1.200s  client   watcher CDS c1: changed"),
            "{message}"
        );
    }

    #[test]
    fn numbers_are_the_written_timelines_lines() {
        let events = script();
        let written = render_events(&events, 0);
        let (message, _) = explain(&events, &[], &wants("c2", WatcherEventKind::DoesNotExist));
        // c2's change is line 3 of the written timeline (the barrier is
        // not written); the timeline in the message numbers it so too.
        assert_eq!(
            written.lines().nth(2),
            Some("    1.000s  client   watcher CDS c2: changed: EDS service=c2")
        );
        assert!(message.contains("\n  #3   1.000s  client   watcher CDS c2: changed"));
        assert!(message.contains("\n>#3       1.000s  client   watcher CDS c2: changed"));
        assert!(message.contains("\n #2       1.000s  step     == watch CDS c1"));
        // The mismatch on the name ranks the c1 events after it.
        let c2 = message.find("#3   1.000s").unwrap();
        let c1 = message.find("#4   1.000s").unwrap();
        assert!(c2 < c1, "{message}");
    }

    #[test]
    fn says_when_no_event_of_the_kind_happened() {
        let events = script();
        let channel = Matcher::Channel(ChannelMatcher {
            target: None,
            state: ConnectivityState::Ready,
        });
        let (message, mark) = explain(&events, &[], &channel);
        assert!(
            message.contains("no event of that kind happened at all"),
            "{message}"
        );
        assert_eq!(mark.event, None);
    }

    #[test]
    fn an_any_of_is_compared_through_its_closest_alternative() {
        let events = script();
        let any_of = Matcher::AnyOf(vec![
            Alternative {
                matcher: wants("c9", WatcherEventKind::AmbientError),
                divergence: None,
            },
            Alternative {
                matcher: wants("c1", WatcherEventKind::AmbientError),
                divergence: Some("d".into()),
            },
        ]);
        let (message, _) = explain(&events, &[], &any_of);
        assert!(
            message.contains("closest alternative 2 of 2\n         ok  type   CDS"),
            "{message}"
        );
    }

    #[test]
    fn a_multi_line_event_stays_one_line() {
        let events = vec![
            watcher(
                0,
                "c1",
                WatcherNotification::Changed {
                    summary: "a\nb\r\nc".into(),
                },
            ),
            step(0, "after"),
        ];
        let written = render_events(&events, 0);
        assert_eq!(written.lines().count(), 2, "{written}");
        assert!(written.contains("a\\nb\\r\\nc"));
        assert_eq!(line_numbers(&events), vec![Some(1), Some(2)]);
    }
}
