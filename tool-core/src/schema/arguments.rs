//! Arguments as the model sends them, made to fit the canonical schema.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::common::{AllOf, MAX_DEPTH, plain_schema, resolve};
use crate::tool::JsonObject;

/// The `null`s a model sent for optional properties that do not admit `null`, at any depth,
/// to remove so they count as left out.
///
/// OpenAI's strict mode makes every property required and the optional ones nullable, so a
/// model under strict mode sends `"opacity": null` where it means "not given". For a field
/// like `#[serde(default)] opacity: f64` the canonical schema (and serde) reject `null`;
/// once dropped the field is absent and takes its default. A `null` for a required property,
/// or for one whose schema admits `null` (an `Option`), is kept.
///
/// Worked out once per parameters schema: which optional properties do not admit `null`, and
/// where in nested objects and arrays they are. Applying it walks only those places; for a
/// schema where every optional property admits `null` (all `Option`s, say) it does nothing at
/// all.
#[derive(Clone, Debug, Default)]
pub(crate) struct OptionalNulls {
    /// `nodes[0]` is the root object; empty when there is nothing to drop anywhere.
    nodes: Vec<Node>,
}

/// One plain schema (behind `$ref`s and `Option` unions) that has `null`s to drop at or
/// below it. A value of that schema is handled by what it is: an object loses its `drop`
/// properties and descends into `properties`, an array descends into `items`.
#[derive(Clone, Debug, Default)]
struct Node {
    drop: Vec<String>,
    properties: Vec<(String, usize)>,
    items: Option<usize>,
}

