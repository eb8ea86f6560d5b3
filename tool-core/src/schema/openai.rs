//! The OpenAI adapter: the canonical schema minus `$schema` and the root `title`, and the
//! opt-in strict form.
//!
//! Strict mode ([structured outputs](https://platform.openai.com/docs/guides/structured-outputs#supported-schemas))
//! accepts a subset of JSON Schema, which [`strict_parameters`] produces:
//!
//! - The root is an object, not a union.
//! - Every object has `additionalProperties: false` and lists every property in `required`;
//!   a property that was optional becomes nullable (`"type": ["T", "null"]`, or an `anyOf`
//!   with a `null` branch), so the model sends `null` where it would have left it out.
//! - `$defs` and `$ref` (recursion included) stay; a `$ref` with sibling keywords becomes an
//!   `anyOf` of one branch, since strict mode allows no siblings beside `$ref`.
//! - `oneOf` becomes `anyOf`; an `allOf` of one schema is unwrapped.
//! - Supported keywords pass: `pattern`, the string `format`s `date-time`, `time`, `date`,
//!   `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`, `multipleOf`, `minimum`,
//!   `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minItems`, `maxItems`, `enum`,
//!   `const`, `description`, `title`. The numeric formats schemars writes (`int32`, `uint8`, …)
//!   go (`uint32` leaves `maximum: 4294967295`); `default`, `minLength`, `maxLength`,
//!   `uniqueItems`, `minProperties`, `maxProperties`, `examples`, other formats and patterns
//!   with look-around move into the description.
//! - What strict mode cannot express is an error naming the place: maps
//!   (`additionalProperties` with a schema), free-form objects, values of any type, tuples,
//!   `allOf` of several schemas, `not`, `if`/`then`/`else`, `patternProperties`, … and
//!   schemas over OpenAI's size limits (5,000 properties, 10 levels of object nesting, 1,000
//!   enum values, 120,000 characters of names and enum values).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::common::{
    MAX_DEPTH, NumericFormat, append_notes, at, child, compact, describe, numeric_format, resolve,
};

/// The string formats strict mode accepts.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords that give a schema a type; a schema with none of them accepts any JSON value.
const TYPE_BEARING: &[&str] = &["type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"];

/// OpenAI's documented limits for strict schemas.
const MAX_PROPERTIES: usize = 5_000;
const MAX_NESTING: usize = 10;
const MAX_ENUM_VALUES: usize = 1_000;
const MAX_TOTAL_CHARS: usize = 120_000;
const LARGE_ENUM: usize = 250;
const MAX_LARGE_ENUM_CHARS: usize = 15_000;

/// The canonical schema as OpenAI (and Anthropic, and Ollama) take it, without the Rust-only
/// numeric formats.
pub(super) fn parameters(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
        root.remove("title");
    }
    super::common::drop_rust_formats(&mut schema);
    schema
}

/// The schema in the form OpenAI's `strict: true` accepts, or why the tool cannot be strict.
pub(super) fn strict_parameters(tool: &str, schema: &Value) -> Result<Value, String> {
    let Some(root) = schema.as_object() else {
        return Err("the parameters schema is not an object".to_owned());
    };
    if root.contains_key("anyOf") || root.contains_key("oneOf") {
        return Err(
            "the parameters are a union (`anyOf`/`oneOf`) at the root; strict mode needs a plain object root"
                .to_owned(),
        );
    }
    // A root `$ref` would turn into a one-branch `anyOf` at the root, which strict mode
    // rejects: put the target itself at the root (its `$defs` entry stays for other uses).
    let inlined;
    let schema = match root.get("$ref") {
        Some(Value::String(reference)) => {
            let Some(target) = resolve(schema, reference)?.as_object() else {
                return Err(format!(
                    "`$ref` `{reference}` at the root is not an object schema"
                ));
            };
            let mut merged = target.clone();
            merged.extend(
                root.iter()
                    .filter(|(key, _)| key.as_str() != "$ref")
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
            inlined = Value::Object(merged);
            &inlined
        }
        _ => schema,
    };
    let strict = Strict { tool, root: schema };
    let converted = strict.convert(schema, "", 0, true)?;
    check_limits(&converted)?;
    Ok(converted)
}

struct Strict<'a> {
    tool: &'a str,
    root: &'a Value,
}

