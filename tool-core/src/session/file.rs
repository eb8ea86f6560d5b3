//! [`FilePreferenceStore`]: preferences in a JSON file, safe against crashes, concurrent writers
//! and corruption.

use std::{
    fs::{File, OpenOptions},
    io,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use serde_json::{Map, Value};

use super::store::{PreferenceError, PreferenceStore, Preferences, check_tool_name};
use crate::builtin::write_atomic_blocking;

/// The `format` field of a preferences file.
pub const PREFERENCES_FILE_FORMAT: &str = "tool-core/tool-preferences";

/// Tool preferences in a JSON file at a path the application chooses (one per user, or one per
/// application):
///
/// ```json
/// {
///   "format": "tool-core/tool-preferences",
///   "version": 1,
///   "tools": {
///     "write_file": { "enabled": false }
///   }
/// }
/// ```
///
/// * Writes are atomic: a temporary file in the same directory, flushed to disk, renamed over
///   the file. A crash leaves the old file or the new one, never half of one.
/// * Each change re-reads the file and changes one key, under an advisory lock on a `.lock` file
///   beside it (and a mutex within the process), so sessions and processes writing the same
///   file do not lose each other's changes.
/// * A file that cannot be read or parsed is moved aside as `<name>.corrupt-<timestamp>` with a
///   warning, and loading returns no preferences (the session starts from the defaults).
/// * Fields this version does not know, at the top level or in a tool's entry, are kept when
///   the file is rewritten, so a file written by a newer version loses nothing.
#[derive(Clone, Debug)]
pub struct FilePreferenceStore {
    path: PathBuf,
    lock_path: PathBuf,
    local: Arc<Mutex<()>>,
}

impl FilePreferenceStore {
    /// A store in the file at `path`; nothing is read or created until the first load or save.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".lock");
        let lock_path = path.with_file_name(lock_name);
        Self {
            path,
            lock_path,
            local: Arc::default(),
        }
    }

    /// The preferences file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file beside it (`<name>.lock`).
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    fn load_blocking(&self) -> Result<Preferences, PreferenceError> {
        // Writers replace the file by renaming, so an unlocked read sees a whole file.
        match read_document(&self.path) {
            Ok(document) => Ok(preferences_of(&document)),
            Err(Unusable::Io(error)) => Err(self.io("read", error)),
            Err(Unusable::Corrupt(_)) => {
                // Check again under the lock: a writer may just have replaced it.
                let _lock = match self.lock() {
                    Ok(lock) => lock,
                    Err(error) => {
                        tracing::warn!(
                            path = %self.path.display(),
                            %error,
                            "tool preferences file is unusable and cannot be locked to move it \
                             aside; starting from the defaults"
                        );
                        return Ok(Preferences::new());
                    }
                };
                let document = self.read_or_set_aside()?;
                Ok(preferences_of(&document))
            }
        }
    }

    fn update_blocking(&self, tool: &str, enabled: Option<bool>) -> Result<(), PreferenceError> {
        let _lock = self.lock()?;
        let mut document = self.read_or_set_aside()?;
        if !matches!(document.get("tools"), Some(Value::Object(_))) {
            document.insert("tools".to_owned(), Value::Object(Map::new()));
        }
        let Some(Value::Object(tools)) = document.get_mut("tools") else {
            return Ok(());
        };
        match enabled {
            Some(enabled) => {
                // Keep any other fields of the tool's entry (a newer version's).
                let entry = tools
                    .entry(tool.to_owned())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !entry.is_object() {
                    *entry = Value::Object(Map::new());
                }
                if let Value::Object(entry) = entry {
                    entry.insert("enabled".to_owned(), Value::Bool(enabled));
                }
            }
            None => {
                if tools.remove(tool).is_none() {
                    return Ok(());
                }
            }
        }
        let mut text = serde_json::to_string_pretty(&Value::Object(document))
            .map_err(|error| self.io("write", io::Error::other(error)))?;
        text.push('\n');
        write_atomic_blocking(&self.path, text.as_bytes()).map_err(|error| self.io("write", error))
    }

    /// The current document, or an empty one after moving an unusable file aside. Called with
    /// the lock held.
    fn read_or_set_aside(&self) -> Result<Map<String, Value>, PreferenceError> {
        let reason = match read_document(&self.path) {
            Ok(document) => return Ok(document),
            Err(Unusable::Io(error)) => return Err(self.io("read", error)),
            Err(Unusable::Corrupt(reason)) => reason,
        };
        match set_aside(&self.path) {
            Ok(aside) => tracing::warn!(
                path = %self.path.display(),
                moved_to = %aside.display(),
                %reason,
                "tool preferences file is unusable; moved it aside and starting from the defaults"
            ),
            Err(error) => tracing::warn!(
                path = %self.path.display(),
                %reason,
                %error,
                "tool preferences file is unusable and could not be moved aside; starting from \
                 the defaults"
            ),
        }
        Ok(Map::new())
    }

    /// Takes the in-process mutex and the advisory file lock; both are released on drop.
    fn lock(&self) -> Result<LockGuard<'_>, PreferenceError> {
        let local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(parent) = self.lock_path.parent() {
            if !parent.as_os_str().is_empty() {
                std::fs::create_dir_all(parent).map_err(|error| self.io("lock", error))?;
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.lock_path)
            .map_err(|error| self.io("lock", error))?;
        // The lock file is never renamed or removed, so every writer locks the same file.
        fs4::FileExt::lock(&file).map_err(|error| self.io("lock", error))?;
        Ok(LockGuard {
            _file: file,
            _local: local,
        })
    }

    fn io(&self, action: &'static str, error: io::Error) -> PreferenceError {
        PreferenceError::Io {
            action,
            path: self.path.clone(),
            error,
        }
    }
}

