//! Remembered tool preferences (seed 004): the file and memory stores, hydration on session
//! start, crash and corruption safety, concurrent writers.

use std::{path::Path, sync::Arc};

use serde_json::{Value, json};
use tool_core::{
    ToolContext, ToolRegistry,
    config::{HandlerTable, ToolConfig},
    create_default_tool_registry,
    session::{ChatSession, FilePreferenceStore, MemoryPreferenceStore, PreferenceStore},
};

/// The default tools plus `extra` (enabled by default) and `opt_in` (disabled by default).
pub(crate) fn registry() -> Arc<ToolRegistry> {
    let registry = create_default_tool_registry(ToolContext::default());
    let config =
        ToolConfig::from_value(json!([mock("extra", true), mock("opt_in", false),])).unwrap();
    assert!(config.register(&registry, &HandlerTable::new()).is_clean());
    Arc::new(registry)
}

fn mock(name: &str, default_enabled: bool) -> Value {
    json!({
        "name": name,
        "description": format!("The {name} tool."),
        "type": "function",
        "handler": name,
        "parameters": { "type": "object" },
        "implementation": { "type": "mock", "mock_response": name },
        "metadata": { "default_enabled": default_enabled }
    })
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn store(path: &Path) -> Arc<dyn PreferenceStore> {
    Arc::new(FilePreferenceStore::new(path))
}

#[tokio::test]
async fn preferences_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users").join("alice-tools.json");
    let registry = registry();
    {
        let session = ChatSession::open(registry.clone(), store(&path))
            .await
            .unwrap();
        assert!(!session.is_tool_enabled("opt_in"));
        session.disable_tool("write_file").await.unwrap();
        session.enable_tool("opt_in").await.unwrap();
    }

    // A new process: a new registry, a new store instance on the same file.
    let registry = self::registry();
    let session = ChatSession::open(registry.clone(), store(&path))
        .await
        .unwrap();

    assert!(!session.is_tool_enabled("write_file"));
    assert!(session.is_tool_enabled("opt_in"));
    assert!(
        session.is_tool_enabled("read_file"),
        "no preference: default"
    );
    assert!(session.snapshot().is_enabled("opt_in"));
    assert_eq!(
        session.enabled_tool_names(),
        ["read_file", "save_session_context", "extra", "opt_in"]
    );
    assert!(registry.is_tool_enabled("write_file"));
    assert_eq!(
        read_json(&path)["tools"],
        json!({ "write_file": { "enabled": false }, "opt_in": { "enabled": true } })
    );
    // Nothing but the file and its lock file is left in the directory.
    let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["alice-tools.json", "alice-tools.json.lock"]);
}

#[tokio::test]
async fn tools_without_a_stored_preference_use_default_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefs.json");
    let session = ChatSession::open(registry(), store(&path)).await.unwrap();

    assert!(!path.exists(), "opening a session writes nothing");
    assert!(session.is_tool_enabled("extra"));
    assert!(!session.is_tool_enabled("opt_in"));
    let listed = session.list_tools();
    let opt_in = listed.iter().find(|tool| tool.name == "opt_in").unwrap();
    assert!(!opt_in.default_enabled);
    assert!(!opt_in.enabled);
}

