//! Running many scenario files against one client, into a report.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use xds_client_under_test::{
    AdapterManifest, ClientUnderTest, GrpcRustClient, ProcessClient, ReferenceClient,
};
use xds_conformance_reports::{RunReport, Verdict};

use crate::expectations::Expectations;
use crate::scenario::{LoadOptions, Scenario, ScenarioError, load_file_with};
use crate::schedule::SharedFactory;

/// In-process clients this build can drive, by name. External clients
/// come from adapter manifests (`client-under-test/adapters/*/adapter.json`).
pub const CLIENTS: &[&str] = &["reference", "grpc-rust"];

pub type BoxedFactory = Box<SharedFactory>;

/// Where adapters live, relative to the repository root.
pub const ADAPTERS_DIR: &str = "client-under-test/adapters";

/// The crate directory of the checkout running now. Cargo sets
/// `CARGO_MANIFEST_DIR` for the tests and programs it runs; a build shared
/// between checkouts (one target directory for several clones, as CI's
/// cache is) holds whichever checkout's path was compiled in, so tests ask
/// at run time and fall back to `compiled_in` (`env!("CARGO_MANIFEST_DIR")`
/// of the caller) only outside cargo.
pub fn manifest_dir(compiled_in: &str) -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(compiled_in))
}

/// `path`, found at compile time relative to `compiled_in` (rstest's
/// `#[files]` writes absolute, normalised paths into the test binary:
/// `../scenarios/x.yaml` from the crate is `<root>/scenarios/x.yaml`), in
/// the checkout running now (see [`manifest_dir`]).
pub fn in_this_checkout(path: &Path, compiled_in: &str) -> PathBuf {
    let compiled_in = Path::new(compiled_in);
    // The nearest directory holding both, then back up from the crate.
    let Some(common) = compiled_in.ancestors().find(|a| path.starts_with(a)) else {
        return path.to_path_buf();
    };
    let ups = compiled_in.components().count() - common.components().count();
    let mut relocated = manifest_dir(&compiled_in.to_string_lossy());
    for _ in 0..ups {
        relocated.pop();
    }
    match path.strip_prefix(common) {
        Ok(rest) => relocated.join(rest),
        Err(_) => path.to_path_buf(),
    }
}

/// The repository root: the nearest ancestor of the current directory
/// (or of this crate, for tests) that has the adapters folder.
pub fn repo_root() -> Option<PathBuf> {
    let here = std::env::current_dir().ok();
    let crate_dir = Some(manifest_dir(env!("CARGO_MANIFEST_DIR")));
    [here, crate_dir].into_iter().flatten().find_map(|start| {
        start
            .ancestors()
            .find(|dir| dir.join(ADAPTERS_DIR).is_dir())
            .map(Path::to_path_buf)
    })
}

/// Every client this build can drive: in-process ones, then adapters.
pub fn available_clients() -> Vec<String> {
    let mut names: Vec<String> = CLIENTS.iter().map(|c| c.to_string()).collect();
    if let Some(root) = repo_root()
        && let Ok(entries) = std::fs::read_dir(root.join(ADAPTERS_DIR))
    {
        let mut adapters: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("adapter.json").is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        adapters.sort();
        names.extend(adapters);
    }
    names
}

/// The adapters of this repository's `client-under-test/adapters/`, as
/// they were when this crate was built (see `build.rs`).
pub const SHIPPED_ADAPTERS: &[&str] = include!(concat!(env!("OUT_DIR"), "/shipped_adapters.rs"));

/// Clients a scenario file may name (in `known_failures`,
/// `no_snapshot_for`): the ones this build can drive, and the adapters
/// the project ships even where their folder is absent (a harness used
/// outside this repository still reads this repository's scenarios).
pub fn known_client_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = available_clients();
        for shipped in SHIPPED_ADAPTERS {
            if !names.iter().any(|n| n == shipped) {
                names.push(shipped.to_string());
            }
        }
        names
    })
}

