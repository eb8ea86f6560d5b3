//! The OpenAI-compatible client against Chat Completions transcripts served on loopback.

use std::time::Duration;

use serde_json::json;
use tool_core::{
    Provider,
    model::{
        ChatModel, ChatRequest, FinishReason, HttpOptions, Message, OpenAiClient, OpenAiConfig,
        ProviderError, ToolCall, Usage,
    },
};

use crate::loopback::{
    CUT_CAUSE, Collected, Reply, Server, args, big_content, fast_retries, find, question_about,
    stream_once, tools,
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/openai/", $name))
    };
}

pub(crate) fn client(server: &Server) -> OpenAiClient {
    client_with(server, fast_retries())
}

pub(crate) fn client_with(server: &Server, http: HttpOptions) -> OpenAiClient {
    let config = OpenAiConfig::default()
        .with_api_key("sk-test")
        .with_base_url(format!("{}/v1", server.url()))
        .with_model("gpt-4o-mini")
        .with_http(http);
    OpenAiClient::new(config).unwrap()
}

fn question() -> Vec<Message> {
    question_about("Paris")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client).await
}

#[tokio::test]
async fn openai_streams_plain_text_and_sends_no_tools() {
    let (out, server) = stream(
        Reply::sse(transcript!("text.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "The capital of France is Paris.");
    let (message, finish) = out.done();
    assert_eq!(
        message,
        &Message::assistant("The capital of France is Paris.")
    );
    assert_eq!(finish, &FinishReason::Stop);
    assert_eq!(out.usage(), Some(Usage::new(21, 8)));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.uri, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    let body = request.json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({ "include_usage": true }));
    assert_eq!(
        body["messages"],
        json!([
            { "role": "system", "content": "You are terse." },
            { "role": "user", "content": "What is the weather in Paris?" }
        ])
    );
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn openai_streams_one_tool_call_and_sends_the_tools() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let expected_tools: serde_json::Value =
        serde_json::from_str(request.tools.provider_json(Provider::OpenAi).get()).unwrap();
    let (out, server) = stream(Reply::sse(transcript!("tool_call.sse")), request).await;

    assert_eq!(
        out.starts(),
        vec![(0, "call_w3aTq1".to_owned(), "get_weather".to_owned())]
    );
    let arguments = r#"{"city": "Paris", "unit": "celsius"}"#;
    assert_eq!(out.argument_deltas(0), arguments);
    let call = ToolCall::new("call_w3aTq1", "get_weather", arguments);
    assert_eq!(out.ended_calls(), vec![call.clone()]);
    assert_eq!(out.calls(), vec![call]);
    assert_eq!(out.done().1, &FinishReason::ToolCalls);

    let body = server.requests()[0].json();
    assert_eq!(body["tools"], expected_tools);
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn openai_parallel_tool_calls_with_arguments_split_inside_escapes() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let (out, _server) = stream(Reply::sse(transcript!("parallel_tool_calls.sse")), request).await;
    let calls = out.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_p0", "read_file")
    );
    assert_eq!(args(&calls[0]), json!({ "path": "notes/\"draft\".txt" }));
    assert_eq!(
        (calls[1].id.as_str(), calls[1].name.as_str()),
        ("call_p1", "search")
    );
    assert_eq!(
        args(&calls[1]),
        json!({ "query": "café near \"Gare du Nord\"" })
    );
    assert_eq!(out.argument_deltas(0), calls[0].arguments);
    assert_eq!(out.argument_deltas(1), calls[1].arguments);
    assert_eq!(out.ended_calls(), calls);
}

#[tokio::test]
async fn openai_multi_step_exchange_sends_the_result_with_the_call_id() {
    let server = Server::start(vec![
        Reply::sse(transcript!("tool_call.sse")),
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
    let call = first.calls()[0].clone();
    messages.push(first.done().0.clone());
    messages.push(Message::tool_result(&call.id, &call.name, "18°C, sunny"));
    let second = Collected::from(
        model
            .stream(ChatRequest::new(messages).with_tools(tools()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(second.text(), "It is 18°C in Paris.");
    assert_eq!(second.done().1, &FinishReason::Stop);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = &requests[1].json()["messages"];
    assert_eq!(
        messages[2],
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": "call_w3aTq1",
                "type": "function",
                "function": { "name": "get_weather", "arguments": call.arguments }
            }]
        })
    );
    assert_eq!(
        messages[3],
        json!({ "role": "tool", "tool_call_id": "call_w3aTq1", "content": "18°C, sunny" })
    );
}

#[tokio::test]
async fn openai_truncated_stream_is_an_error_after_the_text_so_far() {
    let (out, _server) = stream(
        Reply::sse(transcript!("truncated.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Let me think");
    let error = out.error.expect("the stream ended early");
    assert_eq!(
        error.to_string(),
        "the openai stream ended early after 888 bytes and 3 events"
    );
    assert!(
        matches!(
            error,
            ProviderError::Truncated {
                provider: Provider::OpenAi,
                bytes: Some(888),
                events: 3,
                incomplete_call: None,
                cause: None,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, tool_core::model::ModelEvent::Done { .. }))
    );
}

#[tokio::test]
async fn openai_error_mid_stream_carries_the_provider_message() {
    let (out, _server) = stream(
        Reply::sse(transcript!("error_mid_stream.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Partial");
    match out.error {
        Some(ProviderError::Api {
            provider: Provider::OpenAi,
            status: None,
            code,
            message,
        }) => {
            assert_eq!(code.as_deref(), Some("server_error"));
            assert_eq!(
                message,
                "The server had an error while processing your request. Sorry about that!"
            );
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn openai_error_event_mid_stream_carries_the_provider_message() {
    let (out, _server) = stream(
        Reply::sse(transcript!("error_event.sse")),
        ChatRequest::new(question()),
    )
    .await;
    match out.error {
        Some(ProviderError::Api { code, message, .. }) => {
            assert_eq!(code.as_deref(), Some("context_length_exceeded"));
            assert_eq!(message, "context length exceeded");
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn openai_rate_limit_then_success_honours_retry_after() {
    let server = Server::start(vec![
        Reply::error(429, transcript!("error_rate_limit.json")).header("retry-after", "1"),
        Reply::sse(transcript!("text.sse")),
    ])
    .await;
    // Without Retry-After the client would wait ten minutes; the test's own timeout fails it.
    let patient = HttpOptions::default()
        .with_initial_backoff(Duration::from_secs(600))
        .with_max_backoff(Duration::from_secs(600));
    let model = client_with(&server, patient);
    let out = tokio::time::timeout(Duration::from_secs(60), async {
        Collected::from(model.stream(ChatRequest::new(question())).await.unwrap()).await
    })
    .await
    .expect("the retry waited for Retry-After, not the backoff");
    assert_eq!(out.text(), "The capital of France is Paris.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn openai_authentication_error_is_typed_and_not_retried() {
    let server = Server::start(vec![
        Reply::error(401, transcript!("error_invalid_key.json")),
        Reply::sse(transcript!("text.sse")),
    ])
    .await;
    let error = client(&server)
        .stream(ChatRequest::new(question()))
        .await
        .err()
        .expect("a 401 is an error");
    match error {
        ProviderError::Api {
            status: Some(401),
            code,
            message,
            ..
        } => {
            assert_eq!(code.as_deref(), Some("invalid_api_key"));
            assert!(
                message.starts_with("Incorrect API key provided"),
                "{message}"
            );
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn openai_tool_call_index_starting_at_1_with_empty_fragments() {
    let (out, _server) = stream(
        Reply::sse(transcript!("index_starts_at_1.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    assert_eq!(out.text(), "Checking.");
    assert_eq!(
        out.calls(),
        vec![ToolCall::new(
            "call_i1",
            "read_file",
            r#"{"path": "a.txt"}"#
        )]
    );
    assert_eq!(
        out.starts()[0].0,
        0,
        "calls are numbered from 0 in the answer"
    );
    assert_eq!(out.done().1, &FinishReason::ToolCalls);
}

#[tokio::test]
async fn openai_empty_choices_chunks_are_skipped() {
    let (out, _server) = stream(
        Reply::sse(transcript!("empty_choices.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("Copenhagen."));
    assert_eq!(out.usage(), Some(Usage::new(15, 3)));
}

#[tokio::test]
async fn openai_whole_call_in_one_chunk_with_its_finish_reason() {
    let (out, _server) = stream(
        Reply::sse(transcript!("whole_call_with_finish.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "call_whole");
    assert_eq!(args(&calls[0]), json!({ "city": "南京" }));
    assert_eq!(out.ended_calls(), calls);
    assert_eq!(out.usage(), Some(Usage::new(128, 11)));
}

#[tokio::test]
async fn openai_answer_complete_without_done_marker() {
    let (out, _server) = stream(
        Reply::sse(transcript!("no_done_marker.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("Done."));
}

#[tokio::test]
async fn openai_calls_all_numbered_0_with_distinct_ids_are_separate() {
    let (out, _server) = stream(
        Reply::sse(transcript!("calls_all_index_0.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    assert_eq!(
        out.calls(),
        vec![
            ToolCall::new("call_a", "get_weather", r#"{"city":"Oslo"}"#),
            ToolCall::new("call_b", "get_weather", r#"{"city":"Rome"}"#),
        ]
    );
    // The server says `stop`, but the model called tools.
    assert_eq!(out.done().1, &FinishReason::ToolCalls);
}

#[tokio::test]
async fn openai_id_then_name_then_unicode_escaped_arguments() {
    let (out, _server) = stream(
        Reply::sse(transcript!("id_then_name.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("chatcmpl-tool-9f1", "get_weather")
    );
    assert_eq!(args(&calls[0]), json!({ "cityName": "南京" }));
    assert_eq!(
        out.starts(),
        vec![(0, "chatcmpl-tool-9f1".to_owned(), "get_weather".to_owned())]
    );
}

#[tokio::test]
async fn openai_refusal_text_is_the_answer_and_flagged() {
    let (out, _server) = stream(
        Reply::sse(transcript!("refusal.sse")),
        ChatRequest::new(question()),
    )
    .await;
    let (message, finish) = out.done();
    assert_eq!(message, &Message::assistant("I can't help with that."));
    assert_eq!(finish, &FinishReason::ContentFilter);
}

#[tokio::test]
async fn openai_length_finish_marks_the_answer_cut_off() {
    let (out, _server) = stream(
        Reply::sse(transcript!("length.sse")),
        ChatRequest::new(question()),
    )
    .await;
    let (message, finish) = out.done();
    assert_eq!(message, &Message::assistant("{\""));
    assert_eq!(finish, &FinishReason::Length);
}

#[tokio::test]
async fn openai_slow_chunked_stream_gives_the_same_calls() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let (whole, _a) = stream(
        Reply::sse(transcript!("parallel_tool_calls.sse")),
        request.clone(),
    )
    .await;
    let slow =
        Reply::sse(transcript!("parallel_tool_calls.sse")).chunked(7, Duration::from_millis(1));
    let (chunked, _b) = stream(slow, request).await;
    assert_eq!(chunked.events, whole.events);
}

#[tokio::test]
async fn openai_chat_reads_a_non_streamed_tool_call() {
    let server = Server::start(vec![Reply::json(transcript!("completion_tool_call.json"))]).await;
    let response = client(&server)
        .chat(ChatRequest::new(question()).with_tools(tools()))
        .await
        .unwrap();
    assert_eq!(
        response.message,
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall::new(
                "call_n1",
                "get_weather",
                r#"{"city":"Lyon"}"#
            )],
        }
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Some(Usage::new(70, 15)));
    let body = server.requests()[0].json();
    assert_eq!(body["stream"], false);
    assert!(body.get("stream_options").is_none(), "{body}");
}

#[tokio::test]
async fn openai_chat_reads_non_streamed_text() {
    let server = Server::start(vec![Reply::json(transcript!("completion_text.json"))]).await;
    let response = client(&server)
        .chat(ChatRequest::new(question()))
        .await
        .unwrap();
    assert_eq!(response.message, Message::assistant("Hello there!"));
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn openai_local_server_without_key_gets_no_authorization_header() {
    let server = Server::start(vec![Reply::sse(transcript!("text.sse"))]).await;
    let config = OpenAiConfig::default()
        .with_base_url(format!("{}/v1/", server.url()))
        .with_header("HTTP-Referer", "https://example.com/app")
        .with_include_usage(false);
    let model = OpenAiClient::new(config).unwrap();
    Collected::from(model.stream(ChatRequest::new(question())).await.unwrap())
        .await
        .done();
    let request = &server.requests()[0];
    assert_eq!(request.uri, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.header("http-referer"),
        Some("https://example.com/app")
    );
    assert!(request.json().get("stream_options").is_none());
}

#[tokio::test]
async fn openai_connection_cut_mid_call_says_how_far_the_stream_got() {
    let body = transcript!("tool_call.sse");
    // Cut inside the fourth event, after three whole ones (the call's name and two fragments).
    let cut = find(body, br#""Paris""#);
    let (out, _server) = stream(
        Reply::sse(body)
            .chunked(4096, Duration::from_millis(10))
            .cut_after(cut),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    assert_eq!(out.argument_deltas(0), "{\"city\": \"");
    let error = out.error.expect("the stream was cut");
    assert_eq!(
        error.to_string(),
        format!(
            "the openai stream ended early after {cut} bytes and 3 events, in the middle of a \
             call to get_weather: {CUT_CAUSE}"
        )
    );
}

#[tokio::test]
async fn openai_five_megabyte_argument_in_one_event_arrives_whole() {
    let content = big_content();
    let arguments = json!({ "path": "big.txt", "content": content }).to_string();
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let event = json!({ "id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "m", "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
        format!("data: {event}\n\n")
    };
    let body = chunk(
        json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": "call_big",
            "type": "function", "function": { "name": "write_file", "arguments": arguments } }] }),
        serde_json::Value::Null,
    ) + &chunk(json!({}), json!("tool_calls"))
        + "data: [DONE]\n\n";
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
    assert_eq!(calls[0].arguments, arguments);
}
