//! `Spanned<T>`: a value with its position in the file, deserialized by
//! serde-saphyr, described in the schema as plain `T`; and `OneOrMany`.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Debug, Default)]
pub struct Spanned<T> {
    pub value: T,
    pub line: u64,
    pub column: u64,
}

impl<T> Spanned<T> {
    /// A value written nowhere yet (generated, to be written out).
    pub fn new(value: T) -> Self {
        Spanned {
            value,
            line: 0,
            column: 0,
        }
    }
}

/// A value compares (and hashes) as the value, wherever it was written:
/// map keys of a file are compared by what they say.
impl<T: PartialEq> PartialEq for Spanned<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Spanned<T> {}

impl<T: std::hash::Hash> std::hash::Hash for Spanned<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value.hash(state)
    }
}

/// Written back as the plain value.
impl<T: Serialize> Serialize for Spanned<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = serde_saphyr::Spanned::<T>::deserialize(deserializer)?;
        Ok(Spanned {
            value: s.value,
            line: s.referenced.line(),
            column: s.referenced.column(),
        })
    }
}

impl<T: JsonSchema> JsonSchema for Spanned<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

/// A string, or a list of strings.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// A collection left at its default, which a written file leaves out
/// (`#[serde(skip_serializing_if = "crate::check::is_empty")]`).
pub fn is_empty<T: Empty + ?Sized>(value: &T) -> bool {
    value.is_empty()
}

/// What [`is_empty`] asks.
pub trait Empty {
    fn is_empty(&self) -> bool;
}

impl<T> Empty for Vec<T> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}

impl<K, V> Empty for indexmap::IndexMap<K, V> {
    fn is_empty(&self) -> bool {
        indexmap::IndexMap::is_empty(self)
    }
}

impl Empty for String {
    fn is_empty(&self) -> bool {
        str::is_empty(self)
    }
}

impl<T: Empty> Empty for Spanned<T> {
    fn is_empty(&self) -> bool {
        self.value.is_empty()
    }
}