/// The rule ids of this checkout's spec catalogue (`catalogue/`), which a
/// scenario's `covers:` may name; `None` outside a checkout, or when the
/// catalogue does not load (`tests/catalogue.rs` says why).
pub fn catalogue_rule_ids() -> Option<&'static [String]> {
    static IDS: std::sync::OnceLock<Option<Vec<String>>> = std::sync::OnceLock::new();
    IDS.get_or_init(|| {
        let catalogue = crate::catalogue::Catalogue::in_checkout(&repo_root()?).ok()?;
        Some(catalogue.rules().map(|r| r.id.clone()).collect())
    })
    .as_deref()
}

/// Loads a scenario file, checking the client names it uses against the
/// clients known here ([`known_client_names`]), and the rules it covers
/// against the catalogue ([`catalogue_rule_ids`]).
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_file_with(
        path,
        LoadOptions {
            clients: Some(known_client_names()),
            rules: catalogue_rule_ids(),
        },
    )
}

/// Adapters the matrix leaves out unless asked for by name:
/// `reference-process` is the reference client again (as a process, for
/// benchmarks, and for the check that real time never fails a correct
/// client, which CI plays apart at `--jobs 12`); a column of it would
/// compare the implementation with itself.
pub const NOT_IN_DEFAULT_MATRIX: &[&str] = &["reference-process"];

/// The clients `matrix` runs by default: every client but
/// [`NOT_IN_DEFAULT_MATRIX`].
pub fn default_matrix_clients() -> Vec<String> {
    available_clients()
        .into_iter()
        .filter(|c| !NOT_IN_DEFAULT_MATRIX.contains(&c.as_str()))
        .collect()
}

/// The folder of the adapter `name` names: the path itself when it has a
/// `/` (one's own adapter, a test fixture: no checkout of this repository
/// needed); else one of this repository's adapters; else a folder of
/// that name in the working directory that holds an `adapter.json` (as a
/// new user writes `--client my-client` for `./my-client`). `None` when
/// the name is none of these; a path is returned as given, for its
/// loader to say what is wrong with it.
pub fn adapter_dir(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let has_manifest = |dir: &Path| dir.join(AdapterManifest::FILE_NAME).is_file();
    let shipped = repo_root()
        .map(|root| root.join(ADAPTERS_DIR).join(name))
        .filter(|dir| has_manifest(dir));
    shipped.or_else(|| {
        let here = PathBuf::from(name);
        // `..` or `.` would name the working directory's relatives, not
        // a folder in it.
        (!matches!(name, "" | "." | "..") && has_manifest(&here)).then_some(here)
    })
}

/// A factory for the named client, or for the adapter in the folder
/// `name` names ([`adapter_dir`]). External clients are installed first
/// (into `.peers/`, by their adapter's install script) if they are not yet.
pub fn client_factory(name: &str) -> Result<BoxedFactory, String> {
    match name {
        "reference" => Ok(Box::new(|| {
            Box::new(ReferenceClient::new()) as Box<dyn ClientUnderTest>
        })),
        "grpc-rust" => Ok(Box::new(|| {
            Box::new(GrpcRustClient::new()) as Box<dyn ClientUnderTest>
        })),
        _ => {
            let Some(dir) = adapter_dir(name) else {
                return Err(format!(
                    "unknown client {name:?}; known: {}. An adapter of your own is named by its \
                     folder: --client ./{name} (a folder holding its {}; there is none at \
                     ./{name}/{})",
                    available_clients().join(", "),
                    AdapterManifest::FILE_NAME,
                    AdapterManifest::FILE_NAME,
                ));
            };
            // What is there is read by the manifest's loader, which says
            // what it is if it is no file.
            if !dir.join(AdapterManifest::FILE_NAME).exists() {
                return Err(format!(
                    "no adapter at {name}: there is no {}",
                    dir.join(AdapterManifest::FILE_NAME).display()
                ));
            }
            let manifest = AdapterManifest::load(&dir).map_err(|e| e.to_string())?;
            let root = manifest.root_dir(&dir).map_err(|e| e.to_string())?;
            ProcessClient::new(&root, manifest.clone())
                .ensure_installed()
                .map_err(|e| e.to_string())?;
            Ok(Box::new(move || {
                xds_client_under_test::driven(&root, manifest.clone())
            }))
        }
    }
}

