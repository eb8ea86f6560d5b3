//! [`RegistrySnapshot`]: a registry frozen at one version, so the tools an agent turn sends are
//! the tools it runs.

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, OnceLock},
    time::Duration,
};

use serde_json::{Value, value::RawValue};

use super::{
    RegistryError, RegistryOptions, ToolInfo,
    entry::ToolEntry,
    search::{self, SharedIndex},
};
use crate::{
    call::CallContext,
    execute::{Call, ExecuteError, model_text, outcome_of},
    schema::{
        Coercion, FormatOptions, Provider, SchemaError, ToolCheckError, ToolList,
        list::{self, ListCache},
    },
    search::{SearchError, SearchMatches, ToolIndex},
    tool::{ChatTool, ExecutableTool, JsonObject, ToolMetadata},
};

/// An immutable view of a registry at one version: which tools exist, which are enabled, and
/// their provider JSON, computed once and shared.
pub struct RegistrySnapshot {
    version: u64,
    tools: Vec<(Arc<ToolEntry>, bool)>,
    index: OnceLock<HashMap<Arc<str>, usize, foldhash::fast::RandomState>>,
    lists: ListCache,
    options: RegistryOptions,
    /// When an agent's budget defers tools: the tools it keeps eager; every other is deferred.
    eager_only: Option<Arc<[String]>>,
    /// Tools an agent added to the snapshot (its search tool): never deferred.
    added: Vec<Arc<str>>,
    /// The registry's search index.
    search: Arc<SharedIndex>,
}

impl fmt::Debug for RegistrySnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrySnapshot")
            .field("version", &self.version)
            .field("enabled", &self.enabled_names())
            .finish_non_exhaustive()
    }
}

/// Converts each tool of `entries` for `provider`, as a request would, and gathers every
/// failure.
pub(super) fn check_entries<'a>(
    entries: impl Iterator<Item = &'a Arc<ToolEntry>>,
    provider: Provider,
    options: &FormatOptions,
) -> Result<(), ToolCheckError> {
    let errors: Vec<SchemaError> = entries
        .filter_map(|entry| entry.format(provider, options).as_ref().err().cloned())
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ToolCheckError { errors })
    }
}

/// The enabled tools, as a model request offers them (see
/// [`RequestTools::from_snapshot`](crate::model::RequestTools::from_snapshot)).
impl ToolList for RegistrySnapshot {
    fn definitions(&self) -> Vec<ChatTool> {
        RegistrySnapshot::definitions(self)
    }

    fn names(&self) -> Vec<&str> {
        self.enabled_names()
    }

    fn is_empty(&self) -> bool {
        RegistrySnapshot::is_empty(self)
    }

    fn provider_json(&self, provider: Provider) -> Arc<RawValue> {
        RegistrySnapshot::provider_json(self, provider)
    }
}

impl RegistrySnapshot {
    pub(super) fn new(
        version: u64,
        tools: impl Iterator<Item = (Arc<ToolEntry>, bool)>,
        options: RegistryOptions,
        search: Arc<SharedIndex>,
    ) -> Self {
        Self {
            version,
            tools: tools.collect(),
            index: OnceLock::new(),
            lists: ListCache::default(),
            options,
            eager_only: None,
            added: Vec::new(),
            search,
        }
    }

    /// The registry version this snapshot was taken at.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// A hash of what this snapshot shows: the registry version it was taken at and which of
    /// its tools are enabled, so that two views of one registry (two users' switches, say)
    /// hash apart, but for a collision of 64-bit hashes.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // The MCP server's listen streams use it.
    pub(crate) fn fingerprint(&self) -> u64 {
        use std::hash::{Hash as _, Hasher as _};

        let mut hasher = std::hash::DefaultHasher::new();
        self.version.hash(&mut hasher);
        for (_, enabled) in &self.tools {
            enabled.hash(&mut hasher);
        }
        hasher.finish()
    }

