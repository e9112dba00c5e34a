//! The JSON Schema of scenario files, generated from `file::ScenarioFile`
//! (so it cannot drift from what the loader accepts) and checked in at
//! `harness/scenario.schema.json` for editors.

use super::file::ScenarioFile;

/// The scenario file JSON Schema (draft 2020-12), pretty-printed, with a
/// trailing newline.
pub fn scenario_schema() -> String {
    let schema = schemars::schema_for!(ScenarioFile);
    // Serializing a schemars Schema (a JSON value) cannot fail.
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_path() -> std::path::PathBuf {
        crate::suite::manifest_dir(env!("CARGO_MANIFEST_DIR")).join("scenario.schema.json")
    }

    #[test]
    fn schema_is_up_to_date() {
        let fresh = scenario_schema();
        if std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1") {
            std::fs::write(schema_path(), &fresh).expect("write scenario.schema.json");
            return;
        }
        let stored = std::fs::read_to_string(schema_path()).unwrap_or_default();
        assert!(
            stored == fresh,
            "harness/scenario.schema.json is out of date with scenario/file.rs; \
             run `UPDATE_SCHEMA=1 cargo test -p xds-conformance schema`"
        );
    }

    #[test]
    fn schema_is_2020_12_and_documents_every_step() {
        let schema: serde_json::Value =
            serde_json::from_str(&scenario_schema()).expect("the schema is JSON");
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        let text = schema.to_string();
        for step in [
            "watch",
            "cancel_watch",
            "dial",
            "set_resources",
            "remove_resources",
            "send_response",
            "close_stream",
            "refuse_connections",
            "accept_connections",
            "hang",
            "resume",
            "close_streams_after",
            "keep_streams",
            "restart",
            "hold_connections",
            "release_connections",
            "drop_responses",
            "delay_responses",
            "wait",
            "expect",
            "expect_none",
        ] {
            assert!(
                text.contains(&format!("\"{step}\"")),
                "step {step} missing from the schema"
            );
        }
        for description in [
            "Start a watch on the client",
            "Let virtual time pass",
            "A Cluster: EDS (default), LOGICAL_DNS or aggregate.",
            "Fake ADS servers, by name, in priority order.",
        ] {
            assert!(
                text.contains(description),
                "description `{description}` missing"
            );
        }
    }

    /// A small structural check of a sample scenario against the schema:
    /// every key it uses is one the schema declares at that place.
    #[test]
    fn schema_accepts_a_sample_scenario() {
        let schema: serde_json::Value =
            serde_json::from_str(&scenario_schema()).expect("the schema is JSON");
        let sample: serde_json::Value = serde_saphyr::from_str(SAMPLE).expect("sample is YAML");
        let mut path = Vec::new();
        check_keys(&schema, &schema, &sample, &mut path);
        // And the loader agrees.
        crate::scenario::load_str("sample.yaml", SAMPLE).expect("sample loads");
    }

    const SAMPLE: &str = r#"
description: A sample touching most of the format.
spec: [A46]
servers:
  primary:
    mode: auto
    resources:
      - cluster: {name: c1}
      - endpoints: {name: c1, addresses: ["127.0.0.1:8080"]}
      - proto:
          "@type": type.googleapis.com/envoy.config.listener.v3.Listener
          name: l0
steps:
  - watch: {type: CDS, name: c1}
  - expect:
      watcher: {type: CDS, name: c1, event: changed}
      within: 2s
  - set_resources:
      resources:
        - listener: {name: l1, routes_to: c1}
  - expect_none:
      request: {kind: nack}
      for: 1s
"#;

    /// Follows `$ref`, `properties`, `additionalProperties`, `items`,
    /// `anyOf`/`oneOf` far enough to find where each object key of `value`
    /// is declared; fails on a key that is declared nowhere.
    fn check_keys(
        root: &serde_json::Value,
        schema: &serde_json::Value,
        value: &serde_json::Value,
        path: &mut Vec<String>,
    ) {
        // `true` or `{}` (e.g. proto's JSON value): anything goes below.
        if schema == &serde_json::Value::Bool(true)
            || schema.as_object().is_some_and(|o| {
                !["type", "$ref", "anyOf", "oneOf", "properties", "items"]
                    .iter()
                    .any(|k| o.contains_key(*k))
            })
        {
            return;
        }
        if let Some(reference) = schema.get("$ref").and_then(|r| r.as_str()) {
            let name = reference.trim_start_matches("#/$defs/");
            let target = &root["$defs"][name];
            assert!(!target.is_null(), "dangling $ref {reference}");
            return check_keys(root, target, value, path);
        }
        for alternatives in ["anyOf", "oneOf"] {
            if let Some(options) = schema.get(alternatives).and_then(|o| o.as_array()) {
                // Pick the alternative whose declared keys cover the value's keys.
                let fits = |option: &serde_json::Value| match (value.as_object(), option) {
                    (Some(object), _) => {
                        let option = resolve(root, option);
                        object.keys().all(|k| {
                            option["properties"].get(k).is_some()
                                || option["additionalProperties"].is_object()
                        })
                    }
                    (None, option) => resolve(root, option).get("properties").is_none(),
                };
                let option = options.iter().find(|o| fits(o));
                let option =
                    option.unwrap_or_else(|| panic!("no {alternatives} branch fits at {path:?}"));
                return check_keys(root, option, value, path);
            }
        }
        match value {
            serde_json::Value::Object(object) => {
                for (key, item) in object {
                    path.push(key.clone());
                    let declared = schema["properties"]
                        .get(key)
                        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()));
                    let declared =
                        declared.unwrap_or_else(|| panic!("key not in the schema at {path:?}"));
                    check_keys(root, declared, item, path);
                    path.pop();
                }
            }
            serde_json::Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for item in items {
                        check_keys(root, item_schema, item, path);
                    }
                }
            }
            _ => {}
        }
    }

    fn resolve<'a>(
        root: &'a serde_json::Value,
        schema: &'a serde_json::Value,
    ) -> &'a serde_json::Value {
        match schema.get("$ref").and_then(|r| r.as_str()) {
            Some(reference) => &root["$defs"][reference.trim_start_matches("#/$defs/")],
            None => schema,
        }
    }
}
