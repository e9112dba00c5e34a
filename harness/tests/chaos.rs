//! Chaos campaigns: schedules from a seed, played on a client, each run
//! held to what every run must keep (played through: no ERROR). A
//! correct client gives no finding, the same seed the same timelines, and
//! a client broken on purpose (its second dial fails, as a crash would)
//! is caught, with a schedule file that replays the failure on it and
//! passes on the reference client.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use xds_client_under_test::broken::{Broken, Command};
use xds_client_under_test::{ClientError, ClientUnderTest, ReferenceClient};
use xds_conformance::chaos::{Shape, campaign, schedule};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance::suite::BoxedFactory;
use xds_conformance_reports::Verdict;
use xds_vocabulary::AdsProtocol;

fn reference() -> BoxedFactory {
    Box::new(|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>)
}

/// The reference client, whose every second dial fails.
fn crashes_on_dial() -> BoxedFactory {
    Box::new(|| {
        let dials = Arc::new(AtomicUsize::new(0));
        let rule = Arc::new(move |command: &Command<'_>| match command {
            Command::Dial(_) if dials.fetch_add(1, Ordering::SeqCst) % 2 == 1 => Some(Err(
                ClientError::Failed("the channel went away (broken on purpose)".into()),
            )),
            _ => None,
        });
        Box::new(Broken::new(ReferenceClient::new(), "crashes-on-dial", rule))
            as Box<dyn ClientUnderTest>
    })
}

#[test]
fn a_correct_client_gives_no_finding_and_a_seed_the_same_timelines() {
    // A deadline already past plays nothing.
    let past = Some(std::time::Instant::now());
    let none = campaign(
        &reference(),
        11,
        0,
        60,
        Shape::default(),
        past,
        &mut |_, _| {},
    );
    assert_eq!(none.schedules, 0);
    for protocol in [AdsProtocol::Sotw, AdsProtocol::Delta] {
        let shape = Shape {
            steps: 20,
            protocol,
        };
        let done = campaign(&reference(), 11, 0, 60, shape, None, &mut |_, _| {});
        assert_eq!(done.schedules, 60);
        assert!(
            done.findings.is_empty(),
            "{protocol}: {:#?}",
            done.findings
                .iter()
                .map(|f| (&f.schedule.yaml, &f.verdict))
                .collect::<Vec<_>>()
        );
        assert!(done.played > 50 && done.steps > 50 * 10, "{done:?}");
        assert!(done.unplayable < done.played, "{done:?}");
    }
    for index in 0..5 {
        let s = schedule(11, index, Shape::default());
        let a = run_scenario(&s.scenario, reference().as_ref());
        let b = run_scenario(&s.scenario, reference().as_ref());
        assert_eq!(a.timeline, b.timeline, "{}", s.yaml);
        assert!(!a.timeline.is_empty());
    }
}

#[test]
fn a_client_that_fails_a_dial_is_caught_with_a_file_that_replays_it() {
    let shape = Shape::default();
    let done = campaign(&crashes_on_dial(), 11, 0, 60, shape, None, &mut |_, _| {});
    assert!(!done.findings.is_empty(), "{done:?}");
    for finding in &done.findings {
        let Verdict::Error { message } = &finding.verdict else {
            panic!("{:?}", finding.verdict);
        };
        assert!(message.contains("broken on purpose"), "{message}");
        // The schedule's file replays it, and the correct client passes it.
        let scenario =
            load_str("finding.yaml", &finding.schedule.yaml).unwrap_or_else(|e| panic!("{e}"));
        let again = run_scenario(&scenario, crashes_on_dial().as_ref());
        assert!(
            matches!(again.verdict, Verdict::Error { .. }),
            "{:?}",
            again.verdict
        );
        let correct = run_scenario(&scenario, reference().as_ref());
        assert!(
            !matches!(correct.verdict, Verdict::Error { .. }),
            "{:?}",
            correct.verdict
        );
    }
}
