//! What only the OpenAI Responses client does, over real HTTP on the loopback server:
//! reasoning kept with the calls and sent back before them, stored responses, flat tools with
//! `strict` always set, its tool-choice forms, servers that match events by item id, and saved
//! conversations moving between it and the other wires. What every wire does is a scenario of
//! `provider_scenarios` (row `responses`).

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{
    Agent, AgentOptions, ChatTool,
    model::{
        ChatModel, ChatRequest, FinishReason, Message, OpenAiClient, OpenAiConfig, RequestTools,
        ResponsesClient, ResponsesConfig, ToolCall, ToolChoice,
    },
};

use crate::{
    agent_approval_wires::done,
    agent_support::{Echo, Fail},
    loopback::{Collected, Reply, Server, api_error, fast_retries, question_about, tools},
    provider_wires,
};

macro_rules! transcript {
    ($path:literal) => {
        include_bytes!(concat!("../transcripts/", $path))
    };
}

const REASONING_CALL: &[u8] = transcript!("responses/reasoning_tool_call.sse");
const FINAL_ANSWER: &[u8] = transcript!("responses/final_answer.sse");
const REASONING_RESPONSE: &str = "resp_67ccd2bed1ec8190b14f964abc054267";

/// A Responses client for `model` with `config`'s settings against `server`.
fn client(server: &Server, model: &str, config: ResponsesConfig) -> ResponsesClient {
    ResponsesClient::new(
        config
            .base_url(format!("{}/v1", server.url()))
            .model(model)
            .api_key("sk-test")
            .http(fast_retries()),
    )
    .unwrap()
}

fn chat_completions(server: &Server) -> OpenAiClient {
    OpenAiClient::new(
        OpenAiConfig::default()
            .base_url(format!("{}/v1", server.url()))
            .api_key("sk-test")
            .http(fast_retries()),
    )
    .unwrap()
}

async fn streamed(model: &dyn ChatModel, request: ChatRequest) -> Collected {
    let out = Collected::from(model.stream(request).await.unwrap()).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    out
}

/// The reasoning item, the message and the call of `reasoning_tool_call.sse`, as the next
/// request sends them back.
fn reasoning_items() -> [Value; 3] {
    [
        json!({ "id": "rs_67ccd2c2f7d88190a1b6c4e1e4d2a001", "type": "reasoning", "summary": [],
                "encrypted_content": "gAAAAABoK3v1c2VjcmV0LXJlYXNvbmluZy1mb3ItdGhlLXRlc3Rz" }),
        json!({ "id": "msg_67ccd2c3a8b48190b5e2e7c1d4f3b002", "type": "message",
                "status": "completed", "role": "assistant",
                "content": [{ "type": "output_text", "annotations": [],
                              "text": "Checking the weather." }] }),
        json!({ "type": "function_call", "id": "fc_67ccd2c4b9c08190a2e3f8d1c5e4a003",
                "call_id": "call_r1", "name": "get_weather", "arguments": r#"{"city":"Paris"}"# }),
    ]
}

/// A reasoning model's call comes with its reasoning (and the message beside it) kept in the
/// call's metadata, and the next request sends them back verbatim before the call, with the
/// call's item id, without sending the text twice.
#[tokio::test]
async fn a_reasoning_models_reasoning_goes_back_before_its_call() {
    let server = Server::start(vec![Reply::sse(REASONING_CALL), Reply::sse(FINAL_ANSWER)]).await;
    let model = client(&server, "o4-mini", ResponsesConfig::default());
    let mut messages = question_about("Paris");
    let first = streamed(&model, ChatRequest::new(messages.clone()).tools(tools())).await;
    assert_eq!(first.text(), "Checking the weather.");
    let [reasoning, message, _] = reasoning_items();
    let calls = first.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].arguments.as_str()),
        ("call_r1", r#"{"city":"Paris"}"#)
    );
    assert_eq!(
        calls[0].provider_metadata,
        Some(json!({ "openai_responses": {
            "id": "fc_67ccd2c4b9c08190a2e3f8d1c5e4a003",
            "response_id": REASONING_RESPONSE,
            "items": [reasoning, message],
        } }))
    );
    assert_eq!(first.done().1, &FinishReason::ToolCalls);

    messages.push(first.done().0.clone());
    messages.push(Message::tool_result("call_r1", "get_weather", "18°C"));
    let second = streamed(&model, ChatRequest::new(messages).tools(tools())).await;
    assert_eq!(second.text(), "It is 18°C in Paris.");

    let requests = server.requests();
    for request in &requests {
        let body = request.json();
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["store"], json!(false));
    }
    let mut expected = vec![json!({ "type": "message", "role": "user",
                                    "content": "What is the weather in Paris?" })];
    expected.extend(reasoning_items());
    expected
        .push(json!({ "type": "function_call_output", "call_id": "call_r1", "output": "18°C" }));
    assert_eq!(requests[1].json()["input"], Value::Array(expected));
}

