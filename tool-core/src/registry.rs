//! [`ToolRegistry`]: the shared, runtime-mutable set of tools, their enabled state, snapshots for
//! agent turns and change events for servers.

use std::{
    collections::HashMap,
    fmt,
    sync::{
        Arc, OnceLock, PoisonError, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Value, value::RawValue};
use tokio::sync::broadcast;

use crate::{
    call::CallContext,
    execute::{ExecuteError, GuardedCall, describe_schema_errors},
    schema::{Coercion, FormatOptions, OptionalNulls, Provider, SchemaError, format_tool},
    tool::{ChatTool, ExecutableTool, JsonObject, ToolHints, ToolMetadata},
};

/// Settings of a [`ToolRegistry`]. `Default` validates arguments, keeps them strict and sets no
/// timeout.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RegistryOptions {
    /// Validate arguments against each tool's JSON Schema before the tool runs (default `true`).
    pub validate_arguments: bool,
    /// The timeout of tools that set none in their metadata (default: none).
    pub default_timeout: Option<Duration>,
    /// Read arguments of the wrong JSON type as the type the schema asks for, for every tool
    /// whose [`ToolMetadata::lenient_arguments`] is `None` (default `false`).
    pub lenient_arguments: bool,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self {
            validate_arguments: true,
            default_timeout: None,
            lenient_arguments: false,
        }
    }
}

impl RegistryOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns schema validation of arguments on or off.
    #[must_use]
    pub fn validate_arguments(mut self, validate: bool) -> Self {
        self.validate_arguments = validate;
        self
    }

    /// Sets the timeout of tools that set none themselves.
    #[must_use]
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Turns lenient arguments on or off for the tools that do not choose themselves (see
    /// [`schema::coerce_arguments`](crate::schema::coerce_arguments)).
    #[must_use]
    pub fn lenient_arguments(mut self, lenient: bool) -> Self {
        self.lenient_arguments = lenient;
        self
    }
}

/// Why a tool could not be registered. The registry is unchanged when this is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Another tool already has this name; the first one stays registered.
    #[error("a tool named `{name}` is already registered")]
    Duplicate {
        /// The name in use.
        name: String,
    },
    /// The name does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("invalid tool name `{name}`: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The tool has an empty description.
    #[error("tool `{name}` has no description; describe what it does for the model")]
    MissingDescription {
        /// The tool's name.
        name: String,
    },
    /// `get_schema().function.name` differs from `name()`.
    #[error("tool `{name}` returns a schema named `{schema_name}`; the two names must be equal")]
    NameMismatch {
        /// `name()`.
        name: String,
        /// The schema's function name.
        schema_name: String,
    },
    /// The parameters are not a JSON Schema object with `"type": "object"`.
    #[error("tool `{name}` has invalid parameters: {reason}")]
    InvalidParameters {
        /// The tool's name.
        name: String,
        /// What is wrong with them.
        reason: String,
    },
}

/// A change to a registry, sent to every [`subscribe`](ToolRegistry::subscribe)r.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryEvent {
    /// A tool was registered.
    Registered(String),
    /// A tool was unregistered.
    Unregistered(String),
    /// A disabled tool was enabled.
    Enabled(String),
    /// An enabled tool was disabled.
    Disabled(String),
}

impl RegistryEvent {
    /// The name of the tool that changed.
    pub fn name(&self) -> &str {
        match self {
            Self::Registered(name)
            | Self::Unregistered(name)
            | Self::Enabled(name)
            | Self::Disabled(name) => name,
        }
    }
}

