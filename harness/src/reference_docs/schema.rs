//! Reading the scenario JSON Schema for the reference: a definition's
//! fields with their types and descriptions, as Markdown.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;

/// One line of text for a table cell: newlines joined, pipes escaped,
/// and a `<` outside code spans written `&lt;`, so that a placeholder
/// such as `<name>` in a reason is shown, not taken for an HTML tag (inside
/// a code span Markdown shows it as it is, and would show `&lt;` too).
pub fn cell(text: &str) -> String {
    let joined = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|");
    let mut out = String::with_capacity(joined.len());
    let mut in_code = false;
    for c in joined.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '<' if !in_code => out.push_str("&lt;"),
            _ => out.push(c),
        }
    }
    out
}

/// The anchor mdBook gives a heading of this text.
pub fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// Reads types out of one schema, collecting the object definitions the
/// fields name (each rendered once, at the end of a page).
pub struct Reader<'a> {
    defs: &'a serde_json::Map<String, Value>,
    /// Object definitions named so far, to render under "Objects".
    pub named: BTreeSet<String>,
    /// Definitions rendered elsewhere (an entry's own form): their link.
    pub skip: std::collections::BTreeMap<String, String>,
}

static EMPTY: std::sync::LazyLock<serde_json::Map<String, Value>> =
    std::sync::LazyLock::new(serde_json::Map::new);

impl<'a> Reader<'a> {
    pub fn new(schema: &'a Value) -> Reader<'a> {
        Reader {
            defs: schema
                .get("$defs")
                .and_then(Value::as_object)
                .unwrap_or(&EMPTY),
            named: BTreeSet::new(),
            skip: std::collections::BTreeMap::new(),
        }
    }

    pub fn definition(&self, name: &str) -> Option<&'a Value> {
        self.defs.get(name)
    }

    /// The definition a `$ref` names.
    fn referenced(reference: &str) -> &str {
        reference.rsplit('/').next().unwrap_or(reference)
    }

    /// The definition an entry's value is (`{$ref}`), if an object.
    pub fn object_of(&self, value: &Value) -> Option<String> {
        let name = Self::referenced(value.get("$ref")?.as_str()?);
        self.defs
            .get(name)?
            .get("properties")
            .is_some()
            .then(|| name.to_string())
    }

    /// A value's type in words (Markdown).
    pub fn type_of(&mut self, value: &Value) -> String {
        match value {
            Value::Bool(true) => return "any".into(),
            Value::Object(o) if o.is_empty() => return "any (proto3 JSON)".into(),
            _ => {}
        }
        if let Some(reference) = value.get("$ref").and_then(Value::as_str) {
            let name = Self::referenced(reference).to_string();
            let Some(definition) = self.defs.get(&name) else {
                return format!("`{name}`");
            };
            if definition.get("properties").is_some() {
                if let Some(href) = self.skip.get(&name) {
                    return format!("[`{name}`]({href})");
                }
                self.named.insert(name.clone());
                return format!("[`{name}`](#{})", anchor(&name));
            }
            if name == "ResourceSpec" {
                return "a resource ([Resource kinds](resources.md))".into();
            }
            return self.type_of(definition);
        }
        if let Some(values) = value.get("enum").and_then(Value::as_array) {
            return words(values);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alternatives) = value.get(key).and_then(Value::as_array) {
                let mut seen = Vec::new();
                for alternative in alternatives {
                    if alternative.get("type").and_then(Value::as_str) == Some("null") {
                        continue;
                    }
                    // A one-key object branch: `key: ...`.
                    if let Some(properties) =
                        alternative.get("properties").and_then(Value::as_object)
                        && properties.len() == 1
                        && alternative.get("required").is_some()
                    {
                        let (k, _) = properties.iter().next().expect("one");
                        seen.push(format!("`{k}: ...`"));
                        continue;
                    }
                    let t = self.type_of(alternative);
                    if !seen.contains(&t) {
                        seen.push(t);
                    }
                }
                return seen.join(" or ");
            }
        }
        let types: Vec<&str> = match value.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
        let Some(first) = types.first() else {
            return "any".into();
        };
        match *first {
            "array" => match value.get("items") {
                Some(items) => format!("list of {}", self.type_of(items)),
                None => "list".into(),
            },
            "object" => match value.get("additionalProperties") {
                Some(Value::Bool(false)) | None => "object".into(),
                Some(inner) => format!("map of name to {}", self.type_of(inner)),
            },
            "integer" => "integer".into(),
            "number" => "number".into(),
            "boolean" => "boolean".into(),
            "string" => "string".into(),
            other => other.to_string(),
        }
    }

    /// A definition's fields as a Markdown table (or a sentence for a
    /// plain value).
    pub fn fields(&mut self, definition: &Value) -> String {
        let Some(properties) = definition.get("properties").and_then(Value::as_object) else {
            let t = self.type_of(definition);
            return format!("Its value is {}.\n", article(&t));
        };
        let required: Vec<&str> = definition
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut text =
            String::from("| field | type | required | description |\n|---|---|---|---|\n");
        for (name, field) in properties {
            let t = self.type_of(field);
            let description = field
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "| `{name}` | {} | {} | {} |",
                cell(&t),
                if required.contains(&name.as_str()) {
                    "yes"
                } else {
                    "no"
                },
                cell(description)
            );
        }
        text
    }

    /// The object definitions named on a page, each with its fields,
    /// following the ones they name in turn.
    pub fn objects(&mut self) -> String {
        let mut text = String::new();
        let mut done = BTreeSet::new();
        loop {
            let next = self.named.iter().find(|n| !done.contains(*n)).cloned();
            let Some(name) = next else { break };
            done.insert(name.clone());
            let Some(definition) = self.defs.get(&name) else {
                continue;
            };
            if text.is_empty() {
                text.push_str("## Objects\n\nThe objects the fields above name.\n\n");
            }
            let _ = writeln!(text, "### {name}\n");
            if let Some(description) = definition.get("description").and_then(Value::as_str) {
                let _ = writeln!(text, "{}\n", description.trim());
            }
            let fields = self.fields(definition);
            let _ = writeln!(text, "{fields}");
        }
        text
    }
}

/// `a string`, `an integer`, `one of ...`, `[Name](#name)` as it is.
fn article(t: &str) -> String {
    if t.starts_with("one of") || t.starts_with('[') || t.starts_with('`') || t.starts_with("a ") {
        t.to_string()
    } else if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {t}")
    } else {
        format!("a {t}")
    }
}

/// A keyword's values in words: the short spellings, without aliases
/// (type URLs, lower case), at most a dozen.
fn words(values: &[Value]) -> String {
    let mut shown: Vec<String> = Vec::new();
    for value in values {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if text.contains('.') && values.len() > 4 {
            continue;
        }
        if shown.iter().any(|s| s.eq_ignore_ascii_case(&text)) {
            continue;
        }
        shown.push(text);
    }
    let more = shown.len() > 12;
    shown.truncate(12);
    let mut text = shown
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if more {
        text.push_str(", ...");
    }
    format!("one of {text}")
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn placeholders_outside_code_are_shown_and_code_is_kept() {
        assert_eq!(
            cell("a \"<TYPE> response\"\n and `<dir>/x` | y"),
            "a \"&lt;TYPE> response\" and `<dir>/x` \\| y"
        );
    }
}
