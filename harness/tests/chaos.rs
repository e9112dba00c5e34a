//! Chaos campaigns: schedules from a seed, played on a client, each run
//! held to what every run must keep (played through: no ERROR). A
//! correct client gives no finding, the same seed the same timelines, and
//! a client broken on purpose (its second dial fails, as a crash would)
//! is caught, with a schedule file that replays the failure on it and
//! passes on the reference client.

use std::sync::Arc;

use xds_client_under_test::broken::{Broken, Command};
use xds_client_under_test::{ClientError, ClientUnderTest, ReferenceClient};
use xds_conformance::chaos::{Rules, Shape, campaign, judge, schedule, shrink_finding};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance::suite::BoxedFactory;
use xds_conformance_reports::Verdict;
use xds_reference_client::Defects;
use xds_vocabulary::AdsProtocol;

#[path = "support/broken_against.rs"]
mod broken_against;
use broken_against::{broken_against, defective};

/// What the reference client is held to (the broken ones claim what it
/// can do, and are held to the same).
fn rules() -> Rules {
    Rules::new(ReferenceClient::new().capabilities())
}

fn reference() -> BoxedFactory {
    Box::new(|| Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>)
}

/// The reference client, whose every dial fails.
fn crashes_on_dial() -> BoxedFactory {
    Box::new(|| {
        let rule = Arc::new(move |command: &Command<'_>| match command {
            Command::Dial(_) => Some(Err(ClientError::Failed(
                "the channel went away (broken on purpose)".into(),
            ))),
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
        (&reference(), &rules()),
        11,
        (0, 60),
        None,
        &Shape::default(),
        past,
        &mut |_, _| {},
    );
    assert_eq!(none.schedules, 0);
    for protocol in [AdsProtocol::Sotw, AdsProtocol::Delta] {
        let shape = Shape {
            steps: 20,
            protocol,
            fit: None,
        };
        let done = campaign(
            (&reference(), &rules()),
            11,
            (0, 60),
            None,
            &shape,
            None,
            &mut |_, _| {},
        );
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
        let s = schedule(11, index, &Shape::default());
        let a = run_scenario(&s.scenario, reference().as_ref());
        let b = run_scenario(&s.scenario, reference().as_ref());
        assert_eq!(a.timeline, b.timeline, "{}", s.yaml);
        assert!(!a.timeline.is_empty());
    }
}

#[test]
fn a_client_that_fails_a_dial_is_caught_with_a_file_that_replays_it() {
    let shape = Shape::default();
    let done = campaign(
        (&crashes_on_dial(), &rules()),
        11,
        // Dials are drawn a third as often as other kinds for a client
        // with a watch API.
        (0, 100),
        None,
        &shape,
        None,
        &mut |_, _| {},
    );
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

/// Schedules of seed 11 each broken client must be caught within.
const CATCH_WITHIN: u64 = 1_000;

/// Schedules played at a time while looking for a catch.
const CHUNK: u64 = 50;

#[test]
fn each_invariant_catches_its_broken_client() {
    for invariant in xds_conformance::invariant::ALL {
        let (factory, protocol) = broken_against(invariant.name);
        let shape = Shape {
            steps: 20,
            protocol,
            fit: None,
        };
        // Schedules in chunks until one catches it (the catch benchmark,
        // `examples/chaos_catch.rs`, measures how soon over 21 seeds;
        // each within 1,000).
        let mut chunks = (0..CATCH_WITHIN).step_by(CHUNK as usize);
        let (first, done) = loop {
            let first = chunks.next().unwrap_or_else(|| {
                panic!("{}: not caught in {CATCH_WITHIN} schedules", invariant.name)
            });
            let done = campaign(
                (&factory, &rules()),
                11,
                (first, CHUNK),
                None,
                &shape,
                None,
                &mut |_, _| {},
            );
            if !done.findings.is_empty() {
                break (first, done);
            }
        };
        let finding = &done.findings[0];
        assert_eq!(finding.broke, invariant.name, "{:?}", finding.verdict);
        let Verdict::Fail { message } = &finding.verdict else {
            panic!("{:?}", finding.verdict);
        };
        assert!(message.contains(invariant.name), "{message}");
        eprintln!(
            "{}: first caught at schedule {} (chunk from {first})",
            invariant.name, finding.index
        );
        // The schedule's file replays it on the broken client, and the
        // reference client keeps the invariant on it.
        let scenario =
            load_str("finding.yaml", &finding.schedule.yaml).unwrap_or_else(|e| panic!("{e}"));
        let again = run_scenario(&scenario, factory.as_ref());
        assert_eq!(
            judge(&scenario, &rules(), &again).map(|(broke, _)| broke),
            Some(invariant.name)
        );
        let correct = run_scenario(&scenario, reference().as_ref());
        assert_eq!(
            judge(&scenario, &rules(), &correct).map(|(broke, _)| broke),
            None
        );
        // The file states the invariant as its last step: it fails there
        // on the broken client and passes on the reference client.
        assert!(
            matches!(&again.verdict, Verdict::Fail { message } if message.contains(invariant.name)),
            "{:?}",
            again.verdict
        );
        assert_eq!(correct.verdict, Verdict::Pass, "{}", correct.timeline);
    }
}

/// The reference client's defect `silent-after-cancel` found (release
/// campaign, seed 42, schedule 1892, shrunk from 37 steps): a watcher told
/// what was queued for it before its cancel was handled, after the cancel
/// returned (a wildcard watch started while the server fails, told the
/// failure the client already knows, and cancelled in the same instant). Kept as a chaos regression, not a conformance scenario: no
/// xDS text promises it of every client's watch API (grpc-js 1.14.1
/// schedules a new watcher's cached value with `process.nextTick` and
/// does not check the watcher is still registered, `xds-client.js`
/// `watchResource`), but the harness's own invariant holds clients to it.
#[test]
fn a_watcher_cancelled_at_once_hears_nothing_after_its_cancel() {
    let scenario = xds_conformance::scenario::load_str(
        "cancel-at-once.yaml",
        "description: d\nservers: {primary: {}}\nsteps:\n  - refuse_connections: {}\n  \
         - watch: {type: LDS, name: a}\n  \
         - expect: {watcher: {type: LDS, name: a, event: resource_error}, within: 30s}\n  \
         - watch: {type: LDS, name: \"*\"}\n  - cancel_watch: {type: LDS, name: \"*\"}\n  \
         - wait: 2s\n",
    )
    .expect("loads");
    let broken = defective(|d| d.callbacks_after_cancel = true);
    let outcome = run_scenario(&scenario, broken.as_ref());
    assert_eq!(
        judge(&scenario, &rules(), &outcome).map(|(broke, _)| broke),
        Some("silent-after-cancel"),
        "{}",
        outcome.timeline
    );
    let fixed = run_scenario(&scenario, reference().as_ref());
    assert_eq!(
        judge(&scenario, &rules(), &fixed).map(|(broke, _)| broke),
        None
    );
}

/// A new wildcard watcher of a type the client already holds resources of
/// is told of them from the cache (gRFC A27: a watcher of a cached
/// resource is told at once); the server's answer to the wildcard
/// subscription changes nothing, so it tells nobody.
#[test]
fn a_new_wildcard_watcher_hears_what_is_cached() {
    let scenario = xds_conformance::scenario::load_str(
        "wildcard-after-named.yaml",
        "description: d\nservers: {primary: {resources: [{cluster: {name: c1}}]}}\nsteps:\n  \
         - watch: {type: CDS, name: c1}\n  \
         - expect: {watcher: {type: CDS, name: c1, event: changed}}\n  \
         - watch: {type: CDS, name: \"*\"}\n  - wait: 31s\n",
    )
    .expect("loads");
    let broken = defective(|d| d.wildcard_misses_cached = true);
    let outcome = run_scenario(&scenario, broken.as_ref());
    assert_eq!(
        judge(&scenario, &rules(), &outcome).map(|(broke, _)| broke),
        Some("wildcard-hears-every-resource"),
        "{}",
        outcome.timeline
    );
    let fixed = run_scenario(&scenario, reference().as_ref());
    assert_eq!(
        judge(&scenario, &rules(), &fixed).map(|(broke, _)| broke),
        None,
        "{}",
        fixed.timeline
    );
}

#[test]
fn a_finding_shrinks_to_a_smaller_file_that_still_breaks_the_rule() {
    // Not node-on-first-request: its broken client breaks it at the first
    // ACK of the first schedule (an empty wildcard response is answered
    // too), a finding too small to shrink.
    for name in ["answered-once", "silent-after-cancel"] {
        let (factory, protocol) = broken_against(name);
        let shape = Shape {
            steps: 20,
            protocol,
            fit: None,
        };
        let done = campaign(
            (&factory, &rules()),
            11,
            (0, 100),
            None,
            &shape,
            None,
            &mut |_, _| {},
        );
        let finding = done.findings.first().expect("caught within 40 schedules");
        let shrunk = shrink_finding(
            (&factory, &rules()),
            11,
            &shape,
            (finding, 2000),
            &mut |_| {},
        );
        assert_eq!(shrunk.broke, name);
        assert_eq!(
            shrunk.drawn.as_deref(),
            Some(finding.schedule.yaml.as_str())
        );
        let (before, after) = (
            finding.schedule.scenario.steps.len(),
            shrunk.schedule.scenario.steps.len(),
        );
        eprintln!(
            "{name}: schedule {} shrunk from {before} to {after} steps",
            finding.index
        );
        assert!(
            after < before,
            "{name}: {before} -> {after}\n{}",
            shrunk.schedule.yaml
        );
        assert!(shrunk.schedule.yaml.contains(&format!(
            "It found a client breaking `{name}`; its last step expects"
        )));
        // The shrunk file replays the violation, and the reference client
        // keeps every rule on it.
        let scenario =
            load_str("shrunk.yaml", &shrunk.schedule.yaml).unwrap_or_else(|e| panic!("{e}"));
        let again = run_scenario(&scenario, factory.as_ref());
        assert_eq!(
            judge(&scenario, &rules(), &again).map(|(broke, _)| broke),
            Some(name)
        );
        let correct = run_scenario(&scenario, reference().as_ref());
        assert_eq!(
            judge(&scenario, &rules(), &correct).map(|(broke, _)| broke),
            None
        );
        // It states the rule as its last step, an ordinary expectation:
        // `run` fails the file there on the broken client, with the
        // invariant's explanation, and passes it on the reference client.
        let last = scenario.steps.last().expect("steps");
        assert_eq!(last.step.key(), "expect_invariant");
        assert!(
            shrunk
                .schedule
                .yaml
                .trim_end()
                .ends_with(&format!("- expect_invariant: {name}\nsnapshot: false")),
            "{}",
            shrunk.schedule.yaml
        );
        let Verdict::Fail { message } = &again.verdict else {
            panic!("{:?}", again.verdict);
        };
        let line = shrunk.schedule.yaml.lines().count() - 1;
        assert!(
            message.starts_with(&format!("shrunk.yaml:{line}:")),
            "{message}"
        );
        assert!(
            message.contains(&format!("invariant {name} (")),
            "{message}"
        );
        assert_eq!(correct.verdict, Verdict::Pass, "{}", correct.timeline);
    }
}

/// The reference defects found while triaging the release campaign's
/// findings, each held by an invariant on the scenario that now proves its
/// fix: the broken client breaks the invariant there, the fixed one keeps
/// it. `delta_claims_replaced_copies`: back on the primary after a
/// fallback, a delta stream claimed the primary's old version of the
/// fallback's copy, so the primary never resent it
/// (`delta-claims-what-it-holds`). `delta_memory_dies_with_its_channel`:
/// falling back a second time, the fallback's new stream claimed nothing
/// of what only the fallback had sent, its channel's memory gone with the
/// channel (`delta-claims-what-it-holds`; seed 20261128, delta schedule
/// 4985 of 60 steps). `wildcard_misses_named_first`: a
/// resource first watched by name while a wildcard watch was on never
/// reached the wildcard watcher (`every-watcher-hears-each-change`, which
/// counts the watchers told; `wildcard-hears-every-resource` cannot see it:
/// the named watcher heard it).
#[test]
fn the_invariants_catch_the_defects_their_regression_scenarios_prove() {
    let root =
        xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("../scenarios/delta");
    type Case = (&'static str, &'static str, fn(&mut Defects));
    let defects: [Case; 3] = [
        (
            "back-on-the-primary-claims-nothing-the-fallback-replaced.yaml",
            "delta-claims-what-it-holds",
            |d| d.delta_claims_replaced_copies = true,
        ),
        (
            "fallback-again-claims-what-only-the-fallback-sent.yaml",
            "delta-claims-what-it-holds",
            |d| d.delta_memory_dies_with_its_channel = true,
        ),
        (
            "wildcard-hears-a-resource-first-watched-by-name.yaml",
            "every-watcher-hears-each-change",
            |d| d.wildcard_misses_named_first = true,
        ),
    ];
    for (file, invariant, set) in defects {
        let scenario = xds_conformance::scenario::load_file(&root.join(file))
            .unwrap_or_else(|e| panic!("{e}"));
        for run in scenario.variants() {
            let outcome = run_scenario(&run, defective(set).as_ref());
            assert_eq!(
                judge(&run, &rules(), &outcome).map(|(broke, _)| broke),
                Some(invariant),
                "{file}\n{}",
                outcome.timeline
            );
            let fixed = run_scenario(&run, reference().as_ref());
            assert_eq!(
                judge(&run, &rules(), &fixed).map(|(broke, _)| broke),
                None,
                "{file}"
            );
        }
    }
}

#[test]
fn an_invariant_a_client_is_known_to_break_is_not_held_and_the_others_still_are() {
    use xds_conformance::expectations::Expectations;
    let parse = |text: &str| {
        Expectations::parse(std::path::Path::new("own.yaml"), text)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let caps = ReferenceClient::new().capabilities();
    let known = parse("chaos:node-on-first-request: {expect: fail, reason: changes it}\n");
    let rules = Rules::with_expectations(caps.clone(), &known).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        rules.known.get("node-on-first-request").map(String::as_str),
        Some("changes it")
    );
    let shape = Shape {
        steps: 20,
        protocol: AdsProtocol::Sotw,
        fit: None,
    };
    // The client that changes the node on later requests: caught by
    // node-on-first-request at once when held to it (see
    // each_invariant_catches_its_broken_client), not at all here.
    let (factory, _) = broken_against("node-on-first-request");
    let excused = campaign(
        (&factory, &rules),
        11,
        (0, 30),
        None,
        &shape,
        None,
        &mut |_, _| {},
    );
    assert_eq!(excused.played, 30);
    assert!(
        excused.findings.is_empty(),
        "{:?}",
        excused.findings.first().map(|f| &f.verdict)
    );
    // A client that breaks another rule as well is still caught by it.
    let both = defective(|d| {
        d.node_changes_on_later_requests = true;
        d.delta_nonce_on_every_request = true;
    });
    let delta = Shape {
        protocol: AdsProtocol::Delta,
        ..shape
    };
    let caught = campaign(
        (&both, &rules),
        11,
        (0, 60),
        None,
        &delta,
        None,
        &mut |_, _| {},
    );
    let broke: std::collections::BTreeSet<_> = caught.findings.iter().map(|f| f.broke).collect();
    assert_eq!(broke.into_iter().collect::<Vec<_>>(), ["answered-once"]);
    // An entry that names no invariant, or does not expect a failure,
    // is refused: it would excuse nothing, or a rule by chance.
    for (text, says) in [
        (
            "chaos:node-first: {expect: fail, reason: r}\n",
            "names no invariant",
        ),
        (
            "chaos:answered-once: {expect: flaky, reason: r}\n",
            "expect: fail",
        ),
    ] {
        let e = Rules::with_expectations(caps.clone(), &parse(text)).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn against_the_reference_a_client_is_reported_where_it_shows_something_else() {
    use xds_conformance::chaos::against::{Against, SAME_AS_AGAINST};
    let caps = ReferenceClient::new().capabilities();
    // Held to no invariant: only the comparison can find anything.
    let mut rules = Rules {
        against: Some(Against::new("reference", reference())),
        ..Rules::new(caps)
    };
    for invariant in xds_conformance::invariant::ALL {
        rules
            .known
            .insert(invariant.name, "excused for this test".into());
    }
    let shape = Shape::default();
    let found = |factory: &BoxedFactory| {
        campaign(
            (factory, &rules),
            11,
            (0, 40),
            None,
            &shape,
            None,
            &mut |_, _| {},
        )
        .findings
    };
    // The reference against itself: the same, schedule by schedule.
    assert!(found(&reference()).is_empty());
    // A node on every request is on the wire only: nothing a user sees.
    assert!(found(&defective(|d| d.node_in_every_request = true)).is_empty());
    // Unchanged resources told again: watchers hear what the reference's
    // do not.
    let renotifies = || defective(|d| d.renotifies_unchanged = true);
    let differs = found(&renotifies());
    let first = differs.first().expect("a difference within 100 schedules");
    assert_eq!(first.broke, SAME_AS_AGAINST);
    let message = first.verdict.detail();
    assert!(message.contains("changed"), "{message}");
    let (name, timeline) = first.other.as_ref().expect("the reference's timeline");
    assert_eq!(name, "reference");
    assert_ne!(timeline, &first.timeline);
    // The finding's file replays the difference: both clients again.
    let again = run_scenario(&first.schedule.scenario, renotifies().as_ref());
    assert_eq!(again.timeline, first.timeline);
}

#[test]
fn grpc_rust_plays_every_schedule_fitted_to_it_and_breaks_only_what_its_expectations_say() {
    let factory: BoxedFactory = Box::new(|| {
        Box::new(xds_client_under_test::GrpcRustClient::new()) as Box<dyn ClientUnderTest>
    });
    let caps = factory().capabilities();
    let own =
        xds_conformance::suite::own_expectations("grpc-rust").unwrap_or_else(|e| panic!("{e}"));
    let rules = Rules::with_expectations(caps.clone(), &own).unwrap_or_else(|e| panic!("{e}"));
    let known: Vec<_> = rules.known.keys().copied().collect();
    assert_eq!(
        known,
        [
            "does-not-exist-timer",
            "unchanged-not-notified-again",
            "wildcard-hears-every-resource"
        ]
    );
    let shape = Shape::default().fitted(caps.clone());
    let done = campaign(
        (&factory, &rules),
        5,
        (0, 200),
        None,
        &shape,
        None,
        &mut |_, _| {},
    );
    assert_eq!((done.played, done.not_applicable), (200, 0), "{done:?}");
    assert!(
        done.findings.is_empty(),
        "{:?}",
        done.findings
            .first()
            .map(|f| (&f.schedule.yaml, &f.verdict))
    );
    // Held to every invariant, it breaks those its expectations name.
    let strict = Rules::new(caps);
    let found = campaign(
        (&factory, &strict),
        5,
        (0, 200),
        None,
        &shape,
        None,
        &mut |_, _| {},
    );
    let broke: std::collections::BTreeSet<_> = found.findings.iter().map(|f| f.broke).collect();
    assert!(!broke.is_empty());
    assert!(broke.iter().all(|b| known.contains(b)), "{broke:?}");
}