/// The expectations a client keeps with itself: an adapter's manifest
/// names its file (relative to the manifest), grpc-rust carries its own;
/// none for the reference client, which is held to the scenarios alone.
pub fn own_expectations(name: &str) -> Result<Expectations, String> {
    let error = |e: crate::expectations::ExpectationsError| e.to_string();
    if name == "grpc-rust" {
        use xds_client_under_test::grpc_rust::{EXPECTATIONS, EXPECTATIONS_FILE};
        return Expectations::parse(Path::new(EXPECTATIONS_FILE), EXPECTATIONS).map_err(error);
    }
    match manifest_expectations(name)? {
        // Not written yet (a new adapter's first runs): no entries, and
        // an update creates it. The caller says so (see
        // `manifest_expectations`).
        Some(path) if !path.exists() => Ok(Expectations::empty(&path)),
        Some(path) => Expectations::load(&path).map_err(error),
        None => Ok(Expectations::default()),
    }
}

/// The expectations file the manifest of the adapter `name` names (its
/// path, relative to the manifest's folder), whether it exists or not;
/// `None` for a client without a manifest, or a manifest naming none.
pub fn manifest_expectations(name: &str) -> Result<Option<PathBuf>, String> {
    let Some(dir) = adapter_dir(name).filter(|d| d.join(AdapterManifest::FILE_NAME).is_file())
    else {
        return Ok(None);
    };
    let manifest = AdapterManifest::load(&dir).map_err(|e| e.to_string())?;
    Ok(manifest.expectations.map(|file| dir.join(file)))
}

/// How many runs of the client `name` go at once when nobody says: its
/// adapter manifest's `jobs`, else [`crate::schedule::DEFAULT_JOBS`] (the
/// in-process clients run on virtual time, where jobs only share the CPU).
pub fn client_jobs(name: &str) -> usize {
    adapter_dir(name)
        .and_then(|dir| AdapterManifest::load(&dir).ok())
        .and_then(|m| m.jobs)
        .map_or(crate::schedule::DEFAULT_JOBS, std::num::NonZeroUsize::get)
}

/// A client's column heading in the matrix.
pub fn client_description(name: &str) -> String {
    match name {
        "reference" => format!("xds-reference-client {}", env!("CARGO_PKG_VERSION")),
        "grpc-rust" => "xds-client + tonic-xds 0.1.0-alpha.4 (crates.io)".to_string(),
        other => adapter_dir(other)
            .and_then(|dir| AdapterManifest::load(&dir).ok())
            .map(|m| m.description)
            .unwrap_or_default(),
    }
}

/// Every `.yaml`/`.yml` file under `paths` (files are taken as given),
/// sorted, so runs are in a stable order.
pub fn discover(paths: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut found)?;
        } else if path.exists() {
            found.push(path.clone());
        } else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{}: no such file or directory", path.display()),
            ));
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// Collects the `.yaml`/`.yml` entries under `dir`, whatever they are (the
/// loader reads regular files only and says so of the others). A folder
/// reached again (a symlink loop) is walked once.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    walk_once(dir, out, &mut HashSet::new())
}

fn walk_once(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    seen: &mut HashSet<(u64, u64)>,
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let metadata = std::fs::metadata(dir)?;
    if !seen.insert((metadata.dev(), metadata.ino())) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk_once(&path, out, seen)?;
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
    Ok(())
}