impl OptionalNulls {
    /// Works out the `null`s to drop for arguments of `parameters` (an object schema; any
    /// other schema gives an empty set). Recursive `$ref`s are followed once.
    pub(crate) fn for_schema(parameters: &Value) -> Self {
        let mut builder = Builder {
            root: parameters,
            nodes: Vec::new(),
            seen: HashMap::new(),
        };
        if builder.node(parameters, 0).is_none() {
            return Self::default();
        }
        let mut nodes = builder.nodes;
        // A node has work if it drops something or leads to a node that does; recursion
        // makes this a fixed point.
        let mut work: Vec<bool> = nodes.iter().map(|node| !node.drop.is_empty()).collect();
        loop {
            let mut changed = false;
            for (index, node) in nodes.iter().enumerate() {
                if !work[index]
                    && (node.properties.iter().any(|&(_, child)| work[child])
                        || node.items.is_some_and(|child| work[child]))
                {
                    work[index] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        if !work[0] {
            return Self::default();
        }
        for node in &mut nodes {
            node.properties.retain(|&(_, child)| work[child]);
            node.items = node.items.filter(|&child| work[child]);
        }
        Self { nodes }
    }

    /// Whether there is no `null` to drop for this schema, so [`drop_from`](Self::drop_from)
    /// does nothing.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Removes, in `args`, the `null`s of optional properties that do not admit `null`.
    pub(crate) fn drop_from(&self, args: &mut JsonObject) {
        if !self.nodes.is_empty() {
            self.object(0, args, 0);
        }
    }

    fn object(&self, index: usize, map: &mut JsonObject, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let node = &self.nodes[index];
        let is_dropped = |name: &String, value: &Value| value.is_null() && node.drop.contains(name);
        if map.iter().any(|(name, value)| is_dropped(name, value)) {
            map.retain(|name, value| !is_dropped(name, value));
        }
        for (name, child) in &node.properties {
            if let Some(value) = map.get_mut(name) {
                self.value(*child, value, depth + 1);
            }
        }
    }

    fn value(&self, index: usize, value: &mut Value, depth: usize) {
        match value {
            Value::Object(map) => self.object(index, map, depth),
            Value::Array(items) => {
                if let Some(child) = self.nodes[index].items {
                    for item in items {
                        self.value(child, item, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

struct Builder<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    /// Plain schemas already given a node, by address, so a recursive `$ref` closes a loop.
    seen: HashMap<*const Map<String, Value>, usize>,
}

impl<'a> Builder<'a> {
    fn node(&mut self, schema: &'a Value, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        let map = plain(self.root, schema)?;
        if let Some(&index) = self.seen.get(&std::ptr::from_ref(map)) {
            return Some(index);
        }
        let index = self.nodes.len();
        self.nodes.push(Node::default());
        self.seen.insert(std::ptr::from_ref(map), index);
        if let Some(Value::Object(properties)) = map.get("properties") {
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, property) in properties {
                if !required.contains(&name.as_str()) && !admits_null(self.root, property, 0) {
                    self.nodes[index].drop.push(name.clone());
                }
                if let Some(child) = self.node(property, depth + 1) {
                    self.nodes[index].properties.push((name.clone(), child));
                }
            }
        }
        if let Some(items) = map.get("items") {
            self.nodes[index].items = self.node(items, depth + 1);
        }
        Some(index)
    }
}

/// The schema behind `$ref`s and a nullable single-branch union (`Option<T>`), if it is one
/// plain schema.
fn plain<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Map<String, Value>> {
    plain_schema(root, schema, AllOf::Stop).map(|(map, _)| map)
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

/// Drops the optional `null`s of `args`, working the schema out on every call.
#[cfg(test)]
pub(crate) fn drop_optional_nulls(parameters: &Value, args: &mut JsonObject) {
    if args.values().any(contains_null) {
        OptionalNulls::for_schema(parameters).drop_from(args);
    }
}

#[cfg(test)]
fn contains_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(contains_null),
        Value::Object(map) => map.values().any(contains_null),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::fixtures::recursive_node;

    #[test]
    fn a_null_for_an_optional_field_that_rejects_null_is_dropped() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": { "type": "string" },
                "days": { "type": "integer", "default": 1 },
                "unit": { "type": ["string", "null"] }
            },
            "required": ["city"]
        });
        let mut args = json!({ "city": "Paris", "days": null, "unit": null });
        drop_optional_nulls(&schema, args.as_object_mut().unwrap());
        assert_eq!(args, json!({ "city": "Paris", "unit": null }));
    }

    #[test]
    fn the_plan_worked_out_once_drops_the_same_nulls() {
        let schema = json!({
            "type": "object",
            "properties": { "days": { "type": "integer", "default": 1 } }
        });
        let nulls = OptionalNulls::for_schema(&schema);
        assert!(!nulls.is_empty());
        let mut args = json!({ "days": null });
        nulls.drop_from(args.as_object_mut().unwrap());
        assert_eq!(args, json!({}));
    }

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
    fn recursive_schemas_are_followed_at_every_depth() {
        let args = run(
            recursive_node(),
            json!({
                "weight": null,
                "children": [{ "weight": null, "children": [{ "weight": 3, "children": [{ "weight": null }] }] }]
            }),
        );
        assert_eq!(
            args,
            json!({ "children": [{ "children": [{ "weight": 3, "children": [{}] }] }] })
        );
    }

    #[test]
    fn schemas_whose_optional_properties_all_admit_null_have_nothing_to_drop() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "address": { "$ref": "#/$defs/Address" },
                "tags": { "type": "array", "items": { "type": "string" } }
            },
            "required": ["name", "address", "tags"],
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": { "zip": { "type": ["string", "null"] } }
                }
            }
        });
        assert!(OptionalNulls::for_schema(&schema).is_empty());
        let with_default = json!({
            "type": "object",
            "properties": { "inner": { "$ref": "#/$defs/Inner" } },
            "required": ["inner"],
            "$defs": { "Inner": { "type": "object", "properties": { "n": { "type": "integer" } } } }
        });
        assert!(!OptionalNulls::for_schema(&with_default).is_empty());
        assert!(OptionalNulls::for_schema(&json!(true)).is_empty());
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
