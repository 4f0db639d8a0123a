//! The JSON Schema of the spec, generated from the Rust types with schemars.
//!
//! The committed copy is `schemas/gpuform.schema.json`; a test fails when it
//! differs from [`schema_json`] (regenerate with
//! `GPUFORM_UPDATE_SCHEMA=1 cargo test -p gpuform --test spec_schema`).
//! Editors use it through the first line of a spec:
//! `# yaml-language-server: $schema=../schemas/gpuform.schema.json`.

use super::model::Spec;
use serde_json::{json, Value};

/// Path of the committed schema, relative to the repository root.
pub const SCHEMA_PATH: &str = "schemas/gpuform.schema.json";

/// Names of clusters and buckets (they become parts of resource addresses).
pub const RESOURCE_NAME_PATTERN: &str = "^[a-z][a-z0-9-]*$";
/// Names of variables (also valid in `GPUFORM_VAR_<name>`).
pub const VARIABLE_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// The JSON Schema (draft 7) of a spec file.
pub fn schema_json() -> Value {
    let schema = schemars::schema_for!(Spec);
    let mut v = serde_json::to_value(schema).unwrap_or_else(|_| json!({}));
    // What the derive cannot say: rules on map keys.
    if let Some(props) = v.get_mut("properties").and_then(Value::as_object_mut) {
        for (key, pattern) in [
            ("clusters", RESOURCE_NAME_PATTERN),
            ("buckets", RESOURCE_NAME_PATTERN),
            ("variables", VARIABLE_NAME_PATTERN),
        ] {
            if let Some(obj) = props.get_mut(key).and_then(Value::as_object_mut) {
                obj.insert("propertyNames".into(), json!({ "pattern": pattern }));
            }
        }
        if let Some(obj) = props.get_mut("project").and_then(Value::as_object_mut) {
            obj.insert("pattern".into(), json!("^[A-Za-z0-9][A-Za-z0-9._-]*$"));
            obj.insert("maxLength".into(), json!(64));
        }
    }
    if let Some(obj) = v.as_object_mut() {
        obj.insert("title".into(), json!("gpuform spec"));
    }
    v
}

/// [`schema_json`] as the text committed in `schemas/` (pretty, final newline).
pub fn schema_text() -> String {
    let mut s = serde_json::to_string_pretty(&schema_json()).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_has_the_model() {
        let s = schema_json();
        assert_eq!(s["type"], "object");
        assert!(s["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("project"))));
        assert_eq!(
            s["definitions"]["Cluster"]["additionalProperties"],
            json!(false)
        );
        assert_eq!(s["definitions"]["GpuRequest"]["type"], "string");
        assert_eq!(
            s["properties"]["clusters"]["propertyNames"]["pattern"],
            RESOURCE_NAME_PATTERN
        );
    }
}
