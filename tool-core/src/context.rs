//! [`ToolContext`]: the live agent state tools can read, the [`Conversation`] and its saved file format.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, OnceLock, PoisonError, RwLock},
};

use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall};

/// The default limit of `read_file`: 1 MiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 1024 * 1024;

/// Live agent state shared with tools: the system prompt, the conversation so far, and where
/// the file tools may read and write.
///
/// The file tools work in [`root_dir`](Self::root_dir): the directory chosen with
/// [`ToolContextOptions::root_dir`], or else a fresh, empty scratch directory that the context
/// makes when a file tool first needs it and removes when its last clone is dropped. A context
/// never gives the file tools the process's working directory unless it was chosen.
///
/// Cloning is cheap and every clone sees the same state, so a tool holding a `ToolContext`
/// reads the agent's current values (after `clear_context()` or `set_system_prompt()` it returns
/// the new ones). Tools are testable with a context of their own, no agent needed:
///
/// ```
/// use tool_core::ToolContext;
///
/// let context = ToolContext::new("You are terse.", "session.json");
/// let seen_by_tool = context.clone();
/// context.set_system_prompt("You are verbose.");
/// assert_eq!(seen_by_tool.system_prompt(), "You are verbose.");
/// ```
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<Inner>,
}

struct Inner {
    session: RwLock<Conversation>,
    file_path: RwLock<PathBuf>,
    root: Root,
    max_read_bytes: u64,
}

/// Where the file tools of a context work.
enum Root {
    /// The directory the application chose.
    Chosen(PathBuf),
    /// A scratch directory, made on first use and removed with the context; `None` when it
    /// could not be made.
    Scratch(OnceLock<(PathBuf, Option<tempfile::TempDir>)>),
}

impl Root {
    fn path(&self) -> &Path {
        match self {
            Self::Chosen(path) => path,
            Self::Scratch(scratch) => &scratch.get_or_init(make_scratch_dir).0,
        }
    }
}

/// A new, empty directory for a context's file tools; when none can be made (logged), a path
/// that does not exist, so the file tools answer that their directory is not accessible.
fn make_scratch_dir() -> (PathBuf, Option<tempfile::TempDir>) {
    match tempfile::Builder::new()
        .prefix("tool-core-files-")
        .tempdir()
    {
        Ok(dir) => (dir.path().to_path_buf(), Some(dir)),
        Err(error) => {
            tracing::error!(%error, "cannot create a scratch directory for the file tools");
            (
                std::env::temp_dir().join("tool-core-files-unavailable"),
                None,
            )
        }
    }
}

/// Settings of a [`ToolContext`]; `Default` gives the file tools a scratch directory of their
/// own (see [`root_dir`](Self::root_dir)), `session_context.json` as the session file and a
/// 1 MiB read limit.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolContextOptions {
    /// The initial system prompt.
    pub system_prompt: String,
    /// Where `save_session_context` writes (relative paths are taken from the current
    /// directory).
    pub session_context_file_path: PathBuf,
    /// The directory the file tools are confined to. `None` (the default): a fresh, empty
    /// scratch directory, made when a file tool first needs it and removed with the context,
    /// never the working directory.
    pub root_dir: Option<PathBuf>,
    /// The largest file `read_file` reads.
    pub max_read_bytes: u64,
}

impl Default for ToolContextOptions {
    fn default() -> Self {
        Self {
            system_prompt: String::new(),
            session_context_file_path: PathBuf::from("session_context.json"),
            root_dir: None,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
        }
    }
}

impl ToolContextOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the initial system prompt.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// Sets the session context file.
    #[must_use]
    pub fn session_context_file_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.session_context_file_path = path.into();
        self
    }

    /// Confines the file tools to this directory (relative paths are taken from the current
    /// directory). The directory itself may be reached through symbolic links; below it, the
    /// file tools follow none.
    #[must_use]
    pub fn root_dir(mut self, root: impl Into<PathBuf>) -> Self {
        self.root_dir = Some(root.into());
        self
    }

    /// Sets the largest file `read_file` reads.
    #[must_use]
    pub fn max_read_bytes(mut self, limit: u64) -> Self {
        self.max_read_bytes = limit;
        self
    }
}

impl Default for ToolContext {
    fn default() -> Self {
        Self::with_options(ToolContextOptions::default())
    }
}

