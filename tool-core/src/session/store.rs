//! [`PreferenceStore`], its error, and the in-memory store.

use std::{
    collections::HashMap,
    io,
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
};

/// Stored tool preferences: tool name to enabled.
pub type Preferences = HashMap<String, bool>;

/// Where a user's tool toggles are remembered, keyed by tool name.
///
/// The framework ships a JSON file store ([`FilePreferenceStore`](super::FilePreferenceStore))
/// and an in-memory one ([`MemoryPreferenceStore`]); implement the trait to keep preferences in
/// a database. Implementations change one key at a time and keep every other key, including
/// keys of tools that are not registered now.
///
/// ```
/// use tool_core::async_trait;
/// use tool_core::session::{PreferenceError, PreferenceStore, Preferences};
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
///         // INSERT ... ON CONFLICT (user, tool) DO UPDATE SET enabled = $3
///         Ok(())
///     }
///
///     async fn remove(&self, tool: &str) -> Result<(), PreferenceError> {
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
        self.with(|preferences| preferences.insert(tool.to_owned(), enabled));
        Ok(())
    }

    async fn remove(&self, tool: &str) -> Result<(), PreferenceError> {
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
