//! Tool search in an agent: when the tools of a request include deferred ones, their
//! definitions stay out and a `search_tools` tool is offered instead; what a search finds is
//! loaded for the rest of the conversation, appended after the tools already offered.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use serde_json::{Value, json};

use super::{AgentEvent, HybridSearch};
use crate::{
    context::ToolContext,
    execute::ExecuteError,
    message::ToolCall,
    model::{NativeSearch, ProviderToolSearch, RequestTools, ToolChoice},
    registry::{OfferedTools, RegistrySnapshot},
    schema::{Provider, ToolList},
    search::{MAX_QUERY_BYTES, SearchMatches},
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError},
};

/// The name of the search tool an agent offers when some tools are deferred.
pub const SEARCH_TOOL: &str = "search_tools";

/// When an agent defers tools by itself ([`AgentOptions::defer_budget`]): once the tools it
/// would offer in full pass a number or an estimated token count, it defers every one of them
/// but the pinned ones and the most used ones ([`keep_most_used`](Self::keep_most_used)), and
/// offers `search_tools` instead.
///
/// The estimate is a quarter of the bytes of those tools' definitions in the model's provider
/// format (what the request's tools part carries). The budget is checked whenever the tools
/// change (a registration, a switch, an MCP `list_changed`), over the tools the agent offers:
/// switched-off tools do not count, and tools deferred by their own declaration are not
/// counted again.
///
/// ```
/// use tool_core::{AgentOptions, agent::DeferBudget};
///
/// let options = AgentOptions::new()
///     .defer_budget(DeferBudget::tools(30).pin(["read_file", "write_file"]));
/// # let _ = options;
/// ```
///
/// [`AgentOptions::defer_budget`]: super::AgentOptions::defer_budget
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeferBudget {
    /// The most tools offered in full; past it, tools are deferred.
    pub max_tools: Option<usize>,
    /// The most estimated tokens (bytes / 4) of the definitions offered in full; past it,
    /// tools are deferred.
    pub max_tokens: Option<usize>,
    /// The tools the budget never defers (a tool deferred by its own declaration stays so).
    pub pinned: Vec<String>,
    /// How many of the tools this agent's model called most often the budget keeps eager,
    /// besides the pinned ones (default 0). Calls are counted per agent, from its first turn;
    /// the set is worked out when a turn starts, so the tools offered stay in one order for
    /// the whole turn.
    pub most_used: usize,
}

impl DeferBudget {
    /// Defers tools once more than `max` would be offered in full.
    pub fn tools(max: usize) -> Self {
        Self {
            max_tools: Some(max),
            ..Self::default()
        }
    }

    /// Defers tools once their definitions pass about `max` tokens (bytes / 4).
    pub fn tokens(max: usize) -> Self {
        Self {
            max_tokens: Some(max),
            ..Self::default()
        }
    }

    /// Keeps these tools eager when the budget defers the others. Calls add to the list.
    #[must_use]
    pub fn pin(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.pinned.extend(names.into_iter().map(Into::into));
        self
    }

    /// Keeps the `count` tools called most often eager when the budget defers the others (ties
    /// go to the tool called first).
    #[must_use]
    pub fn keep_most_used(mut self, count: usize) -> Self {
        self.most_used = count;
        self
    }

    /// Whether `offered` tools, in `provider`'s format, pass the budget.
    fn passed(&self, offered: &OfferedTools, provider: Provider) -> bool {
        self.max_tools
            .is_some_and(|max| ToolList::names(offered).len() > max)
            || self
                .max_tokens
                .is_some_and(|max| offered.provider_json(provider).get().len() / 4 > max)
    }
}

/// What an agent does with a call to a deferred tool that no search loaded
/// ([`AgentOptions::deferred_calls`](super::AgentOptions::deferred_calls)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeferredCalls {
    /// The tool exists and is enabled: it is loaded and the call runs, with an
    /// [`AgentEvent::DeferredToolCalled`]. The default.
    #[default]
    Load,
    /// The call does not run: the model is told to search for the tool first.
    RequireSearch,
}

