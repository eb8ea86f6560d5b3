//! The agent's session context: what `ToolContext` sees, saving it, and resuming from the file.

use serde_json::json;
use tool_core::{
    Agent, AgentOptions,
    context::SavedConversation,
    model::{Message, ScriptedModel, ScriptedResponse, ToolCall},
};

use crate::agent_support::{Echo, assert_every_call_answered, scripted_agent, scripted_agent_with};

#[tokio::test]
async fn tool_context_sees_set_system_prompt_and_clear_context() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().system_prompt("first"),
        dir.path(),
        [ScriptedResponse::text("hello")],
    );
    let seen_by_tools = agent.context().clone();
    assert_eq!(seen_by_tools.system_prompt(), "first");

    agent.chat("hi").await.unwrap();
    assert_eq!(
        seen_by_tools.session_context().messages,
        [Message::user("hi"), Message::assistant("hello")]
    );

    agent.set_system_prompt("second");
    assert_eq!(seen_by_tools.system_prompt(), "second");
    assert_eq!(seen_by_tools.session_context().system_prompt, "second");

    agent.clear_context();
    assert!(seen_by_tools.session_context().messages.is_empty());
    assert_eq!(seen_by_tools.system_prompt(), "second");
}

#[tokio::test]
async fn save_context_writes_the_conversation_to_the_session_file() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().system_prompt("Be brief."),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": "hi"}"#),
            ScriptedResponse::text("said hi"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    agent.chat("say hi").await.unwrap();

    let result = agent.save_context("checkpoint").await;

    let path = dir.path().join("session.json");
    assert_eq!(
        result,
        format!("Session context saved to {}", path.display())
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(raw["format"], "tool-core/session-context");
    assert_eq!(raw["reason"], "checkpoint");
    assert_eq!(raw["system_prompt"], "Be brief.");
    assert_eq!(
        raw["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1", "name": "echo", "content": "hi"})
    );
    let saved = SavedConversation::load(&path).unwrap();
    assert_eq!(saved.context, agent.conversation());
}

#[tokio::test]
async fn load_context_round_trips_without_loss() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().system_prompt("You are terse."),
        dir.path(),
        [ScriptedResponse::text("noted")],
    );
    let mut call = ToolCall::new("c1", "echo", r#"{"text": "é\n\"quoted\""}"#);
    call.provider_metadata = Some(json!({"thoughtSignature": "abc"}));
    agent.context().extend_messages([
        Message::user("earlier"),
        Message::assistant_with_calls("thinking", vec![call]),
        Message::tool_result("c1", "echo", "é\n\"quoted\""),
    ]);
    agent.chat("remember this").await.unwrap();
    agent.context().add_note("user prefers metric units");
    agent.save_context("round trip").await;
    let path = dir.path().join("session.json");

    let resumed = Agent::resume(
        ScriptedModel::new([]),
        AgentOptions::new().root_dir(dir.path()),
        &path,
    )
    .unwrap();
    assert_eq!(resumed.conversation(), agent.conversation());
    assert_eq!(resumed.system_prompt(), "You are terse.");

    let other = Agent::new(
        ScriptedModel::new([]),
        AgentOptions::new().root_dir(dir.path()),
    );
    let loaded = other.load_context(&path).unwrap();
    assert_eq!(loaded.reason, "round trip");
    assert_eq!(loaded.context, agent.conversation());
    assert_eq!(other.conversation(), agent.conversation());
}

#[tokio::test]
async fn a_session_saved_by_the_model_mid_turn_resumes_with_every_call_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call(
                "save_1",
                "save_session_context",
                r#"{"reason": "the user asked"}"#,
            ),
            ScriptedResponse::text("saved"),
        ],
    );
    agent.chat("please save").await.unwrap();
    let path = dir.path().join("session.json");
    let saved = SavedConversation::load(&path).unwrap();
    // The file was written while the call ran: the call is there, its result is not.
    assert!(matches!(
        saved.context.messages.last(),
        Some(Message::Assistant { tool_calls, .. }) if tool_calls[0].id == "save_1"
    ));

    let model = ScriptedModel::new([ScriptedResponse::text("welcome back")]);
    let resumed = Agent::resume(
        model.clone(),
        AgentOptions::new().root_dir(dir.path()),
        &path,
    )
    .unwrap();
    assert_eq!(resumed.messages(), saved.context.messages);
    resumed.chat("where were we?").await.unwrap();

    let sent = &model.requests()[0].messages;
    assert_every_call_answered(sent);
    assert!(matches!(
        &sent[2],
        Message::Tool { tool_call_id, content, .. }
            if tool_call_id == "save_1" && content.contains("not recorded")
    ));
}

#[tokio::test]
async fn loading_a_file_that_is_not_a_session_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.json");
    std::fs::write(&path, r#"{"format": "something-else", "version": 1, "reason": "", "saved_at": "", "system_prompt": ""}"#).unwrap();
    let agent = Agent::new(
        ScriptedModel::new([]),
        AgentOptions::new().root_dir(dir.path()),
    );

    let error = agent.load_context(&path).unwrap_err();

    assert_eq!(
        error.to_string(),
        format!(
            "{} is not a session context file (format `something-else`)",
            path.display()
        )
    );
    let missing = dir.path().join("missing.json");
    let error = agent.load_context(&missing).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("cannot read session context file {}", missing.display())
    );
    let source = std::error::Error::source(&error).unwrap();
    let io = source.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}

#[tokio::test]
async fn try_save_context_returns_a_typed_error_when_the_file_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    // The session file's parent is a file, so no directory can be made for it.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let path = blocker.join("session.json");
    let agent = Agent::new(
        ScriptedModel::new([]),
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(&path),
    );

    let error = agent.try_save_context("checkpoint").await.unwrap_err();

    match &error {
        tool_core::ExecuteError::Failed { name, error } => {
            assert_eq!(name, "save_session_context");
            let message = error.to_string();
            assert!(
                message.starts_with(&format!(
                    "cannot write the session context to {}: ",
                    path.display()
                )),
                "{message}"
            );
        }
        other => panic!("expected a tool failure, got {other:?}"),
    }
    // The contract's `save_context` gives the model-facing text of the same failure.
    let text = agent.save_context("checkpoint").await;
    assert!(
        text.starts_with(
            "Error executing save_session_context: cannot write the session context to "
        ),
        "{text}"
    );
    assert!(!path.exists());

    assert!(agent.disable_tool("save_session_context"));
    // Disabled for the agent's own registry: the typed error says so.
    assert!(matches!(
        agent.try_save_context("again").await,
        Err(tool_core::ExecuteError::Disabled { .. })
    ));
}
