//! What of a parameter schema is left to check once the arguments deserialize into the tool's
//! Rust type: the keywords serde does not enforce (bounds, lengths, patterns, …), with the
//! properties and references that lead to them.
//!
//! A `#[tool]`'s schema and its `Deserialize` impl come from the same type, so a successful
//! deserialization has already checked every `type`, `required`, `enum` and closed object, and
//! the integer bounds schemars writes for a type's range (`uint8` is `0..=255`). When nothing
//! else is in the schema, validation adds nothing; when something is, only that is validated.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::common::{BRANCHES, MAX_DEPTH, one_or_many};

/// What a validator still has to check of a schema, given a typed deserialization.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Residue {
    /// Deserialization checks everything the schema says.
    Nothing,
    /// A schema of just the keywords deserialization does not check, with the properties,
    /// items and `$defs` that lead to them.
    Keywords(Value),
    /// The schema has to be checked whole: a constraint under `anyOf`, `oneOf` or `allOf`
    /// (pruning inside them would change which branch matches), a condition (`not`, `if`, …), a
    /// reference that is not into `$defs`, or nesting deeper than the schema walks go.
    Whole,
}

/// The residue of `schema` (see [`Residue`]).
///
/// Two passes: the first finds which `$defs` entries hold a constraint, themselves or through
/// the entries they reference (a recursive type is a loop of references); the second prunes the
/// root and those entries, keeping a `$ref` only to them.
pub(crate) fn residue(schema: &Value) -> Residue {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Value::as_object);
    let mut pruner = Pruner {
        defs,
        constrained: None,
        references: Vec::new(),
        whole: false,
    };
    let mut constrained: HashSet<&str> = HashSet::new();
    let mut edges: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, def) in defs.into_iter().flatten() {
        if pruner.node(def, 0).is_some() {
            constrained.insert(name);
        }
        edges.push((name, std::mem::take(&mut pruner.references)));
    }
    // The root is `#` to a reference (schemars writes `"$ref": "#"` for a recursive root).
    if pruner.node(schema, 0).is_some() {
        constrained.insert("#");
    }
    edges.push(("#", std::mem::take(&mut pruner.references)));
    // An entry that references a constrained entry is constrained too; each round adds at
    // least one entry or ends.
    for _ in 0..=edges.len() {
        let before = constrained.len();
        for (name, references) in &edges {
            if references.iter().any(|target| constrained.contains(target)) {
                constrained.insert(name);
            }
        }
        if constrained.len() == before {
            break;
        }
    }
    pruner.constrained = Some(constrained);
    let root = pruner.node(schema, 0);
    let mut kept_defs = Map::new();
    if let (Some(defs), Some(constrained)) = (defs, &pruner.constrained) {
        let names: Vec<&str> = constrained.iter().copied().collect();
        for name in names {
            if let Some(def) = defs.get(name).filter(|_| name != "#") {
                let left = pruner.node(def, 0).unwrap_or(Value::Bool(true));
                kept_defs.insert(name.to_owned(), left);
            }
        }
    }
    if pruner.whole {
        return Residue::Whole;
    }
    let Some(mut root) = root else {
        return Residue::Nothing;
    };
    if let Value::Object(map) = &mut root {
        if !kept_defs.is_empty() {
            map.insert("$defs".to_owned(), Value::Object(kept_defs));
        }
        if let Some(draft) = schema.get("$schema") {
            map.insert("$schema".to_owned(), draft.clone());
        }
    }
    Residue::Keywords(root)
}

struct Pruner<'a> {
    defs: Option<&'a Map<String, Value>>,
    /// The `$defs` entries that hold a constraint; `None` in the first pass, which finds them.
    constrained: Option<HashSet<&'a str>>,
    /// The entries referenced from the schema pruned last, in the first pass.
    references: Vec<&'a str>,
    /// Set when the schema has to be checked whole.
    whole: bool,
}

/// Keywords that say nothing a validator checks.
const ANNOTATIONS: &[&str] = &[
    "$anchor",
    "$comment",
    "$id",
    "$schema",
    "contentEncoding",
    "contentMediaType",
    "default",
    "deprecated",
    "description",
    "examples",
    "nullable",
    "readOnly",
    "title",
    "writeOnly",
];

/// Keywords a typed deserialization enforces.
const STRUCTURAL: &[&str] = &["const", "enum", "required", "type"];

/// Keywords no Rust type's schema holds, whose subschemas say what the value must or must not
/// be whatever they contain (`not: {"type": "string"}`): the whole schema is checked.
const CONDITIONS: &[&str] = &[
    "contains",
    "dependentSchemas",
    "else",
    "if",
    "not",
    "patternProperties",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];

