//! Loading a scenario: YAML text -> `file::ScenarioFile` (serde-saphyr:
//! syntax errors, unknown keys, wrong types and unknown step or resource
//! kinds come out located) -> `Scenario` (semantic checks, each located by
//! the `Spanned` position of the offending value, or of its step).
//!
//! The first error stops loading: one precise message beats many vague ones.
//!
//! This module is the orchestration: parse, then check each part in turn.
//! What each part is checked with (the `Checker`, the value parsers) is the
//! toolkit in `check`, which matcher kinds use too (`crate::matcher`);
//! how errors read is `error`. The loader knows nothing of the machine it
//! runs on: which clients exist is the caller's to say ([`LoadOptions`]).

use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::time::Duration;

use indexmap::IndexMap;
use serde_saphyr::MessageFormatter as _;
use xds_vocabulary::AdsProtocol;
use xds_vocabulary::certificates::Signer;

use super::error::ScenarioError;
use super::file::{
    BootstrapSpec, LimitsSpec, ScenarioFile, ServerSpec, Spanned, TlsSpec, ZoneSpec,
};
use super::limits::{self, Limits, MAX_FILE_BYTES, MAX_STEPS, MAX_VIRTUAL_TIME, MAX_WALL_TIME};
use super::{
    BootstrapPlan, ClientAuthPlan, ClientPlan, Location, Scenario, ServerCertificatePlan,
    ServerDef, StepDef, TlsPlan, ZonePlan,
};
use crate::check::{Checker, Problem, closest, duration, keyword, opt};
use crate::resource::resource_list;
use crate::step::ScriptState;

/// What the loader checks beyond the file itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions<'a> {
    /// The client names `known_failures` and `no_snapshot_for` may use, so
    /// a misspelt name does not silently leave a known failure unrecorded;
    /// `None`: any name.
    pub clients: Option<&'a [String]>,
    /// The rule ids `covers` may name (the spec catalogue's), so that a
    /// misspelt id is an error where it is written; `None`: any id of the
    /// catalogue's form.
    pub rules: Option<&'a [String]>,
}

/// Loads and checks a scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    load_file_with(path, LoadOptions::default())
}

/// [`load_file`], with the checks `options` add.
pub fn load_file_with(path: &Path, options: LoadOptions<'_>) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let unreadable = |message: String| ScenarioError {
        file: file.clone(),
        line: 0,
        column: 0,
        message,
        snippet: String::new(),
        more: Vec::new(),
    };
    let bytes = read_bounded(path).map_err(|e| {
        unreadable(match e {
            ReadProblem::TooLarge(size) => too_large(size),
            other => other.to_string(),
        })
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|e| unreadable(format!("cannot read the scenario file: not UTF-8: {e}")))?;
    load_str_with(&file, &text, options)
}

/// Why a scenario file's bytes were not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadProblem {
    #[error("cannot read the scenario file: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    NotRegular(String),
    #[error("the file is larger than the {MAX_FILE_BYTES} bytes a scenario file may have")]
    TooLarge(u64),
}

/// A scenario file's bytes, read safely, for loading and for the suite's
/// digest alike ([`xds_vocabulary::files::read_regular`]: a regular file
/// only, a FIFO or device refused at once, never past the limit).
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, ReadProblem> {
    use xds_vocabulary::files::{ReadError, read_regular};
    read_regular(path, MAX_FILE_BYTES).map_err(|e| match e {
        ReadError::Io(e) => ReadProblem::Io(e),
        e @ ReadError::NotRegular(_) => ReadProblem::NotRegular(e.to_string()),
        ReadError::TooLarge { size, .. } => ReadProblem::TooLarge(size),
    })
}

/// `message`, saying in which part of the file when that helps: a
/// missing field names the step (or other part) that lacks it.
fn in_part(path: &str, message: String) -> String {
    if path.is_empty() || path == "." || !message.starts_with("missing field") {
        return message;
    }
    let readable = path
        .split('.')
        // The `value` of our `Spanned` wrapper is no part of the file.
        .filter(|part| *part != "value")
        .map(|part| match part.split_once('[') {
            // serde_path_to_error counts from 0; people count steps from 1.
            Some(("steps", index)) => index
                .trim_end_matches(']')
                .parse::<usize>()
                .map_or_else(|_| part.to_string(), |i| format!("step {}", i + 1)),
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" > ");
    format!("{message} in {readable}")
}

/// The stack the loader runs on: deeply nested input costs stack in the
/// YAML parser and in reading proto3 JSON (some 40 KiB a level in a debug
/// build, up to `spanned_json`'s 100 levels), more than a test thread's
/// 2 MiB. Only touched pages are ever allocated.
const LOADER_STACK: usize = 64 << 20;

/// Loads and checks scenario text; `source_name` is its path (for messages
/// and the default scenario name).
pub fn load_str(source_name: &str, text: &str) -> Result<Scenario, ScenarioError> {
    load_str_with(source_name, text, LoadOptions::default())
}

/// [`load_str`], with the checks `options` add.
pub fn load_str_with(
    source_name: &str,
    text: &str,
    options: LoadOptions<'_>,
) -> Result<Scenario, ScenarioError> {
    // On a thread of its own with room for the deepest input the limits
    // allow, whatever thread asked (see LOADER_STACK).
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .name("scenario loader".into())
            .stack_size(LOADER_STACK)
            .spawn_scoped(scope, || load_str_here(source_name, text, options))
        {
            Ok(loader) => loader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: try on this one.
            Err(_) => load_str_here(source_name, text, options),
        }
    })
}

fn load_str_here(
    source_name: &str,
    text: &str,
    options: LoadOptions<'_>,
) -> Result<Scenario, ScenarioError> {
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(ScenarioError {
            file: source_name.to_string(),
            line: 0,
            column: 0,
            message: too_large(text.len() as u64),
            snippet: String::new(),
            more: Vec::new(),
        });
    }
    // serde's errors say what is wrong but not in which part of the file:
    // the path (`steps[3].set_resources`) says in which step.
    let mut path = String::new();
    let parsed: Result<ScenarioFile, _> =
        serde_saphyr::with_deserializer_from_str(text, |deserializer| {
            serde_path_to_error::deserialize(deserializer).map_err(|e| {
                path = e.path().to_string();
                e.into_inner()
            })
        });
    let parsed = parsed.map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        let message: String = serde_saphyr::UserMessageFormatter
            .format_message(&e)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let message = with_suggestion(message);
        let message = in_part(&path, message);
        ScenarioError::new(source_name, text, line, column, message)
    })?;
    check(source_name, parsed, options)
        .map_err(|p| ScenarioError::from_problem(source_name, text, p))
}

/// serde's "unknown field `x`, expected one of a, b" (or "unknown
/// variant"), with the closest expected word when one is close.
fn with_suggestion(message: String) -> String {
    let Some(rest) = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))
    else {
        return message;
    };
    let Some((word, expected)) = rest.split_once("`, expected one of ") else {
        return message;
    };
    let candidates: Vec<String> = expected
        .split(", ")
        .map(|c| c.trim_matches('`').to_string())
        .collect();
    match closest(word, &candidates) {
        Some(meant) => format!("{message} (did you mean `{meant}`?)"),
        None => message,
    }
}

