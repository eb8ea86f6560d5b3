//! Helpers the adapters share: `$ref` lookup, notes appended to descriptions, numeric formats
//! and the stable key order of the output.

use serde_json::{Map, Value};

/// How deep a schema may nest before an adapter gives up (a guard against pathological input,
/// far beyond what any provider accepts).
pub(super) const MAX_DEPTH: usize = 64;

/// Keywords whose subschemas are alternatives or conjuncts of the schema itself: schemars
/// writes them for Rust enums, `Option`s and flattened structs.
pub(super) const BRANCHES: &[&str] = &["allOf", "anyOf", "oneOf"];

/// The subschemas under a keyword that holds either one schema or an array of them (the
/// branches of `anyOf`, or `items` as a tuple in older drafts).
pub(super) fn one_or_many(value: &Value) -> &[Value] {
    match value {
        Value::Array(schemas) => schemas,
        schema => std::slice::from_ref(schema),
    }
}

/// Looks up a local `$ref` (`#`, `#/$defs/Name` or any JSON pointer into the root document).
pub(super) fn resolve<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, String> {
    let Some(pointer) = reference.strip_prefix('#') else {
        return Err(format!(
            "`$ref` `{reference}` points outside the schema; only local references (`#/...`) are supported"
        ));
    };
    root.pointer(pointer)
        .ok_or_else(|| format!("`$ref` `{reference}` points to nothing in the schema"))
}

/// How [`plain_schema`] treats a lone `allOf` branch.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum AllOf {
    /// Follow it when the schema has no `type` or `properties` of its own (how schemars 0.8
    /// describes a `$ref`: `{"description": .., "allOf": [{"$ref": ..}]}`).
    FollowLone,
    /// Stop there.
    Stop,
}

/// The one plain schema behind `$ref`s and nullable single-branch unions (`Option<T>`:
/// `anyOf`/`oneOf` of a schema and `null`), and whether such a union admitted `null`. `None`
/// for a union of several non-null schemas, a reference to nothing, a schema that is not an
/// object, or a chain of more than [`MAX_DEPTH`] steps (a loop of references).
pub(super) fn plain_schema<'a>(
    root: &'a Value,
    mut schema: &'a Value,
    all_of: AllOf,
) -> Option<(&'a Map<String, Value>, bool)> {
    let mut nullable = false;
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
            let mut non_null = branches.iter().filter(|branch| !is_null_schema(branch));
            let (Some(single), None) = (non_null.next(), non_null.next()) else {
                return None;
            };
            nullable |= branches.len() > 1;
            schema = single;
            continue;
        }
        if all_of == AllOf::FollowLone
            && !map.contains_key("type")
            && !map.contains_key("properties")
        {
            if let Some(Value::Array(branches)) = map.get("allOf") {
                if let [single] = branches.as_slice() {
                    schema = single;
                    continue;
                }
            }
        }
        return Some((map, nullable));
    }
    None
}

/// Appends notes to a schema's description: `"{description} ({note}; {note})"`, or the notes
/// alone when there is no description. Used for constraints a provider cannot express as
/// keywords, so the model still reads them.
pub(super) fn append_notes(schema: &mut Map<String, Value>, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let joined = notes.join("; ");
    let description = match schema.get("description").and_then(Value::as_str) {
        Some(description) if !description.trim().is_empty() => {
            format!("{} ({joined})", description.trim_end())
        }
        _ => joined,
    };
    schema.insert("description".to_owned(), Value::String(description));
}

/// What an adapter does with a numeric `format` schemars emits.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum NumericFormat {
    /// A format the provider knows (`int32`, `int64`, `float`, `double`).
    Keep,
    /// Replace it with another format the provider knows.
    Rename(&'static str),
    /// Drop it: the bounds schemars writes beside it (`minimum`/`maximum`) already say all it
    /// means, or the range it adds is beyond any value a model would send.
    Drop,
    /// Drop it, stating its upper bound as `maximum` (for `uint32`).
    DropWithMaximum(u64),
    /// Not a numeric format.
    NotNumeric,
}

