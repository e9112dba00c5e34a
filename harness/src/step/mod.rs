//! Steps: what a scenario's script does, one line at a time (`watch`,
//! `send_response`, `hang`, `wait`, `expect`, ...).
//!
//! Each kind of step is one module holding everything about it: its file
//! form (serde and JSON Schema, and writing it back as YAML), compiling it
//! into its checked form with located errors, playing it, the capabilities
//! a client needs for it, the scenario time it may take, what it makes
//! reachable for the expectations after it, its line on the timeline, and
//! how to generate it. Two kinds that start and stop one thing (`hang` and
//! `resume`) share a module. `step_kinds!` lists the kinds once; from that
//! list come the [`StepSpec`] and [`Step`] enums and the dispatch to each
//! kind. A new kind is a module and a line in that list.
//!
//! Steps play through a `Stage`: what the runner lets a step do (the
//! client, the fake servers, the timeline, letting time pass, checking an
//! expectation). The runner implements it; steps know nothing else of it.

pub mod cancel_watch;
pub mod close_stream;
pub mod connections;
pub mod csds_request;
pub mod delay_responses;
pub mod dial;
pub mod drop_responses;
pub mod expect;
pub mod expect_invariant;
pub mod expect_none;
mod fault;
pub mod generate;
pub mod hang;
pub mod hold_connections;
pub mod hold_streams;
pub mod reads;
pub mod remove_kuma_resources;
pub mod remove_resources;
pub mod restart;
pub mod rpc;
pub mod send_delta_response;
pub mod send_kds_request;
pub mod send_kds_response;
pub mod send_response;
pub mod serve;
pub mod set_resources;
pub mod stream_limit;
pub mod wait;
pub mod watch;
pub mod watch_in_callback;
pub mod zone_resources;

use std::collections::HashMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use xds_client_under_test::{Capabilities, ClientError, ClientUnderTest};
use xds_fake_server::{FakeAdsServer, ServedResource};
use xds_vocabulary::ResourceType;

use crate::check::{Checker, Location, Problem, Reachable, Spanned};
use crate::matcher::Matcher;
use crate::timeline::{EventKind, Mark, Source, Timeline};

pub use expect::Window;
pub use fault::{ServerFault, ServerRef};
pub use generate::Palette;
pub use rpc::{RpcUntil, UNTIL_BUDGET};

