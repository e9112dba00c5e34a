//! Scenarios: the file format engineers write (`file`), and the checked,
//! ready-to-run form the runner plays (this module's types).
//!
//! Loading goes file text -> `file::ScenarioFile` (serde, located syntax
//! errors) -> `Scenario` (names resolved, resources built into wire
//! entries, durations parsed, matchers compiled; located semantic errors).
//! Steps, matchers and resources, file form and checked form, are in
//! `crate::step`, `crate::matcher` and `crate::resource`.

pub mod applicability;
mod error;
pub mod file;
pub mod limits;
mod load;
mod schema;
mod write;

pub use error::ScenarioError;
pub(crate) use load::check_built;
pub use load::{
    LoadOptions, ReadProblem, load_file, load_file_with, load_str, load_str_with, read_bounded,
};
pub use schema::scenario_schema;
pub use write::to_yaml;

pub use crate::check::Location;
pub use crate::step::{RpcUntil, Step, StepDef, UNTIL_BUDGET, Window};

use std::collections::BTreeMap;

use xds_fake_server::ServedResource;
use xds_vocabulary::AdsProtocol;
use xds_vocabulary::certificates::Signer;

/// A checked scenario, ready to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// e.g. `a46/nack-keeps-valid-resources`.
    pub name: String,
    pub description: String,
    /// Spec tags: `A27`, `A46`, ...
    pub spec: Vec<String>,
    /// Which clients its rule binds (a run on another is n/a).
    pub applies_to: applicability::Applicability,
    /// Selection tags (`--skip-tag`).
    pub tags: Vec<String>,
    /// The catalogue rules it checks (`A57-04`), in the file's order.
    pub covers: Vec<String>,
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
    /// A KDS run: the zone the client plays.
    pub zone: Option<ZonePlan>,
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

/// A KDS run's zone (see [`ZoneSpec`](file::ZoneSpec)).
#[derive(Clone, Debug, PartialEq)]
pub struct ZonePlan {
    pub name: String,
    pub resources: Vec<xds_vocabulary::kds::KdsResource>,
    /// Its KDS refresh interval, if the file sets one.
    pub refresh_interval: Option<std::time::Duration>,
}

#[derive(Clone, Debug, Default)]
pub struct ClientPlan {
    /// Seed of the client's backoff jitter.
    pub seed: u64,
    /// Named client profile (`reference`, `grpc-go-retry`, ...); None = default.
    pub profile: Option<String>,
    /// Environment variables the client starts with (`client: {env: ...}`).
    pub env: BTreeMap<String, String>,
}
