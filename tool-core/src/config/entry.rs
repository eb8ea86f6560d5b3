//! One configuration entry: checking its fields and turning it into a tool.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    EntryError,
    handlers::{Handler, HandlerKind, HandlerTable},
};
use crate::tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata};

/// A tool defined by a configuration entry.
pub(super) struct ConfigTool {
    schema: ChatTool,
    metadata: ToolMetadata,
    body: Body,
}

enum Body {
    /// The text every call returns.
    Mock(String),
    Handler(Handler),
}

#[async_trait::async_trait]
impl ExecutableTool for ConfigTool {
    fn name(&self) -> &str {
        &self.schema.function.name
    }

    fn get_schema(&self) -> ChatTool {
        self.schema.clone()
    }

    fn metadata(&self) -> ToolMetadata {
        self.metadata.clone()
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        match &self.body {
            Body::Mock(text) => Ok(text.clone()),
            Body::Handler(handler) => handler.call(args).await,
        }
    }
}

const ENTRY_FIELDS: &[&str] = &[
    "name",
    "description",
    "type",
    "handler",
    "parameters",
    "implementation",
    "metadata",
];

/// Checks an entry and builds its tool; the registry checks the rest (name syntax, duplicates).
pub(super) fn build(value: &Value, handlers: &HandlerTable) -> Result<ConfigTool, EntryError> {
    let Some(entry) = value.as_object() else {
        return Err(EntryError::NotATable {
            found: describe(value),
        });
    };
    let name = required_str(entry, "name")?;
    let implementation = match entry.get("implementation") {
        None => {
            return Err(EntryError::MissingField {
                field: "implementation",
            });
        }
        Some(Value::Object(implementation)) => implementation,
        Some(other) => return Err(wrong_type("implementation", "a table", other)),
    };
    let kind = match implementation.get("type") {
        None => {
            return Err(EntryError::MissingField {
                field: "implementation.type",
            });
        }
        Some(Value::String(kind)) => kind.as_str(),
        Some(other) => return Err(wrong_type("implementation.type", "a string", other)),
    };
    // An http entry is refused whatever else it holds: it could not run anyway.
    if kind == "http" {
        return Err(EntryError::HttpNotSupported);
    }
    let description = required_str(entry, "description")?;
    match required_str(entry, "type")? {
        "function" => {}
        other => {
            return Err(EntryError::NotAFunction {
                found: format!("{other:?}"),
            });
        }
    }
    required_str(entry, "handler")?;
    let parameters = parameters(entry)?;
    let (body, base_metadata) = match kind {
        "mock" => {
            let response = implementation
                .get("mock_response")
                .ok_or(EntryError::MissingField {
                    field: "implementation.mock_response",
                })?;
            warn_unknown(
                name,
                "implementation",
                implementation,
                &["type", "mock_response"],
            );
            (Body::Mock(mock_text(response)), ToolMetadata::default())
        }
        "builtin" => handler_body(name, implementation, handlers, HandlerKind::Builtin)?,
        "internal" => handler_body(name, implementation, handlers, HandlerKind::Internal)?,
        other => {
            return Err(EntryError::UnknownImplementation {
                kind: other.to_owned(),
            });
        }
    };
    let metadata = match entry.get("metadata") {
        None => base_metadata,
        Some(metadata) => overlay_metadata(base_metadata, metadata)?,
    };
    warn_unknown(name, "entry", entry, ENTRY_FIELDS);
    Ok(ConfigTool {
        schema: ChatTool::new(name, description, parameters),
        metadata,
        body,
    })
}

/// A short description of a JSON value's kind and content for messages: `a number (42)`.
pub(super) fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    };
    format!("{kind} ({})", crate::schema::excerpt(value))
}

fn required_str<'a>(
    entry: &'a Map<String, Value>,
    field: &'static str,
) -> Result<&'a str, EntryError> {
    match entry.get(field) {
        None => Err(EntryError::MissingField { field }),
        Some(Value::String(text)) if text.trim().is_empty() => {
            Err(EntryError::MissingField { field })
        }
        Some(Value::String(text)) => Ok(text),
        Some(other) => Err(wrong_type(field, "a string", other)),
    }
}

fn wrong_type(field: &'static str, expected: &'static str, found: &Value) -> EntryError {
    EntryError::WrongType {
        field,
        expected,
        found: describe(found),
    }
}

