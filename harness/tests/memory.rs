//! Memory bounded in bytes, whatever a scenario file says, and flat over
//! many runs in one process. Its own test binary, one test: resident-set
//! numbers are per process, and another test running beside it would move
//! them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use xds_client_under_test::{ClientUnderTest, ReferenceClient};
use xds_conformance::runner::run_scenario;
use xds_conformance::scenario::load_str;
use xds_conformance::timeline::{MAX_BYTES, weight};
use xds_conformance_reports::Verdict;

/// Counts the bytes live on the heap: what a run keeps after it ended
/// shows here exactly, where the resident set hides it in pages an
/// earlier, larger run freed.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `VmRSS` or `VmHWM` of this process, in bytes.
fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<usize>().ok())
        .map(|kb| kb << 10)
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

fn reference() -> Box<dyn ClientUnderTest> {
    Box::new(ReferenceClient::new())
}

/// A file under the size limit whose run would hold gigabytes: a Cluster
/// whose name is 400 KB, in every request and response, a node of 100 KB
/// in the first request of every stream (recorded cut: see
/// `xds_fake_server::event::bounded_node`), and a server that ends every
/// stream after one response, so the client reconnects at once (a stream
/// that got a response is no failure: no backoff), for minutes.
fn reconnect_storm_with_huge_names() -> String {
    let name = "n".repeat(400_000);
    format!(
        "description: d\nbootstrap:\n  node: {{id: \"{}\"}}\nservers:\n  main:\n    resources:\n      - cluster: {{name: \"{name}\"}}\nsteps:\n  - close_streams_after: {{responses: 1, code: UNAVAILABLE}}\n  - watch: {{type: CDS, name: \"{name}\"}}\n  - wait: 5m\n",
        "i".repeat(100_000)
    )
}

/// A delta subscription that grows by one name at a time, to 2,000 names
/// (a watch and a wait each: the client sends one request per watch):
/// every request records the subscription it leaves. Copied per request,
/// that was 2 million names, 58 MB weighed (at 4,000 names: past the
/// timeline's byte limit); shared, each request costs the path it changed.
fn growing_delta_subscription(names: usize) -> String {
    let mut yaml =
        String::from("description: d\nprotocols: [delta]\nservers:\n  main: {}\nsteps:\n");
    for i in 0..names {
        yaml.push_str(&format!(
            "  - watch: {{type: CDS, name: c{i}}}\n  - wait: 1ms\n"
        ));
    }
    yaml.push_str("  - expect:\n      request:\n        type: CDS\n        names: [");
    for i in 0..names {
        yaml.push_str(&format!("{}c{i}", if i == 0 { "" } else { "," }));
    }
    yaml.push_str("]\n");
    yaml
}