/// Classifies a numeric format for a provider that knows `int32`, `int64`, `float` and
/// `double` (Gemini) or none of them (`known = false`, OpenAI strict).
pub(super) fn numeric_format(format: &str, known: bool) -> NumericFormat {
    match format {
        "int32" | "int64" | "float" | "double" if known => NumericFormat::Keep,
        "int" if known => NumericFormat::Rename("int64"),
        "uint32" => NumericFormat::DropWithMaximum(u64::from(u32::MAX)),
        "int32" | "int64" | "float" | "double" | "int" | "int8" | "int16" | "uint8" | "uint16"
        | "uint64" | "uint128" | "int128" | "uint" => NumericFormat::Drop,
        _ => NumericFormat::NotNumeric,
    }
}

/// Removes the numeric `format` values schemars writes for Rust types (`int64`, `uint32`,
/// `double`, `uint8`, ...) from every subschema of `schema`, in place: strict JSON Schema
/// validators refuse formats they do not know. The bounds such a format implies stay (schemars
/// writes `minimum`/`maximum` beside the small ones; `uint32` gets `maximum: 4294967295` when it
/// has none). Standard formats (`date-time`, `uri`, `email`, ...) are kept. The walk is bounded
/// by [`MAX_DEPTH`].
pub(crate) fn drop_rust_formats(schema: &mut Value) {
    drop_rust_formats_at(schema, 0);
}

fn drop_rust_formats_at(schema: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format") {
                match numeric_format(format, false) {
                    NumericFormat::Drop => {
                        map.remove("format");
                    }
                    NumericFormat::DropWithMaximum(maximum) => {
                        map.remove("format");
                        map.entry("maximum").or_insert(Value::from(maximum));
                    }
                    NumericFormat::Keep | NumericFormat::Rename(_) | NumericFormat::NotNumeric => {}
                }
            }
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    // Maps from names to schemas: a property may be called `const`.
                    (
                        "properties" | "patternProperties" | "$defs" | "definitions",
                        Value::Object(schemas),
                    ) => {
                        for schema in schemas.values_mut() {
                            drop_rust_formats_at(schema, depth + 1);
                        }
                    }
                    // Values that are data, not schemas, keep their contents as they are.
                    ("const" | "enum" | "default" | "examples", _) => {}
                    (_, value) => drop_rust_formats_at(value, depth + 1),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                drop_rust_formats_at(item, depth + 1);
            }
        }
        _ => {}
    }
}

/// Whether a (sub)schema only admits `null`: `{"type":"null"}`, `{"const":null}` or
/// `{"enum":[null]}`.
pub(super) fn is_null_schema(schema: &Value) -> bool {
    let Some(schema) = schema.as_object() else {
        return false;
    };
    match (schema.get("type"), schema.get("const"), schema.get("enum")) {
        (Some(Value::String(kind)), _, _) => kind == "null",
        (None, Some(Value::Null), _) => true,
        (None, None, Some(Value::Array(values))) => values.iter().all(Value::is_null),
        _ => false,
    }
}

/// Moves a keyword the provider cannot keep into the description `notes`, for the keywords
/// whose meaning fits in a few words: `default`, `minLength`, `maxLength`, `minProperties`,
/// `maxProperties`, `multipleOf`, `propertyNames`, `patternProperties`, and the flags
/// `uniqueItems` and `deprecated` (which say nothing when `false`). Returns what became of the
/// keyword, for the log; any other keyword is dropped.
pub(super) fn describe(notes: &mut Vec<String>, keyword: &str, value: &Value) -> &'static str {
    let note = match keyword {
        "default" => Some(format!("default: {}", compact(value))),
        "minLength" => Some(format!("at least {}", characters(value))),
        "maxLength" => Some(format!("at most {}", characters(value))),
        "minProperties" => Some(format!("at least {value} properties")),
        "maxProperties" => Some(format!("at most {value} properties")),
        "multipleOf" => Some(format!("must be a multiple of {}", show(value))),
        "propertyNames" => Some(format!("each key: {}", compact(value))),
        "patternProperties" => Some(format!(
            "keys matching a pattern, with values: {}",
            compact(value)
        )),
        "uniqueItems" => (value == true).then(|| "items must be unique".to_owned()),
        "deprecated" => (value == true).then(|| "deprecated".to_owned()),
        _ => None,
    };
    match note {
        Some(note) => {
            notes.push(note);
            "moved into the description"
        }
        None => "dropped",
    }
}

/// A string length for a note: `1 character`, `3 characters`.
fn characters(count: &Value) -> String {
    if count.as_u64() == Some(1) {
        "1 character".to_owned()
    } else {
        format!("{count} characters")
    }
}

