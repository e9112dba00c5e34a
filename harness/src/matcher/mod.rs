//! Matchers: what an `expect`, an `any_of` alternative or an `expect_none`
//! looks for on the timeline.
//!
//! Each kind of matcher (`request`, `watcher`, `csds`, ...) is one module
//! holding everything about it: its file form (serde and JSON Schema), its
//! checked form, compiling the one into the other with located errors, the
//! check against a timeline event, and its description in failure
//! messages. `matcher_kinds!` lists the kinds once; from that list come
//! the matcher keys of the three file forms that take one, the [`Matcher`]
//! enum, and the dispatch to each kind. A new kind is a module and a line
//! in that list.

pub mod admin;
pub mod admin_stat;
pub mod channel;
pub mod client;
pub mod csds;
pub mod csds_reply;
pub mod delta_request;
pub mod delta_response;
pub mod dial;
pub mod kds_request;
pub mod kds_response;
pub mod kds_stream;
pub mod node;
pub mod request;
pub mod response;
pub mod retry_delay;
pub mod rpc;
pub mod server_event;
pub mod serving;
pub mod watcher;
pub mod zone;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt::{Debug, Display, Write as _};

use xds_client_under_test::Capabilities;

use crate::check::{Checker, Problem, Reachable};
use crate::clock::RunMode;
use crate::timeline::TimelineEvent;

/// Every matcher kind, in the order error messages list them: the key
/// `expect`, `any_of` and `expect_none` take it under (with that key's
/// description in the schema), its [`Matcher`] variant, and its module's
/// file form and checked form. Hands the list, and whatever follows it, to
/// `$callback` (a macro in this module).
macro_rules! matcher_kinds {
    ($callback:ident! { $($input:tt)* }) => { $crate::matcher::$callback! { [
        /// A DiscoveryRequest a server received (a DeltaDiscoveryRequest
        /// too: its `names` are then the stream's subscription after it).
        request: Request(request::RequestMatcherSpec => RequestMatcher),
        /// A DiscoveryResponse a server sent (a DeltaDiscoveryResponse too:
        /// its `names` are then the resources', its `version` the system
        /// version).
        response: Response(response::ResponseMatcherSpec => ResponseMatcher),
        /// A DeltaDiscoveryRequest a server received, by what only delta
        /// requests say.
        delta_request: DeltaRequest(delta_request::DeltaRequestMatcherSpec => DeltaRequestMatcher),
        /// A DeltaDiscoveryResponse a server sent, by what only delta
        /// responses say.
        delta_response: DeltaResponse(delta_response::DeltaResponseMatcherSpec => DeltaResponseMatcher),
        /// A notification to one of the client's watchers.
        watcher: Watcher(watcher::WatcherMatcherSpec => WatcherMatcher),
        /// An update of a dial.
        dial: Dial(dial::DialMatcherSpec => DialMatcher),
        /// The client's CSDS view shows this (a state, checked whenever
        /// anything happens in the window).
        csds: Csds(csds::CsdsMatcherSpec => CsdsMatcher),
        /// A connection or stream event on a server.
        server_event: ServerEvent(server_event::ServerEventMatcherSpec => ServerEventMatcher),
        /// A new ADS stream on a server, by how long after the server's
        /// last stream ended it opened (a client's delay between two
        /// stream attempts), in a range.
        retry_delay: RetryDelay(retry_delay::RetryDelayMatcherSpec => RetryDelayMatcher),
        /// An event the reference client reports about itself, or a line
        /// of a client's own log (`event: log`: every client that forwards
        /// its log, the `logs` capability).
        client: Client(client::ClientMatcherSpec => ClientEventMatcher),
        /// The result of an `rpc` step.
        rpc: Rpc(rpc::RpcMatcherSpec => RpcMatcher),
        /// The client's CSDS service's answer to a `csds_request` step.
        csds_reply: CsdsReply(csds_reply::CsdsReplyMatcherSpec => CsdsReplyMatcher),
        /// A dialled channel's connectivity state change.
        channel: Channel(channel::ChannelMatcherSpec => ChannelMatcher),
        /// An xDS-enabled server's serving status change.
        serving: Serving(serving::ServingMatcherSpec => ServingMatcher),
        /// A resource as a proxy's admin API showed it (Envoy's config
        /// dump): its state, version, details.
        admin: Admin(admin::AdminMatcherSpec => AdminMatcher),
        /// A proxy's counter or gauge (Envoy's `/stats`) reaching a value.
        admin_stat: AdminStat(admin_stat::AdminStatMatcherSpec => AdminStatMatcher),
        /// KDS: a stream a global saw opened (its RPC, the zone's headers).
        kds_stream: KdsStream(kds_stream::KdsStreamMatcherSpec => KdsStreamMatcher),
        /// KDS: a DeltaDiscoveryRequest, the zone's (`global_to_zone`) or
        /// the global's (`zone_to_global`).
        kds_request: KdsRequest(kds_request::KdsRequestMatcherSpec => KdsRequestMatcher),
        /// KDS: a DeltaDiscoveryResponse, the global's (`global_to_zone`)
        /// or the zone's (`zone_to_global`).
        kds_response: KdsResponse(kds_response::KdsResponseMatcherSpec => KdsResponseMatcher),
        /// KDS: a change in what the zone stores from its global.
        zone: Zone(zone::ZoneMatcherSpec => ZoneMatcher),
    ] $($input)* } };
}
pub(crate) use matcher_kinds;

