//! What applying a fault does to a fake server: for each verb of
//! `crate::fault` (its data and its words, a leaf the recording can name),
//! a module of the same name here with its [`Verb`] effect on the server's
//! state, under the state lock, and on listeners and connections outside
//! it. What a verb leaves in force between applications lives in the
//! state (`crate::in_force`).
//!
//! Kept apart from the verbs' data because it stands on the server's
//! insides (its state, the shared handle, the TCP listeners), which
//! themselves record faults: one module for both was an import circle.
//! The dispatch from a [`Fault`] to its verb's effect comes from
//! `fault_verbs!`, the one list of verbs, so a verb without an effect does
//! not compile.

mod close_streams;
mod connections;
mod delay;
mod drop;
mod hang;
mod hold;
mod hold_streams;
mod restart;
mod stream_limit;

use std::sync::Arc;

use crate::fault::{Fault, FaultError, fault_verbs};
use crate::serve::TcpGate;
use crate::shared::Inner;
use crate::state::State;

/// What one verb does.
pub(crate) trait Verb {
    /// Its effect on the server's state, under the state lock, right after
    /// the fault is recorded (so its consequences follow it in the
    /// recording).
    fn apply(&self, state: &mut State);

    /// Its effect on listeners and connections, after the state lock is
    /// released: tonic's accept loop locks a listener while polling it, so
    /// listeners are never touched with the state lock held.
    fn apply_outside(&self, _server: &Outside<'_>) -> Result<(), FaultError> {
        Ok(())
    }
}

/// What a verb may change outside the state lock.
pub(crate) struct Outside<'a> {
    pub inner: &'a Inner,
    /// The server's TCP listeners.
    pub tcp: &'a [Arc<TcpGate>],
}

macro_rules! define_effects {
    ($( $(#[$doc:meta])* $Variant:ident($module:ident) ),* $(,)?) => {
        /// The effect of `fault`'s verb.
        pub(crate) fn of(fault: &Fault) -> &dyn Verb {
            match fault {
                $( Fault::$Variant(verb) => verb, )*
            }
        }
    };
}

fault_verbs!(define_effects);
