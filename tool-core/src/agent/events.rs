//! [`AgentEvent`]: what [`Agent::stream_chat`](super::Agent::stream_chat) yields.

use crate::{
    call::Progress,
    message::{FinishReason, SharedStr, ToolCall, Usage},
    model::ToolCallStart,
    schema::ToolCheckError,
    tool::JsonObject,
};

use super::{AgentResponse, ApprovalRequest};

/// One event of a streamed turn, in the order things happen: per step the model's text deltas
/// and tool-call events, then (when it called tools) one [`ToolResult`](Self::ToolResult) per
/// call in call order, then [`StepFinished`](Self::StepFinished); [`Done`](Self::Done) last.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A piece of the model's text.
    TextDelta(String),
    /// The model began a tool call (the model's own event, passed on as it came).
    ToolCallStarted(ToolCallStart),
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call's position in the model's answer.
        index: usize,
        /// The fragment (shared with the model's event, not copied).
        arguments: SharedStr,
    },
    /// The model finished a tool call. It reaches the consumer before the call starts running.
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
        /// timeout, a requested retry, a denial, not run).
        is_error: bool,
        /// How the call went, telling a retry the tool asked for from a hard failure.
        kind: ToolResultKind,
    },
    /// A call waits for the application's approval; the turn ends after this step with it in
    /// [`AgentResponse::pending_approvals`]. Answer with
    /// [`Agent::continue_with`](super::Agent::continue_with).
    ApprovalRequested(ApprovalRequest),
    /// The call's tool reads lenient arguments, and some of the model's values were read as
    /// the type its schema asks for; sent before the call's result.
    ArgumentsCoerced {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// What was read as what.
        coercions: Vec<crate::schema::Coercion>,
    },
    /// The model's provider cannot accept these tools, so this turn neither offers nor runs
    /// them (sent once per turn, before the first request that leaves them out). Only with
    /// [`AgentOptions::skip_unsupported_tools`](super::AgentOptions::skip_unsupported_tools);
    /// otherwise the turn fails with
    /// [`AgentError::UnsupportedTools`](super::AgentError::UnsupportedTools).
    ToolsSkipped(ToolCheckError),
    /// The model searched the deferred tools with `search_tools`; sent after the step's
    /// results.
    ToolSearch {
        /// The query (its first hundred characters).
        query: String,
        /// The tools found, best first (empty when the query was refused).
        matches: Vec<String>,
        /// Those of them this search loaded (the others were loaded already).
        loaded: Vec<String>,
    },
    /// The model called a deferred tool it had not searched for: the tool is loaded for the
    /// rest of the conversation and the call runs. Sent before the call's result.
    DeferredToolCalled {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A running tool reported its progress
    /// ([`CallContext::report_progress`](crate::CallContext::report_progress)).
    ToolProgress(Progress),
    /// Token counts of one model call.
    Usage(Usage),
    /// A step (one model call and the tool calls it asked for) is complete.
    StepFinished {
        /// The step's number, from 1, over the whole turn: a turn continued after approval
        /// ([`Agent::stream_continue_with`](super::Agent::stream_continue_with)) goes on from
        /// the step it stopped at.
        step: usize,
        /// Why the model stopped.
        finish_reason: FinishReason,
        /// How many tool calls the step ran.
        tool_calls: usize,
    },
    /// The turn is complete.
    Done(AgentResponse),
}

/// How a tool call went, as the model was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolResultKind {
    /// The tool returned a result.
    Success,
    /// The tool failed, panicked or timed out, or the tool is unknown or disabled.
    Error,
    /// The arguments were not valid for the tool; the model was told what to fix.
    InvalidArguments,
    /// The tool asked the model to try again ([`ToolError::retry`](crate::ToolError::retry)).
    RetryRequested,
    /// The application denied the call.
    Denied,
    /// The call was not run (the step limit was reached).
    NotRun,
}