/// The search settings of one agent.
pub(super) struct SearchSettings {
    /// The most tools one search loads.
    pub(super) limit: usize,
    pub(super) budget: Option<DeferBudget>,
    /// The model's format, for the budget's estimate.
    pub(super) provider: Provider,
    pub(super) native: NativeSearch,
    pub(super) deferred_calls: DeferredCalls,
}

/// The search state of one agent: the conversation whose loaded tools it extends, the index
/// of the current snapshot, and the searches made since the application last heard of them.
pub(super) struct ToolSearch {
    context: ToolContext,
    searches: Arc<Mutex<Vec<AgentEvent>>>,
    /// The tools each `search_tools` call found, by call id, until its result is made.
    found: Arc<Mutex<HashMap<String, Vec<String>>>>,
    prepared: Mutex<Option<Prepared>>,
    settings: SearchSettings,
    /// The last snapshot the budget was checked on, with the most used tools then, and the
    /// snapshot it gave.
    budgeted: Mutex<Option<Budgeted>>,
    /// How often the model called each tool, and when first.
    calls: Mutex<HashMap<String, (u64, u64)>>,
    /// The tools the budget keeps eager for being the most used, worked out at a turn's start.
    most_used: Mutex<Arc<[String]>>,
    /// Ranks by meaning as well, when set.
    hybrid: Option<Arc<HybridSearch>>,
}

struct Budgeted {
    base: Arc<RegistrySnapshot>,
    most_used: Arc<[String]>,
    result: Arc<RegistrySnapshot>,
}

/// A base snapshot with the search tool added, built once per snapshot.
struct Prepared {
    base: Arc<RegistrySnapshot>,
    extended: Arc<RegistrySnapshot>,
}

impl ToolSearch {
    /// A search over `context`'s conversation with these settings.
    pub(super) fn new(context: ToolContext, mut settings: SearchSettings) -> Self {
        settings.limit = settings.limit.max(1);
        Self {
            context,
            searches: Arc::default(),
            found: Arc::default(),
            prepared: Mutex::default(),
            settings,
            budgeted: Mutex::default(),
            calls: Mutex::default(),
            most_used: Mutex::new(Arc::from(Vec::new())),
            hybrid: None,
        }
    }

    /// This search, ranking with `hybrid` when given.
    pub(super) fn with_hybrid(mut self, hybrid: Option<Arc<HybridSearch>>) -> Self {
        self.hybrid = hybrid;
        self
    }

    /// A turn starts: the most used tools the budget keeps eager are worked out again.
    pub(super) fn start_turn(&self) {
        let Some(count) = self.settings.budget.as_ref().map(|budget| budget.most_used) else {
            return;
        };
        if count == 0 {
            return;
        }
        let calls = lock(&self.calls);
        let mut ranked: Vec<(&String, &(u64, u64))> = calls.iter().collect();
        ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
        let most_used: Vec<String> = ranked
            .into_iter()
            .take(count)
            .map(|(name, _)| name.clone())
            .collect();
        *lock(&self.most_used) = Arc::from(most_used);
    }

    /// The snapshot `base` as this agent offers it: with the tools its budget defers deferred.
    pub(super) fn view(&self, base: Arc<RegistrySnapshot>) -> Arc<RegistrySnapshot> {
        self.budgeted(base)
    }

    /// What `search_tools(query)` would answer over `base` now, without loading anything;
    /// `None` when no tool is deferred.
    pub(super) fn preview(&self, base: Arc<RegistrySnapshot>, query: &str) -> Option<String> {
        let base = self.budgeted(base);
        if base.deferred_names().is_empty() {
            return None;
        }
        Some(match base.search(query, self.settings.limit) {
            Ok(matches) => answer(query, &matches),
            Err(error) => format!("Error executing {SEARCH_TOOL}: {error}"),
        })
    }

