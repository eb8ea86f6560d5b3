//! Lenient arguments: values of the wrong JSON type read as the type the schema asks for, where
//! the schema leaves no doubt about what was meant.
//!
//! Small models drift on types: they send `"30"` for an integer, a JSON object written out as a
//! string, or one tag where a list of tags is expected. Strict validation then fails the call,
//! although the meaning is plain. The registry applies [`coerce_arguments`] to the tools that
//! opt in (see [`ToolMetadata::lenient_arguments`](crate::ToolMetadata::lenient_arguments) and
//! [`RegistryOptions::lenient_arguments`](crate::RegistryOptions::lenient_arguments)), before
//! validation, and reports each change as a [`Coercion`].

use std::fmt::{self, Write as _};

use serde::Serialize;
use serde_json::{Map, Number, Value};

use super::common::{AllOf, MAX_DEPTH, plain_schema};
use crate::tool::JsonObject;

/// One value read as another type than the model sent, with where and how.
///
/// `Display` reads `at /days: "30" read as the integer 30`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Coercion {
    /// Where the value is in the arguments, as a JSON pointer (`/days`, `/events/0/title`).
    pub path: String,
    /// The value as the model sent it, as JSON text (shortened when long): `"30"`.
    pub from: String,
    /// What it was read as: `the integer 30`, `the number 2.5`, `the boolean true`,
    /// `an object`, `an array` or `a one-element array`.
    pub to: String,
}

impl fmt::Display for Coercion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {} read as {}", self.path, self.from, self.to)
    }
}

/// Reads values of the wrong type as the type `parameters` asks for, in place, and returns what
/// was changed, in the order the walk meets the values (depth first, keys in the order the
/// arguments' map keeps them).
///
/// A value is changed only when its schema rules out its type and names the type that was
/// meant (through `$ref`s to `#/$defs/..` or `#/definitions/..`, `type` arrays such as
/// `["integer", "null"]`, and `anyOf`/`oneOf` of one schema and `null`, as schemars writes for
/// `Option`):
///
/// - a string holding JSON text of an expected type is parsed: `"{\"a\":1}"` for an object,
///   `"[1,2]"` for an array, `"30"` for an integer, `"2.5"` for a number, `"true"` for a
///   boolean;
/// - a number with no fractional part (`30.0`) becomes an integer where only integers are
///   expected;
/// - a single value (not `null`) where an array is expected becomes a one-element array, and
///   that element is then read against the items' schema.
///
/// Everything else is left as it is, so validation still reports it. Objects and arrays are
/// walked at every depth (`properties`, `additionalProperties`, `items`, `prefixItems`); a
/// union of several non-null schemas (a Rust enum with data) is not looked into, since which
/// branch was meant is not known. The walk visits each value of `args` once.
///
/// ```
/// use serde_json::json;
/// use tool_core::schema::coerce_arguments;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "days": { "type": "integer" },
///         "tags": { "type": "array", "items": { "type": "string" } }
///     }
/// });
/// let mut args = json!({ "days": "30", "tags": "rust" });
/// let coercions = coerce_arguments(&schema, args.as_object_mut().unwrap());
/// assert_eq!(args, json!({ "days": 30, "tags": ["rust"] }));
/// assert_eq!(coercions[0].to_string(), r#"at /days: "30" read as the integer 30"#);
/// assert_eq!(coercions[1].to_string(), r#"at /tags: "rust" read as a one-element array"#);
/// ```
pub fn coerce_arguments(parameters: &Value, args: &mut JsonObject) -> Vec<Coercion> {
    walk(parameters, args).coercions
}

/// The walk behind [`coerce_arguments`], returned whole so tests can count its work.
fn walk<'a>(parameters: &'a Value, args: &mut JsonObject) -> Walker<'a> {
    let mut walker = Walker {
        root: parameters,
        path: String::new(),
        coercions: Vec::new(),
        visits: 0,
    };
    if let Some(shape) = Shape::of(parameters, parameters) {
        walker.object(shape.schema, args, 0);
    }
    walker
}

