//! [`Agent`]: a conversation with a model that can call tools, and the tool-call loop that runs
//! it.
//!
//! The agent owns a [`ToolContext`] that holds the conversation (so tools such as
//! `save_session_context` see it) and a [`ToolRegistry`] (the default one, or a shared one). Each
//! [`chat`](Agent::chat) or [`stream_chat`](Agent::stream_chat) is one *turn*: the user's text
//! is appended, then the model is asked, its tool calls are run, their results appended, and the
//! model asked again, until it answers without calling tools or `max_steps` model calls were
//! made.
//!
//! ```
//! use tool_core::{
//!     Agent, AgentOptions,
//!     model::{ScriptedModel, ScriptedResponse},
//! };
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "buy milk").unwrap();
//! let model = ScriptedModel::new([
//!     ScriptedResponse::tool_call("call_1", "read_file", r#"{"path": "notes.txt"}"#),
//!     ScriptedResponse::text("Your note says: buy milk."),
//! ]);
//! let agent = Agent::new(model.clone(), AgentOptions::new().root_dir(dir.path()));
//! let reply = agent.chat("What is in notes.txt?").await.unwrap();
//! assert_eq!(reply.text, "Your note says: buy milk.");
//! // The second request carried the tool's result, answering the call by its id.
//! let second = &model.requests()[1];
//! assert!(second.messages.iter().any(|message| matches!(
//!     message,
//!     tool_core::model::Message::Tool { tool_call_id, content, .. }
//!         if tool_call_id == "call_1" && content == "buy milk"
//! )));
//! # });
//! ```

mod approval;
mod events;
mod hybrid;
mod output;
mod partial;
mod run;
mod search;
mod step;
mod typed;

use std::{path::PathBuf, sync::Arc, time::Duration};

use futures::{FutureExt as _, StreamExt as _, stream::BoxStream};
use serde_json::Value;

pub use approval::{ApprovalDecision, ApprovalPolicy, ApprovalRequest, resolved_path};
pub use events::{AgentEvent, ToolResultKind};
pub use hybrid::{HybridMatches, HybridSearch};
pub use output::{OUTPUT_TOOL, OutputEvent, OutputMode, OutputOptions, OutputResponse};
pub use search::{DeferBudget, DeferredCalls, SEARCH_TOOL};

use crate::{
    builtin::register_builtins,
    call::Deps,
    context::{Conversation, LoadContextError, SavedConversation, ToolContext, ToolContextOptions},
    message::{FinishReason, Message, Usage},
    model::{ChatModel, ModelSettings, ProviderError, ToolChoice},
    registry::{RegistryError, RegistryOptions, RegistrySnapshot, ToolRegistry, ToolToggles},
    schema::ToolCheckError,
    tool::{ChatTool, ExecutableTool, JsonObject},
};

/// The default of [`AgentOptions::max_steps`].
pub const DEFAULT_MAX_STEPS: usize = 10;

/// The default of [`AgentOptions::tool_concurrency`].
pub const DEFAULT_TOOL_CONCURRENCY: usize = 8;

/// The default of [`AgentOptions::search_results`].
pub const DEFAULT_SEARCH_RESULTS: usize = 5;

/// The default of [`AgentOptions::max_tool_retries`].
pub const DEFAULT_MAX_TOOL_RETRIES: u32 = 2;

