//! Running a tool call safely, after the registry has found the tool: the arguments prepared
//! and validated (`arguments.rs`), the tool polled under a panic guard and a timeout
//! (`guard.rs`), and the exact strings the model sees when something goes wrong
//! ([`ExecuteError`] here, argument errors in `messages.rs`).
//!
//! This module knows tools, not the registry: the registry depends on it, never the reverse.

mod arguments;
mod guard;
mod messages;

pub(crate) use arguments::{ArgumentChecks, TextStart, parse_arguments};
pub(crate) use guard::{Call, GuardedCall, Target, guarded, outcome_of};
pub(crate) use messages::{
    describe_schema_errors, describe_schema_errors_after_taking, describe_serde_error,
    describe_serde_error_at, describe_serde_error_within,
};

use std::{fmt, time::Duration};

use crate::tool::ToolError;

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

/// What the model sees of a call's outcome: the result, or the error's model string.
#[inline]
pub(crate) fn model_text(outcome: Result<String, ExecuteError>) -> String {
    outcome.unwrap_or_else(|error| error.to_model_string())
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
        if millis.is_multiple_of(1000) {
            write!(f, "{}s", millis / 1000)
        } else {
            write!(f, "{millis}ms")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_in_seconds_or_milliseconds() {
        assert_eq!(DisplaySeconds(Duration::from_secs(30)).to_string(), "30s");
        assert_eq!(
            DisplaySeconds(Duration::from_millis(50)).to_string(),
            "50ms"
        );
    }
}