impl<'a> Pruner<'a> {
    /// What is left of `schema`; `None` when nothing is.
    fn node(&mut self, schema: &'a Value, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            self.whole = true;
            return None;
        }
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => return None,
            _ => {
                self.whole = true;
                return None;
            }
        };
        let range = map
            .get("format")
            .and_then(Value::as_str)
            .and_then(integer_range);
        let mut kept = Map::new();
        for (key, value) in map {
            let key = key.as_str();
            if ANNOTATIONS.contains(&key)
                || STRUCTURAL.contains(&key)
                || key.starts_with("x-")
                || key == "$defs"
                || key == "definitions"
            {
                continue;
            }
            match key {
                // schemars writes Rust's number types as formats; their ranges are the type's.
                "format"
                    if super::common::numeric_format(value.as_str().unwrap_or(""), false)
                        != super::common::NumericFormat::NotNumeric => {}
                "minimum" if range.is_some_and(|(low, _)| value.as_f64() == Some(low)) => {}
                "maximum" if range.is_some_and(|(_, high)| value.as_f64() == Some(high)) => {}
                // A tuple's length is its type's.
                "minItems" | "maxItems"
                    if map
                        .get("prefixItems")
                        .and_then(Value::as_array)
                        .is_some_and(|items| value.as_u64() == Some(items.len() as u64)) => {}
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        self.whole = true;
                        continue;
                    };
                    let mut left = Map::new();
                    for (name, property) in properties {
                        if let Some(property) = self.node(property, depth + 1) {
                            left.insert(name.clone(), property);
                        }
                    }
                    if !left.is_empty() {
                        kept.insert(key.to_owned(), Value::Object(left));
                    }
                }
                // `false` closes an object or a tuple, which deserialization enforces.
                "additionalProperties" | "items" => {
                    if !value.is_boolean() {
                        if let Some(left) = self.node(value, depth + 1) {
                            kept.insert(key.to_owned(), left);
                        }
                    }
                }
                "prefixItems" => {
                    let Some(items) = value.as_array() else {
                        self.whole = true;
                        continue;
                    };
                    let left: Vec<Option<Value>> = items
                        .iter()
                        .map(|item| self.node(item, depth + 1))
                        .collect();
                    if left.iter().any(Option::is_some) {
                        let left = left
                            .into_iter()
                            .map(|item| item.unwrap_or(Value::Bool(true)))
                            .collect();
                        kept.insert(key.to_owned(), Value::Array(left));
                    }
                }
                "$ref" => {
                    if self.reference(value) {
                        kept.insert(key.to_owned(), value.clone());
                    }
                }
                // Deserialization enforces which branch matches; a constraint inside one is
                // checked with the whole schema, since pruning a branch would change that.
                key if BRANCHES.contains(&key) => {
                    if one_or_many(value)
                        .iter()
                        .any(|branch| self.node(branch, depth + 1).is_some())
                    {
                        self.whole = true;
                    }
                }
                key if CONDITIONS.contains(&key) => self.whole = true,
                // A constraint: bounds, lengths, patterns, string formats, unknown keywords.
                _ => {
                    kept.insert(key.to_owned(), value.clone());
                }
            }
        }
        (!kept.is_empty()).then_some(Value::Object(kept))
    }

    /// Whether a `$ref` to `reference` is kept: in the first pass it is only noted; in the
    /// second it is kept when the entry it points at holds a constraint.
    fn reference(&mut self, reference: &'a Value) -> bool {
        let name = reference.as_str().and_then(|reference| {
            reference
                .strip_prefix("#/$defs/")
                .or_else(|| reference.strip_prefix("#/definitions/"))
        });
        let name = match reference.as_str() {
            Some("#") => Some("#"),
            _ => name.filter(|name| self.defs.is_some_and(|defs| defs.contains_key(*name))),
        };
        let Some(name) = name else {
            self.whole = true;
            return false;
        };
        match &self.constrained {
            None => {
                self.references.push(name);
                false
            }
            Some(constrained) => constrained.contains(name),
        }
    }
}