/// Settings of an [`Agent`]. `Default` gives no system prompt, `session_context.json` as the
/// session file, a fresh scratch directory as the file tools' root (see
/// [`ToolContextOptions::root_dir`]), 10 steps, up to 8 tool calls at once and the default
/// registry.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgentOptions {
    /// The context the agent builds: system prompt, the file `save_session_context` (and
    /// [`Agent::save_context`]) writes, the file tools' root and read limit. Not used when
    /// [`context`](Self::context) is set.
    ///
    /// The built-in file tools (`read_file`, `write_file`) work in the root directory of the
    /// agent that calls them, in a registry brought in with [`registry`](Self::registry) too.
    /// Given no `root_dir`, that is a fresh, empty scratch directory removed with the agent, so
    /// a model never reads or writes the application's own files unless the application chose
    /// a directory. [`Agent::context`]`().root_dir()` says where it is.
    pub context_options: ToolContextOptions,
    /// The most model calls one turn may make (default 10). A turn whose model still calls
    /// tools at the last step ends with [`AgentError::MaxSteps`].
    pub max_steps: usize,
    /// The most tool calls of one step run at once (default 8; 1 runs them one by one).
    pub tool_concurrency: usize,
    /// Run every tool call in order, one at a time (default `false`; a tool can ask for this on
    /// its own with [`ToolMetadata::sequential`](crate::ToolMetadata::sequential)).
    pub sequential_tools: bool,
    /// The timeout of the agent's calls to tools that set none in their metadata. It applies to
    /// a shared [`registry`](Self::registry) too, for this agent's calls only, in place of the
    /// registry's own default; unset, the registry's default applies.
    pub tool_timeout: Option<Duration>,
    /// Sampling settings sent with every request.
    pub model_settings: ModelSettings,
    /// Use this registry instead of building the default one (shared with other agents, chat
    /// sessions or a server). Its built-in tools work with this agent's context when this agent
    /// calls them: its root directory and session file, not those of the context the registry
    /// was built with.
    pub registry: Option<Arc<ToolRegistry>>,
    /// Per-session tool toggles over the registry: [`Agent::enable_tool`] and
    /// [`Agent::disable_tool`] then change these instead of the (possibly shared) registry.
    pub toggles: Option<ToolToggles>,
    /// Use this context (and its system prompt, session file and root directory) instead of
    /// building one from the fields above.
    pub context: Option<ToolContext>,
    /// Which calls wait for the application's approval before they run (see
    /// [`ApprovalPolicy`]); by default only those of tools whose metadata says so.
    pub approval: ApprovalPolicy,
    /// The application's dependencies, handed to every tool call in its
    /// [`CallContext`](crate::CallContext) (never in any schema).
    pub deps: Deps,
    /// In how many steps in a row of a turn the model may call one tool with invalid arguments
    /// or have it ask for a retry before the turn ends with
    /// [`AgentError::ToolRetriesExhausted`] (default 2; a tool's
    /// [`max_retries`](crate::ToolMetadata::max_retries) overrides it). A step counts once
    /// however many of its calls failed: the model sees the errors only after the step, so it
    /// always gets at least one step to correct them.
    pub max_tool_retries: u32,
    /// Whether and which tool the model must call (default [`ToolChoice::Auto`]). A forced
    /// choice (`Required`, `Tool`) applies to the first step of each turn only, so the model
    /// can answer once it has the result, unless
    /// [`tool_choice_every_step`](Self::tool_choice_every_step) is set.
    pub tool_choice: ToolChoice,
    /// Apply [`tool_choice`](Self::tool_choice) to every step of a turn, not just the first
    /// (default `false`; the turn then ends only at `max_steps` if the choice forces a call).
    pub tool_choice_every_step: bool,
    /// Leave out of a turn's requests the tools the model's provider cannot accept (a
    /// recursive type for Gemini, …), saying so with [`AgentEvent::ToolsSkipped`], instead of
    /// failing the turn with [`AgentError::UnsupportedTools`] (default `false`). A skipped
    /// tool is not offered and does not run that turn, as if it were disabled.
    pub skip_unsupported_tools: bool,
    /// The most tools one `search_tools` call loads (default 5, at least 1). The agent offers
    /// that tool when some enabled tools are deferred (see
    /// [`ToolMetadata::defer_loading`](crate::ToolMetadata::defer_loading)).
    pub search_results: usize,
    /// Defer tools by a budget (default `None`: only tools declared deferred are): once the
    /// tools the agent would offer in full pass a number or an estimated token count, every
    /// one of them but the pinned ones is deferred, and found with `search_tools`. See
    /// [`DeferBudget`].
    pub defer_budget: Option<DeferBudget>,
    /// Which form of the provider's own tool search is used on the clients that have one
    /// (Anthropic Messages, OpenAI Responses): the provider searches
    /// ([`NativeSearch::Bm25`], the default, or [`NativeSearch::Regex`]); the agent searches
    /// with its own ranking and the provider loads what it found ([`NativeSearch::Client`]);
    /// or [`NativeSearch::Off`], the agent's own `search_tools` on every wire with the
    /// deferred tools left out. See the README's tool search section.
    ///
    /// [`NativeSearch::Bm25`]: crate::model::NativeSearch::Bm25
    /// [`NativeSearch::Regex`]: crate::model::NativeSearch::Regex
    /// [`NativeSearch::Client`]: crate::model::NativeSearch::Client
    /// [`NativeSearch::Off`]: crate::model::NativeSearch::Off
    pub native_search: crate::model::NativeSearch,
    /// What a call to a deferred tool that no search loaded does (default
    /// [`DeferredCalls::Load`]: the tool is loaded and the call runs).
    pub deferred_calls: DeferredCalls,
    /// Rank `search_tools` results by meaning as well as by words (default `None`: by words
    /// alone). See [`HybridSearch`].
    pub hybrid_search: Option<Arc<HybridSearch>>,
    /// How the agent's turns, model calls and tool calls report to OpenTelemetry (see
    /// [`otel`](crate::otel)): its name, the conversation's id, whether content is recorded,
    /// where the metrics go.
    #[cfg(feature = "otel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
    pub telemetry: crate::otel::Telemetry,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            context_options: ToolContextOptions::default(),
            max_steps: DEFAULT_MAX_STEPS,
            tool_concurrency: DEFAULT_TOOL_CONCURRENCY,
            sequential_tools: false,
            tool_timeout: None,
            model_settings: ModelSettings::default(),
            registry: None,
            toggles: None,
            context: None,
            approval: ApprovalPolicy::default(),
            deps: Deps::default(),
            max_tool_retries: DEFAULT_MAX_TOOL_RETRIES,
            tool_choice: ToolChoice::Auto,
            tool_choice_every_step: false,
            skip_unsupported_tools: false,
            search_results: DEFAULT_SEARCH_RESULTS,
            defer_budget: None,
            native_search: crate::model::NativeSearch::default(),
            deferred_calls: DeferredCalls::default(),
            hybrid_search: None,
            #[cfg(feature = "otel")]
            telemetry: crate::otel::Telemetry::default(),
        }
    }
}