/// What a settings screen shows about a tool: its definition, metadata and enabled state.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// A human-readable title, when the tool has one.
    pub title: Option<String>,
    /// The tool's category.
    pub category: Option<String>,
    /// The tool's icon URL.
    pub icon: Option<String>,
    /// Whether the tool is enabled when registered.
    pub default_enabled: bool,
    /// Whether the tool is enabled now.
    pub enabled: bool,
    /// Behaviour hints.
    pub hints: ToolHints,
}

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
            let name = state.insert(entry)?;
            state.changed();
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
                match entry.and_then(|entry| state.insert(entry)) {
                    Ok(name) => {
                        state.changed();
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
        self.snapshot().schemas()
    }

    /// The names of all tools, enabled or not, in registration order.
    pub fn get_tool_names(&self) -> Vec<String> {
        self.read()
            .tools
            .keys()
            .map(|name| name.to_string())
            .collect()
    }

    /// Whether a tool with this name is registered.
    pub fn has_tool(&self, name: &str) -> bool {
        self.read().tools.contains_key(name)
    }

    /// Whether the tool is registered and enabled (`false` for an unknown name).
    pub fn is_tool_enabled(&self, name: &str) -> bool {
        self.read().tools.get(name).is_some_and(|slot| slot.enabled)
    }

    /// The tool with this name, enabled or not; `None` when unknown. O(1).
    pub fn get(&self, name: &str) -> Option<Arc<dyn ExecutableTool>> {
        self.read()
            .tools
            .get(name)
            .map(|slot| slot.entry.tool.clone())
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
            .map(|slot| slot.entry.info(slot.enabled))
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

    /// A counter that grows on every change (register, unregister, enable, disable).
    pub fn version(&self) -> u64 {
        self.read().version
    }

    /// Runs a tool and returns its result, or the error string the model should see. Never
    /// panics and never fails: see [`ExecuteError::to_model_string`] for the exact texts.
    pub async fn execute(&self, name: &str, args: JsonObject) -> String {
        // Not `try_execute(..).await`: one state machine around the tool's future, not two,
        // keeps the future small (moving it is part of every call).
        let entry = match self.callable(name) {
            Ok(entry) => entry,
            Err(error) => return error.to_model_string(),
        };
        let call = match entry.call(args, None, &self.options) {
            Ok(call) => call,
            Err(error) => return error.to_model_string(),
        };
        match call.await {
            Ok(text) => text,
            Err(error) => error.to_model_string(),
        }
    }

    /// Runs a tool and returns a structured outcome: the result, or why there is none.
    pub async fn try_execute(&self, name: &str, args: JsonObject) -> Result<String, ExecuteError> {
        let entry = self.callable(name)?;
        let call = entry.call(args, None, &self.options)?;
        call.await
    }

    /// Like [`execute`](Self::execute), handing the tool the facts of this call (see
    /// [`CallContext`]): the tool runs through
    /// [`ExecutableTool::execute_with`].
    pub async fn execute_with(&self, name: &str, args: JsonObject, call: CallContext) -> String {
        match self.try_execute_with(name, args, call).await {
            Ok(text) => text,
            Err(error) => error.to_model_string(),
        }
    }

    /// Like [`try_execute`](Self::try_execute), handing the tool the facts of this call.
    pub async fn try_execute_with(
        &self,
        name: &str,
        args: JsonObject,
        call: CallContext,
    ) -> Result<String, ExecuteError> {
        let entry = self.callable(name)?;
        let call = entry.call(args, Some(call), &self.options)?;
        call.await
    }

    /// The entry to run for `name`, held past the lock so the call does not block changes.
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
    /// error logged; use [`try_tools_for_provider`](Self::try_tools_for_provider) to get the
    /// error instead.
    ///
    /// OpenAI and Ollama: an array of `{"type":"function","function":{…}}`; Gemini:
    /// `{"functionDeclarations":[{name, description, parameters}]}`; Anthropic: an array of
    /// `{name, description, input_schema}`.
    pub fn tools_for_provider(&self, provider: Provider, allowed: Option<&[&str]>) -> Value {
        self.snapshot()
            .tools_for_provider(provider, allowed, &FormatOptions::default())
    }

    /// Like [`tools_for_provider`](Self::tools_for_provider), with options (OpenAI strict mode),
    /// failing on the first tool the provider cannot accept.
    pub fn try_tools_for_provider(
        &self,
        provider: Provider,
        allowed: Option<&[&str]>,
        options: &FormatOptions,
    ) -> Result<Value, SchemaError> {
        self.snapshot()
            .try_tools_for_provider(provider, allowed, options)
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

/// An immutable view of a registry at one version: which tools exist, which are enabled, and
/// their provider JSON, computed once and shared.
pub struct RegistrySnapshot {
    version: u64,
    tools: Vec<(Arc<ToolEntry>, bool)>,
    index: OnceLock<HashMap<Arc<str>, usize, foldhash::fast::RandomState>>,
    formats: [OnceLock<Arc<RawValue>>; FORMAT_SLOTS],
    options: RegistryOptions,
}

impl fmt::Debug for RegistrySnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrySnapshot")
            .field("version", &self.version)
            .field("enabled", &self.enabled_names())
            .finish_non_exhaustive()
    }
}

impl RegistrySnapshot {
    fn new(
        version: u64,
        tools: impl Iterator<Item = (Arc<ToolEntry>, bool)>,
        options: RegistryOptions,
    ) -> Self {
        Self {
            version,
            tools: tools.collect(),
            index: OnceLock::new(),
            formats: Default::default(),
            options,
        }
    }

    /// The registry version this snapshot was taken at.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The schemas of the enabled tools, in registration order.
    pub fn schemas(&self) -> Vec<ChatTool> {
        self.enabled().map(|entry| entry.schema.clone()).collect()
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

    /// Every tool of the snapshot with its enabled state, in registration order.
    pub fn list_tools(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|(entry, enabled)| entry.info(*enabled))
            .collect()
    }

    /// The enabled tools in a provider's format as JSON text ready to send, computed once per
    /// snapshot and provider (cloning the result is an `Arc` clone). Tools the provider cannot
    /// accept are left out with an error logged.
    pub fn provider_json(&self, provider: Provider) -> Arc<RawValue> {
        let options = FormatOptions::default();
        self.formats[slot_of(provider, &options)]
            .get_or_init(|| {
                let fragments: Vec<&RawValue> = self
                    .enabled()
                    .filter_map(|entry| entry.format(provider, &options).as_ref().ok())
                    .map(|(_, text)| &**text)
                    .collect();
                assemble(provider, &fragments)
            })
            .clone()
    }

    /// See [`ToolRegistry::tools_for_provider`].
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
        wrap(provider, tools)
    }

    /// See [`ToolRegistry::try_tools_for_provider`].
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
        Ok(wrap(provider, tools))
    }

    /// Runs a tool of this snapshot; a tool disabled in the snapshot gets the "not available"
    /// string even if it was enabled since. See [`ToolRegistry::execute`].
    pub async fn execute(&self, name: &str, args: JsonObject) -> String {
        // One state machine around the tool's future, as in `ToolRegistry::execute`.
        let call = match self.start(name, args, None, None) {
            Ok(call) => call,
            Err(error) => return error.to_model_string(),
        };
        match call.await {
            Ok(text) => text,
            Err(error) => error.to_model_string(),
        }
    }

    /// Runs a tool of this snapshot and returns a structured outcome.
    pub async fn try_execute(&self, name: &str, args: JsonObject) -> Result<String, ExecuteError> {
        let call = self.start(name, args, None, None)?;
        call.await
    }

    /// Like [`try_execute`](Self::try_execute), handing the tool the facts of this call (see
    /// [`ToolRegistry::execute_with`]).
    pub async fn try_execute_with(
        &self,
        name: &str,
        args: JsonObject,
        call: CallContext,
    ) -> Result<String, ExecuteError> {
        let call = self.start(name, args, Some(call), None)?;
        call.await
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
        let call = self.start(name, args, Some(call), default_timeout)?;
        call.await
    }

    /// The call of an enabled tool of this snapshot (the tool runs when it is polled), with
    /// `default_timeout` overriding the registry's when set.
    fn start(
        &self,
        name: &str,
        args: JsonObject,
        context: Option<CallContext>,
        default_timeout: Option<Duration>,
    ) -> Result<GuardedCall<'_>, ExecuteError> {
        match self.slot(name) {
            None => Err(ExecuteError::NotFound {
                name: name.to_owned(),
            }),
            Some((_, false)) => Err(ExecuteError::Disabled {
                name: name.to_owned(),
            }),
            Some((entry, true)) => match default_timeout {
                None => entry.call(args, context, &self.options),
                Some(timeout) => {
                    let options = RegistryOptions {
                        default_timeout: Some(timeout),
                        ..self.options.clone()
                    };
                    entry.call(args, context, &options)
                }
            },
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

    fn slot(&self, name: &str) -> Option<&(Arc<ToolEntry>, bool)> {
        let index = self.index.get_or_init(|| {
            self.tools
                .iter()
                .enumerate()
                .map(|(position, (entry, _))| (entry.name().clone(), position))
                .collect()
        });
        index.get(name).map(|&position| &self.tools[position])
    }
}

