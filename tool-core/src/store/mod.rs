//! Where tool preferences and saved conversations live: JSON files, memory, or a database.
//!
//! Moving from one machine to many is a change of location string:
//!
//! | location | preferences | conversations |
//! |---|---|---|
//! | a plain path (`prefs.json`, `chats/`) | [`FilePreferenceStore`] on that file | [`FileConversationStore`] on that directory |
//! | `memory:` | [`MemoryPreferenceStore`] (this process only) | [`MemoryConversationStore`] |
//! | `sqlite://path` (feature `sqlite`) | [`SqlStore`] in an SQLite file, created if missing | the same database |
//! | `postgres://user:password@host/db` (feature `postgres`) | [`SqlStore`] on a PostgreSQL server shared by many processes | the same database |
//!
//! [`open_preference_store`] and [`open_conversation_store`] pick the store from the location,
//! so a command line can take it as one flag (`--store sqlite://tools.db`):
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use tool_core::session::ChatSession;
//! use tool_core::store::open_preference_store;
//! use tool_core::{ToolContext, create_default_tool_registry};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let location = format!("sqlite://{}", dir.path().join("tools.db").display());
//! let registry = Arc::new(create_default_tool_registry(ToolContext::default()));
//!
//! let store = open_preference_store(&location, "alice").await.unwrap();
//! let session = ChatSession::open(registry.clone(), store).await.unwrap();
//! session.disable_tool("write_file").await.unwrap();
//!
//! // Another process, or the next run, opening the same location sees the choice.
//! let store = open_preference_store(&location, "alice").await.unwrap();
//! let session = ChatSession::open(registry, store).await.unwrap();
//! assert!(!session.is_tool_enabled("write_file"));
//! # });
//! ```
//!
//! Saved conversations are [`SavedConversation`](crate::context::SavedConversation)
//! documents, the format `save_session_context` writes, kept by scope (a user, or whatever the
//! application chooses) and id through a [`ConversationStore`].

mod conversation;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;

use std::sync::Arc;

#[cfg(feature = "gateway")]
pub(crate) use conversation::is_valid_name;
pub use conversation::{
    ConversationError, ConversationKey, ConversationStore, ConversationSummary,
    FileConversationStore, MemoryConversationStore,
};
#[cfg(feature = "gateway")]
pub(crate) use sql::{PendingRow, PinRow};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::{SCHEMA_VERSION, SqlPreferenceStore, SqlStore, SqlStoreOptions};

#[cfg(feature = "file-store")]
use crate::session::FilePreferenceStore;
use crate::session::{MemoryPreferenceStore, PreferenceStore};

/// Why a store could not be opened or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database refused or failed an operation; `url` has no password.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    #[error("cannot {operation} in {url}: {}", sql::describe(error))]
    Database {
        /// What was being done, e.g. `save tool preference`.
        operation: &'static str,
        /// The database, with any password replaced by `***`.
        url: String,
        /// What the driver said.
        error: sqlx::Error,
    },
    /// The database was set up by a newer version of tool-core; it is left as it is.
    #[error(
        "the database {url} has schema version {found}, newer than version {known} that this \
         version of tool-core knows; it is left untouched (upgrade tool-core to use it)"
    )]
    NewerSchema {
        /// The database, with any password replaced by `***`.
        url: String,
        /// The highest version recorded in the database.
        found: i64,
        /// The highest version this crate knows ([`SCHEMA_VERSION`] with the SQL features).
        known: i64,
    },
    /// The location names a kind of store this build cannot open.
    #[error("cannot open store `{location}`: {reason}")]
    Unsupported {
        /// The location, with any password replaced by `***`.
        location: String,
        /// Why, and what would work.
        reason: String,
    },
}

/// Opens the preference store of `scope` (a user, or a scope the application chooses) at
/// `location`; see the [module docs](self) for the forms a location takes.
///
/// A plain path is a `FilePreferenceStore` on that file (feature `file-store`):
/// the file holds one scope's preferences, so `scope` is not used there and each user needs a
/// path of their own.
/// `memory:` gives a new, empty [`MemoryPreferenceStore`]. Database locations open (and create
/// or migrate) the database now, so a wrong URL or a server that is down is reported here.
// Async for the database stores, which open the database here.
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(clippy::unused_async)
)]
pub async fn open_preference_store(
    location: &str,
    scope: &str,
) -> Result<Arc<dyn PreferenceStore>, StoreError> {
    // Only database stores hold several scopes.
    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    let _ = scope;
    Ok(match Location::parse(location)? {
        #[cfg(feature = "file-store")]
        Location::Path => Arc::new(FilePreferenceStore::new(location)),
        #[cfg(not(feature = "file-store"))]
        Location::Path => {
            return Err(StoreError::Unsupported {
                location: location.to_owned(),
                reason: "preferences in a file need tool-core's `file-store` feature; use \
                         `memory:` or a database URL"
                    .to_owned(),
            });
        }
        Location::Memory => Arc::new(MemoryPreferenceStore::new()),
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        Location::Database => Arc::new(SqlStore::open(location).await?.preferences_for(scope)),
    })
}