impl std::fmt::Debug for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Chosen(path) => path.fmt(f),
            Self::Scratch(scratch) => match scratch.get() {
                Some((path, _)) => path.fmt(f),
                None => f.write_str("<scratch directory, made on first use>"),
            },
        }
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field(
                "session_context_file_path",
                &self.session_context_file_path(),
            )
            .field("root_dir", &self.inner.root)
            .field("max_read_bytes", &self.inner.max_read_bytes)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context with this system prompt and session file; the file tools work in a scratch
    /// directory of the context's own (see [`ToolContextOptions::root_dir`]).
    pub fn new(
        system_prompt: impl Into<String>,
        session_context_file_path: impl Into<PathBuf>,
    ) -> Self {
        Self::with_options(
            ToolContextOptions::default()
                .system_prompt(system_prompt)
                .session_context_file_path(session_context_file_path),
        )
    }

    /// A context with the given options.
    pub fn with_options(options: ToolContextOptions) -> Self {
        let root = match options.root_dir {
            Some(path) => Root::Chosen(path),
            None => Root::Scratch(OnceLock::new()),
        };
        Self {
            inner: Arc::new(Inner {
                session: RwLock::new(Conversation {
                    system_prompt: options.system_prompt,
                    messages: Vec::new(),
                    notes: Vec::new(),
                    pending_calls: Vec::new(),
                    loaded_tools: Vec::new(),
                }),
                file_path: RwLock::new(options.session_context_file_path),
                root,
                max_read_bytes: options.max_read_bytes,
            }),
        }
    }

    /// The current system prompt.
    pub fn system_prompt(&self) -> String {
        self.read(|session| session.system_prompt.clone())
    }

    /// The conversation so far: system prompt, messages (tool calls and results included) and
    /// notes.
    pub fn session_context(&self) -> Conversation {
        self.read(Clone::clone)
    }

    /// The file `save_session_context` writes to.
    pub fn session_context_file_path(&self) -> PathBuf {
        self.inner
            .file_path
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The directory the file tools are confined to: the one chosen with
    /// [`ToolContextOptions::root_dir`], or else the context's scratch directory (made by the
    /// first call of this method).
    pub fn root_dir(&self) -> &Path {
        self.inner.root.path()
    }

    /// The largest file `read_file` reads.
    pub fn max_read_bytes(&self) -> u64 {
        self.inner.max_read_bytes
    }

    /// The number of messages so far.
    pub fn message_count(&self) -> usize {
        self.read(|session| session.messages.len())
    }

    /// Replaces the system prompt.
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        let prompt = prompt.into();
        self.write(|session| session.system_prompt = prompt);
    }

    /// Changes where `save_session_context` writes.
    pub fn set_session_context_file_path(&self, path: impl Into<PathBuf>) {
        *self
            .inner
            .file_path
            .write()
            .unwrap_or_else(PoisonError::into_inner) = path.into();
    }

    /// Appends a message to the conversation.
    pub fn push_message(&self, message: Message) {
        self.write(|session| session.messages.push(message));
    }

    /// Appends messages to the conversation.
    pub fn extend_messages(&self, messages: impl IntoIterator<Item = Message>) {
        self.write(|session| session.messages.extend(messages));
    }

    /// Keeps only the first `len` messages (used to roll back a turn).
    pub fn truncate_messages(&self, len: usize) {
        self.write(|session| session.messages.truncate(len));
    }

    /// Adds a note to the conversation.
    pub fn add_note(&self, note: impl Into<String>) {
        let note = note.into();
        self.write(|session| session.notes.push(note));
    }

    /// Forgets the messages, notes, pending approvals and loaded tools; the system prompt
    /// stays.
    pub fn clear(&self) {
        self.write(|session| {
            session.messages.clear();
            session.notes.clear();
            session.pending_calls.clear();
            session.loaded_tools.clear();
        });
    }

    /// The deferred tools loaded in this conversation (see [`Conversation::loaded_tools`]), in
    /// the order they were loaded.
    pub fn loaded_tools(&self) -> Vec<String> {
        self.read(|session| session.loaded_tools.clone())
    }

    /// Loads a deferred tool into the conversation, after those already loaded; returns
    /// whether it was not loaded yet.
    pub(crate) fn load_tool(&self, name: &str) -> bool {
        let mut new = false;
        self.write(|session| {
            new = !session.loaded_tools.iter().any(|loaded| loaded == name);
            if new {
                session.loaded_tools.push(name.to_owned());
            }
        });
        new
    }

    /// The calls waiting for approvals (with the results of the others), in call order.
    pub fn pending_calls(&self) -> Vec<PendingCall> {
        self.read(|session| session.pending_calls.clone())
    }

    /// Replaces the calls waiting for approvals.
    pub fn set_pending_calls(&self, calls: Vec<PendingCall>) {
        self.write(|session| session.pending_calls = calls);
    }

    /// Replaces the whole conversation (used to resume a saved one).
    pub fn replace(&self, context: Conversation) {
        self.write(|session| *session = context);
    }

    fn read<T>(&self, f: impl FnOnce(&Conversation) -> T) -> T {
        f(&self
            .inner
            .session
            .read()
            .unwrap_or_else(PoisonError::into_inner))
    }

    fn write(&self, f: impl FnOnce(&mut Conversation)) {
        f(&mut self
            .inner
            .session
            .write()
            .unwrap_or_else(PoisonError::into_inner));
    }
}

