//! Each user's tool switches: loaded from the preference store on the user's first request,
//! saved there on every change, and announced to that user's open streams only. A session's
//! own switches (on top of its user's) are kept there too, under the user and the session's
//! id, so that another gateway process restoring the session has them. Both are one
//! [`ScopedSwitches`], told apart by their [`Owner`].
//!
//! [`Switches`] also knows the HTTP sessions this process holds, and announces a session's end
//! to the other processes, which end their copies of it.
//!
//! A user's switches stay loaded while anything holds them (a connection whose user they are,
//! a request) or listens to them (an open stream or session). Once `max_idle_users` users are
//! loaded, the others are forgotten (amortized over new users, [`Sweeps`]) and loaded from the
//! store again on their user's next request: the store holds the same switches. With the
//! switches kept in memory (`memory:`) there is no other copy, so a user who switched a tool
//! stays loaded.

use std::{
    collections::HashMap,
    marker::PhantomData,
    sync::{Arc, Mutex, PoisonError, Weak},
};

use tokio::sync::broadcast;

#[cfg(feature = "postgres")]
use super::Shared;
use super::{
    GatewayError,
    scope::{SESSION_SCOPE, Sweeps, now_ms},
};
use crate::{
    registry::{RegistrySnapshot, ToolRegistry, ToolToggles},
    search::ToolIndex,
    session::{MemoryPreferenceStore, PreferenceStore},
    store::SqlStore,
    tool::ChatTool,
};

/// The pool changes are announced on to the other gateway processes (PostgreSQL only).
#[cfg(feature = "postgres")]
type Announce = Option<sqlx::PgPool>;
#[cfg(not(feature = "postgres"))]
type Announce = ();

/// Tells the other gateway processes (through PostgreSQL `NOTIFY` on `channel`) that
/// `payload` changed in the store. A lost announcement is made good when they next read every
/// switch again ([`Switches::reload_all`], on each maintenance tick).
#[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async))]
async fn announce(pool: &Announce, channel: &str, payload: &str) {
    #[cfg(feature = "postgres")]
    if let Some(pool) = pool {
        let announced = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(channel)
            .bind(payload)
            .execute(pool)
            .await;
        if let Err(error) = announced {
            tracing::warn!(%error, channel, "cannot announce a change to the other gateway processes");
        }
    }
    #[cfg(not(feature = "postgres"))]
    let _ = (pool, channel, payload);
}

/// Whose switches a [`ScopedSwitches`] holds, and where their changes are announced.
pub(crate) trait Owner {
    /// The PostgreSQL channel a change is announced on.
    const CHANNEL: &'static str;
}

/// A user's switches; a change is announced with the user's name.
pub(crate) enum OfUser {}

impl Owner for OfUser {
    const CHANNEL: &'static str = "tool_core_gateway_switches";
}

/// An HTTP session's own switches (on top of its user's); a change is announced with the
/// session's id.
pub(crate) enum OfSession {}

impl Owner for OfSession {
    const CHANNEL: &'static str = "tool_core_gateway_session_switches";
}

/// The switches of one user or one session (`O`): kept in a preference store, told to the
/// open streams on every change, and announced to the other gateway processes.
pub(crate) struct ScopedSwitches<O> {
    toggles: ToolToggles,
    store: Arc<dyn PreferenceStore>,
    /// One message per change; every open stream of the user or session holds a receiver.
    changed: broadcast::Sender<()>,
    /// The payload of an announced change: the user's name or the session's id.
    name: String,
    announce: Announce,
    /// The tool search index built last ([`UserSwitches::search_index`]).
    search: Mutex<Option<Arc<SearchIndex>>>,
    owner: PhantomData<O>,
}

/// A tool search index of one view of the registry.
pub(crate) struct SearchIndex {
    /// The tools of the view it ranks.
    pub(crate) definitions: Vec<ChatTool>,
    pub(crate) index: ToolIndex,
    /// The view it was built for: the registry version and the tools enabled in it.
    version: u64,
    enabled: Vec<String>,
}

/// One user's switches.
pub(crate) type UserSwitches = ScopedSwitches<OfUser>;

/// One session's own switches.
pub(crate) type SessionSwitches = ScopedSwitches<OfSession>;

impl<O: Owner> ScopedSwitches<O> {
    /// The switches stored in `store`, loaded into `toggles`; `changed` is told of every
    /// change.
    async fn load(
        store: Arc<dyn PreferenceStore>,
        name: &str,
        toggles: ToolToggles,
        changed: broadcast::Sender<()>,
        announce: Announce,
    ) -> Result<Self, GatewayError> {
        toggles.replace_all(store.load().await.map_err(store_error)?);
        Ok(Self {
            toggles,
            store,
            changed,
            name: name.to_owned(),
            announce,
            search: Mutex::new(None),
            owner: PhantomData,
        })
    }

