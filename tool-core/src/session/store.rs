//! [`PreferenceStore`], its error, and the in-memory store.

use std::{
    collections::HashMap,
    io,
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
};

use crate::registry::RegistryError;

/// Stored tool preferences: tool name to enabled.
pub type Preferences = HashMap<String, bool>;

/// Where a user's tool toggles are remembered, keyed by tool name.
///
/// The framework ships a JSON file store ([`FilePreferenceStore`](super::FilePreferenceStore)),
/// an in-memory one ([`MemoryPreferenceStore`]) and SQL ones (`SqlPreferenceStore`, features
/// `sqlite` and `postgres`); implement the trait to keep preferences elsewhere.
/// Implementations change one key at a time and keep every other key, including keys of tools
/// that are not registered now.
///
/// Every store of this crate checks a tool name with [`check_tool_name`] before it touches its
/// storage, so all of them refuse the same names with the same error; a store of your own
/// should call it first in `set` and `remove` too.
///
/// ```
/// use tool_core::async_trait;
/// use tool_core::session::{PreferenceError, PreferenceStore, Preferences, check_tool_name};
///
/// /// Preferences in a table `tool_preferences(user, tool, enabled)`.
/// struct DatabaseStore {
///     user: String,
/// }
///
/// #[async_trait]
/// impl PreferenceStore for DatabaseStore {
///     async fn load(&self) -> Result<Preferences, PreferenceError> {
///         // SELECT tool, enabled FROM tool_preferences WHERE user = $1
///         Ok(Preferences::new())
///     }
///
///     async fn set(&self, tool: &str, enabled: bool) -> Result<(), PreferenceError> {
///         check_tool_name(tool)?;
///         // INSERT ... ON CONFLICT (user, tool) DO UPDATE SET enabled = $3
///         Ok(())
///     }
///
///     async fn remove(&self, tool: &str) -> Result<(), PreferenceError> {
///         check_tool_name(tool)?;
///         // DELETE FROM tool_preferences WHERE user = $1 AND tool = $2
///         Ok(())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait PreferenceStore: Send + Sync {
    /// Every stored preference, including those of tools that are not registered now.
    async fn load(&self) -> Result<Preferences, PreferenceError>;

    /// Stores one tool's preference, leaving the others as they are.
    async fn set(&self, tool: &str, enabled: bool) -> Result<(), PreferenceError>;

    /// Forgets one tool's preference (the tool follows its default again).
    async fn remove(&self, tool: &str) -> Result<(), PreferenceError>;
}

/// Why a preference store could not load or save.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreferenceError {
    /// A file operation failed.
    #[error("cannot {action} tool preferences at {}: {error}", path.display())]
    Io {
        /// What was being done: `read`, `write`, `lock`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: io::Error,
    },
    /// An application's store failed.
    #[error("tool preference store failed: {0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
    /// A tool name (see [`check_tool_name`]) or a scope that no store keeps; nothing was read
    /// or written.
    #[error("invalid {what} `{}`: {reason}", shown_name(name))]
    InvalidName {
        /// `tool name` or `preference scope`.
        what: &'static str,
        /// The name given.
        name: String,
        /// The rule it breaks.
        reason: String,
    },
}

/// Checks a tool name before a preference store keeps it: the registry's rule for tool names,
/// `^[a-zA-Z0-9_-]{1,64}$`. Every tool that can be registered can have a preference, and no
/// store sees a name it would handle differently from the others (an empty name, a NUL byte
/// that PostgreSQL refuses, control characters, a name of any length).
///
/// ```
/// use tool_core::session::check_tool_name;
///
/// assert!(check_tool_name("write_file").is_ok());
/// assert_eq!(
///     check_tool_name("write\0file").unwrap_err().to_string(),
///     "invalid tool name `write\\0file`: '\\0' is not allowed; use only ASCII letters, \
///      digits, `_` and `-`"
/// );
/// ```
pub fn check_tool_name(name: &str) -> Result<(), PreferenceError> {
    match crate::registry::validate_name(name) {
        Ok(()) => Ok(()),
        Err(RegistryError::InvalidName { reason, .. }) => Err(PreferenceError::InvalidName {
            what: "tool name",
            name: name.to_owned(),
            reason,
        }),
        Err(other) => Err(PreferenceError::InvalidName {
            what: "tool name",
            name: name.to_owned(),
            reason: other.to_string(),
        }),
    }
}

/// A name as error messages show it: control characters escaped, and cut after 200 characters.
pub(crate) fn shown_name(name: &str) -> String {
    const SHOWN: usize = 200;
    let mut shown: String = name
        .chars()
        .take(SHOWN)
        .flat_map(char::escape_debug)
        .collect();
    if name.chars().nth(SHOWN).is_some() {
        shown.push('…');
    }
    shown
}

impl PreferenceError {
    /// Wraps an application store's error.
    pub fn backend(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Backend(error.into())
    }
}

/// Preferences kept in memory: for tests, and for applications that keep one process alive.
/// Cloning shares the same preferences.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use tool_core::session::{MemoryPreferenceStore, PreferenceStore};
///
/// let store = MemoryPreferenceStore::new();
/// store.set("write_file", false).await.unwrap();
/// assert_eq!(store.load().await.unwrap().get("write_file"), Some(&false));
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemoryPreferenceStore {
    preferences: Arc<Mutex<Preferences>>,
}

impl MemoryPreferenceStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding these preferences.
    pub fn with_preferences(preferences: Preferences) -> Self {
        Self {
            preferences: Arc::new(Mutex::new(preferences)),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Preferences) -> T) -> T {
        // Every update is one map operation, so a poisoned lock still holds a whole map.
        f(&mut self
            .preferences
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait::async_trait]
impl PreferenceStore for MemoryPreferenceStore {
    async fn load(&self) -> Result<Preferences, PreferenceError> {
        Ok(self.with(|preferences| preferences.clone()))
    }

    async fn set(&self, tool: &str, enabled: bool) -> Result<(), PreferenceError> {
        check_tool_name(tool)?;
        self.with(|preferences| preferences.insert(tool.to_owned(), enabled));
        Ok(())
    }

    async fn remove(&self, tool: &str) -> Result<(), PreferenceError> {
        check_tool_name(tool)?;
        self.with(|preferences| preferences.remove(tool));
        Ok(())
    }
}

#[async_trait::async_trait]
impl<T: PreferenceStore + ?Sized> PreferenceStore for Arc<T> {
    async fn load(&self) -> Result<Preferences, PreferenceError> {
        (**self).load().await
    }

    async fn set(&self, tool: &str, enabled: bool) -> Result<(), PreferenceError> {
        (**self).set(tool, enabled).await
    }

    async fn remove(&self, tool: &str) -> Result<(), PreferenceError> {
        (**self).remove(tool).await
    }
}
