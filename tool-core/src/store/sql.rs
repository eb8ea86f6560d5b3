//! [`SqlStore`]: tool preferences and saved conversations in SQLite or PostgreSQL.

use std::{str::FromStr, time::Duration};

use sqlx::Row;

use super::{
    StoreError,
    conversation::{
        ConversationError, ConversationKey, ConversationStore, ConversationSummary, NAME_RULE,
        check_name, is_valid_name, sort_summaries,
    },
    redact_url,
};
use crate::{
    context::SavedConversation,
    session::{PreferenceError, PreferenceStore, Preferences, check_tool_name},
};

/// The newest schema version this crate creates and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The migrations, in order: version, description, statements. Each runs once, in the same
/// transaction as the row that records it; the SQL is the common subset of SQLite and
/// PostgreSQL.
const MIGRATIONS: &[(i64, &str, &[&str])] = &[
    (
        1,
        "tool preferences and saved conversations",
        &[
            "CREATE TABLE tool_preferences (
            scope TEXT NOT NULL,
            tool TEXT NOT NULL,
            enabled BOOLEAN NOT NULL,
            PRIMARY KEY (scope, tool)
        )",
            "CREATE TABLE tool_conversations (
            scope TEXT NOT NULL,
            id TEXT NOT NULL,
            saved_at TEXT NOT NULL,
            reason TEXT NOT NULL,
            message_count BIGINT NOT NULL,
            document TEXT NOT NULL,
            PRIMARY KEY (scope, id)
        )",
            "CREATE INDEX tool_conversations_by_time ON tool_conversations (scope, saved_at)",
        ],
    ),
    (
        2,
        "the MCP gateway's sessions and pinned tool definitions",
        &[
            // A session's owner is set once, by the gateway, after its `initialize`; `state` is
            // what restores the session in another process; `seen_at` (Unix milliseconds) is renewed
            // while a process holds the session, and an old one ends it.
            "CREATE TABLE tool_gateway_sessions (
            id TEXT PRIMARY KEY,
            owner TEXT,
            state TEXT NOT NULL,
            seen_at BIGINT NOT NULL
        )",
            "CREATE TABLE tool_gateway_pins (
            tool TEXT PRIMARY KEY,
            server TEXT NOT NULL,
            sha256 TEXT NOT NULL
        )",
        ],
    ),
    (
        3,
        "the MCP gateway's definition changes waiting for an operator",
        &[
            // Kept here so that an operator can accept, through any gateway process, a change
            // that another process's upstream made: `pinned` is the tool's pin when the change
            // was seen, `offered` the changed definition's hash.
            "CREATE TABLE tool_gateway_pending (
            tool TEXT PRIMARY KEY,
            server TEXT NOT NULL,
            pinned TEXT NOT NULL,
            offered TEXT NOT NULL
        )",
        ],
    ),
];

/// The table that records which migrations ran.
const CREATE_MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS tool_core_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL
)";

/// The key of the PostgreSQL advisory lock that serializes migrations across processes
/// (`tool-cor` in ASCII).
#[cfg(feature = "postgres")]
const MIGRATION_LOCK: i64 = 0x746f_6f6c_2d63_6f72;

/// Settings of an [`SqlStore`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SqlStoreOptions {
    /// The most connections the store's pool opens (default 8). Every [`SqlStore::open`] has
    /// its own pool; share one store (its handles are cheap) rather than opening many.
    pub max_connections: u32,
    /// How long an operation waits for a connection before failing (default 5 s). A server
    /// that refuses connections is retried within this time.
    pub acquire_timeout: Duration,
    /// How long SQLite waits for another writer's lock before failing (default 30 s).
    pub busy_timeout: Duration,
}

impl Default for SqlStoreOptions {
    fn default() -> Self {
        Self {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            busy_timeout: Duration::from_secs(30),
        }
    }
}

impl SqlStoreOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the largest number of connections.
    #[must_use]
    pub fn max_connections(mut self, max: u32) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Sets how long an operation waits for a connection.
    #[must_use]
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Sets how long SQLite waits for another writer.
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }
}

