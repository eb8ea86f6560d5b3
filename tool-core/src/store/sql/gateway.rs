//! The MCP gateway's rows: its HTTP sessions (for another process to restore them, with their
//! owner and the time a process last held them) and its pinned tool definitions.

use sqlx::Row;

use super::{Pool, SqlStore, StoreError};

/// One stored gateway session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GatewaySessionRow {
    /// The user who began the session, once the gateway recorded it.
    pub(crate) owner: Option<String>,
    /// What restores the session (rmcp's session state, JSON); empty until stored.
    pub(crate) state: String,
}

/// One pinned tool definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PinRow {
    pub(crate) tool: String,
    pub(crate) server: String,
    pub(crate) sha256: String,
}

/// One definition change waiting for an operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PendingRow {
    pub(crate) tool: String,
    pub(crate) server: String,
    /// The tool's pin when the change was seen.
    pub(crate) pinned: String,
    /// The changed definition's hash.
    pub(crate) offered: String,
}

impl SqlStore {
    /// Stores the state of session `id` (keeping its owner), seen at `now`.
    pub(crate) async fn gateway_session_store(
        &self,
        id: &str,
        state: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tool_gateway_sessions (id, owner, state, seen_at) VALUES ($1, NULL, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET state = excluded.state, seen_at = excluded.seen_at",
            )
            .bind(id)
            .bind(state)
            .bind(now)
            .execute(pool)
            .await
            .map(drop)
        })
        .map_err(|error| self.error("store a gateway session", error))
    }

    /// The stored session `id`.
    pub(crate) async fn gateway_session_load(
        &self,
        id: &str,
    ) -> Result<Option<GatewaySessionRow>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query("SELECT owner, state FROM tool_gateway_sessions WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await
                .and_then(|row| {
                    row.map(|row| {
                        Ok(GatewaySessionRow {
                            owner: row.try_get(0)?,
                            state: row.try_get(1)?,
                        })
                    })
                    .transpose()
                })
        })
        .map_err(|error| self.error("load a gateway session", error))
    }

    /// Records `user`, who began session `id`, as its owner (the row rmcp stored for it has
    /// none yet); `true` when `user` owns it now.
    pub(crate) async fn gateway_session_begin(
        &self,
        id: &str,
        user: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let recorded = on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tool_gateway_sessions (id, owner, state, seen_at) VALUES ($1, $2, '', $3)
                 ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, seen_at = excluded.seen_at
                 WHERE tool_gateway_sessions.owner IS NULL
                    OR tool_gateway_sessions.owner = excluded.owner",
            )
            .bind(id)
            .bind(user)
            .bind(now)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })
        .map_err(|error| self.error("record the user of a gateway session", error))?;
        Ok(recorded > 0)
    }

    /// Renews session `id` for `user` when `user` owns it (or when it is not stored at all,
    /// recording `user`); `true` when `user` owns it now. A stored session without an owner is
    /// nobody's: it is not claimed.
    pub(crate) async fn gateway_session_claim(
        &self,
        id: &str,
        user: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let claimed = on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tool_gateway_sessions (id, owner, state, seen_at) VALUES ($1, $2, '', $3)
                 ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at
                 WHERE tool_gateway_sessions.owner = excluded.owner",
            )
            .bind(id)
            .bind(user)
            .bind(now)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })
        .map_err(|error| self.error("claim a gateway session", error))?;
        Ok(claimed > 0)
    }

    /// Renews `seen_at` of the sessions `ids`; the ones of them no longer stored (ended
    /// through another process).
    pub(crate) async fn gateway_sessions_touch(
        &self,
        ids: &[String],
        now: i64,
    ) -> Result<Vec<String>, StoreError> {
        let mut gone = Vec::new();
        for id in ids {
            let renewed = on_pool!(self, pool => {
                sqlx::query("UPDATE tool_gateway_sessions SET seen_at = $2 WHERE id = $1")
                    .bind(id)
                    .bind(now)
                    .execute(pool)
                    .await
                    .map(|done| done.rows_affected())
            })
            .map_err(|error| self.error("renew a gateway session", error))?;
            if renewed == 0 {
                gone.push(id.clone());
            }
        }
        Ok(gone)
    }

    /// Ends session `id`: its row and its switches (the preference scope `{prefix}{owner}.{id}`).
    pub(crate) async fn gateway_session_delete(
        &self,
        id: &str,
        prefix: &str,
    ) -> Result<(), StoreError> {
        let fail = |error| self.error("end a gateway session", error);
        on_pool!(self, pool => {
            let mut tx = pool.begin().await.map_err(fail)?;
            sqlx::query(
                "DELETE FROM tool_preferences WHERE scope IN (
                     SELECT $2 || owner || '.' || id FROM tool_gateway_sessions
                     WHERE id = $1 AND owner IS NOT NULL)",
            )
            .bind(id)
            .bind(prefix)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
            sqlx::query("DELETE FROM tool_gateway_sessions WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
            tx.commit().await.map_err(fail)
        })
    }

    /// Ends every session not seen since `cutoff`, with its switches; how many ended.
    pub(crate) async fn gateway_sessions_expire(
        &self,
        cutoff: i64,
        prefix: &str,
    ) -> Result<u64, StoreError> {
        let fail = |error| self.error("end idle gateway sessions", error);
        on_pool!(self, pool => {
            let mut tx = pool.begin().await.map_err(fail)?;
            sqlx::query(
                "DELETE FROM tool_preferences WHERE scope IN (
                     SELECT $2 || owner || '.' || id FROM tool_gateway_sessions
                     WHERE seen_at < $1 AND owner IS NOT NULL)",
            )
            .bind(cutoff)
            .bind(prefix)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
            let ended = sqlx::query("DELETE FROM tool_gateway_sessions WHERE seen_at < $1")
                .bind(cutoff)
                .execute(&mut *tx)
                .await
                .map_err(fail)?
                .rows_affected();
            tx.commit().await.map_err(fail)?;
            Ok(ended)
        })
    }

    /// Every pinned tool definition.
    pub(crate) async fn gateway_pins(&self) -> Result<Vec<PinRow>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query("SELECT tool, server, sha256 FROM tool_gateway_pins")
                .fetch_all(pool)
                .await
                .and_then(|rows| {
                    rows.iter()
                        .map(|row| {
                            Ok(PinRow {
                                tool: row.try_get(0)?,
                                server: row.try_get(1)?,
                                sha256: row.try_get(2)?,
                            })
                        })
                        .collect::<Result<Vec<_>, sqlx::Error>>()
                })
        })
        .map_err(|error| self.error("load the gateway's pins", error))
    }

    /// Pins each of `pins` unless its tool is pinned already (the first pin stays).
    pub(crate) async fn gateway_pins_add(&self, pins: &[PinRow]) -> Result<(), StoreError> {
        for pin in pins {
            on_pool!(self, pool => {
                sqlx::query(
                    "INSERT INTO tool_gateway_pins (tool, server, sha256) VALUES ($1, $2, $3)
                     ON CONFLICT (tool) DO NOTHING",
                )
                .bind(&pin.tool)
                .bind(&pin.server)
                .bind(&pin.sha256)
                .execute(pool)
                .await
                .map(drop)
            })
            .map_err(|error| self.error("pin a tool definition", error))?;
        }
        Ok(())
    }

    /// Pins `pin` in place of the tool's pin (an operator accepted it), and forgets the tool's
    /// waiting change, in one transaction.
    pub(crate) async fn gateway_pin_replace(&self, pin: &PinRow) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            async {
                let mut tx = pool.begin().await?;
                sqlx::query(
                    "INSERT INTO tool_gateway_pins (tool, server, sha256) VALUES ($1, $2, $3)
                     ON CONFLICT (tool) DO UPDATE SET server = excluded.server, sha256 = excluded.sha256",
                )
                .bind(&pin.tool)
                .bind(&pin.server)
                .bind(&pin.sha256)
                .execute(&mut *tx)
                .await?;
                sqlx::query("DELETE FROM tool_gateway_pending WHERE tool = $1")
                    .bind(&pin.tool)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await
            }
            .await
        })
        .map_err(|error| self.error("replace a pinned tool definition", error))
    }

    /// Every definition change waiting for an operator.
    pub(crate) async fn gateway_pending(&self) -> Result<Vec<PendingRow>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query("SELECT tool, server, pinned, offered FROM tool_gateway_pending")
                .fetch_all(pool)
                .await
                .and_then(|rows| {
                    rows.iter()
                        .map(|row| {
                            Ok(PendingRow {
                                tool: row.try_get(0)?,
                                server: row.try_get(1)?,
                                pinned: row.try_get(2)?,
                                offered: row.try_get(3)?,
                            })
                        })
                        .collect::<Result<Vec<_>, sqlx::Error>>()
                })
        })
        .map_err(|error| self.error("load the gateway's waiting definition changes", error))
    }

    /// Records `change` as the tool's waiting change (in place of an earlier one).
    pub(crate) async fn gateway_pending_put(&self, change: &PendingRow) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tool_gateway_pending (tool, server, pinned, offered) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (tool) DO UPDATE SET server = excluded.server,
                     pinned = excluded.pinned, offered = excluded.offered",
            )
            .bind(&change.tool)
            .bind(&change.server)
            .bind(&change.pinned)
            .bind(&change.offered)
            .execute(pool)
            .await
            .map(drop)
        })
        .map_err(|error| self.error("record a waiting definition change", error))
    }

    /// Forgets the tool's waiting change if it is still the one that offered `offered` (its
    /// upstream went back to the pinned definition).
    pub(crate) async fn gateway_pending_remove(
        &self,
        tool: &str,
        offered: &str,
    ) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            sqlx::query("DELETE FROM tool_gateway_pending WHERE tool = $1 AND offered = $2")
                .bind(tool)
                .bind(offered)
                .execute(pool)
                .await
                .map(drop)
        })
        .map_err(|error| self.error("forget a waiting definition change", error))
    }
}
