//! The exact texts the model reads when its arguments are wrong: JSON Schema errors and serde
//! errors described the same way (where, what was expected, what came).

use serde_json::Value;

use crate::schema::excerpt;

/// What is wrong with `value` for `validator`: at most five problems, joined by `; ` (empty when
/// the value is valid).
pub(crate) fn describe_schema_errors(validator: &jsonschema::Validator, value: &Value) -> String {
    validator
        .iter_errors(value)
        .take(5)
        .map(|error| describe_schema_error(&error))
        .collect::<Vec<_>>()
        .join("; ")
}

/// [`describe_schema_errors`] for arguments a typed read failed on, after it moved out the
/// strings it read (leaving them empty; see `__private::narrow_with`): the problems such an
/// empty string could cause are left out. The kept ones are those about the shape and the keys
/// of a value, which the read leaves as they were, and those about a value that holds no empty
/// string.
pub(crate) fn describe_schema_errors_after_taking(
    validator: &jsonschema::Validator,
    value: &Value,
) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;

    validator
        .iter_errors(value)
        .filter(|error| {
            matches!(
                error.kind(),
                Kind::Type { .. } | Kind::Required { .. } | Kind::AdditionalProperties { .. }
            ) || !holds_empty_string(error.instance())
        })
        .take(5)
        .map(|error| describe_schema_error(&error))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether `value` is or holds an empty string.
fn holds_empty_string(value: &Value) -> bool {
    match value {
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.iter().any(holds_empty_string),
        Value::Object(map) => map.values().any(holds_empty_string),
        _ => false,
    }
}

/// "unknown argument 'a' is not allowed", or for several names "unknown arguments 'a', 'b' and
/// 'c' are not allowed".
fn unknown_names(noun: &str, names: &[String]) -> String {
    match names {
        [] => format!("unknown {noun}s are not allowed"),
        [name] => format!("unknown {noun} '{name}' is not allowed"),
        [first @ .., last] => {
            let first: Vec<String> = first.iter().map(|name| format!("'{name}'")).collect();
            format!(
                "unknown {noun}s {} and '{last}' are not allowed",
                first.join(", ")
            )
        }
    }
}

/// Turns a `jsonschema` error into `at /path: expected …, got …` (or the validator's own message
/// for rarer keywords).
fn describe_schema_error(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;

    let path = error.instance_path().as_str();
    let instance: &Value = error.instance();
    let what = match error.kind() {
        Kind::Required { property } => {
            let property = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            return if path.is_empty() {
                format!("missing required argument '{property}'")
            } else {
                format!("at {path}: missing required field '{property}'")
            };
        }
        Kind::AdditionalProperties { unexpected } => {
            let noun = if path.is_empty() { "argument" } else { "field" };
            unknown_names(noun, unexpected)
        }
        Kind::Type { kind } => {
            format!(
                "expected {}, got {}",
                type_phrase(&format!("{kind:?}")),
                excerpt(instance)
            )
        }
        Kind::Enum { .. }
        | Kind::Constant { .. }
        | Kind::AnyOf { .. }
        | Kind::OneOfNotValid { .. }
            if allowed_values(error).is_some() =>
        {
            let allowed = allowed_values(error).unwrap_or_default();
            format!("expected {allowed}, got {}", excerpt(instance))
        }
        Kind::Minimum { limit } => {
            format!("expected a number >= {limit}, got {}", excerpt(instance))
        }
        Kind::Maximum { limit } => {
            format!("expected a number <= {limit}, got {}", excerpt(instance))
        }
        Kind::ExclusiveMinimum { limit } => {
            format!("expected a number > {limit}, got {}", excerpt(instance))
        }
        Kind::ExclusiveMaximum { limit } => {
            format!("expected a number < {limit}, got {}", excerpt(instance))
        }
        _ => error.to_string(),
    };
    if path.is_empty() {
        what
    } else {
        format!("at {path}: {what}")
    }
}