impl Strict<'_> {
    // One arm per JSON Schema keyword: the table of what strict mode keeps, rewrites and notes.
    #[allow(clippy::too_many_lines)]
    fn convert(
        &self,
        schema: &Value,
        path: &str,
        depth: usize,
        root: bool,
    ) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "at {}: the schema nests more than {MAX_DEPTH} levels deep",
                at(path)
            ));
        }
        let Value::Object(schema) = schema else {
            return Err(format!(
                "at {}: a schema that accepts any JSON value cannot be strict; give it a type",
                at(path)
            ));
        };
        let mut source = schema.clone();
        source.remove("$schema");
        if root {
            source.remove("title");
        }
        if !TYPE_BEARING.iter().any(|key| source.contains_key(*key))
            && !source.contains_key("properties")
        {
            return Err(format!(
                "at {}: a schema that accepts any JSON value cannot be strict; give it a type",
                at(path)
            ));
        }

        // `allOf` of one schema is that schema; of several it is an intersection strict mode
        // has no keyword for.
        if let Some(all_of) = source.remove("allOf") {
            match all_of {
                Value::Array(mut branches) if branches.len() == 1 => match branches.remove(0) {
                    Value::Object(branch) if branch.contains_key("$ref") && branch.len() == 1 => {
                        source.insert(
                            "anyOf".to_owned(),
                            Value::Array(vec![Value::Object(branch)]),
                        );
                    }
                    Value::Object(branch) => {
                        for (key, value) in branch {
                            if source.contains_key(&key) {
                                return Err(format!(
                                    "at {}: `allOf` repeats `{key}` and cannot be unwrapped",
                                    at(path)
                                ));
                            }
                            source.insert(key, value);
                        }
                    }
                    _ => return Err(format!("at {}: `allOf` must hold schemas", at(path))),
                },
                _ => {
                    return Err(format!(
                        "at {}: `allOf` (a value matching several schemas at once) is not supported by strict mode",
                        at(path)
                    ));
                }
            }
        }

        let mut out = Map::new();
        let mut notes = Vec::new();

        if let Some(reference) = source.remove("$ref") {
            let Value::String(text) = &reference else {
                return Err(format!("at {}: `$ref` must be a string", at(path)));
            };
            resolve(self.root, text).map_err(|error| format!("at {}: {error}", at(path)))?;
            let mut bare = Map::new();
            bare.insert("$ref".to_owned(), reference);
            if source.is_empty() {
                return Ok(Value::Object(bare));
            }
            if source.contains_key("anyOf") || source.contains_key("oneOf") {
                return Err(format!(
                    "at {}: `$ref` beside `anyOf` cannot be strict",
                    at(path)
                ));
            }
            // Strict mode allows no keywords beside `$ref`, but does beside `anyOf`.
            source.insert("anyOf".to_owned(), Value::Array(vec![Value::Object(bare)]));
        }

        let union = match (source.remove("anyOf"), source.remove("oneOf")) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "at {}: `anyOf` and `oneOf` together cannot be strict",
                    at(path)
                ));
            }
            (Some(union), None) => Some(union),
            (None, Some(union)) => {
                self.debug(path, "oneOf", "rewritten as `anyOf`");
                Some(union)
            }
            (None, None) => None,
        };
        if let Some(union) = union {
            let Value::Array(branches) = union else {
                return Err(format!("at {}: `anyOf`/`oneOf` must be an array", at(path)));
            };
            let mut converted = Vec::with_capacity(branches.len());
            for (index, branch) in branches.iter().enumerate() {
                let branch_path = child(path, &format!("anyOf/{index}"));
                converted.push(self.convert(branch, &branch_path, depth + 1, false)?);
            }
            out.insert("anyOf".to_owned(), Value::Array(converted));
        }

        let kinds: Vec<String> = match source.get("type") {
            Some(Value::String(kind)) => vec![kind.clone()],
            Some(Value::Array(kinds)) => kinds
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ if source.contains_key("properties") => vec!["object".to_owned()],
            _ => Vec::new(),
        };
        if kinds.iter().any(|kind| kind == "object") {
            self.object(&mut source, &mut out, path, depth, root)?;
        }
        if kinds.iter().any(|kind| kind == "array") {
            self.array(&mut source, &mut out, path, depth)?;
        }

        // Sorted, so the notes come out in the same order whether or not serde_json keeps
        // insertion order.
        let mut keywords: Vec<(String, Value)> = source.into_iter().collect();
        keywords.sort_by(|(a, _), (b, _)| a.cmp(b));
        for (key, value) in keywords {
            match key.as_str() {
                "type" | "description" | "title" | "multipleOf" | "minimum" | "maximum"
                | "exclusiveMinimum" | "exclusiveMaximum" | "minItems" | "maxItems" | "enum"
                | "const" => {
                    out.insert(key, value);
                }
                "pattern" => match value {
                    Value::String(pattern) if has_lookaround(&pattern) => {
                        notes.push(format!("must match the pattern {pattern}"));
                        self.debug(path, &key, "look-around moved into the description");
                    }
                    pattern => {
                        out.insert(key, pattern);
                    }
                },
                "format" => {
                    let Value::String(format) = value else {
                        continue;
                    };
                    match numeric_format(&format, false) {
                        NumericFormat::Drop => self.debug(path, &key, "dropped"),
                        NumericFormat::DropWithMaximum(maximum) => {
                            out.entry("maximum").or_insert(Value::from(maximum));
                            self.debug(path, &key, "replaced by `maximum`");
                        }
                        _ if STRICT_FORMATS.contains(&format.as_str()) => {
                            out.insert(key, Value::String(format));
                        }
                        _ => {
                            notes.push(format!("format: {format}"));
                            self.debug(path, &key, "moved into the description");
                        }
                    }
                }
                "default" | "deprecated" | "maxLength" | "maxProperties" | "minLength"
                | "minProperties" | "uniqueItems" => {
                    let what = describe(&mut notes, &key, &value);
                    self.debug(path, &key, what);
                }
                "examples" => {
                    notes.push(format!("examples: {}", compact(&value)));
                    self.debug(path, &key, "moved into the description");
                }
                "$defs" if root => {
                    let Value::Object(definitions) = value else {
                        return Err("`$defs` must be an object".to_owned());
                    };
                    let defs_path = child(path, "$defs");
                    let mut converted = Map::new();
                    for (name, definition) in &definitions {
                        let definition_path = child(&defs_path, name);
                        converted.insert(
                            name.clone(),
                            self.convert(definition, &definition_path, depth + 1, false)?,
                        );
                    }
                    out.insert(key, Value::Object(converted));
                }
                "$id" | "$comment" | "$anchor" | "readOnly" | "writeOnly" | "propertyNames" => {
                    self.debug(path, &key, "dropped");
                }
                other => {
                    return Err(format!(
                        "at {}: `{other}` is not supported by strict mode",
                        at(path)
                    ));
                }
            }
        }
        append_notes(&mut out, &notes);
        Ok(Value::Object(out))
    }

    /// Closes an object: `additionalProperties: false`, every property required, the optional
    /// ones nullable.
    fn object(
        &self,
        source: &mut Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        depth: usize,
        root: bool,
    ) -> Result<(), String> {
        if source.remove("patternProperties").is_some() {
            return Err(format!(
                "at {}: an object with `patternProperties` (keys not known in advance) cannot be strict",
                at(path)
            ));
        }
        let properties = source.remove("properties");
        match source.remove("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                return Err(format!(
                    "at {}: a free-form object (`additionalProperties: true`) cannot be strict; strict mode needs every key listed in `properties`",
                    at(path)
                ));
            }
            Some(_) => {
                return Err(format!(
                    "at {}: a map (`additionalProperties` with a schema, e.g. a `HashMap`) cannot be strict; strict mode needs every key listed in `properties`",
                    at(path)
                ));
            }
        }
        let properties = match properties {
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err(format!("at {}: `properties` must be an object", at(path))),
            // A tool without parameters is `{"type": "object"}`; anywhere else an object with
            // no properties listed is free-form.
            None if root => Map::new(),
            None => {
                return Err(format!(
                    "at {}: a free-form object (no `properties`) cannot be strict",
                    at(path)
                ));
            }
        };
        let required: BTreeSet<String> = match source.remove("required") {
            Some(Value::Array(names)) => names
                .into_iter()
                .filter_map(|name| match name {
                    Value::String(name) => Some(name),
                    _ => None,
                })
                .collect(),
            _ => BTreeSet::new(),
        };
        let properties_path = child(path, "properties");
        let mut converted = Map::new();
        for (name, property) in &properties {
            let property_path = child(&properties_path, name);
            let mut strict = self.convert(property, &property_path, depth + 1, false)?;
            if !required.contains(name) {
                strict = nullable(strict);
            }
            converted.insert(name.clone(), strict);
        }
        let mut all: Vec<String> = converted.keys().cloned().collect();
        all.sort();
        let all: Vec<Value> = all.into_iter().map(Value::String).collect();
        out.insert("properties".to_owned(), Value::Object(converted));
        out.insert("required".to_owned(), Value::Array(all));
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
        Ok(())
    }

    fn array(
        &self,
        source: &mut Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        if source.contains_key("prefixItems") {
            return Err(format!(
                "at {}: a tuple (`prefixItems`) cannot be strict; use a struct",
                at(path)
            ));
        }
        match source.remove("items") {
            Some(items @ Value::Object(_)) => {
                let items = self.convert(&items, &child(path, "items"), depth + 1, false)?;
                out.insert("items".to_owned(), items);
                Ok(())
            }
            _ => Err(format!(
                "at {}: an array without a typed `items` schema cannot be strict",
                at(path)
            )),
        }
    }

    fn debug(&self, path: &str, keyword: &str, what: &str) {
        tracing::debug!(
            tool = self.tool,
            path = at(path),
            keyword,
            "openai strict schema: {what}"
        );
    }
}