/// A short rendering of a JSON value for a description note: strings as written, everything
/// else as compact JSON.
pub(super) fn show(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => compact(other),
    }
}

/// Compact JSON with sorted keys, for notes: the same text whatever order the map kept.
pub(super) fn compact(value: &Value) -> String {
    sorted(value.clone()).to_string()
}

/// Rebuilds every object with its keys in sorted order, so the output is byte-identical from
/// one conversion to the next whether or not `serde_json` keeps insertion order
/// (`preserve_order`), and provider prompt caches hit.
pub(super) fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.cmp(b));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, sorted(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Appends a path segment to a JSON pointer, escaping `~` and `/`.
pub(super) fn child(path: &str, segment: &str) -> String {
    let escaped = segment.replace('~', "~0").replace('/', "~1");
    format!("{path}/{escaped}")
}

/// The path for error messages: the root is `/`.
pub(super) fn at(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

/// A short rendering of a JSON value for error messages.
pub(crate) fn excerpt(value: &Value) -> String {
    const LIMIT: usize = 80;
    let text = value.to_string();
    if text.len() <= LIMIT {
        return text;
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn notes_are_appended_in_parentheses() {
        let mut schema = json!({ "description": "How many days." });
        let Value::Object(map) = &mut schema else {
            unreachable!()
        };
        append_notes(map, &["must be > 0".to_owned(), "format: uuid".to_owned()]);
        assert_eq!(
            schema["description"],
            "How many days. (must be > 0; format: uuid)"
        );

        let mut bare = Map::new();
        append_notes(&mut bare, &["must be > 0".to_owned()]);
        assert_eq!(bare["description"], "must be > 0");
    }

    #[test]
    fn sorted_orders_keys_at_every_level() {
        let value = sorted(json!({ "b": { "z": 1, "a": [ { "y": 0, "x": 0 } ] }, "a": 0 }));
        assert_eq!(
            value.to_string(),
            r#"{"a":0,"b":{"a":[{"x":0,"y":0}],"z":1}}"#
        );
    }

    #[test]
    fn local_refs_resolve_and_others_fail() {
        let root = json!({ "$defs": { "A": { "type": "string" }, "a/b": { "type": "integer" } } });
        assert_eq!(resolve(&root, "#/$defs/A").unwrap()["type"], "string");
        assert_eq!(resolve(&root, "#/$defs/a~1b").unwrap()["type"], "integer");
        assert_eq!(resolve(&root, "#"), Ok(&root));
        assert_eq!(
            resolve(&root, "#/$defs/B").unwrap_err(),
            "`$ref` `#/$defs/B` points to nothing in the schema"
        );
        assert_eq!(
            resolve(&root, "https://example.com/s.json").unwrap_err(),
            "`$ref` `https://example.com/s.json` points outside the schema; only local \
             references (`#/...`) are supported"
        );
    }

    #[test]
    fn null_schemas_are_recognised() {
        assert!(is_null_schema(&json!({ "type": "null" })));
        assert!(is_null_schema(&json!({ "const": null })));
        assert!(is_null_schema(&json!({ "enum": [null] })));
        assert!(!is_null_schema(&json!({ "type": "string" })));
        assert!(!is_null_schema(&json!({ "enum": ["a", null] })));
    }

    #[test]
    fn rust_formats_go_and_their_bounds_stay() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                "big": {"type": "integer", "format": "int64"},
                "id": {"type": "integer", "format": "uint32", "minimum": 0},
                "ratio": {"type": ["number", "null"], "format": "double"},
                "when": {"type": "string", "format": "date-time"},
                "site": {"type": "string", "format": "uri"},
                "format": {"type": "string", "format": "email"},
                "const": {"const": {"format": "int64"}},
                "list": {"type": "array", "items": {"type": "number", "format": "float"}}
            },
            "$defs": {"Inner": {"anyOf": [{"type": "integer", "format": "uint"}, {"type": "null"}]}}
        });
        drop_rust_formats(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "minimum": 0, "maximum": 255},
                    "big": {"type": "integer"},
                    "id": {"type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64},
                    "ratio": {"type": ["number", "null"]},
                    "when": {"type": "string", "format": "date-time"},
                    "site": {"type": "string", "format": "uri"},
                    "format": {"type": "string", "format": "email"},
                    "const": {"const": {"format": "int64"}},
                    "list": {"type": "array", "items": {"type": "number"}}
                },
                "$defs": {"Inner": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}
            })
        );
    }
}
