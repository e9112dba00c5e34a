//! The adapter manifest (`adapter.json`): how an adapter is installed and
//! started, and what it can be asked.

use super::*;

/// Capabilities as adapters declare them, in `adapter.json` and in
/// `hello`. Unknown keys are errors: a misspelt capability would otherwise
/// silently read as `false` and turn scenarios "not applicable".
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AdapterCapabilities {
    pub dial: bool,
    pub rpc: bool,
    pub watch: bool,
    /// Watches observed through channels (`watch` with `via`;
    /// ADAPTER_PROTOCOL.md, "Projected watches").
    pub projected_watch: bool,
    pub csds: bool,
    pub delta: bool,
    pub client_events: bool,
    /// The levels of the client's own log the adapter forwards as `log`
    /// events (ADAPTER_PROTOCOL.md): every line the client logs at each
    /// of them, with its level, and no debug output or trace among them.
    /// A level whose lines cannot be told from the client's traces is left
    /// out (grpcio: C-core's GRPC_TRACE lines are INFO lines).
    pub logs: Vec<LogLevelName>,
    /// gRFC A36 xDS-enabled servers: the `serve` op and `serving_status`
    /// events.
    pub serve: bool,
    /// A proxy: it serves targets on listeners, so RPCs go to a listener's
    /// address with the target as authority (ADAPTER_PROTOCOL.md, `rpc`).
    pub proxy: bool,
    /// Subscribes to Listeners and Clusters by name (the default, as
    /// gRPC clients do). `false`: only by wildcard, as Envoy does
    /// (api/xds_protocol.rst allows both): a request the scenario expects
    /// naming them is read as the wildcard request of its type (a
    /// divergence, never a pass), and a run that needs a named one is not
    /// applicable, never failed.
    pub named_lds_cds: bool,
    /// A watch of `*` is a wildcard watch (every resource of the type), not
    /// a watch of a resource named `*`. gRPC clients have none (gRFC A27:
    /// they request resources by name), so the default is `false`.
    pub wildcard_watch: bool,
    pub profiles: Vec<String>,
}

/// What a manifest that says nothing declares: nothing, but subscriptions
/// by name, which every gRPC client makes (a client that cannot must say
/// so, or its runs fail where they are not applicable).
impl Default for AdapterCapabilities {
    fn default() -> Self {
        AdapterCapabilities {
            dial: false,
            rpc: false,
            watch: false,
            projected_watch: false,
            csds: false,
            delta: false,
            client_events: false,
            logs: Vec::new(),
            serve: false,
            proxy: false,
            named_lds_cds: true,
            wildcard_watch: false,
            profiles: Vec::new(),
        }
    }
}

/// A log level as `capabilities.logs` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevelName {
    Info,
    Warning,
    Error,
}

impl LogLevelName {
    pub fn name(self) -> &'static str {
        match self {
            LogLevelName::Info => "info",
            LogLevelName::Warning => "warning",
            LogLevelName::Error => "error",
        }
    }
}

impl AdapterCapabilities {
    /// These, for a client whose release does not read `env_not_read`.
    pub fn with_env_not_read(&self, env_not_read: &BTreeMap<String, String>) -> Capabilities {
        Capabilities {
            env_not_read: env_not_read.clone(),
            ..self.to_capabilities()
        }
    }

