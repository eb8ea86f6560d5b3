//! Users and their chats, and how they are kept under the data folder.
//!
//! ```text
//! DATA/cookie.key                      the key that signs user cookies (see `identity`)
//! DATA/preferences.db                  every user's tool switches (SQLite, by default; or the
//!                                      database `--store` names, or with `--store files`
//!                                      DATA/users/USER/preferences.json per user)
//! DATA/users/USER/                     one user; USER is a hash of their cookie's token
//! DATA/users/USER/chats/CHAT.json      one chat: title, its own switches, its conversation
//!                                      (tool calls waiting for approval included)
//! DATA/users/USER/sessions/CHAT.json   where the chat's model saves it with `save_session_context`
//! DATA/users/USER/scratch/             the only folder this user's file tools see
//! ```
//!
//! Every folder is `0700` and every file `0600` (see `storage`). Each user has a registry of
//! their own, whose file tools (and the configured tools that run them) are confined to the
//! user's scratch folder. The server keeps at most `--max-users` users and `--max-chats` chats
//! a user.
//!
//! The rule for the switches: a new chat starts from the user's preferences; flipping a switch
//! in a chat changes that chat at once and is saved as the user's preference, so the next new
//! chat starts that way; chats that already exist keep their own switches.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};
use tool_core::{
    Agent, AgentOptions, ChatModel, ChatSession, FilePreferenceStore, PreferenceStore, ToolContext,
    ToolContextOptions, ToolRegistry, agent::ApprovalPolicy, config::ToolConfig,
    context::SavedConversation, store::SqlStore,
};

use crate::{identity::Identity, storage, tools};

/// The `format` field of a chat file.
const CHAT_FILE_FORMAT: &str = "tool-core/web-chat";

/// The system prompt of every chat.
pub(crate) const SYSTEM_PROMPT: &str = "You are a helpful assistant in a web chat. You can read \
     and write files in a scratch folder, look up sample weather, roll dice, tell the time and \
     count words. Use a tool when it helps.";

/// Something for `read_file` to find in a new user's scratch folder.
const NOTES: &str = "Buy milk. Call Ada about the tool registry.\n";

/// What every chat shares: the model, the tools' configuration and where things are kept.
pub(crate) struct Shared {
    pub(crate) model: Arc<dyn ChatModel>,
    /// The tools of `--tools-config`, registered for each user.
    pub(crate) config: Option<ToolConfig>,
    /// Whether the model is the offline test model.
    pub(crate) offline: bool,
    pub(crate) data: PathBuf,
    /// Where users' tool switches are kept.
    pub(crate) preferences: Preferences,
    /// Signs and checks the users' cookies.
    pub(crate) identity: Identity,
    pub(crate) limits: Limits,
}

/// How many users the server keeps, and chats each.
pub(crate) struct Limits {
    pub(crate) users: usize,
    pub(crate) chats: usize,
}

/// Why a user or a chat was not made.
pub(crate) enum Refusal {
    /// A limit is reached; the message says which.
    Limit(String),
    /// The folders or the file could not be written.
    Failed(String),
}

/// Where users' tool switches are kept: one database for all (each user a scope of its own),
/// or a JSON file per user.
pub(crate) enum Preferences {
    /// A database shared by every user.
    Database(SqlStore),
    /// `DATA/users/USER/preferences.json`.
    Files,
}

impl Preferences {
    /// The preference store of the user whose folder is `dir`.
    fn for_user(&self, id: &str, dir: &Path) -> Arc<dyn PreferenceStore> {
        match self {
            Self::Database(store) => Arc::new(store.preferences_for(id)),
            Self::Files => Arc::new(FilePreferenceStore::new(dir.join("preferences.json"))),
        }
    }
}

/// Every user the server knows, by id.
pub(crate) struct Users {
    shared: Arc<Shared>,
    users: Mutex<HashMap<String, Arc<User>>>,
}

/// One user: their tools, their preference store and their chats, oldest first.
pub(crate) struct User {
    store: Arc<dyn PreferenceStore>,
    /// The user's tools, the file tools confined to `scratch`.
    registry: Arc<ToolRegistry>,
    scratch: PathBuf,
    chats: Mutex<Vec<Arc<Chat>>>,
    dir: PathBuf,
    // New chats are made one at a time, so two at once cannot pass the limit together.
    creating: tokio::sync::Mutex<()>,
}