/// Tool preferences and saved conversations in a database: `sqlite://path` (feature `sqlite`)
/// or `postgres://user:password@host/db` (feature `postgres`).
///
/// Opening creates the tables or migrates them to [`SCHEMA_VERSION`], under a lock, so several
/// processes may open the same fresh database at once; a database set up by a newer version
/// is refused with [`StoreError::NewerSchema`], never changed. Cloning gives another handle on
/// the same connection pool.
///
/// * Preferences: [`preferences_for`](Self::preferences_for) gives a cheap
///   [`PreferenceStore`] handle for one scope (a user, or a scope the application chooses).
///   Each change is one upsert of one `(scope, tool)` row, so writers in many processes never
///   lose each other's changes; preferences of tools that are not registered are kept.
/// * Conversations: the store is a [`ConversationStore`]; each conversation is its JSON
///   document (as `save_session_context` writes it), beside indexed scope, id, saved-at,
///   reason and message-count columns.
///
/// * The MCP gateway (feature `gateway`) keeps its HTTP sessions, pinned tool definitions and
///   the definition changes waiting for an operator in tables of its own
///   (`tool_gateway_sessions`, `tool_gateway_pins`, `tool_gateway_pending`; schema version 3).
///
/// Failures are [`StoreError::Database`], naming the operation and the URL without its
/// password (wrapped in [`PreferenceError::Backend`] or [`ConversationError::Store`]).
#[derive(Clone, Debug)]
pub struct SqlStore {
    pool: Pool,
    url: std::sync::Arc<str>,
}

/// One pool of either kind: the queries are the same text for both, so each operation is
/// written once and expanded for each pool by `on_pool!`.
#[derive(Clone, Debug)]
enum Pool {
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

/// Runs `$body` with `$pool` bound to the concrete pool.
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.pool {
            #[cfg(feature = "sqlite")]
            Pool::Sqlite($pool) => $body,
            #[cfg(feature = "postgres")]
            Pool::Postgres($pool) => $body,
        }
    };
}

#[cfg(feature = "gateway")]
mod gateway;
#[cfg(feature = "gateway")]
pub(crate) use gateway::{PendingRow, PinRow};