/// Which scenarios a run takes, and the limits the command line sets
/// over the files' own.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only scenarios whose name or path contains this.
    pub filter: Option<String>,
    /// Leave out scenarios with any of these tags.
    pub skip_tags: Vec<String>,
    /// `--virtual-limit`: every scenario's scenario-time limit.
    pub virtual_limit: Option<Duration>,
    /// `--wall-limit`: every run's wall-clock limit.
    pub wall_limit: Option<Duration>,
    /// `--retries`: how many times a failed real-time run is tried again
    /// (default: [`Selection::retries`]).
    pub retries: Option<u32>,
    /// `--partition K/N`: only this shard's scenarios.
    pub partition: Option<Partition>,
}

impl Selection {
    /// The retries in force for a client held to `expectations`: as
    /// asked, else [`crate::schedule::DEFAULT_RETRIES`] for a client whose
    /// expectations are recorded, and none for one whose are not yet (a
    /// new adapter's first runs: their failures are what the client does,
    /// which trying again only makes three times as slow to learn).
    pub fn retries(&self, expectations: &Expectations) -> u32 {
        self.retries.unwrap_or(if expectations.recorded {
            crate::schedule::DEFAULT_RETRIES
        } else {
            0
        })
    }
}

/// What a set of results was made with: the harness's version and a
/// digest of the scenario files (their paths as given and their
/// contents), so shards of one run can be told from results of another.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SuiteVersion {
    pub harness: String,
    /// `sha256:<hex>` over every file: path, NUL, contents, NUL.
    pub scenarios: String,
}

impl SuiteVersion {
    /// The version of a run over `files` (as discovered, in order), each
    /// named as given.
    pub fn of(files: &[PathBuf]) -> SuiteVersion {
        Self::of_named(files.iter().map(|f| (f.display().to_string(), f.as_path())))
    }

    /// [`SuiteVersion::of`] with each file's name given (relative to the
    /// repository, for `--version`).
    pub fn of_named<'a>(files: impl IntoIterator<Item = (String, &'a Path)>) -> SuiteVersion {
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        for (name, file) in files {
            digest.update(name.as_bytes());
            digest.update(&[0]);
            // A file that cannot be read is a load error of the run; its
            // name still counts.
            digest.update(&crate::scenario::read_bounded(file).unwrap_or_default());
            digest.update(&[0]);
        }
        let hex = xds_vocabulary::hex::hex(digest.finish().as_ref());
        SuiteVersion {
            harness: env!("CARGO_PKG_VERSION").to_string(),
            scenarios: format!("sha256:{hex}"),
        }
    }
}

impl std::fmt::Display for SuiteVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "xds-conformance {} (scenarios {})",
            self.harness, self.scenarios
        )
    }
}

/// One run's result as `results.json` has it (for machines: a CI's own
/// gate, dashboards).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// The run ID (see docs/src/ci/expectations.md).
    pub id: String,
    /// The scenario file.
    pub source: String,
    /// `pass`, `FAIL`, `n/a`, `divergent`, `known failure`, `ERROR`,
    /// `interrupted`.
    pub verdict: String,
    /// The failure message, the n/a or known-failure reason, the
    /// divergence note; empty for a pass.
    pub reason: String,
    pub virtual_seconds: f64,
    pub wall_seconds: f64,
}

/// A client's results, as `results.json` (`run`) or
/// `results-<client>.json` (`matrix`) has them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ResultsFile {
    pub suite: SuiteVersion,
    /// `K/N` for a shard.
    pub partition: Option<String>,
    pub client: String,
    pub runs: Vec<RunResult>,
}

