//! The names a preference store keeps: one rule for every store (memory, JSON file, SQLite,
//! PostgreSQL), checked before the store is touched, with the same error everywhere.

use tool_core::{session::PreferenceStore, store::SqlStore};

use crate::store_support::{Backend, Stores};

/// Names no tool can have, and the error every store gives for each.
fn bad_tool_names() -> Vec<(String, String)> {
    let rule = "use only ASCII letters, digits, `_` and `-`";
    vec![
        (
            String::new(),
            "invalid tool name ``: the name is empty".to_owned(),
        ),
        (
            "read\0file".to_owned(),
            format!("invalid tool name `read\\0file`: '\\0' is not allowed; {rule}"),
        ),
        (
            "tab\there".to_owned(),
            format!("invalid tool name `tab\\there`: '\\t' is not allowed; {rule}"),
        ),
        (
            "new\nline".to_owned(),
            format!("invalid tool name `new\\nline`: '\\n' is not allowed; {rule}"),
        ),
        (
            "bell\u{7}".to_owned(),
            format!("invalid tool name `bell\\u{{7}}`: '\\u{{7}}' is not allowed; {rule}"),
        ),
        (
            "café".to_owned(),
            format!("invalid tool name `café`: 'é' is not allowed; {rule}"),
        ),
        (
            "x".repeat(65),
            format!(
                "invalid tool name `{}`: the name is 65 characters long; at most 64 are allowed",
                "x".repeat(65)
            ),
        ),
        (
            "y".repeat(5000),
            format!(
                "invalid tool name `{}…`: the name is 5000 characters long; at most 64 are \
                 allowed",
                "y".repeat(200)
            ),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_refuses_bad_tool_names() {
    refuses_bad_tool_names(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_store_refuses_bad_tool_names() {
    refuses_bad_tool_names(Backend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_refuses_bad_tool_names() {
    refuses_bad_tool_names(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_refuses_bad_tool_names() {
    refuses_bad_tool_names(Backend::Postgres).await;
}

async fn refuses_bad_tool_names(backend: Backend) {
    let Some(stores) = Stores::new(backend).await else {
        return;
    };
    let store = stores.preferences("alice").await;
    for (name, expected) in bad_tool_names() {
        let set = store.set(&name, false).await.unwrap_err();
        assert_eq!(set.to_string(), expected, "{backend:?}: set {name:?}");
        let removed = store.remove(&name).await.unwrap_err();
        assert_eq!(
            removed.to_string(),
            expected,
            "{backend:?}: remove {name:?}"
        );
    }
    // Nothing was stored, and names a tool can have still are.
    assert!(store.load().await.unwrap().is_empty(), "{backend:?}");
    let longest = "z".repeat(64);
    for name in ["read_file", "a-b_C9", &longest] {
        store.set(name, false).await.unwrap();
    }
    let reopened = stores.preferences("alice").await.load().await.unwrap();
    assert_eq!(reopened.len(), 3, "{backend:?}: {reopened:?}");
    assert_eq!(reopened.get(longest.as_str()), Some(&false));
}

/// A database keeps the preferences of many scopes; a scope follows the rule of conversation
/// scopes, on SQLite as on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_stores_refuse_bad_scopes_alike() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(stores) = Stores::new(backend).await else {
            continue;
        };
        let store = SqlStore::open(stores.url().unwrap()).await.unwrap();
        for scope in ["", "a\0b", "../etc", ".hidden", &"s".repeat(129)] {
            let preferences = store.preferences_for(scope);
            let expected = format!(
                "invalid preference scope `{}`: use 1 to 128 letters, digits, `-`, `_` or `.`, \
                 not starting with `.`",
                scope.escape_debug()
            );
            let errors = [
                preferences.load().await.unwrap_err().to_string(),
                preferences
                    .set("read_file", true)
                    .await
                    .unwrap_err()
                    .to_string(),
                preferences
                    .remove("read_file")
                    .await
                    .unwrap_err()
                    .to_string(),
            ];
            assert_eq!(
                errors,
                [expected.clone(), expected.clone(), expected],
                "{backend:?}"
            );
        }
        store.close().await;
    }
}
