//! The reference client's deliberate defects, by name. Each switch of
//! [`Defects`] and of the zone's [`ZoneDefects`](crate::ZoneDefects), and
//! each rule of [`ValidationRule`](crate::ValidationRule) and
//! [`ServerErrorRule`](crate::ServerErrorRule) that `Defects` breaks one at
//! a time, is a [`Defect`]: its name, the doc comment written where it is
//! declared, and the `Defects` with it alone on.
//!
//! The list is made from the declarations themselves (they are written in
//! `defect_switches!` and `breakable_rules!`), so a switch is named here
//! as soon as it exists and its text cannot drift from its doc comment.
//! The harness's tests of the scenarios, its command line (`run --client
//! reference --defect NAME`) and the book's page of defects all read this
//! one list.

use std::sync::OnceLock;

use crate::profile::Defects;

/// One way the reference client can be broken on purpose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defect {
    /// A switch of `Defects` by its field's name (`timer_while_connecting`);
    /// a switch of the zone's by `zone_` and its field's name
    /// (`zone_no_hash_suffix`); a rule broken alone by its enum and variant
    /// (`ValidationRule::PortRange`, `ServerErrorRule::Read`).
    pub name: String,
    /// Its doc comment where it is declared, on one line: what the broken
    /// client does and the rule that forbids it (for a rule, the rule).
    pub doc: String,
    /// The reference's defects with only this one on.
    pub defects: Defects,
}

/// Every defect, in the order they are declared.
pub fn all() -> &'static [Defect] {
    static ALL: OnceLock<Vec<Defect>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = Vec::new();
        <Defects as Switch>::each("", "", &mut |name, doc, defects| {
            all.push(Defect {
                name,
                doc: one_line(doc),
                defects,
            });
        });
        all
    })
}

/// The defect called `name`, exactly as [`Defect::name`] writes it.
pub fn named(name: &str) -> Option<&'static Defect> {
    all().iter().find(|d| d.name == name)
}

/// A doc comment's lines as one line.
fn one_line(doc: &str) -> String {
    doc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A field of a defects struct: each value of it that breaks one rule,
/// with its defect's name and doc.
pub(crate) trait Switch: Sized {
    /// Calls `found` with each such value of a field called `field` whose
    /// doc comment is `doc`.
    fn each(field: &str, doc: &str, found: &mut dyn FnMut(String, &str, Self));
}

/// A switch is on or off: on breaks its rule.
impl Switch for bool {
    fn each(field: &str, doc: &str, found: &mut dyn FnMut(String, &str, Self)) {
        found(field.to_string(), doc, true);
    }
}

/// Rules of one kind (an enum declared with `breakable_rules!`), each of
/// which one `Option` field of `Defects` breaks alone.
pub(crate) trait Rules: Copy + 'static {
    /// The enum's name, which names its defects (`ValidationRule::…`).
    const KIND: &'static str;
    /// Each rule, its variant's name and its doc comment.
    const ALL: &'static [(Self, &'static str, &'static str)];
}

/// `Some(rule)` breaks that rule: one defect per rule, named by the rule
/// (the field's own name says nothing a reader looks for).
impl<R: Rules> Switch for Option<R> {
    fn each(_field: &str, _doc: &str, found: &mut dyn FnMut(String, &str, Self)) {
        for (rule, name, doc) in R::ALL {
            found(format!("{}::{name}", R::KIND), doc, Some(*rule));
        }
    }
}

/// Declares a struct of deliberate defects (every field public, each with
/// its doc comment) and lists its fields' defects for [`all`]: a `bool` is
/// one defect named by its field; an `Option` of `breakable_rules!` is
/// one per rule; a nested struct declared with this macro gives its own,
/// named by its field and `_` (`zone_…`).
macro_rules! defect_switches {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                pub $field:ident: $ty:ty,
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[doc = $doc])*
                pub $field: $ty,
            )*
        }

        impl $crate::defect::Switch for $name {
            fn each(field: &str, _doc: &str, found: &mut dyn FnMut(String, &str, Self)) {
                let prefix = if field.is_empty() {
                    String::new()
                } else {
                    format!("{field}_")
                };
                $(
                    <$ty as $crate::defect::Switch>::each(
                        stringify!($field),
                        concat!($($doc, "\n",)*),
                        &mut |name, doc, value| {
                            found(
                                format!("{prefix}{name}"),
                                doc,
                                $name {
                                    $field: value,
                                    ..<$name as Default>::default()
                                },
                            )
                        },
                    );
                )*
            }
        }
    };
}
pub(crate) use defect_switches;

/// Declares an enum of rules that `Defects` breaks one at a time (unit
/// variants, each with its doc comment) and lists them for [`all`].
macro_rules! breakable_rules {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $variant:ident,
            )*
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $(
                $(#[doc = $doc])*
                $variant,
            )*
        }

        impl $crate::defect::Rules for $name {
            const KIND: &'static str = stringify!($name);
            const ALL: &'static [(Self, &'static str, &'static str)] = &[
                $(($name::$variant, stringify!($variant), concat!($($doc, "\n",)*)),)*
            ];
        }
    };
}
pub(crate) use breakable_rules;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ServerErrorRule, ValidationRule};

    #[test]
    fn each_defect_is_named_as_declared_and_sets_only_itself() {
        let timer = named("timer_while_connecting").expect("a switch");
        assert_eq!(
            timer.defects,
            Defects {
                timer_while_connecting: true,
                ..Defects::default()
            }
        );
        assert!(
            timer
                .doc
                .starts_with("Start does-not-exist timers when a request"),
            "{}",
            timer.doc
        );
        assert!(!timer.doc.contains('\n'), "{}", timer.doc);
        let zone = named("zone_no_hash_suffix").expect("a zone switch");
        assert!(zone.defects.zone.no_hash_suffix);
        assert_eq!(
            zone.defects,
            Defects {
                zone: crate::ZoneDefects {
                    no_hash_suffix: true,
                    ..Default::default()
                },
                ..Defects::default()
            }
        );
        let port = named("ValidationRule::PortRange").expect("a validation rule");
        assert_eq!(
            port.defects.broken_validation,
            Some(ValidationRule::PortRange)
        );
        assert_eq!(port.doc, "A port must fit in 16 bits.");
        let read = named("ServerErrorRule::Read").expect("a server-error rule");
        assert_eq!(
            read.defects.broken_server_errors,
            Some(ServerErrorRule::Read)
        );
        assert!(named("no_such_defect").is_none());
        assert!(named("zone").is_none() && named("broken_validation").is_none());
    }

    #[test]
    fn every_defect_is_one_distinct_break_with_a_doc() {
        let all = all();
        assert!(all.len() > 130, "{}", all.len());
        for (i, defect) in all.iter().enumerate() {
            assert!(!defect.doc.is_empty(), "{} has no doc", defect.name);
            assert_ne!(defect.defects, Defects::default(), "{}", defect.name);
            for other in &all[..i] {
                assert_ne!(defect.name, other.name);
                assert_ne!(
                    defect.defects, other.defects,
                    "{} and {}",
                    defect.name, other.name
                );
            }
        }
    }
}