/// [`coerce_arguments`], logging each coercion with `tracing::info!` (fields `tool`, `path`,
/// `from`, `to`): what the registry runs for a lenient tool.
pub(crate) fn coerce_logged(
    tool: &str,
    parameters: &Value,
    args: &mut JsonObject,
) -> Vec<Coercion> {
    let coercions = coerce_arguments(parameters, args);
    for coercion in &coercions {
        tracing::info!(
            tool,
            path = %coercion.path,
            from = %coercion.from,
            to = %coercion.to,
            "argument read as the type the schema asks for"
        );
    }
    coercions
}

/// JSON types a schema admits, as bits.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: Self = Self(1);
    const BOOLEAN: Self = Self(1 << 1);
    const INTEGER: Self = Self(1 << 2);
    const NUMBER: Self = Self(1 << 3);
    const STRING: Self = Self(1 << 4);
    const ARRAY: Self = Self(1 << 5);
    const OBJECT: Self = Self(1 << 6);

    fn named(name: &str) -> Self {
        match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => Self::default(),
        }
    }

    fn has(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether a value's type is among these. A number with a fractional part, or written as
    /// a float (`30.0`), counts only as a number: a Rust integer field would reject it.
    fn admit(self, value: &Value) -> bool {
        match value {
            Value::Null => self.has(Self::NULL),
            Value::Bool(_) => self.has(Self::BOOLEAN),
            Value::Number(number) if number.is_f64() => self.has(Self::NUMBER),
            Value::Number(_) => self.has(Self::INTEGER.with(Self::NUMBER)),
            Value::String(_) => self.has(Self::STRING),
            Value::Array(_) => self.has(Self::ARRAY),
            Value::Object(_) => self.has(Self::OBJECT),
        }
    }
}

/// A schema seen through `$ref`s and `Option` unions: the plain schema and the types it admits
/// (empty when it names none, and then no value is changed against it).
struct Shape<'a> {
    schema: &'a Map<String, Value>,
    types: Types,
}

impl<'a> Shape<'a> {
    /// The shape of `schema`, or `None` when it is not one plain schema (a union of several
    /// non-null schemas, a reference to nothing, a boolean schema).
    fn of(root: &'a Value, schema: &'a Value) -> Option<Self> {
        let (map, nullable) = plain_schema(root, schema, AllOf::FollowLone)?;
        let named = match map.get("type") {
            Some(Value::String(name)) => Types::named(name),
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(Value::as_str)
                .fold(Types::default(), |types, name| {
                    types.with(Types::named(name))
                }),
            _ => Types::default(),
        };
        // A schema with no `type` admits every type; only a union's `null` is known then,
        // which says nothing about what else was meant.
        let types = if named.is_empty() {
            named
        } else if nullable {
            named.with(Types::NULL)
        } else {
            named
        };
        Some(Self { schema: map, types })
    }
}

struct Walker<'a> {
    root: &'a Value,
    /// The JSON pointer of the value being visited, grown and shrunk in place.
    path: String,
    coercions: Vec<Coercion>,
    /// How many values were looked at: the walk's work, which tests hold to one per value.
    visits: usize,
}

impl<'a> Walker<'a> {
    fn value(&mut self, schema: &'a Value, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        self.visits += 1;
        let Some(shape) = Shape::of(self.root, schema) else {
            return;
        };
        if !shape.types.is_empty() && !shape.types.admit(value) {
            self.coerce(shape.types, value);
        }
        match value {
            Value::Object(map) => self.object(shape.schema, map, depth),
            Value::Array(items) => self.array(shape.schema, items, depth),
            _ => {}
        }
    }

    fn object(&mut self, schema: &'a Map<String, Value>, map: &mut JsonObject, depth: usize) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema
            .get("additionalProperties")
            .filter(|additional| additional.is_object());
        if properties.is_none() && additional.is_none() {
            return;
        }
        for (name, value) in map.iter_mut() {
            let property = properties.and_then(|properties| properties.get(name));
            if let Some(property) = property.or(additional) {
                let len = self.enter(name);
                self.value(property, value, depth + 1);
                self.path.truncate(len);
            }
        }
    }