/// Opens the conversation store at `location`: a plain path is a directory of JSON files
/// ([`FileConversationStore`]), `memory:` a new [`MemoryConversationStore`], and database URLs
/// an [`SqlStore`] (opened, created or migrated now).
// Async for the database stores, which open the database here.
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(clippy::unused_async)
)]
pub async fn open_conversation_store(
    location: &str,
) -> Result<Arc<dyn ConversationStore>, StoreError> {
    Ok(match Location::parse(location)? {
        Location::Path => Arc::new(FileConversationStore::new(location)),
        Location::Memory => Arc::new(MemoryConversationStore::new()),
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        Location::Database => Arc::new(SqlStore::open(location).await?),
    })
}

/// The kind of store a location string names.
enum Location {
    Path,
    Memory,
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    Database,
}

impl Location {
    fn parse(location: &str) -> Result<Self, StoreError> {
        let unsupported = |reason: &str| StoreError::Unsupported {
            location: redact_url(location),
            reason: reason.to_owned(),
        };
        if location == "memory:" {
            return Ok(Self::Memory);
        }
        let scheme = match location.split_once(':') {
            // `C:\...` and `C:/...` are Windows paths, not URLs.
            Some((scheme, rest))
                if scheme.len() > 1
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '+')
                    && (rest.starts_with("//") || scheme.eq_ignore_ascii_case("sqlite")) =>
            {
                scheme.to_ascii_lowercase()
            }
            _ if location.is_empty() => return Err(unsupported("the location is empty")),
            _ => return Ok(Self::Path),
        };
        match scheme.as_str() {
            "sqlite" if cfg!(feature = "sqlite") => Ok(database()),
            "postgres" | "postgresql" if cfg!(feature = "postgres") => Ok(database()),
            "sqlite" => Err(unsupported(
                "tool-core was built without its `sqlite` feature",
            )),
            "postgres" | "postgresql" => Err(unsupported(
                "tool-core was built without its `postgres` feature",
            )),
            "file" => Err(unsupported(
                "give a file store as a plain path, without `file://`",
            )),
            _ => Err(unsupported(
                "expected a path, `memory:`, `sqlite://path` or `postgres://...`",
            )),
        }
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn database() -> Location {
    Location::Database
}

#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
fn database() -> Location {
    // Unreachable: `parse` only calls this when a database feature is on.
    Location::Path
}

/// The URL with the password of its user part and any `password=` parameter replaced by `***`,
/// for error messages and logs. A password is found whole whatever it holds (`#`, `/`, `?`,
/// `@`), even written raw.
pub fn redact_url(url: &str) -> String {
    crate::secrets::redact_url(url, crate::secrets::Redaction::Passwords)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://alice:s3cr@t@db.example:5432/tools?sslmode=require"),
            "postgres://alice:***@db.example:5432/tools?sslmode=require"
        );
        assert_eq!(
            redact_url("postgres://alice@db/tools?password=hunter2&application_name=x"),
            "postgres://alice@db/tools?password=***&application_name=x"
        );
        assert_eq!(
            redact_url("postgres:///tools?host=/tmp"),
            "postgres:///tools?host=/tmp"
        );
        assert_eq!(redact_url("sqlite://a/b.db"), "sqlite://a/b.db");
    }

    #[test]
    fn locations_are_told_apart() {
        assert!(matches!(Location::parse("prefs.json"), Ok(Location::Path)));
        assert!(matches!(
            Location::parse("C:\\Users\\a\\prefs.json"),
            Ok(Location::Path)
        ));
        assert!(matches!(Location::parse("memory:"), Ok(Location::Memory)));
        let error = Location::parse("redis://alice:pw@host/0").err().unwrap();
        assert_eq!(
            error.to_string(),
            "cannot open store `redis://alice:***@host/0`: expected a path, `memory:`, \
             `sqlite://path` or `postgres://...`"
        );
        assert_eq!(
            Location::parse("").err().unwrap().to_string(),
            "cannot open store ``: the location is empty"
        );
        #[cfg(feature = "sqlite")]
        assert!(matches!(
            Location::parse("sqlite://x.db"),
            Ok(Location::Database)
        ));
        #[cfg(not(feature = "postgres"))]
        assert_eq!(
            Location::parse("postgres://h/db")
                .err()
                .unwrap()
                .to_string(),
            "cannot open store `postgres://h/db`: tool-core was built without its `postgres` \
             feature"
        );
    }
}