/// Every step kind, in the order the schema lists them: the key it is
/// written under (which is its [`StepSpec`] variant in snake case), its
/// [`Step`] variant, its module's file form and checked form. Hands the
/// list, and whatever follows it, to `$callback` (a macro in this module).
macro_rules! step_kinds {
    ($callback:ident! { $($input:tt)* }) => { $crate::step::$callback! { [
        /// Start a watch on the client: `{type: CDS, name: c1}`.
        watch: Watch(watch::WatchSpec => watch::Watch),
        /// Cancel a watch started earlier.
        cancel_watch: CancelWatch(cancel_watch::CancelWatchSpec => cancel_watch::CancelWatch),
        /// From now on the most recent watcher of the resource keeps the read
        /// handle of each notification a response causes (gRPC's
        /// ReadDelayHandle): the ADS stream reads no further response until
        /// `release_reads`.
        hold_reads: HoldReads(reads::HoldReadsSpec => reads::HoldReads),
        /// The watcher lets go of the reads it holds, and holds no more.
        release_reads: ReleaseReads(reads::ReleaseReadsSpec => reads::HoldReads),
        /// Arm the most recent watcher of `of`: inside its next callback it
        /// starts this watch (a client must not deadlock). Not cancellable.
        watch_in_callback: WatchInCallback(watch_in_callback::WatchInCallbackSpec => watch_in_callback::WatchInCallback),
        /// Resolve an `xds:` target as a gRPC channel would.
        dial: Dial(dial::DialSpec => dial::Dial),
        /// Start an xDS-enabled server (gRFC A36) listening on `ip:port`: it
        /// watches the Listener the bootstrap's
        /// `server_listener_resource_name_template` names for that address.
        serve: Serve(serve::ServeSpec => serve::Serve),
        /// Send unary RPCs on the channel to a target (dialling it if needed);
        /// each result goes on the timeline.
        rpc: Rpc(rpc::RpcSpec => rpc::Rpc),
        /// Send the client's CSDS service a request of the scenario's making
        /// (e.g. with `node_matchers`); its answer goes on the timeline, for
        /// `csds_reply` expectations.
        csds_request: CsdsRequest(csds_request::CsdsRequestSpec => csds_request::CsdsRequest),
        /// Add or replace resources on a server (auto mode pushes them).
        set_resources: SetResources(set_resources::SetResourcesSpec => set_resources::SetResources),
        /// Delete resources from a server.
        remove_resources: RemoveResources(remove_resources::RemoveResourcesSpec => remove_resources::RemoveResources),
        /// Send exactly this DiscoveryResponse now, on every open SotW stream.
        send_response: SendResponse(send_response::SendResponseSpec => send_response::SendResponse),
        /// Send exactly this DeltaDiscoveryResponse now, on every open delta
        /// stream.
        send_delta_response: SendDeltaResponse(send_delta_response::SendDeltaResponseSpec => send_delta_response::SendDeltaResponse),
        /// KDS: add or replace the zone's own (zone-origin) resources, as a
        /// user does on a Kuma zone; the zone syncs them to its global.
        set_zone_resources: SetZoneResources(zone_resources::SetZoneResourcesSpec => zone_resources::SetZoneResources),
        /// KDS: delete zone-origin resources from the zone.
        remove_zone_resources: RemoveZoneResources(zone_resources::RemoveZoneResourcesSpec => zone_resources::RemoveZoneResources),
        /// KDS: delete Kuma resources from a global's store.
        remove_kuma_resources: RemoveKumaResources(remove_kuma_resources::RemoveKumaResourcesSpec => remove_kuma_resources::RemoveKumaResources),
        /// KDS: send exactly this DeltaDiscoveryResponse now, on every open
        /// `GlobalToZoneSync` stream of a global.
        send_kds_response: SendKdsResponse(send_kds_response::SendKdsResponseSpec => send_kds_response::SendKdsResponse),
        /// KDS: the global sends exactly this request (a subscription, an
        /// ACK, a NACK) on every open `ZoneToGlobalSync` stream.
        send_kds_request: SendKdsRequest(send_kds_request::SendKdsRequestSpec => send_kds_request::SendKdsRequest),
        /// Close the server's ADS streams with a gRPC status.
        close_stream: CloseStream(close_stream::CloseStreamSpec => close_stream::CloseStream),
        /// The server stops accepting connections.
        refuse_connections: RefuseConnections(connections::RefuseConnectionsSpec => ServerFault),
        /// The server accepts connections again.
        accept_connections: AcceptConnections(connections::AcceptConnectionsSpec => ServerFault),
        /// The server keeps its streams open but answers nothing by itself:
        /// for one type (`type: CDS`), or every type.
        hang: Hang(hang::HangSpec => ServerFault),
        /// End every hang: the server sends what it owes at once.
        resume: Resume(hang::ResumeSpec => ServerFault),
        /// From now on the server closes every ADS stream with a status once it
        /// has sent it `responses` responses (0: at its first request).
        close_streams_after: CloseStreamsAfter(stream_limit::CloseStreamsAfterSpec => ServerFault),
        /// Stop closing streams (ends `close_streams_after`).
        keep_streams: KeepStreams(stream_limit::KeepStreamsSpec => ServerFault),
        /// The server restarts: its streams end and its connections drop;
        /// `keep_resources: false` also empties its store (versions restart).
        restart: Restart(restart::RestartSpec => ServerFault),
        /// Connections are accepted but no bytes move on them (new or open):
        /// the client never hears the server's HTTP/2 preface, so its
        /// requests stay queued (not on a connected stream). Never released,
        /// it is a blackhole.
        hold_connections: HoldConnections(hold_connections::HoldConnectionsSpec => ServerFault),
        /// Held connections go on: the handshake completes, queued requests
        /// arrive.
        release_connections: ReleaseConnections(hold_connections::ReleaseConnectionsSpec => ServerFault),
        /// Connections stay up (READY) but the server admits no new stream
        /// (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS 0, on open connections
        /// and new ones): a stream the client starts waits in the client,
        /// unsent; streams already open go on.
        hold_streams: HoldStreams(hold_streams::HoldStreamsSpec => ServerFault),
        /// The server admits streams again: held ones open.
        release_streams: ReleaseStreams(hold_streams::ReleaseStreamsSpec => ServerFault),
        /// Every response waits this long before it goes out (`{by: 2s}`;
        /// `0s` ends it).
        delay_responses: DelayResponses(delay_responses::DelayResponsesSpec => ServerFault),
        /// The next `count` responses (of `type`, or any) are lost on their way:
        /// the server counts them as sent, the client never gets them.
        drop_responses: DropResponses(drop_responses::DropResponsesSpec => ServerFault),
        /// Let virtual time pass: `15s`, `250ms`, `1.5s`, `2m`.
        wait: Wait(wait::WaitSpec => wait::Wait),
        /// An event must happen (after the last action or match).
        expect: Expect(expect::ExpectSpec => expect::Expect),
        /// No such event may happen for `for`.
        expect_none: ExpectNone(expect_none::ExpectNoneSpec => expect_none::ExpectNone),
        /// The run so far keeps one of chaos's invariants (read over the
        /// whole timeline): what a shrunk chaos finding ends with.
        expect_invariant: ExpectInvariant(expect_invariant::ExpectInvariantSpec => expect_invariant::ExpectInvariant),
    ] $($input)* } };
}

