//! Chat sessions over a shared registry: per-session tool toggles and the preference stores that
//! remember them.
//!
//! A [`ChatSession`] sees the shared [`ToolRegistry`] through its own [`ToolToggles`]: turning a
//! tool off in one session changes neither other sessions nor the registry, and the session's
//! next request ([`ChatSession::snapshot`], [`ChatSession::tools_for_provider`]) leaves the tool
//! out. With a [`PreferenceStore`] the choices are saved keyed by tool name and loaded again when
//! the next session opens.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use tool_core::session::{ChatSession, MemoryPreferenceStore};
//! use tool_core::{ToolContext, create_default_tool_registry};
//!
//! let registry = Arc::new(create_default_tool_registry(ToolContext::default()));
//! let store = Arc::new(MemoryPreferenceStore::new());
//!
//! let session = ChatSession::open(registry.clone(), store.clone()).await.unwrap();
//! session.disable_tool("write_file").await.unwrap();
//! assert!(!session.snapshot().is_enabled("write_file"));
//! assert!(registry.is_tool_enabled("write_file"));
//!
//! // A later session of the same user starts with the tool off.
//! let next = ChatSession::open(registry, store).await.unwrap();
//! assert!(!next.is_tool_enabled("write_file"));
//! # });
//! ```

#[cfg(feature = "file-store")]
mod file;
mod store;

use std::sync::Arc;

use serde_json::Value;

#[cfg(feature = "file-store")]
#[cfg_attr(docsrs, doc(cfg(feature = "file-store")))]
pub use file::{FilePreferenceStore, PREFERENCES_FILE_FORMAT};
pub(crate) use store::shown_name;
pub use store::{
    MemoryPreferenceStore, PreferenceError, PreferenceStore, Preferences, check_tool_name,
};

use crate::{
    registry::{RegistrySnapshot, ToolInfo, ToolRegistry, ToolToggles},
    schema::Provider,
    tool::{ChatTool, JsonObject},
};

/// Why a session could not change a tool's state.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No tool of the registry has this name.
    #[error("no tool named `{name}` is registered")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The change applies to this session, but the preference store could not save it.
    #[error(transparent)]
    Store(#[from] PreferenceError),
}

/// One chat's view of a shared registry: its own enabled set, optionally remembered in a
/// [`PreferenceStore`].
///
/// Tools the session has no preference for follow the registry (where a tool starts as its
/// `default_enabled` metadata says); a session preference wins over the registry's state.
/// Preferences for tools that are not registered are kept (the tool may come back) but have no
/// effect.
///
/// Creating a session is constant time and does no I/O beyond the store's one load. Cloning a
/// session gives another handle on the same session.
#[derive(Clone)]
pub struct ChatSession {
    registry: Arc<ToolRegistry>,
    toggles: ToolToggles,
    store: Option<Arc<dyn PreferenceStore>>,
    // Serializes "toggle, then save" so the store ends up with the session's last choice.
    writes: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for ChatSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatSession")
            .field("registry", &self.registry)
            .field("toggles", &self.toggles)
            .field("persistent", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

impl ChatSession {
    /// A session with no stored preferences: every tool follows the registry until toggled, and
    /// toggles are forgotten with the session.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Self {
            registry,
            toggles: ToolToggles::new(),
            store: None,
            writes: Arc::default(),
        }
    }

    /// A session whose toggles are loaded from `store` now (before any request) and saved to it
    /// on every change.
    pub async fn open(
        registry: Arc<ToolRegistry>,
        store: Arc<dyn PreferenceStore>,
    ) -> Result<Self, PreferenceError> {
        let session = Self {
            store: Some(store),
            ..Self::new(registry)
        };
        session.reload().await?;
        Ok(session)
    }

    /// Loads the stored preferences again, replacing this session's toggles. Without a store,
    /// clears them.
    pub async fn reload(&self) -> Result<(), PreferenceError> {
        let _writing = self.writes.lock().await;
        let preferences = match &self.store {
            Some(store) => store.load().await?,
            None => Preferences::new(),
        };
        self.toggles.replace_all(preferences);
        Ok(())
    }

    /// The shared registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The session's toggles, to hand to an agent so its per-turn snapshot uses them (they are
    /// shared, not copied).
    pub fn toggles(&self) -> &ToolToggles {
        &self.toggles
    }

    /// The preference store, when the session has one.
    pub fn store(&self) -> Option<&Arc<dyn PreferenceStore>> {
        self.store.as_ref()
    }

    /// Whether the tool is registered and enabled in this session.
    pub fn is_tool_enabled(&self, name: &str) -> bool {
        if !self.registry.has_tool(name) {
            return false;
        }
        self.toggles
            .get(name)
            .unwrap_or_else(|| self.registry.is_tool_enabled(name))
    }

    /// Turns a tool on or off for this session and saves the preference.
    ///
    /// An unknown tool is an error and changes nothing. When the store fails, the change still
    /// applies to this session and the store's error is returned.
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), SessionError> {
        if !self.registry.has_tool(name) {
            return Err(SessionError::UnknownTool {
                name: name.to_owned(),
            });
        }
        let _writing = self.writes.lock().await;
        self.toggles.set(name, enabled);
        if let Some(store) = &self.store {
            store.set(name, enabled).await?;
        }
        Ok(())
    }

    /// Turns a tool on for this session; see [`set_enabled`](Self::set_enabled).
    pub async fn enable_tool(&self, name: &str) -> Result<(), SessionError> {
        self.set_enabled(name, true).await
    }

    /// Turns a tool off for this session; see [`set_enabled`](Self::set_enabled).
    pub async fn disable_tool(&self, name: &str) -> Result<(), SessionError> {
        self.set_enabled(name, false).await
    }

    /// Forgets this session's choice for a tool (in the session and in the store): the tool
    /// follows the registry again. Works for tools that are no longer registered too.
    pub async fn reset_tool(&self, name: &str) -> Result<(), SessionError> {
        let _writing = self.writes.lock().await;
        self.toggles.reset(name);
        if let Some(store) = &self.store {
            store.remove(name).await?;
        }
        Ok(())
    }

    /// The registry as this session sees it now; take one per request so the tools sent are the
    /// tools run.
    pub fn snapshot(&self) -> Arc<RegistrySnapshot> {
        self.toggles.snapshot(&self.registry)
    }

    /// The definitions of the tools enabled in this session, in registration order.
    pub fn definitions(&self) -> Vec<ChatTool> {
        self.snapshot().definitions()
    }

    /// The names of the tools enabled in this session, in registration order.
    pub fn enabled_tool_names(&self) -> Vec<String> {
        self.snapshot()
            .enabled_names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// The tools enabled in this session in a provider's format; see
    /// [`ToolRegistry::tools_for_provider`].
    pub fn tools_for_provider(&self, provider: Provider, allowed: Option<&[&str]>) -> Value {
        self.snapshot().tools_for_provider(
            provider,
            allowed,
            &crate::schema::FormatOptions::default(),
        )
    }

    /// Every registered tool with its name, description, title, category, icon,
    /// `default_enabled` and its enabled state in this session: what a settings popover or a
    /// `/tools` command shows.
    pub fn list_tools(&self) -> Vec<ToolInfo> {
        self.snapshot().list_tools()
    }

    /// Runs a tool as this session may: a tool turned off in this session gets the "not
    /// available" string. See [`ToolRegistry::execute`].
    pub async fn execute(&self, name: &str, args: JsonObject) -> String {
        self.snapshot().execute(name, args).await
    }
}
