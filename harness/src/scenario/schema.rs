//! The JSON Schema of scenario files, generated from `file::ScenarioFile`
//! (so it cannot drift from what the loader accepts) and checked in at
//! `harness/scenario.schema.json` for editors.
//!
//! The file form keeps keywords as strings (with their positions, for
//! located errors); the words each one takes come from the same tables the
//! loader checks them against, named beside each field
//! (`crate::check::schema`), as `enum`s an editor completes and flags.

use serde_json::{Value, json};

use super::file::ScenarioFile;

/// The scenario file JSON Schema (draft 2020-12), pretty-printed, with a
/// trailing newline.
pub fn scenario_schema() -> String {
    let schema = schemars::schema_for!(ScenarioFile);
    // Serializing a schemars Schema (a JSON value) cannot fail.
    let mut value = serde_json::to_value(&schema).unwrap_or_default();
    describe_variant_keys(&mut value);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// An enum variant in the file form (`- watch: {...}`, `- cluster:
/// {...}`) is a one-key object in the schema whose description schemars
/// puts on the object; editors show a key's own description when the
/// cursor is on it, so the key gets it too.
fn describe_variant_keys(schema: &mut Value) {
    let Some(definitions) = schema.get_mut("$defs").and_then(Value::as_object_mut) else {
        return;
    };
    for definition in definitions.values_mut() {
        let Some(branches) = definition.get_mut("oneOf").and_then(Value::as_array_mut) else {
            continue;
        };
        for branch in branches {
            let Some(description) = branch.get("description").cloned() else {
                continue;
            };
            let Some(properties) = branch.get_mut("properties").and_then(Value::as_object_mut)
            else {
                continue;
            };
            if properties.len() != 1 {
                continue;
            }
            for property in properties.values_mut() {
                // `true` (anything: a proto3 JSON resource) and `{}` say
                // the same; only the object can carry a description.
                if *property == Value::Bool(true) {
                    *property = json!({});
                }
                if let Some(object) = property.as_object_mut()
                    && !object.contains_key("description")
                {
                    object.insert("description".into(), description.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xds_vocabulary::ResourceType;

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

    /// Every keyword the loader checks against a table has that table as
    /// its `enum`, so editors complete it; a renamed struct or field that
    /// would silently drop the enum fails here.
    /// Every property an editor can complete has something to show on
    /// hover: a doc comment on its field (or on its enum variant).
    #[test]
    fn every_property_has_a_description() {
        let schema: Value = serde_json::from_str(&scenario_schema()).expect("JSON");
        let mut missing = Vec::new();
        fn walk(node: &Value, at: &str, missing: &mut Vec<String>) {
            match node {
                Value::Object(object) => {
                    if let Some(Value::Object(properties)) = object.get("properties") {
                        for (name, property) in properties {
                            if property.get("description").is_none() {
                                missing.push(format!("{at}.{name}"));
                            }
                        }
                    }
                    for (key, child) in object {
                        walk(child, &format!("{at}/{key}"), missing);
                    }
                }
                Value::Array(items) => items.iter().for_each(|i| walk(i, at, missing)),
                _ => {}
            }
        }
        walk(&schema, "", &mut missing);
        assert!(
            missing.is_empty(),
            "properties without a description: {missing:#?}"
        );
    }

    /// Keyword properties carry their words beside their field
    /// (`schema_with`); these must have them as an `enum`, so editors
    /// complete them.
    #[test]
    fn every_keyword_property_gets_its_enum() {
        let stored: Value = serde_json::from_str(&scenario_schema()).expect("JSON");
        let keyword = |definition: &str, property: &str| {
            let p = &stored["$defs"][definition]["properties"][property];
            p.get("enum").or_else(|| p["items"].get("enum")).is_some()
        };
        let mut missing = Vec::new();
        for (definition, properties) in [
            ("ServerSpec", &["protocol", "mode"][..]),
            (
                "TlsSpec",
                &["server_certificate", "client_certificate", "client_auth"],
            ),
            ("ClusterSpec", &["lb_policy"]),
            ("WatcherMatcherSpec", &["event", "code", "type"]),
            ("ClientMatcherSpec", &["event", "level"]),
            ("ServerEventMatcherSpec", &["event", "failure", "code"]),
            ("CsdsMatcherSpec", &["status", "type"]),
            ("RequestMatcherSpec", &["kind", "error_code", "type"]),
            ("DeltaRequestMatcherSpec", &["error_code", "type"]),
            ("ChannelMatcherSpec", &["state"]),
            ("ServingMatcherSpec", &["state", "code"]),
            ("AdminMatcherSpec", &["state", "type"]),
            ("CsdsReplyMatcherSpec", &["code"]),
            ("DialMatcherSpec", &["code"]),
            ("RpcMatcherSpec", &["code"]),
            ("ResponseMatcherSpec", &["type"]),
            ("DeltaResponseMatcherSpec", &["type"]),
            ("ResourceErrorSpec", &["code"]),
            ("RawSpec", &["type"]),
            ("CloseStreamSpec", &["code"]),
            ("CloseStreamsAfterSpec", &["code"]),
            ("RpcSpec", &["until"]),
            ("DropResponsesSpec", &["type"]),
            ("HangSpec", &["type"]),
            ("RemoveResourcesSpec", &["type"]),
            ("SendResponseSpec", &["type"]),
            ("SendDeltaResponseSpec", &["type"]),
            ("WatchSpec", &["type"]),
            ("WatchInCallbackSpec", &["type"]),
        ] {
            for property in properties {
                if !keyword(definition, property) {
                    missing.push(format!("{definition}.{property}"));
                }
            }
        }
        assert!(missing.is_empty(), "no enum: {missing:?}");
        // An optional keyword stays optional.
        let hang = &stored["$defs"]["HangSpec"];
        assert!(hang.get("required").is_none(), "{hang}");

        let watcher_events = &stored["$defs"]["WatcherMatcherSpec"]["properties"]["event"]["enum"];
        assert_eq!(
            watcher_events,
            &json!([
                "changed",
                "resource_error",
                "ambient_error",
                "ambient_error_cleared",
                "does_not_exist"
            ])
        );
        let types = stored["$defs"]["WatchSpec"]["properties"]["type"]["enum"]
            .as_array()
            .expect("an enum of resource types");
        for spelling in [
            "CDS",
            "cds",
            "Cluster",
            "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        ] {
            assert!(types.contains(&json!(spelling)), "{spelling}");
            assert!(ResourceType::parse(spelling).is_some(), "{spelling}");
        }
        assert_eq!(
            stored["properties"]["protocols"]["items"]["enum"],
            json!(["sotw", "delta"])
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
