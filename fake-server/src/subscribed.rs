//! What a delta stream is subscribed to for one type, as the server keeps
//! it and as every recorded request shows it.
//!
//! Each recorded delta request carries the subscription it left the stream
//! with, so a matcher can read a delta request as it reads a SotW one.
//! A copy per request would cost the whole subscription each time: 100,000
//! names and 1,000 changes to them were a gigabyte. The set is persistent
//! instead (imbl's B-tree): a recorded request shares every node with the
//! server's set, and a change copies only the paths to the names it
//! changed. [`SubscribedNames::change_bytes`] says how much that is, so a
//! timeline can weigh what it holds.

use std::fmt;
use std::sync::Arc;

use imbl::OrdSet;

/// The explicit wildcard name.
pub const WILDCARD: &str = "*";

/// A subscription: names, and whether a wildcard covers every resource of
/// the type. Cloning it is O(1) and copies no name.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SubscribedNames {
    wildcard: bool,
    names: OrdSet<Arc<str>>,
}

/// Keys in one node of imbl's B-tree (its `ORD_CHUNK_SIZE`).
const NODE_KEYS: usize = 16;

/// What one B-tree node takes at most: 16 keys of two words, 17 child
/// pointers, the chunks' lengths and the shared pointer's count. Every
/// node a change copies is a new one of these.
const NODE_BYTES: usize = NODE_KEYS * 16 + (NODE_KEYS + 1) * 8 + 64;

/// The fewest keys a leaf other than the root holds (a third of a node);
/// a branch other than the root has at least eight children.
const MIN_LEAF_KEYS: usize = NODE_KEYS / 3;
const MIN_CHILDREN: usize = NODE_KEYS / 2;

impl SubscribedNames {
    /// Every resource of the type is subscribed.
    pub fn wildcard(&self) -> bool {
        self.wildcard
    }

    /// `name` is subscribed by name (`*` is not a name: see
    /// [`wildcard`](Self::wildcard)).
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The subscription asks for `name`: by name or by the wildcard.
    pub fn covers(&self, name: &str) -> bool {
        self.wildcard || self.contains(name)
    }

    /// How many entries [`iter`](Self::iter) gives.
    pub fn len(&self) -> usize {
        self.names.len() + usize::from(self.wildcard)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The subscription as a list: `*` first for a wildcard, then the
    /// names, sorted.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            wildcard: self.wildcard,
            names: self.names.iter(),
        }
    }

    pub(crate) fn set_wildcard(&mut self, wildcard: bool) {
        self.wildcard = wildcard;
    }

    /// Subscribes `name` (not `*`).
    pub(crate) fn insert(&mut self, name: &str) {
        if !self.names.contains(name) {
            self.names.insert(Arc::from(name));
        }
    }

    /// Unsubscribes `name` (not `*`); whether it was subscribed.
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        self.names.remove(name).is_some()
    }

    /// The bytes a change to the previous subscription that subscribed
    /// `added` and unsubscribed `removed` names, and left this one, may
    /// have allocated: the added names themselves, and the B-tree nodes on
    /// the path to each changed name, copied, and split. An upper bound:
    /// no more nodes than the tree can have. A request that changed
    /// nothing shares the whole set and costs 0.
    pub fn change_bytes<'a>(
        &self,
        added: impl IntoIterator<Item = &'a str>,
        removed: usize,
    ) -> usize {
        let mut changed = removed;
        let mut names = 0;
        for name in added {
            changed += 1;
            // An `Arc<str>`'s allocation: its two counts and the bytes.
            names += name.len() + 16;
        }
        if changed == 0 {
            return 0;
        }
        let keys = self.names.len();
        let levels = levels(keys);
        let nodes =
            (changed.saturating_mul(2 * levels)).min(keys / MIN_LEAF_KEYS * 8 / 7 + 2 * levels);
        names + nodes * NODE_BYTES
    }
}

/// How many levels a B-tree of `keys` keys can have at most: its root has
/// two children or more, every other branch [`MIN_CHILDREN`], every leaf
/// [`MIN_LEAF_KEYS`] keys.
fn levels(keys: usize) -> usize {
    let mut levels = 1;
    let mut smallest = 2 * MIN_LEAF_KEYS;
    while smallest <= keys {
        levels += 1;
        smallest = smallest.saturating_mul(MIN_CHILDREN);
    }
    levels
}

impl fmt::Debug for SubscribedNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Builds a subscription from a list as [`SubscribedNames::iter`] gives
/// it: `*` stands for the wildcard.
impl<S: AsRef<str>> FromIterator<S> for SubscribedNames {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut set = SubscribedNames::default();
        for name in iter {
            match name.as_ref() {
                WILDCARD => set.wildcard = true,
                name => set.insert(name),
            }
        }
        set
    }
}

impl<S: AsRef<str>> PartialEq<[S]> for SubscribedNames {
    fn eq(&self, other: &[S]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b.as_ref())
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for SubscribedNames {
    fn eq(&self, other: &[S; N]) -> bool {
        self == &other[..]
    }
}

/// [`SubscribedNames::iter`]'s iterator.
#[derive(Clone)]
pub struct Iter<'a> {
    wildcard: bool,
    names: imbl::ordset::Iter<'a, Arc<str>, imbl::shared_ptr::DefaultSharedPtr>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if std::mem::take(&mut self.wildcard) {
            return Some(WILDCARD);
        }
        self.names.next().map(|name| &**name)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.names.len() + usize::from(self.wildcard);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_wildcard_first_then_the_names_sorted() {
        let mut set: SubscribedNames = ["b", "*", "a"].into_iter().collect();
        assert_eq!(set, ["*", "a", "b"]);
        assert_eq!(set.iter().len(), 3);
        assert!(set.covers("zzz"));
        set.set_wildcard(false);
        assert!(!set.covers("zzz") && set.covers("a"));
        assert!(set.remove("a") && !set.remove("a"));
        assert_eq!(format!("{set:?}"), r#"["b"]"#);
    }

    #[test]
    fn a_recorded_copy_keeps_what_it_was_when_the_set_changes() {
        let mut set: SubscribedNames = (0..1000).map(|i| format!("c{i}")).collect();
        let recorded = set.clone();
        set.insert("new");
        set.remove("c1");
        assert!(recorded.contains("c1") && !recorded.contains("new"));
        assert!(set.contains("new") && !set.contains("c1"));
    }

    #[test]
    fn a_change_costs_its_paths_and_never_more_than_the_tree() {
        let set: SubscribedNames = (0..100_000).map(|i| format!("c{i}")).collect();
        assert_eq!(set.change_bytes([], 0), 0, "an ACK shares everything");
        let one = set.change_bytes(["new"], 1);
        assert!(one < 16 << 10, "{one} bytes for two names");
        let all = set.change_bytes(set.iter().collect::<Vec<_>>(), 0);
        assert!(
            (1 << 20..32 << 20).contains(&all),
            "{all} bytes for a tree of 100,000 names built at once"
        );
        assert_eq!(levels(0), 1);
        assert_eq!(levels(9), 1);
        assert_eq!(levels(10), 2);
        assert_eq!(levels(80), 3);
    }
}
