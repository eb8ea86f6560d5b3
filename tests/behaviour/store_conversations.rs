//! Saved conversations in every kind of store (memory, JSON files, SQLite, PostgreSQL): one
//! suite run on each, the file format round-tripping through the databases, and schema
//! versions.

use std::sync::Arc;

use serde_json::json;
use tool_core::{
    Conversation, ToolContext,
    context::SavedConversation,
    create_default_tool_registry,
    store::{
        ConversationError, ConversationKey, ConversationStore, ConversationSummary,
        FileConversationStore, SCHEMA_VERSION, SqlStore, StoreError,
    },
};
use tool_tests::store_writers::{self, WRITERS};

use crate::store_support::{Backend, Stores, postgres, spawn_writer, wait_writer};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_passes_the_suite() {
    conversation_suite(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_passes_the_suite() {
    conversation_suite(Backend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_passes_the_suite() {
    conversation_suite(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_passes_the_suite() {
    conversation_suite(Backend::Postgres).await;
}

async fn conversation_suite(backend: Backend) {
    let Some(stores) = Stores::new(backend).await else {
        return;
    };
    // First, so that both processes open the fresh database (and create its tables) at once.
    concurrent_writers_in_two_processes_lose_nothing(&stores).await;
    saves_loads_lists_and_deletes(&stores).await;
    survives_a_restart_and_scopes_are_isolated(&stores).await;
    a_store_that_goes_away_fails_with_the_reason(&stores).await;
}

/// A conversation with a tool call and its result, as an agent leaves it.
fn conversation(reason: &str, saved_at: &str) -> SavedConversation {
    let context: Conversation = serde_json::from_value(json!({
        "system_prompt": "You are terse.",
        "messages": [
            { "role": "user", "content": "What is 2 + 3? Ünïcödé, \"quotes\" and a\nnewline." },
            { "role": "assistant", "content": "", "tool_calls": [
                { "id": "call_1", "name": "add", "arguments": "{\"a\":2,\"b\":3}" } ] },
            { "role": "tool", "tool_call_id": "call_1", "name": "add", "content": "5" },
            { "role": "assistant", "content": "5" }
        ],
        "notes": ["the user likes short answers"]
    }))
    .unwrap();
    let mut saved = SavedConversation::new(reason, context);
    saved.saved_at = saved_at.to_owned();
    saved
}

fn key(scope: &str, id: &str) -> ConversationKey {
    ConversationKey::new(scope, id).unwrap()
}

fn summary(id: &str, reason: &str, saved_at: &str, message_count: usize) -> ConversationSummary {
    let mut saved = conversation(reason, saved_at);
    saved.context.messages.truncate(message_count);
    ConversationSummary::of(id, &saved)
}

async fn saves_loads_lists_and_deletes(stores: &Stores) {
    let store = stores.conversations().await;
    let monday = conversation("end of monday", "2030-01-06T18:00:00Z");
    let tuesday = conversation("end of tuesday", "2030-01-07T18:00:00Z");
    assert_eq!(store.load(&key("alice", "monday")).await.unwrap(), None);
    assert!(store.list("alice").await.unwrap().is_empty());

    store.save(&key("alice", "monday"), &monday).await.unwrap();
    store
        .save(&key("alice", "tuesday"), &tuesday)
        .await
        .unwrap();
    assert_eq!(
        store.load(&key("alice", "monday")).await.unwrap().as_ref(),
        Some(&monday)
    );
    assert_eq!(
        store.list("alice").await.unwrap(),
        [
            summary("tuesday", "end of tuesday", "2030-01-07T18:00:00Z", 4),
            summary("monday", "end of monday", "2030-01-06T18:00:00Z", 4),
        ]
    );

    // Saving under an id again replaces the conversation.
    let mut shorter = conversation("retry", "2030-01-08T09:00:00Z");
    shorter.context.messages.truncate(1);
    store.save(&key("alice", "monday"), &shorter).await.unwrap();
    assert_eq!(
        store.load(&key("alice", "monday")).await.unwrap(),
        Some(shorter)
    );
    assert_eq!(
        store.list("alice").await.unwrap()[0],
        summary("monday", "retry", "2030-01-08T09:00:00Z", 1)
    );

    assert!(store.delete(&key("alice", "monday")).await.unwrap());
    assert!(!store.delete(&key("alice", "monday")).await.unwrap());
    assert_eq!(store.load(&key("alice", "monday")).await.unwrap(), None);
    assert_eq!(
        store.list("alice").await.unwrap(),
        [summary(
            "tuesday",
            "end of tuesday",
            "2030-01-07T18:00:00Z",
            4
        )]
    );

    // Names that are not safe everywhere name no conversation, and no scope to list.
    for (scope, id) in [("alice", "../escape"), ("al/ice", "x"), ("alice", "")] {
        let error = ConversationKey::new(scope, id).unwrap_err();
        assert!(
            matches!(error, ConversationError::InvalidName { .. }),
            "{error}"
        );
    }
    let error = store.list("al/ice").await.unwrap_err();
    assert!(
        matches!(error, ConversationError::InvalidName { what: "scope", .. }),
        "{error}"
    );
}

async fn survives_a_restart_and_scopes_are_isolated(stores: &Stores) {
    let bobs = conversation("bob's", "2030-02-01T00:00:00Z");
    stores
        .conversations()
        .await
        .save(&key("bob", "tuesday"), &bobs)
        .await
        .unwrap();

    // Opened again, as the next process would.
    let store = stores.conversations().await;
    assert_eq!(
        store.load(&key("bob", "tuesday")).await.unwrap(),
        Some(bobs)
    );
    assert_eq!(
        store.load(&key("alice", "tuesday")).await.unwrap(),
        Some(conversation("end of tuesday", "2030-01-07T18:00:00Z"))
    );
    assert_eq!(
        store
            .list("bob")
            .await
            .unwrap()
            .iter()
            .map(|summary| summary.id.as_str())
            .collect::<Vec<_>>(),
        ["tuesday"]
    );
    assert!(store.delete(&key("bob", "tuesday")).await.unwrap());
    assert_eq!(
        store.load(&key("alice", "tuesday")).await.unwrap(),
        Some(conversation("end of tuesday", "2030-01-07T18:00:00Z"))
    );
    assert!(store.list("carol").await.unwrap().is_empty());
}

async fn concurrent_writers_in_two_processes_lose_nothing(stores: &Stores) {
    let scope = "writers";
    let half = WRITERS / 2;
    if stores.shared_between_processes() {
        let location = stores.conversation_location();
        let child = spawn_writer(&[
            "conversations",
            &location,
            scope,
            &half.to_string(),
            &half.to_string(),
        ]);
        store_writers::write_conversations(stores.conversations().await, scope, 0..half)
            .await
            .unwrap();
        wait_writer(child).await;
    } else {
        store_writers::write_conversations(stores.conversations().await, scope, 0..WRITERS)
            .await
            .unwrap();
    }

    let store = stores.conversations().await;
    for writer in 0..WRITERS {
        assert_eq!(
            store
                .load(&key(scope, &format!("w{writer}")))
                .await
                .unwrap(),
            Some(store_writers::own_conversation(writer)),
            "{:?}",
            stores.backend
        );
    }
    assert_eq!(
        store.load(&key(scope, "shared")).await.unwrap(),
        Some(store_writers::shared_conversation())
    );
    let listed = store.list(scope).await.unwrap();
    assert_eq!(listed.len(), WRITERS + 1);
    assert_eq!(listed[0].id, "shared");
}

async fn a_store_that_goes_away_fails_with_the_reason(stores: &Stores) {
    let store = stores.conversations().await;
    let saved = conversation("before", "2030-03-01T00:00:00Z");
    store.save(&key("dave", "one"), &saved).await.unwrap();
    if !stores.take_away().await {
        return;
    }
    let error = store.save(&key("dave", "two"), &saved).await.unwrap_err();
    let message = error.to_string();
    eprintln!("{:?}: {message}", stores.backend);
    match stores.backend {
        Backend::File => assert!(
            message.starts_with("cannot write conversation at ")
                && message.contains("two.json")
                && message.contains("Not a directory"),
            "{message}"
        ),
        Backend::Sqlite | Backend::Postgres => {
            let shown = stores.url().unwrap().replace("pg-secret-pw", "***");
            assert!(
                message.starts_with(&format!("cannot save a conversation in {shown}: ")),
                "{message}"
            );
            assert!(!message.contains("pg-secret-pw"), "{message}");
            assert!(matches!(
                error,
                ConversationError::Store(StoreError::Database { .. })
            ));
            let error = store
                .load(&key("dave", "one"))
                .await
                .unwrap_err()
                .to_string();
            assert!(
                error.starts_with(&format!("cannot load a conversation in {shown}: ")),
                "{error}"
            );
        }
        Backend::Memory => unreachable!("the memory store cannot go away"),
    }
}

/// What the agent's `save_session_context` tool writes, moved through a database and back,
/// is the same document and the same file.
async fn round_trip_through(url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("saved.json");
    let context = ToolContext::new("You are terse.", &written);
    context.replace(conversation("unused", "unused").context);
    let registry = create_default_tool_registry(context);
    let mut args = serde_json::Map::new();
    args.insert("reason".to_owned(), json!("end of day"));
    let result = registry.execute("save_session_context", args).await;
    assert!(result.starts_with("Session context saved to"), "{result}");
    let original = SavedConversation::load(&written).unwrap();
    let original_text = std::fs::read_to_string(&written).unwrap();

    // The file store reads the agent's file as it is.
    let files = FileConversationStore::new(dir.path().join("store"));
    let path = files.path_of(&key("alice", "day1"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(&written, &path).unwrap();
    let from_file = files.load(&key("alice", "day1")).await.unwrap().unwrap();
    assert_eq!(from_file, original);

    // File to database and back.
    let database = SqlStore::open(url).await.unwrap();
    database
        .save(&key("alice", "day1"), &from_file)
        .await
        .unwrap();
    let from_database = database.load(&key("alice", "day1")).await.unwrap().unwrap();
    assert_eq!(from_database, original);
    files
        .save(&key("alice", "day2"), &from_database)
        .await
        .unwrap();
    let day2 = files.path_of(&key("alice", "day2"));
    assert_eq!(std::fs::read_to_string(&day2).unwrap(), original_text);
    assert_eq!(SavedConversation::load(&day2).unwrap(), original);

    // Database to file and back.
    let again = files.load(&key("alice", "day2")).await.unwrap().unwrap();
    database.save(&key("alice", "day2"), &again).await.unwrap();
    assert_eq!(
        database.load(&key("alice", "day2")).await.unwrap().unwrap(),
        original
    );
    assert_eq!(
        database.list("alice").await.unwrap(),
        files.list("alice").await.unwrap()
    );
    database.close().await;
}

#[tokio::test]
async fn the_file_format_round_trips_through_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    round_trip_through(&format!("sqlite://{}", dir.path().join("c.db").display())).await;
}

#[tokio::test]
async fn the_file_format_round_trips_through_postgres() {
    let Some(server) = postgres() else {
        return;
    };
    round_trip_through(&server.create_database().await.0).await;
}

/// A database whose schema is newer than this crate's is refused and left as it is.
async fn newer_schema_is_refused(url: &str, bump: impl AsyncFnOnce()) {
    let store = SqlStore::open(url).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    let saved = conversation("kept", "2030-04-01T00:00:00Z");
    store.save(&key("erin", "kept"), &saved).await.unwrap();
    store.close().await;
    // Opening again runs no migration and keeps everything.
    let store = SqlStore::open(url).await.unwrap();
    assert_eq!(
        store.load(&key("erin", "kept")).await.unwrap().as_ref(),
        Some(&saved)
    );
    store.close().await;

    bump().await;
    let error = SqlStore::open(url).await.unwrap_err();
    let shown = url.replace("pg-secret-pw", "***");
    assert_eq!(
        error.to_string(),
        format!(
            "the database {shown} has schema version {}, newer than version {SCHEMA_VERSION} \
             that this version of tool-core knows; it is left untouched (upgrade tool-core to \
             use it)",
            SCHEMA_VERSION + 1
        )
    );
    assert!(matches!(error, StoreError::NewerSchema { .. }));
}

#[tokio::test]
async fn a_newer_sqlite_schema_is_refused() {
    use sqlx::Connection;

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("c.db").display());
    newer_schema_is_refused(&url, async || {
        let mut connection = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("INSERT INTO tool_core_migrations (version, description) VALUES ($1, 'x')")
            .bind(SCHEMA_VERSION + 1)
            .execute(&mut connection)
            .await
            .unwrap();
        connection.close().await.unwrap();
    })
    .await;
    // Nothing was changed by the refused open.
    let mut connection = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let documents: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tool_conversations")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    assert_eq!(documents, 1);
}

#[tokio::test]
async fn a_newer_postgres_schema_is_refused() {
    use sqlx::Connection;

    let Some(server) = postgres() else {
        return;
    };
    let (url, _) = server.create_database().await;
    newer_schema_is_refused(&url, async || {
        let mut connection = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query("INSERT INTO tool_core_migrations (version, description) VALUES ($1, 'x')")
            .bind(SCHEMA_VERSION + 1)
            .execute(&mut connection)
            .await
            .unwrap();
        connection.close().await.unwrap();
    })
    .await;
}

/// Many openers of one fresh database at once all succeed, and the tables are made once.
async fn concurrent_openers_share_one_schema(url: &str) {
    let opens = (0..8).map(|_| SqlStore::open(url));
    let stores: Vec<SqlStore> = futures::future::join_all(opens)
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    for store in &stores {
        assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    }
    let stores: Vec<Arc<dyn ConversationStore>> = stores
        .into_iter()
        .map(|store| Arc::new(store) as Arc<dyn ConversationStore>)
        .collect();
    stores[0]
        .save(
            &key("frank", "x"),
            &conversation("x", "2030-05-01T00:00:00Z"),
        )
        .await
        .unwrap();
    assert_eq!(stores[7].list("frank").await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sqlite_openers_share_one_schema() {
    let dir = tempfile::tempdir().unwrap();
    concurrent_openers_share_one_schema(&format!(
        "sqlite://{}",
        dir.path().join("new/c.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_postgres_openers_share_one_schema() {
    let Some(server) = postgres() else {
        return;
    };
    concurrent_openers_share_one_schema(&server.create_database().await.0).await;
}