const FORMAT_SLOTS: usize = 5;

fn slot_of(provider: Provider, options: &FormatOptions) -> usize {
    match provider {
        Provider::OpenAi if options.strict => 4,
        Provider::OpenAi => 0,
        Provider::Ollama => 1,
        Provider::Gemini => 2,
        Provider::Anthropic => 3,
    }
}

/// The provider's list shape around tools already in its format.
pub(crate) fn wrap(provider: Provider, tools: Vec<Value>) -> Value {
    match provider {
        Provider::Gemini => serde_json::json!({ "functionDeclarations": tools }),
        _ => Value::Array(tools),
    }
}

fn assemble(provider: Provider, fragments: &[&RawValue]) -> Arc<RawValue> {
    #[derive(Serialize)]
    struct Gemini<'a> {
        #[serde(rename = "functionDeclarations")]
        function_declarations: &'a [&'a RawValue],
    }
    // Serializing `RawValue`s writes them verbatim, and `to_raw_value` does not parse its output
    // again, so this is one copy of the bytes with no re-validation.
    let assembled = match provider {
        Provider::Gemini => serde_json::value::to_raw_value(&Gemini {
            function_declarations: fragments,
        }),
        _ => serde_json::value::to_raw_value(fragments),
    };
    assembled
        .map(Arc::from)
        .unwrap_or_else(|_| Arc::from(RawValue::NULL.to_owned()))
}