/// The range of the integer type a schemars `format` names (`uint8` is `0..=255`).
#[allow(clippy::cast_precision_loss)] // the bounds of 64-bit types are compared as JSON numbers
fn integer_range(format: &str) -> Option<(f64, f64)> {
    Some(match format {
        "int8" => (f64::from(i8::MIN), f64::from(i8::MAX)),
        "int16" => (f64::from(i16::MIN), f64::from(i16::MAX)),
        "int32" => (f64::from(i32::MIN), f64::from(i32::MAX)),
        "int64" | "int" => (i64::MIN as f64, i64::MAX as f64),
        "uint8" => (0.0, f64::from(u8::MAX)),
        "uint16" => (0.0, f64::from(u16::MAX)),
        "uint32" => (0.0, f64::from(u32::MAX)),
        "uint64" | "uint" => (0.0, u64::MAX as f64),
        "uint128" => (0.0, u128::MAX as f64),
        "int128" => (i128::MIN as f64, i128::MAX as f64),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;

    fn of<T: JsonSchema>() -> Residue {
        residue(&crate::schema::schema_for::<T>())
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Plain {
        city: String,
        days: u8,
        count: u32,
        small: i16,
        ratio: f64,
        tags: Vec<String>,
        note: Option<String>,
        pair: (i64, bool),
        address: Address,
        maybe_address: Option<Address>,
        kind: Kind,
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
        Large,
    }

    #[test]
    fn a_schema_of_types_alone_leaves_nothing() {
        assert_eq!(of::<Plain>(), Residue::Nothing);
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Bounded {
        #[schemars(range(min = 1, max = 14))]
        days: u8,
        #[schemars(length(min = 2))]
        city: String,
        free: String,
        address: BoundedAddress,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct BoundedAddress {
        #[schemars(regex(pattern = r"^\d{4}$"))]
        zip: String,
        street: String,
    }

    #[test]
    fn bounds_lengths_and_patterns_are_left_with_the_paths_to_them() {
        let Residue::Keywords(left) = of::<Bounded>() else {
            panic!("expected keywords, got {:?}", of::<Bounded>());
        };
        assert_eq!(
            left,
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "properties": {
                    "days": {"minimum": 1, "maximum": 14},
                    "city": {"minLength": 2},
                    "address": {"$ref": "#/$defs/BoundedAddress"}
                },
                "$defs": {
                    "BoundedAddress": {"properties": {"zip": {"pattern": "^\\d{4}$"}}}
                }
            })
        );
    }

    #[test]
    fn a_constraint_inside_a_branch_keeps_the_whole_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "id": {"anyOf": [{"type": "string", "minLength": 3}, {"type": "integer"}]}
            }
        });
        assert_eq!(residue(&schema), Residue::Whole);
        let schema = json!({
            "type": "object",
            "properties": {"id": {"anyOf": [{"type": "string"}, {"type": "null"}]}}
        });
        assert_eq!(residue(&schema), Residue::Nothing);
    }

    #[test]
    fn a_condition_keeps_the_whole_schema_whatever_it_holds() {
        // `not` of a bare type is a constraint no deserialization checks.
        let schema = json!({"properties": {"a": {"not": {"type": "string"}}}});
        assert_eq!(residue(&schema), Residue::Whole);
        let schema =
            json!({"if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["b"]}});
        assert_eq!(residue(&schema), Residue::Whole);
    }

    #[test]
    fn references_outside_defs_and_false_schemas_keep_the_whole_schema() {
        let schema = json!({"properties": {"a": {"$ref": "https://example.com/a.json"}}});
        assert_eq!(residue(&schema), Residue::Whole);
        let schema = json!({"properties": {"a": false}});
        assert_eq!(residue(&schema), Residue::Whole);
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Tree {
        #[schemars(length(max = 8))]
        label: String,
        children: Vec<Tree>,
    }

    #[test]
    fn a_recursive_type_keeps_its_definition() {
        let Residue::Keywords(left) = of::<Tree>() else {
            panic!("expected keywords");
        };
        let validator = jsonschema::validator_for(&left).unwrap();
        assert!(validator.is_valid(&json!({"label": "a", "children": [{"label": "b"}]})));
        assert!(
            !validator
                .is_valid(&json!({"label": "a", "children": [{"label": "too long a label"}]}))
        );
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct FreeTree {
        label: String,
        children: Vec<FreeTree>,
    }

    #[test]
    fn a_recursive_type_without_constraints_leaves_nothing() {
        assert_eq!(of::<FreeTree>(), Residue::Nothing);
    }

    #[test]
    fn a_constraint_reached_through_a_loop_of_references_is_checked_at_every_level() {
        // `B` holds no constraint itself but leads back to `A`, which does.
        let schema = json!({
            "type": "object",
            "properties": {"start": {"$ref": "#/$defs/B"}},
            "$defs": {
                "A": {"type": "object", "properties": {
                    "next": {"$ref": "#/$defs/B"},
                    "name": {"type": "string", "maxLength": 3}
                }},
                "B": {"type": "object", "properties": {"inner": {"$ref": "#/$defs/A"}}}
            }
        });
        let Residue::Keywords(left) = residue(&schema) else {
            panic!("expected keywords");
        };
        let validator = jsonschema::validator_for(&left).unwrap();
        let deep = |name: &str| json!({"start": {"inner": {"name": "ok", "next": {"inner": {"name": name}}}}});
        assert!(validator.is_valid(&deep("abc")));
        assert!(!validator.is_valid(&deep("abcd")));
    }

    #[test]
    fn a_hand_written_minimum_beside_a_format_stays() {
        let schema = json!({"properties": {"n": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 255}}});
        assert_eq!(
            residue(&schema),
            Residue::Keywords(json!({"properties": {"n": {"minimum": 1}}}))
        );
    }
}
