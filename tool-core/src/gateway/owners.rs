//! Who owns each HTTP session, for the HTTP gate: a request naming a session (`Mcp-Session-Id`)
//! reaches the MCP server only from the session's owner, whatever its method (`POST` of a
//! request or a notification, `GET` of a stream or a resumed one, `DELETE`).
//!
//! A session is its user's from the answer to its `initialize`, in this process's memory and,
//! with an SQL store, in the store's `tool_gateway_sessions.owner`, where the other processes
//! sharing the store read it. A session whose owner is not recorded (unknown, ended, or begun
//! but not yet recorded) is nobody's: every request in it is answered as in an unknown session.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use super::scope::now_ms;
use crate::store::{SqlStore, StoreError};

/// The owners of the sessions one HTTP server has seen.
pub(crate) struct SessionOwners {
    known: Mutex<HashMap<String, Known>>,
    /// An owner not seen for this long is forgotten here (the session has ended by then, unless
    /// its owner keeps only a stream open); with an SQL store it is read there again.
    forget_after: Duration,
}

struct Known {
    owner: String,
    seen: Instant,
}

impl SessionOwners {
    /// Owners of sessions that end after `idle` without a request.
    pub(crate) fn new(idle: Duration) -> Self {
        Self {
            known: Mutex::new(HashMap::new()),
            forget_after: idle.saturating_mul(2).max(Duration::from_secs(1)),
        }
    }

    /// Records `user` as the owner of the session `id` that began with their `initialize`, here
    /// and in `sql` (where rmcp may have stored the session's state, ownerless, just before).
    pub(crate) async fn began(&self, sql: Option<&SqlStore>, id: &str, user: &str) {
        let now = Instant::now();
        {
            let mut known = lock(&self.known);
            known.retain(|_, entry| now.duration_since(entry.seen) < self.forget_after);
            known.insert(
                id.to_owned(),
                Known {
                    owner: user.to_owned(),
                    seen: now,
                },
            );
        }
        if let Some(sql) = sql {
            match sql.gateway_session_begin(id, user, now_ms()).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(%user, "a new mcp session was recorded as another user's");
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot record the user of a new mcp session; other processes will not serve it");
                }
            }
        }
    }

    /// Whether `user` owns the session `id` (read from `sql` when this process does not know
    /// it).
    pub(crate) async fn owns(
        &self,
        sql: Option<&SqlStore>,
        id: &str,
        user: &str,
    ) -> Result<bool, StoreError> {
        if let Some(entry) = lock(&self.known).get_mut(id) {
            if entry.owner != user {
                return Ok(false);
            }
            entry.seen = Instant::now();
            return Ok(true);
        }
        let Some(sql) = sql else {
            return Ok(false);
        };
        let owned = sql
            .gateway_session_load(id)
            .await?
            .and_then(|row| row.owner)
            .is_some_and(|owner| owner == user);
        if owned {
            lock(&self.known).insert(
                id.to_owned(),
                Known {
                    owner: user.to_owned(),
                    seen: Instant::now(),
                },
            );
        }
        Ok(owned)
    }

    /// Forgets the session `id`, which its owner ended.
    pub(crate) fn ended(&self, id: &str) {
        lock(&self.known).remove(id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each change is one insert or removal.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