impl AgentOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the system prompt (see [`ToolContextOptions::system_prompt`]).
    #[must_use]
    pub fn system_prompt(self, prompt: impl Into<String>) -> Self {
        self.with_context_options(|options| options.system_prompt(prompt))
    }

    /// Sets the conversation file (see [`ToolContextOptions::session_context_file_path`]).
    #[must_use]
    pub fn session_context_file_path(self, path: impl Into<PathBuf>) -> Self {
        self.with_context_options(|options| options.session_context_file_path(path))
    }

    /// Confines the file tools to this directory instead of a scratch directory (see
    /// [`context_options`](Self::context_options)).
    #[must_use]
    pub fn root_dir(self, root: impl Into<PathBuf>) -> Self {
        self.with_context_options(|options| options.root_dir(root))
    }

    fn with_context_options(
        mut self,
        change: impl FnOnce(ToolContextOptions) -> ToolContextOptions,
    ) -> Self {
        self.context_options = change(self.context_options);
        self
    }

    /// Sets the most model calls per turn.
    #[must_use]
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }

    /// Sets how many tool calls of one step may run at once.
    #[must_use]
    pub fn tool_concurrency(mut self, limit: usize) -> Self {
        self.tool_concurrency = limit;
        self
    }

    /// Runs every tool call in order, one at a time.
    #[must_use]
    pub fn sequential_tools(mut self, sequential: bool) -> Self {
        self.sequential_tools = sequential;
        self
    }

    /// Sets the timeout of tools that set none.
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Sets the sampling settings.
    #[must_use]
    pub fn model_settings(mut self, settings: ModelSettings) -> Self {
        self.model_settings = settings;
        self
    }

    /// Uses a shared registry instead of the default one.
    #[must_use]
    pub fn registry(mut self, registry: Arc<ToolRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Keeps tool toggles per session, over the registry.
    #[must_use]
    pub fn toggles(mut self, toggles: ToolToggles) -> Self {
        self.toggles = Some(toggles);
        self
    }

    /// Uses an existing context.
    #[must_use]
    pub fn context(mut self, context: ToolContext) -> Self {
        self.context = Some(context);
        self
    }

    /// Sets which calls wait for the application's approval.
    #[must_use]
    pub fn approval(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = policy;
        self
    }

    /// Sets the application's dependencies for every call.
    #[must_use]
    pub fn deps(mut self, deps: Deps) -> Self {
        self.deps = deps;
        self
    }

    /// Sets how many consecutive failed attempts of one tool the model gets in a turn.
    #[must_use]
    pub fn max_tool_retries(mut self, retries: u32) -> Self {
        self.max_tool_retries = retries;
        self
    }

    /// Sets whether and which tool the model must call (the first step of each turn).
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Applies the tool choice to every step of a turn, not just the first.
    #[must_use]
    pub fn tool_choice_every_step(mut self, value: bool) -> Self {
        self.tool_choice_every_step = value;
        self
    }

    /// Leaves out the tools the provider cannot accept, with an event, instead of failing the
    /// turn (see [`skip_unsupported_tools`](Self::skip_unsupported_tools)).
    #[must_use]
    pub fn skip_unsupported_tools(mut self, skip: bool) -> Self {
        self.skip_unsupported_tools = skip;
        self
    }

    /// Sets how the agent reports to OpenTelemetry (see
    /// [`telemetry`](AgentOptions#structfield.telemetry)).
    #[cfg(feature = "otel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
    #[must_use]
    pub fn telemetry(mut self, telemetry: crate::otel::Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Sets the most tools one `search_tools` call loads.
    #[must_use]
    pub fn search_results(mut self, limit: usize) -> Self {
        self.search_results = limit;
        self
    }

    /// Ranks `search_tools` results with `search` (see [`HybridSearch`]).
    #[must_use]
    pub fn hybrid_search(mut self, search: HybridSearch) -> Self {
        self.hybrid_search = Some(Arc::new(search));
        self
    }

    /// Defers tools past `budget` (see [`defer_budget`](Self::defer_budget)).
    #[must_use]
    pub fn defer_budget(mut self, budget: DeferBudget) -> Self {
        self.defer_budget = Some(budget);
        self
    }

    /// Sets which form of the provider's own search is used where a client has one
    /// ([`NativeSearch::Client`](crate::model::NativeSearch::Client): the agent's ranking, the
    /// provider's loading; [`NativeSearch::Off`](crate::model::NativeSearch::Off): the local
    /// search everywhere).
    #[must_use]
    pub fn native_search(mut self, search: crate::model::NativeSearch) -> Self {
        self.native_search = search;
        self
    }

    /// Sets what a call to a deferred tool that no search loaded does.
    #[must_use]
    pub fn deferred_calls(mut self, calls: DeferredCalls) -> Self {
        self.deferred_calls = calls;
        self
    }
}

/// Settings of one turn, on top of the agent's ([`Agent::chat_with`],
/// [`Agent::stream_chat_with`]).
///
/// ```
/// use tool_core::{Deps, agent::TurnOptions};
///
/// struct UserId(u64);
/// let options = TurnOptions::new()
///     .active_tools(["read_file"])
///     .deps(Deps::new().with(UserId(42)));
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TurnOptions {
    /// Offer only these tools this turn (among those enabled), like the Vercel AI SDK's
    /// `activeTools`; `None` offers every enabled tool.
    pub active_tools: Option<Vec<String>>,
    /// Dependencies for this turn's calls, added to (and overriding by type) the agent's.
    pub deps: Option<Deps>,
    /// The tool choice of this turn's first step, instead of the agent's.
    pub tool_choice: Option<ToolChoice>,
    /// The typed output the turn ends with ([`Agent::chat_output`]).
    pub(crate) output: Option<Arc<dyn output::OutputSpec>>,
}

impl TurnOptions {
    /// No changes from the agent's settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers only these tools this turn (those of them that are enabled).
    #[must_use]
    pub fn active_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.active_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Adds dependencies for this turn's calls.
    #[must_use]
    pub fn deps(mut self, deps: Deps) -> Self {
        self.deps = Some(deps);
        self
    }

    /// Sets the tool choice of this turn's first step (every step with
    /// [`AgentOptions::tool_choice_every_step`]).
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }
}