    /// The definitions of the enabled tools, in registration order (what
    /// [`ToolRegistry::get_enabled_schemas`](super::ToolRegistry::get_enabled_schemas) gives
    /// for the registry).
    pub fn definitions(&self) -> Vec<ChatTool> {
        self.enabled()
            .map(|entry| entry.definition().clone())
            .collect()
    }

    /// The names of the enabled tools, in registration order.
    pub fn enabled_names(&self) -> Vec<&str> {
        self.enabled().map(|entry| &**entry.name()).collect()
    }

    /// Whether no tool is enabled.
    pub fn is_empty(&self) -> bool {
        self.enabled().next().is_none()
    }

    /// Whether the tool exists and is enabled in this snapshot.
    pub fn is_enabled(&self, name: &str) -> bool {
        self.slot(name).is_some_and(|(_, enabled)| *enabled)
    }

    /// Whether the tool exists in this snapshot and is deferred (enabled or not; see
    /// [`ToolRegistry::is_deferred`](super::ToolRegistry::is_deferred)).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.slot(name).is_some_and(|(entry, _)| self.defers(entry))
    }

    /// The names of the enabled tools that are not deferred, in registration order: what an
    /// agent offers before any search.
    pub fn eager_names(&self) -> Vec<&str> {
        self.enabled()
            .filter(|entry| !self.defers(entry))
            .map(|entry| &**entry.name())
            .collect()
    }

    /// The names of the enabled tools that are deferred, in registration order.
    pub fn deferred_names(&self) -> Vec<&str> {
        self.enabled()
            .filter(|entry| self.defers(entry))
            .map(|entry| &**entry.name())
            .collect()
    }

    /// A search index of its own over the enabled deferred tools (see [`ToolIndex`]), built
    /// now: for an application that keeps it. [`search`](Self::search) looks in the same
    /// tools through the registry's index, which is built once and kept up to date.
    pub fn search_index(&self) -> ToolIndex {
        search::index_of(
            self.enabled()
                .filter(|entry| self.defers(entry))
                .map(|entry| &**entry),
        )
    }

    /// The `limit` tools among the enabled deferred ones that best match `query` (see
    /// [`ToolIndex::search`] for the query forms): what a `search_tools` call of an agent
    /// finds. A switched-off or eager tool is not found.
    ///
    /// It looks in the registry's index, built at the first search and then updated one tool
    /// at a time as tools are registered and removed. The words are weighed over every
    /// registered tool, so a rare word counts as rare whichever tools are deferred.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchMatches, SearchError> {
        self.search_where(query, limit, |entry| self.defers(entry))
    }

    /// Like [`search`](Self::search), among every enabled tool, eager ones too.
    pub(crate) fn search_enabled(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<SearchMatches, SearchError> {
        self.search_where(query, limit, |_| true)
    }

    fn search_where(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&ToolEntry) -> bool,
    ) -> Result<SearchMatches, SearchError> {
        // The tools an agent added (its search tool) are not the registry's: they stay out of
        // its index.
        let registered = self
            .tools
            .iter()
            .filter(|(entry, _)| !self.added.contains(entry.name()))
            .map(|(entry, _)| &**entry);
        self.search
            .search(self.version, registered, query, limit, |name| {
                self.slot(name)
                    .is_some_and(|(entry, enabled)| *enabled && keep(entry))
            })
    }

    /// This snapshot with one more tool, enabled and not deferred (an agent's `search_tools`),
    /// checked as `register` checks it; an error when the name is taken.
    pub(crate) fn with_tool(&self, tool: Arc<dyn ExecutableTool>) -> Result<Self, RegistryError> {
        let entry = Arc::new(ToolEntry::new(tool)?);
        if self.slot(entry.name()).is_some() {
            return Err(RegistryError::Duplicate {
                name: entry.name().to_string(),
            });
        }
        let mut added = self.added.clone();
        added.push(entry.name().clone());
        Ok(Self {
            eager_only: self.eager_only.clone(),
            added,
            ..Self::new(
                self.version,
                self.tools.iter().cloned().chain([(entry, true)]),
                self.options.clone(),
                self.search.clone(),
            )
        })
    }

    /// This snapshot with every tool deferred but those of `eager` (an agent's budget): a tool
    /// named there is deferred only when it is by itself.
    pub(crate) fn deferring_all_but(&self, eager: &[String]) -> Self {
        Self {
            eager_only: Some(eager.into()),
            added: self.added.clone(),
            ..Self::new(
                self.version,
                self.tools.iter().cloned(),
                self.options.clone(),
                self.search.clone(),
            )
        }
    }

    /// Whether this snapshot defers the tool of `entry`: its own metadata or the registry's
    /// options say so, or an agent's budget does, unless the agent added it.
    fn defers(&self, entry: &ToolEntry) -> bool {
        if self.added.contains(entry.name()) {
            return false;
        }
        entry.is_deferred(&self.options)
            || self
                .eager_only
                .as_ref()
                .is_some_and(|eager| !eager.iter().any(|name| **name == **entry.name()))
    }

    /// The enabled tools among `names`, in the order given (each once): a request's tools in an
    /// order the caller chooses, each tool's provider format taken from this snapshot's cache.
    pub(crate) fn offer<'a>(
        self: &Arc<Self>,
        names: impl IntoIterator<Item = &'a str>,
    ) -> OfferedTools {
        let mut positions: Vec<usize> = Vec::new();
        for name in names {
            if let Some(&position) = self.position(name) {
                if self.tools[position].1 && !positions.contains(&position) {
                    positions.push(position);
                }
            }
        }
        OfferedTools {
            snapshot: self.clone(),
            positions,
            lists: ListCache::default(),
        }
    }

    /// The description of a tool of this snapshot (enabled or not).
    #[cfg(feature = "otel")]
    pub(crate) fn description(&self, name: &str) -> Option<&str> {
        self.slot(name)
            .map(|(entry, _)| entry.definition().description())
    }

    /// The metadata of a tool of this snapshot (enabled or not).
    pub fn metadata(&self, name: &str) -> Option<&ToolMetadata> {
        self.slot(name).map(|(entry, _)| entry.metadata())
    }

    /// Reads arguments of the wrong JSON type as the type the tool's schema asks for, when the
    /// tool is lenient (its metadata or the registry's options say so), and returns what was
    /// changed; does nothing and returns nothing for a strict or unknown tool. Running the tool
    /// does the same, so calling this first only makes the coercions visible (a second pass
    /// finds nothing to change).
    pub fn coerce_arguments(&self, name: &str, args: &mut JsonObject) -> Vec<Coercion> {
        match self.slot(name) {
            Some((entry, _)) => entry.coerce(args, &self.options),
            None => Vec::new(),
        }
    }

    /// Whether the tool `name` reads its arguments leniently (see
    /// [`ToolMetadata::lenient_arguments`]); `false` for an unknown tool.
    pub(crate) fn is_lenient(&self, name: &str) -> bool {
        self.slot(name)
            .is_some_and(|(entry, _)| entry.is_lenient(&self.options))
    }

    /// Every tool of the snapshot with its enabled state, in registration order.
    pub fn list_tools(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|(entry, enabled)| {
                let mut info = entry.info(*enabled, &self.options);
                info.deferred = self.defers(entry);
                info
            })
            .collect()
    }

    /// The enabled tools in a provider's format as JSON text ready to send, computed once per
    /// snapshot and provider (cloning the result is an `Arc` clone). Tools the provider cannot
    /// accept are left out with an error logged; [`check`](Self::check) first to fail instead.
    pub fn provider_json(&self, provider: Provider) -> Arc<RawValue> {
        self.lists
            .get(provider, || fragments(self.enabled(), provider))
    }

    /// Whether `provider` (with `options`) accepts every enabled tool of this snapshot, that is
    /// every tool a request built from it sends: the same conversion the request path makes
    /// (and caches), with every tool it would leave out named with the reason. An agent calls
    /// this before its request so a tool is never dropped silently.
    pub fn check(&self, provider: Provider, options: &FormatOptions) -> Result<(), ToolCheckError> {
        check_entries(self.enabled(), provider, options)
    }

    /// See [`ToolRegistry::tools_for_provider`](super::ToolRegistry::tools_for_provider).
    pub fn tools_for_provider(
        &self,
        provider: Provider,
        allowed: Option<&[&str]>,
        options: &FormatOptions,
    ) -> Value {
        let tools = self
            .selected(allowed)
            .filter_map(|entry| match entry.format(provider, options) {
                Ok((value, _)) => Some(Value::clone(value)),
                Err(error) => {
                    tracing::error!(tool = %entry.name(), %provider, %error, "tool left out of the request");
                    None
                }
            })
            .collect();
        list::wrap(provider, tools)
    }

    /// Like [`tools_for_provider`](Self::tools_for_provider), failing on the first tool the
    /// provider cannot accept instead of leaving it out.
    pub fn try_tools_for_provider(
        &self,
        provider: Provider,
        allowed: Option<&[&str]>,
        options: &FormatOptions,
    ) -> Result<Value, SchemaError> {
        let tools = self
            .selected(allowed)
            .map(|entry| match entry.format(provider, options) {
                Ok((value, _)) => Ok(Value::clone(value)),
                Err(error) => Err(error.clone()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(list::wrap(provider, tools))
    }

    /// Runs a tool of this snapshot; a tool disabled in the snapshot gets the "not available"
    /// string even if it was enabled since. See [`ToolRegistry::execute`](super::ToolRegistry::execute).
    pub async fn execute(&self, name: &str, args: JsonObject) -> String {
        model_text(outcome_of!(self.start(name, args, None, None)))
    }

    /// Runs a tool of this snapshot and returns a structured outcome.
    pub async fn try_execute(&self, name: &str, args: JsonObject) -> Result<String, ExecuteError> {
        outcome_of!(self.start(name, args, None, None))
    }

    /// Like [`try_execute`](Self::try_execute), handing the tool the facts of this call (see
    /// [`ToolRegistry::execute_with`](super::ToolRegistry::execute_with)).
    pub async fn try_execute_with(
        &self,
        name: &str,
        args: JsonObject,
        call: CallContext,
    ) -> Result<String, ExecuteError> {
        outcome_of!(self.start(name, args, Some(call), None))
    }

    /// Like [`try_execute_with`](Self::try_execute_with), with `default_timeout` (when set)
    /// instead of the registry's for a tool whose metadata sets none: an agent's own
    /// `tool_timeout` over a shared registry.
    pub(crate) async fn try_execute_call(
        &self,
        name: &str,
        args: JsonObject,
        call: CallContext,
        default_timeout: Option<Duration>,
    ) -> Result<String, ExecuteError> {
        outcome_of!(self.start(name, args, Some(call), default_timeout))
    }

    /// Runs a tool of this snapshot on the argument text the model sent; see
    /// [`ToolRegistry::execute_text`](super::ToolRegistry::execute_text).
    pub async fn execute_text(&self, name: &str, text: &str) -> String {
        model_text(outcome_of!(self.start_text(name, text, None, None)))
    }

    /// Like [`try_execute_with`](Self::try_execute_with), on the argument text the model sent
    /// (see [`ToolRegistry::execute_text`](super::ToolRegistry::execute_text)).
    pub async fn try_execute_text_with(
        &self,
        name: &str,
        text: &str,
        call: CallContext,
    ) -> Result<String, ExecuteError> {
        outcome_of!(self.start_text(name, text, Some(call), None))
    }

    /// Like [`try_execute_text_with`](Self::try_execute_text_with), with `default_timeout` as
    /// in [`try_execute_call`](Self::try_execute_call).
    pub(crate) async fn try_execute_text_call(
        &self,
        name: &str,
        text: &str,
        call: CallContext,
        default_timeout: Option<Duration>,
    ) -> Result<String, ExecuteError> {
        outcome_of!(self.start_text(name, text, Some(call), default_timeout))
    }

    /// The call of an enabled tool of this snapshot (the tool runs when it is polled), with
    /// `default_timeout` overriding the registry's when set.
    fn start(
        &self,
        name: &str,
        args: JsonObject,
        context: Option<CallContext>,
        default_timeout: Option<Duration>,
    ) -> Result<Call<'_>, ExecuteError> {
        self.enabled_entry(name)?
            .call(args, context, &self.options, default_timeout)
    }

    /// The call of an enabled tool of this snapshot on argument text (see
    /// [`ToolEntry::call_text`]).
    #[inline]
    fn start_text(
        &self,
        name: &str,
        text: &str,
        context: Option<CallContext>,
        default_timeout: Option<Duration>,
    ) -> Result<Call<'_>, ExecuteError> {
        self.enabled_entry(name)?
            .call_text(text, context, &self.options, default_timeout)
    }

    /// The entry of `name` when it is enabled in this snapshot.
    #[inline]
    fn enabled_entry(&self, name: &str) -> Result<&ToolEntry, ExecuteError> {
        match self.slot(name) {
            None => Err(ExecuteError::NotFound {
                name: name.to_owned(),
            }),
            Some((_, false)) => Err(ExecuteError::Disabled {
                name: name.to_owned(),
            }),
            Some((entry, true)) => Ok(entry),
        }
    }

    fn enabled(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.tools
            .iter()
            .filter(|(_, enabled)| *enabled)
            .map(|(entry, _)| entry)
    }

    fn selected<'a>(
        &'a self,
        allowed: Option<&'a [&'a str]>,
    ) -> impl Iterator<Item = &'a Arc<ToolEntry>> + 'a {
        self.enabled()
            .filter(move |entry| allowed.is_none_or(|names| names.contains(&&**entry.name())))
    }

    #[inline]
    fn slot(&self, name: &str) -> Option<&(Arc<ToolEntry>, bool)> {
        self.position(name).map(|&position| &self.tools[position])
    }

    #[inline]
    fn position(&self, name: &str) -> Option<&usize> {
        let index = self.index.get_or_init(|| {
            self.tools
                .iter()
                .enumerate()
                .map(|(position, (entry, _))| (entry.name().clone(), position))
                .collect()
        });
        index.get(name)
    }
}