    pub fn to_capabilities(&self) -> Capabilities {
        let mut profiles = self.profiles.clone();
        // Sorted so that a different order in adapter.json and hello is
        // not reported as a difference.
        profiles.sort();
        profiles.dedup();
        let mut logs = self.logs.clone();
        logs.sort();
        logs.dedup();
        Capabilities {
            watch: self.watch,
            projected_watch: self.projected_watch,
            dial: self.dial,
            rpc: self.rpc,
            // Real clients do not expose their resolved config.
            dial_config: false,
            csds: self.csds,
            csds_service: self.csds,
            resource_counts: false,
            // The adapter protocol has no way to say these.
            watch_in_callback: false,
            read_flow_control: false,
            // The adapter protocol matches replies to commands by id, and
            // adapters run each RPC on its own (thread, promise).
            background_rpc: self.rpc,
            client_events: self.client_events,
            logs: logs.iter().map(|l| l.name().to_string()).collect(),
            serve: self.serve,
            delta: self.delta,
            // A separate process cannot run on the harness's virtual clock.
            virtual_time: false,
            channels_need_real_time: false,
            // What every gRPC client is; the adapter protocol is for them
            // (Envoy is driven through its admin API: the envoy driver).
            channel_states: self.dial,
            grpc_bootstrap: true,
            authorities: true,
            named_lds_cds: self.named_lds_cds,
            wildcard_watch: self.wildcard_watch,
            proxy: self.proxy,
            connects_at_start: false,
            admin: false,
            // The adapter protocol has no KDS commands (yet: a Kuma zone
            // is driven through its REST API by a driver of its own).
            kds_zone: false,
            // The harness sets a scenario's variables on the adapter's
            // process when it starts it, so every adapter takes them
            // without saying so (and without code of its own, as long as
            // the client runs in the adapter's process).
            env: true,
            // A fact of the client's release, not of what its adapter
            // can be asked: adapter.json says it beside `capabilities`
            // (`AdapterManifest::env_not_read`), and the process driver
            // puts it here.
            env_not_read: BTreeMap::new(),
            profiles,
        }
    }
}

/// How a client in a manifest is driven.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    /// `command` is an adapter speaking ADAPTER_PROTOCOL.md.
    #[default]
    Adapter,
    /// `command` is an Envoy binary: the harness renders Envoy's bootstrap,
    /// observes it through its admin API and sends RPCs through its
    /// listeners (see `client-under-test/adapters/envoy/README.md`).
    Envoy,
    /// `command` is a kuma-cp binary: the harness runs it as a Kuma zone
    /// against the run's global, observes what it stores through its REST
    /// API and hands it zone-origin resources there (see
    /// `client-under-test/adapters/kuma/README.md`).
    Kuma,
}

/// An adapter's `adapter.json`. Relative paths in it (`command`,
/// `install`, `installed`) resolve against its [`root`](Self::root), and
/// its commands run there.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterManifest {
    pub name: String,
    /// The folder relative paths resolve against, relative to the
    /// manifest's own folder: `.` (the default) for an adapter kept in a
    /// client's repository; the adapters this project ships say `../../..`
    /// (they install into the checkout's `.peers/`).
    #[serde(default)]
    pub root: Option<PathBuf>,
    #[serde(default)]
    pub description: String,
    /// Run when the `installed` marker is missing; must create it last.
    #[serde(default)]
    pub install: Option<Vec<String>>,
    /// The marker file `install` creates.
    #[serde(default)]
    pub installed: Option<PathBuf>,
    /// What the install is built from, relative to the manifest's folder:
    /// files, and folders taken whole (a lock file, a `go.sum`, the
    /// adapter's sources). The harness writes their digest into the marker
    /// after an install, and installs again when they change, so a changed
    /// lock or source is never run from a stale build. Empty: the marker's
    /// existence alone says the install is done.
    #[serde(default)]
    pub install_inputs: Vec<PathBuf>,
    /// The folder the manifest was read from (set by [`Self::load`]): what
    /// `install_inputs` and `expectations` are relative to.
    #[serde(skip)]
    pub dir: Option<PathBuf>,
    /// How the harness drives the client: through the adapter protocol
    /// (the default), or as Envoy.
    #[serde(default)]
    pub driver: Driver,
    /// Starts the adapter (the `adapter` driver), or is the Envoy binary.
    pub command: Vec<String>,
    /// Added to the adapter's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What the client can do, known without starting it.
    pub capabilities: AdapterCapabilities,
    /// Variables a scenario may set that the client's release does not
    /// read, each with the source line that shows it
    /// ([`Capabilities::env_not_read`]). Beside `capabilities`, not in
    /// them: a fact of the client, which its adapter's hello has no say in.
    #[serde(default)]
    pub env_not_read: BTreeMap<String, String>,
    /// The client's expectations file (which scenario runs it is expected
    /// to fail, and why), relative to the manifest's own folder: kept
    /// with the adapter, in the client's repository. The harness holds the
    /// client to it unless `--expectations` names another.
    #[serde(default)]
    pub expectations: Option<PathBuf>,
    /// How many of its runs go at once when nobody says (`--jobs` does):
    /// the adapter knows what one of its clients costs the machine. A run
    /// of a real client mostly waits (a 15 s timer, a backoff), so the
    /// waits of many overlap; what does not overlap is the CPU of starting
    /// one (a JVM's is far more than a Go binary's). Unset: the harness's
    /// default.
    #[serde(default)]
    pub jobs: Option<std::num::NonZeroUsize>,
}