impl SqlStore {
    /// Opens the database at `url` with the default [`SqlStoreOptions`], creating an SQLite
    /// file (and its directory) if missing, and creating or migrating the tables.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, SqlStoreOptions::default()).await
    }

    /// Opens the database at `url` with these options; see [`open`](Self::open).
    pub async fn open_with(url: &str, options: SqlStoreOptions) -> Result<Self, StoreError> {
        let redacted: std::sync::Arc<str> = redact_url(url).into();
        let fail = |error| StoreError::Database {
            operation: "open the database",
            url: redacted.to_string(),
            error,
        };
        let scheme = url
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let pool = match scheme.as_str() {
            #[cfg(feature = "sqlite")]
            "sqlite" => Pool::Sqlite(open_sqlite(url, &options).await.map_err(fail)?),
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => {
                let connect = sqlx::postgres::PgConnectOptions::from_str(url).map_err(fail)?;
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(options.max_connections)
                    .acquire_timeout(options.acquire_timeout)
                    .connect_with(connect)
                    .await
                    .map_err(fail)?;
                Pool::Postgres(pool)
            }
            _ => {
                return Err(StoreError::Unsupported {
                    location: redacted.to_string(),
                    reason: "expected `sqlite://path` or `postgres://...` with the matching \
                             feature of tool-core"
                        .to_owned(),
                });
            }
        };
        let store = Self {
            pool,
            url: redacted,
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The PostgreSQL pool, when the store is in PostgreSQL (for `LISTEN`/`NOTIFY`).
    #[cfg(all(feature = "gateway", feature = "postgres"))]
    pub(crate) fn postgres_pool(&self) -> Option<&sqlx::PgPool> {
        match &self.pool {
            Pool::Postgres(pool) => Some(pool),
            #[cfg(feature = "sqlite")]
            Pool::Sqlite(_) => None,
        }
    }

    /// The database's URL, with any password replaced by `***`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The preferences of `scope` (a user, or a scope the application chooses): a cheap
    /// handle on this store's pool.
    pub fn preferences_for(&self, scope: impl Into<String>) -> SqlPreferenceStore {
        SqlPreferenceStore {
            store: self.clone(),
            scope: scope.into(),
        }
    }

    /// The schema version recorded in the database.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        let version: Option<i64> = on_pool!(self, pool => {
            sqlx::query_scalar("SELECT MAX(version) FROM tool_core_migrations")
                .fetch_one(pool)
                .await
        })
        .map_err(|error| self.error("read the schema version", error))?;
        Ok(version.unwrap_or(0))
    }

    /// Closes the pool: waits for operations in flight, then closes every connection.
    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await);
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let fail = |error| self.error("migrate the schema", error);
        // One transaction that first takes a lock every opener waits for: SQLite's write lock
        // (`BEGIN IMMEDIATE`), PostgreSQL's advisory lock (concurrent `CREATE TABLE IF NOT
        // EXISTS` can fail on PostgreSQL without it). The second opener then sees the tables.
        let found = on_pool!(self, pool => {
            let mut tx = pool.begin_locked().await.map_err(fail)?;
            sqlx::query(CREATE_MIGRATIONS_TABLE)
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
            let found: Option<i64> =
                sqlx::query_scalar("SELECT MAX(version) FROM tool_core_migrations")
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(fail)?;
            let found = found.unwrap_or(0);
            if found > SCHEMA_VERSION {
                // Dropping the transaction rolls it back: nothing is changed.
                return Err(StoreError::NewerSchema {
                    url: self.url.to_string(),
                    found,
                    known: SCHEMA_VERSION,
                });
            }
            for (version, description, statements) in MIGRATIONS {
                if *version <= found {
                    continue;
                }
                for statement in *statements {
                    sqlx::query(*statement)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                sqlx::query("INSERT INTO tool_core_migrations (version, description) VALUES ($1, $2)")
                    .bind(*version)
                    .bind(*description)
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
            }
            tx.commit().await.map_err(fail)?;
            found
        });
        if found < SCHEMA_VERSION {
            tracing::info!(
                url = %self.url,
                from = found,
                to = SCHEMA_VERSION,
                "migrated the tool store's schema"
            );
        }
        Ok(())
    }

    fn error(&self, operation: &'static str, error: sqlx::Error) -> StoreError {
        StoreError::Database {
            operation,
            url: self.url.to_string(),
            error,
        }
    }

    async fn load_preferences(&self, scope: &str) -> Result<Preferences, StoreError> {
        let rows = on_pool!(self, pool => {
            sqlx::query("SELECT tool, enabled FROM tool_preferences WHERE scope = $1")
                .bind(scope)
                .fetch_all(pool)
                .await
                .and_then(|rows| {
                    rows.iter()
                        .map(|row| Ok((row.try_get::<String, _>(0)?, row.try_get::<bool, _>(1)?)))
                        .collect::<Result<Preferences, sqlx::Error>>()
                })
        });
        rows.map_err(|error| self.error("load tool preferences", error))
    }

    async fn set_preference(
        &self,
        scope: &str,
        tool: &str,
        enabled: bool,
    ) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tool_preferences (scope, tool, enabled) VALUES ($1, $2, $3)
                 ON CONFLICT (scope, tool) DO UPDATE SET enabled = excluded.enabled",
            )
            .bind(scope)
            .bind(tool)
            .bind(enabled)
            .execute(pool)
            .await
            .map(drop)
        })
        .map_err(|error| self.error("save a tool preference", error))
    }

    async fn remove_preference(&self, scope: &str, tool: &str) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            sqlx::query("DELETE FROM tool_preferences WHERE scope = $1 AND tool = $2")
                .bind(scope)
                .bind(tool)
                .execute(pool)
                .await
                .map(drop)
        })
        .map_err(|error| self.error("remove a tool preference", error))
    }
}

