//! Failed tool calls: flagged in the conversation, kept in saved sessions, and sent to each
//! provider the way its format documents (or, where it has no place for a flag, as the error
//! text alone).

use std::time::Duration;

use serde_json::json;
use tool_core::{
    Agent, AgentError, AgentOptions,
    context::SavedConversation,
    model::{ChatModel, ChatRequest, Message, ScriptedResponse, ToolCall},
};

use crate::{
    agent_support::{Boom, Echo, Fail, Slow, scripted_agent, scripted_agent_with},
    loopback::{Reply, Server, question_about, stream_once},
};

use crate::{
    provider_anthropic::client as anthropic, provider_gemini::client as gemini,
    provider_ollama::client as ollama, provider_openai::client as openai,
};

const FAILURE: &str = "Error executing read_file: missing.txt does not exist";

/// A conversation whose last step made two calls: the first succeeded, the second failed.
fn one_ok_one_failed() -> ChatRequest {
    let mut messages = question_about("Paris");
    messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![
            ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#),
            ToolCall::new("call_2", "read_file", r#"{"path":"missing.txt"}"#),
        ],
    });
    messages.push(Message::tool_result("call_1", "get_weather", "18°C"));
    messages.push(Message::tool_error("call_2", "read_file", FAILURE));
    ChatRequest::new(messages)
}

#[tokio::test]
async fn anthropic_tool_result_of_a_failed_call_carries_is_error() {
    let (out, server) = stream_once(
        Reply::sse(include_bytes!("../transcripts/anthropic/text.sse")),
        one_ok_one_failed(),
        anthropic,
    )
    .await;
    out.done();
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"][2],
        json!({
            "role": "user",
            "content": [
                { "type": "tool_result", "tool_use_id": "call_1", "content": "18°C" },
                { "type": "tool_result", "tool_use_id": "call_2", "content": FAILURE,
                  "is_error": true }
            ]
        })
    );
}

#[tokio::test]
async fn gemini_function_response_of_a_failed_call_uses_the_error_key() {
    let (out, server) = stream_once(
        Reply::sse(include_bytes!("../transcripts/gemini/text.sse")),
        one_ok_one_failed(),
        gemini,
    )
    .await;
    out.done();
    let body = server.requests()[0].json();
    assert_eq!(
        body["contents"][2],
        json!({
            "role": "user",
            "parts": [
                { "functionResponse": { "name": "get_weather", "response": { "result": "18°C" } } },
                { "functionResponse": { "name": "read_file", "response": { "error": FAILURE } } }
            ]
        })
    );
}

#[tokio::test]
async fn openai_tool_message_has_no_error_flag_so_the_failure_is_the_content() {
    let (out, server) = stream_once(
        Reply::sse(include_bytes!("../transcripts/openai/text.sse")),
        one_ok_one_failed(),
        openai,
    )
    .await;
    out.done();
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"].as_array().unwrap()[3..],
        [
            json!({ "role": "tool", "tool_call_id": "call_1", "content": "18°C" }),
            json!({ "role": "tool", "tool_call_id": "call_2", "content": FAILURE }),
        ]
    );
}

#[tokio::test]
async fn ollama_tool_message_has_no_error_flag_so_the_failure_is_the_content() {
    let (out, server) = stream_once(
        Reply::ndjson(include_bytes!("../transcripts/ollama/text.ndjson")),
        one_ok_one_failed(),
        ollama,
    )
    .await;
    out.done();
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"].as_array().unwrap()[3..],
        [
            json!({ "role": "tool", "content": "18°C", "tool_name": "get_weather" }),
            json!({ "role": "tool", "content": FAILURE, "tool_name": "read_file" }),
        ]
    );
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
