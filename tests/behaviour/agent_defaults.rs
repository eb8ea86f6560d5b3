//! What an agent built with `AgentOptions::new()` gives its model: file tools confined to a
//! fresh scratch directory, never the application's working directory.

use serde_json::json;
use tool_core::{Agent, AgentOptions, JsonObject, model::TestModel};

fn args(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().expect("an object")
}

#[tokio::test]
async fn default_file_tools_work_in_a_fresh_scratch_directory_removed_with_the_agent() {
    let agent = Agent::new(TestModel::new(), AgentOptions::new());
    let root = agent.context().root_dir().to_path_buf();
    let cwd = std::env::current_dir().unwrap();
    assert_ne!(root, cwd);
    assert!(
        !cwd.starts_with(&root),
        "{} holds the working directory",
        root.display()
    );
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        0,
        "the scratch directory starts empty"
    );

    let written = agent
        .registry()
        .execute(
            "write_file",
            args(json!({"path": "notes.txt", "content": "hello"})),
        )
        .await;
    assert_eq!(written, "Successfully wrote 5 bytes to notes.txt");
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "hello"
    );
    assert!(!cwd.join("notes.txt").exists());

    // A path out of the scratch directory is refused like any path out of a chosen root.
    let escaped = agent
        .registry()
        .execute("read_file", args(json!({"path": "../../etc/passwd"})))
        .await;
    assert!(
        escaped.starts_with("Error executing read_file: "),
        "{escaped}"
    );

    drop(agent);
    assert!(
        !root.exists(),
        "the scratch directory is removed with the agent"
    );
}

#[tokio::test]
async fn a_chosen_root_directory_is_used_as_it_is_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(TestModel::new(), AgentOptions::new().root_dir(dir.path()));
    assert_eq!(agent.context().root_dir(), dir.path());
    drop(agent);
    assert!(dir.path().exists());
}