impl ResultsFile {
    pub fn new(report: &RunReport, suite: &SuiteVersion, partition: Option<Partition>) -> Self {
        ResultsFile {
            suite: suite.clone(),
            partition: partition.map(|p| p.to_string()),
            client: report.client.clone(),
            runs: report
                .results
                .iter()
                .map(|r| RunResult {
                    id: r.name.clone(),
                    source: r.source.clone(),
                    verdict: r.verdict.label().to_string(),
                    reason: match &r.verdict {
                        Verdict::Pass => String::new(),
                        Verdict::Fail { message }
                        | Verdict::Error { message }
                        | Verdict::Interrupted { message } => message.clone(),
                        Verdict::NotApplicable { reason } => reason.clone(),
                        Verdict::Divergent { note } => note.clone(),
                        Verdict::KnownFailure { reason, .. } => reason.clone(),
                        Verdict::Flaky { message, .. } => message.clone(),
                    },
                    virtual_seconds: r.virtual_duration.as_secs_f64(),
                    wall_seconds: r.wall_duration.as_secs_f64(),
                })
                .collect(),
        }
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// One of N shards of the scenarios (`--partition K/N`, K from 1):
/// a scenario is in shard `hash(ID) % N + 1`, so a scenario stays in its
/// shard whatever else is added, and every scenario is in exactly one.
/// All protocol variants of a file go together (they are compared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// 1-based.
    pub index: u32,
    pub count: u32,
}

impl Partition {
    /// `K/N` with 1 <= K <= N.
    pub fn parse(text: &str) -> Result<Partition, String> {
        let error = || format!("{text:?}: expected K/N with 1 <= K <= N, e.g. 1/3");
        let (k, n) = text.split_once('/').ok_or_else(error)?;
        let index: u32 = k.trim().parse().map_err(|_| error())?;
        let count: u32 = n.trim().parse().map_err(|_| error())?;
        if index == 0 || count == 0 || index > count {
            return Err(error());
        }
        Ok(Partition { index, count })
    }

