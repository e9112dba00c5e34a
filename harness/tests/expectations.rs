//! The expectation forms that are more than one matcher — `in_order` and
//! `any_of` with `nothing: true` — played on the reference client: each
//! passes when it should and fails when it should.

use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance_reports::Verdict;

fn play(steps: &str) -> Verdict {
    let text = format!(
        "description: d\nservers:\n  primary:\n    resources:\n      \
         - cluster: {{ name: c1 }}\n      - cluster: {{ name: c2 }}\nsteps:\n{steps}"
    );
    let scenario = load_str("t.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
    run_scenario(&scenario, &|| {
        Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
    })
    .verdict
}

const TWO_WATCHES: &str = "  - watch: { type: CDS, name: c1 }\n  \
                           - watch: { type: CDS, name: c2 }\n";

#[test]
fn in_order_holds_in_the_order_things_happened() {
    let verdict = play(&format!(
        "{TWO_WATCHES}  - expect:\n      in_order:\n        \
         - watcher: {{ name: c1, event: changed }}\n        \
         - watcher: {{ name: c2, event: changed }}\n"
    ));
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn in_order_fails_in_the_other_order_saying_how_far_it_got() {
    let verdict = play(&format!(
        "{TWO_WATCHES}  - expect:\n      in_order:\n        \
         - watcher: {{ name: c2, event: changed }}\n        \
         - watcher: {{ name: c1, event: changed }}\n"
    ));
    let Verdict::Fail { message } = verdict else {
        panic!("{verdict:?}")
    };
    assert!(
        message.starts_with("t.yaml:10:5: expected in order ["),
        "{message}"
    );
    assert!(message.contains("; matched 1 of 2 (#"), "{message}");
    assert!(
        message.contains("then no watcher event name=c1 event=changed"),
        "{message}"
    );
}

#[test]
fn nothing_is_an_alternative_met_by_a_quiet_window_as_a_divergence() {
    let verdict = play(&format!(
        "{TWO_WATCHES}  - expect:\n      watcher: {{ name: c2, event: changed }}\n  \
         - expect:\n      any_of:\n        \
         - watcher: {{ name: c1, event: does_not_exist }}\n        \
         - nothing: true\n          divergence: quiet is fine\n      within: 20s\n"
    ));
    assert_eq!(
        verdict,
        Verdict::Divergent {
            note: "quiet is fine".into()
        }
    );
}

#[test]
fn nothing_is_not_taken_when_an_alternative_is_met() {
    let verdict = play(&format!(
        "{TWO_WATCHES}  - expect:\n      any_of:\n        \
         - watcher: {{ name: c2, event: changed }}\n        \
         - nothing: true\n          divergence: quiet is fine\n"
    ));
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn in_order_and_nothing_are_checked_when_loading() {
    let error = |steps: &str| {
        let text = format!("description: d\nservers: {{main: {{}}}}\nsteps:\n{steps}");
        load_str("t.yaml", &text)
            .expect_err("must not load")
            .message
    };
    let watch = "  - watch: { type: CDS, name: c1 }\n";
    assert!(
        error(&format!(
            "{watch}  - expect:\n      in_order:\n        - watcher: {{ name: c1 }}\n"
        ))
        .contains("`in_order` needs at least two events")
    );
    assert!(
        error(&format!(
            "{watch}  - expect:\n      any_of:\n        - nothing: true\n"
        ))
        .contains("`nothing` alone expects nothing; use expect_none")
    );
    assert!(
        error(&format!(
            "{watch}  - expect:\n      any_of:\n        - nothing: true\n          \
             watcher: {{ name: c1 }}\n"
        ))
        .contains("`nothing: true` is an alternative of its own")
    );
    assert!(
        error(&format!(
            "{watch}  - expect:\n      any_of:\n        - nothing: true\n        \
             - csds: {{ type: CDS, name: c1, status: ACKED }}\n"
        ))
        .contains("`nothing` cannot be its alternative")
    );
    assert!(
        error(&format!(
            "{watch}  - expect:\n      watcher: {{ name: c1 }}\n      in_order:\n        \
             - watcher: {{ name: c1 }}\n        - watcher: {{ name: c1 }}\n"
        ))
        .contains("`in_order` replaces the matcher")
    );
}
