//! Expectations: `expect` and `expect_none`, on the timeline's events or,
//! for CSDS, on the client's CSDS view (a state), each waiting with
//! [`Player::wait_until`] and failing with the timeline around what it
//! looked at.

use std::time::Duration;

use tokio::time::Instant;

use std::collections::BTreeSet;

use xds_conformance_reports::matrix::MarkKind;

use super::explain::{self, Search};
use super::wait::{describe_lateness, on_time, window_bounds};
use super::{Player, RunMode};
use crate::check::Location;
use crate::matcher::csds::CsdsMatcher;
use crate::matcher::{Alternative, Doubt, Matcher};
use crate::step::Window;
use crate::step::{Failure, StepError};
use crate::timeline::Mark;
use crate::timeline::{TimelineEvent, line_numbers};

impl Player {
    /// How late an event may be seen in `window`. On real time an `at: t`
    /// window also allows for how late the script itself is: its steps run
    /// after what they wait for, and on real time that takes real time (a
    /// client's answer, a process's start), so a step due at `scheduled`
    /// may start later, and everything it causes with it. The client is
    /// still never allowed to be early (before `t`), and held to `t` after
    /// the script was ready. Virtual time is exact.
    ///
    /// The script's lateness is read where this window starts, at the
    /// latest of now and the nominal end of an `expect_none` window right
    /// before it: that window is held shorter than written, so now alone
    /// would take back the allowance it gave, and a client late by less
    /// than the allowance after a late step would fail.
    fn lateness_in(&self, window: Window) -> std::time::Duration {
        let lateness = self.mode.lateness();
        match window {
            Window::At(_) if self.mode == RunMode::RealTime => {
                let now = Instant::now() - self.timeline.start();
                let start = now.max(self.window_start());
                lateness + start.saturating_sub(self.scheduled)
            }
            _ => lateness,
        }
    }

    /// Where a window opening now begins: on real time, right after an
    /// expectation, where that one's window or event ended (see
    /// `Player::anchor`); else now.
    fn window_start(&self) -> std::time::Duration {
        let now = Instant::now() - self.timeline.start();
        match self.anchor {
            // Later than now after an `expect_none`, whose window the
            // harness holds shorter than written (see there).
            Some((at, step)) if self.mode == RunMode::RealTime && step + 1 == self.step_index => at,
            _ => now,
        }
    }