/// A registered tool with everything computed from it once: schema and metadata when it is
/// registered; validator, `null` handling and provider formats when first needed.
pub(crate) struct ToolEntry {
    tool: Arc<dyn ExecutableTool>,
    schema: ChatTool,
    /// `None` for the default metadata, the common case: most tools set none, and an entry
    /// that is small to allocate makes registering a thousand tools cheap.
    metadata: Option<Box<ToolMetadata>>,
    /// Allocated on first use, so registering a tool stays one small allocation.
    derived: OnceLock<Box<Derived>>,
}

/// [`ToolMetadata::default`], as a value entries can point to.
static DEFAULT_METADATA: ToolMetadata = ToolMetadata {
    title: None,
    icon: None,
    category: None,
    default_enabled: true,
    hints: crate::tool::ToolHints {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    },
    timeout: None,
    sequential: false,
    needs_approval: false,
    max_retries: None,
    lenient_arguments: None,
    output_schema: None,
};

/// What a [`ToolEntry`] works out from its schema when first asked.
#[derive(Default)]
struct Derived {
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    optional_nulls: OnceLock<OptionalNulls>,
    formats: [OnceLock<FormatResult>; FORMAT_SLOTS],
}

type FormatResult = Result<(Arc<Value>, Box<RawValue>), SchemaError>;

impl ToolEntry {
    fn new(tool: Arc<dyn ExecutableTool>) -> Result<Self, RegistryError> {
        let schema = tool.get_schema();
        let name = tool.name();
        validate_name(name)?;
        if &*schema.function.name != name {
            return Err(RegistryError::NameMismatch {
                name: name.to_owned(),
                schema_name: schema.function.name.to_string(),
            });
        }
        if schema.function.description.chars().all(char::is_whitespace) {
            return Err(RegistryError::MissingDescription {
                name: name.to_owned(),
            });
        }
        validate_parameters(&schema.function.parameters).map_err(|reason| {
            RegistryError::InvalidParameters {
                name: name.to_owned(),
                reason,
            }
        })?;
        let metadata = tool.metadata();
        Ok(Self {
            metadata: (metadata != DEFAULT_METADATA).then(|| Box::new(metadata)),
            schema,
            tool,
            derived: OnceLock::new(),
        })
    }

