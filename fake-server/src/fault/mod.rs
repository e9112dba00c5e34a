//! Faults a scenario can apply to a fake server, as verbs (turmoil's
//! `hold` / `release`): `hang` and `resume`, `refuse_connections` and
//! `accept_connections`, `drop_responses`, ...
//!
//! This module says what a fault is: each verb's data and how it reads on
//! a timeline (`Display`), one module per verb. It imports nothing else of
//! the server, so the recording (`event`, whose `FaultApplied` carries a
//! [`Fault`]) can name faults without standing on what they do. What
//! applying a verb does (to the server's state under its lock, and to
//! listeners and connections outside it) is a module of the same name in
//! `effect`, which stands on the server's state and listeners; the state a
//! verb leaves in force between applications (`hang` until `resume`) is
//! in `in_force`, part of the server's state.
//!
//! `fault_verbs!` lists the verbs once; the [`Fault`] enum, its `From`
//! conversions, its `Display` and the dispatch to each verb's effect come
//! from that list. A new verb is a module here, its effect, and a line in
//! that list.
//!
//! A fault is plain data: applying it is the server's business
//! (`FakeAdsServer::apply`), and every applied fault is itself recorded as
//! `ServerEvent::FaultApplied`, so a timeline shows what was done to the
//! server next to what the client did about it.
//!
//! GOAWAY is a server setting, not a fault (`MaxConnectionAge`).

mod close_streams;
mod connections;
mod delay;
mod drop;
mod hang;
mod hold;
mod hold_streams;
mod restart;
mod stream_limit;

use std::fmt;

pub use close_streams::CloseStreams;
pub use connections::{AcceptConnections, RefuseConnections};
pub use delay::DelayResponses;
pub use drop::DropResponses;
pub use hang::{Hang, Resume};
pub use hold::{HoldConnections, ReleaseConnections};
pub use hold_streams::{HoldStreams, ReleaseStreams};
pub use restart::Restart;
pub use stream_limit::{CloseStreamsAfter, KeepStreams};

/// Every verb, in the order the docs list them: its [`Fault`] variant and
/// its module's type (named like the variant). Hands the list to
/// `$callback` (here, `define_faults`; in the `effect` module, the dispatch to
/// each verb's effect).
macro_rules! fault_verbs {
    ($callback:ident) => {
        $callback! {
            /// Close every open ADS stream with a gRPC status.
            CloseStreams(close_streams),
            /// Stop accepting new connections.
            RefuseConnections(connections),
            /// Accept connections again.
            AcceptConnections(connections),
            /// Send nothing by itself for one type, or every type.
            Hang(hang),
            /// End every hang.
            Resume(hang),
            /// Close every stream once it has had N responses.
            CloseStreamsAfter(stream_limit),
            /// Stop closing streams (ends `CloseStreamsAfter`).
            KeepStreams(stream_limit),
            /// The server process restarts.
            Restart(restart),
            /// Move no bytes on any connection.
            HoldConnections(hold),
            /// Let held connections go on.
            ReleaseConnections(hold),
            /// Admit no new stream (connections stay up).
            HoldStreams(hold_streams),
            /// Admit streams again.
            ReleaseStreams(hold_streams),
            /// Hold every response back for a while.
            DelayResponses(delay),
            /// Lose the next responses on their way.
            DropResponses(drop),
        }
    };
}

macro_rules! define_faults {
    ($( $(#[$doc:meta])* $Variant:ident($module:ident) ),* $(,)?) => {
        /// A fault to apply to one fake server: one of the verbs.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Fault {
            $( $(#[$doc])* $Variant($module::$Variant), )*
        }

        $(
            impl From<$module::$Variant> for Fault {
                fn from(verb: $module::$Variant) -> Fault {
                    Fault::$Variant(verb)
                }
            }
        )*

        /// How the fault reads on a timeline: `hang CDS`, `drop the next
        /// 2 response(s)`.
        impl fmt::Display for Fault {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Fault::$Variant(verb) => verb.fmt(f), )*
                }
            }
        }
    };
}

pub(crate) use fault_verbs;

fault_verbs!(define_faults);

/// Every verb's name and doc comment, in the order of `fault_verbs!`.
macro_rules! define_verb_docs {
    ($( $(#[doc = $doc:literal])* $Variant:ident($module:ident) ),* $(,)?) => {
        /// Every verb: its name (its [`Fault`] variant) and its doc comment,
        /// in the order of `fault_verbs!` (the reference docs list them).
        pub const VERBS: &[(&str, &str)] = &[$( (stringify!($Variant), concat!($($doc, "\n"),*)) ),*];
    };
}

fault_verbs!(define_verb_docs);

/// Applying a fault did not fully take effect.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// `AcceptConnections` could not listen again on a TCP address (another
    /// process took the port in between, say). The fault is still recorded
    /// and in-memory listeners accept again.
    #[error("could not listen again on {address}: {source}")]
    Rebind {
        address: std::net::SocketAddr,
        source: std::io::Error,
    },
}

/// A resource type as a fault's text names it: `CDS`, or the type URL.
fn type_name(type_url: &str) -> String {
    match xds_vocabulary::ResourceType::from_type_url(type_url) {
        Some(t) => t.short_name().to_string(),
        None if type_url.is_empty() => "\"\"".to_string(),
        None => type_url.to_string(),
    }
}

/// A gRPC status as a fault's text names it: `UNAVAILABLE: message`.
fn status_text(code: tonic::Code, message: &str) -> String {
    let name = xds_vocabulary::code_name(code);
    if message.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The texts timelines (and their snapshots) show.
    #[test]
    fn every_verb_reads_as_a_timeline_shows_it() {
        let cds = xds_vocabulary::ResourceType::Cluster.type_url().to_string();
        let cases: Vec<(Fault, &str)> = vec![
            (
                CloseStreams {
                    code: tonic::Code::Unavailable,
                    message: "bye".into(),
                }
                .into(),
                "close streams with UNAVAILABLE: bye",
            ),
            (RefuseConnections.into(), "refuse connections"),
            (AcceptConnections.into(), "accept connections"),
            (Hang { type_url: None }.into(), "hang (every type)"),
            (
                Hang {
                    type_url: Some(cds.clone()),
                }
                .into(),
                "hang CDS",
            ),
            (Resume.into(), "resume"),
            (
                CloseStreamsAfter {
                    responses: 2,
                    code: tonic::Code::Internal,
                    message: String::new(),
                }
                .into(),
                "close every stream after 2 response(s) with INTERNAL",
            ),
            (KeepStreams.into(), "keep streams open"),
            (
                Restart {
                    keep_resources: true,
                }
                .into(),
                "restart (resources kept)",
            ),
            (
                Restart {
                    keep_resources: false,
                }
                .into(),
                "restart (resources lost)",
            ),
            (HoldConnections.into(), "hold connections (no bytes move)"),
            (ReleaseConnections.into(), "release connections"),
            (
                DelayResponses {
                    by: Duration::from_millis(1500),
                }
                .into(),
                "delay every response by 1.500s",
            ),
            (
                DelayResponses { by: Duration::ZERO }.into(),
                "stop delaying responses",
            ),
            (
                DropResponses {
                    count: 2,
                    type_url: None,
                }
                .into(),
                "drop the next 2 response(s)",
            ),
            (
                DropResponses {
                    count: 1,
                    type_url: Some(cds),
                }
                .into(),
                "drop the next 1 CDS response(s)",
            ),
        ];
        for (fault, text) in cases {
            assert_eq!(fault.to_string(), text, "{fault:?}");
        }
    }
}
