//! A call's arguments made ready for the tool: read leniently when the tool allows it, the
//! `null`s OpenAI strict mode sends for optional fields dropped, and checked against the tool's
//! JSON Schema, with messages that say where and what is wrong.
//!
//! Arguments given as text (what OpenAI and Anthropic send) go straight into a typed tool's
//! arguments when they can ([`ArgumentChecks::start_text`]): the schema is then checked only
//! for what deserialization does not check (see [`Residue`]), and text the tool refuses takes
//! the object path, whose messages say what is wrong.

use std::{
    borrow::Cow,
    collections::HashSet,
    fmt,
    sync::{
        OnceLock,
        atomic::{AtomicU8, Ordering},
    },
};

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{ExecuteError, describe_schema_errors, guard::guarded};
use crate::{
    call::CallContext,
    schema::{Coercion, OptionalNulls, Residue},
    tool::{ExecutableTool, JsonObject, TextCall, ToolError},
};

/// What a tool's argument checks work out from its parameter schema once: the validator, what
/// of the schema a typed tool leaves to validate, and the plan for optional `null`s. Each is
/// built on the first call that needs it.
#[derive(Default)]
pub(crate) struct ArgumentChecks {
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    residue: OnceLock<ResidueCheck>,
    optional_nulls: OnceLock<OptionalNulls>,
    /// Whether the text is scanned for repeated keys before the tool reads it: only when the
    /// schema has an object whose keys it does not name (see
    /// [`takes_unnamed_keys`](crate::schema::takes_unnamed_keys)).
    scans_keys: OnceLock<bool>,
    /// Whether the tool reads text: 0 until its first text call, then [`READS_TEXT`] or
    /// [`OBJECTS_ONLY`].
    reads_text: AtomicU8,
}

const READS_TEXT: u8 = 1;
const OBJECTS_ONLY: u8 = 2;

/// How [`ArgumentChecks::start_text`] went on.
pub(crate) enum TextStart<'t> {
    /// What the tool made of the text: [`TextCall::Refused`] and [`TextCall::Unsupported`]
    /// (the tool does not take this text) hand the call's context back for the object path.
    Tool(TextCall<'t>),
    /// The parsed arguments of a tool that reads text, already checked for what its type does
    /// not check: run them through the object path without validating them again.
    Checked(JsonObject, Option<CallContext>),
}

/// How a typed tool's arguments are checked beyond deserialization.
enum ResidueCheck {
    /// Deserialization is enough.
    Nothing,
    /// These keywords are validated on the parsed text first.
    Keywords(jsonschema::Validator),
    /// The whole schema is validated: the object path.
    Whole,
}

