//! `xds-conformance`: run scenario suites against an xDS client and write
//! reports; validate scenario files; print the scenario JSON Schema;
//! measure the harness.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use xds_conformance::matrix::{MatrixRecord, run_files, run_matrix, write_reports};
use xds_conformance::progress::Progress;
use xds_conformance::runner::run_scenario;
use xds_conformance::suite::{
    Partition, ResultsFile, Selection, SuiteVersion, TestedClient, default_matrix_clients,
    discover, load,
};
use xds_conformance_reports::{MAX_MESSAGE, Verdict};
use xds_vocabulary::cut::{cut, printable};

#[derive(Parser)]
#[command(
    name = "xds-conformance",
    version,
    about = "Conformance harness for xDS clients",
    after_help = "Exit codes of run and matrix: 0 all passed (n/a, known failures and allowed \
                  divergences included); 1 a scenario failed; 2 the input is broken (a file that \
                  does not load, nothing selected, a bad argument); 128+n interrupted by signal n."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Time limits over the scenario files' own (see the book, docs/src/limits.md).
#[derive(clap::Args, Clone, Copy, Debug)]
struct LimitArgs {
    /// Every scenario's scenario-time limit (virtual on in-process runs),
    /// e.g. `30m`; default: the file's, else 10m.
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    virtual_limit: Option<Duration>,
    /// Every run's wall-clock limit, e.g. `10m`; default: the file's,
    /// else 5m.
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    wall_limit: Option<Duration>,
    /// How many times a real-time run (a real client's) that failed is
    /// tried again; a run that then passes is reported as flaky and does
    /// not fail the gate. Default 2, or 0 for a client with no
    /// expectations file yet (its first runs); 0 never retries.
    /// Virtual-time runs are never retried.
    #[arg(long, value_name = "N")]
    retries: Option<u32>,
}