/// Beginning a transaction that holds the migration lock until it ends, for each kind of pool.
trait BeginLocked {
    type Db: sqlx::Database;

    async fn begin_locked(&self) -> Result<sqlx::Transaction<'static, Self::Db>, sqlx::Error>;
}

#[cfg(feature = "sqlite")]
impl BeginLocked for sqlx::SqlitePool {
    type Db = sqlx::Sqlite;

    async fn begin_locked(&self) -> Result<sqlx::Transaction<'static, Self::Db>, sqlx::Error> {
        self.begin_with("BEGIN IMMEDIATE").await
    }
}

#[cfg(feature = "postgres")]
impl BeginLocked for sqlx::PgPool {
    type Db = sqlx::Postgres;

    async fn begin_locked(&self) -> Result<sqlx::Transaction<'static, Self::Db>, sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }
}

#[cfg(feature = "sqlite")]
async fn open_sqlite(
    url: &str,
    options: &SqlStoreOptions,
) -> Result<sqlx::SqlitePool, sqlx::Error> {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

    let connect = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        // WAL lets readers go on while one process writes; every write is a short upsert.
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(options.busy_timeout);
    let file = connect.get_filename();
    if let Some(parent) = file.parent() {
        if !parent.as_os_str().is_empty() && file.as_os_str() != ":memory:" {
            tokio::fs::create_dir_all(parent).await?;
        }
    }
    // Turning a fresh file to WAL takes a lock that SQLite does not wait for: openers racing
    // on a new database get SQLITE_BUSY at once. They try again until the busy timeout.
    let deadline = tokio::time::Instant::now() + options.busy_timeout;
    let mut pause = Duration::from_millis(5);
    loop {
        let opened = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect.clone())
            .await;
        match opened {
            Err(error) if is_busy(&error) && tokio::time::Instant::now() + pause < deadline => {
                tracing::debug!(%error, "the SQLite database is busy; opening it again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            opened => return opened,
        }
    }
}

/// Whether SQLite said the database is busy (`SQLITE_BUSY`, any extended code).
#[cfg(feature = "sqlite")]
fn is_busy(error: &sqlx::Error) -> bool {
    const SQLITE_BUSY: i32 = 5;
    match error {
        sqlx::Error::Database(error) => error
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == SQLITE_BUSY),
        _ => false,
    }
}

/// What an error says, with a hint where the driver's words alone do not tell the reason.
pub(super) fn describe(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::PoolTimedOut => format!(
            "{error} (the database did not accept a connection in time: is the server running \
             and reachable?)"
        ),
        _ => error.to_string(),
    }
}

/// The preferences of one scope in an [`SqlStore`]: a cheap handle (a clone of the store and
/// the scope's name). The scope follows the rule of conversation scopes
/// ([`ConversationKey`]); an operation with another scope fails with
/// [`PreferenceError::InvalidName`] before any query.
#[derive(Clone, Debug)]
pub struct SqlPreferenceStore {
    store: SqlStore,
    scope: String,
}

impl SqlPreferenceStore {
    /// The scope.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The store.
    pub fn store(&self) -> &SqlStore {
        &self.store
    }

    /// Checks the scope (the rule of conversation scopes) before any query, so SQLite and
    /// PostgreSQL refuse the same scopes with the same error.
    fn check_scope(&self) -> Result<(), PreferenceError> {
        if is_valid_name(&self.scope) {
            Ok(())
        } else {
            Err(PreferenceError::InvalidName {
                what: "preference scope",
                name: self.scope.clone(),
                reason: NAME_RULE.to_owned(),
            })
        }
    }
}

#[async_trait::async_trait]
impl PreferenceStore for SqlPreferenceStore {
    async fn load(&self) -> Result<Preferences, PreferenceError> {
        self.check_scope()?;
        self.store
            .load_preferences(&self.scope)
            .await
            .map_err(PreferenceError::backend)
    }