/// What `serve` records on one delta stream that subscribes 100,000 names
/// and then changes them 1,000 times (one name in, one out each): the live
/// heap the 1,000 recorded changes added, and how many requests the
/// server recorded. Copied per request, each recorded subscription was the
/// 100,000 names again: 3 GB.
fn delta_subscription_changes_recorded_by_the_server() -> (usize, usize) {
    use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryRequest;
    use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
    use xds_fake_server::event::ServerEvent;
    use xds_fake_server::{FakeAdsServer, ServerConfig, ServingMode};
    use xds_vocabulary::network::MemoryNetwork;

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let network = MemoryNetwork::new();
        let server = FakeAdsServer::new(ServerConfig {
            name: "main".into(),
            mode: ServingMode::Auto,
        });
        // Each recorded request, as it is recorded (no polling, no sleep),
        // kept as a timeline keeps it.
        let (recorded, mut requests_recorded) = tokio::sync::mpsc::unbounded_channel();
        server.set_observer(std::sync::Arc::new(move |event| {
            if matches!(event.event, ServerEvent::RequestReceived { .. }) {
                let _ = recorded.send(event.clone());
            }
        }));
        let mut kept = Vec::new();
        server
            .serve_in_memory(&network, "main:443")
            .expect("serve in memory");
        let connector = tower::service_fn(move |_| {
            let network = network.clone();
            async move {
                network
                    .connect("main:443")
                    .await
                    .map(hyper_util::rt::TokioIo::new)
            }
        });
        let channel = tonic::transport::Endpoint::from_static("http://main")
            .connect_with_connector(connector)
            .await
            .expect("connect");
        let (requests, outgoing) = tokio::sync::mpsc::unbounded_channel();
        let _responses = AggregatedDiscoveryServiceClient::new(channel)
            .delta_aggregated_resources(tokio_stream::wrappers::UnboundedReceiverStream::new(
                outgoing,
            ))
            .await
            .expect("delta stream");
        let request = |subscribe: Vec<String>, unsubscribe: Vec<String>| DeltaDiscoveryRequest {
            type_url: CDS.into(),
            resource_names_subscribe: subscribe,
            resource_names_unsubscribe: unsubscribe,
            ..Default::default()
        };
        let names = (0..100_000).map(|i| format!("c{i}")).collect();
        requests.send(request(names, vec![])).expect("send");
        kept.push(requests_recorded.recv().await.expect("recorded"));
        let before = LIVE.load(Ordering::SeqCst);
        for i in 0..1_000 {
            let change = request(vec![format!("new{i}")], vec![format!("c{i}")]);
            requests.send(change).expect("send");
        }
        kept.reserve(1_000);
        for _ in 0..1_000 {
            kept.push(requests_recorded.recv().await.expect("recorded"));
        }
        let grown = LIVE.load(Ordering::SeqCst).saturating_sub(before);
        // What was kept is what the server recorded: the last request left
        // the stream subscribed to 100,000 names, 1,000 of them new.
        let ServerEvent::RequestReceived { request, .. } = &kept[1_000].event else {
            unreachable!("only requests are kept");
        };
        let subscription = request.subscription();
        assert_eq!(subscription.len(), 100_000);
        assert!(subscription.iter().any(|n| n == "new999"));
        assert!(!subscription.iter().any(|n| n == "c999"));
        server.shutdown();
        (grown, kept.len())
    })
}

const SMALL: &str = "description: d
servers:
  main:
    resources:
      - listener: {name: l1, routes_to: c1}
      - listener: {name: l2, routes_to: c2}
steps:
  - watch: {type: LDS, name: l1}
  - watch: {type: LDS, name: l2}
  - expect: {watcher: {type: LDS, name: l2, event: changed}}
  - remove_resources: {type: LDS, names: [l2]}
  - expect: {watcher: {type: LDS, name: l2, event: does_not_exist}}
  - expect: {csds: {type: LDS, name: l2, status: DOES_NOT_EXIST}}
";