    /// A receiver told of every change of these switches.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<()> {
        self.changed.subscribe()
    }

    /// Switches `tool`, saves it and tells the streams (in every process, through the
    /// announcement).
    pub(crate) async fn set(&self, tool: &str, enabled: bool) -> Result<(), GatewayError> {
        self.store.set(tool, enabled).await.map_err(store_error)?;
        self.toggles.set(tool, enabled);
        let _ = self.changed.send(());
        announce(&self.announce, O::CHANNEL, &self.name).await;
        Ok(())
    }

    /// Applies a change another process made (already stored): reads the switches again and
    /// tells the streams when they differ. Also how a lost announcement is made good
    /// ([`Switches::reload_all`]).
    pub(crate) async fn reload(&self) -> Result<(), GatewayError> {
        let stored = self.store.load().await.map_err(store_error)?;
        if stored != self.toggles.overrides() {
            self.toggles.replace_all(stored);
            let _ = self.changed.send(());
        }
        Ok(())
    }

    /// Whether these switches, held by `held` (the map's handle to them), may be forgotten
    /// now: nobody else holds them, no stream listens to them, and the store (`stored`) has
    /// them to load again.
    fn is_idle(held: &Arc<Self>, stored: bool) -> bool {
        Arc::strong_count(held) == 1
            && held.changed.receiver_count() == 0
            && (stored || held.toggles.overrides().is_empty())
    }
}

impl UserSwitches {
    /// The registry as this user sees it, outside any session.
    pub(crate) fn own_snapshot(&self, registry: &ToolRegistry) -> Arc<RegistrySnapshot> {
        self.toggles.snapshot(registry)
    }

    /// The registry as this user sees it, with `session`'s switches on top.
    pub(crate) fn snapshot(
        &self,
        registry: &ToolRegistry,
        session: &ToolToggles,
    ) -> Arc<RegistrySnapshot> {
        self.view(registry, &session.overrides())
    }