/// The values an enum-shaped error allows, in the schema's order: `one of "fast", "slow"`, or
/// `"fast"` alone, with ` (or null)` when `null` is allowed too. Besides `enum` and `const`, this
/// reads the unions schemars writes for enums: `Option<Enum>` (`anyOf` of the enum and `null`)
/// and variants with doc comments (`oneOf` of one `const` each). `None` when the error is not
/// about a list of values (a union of other shapes).
fn allowed_values(error: &jsonschema::ValidationError<'_>) -> Option<String> {
    let mut values = Vec::new();
    let mut null = false;
    collect_allowed(error, &mut values, &mut null, 0)?;
    if values.is_empty() {
        return None;
    }
    let mut phrase = match values.as_slice() {
        [one] => excerpt(one),
        many => format!(
            "one of {}",
            many.iter().map(excerpt).collect::<Vec<_>>().join(", ")
        ),
    };
    if null && !values.contains(&Value::Null) {
        phrase.push_str(" (or null)");
    }
    Some(phrase)
}

/// Adds to `values` what `error` allows (and sets `null` when a branch is `null` alone); `None`
/// when the error is not about values.
fn collect_allowed(
    error: &jsonschema::ValidationError<'_>,
    values: &mut Vec<Value>,
    null: &mut bool,
    depth: usize,
) -> Option<()> {
    use jsonschema::error::ValidationErrorKind as Kind;

    const MAX_DEPTH: usize = 8;
    let mut add = |value: &Value| {
        if !values.contains(value) {
            values.push(value.clone());
        }
    };
    match error.kind() {
        Kind::Enum { options } => options.as_array()?.iter().for_each(add),
        Kind::Constant { expected_value } => add(expected_value),
        Kind::AnyOf { context } | Kind::OneOfNotValid { context } if depth < MAX_DEPTH => {
            let here = error.instance_path();
            for branch in context {
                // A branch is a list of values when one of its errors here is (a type error
                // beside it says nothing more); else it must be `null` alone.
                let about_values: Vec<_> = branch
                    .iter()
                    .filter(|error| {
                        error.instance_path() == here && !matches!(error.kind(), Kind::Type { .. })
                    })
                    .collect();
                match (about_values.as_slice(), branch.as_slice()) {
                    ([], [only]) if matches!(only.kind(), Kind::Type { kind } if is_null_type(kind)) =>
                    {
                        *null = true;
                    }
                    ([], _) => return None,
                    (errors, _) => {
                        for error in errors {
                            collect_allowed(error, values, null, depth + 1)?;
                        }
                    }
                }
            }
        }
        _ => return None,
    }
    Some(())
}

fn is_null_type(kind: &jsonschema::error::TypeKind) -> bool {
    type_phrase(&format!("{kind:?}")) == "null"
}