fn too_large(size: u64) -> String {
    format!(
        "the file is {size} bytes, more than the {MAX_FILE_BYTES} a scenario file may have \
         (the largest here is 3 KB)"
    )
}

/// The longest scenario name: names become report file names (with a
/// client and `@delta` added) and terminal lines.
pub const MAX_NAME_BYTES: usize = 200;

/// A scenario name (its ID) is safe as a report file name, a terminal
/// line and a Markdown table cell: printable, bounded, and made of
/// `/`-separated parts that are not empty, `.` or `..`.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!("{} bytes; at most {MAX_NAME_BYTES}", name.len()));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("it has the control character {:?}", c));
    }
    if name.contains(['\\', '|', '`']) {
        return Err("`\\`, `|` and backquotes are not allowed (report paths and tables)".into());
    }
    if name
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(format!(
            "{name:?}: its `/`-separated parts must not be empty, `.` or `..`"
        ));
    }
    Ok(())
}

/// The path under the last `scenarios` directory, without extension
/// (`scenarios/a46/nack.yaml` -> `a46/nack`); else the file stem.
fn default_name(source_name: &str) -> String {
    let path = Path::new(source_name);
    let parts: Vec<&str> = path
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(source_name);
    match parts.iter().rposition(|p| *p == "scenarios") {
        Some(i) => parts[i + 1..]
            .iter()
            .copied()
            .chain([stem])
            .collect::<Vec<_>>()
            .join("/"),
        None => stem.to_string(),
    }
}

/// Checks a scenario built in code, as [`load_str`] checks the same
/// file's text once parsed, without writing and parsing it (the chaos
/// generator tries each step it drafts this way). Its text may still fail
/// to load where a value does not survive being written: load that once.
pub(crate) fn check_built(source_name: &str, file: &ScenarioFile) -> Result<Scenario, Problem> {
    check(source_name, file.clone(), LoadOptions::default())
}

fn check(
    source_name: &str,
    file: ScenarioFile,
    options: LoadOptions<'_>,
) -> Result<Scenario, Problem> {
    if file.servers.value.is_empty() {
        return Err(Problem::at(
            &file.servers,
            "servers: a scenario needs at least one server",
        ));
    }
    let checker = Checker::new(
        file.servers.value.keys().cloned().collect(),
        file.backends.keys().cloned().collect(),
    )
    .with_zone(file.zone.is_some());
    for tag in &file.spec {
        let v = &tag.value;
        let grfc = v.len() > 1 && v.starts_with('A') && v[1..].bytes().all(|b| b.is_ascii_digit());
        if !(grfc || v == "delta" || v == "kds") {
            return Err(Problem::at(
                tag,
                format!("spec tag `{v}`: expected a gRFC like A46, delta or kds"),
            ));
        }
    }
    let applies_to = file
        .applies_to
        .as_ref()
        .map(super::applicability::Applicability::compile)
        .transpose()?
        .unwrap_or_default();
    let servers = file
        .servers
        .value
        .iter()
        .map(|(name, spec)| checker.server_def(name, spec))
        .collect::<Result<_, _>>()?;
    let mut protocols = Vec::new();
    for p in &file.protocols {
        let protocol = protocol(p)?;
        if protocols.contains(&protocol) {
            return Err(Problem::at(
                p,
                format!("protocol `{}` is listed twice", p.value),
            ));
        }
        protocols.push(protocol);
    }
    if protocols.is_empty() {
        protocols.push(AdsProtocol::Sotw);
    }
    let bootstrap = checker.bootstrap(file.bootstrap.as_ref())?;
    if let BootstrapPlan::Json(_) = bootstrap
        && let Some(tls) = file.servers.value.values().find_map(|s| s.tls.as_ref())
    {
        return Err(Problem::at(
            tls,
            "tls: the run's certificate files go into the generated bootstrap; \
             a verbatim bootstrap.json cannot name them",
        ));
    }
    let client = ClientPlan {
        seed: file.client.as_ref().and_then(|c| c.seed).unwrap_or(1),
        profile: file
            .client
            .as_ref()
            .and_then(|c| c.profile.as_ref())
            .map(|p| p.value.clone()),
        env: match &file.client {
            Some(client) => client_env(&client.env)?,
            None => BTreeMap::new(),
        },
    };
    let zone = file
        .zone
        .as_ref()
        .map(|zone| zone_plan(zone, &file))
        .transpose()?;
    if let Some(extra) = file.steps.get(MAX_STEPS) {
        return Err(Problem::at(
            extra,
            format!(
                "steps: more than {MAX_STEPS} steps in one file (split the scenario, or \
                 repeat with `count`)"
            ),
        ));
    }
    let limits = run_limits(file.limits.as_ref())?;
    if let Some(known) = options.clients {
        for (list, what) in [
            (&file.known_failures, "known_failures"),
            (&file.no_snapshot_for, "no_snapshot_for"),
        ] {
            known_clients(list, what, known)?;
        }
    }
    let mut steps = Vec::with_capacity(file.steps.len());
    let mut script = ScriptState::default();
    for spec in &file.steps {
        steps.push(StepDef {
            location: Location {
                file: source_name.to_string(),
                line: spec.line,
                column: spec.column,
            },
            step: spec.value.compile(&mut script.at(&checker, spec))?,
            scheduled: Duration::ZERO,
        });
    }
    limits::check_timing(&mut steps, &limits)?;
    limits::check_reachable(&steps)?;
    let name = match &file.name {
        Some(name) => {
            check_name(&name.value).map_err(|why| Problem::at(name, format!("name: {why}")))?;
            name.value.clone()
        }
        None => {
            let name = default_name(source_name);
            check_name(&name).map_err(|why| {
                Problem::at_position(1, 1, format!("the name this file's path gives it: {why}"))
            })?;
            name
        }
    };
    Ok(Scenario {
        name,
        description: file.description,
        spec: file.spec.into_iter().map(|s| s.value).collect(),
        applies_to,
        tags: file.tags,
        covers: covered_rules(&file.covers, options.rules)?,
        protocol: protocols[0],
        protocols,
        servers,
        backends: file.backends.keys().cloned().collect(),
        known_failures: file.known_failures.value.clone().into_iter().collect(),
        no_snapshot_for: file.no_snapshot_for.value.clone().into_iter().collect(),
        limits,
        bootstrap,
        client,
        zone,
        steps,
        snapshot: file.snapshot.unwrap_or(true),
        source: source_name.to_string(),
    })
}

/// The rule ids of `covers:`: each in the catalogue's form, none twice,
/// and each one of `rules` when the caller knows the catalogue (the loader
/// reads no file but the scenario).
fn covered_rules(
    covers: &[Spanned<String>],
    rules: Option<&[String]>,
) -> Result<Vec<String>, Problem> {
    let mut ids: Vec<String> = Vec::with_capacity(covers.len());
    for id in covers {
        crate::catalogue::check_id(&id.value)
            .map_err(|why| Problem::at(id, format!("covers: {why}")))?;
        if let Some(rules) = rules
            && !rules.contains(&id.value)
        {
            let hint = closest(&id.value, rules)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(Problem::at(
                id,
                format!(
                    "covers: no rule `{}` in the spec catalogue (catalogue/){hint}",
                    id.value
                ),
            ));
        }
        if ids.contains(&id.value) {
            return Err(Problem::at(
                id,
                format!("covers: rule `{}` is listed twice", id.value),
            ));
        }
        ids.push(id.value.clone());
    }
    Ok(ids)
}

