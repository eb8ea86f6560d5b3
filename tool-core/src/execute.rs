//! Running a tool safely: argument validation, timeouts, the panic guard, and the exact strings
//! the model sees when something goes wrong.

use std::{
    any::Any,
    fmt,
    future::Future,
    panic::AssertUnwindSafe,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use serde_json::Value;

use crate::{
    registry::ToolEntry,
    tool::{JsonObject, ToolError},
};

/// Why a tool call did not produce a result. [`ExecuteError::to_model_string`] gives the text
/// the model sees; `Display` gives a short message for logs.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteError {
    /// No tool has this name.
    #[error("tool `{name}` not found")]
    NotFound {
        /// The name the caller asked for.
        name: String,
    },
    /// The tool exists but is disabled.
    #[error("tool `{name}` is disabled")]
    Disabled {
        /// The tool's name.
        name: String,
    },
    /// The arguments do not match the tool's schema or its typed arguments.
    #[error("invalid arguments for `{name}`: {message}")]
    InvalidArguments {
        /// The tool's name.
        name: String,
        /// What is wrong and where, for example `at /city: expected a string, got 42`.
        message: String,
    },
    /// The tool returned an error.
    #[error("tool `{name}` failed: {error}")]
    Failed {
        /// The tool's name.
        name: String,
        /// The tool's error.
        error: ToolError,
    },
    /// The tool panicked; the registry caught it and stays usable.
    #[error("tool `{name}` panicked: {message}")]
    Panicked {
        /// The tool's name.
        name: String,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// The tool ran longer than its timeout and was stopped.
    #[error("tool `{name}` timed out after {after:?}")]
    TimedOut {
        /// The tool's name.
        name: String,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// The tool asked the model to try again ([`ToolError::retry`]).
    #[error("tool `{name}` asked for a retry: {message}")]
    RetryRequested {
        /// The tool's name.
        name: String,
        /// What the model should change.
        message: String,
    },
}

impl ExecuteError {
    /// The name of the tool the call was for.
    pub fn tool_name(&self) -> &str {
        match self {
            Self::NotFound { name }
            | Self::Disabled { name }
            | Self::InvalidArguments { name, .. }
            | Self::Failed { name, .. }
            | Self::Panicked { name, .. }
            | Self::TimedOut { name, .. }
            | Self::RetryRequested { name, .. } => name,
        }
    }

    /// The exact text the model receives for this error:
    ///
    /// | case | text |
    /// |---|---|
    /// | tool error | `Error executing {name}: {message}` |
    /// | panic | `Error executing {name}: tool panicked: {message}` |
    /// | timeout | `Error executing {name}: timed out after {seconds}s` |
    /// | invalid arguments | `Error: invalid arguments for {name}: {what is wrong}` |
    /// | unknown tool | `Error: tool '{name}' not found` |
    /// | disabled tool | `Error: tool '{name}' is not available (it is disabled)` |
    /// | retry requested | `Error: {name} asks you to try again: {message}` |
    pub fn to_model_string(&self) -> String {
        match self {
            Self::NotFound { name } => format!("Error: tool '{name}' not found"),
            Self::Disabled { name } => {
                format!("Error: tool '{name}' is not available (it is disabled)")
            }
            Self::InvalidArguments { name, message } => {
                format!("Error: invalid arguments for {name}: {message}")
            }
            Self::Failed { name, error } => format!("Error executing {name}: {error}"),
            Self::Panicked { name, message } => {
                format!("Error executing {name}: tool panicked: {message}")
            }
            Self::TimedOut { name, after } => {
                format!(
                    "Error executing {name}: timed out after {}",
                    DisplaySeconds(*after)
                )
            }
            Self::RetryRequested { name, message } => {
                format!("Error: {name} asks you to try again: {message}")
            }
        }
    }
}

struct DisplaySeconds(Duration);

impl fmt::Display for DisplaySeconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0.as_millis();
        if millis % 1000 == 0 {
            write!(f, "{}s", millis / 1000)
        } else {
            write!(f, "{millis}ms")
        }
    }
}

/// A tool call, polled as a plain future (no extra state machine around the tool's own).
///
/// The tool is called on the first poll, under the same panic guard as every poll, so a tool
/// that panics while making its future, while running or while being dropped becomes
/// [`ExecuteError::Panicked`], and a call that completes at once crosses the guard once. A
/// timeout's timer is made only when the tool is still running after its first poll.
pub(crate) struct GuardedCall<'a> {
    entry: &'a ToolEntry,
    /// The arguments, until the first poll calls the tool with them.
    args: Option<JsonObject>,
    /// The call's context, when the caller gave one: the tool is then called through
    /// `execute_with`.
    context: Option<crate::CallContext>,
    /// The tool's future while it runs.
    call: Option<ToolFuture<'a>>,
    timeout: Option<Duration>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send + 'a>>;

/// A step of a call: the tool's result, or the timeout that elapsed first.
type Step = Result<Result<String, ToolError>, Duration>;