fn parse_client_file(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((client, file)) if !client.is_empty() && !file.is_empty() => {
            Ok((client.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!(
            "{text:?}: expected CLIENT=FILE, e.g. grpcio=grpcio.expectations.yaml"
        )),
    }
}

fn parse_limit(text: &str) -> Result<Duration, String> {
    match xds_conformance::check::duration::parse_duration(text) {
        Ok(d) if d.is_zero() => Err("a limit must be more than 0s".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run scenarios (files or folders; default `scenarios/`) and write reports.
    Run {
        /// Scenario files and folders (searched for .yaml/.yml); default
        /// `scenarios/`.
        paths: Vec<PathBuf>,
        /// Only scenarios whose name or path contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Where JUnit XML, the Markdown summary and timelines go.
        #[arg(long, default_value = "reports-out")]
        report_dir: PathBuf,
        /// The client under test: reference, grpc-rust, an adapter of
        /// client-under-test/adapters/ (grpcio, grpc-js, grpc-go,
        /// grpc-java, envoy, reference-process), or the path of an
        /// adapter's folder.
        #[arg(long, default_value = "reference")]
        client: String,
        /// The client's expectations file (kept in its own repository):
        /// runs it expects to fail, to be flaky, or to skip, and why. Held
        /// both ways: a run expected to fail that passes fails too. See
        /// the book, docs/src/ci/expectations.md.
        #[arg(long, value_name = "FILE")]
        expectations: Option<PathBuf>,
        /// Rewrite the expectations file from this run (--expectations,
        /// else the one the adapter's adapter.json names; created if it
        /// does not exist): failures become `fail` entries (keeping their
        /// reasons), entries of runs that passed go. The run's own exit
        /// code still holds it to the file as it was.
        #[arg(long)]
        update_expectations: bool,
        /// Leave out scenarios with this tag (repeatable), e.g.
        /// `slow-on-real-time`.
        #[arg(long)]
        skip_tag: Vec<String>,
        /// Only shard K of N (`--partition 2/3`), by a hash of each
        /// scenario's ID: shards of one run merge into one matrix
        /// (`merge`).
        #[arg(long, value_name = "K/N", value_parser = Partition::parse)]
        partition: Option<Partition>,
        /// Scenarios run at once per client (real clients mostly wait;
        /// see the book, docs/src/guide/running.md). Default: each
        /// client's own (its adapter.json `jobs`), else 4.
        #[arg(long)]
        jobs: Option<usize>,
        /// Timeline snapshots kept beside the scenario files
        /// (`DIR/snapshots/NAME.CLIENT.snap`): `check` fails a run whose
        /// timeline differs from its snapshot or has none, `update` writes
        /// them. See the book, docs/src/scenarios/snapshots.md.
        #[arg(long, value_enum, value_name = "check|update")]
        snapshots: Option<xds_conformance::snapshot_files::SnapshotMode>,
        /// Break the reference client on purpose, by one of its defects
        /// (each named, with the scenarios that catch it, in the book:
        /// docs/src/reference/defects.md), to see a scenario file fail on
        /// a client that breaks the rule it checks. With `--client
        /// reference` only (which plays the KDS zone too); not with
        /// snapshots or --update-expectations, which are the reference's.
        #[arg(
            long,
            value_name = "NAME",
            conflicts_with_all = ["snapshots", "update_expectations"]
        )]
        defect: Option<String>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Run scenarios against several clients: the conformance matrix
    /// (Markdown and HTML), a JUnit report per client, every timeline.
    Matrix {
        /// Scenario files and folders (searched for .yaml/.yml); default
        /// `scenarios/`.
        paths: Vec<PathBuf>,
        /// Comma-separated clients (default: every client available but
        /// reference-process, the reference client again as a process).
        #[arg(long, value_delimiter = ',')]
        clients: Vec<String>,
        /// A client's expectations file, `CLIENT=FILE` (repeatable; CLIENT
        /// as in --clients, or as reports name it: an adapter folder's
        /// manifest `name`). See the book, docs/src/ci/expectations.md.
        #[arg(long, value_name = "CLIENT=FILE", value_parser = parse_client_file)]
        expectations: Vec<(String, PathBuf)>,
        /// Only scenarios whose name or path contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Where the matrix (HTML, Markdown), JUnit per client and
        /// timelines go.
        #[arg(long, default_value = "reports-out/matrix")]
        report_dir: PathBuf,
        /// Leave out scenarios with this tag (repeatable).
        #[arg(long)]
        skip_tag: Vec<String>,
        /// Only shard K of N (`--partition 2/3`), by a hash of each
        /// scenario's ID; `merge` makes one matrix of the shards'
        /// report directories.
        #[arg(long, value_name = "K/N", value_parser = Partition::parse)]
        partition: Option<Partition>,
        /// Scenarios run at once per client (real clients mostly wait;
        /// see the book, docs/src/guide/running.md). Default: each
        /// client's own (its adapter.json `jobs`), else 4.
        #[arg(long)]
        jobs: Option<usize>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Merge the report directories of a matrix's shards (`matrix
    /// --partition K/N`, each with its matrix.json) into one matrix,
    /// JUnit and results per client, as one run would have written them;
    /// or a chaos campaign's shards (`chaos --partition K/N`, each with its
    /// campaign.json) into one campaign record, every shard there once.
    Merge {
        /// The shards' report directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Where the merged matrix (or campaign record) goes.
        #[arg(long, default_value = "reports-out/matrix")]
        report_dir: PathBuf,
    },
    /// Review the timeline snapshots `run --snapshots check` kept for
    /// review (`snapshots/*.snap.new` beside the scenarios): shows each
    /// one's diff and asks to accept (it replaces the stored snapshot) or
    /// reject (it goes), one at a time. Lists the orphaned snapshots too
    /// (their scenario file or run is gone), and removes them on request.
    Review {
        /// Scenario files and folders whose snapshots to review; default
        /// `scenarios/`.
        paths: Vec<PathBuf>,
        /// Accept every pending snapshot without asking.
        #[arg(long, conflicts_with = "reject_all")]
        accept_all: bool,
        /// Reject every pending snapshot without asking.
        #[arg(long)]
        reject_all: bool,
        /// Remove the orphaned snapshots (listed either way).
        #[arg(long)]
        prune: bool,
    },
    /// Check scenario files; errors name file:line:column.
    Validate {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Chaos runs: play schedules generated from a seed (faults, resource
    /// churn, client churn over one to three servers) on a client, and
    /// keep every schedule whose run breaks a rule every run must keep as
    /// a scenario file that replays it. See the book, docs/src/chaos/running.md.
    Chaos {
        /// The client under test (as for `run`).
        #[arg(long, default_value = "reference")]
        client: String,
        /// The campaign's seed: the same seed gives the same schedules.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How many schedules to play.
        #[arg(long, default_value_t = 100)]
        schedules: u64,
        /// The first schedule's index (a campaign is resumed or split by it).
        #[arg(long, default_value_t = 0)]
        first: u64,
        /// Steps per schedule, at most.
        #[arg(long, default_value_t = 20)]
        steps: usize,
        /// sotw, delta, or both (each schedule once per protocol).
        #[arg(long, default_value = "both")]
        protocol: String,
        /// Where findings go: each schedule's YAML and its timeline.
        #[arg(long, default_value = "reports-out/chaos")]
        report_dir: PathBuf,
        /// Stop starting schedules after this many minutes (per protocol),
        /// whatever --schedules says.
        #[arg(long)]
        minutes: Option<f64>,
        /// Shrink each finding, trying at most this many smaller schedules
        /// (0: keep findings as drawn).
        #[arg(long, default_value_t = 2000)]
        shrink: usize,
        /// Only shard K of N of the schedules (`--partition 2/3`: those
        /// whose index is 1 modulo 3); the shards' report folders merge
        /// with `merge`.
        #[arg(long, value_parser = xds_conformance::suite::Partition::parse)]
        partition: Option<xds_conformance::suite::Partition>,
        /// The client's expectations file, whose `chaos:<invariant>`
        /// entries name the invariants it is known to break (default: its
        /// own, as for `run`; an empty file holds it to every invariant).
        #[arg(long)]
        expectations: Option<PathBuf>,
        /// Also play each schedule the client plays through on this client
        /// (usually `reference`), and report where what the two showed
        /// differs (watcher events, RPC outcomes, channel states, CSDS):
        /// a finding `same-as-against`, with both timelines.
        #[arg(long)]
        against: Option<String>,
        /// Print the schedules' YAML (one document each) instead of
        /// playing them: to read a schedule before or after a finding.
        #[arg(long)]
        print: bool,
    },
    /// Install clients' adapters as their manifests say (into `.peers/`),
    /// running nothing: what a client's first run would do, for a CI step
    /// that installs before its runs (or before a long `cargo test` holds
    /// cargo's build lock, which a Rust adapter's install needs). An
    /// adapter already installed from the same inputs is left as it is.
    Install {
        /// Clients to install, e.g. `grpc-go envoy` or an adapter's folder;
        /// default: every client of the default matrix.
        clients: Vec<String>,
    },
    /// Print the JSON Schema of scenario files.
    Schema,
    /// Serve a scenario's fake servers (with their initial resources) on
    /// real TCP and write a bootstrap for them, for manual debugging of a
    /// client: `GRPC_XDS_BOOTSTRAP=<file> your-client`. Prints the timeline
    /// as it happens; stops on Ctrl-C.
    Serve {
        scenario: PathBuf,
        /// Where to write the bootstrap JSON.
        #[arg(long, default_value = "reports-out/bootstrap.json")]
        bootstrap_out: PathBuf,
    },
    /// Measure wall time of the suite and of one long scenario.
    Bench {
        /// The suite to time (default `scenarios/`).
        #[arg(long, default_value = "scenarios")]
        suite: PathBuf,
        /// A scenario spanning a long virtual time.
        #[arg(long)]
        scenario: Option<PathBuf>,
        #[arg(long, default_value_t = 5)]
        iterations: u32,
    },
    /// Time real clients on one large CDS and one large EDS response: from
    /// the fake server sending it to receiving the client's ACK (or NACK),
    /// and each client's peak RSS. See the book, docs/src/benchmarks/index.md.
    BenchPeers(xds_conformance::peer_bench::BenchOptions),
    /// Measure Kuma's KDS redesign claim: a zone with N Dataplanes (10,000)
    /// of which one changes sends its global only that one. Reports, for
    /// the reference zone and a real kuma-cp zone, the bytes of the zone's
    /// response to the change against the floor (the one resource) and the
    /// full sync, and the time from the change to the global's ACK. See the
    /// book, docs/src/benchmarks/index.md.
    BenchKds(xds_conformance::kds_bench::KdsBenchOptions),
    /// Write the book's reference pages (every step kind, fault, matcher,
    /// resource kind, capability, invariant, subcommand and client) from
    /// the code, or check the committed ones (`--check`).
    Reference(xds_conformance::reference_docs::ReferenceArgs),
    /// Write a working adapter folder for a client this project does not
    /// ship: adapter.json, a skeleton in your language that speaks the
    /// adapter protocol (hello, watch, cancel_watch, shutdown; what to
    /// fill in is marked TODO), the name of the expectations file it
    /// will record failures in, and a README with the next commands. Run
    /// it at once: `run scenarios --client ./NAME`.
    NewAdapter {
        /// The client's name (lowercase letters, digits, '-', '_', '.'):
        /// the folder's, and what reports and expectations call it.
        name: String,
        /// The skeleton's language.
        #[arg(long, value_enum, default_value = "python")]
        lang: xds_conformance::scaffold::Language,
        /// Where the folder goes.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    // `--version` names the scenario set too: results are only comparable
    // over the same scenarios.
    let scenarios = xds_conformance::suite::repo_root()
        .map(|root| root.join("scenarios"))
        .filter(|dir| dir.is_dir())
        .and_then(|dir| discover(&[dir]).ok());
    let version = match scenarios {
        Some(files) => {
            let names = relative_to_root(&files);
            let suite = SuiteVersion::of_named(
                names
                    .iter()
                    .map(|n| n.display().to_string())
                    .zip(files.iter().map(PathBuf::as_path)),
            );
            format!("{} (scenarios {})", suite.harness, suite.scenarios)
        }
        None => format!("{} (no scenarios/ found)", env!("CARGO_PKG_VERSION")),
    };
    let matches = Cli::command()
        .version(env!("CARGO_PKG_VERSION"))
        .long_version(&*Box::leak(version.into_boxed_str()))
        .get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if matches!(
        cli.command,
        Command::Run { .. } | Command::Matrix { .. } | Command::Chaos { .. }
    ) && let Err(e) = xds_conformance::interrupt::install()
    {
        eprintln!(
            "warning: cannot handle SIGINT/SIGTERM ({e}); an interrupt will lose the reports"
        );
    }
    match cli.command {
        Command::Run {
            paths,
            filter,
            report_dir,
            client,
            expectations,
            update_expectations,
            skip_tag,
            partition,
            jobs,
            snapshots,
            defect,
            limits,
        } => run(
            paths,
            Selection {
                filter,
                skip_tags: skip_tag,
                virtual_limit: limits.virtual_limit,
                wall_limit: limits.wall_limit,
                retries: limits.retries,
                partition,
            },
            report_dir,
            &client,
            Gate {
                expectations: expectations.as_deref(),
                update_expectations,
                snapshots,
                defect: defect.as_deref(),
            },
            jobs,
        ),
        Command::Matrix {
            paths,
            clients,
            expectations,
            filter,
            report_dir,
            skip_tag,
            partition,
            jobs,
            limits,
        } => matrix(
            paths,
            clients,
            expectations,
            Selection {
                filter,
                skip_tags: skip_tag,
                virtual_limit: limits.virtual_limit,
                wall_limit: limits.wall_limit,
                retries: limits.retries,
                partition,
            },
            report_dir,
            jobs,
        ),
        Command::Merge { shards, report_dir } => merge(shards, report_dir),
        Command::Validate { paths } => validate(paths),
        Command::Review {
            paths,
            accept_all,
            reject_all,
            prune,
        } => review(paths, accept_all, reject_all, prune),
        Command::Chaos {
            client,
            seed,
            schedules,
            first,
            steps,
            protocol,
            partition,
            print: true,
            ..
        } => print_schedules(
            &client,
            seed,
            (first, schedules),
            partition,
            steps,
            &protocol,
        ),
        Command::Chaos {
            client,
            seed,
            schedules,
            first,
            steps,
            protocol,
            report_dir,
            minutes,
            shrink,
            partition,
            against,
            expectations,
            print: _,
        } => chaos(
            (&client, against.as_deref(), expectations.as_deref()),
            seed,
            ((first, schedules), partition),
            (steps, shrink),
            &protocol,
            &report_dir,
            minutes,
        ),
        Command::Install { clients } => install(clients),
        Command::Schema => {
            print!("{}", xds_conformance::scenario::scenario_schema());
            ExitCode::SUCCESS
        }
        Command::Bench {
            suite,
            scenario,
            iterations,
        } => bench(suite, scenario, iterations),
        Command::BenchPeers(options) => bench_peers(options),
        Command::BenchKds(options) => bench_kds(options),
        Command::Reference(args) => {
            xds_conformance::reference_docs::command(&args, &Cli::command())
        }
        Command::NewAdapter { name, lang, dir } => {
            match xds_conformance::scaffold::write(&name, lang, &dir) {
                Ok(folder) => {
                    println!(
                        "wrote {0}\nnext: xds-conformance run scenarios --client {0}\n\
                         (then fill in the TODOs, declare what your client can do in \
                         adapter.json, and record what still fails with \
                         --update-expectations; {0}/README.md says more)",
                        folder.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Serve {
            scenario,
            bootstrap_out,
        } => serve(scenario, bootstrap_out),
    }
}

/// `chaos`: plays the campaign, writes its findings, exits 1 if any.
/// Replays each invariant finding's file (which ends stating the
/// invariant) on the client, where it must fail at that step, and on the
/// reference client, where it must pass: what the file is worth as a
/// regression scenario, said before it is kept.
fn replay_findings(
    client: &str,
    factory: &xds_conformance::suite::BoxedFactory,
    campaign: &xds_conformance::chaos::Campaign,
) {
    use xds_conformance::runner::run_scenario;
    use xds_conformance_reports::Verdict;
    let reference = (client != "reference")
        .then(|| xds_conformance::suite::client_factory("reference").ok())
        .flatten();
    for finding in &campaign.findings {
        if xds_conformance::invariant::named(finding.broke).is_none() {
            continue;
        }
        let scenario = &finding.schedule.scenario;
        let again = run_scenario(scenario, factory.as_ref());
        let fails =
            matches!(&again.verdict, Verdict::Fail { message } if message.contains(finding.broke));
        let mut said = format!(
            "  schedule {} ({}): its file {} on {client}",
            finding.index,
            scenario.protocol,
            if fails {
                "fails at its expect_invariant"
            } else {
                "does NOT fail again"
            }
        );
        if let Some(reference) = &reference {
            let correct = run_scenario(scenario, reference.as_ref());
            said.push_str(match correct.verdict {
                Verdict::Pass => " and passes on the reference client",
                _ => " and does NOT pass on the reference client",
            });
        }
        eprintln!("{said}");
    }
}

/// The chaos schedules `chaos` would play, as YAML documents on stdout.
fn print_schedules(
    client: &str,
    seed: u64,
    (first, count): (u64, u64),
    partition: Option<xds_conformance::suite::Partition>,
    steps: usize,
    protocol: &str,
) -> ExitCode {
    use xds_conformance::chaos::{Shape, record::holds_schedule, schedule};
    let Some(protocols) = chaos_protocols(protocol) else {
        return ExitCode::from(2);
    };
    let caps = match xds_conformance::suite::client_factory(client) {
        Ok(factory) => factory().capabilities(),
        Err(e) => {
            eprintln!("{}", printable(&e));
            return ExitCode::from(2);
        }
    };
    for protocol in protocols {
        let shape = Shape {
            steps,
            protocol,
            fit: None,
        }
        .fitted(caps.clone());
        for index in first..first.saturating_add(count) {
            if partition.is_some_and(|p| !holds_schedule(p, index)) {
                continue;
            }
            println!("---\n{}", schedule(seed, index, &shape).yaml.trim_end());
        }
    }
    ExitCode::SUCCESS
}

/// `--protocol`'s protocols (an error printed when it names none).
fn chaos_protocols(protocol: &str) -> Option<Vec<xds_vocabulary::AdsProtocol>> {
    use xds_vocabulary::AdsProtocol;
    match protocol {
        "sotw" => Some(vec![AdsProtocol::Sotw]),
        "delta" => Some(vec![AdsProtocol::Delta]),
        "both" => Some(vec![AdsProtocol::Sotw, AdsProtocol::Delta]),
        other => {
            eprintln!("--protocol: {other:?} is not sotw, delta or both");
            None
        }
    }
}

fn chaos(
    (client, against, expectations): (&str, Option<&str>, Option<&Path>),
    seed: u64,
    ((first, count), partition): ((u64, u64), Option<xds_conformance::suite::Partition>),
    (steps, shrink): (usize, usize),
    protocol: &str,
    report_dir: &Path,
    minutes: Option<f64>,
) -> ExitCode {
    let budget = match minutes.map(|m| Duration::try_from_secs_f64(m * 60.0)) {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(_)) => {
            eprintln!("--minutes: {minutes:?} is not a number of minutes");
            return ExitCode::from(2);
        }
    };
    use xds_conformance::chaos::record::{CampaignRecord, ProtocolRecord, shard_size};
    use xds_conformance::chaos::{Rules, Shape, campaign, shrink_finding, write_findings};
    let Some(protocols) = chaos_protocols(protocol) else {
        return ExitCode::from(2);
    };
    if let Err(e) = xds_conformance_reports::check_writable(report_dir) {
        eprintln!(
            "cannot write findings to {}: {e} (nothing was run)",
            report_dir.display()
        );
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    let factory = match xds_conformance::suite::client_factory(client) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}", printable(&e));
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let mut findings = 0;
    let mut record = CampaignRecord {
        client: client.to_string(),
        against: against.map(str::to_string),
        seed,
        first,
        schedules: count,
        steps,
        partitions: partition.iter().map(ToString::to_string).collect(),
        protocols: Vec::new(),
    };
    let caps = factory().capabilities();
    let expectations = match expectations {
        Some(path) => {
            xds_conformance::expectations::Expectations::load(path).map_err(|e| e.to_string())
        }
        None => xds_conformance::suite::own_expectations(client),
    };
    let rules = expectations
        .and_then(|expectations| Rules::with_expectations(caps.clone(), &expectations))
        .and_then(|rules| match against {
            None => Ok(rules),
            Some(name) => Ok(Rules {
                against: Some(xds_conformance::chaos::against::Against::new(
                    name,
                    xds_conformance::suite::client_factory(name)?,
                )),
                ..rules
            }),
        });
    let rules = match rules {
        Ok(rules) => rules,
        Err(e) => {
            eprintln!("{}", printable(&e));
            return ExitCode::from(2);
        }
    };
    for (invariant, why) in &rules.known {
        eprintln!("not held to {invariant}: {client} is known to break it ({why})");
    }
    for protocol in protocols {
        if protocol == xds_vocabulary::AdsProtocol::Delta && !caps.delta {
            eprintln!("{protocol}: {client} does not speak incremental xDS: no schedules");
            continue;
        }
        // Drawn for the client: no schedule asks what it cannot do.
        let shape = Shape {
            steps,
            protocol,
            fit: None,
        }
        .fitted(caps.clone());
        if xds_conformance::interrupt::signal().is_some() {
            break;
        }
        let deadline = budget.map(|b| Instant::now() + b);
        let mut done = campaign(
            (&factory, &rules),
            seed,
            (first, count),
            partition,
            &shape,
            deadline,
            &mut |index, c| {
                if (index + 1 - first).is_multiple_of(100_u64) {
                    eprintln!(
                        "{protocol}: {} schedules, {} findings",
                        c.schedules,
                        c.findings.len()
                    );
                }
            },
        );
        eprintln!(
            "{protocol}: {} schedules of seed {seed} on {client} ({} played, {} n/a, {} stopped \
             at a step with nothing to act on, {} steps, {:?} covered): {} finding{}",
            done.schedules,
            done.played,
            done.not_applicable,
            done.unplayable,
            done.steps,
            done.covered,
            done.findings.len(),
            if done.findings.len() == 1 { "" } else { "s" }
        );
        if shrink > 0 && !done.findings.is_empty() && !done.interrupted {
            // Written as found first: a shrink takes minutes on a real
            // client, and whatever stops it, the findings are on disk.
            match write_findings(report_dir, &done) {
                Ok(_) => eprintln!(
                    "{protocol}: {} finding{} written as drawn to {}; shrinking each (at most \
                     {shrink} drafts; an interrupt keeps what is written)",
                    done.findings.len(),
                    if done.findings.len() == 1 { "" } else { "s" },
                    report_dir.display()
                ),
                Err(e) => {
                    eprintln!("cannot write findings to {}: {e}", report_dir.display());
                    return ExitCode::from(2);
                }
            }
            for finding in &mut done.findings {
                let drafted = finding.schedule.scenario.steps.len();
                let index = finding.index;
                *finding = shrink_finding(
                    (&factory, &rules),
                    seed,
                    &shape,
                    (finding, shrink),
                    &mut |at| {
                        // Each smaller schedule found, and every 25th
                        // draft: often enough to see it move on a real
                        // client (a draft is a run), rarely enough on the
                        // reference (thousands a second).
                        if at.smaller || at.tried.is_multiple_of(25) {
                            eprintln!(
                                "  shrinking schedule {index} ({protocol}): {} of at most {} \
                                 drafts tried, smallest {} of {} steps",
                                at.tried, at.budget, at.steps, at.drawn
                            );
                        }
                    },
                );
                if xds_conformance::interrupt::signal().is_some() {
                    eprintln!("  schedule {index} ({protocol}): shrink interrupted, kept as drawn");
                    break;
                }
                eprintln!(
                    "  schedule {index} ({protocol}): shrunk from {drafted} steps to {}",
                    finding.schedule.scenario.steps.len()
                );
            }
        }
        if xds_conformance::interrupt::signal().is_none() {
            replay_findings(client, &factory, &done);
        }
        match write_findings(report_dir, &done) {
            Ok(written) => {
                for path in &written {
                    eprintln!("  {}", path.display());
                }
                let files: Vec<String> = written
                    .iter()
                    .filter(|p| {
                        p.extension().is_some_and(|e| e == "yaml")
                            && !p.to_string_lossy().ends_with("-drawn.yaml")
                    })
                    .map(|p| p.display().to_string())
                    .collect();
                let complete =
                    !done.interrupted && done.schedules == shard_size(first, count, partition);
                record.protocols.push(ProtocolRecord::new(
                    &protocol.to_string(),
                    &done,
                    &files,
                    complete,
                ));
            }
            Err(e) => {
                eprintln!("cannot write findings to {}: {e}", report_dir.display());
                return ExitCode::from(2);
            }
        }
        let mut stops: Vec<_> = done.stopped_at.iter().collect();
        stops.sort_by(|a, b| b.1.cmp(a.1));
        for (why, n) in stops.iter().take(5) {
            eprintln!("  stopped {n}× at {}", printable(why));
        }
        for (why, n) in &done.not_applicable_why {
            eprintln!("  n/a {n}×: {}", printable(why));
        }
        for f in &done.findings {
            eprintln!(
                "  schedule {} ({}) broke {}: {}",
                f.index,
                protocol,
                f.broke,
                printable(f.verdict.detail().lines().next().unwrap_or_default())
            );
        }
        findings += done.findings.len();
    }
    eprintln!("in {:?}", started.elapsed());
    let json = serde_json::to_vec_pretty(&record).expect("a campaign record is JSON");
    let path = report_dir.join("campaign.json");
    if let Err(e) = std::fs::create_dir_all(report_dir)
        .and_then(|()| xds_conformance_reports::write_whole(&path, &json))
    {
        eprintln!("cannot write {}: {e}", path.display());
        return ExitCode::from(2);
    }
    if let Some(signal) = xds_conformance::interrupt::signal() {
        return ExitCode::from(xds_conformance::interrupt::exit_code(signal));
    }
    if findings == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Paths under the repository root, as `scenarios/...` (so a digest does
/// not depend on where the checkout is).
fn relative_to_root(files: &[PathBuf]) -> Vec<PathBuf> {
    let root = xds_conformance::suite::repo_root().unwrap_or_default();
    files
        .iter()
        .map(|f| {
            f.strip_prefix(&root)
                .map(PathBuf::from)
                .unwrap_or_else(|_| f.clone())
        })
        .collect()
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

/// What a `run` is held to besides its scenarios: the client's
/// expectations file (and whether to rewrite it) and the snapshots beside
/// the scenarios.
struct Gate<'a> {
    expectations: Option<&'a std::path::Path>,
    update_expectations: bool,
    snapshots: Option<xds_conformance::snapshot_files::SnapshotMode>,
    /// `--defect`: the reference client broken by it.
    defect: Option<&'a str>,
}

fn run(
    paths: Vec<PathBuf>,
    selection: Selection,
    report_dir: PathBuf,
    client: &str,
    gate: Gate<'_>,
    jobs: Option<usize>,
) -> ExitCode {
    let Gate {
        expectations,
        update_expectations,
        snapshots,
        defect,
    } = gate;
    // A defect that cannot be played is broken input, said before
    // anything runs.
    let defect = match defect.map(|name| xds_conformance::defects::for_client(client, name)) {
        None => None,
        Some(Ok(defect)) => Some(defect),
        Some(Err(e)) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(EXIT_BROKEN_INPUT);
        }
    };
    // Without --expectations, the file the adapter's manifest names (it
    // may not exist yet: a new adapter's).
    let manifest_file = match expectations {
        Some(_) => None,
        None => match xds_conformance::suite::manifest_expectations(client) {
            Ok(file) => file,
            Err(e) => {
                eprintln!("{}", printable(&e));
                return ExitCode::from(EXIT_BROKEN_INPUT);
            }
        },
    };
    if update_expectations && expectations.is_none() && manifest_file.is_none() {
        eprintln!(
            "--update-expectations: {client} names no expectations file to write: give one \
             (--expectations FILE), or name it in its adapter.json (\"expectations\": \
             \"my-client.expectations.yaml\", beside the manifest)"
        );
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    if !update_expectations
        && let Some(path) = &manifest_file
        && !path.exists()
    {
        eprintln!(
            "note: {client}'s adapter.json names the expectations file {}, which does not exist \
             yet: this run holds the client to the scenarios alone. Create it empty (a file \
             holding `{{}}`), or write this run's failures into it:\n  {}",
            path.display(),
            update_command(&paths, client, None)
        );
    }
    // A file to write from this run may not exist yet: it starts empty.
    if update_expectations
        && let Some(path) = expectations
        && !path.exists()
        && let Err(e) = write_whole(path, b"{}\n")
    {
        eprintln!("cannot write {}: {e}", path.display());
        return ExitCode::from(2);
    }
    let (client_arg, paths_given) = (client, paths.clone());
    let tested = match defect {
        Some(defect) => xds_conformance::defects::tested_client(defect, expectations),
        None => TestedClient::new(client, expectations),
    };
    let client = match tested {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let files = match discover(&default_paths(paths)) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let broken = match check_selection(&files, &selection) {
        Ok(broken) => broken,
        Err(code) => return code,
    };
    if let Err(e) = xds_conformance_reports::check_writable(&report_dir) {
        eprintln!(
            "cannot write reports to {}: {e} (nothing was run)",
            report_dir.display()
        );
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    if let Some(defect) = defect {
        eprintln!(
            "the reference client with the defect {}: {}",
            defect.name, defect.doc
        );
    }
    let progress = Progress::new();
    let started = Instant::now();
    let played = run_matrix(
        &files,
        &selection,
        std::slice::from_ref(&client),
        jobs,
        snapshots,
        &|f| progress.report(f),
    );
    progress.finish();
    // A run's own record as a one-client matrix's: `merge` joins the
    // shards of `run --partition` as it joins a matrix's.
    let record = played.record(&SuiteVersion::of(&files), selection.partition);
    let per_spec = xds_conformance_reports::spec_tally::spec_tallies(&played.matrix, 0);
    let Some(mut report) = played.reports.into_iter().next() else {
        return ExitCode::from(EXIT_BROKEN_INPUT);
    };
    report.wall_duration = started.elapsed();
    warn_unknown_expectations(
        &client,
        &report,
        (&default_paths(paths_given.clone()), &selection),
    );
    if snapshots.is_some() {
        report_orphans(&snapshot_folders(&files), false);
    }
    if update_expectations {
        // What each run showed before the file was held to it: a stale
        // entry's pass is a pass here, not the FAIL it was reported as.
        let updated = client.expectations.updated(
            report
                .results
                .iter()
                .map(|r| (r.name.as_str(), r.observed.as_ref().unwrap_or(&r.verdict))),
        );
        let path = &client.expectations.source;
        match write_whole(path, updated.to_yaml().as_bytes()) {
            Ok(()) => eprintln!(
                "{}: {} entries (was {}): {} removed (passed or n/a){}, {} added (failed){}{}",
                path.display(),
                updated.expectations.entries.len(),
                client.expectations.entries.len(),
                updated.removed.len(),
                listed(&updated.removed),
                updated.added.len(),
                listed(&updated.added),
                if updated.changed.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", {} changed (failed otherwise: the new check){}",
                        updated.changed.len(),
                        listed(&updated.changed)
                    )
                },
            ),
            Err(e) => {
                eprintln!("cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    for r in report.results.iter().filter(|r| r.verdict.is_failure()) {
        if let Verdict::Fail { message }
        | Verdict::Error { message }
        | Verdict::Interrupted { message } = &r.verdict
        {
            eprintln!(
                "\n--- {} ({})\n{}",
                r.name,
                r.verdict.label(),
                printable(&cut(message, MAX_MESSAGE))
            );
        }
    }
    let results = ResultsFile::new(&report, &SuiteVersion::of(&files), selection.partition);
    let written = xds_conformance_reports::write_all(&report, &report_dir)
        .and_then(|_| {
            write_whole(
                &report_dir.join("results.json"),
                results.to_json().as_bytes(),
            )
        })
        .and_then(|()| {
            write_whole(
                &report_dir.join("matrix.json"),
                &serde_json::to_vec(&record).map_err(std::io::Error::other)?,
            )
        });
    match written {
        Ok(()) => {
            // What the counts cover, spec by spec: a green gate says
            // nothing changed; this says how much of each spec that is.
            println!(
                "\nper spec (a run counts under each tag of its scenario's spec:):\n{}",
                xds_conformance_reports::spec_tally::spec_lines(&per_spec).trim_end()
            );
            println!(
                "\n{} scenarios: {} in {:.3}s; reports in {}",
                report.results.len(),
                report.counts_line(),
                report.wall_duration.as_secs_f64(),
                report_dir.display()
            );
            let failed = report
                .results
                .iter()
                .filter(|r| r.verdict.is_failure())
                .count();
            if let Some(defect) = defect {
                said_what_catches(defect, &report);
            }
            // A client's first runs: what failed is what it does today,
            // which the next step records (the implementer's guide, step 3).
            // A broken reference's failures are what it was broken for.
            if failed > 0
                && !client.expectations.recorded
                && !update_expectations
                && defect.is_none()
            {
                let file = match (&manifest_file, expectations) {
                    (Some(_), _) | (_, Some(_)) => None,
                    (None, None) => Some(format!("{}.expectations.yaml", client.name)),
                };
                println!(
                    "{failed} run{} failed, not tried again: {} has no expectations recorded yet \
                     (--retries N tries them again). Record them as known failures (then edit \
                     each reason to say why):\n  {}",
                    if failed == 1 { "" } else { "s" },
                    client.name,
                    update_command(&paths_given, client_arg, file.as_deref())
                );
            }
        }
        Err(e) => {
            eprintln!("cannot write reports to {}: {e}", report_dir.display());
            return ExitCode::from(2);
        }
    }
    exit_code(broken, report.failed())
}

/// After a run with `--defect`: which files catch it (a run of theirs
/// FAILs; each failure above names its expectation's place), or that none
/// does. An ERROR is no catch: the run did not get to say.
fn said_what_catches(
    defect: &xds_client_under_test::defect::Defect,
    report: &xds_conformance_reports::RunReport,
) {
    let caught: Vec<&str> = report
        .results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Fail { .. }))
        .map(|r| r.name.as_str())
        .collect();
    if caught.is_empty() {
        println!(
            "no run FAILs on the defect {}: none of these files catches it",
            defect.name
        );
    } else {
        println!(
            "{} {} on the defect {}, each at the place its message names: {}",
            caught.len(),
            if caught.len() == 1 {
                "run FAILs"
            } else {
                "runs FAIL"
            },
            defect.name,
            caught.join(", ")
        );
    }
}

/// The command that writes a run's failures into the client's own
/// expectations file (or into `file`, for a client that names none):
/// this run's paths and client, and `--update-expectations`.
fn update_command(paths: &[PathBuf], client: &str, file: Option<&str>) -> String {
    let mut words = vec!["xds-conformance".to_string(), "run".to_string()];
    words.extend(
        default_paths(paths.to_vec())
            .iter()
            .map(|p| p.display().to_string()),
    );
    words.extend(["--client".to_string(), client.to_string()]);
    if let Some(file) = file {
        words.extend(["--expectations".to_string(), file.to_string()]);
    }
    words.push("--update-expectations".to_string());
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `word` as a shell reads it back: quoted when it holds more than
/// letters, digits and `-_./=@:,`.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=@:,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// ` (a, b)` for a non-empty list of run IDs.
fn listed(ids: &[String]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        format!(" ({})", ids.join(", "))
    }
}

/// Exit codes (also in `--help`): 0 every scenario passed (or is n/a, a
/// known failure, an allowed divergence); 1 a scenario failed; 2 the
/// input is broken (a file that does not load, nothing selected, a bad
/// argument); 128 + n interrupted by signal n.
const EXIT_FAILED: u8 = 1;
const EXIT_BROKEN_INPUT: u8 = 2;

fn exit_code(broken_files: usize, failed: bool) -> ExitCode {
    if let Some(signal) = xds_conformance::interrupt::signal() {
        return ExitCode::from(xds_conformance::interrupt::exit_code(signal));
    }
    if broken_files > 0 {
        eprintln!("{broken_files} scenario file(s) did not load (exit code {EXIT_BROKEN_INPUT})");
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    if failed {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// How many selected files do not load, or, if the selection is empty,
/// the exit code for that: a filter that matches nothing is a mistake,
/// not a green run.
fn check_selection(files: &[PathBuf], selection: &Selection) -> Result<usize, ExitCode> {
    let loaded = xds_conformance::suite::load_selected(files, selection);
    if loaded.is_empty() {
        eprintln!(
            "no scenario selected: {} file(s) found{}{}",
            files.len(),
            selection
                .filter
                .as_ref()
                .map(|f| format!(", none matching --filter {f:?}"))
                .unwrap_or_default(),
            if selection.skip_tags.is_empty() {
                String::new()
            } else {
                format!(" (skipping tags {})", selection.skip_tags.join(", "))
            }
        );
        return Err(ExitCode::from(EXIT_BROKEN_INPUT));
    }
    Ok(loaded.iter().filter(|l| l.scenario.is_err()).count())
}

fn matrix(
    paths: Vec<PathBuf>,
    clients: Vec<String>,
    expectations: Vec<(String, PathBuf)>,
    selection: Selection,
    report_dir: PathBuf,
    jobs: Option<usize>,
) -> ExitCode {
    let names = if clients.is_empty() {
        default_matrix_clients()
    } else {
        clients
    };
    // A client is named in --clients as the harness finds it (a name, or
    // an adapter's folder) and in reports as it names itself (its
    // manifest's `name`): --expectations takes either.
    let mut own_names = Vec::new();
    for name in &names {
        match xds_conformance::suite::client_factory(name) {
            Ok(factory) => own_names.push(factory().name().to_string()),
            Err(e) => {
                eprintln!("{}", printable(&e));
                return ExitCode::from(2);
            }
        }
    }
    let names_client = |client: &str, i: usize| names[i] == client || own_names[i] == client;
    if let Some((client, _)) = expectations
        .iter()
        .find(|(c, _)| !(0..names.len()).any(|i| names_client(c, i)))
    {
        eprintln!(
            "--expectations for {client}, which is not among the clients run ({})",
            own_names.join(", ")
        );
        return ExitCode::from(2);
    }
    let mut matrix_clients = Vec::new();
    for (i, name) in names.iter().enumerate() {
        eprintln!("preparing client {name}...");
        let given: Vec<&Path> = expectations
            .iter()
            .filter(|(client, _)| names_client(client, i))
            .map(|(_, file)| file.as_path())
            .collect();
        if given.len() > 1 {
            eprintln!("--expectations: {} files for {name}", given.len());
            return ExitCode::from(2);
        }
        if given.is_empty()
            && let Ok(Some(path)) = xds_conformance::suite::manifest_expectations(name)
            && !path.exists()
        {
            eprintln!(
                "note: {name}'s adapter.json names the expectations file {}, which does not \
                 exist yet: its runs are held to the scenarios alone. Create it empty (a file \
                 holding `{{}}`), or write its failures into it with `run --client {name} \
                 --update-expectations`",
                path.display()
            );
        }
        match TestedClient::new(name, given.first().copied()) {
            Ok(client) => matrix_clients.push(client),
            Err(e) => {
                eprintln!("{}", printable(&e.to_string()));
                return ExitCode::from(2);
            }
        }
    }
    let paths = default_paths(paths);
    let files = match discover(&paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let broken = match check_selection(&files, &selection) {
        Ok(broken) => broken,
        Err(code) => return code,
    };
    if let Err(e) = xds_conformance_reports::check_writable(&report_dir) {
        eprintln!(
            "cannot write the matrix to {}: {e} (nothing was run)",
            report_dir.display()
        );
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    let progress = Progress::new();
    let run = run_matrix(&files, &selection, &matrix_clients, jobs, None, &|f| {
        progress.report(f)
    });
    progress.finish();
    let mut failed = false;
    let record = run.record(&SuiteVersion::of(&files), selection.partition);
    if let Err(e) = write_reports(&record, &report_dir) {
        eprintln!("cannot write reports to {}: {e}", report_dir.display());
        return ExitCode::from(2);
    }
    for (client, report) in matrix_clients.iter().zip(&run.reports) {
        warn_unknown_expectations(client, report, (&paths, &selection));
    }
    for report in &run.reports {
        println!("{:<10} {}", report.client, report.counts_line());
        for r in report.results.iter().filter(|r| r.verdict.is_failure()) {
            failed = true;
            if let Verdict::Fail { message }
            | Verdict::Error { message }
            | Verdict::Interrupted { message } = &r.verdict
            {
                eprintln!(
                    "\n--- {} on {} ({})\n{}",
                    r.name,
                    report.client,
                    r.verdict.label(),
                    printable(&cut(message, MAX_MESSAGE))
                );
            }
        }
    }
    println!(
        "matrix written to {}/matrix.html and matrix.md",
        report_dir.display()
    );
    exit_code(broken, failed)
}

/// Entries of a client's expectations that match no run of this one
/// (a renamed scenario, a typo, or a selection): they hold nothing.
fn warn_unknown_expectations(
    client: &TestedClient,
    report: &xds_conformance_reports::RunReport,
    (paths, selection): (&[PathBuf], &Selection),
) {
    let ids: Vec<String> = report.results.iter().map(|r| r.name.clone()).collect();
    // Only the entries this selection would have run: a subset run says
    // nothing of the rest of the file.
    let unknown: Vec<&str> = client
        .expectations
        .unknown(&ids)
        .into_iter()
        .filter(|id| selection.would_select(paths, id))
        .collect();
    if !unknown.is_empty() {
        eprintln!(
            "warning: {} has {} entries for runs not in this run: {}",
            client.expectations.source.display(),
            unknown.len(),
            unknown.join(", ")
        );
    }
    let not_applicable: Vec<String> = report
        .results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::NotApplicable { .. }))
        .map(|r| r.name.clone())
        .collect();
    let stale = client.expectations.for_not_applicable(&not_applicable);
    if !stale.is_empty() {
        eprintln!(
            "warning: {} expects {} runs to fail that the client cannot run (n/a): {}; \
             remove them (--update-expectations does)",
            client.expectations.source.display(),
            stale.len(),
            stale.join(", ")
        );
    }
}

/// Writes `bytes` to `path` whole: into a temporary file beside it, then
/// renamed over it, so a full disk or an interrupt never leaves half.
use xds_conformance_reports::write_whole;

fn merge(shards: Vec<PathBuf>, report_dir: PathBuf) -> ExitCode {
    if let Err(e) = report_dir_is_a_folder(&report_dir) {
        eprintln!("cannot write the merge to {}: {e}", report_dir.display());
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    // Shards of a chaos campaign (`chaos --partition`) have a campaign
    // record where a matrix shard has its matrix.
    if shards
        .iter()
        .all(|s| s.join("campaign.json").is_file() && !s.join("matrix.json").exists())
    {
        return merge_campaigns(&shards, &report_dir);
    }
    let Some(records) = read_shards::<MatrixRecord>(&shards, "matrix.json") else {
        return ExitCode::from(EXIT_BROKEN_INPUT);
    };
    let shards_seen: Vec<String> = records.iter().filter_map(|r| r.partition.clone()).collect();
    let merged = match xds_conformance::matrix::merge(records) {
        Ok(merged) => merged,
        Err(e) => {
            eprintln!("cannot merge: {e}");
            return ExitCode::from(EXIT_BROKEN_INPUT);
        }
    };
    if let Err(e) =
        std::fs::create_dir_all(&report_dir).and_then(|()| write_reports(&merged, &report_dir))
    {
        eprintln!("cannot write reports to {}: {e}", report_dir.display());
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    let mut failed = false;
    for report in &merged.reports {
        println!("{:<10} {}", report.client, report.counts_line());
        failed |= report.failed();
    }
    println!(
        "{} shards ({}) merged into {}/matrix.html",
        shards.len(),
        shards_seen.join(", "),
        report_dir.display()
    );
    exit_code(0, failed)
}

/// The folders holding `files`, once each, with every scenario file in
/// each (loaded): what orphaned and pending snapshots are judged by.
type Folder = (
    PathBuf,
    Vec<(PathBuf, Result<xds_conformance::scenario::Scenario, String>)>,
);

fn snapshot_folders(files: &[PathBuf]) -> Vec<Folder> {
    let mut folders: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect();
    folders.sort();
    folders.dedup();
    folders
        .into_iter()
        .map(|folder| {
            let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&folder)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect();
            scenarios.sort();
            let loaded = scenarios
                .into_iter()
                .map(|p| {
                    let scenario = load(&p).map_err(|e| e.to_string());
                    (p, scenario)
                })
                .collect();
            (folder, loaded)
        })
        .collect()
}

/// Prints the orphaned snapshots beside `files` (removed with `prune`);
/// how many were found.
fn report_orphans(folders: &[Folder], prune: bool) -> usize {
    let mut count = 0;
    for (folder, scenarios) in folders {
        let orphans = match xds_conformance::snapshot_files::orphans(folder, scenarios) {
            Ok(orphans) => orphans,
            Err(e) => {
                eprintln!("cannot list {}/snapshots: {e}", folder.display());
                continue;
            }
        };
        for orphan in orphans {
            count += 1;
            let removed = if prune {
                match std::fs::remove_file(&orphan.path) {
                    Ok(()) => ": removed".to_string(),
                    Err(e) => format!(": cannot remove it: {e}"),
                }
            } else {
                String::new()
            };
            eprintln!(
                "orphaned snapshot {} ({}){removed}",
                orphan.path.display(),
                orphan.why
            );
        }
    }
    if count > 0 && !prune {
        eprintln!("{count} orphaned snapshot(s): `review --prune` removes them");
    }
    count
}

fn review(paths: Vec<PathBuf>, accept_all: bool, reject_all: bool, prune: bool) -> ExitCode {
    use std::io::{BufRead as _, Write as _};
    use xds_conformance::snapshot_files::{accept, pending, review_diff};
    let files = match discover(&default_paths(paths)) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(EXIT_BROKEN_INPUT);
        }
    };
    let folders = snapshot_folders(&files);
    report_orphans(&folders, prune);
    let (mut accepted, mut rejected, mut left) = (0, 0, 0);
    let mut answers = std::io::stdin().lock().lines();
    let mut quit = false;
    for (folder, _) in &folders {
        let found = match pending(folder) {
            Ok(found) => found,
            Err(e) => {
                eprintln!("cannot list {}/snapshots: {e}", folder.display());
                return ExitCode::from(EXIT_BROKEN_INPUT);
            }
        };
        for (new, stored) in found {
            if quit {
                left += 1;
                continue;
            }
            let answer = if accept_all {
                "a".to_string()
            } else if reject_all {
                "r".to_string()
            } else {
                match review_diff(&stored, &new) {
                    Ok(diff) => println!("\n{}\n{diff}", new.display()),
                    Err(e) => {
                        eprintln!("cannot read {}: {e}", new.display());
                        left += 1;
                        continue;
                    }
                }
                print!("accept (a), reject (r), skip (s) or quit (q)? ");
                let _ = std::io::stdout().flush();
                match answers.next() {
                    Some(Ok(line)) => line.trim().to_lowercase(),
                    // No one to ask: the rest stay pending.
                    _ => "q".to_string(),
                }
            };
            match answer.as_str() {
                "a" | "accept" => match accept(&new, &stored) {
                    Ok(()) => {
                        accepted += 1;
                        println!("accepted {}", stored.display());
                    }
                    Err(e) => {
                        eprintln!("cannot accept {}: {e}", new.display());
                        left += 1;
                    }
                },
                "r" | "reject" => match std::fs::remove_file(&new) {
                    Ok(()) => {
                        rejected += 1;
                        println!("rejected {}", new.display());
                    }
                    Err(e) => {
                        eprintln!("cannot remove {}: {e}", new.display());
                        left += 1;
                    }
                },
                "q" | "quit" => {
                    quit = true;
                    left += 1;
                }
                _ => left += 1,
            }
        }
    }
    println!("{accepted} accepted, {rejected} rejected, {left} left pending");
    ExitCode::SUCCESS
}

fn validate(paths: Vec<PathBuf>) -> ExitCode {
    let files = match discover(&paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let mut bad = 0;
    for file in &files {
        match load(file) {
            Ok(s) => println!("ok     {} ({} steps)", file.display(), s.steps.len()),
            Err(e) => {
                bad += 1;
                eprintln!("{}", printable(&e.to_string()));
            }
        }
    }
    if bad > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `install`: each client's adapter installed (a client's factory installs
/// it, as a run's does); 1 if any could not be.
fn install(clients: Vec<String>) -> ExitCode {
    let clients = if clients.is_empty() {
        default_matrix_clients()
    } else {
        clients
    };
    let mut failed = false;
    for name in &clients {
        let started = std::time::Instant::now();
        match xds_conformance::suite::client_factory(name) {
            Ok(_) => println!(
                "{name}: installed ({:.1} s)",
                started.elapsed().as_secs_f64()
            ),
            Err(e) => {
                eprintln!("{name}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn bench(suite: PathBuf, scenario: Option<PathBuf>, iterations: u32) -> ExitCode {
    let Ok(reference) = TestedClient::new("reference", None) else {
        return ExitCode::from(2);
    };
    let files = match discover(&[suite]) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    // Broken input is found before anything is measured.
    let mut broken = false;
    for file in files.iter().chain(scenario.as_ref()) {
        if let Err(e) = load(file) {
            eprintln!("{}", printable(&e.to_string()));
            broken = true;
        }
    }
    if broken {
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    // Warm-up: lazily built state (descriptor pool) is not what we measure.
    let warm = run_files(
        &files,
        &Selection::default(),
        &reference,
        Some(1),
        None,
        &xds_conformance::schedule::no_progress,
    );
    let mut suite_times = Vec::new();
    let mut per_scenario: Vec<(String, Duration, Duration)> = Vec::new();
    for _ in 0..iterations {
        let start = Instant::now();
        let report = run_files(
            &files,
            &Selection::default(),
            &reference,
            Some(1),
            None,
            &xds_conformance::schedule::no_progress,
        );
        suite_times.push(start.elapsed());
        per_scenario = report
            .results
            .iter()
            .map(|r| (r.name.clone(), r.virtual_duration, r.wall_duration))
            .collect();
    }
    suite_times.sort();
    println!(
        "suite: {} scenarios ({} failing in warm-up)",
        files.len(),
        warm.results
            .iter()
            .filter(|r| r.verdict.is_failure())
            .count()
    );
    println!(
        "suite wall time over {iterations} runs: min {:.1}ms median {:.1}ms max {:.1}ms",
        ms(suite_times[0]),
        ms(suite_times[suite_times.len() / 2]),
        ms(suite_times[suite_times.len() - 1])
    );
    if let Some((name, v, w)) = per_scenario.iter().max_by_key(|(_, _, w)| *w) {
        println!(
            "slowest scenario (last run): {name}: {:.1}ms wall for {:.3}s virtual",
            ms(*w),
            v.as_secs_f64()
        );
    }
    let Some(path) = scenario.or_else(|| {
        per_scenario
            .iter()
            .max_by_key(|(_, v, _)| *v)
            .and_then(|(name, _, _)| {
                files
                    .iter()
                    .find(|f| f.to_string_lossy().contains(name.as_str()))
                    .cloned()
            })
    }) else {
        return ExitCode::SUCCESS;
    };
    let loaded = match load(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::FAILURE;
        }
    };
    let mut walls = Vec::new();
    let mut virtual_duration = Duration::ZERO;
    for _ in 0..iterations.max(1) * 4 {
        let outcome = run_scenario(&loaded, reference.factory.as_ref());
        walls.push(outcome.wall_duration);
        virtual_duration = outcome.virtual_duration;
    }
    walls.sort();
    let median = walls[walls.len() / 2];
    println!(
        "long scenario {}: {:.3}s virtual; wall min {:.2}ms median {:.2}ms max {:.2}ms; {:.0}x faster than virtual time",
        loaded.name,
        virtual_duration.as_secs_f64(),
        ms(walls[0]),
        ms(median),
        ms(walls[walls.len() - 1]),
        virtual_duration.as_secs_f64() / median.as_secs_f64().max(1e-9)
    );
    ExitCode::SUCCESS
}

fn bench_peers(options: xds_conformance::peer_bench::BenchOptions) -> ExitCode {
    match xds_conformance::peer_bench::bench_peers(&options) {
        Ok(true) => ExitCode::SUCCESS,
        // Printed: the runs without a measurement, and why.
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench-peers: {e}");
            ExitCode::from(2)
        }
    }
}

fn bench_kds(options: xds_conformance::kds_bench::KdsBenchOptions) -> ExitCode {
    match xds_conformance::kds_bench::bench_kds(&options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench-kds: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve(path: PathBuf, bootstrap_out: PathBuf) -> ExitCode {
    if let Err(e) = xds_vocabulary::files::check_replaceable(&bootstrap_out) {
        eprintln!("--bootstrap-out {}: {e}", bootstrap_out.display());
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    let scenario = match load(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", printable(&e.to_string()));
            return ExitCode::from(EXIT_BROKEN_INPUT);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        match xds_conformance::serve::serve_tcp(&scenario, &bootstrap_out).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{}", printable(&e.to_string()));
                ExitCode::FAILURE
            }
        }
    });
    // A line being written to a reader that does not read would hold the
    // runtime's shutdown for as long as the reader likes.
    runtime.shutdown_timeout(Duration::from_millis(500));
    code
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `merge` of chaos shards: one campaign record, checked whole; exits 1
/// if any shard found something.
fn merge_campaigns(shards: &[PathBuf], report_dir: &Path) -> ExitCode {
    use xds_conformance::chaos::record::{CampaignRecord, merge};
    let Some(records) = read_shards::<CampaignRecord>(shards, "campaign.json") else {
        return ExitCode::from(EXIT_BROKEN_INPUT);
    };
    let merged = match merge(records) {
        Ok(merged) => merged,
        Err(e) => {
            eprintln!("cannot merge: {e}");
            return ExitCode::from(EXIT_BROKEN_INPUT);
        }
    };
    let json = serde_json::to_vec_pretty(&merged).expect("a campaign record is JSON");
    let path = report_dir.join("campaign.json");
    if let Err(e) = std::fs::create_dir_all(report_dir)
        .and_then(|()| xds_conformance_reports::write_whole(&path, &json))
    {
        eprintln!("cannot write {}: {e}", path.display());
        return ExitCode::from(EXIT_BROKEN_INPUT);
    }
    let mut findings = 0;
    for p in &merged.protocols {
        println!(
            "{}: {} schedules of seed {} on {} ({} played, {} n/a, {} stopped at a step){}: {} \
             finding{}",
            p.protocol,
            p.schedules,
            merged.seed,
            merged.client,
            p.played,
            p.not_applicable,
            p.unplayable,
            if p.complete {
                ""
            } else {
                ", stopped early by --minutes"
            },
            p.findings.len(),
            if p.findings.len() == 1 { "" } else { "s" }
        );
        for f in &p.findings {
            println!("  schedule {} broke {}: {}", f.index, f.broke, f.file);
        }
        findings += p.findings.len();
    }
    println!(
        "{} shards ({}) merged into {}",
        shards.len(),
        merged.partitions.join(", "),
        path.display()
    );
    if findings == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// That `dir` is a folder or nothing yet: checked before a merge reads
/// anything, without creating it (a merge that fails writes nothing).
fn report_dir_is_a_folder(dir: &Path) -> std::io::Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "not a folder (it is {})",
                xds_vocabulary::files::kind_of(m.file_type())
            ),
        )),
        _ => Ok(()),
    }
}

/// Each shard's `file`, read; `None` (after saying which and why) if one
/// cannot be: a folder that is no report directory of `run`, `matrix` or
/// `chaos` is named as such.
fn read_shards<T: serde::de::DeserializeOwned>(shards: &[PathBuf], file: &str) -> Option<Vec<T>> {
    /// A record holds every run's timeline: large, not unbounded.
    const MAX_RECORD_BYTES: u64 = 2 << 30;
    let mut records = Vec::new();
    for shard in shards {
        if !shard.is_dir() {
            eprintln!(
                "{}: not a report directory (merge takes the --report-dir folders of `run`, \
                 `matrix` or `chaos` runs)",
                shard.display()
            );
            return None;
        }
        let path = shard.join(file);
        if !path.exists() {
            eprintln!(
                "{}: no {file} here: merge takes the --report-dir folders of `run --partition`, \
                 `matrix --partition` or `chaos --partition` runs",
                shard.display()
            );
            return None;
        }
        let record = xds_vocabulary::files::read_regular(&path, MAX_RECORD_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<T>(&bytes).map_err(|e| e.to_string()));
        match record {
            Ok(record) => records.push(record),
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                return None;
            }
        }
    }
    Some(records)
}
