//! Tool search in an agent: when the tools of a request include deferred ones, their
//! definitions stay out and a `search_tools` tool is offered instead; what a search finds is
//! loaded for the rest of the conversation, appended after the tools already offered.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::{AgentEvent, HybridSearch};
use crate::{
    context::ToolContext,
    execute::ExecuteError,
    message::ToolCall,
    model::{RequestTools, ToolChoice},
    registry::{OfferedTools, RegistrySnapshot},
    schema::{Provider, ToolList},
    search::{MAX_QUERY_BYTES, SearchMatches},
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError},
};

/// The name of the search tool an agent offers when some tools are deferred.
pub const SEARCH_TOOL: &str = "search_tools";

/// When an agent defers tools by itself ([`AgentOptions::defer_budget`]): once the tools it
/// would offer in full pass a number or an estimated token count, it defers every one of them
/// but the pinned ones, and offers `search_tools` instead.
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

    /// Whether `offered` tools, in `provider`'s format, pass the budget.
    fn passed(&self, offered: &OfferedTools, provider: Provider) -> bool {
        self.max_tools
            .is_some_and(|max| ToolList::names(offered).len() > max)
            || self
                .max_tokens
                .is_some_and(|max| offered.provider_json(provider).get().len() / 4 > max)
    }
}

/// The search state of one agent: the conversation whose loaded tools it extends, the index
/// of the current snapshot, and the searches made since the application last heard of them.
pub(super) struct ToolSearch {
    context: ToolContext,
    searches: Arc<Mutex<Vec<AgentEvent>>>,
    prepared: Mutex<Option<Prepared>>,
    limit: usize,
    budget: Option<DeferBudget>,
    provider: Provider,
    /// The last snapshot the budget was checked on, and the snapshot it gave.
    budgeted: Mutex<Option<(Arc<RegistrySnapshot>, Arc<RegistrySnapshot>)>>,
    /// Ranks by meaning as well, when set.
    hybrid: Option<Arc<HybridSearch>>,
}

/// A base snapshot with the search tool added, built once per snapshot.
struct Prepared {
    base: Arc<RegistrySnapshot>,
    extended: Arc<RegistrySnapshot>,
}

impl ToolSearch {
    /// A search that loads at most `limit` tools per query into `context`'s conversation, and
    /// defers tools past `budget` (estimated in `provider`'s format).
    pub(super) fn new(
        context: ToolContext,
        limit: usize,
        budget: Option<DeferBudget>,
        provider: Provider,
    ) -> Self {
        Self {
            context,
            searches: Arc::default(),
            prepared: Mutex::default(),
            limit: limit.max(1),
            budget,
            provider,
            budgeted: Mutex::default(),
            hybrid: None,
        }
    }

    /// This search, ranking with `hybrid` when given.
    pub(super) fn with_hybrid(mut self, hybrid: Option<Arc<HybridSearch>>) -> Self {
        self.hybrid = hybrid;
        self
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
        (snapshot, RequestTools::from_snapshot(Arc::new(offered)))
    }

    /// Loads the deferred tools the model called without searching for them (they exist and
    /// are enabled, so the calls run), and returns an event for each.
    pub(super) fn load_called(
        &self,
        snapshot: &RegistrySnapshot,
        calls: &[ToolCall],
    ) -> Vec<AgentEvent> {
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

    /// The searches made since the last call, as events.
    pub(super) fn take_events(&self) -> Vec<AgentEvent> {
        std::mem::take(&mut lock(&self.searches))
    }

    /// `base`, or, when its eager tools pass the budget, `base` with all of them deferred but
    /// the pinned ones; checked once per snapshot.
    fn budgeted(&self, base: Arc<RegistrySnapshot>) -> Arc<RegistrySnapshot> {
        let Some(budget) = &self.budget else {
            return base;
        };
        let mut budgeted = lock(&self.budgeted);
        if let Some((checked, result)) = budgeted.as_ref() {
            if Arc::ptr_eq(checked, &base) {
                return result.clone();
            }
        }
        let offered = base.offer(base.eager_names());
        let result = if budget.passed(&offered, self.provider) {
            Arc::new(base.deferring_all_but(&budget.pinned))
        } else {
            base.clone()
        };
        *budgeted = Some((base, result.clone()));
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
            base: base.clone(),
            hybrid: self.hybrid.clone(),
            limit: self.limit,
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
        lock(&self.searches).push(AgentEvent::ToolSearch {
            query: shortened(query),
            matches: matches.hits.iter().map(|hit| hit.name.clone()).collect(),
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
