//! Failed tool calls: flagged in the conversation, kept in saved sessions, and sent flagged.
//! How each wire sends the flag (or, where it has no place for one, the error text alone) is a
//! scenario of `provider_scenarios` (`results_of_failed_calls_are_sent_in_the_wire_form`).

use std::time::Duration;

use serde_json::json;
use tool_core::{
    Agent, AgentError, AgentOptions,
    context::SavedConversation,
    model::{ChatModel, Message, ScriptedResponse, ToolCall},
};

use crate::{
    agent_support::{Boom, Echo, Fail, Slow, scripted_agent, scripted_agent_with},
    loopback::{Reply, Server},
};

use crate::{provider_scenarios::one_ok_one_failed, provider_wires};

/// The Anthropic client with quick retries against `server`.
fn anthropic(server: &Server) -> Box<dyn ChatModel> {
    provider_wires::client(provider_wires::anthropic)(server)
}

/// The flag of each tool result, by call id.
fn flags(messages: &[Message]) -> Vec<(String, bool)> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::Tool {
                tool_call_id,
                is_error,
                ..
            } => Some((tool_call_id.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn agent_flags_every_kind_of_failed_call_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("ok", "echo", r#"{"text": "hi"}"#),
                ToolCall::new("error", "fail", "{}"),
                ToolCall::new("panic", "boom", "{}"),
                ToolCall::new("timeout", "slow", "{}"),
                ToolCall::new("unknown", "nope", "{}"),
                ToolCall::new("invalid", "echo", "[1, 2]"),
            ]),
            ScriptedResponse::text("done"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    agent.add_tool(Fail).unwrap();
    agent.add_tool(Boom).unwrap();
    agent.add_tool(Slow).unwrap();

    tokio::time::timeout(Duration::from_secs(30), agent.chat("go"))
        .await
        .expect("the turn finished")
        .unwrap();

    let expected: Vec<(String, bool)> = [
        ("ok", false),
        ("error", true),
        ("panic", true),
        ("timeout", true),
        ("unknown", true),
        ("invalid", true),
    ]
    .into_iter()
    .map(|(id, flag)| (id.to_owned(), flag))
    .collect();
    assert_eq!(flags(&agent.messages()), expected);
    // The model's next request carried the flags.
    assert_eq!(flags(&model.requests()[1].messages), expected);
}

#[tokio::test]
async fn calls_not_run_at_the_step_limit_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().max_steps(1),
        dir.path(),
        [ScriptedResponse::tool_call(
            "late",
            "echo",
            r#"{"text": "hi"}"#,
        )],
    );
    agent.add_tool(Echo).unwrap();

    let error = agent.chat("go").await.unwrap_err();

    assert!(
        matches!(error, AgentError::MaxSteps { steps: 1 }),
        "{error}"
    );
    assert_eq!(flags(&agent.messages()), [("late".to_owned(), true)]);
}

#[tokio::test]
async fn a_failed_call_is_sent_flagged_saved_flagged_and_resumed_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(crate::provider_usage::whole_cached_turn()).await;
    let path = dir.path().join("session.json");
    let options = || {
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(&path)
    };
    let agent = Agent::new(anthropic(&server), options());

    tokio::time::timeout(
        Duration::from_secs(30),
        agent.chat("What is in missing.txt?"),
    )
    .await
    .expect("the turn finished")
    .unwrap();

    // The model asked for read_file on a file that does not exist: a tool error.
    let Message::Tool {
        content, is_error, ..
    } = &agent.messages()[2]
    else {
        panic!("not a tool result: {:?}", agent.messages());
    };
    assert!(
        content.starts_with("Error executing read_file: "),
        "{content}"
    );
    assert!(is_error);
    let sent = server.requests()[1].json();
    assert_eq!(sent["messages"][2]["content"][0]["is_error"], true);
    assert_eq!(
        sent["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01R"
    );

    agent.save_context("checkpoint").await;
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(raw["messages"][2]["is_error"], true);
    let saved = SavedConversation::load(&path).unwrap();
    assert_eq!(saved.context, agent.conversation());

    let later = Server::start(vec![Reply::json(include_bytes!(
        "../transcripts/anthropic/message_cache_write.json"
    ))])
    .await;
    let resumed = Agent::resume(anthropic(&later), options(), &path).unwrap();
    assert_eq!(resumed.messages(), agent.messages());
    tokio::time::timeout(Duration::from_secs(30), resumed.chat("And now?"))
        .await
        .expect("the turn finished")
        .unwrap();
    let sent = later.requests()[0].json();
    assert_eq!(sent["messages"][2]["content"][0]["is_error"], true);
}

#[test]
fn a_session_saved_before_the_flag_existed_loads_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(
        &path,
        r#"{
  "format": "tool-core/session-context",
  "version": 1,
  "reason": "user asked to save",
  "saved_at": "2026-11-22T10:00:00Z",
  "system_prompt": "You are terse.",
  "messages": [
    { "role": "user", "content": "What is 2 + 3?" },
    { "role": "assistant", "content": "", "tool_calls": [
      { "id": "call_1", "name": "add", "arguments": "{\"a\":2,\"b\":3}" } ] },
    { "role": "tool", "tool_call_id": "call_1", "name": "add", "content": "5" },
    { "role": "assistant", "content": "5" }
  ],
  "notes": []
}"#,
    )
    .unwrap();

    let saved = SavedConversation::load(&path).unwrap();

    assert_eq!(
        saved.context.messages[2],
        Message::tool_result("call_1", "add", "5")
    );
    assert!(!saved.context.messages[2].is_error());
    // Written back, a successful result still has no `is_error` key.
    assert_eq!(
        serde_json::to_value(&saved.context.messages[2]).unwrap(),
        json!({ "role": "tool", "tool_call_id": "call_1", "name": "add", "content": "5" })
    );
    assert_eq!(
        serde_json::to_value(Message::tool_error("call_1", "add", "no")).unwrap(),
        json!({ "role": "tool", "tool_call_id": "call_1", "name": "add", "content": "no",
                "is_error": true })
    );
}

#[tokio::test]
async fn the_request_carries_the_flag_to_any_chat_model() {
    // Through `ChatModel::chat` too, not only the stream: Anthropic's non-streamed request.
    let server = Server::start(vec![Reply::json(include_bytes!(
        "../transcripts/anthropic/message_tool_use.json"
    ))])
    .await;
    anthropic(&server).chat(one_ok_one_failed()).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(body["stream"], false);
    assert_eq!(body["messages"][2]["content"][1]["is_error"], true);
    assert!(body["messages"][2]["content"][0].get("is_error").is_none());
}