/// The zone a KDS run's client plays. Its streams are KDS's own, so the
/// file says nothing of ADS protocols.
fn zone_plan(zone: &Spanned<ZoneSpec>, file: &ScenarioFile) -> Result<ZonePlan, Problem> {
    if let Some(p) = file.protocols.first() {
        return Err(Problem::at(
            p,
            "protocols: a scenario with a `zone` speaks KDS (delta messages on Kuma's own \
             RPCs); leave `protocols` out",
        ));
    }
    let name = match &zone.value.name {
        None => DEFAULT_ZONE.to_string(),
        Some(name) if name.value.is_empty() || name.value.len() > 253 => {
            return Err(Problem::at(
                name,
                "zone name: 1 to 253 bytes (it is a header value and node.id)",
            ));
        }
        Some(name) if !name.value.bytes().all(|b| b.is_ascii_graphic()) => {
            return Err(Problem::at(
                name,
                "zone name: printable ASCII without spaces (it is a gRPC header value)",
            ));
        }
        Some(name) => name.value.clone(),
    };
    let mut resources: Vec<xds_vocabulary::kds::KdsResource> = Vec::new();
    for spec in &zone.value.resources {
        let resource = crate::resource::kuma::kds_resource(&spec.value, spec)?;
        if resources
            .iter()
            .any(|r| r.kuma_type == resource.kuma_type && r.key() == resource.key())
        {
            return Err(Problem::at(
                spec,
                format!(
                    "duplicate zone resource: {} `{}` is already in this list",
                    resource.kuma_type,
                    resource.key()
                ),
            ));
        }
        resources.push(resource);
    }
    let refresh_interval = match zone
        .value
        .config
        .as_ref()
        .and_then(|c| c.refresh_interval.as_ref())
    {
        None => None,
        Some(text) => {
            let interval = crate::check::duration(text, "refresh_interval")?;
            if interval.is_zero() {
                return Err(Problem::at(
                    text,
                    "refresh_interval: more than 0s (a zone publishes on its tick)",
                ));
            }
            Some(interval)
        }
    };
    Ok(ZonePlan {
        name,
        resources,
        refresh_interval,
    })
}

/// The zone's name when the file gives none.
pub const DEFAULT_ZONE: &str = "zone-1";

/// The file's `limits`, over the defaults.
fn run_limits(spec: Option<&LimitsSpec>) -> Result<Limits, Problem> {
    let mut limits = Limits::default();
    let Some(spec) = spec else {
        return Ok(limits);
    };
    let set = |given: Option<&Spanned<String>>,
               what: &str,
               max: Duration,
               field: &mut Duration|
     -> Result<(), Problem> {
        let Some(given) = given else {
            return Ok(());
        };
        let value = duration(given, what)?;
        if value.is_zero() || value > max {
            return Err(Problem::at(
                given,
                format!(
                    "{what}: must be more than 0s and at most {}",
                    crate::check::duration::format_duration_in_units(max)
                ),
            ));
        }
        *field = value;
        Ok(())
    };
    set(
        spec.virtual_time.as_ref(),
        "limits.virtual_time",
        MAX_VIRTUAL_TIME,
        &mut limits.virtual_time,
    )?;
    set(
        spec.wall_time.as_ref(),
        "limits.wall_time",
        MAX_WALL_TIME,
        &mut limits.wall_time,
    )?;
    Ok(limits)
}

/// Variables the harness itself gives a client, each from a part of the
/// scenario that says it better: the bootstrap (`bootstrap:`, or the one
/// generated from `servers`), the seed and the profile (`client:`).
const HARNESS_ENV: &[(&str, &str)] = &[
    ("GRPC_XDS_BOOTSTRAP", "`bootstrap:`"),
    ("GRPC_XDS_BOOTSTRAP_CONFIG", "`bootstrap:`"),
    ("XDS_CONFORMANCE_SEED", "`client: {seed: N}`"),
    ("XDS_CONFORMANCE_PROFILE", "`client: {profile: NAME}`"),
];

/// `client: {env: ...}`: names a process environment can hold
/// (`[A-Za-z_][A-Za-z0-9_]*`) and values without a NUL, none of them a
/// variable the harness sets itself.
fn client_env(
    env: &Spanned<IndexMap<String, String>>,
) -> Result<BTreeMap<String, String>, Problem> {
    for (name, value) in &env.value {
        let mut chars = name.chars();
        let well_formed = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            return Err(Problem::at(
                env,
                format!(
                    "client.env: `{name}` is not a variable name (letters, digits and `_`, \
                     not starting with a digit)"
                ),
            ));
        }
        if let Some((_, instead)) = HARNESS_ENV.iter().find(|(n, _)| n == name) {
            return Err(Problem::at(
                env,
                format!("client.env: the harness sets `{name}` itself; say it with {instead}"),
            ));
        }
        if value.contains('\0') {
            return Err(Problem::at(
                env,
                format!("client.env: the value of `{name}` holds a NUL byte"),
            ));
        }
    }
    Ok(env
        .value
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect())
}