/// The kinds' keys, the file form and checked form enums, and the
/// dispatch to each kind.
macro_rules! define_steps {
    ([$(
        $(#[$doc:meta])*
        $key:ident : $Variant:ident ( $Spec:ty => $Checked:ty )
    ),* $(,)?]) => {
        /// Every step key, in the order the schema lists them.
        pub const STEP_KEYS: &[&str] = &[$(stringify!($key)),*];

        /// One step of the script, as written. Each is a single-key map:
        /// `- watch: {...}`.
        #[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
        #[serde(rename_all = "snake_case", deny_unknown_fields)]
        pub enum StepSpec {
            $( $(#[$doc])* $Variant($Spec), )*
        }

        /// A checked step, ready to play.
        #[derive(Clone, Debug)]
        pub enum Step {
            $( $(#[$doc])* $Variant($Checked), )*
        }

        impl StepSpec {
            /// The key it is written under.
            pub fn key(&self) -> &'static str {
                match self {
                    $( StepSpec::$Variant(_) => stringify!($key), )*
                }
            }

            /// The checked step, or what is wrong with it and where.
            pub(crate) fn compile(&self, script: &mut Script<'_>) -> Result<Step, Problem> {
                match self {
                    $( StepSpec::$Variant(spec) => spec.compile(script).map(Step::$Variant), )*
                }
            }

            /// Strategies for every kind that is generated, each with its
            /// key (see [`generate`]).
            pub fn strategies(palette: &Palette) -> Vec<(&'static str, proptest::strategy::BoxedStrategy<StepSpec>)> {
                use proptest::strategy::Strategy as _;
                let mut all = Vec::new();
                $(
                    if let Some(strategy) = <$Spec as Generate>::generate(palette) {
                        all.push((stringify!($key), strategy.prop_map(StepSpec::$Variant).boxed()));
                    }
                )*
                all
            }
        }

        impl Step {
            /// The key its kind is written under.
            pub fn key(&self) -> &'static str {
                match self {
                    $( Step::$Variant(_) => stringify!($key), )*
                }
            }

            /// The kind's own behaviour.
            fn kind(&self) -> &dyn Kind {
                match self {
                    $( Step::$Variant(step) => step, )*
                }
            }

            /// Plays the step on `stage`; `at` is where it is written.
            pub(crate) async fn play(&self, stage: &mut dyn Stage, at: &Location) -> Result<(), StepError> {
                match self {
                    $( Step::$Variant(step) => step.play(stage, at).await, )*
                }
            }
        }
    };
}

// Named by path, as `step_kinds!` calls its callback.
use define_steps;

step_kinds!(define_steps! {});

/// A step with where it is written.
#[derive(Clone, Debug)]
pub struct StepDef {
    pub location: Location,
    pub step: Step,
    /// The least scenario time the steps before it surely take (their
    /// waits): where the script is due when this step starts. On real time
    /// the harness is late by the difference (see `runner::expect`).
    pub scheduled: Duration,
}

impl Step {
    /// Its line on the timeline, e.g. `watch CDS c1` (for `wait` and the
    /// expectations, what they do: they record no line of their own).
    pub fn describe(&self) -> String {
        self.kind().describe()
    }

    /// What a client lacks to play it, if anything.
    pub fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        self.kind().missing_capability(caps)
    }

    /// Adds the scenario time it may take to `clock`; an error if it can
    /// never be played as written (an `at` window already passed).
    pub(crate) fn advance(&self, clock: &mut ScriptClock) -> Result<(), String> {
        self.kind().advance(clock)
    }

    /// Adds what it makes reachable to `reach`; an error if it expects
    /// what nothing before it could cause.
    pub(crate) fn reach(&self, reach: &mut Reachable) -> Result<(), String> {
        self.kind().reach(reach)
    }

    /// Whether it acts on servers only, so it may play before a client
    /// that connects as soon as it starts is started.
    pub fn server_only(&self) -> bool {
        self.kind().server_only()
    }

    /// The matcher of an expectation.
    pub fn matcher(&self) -> Option<&Matcher> {
        match self {
            Step::Expect(e) => Some(&e.matcher),
            Step::ExpectNone(e) => Some(&e.matcher),
            _ => None,
        }
    }
}

/// A step kind's file form: compiled when the scenario loads.
pub(crate) trait Compile {
    /// The checked form.
    type Step;

    /// The checked form, or a [`Problem`] located at the offending value
    /// (or at the step).
    fn compile(&self, script: &mut Script<'_>) -> Result<Self::Step, Problem>;
}

/// A step kind's checked form: everything but playing it, which is
/// [`Play`].
pub(crate) trait Kind {
    /// Its line on the timeline.
    fn describe(&self) -> String;

    /// What a client lacks to play it, if it lacks it: the scenario is
    /// then not applicable to the client.
    fn missing_capability(&self, _caps: &Capabilities) -> Option<&'static str> {
        None
    }

    /// It acts on servers only, so it may play before the client starts:
    /// a client that connects as soon as it starts (Envoy) is started
    /// after the scenario's leading server steps, as a client that
    /// connects at its first watch or dial meets them before it does.
    fn server_only(&self) -> bool {
        false
    }

    /// The scenario time it may take (see [`ScriptClock`]).
    fn advance(&self, _clock: &mut ScriptClock) -> Result<(), String> {
        Ok(())
    }

    /// What it makes reachable, or why what it expects is not.
    fn reach(&self, _reach: &mut Reachable) -> Result<(), String> {
        Ok(())
    }
}

/// Playing a step kind.
pub(crate) trait Play: Kind {
    async fn play(&self, stage: &mut dyn Stage, at: &Location) -> Result<(), StepError>;
}

/// A step kind's file form, generated (for chaos runs): a strategy over
/// what the scenario has, or `None` for a kind that is never generated
/// (expectations: a generated schedule is checked by invariants over its
/// timeline, not by expectations of its own).
pub(crate) trait Generate: Sized {
    fn generate(palette: &Palette) -> Option<proptest::strategy::BoxedStrategy<Self>>;
}

/// What compiling a step sees: the scenario's servers and backends, where
/// the step is written, and what the steps before it left active.
pub(crate) struct Script<'a> {
    checker: &'a Checker,
    line: u64,
    column: u64,
    /// Watches active here, with how many times each was started.
    watches: &'a mut HashMap<(ResourceType, String), usize>,
}

/// What a script leaves active from one step to the next.
#[derive(Default)]
pub(crate) struct ScriptState {
    watches: HashMap<(ResourceType, String), usize>,
}

impl ScriptState {
    /// The compiling context of the step written at `step`.
    pub(crate) fn at<'a, T>(&'a mut self, checker: &'a Checker, step: &Spanned<T>) -> Script<'a> {
        Script {
            checker,
            line: step.line,
            column: step.column,
            watches: &mut self.watches,
        }
    }
}

impl Script<'_> {
    pub(crate) fn checker(&self) -> &Checker {
        self.checker
    }

    /// An error about the step as a whole, at the step.
    pub(crate) fn problem(&self, message: impl Into<String>) -> Problem {
        Problem::at_position(self.line, self.column, message)
    }

    /// The server a step acts on: given, or the only one.
    pub(crate) fn server(&self, given: Option<&Spanned<String>>) -> Result<String, Problem> {
        match (given, self.checker.servers()) {
            (Some(name), _) => self.checker.known_server(name),
            (None, [only]) => Ok(only.clone()),
            (None, _) => Err(self.problem(format!(
                "server: required, scenario has servers {}",
                self.checker.server_list()
            ))),
        }
    }

    /// A KDS step (`what`) in a scenario without a `zone`: an error at the
    /// step.
    pub(crate) fn needs_zone(&self, what: &str) -> Result<(), Problem> {
        if self.checker.has_zone() {
            return Ok(());
        }
        Err(self.problem(format!(
            "{what} is KDS's: it needs a scenario with a `zone` (the Kuma zone the client plays)"
        )))
    }

    /// A watch starts (a resource may be watched more than once).
    pub(crate) fn start_watch(&mut self, resource_type: ResourceType, name: &str) {
        *self
            .watches
            .entry((resource_type, name.to_string()))
            .or_default() += 1;
    }

    /// A watch ends; false if none was active.
    pub(crate) fn end_watch(&mut self, resource_type: ResourceType, name: &str) -> bool {
        match self.watches.get_mut(&(resource_type, name.to_string())) {
            Some(count) if *count > 0 => {
                *count -= 1;
                true
            }
            _ => false,
        }
    }

    /// A step that needs an active watch of the resource: an error naming
    /// `verb` if there is none.
    pub(crate) fn need_watch(
        &self,
        verb: &str,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), Problem> {
        if self
            .watches
            .get(&(resource_type, name.to_string()))
            .is_some_and(|count| *count > 0)
        {
            return Ok(());
        }
        Err(self.problem(format!(
            "{verb}: no watch on {resource_type} `{name}` is active here \
             (start one with a watch step first)"
        )))
    }
}

