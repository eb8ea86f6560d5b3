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

use std::{fmt, sync::Arc};

use serde::{Deserialize, Serialize};

use crate::{message::ToolCall, tool::JsonObject, tool::ToolMetadata};

/// Which calls need the application's approval before they run. The default asks for none
/// beyond the tools whose metadata says `needs_approval`.
///
/// ```
/// use tool_core::agent::ApprovalPolicy;
///
/// // Every destructive tool, and writes outside `drafts/`.
/// let policy = ApprovalPolicy::new()
///     .destructive_tools(true)
///     .when(|call, arguments| {
///         call.name == "write_file"
///             && !arguments
///                 .and_then(|args| args.get("path"))
///                 .and_then(|path| path.as_str())
///                 .is_some_and(|path| path.starts_with("drafts/"))
///     });
/// # let _ = policy;
/// ```
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

    /// Also every call for which `predicate` returns `true`, given the call and its parsed
    /// arguments (`None` when they are not a JSON object).
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

/// A call waiting for the application's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The call, as the model made it.
    pub call: ToolCall,
    /// Its arguments parsed, or `None` when they are not a JSON object.
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