/// A file-form struct that takes one matcher, written without its matcher
/// keys: they are added first, one optional field per kind, each with its
/// description, and `matchers()` returns the ones set.
///
/// The keys cannot come from one shared struct: serde's `flatten` does not
/// work with `deny_unknown_fields`, which every file form uses.
macro_rules! with_matcher_keys {
    ($($item:tt)*) => {
        $crate::matcher::matcher_kinds!(struct_with_matcher_keys! { $($item)* });
    };
}
pub(crate) use with_matcher_keys;

/// [`with_matcher_keys!`], given the list of kinds.
macro_rules! struct_with_matcher_keys {
    (
        [$(
            $(#[$doc:meta])*
            $key:ident : $Variant:ident ( $module:ident :: $Spec:ident => $Checked:ident )
        ),* $(,)?]
        $(#[$meta:meta])*
        pub struct $Name:ident {
            $( $(#[$field_meta:meta])* pub $field:ident : $Type:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $Name {
            $( $(#[$doc])* pub $key: Option<$crate::matcher::$module::$Spec>, )*
            $( $(#[$field_meta])* pub $field: $Type, )*
        }

        impl $Name {
            /// The matcher keys set here, in the order of the list of kinds.
            pub(crate) fn matchers(&self) -> Vec<$crate::matcher::MatcherSpec<'_>> {
                let mut set = Vec::new();
                $(
                    if let Some(spec) = &self.$key {
                        set.push($crate::matcher::MatcherSpec::$Variant(spec));
                    }
                )*
                set
            }
        }
    };
}
pub(crate) use struct_with_matcher_keys;

/// The kinds' keys, the [`Matcher`] enum, the file form of one matcher
/// before it is compiled, and the dispatch to each kind.
macro_rules! define_matchers {
    ([$(
        $(#[$doc:meta])*
        $key:ident : $Variant:ident ( $module:ident :: $Spec:ident => $Checked:ident )
    ),* $(,)?]) => {
        /// Every matcher key, in the order error messages list them.
        pub const MATCHER_KEYS: &[&str] = &[$(stringify!($key)),*];

        /// A checked matcher: a predicate over timeline events (or, for
        /// `csds`, over the client's CSDS view). Every field given must match.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Matcher {
            $( $(#[$doc])* $Variant($module::$Checked), )*
            /// Any alternative will do; some mark a divergence.
            AnyOf(Vec<Alternative>),
            /// One event for each, each after the one before (an `expect`
            /// only: the runner matches them as a sequence).
            InOrder(Vec<Matcher>),
            /// No event at all: an `any_of` alternative meaning "nothing
            /// happened by the end of the window" (never matches an event).
            Nothing,
        }

        /// One matcher key of a file form, as written.
        pub(crate) enum MatcherSpec<'a> {
            $( $Variant(&'a $module::$Spec), )*
        }

        impl MatcherSpec<'_> {
            /// The key it was written under.
            pub(crate) fn key(&self) -> &'static str {
                match self {
                    $( MatcherSpec::$Variant(_) => stringify!($key), )*
                }
            }

            /// The checked matcher, or what is wrong with it and where.
            pub(crate) fn compile(&self, scenario: &Checker) -> Result<Matcher, Problem> {
                match self {
                    $(
                        MatcherSpec::$Variant(spec) => {
                            spec.compile(scenario).map(Matcher::$Variant)
                        }
                    )*
                }
            }
        }

        impl Matcher {
            /// The kind's own check (`any_of` checks its alternatives).
            fn check(&self) -> &dyn Check {
                match self {
                    $( Matcher::$Variant(m) => m, )*
                    Matcher::AnyOf(alternatives) => alternatives,
                    Matcher::InOrder(sequence) => sequence,
                    Matcher::Nothing => &NothingHappened,
                }
            }
        }
    };
}

// Named by path, as `matcher_kinds!` calls its callback.
use define_matchers;

matcher_kinds!(define_matchers! {});

/// A matcher kind's file form: compiled when the scenario loads, against
/// the servers and backends it declares.
pub(crate) trait Compile {
    /// The checked form.
    type Matcher: Check;

    /// The checked form, or a [`Problem`] located at the offending value.
    fn compile(&self, scenario: &Checker) -> Result<Self::Matcher, Problem>;
}

/// A matcher kind's checked form.
pub(crate) trait Check {
    /// Checks `event` field by field into `fields` (see [`Compare`]);
    /// `None` if it is no event of the kind this matcher looks for. `text`
    /// reads what the client reported in the scenario's terms; a kind
    /// translates only when a field asks for it (translating costs).
    ///
    /// One function serves both finding events (fast: it stops at the
    /// first mismatch and renders nothing) and explaining the nearest one
    /// (every field, rendered), so the two cannot disagree.
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()>;

    /// Whether `event` is what it looks for.
    fn matches(&self, event: &TimelineEvent, text: Translate<'_>) -> bool {
        let mut fields = Compare::fast();
        self.compare(event, text, &mut fields).is_some() && fields.ok
    }

    /// Every field it checks against `event`, rendered; `None` if it is
    /// no event of its kind.
    fn explain_fields(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
    ) -> Option<Vec<FieldCheck>> {
        let mut fields = Compare::explaining();
        self.compare(event, text, &mut fields)?;
        Some(fields.fields)
    }

    /// What it looks for, for failure messages: see [`Description`].
    fn describe(&self) -> String;

    /// What a client lacks to report what this kind looks for, if it
    /// lacks it: the scenario is then not applicable to the client.
    fn missing_capability(&self, _caps: &Capabilities) -> Option<&'static str> {
        None
    }

    /// Why nothing the script did before it could cause what it looks
    /// for (a watcher event of a resource never watched, ...), if so.
    fn never_met(&self, _reach: &Reachable) -> Option<String> {
        None
    }
}

/// For the forms of several matchers: `Some` if one of `matchers` meets
/// `event`; else one failed field named `form` if the event is of a kind
/// one of them looks for, `None` if it is of none.
fn any_meets<'m>(
    matchers: impl Iterator<Item = &'m Matcher>,
    event: &TimelineEvent,
    text: Translate<'_>,
    fields: &mut Compare,
    form: &'static str,
) -> Option<()> {
    let mut of_kind = false;
    for matcher in matchers {
        let mut own = Compare::fast();
        if matcher.check().compare(event, text, &mut own).is_some() {
            of_kind = true;
            if own.ok {
                return Some(());
            }
        }
    }
    of_kind.then(|| {
        fields.check(form, true, || false, String::new, String::new);
    })
}

/// `in_order`, seen one event at a time: an event is of interest if one of
/// the sequence's matchers meets it (the runner does the ordering).
impl Check for Vec<Matcher> {
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        any_meets(self.iter(), event, text, fields, "in_order")
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self.iter().map(Matcher::describe).collect();
        format!("in order [{}]", list.join(", then "))
    }

    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        self.iter().find_map(|m| m.missing_capability(caps))
    }

    /// Every event of a sequence must happen.
    fn never_met(&self, reach: &Reachable) -> Option<String> {
        self.iter().find_map(|m| m.never_met(reach))
    }
}

/// [`Matcher::Nothing`]: no event is one.
struct NothingHappened;

impl Check for NothingHappened {
    fn compare(&self, _: &TimelineEvent, _: Translate<'_>, _: &mut Compare) -> Option<()> {
        None
    }

    fn describe(&self) -> String {
        "nothing".to_string()
    }
}

/// One field a matcher checked against an event: what it wanted, what the
/// event had, both spelt as a scenario file spells them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldCheck {
    pub name: &'static str,
    pub want: String,
    pub got: String,
    pub ok: bool,
}

/// A matcher's field-by-field check of one event, in one of two modes:
/// fast, to find events (it stops at the first mismatch and never renders
/// a value), or explaining, to say how an event differs (every field given
/// is checked and rendered). Fields the matcher leaves open are not
/// checked at all.
pub struct Compare {
    explaining: bool,
    ok: bool,
    fields: Vec<FieldCheck>,
}

impl Compare {
    fn fast() -> Self {
        Compare {
            explaining: false,
            ok: true,
            fields: Vec::new(),
        }
    }

    fn explaining() -> Self {
        Compare {
            explaining: true,
            ..Compare::fast()
        }
    }

    /// One field, checked if `given`: `ok` decides, `want` and `got`
    /// render it (called only when explaining).
    pub(crate) fn check(
        &mut self,
        name: &'static str,
        given: bool,
        ok: impl FnOnce() -> bool,
        want: impl FnOnce() -> String,
        got: impl FnOnce() -> String,
    ) -> &mut Self {
        if !given || !(self.ok || self.explaining) {
            return self;
        }
        let ok = ok();
        self.ok &= ok;
        if self.explaining {
            self.fields.push(FieldCheck {
                name,
                want: want(),
                got: got(),
                ok,
            });
        }
        self
    }

    /// A field compared for equality when the matcher gives it, both
    /// sides shown by `show`.
    pub(crate) fn eq<T: PartialEq + ?Sized>(
        &mut self,
        name: &'static str,
        want: Option<&T>,
        got: &T,
        show: impl Fn(&T) -> String,
    ) -> &mut Self {
        self.check(
            name,
            want.is_some(),
            || want == Some(got),
            || want.map(&show).unwrap_or_default(),
            || show(got),
        )
    }

    /// A set of names (order ignored) when the matcher gives it, with
    /// what the client reported read as the scenario wrote it.
    pub(crate) fn set<'g>(
        &mut self,
        name: &'static str,
        want: &Option<Vec<String>>,
        got: impl ExactSizeIterator<Item = &'g str> + Clone,
        text: Translate<'_>,
    ) -> &mut Self {
        self.check(
            name,
            want.is_some(),
            || same_set(want, got.clone(), text),
            || list(want.iter().flatten().map(String::as_str)),
            || list(got.clone().map(text)),
        )
    }

    /// A substring of text the client reported, when the matcher gives it.
    pub(crate) fn contains(
        &mut self,
        name: &'static str,
        want: &Option<String>,
        got: &str,
        text: Translate<'_>,
    ) -> &mut Self {
        self.check(
            name,
            want.is_some(),
            || contains_in(want, got, text),
            || format!("{:?}", want.as_deref().unwrap_or_default()),
            || format!("{:?}", text(got)),
        )
    }
}

impl Compare {
    /// The server an event happened on and the resource type its message
    /// carries, as every wire matcher checks them.
    pub(crate) fn server_and_type(
        &mut self,
        server: Option<&str>,
        source: &str,
        resource_type: Option<xds_vocabulary::ResourceType>,
        type_url: &str,
    ) -> &mut Self {
        self.eq("server", server, source, str::to_string).eq(
            "type",
            resource_type.map(|t| t.type_url()),
            type_url,
            crate::timeline::type_name,
        )
    }
}

/// Names as a scenario file lists them: `[a,b]`; long lists cut.
pub(crate) fn list<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    const SHOWN: usize = 20;
    let mut shown = Vec::new();
    let mut more = 0usize;
    for name in names {
        if shown.len() < SHOWN {
            shown.push(name.as_ref().to_string());
        } else {
            more += 1;
        }
    }
    if more > 0 {
        shown.push(format!("... {more} more"));
    }
    format!("[{}]", shown.join(","))
}

/// A string as a scenario file quotes it.
pub(crate) fn quoted(s: &str) -> String {
    format!("{s:?}")
}

/// How one event compares with a matcher: every field it checks, and for
/// an `any_of`, which alternative came closest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explained {
    /// The `any_of` alternative (0-based) these fields are from.
    pub alternative: Option<usize>,
    pub fields: Vec<FieldCheck>,
}