/// The scenario time a script may take, step by step: at least `least`
/// (waits it surely takes), at most `most` (every window to its end,
/// every RPC to its deadline).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ScriptClock {
    pub least: Duration,
    pub most: Duration,
}

/// Why a step failed.
pub(crate) struct Failure {
    pub(crate) message: String,
    /// What it points at on the timeline, if anything.
    pub(crate) mark: Option<Mark>,
}

impl Failure {
    pub(crate) fn new(message: String) -> Self {
        Failure {
            message,
            mark: None,
        }
    }
}

/// How a step did not play through.
pub(crate) enum StepError {
    /// The scenario failed here.
    Failed(Failure),
    /// The client failed a command.
    Client(ClientError),
    /// The run met what this client cannot show (a projection that is not
    /// exact here): not applicable, for this reason.
    NotApplicable(String),
}

impl StepError {
    pub(crate) fn failed(message: String) -> Self {
        StepError::Failed(Failure::new(message))
    }
}

impl From<ClientError> for StepError {
    fn from(e: ClientError) -> Self {
        StepError::Client(e)
    }
}

/// What the runner lets a step do while it plays.
#[async_trait::async_trait]
pub(crate) trait Stage: Send {
    /// Records an action of the script: expectations after it look at
    /// what happens from here on.
    fn act(&mut self, text: String);

