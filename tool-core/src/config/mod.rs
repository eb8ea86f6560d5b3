//! Tools defined in configuration: a JSON or TOML file (or an already-parsed value) listing tool
//! definitions, registered in a [`ToolRegistry`] at startup.
//!
//! Each entry names the tool, describes it, gives the JSON Schema of its parameters and says how
//! it runs:
//!
//! | `implementation.type` | runs | needs |
//! |---|---|---|
//! | `mock` | returns `mock_response` (a string as is, any other JSON value as JSON text) | `mock_response` |
//! | `builtin` | a framework function from the [`HandlerTable`] (`read_file`, `write_file`, `save_session_context`) | `handler` |
//! | `internal` | an application function registered in the [`HandlerTable`] by name | `handler` |
//! | `http` | rejected: `HTTP tools not yet supported (coming in v2)` | |
//!
//! ```toml
//! [[tools]]
//! name = "get_weather"
//! description = "Get the current weather for a city."
//! type = "function"
//! handler = "get_weather"
//! parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
//! implementation = { type = "mock", mock_response = { temperature_c = 18, conditions = "cloudy" } }
//! metadata = { category = "weather", icon = "https://example.com/sun.svg", default_enabled = true }
//! ```
//!
//! JSON files hold the same entries either as a top-level array or under a `"tools"` key.
//!
//! | field | required | meaning |
//! |---|---|---|
//! | `name` | yes | the tool's name, `^[a-zA-Z0-9_-]{1,64}$`, unique in the registry |
//! | `description` | yes | what the tool does, for the model |
//! | `type` | yes | `"function"` |
//! | `handler` | yes | the entry's handler label (builtin and internal entries name the function they run in `implementation.handler`) |
//! | `parameters` | yes | a JSON Schema whose `type` is `"object"` |
//! | `implementation` | yes | `{ type = "mock" \| "builtin" \| "internal" \| "http", ... }` |
//! | `metadata` | no | `title`, `icon`, `category`, `default_enabled` (default `true`), `hints` (`read_only`, `destructive`, `idempotent`, `open_world`), `timeout_ms`, `sequential`, `defer_loading` (left out of an agent's requests until a search loads it), `lenient_arguments` (read arguments of the wrong JSON type as the schema's type, see [`coerce_arguments`](crate::schema::coerce_arguments)); unknown keys are an error. Builtin and internal entries backed by a tool inherit its metadata for the keys they leave out |
//!
//! Unknown fields elsewhere in an entry are ignored with a warning.
//!
//! Invalid entries (a missing or mistyped field, a parameter schema that is not a JSON Schema
//! object, a duplicate name, an unknown implementation type or handler) are logged with
//! `tracing::error!`, skipped and listed in the [`LoadReport`]; the valid ones are registered.
//! A file that cannot be read or parsed at all is a [`ConfigError`] with the path and the
//! parser's line and column.
//!
//! Config tools are ordinary registry tools: their arguments are validated against the
//! configured schema before they run, and they can be toggled, listed and formatted like any
//! other tool.
//!
//! ```
//! use tool_core::{ToolContext, ToolRegistry};
//! use tool_core::config::{HandlerTable, ToolConfig};
//!
//! let config = ToolConfig::from_value(serde_json::json!({
//!     "tools": [{
//!         "name": "greet",
//!         "description": "Say hello.",
//!         "type": "function",
//!         "handler": "greet",
//!         "parameters": { "type": "object", "properties": {} },
//!         "implementation": { "type": "mock", "mock_response": "hello" }
//!     }, {
//!         "name": "fetch",
//!         "description": "Fetch a URL.",
//!         "type": "function",
//!         "handler": "fetch",
//!         "parameters": { "type": "object", "properties": {} },
//!         "implementation": { "type": "http", "url": "https://example.com" }
//!     }]
//! }))
//! .unwrap();
//!
//! let registry = ToolRegistry::new();
//! let report = config.register(&registry, &HandlerTable::with_builtins(ToolContext::default()));
//! assert_eq!(report.registered, ["greet"]);
//! assert_eq!(
//!     report.rejected[0].error.to_string(),
//!     "HTTP tools not yet supported (coming in v2)"
//! );
//! ```

mod entry;
mod handlers;

use std::{
    fmt, io,
    path::{Path, PathBuf},
    sync::Arc,
};

use serde_json::Value;

pub use handlers::{BUILTIN_NAMES, HandlerTable};

use crate::registry::{RegistryError, ToolRegistry};

/// The exact reason given for an entry whose implementation type is `http`.
pub const HTTP_NOT_SUPPORTED: &str = "HTTP tools not yet supported (coming in v2)";

/// The syntax of a configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigFormat {
    /// JSON: a top-level array of entries, or an object with a `tools` array.
    Json,
    /// TOML: a `[[tools]]` array of tables.
    Toml,
}

impl ConfigFormat {
    /// The format a file's extension names (`.json` or `.toml`, in any case), if any.
    pub fn from_path(path: impl AsRef<Path>) -> Option<Self> {
        let extension = path.as_ref().extension()?.to_str()?;
        if extension.eq_ignore_ascii_case("json") {
            Some(Self::Json)
        } else if extension.eq_ignore_ascii_case("toml") {
            Some(Self::Toml)
        } else {
            None
        }
    }
}