/// With stored responses, the next request names the response it continues and carries only
/// what came after it; nothing asks for encrypted reasoning.
#[tokio::test]
async fn stored_responses_continue_from_the_previous_response() {
    let server = Server::start(vec![Reply::sse(REASONING_CALL), Reply::sse(FINAL_ANSWER)]).await;
    let model = client(&server, "o4-mini", ResponsesConfig::default().store(true));
    let mut messages = question_about("Paris");
    let first = streamed(&model, ChatRequest::new(messages.clone()).tools(tools())).await;
    messages.push(first.done().0.clone());
    messages.push(Message::tool_result("call_r1", "get_weather", "18°C"));
    streamed(&model, ChatRequest::new(messages).tools(tools())).await;

    let requests = server.requests();
    let (first, second) = (requests[0].json(), requests[1].json());
    assert_eq!(first["store"], json!(true));
    assert_eq!(first.get("include"), None);
    assert_eq!(first.get("previous_response_id"), None);
    assert_eq!(second["previous_response_id"], json!(REASONING_RESPONSE));
    assert_eq!(second["instructions"], json!("You are terse."));
    assert_eq!(
        second["input"],
        json!([{ "type": "function_call_output", "call_id": "call_r1", "output": "18°C" }])
    );
}

/// The tools the body offers.
async fn offered(config: ResponsesConfig, tools: RequestTools) -> Value {
    let server = Server::start(vec![Reply::sse(transcript!("responses/text.sse"))]).await;
    let model = client(&server, "gpt-4o-mini", config);
    streamed(
        &model,
        ChatRequest::new(question_about("Paris")).tools(tools),
    )
    .await;
    server.requests()[0].json()
}

/// Function tools are flat, and `strict` is always sent: the Responses API takes a missing
/// `strict` as `true`. With strict tools asked for, each tool whose schema can be strict gets
/// OpenAI's strict schema, and the others go as they are.
#[tokio::test]
async fn tools_are_flat_with_strict_always_set() {
    let body = offered(ResponsesConfig::default(), tools()).await;
    assert_eq!(
        body["tools"][0],
        json!({ "type": "function", "name": "get_weather",
                "description": "Current weather in a city.", "strict": false,
                "parameters": { "type": "object", "properties": { "city": { "type": "string" } },
                                "required": ["city"] } })
    );
    assert_eq!(body["tools"][1]["strict"], json!(false));
    assert_eq!(body.get("parallel_tool_calls"), None);

    let map = ChatTool::new(
        "tag",
        "Tag a file.",
        json!({ "type": "object", "properties": { "tags": { "type": "object",
                 "additionalProperties": { "type": "string" } } } }),
    );
    let weather = tools().definitions()[0].clone();
    let strict = ResponsesConfig::default()
        .strict_tools(true)
        .parallel_tool_calls(false);
    let body = offered(strict, RequestTools::from_definitions(vec![weather, map])).await;
    assert_eq!(
        body["tools"][0],
        json!({ "type": "function", "name": "get_weather",
                "description": "Current weather in a city.", "strict": true,
                "parameters": { "type": "object", "properties": { "city": { "type": "string" } },
                                "required": ["city"], "additionalProperties": false } })
    );
    // A map cannot be strict: the tool goes without strict mode rather than not at all.
    assert_eq!(body["tools"][1]["name"], json!("tag"));
    assert_eq!(body["tools"][1]["strict"], json!(false));
    assert_eq!(body["parallel_tool_calls"], json!(false));
}