    /// The snapshot a step runs its calls in, and the tools its request offers: without
    /// deferred tools, `base` and all its enabled tools; with them, `base` plus the search
    /// tool, and the eager tools, then the search tool, then the loaded tools in load order.
    pub(super) fn prepare(
        &self,
        base: Arc<RegistrySnapshot>,
    ) -> (Arc<RegistrySnapshot>, RequestTools) {
        let base = self.budgeted(base);
        if base.deferred_names().is_empty() {
            let tools = if base.is_empty() {
                RequestTools::default()
            } else {
                RequestTools::from_snapshot(base.clone())
            };
            return (base, tools);
        }
        let snapshot = self.extended(base.clone());
        let loaded = self.context.loaded_tools();
        let deferred_loaded = loaded
            .iter()
            .map(String::as_str)
            .filter(|name| base.is_deferred(name));
        let names = base
            .eager_names()
            .into_iter()
            .chain([SEARCH_TOOL])
            .chain(deferred_loaded);
        let offered = snapshot.offer(names);
        let mut tools = RequestTools::from_snapshot(Arc::new(offered));
        if self.settings.native != NativeSearch::Off {
            // For a client with a search of its provider's own: every deferred tool, loaded or
            // not, in registration order, sent marked `defer_loading` for the whole
            // conversation; the provider loads a found tool from the history's references, so
            // the tools stay byte-identical from step to step and the prompt cache holds. The
            // wire sends a loaded tool the history does not reference in full, from `names`.
            let deferred = snapshot.offer(base.deferred_names());
            tools = tools.with_native_search(Arc::new(deferred), self.settings.native, SEARCH_TOOL);
        }
        (snapshot, tools)
    }

    /// Loads the tools the provider's own searches found (those that are deferred and enabled
    /// here), and returns an event for each search.
    pub(super) fn load_found(
        &self,
        snapshot: &RegistrySnapshot,
        searches: &[ProviderToolSearch],
    ) -> Vec<AgentEvent> {
        searches
            .iter()
            .map(|search| {
                let loaded = search
                    .tools
                    .iter()
                    .filter(|name| {
                        snapshot.is_deferred(name)
                            && snapshot.is_enabled(name)
                            && self.context.load_tool(name)
                    })
                    .cloned()
                    .collect();
                AgentEvent::ToolSearch {
                    query: shortened(&search.query),
                    matches: search.tools.clone(),
                    loaded,
                }
            })
            .collect()
    }

    /// The error the model gets for a call of `name` instead of its result, when the agent
    /// requires a search first and no search loaded the deferred tool.
    pub(super) fn refusal(&self, snapshot: &RegistrySnapshot, name: &str) -> Option<String> {
        (self.settings.deferred_calls == DeferredCalls::RequireSearch
            && name != SEARCH_TOOL
            && snapshot.is_deferred(name)
            && snapshot.is_enabled(name)
            && !self
                .context
                .loaded_tools()
                .iter()
                .any(|loaded| loaded == name))
        .then(|| {
            format!(
                "Error: tool '{name}' is not loaded; search for it first (with {SEARCH_TOOL}, \
                 `select:{name}` loads it by name), then call it"
            )
        })
    }