/// Why a turn failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model request failed. The conversation is as it was before the turn (the user's
    /// message included), so it never holds an unanswered tool call; tools that already ran are
    /// not undone.
    #[error(transparent)]
    Model(#[from] ProviderError),
    /// The model still called tools at the last allowed step. The conversation is kept, and each
    /// of those last calls is answered with a result saying it was not run.
    #[error(
        "the model was still calling tools after {steps} steps; raise `max_steps` or ask for less"
    )]
    MaxSteps {
        /// The steps made.
        steps: usize,
    },
    /// A saved session could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadContextError),
    /// A tool failed with invalid arguments or asked for a retry in more steps in a row than its
    /// budget allows. The conversation is kept, every call answered.
    #[error(
        "the model called `{tool}` with a failing request in {failures} steps in a row; last error: {last_error}"
    )]
    ToolRetriesExhausted {
        /// The tool.
        tool: String,
        /// The steps in a row in which a call of the tool failed.
        failures: u32,
        /// The last result the model got.
        last_error: String,
    },
    /// The conversation waits for approval decisions; answer them with
    /// [`Agent::continue_with`] before sending new text.
    #[error("tool calls wait for approval: {}; answer them with `continue_with`", call_ids.join(", "))]
    ApprovalsPending {
        /// The calls that wait.
        call_ids: Vec<String>,
    },
    /// The turn stopped before the model answered: these calls wait for the application's
    /// approval ([`Agent::chat`] and [`Agent::continue_with`]; a streamed turn ends with
    /// [`AgentEvent::Done`] and the calls in [`AgentResponse::pending_approvals`] instead). The
    /// user's message and the step's other calls are in the conversation; answer every waiting
    /// call with [`Agent::continue_with`] to go on with the turn.
    #[error(
        "the turn stopped before its answer: tool calls wait for approval: {}; answer them with `continue_with`",
        describe_requests(requests)
    )]
    AwaitingApproval {
        /// The calls that wait, in call order.
        requests: Vec<ApprovalRequest>,
    },
    /// The model's provider cannot accept some of the tools the turn would offer, so the turn
    /// stopped before sending a request without them (checked at every request, so a tool
    /// registered mid-turn is checked too); the conversation is as it was before the turn.
    /// Fix or disable those tools, or set [`AgentOptions::skip_unsupported_tools`].
    #[error(
        "{0}; fix or disable the tool, or let the agent skip it with `AgentOptions::skip_unsupported_tools`"
    )]
    UnsupportedTools(ToolCheckError),
    /// The model gave no valid typed output ([`Agent::chat_output`]) within the output retry
    /// budget. The conversation is kept, every call answered.
    #[error("the model gave an invalid output {failures} times; last error: {last_error}")]
    OutputRetriesExhausted {
        /// The invalid outputs given.
        failures: u32,
        /// The last output as the model gave it: the output tool's arguments, or its text when
        /// it answered with text.
        last_output: String,
        /// The last error the model read.
        last_error: String,
    },
    /// The decisions given to [`Agent::continue_with`] do not match the waiting calls.
    #[error("cannot apply the approval decisions: {message}")]
    InvalidDecisions {
        /// What does not match.
        message: String,
    },
}

