//! [`ToolRegistry`]: the shared, runtime-mutable set of tools, their enabled state, snapshots for
//! agent turns and change events for servers.
//!
//! One concern per file:
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | [`ToolRegistry`]: storing tools, turning them on and off, running them by name |
//! | `options.rs` | [`RegistryOptions`] |
//! | `checks.rs` | what `register` accepts ([`RegistryError`]): name, description, parameter root |
//! | `entry.rs` | a registered tool and what is worked out from it once ([`ToolInfo`]) |
//! | `snapshot.rs` | [`RegistrySnapshot`]: the registry at one version, for one agent turn |
//! | `events.rs` | [`RegistryEvent`]: change notifications |
//! | `toggles.rs` | [`ToolToggles`]: per-chat-session overrides of the enabled state |
//!
//! A call's arguments are prepared and its tool run by [`crate::execute`]; the registry only
//! finds the entry. Provider JSON is assembled by [`crate::schema`].

mod checks;
mod entry;
mod events;
mod options;
mod search;
mod snapshot;
mod toggles;

use std::{
    fmt,
    sync::{
        Arc, PoisonError, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use indexmap::IndexMap;
use serde_json::Value;
use tokio::sync::broadcast;

pub use checks::RegistryError;
pub(crate) use checks::validate_name;
use entry::ToolEntry;
pub use entry::ToolInfo;
pub use events::RegistryEvent;
pub use options::RegistryOptions;
pub(crate) use snapshot::OfferedTools;
pub use snapshot::RegistrySnapshot;
pub use toggles::ToolToggles;

use crate::{
    call::CallContext,
    execute::{ExecuteError, model_text, outcome_of},
    schema::{FormatOptions, Provider, ToolCheckError},
    tool::{ChatTool, ExecutableTool, JsonObject, ToolMetadata},
};

/// The registry of tools an agent, a chat session or a server can call.
///
/// It is shared behind an `Arc` and changed at run time from several tasks, so every method
/// takes `&self`. Lookup by name is O(1); listings keep registration order.
///
/// ```
/// # tokio_test_block(async {
/// use tool_core::{JsonObject, ToolRegistry};
///
/// let registry = ToolRegistry::new();
/// assert!(!registry.has_tool("missing"));
/// let text = registry.execute("missing", JsonObject::new()).await;
/// assert_eq!(text, "Error: tool 'missing' not found");
/// # });
/// # fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
pub struct ToolRegistry {
    state: RwLock<State>,
    events: broadcast::Sender<RegistryEvent>,
    /// Set by the first [`subscribe`](Self::subscribe); until then there is nobody to notify.
    ever_subscribed: AtomicBool,
    options: RegistryOptions,
    /// This registry's identity, unique for the life of the process: unlike its address, it is
    /// never handed to a registry allocated after this one is dropped.
    id: u64,
}

#[derive(Default)]
struct State {
    /// Keyed with foldhash: names are the developer's, and every call hashes one.
    tools: IndexMap<Arc<str>, Slot, foldhash::fast::RandomState>,
    version: u64,
    snapshot: Option<Arc<RegistrySnapshot>>,
    /// Every tool in a search index, shared with the snapshots; updated with each change.
    search: Arc<search::SharedIndex>,
}

#[derive(Clone)]
struct Slot {
    entry: Arc<ToolEntry>,
    enabled: bool,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read();
        f.debug_struct("ToolRegistry")
            .field("tools", &state.tools.keys().collect::<Vec<_>>())
            .field("version", &state.version)
            .finish_non_exhaustive()
    }
}

impl ToolRegistry {
    /// An empty registry with the default [`RegistryOptions`].
    pub fn new() -> Self {
        Self::with_options(RegistryOptions::default())
    }

    /// An empty registry with the given options.
    pub fn with_options(options: RegistryOptions) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let (events, _) = broadcast::channel(256);
        Self {
            state: RwLock::new(State::default()),
            events,
            ever_subscribed: AtomicBool::new(false),
            options,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The registry's options.
    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    /// Registers a tool, enabled unless its metadata says `default_enabled: false`.
    ///
    /// A duplicate name or an invalid definition is rejected with a [`RegistryError`] that says
    /// what is wrong; the registry is then unchanged (a first tool with the same name stays).
    pub fn register(&self, tool: impl ExecutableTool + 'static) -> Result<(), RegistryError> {
        self.register_arc(Arc::new(tool))
    }

    /// Registers a shared tool; see [`register`](Self::register).
    pub fn register_arc(&self, tool: Arc<dyn ExecutableTool>) -> Result<(), RegistryError> {
        let entry = Arc::new(ToolEntry::new(tool)?);
        let name = {
            let mut state = self.write();
            let name = state.insert(entry.clone())?;
            state.changed();
            state.search.inserted(state.version, &entry);
            name
        };
        self.notify(|| RegistryEvent::Registered(name.to_string()));
        Ok(())
    }

    /// Registers every tool of a collection (for example a `#[toolbox]`'s tools), returning the
    /// errors of those that were rejected, in the collection's order; the others are
    /// registered, in order, as if by [`register_arc`](Self::register_arc) one after the other.
    ///
    /// Faster than that loop for many tools: the definitions are checked before the registry is
    /// locked, and the lock is taken once.
    #[must_use = "the tools that were rejected are not registered; check the errors"]
    pub fn register_all(
        &self,
        tools: impl IntoIterator<Item = Arc<dyn ExecutableTool>>,
    ) -> Vec<RegistryError> {
        let entries: Vec<Result<Arc<ToolEntry>, RegistryError>> = tools
            .into_iter()
            .map(|tool| ToolEntry::new(tool).map(Arc::new))
            .collect();
        let mut errors = Vec::new();
        let mut registered = Vec::new();
        let listening = self.is_watched();
        {
            let mut state = self.write();
            state.tools.reserve(entries.len());
            for entry in entries {
                match entry.and_then(|entry| Ok((state.insert(entry.clone())?, entry))) {
                    Ok((name, entry)) => {
                        state.changed();
                        state.search.inserted(state.version, &entry);
                        if listening {
                            registered.push(name);
                        }
                    }
                    Err(error) => errors.push(error),
                }
            }
        }
        for name in registered {
            self.notify(|| RegistryEvent::Registered(name.to_string()));
        }
        errors
    }

    /// Removes a tool. Removing an unknown name does nothing; returns whether a tool was removed.
    pub fn unregister(&self, name: &str) -> bool {
        let removed = {
            let mut state = self.write();
            let removed = state.tools.shift_remove(name).is_some();
            if removed {
                state.changed();
                state.search.removed(state.version, name);
            }
            removed
        };
        if removed {
            self.notify(|| RegistryEvent::Unregistered(name.to_owned()));
        }
        removed
    }

    /// Enables a tool; returns `false` when no tool has this name.
    #[must_use = "`false` means no tool has this name"]
    pub fn enable(&self, name: &str) -> bool {
        self.set_enabled(name, true)
    }

    /// Disables a tool (it stays registered); returns `false` when no tool has this name.
    #[must_use = "`false` means no tool has this name"]
    pub fn disable(&self, name: &str) -> bool {
        self.set_enabled(name, false)
    }

    /// Enables or disables a tool; returns `false` when no tool has this name.
    #[must_use = "`false` means no tool has this name"]
    pub fn set_enabled(&self, name: &str, enabled: bool) -> bool {
        let changed = {
            let mut state = self.write();
            let Some(slot) = state.tools.get_mut(name) else {
                return false;
            };
            let changed = slot.enabled != enabled;
            slot.enabled = enabled;
            if changed {
                state.changed();
                state.search.switched(state.version);
            }
            changed
        };
        if changed {
            self.notify(|| {
                if enabled {
                    RegistryEvent::Enabled(name.to_owned())
                } else {
                    RegistryEvent::Disabled(name.to_owned())
                }
            });
        }
        true
    }

    /// The schemas of the enabled tools, in registration order.
    pub fn get_enabled_schemas(&self) -> Vec<ChatTool> {
        self.snapshot().definitions()
    }

    /// The names of all tools, enabled or not, in registration order.
    pub fn get_tool_names(&self) -> Vec<String> {
        self.read().tools.keys().map(ToString::to_string).collect()
    }

    /// Whether a tool with this name is registered.
    pub fn has_tool(&self, name: &str) -> bool {
        self.read().tools.contains_key(name)
    }

    /// Whether the tool is registered and enabled (`false` for an unknown name).
    pub fn is_tool_enabled(&self, name: &str) -> bool {
        self.read().tools.get(name).is_some_and(|slot| slot.enabled)
    }

    /// Whether the tool is registered and deferred: left out of an agent's requests until a
    /// search loads it (see [`ToolMetadata::defer_loading`] and
    /// [`RegistryOptions::defer_loading`]); `false` for an unknown name.
    pub fn is_deferred(&self, name: &str) -> bool {
        self.read()
            .tools
            .get(name)
            .is_some_and(|slot| slot.entry.is_deferred(&self.options))
    }

    /// The tool with this name, enabled or not; `None` when unknown. O(1).
    pub fn get(&self, name: &str) -> Option<Arc<dyn ExecutableTool>> {
        self.read()
            .tools
            .get(name)
            .map(|slot| slot.entry.tool_arc().clone())
    }

    /// The metadata of the tool with this name, as read at registration.
    pub fn metadata(&self, name: &str) -> Option<ToolMetadata> {
        self.read()
            .tools
            .get(name)
            .map(|slot| slot.entry.metadata().clone())
    }

    /// Every tool with its metadata and enabled state, in registration order.
    pub fn list_tools(&self) -> Vec<ToolInfo> {
        self.read()
            .tools
            .values()
            .map(|slot| slot.entry.info(slot.enabled, &self.options))
            .collect()
    }

    /// The number of registered tools.
    pub fn len(&self) -> usize {
        self.read().tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.read().tools.is_empty()
    }

    /// How many postings of the registry's search index its updates have written or removed
    /// (`None` until the first search builds it): each registration or removal costs the
    /// postings of that tool's words only.
    #[doc(hidden)]
    pub fn search_postings_written(&self) -> Option<u64> {
        self.read().search.postings_written()
    }

    /// A counter that grows on every change (register, unregister, enable, disable).
    pub fn version(&self) -> u64 {
        self.read().version
    }

    /// Runs a tool and returns its result, or the error string the model should see. Never
    /// panics and never fails: see [`ExecuteError::to_model_string`] for the exact texts.
    pub async fn execute(&self, name: &str, args: JsonObject) -> String {
        let entry = match self.callable(name) {
            Ok(entry) => entry,
            Err(error) => return error.to_model_string(),
        };
        model_text(outcome_of!(entry.call(args, None, &self.options, None)))
    }

    /// Runs a tool and returns a structured outcome: the result, or why there is none.
    pub async fn try_execute(&self, name: &str, args: JsonObject) -> Result<String, ExecuteError> {
        let entry = self.callable(name)?;
        outcome_of!(entry.call(args, None, &self.options, None))
    }

    /// Like [`execute`](Self::execute), handing the tool the facts of this call (see
    /// [`CallContext`]): the tool runs through [`ExecutableTool::execute_with`]. For a
    /// structured outcome, run the call in a [`snapshot`](Self::snapshot)
    /// ([`RegistrySnapshot::try_execute_with`]).
    pub async fn execute_with(&self, name: &str, args: JsonObject, call: CallContext) -> String {
        let entry = match self.callable(name) {
            Ok(entry) => entry,
            Err(error) => return error.to_model_string(),
        };
        model_text(outcome_of!(entry.call(
            args,
            Some(call),
            &self.options,
            None
        )))
    }

    /// Runs a tool on the argument text the model sent (a JSON object, as OpenAI and Anthropic
    /// send it) and returns its result or the error string the model should see, like
    /// [`execute`](Self::execute).
    ///
    /// A tool that reads text (every `#[tool]` fn; see
    /// [`ExecutableTool::execute_text`]) gets its typed arguments straight from the text, with
    /// no [`JsonObject`] in between, and only what its type cannot check is validated. Other
    /// tools, lenient ones and text a tool refuses are parsed into an object and run as
    /// [`execute`](Self::execute) runs them, with the same messages. Empty text and `null`
    /// mean no arguments. With the facts of a call, run it in a [`snapshot`](Self::snapshot)
    /// ([`RegistrySnapshot::try_execute_text_with`]).
    ///
    /// ```
    /// use tool_core::{ToolRegistry, tool};
    ///
    /// /// Add two integers.
    /// #[tool]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let registry = ToolRegistry::new();
    /// registry.register(Add).unwrap();
    /// assert_eq!(registry.execute_text("add", r#"{"a": 2, "b": 3}"#).await, "5");
    /// assert_eq!(
    ///     registry.execute_text("add", r#"{"a": 2, "b": "3"}"#).await,
    ///     "Error: invalid arguments for add: at /b: expected an integer, got \"3\""
    /// );
    /// # });
    /// ```
    pub async fn execute_text(&self, name: &str, text: &str) -> String {
        let entry = match self.callable(name) {
            Ok(entry) => entry,
            Err(error) => return error.to_model_string(),
        };
        model_text(outcome_of!(entry.call_text(
            text,
            None,
            &self.options,
            None
        )))
    }

    /// Like [`execute_text`](Self::execute_text), returning a structured outcome.
    pub async fn try_execute_text(&self, name: &str, text: &str) -> Result<String, ExecuteError> {
        let entry = self.callable(name)?;
        outcome_of!(entry.call_text(text, None, &self.options, None))
    }

    /// The entry to run for `name`, held past the lock so the call does not block changes.
    #[inline]
    fn callable(&self, name: &str) -> Result<Arc<ToolEntry>, ExecuteError> {
        match self.read().tools.get(name) {
            Some(slot) if slot.enabled => Ok(slot.entry.clone()),
            Some(_) => Err(ExecuteError::Disabled {
                name: name.to_owned(),
            }),
            None => Err(ExecuteError::NotFound {
                name: name.to_owned(),
            }),
        }
    }

    /// The enabled tools in a provider's format, optionally filtered by an allow-list of names
    /// (registration order is kept). Tools the provider cannot accept are left out with an
    /// error logged. For options (OpenAI strict mode) or the error instead, ask a
    /// [`snapshot`](Self::snapshot):
    /// [`RegistrySnapshot::try_tools_for_provider`].
    ///
    /// OpenAI and Ollama: an array of `{"type":"function","function":{…}}`; Gemini:
    /// `{"functionDeclarations":[{name, description, parameters}]}`; Anthropic: an array of
    /// `{name, description, input_schema}`.
    pub fn tools_for_provider(&self, provider: Provider, allowed: Option<&[&str]>) -> Value {
        self.snapshot()
            .tools_for_provider(provider, allowed, &FormatOptions::default())
    }

    /// Whether `provider` (with `options`) accepts every registered tool, enabled or not (a
    /// disabled tool can be turned on at any time): each tool is converted as a request would
    /// convert it, and every tool the provider cannot take is named with the reason (a
    /// recursive type for Gemini, a map for OpenAI strict mode, …). Call it in a test, or at
    /// startup, so a tool never goes missing from requests unnoticed; an agent checks the
    /// tools of each request with [`RegistrySnapshot::check`].
    ///
    /// ```
    /// use tool_core::{FormatOptions, Provider, create_default_tool_registry, ToolContext};
    ///
    /// let registry = create_default_tool_registry(ToolContext::default());
    /// for provider in Provider::ALL {
    ///     assert_eq!(registry.check(provider, &FormatOptions::new()), Ok(()));
    /// }
    /// ```
    pub fn check(&self, provider: Provider, options: &FormatOptions) -> Result<(), ToolCheckError> {
        let entries: Vec<Arc<ToolEntry>> = self
            .read()
            .tools
            .values()
            .map(|slot| slot.entry.clone())
            .collect();
        snapshot::check_entries(entries.iter(), provider, options)
    }

    /// An immutable view of the registry now: the tools, their enabled state and cached provider
    /// JSON. Cheap when nothing changed since the last call (an `Arc` clone). An agent takes one
    /// per turn so the tools it sends are the tools it runs.
    pub fn snapshot(&self) -> Arc<RegistrySnapshot> {
        if let Some(snapshot) = &self.read().snapshot {
            return snapshot.clone();
        }
        let mut state = self.write();
        if let Some(snapshot) = &state.snapshot {
            return snapshot.clone();
        }
        let snapshot = Arc::new(RegistrySnapshot::new(
            state.version,
            state
                .tools
                .values()
                .map(|slot| (slot.entry.clone(), slot.enabled)),
            self.options.clone(),
            state.search.clone(),
        ));
        state.snapshot = Some(snapshot.clone());
        snapshot
    }

    /// A snapshot whose enabled set is decided by `enabled(name, metadata, registry_enabled)`
    /// instead of the registry's own state; chat sessions use it for per-session toggles.
    pub fn snapshot_with(
        &self,
        mut enabled: impl FnMut(&str, &ToolMetadata, bool) -> bool,
    ) -> RegistrySnapshot {
        let state = self.read();
        RegistrySnapshot::new(
            state.version,
            state.tools.values().map(|slot| {
                let on = enabled(slot.entry.name(), slot.entry.metadata(), slot.enabled);
                (slot.entry.clone(), on)
            }),
            self.options.clone(),
            state.search.clone(),
        )
    }

    /// Watches the registry: every register, unregister, enable and disable is sent as a
    /// [`RegistryEvent`]. A receiver that falls behind by more than 256 events gets
    /// `RecvError::Lagged` and should treat it as "the list changed".
    pub fn subscribe(&self) -> broadcast::Receiver<RegistryEvent> {
        self.ever_subscribed.store(true, Ordering::Release);
        self.events.subscribe()
    }

    /// How many [`subscribe`](Self::subscribe)rs are listening now (for example one per
    /// connected MCP client).
    pub fn subscriber_count(&self) -> usize {
        self.events.receiver_count()
    }

    fn notify(&self, event: impl FnOnce() -> RegistryEvent) {
        // Building the event allocates; skip it when nobody listens (the common case while a
        // registry is being filled). A send error likewise only means nobody is listening.
        // `receiver_count` takes the channel's lock; a registry nobody ever watched skips even
        // that.
        if self.is_watched() {
            let _ = self.events.send(event());
        }
    }

    /// Whether someone listens for events now.
    fn is_watched(&self) -> bool {
        self.ever_subscribed.load(Ordering::Acquire) && self.events.receiver_count() > 0
    }

    #[inline]
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        // A panic while holding the lock cannot leave `State` half-updated (every update is a
        // single map operation), so a poisoned lock is still safe to use.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// Adds a checked entry, enabled as its metadata says, unless its name is taken; returns
    /// the name.
    #[inline]
    fn insert(&mut self, entry: Arc<ToolEntry>) -> Result<Arc<str>, RegistryError> {
        let name = entry.name().clone();
        match self.tools.entry(name.clone()) {
            indexmap::map::Entry::Occupied(_) => Err(RegistryError::Duplicate {
                name: name.to_string(),
            }),
            indexmap::map::Entry::Vacant(vacant) => {
                let enabled = entry.metadata().default_enabled;
                vacant.insert(Slot { entry, enabled });
                Ok(name)
            }
        }
    }

    fn changed(&mut self) {
        self.version += 1;
        self.snapshot = None;
    }
}