/// One chat: its own switches (a [`ChatSession`] over the user's registry) and its own
/// conversation (an [`Agent`] whose context nobody else shares).
pub(crate) struct Chat {
    pub(crate) id: String,
    title: Mutex<String>,
    /// Milliseconds since the Unix epoch.
    created_at: u64,
    pub(crate) session: ChatSession,
    pub(crate) agent: Agent,
    file: PathBuf,
    /// How each tool call went, in the order the results came (see [`ResultKind`]).
    kinds: Mutex<Vec<ResultKind>>,
    // Saves of one chat run one after another, so the file ends with the last state.
    saving: tokio::sync::Mutex<()>,
}

/// How a tool call went (`success`, `error`, `denied`, ...), which the saved conversation does
/// not say: its tool messages only carry `is_error`, so a denied call would look like any
/// failed one after a reload.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct ResultKind {
    /// The call's id.
    pub(crate) id: String,
    pub(crate) kind: String,
}

/// A chat as its file holds it.
#[derive(Serialize, Deserialize)]
struct ChatFile {
    format: String,
    version: u32,
    id: String,
    title: String,
    /// Milliseconds since the Unix epoch.
    created_at: u64,
    /// The chat's own switches, tool name to on/off.
    toggles: HashMap<String, bool>,
    /// The conversation, in the format `save_session_context` writes.
    session: SavedConversation,
    /// How each tool call went, in the order the results came; missing in older files.
    #[serde(default)]
    result_kinds: Vec<ResultKind>,
}

/// A chat as the sidebar lists it.
#[derive(Serialize)]
pub(crate) struct ChatSummary {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) created_at: u64,
}

impl Users {
    /// Loads every user and chat saved under the data folder; chats that cannot be read, and
    /// user folders that are not this server's, are reported and left out. Returns the users and
    /// the number of chats restored.
    pub(crate) async fn restore(shared: Arc<Shared>) -> (Self, usize) {
        let users = Self {
            shared,
            users: Mutex::new(HashMap::new()),
        };
        let mut restored = 0;
        let dir = users.shared.data.join("users");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return (users, 0);
        };
        for entry in entries.flatten() {
            let Some(id) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !is_id(&id) {
                continue;
            }
            match User::open(&users.shared, &id) {
                Ok(user) => {
                    restored += user.restore_chats(&users.shared).await;
                    users
                        .users
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(id, Arc::new(user));
                }
                Err(error) => eprintln!("user {id} not restored: {error}"),
            }
        }
        (users, restored)
    }

    /// What every chat shares.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The user with this id, if they have made anything yet.
    pub(crate) fn find(&self, id: &str) -> Option<Arc<User>> {
        let users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        users.get(id).cloned()
    }

    /// The user with this id, made (with their folders) when new, unless the server has as
    /// many users as it allows.
    pub(crate) fn find_or_create(&self, id: &str) -> Result<Arc<User>, Refusal> {
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(user) = users.get(id) {
            return Ok(user.clone());
        }
        if users.len() >= self.shared.limits.users {
            return Err(Refusal::Limit(format!(
                "this server has {} users, the most it allows (--max-users)",
                users.len()
            )));
        }
        let user = Arc::new(User::open(&self.shared, id).map_err(Refusal::Failed)?);
        // Something for `read_file` to find; a failure only means there is nothing to read.
        let _ = storage::create_private_file(&user.scratch.join("notes.txt"), NOTES.as_bytes());
        users.insert(id.to_owned(), user.clone());
        Ok(user)
    }
}

