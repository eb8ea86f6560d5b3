//! Human approval before a tool runs: which calls need it ([`ApprovalPolicy`]), what the
//! application is asked ([`ApprovalRequest`]) and what it answers ([`ApprovalDecision`]).
//!
//! A call needs approval when its tool's metadata says
//! [`needs_approval`](crate::ToolMetadata::needs_approval), when the policy asks for every
//! destructive tool and the tool's hints say it is one, or when the policy's predicate says so
//! for this call's arguments. The turn then stops before running it: the other calls of the
//! step run as usual, and the turn ends with the pending calls in
//! [`AgentResponse::pending_approvals`](crate::AgentResponse::pending_approvals) (and as
//! [`AgentEvent::ApprovalRequested`](crate::AgentEvent::ApprovalRequested) in a stream). The
//! application answers every pending call with [`Agent::continue_with`](crate::Agent::continue_with);
//! a denied call gets a result telling the model it was denied, and why.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::{Deserialize, Serialize};

use crate::{message::ToolCall, tool::JsonObject, tool::ToolMetadata};

/// Which calls need the application's approval before they run. The default asks for none
/// beyond the tools whose metadata says `needs_approval`.
///
/// A predicate that looks at a path sees it as the model wrote it: check it as the file tools
/// resolve it, with [`resolved_path`], or `drafts/../notes.txt` passes for a path in `drafts/`.
///
/// ```
/// use tool_core::agent::{ApprovalPolicy, resolved_path};
///
/// // Every destructive tool, and any call with a `path` outside `drafts/`.
/// let policy = ApprovalPolicy::new()
///     .destructive_tools(true)
///     .when(|_call, arguments| {
///         arguments
///             .and_then(|args| args.get("path"))
///             .is_some_and(|path| {
///                 !path
///                     .as_str()
///                     .and_then(resolved_path)
///                     .is_some_and(|path| path.starts_with("drafts"))
///             })
///     });
/// # let _ = policy;
/// ```
///
/// # What a decision rests on
///
/// The arguments the tool will get: the policy's predicate, the [`ApprovalRequest`] and the
/// tool see one object, read leniently first when the tool is lenient (`"force": "true"` sent
/// for a boolean is `true` to all three). A call whose arguments are not a JSON
/// object needs no approval: it never runs, it only gets an invalid-arguments error.
///
/// One call, one decision: calls of one step that share an id (a model may repeat `call_1`)
/// get ids of their own when the step is read, before anything is decided. The first keeps its
/// id, a later one gets the id with `_2` appended (`_3`, ..., the first one free), and that id
/// is the call's everywhere after: in the events, the [`ApprovalRequest`], the conversation and
/// the requests sent back to the provider, which so pair each result with its call (the
/// suffix keeps to the characters every provider accepts in an id). Gemini gets back the ids it
/// gave, kept beside the call. Two decisions for one call are refused
/// ([`AgentError::InvalidDecisions`](crate::AgentError::InvalidDecisions)).
#[derive(Clone, Default)]
pub struct ApprovalPolicy {
    destructive: bool,
    predicate: Option<Predicate>,
}

type Predicate = Arc<dyn Fn(&ToolCall, Option<&JsonObject>) -> bool + Send + Sync>;

impl ApprovalPolicy {
    /// Only the tools whose metadata says `needs_approval`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also every tool whose hints say `destructive` (and not read-only).
    #[must_use]
    pub fn destructive_tools(mut self, value: bool) -> Self {
        self.destructive = value;
        self
    }

    /// Also every call for which `predicate` returns `true`, given the call and the arguments
    /// its tool will get: parsed, and read leniently when the tool is lenient (a `"true"` the
    /// model sent for a boolean is `true` here, as it is for the tool). The agent asks only
    /// about arguments that are a JSON object (the others never reach a tool), so it never
    /// passes `None`.
    #[must_use]
    pub fn when(
        mut self,
        predicate: impl Fn(&ToolCall, Option<&JsonObject>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.predicate = Some(Arc::new(predicate));
        self
    }

    /// Whether `call` (of a tool with `metadata`, `None` when the tool is unknown) needs
    /// approval. Calls of unknown tools never do: they only get an error result.
    pub fn requires(
        &self,
        call: &ToolCall,
        arguments: Option<&JsonObject>,
        metadata: Option<&ToolMetadata>,
    ) -> bool {
        let Some(metadata) = metadata else {
            return false;
        };
        metadata.needs_approval
            || (self.destructive
                && metadata.hints.destructive == Some(true)
                && metadata.hints.read_only != Some(true))
            || self
                .predicate
                .as_ref()
                .is_some_and(|predicate| predicate(call, arguments))
    }
}

impl fmt::Debug for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalPolicy")
            .field("destructive", &self.destructive)
            .field("predicate", &self.predicate.is_some())
            .finish()
    }
}

/// `path` as the file tools resolve it under their root, for an approval predicate: relative,
/// `.` dropped and each `..` applied (`drafts/../notes.txt` is `notes.txt`). `None` when it is
/// absolute or a `..` climbs out of the root, which no predicate should let pass unasked.
/// Compare the result by components (`Path::starts_with("drafts")`), not as text.
pub fn resolved_path(path: &str) -> Option<PathBuf> {
    crate::builtin::lexical_parts(Path::new(path)).map(|parts| parts.iter().collect())
}

/// A call waiting for the application's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The call, as the model made it, with an id no other call of its step has (see
    /// [`ApprovalPolicy`]).
    pub call: ToolCall,
    /// The arguments the tool gets if the call is approved: parsed, and read leniently when the
    /// tool is lenient. `None` only for a call saved by an earlier version whose arguments are
    /// not a JSON object (it gets an error, whatever the decision).
    pub arguments: Option<JsonObject>,
}

/// The application's answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run the call.
    Approve,
    /// Do not run it; the model is told it was denied, with the reason when there is one.
    Deny {
        /// Why, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl ApprovalDecision {
    /// Run the call.
    pub fn approve() -> Self {
        Self::Approve
    }

    /// Do not run the call, with no reason given.
    pub fn deny() -> Self {
        Self::Deny { reason: None }
    }

    /// Do not run the call, for this reason.
    pub fn deny_because(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: Some(reason.into()),
        }
    }
}

/// The result a denied call gets.
pub(crate) fn denied_result(name: &str, reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|reason| !reason.is_empty()) {
        Some(reason) => format!("Error: the user denied this call of {name}: {reason}"),
        None => format!("Error: the user denied this call of {name}"),
    }
}