/// Every key of a per-client map names a known client (see
/// [`LoadOptions::clients`]).
fn known_clients(
    list: &Spanned<IndexMap<String, String>>,
    what: &str,
    known: &[String],
) -> Result<(), Problem> {
    for name in list.value.keys() {
        if !known.iter().any(|k| k == name) {
            let hint = closest(name, known)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(Problem::at(
                list,
                format!(
                    "{what}: unknown client `{name}`{hint}; known clients: {}",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

pub(crate) const SERVER_MODES: &[(&str, bool)] = &[("auto", false), ("scripted", true)];

pub(crate) const SERVER_CERTIFICATES: &[(&str, ServerCertificatePlan)] = &[
    ("trusted", ServerCertificatePlan::Trusted),
    ("untrusted", ServerCertificatePlan::Untrusted),
    ("wrong_host", ServerCertificatePlan::WrongHost),
];

pub(crate) const CLIENT_CERTIFICATES: &[(&str, Option<Signer>)] = &[
    ("none", None),
    ("trusted", Some(Signer::TrustedCa)),
    ("untrusted", Some(Signer::UntrustedCa)),
];

pub(crate) const CLIENT_AUTH: &[(&str, ClientAuthPlan)] = &[
    ("none", ClientAuthPlan::None),
    ("optional", ClientAuthPlan::Optional),
    ("required", ClientAuthPlan::Required),
];

fn tls_plan(spec: &TlsSpec) -> Result<TlsPlan, Problem> {
    let client_certificate = opt(spec.client_certificate.as_ref(), |c| {
        keyword(c, "client certificate", CLIENT_CERTIFICATES)
    })?
    .flatten();
    Ok(TlsPlan {
        server_certificate: opt(spec.server_certificate.as_ref(), |c| {
            keyword(c, "server certificate", SERVER_CERTIFICATES)
        })?
        .unwrap_or(ServerCertificatePlan::Trusted),
        client_certificate,
        client_auth: opt(spec.client_auth.as_ref(), |a| {
            keyword(a, "client_auth", CLIENT_AUTH)
        })?
        .unwrap_or(if client_certificate.is_some() {
            ClientAuthPlan::Required
        } else {
            ClientAuthPlan::None
        }),
    })
}

fn protocol(s: &Spanned<String>) -> Result<AdsProtocol, Problem> {
    keyword(s, "protocol", &AdsProtocol::ALL.map(|p| (p.name(), p)))
}

/// What the loader checks with the scenario's servers and backends.
impl Checker {
    fn server_def(&self, name: &str, spec: &ServerSpec) -> Result<ServerDef, Problem> {
        let scripted = opt(spec.mode.as_ref(), |m| {
            keyword(m, "server mode", SERVER_MODES)
        })?
        .unwrap_or(false);
        Ok(ServerDef {
            name: name.to_string(),
            scripted,
            server_features: spec.server_features.clone(),
            resources: resource_list(&spec.resources, false, self.backends())?,
            protocol: opt(spec.protocol.as_ref(), protocol)?,
            tls: opt(spec.tls.as_ref(), |t| tls_plan(&t.value))?,
            max_connection_age: match &spec.max_connection_age {
                None => None,
                Some(age) => Some(xds_fake_server::MaxConnectionAge {
                    age: duration(age, "max_connection_age")?,
                    grace: match &spec.max_connection_age_grace {
                        Some(grace) => duration(grace, "max_connection_age_grace")?,
                        None => Duration::from_secs(1),
                    },
                }),
            },
        })
    }

    fn bootstrap(&self, spec: Option<&BootstrapSpec>) -> Result<BootstrapPlan, Problem> {
        let Some(spec) = spec else {
            return Ok(generated(
                self.servers().to_vec(),
                None,
                BTreeMap::new(),
                None,
                None,
            ));
        };
        if let Some(json) = &spec.json {
            let others: Vec<&str> = [
                ("servers", spec.servers.is_some()),
                ("node", spec.node.is_some()),
                ("authorities", !spec.authorities.is_empty()),
                (
                    "client_default_listener_resource_name_template",
                    spec.client_default_listener_resource_name_template
                        .is_some(),
                ),
                (
                    "server_listener_resource_name_template",
                    spec.server_listener_resource_name_template.is_some(),
                ),
            ]
            .into_iter()
            .filter_map(|(key, set)| set.then_some(key))
            .collect();
            if !others.is_empty() {
                return Err(Problem::at(
                    json,
                    format!(
                        "bootstrap.json is a complete bootstrap: it excludes {}",
                        others.join(", ")
                    ),
                ));
            }
            self.check_server_placeholders(json)?;
            return Ok(BootstrapPlan::Json(json.value.clone()));
        }
        let servers = match &spec.servers {
            Some(names) => names
                .iter()
                .map(|n| self.known_server(n))
                .collect::<Result<_, _>>()?,
            None => self.servers().to_vec(),
        };
        let mut authorities = BTreeMap::new();
        for (name, authority) in &spec.authorities {
            let servers = authority
                .servers
                .iter()
                .map(|n| self.known_server(n))
                .collect::<Result<_, _>>()?;
            authorities.insert(
                name.clone(),
                (
                    servers,
                    authority.client_listener_resource_name_template.clone(),
                ),
            );
        }
        Ok(generated(
            servers,
            spec.node.as_ref(),
            authorities,
            spec.client_default_listener_resource_name_template.clone(),
            spec.server_listener_resource_name_template.clone(),
        ))
    }

    /// Every `${server:NAME}` in a verbatim bootstrap must name a server.
    fn check_server_placeholders(&self, json: &Spanned<String>) -> Result<(), Problem> {
        const OPEN: &str = "${server:";
        let mut rest = json.value.as_str();
        while let Some(start) = rest.find(OPEN) {
            let after = &rest[start + OPEN.len()..];
            let Some(end) = after.find('}') else {
                return Err(Problem::at(
                    json,
                    "bootstrap.json: unterminated `${server:`, expected `${server:NAME}`",
                ));
            };
            let name = &after[..end];
            if !self.servers().iter().any(|s| s == name) {
                return Err(Problem::at(
                    json,
                    format!(
                        "bootstrap.json: unknown server `{name}` in `${{server:{name}}}`: scenario has servers {}",
                        self.server_list()
                    ),
                ));
            }
            rest = &after[end..];
        }
        Ok(())
    }
}

fn generated(
    servers: Vec<String>,
    node: Option<&super::file::NodeSpec>,
    authorities: BTreeMap<String, (Vec<String>, Option<String>)>,
    client_default_listener_resource_name_template: Option<String>,
    server_listener_resource_name_template: Option<String>,
) -> BootstrapPlan {
    let field = |f: fn(&super::file::NodeSpec) -> &Option<String>, default: &str| {
        node.and_then(|n| f(n).clone())
            .unwrap_or_else(|| default.to_string())
    };
    BootstrapPlan::Generated {
        servers,
        node_id: field(|n| &n.id, "xds-conformance-client"),
        node_cluster: field(|n| &n.cluster, "xds-conformance"),
        locality: (
            field(|n| &n.region, "r1"),
            field(|n| &n.zone, "z1"),
            field(|n| &n.sub_zone, ""),
        ),
        client_default_listener_resource_name_template,
        server_listener_resource_name_template,
        authorities,
    }
}

pub(crate) fn server_modes(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(SERVER_MODES)
}

pub(crate) fn server_certificates(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(SERVER_CERTIFICATES)
}

pub(crate) fn client_certificates(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(CLIENT_CERTIFICATES)
}

pub(crate) fn client_auths(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::check::schema::table(CLIENT_AUTH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::Matcher;
    use crate::matcher::client::ClientEventKind;
    use crate::matcher::server_event::ServerEventKind;
    use crate::matcher::serving::ServingMatcher;
    use crate::matcher::watcher::WatcherEventKind;
    use crate::step::Step;
    use crate::step::Window;
    use crate::step::dial::Dial;
    use crate::step::expect::Expect;
    use crate::step::expect_none::ExpectNone;
    use crate::step::remove_resources::RemoveResources;
    use crate::step::rpc::{Rpc, RpcUntil};
    use crate::step::send_response::SendResponse;
    use crate::step::set_resources::SetResources;
    use crate::step::watch::Watch;
    use crate::timeline::CsdsStatus;
    use std::fmt::Write as _;
    use xds_vocabulary::ResourceType;
    use xds_vocabulary::{LogLevel, RequestKind};

    const FULL: &str = r#"
description: Every step kind, with defaults left out where possible.
spec: [A27, delta]
servers:
  main:
    resources:
      - cluster: {name: c1}
      - endpoints: {name: c1, addresses: ["127.0.0.1:8080"]}
steps:
  - watch: {type: CDS, name: c1}
  - watch: {type: CDS, name: c1}
  - expect:
      watcher: {type: CDS, name: c1, event: changed, contains: c1}
  - expect:
      request: {type: Cluster, names: [c1], kind: nack, error_code: INVALID_ARGUMENT, node: true}
      at: 15s
  - expect:
      response: {server: main, type: type.googleapis.com/envoy.config.cluster.v3.Cluster, version: "1"}
      within: 250ms
  - expect:
      csds: {type: CDS, name: c1, status: DOES_NOT_EXIST}
  - expect:
      server_event: {event: stream_closed, code: UNAVAILABLE, by_client: false}
  - expect:
      client: {event: retry_scheduled, server: main, delay: 1.1s}
  - expect:
      dial: {resolved: true, clusters: {c1: ["127.0.0.1:8080"]}}
  - cancel_watch: {type: CDS, name: c1}
  - cancel_watch: {type: CDS, name: c1}
  - dial: xds:///l1
  - set_resources:
      version: v2
      resources:
        - listener: {name: l1, routes_to: c1}
        - route_config: {name: l1, routes_to: c1}
  - remove_resources: {type: LDS, names: [l1]}
  - send_response:
      type: CDS
      nonce: n1
      resources:
        - cluster: {name: c1}
        - cluster: {name: c1}
  - close_stream: {}
  - close_stream: {code: NOT_FOUND, message: gone}
  - refuse_connections: {}
  - accept_connections: {server: main}
  - wait: 2m
  - expect_none:
      client: {event: log, level: warning}
      for: 1.5s
"#;

    fn load(text: &str) -> Scenario {
        load_str("x/scenarios/a27/full.yaml", text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn load_error(text: &str) -> ScenarioError {
        load_str("t.yaml", text).expect_err("should not load")
    }

    #[test]
    fn fault_verbs_load_as_faults() {
        let s = load(
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - hang: {type: CDS}\n  - hang: {}\n  - resume: {}\n  \
             - close_streams_after: {responses: 2, code: INTERNAL, message: m}\n  \
             - close_streams_after: {responses: 0}\n  - keep_streams: {}\n  \
             - restart: {}\n  - restart: {keep_resources: false}\n  \
             - hold_connections: {}\n  - release_connections: {}\n  \
             - delay_responses: {by: 2s}\n  - drop_responses: {type: EDS}\n  \
             - drop_responses: {count: 3}\n",
        );
        let faults: Vec<xds_fake_server::fault::Fault> = s
            .steps
            .iter()
            .map(|step| match &step.step {
                Step::Hang(f)
                | Step::Resume(f)
                | Step::CloseStreamsAfter(f)
                | Step::KeepStreams(f)
                | Step::Restart(f)
                | Step::HoldConnections(f)
                | Step::ReleaseConnections(f)
                | Step::DelayResponses(f)
                | Step::DropResponses(f) => {
                    assert_eq!(f.server, "main");
                    f.fault.clone()
                }
                other => panic!("not a fault: {other:?}"),
            })
            .collect();
        assert_eq!(
            faults,
            [
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::Hang {
                    type_url: Some(ResourceType::Cluster.type_url().to_string())
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::Hang {
                    type_url: None
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::Resume),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::CloseStreamsAfter {
                    responses: 2,
                    code: tonic::Code::Internal,
                    message: "m".into()
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::CloseStreamsAfter {
                    responses: 0,
                    code: tonic::Code::Unavailable,
                    message: String::new()
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::KeepStreams),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::Restart {
                    keep_resources: true
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::Restart {
                    keep_resources: false
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::HoldConnections),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::ReleaseConnections),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::DelayResponses {
                    by: Duration::from_secs(2)
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::DropResponses {
                    count: 1,
                    type_url: Some(ResourceType::ClusterLoadAssignment.type_url().to_string())
                }),
                xds_fake_server::fault::Fault::from(xds_fake_server::fault::DropResponses {
                    count: 3,
                    type_url: None
                }),
            ]
        );
    }

    #[test]
    fn lone_carriage_returns_end_lines_in_snippets_too() {
        // Found by the scenario_loader fuzz target: YAML ends a line at a
        // lone CR, `str::lines` does not, and the error showed no source.
        let e =
            load_error("description: d\rservers: {main: {}}\r\nsteps:\r  - hang: {type: XDS}\r");
        assert_eq!((e.line, e.column), (4, 18), "{e}");
        assert!(e.snippet.contains("4 |   - hang: {type: XDS}"), "{e}");
    }

    #[test]
    fn a_hang_of_an_unknown_type_names_the_place() {
        let e = load_error("description: d\nservers: {main: {}}\nsteps:\n  - hang: {type: XDS}\n");
        assert_eq!((e.line, e.column), (4, 18), "{e}");
        assert!(e.message.contains("unknown resource type `XDS`"), "{e}");
    }

    #[test]
    fn serve_takes_a_listening_address_and_serving_a_state() {
        let s = load(
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - serve: \"[::]:8443\"\n  \
             - expect: {serving: {state: NOT_SERVING, code: NOT_FOUND, contains: x}}\n",
        );
        assert!(
            matches!(&s.steps[0].step, Step::Serve(serve) if serve.address == "[::]:8443"),
            "{:?}",
            s.steps[0].step
        );
        assert!(
            matches!(
                &s.steps[1].step,
                Step::Expect(Expect {
                    matcher: Matcher::Serving(ServingMatcher {
                        serving: false,
                        code: Some(tonic::Code::NotFound),
                        ..
                    }),
                    ..
                })
            ),
            "{:?}",
            s.steps[1].step
        );
        let e = load_error("description: d\nservers: {main: {}}\nsteps:\n  - serve: localhost\n");
        assert_eq!((e.line, e.column), (4, 12), "{e}");
        assert!(e.message.contains("expected ip:port"), "{e}");
        let e = load_error(
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - expect: {serving: {state: SERVING, code: OK}}\n",
        );
        assert!(e.message.contains("describe a NOT_SERVING"), "{e}");
        let e = load_error(
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - expect: {serving: {state: UP}}\n",
        );
        assert!(e.message.contains("unknown serving state `UP`"), "{e}");
    }

    #[test]
    fn rpc_until_backend_names_a_declared_backend_and_means_ok() {
        let s = load(
            "description: d\nbackends: {b1: {}}\nservers: {main: {}}\nsteps:\n  \
             - rpc: {target: xds:///s, until_backend: b1}\n",
        );
        assert!(
            matches!(
                &s.steps[0].step,
                Step::Rpc(Rpc { until: Some(RpcUntil { code: tonic::Code::Ok, backend: Some(b) }), .. }) if b == "b1"
            ),
            "{:?}",
            s.steps[0].step
        );
        let until = RpcUntil {
            code: tonic::Code::Ok,
            backend: Some("b1".into()),
        };
        assert!(until.met_by(tonic::Code::Ok, Some("b1")));
        assert!(!until.met_by(tonic::Code::Ok, Some("b2")));
        assert!(!until.met_by(tonic::Code::Unavailable, Some("b1")));
        let e = load_error(
            "description: d\nbackends: {b1: {}}\nservers: {main: {}}\nsteps:\n  \
             - rpc: {target: xds:///s, until_backend: b2}\n",
        );
        assert!(e.message.contains("b2"), "{e}");
        let e = load_error(
            "description: d\nbackends: {b1: {}}\nservers: {main: {}}\nsteps:\n  \
             - rpc: {target: xds:///s, until: UNAVAILABLE, until_backend: b1}\n",
        );
        assert!(e.message.contains("`until` can only be OK with it"), "{e}");
    }

    #[test]
    fn rpc_until_takes_a_status_code_and_no_count() {
        let s = load(
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - rpc: {target: xds:///s, until: UNAVAILABLE}\n",
        );
        assert!(
            matches!(
                &s.steps[0].step,
                Step::Rpc(Rpc {
                    until: Some(RpcUntil {
                        code: tonic::Code::Unavailable,
                        backend: None
                    }),
                    count: 1,
                    ..
                })
            ),
            "{:?}",
            s.steps[0].step
        );
        let e = load_error(
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - rpc: {target: xds:///s, until: NOPE}\n",
        );
        assert_eq!((e.line, e.column), (4, 36), "{e}");
        assert!(e.message.contains("unknown status code `NOPE`"), "{e}");
        let e = load_error(
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - rpc: {target: xds:///s, count: 2, until: OK}\n",
        );
        assert!(
            e.message.contains("`until` and `count` exclude each other"),
            "{e}"
        );
    }

    #[test]
    fn a_full_scenario_loads_with_its_defaults() {
        let s = load(FULL);
        assert_eq!(s.name, "a27/full");
        assert_eq!(s.spec, ["A27", "delta"]);
        assert_eq!(s.source, "x/scenarios/a27/full.yaml");
        assert!(s.snapshot);
        assert_eq!(s.client.seed, 1);
        assert_eq!(s.client.profile, None);
        assert_eq!(s.servers.len(), 1);
        assert_eq!(s.servers[0].name, "main");
        assert!(!s.servers[0].scripted);
        assert_eq!(s.servers[0].resources.len(), 2);
        let BootstrapPlan::Generated {
            servers,
            node_id,
            node_cluster,
            locality,
            authorities,
            ..
        } = &s.bootstrap
        else {
            panic!("{:?}", s.bootstrap)
        };
        assert_eq!(servers, &["main"]);
        assert_eq!(
            (node_id.as_str(), node_cluster.as_str()),
            ("xds-conformance-client", "xds-conformance")
        );
        assert_eq!(
            locality,
            &("r1".to_string(), "z1".to_string(), String::new())
        );
        assert!(authorities.is_empty());

        let steps: Vec<&Step> = s.steps.iter().map(|d| &d.step).collect();
        assert_eq!(
            s.steps[0].location,
            Location {
                file: s.source.clone(),
                line: 10,
                column: 5
            }
        );
        assert!(
            matches!(steps[0], Step::Watch(Watch { resource_type: ResourceType::Cluster, name }) if name == "c1")
        );
        let Step::Expect(Expect {
            matcher: Matcher::Watcher(w),
            window,
        }) = steps[2]
        else {
            panic!("{:?}", steps[2])
        };
        assert_eq!(*window, Window::Within(Duration::from_secs(1)));
        assert_eq!(w.event, Some(WatcherEventKind::Changed));
        let Step::Expect(Expect {
            matcher: Matcher::Request(r),
            window,
        }) = steps[3]
        else {
            panic!()
        };
        assert_eq!(*window, Window::At(Duration::from_secs(15)));
        assert_eq!(r.resource_type, Some(ResourceType::Cluster));
        assert_eq!(
            (r.kind, r.error_code, r.node),
            (Some(RequestKind::Nack), Some(3), Some(true))
        );
        let Step::Expect(Expect {
            matcher: Matcher::Response(r),
            window,
        }) = steps[4]
        else {
            panic!()
        };
        assert_eq!(*window, Window::Within(Duration::from_millis(250)));
        assert_eq!(r.server.as_deref(), Some("main"));
        let Step::Expect(Expect {
            matcher: Matcher::Csds(c),
            ..
        }) = steps[5]
        else {
            panic!()
        };
        assert_eq!(c.status, Some(CsdsStatus::DoesNotExist));
        let Step::Expect(Expect {
            matcher: Matcher::ServerEvent(e),
            ..
        }) = steps[6]
        else {
            panic!()
        };
        assert_eq!(
            (e.event, e.code, e.by_client),
            (
                ServerEventKind::StreamClosed,
                Some(tonic::Code::Unavailable),
                Some(false)
            )
        );
        let Step::Expect(Expect {
            matcher: Matcher::Client(c),
            ..
        }) = steps[7]
        else {
            panic!()
        };
        assert_eq!(
            (c.event, c.delay),
            (
                ClientEventKind::RetryScheduled,
                Some(Duration::from_millis(1100))
            )
        );
        let Step::Expect(Expect {
            matcher: Matcher::Dial(d),
            ..
        }) = steps[8]
        else {
            panic!()
        };
        let clusters = d.clusters.clone().unwrap_or_default();
        assert_eq!(
            clusters.get("c1").map(Vec::as_slice),
            Some(["127.0.0.1:8080".to_string()].as_slice())
        );
        assert!(
            matches!(steps[9], Step::CancelWatch(_)) && matches!(steps[10], Step::CancelWatch(_))
        );
        assert!(matches!(steps[11], Step::Dial(Dial { target }) if target == "xds:///l1"));
        let Step::SetResources(SetResources {
            server,
            resources,
            version,
        }) = steps[12]
        else {
            panic!()
        };
        assert_eq!(
            (server.as_str(), resources.len(), version.as_deref()),
            ("main", 2, Some("v2"))
        );
        assert!(matches!(
            steps[13],
            Step::RemoveResources(RemoveResources {
                resource_type: ResourceType::Listener,
                ..
            })
        ));
        let Step::SendResponse(SendResponse {
            resources,
            nonce,
            version,
            ..
        }) = steps[14]
        else {
            panic!()
        };
        assert_eq!(
            (resources.len(), nonce.as_deref(), version),
            (2, Some("n1"), &None)
        );
        assert!(
            matches!(steps[15], Step::CloseStream(c) if c.close.code == tonic::Code::Unavailable && c.close.message.is_empty())
        );
        assert!(
            matches!(steps[16], Step::CloseStream(c) if c.close.code == tonic::Code::NotFound && c.close.message == "gone")
        );
        assert!(matches!(steps[17], Step::RefuseConnections(f) if f.server == "main"));
        assert!(matches!(steps[18], Step::AcceptConnections(f) if f.server == "main"));
        assert!(matches!(steps[19], Step::Wait(w) if w.duration == Duration::from_secs(120)));
        let Step::ExpectNone(ExpectNone {
            matcher: Matcher::Client(c),
            duration,
        }) = steps[20]
        else {
            panic!()
        };
        assert_eq!(
            (c.level, *duration),
            (Some(LogLevel::Warning), Duration::from_millis(1500))
        );
    }

    #[test]
    fn client_env_is_read_and_checked_where_it_is_written() {
        let with = |env: &str| {
            format!("description: d\nclient: {{env: {env}}}\nservers: {{a: {{}}}}\nsteps: []\n")
        };
        let s = load(&with(
            r#"{GRPC_EXPERIMENTAL_XDS_FALLBACK: "false", _X1: ""}"#,
        ));
        assert_eq!(
            s.client.env,
            BTreeMap::from([
                (
                    "GRPC_EXPERIMENTAL_XDS_FALLBACK".to_string(),
                    "false".to_string()
                ),
                ("_X1".to_string(), String::new()),
            ])
        );
        assert!(
            load("description: d\nservers: {a: {}}\nsteps: []\n")
                .client
                .env
                .is_empty()
        );
        for (env, says) in [
            ("{1X: a}", "`1X` is not a variable name"),
            ("{A-B: a}", "`A-B` is not a variable name"),
            (
                "{GRPC_XDS_BOOTSTRAP: f}",
                "the harness sets `GRPC_XDS_BOOTSTRAP` itself",
            ),
            (
                "{XDS_CONFORMANCE_SEED: \"2\"}",
                "say it with `client: {seed: N}`",
            ),
        ] {
            let e = load_error(&with(env));
            assert_eq!((e.line, e.column), (2, 15), "{env}: {e}");
            assert!(e.message.contains(says), "{env}: {e}");
        }
    }

    #[test]
    fn explicit_settings_override_the_defaults() {
        let s = load(
            r#"
name: custom/name
description: d
snapshot: false
client: {seed: 7, profile: grpc-go-retry}
servers:
  a: {mode: scripted, server_features: [ignore_resource_deletion]}
  b: {}
bootstrap:
  servers: [b]
  node: {id: n, cluster: c, region: r, zone: z, sub_zone: s}
  client_default_listener_resource_name_template: "xdstp://a/envoy.config.listener.v3.Listener/%s"
  server_listener_resource_name_template: "grpc/server?xds.resource.listening_address=%s"
  authorities:
    a.example: {servers: [a], client_listener_resource_name_template: "xdstp://a.example/%s"}
    b.example: {}
steps: []
"#,
        );
        assert_eq!(s.name, "custom/name");
        assert!(!s.snapshot);
        assert_eq!(
            (s.client.seed, s.client.profile.as_deref()),
            (7, Some("grpc-go-retry"))
        );
        assert!(s.servers[0].scripted && !s.servers[1].scripted);
        assert_eq!(s.servers[0].server_features, ["ignore_resource_deletion"]);
        let BootstrapPlan::Generated {
            servers,
            node_id,
            node_cluster,
            locality,
            client_default_listener_resource_name_template,
            server_listener_resource_name_template,
            authorities,
        } = s.bootstrap
        else {
            panic!()
        };
        assert_eq!(servers, ["b"]);
        assert_eq!((node_id.as_str(), node_cluster.as_str()), ("n", "c"));
        assert_eq!(locality, ("r".into(), "z".into(), "s".into()));
        assert!(client_default_listener_resource_name_template.is_some());
        assert_eq!(
            server_listener_resource_name_template.as_deref(),
            Some("grpc/server?xds.resource.listening_address=%s")
        );
        assert_eq!(
            authorities["a.example"],
            (vec!["a".to_string()], Some("xdstp://a.example/%s".into()))
        );
        assert_eq!(authorities["b.example"], (vec![], None));
    }

    #[test]
    fn tls_settings_load_with_their_defaults() {
        let s = load(
            "description: d\nservers:\n  plain: {}\n  tls: {tls: {}}\n  \
             mtls: {tls: {client_certificate: trusted}}\n  \
             picky: {tls: {server_certificate: untrusted, client_certificate: untrusted, client_auth: optional}}\n  \
             misnamed: {tls: {server_certificate: wrong_host}}\n\
             steps: []\n",
        );
        let plans: Vec<Option<TlsPlan>> = s.servers.iter().map(|d| d.tls).collect();
        assert_eq!(
            plans,
            [
                None,
                Some(TlsPlan {
                    server_certificate: ServerCertificatePlan::Trusted,
                    client_certificate: None,
                    client_auth: ClientAuthPlan::None,
                }),
                // A client certificate makes the server require one.
                Some(TlsPlan {
                    server_certificate: ServerCertificatePlan::Trusted,
                    client_certificate: Some(Signer::TrustedCa),
                    client_auth: ClientAuthPlan::Required,
                }),
                Some(TlsPlan {
                    server_certificate: ServerCertificatePlan::Untrusted,
                    client_certificate: Some(Signer::UntrustedCa),
                    client_auth: ClientAuthPlan::Optional,
                }),
                Some(TlsPlan {
                    server_certificate: ServerCertificatePlan::WrongHost,
                    client_certificate: None,
                    client_auth: ClientAuthPlan::None,
                }),
            ]
        );
    }

    #[test]
    fn tls_errors_name_the_place() {
        let e =
            load_error("description: d\nservers:\n  a: {tls: {client_auth: always}}\nsteps: []\n");
        assert_eq!((e.line, e.column), (3, 26), "{e}");
        assert!(
            e.message
                .contains("unknown client_auth `always`: expected one of none, optional, required"),
            "{e}"
        );
        let e = load_error(
            "description: d\nservers:\n  a: {tls: {server_certificate: self-signed}}\nsteps: []\n",
        );
        assert_eq!((e.line, e.column), (3, 33), "{e}");
        assert!(
            e.message.contains("expected one of trusted, untrusted"),
            "{e}"
        );
        let e =
            load_error("description: d\nservers:\n  a: {tls: {client_cert: trusted}}\nsteps: []\n");
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("client_cert"), "{e}");
        // A field of another event could never match.
        let e = load_error(
            "description: d\nservers: {a: {}}\nsteps:\n  - expect:\n      \
             server_event: { event: stream_closed, failure: alert_from_client }\n",
        );
        assert_eq!(e.line, 5, "{e}");
        assert!(
            e.message
                .contains("server_event: `failure` is only for event tls_failed"),
            "{e}"
        );
        // The certificate files exist only per run: no verbatim bootstrap.
        let e = load_error(
            "description: d\nservers:\n  a: {}\n  b:\n    tls: {}\n\
             bootstrap:\n  json: '{\"xds_servers\": []}'\nsteps: []\n",
        );
        assert_eq!((e.line, e.column), (5, 10), "{e}");
        assert!(e.message.contains("a verbatim bootstrap.json"), "{e}");
    }

    #[test]
    fn a_verbatim_bootstrap_is_kept_as_written() {
        let json =
            r#"{"xds_servers": [{"server_uri": "${server:a}"}, {"server_uri": "${server:b}"}]}"#;
        let s = load(&format!(
            "description: d\nservers: {{a: {{}}, b: {{}}}}\nbootstrap:\n  json: '{json}'\nsteps: []\n"
        ));
        assert!(matches!(s.bootstrap, BootstrapPlan::Json(text) if text == json));
        let e = load_error(
            "description: d\nservers: {a: {}}\nbootstrap:\n  json: '${server:a'\nsteps: []\n",
        );
        assert!(e.message.contains("unterminated"), "{e}");
    }

    #[test]
    fn default_names_come_from_the_path_under_scenarios() {
        assert_eq!(default_name("scenarios/a46/nack.yaml"), "a46/nack");
        assert_eq!(
            default_name("/r/scenarios/x/scenarios/a71/fallback.yaml"),
            "a71/fallback"
        );
        assert_eq!(default_name("./scenarios/top.yaml"), "top");
        assert_eq!(default_name("elsewhere/one.yaml"), "one");
        assert_eq!(default_name("bare"), "bare");
        assert_eq!(default_name(""), "");
    }

    #[test]
    fn errors_render_with_location_and_caret() {
        let e = load_error("description: d\nservers:\n  main: {}\nsteps:\n  - wait: 3 s\n");
        assert_eq!((e.file.as_str(), e.line, e.column), ("t.yaml", 5, 11));
        assert_eq!(e.location().to_string(), "t.yaml:5:11");
        assert_eq!(
            e.to_string(),
            "t.yaml:5:11: wait: invalid duration `3 s`: expected a number and a unit ms, s, m or h, \
             e.g. `250ms`, `15s`, `1.5s`, `2m`\n  |\n3 |   main: {}\n4 | steps:\n5 |   - wait: 3 s\n  |           ^"
        );
    }

    #[test]
    fn yaml_errors_are_relocated_to_our_format() {
        let e = load_error("description: d\ndescription: again\nservers: {a: {}}\nsteps: []\n");
        assert_eq!((e.line, e.column), (2, 1));
        assert!(e.message.contains("duplicate"), "{e}");
        assert!(
            !e.message.contains(" at line "),
            "location belongs in the prefix: {e}"
        );
        assert!(e.to_string().starts_with("t.yaml:2:1: "), "{e}");
        let e = load_error("");
        assert!(e.to_string().starts_with("t.yaml"), "{e}");
    }

    #[test]
    fn send_response_may_repeat_but_state_lists_may_not() {
        let text = "description: d\nservers: {a: {}}\nsteps:\n  - send_response:\n      type: EDS\n      \
                    resources:\n        - raw: {type: EDS, name: e}\n        - raw: {type: EDS, name: e}\n";
        load(text);
        // Different types with one name are different resources.
        load(
            "description: d\nservers:\n  a:\n    resources:\n      - cluster: {name: x}\n      - listener: {name: x, rds: x}\nsteps: []\n",
        );
    }

    #[test]
    fn watches_are_counted_through_the_steps() {
        let text = |steps: &str| format!("description: d\nservers: {{a: {{}}}}\nsteps:\n{steps}");
        load(&text(
            "  - watch: {type: LDS, name: l}\n  - cancel_watch: {type: LDS, name: l}\n  - watch: {type: LDS, name: l}\n  - cancel_watch: {type: Listener, name: l}\n",
        ));
        let e = load_error(&text(
            "  - watch: {type: LDS, name: l}\n  - cancel_watch: {type: RDS, name: l}\n",
        ));
        assert_eq!((e.line, e.column), (5, 5));
    }

    /// No input may panic the loader: every prefix of a rich scenario, and
    /// assorted junk, loads or fails cleanly.
    #[test]
    fn never_panics_on_truncated_or_junk_input() {
        for (i, _) in FULL.char_indices() {
            let _ = load_str("t.yaml", &FULL[..i]);
        }
        for junk in [
            "",
            " ",
            "\t",
            "\u{0}",
            "[",
            "{{",
            "- a",
            "description: 1",
            "---\n---\n",
            "*a",
            "&a [*a]",
            "description: d\nservers: {a: {}}\nsteps: [{wait: \"\u{1F600}s\"}]",
            "description: d\nservers: {a: {}}\nsteps: [{dial: \"\"}]",
            "description: d\nservers: {a: {}}\nsteps: [{expect: {}}]",
            "description: d\nservers: {a: {resources: [{proto: []}]}}\nsteps: []",
            "description: d\nservers: {a: {resources: [{proto: {'@type': 1}}]}}\nsteps: []",
            "description: d\nservers: {a: {resources: [{wrapped: {wrapped: {raw: {type: LDS, name: x, hex: '\u{e9}'}}}}]}}\nsteps: []",
            "description: d\nservers: {a: {}}\nbootstrap: {json: '${server:'}\nsteps: []",
            "description: d\nservers: {a: {}}\nsteps: [{wait: 99999999999999999999h}]",
        ] {
            let _ = load_str("t.yaml", junk);
        }
        // Deep nesting must hit a budget, not the stack.
        let deep = format!(
            "description: d\nservers: {{a: {{resources: [{{proto: {}{}}}]}}}}\nsteps: []",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(load_str("t.yaml", &deep).is_err());
        // An alias bomb (10^9 leaves) inside a free-form proto value.
        let mut bomb = String::from(
            "description: d\nservers: {a: {resources: [{proto: {x0: &a0 [1,1,1,1,1,1,1,1,1,1]",
        );
        for level in 1..9 {
            let previous = format!("*a{}", level - 1);
            let _ = write!(
                bomb,
                ", x{level}: &a{level} [{}]",
                [previous.as_str(); 10].join(",")
            );
        }
        bomb.push_str("}}]}}\nsteps: []");
        let e = load_str("t.yaml", &bomb).expect_err("an alias bomb");
        assert!(e.message.contains("limits breached"), "{e}");
    }

    #[test]
    fn every_wrong_key_of_a_proto_resource_is_named_where_it_is() {
        let e = load_error(
            "description: d\nservers:\n  main:\n    resources:\n      - proto:\n          \
             \"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n          \
             name: c1\n          typo_field: 3\n          \
             eds_cluster_config: { eds_config: { ads: {} }, servce_name: x }\n          \
             connectTimeout: 5\nsteps: []\n",
        );
        assert_eq!((e.line, e.column), (8, 11), "{e}");
        assert!(
            e.message.contains(
                "at typo_field: envoy.config.cluster.v3.Cluster has no field `typo_field`"
            ),
            "{e}"
        );
        let more: Vec<(u64, u64, &str)> = e
            .more
            .iter()
            .map(|m| (m.line, m.column, m.message.as_str()))
            .collect();
        assert_eq!(more.len(), 2, "{e}");
        assert_eq!((more[0].0, more[0].1), (9, 58), "{e}");
        assert!(more[0].2.contains("(did you mean `service_name`?)"), "{e}");
        assert_eq!((more[1].0, more[1].1), (10, 27), "{e}");
        assert!(more[1].2.contains("at connectTimeout:"), "{e}");
        // All three are in what a user reads, each with its own snippet.
        let shown = e.to_string();
        assert_eq!(shown.matches("t.yaml:").count(), 3, "{shown}");
        assert_eq!(shown.matches("^").count(), 3, "{shown}");
    }

    #[test]
    fn a_wrong_key_inside_a_typed_config_is_found_through_its_type() {
        let e = load_error(
            "description: d\nservers:\n  main:\n    resources:\n      - proto:\n          \
             \"@type\": type.googleapis.com/envoy.config.listener.v3.Listener\n          \
             name: l\n          apiListener:\n            apiListener:\n              \
             \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n              \
             statPrefx: s\nsteps: []\n",
        );
        assert_eq!((e.line, e.column), (11, 15), "{e}");
        assert!(
            e.message.contains("at apiListener.apiListener.statPrefx:"),
            "{e}"
        );
        assert!(e.message.contains("did you mean `statPrefix`"), "{e}");
        assert!(e.more.is_empty(), "{e}");
    }

    #[test]
    fn a_missing_field_says_in_which_step() {
        let e = load_error(
            "description: d\nservers: {main: {}}\nsteps:\n  - wait: 1s\n  \
             - set_resources: { server: main }\n",
        );
        assert_eq!(e.line, 5, "{e}");
        assert_eq!(
            e.message, "missing field `resources` in step 2 > set_resources",
            "{e}"
        );
        // At the top there is no part to name.
        let e = load_error("servers: {main: {}}\nsteps: []\n");
        assert_eq!(e.message, "missing field `description`", "{e}");
    }
}