/// The schema, also admitting `null` (an optional field made required).
fn nullable(schema: Value) -> Value {
    let Value::Object(mut schema) = schema else {
        return schema;
    };
    if is_nullable(&schema) {
        return Value::Object(schema);
    }
    if !schema.contains_key("const") {
        let kinds = match schema.get("type") {
            Some(Value::String(kind)) => Some(vec![Value::String(kind.clone())]),
            Some(Value::Array(kinds)) => Some(kinds.clone()),
            _ => None,
        };
        if let Some(mut kinds) = kinds {
            kinds.push(Value::String("null".to_owned()));
            schema.insert("type".to_owned(), Value::Array(kinds));
            if let Some(Value::Array(values)) = schema.get_mut("enum") {
                values.push(Value::Null);
            }
            return Value::Object(schema);
        }
    }
    if let Some(Value::Array(branches)) = schema.get_mut("anyOf") {
        branches.push(null_schema());
        return Value::Object(schema);
    }
    // Anything else (a bare `$ref`, a `const`, an untyped `enum`) goes in a union with null;
    // the annotations stay outside.
    let mut outer = Map::new();
    for key in ["description", "title"] {
        if let Some(value) = schema.remove(key) {
            outer.insert(key.to_owned(), value);
        }
    }
    outer.insert(
        "anyOf".to_owned(),
        Value::Array(vec![Value::Object(schema), null_schema()]),
    );
    Value::Object(outer)
}