impl User {
    /// The user with this id and their folders under the data folder, made private (and made,
    /// when missing); their chats are not loaded yet.
    fn open(shared: &Shared, id: &str) -> Result<Self, String> {
        let dir = shared.data.join("users").join(id);
        let scratch = dir.join("scratch");
        for folder in [&dir, &dir.join("chats"), &dir.join("sessions"), &scratch] {
            storage::private_folder(folder)
                .map_err(|error| format!("cannot use {}: {error}", folder.display()))?;
        }
        // The configuration's bad entries were reported once, at startup; each user's registry
        // skips them quietly.
        let (registry, _, _) =
            tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
                tools::registry(&scratch, shared.config.as_ref())
            });
        Ok(Self {
            store: shared.preferences.for_user(id, &dir),
            registry: Arc::new(registry),
            scratch,
            chats: Mutex::new(Vec::new()),
            dir,
            creating: tokio::sync::Mutex::new(()),
        })
    }

    /// The user's chats, newest first.
    pub(crate) fn summaries(&self) -> Vec<ChatSummary> {
        let chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
        chats.iter().rev().map(|chat| chat.summary()).collect()
    }

    /// The chat with this id.
    pub(crate) fn chat(&self, id: &str) -> Option<Arc<Chat>> {
        let chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
        chats.iter().find(|chat| chat.id == id).cloned()
    }

    /// A new chat whose switches start from the user's preferences, unless the user has as
    /// many chats as the server allows. When the preferences cannot be read the chat starts
    /// from the tools' defaults, and the reason is returned beside it.
    pub(crate) async fn new_chat(
        &self,
        shared: &Shared,
    ) -> Result<(Arc<Chat>, Option<String>), Refusal> {
        let _creating = self.creating.lock().await;
        let count = self
            .chats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        if count >= shared.limits.chats {
            return Err(Refusal::Limit(format!(
                "you have {count} chats, the most this server allows (--max-chats)"
            )));
        }
        let (session, warning) =
            match ChatSession::open(self.registry.clone(), self.store.clone()).await {
                Ok(session) => (session, None),
                // A session can only carry a store that loaded, so this chat's switches are
                // its own and are not saved as preferences; the page says so.
                Err(error) => (
                    ChatSession::new(self.registry.clone()),
                    Some(format!(
                        "your tool preferences could not be read ({error}); this chat starts \
                         from the defaults and its switches are not remembered for new chats"
                    )),
                ),
            };
        let id = new_id();
        // Creation times order the sidebar, so two chats made in the same millisecond still
        // get distinct ones.
        let created_at = {
            let chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
            let latest = chats.iter().map(|chat| chat.created_at).max();
            latest.map_or(now_ms(), |latest| now_ms().max(latest + 1))
        };
        let chat = Arc::new(Chat::new(
            shared,
            self,
            id.clone(),
            "New chat".to_owned(),
            created_at,
            session,
            self.dir.join("chats").join(format!("{id}.json")),
        ));
        chat.save()
            .await
            .map_err(|error| Refusal::Failed(format!("the chat could not be saved: {error}")))?;
        self.chats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(chat.clone());
        Ok((chat, warning))
    }

    /// Loads the user's saved chats; returns how many.
    async fn restore_chats(&self, shared: &Shared) -> usize {
        let Ok(entries) = std::fs::read_dir(self.dir.join("chats")) else {
            return 0;
        };
        let mut chats = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|extension| extension != "json") {
                continue;
            }
            match self.load_chat(shared, &path).await {
                Ok(chat) => chats.push(Arc::new(chat)),
                Err(error) => eprintln!("chat {} not restored: {error}", path.display()),
            }
        }
        chats.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let count = chats.len();
        self.chats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(chats);
        count
    }

    async fn load_chat(&self, shared: &Shared, path: &Path) -> Result<Chat, String> {
        let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
        let file: ChatFile = serde_json::from_str(&text).map_err(|error| error.to_string())?;
        if file.format != CHAT_FILE_FORMAT || !is_id(&file.id) {
            return Err(format!("not a {CHAT_FILE_FORMAT} file"));
        }
        // The store stays attached so a switch flipped in a restored chat is still saved as the
        // user's preference; the chat's own switches replace what the store loaded.
        let session = ChatSession::open(self.registry.clone(), self.store.clone())
            .await
            .unwrap_or_else(|_| ChatSession::new(self.registry.clone()));
        session.toggles().replace_all(file.toggles);
        let chat = Chat::new(
            shared,
            self,
            file.id,
            file.title,
            file.created_at,
            session,
            path.to_owned(),
        );
        chat.agent.context().replace(file.session.context);
        *chat.kinds.lock().unwrap_or_else(PoisonError::into_inner) = file.result_kinds;
        Ok(chat)
    }
}

