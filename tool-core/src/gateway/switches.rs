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
    /// The user's name and, with PostgreSQL, the pool a change is announced on to the other
    /// gateway processes.
    user: String,
    #[cfg(feature = "postgres")]
    announce: Option<sqlx::PgPool>,
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
        #[cfg(feature = "postgres")]
        if let Some(pool) = &self.announce {
            // Other processes reload the user's switches from the store; a lost announcement
            // leaves their streams uninformed until the next change, not their lists wrong.
            let announced = sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(&self.user)
                .execute(pool)
                .await;
            if let Err(error) = announced {
                tracing::warn!(user = %self.user, %error, "cannot announce a switch change to the other gateway processes");
            }
        }
        #[cfg(not(feature = "postgres"))]
        let _ = &self.user;
        Ok(())
    }

    /// Applies a change another process made (already stored): reloads the user's switches
    /// and tells the user's streams when they differ.
    #[cfg(feature = "postgres")]
    pub(crate) async fn reload(&self) -> Result<(), GatewayError> {
        let stored = self
            .store
            .load()
            .await
            .map_err(|error| GatewayError::Store(error.to_string()))?;
        if stored != self.toggles.overrides() {
            self.toggles.replace_all(stored);
            let _ = self.changed.send(());
        }
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

/// The PostgreSQL channel switch changes are announced on; the payload is the user's name.
#[cfg(feature = "postgres")]
const CHANNEL: &str = "tool_core_gateway_switches";

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

    /// With PostgreSQL: follows the other gateway processes' announcements until `stop`,
    /// reloading the switches of the users they name (reconnecting when the connection
    /// drops). Without it, returns at once.
    #[cfg(feature = "postgres")]
    pub(crate) async fn follow(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let Some(pool) = (match &self.backing {
            Backing::Sql(sql) => sql.postgres_pool().cloned(),
            Backing::Memory => None,
        }) else {
            return;
        };
        loop {
            let listener = async {
                let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
                listener.listen(CHANNEL).await?;
                Ok::<_, sqlx::Error>(listener)
            };
            let mut listener = tokio::select! {
                () = stop.cancelled() => return,
                listener = listener => match listener {
                    Ok(listener) => listener,
                    Err(error) => {
                        tracing::warn!(%error, "cannot listen for other gateway processes' switch changes; retrying");
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            loop {
                let notification = tokio::select! {
                    () = stop.cancelled() => return,
                    notification = listener.recv() => notification,
                };
                match notification {
                    Ok(notification) => {
                        if let Some(user) = self.loaded(notification.payload()) {
                            if let Err(error) = user.reload().await {
                                tracing::warn!(%error, "cannot reload a user's switches");
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "lost the switch announcements; reconnecting");
                        break;
                    }
                }
            }
        }
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
            user: user.to_owned(),
            #[cfg(feature = "postgres")]
            announce: match &self.backing {
                Backing::Sql(sql) => sql.postgres_pool().cloned(),
                Backing::Memory => None,
            },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolContext, create_default_tool_registry};

    #[tokio::test]
    async fn a_sessions_switches_lie_on_top_of_its_users() {
        let registry = create_default_tool_registry(ToolContext::default());
        let switches = Switches::open("memory:").await.unwrap();
        let alice = switches.user("alice").await.unwrap();
        let mut changes = alice.subscribe();
        alice.set("write_file", false).await.unwrap();
        assert!(changes.try_recv().is_ok());
        let session = ToolToggles::new();
        assert!(!alice.snapshot(&registry, &session).is_enabled("write_file"));
        session.set("write_file", true);
        session.set("read_file", false);
        let both = alice.snapshot(&registry, &session);
        assert!(both.is_enabled("write_file"));
        assert!(!both.is_enabled("read_file"));
        // Another user, and the registry itself, are untouched.
        let bob = switches.user("bob").await.unwrap();
        assert!(
            bob.snapshot(&registry, &ToolToggles::new())
                .is_enabled("write_file")
        );
        assert!(registry.is_tool_enabled("write_file"));
    }
}