    pub(super) async fn expect(
        &mut self,
        at: &Location,
        matcher: &Matcher,
        window: Window,
    ) -> Result<(), StepError> {
        // A delay the servers measure may hold the transport's latency on
        // real time: a delay that may be in range is (see `Doubt`).
        let matcher = &*matcher.measured_on(self.mode, Doubt::Match);
        if let Matcher::Csds(m) = matcher {
            let alternatives = [Alternative {
                matcher: Matcher::Csds(m.clone()),
                divergence: None,
            }];
            return self.expect_csds(at, &alternatives, window).await;
        }
        // Alternatives that are all CSDS views are a state check too.
        if let Matcher::AnyOf(alternatives) = matcher
            && alternatives
                .iter()
                .all(|a| matches!(a.matcher, Matcher::Csds(_)))
        {
            return self.expect_csds(at, alternatives, window).await;
        }
        if let Matcher::InOrder(sequence) = matcher {
            return self.expect_in_order(at, matcher, sequence, window).await;
        }
        let start = self.timeline.start();
        let began = self.window_start();
        let lateness = self.lateness_in(window);
        let (deadline, exact) = window_bounds(window, began, lateness);
        let found = self
            .wait_until(start + deadline, |player| player.find(matcher, deadline))
            .await;
        // "Nothing happened" is one of the alternatives, and nothing did.
        if found.is_none()
            && let Matcher::AnyOf(alternatives) = matcher
            && let Some(nothing) = alternatives.iter().find(|a| a.matcher == Matcher::Nothing)
        {
            if let Some(note) = &nothing.divergence
                && !self.divergences.contains(note)
            {
                self.divergences.push(note.clone());
                if self.mark.is_none() {
                    self.mark = Some(Mark {
                        kind: MarkKind::Divergent,
                        window: Some((began, deadline)),
                        event: None,
                        expected: matcher.describe(),
                    });
                }
            }
            return Ok(());
        }
        let window = match exact {
            Some(t) => (t, t + lateness),
            None => (began, deadline),
        };
        let Some((index, event)) = found else {
            let when = match exact {
                Some(t) => format!("at {:.3}s", t.as_secs_f64()),
                None => format!(
                    "within {:.3}s (from {:.3}s to {:.3}s)",
                    (deadline - began).as_secs_f64(),
                    began.as_secs_f64(),
                    deadline.as_secs_f64()
                ),
            };
            let head = format!("{}: expected {} {when}", at, matcher.describe());
            let events = self.timeline.events();
            let line = |line: &str| self.normalizer.translate(line).into_owned();
            let search = Search {
                events: &events,
                from: self.search_from(),
                used: &self.consumed,
                window,
                text: &|text| self.normalizer.translate(text),
                line: &line,
            };
            let (message, mark) = search.nothing_matched(&head, matcher);
            return Err(StepError::Failed(Failure {
                message,
                mark: Some(mark),
            }));
        };
        if let Some(t) = exact
            && !on_time(event.at, t, lateness)
        {
            let message = format!(
                "{}: expected {} at {:.3}s{}, but it happened at {:.3}s\n{}",
                at,
                matcher.describe(),
                t.as_secs_f64(),
                describe_lateness(lateness),
                event.at.as_secs_f64(),
                self.context(index)
            );
            return Err(StepError::Failed(Failure {
                message,
                mark: Some(self.mark_at(MarkKind::Failing, window, index, matcher)),
            }));
        }
        self.consumed.insert(index);
        // An expectation may match an event from before its window (any
        // unused one since the last action step): the chain never goes
        // back in time.
        self.anchor = Some((event.at.max(began), self.step_index));
        if let Some(note) = matcher
            .matching_alternative(&event, &|text| self.normalizer.translate(text))
            .and_then(|a| a.divergence.clone())
            && !self.divergences.contains(&note)
        {
            self.divergences.push(note);
            if self.mark.is_none() {
                self.mark = Some(self.mark_at(MarkKind::Divergent, window, index, matcher));
            }
        }
        Ok(())
    }

