//! Where the file tools work: in the root directory of the chat that calls them, which is a
//! fresh scratch directory unless the application chose one, never the working directory.

use std::sync::Arc;

use serde_json::json;
use tool_core::{
    Agent, AgentOptions, JsonObject, ToolContext, create_default_tool_registry,
    model::{ScriptedModel, ScriptedResponse, TestModel},
};

use crate::agent_support::tool_result;

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

#[tokio::test]
async fn a_registry_brought_in_works_in_the_agents_root_dir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "in the chosen root").unwrap();
    let registry = Arc::new(create_default_tool_registry(ToolContext::default()));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "read_file", r#"{"path": "notes.txt"}"#),
        ScriptedResponse::tool_call(
            "c2",
            "write_file",
            r#"{"path": "agent-defaults-out.txt", "content": "from the model"}"#,
        ),
        ScriptedResponse::text("done"),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry).root_dir(dir.path()),
    );
    assert_eq!(agent.context().root_dir(), dir.path());

    agent.chat("read my notes").await.unwrap();
    let _cleanup = RemoveOnDrop(
        std::env::current_dir()
            .unwrap()
            .join("agent-defaults-out.txt"),
    );
    assert_eq!(tool_result(&model, "c1"), "in the chosen root");
    assert_eq!(
        tool_result(&model, "c2"),
        "Successfully wrote 14 bytes to agent-defaults-out.txt"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("agent-defaults-out.txt")).unwrap(),
        "from the model"
    );
}

#[tokio::test]
async fn an_agent_given_a_registry_and_no_root_works_in_its_scratch_directory() {
    let cwd = std::env::current_dir().unwrap();
    let registry = Arc::new(create_default_tool_registry(ToolContext::default()));
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call(
            "c1",
            "write_file",
            r#"{"path": "agent-defaults-probe.txt", "content": "scratch"}"#,
        ),
        ScriptedResponse::text("done"),
    ]);
    let agent = Agent::new(model.clone(), AgentOptions::new().registry(registry));
    agent.chat("write").await.unwrap();
    let _cleanup = RemoveOnDrop(cwd.join("agent-defaults-probe.txt"));

    let root = agent.context().root_dir().to_path_buf();
    assert!(!cwd.starts_with(&root) && root != cwd, "{}", root.display());
    assert_eq!(
        tool_result(&model, "c1"),
        "Successfully wrote 7 bytes to agent-defaults-probe.txt"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("agent-defaults-probe.txt")).unwrap(),
        "scratch"
    );
    assert!(!cwd.join("agent-defaults-probe.txt").exists());
}

/// A context made without a root directory is the same safe default as an agent's: a fresh
/// scratch directory, made when a file tool first needs it and removed with the last clone
/// of the context. Never the working directory.
#[tokio::test]
async fn a_bare_tool_context_confines_file_tools_to_a_scratch_directory() {
    let cwd = std::env::current_dir().unwrap();
    let context = ToolContext::default();
    let registry = create_default_tool_registry(context.clone());
    let written = registry
        .execute(
            "write_file",
            args(json!({"path": "context-default-probe.txt", "content": "scratch"})),
        )
        .await;
    let _cleanup = RemoveOnDrop(cwd.join("context-default-probe.txt"));
    assert_eq!(
        written,
        "Successfully wrote 7 bytes to context-default-probe.txt"
    );
    let root = context.root_dir().to_path_buf();
    assert!(!cwd.starts_with(&root) && root != cwd, "{}", root.display());
    assert_eq!(
        std::fs::read_to_string(root.join("context-default-probe.txt")).unwrap(),
        "scratch"
    );
    assert!(!cwd.join("context-default-probe.txt").exists());

    // Every context has a scratch directory of its own.
    assert_ne!(ToolContext::default().root_dir(), root);
    drop((registry, context));
    assert!(
        !root.exists(),
        "the scratch directory goes with the context"
    );
}

/// Removes a file a failing test left in the working directory.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