    /// Whether the scenario (or file that did not load) `id` is in this
    /// shard. FNV-1a: stable across builds and platforms, unlike std's
    /// hasher.
    pub fn holds(&self, id: &str) -> bool {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in id.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        hash % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Selection {
    /// Whether a scenario (or, if it did not load, its file) is taken.
    pub fn selects(&self, scenario: Option<&Scenario>, source: &str) -> bool {
        let name = scenario.map_or(source, |s| s.name.as_str());
        if self
            .filter
            .as_deref()
            .is_some_and(|f| !name.contains(f) && !source.contains(f))
        {
            return false;
        }
        !scenario.is_some_and(|s| s.tags.iter().any(|t| self.skip_tags.contains(t)))
    }

    /// Whether a run `id` of a scenario that is not there would be among
    /// the runs of `paths` under this selection: an expectations entry
    /// for it is then a typo or a renamed scenario, worth a warning, where
    /// one of a scenario a subset run leaves out is not. IDs come from
    /// paths (the path under the last `scenarios` folder, as the loader
    /// names files): `id` is within a folder of `paths` whose IDs start
    /// with its own path there (every ID, for the `scenarios` folder
    /// itself or one outside any), or is a file's of `paths`; and it
    /// matches `--filter` and is in `--partition`'s shard. Tags are not
    /// known of a scenario that is not there: `--skip-tag` leaves it in.
    pub fn would_select(&self, paths: &[PathBuf], id: &str) -> bool {
        let base = id.strip_suffix("@delta").unwrap_or(id);
        let within = paths.iter().any(|path| {
            let under = under_scenarios(path);
            if path.is_dir() {
                under.is_empty() || base.starts_with(&format!("{under}/"))
            } else {
                let file = Path::new(&under).with_extension("");
                file.to_str() == Some(base)
            }
        });
        within
            && self.filter.as_deref().is_none_or(|f| base.contains(f))
            && self.partition.is_none_or(|p| p.holds(base))
    }

    /// `scenario` with the command line's limits over its own. (The
    /// loader checked the script against the file's limit; a lower one
    /// given here is then enforced while the run plays.)
    pub fn with_limits(&self, mut scenario: Scenario) -> Scenario {
        if let Some(limit) = self.virtual_limit {
            scenario.limits.virtual_time = limit;
        }
        if let Some(limit) = self.wall_limit {
            scenario.limits.wall_time = limit;
        }
        scenario
    }
}

/// The part of `path` under its last `scenarios` component, `/`-joined
/// (`scenarios/a46` -> `a46`; `scenarios` -> empty); a path with no such
/// component is its file name alone (`my-tests/x.yaml` -> `x.yaml`), or
/// empty for a folder: scenario IDs there are file stems.
fn under_scenarios(path: &Path) -> String {
    let parts: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    match parts.iter().rposition(|p| *p == "scenarios") {
        Some(i) => parts[i + 1..].join("/"),
        None if path.is_dir() => String::new(),
        None => parts.last().copied().unwrap_or_default().to_string(),
    }
}

/// A client to run scenarios on: how to make one, and what is expected of
/// it.
pub struct TestedClient {
    /// As reports name it.
    pub name: String,
    /// The matrix's column heading.
    pub version: String,
    pub factory: BoxedFactory,
    /// What the client's own repository expects of it (the default: every
    /// run is held to the scenarios alone).
    pub expectations: Expectations,
    /// Its runs at once when the caller does not say: its adapter's
    /// `jobs`, else [`crate::schedule::DEFAULT_JOBS`].
    pub jobs: usize,
}

impl TestedClient {
    /// The client `name` (or the adapter in the folder `name`, see
    /// [`client_factory`]), named as it names itself (an adapter by its
    /// manifest, not by its folder), held to the expectations file at
    /// `expectations` if given.
    pub fn new(name: &str, expectations: Option<&Path>) -> Result<TestedClient, String> {
        let factory = client_factory(name)?;
        let expectations = match expectations {
            Some(path) => Expectations::load(path).map_err(|e| e.to_string())?,
            None => own_expectations(name)?,
        };
        // Making a client starts nothing: it is asked its name.
        let own_name = factory().name().to_string();
        Ok(TestedClient {
            version: client_description(name),
            name: own_name,
            factory,
            expectations,
            jobs: client_jobs(name),
        })
    }
}

/// A scenario file as named in reports, and what loading it gave.
pub struct Loaded {
    /// Its place among the files the selection takes, before any
    /// partition: shards keep it, so merged results come in the order of
    /// one run.
    pub order: usize,
    pub source: String,
    pub scenario: Result<Scenario, ScenarioError>,
}

/// Loads every file the selection takes, in order (a file that does not
/// load is taken if its path matches), then keeps the selection's shard.
pub fn load_selected(files: &[PathBuf], selection: &Selection) -> Vec<Loaded> {
    // Two files with one ID would share report files and expectations:
    // the later one is an error (before partitioning, so shards agree).
    let mut seen: HashMap<String, String> = HashMap::new();
    files
        .iter()
        // A signal stops loading too (thousands of files, a slow disk).
        .take_while(|_| crate::interrupt::signal().is_none())
        .map(|file| (file.display().to_string(), load(file)))
        .filter(|(source, loaded)| selection.selects(loaded.as_ref().ok(), source))
        .map(|(source, loaded)| {
            let loaded = match loaded {
                Ok(scenario) => match seen.get(&scenario.name) {
                    Some(first) => Err(ScenarioError {
                        file: source.clone(),
                        line: 0,
                        column: 0,
                        message: format!(
                            "its ID {:?} is also the ID of {first}: IDs name report files and \
                             expectations, so give one of them a `name:`",
                            scenario.name
                        ),
                        snippet: String::new(),
                        more: Vec::new(),
                    }),
                    None => {
                        seen.insert(scenario.name.clone(), source.clone());
                        Ok(scenario)
                    }
                },
                Err(e) => Err(e),
            };
            (source, loaded)
        })
        .enumerate()
        .map(|(order, (source, loaded))| Loaded {
            order,
            scenario: loaded.map(|s| selection.with_limits(s)),
            source,
        })
        .filter(|loaded| {
            selection.partition.is_none_or(|p| {
                p.holds(
                    loaded
                        .scenario
                        .as_ref()
                        .map_or(loaded.source.as_str(), |s| s.name.as_str()),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_runs_as_many_at_once_as_its_adapter_says_else_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let adapter = |name: &str, jobs: &str| {
            let folder = dir.path().join(name);
            std::fs::create_dir(&folder).unwrap();
            std::fs::write(
                folder.join("adapter.json"),
                format!(r#"{{"name": "{name}", "command": ["x"], "capabilities": {{}}{jobs}}}"#),
            )
            .unwrap();
            folder.display().to_string()
        };
        assert_eq!(client_jobs(&adapter("light", r#", "jobs": 11"#)), 11);
        assert_eq!(
            client_jobs(&adapter("unsaid", "")),
            crate::schedule::DEFAULT_JOBS
        );
        assert_eq!(client_jobs("reference"), crate::schedule::DEFAULT_JOBS);
    }

    /// What a shipped client says it can do, without installing or
    /// starting it (an adapter's manifest says it; `hello` must agree).
    fn declared_capabilities(client: &str) -> xds_client_under_test::Capabilities {
        match client {
            "reference" => ReferenceClient::new().capabilities(),
            "grpc-rust" => GrpcRustClient::new().capabilities(),
            _ => {
                let dir = repo_root().unwrap().join(ADAPTERS_DIR).join(client);
                let manifest = AdapterManifest::load(&dir).unwrap();
                let root = manifest.root_dir(&dir).unwrap();
                xds_client_under_test::driven(&root, manifest).capabilities()
            }
        }
    }

    #[test]
    fn the_shipped_clients_keep_their_expectations_and_each_names_a_run() {
        let root = manifest_dir(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let variants: Vec<_> = discover(std::slice::from_ref(&root))
            .unwrap()
            .iter()
            .map(|f| crate::scenario::load_file(f).unwrap_or_else(|e| panic!("{e}")))
            .flat_map(|s| s.variants())
            .collect();
        let ids: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
        let mut sizes = Vec::new();
        // Every shipped adapter (a new one is a folder) and the in-process
        // clients; reference-process is the reference client again.
        let clients = SHIPPED_ADAPTERS
            .iter()
            .copied()
            .filter(|c| *c != "reference-process")
            .chain(["grpc-rust", "reference"]);
        for client in clients {
            let own = own_expectations(client).unwrap_or_else(|e| panic!("{client}: {e}"));
            assert_eq!(own.unknown(&ids), Vec::<&str>::new(), "{client}");
            // No entry expects a result of a run the client cannot run
            // (what it can run is known without starting it).
            let caps = declared_capabilities(client);
            let not_applicable: Vec<String> = variants
                .iter()
                .filter(|v| crate::runner::not_applicable(v, &caps).is_some())
                .map(|v| v.name.clone())
                .collect();
            assert_eq!(
                own.for_not_applicable(&not_applicable),
                Vec::<&str>::new(),
                "{client}: entries of runs it cannot run"
            );
            // Its chaos entries name invariants it is known to break.
            crate::chaos::Rules::with_expectations(Default::default(), &own)
                .unwrap_or_else(|e| panic!("{client}: {e}"));
            sizes.push((client, own.recorded, own.entries.len()));
        }
        // Every client but ours keeps a file of what it is known to fail,
        // and it is read (a client may keep every rule: Envoy's file is
        // empty since its entries were rules that do not bind it); ours
        // is held to every scenario, with no file.
        assert!(
            sizes.iter().all(|(c, recorded, n)| if *c == "reference" {
                *n == 0
            } else {
                *recorded
            }),
            "{sizes:?}"
        );
    }

    #[test]
    fn compiled_in_paths_move_to_this_checkout() {
        let here = manifest_dir("/elsewhere/harness");
        let root = here.parent().unwrap();
        assert_eq!(
            in_this_checkout(
                Path::new("/elsewhere/scenarios/a.yaml"),
                "/elsewhere/harness"
            ),
            root.join("scenarios/a.yaml")
        );
        assert_eq!(
            in_this_checkout(
                Path::new("/elsewhere/harness/tests/b"),
                "/elsewhere/harness"
            ),
            here.join("tests/b")
        );
    }
}
