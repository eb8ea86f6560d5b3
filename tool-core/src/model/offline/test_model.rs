//! [`TestModel`]: an offline model that calls every enabled tool once with arguments generated
//! from its JSON Schema, then answers with the results.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use futures::StreamExt as _;
use serde_json::{Map, Value};

use super::scripted::reply_events;
use crate::{
    message::{FinishReason, Message, ToolCall, Usage},
    model::{
        ChatModel, ChatRequest, ChatResponse, ModelStream, ProviderError, ResponseFormat,
        ToolChoice,
    },
    schema::Provider,
    tool::JsonObject,
};

/// An offline model for examples and tests, like pydantic-ai's `TestModel`: no network, no key.
///
/// - When the last user message has not been answered with tool calls yet and tools are
///   offered, it calls each offered tool once (in the order offered), with arguments generated
///   from the tool's JSON Schema ([`generate_arguments`]): valid for that schema.
/// - Otherwise, when the request asks for a [`ResponseFormat::JsonSchema`] (a typed run in
///   native mode), it answers with a value generated from that schema ([`generate_value`]).
/// - Otherwise it answers with a text that lists every tool result since the last user message
///   (or, with no tools, says so).
/// - It honours the request's [`ToolChoice`]: with `None` it answers with text only; with
///   `Tool(name)` it calls that tool alone (even if [`call_tools`](Self::call_tools) leaves it
///   out, as a provider would); with `Allowed` it calls only the allowed tools; `Required` changes
///   nothing, since it calls tools whenever it can.
///   Like the provider clients, it fails with [`ProviderError::Config`] when `Required` or
///   `Tool(name)` comes without tools, or names a tool that is not offered.
///
/// Run it through an agent in CI to exercise every tool of a registry:
///
/// ```
/// use tool_core::{Agent, AgentOptions, model::TestModel};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let options = AgentOptions::new()
///     .root_dir(dir.path())
///     .session_context_file_path(dir.path().join("session.json"));
/// let agent = Agent::new(TestModel::new(), options);
/// let reply = agent.chat("try every tool").await.unwrap();
/// assert!(reply.text.contains("save_session_context"));
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct TestModel {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    call_tools: Option<Vec<String>>,
    final_text: Option<String>,
    next_id: AtomicU64,
}

impl TestModel {
    /// A test model that calls every offered tool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls only these tools (when offered), in the given order.
    #[must_use]
    pub fn call_tools<S: Into<String>>(self, names: impl IntoIterator<Item = S>) -> Self {
        Self {
            inner: Arc::new(Inner {
                call_tools: Some(names.into_iter().map(Into::into).collect()),
                final_text: self.inner.final_text.clone(),
                next_id: AtomicU64::new(0),
            }),
        }
    }

    /// Answers with this text instead of the list of tool results.
    #[must_use]
    pub fn final_text(self, text: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                call_tools: self.inner.call_tools.clone(),
                final_text: Some(text.into()),
                next_id: AtomicU64::new(0),
            }),
        }
    }

    fn respond(&self, request: &ChatRequest) -> (Message, Usage) {
        let last_user = request
            .messages
            .iter()
            .rposition(|message| matches!(message, Message::User { .. }));
        let since_user = last_user.map_or(&request.messages[..], |position| {
            &request.messages[position + 1..]
        });
        let answered = since_user
            .iter()
            .any(|message| matches!(message, Message::Tool { .. }));
        let calls: Vec<ToolCall> = if answered || request.tool_choice == ToolChoice::None {
            Vec::new()
        } else {
            request
                .tools
                .definitions()
                .iter()
                .filter(|tool| match &request.tool_choice {
                    ToolChoice::Tool(forced) => tool.name() == forced,
                    ToolChoice::Allowed { tools, .. } => {
                        tools.iter().any(|name| name == tool.name())
                    }
                    _ => self
                        .inner
                        .call_tools
                        .as_ref()
                        .is_none_or(|names| names.iter().any(|name| name == tool.name())),
                })
                .map(|tool| {
                    let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
                    let arguments = Value::Object(generate_arguments(tool.parameters()));
                    ToolCall::new(
                        format!("test_call_{id}"),
                        tool.name(),
                        arguments.to_string(),
                    )
                })
                .collect()
        };
        let content = if !calls.is_empty() {
            String::new()
        } else if let Some(ResponseFormat::JsonSchema { schema, .. }) = &request.response_format {
            generate_value(schema).to_string()
        } else if let Some(text) = &self.inner.final_text {
            text.clone()
        } else {
            summary(
                since_user,
                last_user.map(|position| &request.messages[position]),
                request.tool_choice == ToolChoice::None && !request.tools.is_empty(),
            )
        };
        let input: usize = request
            .messages
            .iter()
            .map(|message| message.content().len())
            .sum();
        let output = content.len() + calls.iter().map(|call| call.arguments.len()).sum::<usize>();
        let usage = Usage::new(tokens(input), tokens(output));
        (Message::assistant_with_calls(content, calls), usage)
    }
}