impl Explained {
    /// How many checked fields differ: 0 means the event matches.
    pub fn mismatches(&self) -> usize {
        self.fields.iter().filter(|f| !f.ok).count()
    }
}

/// A value's name as scenario files write it (the loader's keyword
/// tables), for messages: `changed`, not `Changed`.
pub(crate) fn keyword_name<T: PartialEq>(table: &[(&'static str, T)], value: &T) -> String {
    table
        .iter()
        .find(|(_, v)| v == value)
        .map(|(name, _)| name.to_string())
        .unwrap_or_else(|| "?".into())
}

/// One alternative of an `any_of`.
#[derive(Clone, Debug, PartialEq)]
pub struct Alternative {
    pub matcher: Matcher,
    /// Set for an alternative that is a recorded divergence.
    pub divergence: Option<String>,
}

impl Check for Vec<Alternative> {
    /// Met if any alternative is; explaining goes through
    /// [`Matcher::explain`], which picks the closest alternative.
    fn compare(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
        fields: &mut Compare,
    ) -> Option<()> {
        any_meets(
            self.iter().map(|a| &a.matcher),
            event,
            text,
            fields,
            "any_of",
        )
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self.iter().map(|a| a.matcher.describe()).collect();
        format!("any of [{}]", list.join(" | "))
    }

    /// Only if every alternative needs something the client lacks (two
    /// forms of a CSDS entry on a client without CSDS); a client that can
    /// meet one of them runs the scenario.
    fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        let missing: Vec<&'static str> = self
            .iter()
            .map(|a| a.matcher.missing_capability(caps))
            .collect::<Option<_>>()?;
        missing.first().copied()
    }

    /// Only if no alternative can be met ("nothing happened" always can).
    fn never_met(&self, reach: &Reachable) -> Option<String> {
        let reasons: Vec<String> = self
            .iter()
            .map(|a| a.matcher.never_met(reach))
            .collect::<Option<_>>()?;
        Some(reasons.join("; "))
    }
}

impl Matcher {
    /// Whether `event` is what this matcher looks for, with what the client
    /// reported (watcher summaries and errors, NACK messages, dial
    /// configs, RPC status messages) read through `text` first.
    pub fn matches(&self, event: &TimelineEvent, text: Translate<'_>) -> bool {
        self.check().matches(event, text)
    }

    /// How `event` compares with this matcher, field by field; `None` if
    /// it is no event of the kind it looks for. For an `any_of`, the
    /// alternative with the fewest mismatches (the first of equals).
    pub fn explain(&self, event: &TimelineEvent, text: Translate<'_>) -> Option<Explained> {
        match self {
            Matcher::AnyOf(alternatives) => alternatives
                .iter()
                .enumerate()
                .filter_map(|(i, a)| {
                    let explained = a.matcher.explain(event, text)?;
                    Some(Explained {
                        alternative: Some(i),
                        ..explained
                    })
                })
                .min_by_key(Explained::mismatches),
            _ => Some(Explained {
                alternative: None,
                fields: self.check().explain_fields(event, text)?,
            }),
        }
    }

    /// The alternative of an `any_of` that `event` meets first, in order.
    pub fn matching_alternative(
        &self,
        event: &TimelineEvent,
        text: Translate<'_>,
    ) -> Option<&Alternative> {
        match self {
            Matcher::AnyOf(alternatives) => {
                alternatives.iter().find(|a| a.matcher.matches(event, text))
            }
            _ => None,
        }
    }

    /// A readable description, for failure messages.
    pub fn describe(&self) -> String {
        self.check().describe()
    }

    /// What a client lacks to be checked by this matcher, if anything.
    pub fn missing_capability(&self, caps: &Capabilities) -> Option<&'static str> {
        self.check().missing_capability(caps)
    }

    /// This matcher as a run in `mode` measures what it checks, `doubt`
    /// saying which way a measurement's slack goes. Only `retry_delay`
    /// measures (a delay between two server events, which on real time
    /// holds the transport's latency too); every other kind, and every
    /// kind in process, is as written.
    pub fn measured_on(&self, mode: RunMode, doubt: Doubt) -> Cow<'_, Matcher> {
        if mode.lateness().is_zero() || !self.measures() {
            return Cow::Borrowed(self);
        }
        Cow::Owned(match self {
            Matcher::RetryDelay(m) => Matcher::RetryDelay(m.measured_on(mode, doubt)),
            Matcher::AnyOf(alternatives) => Matcher::AnyOf(
                alternatives
                    .iter()
                    .map(|a| Alternative {
                        matcher: a.matcher.measured_on(mode, doubt).into_owned(),
                        divergence: a.divergence.clone(),
                    })
                    .collect(),
            ),
            Matcher::InOrder(sequence) => Matcher::InOrder(
                sequence
                    .iter()
                    .map(|m| m.measured_on(mode, doubt).into_owned())
                    .collect(),
            ),
            other => other.clone(),
        })
    }

    /// Whether it, or one of its parts, measures (see [`Self::measured_on`]).
    fn measures(&self) -> bool {
        match self {
            Matcher::RetryDelay(_) => true,
            Matcher::AnyOf(alternatives) => alternatives.iter().any(|a| a.matcher.measures()),
            Matcher::InOrder(sequence) => sequence.iter().any(Matcher::measures),
            _ => false,
        }
    }

    /// Why the steps before it cannot cause what it looks for, if so.
    pub fn never_met(&self, reach: &Reachable) -> Option<String> {
        self.check().never_met(reach)
    }
}

