//! What a tool knows about the call it is serving: [`CallContext`], with the application's
//! typed dependencies ([`Deps`]), a cancellation signal and a way to report [`Progress`].
//!
//! A tool registered once serves many chats, users and calls. Construction-time state (a
//! `#[context]` parameter, a `#[toolbox]`'s `&self`) is the same for all of them; a
//! `CallContext` is made for each call by whoever runs it (the [`Agent`](crate::Agent), an MCP
//! server, or the application through
//! [`ToolRegistry::execute_with`](crate::ToolRegistry::execute_with)) and says which call this is.
//!
//! A `#[tool]` fn receives it by declaring a parameter of type `&CallContext`:
//!
//! ```
//! use tool_core::{CallContext, Deps, ToolError, ToolRegistry, tool};
//!
//! /// The application's own per-run value: never part of any schema.
//! struct User {
//!     name: String,
//! }
//!
//! /// Greet the user this chat belongs to.
//! #[tool]
//! async fn greet(call: &CallContext, greeting: String) -> Result<String, ToolError> {
//!     let user: &User = call.dep()?;
//!     Ok(format!("{greeting}, {}! (call {})", user.name, call.call_id()))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! registry.register(Greet).unwrap();
//! let call = CallContext::new("call_1", "greet")
//!     .with_deps(Deps::new().with(User { name: "Ada".into() }));
//! let args = serde_json::from_str(r#"{"greeting": "Hello"}"#).unwrap();
//! assert_eq!(
//!     registry.execute_with("greet", args, call).await,
//!     "Hello, Ada! (call call_1)"
//! );
//! # });
//! ```

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    fmt,
    sync::Arc,
};

use tokio_util::sync::CancellationToken;

use crate::{context::ToolContext, message::Message};

/// The facts of one tool call, handed to [`ExecutableTool::execute_with`](crate::ExecutableTool::execute_with).
///
/// Cloning is cheap (one `Arc`). See the [module docs](self).
#[derive(Clone)]
pub struct CallContext {
    inner: Arc<Inner>,
}

struct Inner {
    call_id: String,
    tool_name: String,
    step: usize,
    turn: u64,
    messages: Arc<[Message]>,
    conversation: Option<ToolContext>,
    deps: Deps,
    cancellation: CancellationToken,
    progress: Option<ProgressSink>,
}

/// Where a call's progress reports go.
type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

impl CallContext {
    /// The context of call `call_id` of tool `tool_name`, with no conversation, no
    /// dependencies, a cancellation signal nobody fires and progress going nowhere.
    pub fn new(call_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                call_id: call_id.into(),
                tool_name: tool_name.into(),
                step: 0,
                turn: 0,
                messages: Arc::from(Vec::new()),
                conversation: None,
                deps: Deps::new(),
                cancellation: CancellationToken::new(),
                progress: None,
            }),
        }
    }

    fn edit(mut self, change: impl FnOnce(&mut Inner)) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            change(inner);
        } else {
            let mut inner = self.inner.cloned();
            change(&mut inner);
            self.inner = Arc::new(inner);
        }
        self
    }

    /// Sets the step (model call) of the turn this call belongs to, from 1.
    #[must_use]
    pub fn with_step(self, step: usize) -> Self {
        self.edit(|inner| inner.step = step)
    }

    /// Sets the turn number, from 1 (how many times the user has spoken in this chat).
    #[must_use]
    pub fn with_turn(self, turn: u64) -> Self {
        self.edit(|inner| inner.turn = turn)
    }

    /// Sets the conversation so far, as the tool may read it.
    #[must_use]
    pub fn with_messages(self, messages: impl Into<Arc<[Message]>>) -> Self {
        let messages = messages.into();
        self.edit(|inner| inner.messages = messages)
    }

    /// Sets the live context of the chat that made the call (its conversation, system prompt
    /// and session file), so tools such as `save_session_context` act on that chat.
    #[must_use]
    pub fn with_conversation(self, context: ToolContext) -> Self {
        self.edit(|inner| inner.conversation = Some(context))
    }

    /// Sets the application's dependencies for this call.
    #[must_use]
    pub fn with_deps(self, deps: Deps) -> Self {
        self.edit(|inner| inner.deps = deps)
    }

    /// Sets the cancellation signal: the caller fires it when the call's turn is cancelled.
    #[must_use]
    pub fn with_cancellation(self, token: CancellationToken) -> Self {
        self.edit(|inner| inner.cancellation = token)
    }

    /// Sends the call's progress reports to `sink`.
    #[must_use]
    pub fn with_progress(self, sink: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        let sink: ProgressSink = Arc::new(sink);
        self.edit(|inner| inner.progress = Some(sink))
    }

    /// The model's (or the caller's) id of this call.
    pub fn call_id(&self) -> &str {
        &self.inner.call_id
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &str {
        &self.inner.tool_name
    }

    /// The step (model call) of the turn that made this call, from 1; 0 outside an agent.
    pub fn step(&self) -> usize {
        self.inner.step
    }

    /// The turn that made this call, from 1; 0 outside an agent.
    pub fn turn(&self) -> u64 {
        self.inner.turn
    }

    /// The conversation up to and including the assistant message that made this call.
    pub fn messages(&self) -> &[Message] {
        &self.inner.messages
    }

    /// The live context of the chat that made the call, when there is one.
    pub fn conversation(&self) -> Option<&ToolContext> {
        self.inner.conversation.as_ref()
    }

    /// The application's dependencies for this call.
    pub fn deps(&self) -> &Deps {
        &self.inner.deps
    }

    /// The dependency of type `T`, or an error naming the missing type (a configuration
    /// mistake of the application, reported rather than panicking). `?` turns it into a
    /// [`ToolError`](crate::ToolError) the model reads.
    pub fn dep<T: Send + Sync + 'static>(&self) -> Result<&T, MissingDependency> {
        self.inner.deps.get::<T>().ok_or(MissingDependency {
            type_name: std::any::type_name::<T>(),
        })
    }

    /// The cancellation signal: fired when the turn that made this call is cancelled (its
    /// stream dropped, say). A tool doing long work can watch it with
    /// [`cancelled`](CancellationToken::cancelled) and stop early; the runner drops the call's
    /// future soon after in any case.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancellation
    }

    /// Whether the call's turn was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancellation.is_cancelled()
    }

    /// Whether the call's progress reaches anyone: [`report_progress`](Self::report_progress)
    /// does nothing when it does not.
    #[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
    pub(crate) fn wants_progress(&self) -> bool {
        self.inner.progress.is_some()
    }

    /// Reports progress: `fraction` of the work done (0.0 to 1.0; clamped) and an optional
    /// message. It reaches [`Agent::stream_chat`](crate::Agent::stream_chat) consumers as
    /// [`AgentEvent::ToolProgress`](crate::AgentEvent::ToolProgress) and MCP clients as progress
    /// notifications; with nobody listening it does nothing.
    pub fn report_progress(&self, fraction: f64, message: Option<&str>) {
        if let Some(sink) = &self.inner.progress {
            let fraction = if fraction.is_nan() {
                0.0
            } else {
                fraction.clamp(0.0, 1.0)
            };
            sink(Progress {
                call_id: self.inner.call_id.clone(),
                tool_name: self.inner.tool_name.clone(),
                fraction,
                message: message.map(str::to_owned),
            });
        }
    }
}

