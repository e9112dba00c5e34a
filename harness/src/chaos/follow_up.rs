//! Follow-ups: what a schedule's drafted step may bring after it. Steps
//! drawn one by one among every kind and every resource seldom line up
//! into what the invariants read: a watcher joining a resource just after
//! an update or a NACK of it (what is a late watcher told?), an outage
//! that heals while the client needed something (does it fall back, and
//! come back?). A follow-up is drawn with each step (so that shrinking
//! drops the two together) and written out of the script so far: the
//! resources the step sent, the server it hit, what is watched. Each is
//! made of ordinary steps, so a schedule is still a file a person reads.

use proptest::strategy::{BoxedStrategy, Just, Strategy};
use xds_vocabulary::ResourceType;

use crate::check::Spanned;
use crate::resource::file::ResourceSpec;
use crate::step::ServerRef;
use crate::step::close_stream::CloseStreamSpec;
use crate::step::connections::{AcceptConnectionsSpec, RefuseConnectionsSpec};
use crate::step::hang::ResumeSpec;
use crate::step::hold_connections::ReleaseConnectionsSpec;
use crate::step::set_resources::SetResourcesSpec;
use crate::step::stream_limit::KeepStreamsSpec;
use crate::step::wait::WaitSpec;
use crate::step::watch::WatchSpec;
use crate::step::{Palette, StepSpec};

/// What follows a drafted step; what each means depends on the step (a
/// step that neither sends resources, nor starts a fault that heals, nor
/// starts a wildcard watch has none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FollowUp {
    #[default]
    Nothing,
    /// After resources are sent: a second watcher joins one of them the
    /// script watches. After a fault: it heals. After a wildcard watch: a
    /// resource of its type is watched by name too.
    Revisit,
    /// After resources are sent: that resource is sent again invalid (the
    /// client NACKs it, keeping what it held), then a second watcher
    /// joins. After a fault: the primary goes down (it refuses
    /// connections, its streams end), the client needs a resource it has
    /// not watched yet (A71: an uncached resource on a failing server is
    /// what makes it fall back), then the primary is back and the fault
    /// heals (and the client should fall forward). After a wildcard
    /// watch: a resource of its type is watched by name, then set on the
    /// first server.
    Provoke,
    /// As `Provoke`; after a fault, while the primary is down, a resource
    /// the client watches also changes on it (a variant of it: the
    /// configuration moved on while the client could not hear), so that
    /// the client, back on the primary, must take the new value from the
    /// first response of its new stream.
    Moved,
}

impl FollowUp {
    /// Whether it provokes (`Provoke`, or `Moved`, which is `Provoke`
    /// where nothing moves).
    fn provokes(self) -> bool {
        matches!(self, FollowUp::Provoke | FollowUp::Moved)
    }

    /// Nothing two times in five. Shrinks to nothing.
    pub fn strategy() -> BoxedStrategy<FollowUp> {
        proptest::prop_oneof![
            2 => Just(FollowUp::Nothing),
            1 => Just(FollowUp::Revisit),
            1 => Just(FollowUp::Provoke),
            1 => Just(FollowUp::Moved),
        ]
        .boxed()
    }

    /// The steps that follow `step`, taken, in the script `steps` (which
    /// ends with it); `real_time`: the client plays on real time, where
    /// waits are kept short.
    pub fn steps(
        self,
        step: &StepSpec,
        steps: &[Spanned<StepSpec>],
        palette: &Palette,
        real_time: bool,
    ) -> Vec<StepSpec> {
        if self == FollowUp::Nothing {
            return Vec::new();
        }
        if let Some((server, sent)) = sent(step) {
            return self.after_sending(server, sent, steps, palette);
        }
        if let Some((server, heal)) = healed_by(step) {
            return self.after_fault(server, heal, steps, palette, real_time);
        }
        if let StepSpec::Watch(watch) = step
            && watch.name == WILDCARD
        {
            return self.after_wildcard(watch, steps, palette);
        }
        Vec::new()
    }