    /// Records a line of the script that is not an action: expectations
    /// after it still look back to the last action.
    fn note(&mut self, text: String);

    /// Records an event.
    fn record(&self, source: Source, kind: EventKind);

    /// The timeline, for what finishes later (background RPCs).
    fn timeline(&self) -> Timeline;

    /// The client under test.
    fn client(&mut self) -> &mut dyn ClientUnderTest;

    /// A fake server, by name.
    fn server(&self, name: &str) -> Result<&FakeAdsServer, StepError>;

    /// Resources as served: endpoint addresses where the backends really
    /// are (runs over TCP rewrite them), shaped for a proxy client.
    fn served(&mut self, resources: &[ServedResource]) -> Result<Vec<ServedResource>, StepError>;

    /// A resource name as the servers know it (over TCP a server
    /// Listener's name embeds its real listening address).
    fn resource_name(&self, name: &str) -> String;

    /// The address an xDS-enabled server really listens on.
    fn listening_address(&self, address: &str) -> String;

    /// Whether the client is a proxy (it subscribes from its start, and is
    /// reached at the listener serving a target).
    fn is_proxy(&self) -> bool;

    /// For a proxy client, the address and authority of the listener
    /// serving `target`; `None` for other clients.
    fn proxy_listener(&mut self, target: &str) -> Result<Option<(String, String)>, StepError>;