    /// The tool's name, shared with its schema.
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.schema.function.name
    }

    fn metadata(&self) -> &ToolMetadata {
        self.metadata.as_deref().unwrap_or(&DEFAULT_METADATA)
    }

    pub(crate) fn tool(&self) -> &dyn ExecutableTool {
        &*self.tool
    }

    fn derived(&self) -> &Derived {
        self.derived.get_or_init(Box::default)
    }

    fn info(&self, enabled: bool) -> ToolInfo {
        let metadata = self.metadata();
        ToolInfo {
            name: self.name().to_string(),
            description: self.schema.function.description.to_string(),
            title: metadata.title.clone(),
            category: metadata.category.clone(),
            icon: metadata.icon.clone(),
            default_enabled: metadata.default_enabled,
            enabled,
            hints: metadata.hints,
        }
    }

    fn format(&self, provider: Provider, options: &FormatOptions) -> &FormatResult {
        self.derived().formats[slot_of(provider, options)].get_or_init(|| {
            let value = format_tool(provider, &self.schema, options)?;
            let text = serde_json::value::to_raw_value(&value).map_err(|error| SchemaError {
                tool: self.name().to_string(),
                provider,
                reason: error.to_string(),
            })?;
            Ok((Arc::new(value), text))
        })
    }

    /// Prepares the arguments (coerced when lenient, optional `null`s dropped, validated when
    /// asked) and starts the tool; the returned call is awaited by the caller, so a registry
    /// call is one small state machine around the tool's own future.
    fn call(
        &self,
        mut args: JsonObject,
        context: Option<CallContext>,
        options: &RegistryOptions,
    ) -> Result<GuardedCall<'_>, ExecuteError> {
        self.coerce(&mut args, options);
        // Under OpenAI strict mode a model sends `null` for an optional field it leaves out.
        self.derived()
            .optional_nulls
            .get_or_init(|| OptionalNulls::for_schema(&self.schema.function.parameters))
            .drop_from(&mut args);
        let args = if options.validate_arguments {
            self.validate(args)?
        } else {
            args
        };
        let timeout = self.metadata().timeout.or(options.default_timeout);
        Ok(GuardedCall::new(self, args, context, timeout))
    }

    /// Lenient arguments, when the tool or the registry asks for them; a strict tool costs one
    /// branch.
    fn coerce(&self, args: &mut JsonObject, options: &RegistryOptions) -> Vec<Coercion> {
        let lenient = self.metadata().lenient_arguments;
        if !lenient.unwrap_or(options.lenient_arguments) {
            return Vec::new();
        }
        crate::schema::coerce_logged(self.name(), &self.schema.function.parameters, args)
    }

    fn validate(&self, args: JsonObject) -> Result<JsonObject, ExecuteError> {
        let validator = self
            .derived()
            .validator
            .get_or_init(|| {
                jsonschema::validator_for(&self.schema.function.parameters)
                    .map_err(|error| error.to_string())
            })
            .as_ref()
            .map_err(|error| ExecuteError::Failed {
                name: self.name().to_string(),
                error: crate::ToolError::new(format!(
                    "the tool's parameter schema is not a valid JSON Schema: {error}"
                )),
            })?;
        // The arguments move into a `Value` and back out; nothing is cloned.
        let value = Value::Object(args);
        if validator.is_valid(&value) {
            return Ok(match value {
                Value::Object(args) => args,
                _ => JsonObject::new(),
            });
        }
        Err(ExecuteError::InvalidArguments {
            name: self.name().to_string(),
            message: describe_schema_errors(validator, &value),
        })
    }
}

/// The bytes a tool name may have, as a table: one load per byte (this runs for every
/// registered tool).
static NAME_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        byte += 1;
    }
    table
};

/// Checks a tool name against `^[a-zA-Z0-9_-]{1,64}$`.
pub fn validate_name(name: &str) -> Result<(), RegistryError> {
    let allowed = |byte: u8| NAME_BYTES[usize::from(byte)];
    if !name.is_empty() && name.len() <= 64 && name.bytes().all(allowed) {
        return Ok(());
    }
    let reason = if name.is_empty() {
        "the name is empty".to_owned()
    } else if name.len() > 64 {
        format!(
            "the name is {} characters long; at most 64 are allowed",
            name.len()
        )
    } else {
        let c = name
            .chars()
            .find(|c| !(c.is_ascii() && allowed(*c as u8)))
            .unwrap_or_default();
        format!("{c:?} is not allowed; use only ASCII letters, digits, `_` and `-`")
    };
    Err(RegistryError::InvalidName {
        name: name.to_owned(),
        reason,
    })
}