impl ArgumentChecks {
    /// Starts `tool` (named `name`, with `parameters`) on the model's argument `text` when the
    /// tool reads text (see
    /// [`ExecutableTool::execute_text`](crate::ExecutableTool::execute_text)), after
    /// validating what the typed arguments do not check when `validate`. Anything else
    /// ([`TextCall::Refused`], [`TextCall::Unsupported`]) hands the context back for the object
    /// path; a panic while the call is made is [`ExecuteError::Panicked`].
    ///
    /// What it hands back is small (no [`Call`]): a call moves it on, and moving less is most
    /// of what a quick tool's call costs beyond the tool.
    #[inline]
    pub(crate) fn start_text<'t>(
        &self,
        tool: &'t dyn ExecutableTool,
        name: &str,
        parameters: &Value,
        text: &str,
        context: Option<CallContext>,
        validate: bool,
    ) -> Result<TextStart<'t>, ExecuteError> {
        let refused = |context| Ok(TextStart::Tool(TextCall::Refused(context)));
        let reads_text = self.reads_text.load(Ordering::Relaxed);
        if reads_text == OBJECTS_ONLY {
            return refused(context);
        }
        // A struct's `Deserialize` refuses a field given twice, and the object path then says
        // which; a map or a JSON value keeps one of the values, so where the schema has one,
        // repeated keys are refused here, before the tool reads the text.
        if self.scans_keys(parameters) {
            if let Some(key) = repeated_key(text) {
                return Err(ExecuteError::InvalidArguments {
                    name: name.to_owned(),
                    message: repeated_key_message(&key),
                });
            }
        }
        if validate {
            match self.residue(parameters) {
                ResidueCheck::Nothing => {}
                ResidueCheck::Whole => return refused(context),
                ResidueCheck::Keywords(validator) => {
                    let Ok(mut args) = parse_arguments(text) else {
                        return refused(context);
                    };
                    self.optional_nulls(parameters).drop_from(&mut args);
                    let args = Value::Object(args);
                    if !validator.is_valid(&args) {
                        return refused(context);
                    }
                    // A typed tool reads the object already parsed; its type checks the rest.
                    if let (READS_TEXT, Value::Object(args)) = (reads_text, args) {
                        return Ok(TextStart::Checked(args, context));
                    }
                }
            }
        }
        let call = guarded(name, || tool.execute_text(text, context))?;
        let learned = match &call {
            TextCall::Started(_) | TextCall::Finished(_) => READS_TEXT,
            TextCall::Unsupported(_) => OBJECTS_ONLY,
            TextCall::Refused(_) => reads_text,
        };
        if learned != reads_text {
            self.reads_text.store(learned, Ordering::Relaxed);
        }
        Ok(TextStart::Tool(call))
    }

    fn residue(&self, parameters: &Value) -> &ResidueCheck {
        self.residue
            .get_or_init(|| match crate::schema::residue(parameters) {
                Residue::Nothing => ResidueCheck::Nothing,
                Residue::Whole => ResidueCheck::Whole,
                Residue::Keywords(schema) => jsonschema::validator_for(&schema)
                    .map_or(ResidueCheck::Whole, ResidueCheck::Keywords),
            })
    }

    fn scans_keys(&self, parameters: &Value) -> bool {
        *self
            .scans_keys
            .get_or_init(|| crate::schema::takes_unnamed_keys(parameters))
    }

    fn optional_nulls(&self, parameters: &Value) -> &OptionalNulls {
        self.optional_nulls
            .get_or_init(|| OptionalNulls::for_schema(parameters))
    }

    /// The arguments for `tool` (named `name`, with `parameters`): coerced when `lenient`,
    /// optional `null`s dropped, validated when `validate`.
    ///
    /// A tool that reads text (see [`ExecutableTool::execute_text`]) reads an object into the
    /// same typed arguments, which check types and required fields themselves: as on the text
    /// path, only what they cannot check is validated here (see [`Residue`]). Arguments that
    /// fail that check are validated whole, and arguments the typed arguments refuse are
    /// explained by the tool in the schema's words, so the model reads the same message
    /// either way.
    pub(crate) fn prepare(
        &self,
        tool: &dyn ExecutableTool,
        name: &str,
        parameters: &Value,
        mut args: JsonObject,
        lenient: bool,
        validate: bool,
    ) -> Result<JsonObject, ExecuteError> {
        if lenient {
            Self::coerce(name, parameters, &mut args);
        }
        // Under OpenAI strict mode a model sends `null` for an optional field it leaves out.
        self.optional_nulls(parameters).drop_from(&mut args);
        if !validate {
            return Ok(args);
        }
        if !lenient && self.reads_text(tool) {
            match self.residue(parameters) {
                ResidueCheck::Nothing => return Ok(args),
                ResidueCheck::Keywords(validator) => {
                    let value = Value::Object(args);
                    let valid = validator.is_valid(&value);
                    // The arguments move into a `Value` and back out; nothing is cloned.
                    args = match value {
                        Value::Object(args) => args,
                        _ => JsonObject::new(),
                    };
                    if valid {
                        return Ok(args);
                    }
                }
                ResidueCheck::Whole => {}
            }
        }
        self.validate(name, parameters, args)
    }

    /// Whether `tool` reads text, asked once: by the first text call, or here by text no tool
    /// can read (`]` is not JSON), which a tool that reads text refuses without running
    /// ([`TextCall::Refused`]) and any other answers [`TextCall::Unsupported`] to.
    fn reads_text(&self, tool: &dyn ExecutableTool) -> bool {
        match self.reads_text.load(Ordering::Relaxed) {
            READS_TEXT => true,
            OBJECTS_ONLY => false,
            _ => {
                let probe = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    matches!(tool.execute_text("]", None), TextCall::Refused(_))
                }));
                let reads = probe.unwrap_or(false);
                // A tool that would run on this text, or panic, is not trusted to check.
                let learned = if reads { READS_TEXT } else { OBJECTS_ONLY };
                self.reads_text.store(learned, Ordering::Relaxed);
                reads
            }
        }
    }

    /// Reads arguments of the wrong JSON type as the type `parameters` asks for, logging and
    /// returning what changed.
    pub(crate) fn coerce(name: &str, parameters: &Value, args: &mut JsonObject) -> Vec<Coercion> {
        crate::schema::coerce_logged(name, parameters, args)
    }

    fn validate(
        &self,
        name: &str,
        parameters: &Value,
        args: JsonObject,
    ) -> Result<JsonObject, ExecuteError> {
        let validator = self
            .validator
            .get_or_init(|| {
                jsonschema::validator_for(parameters).map_err(|error| error.to_string())
            })
            .as_ref()
            .map_err(|error| ExecuteError::Failed {
                name: name.to_owned(),
                error: ToolError::new(format!(
                    "the tool's parameter schema is not a valid JSON Schema: {error}"
                )),
            })?;
        // The arguments move into a `Value` and back out; nothing is cloned.
        let value = Value::Object(args);
        if validator.is_valid(&value) {
            return Ok(match value {
                Value::Object(args) => args,
                _ => JsonObject::new(),
            });
        }
        Err(ExecuteError::InvalidArguments {
            name: name.to_owned(),
            message: describe_schema_errors(validator, &value),
        })
    }
}