fn null_schema() -> Value {
    let mut schema = Map::new();
    schema.insert("type".to_owned(), Value::String("null".to_owned()));
    Value::Object(schema)
}

fn is_nullable(schema: &Map<String, Value>) -> bool {
    let null_type = match schema.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        _ => false,
    };
    let null_branch = schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| branches.iter().any(super::common::is_null_schema));
    null_type || null_branch || schema.get("const") == Some(&Value::Null)
}

fn has_lookaround(pattern: &str) -> bool {
    ["(?=", "(?!", "(?<=", "(?<!"]
        .iter()
        .any(|token| pattern.contains(token))
}

/// Checks OpenAI's size limits on a strict schema.
fn check_limits(schema: &Value) -> Result<(), String> {
    let mut totals = Totals::default();
    totals.walk(schema);
    if let Some(Value::Object(definitions)) = schema.get("$defs") {
        totals.chars += definitions
            .keys()
            .map(|name| name.chars().count())
            .sum::<usize>();
    }
    if totals.properties > MAX_PROPERTIES {
        return Err(format!(
            "the schema has {} properties; strict mode allows at most {MAX_PROPERTIES}",
            totals.properties
        ));
    }
    if totals.enum_values > MAX_ENUM_VALUES {
        return Err(format!(
            "the schema has {} enum values; strict mode allows at most {MAX_ENUM_VALUES}",
            totals.enum_values
        ));
    }
    if let Some(chars) = totals.large_enum_chars {
        return Err(format!(
            "an enum of more than {LARGE_ENUM} values has {chars} characters of values; strict mode allows at most {MAX_LARGE_ENUM_CHARS}"
        ));
    }
    if totals.chars > MAX_TOTAL_CHARS {
        return Err(format!(
            "the schema's property names, definition names and enum values add up to {} characters; strict mode allows at most {MAX_TOTAL_CHARS}",
            totals.chars
        ));
    }
    let nesting = nesting(schema, schema, &mut Vec::new());
    if nesting > MAX_NESTING {
        return Err(format!(
            "objects nest {nesting} levels deep; strict mode allows at most {MAX_NESTING}"
        ));
    }
    Ok(())
}