    fn array(&mut self, schema: &'a Map<String, Value>, items: &mut [Value], depth: usize) {
        // Draft 2020-12 tuples are `prefixItems` then `items`; earlier drafts give `items` as
        // an array, with `additionalItems` after it.
        let (prefix, rest) = match (schema.get("prefixItems"), schema.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), rest),
            (_, Some(Value::Array(prefix))) => (prefix.as_slice(), schema.get("additionalItems")),
            (_, rest) => (&[][..], rest),
        };
        let rest = rest.filter(|rest| rest.is_object());
        if prefix.is_empty() && rest.is_none() {
            return;
        }
        for (index, item) in items.iter_mut().enumerate() {
            if let Some(item_schema) = prefix.get(index).or(rest) {
                let len = self.path.len();
                let _ = write!(self.path, "/{index}");
                self.value(item_schema, item, depth + 1);
                self.path.truncate(len);
            }
        }
    }

    /// Appends a property name to the path, escaped as JSON pointers require; returns the
    /// length to truncate back to.
    fn enter(&mut self, name: &str) -> usize {
        let len = self.path.len();
        self.path.push('/');
        for c in name.chars() {
            match c {
                '~' => self.path.push_str("~0"),
                '/' => self.path.push_str("~1"),
                c => self.path.push(c),
            }
        }
        len
    }

    /// Replaces a value whose type `types` rules out, when it can be read as one they admit.
    fn coerce(&mut self, types: Types, value: &mut Value) {
        if let Value::String(text) = value {
            if let Some(parsed) = parse(types, text) {
                let to = describe(types, &parsed);
                self.record(value, to);
                *value = parsed;
                return;
            }
        }
        if let Value::Number(number) = value {
            if let Some(integer) = integral(types, number) {
                let to = describe(types, &integer);
                self.record(value, to);
                *value = integer;
                return;
            }
        }
        if types.has(Types::ARRAY) && !value.is_null() && !value.is_array() {
            self.record(value, "a one-element array".to_owned());
            *value = Value::Array(vec![value.take()]);
        }
    }

    fn record(&mut self, from: &Value, to: String) {
        self.coercions.push(Coercion {
            path: self.path.clone(),
            from: crate::schema::excerpt(from),
            to,
        });
    }
}

/// The value a string holds as JSON text, when that value (not `null`) is of an admitted type,
/// or is an integral number where integers are admitted.
fn parse(types: Types, text: &str) -> Option<Value> {
    // Cheap early exits: JSON text of a non-string value starts with one of these, after
    // optional whitespace; most strings fail here without a parse.
    let first = text.trim_start().bytes().next()?;
    if !matches!(first, b'{' | b'[' | b'-' | b'0'..=b'9' | b't' | b'f') {
        return None;
    }
    let parsed: Value = serde_json::from_str(text).ok()?;
    if let Value::Number(number) = &parsed {
        if let Some(integer) = integral(types, number) {
            return Some(integer);
        }
    }
    (!parsed.is_null() && !parsed.is_string() && types.admit(&parsed)).then_some(parsed)
}

/// A float with no fractional part as an integer, where integers but not numbers are admitted.
fn integral(types: Types, number: &Number) -> Option<Value> {
    // 2^63 and -2^63 are exact in f64; the casts below are exact for integral floats in range.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !types.has(Types::INTEGER) || types.has(Types::NUMBER) || !number.is_f64() {
        return None;
    }
    let float = number.as_f64()?;
    if float.fract() != 0.0 || !float.is_finite() {
        return None;
    }
    if (-LIMIT..LIMIT).contains(&float) {
        #[allow(clippy::cast_possible_truncation)]
        return Some(Value::from(float as i64));
    }
    if (LIMIT..2.0 * LIMIT).contains(&float) {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        return Some(Value::from(float as u64));
    }
    None
}