/// Parses a call's arguments text into an object. Empty text and `null` mean no arguments (some
/// providers send them for tools without parameters); the error says what to send instead. An
/// object that gives a key twice, anywhere in it, is refused (see [`repeated_key`]).
pub(crate) fn parse_arguments(text: &str) -> Result<JsonObject, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(JsonObject::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => match repeated_key(text) {
            Some(key) => Err(repeated_key_message(&key)),
            None => Ok(args),
        },
        Ok(Value::Null) => Ok(JsonObject::new()),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, got {}; send an object with the tool's parameters",
            crate::schema::excerpt(&other)
        )),
        Err(error) => Err(format!(
            "the arguments are not valid JSON ({error}); send a JSON object with the tool's parameters"
        )),
    }
}

/// The first key that an object of the JSON `text` gives more than once, anywhere in it; `None`
/// when there is none, or when `text` is not JSON at all (parsing it says what is wrong).
///
/// `serde_json` keeps the last of repeated keys, so text such as
/// `{"path": "a.txt", "path": "b.txt"}` reads as one thing to a person (or to an approval
/// question that shows the first) and as another to the tool: such text is refused instead.
pub(crate) fn repeated_key(text: &str) -> Option<String> {
    let mut scan = KeyScan::default();
    let mut reader = serde_json::Deserializer::from_str(text);
    // The scan's only error of its own is a repeated key, which it keeps; a syntax error
    // leaves `repeated` empty.
    let _ = serde::Deserializer::deserialize_any(&mut reader, &mut scan);
    scan.repeated
}

/// What the model is told about a key it gave twice.
fn repeated_key_message(key: &str) -> String {
    format!("the key {key:?} is given more than once; send each key once")
}

/// How many keys an object is searched one by one for a repeat before a hash set takes over.
const LINEAR_KEYS: usize = 32;

/// Walks a JSON value, stopping at the first object that gives a key twice (kept in
/// `repeated`). The keys of the objects being walked are on one stack, borrowed from the text
/// unless they hold escapes, each with a fingerprint that most different keys differ in: an
/// object's keys are searched one by one, so a call's arguments cost no allocation beyond the
/// stack's and no hashing; a larger object's are put in a hash set.
#[derive(Default)]
struct KeyScan<'de> {
    keys: Vec<(u64, Cow<'de, str>)>,
    repeated: Option<String>,
}

/// A key's length and three of its bytes: equal keys have equal fingerprints.
fn fingerprint(key: &str) -> u64 {
    let bytes = key.as_bytes();
    let byte = |index: usize| bytes.get(index).map_or(0, |byte| u64::from(*byte));
    let length = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    length
        | (byte(0) << 32)
        | (byte(bytes.len() / 2) << 40)
        | (byte(bytes.len().wrapping_sub(1)) << 48)
}