fn parameters(entry: &Map<String, Value>) -> Result<Value, EntryError> {
    let parameters = entry.get("parameters").ok_or(EntryError::MissingField {
        field: "parameters",
    })?;
    let invalid = |reason: String| EntryError::InvalidParameters { reason };
    let Some(schema) = parameters.as_object() else {
        return Err(invalid(format!(
            "must be a JSON Schema object, not {}",
            describe(parameters)
        )));
    };
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => {
            return Err(invalid(format!(
                "`type` must be \"object\", not {}",
                crate::schema::excerpt(other)
            )));
        }
        None => {
            return Err(invalid(
                "`type` is missing; it must be \"object\"".to_owned(),
            ));
        }
    }
    jsonschema::validator_for(parameters)
        .map_err(|error| invalid(format!("not a valid JSON Schema: {error}")))?;
    Ok(parameters.clone())
}

fn handler_body(
    name: &str,
    implementation: &Map<String, Value>,
    handlers: &HandlerTable,
    kind: HandlerKind,
) -> Result<(Body, ToolMetadata), EntryError> {
    let handler = match implementation.get("handler") {
        None => {
            return Err(EntryError::MissingField {
                field: "implementation.handler",
            });
        }
        Some(Value::String(handler)) => handler,
        Some(other) => return Err(wrong_type("implementation.handler", "a string", other)),
    };
    let Some(function) = handlers.lookup(kind, handler) else {
        let known = handlers.names(kind);
        let hint = if known.is_empty() {
            String::new()
        } else {
            format!(" (known: {})", known.join(", "))
        };
        return Err(EntryError::UnknownHandler {
            kind: kind.as_str(),
            handler: handler.clone(),
            hint,
        });
    };
    warn_unknown(name, "implementation", implementation, &["type", "handler"]);
    Ok((Body::Handler(function.clone()), function.metadata()))
}

/// A mock response as the model sees it: a string as is, anything else as JSON text.
fn mock_text(response: &Value) -> String {
    match response {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The metadata fields a configuration may set; unset fields keep the base metadata (the
/// defaults, or the handler tool's own).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetadataSpec {
    title: Option<String>,
    icon: Option<String>,
    category: Option<String>,
    #[serde(alias = "defaultEnabled")]
    default_enabled: Option<bool>,
    hints: Option<HintsSpec>,
    #[serde(alias = "timeoutMs")]
    timeout_ms: Option<u64>,
    sequential: Option<bool>,
    #[serde(alias = "needsApproval")]
    needs_approval: Option<bool>,
    #[serde(alias = "maxRetries")]
    max_retries: Option<u32>,
    #[serde(alias = "lenientArguments")]
    lenient_arguments: Option<bool>,
    #[serde(alias = "deferLoading")]
    defer_loading: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HintsSpec {
    #[serde(alias = "readOnly")]
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    #[serde(alias = "openWorld")]
    open_world: Option<bool>,
}

fn overlay_metadata(base: ToolMetadata, value: &Value) -> Result<ToolMetadata, EntryError> {
    let spec = MetadataSpec::deserialize(value).map_err(|error| EntryError::InvalidMetadata {
        reason: error.to_string(),
    })?;
    let mut metadata = base;
    if let Some(title) = spec.title {
        metadata = metadata.title(title);
    }
    if let Some(icon) = spec.icon {
        metadata = metadata.icon(icon);
    }
    if let Some(category) = spec.category {
        metadata = metadata.category(category);
    }
    if let Some(enabled) = spec.default_enabled {
        metadata = metadata.default_enabled(enabled);
    }
    if let Some(millis) = spec.timeout_ms {
        metadata = metadata.timeout(std::time::Duration::from_millis(millis));
    }
    if let Some(sequential) = spec.sequential {
        metadata = metadata.sequential(sequential);
    }
    if let Some(needs_approval) = spec.needs_approval {
        metadata = metadata.needs_approval(needs_approval);
    }
    if let Some(retries) = spec.max_retries {
        metadata = metadata.max_retries(retries);
    }
    if let Some(lenient) = spec.lenient_arguments {
        metadata = metadata.lenient_arguments(lenient);
    }
    if let Some(defer) = spec.defer_loading {
        metadata = metadata.defer_loading(defer);
    }
    if let Some(hints) = spec.hints {
        if let Some(value) = hints.read_only {
            metadata = metadata.read_only(value);
        }
        if let Some(value) = hints.destructive {
            metadata = metadata.destructive(value);
        }
        if let Some(value) = hints.idempotent {
            metadata = metadata.idempotent(value);
        }
        if let Some(value) = hints.open_world {
            metadata = metadata.open_world(value);
        }
    }
    Ok(metadata)
}

/// Fields this version does not know are not errors (a newer version may have written them),
/// but a typo deserves a warning.
fn warn_unknown(name: &str, place: &str, table: &Map<String, Value>, known: &[&str]) {
    for field in table
        .keys()
        .filter(|field| !known.contains(&field.as_str()))
    {
        tracing::warn!(entry = %name, %field, "unknown field in tool {place} ignored");
    }
}
