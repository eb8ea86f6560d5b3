//! The Anthropic Messages client against transcripts served on loopback.

use std::time::Duration;

use serde_json::json;
use tool_core::{
    Provider,
    model::{
        AnthropicClient, AnthropicConfig, ChatModel, ChatRequest, FinishReason, HttpOptions,
        Message, ModelEvent, ProviderError, ToolCall, Usage,
    },
};

use crate::loopback::{
    CUT_CAUSE, Collected, Reply, Server, api_error, args, big_content, fast_retries, find,
    question_about, stream_once, tools,
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/anthropic/", $name))
    };
}

pub(crate) fn client_with(server: &Server, http: HttpOptions) -> AnthropicClient {
    let config = AnthropicConfig::default()
        .with_api_key("sk-ant-test")
        .with_base_url(server.url())
        .with_model("claude-test")
        .with_http(http);
    AnthropicClient::new(config).unwrap()
}

pub(crate) fn client(server: &Server) -> AnthropicClient {
    client_with(server, fast_retries())
}

fn question() -> Vec<Message> {
    question_about("Paris")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client).await
}

#[tokio::test]
async fn anthropic_streams_plain_text_with_auth_headers_and_no_tools() {
    let (out, server) = stream(
        Reply::sse(transcript!("text.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("Hello, how can I help?"));
    assert_eq!(out.done().1, &FinishReason::Stop);
    assert_eq!(out.usage(), Some(Usage::new(25, 12)));

    let request = &server.requests()[0];
    assert_eq!(request.uri, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    let body = request.json();
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(
        body["messages"],
        json!([{ "role": "user", "content": [{ "type": "text", "text": "What is the weather in Paris?" }] }])
    );
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn anthropic_streams_one_tool_use_and_flushes_the_last_event() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let (out, server) = stream(Reply::sse(transcript!("tool_use.sse")), request).await;
    assert_eq!(out.text(), "I'll check the weather.");
    let call = ToolCall::new("toolu_01W", "get_weather", r#"{"city": "Paris"}"#);
    assert_eq!(
        out.starts(),
        vec![(0, "toolu_01W".to_owned(), "get_weather".to_owned())]
    );
    assert_eq!(out.argument_deltas(0), call.arguments);
    assert_eq!(out.ended_calls(), vec![call.clone()]);
    // The transcript ends with `message_stop` and no blank line: the answer is complete.
    assert_eq!(out.calls(), vec![call]);
    assert_eq!(out.done().1, &FinishReason::ToolCalls);

    let body = server.requests()[0].json();
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn anthropic_parallel_tool_use_with_fragments_split_inside_escapes() {
    let (out, _server) = stream(
        Reply::sse(transcript!("parallel_tool_use.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let calls = out.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("toolu_01A", "read_file")
    );
    assert_eq!(args(&calls[0]), json!({ "path": "notes/\"draft\".txt" }));
    assert_eq!(
        (calls[1].id.as_str(), calls[1].name.as_str()),
        ("toolu_01B", "search")
    );
    assert_eq!(args(&calls[1]), json!({ "query": "café \n" }));
    assert_eq!(out.ended_calls(), calls);
}

#[tokio::test]
async fn anthropic_multi_step_sends_merged_tool_results_in_one_user_message() {
    let server = Server::start(vec![
        Reply::sse(transcript!("parallel_tool_use.sse")),
        Reply::sse(transcript!("final_answer.sse")),
    ])
    .await;
    let model = client(&server);
    let mut messages = question();
    let first = Collected::from(
        model
            .stream(ChatRequest::new(messages.clone()).with_tools(tools()))
            .await
            .unwrap(),
    )
    .await;
    messages.push(first.done().0.clone());
    for call in first.calls() {
        messages.push(Message::tool_result(
            &call.id,
            &call.name,
            format!("result of {}", call.name),
        ));
    }
    let second = Collected::from(
        model
            .stream(ChatRequest::new(messages).with_tools(tools()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(second.done().0, &Message::assistant("It is 18°C in Paris."));

    let body = server.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{body}");
    assert_eq!(
        messages[1],
        json!({
            "role": "assistant",
            "content": [
                { "type": "tool_use", "id": "toolu_01A", "name": "read_file",
                  "input": { "path": "notes/\"draft\".txt" } },
                { "type": "tool_use", "id": "toolu_01B", "name": "search",
                  "input": { "query": "café \n" } }
            ]
        })
    );
    assert_eq!(
        messages[2],
        json!({
            "role": "user",
            "content": [
                { "type": "tool_result", "tool_use_id": "toolu_01A", "content": "result of read_file" },
                { "type": "tool_result", "tool_use_id": "toolu_01B", "content": "result of search" }
            ]
        })
    );
}

#[tokio::test]
async fn anthropic_truncated_stream_is_an_error() {
    let (out, _server) = stream(
        Reply::sse(transcript!("truncated.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Once upon");
    let error = out.error.expect("the stream ended early");
    assert_eq!(
        error.to_string(),
        "the anthropic stream ended early after 668 bytes and 3 events"
    );
    assert!(
        matches!(
            error,
            ProviderError::Truncated {
                provider: Provider::Anthropic,
                bytes: Some(668),
                events: 3,
                incomplete_call: None,
                cause: None,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn anthropic_error_event_mid_stream_carries_the_provider_message() {
    let (out, _server) = stream(
        Reply::sse(transcript!("error_mid_stream.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Partial");
    let (status, code, message) = api_error(Provider::Anthropic, out.error);
    assert_eq!(status, None);
    assert_eq!(code.as_deref(), Some("overloaded_error"));
    assert_eq!(message, "Overloaded");
}

#[tokio::test]
async fn anthropic_data_only_error_is_read_from_the_json_type() {
    let (out, _server) = stream(
        Reply::sse(transcript!("data_only_error.sse")),
        ChatRequest::new(question()),
    )
    .await;
    let (_, code, message) = api_error(Provider::Anthropic, out.error);
    assert_eq!(code.as_deref(), Some("api_error"));
    assert_eq!(message, "Internal server error");
}

#[tokio::test]
async fn anthropic_data_only_stream_with_padded_data_lines() {
    let (out, _server) = stream(
        Reply::sse(transcript!("data_only_text.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("Plain data."));
}

#[tokio::test]
async fn anthropic_tool_without_arguments_gets_an_empty_object() {
    let (out, _server) = stream(
        Reply::sse(transcript!("no_arguments.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    assert_eq!(
        out.calls(),
        vec![ToolCall::new("toolu_01N", "refresh_list", "{}")]
    );
    assert_eq!(out.ended_calls(), out.calls());
}

#[tokio::test]
async fn anthropic_max_tokens_inside_tool_input_reports_the_invalid_input_without_ending_it() {
    let (out, _server) = stream(
        Reply::sse(transcript!("max_tokens_in_tool_input.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let (_, finish) = out.done();
    assert_eq!(finish, &FinishReason::Length);
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "toolu_01M");
    assert_eq!(
        calls[0].arguments,
        r##"{"path": "taxes.txt", "content": "# Tax guide\n\nFiling"##
    );
    assert!(serde_json::from_str::<serde_json::Value>(&calls[0].arguments).is_err());
    assert!(
        out.ended_calls().is_empty(),
        "an interrupted call is not complete"
    );
}

#[tokio::test]
async fn anthropic_server_tools_are_passed_through_not_reported_as_calls() {
    let (out, _server) = stream(
        Reply::sse(transcript!("server_tool.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let (message, finish) = out.done();
    assert_eq!(message, &Message::assistant("Let me search. Found it."));
    assert_eq!(finish, &FinishReason::Stop);
    assert!(out.starts().is_empty());
}

#[tokio::test]
async fn anthropic_refusal_stop_reason() {
    let (out, _server) = stream(
        Reply::sse(transcript!("refusal.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant(""));
    assert_eq!(out.done().1, &FinishReason::ContentFilter);
}

#[tokio::test]
async fn anthropic_overloaded_then_success_honours_retry_after() {
    let server = Server::start(vec![
        Reply::error(529, transcript!("error_overloaded.json")).header("retry-after", "1"),
        Reply::sse(transcript!("text.sse")),
    ])
    .await;
    let patient = HttpOptions::default()
        .with_initial_backoff(Duration::from_secs(600))
        .with_max_backoff(Duration::from_secs(600));
    let model = client_with(&server, patient);
    let out = tokio::time::timeout(Duration::from_secs(60), async {
        Collected::from(model.stream(ChatRequest::new(question())).await.unwrap()).await
    })
    .await
    .expect("the retry waited for Retry-After, not the backoff");
    assert_eq!(out.text(), "Hello, how can I help?");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_rate_limit_then_success() {
    let server = Server::start(vec![
        Reply::error(429, transcript!("error_overloaded.json")).header("retry-after", "0"),
        Reply::sse(transcript!("text.sse")),
    ])
    .await;
    let out = Collected::from(
        client(&server)
            .stream(ChatRequest::new(question()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(out.text(), "Hello, how can I help?");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_authentication_error_is_typed() {
    let server = Server::start(vec![Reply::error(
        401,
        transcript!("error_invalid_key.json"),
    )])
    .await;
    let error = client(&server)
        .chat(ChatRequest::new(question()))
        .await
        .unwrap_err();
    let (status, code, message) = api_error(Provider::Anthropic, Some(error));
    assert_eq!(status, Some(401));
    assert_eq!(code.as_deref(), Some("authentication_error"));
    assert_eq!(message, "invalid x-api-key");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn anthropic_chat_reads_a_non_streamed_tool_use() {
    let server = Server::start(vec![Reply::json(transcript!("message_tool_use.json"))]).await;
    let response = client(&server)
        .chat(ChatRequest::new(question()).with_tools(tools()))
        .await
        .unwrap();
    let Message::Assistant {
        content,
        tool_calls,
    } = &response.message
    else {
        panic!("not an assistant message");
    };
    assert_eq!(content, "Let me look that up.");
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].id, "toolu_01U");
    assert_eq!(args(&tool_calls[0]), json!({ "city": "Lyon" }));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Some(Usage::new(50, 20)));
    assert_eq!(server.requests()[0].json()["stream"], false);
}

#[tokio::test]
async fn anthropic_slow_chunked_stream_gives_the_same_events() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let (whole, _a) = stream(
        Reply::sse(transcript!("parallel_tool_use.sse")),
        request.clone(),
    )
    .await;
    let slow =
        Reply::sse(transcript!("parallel_tool_use.sse")).chunked(5, Duration::from_millis(1));
    let (chunked, _b) = stream(slow, request).await;
    assert_eq!(chunked.events, whole.events);
    assert!(
        whole
            .events
            .iter()
            .any(|e| matches!(e, ModelEvent::Done { .. }))
    );
}

#[test]
fn anthropic_client_needs_an_api_key() {
    let error = AnthropicClient::new(AnthropicConfig::default()).unwrap_err();
    assert!(
        matches!(error, ProviderError::Config(message) if message.contains("ANTHROPIC_API_KEY"))
    );
}

#[tokio::test]
async fn anthropic_connection_cut_mid_call_says_how_far_the_stream_got() {
    let body = transcript!("tool_use.sse");
    // Cut inside the eighth event, after the call's start and two input fragments.
    let cut = find(body, br#"": \"Par"#);
    let (out, _server) = stream(
        Reply::sse(body)
            .chunked(4096, Duration::from_millis(10))
            .cut_after(cut),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    assert_eq!(out.text(), "I'll check the weather.");
    let error = out.error.expect("the stream was cut");
    assert_eq!(
        error.to_string(),
        format!(
            "the anthropic stream ended early after {cut} bytes and 7 events, in the middle of \
             a call to get_weather: {CUT_CAUSE}"
        )
    );
}

#[tokio::test]
async fn anthropic_stream_that_stops_mid_call_names_the_call() {
    let body = transcript!("tool_use.sse");
    // The body simply ends (no error) after the second input fragment's event.
    let end = find(body, b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\": ");
    let (out, _server) = stream(
        Reply::sse_owned(&body[..end]),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let error = out.error.expect("the stream ended early");
    assert_eq!(
        error.to_string(),
        format!(
            "the anthropic stream ended early after {end} bytes and 7 events, in the middle of \
             a call to get_weather"
        )
    );
}

#[tokio::test]
async fn anthropic_five_megabyte_input_in_one_event_arrives_whole() {
    let content = big_content();
    let input = json!({ "path": "big.txt", "content": content }).to_string();
    let event = |data: serde_json::Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap_or_default()
        )
    };
    let body = [
        event(
            json!({ "type": "message_start", "message": { "id": "msg_big", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "usage": { "input_tokens": 10, "output_tokens": 1 } } }),
        ),
        event(
            json!({ "type": "content_block_start", "index": 0, "content_block":
            { "type": "tool_use", "id": "toolu_big", "name": "write_file", "input": {} } }),
        ),
        event(json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "input_json_delta", "partial_json": input } })),
        event(json!({ "type": "content_block_stop", "index": 0 })),
        event(
            json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" },
            "usage": { "output_tokens": 99 } }),
        ),
        event(json!({ "type": "message_stop" })),
    ]
    .concat();
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        stream(
            Reply::sse_owned(body).chunked(16 * 1024, Duration::ZERO),
            ChatRequest::new(question()).with_tools(tools()),
        ),
    )
    .await
    .expect("the stream finished")
    .0;
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "write_file");
    assert_eq!(calls[0].arguments, input);
}
