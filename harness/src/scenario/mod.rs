//! Scenarios: the file format engineers write (`file`), and the checked,
//! ready-to-run form the runner plays (this module's types).
//!
//! Loading goes file text -> `file::ScenarioFile` (serde, located syntax
//! errors) -> `Scenario` (names resolved, resources built into wire
//! entries, durations parsed, matchers compiled; located semantic errors).
//! Matchers, file form and checked form, are in `crate::matcher`.

mod error;
pub mod file;
pub mod limits;
mod load;
mod schema;

pub use error::ScenarioError;
pub use load::{LoadOptions, load_file, load_file_with, load_str, load_str_with};
pub use schema::scenario_schema;

use std::collections::BTreeMap;
use std::time::Duration;

use xds_fake_server::{ScriptedResourceError, ServedResource};
use xds_vocabulary::certificates::Signer;
use xds_vocabulary::{AdsProtocol, ResourceType};

use crate::matcher::Matcher;

/// How long an `rpc ... until` step keeps trying before it takes the
/// next answer as final (virtual time on in-process runs).
pub const UNTIL_BUDGET: Duration = Duration::from_secs(2);

/// A source position, for error messages and failure reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u64,
    pub column: u64,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A checked scenario, ready to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// e.g. `a46/nack-keeps-valid-resources`.
    pub name: String,
    pub description: String,
    /// Spec tags: `A27`, `A46`, ...
    pub spec: Vec<String>,
    /// Selection tags (`--skip-tag`).
    pub tags: Vec<String>,
    /// The protocol this run plays (servers without their own use it).
    pub protocol: AdsProtocol,
    /// Every protocol the file asks for, in its order (see
    /// [`Scenario::variants`]).
    pub protocols: Vec<AdsProtocol>,
    /// In declaration order (the default bootstrap lists them in this order).
    pub servers: Vec<ServerDef>,
    /// Data-plane backends, in declaration order; backend `i` listens at
    /// [`backend_address`](crate::check::backend_address)`(i)`.
    pub backends: Vec<String>,
    pub bootstrap: BootstrapPlan,
    pub client: ClientPlan,
    pub steps: Vec<StepDef>,
    /// Client name -> why it is known to fail this scenario.
    pub known_failures: BTreeMap<String, String>,
    /// Compare the timeline against a stored snapshot.
    pub snapshot: bool,
    /// Clients whose timeline is not compared with a snapshot, and why.
    pub no_snapshot_for: BTreeMap<String, String>,
    pub source: String,
    /// How long a run may take (see [`limits`]).
    pub limits: limits::Limits,
}

impl Scenario {
    /// The runs the file asks for, one per protocol. With one protocol the
    /// run keeps the scenario's name; with several, a delta run is named
    /// `NAME@delta` (its snapshot and report entry), a SotW run `NAME`.
    pub fn variants(&self) -> Vec<Scenario> {
        let dual = self.protocols.len() > 1;
        self.protocols
            .iter()
            .map(|&protocol| {
                let mut run = self.clone();
                run.protocol = protocol;
                if dual && protocol != AdsProtocol::Sotw {
                    run.name = format!("{}@{protocol}", self.name);
                }
                run
            })
            .collect()
    }

    /// The protocol the client speaks to `server` in this run.
    pub fn protocol_of(&self, server: &str) -> AdsProtocol {
        self.servers
            .iter()
            .find(|s| s.name == server)
            .and_then(|s| s.protocol)
            .unwrap_or(self.protocol)
    }
}

#[derive(Clone, Debug)]
pub struct ServerDef {
    pub name: String,
    pub scripted: bool,
    pub server_features: Vec<String>,
    /// Resources the server holds when the scenario starts.
    pub resources: Vec<ServedResource>,
    pub max_connection_age: Option<xds_fake_server::MaxConnectionAge>,
    /// The protocol the client speaks to this server in every run; `None`:
    /// the run's.
    pub protocol: Option<AdsProtocol>,
    /// TLS on the channel to it (gRFC A65); `None`: plaintext.
    pub tls: Option<TlsPlan>,
}

/// Both sides of a server's TLS channel (see `file::TlsSpec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsPlan {
    /// The server's certificate.
    pub server_certificate: ServerCertificatePlan,
    /// Who signed the certificate in the client's bootstrap; `None`: it
    /// has none.
    pub client_certificate: Option<Signer>,
    pub client_auth: ClientAuthPlan,
}

