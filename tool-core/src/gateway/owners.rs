//! Who owns each HTTP session, for the HTTP gate: a request naming a session (`Mcp-Session-Id`)
//! reaches the MCP server only from the session's owner, whatever its method (`POST` of a
//! request or a notification, `GET` of a stream or a resumed one, `DELETE`).
//!
//! A session is its user's from the answer to its `initialize`, in this process's memory and,
//! with an SQL store, in the store's `tool_gateway_sessions.owner`, where the other processes
//! sharing the store read it. A session whose owner is not recorded (unknown, ended, or begun
//! but not yet recorded) is nobody's: every request in it is answered as in an unknown session.
//!
//! An owner read from the store is kept here, so that a session another process began is read
//! there once, not on every request. A session's owner is forgotten here when the session
//! ends: through this process (`DELETE`), or through another one, when its announcement comes
//! or when this process next renews its sessions ([`InMemory::close`]); the request after that
//! reads the store again, which no longer has it. An owner not seen for twice the sessions'
//! idle time is forgotten too, in sweeps spread over the owners recorded ([`Sweeps`]).
//!
//! [`InMemory::close`]: super::sessions::InMemory::close

use std::{
    collections::HashMap,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use super::scope::{Sweeps, now_ms};
use crate::store::{SqlStore, StoreError};

/// The owners of the sessions one HTTP server has seen.
pub(crate) struct SessionOwners {
    known: Mutex<KnownOwners>,
    /// How many times an owner was read from the store.
    reads: AtomicU64,
    /// An owner not seen for this long is forgotten here (the session has ended by then, unless
    /// its owner keeps only a stream open); with an SQL store it is read there again.
    forget_after: Duration,
}

struct Known {
    owner: String,
    seen: Instant,
}

/// The owners known here, and when they are next swept of the ones not seen for long.
struct KnownOwners {
    owners: HashMap<String, Known>,
    sweeps: Sweeps,
}

// Without the sessions' ids, which let their owners in.
impl std::fmt::Debug for SessionOwners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOwners")
            .field("reads", &self.reads())
            .finish_non_exhaustive()
    }
}

/// The owners known before a sweep is due.
const SWEEP_FROM: usize = 1024;

impl SessionOwners {
    /// Owners of sessions that end after `idle` without a request.
    pub(crate) fn new(idle: Duration) -> Self {
        Self {
            known: Mutex::new(KnownOwners {
                owners: HashMap::new(),
                sweeps: Sweeps::new(SWEEP_FROM),
            }),
            reads: AtomicU64::new(0),
            forget_after: idle.saturating_mul(2).max(Duration::from_secs(1)),
        }
    }

    /// Records `user` as the owner of the session `id` that began with their `initialize`, here
    /// and in `sql` (where rmcp may have stored the session's state, ownerless, just before).
    pub(crate) async fn began(&self, sql: Option<&SqlStore>, id: &str, user: &str) {
        let now = Instant::now();
        self.remember(id, user, now);
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

    /// Records `user` as the owner of session `id`, seen `now`.
    fn remember(&self, id: &str, user: &str, now: Instant) {
        let mut known = lock(&self.known);
        let KnownOwners { owners, sweeps } = &mut *known;
        let _ = sweeps.before_insert(owners, |_, entry| {
            now.saturating_duration_since(entry.seen) < self.forget_after
        });
        owners.insert(
            id.to_owned(),
            Known {
                owner: user.to_owned(),
                seen: now,
            },
        );
    }

    /// How many times an owner was read from the store.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Whether `user` owns the session `id` (read from `sql` when this process does not know
    /// it).
    pub(crate) async fn owns(
        &self,
        sql: Option<&SqlStore>,
        id: &str,
        user: &str,
    ) -> Result<bool, StoreError> {
        if let Some(entry) = lock(&self.known).owners.get_mut(id) {
            if entry.owner != user {
                return Ok(false);
            }
            entry.seen = Instant::now();
            return Ok(true);
        }
        let Some(sql) = sql else {
            return Ok(false);
        };
        self.reads.fetch_add(1, Ordering::Relaxed);
        let owned = sql
            .gateway_session_load(id)
            .await?
            .and_then(|row| row.owner)
            .is_some_and(|owner| owner == user);
        if owned {
            self.remember(id, user, Instant::now());
        }
        Ok(owned)
    }

    /// Forgets the session `id`, which ended.
    pub(crate) fn ended(&self, id: &str) {
        lock(&self.known).owners.remove(id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each change is one insert or removal.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
