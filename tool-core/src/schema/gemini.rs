//! The Gemini adapter: the OpenAPI 3.0 subset `functionDeclarations` accept.
//!
//! Gemini's [`Schema`](https://ai.google.dev/api/caching#Schema) object knows a fixed set of
//! fields ([`ALLOWED`]); a request with any other key is rejected. So the canonical schema is
//! rewritten:
//!
//! - `$ref`s are inlined (the `$defs` go away); a recursive type is an error, since inlining it
//!   would never end.
//! - `"type": ["T", "null"]`, an `anyOf`/`oneOf` with a `null` branch and a `null` in `enum`
//!   become `"nullable": true`; a type list of several non-null types becomes an `anyOf`.
//! - `oneOf` becomes `anyOf`; `allOf` is merged into one schema.
//! - `const` becomes a one-value `enum`. Gemini enums hold strings only, so an enum or const of
//!   other values (numbers, booleans) keeps its type and moves into the description
//!   (`"must be one of: 1, 2, 3"`): turning `3` into `"3"` would make the model send a string
//!   the tool's own validation then rejects.
//! - `exclusiveMinimum`/`exclusiveMaximum` on integers become `minimum`/`maximum` (n + 1 and
//!   n - 1); on numbers they move into the description (`"must be > 0"`).
//! - `format` keeps only what Gemini knows (`int32`, `int64`, `float`, `double`, `enum`,
//!   `date-time`); `uint32` becomes `maximum: 4294967295`, the small integer formats go (their
//!   bounds are already `minimum`/`maximum`), and string formats such as `uuid` or `email` move
//!   into the description.
//! - Keywords with meaning but no Gemini field (`additionalProperties` with a schema,
//!   `propertyNames`, `patternProperties`, `multipleOf`, `uniqueItems`, `examples`, `not`,
//!   `if`/`then`/`else`, …) move into the description, logged at `debug` (known keywords) or
//!   `warn` (anything unrecognised). Keywords without meaning for the model (`$schema`, `$id`,
//!   `$comment`, `additionalProperties: false`, `readOnly`, …) are dropped, logged at `debug`.
//! - An object without properties carries no `properties` key: Gemini rejects an empty one.

use serde_json::{Map, Value};

use super::common::{
    MAX_DEPTH, NumericFormat, append_notes, at, child, compact, describe, is_null_schema,
    numeric_format, resolve, show,
};

/// Every field of Gemini's `Schema` object; nothing else may appear in the output.
#[cfg(test)]
const ALLOWED: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// The canonical schema as Gemini takes it, or why it cannot.
pub(super) fn parameters(tool: &str, schema: &Value) -> Result<Value, String> {
    let mut converter = Converter {
        tool,
        root: schema,
        refs: Vec::new(),
    };
    let mut root = match converter.convert(schema, "", 0)? {
        Value::Object(root) => root,
        _ => Map::new(),
    };
    // The root title is the args type's Rust name; the function name already says it.
    root.remove("title");
    if root.get("type").is_none() {
        root.insert("type".to_owned(), Value::String("object".to_owned()));
    }
    Ok(Value::Object(root))
}

struct Converter<'a> {
    tool: &'a str,
    root: &'a Value,
    /// The `$ref`s being inlined, outermost first: meeting one again means recursion.
    refs: Vec<String>,
}

