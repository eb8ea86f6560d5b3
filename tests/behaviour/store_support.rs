//! Support for the store tests: one real PostgreSQL server per test run, and a factory that
//! opens each kind of store (memory, file, SQLite, PostgreSQL) the same way, so one suite runs
//! on all four.

use std::{
    collections::HashMap,
    io::Write,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use sqlx::Connection;
use tool_core::{
    session::{MemoryPreferenceStore, PreferenceStore},
    store::{
        ConversationStore, MemoryConversationStore, open_conversation_store, open_preference_store,
    },
};

/// The kinds of store the suites run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    Memory,
    File,
    Sqlite,
    Postgres,
}

/// A fresh place for one test's stores of one kind.
pub(crate) struct Stores {
    pub(crate) backend: Backend,
    dir: tempfile::TempDir,
    /// The database URL (SQLite, PostgreSQL).
    url: Option<String>,
    /// The PostgreSQL database's name, to drop it.
    database: Option<String>,
    memory_preferences: Mutex<HashMap<String, MemoryPreferenceStore>>,
    memory_conversations: MemoryConversationStore,
}

impl Stores {
    /// A fresh store of `backend`; `None` (after a loud message) only when PostgreSQL is
    /// wanted and cannot be had.
    pub(crate) async fn new(backend: Backend) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let (url, database) = match backend {
            Backend::Memory | Backend::File => (None, None),
            Backend::Sqlite => (
                Some(format!(
                    "sqlite://{}",
                    dir.path().join("db/tools.db").display()
                )),
                None,
            ),
            Backend::Postgres => {
                let server = postgres()?;
                let (url, name) = server.create_database().await;
                (Some(url), Some(name))
            }
        };
        Some(Self {
            backend,
            dir,
            url,
            database,
            memory_preferences: Mutex::default(),
            memory_conversations: MemoryConversationStore::new(),
        })
    }

    /// Whether a second OS process can reach this store.
    pub(crate) fn shared_between_processes(&self) -> bool {
        self.backend != Backend::Memory
    }

    /// The location string of `scope`'s preferences (a file per scope for the file store).
    pub(crate) fn preference_location(&self, scope: &str) -> String {
        match self.backend {
            Backend::Memory => "memory:".to_owned(),
            Backend::File => self
                .dir
                .path()
                .join("prefs")
                .join(format!("{scope}.json"))
                .display()
                .to_string(),
            Backend::Sqlite | Backend::Postgres => self.url.clone().unwrap(),
        }
    }

    /// The location string of the conversations.
    pub(crate) fn conversation_location(&self) -> String {
        match self.backend {
            Backend::Memory => "memory:".to_owned(),
            Backend::File => self.dir.path().join("conversations").display().to_string(),
            Backend::Sqlite | Backend::Postgres => self.url.clone().unwrap(),
        }
    }

    /// The database URL, for SQLite and PostgreSQL.
    pub(crate) fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// Opens `scope`'s preferences anew, as a restarted process would (the memory store
    /// hands out the one store of the scope, which lives as long as this process).
    pub(crate) async fn preferences(&self, scope: &str) -> Arc<dyn PreferenceStore> {
        if self.backend == Backend::Memory {
            let mut stores = self.memory_preferences.lock().unwrap();
            return Arc::new(stores.entry(scope.to_owned()).or_default().clone());
        }
        open_preference_store(&self.preference_location(scope), scope)
            .await
            .unwrap()
    }

    /// Opens the conversations anew, as a restarted process would.
    pub(crate) async fn conversations(&self) -> Arc<dyn ConversationStore> {
        if self.backend == Backend::Memory {
            return Arc::new(self.memory_conversations.clone());
        }
        open_conversation_store(&self.conversation_location())
            .await
            .unwrap()
    }

    /// Makes the store go away under open handles: the file store's directories become plain
    /// files, the SQLite file is overwritten with junk, the PostgreSQL database is dropped
    /// (its connections terminated). Returns false for the memory store, which cannot fail.
    pub(crate) async fn take_away(&self) -> bool {
        match self.backend {
            Backend::Memory => return false,
            Backend::File => {
                for name in ["prefs", "conversations"] {
                    let path = self.dir.path().join(name);
                    if path.exists() {
                        std::fs::remove_dir_all(&path).unwrap();
                    }
                    std::fs::write(&path, "not a directory").unwrap();
                }
            }
            Backend::Sqlite => {
                let db = self.dir.path().join("db");
                for entry in std::fs::read_dir(&db).unwrap() {
                    // Write through the same inode that open connections hold.
                    let mut file = std::fs::OpenOptions::new()
                        .write(true)
                        .truncate(true)
                        .open(entry.unwrap().path())
                        .unwrap();
                    file.write_all(&[0x5a; 8192]).unwrap();
                }
            }
            Backend::Postgres => {
                let name = self.database.as_deref().unwrap();
                let server = postgres().unwrap();
                let mut admin = server.admin().await;
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE \"{name}\" WITH (FORCE)"
                )))
                .execute(&mut admin)
                .await
                .unwrap();
            }
        }
        true
    }
}