/// The conversation so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// The system prompt.
    pub system_prompt: String,
    /// The messages, tool calls and results included, in order.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Free-form notes.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The calls of the last assistant message while some of them wait for the application's
    /// approval, in call order, with the results of those already run. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_calls: Vec<PendingCall>,
    /// The deferred tools a search (or a call by name) loaded, in the order they were loaded:
    /// after the eager tools and `search_tools`, they are offered in every request of the
    /// conversation, so a resumed conversation (or one taken over by another model) offers
    /// what the model found. Left out of the saved document when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_tools: Vec<String>,
}

/// A call of the last assistant message, kept while the turn waits for approvals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingCall {
    /// The call.
    pub call: ToolCall,
    /// Whether it waits for the application's decision.
    #[serde(default)]
    pub needs_approval: bool,
    /// Its result, for a call that did not need approval and already ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Message>,
}

/// The name of the format written by `save_session_context`.
pub const CONVERSATION_FILE_FORMAT: &str = "tool-core/session-context";

/// A saved conversation, as `save_session_context` writes it: pretty-printed JSON that a
/// person can read and an agent can load back. The result of a failed tool call carries
/// `"is_error": true`; the key is left out otherwise, so files written before it existed load
/// unchanged. The deferred tools a search loaded are listed in `"loaded_tools"` (left out when
/// there are none).
///
/// ```json
/// {
///   "format": "tool-core/session-context",
///   "version": 1,
///   "reason": "user asked to save",
///   "saved_at": "2026-11-22T10:00:00Z",
///   "system_prompt": "You are terse.",
///   "messages": [
///     { "role": "user", "content": "What is 2 + 3?" },
///     { "role": "assistant", "content": "", "tool_calls": [
///       { "id": "call_1", "name": "add", "arguments": "{\"a\":2,\"b\":3}" } ] },
///     { "role": "tool", "tool_call_id": "call_1", "name": "add", "content": "5" },
///     { "role": "assistant", "content": "5" }
///   ],
///   "notes": []
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedConversation {
    /// Always [`CONVERSATION_FILE_FORMAT`].
    pub format: String,
    /// The format version (1).
    pub version: u32,
    /// Why the context was saved.
    pub reason: String,
    /// When, in RFC 3339 (UTC).
    pub saved_at: String,
    /// The context itself.
    #[serde(flatten)]
    pub context: Conversation,
}

impl SavedConversation {
    /// Wraps a context with a reason and the current time.
    pub fn new(reason: impl Into<String>, context: Conversation) -> Self {
        let saved_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Self {
            format: CONVERSATION_FILE_FORMAT.to_owned(),
            version: 1,
            reason: reason.into(),
            saved_at,
            context,
        }
    }

    /// Reads a saved context from a file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, LoadContextError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| LoadContextError::Read {
            path: path.to_owned(),
            source,
        })?;
        let saved: Self =
            serde_json::from_str(&text).map_err(|source| LoadContextError::Parse {
                path: path.to_owned(),
                source,
            })?;
        if saved.format != CONVERSATION_FILE_FORMAT {
            return Err(LoadContextError::Format {
                path: path.to_owned(),
                found: saved.format,
            });
        }
        Ok(saved)
    }
}

/// A session context file that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadContextError {
    /// The file could not be read.
    #[error("cannot read session context file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON of the expected shape.
    #[error("session context file {} is not valid", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error, with line and column.
        source: serde_json::Error,
    },
    /// The file is JSON of another format.
    #[error("{} is not a session context file (format `{found}`)", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// The `format` field found.
        found: String,
    },
}