    /// `in_order`: one event per matcher, each after the one before, all
    /// unused and in the window. The earliest match of each is taken: if
    /// any sequence fits, that one does.
    async fn expect_in_order(
        &mut self,
        at: &Location,
        matcher: &Matcher,
        sequence: &[Matcher],
        window: Window,
    ) -> Result<(), StepError> {
        let start = self.timeline.start();
        let began = self.window_start();
        let lateness = self.lateness_in(window);
        let (deadline, exact) = window_bounds(window, began, lateness);
        let window_span = match exact {
            Some(t) => (t, t + lateness),
            None => (began, deadline),
        };
        let found = self
            .wait_until(start + deadline, |player| {
                let matched = player.find_sequence(sequence, deadline);
                (matched.len() == sequence.len()).then_some(matched)
            })
            .await;
        let Some(indices) = found else {
            let matched = self.find_sequence(sequence, deadline);
            let next = &sequence[matched.len()];
            let events = self.timeline.events();
            let numbers = line_numbers(&events);
            let so_far: Vec<String> = matched
                .iter()
                .map(|&i| format!("#{}", explain::first_line_from(&numbers, i)))
                .collect();
            let head = format!(
                "{}: expected {} within {:.3}s (from {:.3}s to {:.3}s); matched {} of {}{}, then no {}",
                at,
                matcher.describe(),
                (deadline - began).as_secs_f64(),
                began.as_secs_f64(),
                deadline.as_secs_f64(),
                matched.len(),
                sequence.len(),
                if so_far.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", so_far.join(", "))
                },
                next.describe()
            );
            let line = |line: &str| self.normalizer.translate(line).into_owned();
            let search = Search {
                events: &events,
                from: matched.last().map_or(self.search_from(), |&i| i + 1),
                used: &self.consumed,
                window: window_span,
                text: &|text| self.normalizer.translate(text),
                line: &line,
            };
            let (message, mark) = search.nothing_matched(&head, next);
            return Err(StepError::Failed(Failure {
                message,
                mark: Some(mark),
            }));
        };
        if let Some(t) = exact {
            let events = self.timeline.events();
            if let Some(&late) = indices
                .iter()
                .find(|&&i| !on_time(events[i].at, t, lateness))
            {
                let message = format!(
                    "{}: expected {} at {:.3}s{}, but one happened at {:.3}s\n{}",
                    at,
                    matcher.describe(),
                    t.as_secs_f64(),
                    describe_lateness(lateness),
                    events[late].at.as_secs_f64(),
                    self.context(late)
                );
                return Err(StepError::Failed(Failure {
                    message,
                    mark: Some(self.mark_at(MarkKind::Failing, window_span, late, matcher)),
                }));
            }
        }
        let events = self.timeline.events();
        if let Some(last) = indices.iter().map(|&i| events[i].at).max() {
            self.anchor = Some((last.max(began), self.step_index));
        }
        self.consumed.extend(indices);
        Ok(())
    }

    /// The longest prefix of `sequence` found in order from the search
    /// start, unused events only, by `deadline`: event indices.
    fn find_sequence(&self, sequence: &[Matcher], deadline: Duration) -> Vec<usize> {
        let mut from = self.search_from();
        let mut matched = Vec::new();
        for matcher in sequence {
            let found = self.timeline.find_from(from, |i, e| {
                !self.consumed.contains(&i)
                    && e.at.as_millis() <= deadline.as_millis()
                    && matcher.matches(e, &|text| self.normalizer.translate(text))
            });
            match found {
                Some((index, _)) => {
                    matched.push(index);
                    from = index + 1;
                }
                None => break,
            }
        }
        matched
    }

    /// CSDS is a state: the expectation holds if, at some checkpoint in
    /// the window, the client's CSDS view shows what one of the
    /// alternatives (each a CSDS matcher) describes.
    async fn expect_csds(
        &mut self,
        at: &Location,
        alternatives: &[Alternative],
        window: Window,
    ) -> Result<(), StepError> {
        let start = self.timeline.start();
        let began = Instant::now() - start;
        let lateness = self.lateness_in(window);
        let (deadline, _) = window_bounds(window, began, lateness);
        let mut cannot_tell = None;
        let met = self
            .wait_until(start + deadline, |player| {
                let in_window = match window {
                    Window::Within(_) => true,
                    Window::At(t) => on_time(Instant::now() - start, t, lateness),
                };
                let csds = || {
                    alternatives.iter().filter_map(|a| match &a.matcher {
                        Matcher::Csds(m) => Some(m),
                        _ => None,
                    })
                };
                if cannot_tell.is_none() {
                    cannot_tell = csds().find_map(|m| player.csds_state.cannot_tell(m));
                }
                let met = alternatives.iter().find(|a| match &a.matcher {
                    Matcher::Csds(m) => player.csds_state.shows(m),
                    _ => false,
                });
                met.filter(|_| in_window)
            })
            .await;
        if met.is_none()
            && let Some(why) = cannot_tell
        {
            return Err(StepError::NotApplicable(format!(
                "the client lacks CSDS, and what stands in for it could not tell: {why}"
            )));
        }
        let Some(alternative) = met else {
            let described = match alternatives {
                [one] => one.matcher.describe(),
                _ => Matcher::AnyOf(alternatives.to_vec()).describe(),
            };
            let message = format!(
                "{}: expected the client's CSDS to show {} by {:.3}s; it shows:\n{}",
                at,
                described,
                deadline.as_secs_f64(),
                self.csds_state.describe()
            );
            return Err(StepError::Failed(Failure {
                message,
                mark: Some(Mark {
                    kind: MarkKind::Failing,
                    window: Some((began, deadline)),
                    event: None,
                    expected: described,
                }),
            }));
        };
        if let Some(note) = &alternative.divergence
            && !self.divergences.contains(note)
        {
            self.divergences.push(note.clone());
        }
        Ok(())
    }

    pub(super) async fn expect_none(
        &mut self,
        at: &Location,
        matcher: &Matcher,
        duration: Duration,
    ) -> Result<(), StepError> {
        // The mirror of an expectation's lateness: on real time an event
        // due right after the window may be seen up to that much early
        // relative to the harness's clock (the window started late), so
        // the window's last stretch is not held against the client.
        let nominal = duration;
        let duration = duration.saturating_sub(self.mode.lateness());
        // Likewise a measured delay counts only if it is surely in range.
        let matcher = &*matcher.measured_on(self.mode, Doubt::Miss);
        if let Matcher::Csds(m) = matcher {
            return self.expect_no_csds(at, m, duration).await;
        }
        let start = self.timeline.start();
        let began = self.window_start();
        let deadline = start + began + duration;
        self.run_until(deadline).await;
        if let Some((index, event)) = self.find(matcher, deadline - start) {
            let number = self.line_number(index);
            let message = format!(
                "{}: expected no {} for {:.3}s, but one happened at {:.3}s (#{number})\n{}",
                at,
                matcher.describe(),
                duration.as_secs_f64(),
                event.at.as_secs_f64(),
                self.context(index)
            );
            let window = (began, deadline - start);
            return Err(StepError::Failed(Failure {
                message,
                mark: Some(self.mark_at(MarkKind::Failing, window, index, matcher)),
            }));
        }
        // The next window begins where this one nominally ended.
        self.anchor = Some((began + nominal, self.step_index));
        Ok(())
    }

    async fn expect_no_csds(
        &mut self,
        at: &Location,
        m: &CsdsMatcher,
        duration: Duration,
    ) -> Result<(), StepError> {
        let deadline = Instant::now() + duration;
        let mut cannot_tell = None;
        let shown = self
            .wait_until(deadline, |player| {
                if cannot_tell.is_none() {
                    cannot_tell = player.csds_state.cannot_tell(m);
                }
                player.csds_state.shows(m).then_some(())
            })
            .await;
        // What counts could not tell may have been shown then.
        if let Some(why) = cannot_tell {
            return Err(StepError::NotApplicable(format!(
                "the client lacks CSDS, and what stands in for it could not tell: {why}"
            )));
        }
        if shown.is_some() {
            let message = format!(
                "{}: expected the client's CSDS never to show {} for {:.3}s, but at {:.3}s it shows:\n{}",
                at,
                Matcher::Csds(m.clone()).describe(),
                duration.as_secs_f64(),
                (Instant::now() - self.timeline.start()).as_secs_f64(),
                self.csds_state.describe()
            );
            return Err(StepError::Failed(Failure::new(message)));
        }
        Ok(())
    }

    fn search_from(&self) -> usize {
        self.action_mark
    }

    /// The first event since the last action, not used by an earlier
    /// expectation, that matches and happened by `deadline`.
    fn find(&self, matcher: &Matcher, deadline: Duration) -> Option<(usize, TimelineEvent)> {
        // Searched in place: copying the timeline on every look would cost
        // the fake servers (same thread) time when events are large. Over
        // real TCP, what the client reports names the real endpoint
        // addresses; scenarios name the canonical ones.
        self.timeline.find_from(self.search_from(), |i, e| {
            !self.consumed.contains(&i)
                && e.at.as_millis() <= deadline.as_millis()
                && matcher.matches(e, &|text| self.normalizer.translate(text))
        })
    }

    /// The timeline around event `index`, numbered as the written
    /// timeline's lines, that event flagged.
    fn context(&self, index: usize) -> String {
        let events = self.timeline.events();
        let numbers = line_numbers(&events);
        let line = |line: &str| self.normalizer.translate(line).into_owned();
        explain::context(&events, &numbers, index, &BTreeSet::from([index]), &line)
    }

    /// Event `index`'s line in the written timeline.
    fn line_number(&self, index: usize) -> usize {
        explain::first_line_from(&line_numbers(&self.timeline.events()), index)
    }

    fn mark_at(
        &self,
        kind: MarkKind,
        window: (Duration, Duration),
        index: usize,
        matcher: &Matcher,
    ) -> Mark {
        Mark {
            kind,
            window: Some(window),
            event: Some(index),
            expected: matcher.describe(),
        }
    }
}