#[tokio::test]
async fn each_tool_choice_is_sent_in_the_responses_form() {
    let function = |name: &str| json!({ "type": "function", "name": name });
    let cases = [
        (ToolChoice::Auto, None),
        (ToolChoice::None, Some(json!("none"))),
        (ToolChoice::Required, Some(json!("required"))),
        (ToolChoice::tool("read_file"), Some(function("read_file"))),
        (
            ToolChoice::allowed(["read_file", "get_weather"]),
            Some(json!({ "type": "allowed_tools", "mode": "auto",
                         "tools": [function("read_file"), function("get_weather")] })),
        ),
        (
            ToolChoice::required_one_of(["read_file"]),
            Some(json!({ "type": "allowed_tools", "mode": "required",
                         "tools": [function("read_file")] })),
        ),
    ];
    let wire = provider_wires::responses();
    for streamed in [true, false] {
        let reply = if streamed {
            Reply::sse(wire.text.recording)
        } else {
            Reply::json(wire.whole[1].recording)
        };
        let server = Server::start(vec![reply; cases.len()]).await;
        let model = wire.client(&server, fast_retries());
        for (choice, _) in &cases {
            let request = ChatRequest::new(question_about("Paris"))
                .tools(tools())
                .tool_choice(choice.clone());
            if streamed {
                Collected::from(model.stream(request).await.unwrap())
                    .await
                    .done();
            } else {
                model.chat(request).await.unwrap();
            }
        }
        for ((choice, expected), request) in cases.iter().zip(server.requests()) {
            let body = request.json();
            assert_eq!(body.get("tool_choice"), expected.as_ref(), "{choice:?}");
            assert_eq!(
                body["tools"].as_array().map(Vec::len),
                Some(2),
                "{choice:?}"
            );
        }
    }
}

/// llama.cpp's server sends no `output_index`: its events are matched to their item by
/// `item_id`, and the text its `response.output_text.done` repeats is not added twice.
#[tokio::test]
async fn events_without_an_output_index_are_matched_by_item_id() {
    let server = Server::start(vec![Reply::sse(transcript!(
        "responses/llama_server_tool_call.sse"
    ))])
    .await;
    let model = client(&server, "tiny", ResponsesConfig::default());
    let out = streamed(
        &model,
        ChatRequest::new(question_about("Paris")).tools(tools()),
    )
    .await;
    assert_eq!(out.text(), "Let me check.");
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_Zr4mB7", "get_weather")
    );
    assert_eq!(calls[0].arguments, r#"{"city": "Paris"}"#);
    assert_eq!(out.argument_deltas(0), r#"{"city": "Paris"}"#);
    assert_eq!(out.ended_calls(), calls);
    assert_eq!(out.done().1, &FinishReason::ToolCalls);
    let usage = out.usage().unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (312, 21));
}

/// A server that names neither the output index nor the item in its deltas: each delta
/// belongs to the last item of its kind.
#[tokio::test]
async fn deltas_naming_no_item_belong_to_the_last_one() {
    let event = |data: Value| format!("data: {data}\n\n");
    let call = json!({ "type": "function_call", "id": "fc_1", "call_id": "call_1",
                       "name": "get_weather", "arguments": "" });
    let mut body = event(json!({ "type": "response.output_item.added", "item": call }));
    for delta in [r#"{"city""#, r#":"Paris"}"#] {
        body += &event(json!({ "type": "response.function_call_arguments.delta", "delta": delta }));
    }
    body += &event(json!({ "type": "response.output_item.done", "item": call }));
    body += &event(json!({ "type": "response.completed", "response": { "status": "completed" } }));
    let server = Server::start(vec![Reply::sse_owned(body)]).await;
    let model = client(&server, "gpt-4o-mini", ResponsesConfig::default());
    let out = streamed(
        &model,
        ChatRequest::new(question_about("Paris")).tools(tools()),
    )
    .await;
    let calls = out.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].arguments, r#"{"city":"Paris"}"#);
}

/// An `error` event whose error is nested, and a whole response that failed, are the
/// provider's error with its code and message.
#[tokio::test]
async fn nested_error_events_and_failed_whole_responses_are_the_providers_error() {
    let event = concat!(
        "event: error\n",
        r#"data: {"type":"error","sequence_number":2,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota.","param":null}}"#,
        "\n\n"
    );
    let failed = r#"{"id":"resp_1","object":"response","status":"failed","output":[],"error":{"code":"server_error","message":"The model failed."},"incomplete_details":null,"usage":null}"#;
    let server = Server::start(vec![Reply::sse_owned(event), Reply::json(b"").body(failed)]).await;
    let model = client(&server, "gpt-4o-mini", ResponsesConfig::default());
    let out = Collected::from(
        model
            .stream(ChatRequest::new(question_about("Paris")))
            .await
            .unwrap(),
    )
    .await;
    let (status, code, message) = api_error(tool_core::Provider::OpenAi, out.error);
    assert_eq!(
        (status, code.as_deref(), message.as_str()),
        (
            None,
            Some("insufficient_quota"),
            "You exceeded your current quota."
        )
    );
    let error = model
        .chat(ChatRequest::new(question_about("Paris")))
        .await
        .err();
    let (status, code, message) = api_error(tool_core::Provider::OpenAi, error);
    assert_eq!(
        (status, code.as_deref(), message.as_str()),
        (None, Some("server_error"), "The model failed.")
    );
}