fn type_phrase(kind: &str) -> String {
    // `TypeKind` prints as `Single(String)` or `Multiple(..)`; keep the type names only.
    let lower = kind.to_ascii_lowercase();
    let names: Vec<&str> = [
        "string", "integer", "number", "boolean", "object", "array", "null",
    ]
    .into_iter()
    .filter(|name| lower.contains(name))
    .collect();
    match names.as_slice() {
        [] => kind.to_owned(),
        [one] => with_article(one),
        many => many
            .iter()
            .map(|name| with_article(name))
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

fn with_article(name: &str) -> String {
    match name {
        "integer" | "object" | "array" => format!("an {name}"),
        "null" => "null".to_owned(),
        _ => format!("a {name}"),
    }
}

/// Describes a serde error from turning arguments into a typed struct, in the same words as the
/// schema errors: `at /city: expected a string, got 42`, `missing required argument 'city'`.
pub(crate) fn describe_serde_error(
    path: &serde_path_to_error::Path,
    error: &serde_json::Error,
) -> String {
    describe_serde_message(&json_pointer(path), error)
}

/// [`describe_serde_error`] for a value the model sent as the member `outer` (a JSON pointer,
/// `/Circle`) of the value that was read: the error's place is told from the model's value.
pub(crate) fn describe_serde_error_within(
    outer: &str,
    path: &serde_path_to_error::Path,
    error: &serde_json::Error,
) -> String {
    let pointer = json_pointer(path);
    describe_serde_message(pointer.strip_prefix(outer).unwrap_or(&pointer), error)
}

/// [`describe_serde_error`] for an error whose place is known only as a JSON pointer (empty for
/// the root).
fn describe_serde_message(pointer: &str, error: &serde_json::Error) -> String {
    let message = error.to_string();
    let what = if let Some(field) = between(&message, "missing field `", "`") {
        return if pointer.is_empty() {
            format!("missing required argument '{field}'")
        } else {
            format!("at {pointer}: missing required field '{field}'")
        };
    } else if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    {
        match rest.rsplit_once(", expected ") {
            Some((unexpected, expected)) => format!(
                "expected {}, got {}",
                expected_phrase(expected),
                unexpected_value(unexpected)
            ),
            None => message.clone(),
        }
    } else if let Some(field) = between(&message, "unknown field `", "`") {
        // The path ends at the unknown field itself; say where it was found, as the schema
        // validator does.
        let parent = pointer.rsplit_once('/').map_or("", |(parent, _)| parent);
        let field = [field.to_owned()];
        return if parent.is_empty() {
            unknown_names("argument", &field)
        } else {
            format!("at {parent}: {}", unknown_names("field", &field))
        };
    } else if let Some(variant) = between(&message, "unknown variant `", "`") {
        let expected = message
            .split_once(", expected ")
            .map_or(String::new(), |(_, expected)| {
                format!(", expected {expected}")
            });
        format!("unknown value \"{variant}\"{expected}")
    } else {
        message.clone()
    };
    if pointer.is_empty() {
        what
    } else {
        format!("at {pointer}: {what}")
    }
}

/// [`describe_serde_error`] for an error whose place is known as a JSON pointer (`/legs/1`;
/// empty for the root).
pub(crate) fn describe_serde_error_at(pointer: &str, error: &serde_json::Error) -> String {
    describe_serde_message(pointer, error)
}

/// serde names Rust types (`i64`, `u8`, `f32`); the model reads JSON words and, for the small
/// integer types, their range.
fn expected_phrase(expected: &str) -> String {
    let range = |min: i128, max: i128| format!("an integer from {min} to {max}");
    match expected {
        "i64" | "i128" | "isize" => "an integer".to_owned(),
        "u64" | "u128" | "usize" => "an integer >= 0".to_owned(),
        "i8" => range(i8::MIN.into(), i8::MAX.into()),
        "i16" => range(i16::MIN.into(), i16::MAX.into()),
        "i32" => range(i32::MIN.into(), i32::MAX.into()),
        "u8" => range(0, u8::MAX.into()),
        "u16" => range(0, u16::MAX.into()),
        "u32" => range(0, u32::MAX.into()),
        "f32" | "f64" => "a number".to_owned(),
        other => other.to_owned(),
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = text.split_once(start)?.1;
    Some(rest.split_once(end)?.0)
}

/// serde says ``integer `42` ``, ``string "x"``, ``boolean `true` ``, `map`, `sequence`; the
/// model understands JSON words better.
fn unexpected_value(unexpected: &str) -> String {
    if let Some(inner) = between(unexpected, "`", "`") {
        return inner.to_owned();
    }
    if let Some(inner) = unexpected.strip_prefix("string ") {
        return inner.to_owned();
    }
    match unexpected {
        "map" => "an object".to_owned(),
        "sequence" => "an array".to_owned(),
        "unit value" | "null" => "null".to_owned(),
        other => other.to_owned(),
    }
}

fn json_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;

    let mut pointer = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => pointer.push_str("/?"),
        }
    }
    pointer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_errors_read_like_schema_errors() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Args {
            city: String,
            days: u8,
        }
        let describe = |value: Value| {
            let error = serde_path_to_error::deserialize::<_, Args>(value).unwrap_err();
            describe_serde_error(error.path(), error.inner())
        };
        assert_eq!(
            describe(serde_json::json!({"city": 42, "days": 1})),
            "at /city: expected a string, got 42"
        );
        assert_eq!(
            describe(serde_json::json!({"days": 1})),
            "missing required argument 'city'"
        );
        assert_eq!(
            describe(serde_json::json!({"city": "x", "days": -1})),
            "at /days: expected an integer from 0 to 255, got -1"
        );
    }
}