impl Chat {
    fn new(
        shared: &Shared,
        user: &User,
        id: String,
        title: String,
        created_at: u64,
        session: ChatSession,
        file: PathBuf,
    ) -> Self {
        // Each chat's conversation lives in its own context, whose root folder is the user's
        // scratch folder like the user's file tools; `save_session_context` writes the
        // conversation of the chat that calls it to that chat's own session file.
        let context = ToolContext::with_options(
            ToolContextOptions::new()
                .system_prompt(SYSTEM_PROMPT)
                .root_dir(&user.scratch)
                .session_context_file_path(session_file(&file, &id)),
        );
        let options = AgentOptions::new()
            .context(context)
            .registry(user.registry.clone())
            .toggles(session.toggles().clone())
            // A tool that changes or destroys something (`write_file`, and any tool whose hints
            // say `destructive`, such as a configured alias of it) waits for the user's yes, as
            // does any tool whose metadata asks for approval; what a tool does decides, not its
            // name.
            .approval(ApprovalPolicy::new().destructive_tools(true))
            // The test model calls `read_file` and `write_file` on the same path; one at a time
            // keeps what the page shows the same from run to run.
            .sequential_tools(shared.offline);
        Self {
            agent: Agent::with_model(shared.model.clone(), options),
            id,
            title: Mutex::new(title),
            created_at,
            session,
            file,
            kinds: Mutex::new(Vec::new()),
            saving: tokio::sync::Mutex::new(()),
        }
    }

    /// Notes how the call `id` went, for the page to show after a reload.
    pub(crate) fn record_kind(&self, id: &str, kind: &str) {
        self.kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(ResultKind {
                id: id.to_owned(),
                kind: kind.to_owned(),
            });
    }

    /// How each tool call went, in the order the results came.
    pub(crate) fn kinds(&self) -> Vec<ResultKind> {
        self.kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The chat as the sidebar lists it.
    pub(crate) fn summary(&self) -> ChatSummary {
        ChatSummary {
            id: self.id.clone(),
            title: self.title(),
            created_at: self.created_at,
        }
    }

    /// The chat's title: the start of its first message.
    pub(crate) fn title(&self) -> String {
        self.title
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Names the chat after its first message.
    pub(crate) fn name_after(&self, message: &str) {
        let mut title = self.title.lock().unwrap_or_else(PoisonError::into_inner);
        if self.agent.messages().len() <= 1 && *title == "New chat" {
            let line = message.lines().next().unwrap_or_default().trim();
            let mut short: String = line.chars().take(40).collect();
            if line.chars().count() > 40 {
                short.push('…');
            }
            if !short.is_empty() {
                *title = short;
            }
        }
    }

    /// Writes the chat's title, switches and conversation to its file.
    pub(crate) async fn save(&self) -> std::io::Result<()> {
        let _saving = self.saving.lock().await;
        let file = ChatFile {
            format: CHAT_FILE_FORMAT.to_owned(),
            version: 1,
            id: self.id.clone(),
            title: self.title(),
            created_at: self.created_at,
            toggles: self.session.toggles().overrides(),
            session: SavedConversation::new("web chat", self.agent.conversation()),
            result_kinds: self.kinds(),
        };
        let json = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
        storage::write_private_atomically(&self.file, &json).await
    }
}

/// How the call `id` went, for a tool message that says `is_error`: the first of `kinds`
/// recorded for that id, which is taken out, or, for a result saved before kinds were, what
/// `is_error` says. Ids are unique within a turn but may come again in a later one (the test
/// model numbers its calls afresh after a restart); an earlier turn's kinds are recorded
/// before a later one's, so taking the first for messages read in order matches each to its
/// own.
pub(crate) fn kind_for(kinds: &mut Vec<ResultKind>, id: &str, is_error: bool) -> String {
    match kinds.iter().position(|kind| kind.id == id) {
        Some(at) => kinds.remove(at).kind,
        None if is_error => "error".to_owned(),
        None => "success".to_owned(),
    }
}

/// Where the chat whose file is `chat_file` (`DATA/users/USER/chats/CHAT.json`) has its session
/// saved by `save_session_context`: `DATA/users/USER/sessions/CHAT.json`, outside the chats
/// folder, whose every file is read back as a chat.
fn session_file(chat_file: &Path, id: &str) -> PathBuf {
    let user_dir = chat_file
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| Path::new("."));
    user_dir.join("sessions").join(format!("{id}.json"))
}

/// Whether `id` is an id this server hands out (and so a safe file name).
pub(crate) fn is_id(id: &str) -> bool {
    (8..=64).contains(&id.len()) && id.bytes().all(|byte| byte.is_ascii_alphanumeric())
}

/// A new random id of 32 hex digits (a chat's; it is no secret, chats are found through their
/// user).
pub(crate) fn new_id() -> String {
    format!(
        "{:016x}{:016x}",
        crate::tools::random_u64(),
        crate::tools::random_u64()
    )
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}