#[async_trait::async_trait]
impl ChatModel for TestModel {
    fn provider(&self) -> Provider {
        Provider::OpenAi
    }

    fn model_name(&self) -> &'static str {
        "test"
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        request.tool_choice.check(&request.tools)?;
        let (message, usage) = self.respond(&request);
        let finish_reason = match &message {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                FinishReason::ToolCalls
            }
            _ => FinishReason::Stop,
        };
        let mut response = ChatResponse::new(message, finish_reason);
        response.usage = Some(usage);
        Ok(response)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ProviderError> {
        request.tool_choice.check(&request.tools)?;
        let (message, usage) = self.respond(&request);
        let (text, calls) = match message {
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => (content, tool_calls),
            other => (other.content().to_owned(), Vec::new()),
        };
        Ok(futures::stream::iter(reply_events(text, calls, Some(usage)).map(Ok)).boxed())
    }
}

/// A rough token count (four bytes a token), so usage events carry plausible numbers.
fn tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX)
}

/// The text answer: the tool results since the user's message, or why there are none
/// (`turned_off`: tools were offered, but the tool choice was `None`).
fn summary(since_user: &[Message], user: Option<&Message>, turned_off: bool) -> String {
    let results: Vec<(&str, &str)> = since_user
        .iter()
        .filter_map(|message| match message {
            Message::Tool { name, content, .. } => Some((name.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    if results.is_empty() {
        let said = user.map(Message::content).unwrap_or_default();
        if turned_off {
            return format!(
                "(test model) Tool calls are turned off for this request, so I call none. You said: {said}"
            );
        }
        return format!(
            "(test model) No tools are enabled, so there is nothing to call. You said: {said}"
        );
    }
    let mut text = format!("(test model) I called {} tool(s):", results.len());
    for (name, content) in results {
        text.push_str("\n- ");
        text.push_str(name);
        text.push_str(": ");
        text.push_str(content);
    }
    text
}

/// Arguments for a tool whose parameters have this JSON Schema: an object valid for the schema
/// (see [`generate_value`]).
///
/// ```
/// use serde_json::json;
/// use tool_core::model::generate_arguments;
///
/// let args = generate_arguments(&json!({
///     "type": "object",
///     "properties": {
///         "city": { "type": "string", "minLength": 2 },
///         "days": { "type": "integer", "minimum": 1, "maximum": 7 },
///         "unit": { "enum": ["celsius", "fahrenheit"] }
///     },
///     "required": ["city", "days", "unit"]
/// }));
/// assert_eq!(args["days"], 1);
/// assert_eq!(args["unit"], "celsius");
/// ```
pub fn generate_arguments(parameters: &Value) -> JsonObject {
    match generate_value(parameters) {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A value valid for this JSON Schema, deterministic, as small as the schema allows.
///
/// A value the schema offers comes first, when the schema accepts it: the first of its
/// `examples`, else its `default` (so a tool whose parameters carry examples is called the way
/// its author shows). Otherwise the value is made up: `const`, the first of an `enum`, a valid
/// string for common `format`s (`date-time`, `date`, `email`, `uri`, `uuid`, …), the smallest
/// number the bounds allow, `"example"` for other strings.
///
/// It honours `type` (and type lists, preferring a non-null type), `const`, `enum`, `$ref` into
/// `$defs`/`definitions`, `allOf`, `anyOf`/`oneOf` (the first non-null option), object
/// `required`/`minProperties`/`additionalProperties`, array `minItems`/`maxItems`/
/// `uniqueItems`/`prefixItems`/`contains`, number bounds (`minimum`, `maximum`, both exclusive
/// forms, `multipleOf`), string lengths and common `format`s. Optional properties are left out.
/// `pattern` is not honoured.
pub fn generate_value(schema: &Value) -> Value {
    Generator {
        root: schema,
        offered: true,
    }
    .value(schema, 0, 0)
}

/// Deeper than this, recursive schemas take the way out: null where allowed, no more array items
/// than required.
const MAX_DEPTH: usize = 16;

/// Deeper than this (a schema whose recursion has no way out), the smallest value of the type.
const HARD_LIMIT: usize = 64;

struct Generator<'a> {
    root: &'a Value,
    /// Whether the values a schema offers (`examples`, `default`) are used; not for the items
    /// of an array whose items must differ, where an example could repeat a made-up value.
    offered: bool,
}

impl Generator<'_> {
    fn value(&self, schema: &Value, variant: usize, depth: usize) -> Value {
        let Some(object) = schema.as_object() else {
            // `true` accepts anything; `false` accepts nothing, so no value is right.
            return Value::Null;
        };
        if depth >= HARD_LIMIT {
            return minimal(schema);
        }
        let deep = depth >= MAX_DEPTH;
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if let Some(target) = self.resolve(reference) {
                let merged = merge(target, &Value::Object(without(object, &["$ref"])));
                return self.value(&Value::Object(merged), variant, depth + 1);
            }
        }
        if let Some(value) = self.offered_value(object, variant) {
            return value;
        }
        if let Some(value) = object.get("const") {
            return value.clone();
        }
        if let Some(Value::Array(options)) = object.get("enum") {
            if !options.is_empty() {
                return options[variant % options.len()].clone();
            }
        }
        if let Some(Value::Array(parts)) = object.get("allOf") {
            let mut merged = without(object, &["allOf"]);
            for part in parts {
                let part = self.follow(part);
                merged = merge(&Value::Object(merged), part);
            }
            return self.value(&Value::Object(merged), variant, depth + 1);
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(Value::Array(options)) = object.get(keyword) {
                // Deep in a recursive schema, a null option ends the recursion.
                let chosen = options
                    .iter()
                    .find(|option| is_null_only(self.follow(option)) == deep)
                    .or_else(|| options.first());
                if let Some(option) = chosen {
                    let merged = merge(&Value::Object(without(object, &[keyword])), option);
                    return self.value(&Value::Object(merged), variant, depth + 1);
                }
            }
        }
        if deep && allows_null(object) {
            return Value::Null;
        }
        match schema_type(object) {
            Some("object") => self.object(object, depth),
            Some("array") => self.array(object, depth),
            Some("string") => string(object, variant),
            Some("integer") => integer(object, variant),
            Some("number") => number(object, variant),
            Some("boolean") => Value::Bool(variant.is_multiple_of(2)),
            _ => Value::Null,
        }
    }

    fn object(&self, object: &Map<String, Value>, depth: usize) -> Value {
        let properties = object.get("properties").and_then(Value::as_object);
        let additional = object.get("additionalProperties");
        let mut out = Map::new();
        let required = object
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        for name in required {
            let schema = properties
                .and_then(|properties| properties.get(name))
                .or(additional)
                .unwrap_or(&Value::Bool(true));
            out.insert(name.to_owned(), self.value(schema, 0, depth + 1));
        }
        let min = object
            .get("minProperties")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let mut optional = properties
            .into_iter()
            .flatten()
            .filter(|(name, _)| !out.contains_key(*name))
            .collect::<Vec<_>>()
            .into_iter();
        let mut extra = 0;
        while (out.len() as u64) < min {
            if let Some((name, schema)) = optional.next() {
                out.insert(name.clone(), self.value(schema, 0, depth + 1));
                continue;
            }
            if additional == Some(&Value::Bool(false)) {
                break;
            }
            extra += 1;
            let schema = additional.unwrap_or(&Value::Bool(true));
            out.insert(
                format!("property_{extra}"),
                self.value(schema, extra, depth + 1),
            );
        }
        Value::Object(out)
    }

    fn array(&self, object: &Map<String, Value>, depth: usize) -> Value {
        let min = object.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = object.get("maxItems").and_then(Value::as_u64);
        let prefix = object
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let mut count = min.max(1).max(prefix.len() as u64);
        if let Some(max) = max {
            count = count.min(max);
        }
        if depth >= MAX_DEPTH {
            count = min;
        }
        let count = usize::try_from(count).unwrap_or(usize::MAX).min(64);
        let items = object.get("items").unwrap_or(&Value::Bool(true));
        let unique = object.get("uniqueItems") == Some(&Value::Bool(true));
        let generator = Generator {
            root: self.root,
            offered: self.offered && !unique,
        };
        let mut out: Vec<Value> = (0..count)
            .map(|index| match prefix.get(index) {
                Some(schema) => generator.value(schema, 0, depth + 1),
                None => generator.value(items, index, depth + 1),
            })
            .collect();
        if let Some(contains) = object.get("contains") {
            let value = self.value(contains, 0, depth + 1);
            let len = out.len() as u64;
            match out.get_mut(prefix.len()) {
                Some(slot) => *slot = value,
                None if max.is_none_or(|max| len < max) => out.push(value),
                None => {}
            }
        }
        Value::Array(out)
    }

    /// The value the schema offers for `variant`: the `variant`-th of its `examples` that it
    /// accepts, else (for the first variant) its `default` when it accepts it.
    fn offered_value(&self, object: &Map<String, Value>, variant: usize) -> Option<Value> {
        if !self.offered {
            return None;
        }
        let examples = object.get("examples").and_then(Value::as_array);
        let default = object.get("default").filter(|_| variant == 0);
        if examples.is_none_or(Vec::is_empty) && default.is_none() {
            return None;
        }
        // Validated against the schema with the root's definitions, so `$ref`s resolve.
        let mut schema = object.clone();
        if let Some(root) = self.root.as_object() {
            for key in ["$schema", "$defs", "definitions"] {
                if let Some(value) = root.get(key) {
                    schema.entry(key).or_insert_with(|| value.clone());
                }
            }
        }
        let validator = jsonschema::validator_for(&Value::Object(schema)).ok()?;
        examples
            .into_iter()
            .flatten()
            .filter(|example| validator.is_valid(example))
            .nth(variant)
            .or_else(|| default.filter(|default| validator.is_valid(default)))
            .cloned()
    }

    /// The schema a `$ref` points to, or the schema itself.
    fn follow<'s>(&'s self, schema: &'s Value) -> &'s Value {
        schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| self.resolve(reference))
            .unwrap_or(schema)
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        let decoded = pointer.replace("%24", "$");
        self.root.pointer(&decoded)
    }
}

fn schema_type(object: &Map<String, Value>) -> Option<&str> {
    match object.get("type") {
        Some(Value::String(kind)) => Some(kind),
        Some(Value::Array(kinds)) => {
            let mut names = kinds.iter().filter_map(Value::as_str);
            let first = names.clone().next();
            names.find(|kind| *kind != "null").or(first)
        }
        _ => {
            let has = |keys: &[&str]| keys.iter().any(|key| object.contains_key(*key));
            if has(&[
                "properties",
                "required",
                "additionalProperties",
                "minProperties",
            ]) {
                Some("object")
            } else if has(&["items", "prefixItems", "minItems", "maxItems", "contains"]) {
                Some("array")
            } else if has(&["minLength", "maxLength", "format", "pattern"]) {
                Some("string")
            } else if has(&[
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
            ]) {
                Some("number")
            } else {
                None
            }
        }
    }
}

fn allows_null(object: &Map<String, Value>) -> bool {
    match object.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        Some(Value::String(kind)) => kind == "null",
        _ => false,
    }
}

fn is_null_only(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(kind)) => kind == "null",
        _ => schema.get("const") == Some(&Value::Null),
    }
}