/// Runs `store_writer` (the second OS process) with these arguments; panics with its stderr
/// when it fails.
pub(crate) fn spawn_writer(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_store_writer"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a `store_writer` at most two minutes and checks it succeeded.
pub(crate) async fn wait_writer(child: Child) {
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("the second writer process finished in time")
    .unwrap()
    .unwrap();
    assert!(
        output.status.success(),
        "store_writer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The test run's PostgreSQL server, started on first use; `None` (after a loud message, see
/// [`crate::real_parts`]) when PostgreSQL is not installed and cannot be.
pub(crate) fn postgres() -> Option<&'static PgServer> {
    static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();
    let server = SERVER
        // Started on a thread of its own: the caller is inside a test's runtime, and the
        // readiness check runs a runtime of its own.
        .get_or_init(|| {
            std::thread::spawn(PgServer::start)
                .join()
                .unwrap_or_else(|_| Err("starting the server panicked".to_owned()))
        });
    match server {
        Ok(server) => Some(server),
        Err(reason) => {
            crate::real_parts::skip(&format!(
                "\n!!! SKIPPING the PostgreSQL tests: {reason} !!!\n\
                 !!! install Debian's `postgresql` package (initdb, pg_ctl, postgres) !!!\n"
            ));
            None
        }
    }
}

/// A PostgreSQL server in a temporary directory, on a Unix socket there (no TCP port), run as
/// an unprivileged user when we are root.
///
/// A watchdog shell started with the server holds a pipe from this process: when this process
/// ends, however it ends (a failed test included), the pipe closes and the watchdog stops the
/// server and removes its directory. The server lives in a `static`, whose destructor never
/// runs, so this is what stops it; dropping a `PgServer` (the `Drop` guard) stops it at once.
pub(crate) struct PgServer {
    dir: PathBuf,
    watchdog: Mutex<Option<Child>>,
}

const PORT: u16 = 5432;
static DATABASES: AtomicUsize = AtomicUsize::new(0);

impl PgServer {
    fn start() -> Result<Self, String> {
        let bin = postgres_bin()?;
        let root = is_root();
        let dir = tempfile::Builder::new()
            .prefix("tool-core-pg-")
            .tempdir()
            .map_err(|error| format!("cannot make a temporary directory: {error}"))?
            .keep();
        let user = if root {
            Some(unprivileged_user()?)
        } else {
            None
        };
        if let Some((_, uid, gid)) = &user {
            std::os::unix::fs::chown(&dir, Some(*uid), Some(*gid))
                .map_err(|error| format!("cannot hand {} over: {error}", dir.display()))?;
        }
        let as_user = |program: &Path| -> Command {
            match &user {
                Some((name, _, _)) => {
                    let mut command = Command::new("runuser");
                    command.args(["-u", name, "--"]).arg(program);
                    command
                }
                None => Command::new(program),
            }
        };
        let data = dir.join("data");
        let output = as_user(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"])
            .args(["--locale=C"])
            .output()
            .map_err(|error| format!("cannot run initdb: {error}"))?;
        if !output.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        // The watchdog: start the server, wait for our end of the pipe to close, stop it.
        let script = r#"
            "$1/postgres" -D "$2/data" -k "$2" -p "$3" -c listen_addresses= -c fsync=off \
                -c max_connections=300 >"$2/server.log" 2>&1 &
            pid=$!
            read -r _ignored
            kill -INT "$pid" 2>/dev/null
            wait "$pid"
            rm -rf "$2"
        "#;
        let watchdog = as_user(Path::new("/bin/sh"))
            .args(["-c", script, "sh"])
            .arg(&bin)
            .arg(&dir)
            .arg(PORT.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("cannot start postgres: {error}"))?;
        let server = Self {
            dir,
            watchdog: Mutex::new(Some(watchdog)),
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// Waits (at most 60 s) until the server accepts connections.
    fn wait_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        loop {
            let url = self.url("postgres");
            let ready = runtime.block_on(async {
                match sqlx::PgConnection::connect(&url).await {
                    Ok(connection) => connection.close().await.is_ok(),
                    Err(_) => false,
                }
            });
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                return Err(format!("postgres did not start within 60 s: {log}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The URL of database `name`, through the socket, with a password that trust
    /// authentication ignores (so error messages can be checked for it).
    pub(crate) fn url(&self, name: &str) -> String {
        format!(
            "postgres://postgres:pg-secret-pw@localhost/{name}?host={}&port={PORT}",
            self.dir.display()
        )
    }

    /// A connection to the `postgres` database, for administration.
    pub(crate) async fn admin(&self) -> sqlx::PgConnection {
        sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap()
    }

    /// Creates a new, empty database; returns its URL and name.
    pub(crate) async fn create_database(&self) -> (String, String) {
        let name = format!(
            "tools_{}_{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = self.admin().await;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut admin)
            .await
            .unwrap();
        admin.close().await.unwrap();
        (self.url(&name), name)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let Some(mut watchdog) = self.watchdog.lock().unwrap().take() else {
            return;
        };
        // Closing the pipe tells the watchdog to stop the server.
        drop(watchdog.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = watchdog.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = watchdog.kill();
    }
}

/// The directory of PostgreSQL's server binaries, installing Debian's package when it is
/// missing and we are root (once per test run: this runs inside the server's `OnceLock`).
fn postgres_bin() -> Result<PathBuf, String> {
    if let Some(bin) = find_postgres_bin() {
        return Ok(bin);
    }
    if !is_root() {
        return Err(
            "/usr/lib/postgresql/*/bin/initdb is missing and we are not root, so \
                    cannot install it"
                .to_owned(),
        );
    }
    eprintln!("installing Debian's postgresql package for the store tests...");
    let status = Command::new("sh")
        .args([
            "-c",
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
             postgresql >/dev/null",
        ])
        .status()
        .map_err(|error| format!("cannot run apt-get: {error}"))?;
    if !status.success() {
        return Err(format!(
            "/usr/lib/postgresql/*/bin/initdb is missing and `apt-get install postgresql` \
             failed ({status})"
        ));
    }
    find_postgres_bin().ok_or_else(|| {
        "the postgresql package is installed but /usr/lib/postgresql/*/bin/initdb is missing"
            .to_owned()
    })
}

fn find_postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| Some(entry.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("postgres").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

/// The user to run PostgreSQL as: `postgres` (made by Debian's package), else `nobody`.
fn unprivileged_user() -> Result<(String, u32, u32), String> {
    for name in ["postgres", "nobody"] {
        let id = |flag: &str| -> Option<u32> {
            let output = Command::new("id").args([flag, name]).output().ok()?;
            if !output.status.success() {
                return None;
            }
            String::from_utf8_lossy(&output.stdout).trim().parse().ok()
        };
        if let (Some(uid), Some(gid)) = (id("-u"), id("-g")) {
            return Ok((name.to_owned(), uid, gid));
        }
    }
    Err(
        "we are root and there is neither a `postgres` nor a `nobody` user to run \
         PostgreSQL as"
            .to_owned(),
    )
}