    async fn set(&self, tool: &str, enabled: bool) -> Result<(), PreferenceError> {
        self.check_scope()?;
        check_tool_name(tool)?;
        self.store
            .set_preference(&self.scope, tool, enabled)
            .await
            .map_err(PreferenceError::backend)
    }

    async fn remove(&self, tool: &str) -> Result<(), PreferenceError> {
        self.check_scope()?;
        check_tool_name(tool)?;
        self.store
            .remove_preference(&self.scope, tool)
            .await
            .map_err(PreferenceError::backend)
    }
}

#[async_trait::async_trait]
impl ConversationStore for SqlStore {
    async fn save(
        &self,
        key: &ConversationKey,
        conversation: &SavedConversation,
    ) -> Result<(), ConversationError> {
        // The whole document is stored, so fields added to the format later are kept; the
        // other columns are copies for listing and sorting.
        let document =
            serde_json::to_string(conversation).map_err(|error| ConversationError::Invalid {
                scope: key.scope().to_owned(),
                id: key.id().to_owned(),
                location: self.url.to_string(),
                error,
            })?;
        let message_count = i64::try_from(conversation.context.messages.len()).unwrap_or(i64::MAX);
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tool_conversations
                     (scope, id, saved_at, reason, message_count, document)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (scope, id) DO UPDATE SET
                     saved_at = excluded.saved_at,
                     reason = excluded.reason,
                     message_count = excluded.message_count,
                     document = excluded.document",
            )
            .bind(key.scope())
            .bind(key.id())
            .bind(&conversation.saved_at)
            .bind(&conversation.reason)
            .bind(message_count)
            .bind(&document)
            .execute(pool)
            .await
            .map(drop)
        })
        .map_err(|error| self.error("save a conversation", error))?;
        Ok(())
    }

    async fn load(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<SavedConversation>, ConversationError> {
        let document: Option<String> = on_pool!(self, pool => {
            sqlx::query_scalar("SELECT document FROM tool_conversations WHERE scope = $1 AND id = $2")
                .bind(key.scope())
                .bind(key.id())
                .fetch_optional(pool)
                .await
        })
        .map_err(|error| self.error("load a conversation", error))?;
        let Some(document) = document else {
            return Ok(None);
        };
        serde_json::from_str(&document)
            .map(Some)
            .map_err(|error| ConversationError::Invalid {
                scope: key.scope().to_owned(),
                id: key.id().to_owned(),
                location: self.url.to_string(),
                error,
            })
    }

    async fn list(&self, scope: &str) -> Result<Vec<ConversationSummary>, ConversationError> {
        check_name("scope", scope)?;
        let summaries = on_pool!(self, pool => {
            sqlx::query(
                "SELECT id, reason, saved_at, message_count FROM tool_conversations
                 WHERE scope = $1 ORDER BY saved_at DESC, id",
            )
            .bind(scope)
            .fetch_all(pool)
            .await
            .and_then(|rows| {
                rows.iter()
                    .map(|row| {
                        Ok(ConversationSummary {
                            id: row.try_get(0)?,
                            reason: row.try_get(1)?,
                            saved_at: row.try_get(2)?,
                            message_count: usize::try_from(row.try_get::<i64, _>(3)?)
                                .unwrap_or_default(),
                        })
                    })
                    .collect::<Result<Vec<_>, sqlx::Error>>()
            })
        });
        let mut summaries = summaries.map_err(|error| self.error("list conversations", error))?;
        // The database's text order may follow a collation; make it the same as other stores.
        sort_summaries(&mut summaries);
        Ok(summaries)
    }

    async fn delete(&self, key: &ConversationKey) -> Result<bool, ConversationError> {
        let result = on_pool!(self, pool => {
            sqlx::query("DELETE FROM tool_conversations WHERE scope = $1 AND id = $2")
                .bind(key.scope())
                .bind(key.id())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })
        .map_err(|error| self.error("delete a conversation", error))?;
        Ok(result > 0)
    }
}
