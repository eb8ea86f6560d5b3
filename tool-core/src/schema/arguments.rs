//! Arguments as the model sends them, made to fit the canonical schema.

use serde_json::{Map, Value};

use super::common::{MAX_DEPTH, resolve};
use crate::tool::JsonObject;

/// Removes the `null`s a model sent for optional properties that do not admit `null`, at any
/// depth, so they count as left out.
///
/// OpenAI's strict mode makes every property required and the optional ones nullable, so a
/// model under strict mode sends `"opacity": null` where it means "not given". For a field
/// like `#[serde(default)] opacity: f64` the canonical schema (and serde) reject `null`;
/// after this call the field is absent and takes its default. A `null` for a required
/// property, or for one whose schema admits `null` (an `Option`), is kept. Arguments without
/// any `null` are left untouched at the cost of one scan.
///
/// ```
/// use serde_json::json;
/// use tool_core::schema::drop_optional_nulls;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "city": { "type": "string" },
///         "days": { "type": "integer", "default": 1 },
///         "unit": { "type": ["string", "null"] }
///     },
///     "required": ["city"]
/// });
/// let mut args = json!({ "city": "Paris", "days": null, "unit": null });
/// drop_optional_nulls(&schema, args.as_object_mut().unwrap());
/// assert_eq!(args, json!({ "city": "Paris", "unit": null }));
/// ```
pub fn drop_optional_nulls(parameters: &Value, args: &mut JsonObject) {
    if args.values().any(contains_null) {
        object(parameters, parameters, args, 0);
    }
}

fn contains_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(contains_null),
        Value::Object(map) => map.values().any(contains_null),
        _ => false,
    }
}

fn object(root: &Value, schema: &Value, args: &mut JsonObject, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(schema) = plain(root, schema) else {
        return;
    };
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return;
    };
    let required = |name: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|n| n == name))
    };
    args.retain(|name, value| {
        let optional_non_null = value.is_null()
            && !required(name)
            && properties
                .get(name)
                .is_some_and(|property| !admits_null(root, property, 0));
        !optional_non_null
    });
    for (name, value) in args.iter_mut() {
        if let Some(property) = properties.get(name) {
            descend(root, property, value, depth + 1);
        }
    }
}

fn descend(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    match value {
        Value::Object(map) if map.values().any(contains_null) => object(root, schema, map, depth),
        Value::Array(items) => {
            let Some(items_schema) = plain(root, schema).and_then(|schema| schema.get("items"))
            else {
                return;
            };
            for item in items {
                descend(root, items_schema, item, depth + 1);
            }
        }
        _ => {}
    }
}

/// The schema behind `$ref`s and a nullable single-branch union (`Option<T>`), if it is one
/// plain schema.
fn plain<'a>(root: &'a Value, mut schema: &'a Value) -> Option<&'a Map<String, Value>> {
    for _ in 0..MAX_DEPTH {
        let map = schema.as_object()?;
        if let Some(Value::String(reference)) = map.get("$ref") {
            schema = resolve(root, reference).ok()?;
            continue;
        }
        let union = map
            .get("anyOf")
            .or_else(|| map.get("oneOf"))
            .and_then(Value::as_array);
        if let Some(branches) = union {
            let mut non_null = branches
                .iter()
                .filter(|branch| !super::common::is_null_schema(branch));
            match (non_null.next(), non_null.next()) {
                (Some(single), None) => {
                    schema = single;
                    continue;
                }
                _ => return None,
            }
        }
        return Some(map);
    }
    None
}

/// Whether `null` may be valid for a schema (erring towards yes: then the `null` is kept and
/// validation decides).
fn admits_null(root: &Value, schema: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    let Some(map) = schema.as_object() else {
        return schema != &Value::Bool(false);
    };
    if let Some(Value::String(reference)) = map.get("$ref") {
        return resolve(root, reference)
            .map_or(true, |target| admits_null(root, target, depth + 1));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            return branches
                .iter()
                .any(|branch| admits_null(root, branch, depth + 1));
        }
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.iter().any(Value::is_null);
    }
    if let Some(value) = map.get("const") {
        return value.is_null();
    }
    match map.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(schema: Value, args: Value) -> Value {
        let mut args = args;
        drop_optional_nulls(&schema, args.as_object_mut().unwrap());
        args
    }

    #[test]
    fn nested_optional_nulls_are_dropped_through_refs_and_options() {
        let schema = json!({
            "type": "object",
            "properties": {
                "event": { "anyOf": [{ "$ref": "#/$defs/Event" }, { "type": "null" }] },
                "list": { "type": "array", "items": { "$ref": "#/$defs/Event" } }
            },
            "$defs": {
                "Event": {
                    "type": "object",
                    "properties": {
                        "title": { "type": "string" },
                        "limit": { "type": "integer", "default": 5 },
                        "note": { "anyOf": [{ "type": "string" }, { "type": "null" }] }
                    },
                    "required": ["title"]
                }
            }
        });
        let args = run(
            schema,
            json!({
                "event": { "title": "a", "limit": null, "note": null },
                "list": [{ "title": "b", "limit": null }, { "title": "c", "limit": 2 }]
            }),
        );
        assert_eq!(
            args,
            json!({
                "event": { "title": "a", "note": null },
                "list": [{ "title": "b" }, { "title": "c", "limit": 2 }]
            })
        );
    }

    #[test]
    fn required_and_unknown_nulls_are_kept_for_validation_to_judge() {
        let schema = json!({
            "type": "object",
            "properties": { "city": { "type": "string" }, "any": {} },
            "required": ["city"]
        });
        let args = run(schema, json!({ "city": null, "any": null, "extra": null }));
        assert_eq!(args, json!({ "city": null, "any": null, "extra": null }));
    }
}