/// The smallest value of a schema's type, for recursion that went too deep.
fn minimal(schema: &Value) -> Value {
    let Some(object) = schema.as_object() else {
        return Value::Null;
    };
    match schema_type(object) {
        Some("object") => Value::Object(Map::new()),
        Some("array") => Value::Array(Vec::new()),
        Some("string") => Value::String(String::new()),
        Some("integer" | "number") => Value::from(0),
        Some("boolean") => Value::Bool(false),
        _ => Value::Null,
    }
}

fn without(object: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    object
        .iter()
        .filter(|(key, _)| !keys.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// `base` with `extra`'s keywords on top; `properties` are merged and `required` lists joined,
/// so the result asks for what both ask for.
fn merge(base: &Value, extra: &Value) -> Map<String, Value> {
    let mut out = base.as_object().cloned().unwrap_or_default();
    let Some(extra) = extra.as_object() else {
        return out;
    };
    for (key, value) in extra {
        match (key.as_str(), out.get_mut(key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (name, schema) in theirs {
                    mine.insert(name.clone(), schema.clone());
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(name) {
                        mine.push(name.clone());
                    }
                }
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

fn string(object: &Map<String, Value>, variant: usize) -> Value {
    let base = match object.get("format").and_then(Value::as_str) {
        Some("date-time") => "2024-01-01T00:00:00Z".to_owned(),
        Some("date") => "2024-01-01".to_owned(),
        Some("time") => "12:00:00Z".to_owned(),
        Some("duration") => "P1D".to_owned(),
        Some("email" | "idn-email") => format!("user{variant}@example.com"),
        Some("uri" | "url" | "iri" | "uri-reference" | "iri-reference") => {
            format!("https://example.com/{variant}")
        }
        Some("uuid") => format!("00000000-0000-4000-8000-{variant:012}"),
        Some("ipv4") => format!("192.0.2.{}", variant % 256),
        Some("ipv6") => format!("2001:db8::{:x}", variant % 65536),
        Some("hostname" | "idn-hostname") => "example.com".to_owned(),
        _ if variant == 0 => "example".to_owned(),
        _ => format!("example{variant}"),
    };
    let min = object
        .get("minLength")
        .and_then(Value::as_u64)
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let max = object
        .get("maxLength")
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut chars: Vec<char> = base.chars().collect();
    if let Some(max) = max {
        if chars.len() > max {
            // Keep the tail, which carries the variant number that keeps values distinct.
            chars.drain(..chars.len() - max);
        }
    }
    while chars.len() < min {
        chars.push('x');
    }
    Value::String(chars.into_iter().collect())
}

/// The lower and upper bounds of a number schema, each with whether it is exclusive. Both the
/// 2020-12 form (`exclusiveMinimum: 3`) and the draft-04 form (`minimum: 3, exclusiveMinimum:
/// true`) are read.
/// A bound: the limit, and whether it is exclusive.
type Bound = Option<(f64, bool)>;

fn bounds(object: &Map<String, Value>) -> (Bound, Bound) {
    let number = |key: &str| object.get(key).and_then(Value::as_f64);
    let flag = |key: &str| object.get(key).and_then(Value::as_bool).unwrap_or(false);
    let pick = |inclusive: Option<f64>, exclusive: Option<f64>, old_flag: bool, lower: bool| {
        let inclusive = inclusive.map(|value| (value, old_flag));
        let exclusive = exclusive.map(|value| (value, true));
        match (inclusive, exclusive) {
            (Some(a), Some(b)) => {
                // The tighter bound wins.
                let a_tighter = if lower { a.0 > b.0 } else { a.0 < b.0 };
                Some(if a_tighter { a } else { b })
            }
            (a, b) => a.or(b),
        }
    };
    let lower = pick(
        number("minimum"),
        number("exclusiveMinimum"),
        flag("exclusiveMinimum"),
        true,
    );
    let upper = pick(
        number("maximum"),
        number("exclusiveMaximum"),
        flag("exclusiveMaximum"),
        false,
    );
    (lower, upper)
}

// Test values stay small (a few variants from a schema's bounds) and whole numbers are
// turned into integers only below 9e15, where f64 holds them exactly.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
fn integer(object: &Map<String, Value>, variant: usize) -> Value {
    let (lower, upper) = bounds(object);
    let low = lower.map(|(value, exclusive)| {
        if exclusive {
            value.floor() + 1.0
        } else {
            value.ceil()
        }
    });
    let high = upper.map(|(value, exclusive)| {
        if exclusive {
            value.ceil() - 1.0
        } else {
            value.floor()
        }
    });
    let step = object
        .get("multipleOf")
        .and_then(Value::as_f64)
        .filter(|step| *step > 0.0);
    let start = match (low, high) {
        (Some(low), _) => low,
        (None, Some(high)) => high.min(1.0),
        (None, None) => 1.0,
    };
    let mut value = start + variant as f64;
    if let Some(high) = high {
        value = value.min(high);
    }
    if let Some(step) = step {
        value = (value / step).ceil() * step;
        if high.is_some_and(|high| value > high) {
            value = (value / step).floor() * step - step;
        }
    }
    // Integers that fit are written as integers (not `1.0`), as the schema's `type` demands.
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

// Test values stay small (a few variants from a schema's bounds) and whole numbers are
// turned into integers only below 9e15, where f64 holds them exactly.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
fn number(object: &Map<String, Value>, variant: usize) -> Value {
    let (lower, upper) = bounds(object);
    let step = object
        .get("multipleOf")
        .and_then(Value::as_f64)
        .filter(|step| *step > 0.0);
    let offset = variant as f64;
    let mut value = match (lower, upper) {
        (Some((low, false)), _) => low + offset,
        (Some((low, true)), Some((high, _))) => low + (high - low) / 2.0,
        (Some((low, true)), None) => low + 1.0 + offset,
        (None, Some((high, exclusive))) => {
            let start = if exclusive { high - 1.0 } else { high };
            start.min(1.0) - offset
        }
        (None, None) => 1.0 + offset,
    };
    if let Some((high, exclusive)) = upper {
        if value > high || (exclusive && value >= high) {
            value = lower.map_or(high - 1.0, |(low, _)| low + (high - low) / 2.0);
        }
    }
    if let Some(step) = step {
        let mut multiple = (value / step).ceil();
        if lower.is_some_and(|(low, exclusive)| exclusive && multiple * step <= low) {
            multiple += 1.0;
        }
        value = multiple * step;
    }
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;

    #[track_caller]
    fn assert_valid(schema: &Value) -> Value {
        let value = generate_value(schema);
        let validator = jsonschema::validator_for(schema).unwrap();
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .map(|error| error.to_string())
            .collect();
        assert!(
            problems.is_empty(),
            "generated {value} for {schema}: {problems:?}"
        );
        value
    }

    #[test]
    fn generated_values_are_valid_for_hand_written_schemas() {
        let schemas = [
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            json!({"type": "string", "minLength": 12}),
            json!({"type": "string", "maxLength": 3}),
            json!({"type": "string", "minLength": 2, "maxLength": 2}),
            json!({"type": "string", "format": "date-time"}),
            json!({"enum": ["red", "green"]}),
            json!({"const": 42}),
            json!({"type": "integer", "minimum": 5, "maximum": 9}),
            json!({"type": "integer", "exclusiveMinimum": 5}),
            json!({"type": "integer", "exclusiveMaximum": -3}),
            json!({
                "$schema": "http://json-schema.org/draft-04/schema#",
                "type": "integer", "minimum": 5, "exclusiveMinimum": true
            }),
            json!({"type": "integer", "minimum": 7, "multipleOf": 5}),
            json!({"type": "integer", "maximum": -10}),
            json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}),
            json!({"type": "number", "minimum": 0.25, "multipleOf": 0.5}),
            json!({"type": "number", "exclusiveMaximum": -2.5}),
            json!({"type": ["string", "null"]}),
            json!({"type": ["null", "integer"], "minimum": 3}),
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 3, "uniqueItems": true}),
            json!({"type": "array", "items": {"type": "string"}, "minItems": 4, "uniqueItems": true}),
            json!({"type": "array", "maxItems": 0}),
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false}),
            json!({"type": "array", "items": {"type": "integer"}, "contains": {"const": 7}}),
            json!({"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 10}]}),
            json!({"oneOf": [{"type": "string", "maxLength": 1}, {"type": "integer"}]}),
            json!({"allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]}
            ]}),
            json!({"type": "object", "minProperties": 2, "additionalProperties": {"type": "boolean"}}),
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "minProperties": 1}),
            json!({"type": "object", "nullable": true, "properties": {"n": {"type": "number"}}, "required": ["n"]}),
            json!({
                "type": "object",
                "properties": {"node": {"$ref": "#/$defs/Node"}},
                "required": ["node"],
                "$defs": {"Node": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer", "minimum": 1},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    },
                    "required": ["value", "children"]
                }}
            }),
            json!({
                "type": "object",
                "properties": {"when": {"$ref": "#/definitions/Moment", "description": "sibling"}},
                "required": ["when"],
                "definitions": {"Moment": {"type": "string", "format": "date"}}
            }),
            json!(true),
            json!({}),
        ];
        for schema in &schemas {
            assert_valid(schema);
        }
    }

    #[test]
    fn required_fields_are_present_and_optional_ones_left_out() {
        let value = assert_valid(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "required": ["a"]
        }));
        assert_eq!(value, json!({"a": "example"}));
    }

    #[test]
    fn recursive_schemas_terminate() {
        let value = assert_valid(&json!({
            "$ref": "#/$defs/List",
            "$defs": {"List": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "next": {"anyOf": [{"$ref": "#/$defs/List"}, {"type": "null"}]}
                },
                "required": ["value", "next"]
            }}
        }));
        assert!(value.is_object());
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Shape {
        Circle { radius: f64 },
        Square { side: u32 },
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        #[schemars(range(min = 1, max = 5))]
        level: u8,
        tags: Vec<String>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Everything {
        #[schemars(length(min = 3, max = 8))]
        city: String,
        unit: Unit,
        shape: Shape,
        inner: Inner,
        maybe: Option<Inner>,
        scores: HashMap<String, i64>,
        #[schemars(range(min = -4.5, max = -1.0))]
        offset: f32,
        pair: (String, bool),
        #[schemars(length(min = 2))]
        items: Vec<Unit>,
        count: u64,
        small: i8,
    }

    #[test]
    fn generated_values_are_valid_for_schemars_schemas() {
        let schema = crate::schema::schema_for::<Everything>();
        let value = assert_valid(&schema);
        assert_eq!(value["city"], "example");
        assert!(
            value["inner"]["level"]
                .as_u64()
                .is_some_and(|l| (1..=5).contains(&l))
        );
        assert!(value.get("maybe").is_none());
    }
}