/// Which way a real-time measurement's slack gives a client the benefit of
/// the doubt (see [`Matcher::measured_on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doubt {
    /// An `expect`: what may be in the range matches.
    Match,
    /// An `expect_none`: only what surely is matches.
    Miss,
}

/// How a client's text reads in the scenario's terms (over real TCP,
/// endpoint addresses were rewritten before the client saw them).
pub type Translate<'a> = &'a dyn Fn(&str) -> Cow<'_, str>;

/// Text read as the client reported it (in-process runs, and text that
/// the harness wrote itself).
pub fn as_written(text: &str) -> Cow<'_, str> {
    Cow::Borrowed(text)
}

/// The same set, with what the client reported read as the scenario wrote
/// it (see [`Translate`]).
pub(crate) fn same_set<'g>(
    want: &Option<Vec<String>>,
    got: impl ExactSizeIterator<Item = &'g str>,
    text: Translate<'_>,
) -> bool {
    // Lengths first: requests can name thousands of resources.
    want.as_ref().is_none_or(|w| {
        w.len() == got.len()
            && w.iter()
                .map(|n| Cow::Borrowed(n.as_str()))
                .collect::<BTreeSet<_>>()
                == got.map(text).collect::<BTreeSet<_>>()
    })
}

/// `got`, translated only if there is something to look for in it.
pub(crate) fn contains_in(want: &Option<String>, got: &str, text: Translate<'_>) -> bool {
    want.as_ref().is_none_or(|w| text(got).contains(w.as_str()))
}