    /// Counts the model's calls, and loads the deferred tools it called without searching for
    /// them (they exist and are enabled, so the calls run; unless a search is required first),
    /// and returns an event for each.
    pub(super) fn load_called(
        &self,
        snapshot: &RegistrySnapshot,
        calls: &[ToolCall],
    ) -> Vec<AgentEvent> {
        {
            let mut counts = lock(&self.calls);
            for call in calls {
                if call.name != SEARCH_TOOL && snapshot.metadata(&call.name).is_some() {
                    let first = counts.len() as u64;
                    counts.entry(call.name.clone()).or_insert((0, first)).0 += 1;
                }
            }
        }
        if self.settings.deferred_calls == DeferredCalls::RequireSearch {
            return Vec::new();
        }
        let mut events = Vec::new();
        for call in calls {
            if snapshot.is_deferred(&call.name)
                && snapshot.is_enabled(&call.name)
                && self.context.load_tool(&call.name)
            {
                events.push(AgentEvent::DeferredToolCalled {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
        }
        events
    }

    /// Loads the deferred tool a forced tool choice names, so the request offers it.
    pub(super) fn load_chosen(&self, snapshot: &Arc<RegistrySnapshot>, choice: &ToolChoice) {
        if let ToolChoice::Tool(name) = choice {
            let snapshot = self.budgeted(snapshot.clone());
            if snapshot.is_deferred(name) && snapshot.is_enabled(name) {
                self.context.load_tool(name);
            }
        }
    }

    /// The result of the call `message` answers, naming the tools it found when it is a call
    /// of `search_tools` (for the providers that load them from a search's result).
    pub(super) fn with_references(
        &self,
        message: crate::message::Message,
    ) -> crate::message::Message {
        let crate::message::Message::Tool {
            tool_call_id, name, ..
        } = &message
        else {
            return message;
        };
        if name != SEARCH_TOOL {
            return message;
        }
        match lock(&self.found).remove(tool_call_id) {
            Some(found) => message.with_tool_references(found),
            None => message,
        }
    }

    /// The searches made since the last call, as events.
    pub(super) fn take_events(&self) -> Vec<AgentEvent> {
        std::mem::take(&mut lock(&self.searches))
    }

    /// `base`, or, when its eager tools pass the budget, `base` with all of them deferred but
    /// the pinned ones; checked once per snapshot.
    fn budgeted(&self, base: Arc<RegistrySnapshot>) -> Arc<RegistrySnapshot> {
        let Some(budget) = &self.settings.budget else {
            return base;
        };
        let most_used = lock(&self.most_used).clone();
        let mut budgeted = lock(&self.budgeted);
        if let Some(checked) = budgeted.as_ref() {
            if Arc::ptr_eq(&checked.base, &base) && checked.most_used == most_used {
                return checked.result.clone();
            }
        }
        let offered = base.offer(base.eager_names());
        let result = if budget.passed(&offered, self.settings.provider) {
            let eager: Vec<String> = budget
                .pinned
                .iter()
                .chain(most_used.iter())
                .cloned()
                .collect();
            Arc::new(base.deferring_all_but(&eager))
        } else {
            base.clone()
        };
        *budgeted = Some(Budgeted {
            base,
            most_used,
            result: result.clone(),
        });
        result
    }

    fn extended(&self, base: Arc<RegistrySnapshot>) -> Arc<RegistrySnapshot> {
        let mut prepared = lock(&self.prepared);
        if let Some(ready) = prepared.as_ref() {
            if Arc::ptr_eq(&ready.base, &base) {
                return ready.extended.clone();
            }
        }
        let tool = SearchTool {
            context: self.context.clone(),
            searches: self.searches.clone(),
            found: self.found.clone(),
            base: base.clone(),
            hybrid: self.hybrid.clone(),
            limit: self.settings.limit,
        };
        let extended = match base.with_tool(Arc::new(tool)) {
            Ok(extended) => Arc::new(extended),
            Err(error) => {
                // The registry has a tool of this name: it is offered as any tool, and the
                // deferred tools are reached only by calling them by name.
                tracing::warn!(%error, "the search tool is not offered");
                base.clone()
            }
        };
        *prepared = Some(Prepared {
            base,
            extended: extended.clone(),
        });
        extended
    }
}

/// The most tools an error about an unknown tool names when some tools are deferred.
const CLOSEST: usize = 5;

/// The model-facing text of `error`, about the unknown or disabled tool `name`, with the tools
/// the model may call instead: every enabled tool; or, when some are deferred (so that
/// thousands of names are not listed), the enabled tools whose name, title, description and
/// parameters best match `name` (at most five, the best first), else the eager tools and
/// `search_tools`.
pub(super) fn not_available(
    error: &ExecuteError,
    snapshot: &RegistrySnapshot,
    name: &str,
) -> String {
    use std::fmt::Write as _;

    let mut text = error.to_model_string();
    let deferring = !snapshot.deferred_names().is_empty();
    if deferring {
        let closest = closest(snapshot, name);
        if !closest.is_empty() {
            // Writing to a `String` cannot fail.
            let _ = write!(text, ". Closest tools: {}.", closest.join(", "));
            return text;
        }
    }
    let available = if deferring {
        snapshot.eager_names()
    } else {
        snapshot.enabled_names()
    };
    if available.is_empty() {
        text.push_str(". No tools are available.");
    } else {
        let _ = write!(text, ". Available tools: {}.", available.join(", "));
    }
    text
}

/// The enabled tools that best match the words of `name`, best first.
fn closest(snapshot: &RegistrySnapshot, name: &str) -> Vec<String> {
    snapshot
        .search_enabled(name, CLOSEST)
        .map(|matches| matches.hits.into_iter().map(|hit| hit.name).collect())
        .unwrap_or_default()
}

/// `search_tools(query)`: searches the deferred tools of one snapshot and loads the best
/// matches into the conversation.
struct SearchTool {
    context: ToolContext,
    searches: Arc<Mutex<Vec<AgentEvent>>>,
    found: Arc<Mutex<HashMap<String, Vec<String>>>>,
    /// The snapshot whose deferred tools it searches.
    base: Arc<RegistrySnapshot>,
    hybrid: Option<Arc<HybridSearch>>,
    limit: usize,
}

#[async_trait::async_trait]
impl ExecutableTool for SearchTool {
    fn name(&self) -> &str {
        SEARCH_TOOL
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            SEARCH_TOOL,
            "Find tools that are not loaded yet and load the best matches, so you can call \
             them. Search whenever no loaded tool fits the task.",
            json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "A few words saying what the tool should do, or \
                                        `select:NAME,NAME` to load tools by exact name"
                    }
                },
                "required": ["query"]
            }),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        self.execute_with(args, crate::CallContext::new("", SEARCH_TOOL))
            .await
    }

    async fn execute_with(
        &self,
        args: JsonObject,
        call: crate::CallContext,
    ) -> Result<String, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let outcome = match &self.hybrid {
            Some(hybrid) => hybrid
                .search(&self.base, query, self.limit)
                .await
                .map(|found| found.matches),
            None => self.base.search(query, self.limit),
        };
        let matches = outcome
            .as_ref()
            .map_or_else(|_| SearchMatches::default(), Clone::clone);
        let mut loaded = Vec::new();
        for hit in &matches.hits {
            if self.context.load_tool(&hit.name) {
                loaded.push(hit.name.clone());
            }
        }
        let found: Vec<String> = matches.hits.iter().map(|hit| hit.name.clone()).collect();
        if !call.call_id().is_empty() && !found.is_empty() {
            lock(&self.found).insert(call.call_id().to_owned(), found.clone());
        }
        lock(&self.searches).push(AgentEvent::ToolSearch {
            query: shortened(query),
            matches: found,
            loaded,
        });
        let matches = outcome.map_err(|error| ToolError::new(error.to_string()))?;
        Ok(answer(query, &matches))
    }
}

/// What the model reads: one line per tool found, then the names not found.
fn answer(query: &str, matches: &SearchMatches) -> String {
    use std::fmt::Write as _;

    // Writing to a `String` cannot fail.
    let mut text = String::new();
    if matches.hits.is_empty() {
        let _ = write!(
            text,
            "No tool matches \"{}\". Try other words, or `select:NAME`.",
            shortened(query.trim()).escape_debug()
        );
    } else {
        text.push_str("Loaded; call them like any other tool:");
        for hit in &matches.hits {
            let _ = write!(text, "\n- {}: {}", hit.name, hit.summary);
        }
    }
    if !matches.missing.is_empty() {
        let _ = write!(
            text,
            "\nNo deferred tool is named {}.",
            matches.missing.join(", ")
        );
    }
    text
}

/// A query as events and answers repeat it: at most a hundred characters.
fn shortened(query: &str) -> String {
    const MAX: usize = 100;
    const { assert!(MAX < MAX_QUERY_BYTES) };
    if query.chars().count() <= MAX {
        query.to_owned()
    } else {
        let mut cut: String = query.chars().take(MAX).collect();
        cut.push('…');
        cut
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