/// The most an adapter manifest may hold: a few hundred bytes in practice.
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

impl AdapterManifest {
    pub const FILE_NAME: &'static str = "adapter.json";

    /// What the manifest says the client can be asked, known without
    /// starting it.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities.with_env_not_read(&self.env_not_read)
    }

    /// The folder its relative paths resolve against, for a manifest read
    /// from `adapter_dir`: its `root` there, made absolute; an error names
    /// the folder it looked for.
    pub fn root_dir(&self, adapter_dir: &Path) -> Result<PathBuf, ProcessError> {
        let wanted = adapter_dir.join(self.root.as_deref().unwrap_or(Path::new(".")));
        std::fs::canonicalize(&wanted).map_err(|source| ProcessError::Root {
            adapter: self.name.clone(),
            path: wanted,
            source,
        })
    }

    /// Reads and checks `<adapter_dir>/adapter.json` (at most
    /// `MAX_MANIFEST_BYTES`).
    pub fn load(adapter_dir: &Path) -> Result<AdapterManifest, ProcessError> {
        let path = adapter_dir.join(Self::FILE_NAME);
        // A manifest is a small JSON file: a FIFO or a device in its place
        // is refused at once, not waited on or read forever.
        let text = xds_vocabulary::files::read_regular_text(&path, MAX_MANIFEST_BYTES).map_err(
            |source| ProcessError::ReadManifest {
                path: path.clone(),
                source,
            },
        )?;
        let mut manifest = Self::parse(&text, &path)?;
        manifest.dir = Some(adapter_dir.to_path_buf());
        Ok(manifest)
    }

    /// Parses and checks a manifest; `path` is only used in errors.
    pub fn parse(json: &str, path: &Path) -> Result<AdapterManifest, ProcessError> {
        let manifest: AdapterManifest =
            serde_json::from_str(json).map_err(|source| ProcessError::ParseManifest {
                path: path.to_path_buf(),
                source,
            })?;
        let invalid = |reason: &str| ProcessError::InvalidManifest {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        if manifest.name.trim().is_empty() {
            return Err(invalid("`name` is empty"));
        }
        if manifest.command.first().is_none_or(|p| p.is_empty()) {
            return Err(invalid("`command` is empty"));
        }
        match (&manifest.install, &manifest.installed) {
            (Some(install), Some(_)) if install.first().is_none_or(|p| p.is_empty()) => {
                return Err(invalid("`install` is empty"));
            }
            (Some(_), Some(_)) | (None, None) => {}
            (Some(_), None) => return Err(invalid("`install` needs an `installed` marker")),
            (None, Some(_)) => return Err(invalid("`installed` needs an `install` command")),
        }
        if !manifest.install_inputs.is_empty() && manifest.install.is_none() {
            return Err(invalid("`install_inputs` needs an `install` command"));
        }
        Ok(manifest)
    }
}

