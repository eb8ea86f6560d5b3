//! Each user's tool switches: loaded from the preference store on the user's first request,
//! saved there on every change, and announced to that user's open streams only.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use tokio::sync::broadcast;

use super::GatewayError;
use crate::{
    registry::{RegistrySnapshot, ToolRegistry, ToolToggles},
    session::{MemoryPreferenceStore, PreferenceStore},
    store::SqlStore,
};

/// One user's switches.
pub(crate) struct UserSwitches {
    pub(crate) toggles: ToolToggles,
    store: Arc<dyn PreferenceStore>,
    /// One message per change; every open stream of the user holds a receiver.
    changed: broadcast::Sender<()>,
}

impl UserSwitches {
    /// The registry as this user sees it, with `session`'s switches on top.
    pub(crate) fn snapshot(
        &self,
        registry: &ToolRegistry,
        session: &ToolToggles,
    ) -> Arc<RegistrySnapshot> {
        let session = session.overrides();
        if session.is_empty() {
            return self.toggles.snapshot(registry);
        }
        let user = self.toggles.overrides();
        Arc::new(registry.snapshot_with(|name, _, enabled| {
            session
                .get(name)
                .or_else(|| user.get(name))
                .copied()
                .unwrap_or(enabled)
        }))
    }

    /// A receiver told of every change of this user's switches.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<()> {
        self.changed.subscribe()
    }

    /// Switches `tool` for this user, saves it and tells the user's streams.
    pub(crate) async fn set(&self, tool: &str, enabled: bool) -> Result<(), GatewayError> {
        self.store
            .set(tool, enabled)
            .await
            .map_err(|error| GatewayError::Store(error.to_string()))?;
        self.toggles.set(tool, enabled);
        let _ = self.changed.send(());
        Ok(())
    }
}

/// Where switches are kept.
enum Backing {
    Memory,
    Sql(SqlStore),
}

/// Every user's switches.
pub(crate) struct Switches {
    backing: Backing,
    users: Mutex<HashMap<String, Arc<UserSwitches>>>,
}

/// The preference scope of a user's switches.
pub(crate) fn scope_of(user: &str) -> String {
    format!("gateway-user.{user}")
}

impl Switches {
    /// Opens the store at `location` (`memory:` or a database URL).
    pub(crate) async fn open(location: &str) -> Result<Self, GatewayError> {
        let backing = if location == "memory:" {
            Backing::Memory
        } else {
            Backing::Sql(
                SqlStore::open(location)
                    .await
                    .map_err(|error| GatewayError::Store(error.to_string()))?,
            )
        };
        Ok(Self {
            backing,
            users: Mutex::new(HashMap::new()),
        })
    }

    /// The user's switches if they are loaded.
    pub(crate) fn loaded(&self, user: &str) -> Option<Arc<UserSwitches>> {
        lock(&self.users).get(user).cloned()
    }

    /// The user's switches, loaded from the store on first use.
    pub(crate) async fn user(&self, user: &str) -> Result<Arc<UserSwitches>, GatewayError> {
        if let Some(switches) = self.loaded(user) {
            return Ok(switches);
        }
        let store: Arc<dyn PreferenceStore> = match &self.backing {
            Backing::Memory => Arc::new(MemoryPreferenceStore::new()),
            Backing::Sql(sql) => Arc::new(sql.preferences_for(scope_of(user))),
        };
        let stored = store
            .load()
            .await
            .map_err(|error| GatewayError::Store(error.to_string()))?;
        let toggles = ToolToggles::new();
        toggles.replace_all(stored);
        let fresh = Arc::new(UserSwitches {
            toggles,
            store,
            changed: broadcast::channel(16).0,
        });
        // Two first requests at once: the first one in wins, both use it.
        Ok(lock(&self.users)
            .entry(user.to_owned())
            .or_insert(fresh)
            .clone())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The map's entries are inserted whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