/// A TLS server's certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerCertificatePlan {
    /// Signed by the CA the client trusts, valid for the host it dials.
    Trusted,
    /// Signed by a CA the client does not know.
    Untrusted,
    /// Signed by the CA the client trusts, but valid only for another
    /// host: the client must check the name, not only the chain.
    WrongHost,
}

/// What a TLS server asks of clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuthPlan {
    None,
    Optional,
    Required,
}

#[derive(Clone, Debug)]
pub enum BootstrapPlan {
    /// Generated from the servers: the listed ones (default: all, in
    /// order) as top-level `xds_servers`, plus node and authorities.
    Generated {
        servers: Vec<String>,
        node_id: String,
        node_cluster: String,
        locality: (String, String, String),
        client_default_listener_resource_name_template: Option<String>,
        server_listener_resource_name_template: Option<String>,
        /// name -> (servers, listener template)
        authorities: BTreeMap<String, (Vec<String>, Option<String>)>,
    },
    /// Given verbatim; `${server:NAME}` is replaced by that server's URI.
    Json(String),
}

#[derive(Clone, Debug, Default)]
pub struct ClientPlan {
    /// Seed of the client's backoff jitter.
    pub seed: u64,
    /// Named client profile (`reference`, `grpc-go-retry`, ...); None = default.
    pub profile: Option<String>,
}

#[derive(Clone, Debug)]
pub struct StepDef {
    pub location: Location,
    pub step: Step,
}

/// What ends an `rpc ... until` step: an RPC with this code, served (for
/// `until_backend`) by this backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcUntil {
    pub code: tonic::Code,
    pub backend: Option<String>,
}

impl RpcUntil {
    /// Whether an RPC's outcome ends the step.
    pub fn met_by(&self, code: tonic::Code, backend: Option<&str>) -> bool {
        code == self.code
            && self
                .backend
                .as_deref()
                .is_none_or(|want| backend == Some(want))
    }
}

#[derive(Clone, Debug)]
pub enum Step {
    Watch {
        resource_type: ResourceType,
        name: String,
    },
    CancelWatch {
        resource_type: ResourceType,
        name: String,
    },
    /// The most recent watcher of the resource holds (or lets go of) the
    /// stream reads its notifications carry.
    HoldReads {
        resource_type: ResourceType,
        name: String,
        hold: bool,
    },
    /// A watch the most recent watcher of `of` starts in its next callback.
    WatchInCallback {
        resource_type: ResourceType,
        name: String,
        of: (ResourceType, String),
    },
    Dial {
        target: String,
    },
    /// A CSDS request with these `node_matchers` (node ids, exact).
    CsdsRequest {
        node_ids: Vec<String>,
    },
    Serve {
        address: String,
    },
    Rpc {
        target: String,
        method: String,
        timeout: Duration,
        wait_for_ready: bool,
        count: u32,
        /// Repeat until an RPC ends like this (see `RpcSpec::until`).
        until: Option<RpcUntil>,
        /// Started, not awaited (see `RpcSpec::background`).
        background: bool,
    },
    SetResources {
        server: String,
        resources: Vec<ServedResource>,
        version: Option<String>,
    },
    RemoveResources {
        server: String,
        resource_type: ResourceType,
        names: Vec<String>,
        version: Option<String>,
    },
    SendResponse {
        server: String,
        resource_type: ResourceType,
        version: Option<String>,
        nonce: Option<String>,
        resources: Vec<ServedResource>,
        resource_errors: Vec<ScriptedResourceError>,
    },
    SendDeltaResponse {
        server: String,
        resource_type: ResourceType,
        system_version: Option<String>,
        nonce: Option<String>,
        resources: Vec<ServedResource>,
        /// Resource name -> version (default: the server's).
        versions: BTreeMap<String, String>,
        ttl: BTreeMap<String, Duration>,
        /// Names sent without a body, after `resources`.
        no_body: Vec<String>,
        removed: Vec<String>,
        resource_errors: Vec<ScriptedResourceError>,
    },
    CloseStream {
        server: String,
        code: tonic::Code,
        message: String,
    },
    RefuseConnections {
        server: String,
    },
    AcceptConnections {
        server: String,
    },
    /// Any other fault verb: `hang`, `resume`, `close_streams_after`,
    /// `keep_streams`.
    Fault {
        server: String,
        fault: xds_fake_server::fault::Fault,
    },
    Wait(Duration),
    Expect {
        matcher: Matcher,
        window: Window,
    },
    ExpectNone {
        matcher: Matcher,
        duration: Duration,
    },
}

/// When an expected event must have happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// At most this long after the step starts.
    Within(Duration),
    /// Exactly at this virtual time since the scenario started (ms precision).
    At(Duration),
}