/// How a coerced value is described: `the integer 30`, `an object`, ….
fn describe(types: Types, value: &Value) -> String {
    match value {
        Value::Number(number) if !number.is_f64() && types.has(Types::INTEGER) => {
            format!("the integer {number}")
        }
        Value::Number(number) => format!("the number {number}"),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Object(_) => "an object".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        other => crate::schema::excerpt(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::fixtures::recursive_node;

    /// The arguments after coercion and the coercions, as their `Display` texts.
    fn run(schema: &Value, args: Value) -> (Value, Vec<String>) {
        let mut args = args;
        let coercions = coerce_arguments(schema, args.as_object_mut().unwrap());
        (args, coercions.iter().map(ToString::to_string).collect())
    }

    fn schema_of<T: schemars::JsonSchema>() -> Value {
        serde_json::to_value(schemars::schema_for!(T)).unwrap()
    }

    /// Properties of every scalar type, and of none or several.
    fn scalars_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "days": { "type": "integer" },
                "ratio": { "type": "number" },
                "verbose": { "type": "boolean" },
                "limit": { "type": "integer" },
                "big": { "type": "integer" },
                "half": { "type": "integer" },
                "word": { "type": "integer" },
                "name": { "type": "string" },
                "either": { "type": ["string", "integer"] },
                "any": {},
                "nothing": { "type": "integer" },
                "huge": { "type": "integer" },
                "options": { "type": "object" },
                "yes": { "type": "boolean" }
            }
        })
    }

    #[test]
    fn scalars_are_read_as_the_type_the_schema_names() {
        let (args, coercions) = run(
            &scalars_schema(),
            json!({
                "days": "30",
                "ratio": "2.5",
                "verbose": "false",
                "limit": 30.0,
                "big": "18446744073709551615"
            }),
        );
        assert_eq!(
            args,
            json!({
                "days": 30,
                "ratio": 2.5,
                "verbose": false,
                "limit": 30,
                "big": 18_446_744_073_709_551_615_u64
            })
        );
        assert_eq!(
            coercions,
            [
                r#"at /big: "18446744073709551615" read as the integer 18446744073709551615"#,
                r#"at /days: "30" read as the integer 30"#,
                "at /limit: 30.0 read as the integer 30",
                r#"at /ratio: "2.5" read as the number 2.5"#,
                r#"at /verbose: "false" read as the boolean false"#,
            ]
        );
    }

    #[test]
    fn values_that_cannot_be_read_as_meant_are_left_alone() {
        let original = json!({
            "days": "thirty",
            "ratio": "NaN",
            "verbose": "yes",
            "half": 2.5,
            "word": "2.5",
            "name": 42,
            "either": "30",
            "any": "30",
            "nothing": "null",
            "huge": 1e300,
            "options": "[1]",
            "yes": "True",
            "unknown": "30"
        });
        let (args, coercions) = run(&scalars_schema(), original.clone());
        assert_eq!(args, original);
        assert!(coercions.is_empty(), "{coercions:?}");
    }

    #[test]
    fn strings_holding_objects_and_arrays_are_parsed_and_then_walked() {
        let schema = json!({
            "type": "object",
            "properties": {
                "filter": {
                    "type": "object",
                    "properties": { "min": { "type": "integer" } }
                },
                "ids": { "type": "array", "items": { "type": "integer" } }
            }
        });
        let (args, coercions) = run(
            &schema,
            json!({ "filter": "{\"min\": \"3\"}", "ids": " [1, \"2\"] " }),
        );
        assert_eq!(args, json!({ "filter": { "min": 3 }, "ids": [1, 2] }));
        assert_eq!(
            coercions,
            [
                r#"at /filter: "{\"min\": \"3\"}" read as an object"#,
                r#"at /filter/min: "3" read as the integer 3"#,
                r#"at /ids: " [1, \"2\"] " read as an array"#,
                r#"at /ids/1: "2" read as the integer 2"#,
            ]
        );
    }

    #[test]
    fn a_single_value_where_an_array_is_expected_becomes_one_element() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tags": { "type": "array", "items": { "type": "string" } },
                "ids": { "type": "array", "items": { "type": "integer" } },
                "points": {
                    "type": "array",
                    "items": { "type": "object", "properties": { "x": { "type": "integer" } } }
                },
                "none": { "type": "array" }
            }
        });
        let (args, coercions) = run(
            &schema,
            json!({ "tags": "rust", "ids": "7", "points": { "x": "1" }, "none": null }),
        );
        assert_eq!(
            args,
            json!({ "tags": ["rust"], "ids": [7], "points": [{ "x": 1 }], "none": null })
        );
        assert_eq!(
            coercions,
            [
                r#"at /ids: "7" read as a one-element array"#,
                r#"at /ids/0: "7" read as the integer 7"#,
                r#"at /points: {"x":"1"} read as a one-element array"#,
                r#"at /points/0/x: "1" read as the integer 1"#,
                r#"at /tags: "rust" read as a one-element array"#,
            ]
        );
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Trip {
        /// Where to.
        city: String,
        days: u32,
        budget: Option<f64>,
        stops: Vec<Stop>,
        first: Option<Stop>,
        mode: Mode,
        plan: Plan,
        pair: (u8, bool),
        counts: std::collections::BTreeMap<String, i64>,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Stop {
        name: String,
        nights: Option<u8>,
        open: bool,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Mode {
        Train,
        Plane,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Plan {
        Fixed { days: u8 },
        Open(String),
    }

    #[test]
    fn schemars_schemas_are_followed_through_defs_options_vecs_tuples_and_maps() {
        let schema = schema_of::<Trip>();
        let (args, coercions) = run(
            &schema,
            json!({
                "city": "Oslo",
                "days": "4",
                "budget": "1200.5",
                "stops": "[{\"name\": \"Bergen\", \"nights\": \"2\", \"open\": \"true\"}]",
                "first": { "name": "Flåm", "nights": 1.0, "open": "false" },
                "mode": "Train",
                "plan": { "Fixed": { "days": "3" } },
                "pair": ["1", "true"],
                "counts": { "a": "5" }
            }),
        );
        assert_eq!(
            args,
            json!({
                "city": "Oslo",
                "days": 4,
                "budget": 1200.5,
                "stops": [{ "name": "Bergen", "nights": 2, "open": true }],
                "first": { "name": "Flåm", "nights": 1, "open": false },
                "mode": "Train",
                // A data enum is a union of several schemas: not looked into.
                "plan": { "Fixed": { "days": "3" } },
                "pair": [1, true],
                "counts": { "a": 5 }
            })
        );
        assert_eq!(
            coercions,
            [
                r#"at /budget: "1200.5" read as the number 1200.5"#,
                r#"at /counts/a: "5" read as the integer 5"#,
                r#"at /days: "4" read as the integer 4"#,
                "at /first/nights: 1.0 read as the integer 1",
                r#"at /first/open: "false" read as the boolean false"#,
                r#"at /pair/0: "1" read as the integer 1"#,
                r#"at /pair/1: "true" read as the boolean true"#,
                r#"at /stops: "[{\"name\": \"Bergen\", \"nights\": \"2\", \"open\": \"true\"}]" read as an array"#,
                r#"at /stops/0/nights: "2" read as the integer 2"#,
                r#"at /stops/0/open: "true" read as the boolean true"#,
            ]
        );
    }

    #[test]
    fn option_fields_keep_null_and_strings_of_null_are_not_read() {
        let schema = schema_of::<Trip>();
        let (args, coercions) = run(
            &schema,
            json!({ "budget": null, "first": null, "days": "null" }),
        );
        assert_eq!(
            args,
            json!({ "budget": null, "first": null, "days": "null" })
        );
        assert!(coercions.is_empty(), "{coercions:?}");
    }

    #[test]
    fn definitions_and_pointer_escapes_are_followed_by_hand_written_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a/b": { "$ref": "#/definitions/Count" },
                "x~y": { "oneOf": [{ "type": "null" }, { "$ref": "#/definitions/Count" }] },
                "old": { "allOf": [{ "$ref": "#/definitions/Count" }] },
                "tuple": { "type": "array", "items": [{ "type": "integer" }], "additionalItems": { "type": "boolean" } }
            },
            "definitions": { "Count": { "type": "integer", "minimum": 0 } }
        });
        let (args, coercions) = run(
            &schema,
            json!({ "a/b": "1", "x~y": "2", "old": "3", "tuple": ["4", "true", "false"] }),
        );
        assert_eq!(
            args,
            json!({ "a/b": 1, "x~y": 2, "old": 3, "tuple": [4, true, false] })
        );
        assert_eq!(
            coercions,
            [
                r#"at /a~1b: "1" read as the integer 1"#,
                r#"at /old: "3" read as the integer 3"#,
                r#"at /tuple/0: "4" read as the integer 4"#,
                r#"at /tuple/1: "true" read as the boolean true"#,
                r#"at /tuple/2: "false" read as the boolean false"#,
                r#"at /x~0y: "2" read as the integer 2"#,
            ]
        );
    }

    #[test]
    fn recursive_and_broken_references_end() {
        let (args, coercions) = run(
            &recursive_node(),
            json!({
                "weight": "1",
                "children": [{ "children": [{ "weight": "3" }] }],
                "loop": "4",
                "gone": "5"
            }),
        );
        assert_eq!(
            args,
            json!({
                "weight": 1,
                "children": [{ "children": [{ "weight": 3 }] }],
                "loop": "4",
                "gone": "5"
            })
        );
        assert_eq!(
            coercions,
            [
                r#"at /children/0/children/0/weight: "3" read as the integer 3"#,
                r#"at /weight: "1" read as the integer 1"#,
            ]
        );
    }

    #[test]
    fn coercing_twice_changes_nothing_more() {
        let schema = schema_of::<Trip>();
        let mut args = json!({ "days": "4", "stops": "{\"name\": \"a\", \"open\": \"true\"}" });
        let first = coerce_arguments(&schema, args.as_object_mut().unwrap());
        // An object where an array of them is expected: wrapped first, then parsed.
        let first: Vec<String> = first.iter().map(ToString::to_string).collect();
        assert_eq!(
            first,
            [
                r#"at /days: "4" read as the integer 4"#,
                r#"at /stops: "{\"name\": \"a\", \"open\": \"true\"}" read as a one-element array"#,
                r#"at /stops/0: "{\"name\": \"a\", \"open\": \"true\"}" read as an object"#,
                r#"at /stops/0/open: "true" read as the boolean true"#,
            ]
        );
        assert_eq!(
            args,
            json!({ "days": 4, "stops": [{ "name": "a", "open": true }] })
        );
        let after = args.clone();
        assert!(coerce_arguments(&schema, args.as_object_mut().unwrap()).is_empty());
        assert_eq!(args, after);
    }

    #[test]
    fn the_walk_visits_each_value_once() {
        let schema = json!({
            "type": "object",
            "properties": {
                "ids": { "type": "array", "items": { "type": "integer" } },
                "rows": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": { "a": { "type": "integer" }, "b": { "type": "boolean" } }
                    }
                }
            }
        });
        for n in [10_usize, 100, 1000] {
            let ids: Vec<Value> = (0..n).map(|i| Value::String(i.to_string())).collect();
            let rows: Vec<Value> = (0..n).map(|i| json!({ "a": i, "b": "true" })).collect();
            let mut args = json!({ "ids": ids, "rows": rows });
            let walker = walk(&schema, args.as_object_mut().unwrap());
            // The two arrays, every id, every row and both fields of every row: once each.
            assert_eq!(walker.visits, 2 + n + 3 * n);
            assert_eq!(walker.coercions.len(), 2 * n);
            assert_eq!(args["ids"][n - 1], n - 1);
        }

        // Values deeper than the guard are not looked at, instead of overflowing the stack.

        let deep = json!({ "$defs": { "N": {
            "type": "object",
            "properties": { "n": { "$ref": "#/$defs/N" }, "v": { "type": "integer" } }
        } }, "$ref": "#/$defs/N" });
        let mut value = json!({ "v": "1" });
        for _ in 0..200 {
            value = json!({ "n": value });
        }
        let mut args = json!({ "n": value, "v": "2" });
        let coercions = coerce_arguments(&deep, args.as_object_mut().unwrap());
        assert_eq!(coercions.len(), 1);
        assert_eq!(coercions[0].path, "/v");
    }

    #[test]
    fn long_values_are_shortened_in_the_description() {
        let schema = json!({ "type": "object", "properties": { "o": { "type": "object" } } });
        let text = format!("{{\"k\": \"{}\"}}", "x".repeat(200));
        let shown = Value::String(text.clone()).to_string();
        let (_, coercions) = run(&schema, json!({ "o": text }));
        assert_eq!(
            coercions,
            [format!("at /o: {}… read as an object", &shown[..80])]
        );
    }
}
