//! The gateway's HTTP sessions in the preference store, so that every gateway process sharing
//! it can serve any session.
//!
//! rmcp stores a session's `initialize` parameters after the handshake ([`StoredSessions`]);
//! a process that gets a request for a session it does not hold restores the session from
//! them. The gateway records the session's user beside them (a session belongs to the user who
//! began it, in every process) and keeps the session's own switches under that user and the
//! session's id. A session ends when its client sends HTTP `DELETE`, or when no process has held
//! it for `session_idle_timeout_secs`: each process renews the sessions it holds, and ends the
//! ones nobody renewed, with their switches ([`maintain`]). A `DELETE` through one process is
//! announced (PostgreSQL `NOTIFY`) to the others, which end their copies of the session
//! ([`InMemory::close`]): its streams end there and a later request in it is answered `404`,
//! as in every ended session. A process that missed the announcement (or shares an SQLite
//! file, which has none) ends its copy when it next renews its sessions.
//!
//! A session is its user's alone: a request in another user's session is answered `404`, as
//! in an unknown session, by the HTTP gate, whichever process gets it, before any of it
//! reaches rmcp ([`SessionOwners`](super::owners::SessionOwners)).

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use tokio_util::sync::CancellationToken;

use super::{
    Shared,
    owners::SessionOwners,
    scope::{SESSION_SCOPE, now_ms},
    switches::Switches,
};
use crate::{mcp::HttpSessions, store::SqlStore};

/// rmcp's session store over the gateway's SQL store.
pub(crate) struct StoredSessions {
    pub(crate) sql: SqlStore,
    pub(crate) switches: Arc<Switches>,
}

#[async_trait::async_trait]
impl SessionStore for StoredSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(row) = self.sql.gateway_session_load(session_id).await? else {
            return Ok(None);
        };
        if row.state.is_empty() {
            return Ok(None);
        }
        match serde_json::from_str(&row.state) {
            Ok(state) => Ok(Some(state)),
            Err(error) => {
                // Kept as it is (it ends as an idle session): the client begins a new session.
                tracing::warn!(%error, "a stored MCP session's state is not valid; it is not restored");
                Ok(None)
            }
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let state = serde_json::to_string(state)?;
        Ok(self
            .sql
            .gateway_session_store(session_id, &state, now_ms())
            .await?)
    }

    /// The client ended the session (HTTP `DELETE`): it ends in the store and in every other
    /// process holding it.
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.switches.end_session(session_id).await?)
    }
}

/// The in-memory sessions of this process's HTTP servers, with their owners as each server's
/// gate knows them.
#[derive(Default)]
pub(crate) struct InMemory(Mutex<Vec<(HttpSessions, Arc<SessionOwners>)>>);

impl InMemory {
    /// Adds the sessions of an HTTP server, and their owners.
    pub(crate) fn add(&self, sessions: HttpSessions, owners: Arc<SessionOwners>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((sessions, owners));
    }

    /// Ends session `id` in the servers that hold it (it ended in another process): its
    /// owner is forgotten by their gates, its streams end, and a later request in it is
    /// answered as in an ended session.
    pub(crate) async fn close(&self, id: &str) {
        let servers = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (sessions, owners) in servers {
            owners.ended(id);
            sessions.close(id).await;
        }
    }
}

/// How often [`maintain`] runs for sessions that end after `idle`: a quarter of it, from
/// 250 ms to a minute.
fn period(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(250), Duration::from_mins(1))
}

/// With an SQL store, until `stop`: renews the sessions this process holds (ending here the
/// ones that ended through another process), ends the ones no process renewed for `idle`
/// (with their switches), and reads the switches it holds and the pins again (for processes
/// sharing an SQLite file, which has no announcements, and for a PostgreSQL announcement lost
/// on the way).
pub(crate) async fn maintain(shared: Arc<Shared>, idle: Duration, stop: CancellationToken) {
    let Some(sql) = shared.switches.sql().cloned() else {
        return;
    };
    let idle_ms = i64::try_from(idle.as_millis()).unwrap_or(i64::MAX);
    let mut ticks = tokio::time::interval(period(idle));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let live = shared.switches.live_sessions();
        match sql.gateway_sessions_touch(&live, now_ms()).await {
            // Ended through another process, whose announcement did not come (SQLite has
            // none): ended here too.
            Ok(gone) => {
                for id in gone {
                    shared.http_sessions.close(&id).await;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot renew this process's MCP sessions in the store");
            }
        }
        match sql
            .gateway_sessions_expire(now_ms().saturating_sub(idle_ms), SESSION_SCOPE)
            .await
        {
            Ok(0) => {}
            Ok(ended) => tracing::debug!(ended, "ended idle MCP sessions and their switches"),
            Err(error) => tracing::warn!(%error, "cannot end idle MCP sessions in the store"),
        }
        shared.switches.reload_all().await;
        shared.catalog.reload_pins().await;
    }
}
