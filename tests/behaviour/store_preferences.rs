//! Tool preferences in every kind of store (memory, JSON file, SQLite, PostgreSQL): one suite
//! run on each. Persistence across restarts, per-user isolation, 32 concurrent writers across
//! two OS processes, and a store that goes away under an open session.
use tool_core::{
    session::{ChatSession, Preferences},
    store::open_preference_store,
};
use tool_tests::store_writers::{self, SHARED_KEYS, WRITERS};

use crate::session_preferences::registry;
use crate::store_support::{Backend, Stores, spawn_writer, wait_writer};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_passes_the_suite() {
    preference_suite(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_passes_the_suite() {
    preference_suite(Backend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_passes_the_suite() {
    preference_suite(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_passes_the_suite() {
    preference_suite(Backend::Postgres).await;
}

async fn preference_suite(backend: Backend) {
    let Some(stores) = Stores::new(backend).await else {
        return;
    };
    // First, so that both processes open the fresh database (and create its tables) at once.
    concurrent_writers_in_two_processes_lose_nothing(&stores).await;
    survives_a_restart(&stores).await;
    users_are_isolated(&stores).await;
    a_store_that_goes_away_fails_with_the_reason(&stores).await;
}

fn preferences(entries: &[(&str, bool)]) -> Preferences {
    entries
        .iter()
        .map(|(name, enabled)| ((*name).to_owned(), *enabled))
        .collect()
}

async fn survives_a_restart(stores: &Stores) {
    {
        let store = stores.preferences("alice").await;
        let session = ChatSession::open(registry(), store.clone()).await.unwrap();
        assert!(!session.is_tool_enabled("opt_in"));
        session.disable_tool("write_file").await.unwrap();
        session.enable_tool("opt_in").await.unwrap();
        session.disable_tool("extra").await.unwrap();
        session.reset_tool("extra").await.unwrap();
        // A tool this registry does not have (another version's): kept, not applied.
        store.set("retired", false).await.unwrap();
    }

    // The next process: a new registry, the store opened again.
    let store = stores.preferences("alice").await;
    assert_eq!(
        store.load().await.unwrap(),
        preferences(&[("write_file", false), ("opt_in", true), ("retired", false)]),
        "{:?}",
        stores.backend
    );
    let session = ChatSession::open(registry(), store).await.unwrap();
    assert!(!session.is_tool_enabled("write_file"));
    assert!(session.is_tool_enabled("opt_in"));
    assert_eq!(
        session.enabled_tool_names(),
        ["read_file", "save_session_context", "extra", "opt_in"]
    );
}

async fn users_are_isolated(stores: &Stores) {
    let bob = ChatSession::open(registry(), stores.preferences("bob").await)
        .await
        .unwrap();
    assert!(bob.is_tool_enabled("write_file"), "alice's choice is hers");
    assert!(!bob.is_tool_enabled("opt_in"));
    bob.disable_tool("read_file").await.unwrap();

    let alice = stores.preferences("alice").await.load().await.unwrap();
    assert_eq!(
        alice,
        preferences(&[("write_file", false), ("opt_in", true), ("retired", false)])
    );
    let bob = stores.preferences("bob").await.load().await.unwrap();
    assert_eq!(bob, preferences(&[("read_file", false)]));
}

async fn concurrent_writers_in_two_processes_lose_nothing(stores: &Stores) {
    let scope = "writers";
    let half = WRITERS / 2;
    if stores.shared_between_processes() {
        // The second process starts first, so both open (and create the tables of) the
        // fresh database at about the same time.
        let location = stores.preference_location(scope);
        let child = spawn_writer(&[
            "preferences",
            &location,
            scope,
            &half.to_string(),
            &half.to_string(),
        ]);
        store_writers::write_preferences(|| stores.preferences(scope), 0..half)
            .await
            .unwrap();
        wait_writer(child).await;
    } else {
        store_writers::write_preferences(|| stores.preferences(scope), 0..WRITERS)
            .await
            .unwrap();
    }

    let stored = stores.preferences(scope).await.load().await.unwrap();
    let mut expected = Preferences::new();
    for writer in 0..WRITERS {
        expected.insert(format!("own_{writer}"), store_writers::own_final(writer));
    }
    for key in 0..SHARED_KEYS {
        expected.insert(format!("shared_{key}"), store_writers::shared_final(key));
    }
    assert_eq!(stored, expected, "{:?}", stores.backend);
}

async fn a_store_that_goes_away_fails_with_the_reason(stores: &Stores) {
    let session = ChatSession::open(registry(), stores.preferences("carol").await)
        .await
        .unwrap();
    session.disable_tool("write_file").await.unwrap();
    session.enable_tool("opt_in").await.unwrap();
    if !stores.take_away().await {
        return;
    }

    let error = session.disable_tool("read_file").await.unwrap_err();
    let message = error.to_string();
    eprintln!("{:?}: {message}", stores.backend);
    // The change still applies to the session, and nothing it had is lost.
    assert!(!session.is_tool_enabled("read_file"));
    assert!(!session.is_tool_enabled("write_file"));
    assert!(session.is_tool_enabled("opt_in"));
    assert!(!session.snapshot().is_enabled("read_file"));

    match stores.backend {
        Backend::File => {
            assert!(
                message.starts_with("cannot lock tool preferences at ")
                    && message.contains("carol.json")
                    && message.contains("File exists"),
                "{message}"
            );
        }
        Backend::Sqlite | Backend::Postgres => {
            let url = stores.url().unwrap();
            let shown = url.replace("pg-secret-pw", "***");
            assert!(
                message.starts_with(&format!(
                    "tool preference store failed: cannot save a tool preference in {shown}: "
                )),
                "{message}"
            );
            assert!(!message.contains("pg-secret-pw"), "{message}");
            let reason = if stores.backend == Backend::Sqlite {
                "file is not a database"
            } else {
                "does not exist"
            };
            assert!(message.contains(reason), "{message}");

            // Reloading fails too, and keeps the session's state.
            let error = session.reload().await.unwrap_err().to_string();
            assert!(
                error.starts_with(&format!(
                    "tool preference store failed: cannot load tool preferences in {shown}: "
                )),
                "{error}"
            );
            assert!(!session.is_tool_enabled("read_file"));
            assert!(session.is_tool_enabled("opt_in"));

            // Opening the store again says why it cannot.
            let error = open_preference_store(url, "carol")
                .await
                .err()
                .unwrap()
                .to_string();
            assert!(
                error.starts_with(&format!("cannot open the database in {shown}: "))
                    || error.starts_with(&format!("cannot migrate the schema in {shown}: ")),
                "{error}"
            );
            assert!(!error.contains("pg-secret-pw"), "{error}");
        }
        Backend::Memory => unreachable!("the memory store cannot go away"),
    }
}