impl Inner {
    fn cloned(&self) -> Self {
        Self {
            call_id: self.call_id.clone(),
            tool_name: self.tool_name.clone(),
            step: self.step,
            turn: self.turn,
            messages: Arc::clone(&self.messages),
            conversation: self.conversation.clone(),
            deps: self.deps.clone(),
            cancellation: self.cancellation.clone(),
            progress: self.progress.clone(),
        }
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("call_id", &self.inner.call_id)
            .field("tool_name", &self.inner.tool_name)
            .field("step", &self.inner.step)
            .field("turn", &self.inner.turn)
            .field("messages", &self.inner.messages.len())
            .field("deps", &self.inner.deps)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// A tool's report of how far it got.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The call reporting.
    pub call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// The fraction of the work done, from 0.0 to 1.0.
    pub fraction: f64,
    /// What the tool is doing, if it said.
    pub message: Option<String>,
}

/// The application's typed dependencies for a run (a user id, a database pool, an auth token),
/// one value per type, like pydantic-ai's `RunContext.deps`. They are never part of any schema:
/// tools read them from their [`CallContext`]. Cloning is cheap (values are shared).
///
/// ```
/// use tool_core::Deps;
///
/// struct UserId(u64);
/// let deps = Deps::new().with(UserId(7)).with(String::from("token"));
/// assert_eq!(deps.get::<UserId>().map(|user| user.0), Some(7));
/// assert_eq!(deps.get::<String>().map(String::as_str), Some("token"));
/// assert!(deps.get::<u32>().is_none());
/// ```
#[derive(Clone, Default)]
pub struct Deps {
    values: HashMap<TypeId, (Arc<dyn Any + Send + Sync>, &'static str)>,
}

impl Deps {
    /// No dependencies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the value of type `T`.
    #[must_use]
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Adds (or replaces) the value of type `T`.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.values.insert(
            TypeId::of::<T>(),
            (Arc::new(value), std::any::type_name::<T>()),
        );
    }

    /// Adds every value of `other`, replacing values of the same types.
    pub fn extend(&mut self, other: &Deps) {
        self.values
            .extend(other.values.iter().map(|(id, value)| (*id, value.clone())));
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|(value, _)| value.downcast_ref::<T>())
    }

    /// Whether there are no dependencies.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for Deps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.values.values().map(|(_, name)| name))
            .finish()
    }
}

/// [`CallContext::dep`] found no dependency of the type asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the application gave this tool no `{type_name}`")]
pub struct MissingDependency {
    /// The missing type's name, as [`std::any::type_name`] spells it.
    pub type_name: &'static str,
}
