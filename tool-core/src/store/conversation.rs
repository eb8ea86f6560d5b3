//! [`ConversationStore`]: saved conversations by scope and id, in files, in memory or (see
//! [`SqlStore`](super::SqlStore)) in a database.

use std::{
    collections::HashMap,
    io,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use crate::{
    context::{LoadContextError, SavedConversation},
    session::shown_name,
};

use super::StoreError;

/// Saved conversations, kept by scope (a user, or a scope the application chooses) and id.
///
/// A conversation is the [`SavedConversation`] document that `save_session_context` writes:
/// system prompt, messages with their tool calls and results, notes, the reason and the time it
/// was saved. Saving under an existing id replaces that conversation. A conversation is named by
/// a [`ConversationKey`], whose scope and id are checked when it is made, so a store only ever
/// sees names it can use as file names.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use tool_core::Conversation;
/// use tool_core::context::SavedConversation;
/// use tool_core::store::{ConversationKey, ConversationStore, MemoryConversationStore};
///
/// let store = MemoryConversationStore::new();
/// let monday = ConversationKey::new("alice", "monday").unwrap();
/// let context = Conversation {
///     system_prompt: "You are terse.".to_owned(),
///     ..Conversation::default()
/// };
/// let saved = SavedConversation::new("end of day", context);
/// store.save(&monday, &saved).await.unwrap();
///
/// assert_eq!(store.load(&monday).await.unwrap(), Some(saved));
/// assert_eq!(store.list("alice").await.unwrap()[0].reason, "end of day");
/// assert!(store.list("bob").await.unwrap().is_empty());
/// assert!(store.delete(&monday).await.unwrap());
/// # });
/// ```
#[async_trait::async_trait]
pub trait ConversationStore: Send + Sync {
    /// Saves (or replaces) the conversation `key` names.
    async fn save(
        &self,
        key: &ConversationKey,
        conversation: &SavedConversation,
    ) -> Result<(), ConversationError>;

    /// The conversation `key` names, or `None` when there is none.
    async fn load(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<SavedConversation>, ConversationError>;

    /// The conversations of `scope`, the most recently saved first (ties by id). Fails with
    /// [`ConversationError::InvalidName`] when `scope` breaks [`ConversationKey`]'s rule.
    async fn list(&self, scope: &str) -> Result<Vec<ConversationSummary>, ConversationError>;

    /// Deletes the conversation `key` names; returns whether there was one.
    async fn delete(&self, key: &ConversationKey) -> Result<bool, ConversationError>;
}

/// The name of a saved conversation: its scope (a user, or a scope the application chooses) and
/// its id, each 1 to 128 letters, digits, `-`, `_` or `.`, not starting with `.`, so that every
/// store can use them as file names. They are checked when the key is made.
///
/// ```
/// use tool_core::store::{ConversationError, ConversationKey};
///
/// let key = ConversationKey::new("alice", "monday").unwrap();
/// assert_eq!((key.scope(), key.id()), ("alice", "monday"));
/// assert!(matches!(
///     ConversationKey::new("alice", "../etc"),
///     Err(ConversationError::InvalidName { what: "id", .. })
/// ));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConversationKey {
    scope: String,
    id: String,
}

impl ConversationKey {
    /// The key of the conversation `id` of `scope`. Fails with
    /// [`ConversationError::InvalidName`] when either is not a valid name.
    pub fn new(scope: impl Into<String>, id: impl Into<String>) -> Result<Self, ConversationError> {
        let (scope, id) = (scope.into(), id.into());
        check_name("scope", &scope)?;
        check_name("id", &id)?;
        Ok(Self { scope, id })
    }

    /// The scope.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// One saved conversation as [`ConversationStore::list`] shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConversationSummary {
    /// The id it was saved under.
    pub id: String,
    /// Why it was saved.
    pub reason: String,
    /// When, in RFC 3339 (UTC).
    pub saved_at: String,
    /// How many messages it holds.
    pub message_count: usize,
}

impl ConversationSummary {
    /// The summary of a conversation saved under `id`.
    pub fn of(id: impl Into<String>, conversation: &SavedConversation) -> Self {
        Self {
            id: id.into(),
            reason: conversation.reason.clone(),
            saved_at: conversation.saved_at.clone(),
            message_count: conversation.context.messages.len(),
        }
    }
}

/// Why a conversation store could not save, load, list or delete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConversationError {
    /// A scope or id that is not 1 to 128 letters, digits, `-`, `_` or `.`, or starts with `.`.
    #[error("invalid conversation {what} `{}`: {NAME_RULE}", shown_name(name))]
    InvalidName {
        /// `scope` or `id`.
        what: &'static str,
        /// The name given.
        name: String,
    },
    /// A file operation failed.
    #[error("cannot {action} conversation at {}: {error}", path.display())]
    Io {
        /// What was being done: `read`, `write`, `list`, `delete`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        error: io::Error,
    },
    /// A stored conversation file could not be read back.
    #[error(transparent)]
    Load(#[from] LoadContextError),
    /// A stored document is not a valid conversation.
    #[error("the conversation `{id}` of `{scope}` stored in {location} is not valid: {error}")]
    Invalid {
        /// The scope.
        scope: String,
        /// The id.
        id: String,
        /// The store (a URL without its password).
        location: String,
        /// The parser's error.
        error: serde_json::Error,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The rule for scopes and ids, as error messages state it.
pub(crate) const NAME_RULE: &str =
    "use 1 to 128 letters, digits, `-`, `_` or `.`, not starting with `.`";

/// Whether `name` is a valid scope or id: safe as a file name everywhere, and kept alike by
/// every store (no NUL, no control character, bounded).
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Checks a scope or id: the same rule for every store.
pub(crate) fn check_name(what: &'static str, name: &str) -> Result<(), ConversationError> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(ConversationError::InvalidName {
            what,
            name: name.to_owned(),
        })
    }
}