impl fmt::Display for ConfigFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Json => "JSON",
            Self::Toml => "TOML",
        })
    }
}

/// Why a configuration could not be read at all. Problems with single entries are not errors:
/// they are reported in the [`LoadReport`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read tool configuration {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: io::Error,
    },
    /// The file's extension names no known format; pass the format explicitly.
    #[error(
        "cannot tell the format of tool configuration {}; name it `.json` or `.toml`, or pass \
         the format explicitly",
        path.display()
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The text is not valid JSON or TOML.
    #[error(
        "cannot parse tool configuration {source_name} as {format} at line {line}, column \
         {column}: {message}"
    )]
    Parse {
        /// The file's path, or `<text>` for text that came from elsewhere.
        source_name: String,
        /// The syntax the text was parsed as.
        format: ConfigFormat,
        /// The 1-based line of the error.
        line: usize,
        /// The 1-based column (in characters) of the error.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The text is in a format this build cannot read: TOML without the `toml` feature.
    #[error(
        "cannot read tool configuration {source_name}: reading {format} needs tool-core's \
         `{feature}` feature"
    )]
    FormatDisabled {
        /// The file's path, or `<text>` for text that came from elsewhere.
        source_name: String,
        /// The format of the text.
        format: ConfigFormat,
        /// The cargo feature of `tool-core` that reads it.
        feature: &'static str,
    },
    /// The document parsed but does not hold a list of tools.
    #[error("tool configuration {source_name} {reason}")]
    Shape {
        /// The file's path, or `<value>` / `<text>`.
        source_name: String,
        /// What is wrong, for example "has no `tools` array".
        reason: String,
    },
}

/// A parsed tool configuration: the list of tool entries, not yet checked. Register it with
/// [`ToolConfig::register`].
#[derive(Clone, Debug, Default)]
pub struct ToolConfig {
    entries: Vec<Value>,
}

impl ToolConfig {
    /// Reads a file, choosing JSON or TOML by its extension.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let format = ConfigFormat::from_path(path).ok_or_else(|| ConfigError::UnknownFormat {
            path: path.to_owned(),
        })?;
        Self::from_file_as(path, format)
    }

    /// Reads a file in the given format, whatever its extension.
    pub fn from_file_as(path: impl AsRef<Path>, format: ConfigFormat) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_owned(),
            error,
        })?;
        parse(&text, format, &path.display().to_string())
    }

    /// Parses text in the given format.
    pub fn parse(text: &str, format: ConfigFormat) -> Result<Self, ConfigError> {
        parse(text, format, "<text>")
    }

    /// Takes an already-parsed document: an array of entries or an object with a `tools` array.
    pub fn from_value(value: Value) -> Result<Self, ConfigError> {
        from_document(value, "<value>")
    }

    /// The number of entries, valid or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the configuration lists no tools.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks every entry and registers the valid ones, in file order. Invalid entries are
    /// logged with `tracing::error!` naming the entry and the reason, and returned in the
    /// report; a duplicate name keeps the tool registered first.
    pub fn register(&self, registry: &ToolRegistry, handlers: &HandlerTable) -> LoadReport {
        let mut report = LoadReport::default();
        for (index, value) in self.entries.iter().enumerate() {
            let name = value.get("name").and_then(Value::as_str).map(str::to_owned);
            let outcome = entry::build(value, handlers).and_then(|tool| {
                registry
                    .register_arc(Arc::new(tool))
                    .map_err(EntryError::Registry)
            });
            match outcome {
                Ok(()) => {
                    if let Some(name) = name {
                        report.registered.push(name);
                    }
                }
                Err(error) => {
                    let rejected = RejectedEntry { index, name, error };
                    tracing::error!(
                        entry = %rejected.label(),
                        reason = %rejected.error,
                        "invalid tool definition skipped"
                    );
                    report.rejected.push(rejected);
                }
            }
        }
        report
    }
}

/// Reads a configuration file (format by extension) and registers its tools; see
/// [`ToolConfig::register`].
pub fn load_tools(
    registry: &ToolRegistry,
    path: impl AsRef<Path>,
    handlers: &HandlerTable,
) -> Result<LoadReport, ConfigError> {
    Ok(ToolConfig::from_file(path)?.register(registry, handlers))
}

/// What [`ToolConfig::register`] did: the tools registered and the entries skipped.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LoadReport {
    /// The names of the tools registered, in file order.
    pub registered: Vec<String>,
    /// The entries skipped, with the reason, in file order.
    pub rejected: Vec<RejectedEntry>,
}

impl LoadReport {
    /// Whether every entry was registered.
    pub fn is_clean(&self) -> bool {
        self.rejected.is_empty()
    }
}

/// An entry of a configuration that was not registered.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RejectedEntry {
    /// The entry's position in the file, from 0.
    pub index: usize,
    /// The entry's name, when it has one.
    pub name: Option<String>,
    /// Why it was skipped.
    pub error: EntryError,
}

