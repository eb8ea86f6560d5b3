//! The conversation's parts, in no provider's shape: messages (system, user, assistant text,
//! assistant tool calls, tool results), tool calls, token usage and finish reasons.
//!
//! The bottom floor of the crate: it imports nothing else of it. The tools ([`ToolContext`]
//! holds these messages) and the model clients (each converts them to and from its wire
//! format) both build on it.
//!
//! [`ToolContext`]: crate::ToolContext

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod shared;
mod usage;

pub use shared::SharedStr;
pub use usage::Usage;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The instructions.
        content: String,
    },
    /// What the user said.
    User {
        /// The user's text.
        content: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text (may be empty when the model only called tools).
        #[serde(default)]
        content: String,
        /// The tool calls, in the order the model made them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Provider data of the answer that belongs to none of its calls, to be sent back on the
        /// next request to the same provider: a search the provider ran on its side that no
        /// call followed (an answer of text alone). Keyed by the client that wrote it; the
        /// other clients ignore it. Left out of JSON when `None`, so conversations saved before
        /// it existed load unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// The result of one tool call.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The called tool's name (Gemini matches results by name and position).
        name: String,
        /// The result text, or the error string.
        content: String,
        /// Whether the call failed (the tool returned an error, panicked or timed out, the
        /// arguments were invalid, the tool is unknown, or the call was not run). Sent to the
        /// providers whose format has a place for it; left out of JSON when false, so
        /// conversations saved before it existed load unchanged.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// The tools this result loads, by name: the matches of the agent's tool search. Where
        /// the request uses the provider's own client-side search form
        /// ([`NativeSearch::Client`](crate::model::NativeSearch::Client)), Anthropic gets them as
        /// `tool_reference` blocks and OpenAI Responses as a `tool_search_output` item holding
        /// their definitions; everywhere else `content`, which lists them as text, is sent
        /// alone. Left out of JSON when empty, so conversations saved before it existed load
        /// unchanged.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_references: Vec<String>,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::assistant_with_calls(content, Vec::new())
    }

    /// An assistant message with text (possibly empty) and tool calls.
    pub fn assistant_with_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls,
            provider_metadata: None,
        }
    }

    /// A tool result answering the call `tool_call_id` of tool `name`.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self::tool(tool_call_id.into(), name.into(), content.into(), false)
    }

    /// A failed tool call's result: the error string the model sees, flagged as an error.
    pub fn tool_error(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self::tool(tool_call_id.into(), name.into(), content.into(), true)
    }

    fn tool(tool_call_id: String, name: String, content: String, is_error: bool) -> Self {
        Self::Tool {
            tool_call_id,
            name,
            content,
            is_error,
            tool_references: Vec::new(),
        }
    }

    /// This tool result, loading the tools named (see
    /// [`Message::Tool::tool_references`](Message::Tool)); other messages are returned as they
    /// are.
    #[must_use]
    pub fn with_tool_references(mut self, names: Vec<String>) -> Self {
        if let Self::Tool {
            tool_references, ..
        } = &mut self
        {
            *tool_references = names;
        }
        self
    }

    /// The tools a tool result loads (see [`Message::Tool`]); empty for other messages.
    pub fn tool_references(&self) -> &[String] {
        match self {
            Self::Tool {
                tool_references, ..
            } => tool_references,
            _ => &[],
        }
    }

    /// Whether this is a failed tool call's result.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Tool { is_error: true, .. })
    }

    /// The message's text content.
    pub fn content(&self) -> &str {
        match self {
            Self::System { content }
            | Self::User { content }
            | Self::Assistant { content, .. }
            | Self::Tool { content, .. } => content,
        }
    }
}

/// A tool call the model made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id of the call (generated when the provider gives none).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text, exactly as the model produced them (possibly invalid);
    /// shared with the stream's events, not copied.
    pub arguments: SharedStr,
    /// Provider data that must be sent back with the call on the next request (for example
    /// Gemini's `thoughtSignature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_metadata: Option<Value>,
}

impl ToolCall {
    /// A call of `name` with the given id and JSON arguments text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<SharedStr>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            provider_metadata: None,
        }
    }
}

/// Why the model stopped generating.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// The model called tools and waits for their results.
    ToolCalls,
    /// The token limit was reached; the answer (or a tool call) may be cut off.
    Length,
    /// The provider's content filter or a refusal stopped the answer.
    ContentFilter,
    /// Another reason, as the provider named it.
    Other(String),
}