#[derive(Default)]
struct Totals {
    properties: usize,
    enum_values: usize,
    chars: usize,
    large_enum_chars: Option<usize>,
}

impl Totals {
    fn walk(&mut self, schema: &Value) {
        let Value::Object(schema) = schema else {
            return;
        };
        if let Some(Value::Object(properties)) = schema.get("properties") {
            self.properties += properties.len();
            for (name, property) in properties {
                self.chars += name.chars().count();
                self.walk(property);
            }
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            self.enum_values += values.len();
            let chars: usize = values
                .iter()
                .filter_map(Value::as_str)
                .map(|v| v.chars().count())
                .sum();
            self.chars += chars;
            if values.len() > LARGE_ENUM && chars > MAX_LARGE_ENUM_CHARS {
                self.large_enum_chars = Some(chars);
            }
        }
        if let Some(Value::String(value)) = schema.get("const") {
            self.chars += value.chars().count();
        }
        if let Some(items) = schema.get("items") {
            self.walk(items);
        }
        if let Some(Value::Array(branches)) = schema.get("anyOf") {
            for branch in branches {
                self.walk(branch);
            }
        }
        if let Some(Value::Object(definitions)) = schema.get("$defs") {
            definitions
                .values()
                .for_each(|definition| self.walk(definition));
        }
    }
}

