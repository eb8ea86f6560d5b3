//! The output schema as Anthropic's structured outputs take it (`output_config.format`,
//! <https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations>).
//!
//! Anthropic compiles the schema into a grammar and refuses what the grammar cannot hold:
//! numeric bounds (`minimum`, `maximum`, the exclusive ones, `multipleOf`), string lengths and
//! patterns, array bounds other than `minItems` of 0 or 1, string formats outside its list, and
//! objects that are not closed. The adapter keeps what it accepts, moves the rest into the
//! description as notes (so the model still reads them; the agent's own validation against the
//! full schema still checks them), closes every object with `additionalProperties: false`
//! (a map's value schema becomes a note) and turns `oneOf` into `anyOf`. Keys are sorted.

use serde_json::{Map, Value};

use super::common::{MAX_DEPTH, append_notes, at, child, compact, describe, show, sorted};

/// The string formats Anthropic's structured outputs accept.
const FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// `schema` in the form Anthropic's `output_config.format` accepts; `name` names it in logs.
pub(crate) fn output_schema(name: &str, schema: &Value) -> Value {
    let canonical = super::openai::parameters(schema);
    sorted(Adapter { name }.convert(&canonical, "", 0))
}

struct Adapter<'a> {
    name: &'a str,
}

impl Adapter<'_> {
    // One arm per JSON Schema keyword: the table of what Anthropic keeps, rewrites and notes.
    fn convert(&self, schema: &Value, path: &str, depth: usize) -> Value {
        let Value::Object(source) = schema else {
            return schema.clone();
        };
        if depth > MAX_DEPTH {
            return schema.clone();
        }
        let mut out = Map::new();
        let mut notes = Vec::new();
        let is_object = source.contains_key("properties")
            || match source.get("type") {
                Some(Value::String(kind)) => kind == "object",
                Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
                _ => false,
            };
        let mut keywords: Vec<(&String, &Value)> = source.iter().collect();
        keywords.sort_by_key(|(keyword, _)| *keyword);
        for (keyword, value) in keywords {
            let here = child(path, keyword);
            match keyword.as_str() {
                "type" | "description" | "title" | "enum" | "const" | "required" | "$ref" => {
                    out.insert(keyword.clone(), value.clone());
                }
                "properties" | "$defs" | "definitions" => {
                    out.insert(keyword.clone(), self.members(value, &here, depth));
                }
                "items" => {
                    out.insert(keyword.clone(), self.convert(value, &here, depth + 1));
                }
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                    let keyword = if keyword == "oneOf" {
                        self.debug(path, keyword, "renamed to anyOf");
                        "anyOf"
                    } else {
                        keyword.as_str()
                    };
                    out.insert(keyword.to_owned(), self.branches(value, &here, depth));
                }
                "additionalProperties" => {
                    if let Some(note) = open_note(value) {
                        notes.push(note);
                        self.debug(path, keyword, "closed; noted in the description");
                    }
                }
                "format" => match value.as_str() {
                    Some(format) if FORMATS.contains(&format) => {
                        out.insert(keyword.clone(), value.clone());
                    }
                    _ => {
                        notes.push(format!("format: {}", show(value)));
                        self.debug(path, keyword, "moved into the description");
                    }
                },
                "minItems" if value.as_u64().is_some_and(|count| count <= 1) => {
                    out.insert(keyword.clone(), value.clone());
                }
                "minItems" | "maxItems" | "minimum" | "maximum" | "exclusiveMinimum"
                | "exclusiveMaximum" | "pattern" => {
                    notes.push(bound_note(keyword, value));
                    self.debug(path, keyword, "moved into the description");
                }
                _ => {
                    let what = describe(&mut notes, keyword, value);
                    if what == "dropped" {
                        tracing::warn!(
                            tool = self.name,
                            path = at(path),
                            keyword,
                            "anthropic output schema: unknown keyword dropped"
                        );
                    } else {
                        self.debug(path, keyword, what);
                    }
                }
            }
        }
        if is_object {
            out.insert("additionalProperties".to_owned(), Value::Bool(false));
        }
        append_notes(&mut out, &notes);
        Value::Object(out)
    }

    /// The schemas of `properties` or `$defs`, each converted.
    fn members(&self, value: &Value, path: &str, depth: usize) -> Value {
        match value {
            Value::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(key, member)| {
                        let at = child(path, key);
                        (key.clone(), self.convert(member, &at, depth + 1))
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The schemas of `anyOf`, `allOf` or `prefixItems`, each converted.
    fn branches(&self, value: &Value, path: &str, depth: usize) -> Value {
        match value {
            Value::Array(branches) => Value::Array(
                branches
                    .iter()
                    .enumerate()
                    .map(|(index, branch)| {
                        let at = child(path, &index.to_string());
                        self.convert(branch, &at, depth + 1)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn debug(&self, path: &str, keyword: &str, what: &str) {
        tracing::debug!(
            tool = self.name,
            path = at(path),
            keyword,
            "anthropic output schema: {what}"
        );
    }
}

/// The note that says what an object's `additionalProperties` allowed before it was closed,
/// if anything.
fn open_note(value: &Value) -> Option<String> {
    if value == true || value.as_object().is_some_and(Map::is_empty) {
        Some("other keys allowed".to_owned())
    } else if value == false {
        None
    } else {
        Some(format!(
            "other keys allowed, with values: {}",
            compact(value)
        ))
    }
}

/// The note for a bound Anthropic does not take: `must be >= 1`, `at most 3 items`.
fn bound_note(keyword: &str, value: &Value) -> String {
    let value = show(value);
    match keyword {
        "minItems" => format!("at least {value} items"),
        "maxItems" => format!("at most {value} items"),
        "minimum" => format!("must be >= {value}"),
        "maximum" => format!("must be <= {value}"),
        "exclusiveMinimum" => format!("must be > {value}"),
        "exclusiveMaximum" => format!("must be < {value}"),
        _ => format!("must match the pattern {value}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bounds_move_into_the_description_and_objects_close() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Trip",
            "type": "object",
            "properties": {
                "city": { "type": "string", "minLength": 2, "description": "Where." },
                "nights": { "type": ["integer", "null"], "format": "uint32", "minimum": 1 },
                "tags": { "type": "array", "items": { "type": "string" }, "minItems": 1, "maxItems": 3 },
                "when": { "type": "string", "format": "date" },
                "extra": { "type": "object", "additionalProperties": { "type": "integer" } },
                "kind": { "oneOf": [{ "const": "a" }, { "const": "b" }] }
            },
            "required": ["city"]
        });
        assert_eq!(
            output_schema("trip", &schema),
            json!({
                "type": "object",
                "properties": {
                    "city": { "type": "string", "description": "Where. (at least 2 characters)" },
                    "nights": {
                        "type": ["integer", "null"],
                        "description": "must be <= 4294967295; must be >= 1"
                    },
                    "tags": {
                        "type": "array",
                        "items": { "type": "string" },
                        "minItems": 1,
                        "description": "at most 3 items"
                    },
                    "when": { "type": "string", "format": "date" },
                    "extra": {
                        "type": "object",
                        "additionalProperties": false,
                        "description": "other keys allowed, with values: {\"type\":\"integer\"}"
                    },
                    "kind": { "anyOf": [{ "const": "a" }, { "const": "b" }] }
                },
                "required": ["city"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn an_open_object_is_closed_and_nested_definitions_too() {
        let schema = json!({
            "type": "object",
            "properties": { "stay": { "$ref": "#/$defs/Stay" } },
            "additionalProperties": true,
            "$defs": {
                "Stay": { "type": "object", "properties": { "n": { "type": "integer", "maximum": 9 } } }
            }
        });
        assert_eq!(
            output_schema("trip", &schema),
            json!({
                "type": "object",
                "properties": { "stay": { "$ref": "#/$defs/Stay" } },
                "additionalProperties": false,
                "description": "other keys allowed",
                "$defs": {
                    "Stay": {
                        "type": "object",
                        "properties": { "n": { "type": "integer", "description": "must be <= 9" } },
                        "additionalProperties": false
                    }
                }
            })
        );
    }
}