#[test]
fn memory_is_bounded_per_run_and_flat_over_runs() {
    // 1. A run that would grow without bound stops at the timeline's byte
    //    limit with an ERROR naming it, its timeline kept.
    let text = reconnect_storm_with_huge_names();
    assert!((text.len() as u64) < xds_conformance::scenario::limits::MAX_FILE_BYTES);
    let scenario = load_str("storm.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
    let before = status_bytes("VmRSS");
    let outcome = run_scenario(&scenario, &reference);
    let Verdict::Error { message } = &outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert!(
        message.contains("timeline reached its limit of 128 MiB"),
        "{message}"
    );
    let held: usize = outcome.events.iter().map(weight).sum();
    assert!(held <= MAX_BYTES + (1 << 20), "{held} bytes of events");
    assert!(
        outcome.events.last().is_some_and(
            |e| format!("{:?}", e.kind).contains("past the timeline's limit of 128 MiB")
        ),
        "the timeline says what it left out"
    );
    let peak = status_bytes("VmHWM");
    eprintln!(
        "storm: {} events, {} MiB held, RSS before {} MiB, peak {} MiB",
        outcome.events.len(),
        held >> 20,
        before >> 20,
        peak >> 20
    );
    // The timeline's limit, the client's and the server's state for one
    // stream at a time, and the copies the node takes on its way.
    assert!(
        peak < before + 2 * MAX_BYTES,
        "peak RSS {} MiB from {} MiB",
        peak >> 20,
        before >> 20
    );
    drop(outcome);

    // 2. A delta subscription grown to 2,000 names one request at a time
    //    passes, and its timeline holds a few MiB.
    let text = growing_delta_subscription(2_000);
    let scenario = load_str("growing.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
    let before = LIVE.load(Ordering::SeqCst);
    let outcome = run_scenario(&scenario, &reference);
    assert!(
        matches!(outcome.verdict, Verdict::Pass),
        "{:?}",
        outcome.verdict
    );
    let requests = outcome
        .events
        .iter()
        .filter(|e| format!("{:?}", e.kind).contains("RequestReceived"))
        .count();
    let held: usize = outcome.events.iter().map(weight).sum();
    let live = LIVE.load(Ordering::SeqCst).saturating_sub(before);
    eprintln!(
        "growing delta subscription: {requests} requests, {} events, timeline weighs {} KiB, \
         {} KiB live after the run",
        outcome.events.len(),
        held >> 10,
        live >> 10
    );
    assert!(requests >= 2_000, "one request per watch: {requests}");
    assert!(held < 16 << 20, "{held} bytes weighed");
    assert!(live < 16 << 20, "{live} bytes live");
    drop(outcome);

    // 3. The same on the fake server alone (`serve`): 1,000 changes to a
    //    subscription of 100,000 names add the paths they changed.
    let (grown, requests) = delta_subscription_changes_recorded_by_the_server();
    eprintln!(
        "fake server: 100,000 names, then 1,000 changes: {requests} requests recorded, \
         {} KiB added by the changes",
        grown >> 10
    );
    assert_eq!(requests, 1_001);
    assert!(grown < 16 << 20, "{grown} bytes for 1,000 changes");

    // 4. Flat memory: after a warm-up, ten thousand more runs of a small
    //    scenario keep (almost) nothing each.
    let scenario = load_str("small.yaml", SMALL).unwrap_or_else(|e| panic!("{e}"));
    let run = || {
        let outcome = run_scenario(&scenario, &reference);
        assert!(
            matches!(outcome.verdict, Verdict::Pass),
            "{:?}",
            outcome.verdict
        );
    };
    for _ in 0..300 {
        run();
    }
    let warm = LIVE.load(Ordering::SeqCst);
    const RUNS: usize = 10_000;
    let start = std::time::Instant::now();
    for _ in 0..RUNS {
        run();
    }
    let after = LIVE.load(Ordering::SeqCst);
    let per_run = after.saturating_sub(warm) / RUNS;
    eprintln!(
        "{RUNS} runs in {:?}: live heap {} KiB -> {} KiB, {per_run} bytes per run",
        start.elapsed(),
        warm >> 10,
        after >> 10
    );
    assert!(per_run < 2_048, "{per_run} bytes kept per run");

    // 5. The same over the whole suite: every scenario's runs that the
    //    reference client can play, twice after a warm-up pass. What each
    //    kind of step, matcher, server and backend allocates must be gone
    //    when its run ends.
    let root =
        xds_conformance::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let files = xds_conformance::suite::discover(std::slice::from_ref(&root))
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let caps = ReferenceClient::new().capabilities();
    let runs: Vec<_> = files
        .iter()
        .map(|f| xds_conformance::scenario::load_file(f).unwrap_or_else(|e| panic!("{e}")))
        .flat_map(|s| s.variants())
        .filter(|v| xds_conformance::runner::not_applicable(v, &caps).is_none())
        .collect();
    assert!(runs.len() > 300, "{} runs", runs.len());
    let pass = || {
        for variant in &runs {
            let outcome = run_scenario(variant, &reference);
            assert!(
                !outcome.verdict.is_failure(),
                "{}: {:?}",
                variant.name,
                outcome.verdict
            );
        }
    };
    pass();
    let warm = LIVE.load(Ordering::SeqCst);
    pass();
    pass();
    let after = LIVE.load(Ordering::SeqCst);
    let per_run = after.saturating_sub(warm) / (2 * runs.len());
    eprintln!(
        "the suite twice ({} runs): live heap {} KiB -> {} KiB, {per_run} bytes per run",
        2 * runs.len(),
        warm >> 10,
        after >> 10
    );
    assert!(per_run < 256, "{per_run} bytes kept per run");
}