/// The outcome of a turn.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AgentResponse {
    /// The model's final answer.
    pub text: String,
    /// How many model calls the turn made, those before its approval pauses included.
    pub steps: usize,
    /// How many tool calls the turn ran or answered (denied calls included), over the whole
    /// turn: a turn continued with [`Agent::continue_with`] counts the calls made before it
    /// stopped for approval too.
    pub tool_calls: usize,
    /// Token counts summed over the turn (its approval pauses included), when the model
    /// reported them.
    pub usage: Option<Usage>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// How many of the turn's calls the model has to make again: invalid arguments, or a
    /// retry the tool asked for ([`ToolError::retry`](crate::ToolError::retry)), as opposed to
    /// hard failures.
    pub retried_calls: usize,
    /// The calls that wait for the application's approval: the turn stopped before running
    /// them. Answer every one with [`Agent::continue_with`]. Empty when the model answered;
    /// only a streamed turn's [`AgentEvent::Done`] carries such calls ([`Agent::chat`] returns
    /// [`AgentError::AwaitingApproval`] instead).
    pub pending_approvals: Vec<ApprovalRequest>,
}

impl std::fmt::Display for AgentResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A conversation with a model that can call tools. See the [module docs](self).
///
/// Every method takes `&self`; turns of one agent run one after another (a second `chat` waits
/// for the first).
pub struct Agent {
    inner: Arc<Shared>,
}

