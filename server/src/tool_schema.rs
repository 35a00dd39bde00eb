//! Input schemas of the MCP tools, generated with schemars from the argument
//! types in [`crate::tools`] and normalized to the shape sekha-mcp 0.2.0
//! lists (`sekha_mcp/tools/*.py`): plain `type` for optional fields (no
//! `null` alternative), enums as `enum` lists, every subschema inlined, no
//! `$schema`/`title`, no Rust integer formats.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The normalized input schema of `T` (a JSON object with `type: object`).
pub fn input_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    normalize(&mut value);
    let mut object = match value {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    object.remove("title");
    object.remove("description");
    object.insert("type".into(), Value::String("object".into()));
    if !object.contains_key("required") {
        object.insert("required".into(), Value::Array(Vec::new()));
    }
    Arc::new(object)
}

/// Rewrites one generated schema node (recursively) to sekha-mcp's style.
fn normalize(value: &mut Value) {
    let Value::Object(map) = value else {
        return;
    };
    // `Option<T>`: `type: [T, "null"]` -> `type: T`.
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        if kept.len() == 1 {
            map.insert("type".into(), kept[0].clone());
        } else {
            map.insert("type".into(), Value::Array(kept));
        }
    }
    // `Option<Enum>` is `anyOf: [{..enum..}, {type: null}]`: keep the enum.
    if let Some(Value::Array(any)) = map.get("anyOf") {
        let kept: Vec<Value> = any
            .iter()
            .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
            .cloned()
            .collect();
        if let [only] = kept.as_slice()
            && let Value::Object(inner) = only.clone()
        {
            map.remove("anyOf");
            for (k, v) in inner {
                map.entry(k).or_insert(v);
            }
        }
    }
    // Documented unit enums are `oneOf: [{const, description}, ...]`.
    if let Some(Value::Array(one)) = map.get("oneOf")
        && !one.is_empty()
        && one.iter().all(|s| s.get("const").is_some())
    {
        let values: Vec<Value> = one.iter().filter_map(|s| s.get("const").cloned()).collect();
        map.remove("oneOf");
        map.insert("type".into(), Value::String("string".into()));
        map.insert("enum".into(), Value::Array(values));
    }
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    if let Some(Value::String(f)) = map.get("format")
        && (f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float")
    {
        map.remove("format");
    }
    if map.get("type").and_then(Value::as_str) == Some("integer")
        && map.get("minimum") == Some(&Value::from(0))
        && map.get("maximum").is_none()
    {
        // The implicit bound of an unsigned Rust integer, not a tool bound.
        map.remove("minimum");
    }
    for (_, child) in map.iter_mut() {
        match child {
            Value::Object(_) => normalize(child),
            Value::Array(items) => items.iter_mut().for_each(normalize),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::*;
    use serde_json::json;

    fn prop(schema: &JsonObject, name: &str) -> Value {
        schema["properties"][name].clone()
    }

    #[test]
    fn search_schema_matches_sekha() {
        let s = input_schema::<MemorySearchArgs>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], json!(["query"]));
        let q = prop(&s, "query");
        assert_eq!(q["type"], "string");
        assert_eq!(q["minLength"], 1);
        assert_eq!(q["maxLength"], 1000);
        let l = prop(&s, "limit");
        assert_eq!(l["type"], "integer");
        assert_eq!(l["minimum"], 1);
        assert_eq!(l["maximum"], 50);
        assert_eq!(l["default"], 10);
        assert!(l.get("format").is_none());
        let f = prop(&s, "filter_labels");
        assert_eq!(f["type"], "array");
        assert_eq!(f["items"]["type"], "string");
        assert_eq!(f["items"]["minLength"], 1);
        assert_eq!(f["default"], json!([]));
        assert!(s.get("$schema").is_none() && s.get("title").is_none());
    }

    #[test]
    fn store_schema_matches_sekha() {
        let s = input_schema::<MemoryStoreArgs>();
        let mut req: Vec<String> = serde_json::from_value(s["required"].clone()).unwrap();
        req.sort();
        // memdb suggests a label (and folder) when none is sent (SPEC §19.4).
        assert_eq!(req, ["messages"]);
        assert_eq!(prop(&s, "label")["type"], "string");
        assert_eq!(prop(&s, "label")["maxLength"], 500);
        assert_eq!(prop(&s, "folder")["pattern"], r"^/[a-zA-Z0-9_\-/]*$");
        let imp = prop(&s, "importance_score");
        assert_eq!(imp["type"], "number");
        assert_eq!(imp["minimum"], 0.0);
        assert_eq!(imp["maximum"], 10.0);
        assert_eq!(imp["default"], 5.0);
        let msgs = prop(&s, "messages");
        assert_eq!(msgs["minItems"], 1);
        let item = &msgs["items"];
        assert_eq!(item["type"], "object");
        let mut ireq: Vec<String> = serde_json::from_value(item["required"].clone()).unwrap();
        ireq.sort();
        assert_eq!(ireq, ["content", "role"]);
        assert_eq!(
            item["properties"]["role"]["enum"],
            json!(["user", "assistant", "system"])
        );
        assert_eq!(item["properties"]["content"]["minLength"], 1);
        assert_eq!(item["properties"]["timestamp"]["type"], "string");
        assert_eq!(item["properties"]["timestamp"]["format"], "date-time");
        assert_eq!(item["properties"]["metadata"]["type"], "object");
        assert_eq!(item["properties"]["metadata"]["default"], json!({}));
        assert!(!serde_json::to_string(&*s).unwrap().contains("$ref"));
    }

    #[test]
    fn id_tools_and_others_match_sekha() {
        for s in [
            input_schema::<MemoryUpdateArgs>(),
            input_schema::<MemoryGetContextArgs>(),
            input_schema::<MemoryExportArgs>(),
        ] {
            assert_eq!(s["required"], json!(["conversation_id"]));
            let id = prop(&s, "conversation_id");
            assert_eq!(id["type"], "string");
            assert_eq!(id["minLength"], 1);
            assert_eq!(id["pattern"], r"^[a-f0-9\-]{36}$");
        }
        let u = input_schema::<MemoryUpdateArgs>();
        assert_eq!(prop(&u, "label")["type"], "string");
        assert_eq!(prop(&u, "importance_score")["maximum"], 10.0);
        assert_eq!(prop(&u, "status")["enum"], json!(["active", "archived"]));
        let e = input_schema::<MemoryExportArgs>();
        assert_eq!(prop(&e, "format")["enum"], json!(["json", "markdown"]));
        assert_eq!(prop(&e, "format")["default"], "json");
        assert_eq!(prop(&e, "include_metadata")["type"], "boolean");
        assert_eq!(prop(&e, "include_metadata")["default"], true);
        let p = input_schema::<MemoryPruneArgs>();
        assert_eq!(p["required"], json!([]));
        assert_eq!(prop(&p, "threshold_days")["default"], 30);
        assert_eq!(prop(&p, "threshold_days")["minimum"], 1);
        assert_eq!(prop(&p, "threshold_days")["maximum"], 365);
        assert_eq!(prop(&p, "importance_threshold")["type"], "number");
        let st = input_schema::<MemoryStatsArgs>();
        assert_eq!(st["required"], json!([]));
        assert_eq!(prop(&st, "folder")["type"], "string");
        assert_eq!(prop(&st, "folder")["pattern"], r"^/[a-zA-Z0-9_\-/]*$");
    }
}
