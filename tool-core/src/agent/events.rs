//! [`AgentEvent`]: what [`Agent::stream_chat`](super::Agent::stream_chat) yields.

use crate::{
    model::{FinishReason, ToolCall, Usage},
    tool::JsonObject,
};

use super::AgentResponse;

/// One event of a streamed turn, in the order things happen: per step the model's text deltas
/// and tool-call events, then (when it called tools) one [`ToolResult`](Self::ToolResult) per
/// call in call order, then [`StepFinished`](Self::StepFinished); [`Done`](Self::Done) last.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A piece of the model's text.
    TextDelta(String),
    /// The model began a tool call.
    ToolCallStarted {
        /// The call's position in the model's answer.
        index: usize,
        /// The provider's id of the call.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call's position in the model's answer.
        index: usize,
        /// The fragment.
        arguments: String,
    },
    /// The model finished a tool call.
    ToolCallFinished {
        /// The whole call, arguments as the model wrote them.
        call: ToolCall,
        /// The arguments parsed, or `None` when they are not a JSON object (the tool then gets
        /// an error result telling the model what to fix).
        arguments: Option<JsonObject>,
    },
    /// A tool call's result, as appended to the conversation.
    ToolResult {
        /// The id of the call it answers.
        id: String,
        /// The tool's name.
        name: String,
        /// The result text, or the error string the model sees.
        content: String,
        /// Whether the call failed (unknown tool, invalid arguments, tool error, panic,
        /// timeout).
        is_error: bool,
    },
    /// Token counts of one model call.
    Usage(Usage),
    /// A step (one model call and the tool calls it asked for) is complete.
    StepFinished {
        /// The step's number, from 1.
        step: usize,
        /// Why the model stopped.
        finish_reason: FinishReason,
        /// How many tool calls the step ran.
        tool_calls: usize,
    },
    /// The turn is complete.
    Done(AgentResponse),
}