pub(crate) struct Shared {
    model: Arc<dyn ChatModel>,
    registry: Arc<ToolRegistry>,
    context: ToolContext,
    toggles: Option<ToolToggles>,
    max_steps: usize,
    tool_concurrency: usize,
    sequential_tools: bool,
    tool_timeout: Option<Duration>,
    settings: ModelSettings,
    approval: ApprovalPolicy,
    deps: Deps,
    max_tool_retries: u32,
    tool_choice: ToolChoice,
    tool_choice_every_step: bool,
    skip_unsupported_tools: bool,
    /// Where the turn that stopped for approval had got to, for its continuation.
    paused: std::sync::Mutex<Option<run::Paused>>,
    search: search::ToolSearch,
    /// Turns started so far.
    turns: std::sync::atomic::AtomicU64,
    turn: Arc<tokio::sync::Mutex<()>>,
    #[cfg(feature = "otel")]
    telemetry: crate::otel::Telemetry,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.model.model_name())
            .field("registry", &self.inner.registry)
            .field("context", &self.inner.context)
            .field("max_steps", &self.inner.max_steps)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent talking to `model` (any [`ChatModel`], an `Arc<dyn ChatModel>` included) with
    /// the default registry (`read_file`, `write_file`, `save_session_context`) over a context
    /// it owns, unless `options` brings a registry or a context. The file tools are confined to
    /// [`AgentOptions::root_dir`], or to a fresh scratch directory when it is not set, whichever
    /// registry they sit in.
    pub fn new(model: impl ChatModel + 'static, options: AgentOptions) -> Self {
        Self::with_model(Arc::new(model), options)
    }

    /// Like [`new`](Self::new), with a shared model.
    pub fn with_model(model: Arc<dyn ChatModel>, options: AgentOptions) -> Self {
        let context = options
            .context
            .unwrap_or_else(|| ToolContext::with_options(options.context_options));
        let registry = options.registry.unwrap_or_else(|| {
            let mut registry_options = RegistryOptions::new();
            // The agent's calls apply `tool_timeout` themselves; the registry gets it too, for
            // callers that run its tools directly (`agent.save_context`).
            if let Some(timeout) = options.tool_timeout {
                registry_options = registry_options.default_timeout(timeout);
            }
            let registry = ToolRegistry::with_options(registry_options);
            register_builtins(&registry, &context);
            Arc::new(registry)
        });
        let search = search::ToolSearch::new(
            context.clone(),
            search::SearchSettings {
                limit: options.search_results,
                budget: options.defer_budget,
                provider: model.provider(),
                native: options.native_search,
                deferred_calls: options.deferred_calls,
            },
        )
        .with_hybrid(options.hybrid_search);
        Self {
            inner: Arc::new(Shared {
                model,
                registry,
                context,
                toggles: options.toggles,
                max_steps: options.max_steps.max(1),
                tool_concurrency: options.tool_concurrency.max(1),
                sequential_tools: options.sequential_tools,
                tool_timeout: options.tool_timeout,
                settings: options.model_settings,
                approval: options.approval,
                deps: options.deps,
                max_tool_retries: options.max_tool_retries,
                tool_choice: options.tool_choice,
                tool_choice_every_step: options.tool_choice_every_step,
                skip_unsupported_tools: options.skip_unsupported_tools,
                paused: std::sync::Mutex::new(None),
                search,
                turns: std::sync::atomic::AtomicU64::new(0),
                turn: Arc::new(tokio::sync::Mutex::new(())),
                #[cfg(feature = "otel")]
                telemetry: options.telemetry.resolved(),
            }),
        }
    }

    /// An agent that resumes the session saved in `path` (see [`load_context`](Self::load_context)).
    pub fn resume(
        model: impl ChatModel + 'static,
        options: AgentOptions,
        path: impl Into<PathBuf>,
    ) -> Result<Self, AgentError> {
        let agent = Self::new(model, options);
        agent.load_context(path.into())?;
        Ok(agent)
    }

    /// The schemas of the tools the model is offered now (the enabled ones, with this session's
    /// toggles applied), in the order of a request: in registration order, unless some are
    /// deferred; then the tools that are not, `search_tools`, and the loaded tools in the order
    /// they were loaded (see [`loaded_tools`](Self::loaded_tools)).
    pub fn get_tools(&self) -> Vec<ChatTool> {
        let (_, tools) = self.inner.search.prepare(self.inner.snapshot());
        tools.definitions().to_vec()
    }

    /// Sends the user's `text` and runs the tool-call loop until the model answers.
    ///
    /// When a call needs the application's approval, the turn stops before running it and
    /// returns [`AgentError::AwaitingApproval`] with the waiting calls, never an empty answer;
    /// answer them with [`continue_with`](Self::continue_with), which goes on with the same
    /// turn.
    pub async fn chat(&self, text: impl Into<String>) -> Result<AgentResponse, AgentError> {
        self.chat_with(text, TurnOptions::default()).await
    }

    /// Like [`chat`](Self::chat), with settings for this turn only.
    pub async fn chat_with(
        &self,
        text: impl Into<String>,
        options: TurnOptions,
    ) -> Result<AgentResponse, AgentError> {
        awaiting_approval(
            run::turn(
                self.inner.clone(),
                run::Input::User(text.into()),
                options,
                None,
            )
            .await,
        )
    }

    /// Like [`chat`](Self::chat), as a stream of [`AgentEvent`]s ending with
    /// [`AgentEvent::Done`] or an `Err`. Nothing runs until the stream is polled, and dropping
    /// the stream cancels the turn (the model request and any running tools, whose
    /// [`CallContext::cancellation`](crate::CallContext::cancellation) fires); a cancelled turn
    /// leaves the conversation as it was before it.
    ///
    /// A call's [`ToolCallFinished`](AgentEvent::ToolCallFinished) reaches the consumer before
    /// that call starts running.
    pub fn stream_chat(
        &self,
        text: impl Into<String>,
    ) -> BoxStream<'static, Result<AgentEvent, AgentError>> {
        self.stream_chat_with(text, TurnOptions::default())
    }

    /// Like [`stream_chat`](Self::stream_chat), with settings for this turn only.
    pub fn stream_chat_with(
        &self,
        text: impl Into<String>,
        options: TurnOptions,
    ) -> BoxStream<'static, Result<AgentEvent, AgentError>> {
        self.stream_turn(run::Input::User(text.into()), options)
    }

    /// Answers the calls that wait for approval (every one of them, by call id) and goes on
    /// with the turn: approved calls run, denied ones get a result telling the model so, and
    /// the model is asked again. The results of all the step's calls are appended in call
    /// order, so the conversation stays valid for every provider. Like [`chat`](Self::chat),
    /// it returns [`AgentError::AwaitingApproval`] when the model makes another call that
    /// needs approval.
    ///
    /// It is the same turn: step numbers go on from where the turn stopped, and the response's
    /// [`steps`](AgentResponse::steps), [`tool_calls`](AgentResponse::tool_calls) and
    /// [`usage`](AgentResponse::usage) count the whole turn (an agent that loaded the session
    /// from a file counts from the continuation).
    ///
    /// ```
    /// use tool_core::{
    ///     Agent, AgentError, AgentOptions,
    ///     agent::{ApprovalDecision, ApprovalPolicy},
    ///     model::{ScriptedModel, ScriptedResponse},
    /// };
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let dir = tempfile::tempdir().unwrap();
    /// let model = ScriptedModel::new([
    ///     ScriptedResponse::tool_call("c1", "write_file", r#"{"path": "a.txt", "content": "hi"}"#),
    ///     ScriptedResponse::text("I was not allowed to write it."),
    /// ]);
    /// let agent = Agent::new(
    ///     model,
    ///     AgentOptions::new()
    ///         .root_dir(dir.path())
    ///         .approval(ApprovalPolicy::new().when(|call, _| call.name == "write_file")),
    /// );
    /// let Err(AgentError::AwaitingApproval { requests }) = agent.chat("write a.txt").await else {
    ///     panic!("the call waits for approval");
    /// };
    /// assert_eq!(requests[0].call.id, "c1");
    ///
    /// let reply = agent
    ///     .continue_with([("c1", ApprovalDecision::deny_because("not today"))])
    ///     .await
    ///     .unwrap();
    /// assert_eq!(reply.text, "I was not allowed to write it.");
    /// assert!(!dir.path().join("a.txt").exists());
    /// # });
    /// ```
    pub async fn continue_with<I, S>(&self, decisions: I) -> Result<AgentResponse, AgentError>
    where
        I: IntoIterator<Item = (S, ApprovalDecision)>,
        S: Into<String>,
    {
        let input = run::Input::Decisions(collect_decisions(decisions));
        awaiting_approval(run::turn(self.inner.clone(), input, TurnOptions::default(), None).await)
    }

    /// Like [`continue_with`](Self::continue_with), as a stream of events.
    pub fn stream_continue_with<I, S>(
        &self,
        decisions: I,
    ) -> BoxStream<'static, Result<AgentEvent, AgentError>>
    where
        I: IntoIterator<Item = (S, ApprovalDecision)>,
        S: Into<String>,
    {
        let input = run::Input::Decisions(collect_decisions(decisions));
        self.stream_turn(input, TurnOptions::default())
    }

    /// The calls that wait for the application's approval, in call order (empty when none do),
    /// each with the arguments its tool will get. They survive
    /// [`save_context`](Self::save_context) and [`load_context`](Self::load_context).
    pub fn pending_approvals(&self) -> Vec<ApprovalRequest> {
        let snapshot = self.inner.snapshot();
        self.inner
            .context
            .pending_calls()
            .into_iter()
            .filter(|pending| pending.needs_approval)
            .map(|pending| {
                let prepared = step::Prepared::new(&snapshot, pending.call);
                ApprovalRequest {
                    arguments: prepared.arguments.ok(),
                    call: prepared.call,
                }
            })
            .collect()
    }

    fn stream_turn(
        &self,
        input: run::Input,
        options: TurnOptions,
    ) -> BoxStream<'static, Result<AgentEvent, AgentError>> {
        let (sender, receiver) = futures::channel::mpsc::unbounded();
        let inner = self.inner.clone();
        // The turn is driven by polling this stream, not by a spawned task, so it cannot outlive
        // the stream.
        let driver = async move {
            let outcome = run::turn(inner, input, options, Some(&sender)).await;
            let last = outcome.map(AgentEvent::Done);
            // The receiver is alive: it is polled beside this future.
            let _ = sender.unbounded_send(run::Signal::Event(last));
        };
        let driver = driver
            .into_stream()
            .filter_map(|()| futures::future::ready(None));
        let events = receiver.filter_map(|signal| {
            futures::future::ready(match signal {
                run::Signal::Event(event) => Some(event),
                run::Signal::Flush(taken) => {
                    // Every event before this one has been handed to the consumer.
                    let _ = taken.send(());
                    None
                }
            })
        });
        futures::stream::select(events, driver).boxed()
    }

    /// Saves the conversation (system prompt, messages, notes) with `reason`, by running the
    /// `save_session_context` tool through the registry. Returns the tool's result text, which
    /// is the model-facing error string when saving failed; use
    /// [`try_save_context`](Self::try_save_context) to tell a failure apart.
    pub async fn save_context(&self, reason: impl Into<String>) -> String {
        self.inner
            .registry
            .execute("save_session_context", save_args(reason.into()))
            .await
    }

    /// Like [`save_context`](Self::save_context), with a failure as a typed error: the tool is
    /// missing or disabled ([`ExecuteError::NotFound`], [`ExecuteError::Disabled`]), or it could
    /// not write the file ([`ExecuteError::Failed`], whose message names the path and the
    /// operating system's reason).
    ///
    /// [`ExecuteError::NotFound`]: crate::ExecuteError::NotFound
    /// [`ExecuteError::Disabled`]: crate::ExecuteError::Disabled
    /// [`ExecuteError::Failed`]: crate::ExecuteError::Failed
    pub async fn try_save_context(
        &self,
        reason: impl Into<String>,
    ) -> Result<String, crate::ExecuteError> {
        self.inner
            .registry
            .try_execute("save_session_context", save_args(reason.into()))
            .await
    }

    /// Replaces the conversation with the session saved in `path` (as written by
    /// `save_session_context`): system prompt, messages and notes, exactly. Returns what was
    /// loaded.
    ///
    /// A session saved by the model in the middle of a turn ends with tool calls that have no
    /// results yet; the next turn answers them with a note that the result was not recorded, so
    /// the conversation sent to the model stays valid.
    pub fn load_context(&self, path: impl Into<PathBuf>) -> Result<SavedConversation, AgentError> {
        let saved = SavedConversation::load(path.into())?;
        self.inner.context.replace(saved.context.clone());
        self.inner.forget_paused_turn();
        Ok(saved)
    }

    /// Registers a tool, enabled unless its metadata says otherwise.
    pub fn add_tool(&self, tool: impl ExecutableTool + 'static) -> Result<(), RegistryError> {
        self.inner.registry.register(tool)
    }

    /// Unregisters a tool; returns whether there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.inner.registry.unregister(name)
    }

    /// Enables a tool (for this session only when the agent has [`ToolToggles`]); returns
    /// `false` when no tool has this name.
    #[must_use = "`false` means no tool has this name"]
    pub fn enable_tool(&self, name: &str) -> bool {
        self.set_tool_enabled(name, true)
    }

    /// Disables a tool (for this session only when the agent has [`ToolToggles`]); it stays
    /// registered. Returns `false` when no tool has this name.
    #[must_use = "`false` means no tool has this name"]
    pub fn disable_tool(&self, name: &str) -> bool {
        self.set_tool_enabled(name, false)
    }

    /// Whether the model is offered this tool now.
    pub fn is_tool_enabled(&self, name: &str) -> bool {
        self.inner.snapshot().is_enabled(name)
    }

    /// The deferred tools loaded in this conversation (by a search, or by a call by name), in
    /// the order they were loaded: after the tools that are not deferred and `search_tools`,
    /// they are the tools the model is offered. They are part of the conversation
    /// ([`Conversation::loaded_tools`]): saved and resumed with it, shared by every agent on
    /// the same [`ToolContext`], forgotten by [`clear_context`](Self::clear_context) and
    /// replaced by [`load_context`](Self::load_context).
    pub fn loaded_tools(&self) -> Vec<String> {
        self.inner.context.loaded_tools()
    }

    /// The answer the model would get from `search_tools(query)` now (the tools it would load,
    /// in a few lines), without loading anything: for a `/search` command or a test. `None`
    /// when no tool is deferred, so there is nothing to search.
    pub fn preview_search(&self, query: &str) -> Option<String> {
        self.inner.search.preview(self.inner.snapshot(), query)
    }

    /// Every tool with its metadata and its enabled state for this agent, in registration order:
    /// [`deferred`](crate::ToolInfo::deferred) says whether the agent leaves the tool out of
    /// requests until a search loads it (by its own declaration, its registry's, or this
    /// agent's [`defer_budget`](AgentOptions::defer_budget)), and
    /// [`loaded`](crate::ToolInfo::loaded) whether this conversation has loaded it. An enabled
    /// tool that is neither deferred nor loaded is eager: offered in every request.
    pub fn list_tools(&self) -> Vec<crate::ToolInfo> {
        let loaded = self.inner.context.loaded_tools();
        let mut tools = self.inner.search.view(self.inner.snapshot()).list_tools();
        for tool in &mut tools {
            tool.loaded = tool.deferred && loaded.contains(&tool.name);
        }
        tools
    }

    /// Forgets the conversation (messages and notes); the system prompt stays.
    pub fn clear_context(&self) {
        self.inner.context.clear();
        self.inner.forget_paused_turn();
    }

    /// Replaces the system prompt; the next request uses it.
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        self.inner.context.set_system_prompt(prompt);
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> String {
        self.inner.context.system_prompt()
    }

    /// The conversation so far.
    pub fn conversation(&self) -> Conversation {
        self.inner.context.session_context()
    }

    /// The messages so far (without the system prompt).
    pub fn messages(&self) -> Vec<Message> {
        self.inner.context.session_context().messages
    }

    /// The registry the agent runs tools from.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.inner.registry
    }

    /// The context the agent's tools read.
    pub fn context(&self) -> &ToolContext {
        &self.inner.context
    }

    /// The per-session toggles, when the agent has them.
    pub fn toggles(&self) -> Option<&ToolToggles> {
        self.inner.toggles.as_ref()
    }

    /// The model the agent talks to.
    pub fn model(&self) -> &Arc<dyn ChatModel> {
        &self.inner.model
    }

    fn set_tool_enabled(&self, name: &str, enabled: bool) -> bool {
        match &self.inner.toggles {
            Some(toggles) => {
                if !self.inner.registry.has_tool(name) {
                    return false;
                }
                toggles.set(name, enabled);
                true
            }
            None => self.inner.registry.set_enabled(name, enabled),
        }
    }
}