#[async_trait::async_trait]
impl PreferenceStore for FilePreferenceStore {
    async fn load(&self) -> Result<Preferences, PreferenceError> {
        let store = self.clone();
        blocking(move || store.load_blocking()).await
    }

    async fn set(&self, tool: &str, enabled: bool) -> Result<(), PreferenceError> {
        check_tool_name(tool)?;
        let store = self.clone();
        let tool = tool.to_owned();
        blocking(move || store.update_blocking(&tool, Some(enabled))).await
    }

    async fn remove(&self, tool: &str) -> Result<(), PreferenceError> {
        check_tool_name(tool)?;
        let store = self.clone();
        let tool = tool.to_owned();
        blocking(move || store.update_blocking(&tool, None)).await
    }
}

/// Holds the locks; the file lock goes when the file is closed, then the mutex.
struct LockGuard<'a> {
    _file: File,
    _local: std::sync::MutexGuard<'a, ()>,
}

enum Unusable {
    /// The file exists but could not be read for a reason moving it will not fix.
    Io(io::Error),
    /// The file is not a preferences document (or cannot be read at all); the reason.
    Corrupt(String),
}

/// Reads and parses the file; a missing file or one holding only whitespace is an empty
/// document.
fn read_document(path: &Path) -> Result<Map<String, Value>, Unusable> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(new_document()),
        Err(error) if error.kind() == io::ErrorKind::Interrupted => {
            return Err(Unusable::Io(error));
        }
        Err(error) => return Err(Unusable::Corrupt(format!("cannot read it: {error}"))),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(new_document());
    }
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|error| Unusable::Corrupt(format!("not valid JSON: {error}")))?;
    let Value::Object(document) = value else {
        return Err(Unusable::Corrupt("not a JSON object".to_owned()));
    };
    match document.get("tools") {
        None | Some(Value::Object(_)) => Ok(document),
        Some(_) => Err(Unusable::Corrupt(
            "its `tools` field is not an object".to_owned(),
        )),
    }
}

fn new_document() -> Map<String, Value> {
    let mut document = Map::new();
    document.insert(
        "format".to_owned(),
        Value::String(PREFERENCES_FILE_FORMAT.to_owned()),
    );
    document.insert("version".to_owned(), Value::from(1));
    document.insert("tools".to_owned(), Value::Object(Map::new()));
    document
}

/// Reads the preferences of a document: `{"enabled": bool}` entries (or a bare boolean). Other
/// entries are ignored here but kept in the file.
fn preferences_of(document: &Map<String, Value>) -> Preferences {
    let Some(Value::Object(tools)) = document.get("tools") else {
        return Preferences::new();
    };
    tools
        .iter()
        .filter_map(|(name, entry)| {
            let enabled = match entry {
                Value::Bool(enabled) => Some(*enabled),
                Value::Object(entry) => entry.get("enabled").and_then(Value::as_bool),
                _ => None,
            };
            enabled.map(|enabled| (name.clone(), enabled))
        })
        .collect()
}

/// Renames the file to `<name>.corrupt-<timestamp>` (with `-2`, `-3`… if taken) and returns the
/// new path.
fn set_aside(path: &Path) -> io::Result<PathBuf> {
    let format = time::macros::format_description!(
        "[year][month][day]T[hour][minute][second].[subsecond digits:3]Z"
    );
    let stamp = time::OffsetDateTime::now_utc()
        .format(&format)
        .unwrap_or_else(|_| "unknown".to_owned());
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut aside = path.with_file_name(format!("{name}.corrupt-{stamp}"));
    let mut attempt = 1;
    while aside.exists() {
        attempt += 1;
        aside = path.with_file_name(format!("{name}.corrupt-{stamp}-{attempt}"));
    }
    std::fs::rename(path, &aside)?;
    Ok(aside)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, PreferenceError> + Send + 'static,
) -> Result<T, PreferenceError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|error| {
            Err(PreferenceError::Backend(
                format!("the preferences task failed: {error}").into(),
            ))
        })
}