    /// Keeps a task (a background RPC) until the run ends.
    fn keep(&mut self, task: JoinHandle<()>);

    /// Lets time pass until `deadline`, polling CSDS wherever something
    /// happens.
    async fn run_until(&mut self, deadline: Instant);

    /// Checks an expectation written at `at`.
    async fn expect(
        &mut self,
        at: &Location,
        matcher: &Matcher,
        window: Window,
    ) -> Result<(), StepError>;

    /// Checks that the run so far keeps the invariant `name` (one of
    /// [`expect_invariant::NAMES`]): a failure explaining the first event
    /// that breaks it, or not applicable where it does not hold the client.
    fn keeps_invariant(&mut self, at: &Location, name: &str) -> Result<(), StepError>;

    /// Checks that nothing `matcher` describes happens for `duration`.
    async fn expect_none(
        &mut self,
        at: &Location,
        matcher: &Matcher,
        duration: Duration,
    ) -> Result<(), StepError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list's keys are the file form's: serde names each variant
    /// after its key.
    #[test]
    fn every_key_names_its_variant() {
        let schema = crate::scenario::scenario_schema();
        let value: serde_json::Value = serde_json::from_str(&schema).expect("JSON");
        let branches = value["$defs"]["StepSpec"]["oneOf"]
            .as_array()
            .expect("StepSpec is a oneOf");
        let keys: Vec<&str> = branches
            .iter()
            .filter_map(|b| b["properties"].as_object())
            .filter_map(|p| p.keys().next().map(String::as_str))
            .collect();
        assert_eq!(keys, STEP_KEYS);
        assert_eq!(STEP_KEYS.len(), 36);
    }
}