/// Sorts summaries the most recent first, ties by id. RFC 3339 UTC times compare as text.
pub(crate) fn sort_summaries(summaries: &mut [ConversationSummary]) {
    summaries.sort_by(|a, b| b.saved_at.cmp(&a.saved_at).then_with(|| a.id.cmp(&b.id)));
}

/// Conversations as JSON files in a directory: `<dir>/<scope>/<id>.json`, each in the format
/// `save_session_context` writes (pretty-printed, readable by
/// [`SavedConversation::load`] and `Agent::load_context`).
///
/// Writes are atomic (a temporary file renamed over the old one), so a reader or a crash sees
/// the old conversation or the new one. Listing reads every file of the scope; a file that
/// cannot be read is left out with a warning.
#[derive(Clone, Debug)]
pub struct FileConversationStore {
    dir: PathBuf,
}

impl FileConversationStore {
    /// A store in `dir`; nothing is created until the first save.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a conversation.
    pub fn path_of(&self, key: &ConversationKey) -> PathBuf {
        self.dir.join(&key.scope).join(format!("{}.json", key.id))
    }

    fn list_blocking(&self, scope: &str) -> Result<Vec<ConversationSummary>, ConversationError> {
        check_name("scope", scope)?;
        let dir = self.dir.join(scope);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io_error("list", &dir, error)),
        };
        let mut summaries = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| io_error("list", &dir, error))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|name| name.strip_suffix(".json")) else {
                continue;
            };
            // Temporary files of a write in progress start with `.`, which no id does.
            if check_name("id", id).is_err() {
                continue;
            }
            match SavedConversation::load(entry.path()) {
                Ok(saved) => summaries.push(ConversationSummary::of(id, &saved)),
                Err(error) => tracing::warn!(
                    path = %entry.path().display(),
                    %error,
                    "left an unreadable conversation file out of the list"
                ),
            }
        }
        sort_summaries(&mut summaries);
        Ok(summaries)
    }
}

#[async_trait::async_trait]
impl ConversationStore for FileConversationStore {
    async fn save(
        &self,
        key: &ConversationKey,
        conversation: &SavedConversation,
    ) -> Result<(), ConversationError> {
        let path = self.path_of(key);
        let mut text = serde_json::to_string_pretty(conversation)
            .map_err(|error| io_error("write", &path, io::Error::other(error)))?;
        text.push('\n');
        crate::builtin::write_atomic(path.clone(), text.into_bytes())
            .await
            .map_err(|error| io_error("write", &path, error))
    }