/// Checks that `parameters` is an object schema, in one pass over its keys (this runs for
/// every registered tool).
fn validate_parameters(parameters: &Value) -> Result<(), String> {
    let Some(schema) = parameters.as_object() else {
        return Err(format!(
            "the parameters must be a JSON Schema object, not {}",
            crate::execute::show(parameters)
        ));
    };
    let mut has_type = false;
    for (key, value) in schema {
        match key.as_str() {
            "type" => match value {
                Value::String(kind) if kind == "object" => has_type = true,
                other => {
                    return Err(format!(
                        "the parameters' `type` must be \"object\", not {other}"
                    ));
                }
            },
            "properties" if !value.is_object() => {
                return Err("`properties` must be an object".to_owned());
            }
            "required"
                if !value
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string)) =>
            {
                return Err("`required` must be an array of property names".to_owned());
            }
            _ => {}
        }
    }
    if has_type {
        Ok(())
    } else {
        Err("the parameters have no `type`; it must be \"object\"".to_owned())
    }
}

/// Per-session tool toggles over a shared registry: a map of tool name to on/off that overrides
/// the registry's enabled state for one chat session only. Tools without an override keep the
/// registry's state. Cloning shares the same toggles.
///
/// ```
/// use tool_core::{ToolContext, ToolToggles, create_default_tool_registry};
///
/// let registry = create_default_tool_registry(ToolContext::default());
/// let session = ToolToggles::new();
/// session.set("write_file", false);
/// assert!(!session.snapshot(&registry).is_enabled("write_file"));
/// assert!(registry.is_tool_enabled("write_file"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolToggles {
    overrides: Arc<RwLock<Overrides>>,
}

#[derive(Debug, Default)]
struct Overrides {
    map: HashMap<String, bool>,
    generation: u64,
    /// The last snapshot built: (registry id, registry version, generation, snapshot), so a
    /// turn with nothing changed reuses its provider JSON. The id, not the registry's address:
    /// a registry allocated where a dropped one was would otherwise get its stale snapshot.
    cached: Option<(u64, u64, u64, Arc<RegistrySnapshot>)>,
}

impl Overrides {
    fn changed(&mut self) {
        self.generation += 1;
        self.cached = None;
    }
}

impl ToolToggles {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns a tool on or off for this session.
    pub fn set(&self, name: impl Into<String>, enabled: bool) {
        let mut overrides = self.write();
        overrides.map.insert(name.into(), enabled);
        overrides.changed();
    }

    /// Removes a session override; the registry's state applies again.
    pub fn reset(&self, name: &str) {
        let mut overrides = self.write();
        if overrides.map.remove(name).is_some() {
            overrides.changed();
        }
    }

    /// The override for a tool, if any.
    pub fn get(&self, name: &str) -> Option<bool> {
        self.read().map.get(name).copied()
    }

    /// Every override.
    pub fn overrides(&self) -> HashMap<String, bool> {
        self.read().map.clone()
    }

    /// Replaces every override at once (used to hydrate from stored preferences).
    pub fn replace_all(&self, map: HashMap<String, bool>) {
        let mut overrides = self.write();
        overrides.map = map;
        overrides.changed();
    }

    /// The registry as this session sees it: the overrides applied to the registry's state.
    /// Reused (an `Arc` clone) while neither the registry nor the overrides change.
    pub fn snapshot(&self, registry: &ToolRegistry) -> Arc<RegistrySnapshot> {
        let registry_id = registry.id;
        {
            let overrides = self.read();
            if overrides.map.is_empty() {
                return registry.snapshot();
            }
            if let Some((cached_id, version, generation, snapshot)) = &overrides.cached {
                if *cached_id == registry_id
                    && *version == registry.version()
                    && *generation == overrides.generation
                {
                    return snapshot.clone();
                }
            }
        }
        let mut overrides = self.write();
        let snapshot =
            Arc::new(registry.snapshot_with(|name, _, enabled| {
                overrides.map.get(name).copied().unwrap_or(enabled)
            }));
        let generation = overrides.generation;
        overrides.cached = Some((
            registry_id,
            snapshot.version(),
            generation,
            snapshot.clone(),
        ));
        snapshot
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Overrides> {
        self.overrides
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Overrides> {
        self.overrides
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_byte_table_allows_exactly_letters_digits_underscore_and_dash() {
        for byte in 0..=u8::MAX {
            let expected = byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-';
            assert_eq!(NAME_BYTES[usize::from(byte)], expected, "byte {byte}");
        }
    }

    #[test]
    fn the_shared_default_metadata_is_the_default() {
        assert_eq!(DEFAULT_METADATA, ToolMetadata::default());
    }
}