impl RejectedEntry {
    /// How logs name the entry: `get_weather` or, without a usable name, `#3` (its position).
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => format!("#{}", self.index),
        }
    }
}

impl fmt::Display for RejectedEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool entry {}: {}", self.label(), self.error)
    }
}

/// Why one configuration entry was skipped.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// The entry is not a table / object.
    #[error("the entry must be a table of fields, not {found}")]
    NotATable {
        /// What was found instead.
        found: String,
    },
    /// A required field is missing (or an empty string).
    #[error("missing field `{field}`")]
    MissingField {
        /// The field, dotted for nested ones (`implementation.handler`).
        field: &'static str,
    },
    /// A field has the wrong type.
    #[error("field `{field}` must be {expected}, not {found}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// `type` is not `"function"`.
    #[error("field `type` must be \"function\", not {found}")]
    NotAFunction {
        /// The value found.
        found: String,
    },
    /// The parameters are not a valid JSON Schema with `"type": "object"`.
    #[error("invalid `parameters`: {reason}")]
    InvalidParameters {
        /// What is wrong with them.
        reason: String,
    },
    /// `implementation.type` is `http`, which is not supported yet.
    #[error("HTTP tools not yet supported (coming in v2)")]
    HttpNotSupported,
    /// `implementation.type` names no known implementation.
    #[error("unknown implementation type {kind:?}; use \"mock\", \"builtin\" or \"internal\"")]
    UnknownImplementation {
        /// The type found.
        kind: String,
    },
    /// `implementation.handler` names no function of the handler table.
    #[error("no {kind} handler named `{handler}` is registered{hint}")]
    UnknownHandler {
        /// `builtin` or `internal`.
        kind: &'static str,
        /// The handler named.
        handler: String,
        /// The known handlers of that kind, for the message.
        hint: String,
    },
    /// The `metadata` table is invalid.
    #[error("invalid `metadata`: {reason}")]
    InvalidMetadata {
        /// What is wrong.
        reason: String,
    },
    /// The registry refused the tool (a duplicate or invalid name, an empty description).
    #[error(transparent)]
    Registry(RegistryError),
}

fn parse(text: &str, format: ConfigFormat, source_name: &str) -> Result<ToolConfig, ConfigError> {
    let value = match format {
        ConfigFormat::Json => {
            serde_json::from_str::<Value>(text).map_err(|error| ConfigError::Parse {
                source_name: source_name.to_owned(),
                format,
                line: error.line(),
                column: error.column(),
                message: json_message(&error),
            })?
        }
        #[cfg(not(feature = "toml"))]
        ConfigFormat::Toml => {
            let _ = text;
            return Err(ConfigError::FormatDisabled {
                source_name: source_name.to_owned(),
                format,
                feature: "toml",
            });
        }
        #[cfg(feature = "toml")]
        ConfigFormat::Toml => toml::from_str::<Value>(text).map_err(|error| {
            let (line, column) = error
                .span()
                .map_or((1, 1), |span| line_and_column(text, span.start));
            ConfigError::Parse {
                source_name: source_name.to_owned(),
                format,
                line,
                column,
                message: error.message().trim().to_owned(),
            }
        })?,
    };
    from_document(value, source_name)
}

fn from_document(value: Value, source_name: &str) -> Result<ToolConfig, ConfigError> {
    let shape = |reason: String| ConfigError::Shape {
        source_name: source_name.to_owned(),
        reason,
    };
    let entries = match value {
        Value::Array(entries) => entries,
        Value::Object(mut document) => match document.remove("tools") {
            Some(Value::Array(entries)) => entries,
            Some(other) => {
                return Err(shape(format!(
                    "has a `tools` field that is {}, not an array of tool entries",
                    entry::describe(&other)
                )));
            }
            None => return Err(shape("has no `tools` array".to_owned())),
        },
        other => {
            return Err(shape(format!(
                "must be an array of tool entries or a table with a `tools` array, not {}",
                entry::describe(&other)
            )));
        }
    };
    Ok(ToolConfig { entries })
}

/// `serde_json`'s message without its own " at line L column C" suffix (the error says where).
fn json_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.rfind(" at line ") {
        Some(position) => message[..position].to_owned(),
        None => message,
    }
}

/// The 1-based line and column (in characters) of a byte offset.
#[cfg(feature = "toml")]
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |position| position + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "toml")]
    #[test]
    fn line_and_column_count_from_one() {
        let text = "a = 1\nbé = ?\n";
        assert_eq!(line_and_column(text, 0), (1, 1));
        assert_eq!(line_and_column(text, 6), (2, 1));
        assert_eq!(line_and_column(text, text.find('?').unwrap()), (2, 6));
    }

    #[test]
    fn format_from_extension_ignores_case() {
        assert_eq!(
            ConfigFormat::from_path("a/tools.TOML"),
            Some(ConfigFormat::Toml)
        );
        assert_eq!(
            ConfigFormat::from_path("tools.json"),
            Some(ConfigFormat::Json)
        );
        assert_eq!(ConfigFormat::from_path("tools.yaml"), None);
        assert_eq!(ConfigFormat::from_path("tools"), None);
    }
}