/// A conversation saved from the Chat Completions client goes on on the Responses client, and
/// one from the Responses client (reasoning kept with its call) goes on on Chat Completions and
/// Anthropic, which leave the reasoning out, and back on Responses, which sends it again.
#[tokio::test]
async fn saved_conversations_move_between_the_wires() {
    let round_trip = |messages: &[Message]| -> Vec<Message> {
        let saved = serde_json::to_string(messages).unwrap();
        serde_json::from_str(&saved).unwrap()
    };

    // Chat Completions, then Responses.
    let server = Server::start(vec![
        Reply::sse(transcript!("openai/tool_call.sse")),
        Reply::sse(FINAL_ANSWER),
    ])
    .await;
    let mut messages = question_about("Paris");
    let first = streamed(
        &chat_completions(&server),
        ChatRequest::new(messages.clone()).tools(tools()),
    )
    .await;
    messages.push(first.done().0.clone());
    messages.push(Message::tool_result("call_w3aTq1", "get_weather", "18°C"));
    let messages = round_trip(&messages);
    let model = client(&server, "gpt-4o-mini", ResponsesConfig::default());
    streamed(&model, ChatRequest::new(messages).tools(tools())).await;
    assert_eq!(
        server.requests()[1].json()["input"],
        json!([
            { "type": "message", "role": "user", "content": "What is the weather in Paris?" },
            { "type": "function_call", "call_id": "call_w3aTq1", "name": "get_weather",
              "arguments": r#"{"city": "Paris", "unit": "celsius"}"# },
            { "type": "function_call_output", "call_id": "call_w3aTq1", "output": "18°C" },
        ])
    );

    // Responses with reasoning, then Chat Completions, Anthropic, and Responses again.
    let server = Server::start(vec![
        Reply::sse(REASONING_CALL),
        Reply::sse(transcript!("openai/final_answer.sse")),
        Reply::sse(transcript!("anthropic/final_answer.sse")),
        Reply::sse(FINAL_ANSWER),
    ])
    .await;
    let responses = client(&server, "o4-mini", ResponsesConfig::default());
    let mut messages = question_about("Paris");
    let first = streamed(
        &responses,
        ChatRequest::new(messages.clone()).tools(tools()),
    )
    .await;
    messages.push(first.done().0.clone());
    messages.push(Message::tool_result("call_r1", "get_weather", "18°C"));
    let messages = round_trip(&messages);
    let request = ChatRequest::new(messages).tools(tools());
    streamed(&chat_completions(&server), request.clone()).await;
    let anthropic = provider_wires::anthropic().client(&server, fast_retries());
    streamed(&*anthropic, request.clone()).await;
    streamed(&responses, request).await;

    let requests = server.requests();
    assert_eq!(
        requests[1].json()["messages"][2],
        json!({ "role": "assistant", "content": "Checking the weather.", "tool_calls": [{
            "id": "call_r1", "type": "function",
            "function": { "name": "get_weather", "arguments": r#"{"city":"Paris"}"# } }] })
    );
    assert_eq!(
        requests[2].json()["messages"][1]["content"],
        json!([
            { "type": "text", "text": "Checking the weather." },
            { "type": "tool_use", "id": "call_r1", "name": "get_weather",
              "input": { "city": "Paris" } },
        ])
    );
    let input = requests[3].json()["input"].clone();
    assert_eq!(
        input.as_array().map(|items| &items[1..4]),
        Some(&reasoning_items()[..])
    );
}

fn agent(server: &Server, dir: &std::path::Path) -> Agent {
    let model: Arc<dyn ChatModel> =
        Arc::new(client(server, "gpt-4o-mini", ResponsesConfig::default()));
    Agent::new(
        model,
        AgentOptions::new()
            .root_dir(dir)
            .session_context_file_path(dir.join("session.json")),
    )
}

/// A streamed answer with these calls (id, name, arguments), as the Responses API sends it.
fn calls_stream(calls: &[(&str, &str, &str)]) -> String {
    let event = |data: Value| format!("data: {data}\n\n");
    let mut body = String::new();
    let mut output = Vec::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let item = json!({ "id": format!("fc_{index}"), "type": "function_call",
                           "call_id": id, "name": name, "arguments": arguments });
        body += &event(
            json!({ "type": "response.output_item.added", "output_index": index,
                               "item": { "id": format!("fc_{index}"), "type": "function_call",
                                         "call_id": id, "name": name, "arguments": "" } }),
        );
        body += &event(json!({ "type": "response.function_call_arguments.delta",
                               "output_index": index, "delta": arguments }));
        body += &event(
            json!({ "type": "response.output_item.done", "output_index": index,
                               "item": item }),
        );
        output.push(item);
    }
    body + &event(json!({ "type": "response.completed",
                          "response": { "id": "resp_calls", "status": "completed", "output": output } }))
}

/// Bad arguments (not JSON, the wrong type) and a failing tool each get their error text as
/// the call's output; the good call gets its result.
#[tokio::test]
async fn bad_arguments_and_tool_errors_go_back_as_outputs() {
    let calls = calls_stream(&[
        ("call_ok", "echo", r#"{"text":"hi"}"#),
        ("call_json", "echo", r#"{"text":"#),
        ("call_type", "echo", r#"{"text":5}"#),
        ("call_fail", "fail", "{}"),
    ]);
    let server = Server::start(vec![Reply::sse_owned(calls), Reply::sse(FINAL_ANSWER)]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent(&server, dir.path());
    agent.add_tool(Echo).unwrap();
    agent.add_tool(Fail).unwrap();
    let reply = done(agent.stream_chat("go")).await;
    assert_eq!(reply.text, "It is 18°C in Paris.");

    let input = server.requests()[1].json()["input"].clone();
    let outputs: Vec<(String, String)> = input
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| {
            let text = |key: &str| item[key].as_str().unwrap_or_default().to_owned();
            (text("call_id"), text("output"))
        })
        .collect();
    let ids: Vec<&str> = outputs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_ok", "call_json", "call_type", "call_fail"]);
    assert_eq!(outputs[0].1, "hi");
    for (id, output) in &outputs[1..3] {
        assert!(output.starts_with("Error"), "{id}: {output}");
        assert!(output.contains("echo"), "{id}: {output}");
    }
    assert_eq!(outputs[3].1, "Error executing fail: the disk is full");
    let flags: Vec<bool> = agent
        .messages()
        .iter()
        .filter(|message| matches!(message, Message::Tool { .. }))
        .map(Message::is_error)
        .collect();
    assert_eq!(flags, [false, true, true, true]);
}

/// A whole answer with reasoning, a message and a call reads as the stream does.
#[tokio::test]
async fn whole_answers_keep_reasoning_with_the_call() {
    let [reasoning, message, call] = reasoning_items();
    let body = json!({ "id": REASONING_RESPONSE, "object": "response", "status": "completed",
        "output": [reasoning, message, call], "error": null, "incomplete_details": null,
        "usage": { "input_tokens": 120, "output_tokens": 210,
                   "output_tokens_details": { "reasoning_tokens": 192 } } });
    let server = Server::start(vec![Reply::json(b"").body(body.to_string())]).await;
    let model = client(&server, "o4-mini", ResponsesConfig::default());
    let response = model
        .chat(ChatRequest::new(question_about("Paris")).tools(tools()))
        .await
        .unwrap();
    let Message::Assistant {
        content,
        tool_calls,
        ..
    } = &response.message
    else {
        panic!("not an assistant message");
    };
    assert_eq!(content, "Checking the weather.");
    let mut expected = ToolCall::new("call_r1", "get_weather", r#"{"city":"Paris"}"#);
    expected.provider_metadata = Some(json!({ "openai_responses": {
        "id": "fc_67ccd2c4b9c08190a2e3f8d1c5e4a003", "response_id": REASONING_RESPONSE,
        "items": [reasoning_items()[0], reasoning_items()[1]] } }));
    assert_eq!(tool_calls, &vec![expected]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage.map(|usage| usage.reasoning_tokens),
        Some(192)
    );
}