    async fn load(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<SavedConversation>, ConversationError> {
        let path = self.path_of(key);
        blocking(move || match SavedConversation::load(&path) {
            Ok(saved) => Ok(Some(saved)),
            Err(LoadContextError::Read { source, .. })
                if source.kind() == io::ErrorKind::NotFound =>
            {
                Ok(None)
            }
            Err(error) => Err(error.into()),
        })
        .await
    }

    async fn list(&self, scope: &str) -> Result<Vec<ConversationSummary>, ConversationError> {
        let store = self.clone();
        let scope = scope.to_owned();
        blocking(move || store.list_blocking(&scope)).await
    }

    async fn delete(&self, key: &ConversationKey) -> Result<bool, ConversationError> {
        let path = self.path_of(key);
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(io_error("delete", &path, error)),
        })
        .await
    }
}

/// Conversations kept in memory: for tests, and for applications that keep one process alive.
/// Cloning shares the same conversations.
#[derive(Clone, Debug, Default)]
pub struct MemoryConversationStore {
    conversations: Arc<Mutex<HashMap<ConversationKey, SavedConversation>>>,
}

impl MemoryConversationStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<ConversationKey, SavedConversation>) -> T) -> T {
        // Every update is one map operation, so a poisoned lock still holds a whole map.
        f(&mut self
            .conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait::async_trait]
impl ConversationStore for MemoryConversationStore {
    async fn save(
        &self,
        key: &ConversationKey,
        conversation: &SavedConversation,
    ) -> Result<(), ConversationError> {
        let conversation = conversation.clone();
        self.with(|map| map.insert(key.clone(), conversation));
        Ok(())
    }

    async fn load(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<SavedConversation>, ConversationError> {
        Ok(self.with(|map| map.get(key).cloned()))
    }

    async fn list(&self, scope: &str) -> Result<Vec<ConversationSummary>, ConversationError> {
        check_name("scope", scope)?;
        let mut summaries: Vec<_> = self.with(|map| {
            map.iter()
                .filter(|(key, _)| key.scope == scope)
                .map(|(key, saved)| ConversationSummary::of(key.id.clone(), saved))
                .collect()
        });
        sort_summaries(&mut summaries);
        Ok(summaries)
    }

    async fn delete(&self, key: &ConversationKey) -> Result<bool, ConversationError> {
        Ok(self.with(|map| map.remove(key).is_some()))
    }
}

#[async_trait::async_trait]
impl<T: ConversationStore + ?Sized> ConversationStore for Arc<T> {
    async fn save(
        &self,
        key: &ConversationKey,
        conversation: &SavedConversation,
    ) -> Result<(), ConversationError> {
        (**self).save(key, conversation).await
    }

    async fn load(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<SavedConversation>, ConversationError> {
        (**self).load(key).await
    }

    async fn list(&self, scope: &str) -> Result<Vec<ConversationSummary>, ConversationError> {
        (**self).list(scope).await
    }

    async fn delete(&self, key: &ConversationKey) -> Result<bool, ConversationError> {
        (**self).delete(key).await
    }
}

fn io_error(action: &'static str, path: &Path, error: io::Error) -> ConversationError {
    ConversationError::Io {
        action,
        path: path.to_owned(),
        error,
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ConversationError> + Send + 'static,
) -> Result<T, ConversationError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|error| {
            Err(ConversationError::Io {
                action: "run",
                path: PathBuf::new(),
                error: io::Error::other(format!("the conversation task failed: {error}")),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_the_same_way_everywhere() {
        for good in ["alice", "a.b-c_D9", &"x".repeat(128)] {
            check_name("id", good).unwrap();
        }
        for bad in ["", ".hidden", "../etc", "a/b", "a b", "é", &"x".repeat(129)] {
            assert_eq!(
                check_name("id", bad).unwrap_err().to_string(),
                format!(
                    "invalid conversation id `{bad}`: use 1 to 128 letters, digits, `-`, `_` \
                     or `.`, not starting with `.`"
                ),
            );
        }
        assert_eq!(
            check_name("scope", "a/b").unwrap_err().to_string(),
            "invalid conversation scope `a/b`: use 1 to 128 letters, digits, `-`, `_` or `.`, \
             not starting with `.`"
        );
    }
}