    /// The registry as this user sees it, with the session's switches `session` on top: each
    /// tool as the session switched it, else as the user did, else as the registry has it,
    /// all read now.
    fn view(
        &self,
        registry: &ToolRegistry,
        session: &HashMap<String, bool>,
    ) -> Arc<RegistrySnapshot> {
        if session.is_empty() {
            return self.own_snapshot(registry);
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

    /// The search index of the registry as this user sees it with `session`'s switches on top,
    /// `except` left out: the one built last when it was built for the same view (the same
    /// registry version and the same tools enabled), else one built now. The index and what
    /// it is kept for both come from one view, so they cannot disagree.
    pub(crate) fn search_index(
        &self,
        registry: &ToolRegistry,
        session: &ToolToggles,
        except: &str,
    ) -> Arc<SearchIndex> {
        let view = self.view(registry, &session.overrides());
        let version = view.version();
        let enabled = view.enabled_names();
        if let Some(built) = lock(&self.search).as_ref() {
            if built.version == version && built.enabled == enabled {
                return built.clone();
            }
        }
        let enabled = enabled.into_iter().map(str::to_owned).collect();
        let definitions: Vec<ChatTool> = view
            .definitions()
            .into_iter()
            .filter(|tool| tool.name() != except)
            .collect();
        let index = ToolIndex::new(definitions.iter().map(|tool| (tool, None)));
        tracing::debug!(
            user = %self.name,
            tools = definitions.len(),
            "built the tool search index"
        );
        let built = Arc::new(SearchIndex {
            definitions,
            index,
            version,
            enabled,
        });
        *lock(&self.search) = Some(built.clone());
        built
    }
}

fn store_error(error: impl std::fmt::Display) -> GatewayError {
    GatewayError::Store(error.to_string())
}

/// Where switches are kept.
enum Backing {
    Memory,
    Sql(SqlStore),
}

/// Every user's switches, and the sessions this process holds with their switches.
pub(crate) struct Switches {
    backing: Backing,
    users: Mutex<LoadedUsers>,
    sessions: Mutex<HashMap<String, Weak<SessionSwitches>>>,
}

/// The users whose switches are loaded, and when they are next swept of the idle ones.
struct LoadedUsers {
    switches: HashMap<String, Arc<UserSwitches>>,
    sweeps: Sweeps,
    /// How many times users were forgotten.
    forgotten: u64,
}

/// The channel a change of the pins is announced on (an accepted definition, a forgotten
/// change); the payload names the tool or the server.
pub(crate) const PINS_CHANNEL: &str = "tool_core_gateway_pins";
/// The channel an ended session is announced on; the payload is the session's id.
const ENDED_CHANNEL: &str = "tool_core_gateway_sessions_ended";

/// What [`Switches::attach_session`] found.
pub(crate) enum Attached {
    /// Another user owns the session.
    Foreign,
    /// The session's switches, loaded from the store and kept in step with the other
    /// processes.
    Session(Arc<SessionSwitches>),
}

/// The preference scope of a user's switches.
pub(crate) fn scope_of(user: &str) -> String {
    format!("gateway-user.{user}")
}

impl Switches {
    /// Opens the store at `location` (`memory:` or a database URL); idle users are forgotten
    /// once `max_idle_users` are loaded.
    pub(crate) async fn open(location: &str, max_idle_users: usize) -> Result<Self, GatewayError> {
        let backing = if location == "memory:" {
            Backing::Memory
        } else {
            Backing::Sql(SqlStore::open(location).await.map_err(store_error)?)
        };
        Ok(Self {
            backing,
            users: Mutex::new(LoadedUsers {
                switches: HashMap::new(),
                sweeps: Sweeps::new(max_idle_users),
                forgotten: 0,
            }),
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// The SQL store, unless switches are kept in memory.
    pub(crate) fn sql(&self) -> Option<&SqlStore> {
        match &self.backing {
            Backing::Sql(sql) => Some(sql),
            Backing::Memory => None,
        }
    }

    #[cfg(feature = "postgres")]
    fn announcer(&self) -> Announce {
        self.sql().and_then(|sql| sql.postgres_pool().cloned())
    }

    #[cfg(not(feature = "postgres"))]
    #[allow(clippy::unused_self)] // With PostgreSQL it reads the store.
    fn announcer(&self) -> Announce {}

    /// Tells the other processes that the pins changed: an operator accepted the definition of
    /// `tool`, or the changes of a server's tools were forgotten (`tool` names the server).
    pub(crate) async fn announce_pin(&self, tool: &str) {
        announce(&self.announcer(), PINS_CHANNEL, tool).await;
    }

    /// Binds the HTTP session `id` to `user` (in the store, unless another user owns it
    /// there), loads the session's stored switches into `toggles` (the connection's own) and
    /// keeps them in step with the other processes from now on; `changed` is told of every
    /// change. The session is this process's from now on, while its switches last.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unit_arg))] // `Announce` is `()`.
    pub(crate) async fn attach_session(
        &self,
        user: &str,
        id: &str,
        toggles: &ToolToggles,
        changed: &broadcast::Sender<()>,
    ) -> Result<Attached, GatewayError> {
        let store: Arc<dyn PreferenceStore> = match &self.backing {
            Backing::Memory => Arc::new(MemoryPreferenceStore::new()),
            Backing::Sql(sql) => {
                if !sql
                    .gateway_session_claim(id, user, now_ms())
                    .await
                    .map_err(store_error)?
                {
                    return Ok(Attached::Foreign);
                }
                Arc::new(sql.preferences_for(format!("{SESSION_SCOPE}{user}.{id}")))
            }
        };
        let session = Arc::new(
            SessionSwitches::load(
                store,
                id,
                toggles.clone(),
                changed.clone(),
                self.announcer(),
            )
            .await?,
        );
        let mut sessions = lock(&self.sessions);
        sessions.retain(|_, session| session.strong_count() > 0);
        sessions.insert(id.to_owned(), Arc::downgrade(&session));
        Ok(Attached::Session(session))
    }

    /// The ids of the sessions this process holds (forgetting the ended ones).
    pub(crate) fn live_sessions(&self) -> Vec<String> {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|_, session| session.strong_count() > 0);
        sessions.keys().cloned().collect()
    }

    /// Ends HTTP session `id` in the store, with its switches, and tells the other processes,
    /// which end their copies of it.
    pub(crate) async fn end_session(&self, id: &str) -> Result<(), GatewayError> {
        if let Some(sql) = self.sql() {
            sql.gateway_session_delete(id, SESSION_SCOPE)
                .await
                .map_err(store_error)?;
        }
        announce(&self.announcer(), ENDED_CHANNEL, id).await;
        Ok(())
    }

    /// Reads again, from the store, the switches of every user and session this process holds,
    /// telling their streams of any difference: announcements may have been missed (the
    /// connection they come on dropped, or the store is a file shared without them).
    pub(crate) async fn reload_all(&self) {
        if self.sql().is_none() {
            return;
        }
        let users: Vec<Arc<UserSwitches>> = lock(&self.users).switches.values().cloned().collect();
        for user in users {
            if let Err(error) = user.reload().await {
                tracing::warn!(%error, "cannot read a user's switches again");
            }
        }
        let sessions: Vec<Arc<SessionSwitches>> = lock(&self.sessions)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for session in sessions {
            if let Err(error) = session.reload().await {
                tracing::warn!(%error, "cannot read a session's switches again");
            }
        }
    }

    /// With PostgreSQL: follows the other gateway processes' announcements until `stop`,
    /// reloading the switches of the users and sessions they name and the pins, and ending
    /// the sessions they ended. Whenever it (re)connects, what may have been announced
    /// meanwhile is read again: every switch this process holds and the pins. Without
    /// PostgreSQL, returns at once.
    #[cfg(feature = "postgres")]
    pub(crate) async fn follow(shared: Arc<Shared>, stop: tokio_util::sync::CancellationToken) {
        let Some(pool) = shared.switches.announcer() else {
            return;
        };
        loop {
            let listener = async {
                let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
                listener
                    .listen_all([
                        OfUser::CHANNEL,
                        OfSession::CHANNEL,
                        PINS_CHANNEL,
                        ENDED_CHANNEL,
                    ])
                    .await?;
                Ok::<_, sqlx::Error>(listener)
            };
            let mut listener = tokio::select! {
                () = stop.cancelled() => return,
                listener = listener => match listener {
                    Ok(listener) => listener,
                    Err(error) => {
                        tracing::warn!(%error, "cannot listen for other gateway processes' changes; retrying");
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            // Anything announced while not listening is read again now.
            shared.switches.reload_all().await;
            shared.catalog.reload_pins().await;
            loop {
                // Not `recv()`, which reconnects without a word and so loses what was
                // announced while the connection was down.
                let notification = tokio::select! {
                    () = stop.cancelled() => return,
                    notification = listener.try_recv() => notification,
                };
                let notification = match notification {
                    Ok(Some(notification)) => notification,
                    Ok(None) => {
                        // The connection dropped; sqlx listens again on a new one.
                        tracing::warn!(
                            "lost the other gateway processes' announcements for a moment; \
                             reading every switch and pin again"
                        );
                        shared.switches.reload_all().await;
                        shared.catalog.reload_pins().await;
                        continue;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "lost the other gateway processes' announcements; reconnecting");
                        break;
                    }
                };
                let payload = notification.payload();
                let reloaded = match notification.channel() {
                    OfUser::CHANNEL => match shared.switches.loaded(payload) {
                        Some(user) => user.reload().await,
                        None => Ok(()),
                    },
                    OfSession::CHANNEL => {
                        let session = lock(&shared.switches.sessions)
                            .get(payload)
                            .and_then(Weak::upgrade);
                        match session {
                            Some(session) => session.reload().await,
                            None => Ok(()),
                        }
                    }
                    ENDED_CHANNEL => {
                        shared.http_sessions.close(payload).await;
                        Ok(())
                    }
                    _ => {
                        shared.catalog.reload_pins().await;
                        Ok(())
                    }
                };
                if let Err(error) = reloaded {
                    tracing::warn!(%error, "cannot reload switches another process changed");
                }
            }
        }
    }

    /// The user's switches if they are loaded.
    pub(crate) fn loaded(&self, user: &str) -> Option<Arc<UserSwitches>> {
        lock(&self.users).switches.get(user).cloned()
    }

    /// How many users' switches are loaded.
    pub(crate) fn loaded_users(&self) -> usize {
        lock(&self.users).switches.len()
    }

    /// The user's switches, loaded from the store on first use.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unit_arg))] // `Announce` is `()`.
    pub(crate) async fn user(&self, user: &str) -> Result<Arc<UserSwitches>, GatewayError> {
        let mut read_at = {
            let users = lock(&self.users);
            if let Some(switches) = users.switches.get(user) {
                return Ok(switches.clone());
            }
            users.forgotten
        };
        let store: Arc<dyn PreferenceStore> = match &self.backing {
            Backing::Memory => Arc::new(MemoryPreferenceStore::new()),
            Backing::Sql(sql) => Arc::new(sql.preferences_for(scope_of(user))),
        };
        let fresh = Arc::new(
            UserSwitches::load(
                store,
                user,
                ToolToggles::new(),
                broadcast::channel(16).0,
                self.announcer(),
            )
            .await?,
        );
        let stored = self.sql().is_some();
        // The user may have been loaded, switched and forgotten while the store was read: then
        // it is read again, as a load begun now would (a few times at most; a sweep is rare).
        for _ in 0..3 {
            let now = lock(&self.users).forgotten;
            if now == read_at {
                break;
            }
            read_at = now;
            fresh.reload().await?;
        }
        let mut users = lock(&self.users);
        let LoadedUsers {
            switches,
            sweeps,
            forgotten,
        } = &mut *users;
        if let Some(loaded) = switches.get(user) {
            // Two first requests at once: the first one in wins, both use it.
            return Ok(loaded.clone());
        }
        if sweeps.before_insert(switches, |_, loaded| !UserSwitches::is_idle(loaded, stored)) > 0 {
            *forgotten += 1;
        }
        switches.insert(user.to_owned(), fresh.clone());
        Ok(fresh)
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
        let switches = Switches::open("memory:", 4096).await.unwrap();
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