impl<'a> GuardedCall<'a> {
    /// A call of the entry's tool with `args`, made when the call is first polled.
    pub(crate) fn new(
        entry: &'a ToolEntry,
        args: JsonObject,
        context: Option<crate::CallContext>,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            entry,
            args: Some(args),
            context,
            call: None,
            timeout,
            timer: None,
        }
    }

    /// Calls the tool if it has not been called, then polls it, dropping its future as soon as
    /// it is ready or timed out. Runs inside the panic guard.
    fn step(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        if let Some(args) = self.args.take() {
            let tool = self.entry.tool();
            self.call = Some(match self.context.take() {
                None => tool.execute(args),
                Some(context) => tool.execute_with(args, context),
            });
        }
        let Some(call) = &mut self.call else {
            return Poll::Ready(Ok(Err(ToolError::new(
                "the call was polled again after it finished",
            ))));
        };
        if let Poll::Ready(result) = call.as_mut().poll(cx) {
            self.stop();
            return Poll::Ready(Ok(result));
        }
        let Some(after) = self.timeout else {
            return Poll::Pending;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(after)));
        if timer.as_mut().poll(cx).is_ready() {
            self.stop();
            return Poll::Ready(Err(after));
        }
        Poll::Pending
    }

    /// Drops the tool's future and the timer.
    fn stop(&mut self) {
        self.call = None;
        self.timer = None;
    }
}

impl Future for GuardedCall<'_> {
    type Output = Result<String, ExecuteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is `Unpin` (the futures are boxed).
        let this = self.get_mut();
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| this.step(cx)));
        let name = &**this.entry.name();
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Ok(result))) => Poll::Ready(outcome(name, result)),
            Ok(Poll::Ready(Err(after))) => Poll::Ready(Err(ExecuteError::TimedOut {
                name: name.to_owned(),
                after,
            })),
            Err(payload) => {
                // A future that panicked is not polled again; drop it under a guard too.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| this.stop()));
                Poll::Ready(Err(ExecuteError::Panicked {
                    name: name.to_owned(),
                    message: panic_message(payload.as_ref()),
                }))
            }
        }
    }
}

/// The registry's outcome for what a tool returned.
fn outcome(name: &str, result: Result<String, ToolError>) -> Result<String, ExecuteError> {
    match result {
        Ok(text) => Ok(text),
        Err(error) if error.is_retry() => Err(ExecuteError::RetryRequested {
            name: name.to_owned(),
            message: error.message().to_owned(),
        }),
        Err(error) if error.is_invalid_arguments() => Err(ExecuteError::InvalidArguments {
            name: name.to_owned(),
            message: strip_invalid_prefix(name, error.message()).to_owned(),
        }),
        Err(error) => Err(ExecuteError::Failed {
            name: name.to_owned(),
            error,
        }),
    }
}

/// Narrowing errors already say `invalid arguments for {name}: `; keep the model string from
/// saying it twice.
fn strip_invalid_prefix<'a>(name: &str, message: &'a str) -> &'a str {
    message
        .strip_prefix("invalid arguments for ")
        .and_then(|rest| rest.strip_prefix(name))
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

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
pub(crate) fn describe_schema_error(error: &jsonschema::ValidationError<'_>) -> String {
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
                show(instance)
            )
        }
        Kind::Enum { options } => format!("expected one of {options}, got {}", show(instance)),
        Kind::Constant { expected_value } => {
            format!("expected {expected_value}, got {}", show(instance))
        }
        Kind::Minimum { limit } => format!("expected a number >= {limit}, got {}", show(instance)),
        Kind::Maximum { limit } => format!("expected a number <= {limit}, got {}", show(instance)),
        Kind::ExclusiveMinimum { limit } => {
            format!("expected a number > {limit}, got {}", show(instance))
        }
        Kind::ExclusiveMaximum { limit } => {
            format!("expected a number < {limit}, got {}", show(instance))
        }
        _ => error.to_string(),
    };
    if path.is_empty() {
        what
    } else {
        format!("at {path}: {what}")
    }
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

/// A short rendering of a JSON value for error messages.
pub(crate) fn show(value: &Value) -> String {
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

/// Describes a serde error from turning arguments into a typed struct, in the same words as the
/// schema errors: `at /city: expected a string, got 42`, `missing required argument 'city'`.
pub(crate) fn describe_serde_error(
    path: &serde_path_to_error::Path,
    error: &serde_json::Error,
) -> String {
    describe_serde_message(&json_pointer(path), error)
}

/// [`describe_serde_error`] for an error whose place is known only as a JSON pointer (empty for
/// the root).
pub(crate) fn describe_serde_message(pointer: &str, error: &serde_json::Error) -> String {
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
            Some((unexpected, expected)) => {
                format!("expected {expected}, got {}", unexpected_value(unexpected))
            }
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
    for segment in path.iter() {
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
            "at /days: expected u8, got -1"
        );
    }

    #[test]
    fn timeouts_read_in_seconds_or_milliseconds() {
        assert_eq!(DisplaySeconds(Duration::from_secs(30)).to_string(), "30s");
        assert_eq!(
            DisplaySeconds(Duration::from_millis(50)).to_string(),
            "50ms"
        );
    }
}
