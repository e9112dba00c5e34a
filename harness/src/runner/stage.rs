//! The stage steps play on: what the runner lets a step do (see
//! [`crate::step::Stage`]). Actions are recorded on the timeline and start
//! a new stretch for expectations; `wait` and the expectations let time
//! pass (see `wait` and `expect`).

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use xds_client_under_test::ClientUnderTest;
use xds_fake_server::{FakeAdsServer, ServedResource};

use super::Player;
use crate::check::Location;
use crate::matcher::Matcher;
use crate::proxy::{ProxyListeners, served_to};
use crate::step::{Failure, Stage, StepError, Window};
use crate::timeline::{EventKind, Mark, Source, Timeline};
use xds_conformance_reports::matrix::MarkKind;

#[async_trait::async_trait]
impl Stage for Player {
    fn act(&mut self, text: String) {
        let mark = self.timeline.len();
        self.timeline.record(Source::Step, EventKind::Step(text));
        let (previous_step_acted, acted_in_this_step) = self.acted;
        self.acted.1 = true;
        // The first step after a put-off start owns what the client sent
        // from its start on (`Player::start_mark`); an action right after
        // another (or a second action of one step) keeps the mark of the
        // first: the expectations after them read what all of them caused.
        if let Some(start) = self.start_mark.take() {
            self.action_mark = start;
        } else if !(previous_step_acted || acted_in_this_step) {
            self.action_mark = mark + 1;
        }
        self.consumed.clear();
    }

    fn note(&mut self, text: String) {
        self.timeline.record(Source::Step, EventKind::Step(text));
    }

    fn record(&self, source: Source, kind: EventKind) {
        self.timeline.record(source, kind);
    }

    fn timeline(&self) -> Timeline {
        self.timeline.clone()
    }

    fn keeps_invariant(&mut self, at: &Location, name: &str) -> Result<(), StepError> {
        self.forget_start();
        let invariant = crate::invariant::named(name)
            .ok_or_else(|| StepError::failed(format!("no invariant named {name}")))?;
        if !(invariant.held_to)(&self.client.capabilities(), self.mode) {
            return Err(StepError::NotApplicable(format!(
                "invariant {name} does not hold this client: it reads what the client cannot \
                 show here (watcher events, or timers only virtual time keeps exact)"
            )));
        }
        let events = self.timeline.events();
        match (invariant.check)(&self.scenario, &events) {
            None => Ok(()),
            // The picture points at the event that broke it, in a window
            // of the whole run (the invariant reads all of it).
            Some(violation) => Err(StepError::Failed(Failure {
                message: format!(
                    "{at}: expected the run to keep {}",
                    crate::invariant::explain(invariant, &violation, &events)
                ),
                mark: Some(Mark {
                    kind: MarkKind::Failing,
                    window: Some((Duration::ZERO, Instant::now() - self.timeline.start())),
                    event: (violation.event < events.len()).then_some(violation.event),
                    expected: format!("invariant {}: {}", invariant.name, invariant.rule),
                }),
            })),
        }
    }

    fn client(&mut self) -> &mut dyn ClientUnderTest {
        self.client.as_mut()
    }

    fn server(&self, name: &str) -> Result<&FakeAdsServer, StepError> {
        self.servers
            .get(name)
            .ok_or_else(|| StepError::failed(format!("no server named {name}")))
    }

    /// The way back (what clients report, in the scenario's terms) is kept
    /// up to date for matching.
    fn served(&mut self, resources: &[ServedResource]) -> Result<Vec<ServedResource>, StepError> {
        let rewritten = self.addresses.rewrite(resources);
        if !self.addresses.is_identity() {
            self.normalizer = self.addresses.normalizer();
        }
        served_to(self.proxy.as_mut(), rewritten).map_err(StepError::failed)
    }

    fn resource_name(&self, name: &str) -> String {
        self.addresses.resource_name(name).into_owned()
    }

    fn listening_address(&self, address: &str) -> String {
        self.addresses.listening_address(address).into_owned()
    }

    fn is_proxy(&self) -> bool {
        self.proxy.is_some()
    }

    fn proxy_listener(&mut self, target: &str) -> Result<Option<(String, String)>, StepError> {
        let Some(proxy) = &mut self.proxy else {
            return Ok(None);
        };
        let listener = ProxyListeners::listener_of(target).to_string();
        let address = proxy.address(&listener).map_err(|e| {
            StepError::failed(format!("cannot find a port for listener {listener}: {e}"))
        })?;
        Ok(Some((address.to_string(), listener)))
    }

    fn keep(&mut self, task: JoinHandle<()>) {
        self.background.0.push(task);
    }

    async fn run_until(&mut self, deadline: Instant) {
        Player::run_until(self, deadline).await;
    }

    async fn expect(
        &mut self,
        at: &Location,
        matcher: &Matcher,
        window: Window,
    ) -> Result<(), StepError> {
        self.forget_start();
        Player::expect(self, at, matcher, window).await
    }

    async fn expect_none(
        &mut self,
        at: &Location,
        matcher: &Matcher,
        duration: Duration,
    ) -> Result<(), StepError> {
        self.forget_start();
        Player::expect_none(self, at, matcher, duration).await
    }
}