/// A matcher as failure messages show it: what it looks for, then
/// ` name=value` for each field it checks; the fields it leaves open are
/// left out.
pub(crate) struct Description(String);

impl Description {
    pub(crate) fn new(head: &str) -> Self {
        Description(head.to_string())
    }

    /// A field that is always checked.
    pub(crate) fn field(mut self, name: &str, value: impl Display) -> Self {
        let _ = write!(self.0, " {name}={value}");
        self
    }

    /// A field that is checked when given.
    pub(crate) fn given(self, name: &str, value: Option<impl Display>) -> Self {
        match value {
            Some(value) => self.field(name, value),
            None => self,
        }
    }

    /// [`Description::given`], shown in Rust's debug form (strings quoted).
    pub(crate) fn given_debug(self, name: &str, value: Option<impl Debug>) -> Self {
        self.given(name, value.map(|v| format!("{v:?}")))
    }
}

impl From<Description> for String {
    fn from(description: Description) -> String {
        description.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Source;
    use std::time::Duration;
    use xds_client_under_test::ObservedEvent;
    use xds_vocabulary::ResourceType;

    use crate::scenario::StepDef;
    use crate::scenario::load_str;
    use crate::timeline::EventKind;

    fn step_matcher(step: &StepDef) -> &Matcher {
        step.step
            .matcher()
            .unwrap_or_else(|| panic!("not an expectation: {:?}", step.step))
    }

    #[test]
    fn every_kind_loads_under_its_key_in_expect_any_of_and_expect_none() {
        let scenario = load_str(
            "t.yaml",
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - expect: {channel: {state: READY}}\n  \
             - expect: {any_of: [{channel: {state: READY}}, {rpc: {code: OK}, divergence: d}]}\n  \
             - expect_none: {channel: {state: IDLE}, for: 1s}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            step_matcher(&scenario.steps[0]),
            Matcher::Channel(_)
        ));
        let Matcher::AnyOf(alternatives) = step_matcher(&scenario.steps[1]) else {
            panic!("{:?}", scenario.steps[1])
        };
        assert!(matches!(alternatives[0].matcher, Matcher::Channel(_)));
        assert!(matches!(alternatives[1].matcher, Matcher::Rpc(_)));
        assert_eq!(alternatives[1].divergence.as_deref(), Some("d"));
        assert!(matches!(
            step_matcher(&scenario.steps[2]),
            Matcher::Channel(_)
        ));
        assert_eq!(MATCHER_KEYS.len(), 20);
    }