/// "dial: adapter.json true, hello false; profiles: adapter.json [], hello [a88]"
pub(super) fn capability_differences(declared: &Capabilities, said: &Capabilities) -> String {
    let flags = [
        ("dial", declared.dial, said.dial),
        ("rpc", declared.rpc, said.rpc),
        ("watch", declared.watch, said.watch),
        (
            "projected_watch",
            declared.projected_watch,
            said.projected_watch,
        ),
        ("csds", declared.csds, said.csds),
        ("delta", declared.delta, said.delta),
        ("client_events", declared.client_events, said.client_events),
        ("serve", declared.serve, said.serve),
        ("named_lds_cds", declared.named_lds_cds, said.named_lds_cds),
        (
            "wildcard_watch",
            declared.wildcard_watch,
            said.wildcard_watch,
        ),
    ];
    let mut differences: Vec<String> = flags
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(name, a, b)| format!("{name}: adapter.json {a}, hello {b}"))
        .collect();
    if declared.logs != said.logs {
        differences.push(format!(
            "logs: adapter.json {:?}, hello {:?}",
            declared.logs, said.logs
        ));
    }
    if declared.profiles != said.profiles {
        differences.push(format!(
            "profiles: adapter.json {:?}, hello {:?}",
            declared.profiles, said.profiles
        ));
    }
    differences.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Subscriptions by name are what a manifest that says nothing
    /// declares; a wildcard-only client says `false` and is taken at its
    /// word.
    #[test]
    fn named_lds_cds_is_declared_by_default_and_can_be_denied() {
        let caps = |json: &str| {
            serde_json::from_str::<AdapterCapabilities>(json)
                .expect("capabilities")
                .to_capabilities()
        };
        assert!(caps(r#"{"watch": true}"#).named_lds_cds);
        assert!(!caps(r#"{"watch": true, "named_lds_cds": false}"#).named_lds_cds);
        let said = caps(r#"{"named_lds_cds": false}"#);
        assert_eq!(
            capability_differences(&caps("{}"), &said),
            "named_lds_cds: adapter.json true, hello false"
        );
    }

    /// Log levels are read in any order and kept as info, warning, error;
    /// an unknown level is an error, not a capability read as absent.
    #[test]
    fn log_levels_are_ordered_and_checked() {
        let caps = |json: &str| serde_json::from_str::<AdapterCapabilities>(json);
        let both = caps(r#"{"logs": ["error", "warning", "error"]}"#)
            .expect("capabilities")
            .to_capabilities();
        assert_eq!(both.logs, ["warning", "error"]);
        assert!(caps(r#"{"logs": ["debug"]}"#).is_err());
        assert_eq!(
            capability_differences(&caps("{}").unwrap().to_capabilities(), &both),
            r#"logs: adapter.json [], hello ["warning", "error"]"#
        );
    }

    /// The variables a release does not read come from adapter.json
    /// beside the capabilities, and a hello (which cannot say them) keeps
    /// them: they are the client's, not what its adapter can be asked.
    #[test]
    fn env_not_read_is_the_manifests_and_survives_the_hello() {
        let manifest: AdapterManifest = serde_json::from_str(
            r#"{"name": "c", "command": ["c"], "capabilities": {"watch": true},
                "env_not_read": {"GRPC_EXPERIMENTAL_XDS_FALLBACK": "bootstrap.go:806"}}"#,
        )
        .expect("a manifest");
        let declared = manifest.capabilities();
        assert_eq!(
            declared.env_not_read.get("GRPC_EXPERIMENTAL_XDS_FALLBACK"),
            Some(&"bootstrap.go:806".to_string())
        );
        let hello: AdapterCapabilities =
            serde_json::from_str(r#"{"watch": true}"#).expect("capabilities");
        assert_eq!(hello.with_env_not_read(&manifest.env_not_read), declared);
        // Inside `capabilities` it is a key no adapter may use.
        assert!(serde_json::from_str::<AdapterCapabilities>(r#"{"env_not_read": {}}"#).is_err());
    }
}