    /// After a wildcard watch: a watch by name of a resource of its type
    /// (one the first server does not start with, if there is one); for
    /// `Provoke`, that resource then set on the first server. A resource
    /// first watched by name while a wildcard watch is on must reach both
    /// watchers.
    fn after_wildcard(
        self,
        wildcard: &WatchSpec,
        steps: &[Spanned<StepSpec>],
        palette: &Palette,
    ) -> Vec<StepSpec> {
        let Some(resource_type) = ResourceType::parse(&wildcard.resource_type.value) else {
            return Vec::new();
        };
        let names = palette
            .names
            .get(&resource_type)
            .cloned()
            .unwrap_or_default();
        let named: Vec<&str> = watches(steps)
            .filter(|w| w.resource_type.value == wildcard.resource_type.value)
            .map(|w| w.name.as_str())
            .collect();
        let Some(name) = names
            .iter()
            .find(|n| !named.contains(&n.as_str()))
            .or(names.first())
            .cloned()
        else {
            return Vec::new();
        };
        let mut follow = vec![
            wait(SETTLE),
            StepSpec::Watch(WatchSpec {
                resource_type: wildcard.resource_type.clone(),
                name: name.clone(),
            }),
        ];
        if self.provokes() {
            let resource = crate::resource::generate::valid_form(
                resource_type,
                name,
                &palette.names,
                &palette.backends,
            );
            follow.extend([
                wait(SETTLE),
                StepSpec::SetResources(SetResourcesSpec {
                    server: palette.servers.first().cloned().map(Spanned::new),
                    version: None,
                    resources: vec![Spanned::new(resource)],
                }),
                wait(SETTLE),
            ]);
        }
        follow
    }

    /// A watch of the last resource `sent` that the script watches, else
    /// of the resource it last started watching; for `Provoke`, that
    /// resource made invalid on `server` first.
    fn after_sending(
        self,
        server: &Server,
        sent: &[Spanned<ResourceSpec>],
        steps: &[Spanned<StepSpec>],
        palette: &Palette,
    ) -> Vec<StepSpec> {
        let watches: Vec<&WatchSpec> = watches(steps).rev().collect();
        let named = sent.iter().rev().find_map(|resource| {
            let (resource_type, name) = resource.value.identity();
            watches
                .iter()
                .find(|w| w.resource_type.value == resource_type && w.name == name)
        });
        let Some(watch) = named.or(watches.first()).map(|w| (*w).clone()) else {
            return Vec::new();
        };
        // Steps of one instant are played before the client reads what
        // they sent: each follow-up comes once the client has read the
        // step before it.
        let mut follow = vec![wait(SETTLE)];
        if self.provokes()
            && let Some(resource_type) = ResourceType::parse(&watch.resource_type.value)
        {
            let invalid = crate::resource::generate::invalid_form(
                resource_type,
                watch.name.clone(),
                &palette.names,
                &palette.backends,
            );
            follow.push(StepSpec::SetResources(SetResourcesSpec {
                server: server.clone(),
                version: None,
                resources: vec![Spanned::new(invalid)],
            }));
            follow.push(wait(SETTLE));
        }
        follow.push(StepSpec::Watch(watch));
        follow
    }

    /// The fault healing after a while; for `Provoke`, an outage of the
    /// primary first (the server the client uses first, whichever server
    /// the fault hit): it refuses connections and its streams end (what
    /// makes a client fail over: a hang or a hold it cannot tell from a
    /// quiet server), and the client needs a resource it does not watch
    /// yet (the first of the palette's), then the primary is back.
    fn after_fault(
        self,
        server: ServerRef,
        heal: Option<StepSpec>,
        steps: &[Spanned<StepSpec>],
        palette: &Palette,
        real_time: bool,
    ) -> Vec<StepSpec> {
        if heal.is_none() && !self.provokes() {
            return Vec::new();
        }
        let outage = if real_time { SETTLE } else { OUTAGE };
        let mut follow = Vec::new();
        let mut back = None;
        if self.provokes() {
            // The primary as the fault named its server: left out where
            // there is only one.
            let primary = ServerRef {
                server: server
                    .server
                    .as_ref()
                    .and(palette.servers.first().cloned().map(Spanned::new)),
            };
            let hit_primary = server.server.as_ref().map(|s| &s.value) == palette.servers.first()
                || server.server.is_none();
            if !(hit_primary && matches!(heal, Some(StepSpec::AcceptConnections(_)))) {
                follow.push(StepSpec::RefuseConnections(RefuseConnectionsSpec(
                    primary.clone(),
                )));
                back = Some(StepSpec::AcceptConnections(AcceptConnectionsSpec(
                    primary.clone(),
                )));
            }
            follow.push(StepSpec::CloseStream(CloseStreamSpec {
                server: primary.server.clone(),
                code: None,
                message: None,
            }));
            follow.push(wait(SETTLE));
            if self == FollowUp::Moved
                && let Some(watch) = watches(steps).last()
                && let Some(t) = ResourceType::parse(&watch.resource_type.value)
            {
                let generate = crate::resource::generate::valid_form;
                let now = generate(t, watch.name.clone(), &palette.names, &palette.backends);
                let moved = crate::resource::generate::variant(&now, &palette.backends);
                follow.push(StepSpec::SetResources(SetResourcesSpec {
                    server: primary.server.clone(),
                    version: None,
                    resources: vec![Spanned::new(moved)],
                }));
            }
            let watched: Vec<(String, String)> = watches(steps)
                .map(|w| (w.resource_type.value.clone(), w.name.clone()))
                .collect();
            let unwatched = palette.names.iter().find_map(|(t, names)| {
                let t = t.short_name().to_string();
                names
                    .iter()
                    .find(|n| !watched.contains(&(t.clone(), (*n).clone())))
                    .map(|n| (t.clone(), n.clone()))
            });
            if let Some((resource_type, name)) = unwatched {
                follow.push(StepSpec::Watch(WatchSpec {
                    resource_type: Spanned::new(resource_type),
                    name,
                }));
            }
        }
        follow.push(wait(outage));
        follow.extend(back);
        follow.extend(heal);
        follow.push(wait(SETTLE));
        follow
    }
}