/// Some enabled tools of a snapshot in a chosen order (see `RegistrySnapshot::offer`), as the
/// tools of a request: each tool's provider format comes from the snapshot's cache, and the
/// whole list is assembled once per provider.
pub(crate) struct OfferedTools {
    snapshot: Arc<RegistrySnapshot>,
    positions: Vec<usize>,
    lists: ListCache,
}

impl fmt::Debug for OfferedTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OfferedTools")
            .field("tools", &ToolList::names(self))
            .finish_non_exhaustive()
    }
}

impl OfferedTools {
    fn entries(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.positions
            .iter()
            .map(|&position| &self.snapshot.tools[position].0)
    }
}

impl ToolList for OfferedTools {
    fn definitions(&self) -> Vec<ChatTool> {
        self.entries()
            .map(|entry| entry.definition().clone())
            .collect()
    }

    fn names(&self) -> Vec<&str> {
        self.entries().map(|entry| &**entry.name()).collect()
    }

    fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    fn provider_json(&self, provider: Provider) -> Arc<RawValue> {
        self.lists
            .get(provider, || fragments(self.entries(), provider))
    }
}

/// Each entry in `provider`'s format (default options) as JSON text, from the entry's cache;
/// a tool the provider cannot accept is left out with an error logged.
fn fragments<'a>(
    entries: impl Iterator<Item = &'a Arc<ToolEntry>>,
    provider: Provider,
) -> Vec<&'a RawValue> {
    let options = FormatOptions::default();
    entries
        .filter_map(|entry| match entry.format(provider, &options) {
            Ok((_, text)) => Some(&**text),
            Err(error) => {
                tracing::error!(tool = %entry.name(), %provider, %error, "tool left out of the request");
                None
            }
        })
        .collect()
}
