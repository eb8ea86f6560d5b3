//! Whether a typed tool's arguments can hold an object whose keys the schema does not name: a
//! map, a JSON value, a flattened map. Such an object keeps one of a key's values when the text
//! gives the key twice, where a struct's `Deserialize` (serde's derive) refuses a field given
//! twice; so only such a schema needs the text scanned for repeated keys before the tool reads
//! it (see `ArgumentChecks::start_text`).

use serde_json::{Map, Value};

use super::common::{MAX_DEPTH, resolve};

/// Whether a value of `schema` can hold, anywhere, an object whose keys the schema does not
/// name: an object schema with `additionalProperties` other than `false`, one with neither
/// `properties` nor anything else that says what it is (`{"type": "object"}`), a schema that
/// takes any value (`true`, `{}`), or a keyword this walk does not follow (`patternProperties`,
/// `if`, `not`, a reference it cannot resolve, nesting deeper than schema walks go): when
/// unsure, `true`.
///
/// An object schema with `properties` and no `additionalProperties` is what schemars writes for
/// a struct, whose derived `Deserialize` refuses a field given twice and ignores keys it does
/// not know; `additionalProperties: false` is a struct that refuses them too.
pub(crate) fn takes_unnamed_keys(schema: &Value) -> bool {
    Walk {
        root: schema,
        followed: Vec::new(),
    }
    .open(schema, 0)
}

struct Walk<'a> {
    root: &'a Value,
    /// The references already followed: a recursive type's schema is a loop of them.
    followed: Vec<&'a str>,
}

/// Keywords whose subschemas say what the value must be, each walked.
const SUBSCHEMAS: &[&str] = &["additionalItems", "contains", "items", "unevaluatedItems"];

/// Keywords whose subschemas are alternatives or conjuncts of the schema itself.
const BRANCHES: &[&str] = &["allOf", "anyOf", "oneOf"];

/// Keywords no Rust type's schema holds, about keys or conditions: the walk is unsure.
const UNSURE: &[&str] = &[
    "$dynamicRef",
    "$recursiveRef",
    "dependencies",
    "dependentSchemas",
    "else",
    "if",
    "not",
    "patternProperties",
    "propertyNames",
    "then",
];

impl<'a> Walk<'a> {
    fn open(&mut self, schema: &'a Value, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return true;
        }
        let map = match schema {
            Value::Object(map) => map,
            // `true` takes any value; `false` none.
            Value::Bool(any) => return *any,
            _ => return true,
        };
        if own_keys_open(map) {
            return true;
        }
        for (key, value) in map {
            let key = key.as_str();
            let open = match key {
                "properties" => match value {
                    Value::Object(properties) => properties
                        .values()
                        .any(|property| self.open(property, depth + 1)),
                    _ => true,
                },
                "prefixItems" => match value {
                    Value::Array(items) => items.iter().any(|item| self.open(item, depth + 1)),
                    _ => true,
                },
                "unevaluatedProperties" => value != &Value::Bool(false),
                "$ref" => self.reference(value, depth),
                // An array of branches, or (`items` in older drafts) of tuple items.
                key if BRANCHES.contains(&key) || SUBSCHEMAS.contains(&key) => match value {
                    Value::Array(branches) => {
                        branches.iter().any(|branch| self.open(branch, depth + 1))
                    }
                    other => self.open(other, depth + 1),
                },
                key if UNSURE.contains(&key) => true,
                // Annotations, types, constraints on values, `$defs` (walked through
                // references only), `additionalProperties` (see `own_keys_open`).
                _ => false,
            };
            if open {
                return true;
            }
        }
        false
    }

    /// Whether the schema a `$ref` points to is open; a reference followed before is not
    /// walked again (the walk stops at the first open object, so it was not).
    fn reference(&mut self, reference: &'a Value, depth: usize) -> bool {
        let Some(reference) = reference.as_str() else {
            return true;
        };
        if self.followed.contains(&reference) {
            return false;
        }
        self.followed.push(reference);
        match resolve(self.root, reference) {
            Ok(target) => self.open(target, depth + 1),
            Err(_) => true,
        }
    }
}

