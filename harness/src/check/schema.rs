//! The JSON Schema of keyword properties: the words each one takes, from
//! the same tables the value parsers check them against, as an `enum` an
//! editor completes and flags. A file form's field names its words with
//! `#[schemars(schema_with = "crate::check::schema::...")]`, so the words
//! stay beside the field.

use schemars::{Schema, SchemaGenerator, json_schema};
use xds_vocabulary::status::STATUS_CODES;
use xds_vocabulary::{AdsProtocol, ResourceType};

/// A string that is one of `words`.
pub fn words<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> Schema {
    let words: Vec<String> = words.into_iter().map(|w| w.as_ref().to_string()).collect();
    json_schema!({ "type": "string", "enum": words })
}

/// The words of a keyword table (`[("auto", ...), ...]`).
pub fn table<T>(table: &[(&str, T)]) -> Schema {
    words(table.iter().map(|(w, _)| *w))
}

/// A resource type, in every spelling `ResourceType::parse` takes (short
/// names in either case, message names, type URLs).
pub fn resource_type(_: &mut SchemaGenerator) -> Schema {
    let mut spellings = Vec::new();
    for t in ResourceType::ALL {
        spellings.push(t.short_name().to_string());
        spellings.push(t.short_name().to_ascii_lowercase());
        spellings.push(t.message_name().to_string());
        spellings.push(t.type_url().to_string());
    }
    for t in ResourceType::ALL {
        let rust = t
            .type_url()
            .rsplit('.')
            .next()
            .unwrap_or_default()
            .to_string();
        if !spellings.contains(&rust) {
            spellings.push(rust);
        }
    }
    words(spellings)
}

/// A gRPC status code name.
pub fn status_code(_: &mut SchemaGenerator) -> Schema {
    table(&STATUS_CODES)
}

/// An ADS protocol variant.
pub fn protocol(_: &mut SchemaGenerator) -> Schema {
    words(AdsProtocol::ALL.iter().map(|p| p.name()))
}

/// A list of ADS protocol variants.
pub fn protocols(_: &mut SchemaGenerator) -> Schema {
    let item = protocol(&mut SchemaGenerator::default());
    json_schema!({ "type": "array", "items": item })
}