impl Converter<'_> {
    fn convert(&mut self, schema: &Value, path: &str, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "at {}: the schema nests more than {MAX_DEPTH} levels deep",
                at(path)
            ));
        }
        match schema {
            Value::Bool(true) => Ok(Value::Object(Map::new())),
            Value::Bool(false) => Err(format!(
                "at {}: a `false` schema admits no value at all",
                at(path)
            )),
            Value::Object(map) => self.convert_map(map, path, depth).map(Value::Object),
            other => Err(format!(
                "at {}: a schema must be an object or a boolean, not {other}",
                at(path)
            )),
        }
    }

    // One arm per JSON Schema keyword: the table of what Gemini keeps, renames and notes.
    #[allow(clippy::too_many_lines)]
    fn convert_map(
        &mut self,
        schema: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Map<String, Value>, String> {
        if let Some(reference) = schema.get("$ref") {
            return self.inline_ref(schema, reference, path, depth);
        }
        let mut source = schema.clone();
        if let Some(all_of) = source.remove("allOf") {
            self.merge_all_of(&mut source, all_of, path)?;
            if source.contains_key("$ref") || source.contains_key("allOf") {
                return self.convert_map(&source, path, depth + 1);
            }
        }

        let mut out = Map::new();
        let mut notes = Vec::new();
        let mut nullable = source.remove("nullable").is_some_and(|v| v == true);

        // `type`: a list becomes `nullable` and, for several non-null types, an `anyOf`.
        match source.remove("type") {
            Some(Value::Array(types)) => {
                let kinds: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                nullable |= kinds.contains(&"null");
                let kinds: Vec<&str> = kinds.into_iter().filter(|kind| *kind != "null").collect();
                match kinds.as_slice() {
                    [] => {
                        return Err(format!(
                            "at {}: a value that can only be null has no Gemini type",
                            at(path)
                        ));
                    }
                    [kind] => {
                        source.insert("type".to_owned(), Value::String((*kind).to_owned()));
                    }
                    kinds => {
                        let branches = split_by_type(&mut source, kinds);
                        source.insert("anyOf".to_owned(), Value::Array(branches));
                    }
                }
            }
            Some(Value::String(kind)) if kind == "null" => {
                return Err(format!(
                    "at {}: a value that can only be null has no Gemini type",
                    at(path)
                ));
            }
            Some(kind) => {
                source.insert("type".to_owned(), kind);
            }
            None => {}
        }

        // Unions: `oneOf` is `anyOf` to Gemini; `null` branches become `nullable`.
        let union = match (source.remove("anyOf"), source.remove("oneOf")) {
            (Some(any_of), None) => Some(any_of),
            (None, Some(one_of)) => {
                self.debug(path, "oneOf", "rewritten as `anyOf`");
                Some(one_of)
            }
            (Some(any_of), Some(one_of)) => {
                // Both must hold; Gemini has one `anyOf`, so the `oneOf` becomes a note.
                notes.push(format!(
                    "must also match exactly one of: {}",
                    compact(&one_of)
                ));
                self.warn(path, "oneOf", "moved into the description beside `anyOf`");
                Some(any_of)
            }
            (None, None) => None,
        };
        if let Some(union) = union {
            let Value::Array(branches) = union else {
                return Err(format!("at {}: `anyOf`/`oneOf` must be an array", at(path)));
            };
            let (nulls, rest): (Vec<Value>, Vec<Value>) =
                branches.into_iter().partition(is_null_schema);
            nullable |= !nulls.is_empty();
            match rest.as_slice() {
                [] => {
                    return Err(format!(
                        "at {}: a value that can only be null has no Gemini type",
                        at(path)
                    ));
                }
                [single] => {
                    // `Option<T>`: the one remaining branch is the schema; this node's own
                    // keywords (the field's description) win over the branch's.
                    let inner = self.convert(single, &child(path, "anyOf/0"), depth + 1)?;
                    if let Value::Object(inner) = inner {
                        out = inner;
                    }
                }
                branches => {
                    let mut converted = Vec::with_capacity(branches.len());
                    for (index, branch) in branches.iter().enumerate() {
                        converted.push(self.convert(
                            branch,
                            &child(path, &format!("anyOf/{index}")),
                            depth + 1,
                        )?);
                    }
                    out.insert("anyOf".to_owned(), Value::Array(converted));
                }
            }
        }

        // The type first: `enum`, `format` and the exclusive bounds look at it.
        if let Some(kind) = source.remove("type") {
            out.insert("type".to_owned(), kind);
        }
        if let Some(value) = source.remove("const") {
            self.debug(path, "const", "rewritten as a one-value `enum`");
            source.insert("enum".to_owned(), Value::Array(vec![value]));
        }

        // Sorted, so the notes come out in the same order whether or not serde_json keeps
        // insertion order.
        let mut keywords: Vec<(String, Value)> = source.into_iter().collect();
        keywords.sort_by(|(a, _), (b, _)| a.cmp(b));
        for (key, value) in keywords {
            match key.as_str() {
                "type" | "description" | "title" | "pattern" | "minLength" | "maxLength"
                | "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minimum"
                | "maximum" | "example" | "default" | "required" | "propertyOrdering" => {
                    out.insert(key, value);
                }
                "properties" => {
                    let Value::Object(properties) = value else {
                        return Err(format!("at {}: `properties` must be an object", at(path)));
                    };
                    let properties_path = child(path, "properties");
                    let mut converted = Map::new();
                    for (name, property) in &properties {
                        let property_path = child(&properties_path, name);
                        converted.insert(
                            name.clone(),
                            self.convert(property, &property_path, depth + 1)?,
                        );
                    }
                    if !converted.is_empty() {
                        out.insert(key, Value::Object(converted));
                    }
                }
                "items" => match value {
                    Value::Array(items) => {
                        self.tuple(&mut out, &mut notes, &items, path, depth)?;
                    }
                    Value::Bool(false) => {}
                    items => {
                        let items = self.convert(&items, &child(path, "items"), depth + 1)?;
                        out.insert(key, items);
                    }
                },
                "prefixItems" => {
                    let Value::Array(items) = value else {
                        return Err(format!("at {}: `prefixItems` must be an array", at(path)));
                    };
                    self.tuple(&mut out, &mut notes, &items, path, depth)?;
                }
                "enum" => self.enumeration(&mut out, &mut notes, &mut nullable, value, path)?,
                "format" => {
                    if let Value::String(format) = value {
                        self.format(&mut out, &mut notes, format, path);
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    self.exclusive_bound(&mut out, &mut notes, &key, &value, path);
                }
                "deprecated" | "multipleOf" | "patternProperties" | "propertyNames"
                | "uniqueItems" => {
                    let what = describe(&mut notes, &key, &value);
                    self.debug(path, &key, what);
                }
                "additionalProperties" => match value {
                    Value::Bool(_) => self.debug(path, &key, "dropped"),
                    schema => {
                        let values =
                            self.convert(&schema, &child(path, "additionalProperties"), depth + 1)?;
                        notes.push(format!(
                            "an object with any keys; each value: {}",
                            compact(&values)
                        ));
                        self.debug(path, &key, "moved into the description");
                    }
                },
                "examples" => {
                    let examples = match &value {
                        Value::Array(examples) => {
                            examples.iter().map(show).collect::<Vec<_>>().join(", ")
                        }
                        other => show(other),
                    };
                    notes.push(format!("examples: {examples}"));
                    self.debug(path, &key, "moved into the description");
                }
                "$schema" | "$id" | "$comment" | "$anchor" | "$dynamicAnchor" | "$defs"
                | "definitions" | "readOnly" | "writeOnly" | "$vocabulary" => {
                    self.debug(path, &key, "dropped");
                }
                _ => {
                    notes.push(format!("{key}: {}", compact(&value)));
                    self.warn(
                        path,
                        &key,
                        "not supported by Gemini; moved into the description",
                    );
                }
            }
        }

        if nullable {
            out.insert("nullable".to_owned(), Value::Bool(true));
        }
        append_notes(&mut out, &notes);
        Ok(out)
    }

    /// Inlines a `$ref`: the target, with this node's other keywords (the field's
    /// description) on top.
    fn inline_ref(
        &mut self,
        schema: &Map<String, Value>,
        reference: &Value,
        path: &str,
        depth: usize,
    ) -> Result<Map<String, Value>, String> {
        let Value::String(reference) = reference else {
            return Err(format!("at {}: `$ref` must be a string", at(path)));
        };
        if self.refs.contains(reference) {
            return Err(format!(
                "at {}: `$ref` `{reference}` is recursive; Gemini has no references and a recursive type cannot be inlined",
                at(path)
            ));
        }
        let target =
            resolve(self.root, reference).map_err(|error| format!("at {}: {error}", at(path)))?;
        let mut merged = match target {
            Value::Object(target) => target.clone(),
            Value::Bool(true) => Map::new(),
            _ => {
                return Err(format!(
                    "at {}: `$ref` `{reference}` is not a schema",
                    at(path)
                ));
            }
        };
        if target.get("$defs").is_some() {
            merged.remove("$defs");
        }
        for (key, value) in schema {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        self.refs.push(reference.clone());
        let result = self.convert_map(&merged, path, depth + 1);
        self.refs.pop();
        result
    }

    /// Merges `allOf` branches into the schema holding them (Gemini has no `allOf`):
    /// properties and `required` are united, other keywords must agree.
    fn merge_all_of(
        &mut self,
        schema: &mut Map<String, Value>,
        all_of: Value,
        path: &str,
    ) -> Result<(), String> {
        let Value::Array(branches) = all_of else {
            return Err(format!("at {}: `allOf` must be an array", at(path)));
        };
        for branch in branches {
            let branch = match branch {
                Value::Object(branch) => self.dereference(branch, path)?,
                Value::Bool(true) => continue,
                _ => {
                    return Err(format!(
                        "at {}: an `allOf` branch must be an object schema",
                        at(path)
                    ));
                }
            };
            merge_into(schema, branch, path)?;
        }
        self.debug(path, "allOf", "merged into one schema");
        Ok(())
    }

    /// A schema with its top-level `$ref` chain resolved (siblings win), for merging.
    fn dereference(
        &self,
        mut schema: Map<String, Value>,
        path: &str,
    ) -> Result<Map<String, Value>, String> {
        let mut seen = Vec::new();
        while let Some(Value::String(reference)) = schema.remove("$ref") {
            if seen.contains(&reference) || self.refs.contains(&reference) {
                return Err(format!(
                    "at {}: `$ref` `{reference}` is recursive; Gemini has no references and a recursive type cannot be inlined",
                    at(path)
                ));
            }
            let target = resolve(self.root, &reference)
                .map_err(|error| format!("at {}: {error}", at(path)))?;
            let mut merged = target.as_object().cloned().unwrap_or_default();
            merged.remove("$defs");
            merged.extend(schema);
            schema = merged;
            seen.push(reference);
        }
        Ok(schema)
    }

    fn tuple(
        &mut self,
        out: &mut Map<String, Value>,
        notes: &mut Vec<String>,
        items: &[Value],
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        let mut converted: Vec<Value> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            converted.push(self.convert(
                item,
                &child(path, &format!("prefixItems/{index}")),
                depth + 1,
            )?);
        }
        let mut distinct: Vec<Value> = Vec::new();
        for item in &converted {
            if !distinct.contains(item) {
                distinct.push(item.clone());
            }
        }
        let items = match distinct.len() {
            0 => return Ok(()),
            1 => distinct.remove(0),
            _ => serde_json::json!({ "anyOf": distinct }),
        };
        out.insert("items".to_owned(), items);
        if converted.len() > 1 {
            notes.push(format!(
                "exactly {} items, in this order: {}",
                converted.len(),
                compact(&Value::Array(converted))
            ));
        }
        self.debug(
            path,
            "prefixItems",
            "tuple rewritten as `items` with a note",
        );
        Ok(())
    }

    fn enumeration(
        &self,
        out: &mut Map<String, Value>,
        notes: &mut Vec<String>,
        nullable: &mut bool,
        value: Value,
        path: &str,
    ) -> Result<(), String> {
        let Value::Array(values) = value else {
            return Err(format!("at {}: `enum` must be an array", at(path)));
        };
        let (nulls, values): (Vec<Value>, Vec<Value>) =
            values.into_iter().partition(Value::is_null);
        *nullable |= !nulls.is_empty();
        if values.is_empty() {
            if nulls.is_empty() {
                return Err(format!("at {}: an empty `enum` admits no value", at(path)));
            }
            return Err(format!(
                "at {}: a value that can only be null has no Gemini type",
                at(path)
            ));
        }
        let declared = out.get("type").and_then(Value::as_str).map(str::to_owned);
        if values.iter().all(Value::is_string) && declared.as_deref().is_none_or(|t| t == "string")
        {
            out.insert("type".to_owned(), Value::String("string".to_owned()));
            out.insert("enum".to_owned(), Value::Array(values));
            return Ok(());
        }
        // Gemini enums are strings only: keep the values' type and tell the model in words.
        if declared.is_none() {
            if let Some(kind) = common_type(&values) {
                out.insert("type".to_owned(), Value::String(kind.to_owned()));
            }
        }
        let listed = values.iter().map(compact).collect::<Vec<_>>();
        notes.push(match listed.as_slice() {
            [one] => format!("must be {one}"),
            all => format!("must be one of: {}", all.join(", ")),
        });
        self.debug(path, "enum", "non-string values moved into the description");
        Ok(())
    }

    fn format(
        &self,
        out: &mut Map<String, Value>,
        notes: &mut Vec<String>,
        format: String,
        path: &str,
    ) {
        match numeric_format(&format, true) {
            NumericFormat::Keep => {
                out.insert("format".to_owned(), Value::String(format));
            }
            NumericFormat::Rename(to) => {
                out.insert("format".to_owned(), Value::String(to.to_owned()));
            }
            NumericFormat::Drop => self.debug(path, "format", "dropped (bounds already given)"),
            NumericFormat::DropWithMaximum(maximum) => {
                out.entry("maximum").or_insert(Value::from(maximum));
                self.debug(path, "format", "replaced by `maximum`");
            }
            NumericFormat::NotNumeric => match format.as_str() {
                "date-time" | "enum" => {
                    out.insert("format".to_owned(), Value::String(format));
                }
                _ => {
                    notes.push(format!("format: {format}"));
                    self.debug(path, "format", "moved into the description");
                }
            },
        }
    }

    fn exclusive_bound(
        &self,
        out: &mut Map<String, Value>,
        notes: &mut Vec<String>,
        key: &str,
        value: &Value,
        path: &str,
    ) {
        let lower = key == "exclusiveMinimum";
        let integer = out.get("type").and_then(Value::as_str) == Some("integer");
        // On integers, `> n` is `>= n + 1`: exact, and a keyword Gemini has.
        if let (true, Some(n)) = (integer, value.as_i64()) {
            let (bound, inclusive) = if lower {
                ("minimum", n.checked_add(1))
            } else {
                ("maximum", n.checked_sub(1))
            };
            if let Some(inclusive) = inclusive {
                // Bounds beyond 2^53 lose precision in f64, as they do in the JSON Schema
                // validators that read them.
                #[allow(clippy::cast_precision_loss)]
                let tighter = match out.get(bound).and_then(Value::as_f64) {
                    Some(existing) if lower => (inclusive as f64) > existing,
                    Some(existing) => (inclusive as f64) < existing,
                    None => true,
                };
                if tighter {
                    out.insert(bound.to_owned(), Value::from(inclusive));
                }
                self.debug(path, key, "rewritten as an inclusive bound");
                return;
            }
        }
        let op = if lower { '>' } else { '<' };
        notes.push(format!("must be {op} {}", show(value)));
        self.debug(path, key, "moved into the description");
    }

    fn debug(&self, path: &str, keyword: &str, what: &str) {
        tracing::debug!(
            tool = self.tool,
            path = at(path),
            keyword,
            "gemini schema: {what}"
        );
    }

    fn warn(&self, path: &str, keyword: &str, what: &str) {
        tracing::warn!(
            tool = self.tool,
            path = at(path),
            keyword,
            "gemini schema: {what}"
        );
    }
}

/// Keywords that only mean something for one JSON type, so a type list can be split into one
/// `anyOf` branch per type.
fn applies_to(keyword: &str, kind: &str) -> bool {
    match kind {
        "string" => matches!(keyword, "minLength" | "maxLength" | "pattern" | "format"),
        "integer" | "number" => matches!(
            keyword,
            "minimum"
                | "maximum"
                | "exclusiveMinimum"
                | "exclusiveMaximum"
                | "multipleOf"
                | "format"
        ),
        "array" => matches!(
            keyword,
            "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains"
        ),
        "object" => matches!(
            keyword,
            "properties"
                | "required"
                | "additionalProperties"
                | "minProperties"
                | "maxProperties"
                | "propertyNames"
                | "patternProperties"
        ),
        _ => false,
    }
}

/// `"type": ["string", "integer"]` with its type-specific keywords, as one branch per type.
fn split_by_type(schema: &mut Map<String, Value>, kinds: &[&str]) -> Vec<Value> {
    let mut branches: Vec<Map<String, Value>> = kinds
        .iter()
        .map(|kind| {
            let mut branch = Map::new();
            branch.insert("type".to_owned(), Value::String((*kind).to_owned()));
            branch
        })
        .collect();
    let specific: Vec<String> = schema
        .keys()
        .filter(|key| kinds.iter().any(|kind| applies_to(key, kind)))
        .cloned()
        .collect();
    for key in specific {
        if let Some(value) = schema.remove(&key) {
            for (branch, kind) in branches.iter_mut().zip(kinds) {
                if applies_to(&key, kind) {
                    branch.insert(key.clone(), value.clone());
                }
            }
        }
    }
    branches.into_iter().map(Value::Object).collect()
}

/// Merges one `allOf` branch into a schema.
fn merge_into(
    schema: &mut Map<String, Value>,
    branch: Map<String, Value>,
    path: &str,
) -> Result<(), String> {
    for (key, value) in branch {
        match (key.as_str(), schema.get_mut(&key)) {
            (_, None) => {
                schema.insert(key, value);
            }
            ("properties", Some(Value::Object(properties))) => {
                if let Value::Object(more) = value {
                    for (name, property) in more {
                        properties.entry(name).or_insert(property);
                    }
                }
            }
            ("required", Some(Value::Array(required))) => {
                if let Value::Array(more) = value {
                    for name in more {
                        if !required.contains(&name) {
                            required.push(name);
                        }
                    }
                }
            }
            // Annotations: the outer schema's own wins.
            ("description" | "title" | "default" | "examples" | "$comment", Some(_)) => {}
            (_, Some(existing)) if *existing == value => {}
            (_, Some(_)) => {
                return Err(format!(
                    "at {}: `allOf` branches disagree on `{key}` and cannot be merged",
                    at(path)
                ));
            }
        }
    }
    Ok(())
}

/// The JSON type all values share, if any.
fn common_type(values: &[Value]) -> Option<&'static str> {
    let kind = |value: &Value| match value {
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        Value::String(_) => Some("string"),
        Value::Array(_) => Some("array"),
        Value::Object(_) => Some("object"),
        Value::Null => None,
    };
    let first = kind(values.first()?)?;
    let all_same = values.iter().all(|value| kind(value) == Some(first));
    if all_same {
        return Some(first);
    }
    let all_numbers = values.iter().all(Value::is_number);
    all_numbers.then_some("number")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gemini(schema: Value) -> Value {
        super::super::common::sorted(parameters("test", &schema).unwrap())
    }

    fn property(schema: Value) -> Value {
        let converted = gemini(json!({
            "type": "object",
            "properties": { "x": schema },
            "$defs": {
                "Point": {
                    "description": "A point.",
                    "type": "object",
                    "properties": { "x": { "type": "integer" } },
                    "required": ["x"]
                }
            }
        }));
        converted["properties"]["x"].clone()
    }

    #[test]
    fn refs_are_inlined_with_the_field_description_on_top() {
        let x = property(json!({ "$ref": "#/$defs/Point", "description": "Where." }));
        assert_eq!(
            x,
            json!({
                "description": "Where.",
                "type": "object",
                "properties": { "x": { "type": "integer" } },
                "required": ["x"]
            })
        );
    }

    #[test]
    fn root_title_schema_and_defs_are_removed() {
        let converted = gemini(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": { "p": { "$ref": "#/$defs/P" } },
            "$defs": { "P": { "type": "string" } }
        }));
        assert_eq!(
            converted,
            json!({ "type": "object", "properties": { "p": { "type": "string" } } })
        );
    }

    #[test]
    fn recursive_refs_are_an_error() {
        let error = parameters(
            "tree",
            &json!({
                "type": "object",
                "properties": { "root": { "$ref": "#/$defs/Node" } },
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": {
                            "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } }
                        }
                    }
                }
            }),
        )
        .unwrap_err();
        assert!(error.contains("`#/$defs/Node` is recursive"), "{error}");
        assert!(
            error.contains("/properties/root/properties/children/items"),
            "{error}"
        );
    }

    #[test]
    fn a_ref_used_twice_side_by_side_is_not_recursion() {
        let converted = gemini(json!({
            "type": "object",
            "properties": {
                "a": { "$ref": "#/$defs/S" },
                "b": { "type": "array", "items": { "$ref": "#/$defs/S" } }
            },
            "$defs": { "S": { "type": "string" } }
        }));
        assert_eq!(
            converted["properties"]["b"]["items"],
            json!({ "type": "string" })
        );
    }

    #[test]
    fn type_lists_with_null_become_nullable() {
        assert_eq!(
            property(json!({ "type": ["string", "null"], "description": "Maybe." })),
            json!({ "type": "string", "nullable": true, "description": "Maybe." })
        );
    }

    #[test]
    fn several_non_null_types_become_any_of_with_their_keywords() {
        assert_eq!(
            property(
                json!({ "type": ["string", "integer", "null"], "minLength": 1, "minimum": 0 })
            ),
            json!({
                "anyOf": [
                    { "type": "string", "minLength": 1 },
                    { "type": "integer", "minimum": 0 }
                ],
                "nullable": true
            })
        );
    }

    #[test]
    fn any_of_with_a_null_branch_becomes_the_other_branch_nullable() {
        assert_eq!(
            property(json!({
                "anyOf": [{ "$ref": "#/$defs/Point" }, { "type": "null" }],
                "description": "Optional point."
            })),
            json!({
                "description": "Optional point.",
                "nullable": true,
                "type": "object",
                "properties": { "x": { "type": "integer" } },
                "required": ["x"]
            })
        );
    }

    #[test]
    fn one_of_becomes_any_of() {
        let x = property(json!({
            "oneOf": [
                { "type": "string", "enum": ["a"] },
                { "type": "object", "properties": { "b": { "type": "integer" } }, "required": ["b"], "additionalProperties": false }
            ]
        }));
        assert_eq!(
            x,
            json!({
                "anyOf": [
                    { "type": "string", "enum": ["a"] },
                    { "type": "object", "properties": { "b": { "type": "integer" } }, "required": ["b"] }
                ]
            })
        );
    }

    #[test]
    fn string_const_becomes_a_one_value_enum() {
        assert_eq!(
            property(json!({ "type": "string", "const": "circle" })),
            json!({ "type": "string", "enum": ["circle"] })
        );
    }

    #[test]
    fn non_string_enums_keep_their_type_and_move_into_the_description() {
        assert_eq!(
            property(json!({ "enum": [1, 2, 3], "description": "Level." })),
            json!({ "type": "integer", "description": "Level. (must be one of: 1, 2, 3)" })
        );
        assert_eq!(
            property(json!({ "type": "boolean", "const": true })),
            json!({ "type": "boolean", "description": "must be true" })
        );
    }

    #[test]
    fn null_in_an_enum_becomes_nullable() {
        assert_eq!(
            property(json!({ "type": ["string", "null"], "enum": ["a", "b", null] })),
            json!({ "type": "string", "enum": ["a", "b"], "nullable": true })
        );
    }

    #[test]
    fn exclusive_bounds_on_integers_become_inclusive() {
        assert_eq!(
            property(json!({ "type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10 })),
            json!({ "type": "integer", "minimum": 1, "maximum": 9 })
        );
    }

    #[test]
    fn exclusive_bounds_on_numbers_move_into_the_description() {
        assert_eq!(
            property(json!({ "type": "number", "exclusiveMinimum": 0.5, "description": "Ratio." })),
            json!({ "type": "number", "description": "Ratio. (must be > 0.5)" })
        );
    }

    #[test]
    fn formats_keep_what_gemini_knows() {
        assert_eq!(
            property(json!({ "type": "integer", "format": "int32" })),
            json!({ "type": "integer", "format": "int32" })
        );
        assert_eq!(
            property(json!({ "type": "integer", "format": "uint8", "minimum": 0, "maximum": 255 })),
            json!({ "type": "integer", "minimum": 0, "maximum": 255 })
        );
        assert_eq!(
            property(json!({ "type": "integer", "format": "uint32", "minimum": 0 })),
            json!({ "type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64 })
        );
        assert_eq!(
            property(json!({ "type": "string", "format": "date-time" })),
            json!({ "type": "string", "format": "date-time" })
        );
        assert_eq!(
            property(json!({ "type": "string", "format": "uuid" })),
            json!({ "type": "string", "description": "format: uuid" })
        );
    }

    #[test]
    fn maps_lose_additional_properties_to_the_description() {
        assert_eq!(
            property(json!({
                "type": "object",
                "additionalProperties": { "type": "integer", "format": "int32" },
                "propertyNames": { "pattern": "^[a-z]+$" }
            })),
            json!({
                "type": "object",
                "description": "an object with any keys; each value: {\"format\":\"int32\",\"type\":\"integer\"}; each key: {\"pattern\":\"^[a-z]+$\"}"
            })
        );
    }

    #[test]
    fn empty_properties_are_left_out() {
        assert_eq!(
            gemini(json!({ "type": "object", "properties": {} })),
            json!({ "type": "object" })
        );
    }

    #[test]
    fn all_of_is_merged() {
        assert_eq!(
            property(json!({
                "allOf": [
                    { "$ref": "#/$defs/Point" },
                    { "properties": { "y": { "type": "integer" } }, "required": ["y"] }
                ],
                "description": "Both."
            })),
            json!({
                "description": "Both.",
                "type": "object",
                "properties": { "x": { "type": "integer" }, "y": { "type": "integer" } },
                "required": ["x", "y"]
            })
        );
    }

    #[test]
    fn tuples_become_items_with_a_note() {
        assert_eq!(
            property(json!({
                "type": "array",
                "prefixItems": [{ "type": "string" }, { "type": "integer" }],
                "items": false,
                "minItems": 2,
                "maxItems": 2
            })),
            json!({
                "type": "array",
                "items": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                "minItems": 2,
                "maxItems": 2,
                "description": "exactly 2 items, in this order: [{\"type\":\"string\"},{\"type\":\"integer\"}]"
            })
        );
    }

    #[test]
    fn unknown_keywords_move_into_the_description() {
        assert_eq!(
            property(json!({ "type": "string", "not": { "const": "x" }, "$comment": "internal" })),
            json!({ "type": "string", "description": "not: {\"const\":\"x\"}" })
        );
    }

    #[test]
    fn output_holds_only_gemini_fields() {
        fn check(schema: &Value) {
            let Value::Object(map) = schema else {
                panic!("not a schema: {schema}");
            };
            for (key, value) in map {
                assert!(ALLOWED.contains(&key.as_str()), "`{key}` in {schema}");
                match key.as_str() {
                    "properties" => value.as_object().unwrap().values().for_each(check),
                    "items" => check(value),
                    "anyOf" => value.as_array().unwrap().iter().for_each(check),
                    _ => {}
                }
            }
        }
        let converted = gemini(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:args",
            "$comment": "everything Gemini lacks",
            "title": "Args",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": { "type": "integer", "exclusiveMinimum": 0, "multipleOf": 5, "examples": [5, 10] },
                "b": { "type": "string", "format": "email", "deprecated": true, "readOnly": true },
                "c": { "type": "object", "patternProperties": { "^x": { "type": "string" } }, "unevaluatedProperties": false },
                "d": { "if": { "type": "string" }, "then": { "minLength": 1 }, "else": { "type": "integer" } },
                "e": { "type": "array", "items": { "$ref": "#/$defs/E" }, "uniqueItems": true, "contains": { "const": 1 } },
                "f": { "oneOf": [{ "const": 1 }, { "const": "one" }, { "type": "null" }] }
            },
            "$defs": { "E": { "type": ["integer", "null"], "const": 1, "dependentRequired": {} } }
        }));
        check(&converted);
    }

    #[test]
    fn a_root_ref_is_inlined() {
        let converted = gemini(json!({
            "$ref": "#/$defs/Args",
            "$defs": {
                "Args": {
                    "type": "object",
                    "properties": { "q": { "type": "string" } },
                    "required": ["q"]
                }
            }
        }));
        assert_eq!(
            converted,
            json!({ "type": "object", "properties": { "q": { "type": "string" } }, "required": ["q"] })
        );
    }

    #[test]
    fn only_null_is_an_error() {
        let error = parameters(
            "t",
            &json!({ "type": "object", "properties": { "unit": { "type": "null" } } }),
        )
        .unwrap_err();
        assert!(error.contains("/properties/unit"), "{error}");
    }
}