/// Whether the object schema `map` itself takes keys it does not name: it admits an object
/// (its `type` is absent or includes `"object"`) and neither names its keys (`properties`)
/// nor leaves what it is to a reference, branches or a list of values.
///
/// `additionalProperties: false` is a struct that refuses unknown keys only beside `required`
/// keys: schemars writes a map whose keys are an enum's names (`HashMap<Color, u32>`) as
/// `properties` with `additionalProperties: false`, and never with `required`.
fn own_keys_open(map: &Map<String, Value>) -> bool {
    let admits_object = match map.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        // No type, or one this walk does not read.
        _ => true,
    };
    if !admits_object {
        return false;
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(false)) => map
            .get("required")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty),
        Some(_) => true,
        None => {
            let said_elsewhere = ["properties", "$ref", "enum", "const"]
                .iter()
                .chain(BRANCHES)
                .any(|keyword| map.contains_key(*keyword));
            !said_elsewhere
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;

    fn of<T: JsonSchema>() -> bool {
        takes_unnamed_keys(&crate::schema::schema_for::<T>())
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Address {
        street: String,
        zip: Option<u32>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum Kind {
        Small,
        Large { size: u32 },
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Plain {
        city: String,
        days: u8,
        tags: Vec<String>,
        note: Option<String>,
        pair: (i64, bool),
        address: Address,
        addresses: Vec<Address>,
        maybe_address: Option<Address>,
        kind: Kind,
        #[serde(flatten)]
        flattened: Address2,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Address2 {
        country: String,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Closed {
        name: String,
    }

    #[test]
    fn structs_enums_lists_and_options_name_every_key() {
        assert!(!of::<Plain>());
        assert!(!of::<Tree>());
        assert!(!of::<Closed>());
        // What a tool without parameters states (`__private::empty_schema`).
        assert!(!takes_unnamed_keys(
            &json!({"type": "object", "properties": {}})
        ));
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct WithMap {
        labels: BTreeMap<String, String>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct WithValue {
        data: serde_json::Value,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct WithOptionalValue {
        data: Option<serde_json::Value>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct WithFlattenedMap {
        name: String,
        #[serde(flatten)]
        extra: HashMap<String, i64>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct WithMapsInAList {
        rows: Vec<HashMap<String, String>>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Deep {
        inner: Vec<Option<DeepInner>>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct DeepInner {
        pair: (String, serde_json::Map<String, serde_json::Value>),
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum Color {
        Red,
        Blue,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct WithEnumKeys {
        name: String,
        counts: HashMap<Color, u32>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct WithIntegerKeys {
        counts: BTreeMap<u32, u32>,
    }

    #[test]
    fn maps_values_and_flattened_maps_anywhere_take_unnamed_keys() {
        // Written as `properties` and `additionalProperties: false`, as a closed struct is.
        let schema = crate::schema::schema_for::<WithEnumKeys>();
        let counts = &schema["properties"]["counts"];
        assert_eq!(counts["additionalProperties"], json!(false), "{schema}");
        assert!(counts["properties"]["Red"].is_object(), "{schema}");
        assert!(of::<WithEnumKeys>());
        assert!(of::<WithIntegerKeys>());
        assert!(of::<WithMap>());
        assert!(of::<WithValue>());
        assert!(of::<WithOptionalValue>());
        assert!(of::<WithFlattenedMap>());
        assert!(of::<WithMapsInAList>());
        assert!(of::<Deep>());
        assert!(of::<HashMap<String, String>>());
    }

    #[test]
    fn hand_written_schemas_that_leave_keys_open_or_unsure_take_them() {
        for schema in [
            json!({"type": "object"}),
            json!({}),
            json!(true),
            json!({"properties": {"a": {}}}),
            json!({"properties": {"a": {"type": "object"}}}),
            json!({"properties": {"a": {"type": ["object", "null"]}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "object"}}}}),
            json!({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
            json!({"properties": {"a": {"type": "string"}}, "additionalProperties": true}),
            json!({"properties": {"a": {"type": "string"}}, "patternProperties": {"^x": {}}}),
            json!({"properties": {"a": {"type": "string"}}, "unevaluatedProperties": true}),
            json!({"properties": {"a": {"$ref": "#/$defs/Missing"}}}),
            json!({"properties": {"a": {"$ref": "https://example.com/a.json"}}}),
            json!({"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}),
            json!({"properties": {"a": {"if": {"type": "string"}}}}),
            json!({"properties": {"a": 7}}),
            json!({"properties": [1]}),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            json!({"properties": {"a": {}}, "required": [], "additionalProperties": false}),
        ] {
            assert!(takes_unnamed_keys(&schema), "{schema}");
        }
    }

    #[test]
    fn hand_written_schemas_that_name_every_key_do_not() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!({
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["a"],
                "additionalProperties": false
            }),
            json!({"properties": {"a": {"type": ["string", "null"]}, "b": false}}),
            json!({"properties": {"a": {"enum": [1, 2]}, "b": {"const": "x"}}}),
            json!({
                "properties": {"next": {"$ref": "#/$defs/Node"}},
                "$defs": {
                    "Node": {"properties": {"next": {"$ref": "#/$defs/Node"}}},
                    "Unused": {"type": "object"}
                }
            }),
            json!({"properties": {"a": {"type": "array", "items": {"type": "integer"}}}}),
        ] {
            assert!(!takes_unnamed_keys(&schema), "{schema}");
        }
    }

    #[test]
    fn nesting_deeper_than_the_walk_goes_is_unsure() {
        let mut schema = json!({"type": "string"});
        for _ in 0..=MAX_DEPTH + 1 {
            schema = json!({"properties": {"a": schema}});
        }
        assert!(takes_unnamed_keys(&schema));
    }
}