impl<'de> DeserializeSeed<'de> for &mut KeyScan<'de> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut KeyScan<'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(&mut *self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        let start = self.keys.len();
        let mut large: Option<HashSet<Cow<'de, str>>> = None;
        while let Some(key) = entries.next_key_seed(Key)? {
            let print = fingerprint(&key);
            let repeated = match &large {
                Some(seen) => seen.contains(&key),
                None => self.keys[start..]
                    .iter()
                    .any(|(other, seen)| *other == print && *seen == key),
            };
            if repeated {
                self.repeated = Some(key.into_owned());
                return Err(serde::de::Error::custom("a key is given more than once"));
            }
            if let Some(seen) = &mut large {
                seen.insert(key);
            } else if self.keys.len() - start < LINEAR_KEYS {
                self.keys.push((print, key));
            } else {
                let mut seen: HashSet<_> = self.keys.drain(start..).map(|(_, key)| key).collect();
                seen.insert(key);
                large = Some(seen);
            }
            entries.next_value_seed(&mut *self)?;
        }
        self.keys.truncate(start);
        Ok(())
    }
}

/// An object's key, borrowed from the text when it holds no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E>(self, key: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key.to_owned()))
    }

    fn visit_string<E>(self, key: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_or_say_what_to_fix() {
        assert_eq!(parse_arguments("").unwrap(), JsonObject::new());
        assert_eq!(parse_arguments(" null ").unwrap(), JsonObject::new());
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap()["a"], 1);
        let error = parse_arguments("[1, 2]").unwrap_err();
        assert!(
            error.contains("must be a JSON object, got [1,2]"),
            "{error}"
        );
        let error = parse_arguments(r#"{"a": "#).unwrap_err();
        assert!(error.contains("not valid JSON"), "{error}");
    }

    #[test]
    fn a_key_given_twice_is_found_in_any_object_and_only_within_one() {
        let cases = [
            (r#"{"a": 1, "b": 2, "a": 3}"#, Some("a")),
            // The same key, spelt with an escape.
            (r#"{"a": 1, "\u0061": 3}"#, Some("a")),
            (r#"{"p\"q": 1, "p\u0022q": 3}"#, Some("p\"q")),
            (r#"{"a": {"b": 1, "c": {"d": [], "d": 2}}}"#, Some("d")),
            (r#"{"rows": [{"k": 1}, {"k": 1, "k": 2}]}"#, Some("k")),
            (r#"[{"k": 1, "k": 2}]"#, Some("k")),
            // After a nested object, its parent's keys are still known.
            (r#"{"a": {"b": 1}, "b": 2, "a": 3}"#, Some("a")),
            // A key may come again in another object: a child, a sibling, an array item.
            (r#"{"a": {"a": 1}, "b": {"a": 2}}"#, None),
            (r#"{"x": {"a": 1}, "a": 2}"#, None),
            (r#"{"rows": [{"k": 1}, {"k": 2}]}"#, None),
            // Keys with the same fingerprint are still different keys.
            (r#"{"abcd": 1, "accd": 2, "": 3, "a": {}, "b": []}"#, None),
            (r#"{"abcd": 1, "accd": 2, "abcd": 3}"#, Some("abcd")),
            ("{}", None),
            // Text that is not JSON has nothing to report: parsing it says what is wrong.
            (r#"{"a": 1 "a": 2}"#, None),
        ];
        for (text, expected) in cases {
            assert_eq!(repeated_key(text).as_deref(), expected, "{text}");
        }
    }

    #[test]
    fn a_key_given_twice_is_found_in_a_large_object() {
        for repeat in [0, 31, 32, 33, 199] {
            let mut entries: Vec<String> = (0..200).map(|i| format!("\"k{i}\": {i}")).collect();
            entries.push(format!("\"k{repeat}\": {{\"k{repeat}\": 0}}"));
            let text = format!("{{{}}}", entries.join(", "));
            assert_eq!(repeated_key(&text), Some(format!("k{repeat}")), "{repeat}");
            entries.pop();
            let text = format!("{{{}}}", entries.join(", "));
            assert_eq!(repeated_key(&text), None);
        }
    }
}