    #[test]
    fn any_of_needs_a_capability_only_if_every_alternative_does() {
        let scenario = load_str(
            "t.yaml",
            "description: d\nservers: {main: {}}\nsteps:\n  \
             - watch: {type: CDS, name: c1}\n  \
             - expect: {any_of: [{csds: {type: CDS, name: c1, version: '1'}}, \
                                 {csds: {type: CDS, name: c1, version: '2'}, divergence: d}]}\n  \
             - expect: {any_of: [{csds: {type: CDS, name: c1, version: '1'}}, \
                                 {request: {type: CDS}, divergence: d}]}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let without_csds = Capabilities {
            watch: true,
            ..Capabilities::default()
        };
        assert!(
            step_matcher(&scenario.steps[1])
                .missing_capability(&without_csds)
                .is_some(),
            "two CSDS forms need CSDS"
        );
        assert_eq!(
            step_matcher(&scenario.steps[2]).missing_capability(&without_csds),
            None,
            "the wire alternative is playable without CSDS"
        );
        let with_csds = Capabilities {
            csds: true,
            ..without_csds
        };
        assert_eq!(
            step_matcher(&scenario.steps[1]).missing_capability(&with_csds),
            None
        );
    }

    #[test]
    fn any_of_matches_and_names_the_first_alternative_met() {
        let ready = |target: &str| {
            Matcher::Channel(channel::ChannelMatcher {
                target: Some(target.into()),
                state: xds_client_under_test::ConnectivityState::Ready,
            })
        };
        let any_of = Matcher::AnyOf(vec![
            Alternative {
                matcher: ready("xds:///a"),
                divergence: None,
            },
            Alternative {
                matcher: ready("xds:///b"),
                divergence: Some("b is fine too".into()),
            },
        ]);
        let event = TimelineEvent {
            at: Duration::ZERO,
            source: Source::Client,
            kind: EventKind::Client(ObservedEvent::ChannelState {
                target: "xds:///b".into(),
                state: xds_client_under_test::ConnectivityState::Ready,
            }),
        };
        assert!(any_of.matches(&event, &as_written));
        assert_eq!(
            any_of
                .matching_alternative(&event, &as_written)
                .and_then(|a| a.divergence.as_deref()),
            Some("b is fine too")
        );
        assert!(!ready("xds:///a").matches(&event, &as_written));
        assert_eq!(
            any_of.describe(),
            "any of [channel state target=xds:///a state=READY | \
             channel state target=xds:///b state=READY]"
        );
        // A watcher matcher is not looking for channel states.
        let watcher = Matcher::Watcher(watcher::WatcherMatcher {
            resource_type: Some(ResourceType::Cluster),
            name: None,
            event: None,
            code: None,
            contains: None,
        });
        assert!(!watcher.matches(&event, &as_written));
    }
}
