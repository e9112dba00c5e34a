//! `Spanned<T>`: a value with its position in the file, deserialized by
//! serde-saphyr, described in the schema as plain `T`; and `OneOrMany`.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

#[derive(Clone, Debug, Default)]
pub struct Spanned<T> {
    pub value: T,
    pub line: u64,
    pub column: u64,
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
#[derive(Clone, Debug, Deserialize, JsonSchema)]
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