#[tokio::test]
async fn corrupt_preferences_file_is_kept_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefs.json");
    let garbage = "{\"tools\": {\"write_file\": {\"enabled\": fal";
    std::fs::write(&path, garbage).unwrap();

    let session = ChatSession::open(registry(), store(&path)).await.unwrap();

    // The session starts from the defaults...
    assert!(session.is_tool_enabled("write_file"));
    assert!(!session.is_tool_enabled("opt_in"));
    // ...and the unreadable file is kept beside, untouched, under a new name.
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|entry| {
            entry
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("prefs.json.corrupt-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read_to_string(&aside[0]).unwrap(), garbage);
    assert!(!path.exists());

    // New choices are saved to a fresh, valid file.
    session.disable_tool("read_file").await.unwrap();
    assert_eq!(
        read_json(&path)["tools"],
        json!({ "read_file": { "enabled": false } })
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_preferences_document_is_kept_aside_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefs.json");
    std::fs::write(&path, r#"{"tools": ["write_file"]}"#).unwrap();
    let store = FilePreferenceStore::new(&path);

    store.set("write_file", false).await.unwrap();

    assert_eq!(
        read_json(&path)["tools"],
        json!({ "write_file": { "enabled": false } })
    );
    let kept = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("prefs.json.corrupt-"))
        .count();
    assert_eq!(kept, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefs.json");
    let registry = create_default_tool_registry(ToolContext::default());
    let names: Vec<String> = (0..12).map(|n| format!("tool_{n}")).collect();
    let entries: Vec<Value> = names.iter().map(|name| mock(name, true)).collect();
    assert!(
        ToolConfig::from_value(Value::Array(entries))
            .unwrap()
            .register(&registry, &HandlerTable::new())
            .is_clean()
    );
    let registry = Arc::new(registry);

    // Each task is its own session with its own store instance on the same file, as separate
    // windows or processes would be; each flips its own tools several times.
    let tasks: Vec<_> = names
        .chunks(2)
        .map(|chunk| {
            let registry = registry.clone();
            let path = path.clone();
            let chunk = chunk.to_vec();
            tokio::spawn(async move {
                let session = ChatSession::open(registry, store(&path)).await.unwrap();
                for round in 0..5 {
                    for name in &chunk {
                        session.set_enabled(name, round % 2 == 1).await.unwrap();
                    }
                }
                // Finish with tool_even off and tool_odd on.
                for name in &chunk {
                    let index: usize = name.trim_start_matches("tool_").parse().unwrap();
                    session.set_enabled(name, index % 2 == 1).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }

    let stored = FilePreferenceStore::new(&path).load().await.unwrap();
    assert_eq!(stored.len(), names.len(), "{stored:?}");
    for (index, name) in names.iter().enumerate() {
        assert_eq!(stored.get(name), Some(&(index % 2 == 1)), "{name}");
    }
    let session = ChatSession::open(registry, store(&path)).await.unwrap();
    assert!(!session.is_tool_enabled("tool_0"));
    assert!(session.is_tool_enabled("tool_1"));
}

#[tokio::test]
async fn unknown_fields_are_kept_on_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefs.json");
    let newer = json!({
        "format": "tool-core/tool-preferences",
        "version": 2,
        "theme": "dark",
        "profiles": { "work": ["read_file"] },
        "tools": {
            "read_file": { "enabled": false, "changed_at": "2030-01-01T00:00:00Z" },
            "write_file": { "enabled": true, "pinned": true }
        }
    });
    std::fs::write(&path, serde_json::to_string_pretty(&newer).unwrap()).unwrap();

    let session = ChatSession::open(registry(), store(&path)).await.unwrap();
    assert!(!session.is_tool_enabled("read_file"));
    session.disable_tool("write_file").await.unwrap();
    session.enable_tool("opt_in").await.unwrap();

    let written = read_json(&path);
    assert_eq!(written["version"], 2);
    assert_eq!(written["theme"], "dark");
    assert_eq!(written["profiles"], json!({ "work": ["read_file"] }));
    assert_eq!(
        written["tools"],
        json!({
            "read_file": { "enabled": false, "changed_at": "2030-01-01T00:00:00Z" },
            "write_file": { "enabled": false, "pinned": true },
            "opt_in": { "enabled": true }
        })
    );
}

#[tokio::test]
async fn stale_preference_for_a_removed_tool_is_kept_but_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefs.json");
    std::fs::write(
        &path,
        r#"{"tools": {"retired": {"enabled": false}, "write_file": {"enabled": false}}}"#,
    )
    .unwrap();
    let registry = registry();

    let session = ChatSession::open(registry.clone(), store(&path))
        .await
        .unwrap();

    assert!(!session.is_tool_enabled("retired"));
    assert!(
        session
            .list_tools()
            .iter()
            .all(|tool| tool.name != "retired")
    );
    assert_eq!(
        session.enabled_tool_names(),
        ["read_file", "save_session_context", "extra"]
    );
    assert_eq!(
        session
            .disable_tool("retired")
            .await
            .unwrap_err()
            .to_string(),
        "no tool named `retired` is registered"
    );
    session.disable_tool("extra").await.unwrap();
    assert_eq!(
        read_json(&path)["tools"]["retired"],
        json!({ "enabled": false })
    );

    // When the tool comes back, the kept preference applies again.
    let config = ToolConfig::from_value(json!([mock("retired", true)])).unwrap();
    assert!(config.register(&registry, &HandlerTable::new()).is_clean());
    assert!(registry.is_tool_enabled("retired"));
    assert!(!session.is_tool_enabled("retired"));
    assert!(!session.snapshot().is_enabled("retired"));
}

#[tokio::test]
async fn memory_store_remembers_within_the_process() {
    let store = Arc::new(MemoryPreferenceStore::new());
    let registry = registry();
    let first = ChatSession::open(registry.clone(), store.clone())
        .await
        .unwrap();
    first.enable_tool("opt_in").await.unwrap();

    let second = ChatSession::open(registry.clone(), store.clone())
        .await
        .unwrap();
    assert!(second.is_tool_enabled("opt_in"));

    let other_user = ChatSession::open(registry, Arc::new(MemoryPreferenceStore::new()))
        .await
        .unwrap();
    assert!(!other_user.is_tool_enabled("opt_in"));
}

#[tokio::test]
async fn reload_picks_up_changes_made_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefs.json");
    let registry = registry();
    let here = ChatSession::open(registry.clone(), store(&path))
        .await
        .unwrap();
    let there = ChatSession::open(registry, store(&path)).await.unwrap();

    there.disable_tool("read_file").await.unwrap();
    assert!(here.is_tool_enabled("read_file"));

    here.reload().await.unwrap();
    assert!(!here.is_tool_enabled("read_file"));
}