impl Shared {
    /// The number of the turn that starts now, from 1.
    fn next_turn(&self) -> u64 {
        self.turns
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }

    /// Forgets where a turn that stopped for approval had got to (its calls are gone or
    /// replaced).
    fn forget_paused_turn(&self) {
        *lock(&self.paused) = None;
    }

    /// The tools as this agent sees them now.
    fn snapshot(&self) -> Arc<RegistrySnapshot> {
        match &self.toggles {
            Some(toggles) => toggles.snapshot(&self.registry),
            None => self.registry.snapshot(),
        }
    }
}

/// A turn that stopped for approval, as [`AgentError::AwaitingApproval`].
fn awaiting_approval(
    outcome: Result<AgentResponse, AgentError>,
) -> Result<AgentResponse, AgentError> {
    match outcome {
        Ok(response) if !response.pending_approvals.is_empty() => {
            Err(AgentError::AwaitingApproval {
                requests: response.pending_approvals,
            })
        }
        other => other,
    }
}

/// `c1 (`name`), c2 (`name`)`.
fn describe_requests(requests: &[ApprovalRequest]) -> String {
    requests
        .iter()
        .map(|request| format!("{} (`{}`)", request.call.id, request.call.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Locks `mutex`, through a panic of another holder (the data is plain counts).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The arguments of `save_session_context`.
fn save_args(reason: String) -> JsonObject {
    let mut args = JsonObject::new();
    args.insert("reason".to_owned(), Value::String(reason));
    args
}

fn collect_decisions<I, S>(decisions: I) -> Vec<(String, ApprovalDecision)>
where
    I: IntoIterator<Item = (S, ApprovalDecision)>,
    S: Into<String>,
{
    decisions
        .into_iter()
        .map(|(id, decision)| (id.into(), decision))
        .collect()
}
