//! The options around tool search: a call to a deferred tool no search loaded (run, or refused
//! until the model searches), the budget keeping the most used tools eager, what an agent says
//! is deferred, loaded and eager, and the cache-friendly order of the offered tools on every
//! wire over real HTTP.

use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{
    Agent, AgentEvent, AgentOptions,
    agent::{DeferBudget, DeferredCalls},
    model::{NativeSearch, ScriptedModel, ScriptedResponse},
};

use crate::{
    loopback::{Reply, Server},
    tool_search::{names, registry, result_of, search},
    tool_search_budget::generated,
};

#[tokio::test]
async fn a_deferred_tool_called_without_a_search_is_refused_when_a_search_is_required() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "weather_forecast", r#"{"city": "Paris"}"#),
        search("s1", "select:weather_forecast"),
        ScriptedResponse::tool_call("c2", "weather_forecast", r#"{"city": "Paris"}"#),
        ScriptedResponse::text("Sunny."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .registry(registry())
            .deferred_calls(DeferredCalls::RequireSearch),
    );
    let events: Vec<AgentEvent> = tokio::time::timeout(Duration::from_secs(20), async {
        use futures::StreamExt as _;
        agent
            .stream_chat("weather in Paris?")
            .collect::<Vec<_>>()
            .await
    })
    .await
    .expect("the turn ends")
    .into_iter()
    .map(|event| event.expect("the turn succeeds"))
    .collect();

    assert_eq!(
        result_of(&agent, "c1"),
        "Error: tool 'weather_forecast' is not loaded; search for it first (with search_tools, \
         `select:weather_forecast` loads it by name), then call it"
    );
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, AgentEvent::DeferredToolCalled { .. }))
    );
    let requests = model.requests();
    // Nothing was loaded by the refused call.
    assert_eq!(names(&requests[1]), ["get_time", "search_tools"]);
    // Once searched for, the call runs.
    assert_eq!(result_of(&agent, "c2"), "sunny in Paris");
    assert_eq!(agent.loaded_tools(), ["weather_forecast"]);
}

#[tokio::test]
async fn by_default_an_unsearched_call_runs_and_the_refusal_needs_the_option() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "weather_forecast", r#"{"city": "Lyon"}"#),
        ScriptedResponse::text("Sunny."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .registry(registry())
            .deferred_calls(DeferredCalls::Load),
    );
    agent.chat("weather in Lyon?").await.unwrap();
    assert_eq!(result_of(&agent, "c1"), "sunny in Lyon");
    assert_eq!(AgentOptions::new().deferred_calls, DeferredCalls::Load);
}