/// How many objects nest inside each other (the root object is level 1), following `$ref`s
/// but not around a recursion.
fn nesting(root: &Value, schema: &Value, refs: &mut Vec<String>) -> usize {
    let Value::Object(map) = schema else {
        return 0;
    };
    if refs.len() > MAX_DEPTH {
        return 0;
    }
    let mut deepest = 0;
    if let Some(Value::String(reference)) = map.get("$ref") {
        if !refs.contains(reference) {
            if let Ok(target) = resolve(root, reference) {
                refs.push(reference.clone());
                deepest = deepest.max(nesting(root, target, refs));
                refs.pop();
            }
        }
    }
    if let Some(items) = map.get("items") {
        deepest = deepest.max(nesting(root, items, refs));
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for branch in branches {
            deepest = deepest.max(nesting(root, branch, refs));
        }
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let inner = properties
            .values()
            .map(|property| nesting(root, property, refs))
            .max()
            .unwrap_or(0);
        deepest = deepest.max(inner + 1);
    }
    deepest
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strict(schema: Value) -> Value {
        super::super::common::sorted(strict_parameters("test", &schema).unwrap())
    }

    fn strict_error(schema: Value) -> String {
        strict_parameters("test", &schema).unwrap_err()
    }

    #[test]
    fn optional_fields_become_required_and_nullable() {
        let converted = strict(json!({
            "title": "Args",
            "type": "object",
            "properties": {
                "city": { "type": "string" },
                "days": { "type": "integer", "format": "uint8", "minimum": 0, "maximum": 255, "default": 3 },
                "unit": { "type": ["string", "null"], "enum": ["c", "f", null] },
                "kind": { "enum": ["a", "b"] }
            },
            "required": ["city"]
        }));
        assert_eq!(
            converted,
            json!({
                "type": "object",
                "properties": {
                    "city": { "type": "string" },
                    "days": { "type": ["integer", "null"], "minimum": 0, "maximum": 255, "description": "default: 3" },
                    "unit": { "type": ["string", "null"], "enum": ["c", "f", null] },
                    "kind": { "anyOf": [{ "enum": ["a", "b"] }, { "type": "null" }] }
                },
                "required": ["city", "days", "kind", "unit"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn nullable_enums_admit_null_in_the_enum_too() {
        let converted = strict(json!({
            "type": "object",
            "properties": { "unit": { "type": "string", "enum": ["c", "f"] } }
        }));
        assert_eq!(
            converted["properties"]["unit"],
            json!({ "type": ["string", "null"], "enum": ["c", "f", null] })
        );
    }

    #[test]
    fn refs_with_siblings_become_a_one_branch_any_of() {
        let converted = strict(json!({
            "type": "object",
            "properties": {
                "at": { "$ref": "#/$defs/Point", "description": "Where." },
                "maybe": { "$ref": "#/$defs/Point" }
            },
            "required": ["at"],
            "$defs": {
                "Point": { "type": "object", "properties": { "x": { "type": "number" } }, "required": ["x"] }
            }
        }));
        assert_eq!(
            converted["properties"]["at"],
            json!({ "anyOf": [{ "$ref": "#/$defs/Point" }], "description": "Where." })
        );
        assert_eq!(
            converted["properties"]["maybe"],
            json!({ "anyOf": [{ "$ref": "#/$defs/Point" }, { "type": "null" }] })
        );
        assert_eq!(
            converted["$defs"]["Point"],
            json!({
                "type": "object",
                "properties": { "x": { "type": "number" } },
                "required": ["x"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn recursive_refs_are_allowed() {
        let converted = strict(json!({
            "type": "object",
            "properties": { "root": { "$ref": "#/$defs/Node" } },
            "required": ["root"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": { "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } } },
                    "required": ["children"]
                }
            }
        }));
        assert_eq!(
            converted["$defs"]["Node"]["properties"]["children"]["items"],
            json!({ "$ref": "#/$defs/Node" })
        );
    }

    #[test]
    fn one_of_becomes_any_of() {
        let converted = strict(json!({
            "type": "object",
            "properties": { "shape": { "oneOf": [{ "type": "string", "enum": ["dot"] }, { "type": "integer" }] } },
            "required": ["shape"]
        }));
        assert_eq!(
            converted["properties"]["shape"],
            json!({ "anyOf": [{ "type": "string", "enum": ["dot"] }, { "type": "integer" }] })
        );
    }

    #[test]
    fn maps_cannot_be_strict() {
        let error = strict_error(json!({
            "type": "object",
            "properties": { "scores": { "type": "object", "additionalProperties": { "type": "integer" } } },
            "required": ["scores"]
        }));
        assert!(error.contains("at /properties/scores"), "{error}");
        assert!(error.contains("a map"), "{error}");
    }

    #[test]
    fn untyped_values_tuples_and_unions_at_the_root_cannot_be_strict() {
        let any = strict_error(json!({ "type": "object", "properties": { "v": {} } }));
        assert!(any.contains("any JSON value"), "{any}");
        let tuple = strict_error(json!({
            "type": "object",
            "properties": { "t": { "type": "array", "prefixItems": [{ "type": "string" }], "items": false } }
        }));
        assert!(tuple.contains("tuple"), "{tuple}");
        let union = strict_error(json!({ "type": "object", "oneOf": [{ "type": "object" }] }));
        assert!(union.contains("root"), "{union}");
        let not = strict_error(
            json!({ "type": "object", "properties": { "s": { "type": "string", "not": { "const": "x" } } } }),
        );
        assert!(not.contains("`not` is not supported"), "{not}");
    }

    #[test]
    fn unsupported_constraints_move_into_the_description() {
        let converted = strict(json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "minLength": 1, "maxLength": 20, "description": "Name." },
                "id": { "type": "string", "format": "uuid" },
                "ip": { "type": "string", "format": "ip" },
                "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true, "maxItems": 5 }
            },
            "required": ["name", "id", "ip", "tags"]
        }));
        assert_eq!(
            converted["properties"]["name"]["description"],
            "Name. (at most 20 characters; at least 1 character)"
        );
        assert_eq!(
            converted["properties"]["id"],
            json!({ "type": "string", "format": "uuid" })
        );
        assert_eq!(
            converted["properties"]["ip"],
            json!({ "type": "string", "description": "format: ip" })
        );
        assert_eq!(
            converted["properties"]["tags"],
            json!({ "type": "array", "items": { "type": "string" }, "maxItems": 5, "description": "items must be unique" })
        );
    }

    #[test]
    fn a_root_ref_is_inlined_at_the_root() {
        let converted = strict(json!({
            "$ref": "#/$defs/Args",
            "type": "object",
            "$defs": {
                "Args": { "type": "object", "properties": { "q": { "type": "string" } }, "required": ["q"] }
            }
        }));
        assert_eq!(
            converted["properties"],
            json!({ "q": { "type": "string" } })
        );
        assert_eq!(converted["additionalProperties"], false);
        assert!(converted.get("anyOf").is_none());
    }

    #[test]
    fn a_single_all_of_is_unwrapped() {
        let converted = strict(json!({
            "type": "object",
            "properties": {
                "p": { "allOf": [{ "$ref": "#/$defs/P" }], "description": "A p." },
                "q": { "allOf": [{ "type": "string" }] }
            },
            "required": ["p", "q"],
            "$defs": { "P": { "type": "string" } }
        }));
        assert_eq!(
            converted["properties"],
            json!({
                "p": { "anyOf": [{ "$ref": "#/$defs/P" }], "description": "A p." },
                "q": { "type": "string" }
            })
        );
        let error = strict_error(json!({
            "type": "object",
            "properties": { "r": { "allOf": [{ "type": "string" }, { "minLength": 1 }] } }
        }));
        assert!(error.contains("`allOf`"), "{error}");
    }

    #[test]
    fn a_tool_without_parameters_is_an_empty_closed_object() {
        assert_eq!(
            strict(json!({ "type": "object" })),
            json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false })
        );
    }

    #[test]
    fn limits_are_checked() {
        let properties: Map<String, Value> = (0..5_001)
            .map(|i| (format!("p{i}"), json!({ "type": "string" })))
            .collect();
        let error = strict_error(json!({ "type": "object", "properties": properties }));
        assert!(error.contains("5001 properties"), "{error}");

        let mut deep = json!({ "type": "string" });
        for _ in 0..11 {
            deep = json!({ "type": "object", "properties": { "a": deep }, "required": ["a"] });
        }
        let error = strict_error(deep);
        assert!(error.contains("11 levels"), "{error}");
    }
}
