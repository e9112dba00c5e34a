//! A JSON value as a scenario file writes it (in YAML), every key and
//! value with its position: what a `proto:` resource is read into, so an
//! error in it points at the key that is wrong rather than at the
//! resource's first line.

use std::cell::Cell;
use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::check::Spanned;

/// One JSON value with its parts' positions.
#[derive(Clone, Debug)]
pub enum SpannedJson {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Spanned<SpannedJson>>),
    /// Keys in the order written (a repeated key is kept twice: the
    /// conversion to JSON keeps the last, as serde_json does).
    Object(Vec<(Spanned<String>, Spanned<SpannedJson>)>),
}

impl SpannedJson {
    /// The plain JSON value.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            SpannedJson::Null => Value::Null,
            SpannedJson::Bool(b) => Value::Bool(*b),
            SpannedJson::Number(n) => Value::Number(n.clone()),
            SpannedJson::String(s) => Value::String(s.clone()),
            SpannedJson::Array(items) => {
                Value::Array(items.iter().map(|i| i.value.to_json()).collect())
            }
            SpannedJson::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.value.clone(), v.value.to_json()))
                    .collect(),
            ),
        }
    }

    /// The entry under `key`, if this is an object that has it (the last
    /// one written, as in [`SpannedJson::to_json`]).
    pub fn get(&self, key: &str) -> Option<&(Spanned<String>, Spanned<SpannedJson>)> {
        match self {
            SpannedJson::Object(entries) => entries.iter().rev().find(|(k, _)| k.value == key),
            _ => None,
        }
    }
}

/// How deep a value may nest. Real resources nest a few dozen levels
/// (a typed config inside a filter inside a listener); each level costs
/// several stack frames here (the position wrapper, the path tracker: some
/// 40 KiB in a debug build), which the loader's own thread has room for
/// (`load::LOADER_STACK`).
const MAX_DEPTH: usize = 100;

thread_local! {
    /// Levels of [`SpannedJson`] being read on this thread: `Deserialize`
    /// takes no state, so the depth is kept beside it.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// One level deeper while it lives; back up when dropped, errors and
/// unwinding included.
struct Level;

impl Level {
    fn enter() -> Option<Level> {
        let depth = DEPTH.get();
        (depth < MAX_DEPTH).then(|| {
            DEPTH.set(depth + 1);
            Level
        })
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.set(DEPTH.get().saturating_sub(1));
    }
}

impl<'de> Deserialize<'de> for SpannedJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(_level) = Level::enter() else {
            return Err(de::Error::custom(format!(
                "a proto3 JSON value nested deeper than {MAX_DEPTH} levels"
            )));
        };
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = SpannedJson;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<SpannedJson, E> {
        Ok(SpannedJson::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<SpannedJson, E> {
        Ok(SpannedJson::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<SpannedJson, D::Error> {
        SpannedJson::deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<SpannedJson, E> {
        Ok(SpannedJson::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SpannedJson, E> {
        Ok(SpannedJson::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SpannedJson, E> {
        Ok(SpannedJson::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SpannedJson, E> {
        serde_json::Number::from_f64(v)
            .map(SpannedJson::Number)
            .ok_or_else(|| E::custom(format!("{v} is no JSON number")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<SpannedJson, E> {
        Ok(SpannedJson::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<SpannedJson, E> {
        Ok(SpannedJson::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SpannedJson, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(SpannedJson::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SpannedJson, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value()?;
            entries.push((key, value));
        }
        Ok(SpannedJson::Object(entries))
    }
}

/// Described in the schema as what it is: any JSON value.
/// Written back as the plain JSON value.
impl serde::Serialize for SpannedJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl JsonSchema for SpannedJson {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        serde_json::Value::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        serde_json::Value::json_schema(generator)
    }

    fn inline_schema() -> bool {
        serde_json::Value::inline_schema()
    }
}