#[tokio::test]
async fn the_budget_keeps_the_most_used_tools_eager_from_the_next_turn() {
    let registry = generated(20);
    let model = ScriptedModel::new([
        // Turn 1: two calls of one tool, one of another, by name.
        ScriptedResponse::tool_call("c1", "git_commit_0007", r#"{"repo_path": "."}"#),
        ScriptedResponse::tool_call("c2", "fetch_0009", r#"{"url": "https://example.com"}"#),
        ScriptedResponse::tool_call("c3", "git_commit_0007", r#"{"repo_path": "."}"#),
        ScriptedResponse::text("Done."),
        // Turn 2, in a new conversation: nothing loaded, the most used tool eager.
        ScriptedResponse::text("Hello."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry).defer_budget(
            DeferBudget::tools(5)
                .pin(["read_text_file_0000"])
                .keep_most_used(1),
        ),
    );
    agent.chat("commit and fetch").await.unwrap();
    // Within the turn the order stays: what the calls loaded is appended.
    let requests = model.requests();
    assert_eq!(names(&requests[0]), ["read_text_file_0000", "search_tools"]);
    assert_eq!(
        names(&requests[3]),
        [
            "read_text_file_0000",
            "search_tools",
            "git_commit_0007",
            "fetch_0009"
        ]
    );
    agent.clear_context();
    agent.chat("hello").await.unwrap();
    let requests = model.requests();
    assert_eq!(
        names(&requests[4]),
        ["read_text_file_0000", "git_commit_0007", "search_tools"]
    );
    let listed = agent.list_tools();
    let info = |name: &str| listed.iter().find(|tool| tool.name == name).unwrap();
    assert!(!info("git_commit_0007").deferred);
    assert!(info("fetch_0009").deferred);
}

#[tokio::test]
async fn list_tools_says_what_is_deferred_loaded_and_eager_under_a_budget() {
    let registry = generated(10);
    let model = ScriptedModel::new([
        search("s1", "select:fetch_0009"),
        ScriptedResponse::text("Loaded."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .registry(registry)
            .defer_budget(DeferBudget::tools(3).pin(["read_text_file_0000"])),
    );
    let state = |agent: &Agent| -> Vec<(String, bool, bool)> {
        agent
            .list_tools()
            .into_iter()
            .map(|tool| (tool.name, tool.deferred, tool.loaded))
            .collect()
    };
    let before = state(&agent);
    assert_eq!(before.len(), 10);
    for (name, deferred, loaded) in &before {
        assert_eq!(*deferred, name != "read_text_file_0000", "{name}");
        assert!(!loaded, "{name}");
    }
    agent.chat("fetch").await.unwrap();
    let after = state(&agent);
    for (name, deferred, loaded) in &after {
        assert_eq!(*deferred, name != "read_text_file_0000", "{name}");
        assert_eq!(*loaded, name == "fetch_0009", "{name}");
    }
}

/// A model's answer calling `search_tools` for "weather forecast", in each wire's documented
/// non-streamed shape: Chat Completions
/// (<https://platform.openai.com/docs/api-reference/chat/object>), Anthropic Messages
/// (<https://docs.anthropic.com/en/api/messages>), Gemini `generateContent`
/// (<https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse>), Ollama
/// `/api/chat` (<https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-with-tools>)
/// and OpenAI Responses (<https://platform.openai.com/docs/api-reference/responses/object>).
fn search_call(wire: &str) -> Value {
    let arguments = json!({ "query": "weather forecast" });
    match wire {
        "openai" => json!({
            "id": "chatcmpl-s1", "object": "chat.completion", "created": 1741476542,
            "model": "gpt-4o-mini",
            "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{ "id": "call_s1", "type": "function", "function": {
                    "name": "search_tools", "arguments": arguments.to_string() } }] } }],
        }),
        "anthropic" => json!({
            "id": "msg_s1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{ "type": "tool_use", "id": "toolu_s1", "name": "search_tools",
                          "input": arguments }],
            "stop_reason": "tool_use",
        }),
        "gemini" => json!({
            "candidates": [{ "index": 0, "finishReason": "STOP", "content": { "role": "model",
                "parts": [{ "functionCall": { "name": "search_tools", "args": arguments } }] } }],
        }),
        "ollama" => json!({
            "model": "llama3.2", "created_at": "2025-01-01T00:00:00Z", "done": true,
            "done_reason": "stop",
            "message": { "role": "assistant", "content": "",
                "tool_calls": [{ "function": { "name": "search_tools", "arguments": arguments } }] },
        }),
        _ => json!({
            "id": "resp_s1", "object": "response", "status": "completed", "model": "gpt-4o-mini",
            "output": [{ "id": "fc_s1", "type": "function_call", "status": "completed",
                         "call_id": "call_s1", "name": "search_tools",
                         "arguments": arguments.to_string() }],
        }),
    }
}

/// The names of a request body's tools, whatever the wire's list shape.
fn tool_names(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let tools = match tools.first() {
        Some(first) if first.get("functionDeclarations").is_some() => {
            first["functionDeclarations"].as_array().cloned().unwrap()
        }
        _ => tools,
    };
    tools
        .iter()
        .map(|tool| {
            tool.get("name")
                .or_else(|| tool.pointer("/function/name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn on_every_wire_a_search_appends_the_loaded_tools_so_requests_share_their_prefix() {
    let wires = ["openai", "responses", "anthropic", "gemini", "ollama"];
    for (wire, name) in crate::provider_wires::all().into_iter().zip(wires) {
        let body = search_call(name).to_string();
        // Two steps: a search, then another whose result the step limit leaves unread.
        let server = Server::start(vec![
            Reply::json_owned(body.clone()),
            Reply::json_owned(body),
        ])
        .await;
        let model = wire.client(&server, crate::loopback::fast_retries());
        // The local search on every wire (the native forms are in `tool_search_native`).
        let agent = Agent::with_model(
            model.into(),
            AgentOptions::new()
                .registry(registry())
                .max_steps(2)
                .search_results(1)
                .native_search(NativeSearch::Off),
        );
        let outcome = tokio::time::timeout(Duration::from_secs(20), agent.chat("weather?"))
            .await
            .expect("an answer in time");
        assert!(
            !matches!(outcome, Err(tool_core::AgentError::Model(_))),
            "{name}: {outcome:?}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{name}");
        let first = tool_names(&requests[0].json());
        let second = tool_names(&requests[1].json());
        assert_eq!(first, ["get_time", "search_tools"], "{name}");
        assert_eq!(
            second,
            ["get_time", "search_tools", "weather_forecast"],
            "{name}"
        );
        assert!(second.starts_with(&first), "{name}");
        // The tools part of the second body begins with the whole of the first's, byte for
        // byte but for the list's closing bracket.
        let tools_text = |body: &Value| body["tools"].to_string();
        let (a, b) = (
            tools_text(&requests[0].json()),
            tools_text(&requests[1].json()),
        );
        let open = a.trim_end_matches([']', '}']);
        assert!(b.starts_with(open), "{name}: {a} / {b}");
    }
}