/// The wildcard watch's name.
const WILDCARD: &str = "*";

/// The script's watch steps by name, in order.
fn watches(steps: &[Spanned<StepSpec>]) -> impl DoubleEndedIterator<Item = &WatchSpec> {
    steps.iter().filter_map(|s| match &s.value {
        StepSpec::Watch(w) if w.name != WILDCARD => Some(w),
        _ => None,
    })
}

/// The server a step names (`None`: the only one).
type Server = Option<Spanned<String>>;

/// The server a step sends resources from and the resources, if it is one
/// that sends resources.
fn sent(step: &StepSpec) -> Option<(&Server, &[Spanned<ResourceSpec>])> {
    match step {
        StepSpec::SetResources(set) => Some((&set.server, &set.resources)),
        StepSpec::SendResponse(send) => Some((&send.server, &send.resources)),
        StepSpec::SendDeltaResponse(send) => Some((&send.server, &send.resources)),
        _ => None,
    }
}

/// The server a fault step hits and the step that heals it, for a fault
/// that heals (`None`: one over at once, a stream closed or a restart,
/// which only a provoked outage follows).
fn healed_by(step: &StepSpec) -> Option<(ServerRef, Option<StepSpec>)> {
    let server = |server: &Server| ServerRef {
        server: server.clone(),
    };
    let heals = |(server, heal)| Some((server, Some(heal)));
    match step {
        StepSpec::CloseStream(s) => Some((server(&s.server), None)),
        StepSpec::Restart(s) => Some((server(&s.server), None)),
        _ => healed_by_step(step).and_then(heals),
    }
}

/// [`healed_by`] for the faults a step heals.
fn healed_by_step(step: &StepSpec) -> Option<(ServerRef, StepSpec)> {
    let server = |server: &Server| ServerRef {
        server: server.clone(),
    };
    match step {
        StepSpec::RefuseConnections(s) => Some((
            s.0.clone(),
            StepSpec::AcceptConnections(AcceptConnectionsSpec(s.0.clone())),
        )),
        StepSpec::HoldConnections(s) => Some((
            s.0.clone(),
            StepSpec::ReleaseConnections(ReleaseConnectionsSpec(s.0.clone())),
        )),
        StepSpec::Hang(s) => Some((
            server(&s.server),
            StepSpec::Resume(ResumeSpec(server(&s.server))),
        )),
        StepSpec::CloseStreamsAfter(s) => Some((
            server(&s.server),
            StepSpec::KeepStreams(KeepStreamsSpec(server(&s.server))),
        )),
        _ => None,
    }
}

fn wait(duration: &str) -> StepSpec {
    StepSpec::Wait(WaitSpec(Spanned::new(duration.to_string())))
}

/// How long a follow-up waits for the client to read the step before it.
const SETTLE: &str = "1s";

/// How long a fault a follow-up heals lasts, on virtual time: past a
/// backoff or two and a fallback server's answer, short of the 15 s
/// does-not-exist timer.
const OUTAGE: &str = "5s";
