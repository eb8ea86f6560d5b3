//! The Gemini client against `generateContent` / `streamGenerateContent` transcripts served on
//! loopback.

use std::time::Duration;

use serde_json::json;
use tool_core::{
    Provider,
    model::{
        ChatModel, ChatRequest, FinishReason, GeminiClient, GeminiConfig, HttpOptions, Message,
        ProviderError, Usage,
    },
};

use crate::loopback::{
    Collected, Reply, Server, api_error, args, big_content, fast_retries, question_about,
    stream_once, tools,
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/gemini/", $name))
    };
}

pub(crate) fn client_with(server: &Server, http: HttpOptions) -> GeminiClient {
    let config = GeminiConfig::default()
        .with_api_key("gm-test")
        .with_base_url(format!("{}/v1beta", server.url()))
        .with_model("gemini-test")
        .with_http(http);
    GeminiClient::new(config).unwrap()
}

pub(crate) fn client(server: &Server) -> GeminiClient {
    client_with(server, fast_retries())
}

fn question() -> Vec<Message> {
    question_about("Paris")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client).await
}

#[tokio::test]
async fn gemini_streams_plain_text_over_crlf_framing() {
    let (out, server) = stream(
        Reply::sse(transcript!("text.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(
        out.done().0,
        &Message::assistant("The capital of France is Paris.")
    );
    assert_eq!(out.done().1, &FinishReason::Stop);
    assert_eq!(out.usage(), Some(Usage::new(8, 7)));

    let request = &server.requests()[0];
    assert_eq!(
        request.uri,
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("gm-test"));
    let body = request.json();
    assert_eq!(
        body["systemInstruction"],
        json!({ "parts": [{ "text": "You are terse." }] })
    );
    assert_eq!(
        body["contents"],
        json!([{ "role": "user", "parts": [{ "text": "What is the weather in Paris?" }] }])
    );
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("toolConfig").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn gemini_function_call_keeps_its_thought_signature_and_finishes_later() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let (out, server) = stream(Reply::sse(transcript!("function_call.sse")), request).await;
    // The thought summary is not part of the answer.
    assert_eq!(out.text(), "");
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(args(&calls[0]), json!({ "city": "Paris" }));
    assert!(!calls[0].id.is_empty(), "a call id is made up");
    let signature = calls[0].provider_metadata.as_ref().unwrap()["thoughtSignature"]
        .as_str()
        .unwrap();
    assert!(signature.starts_with("CiQBcsjafQ2R"), "{signature}");
    assert_eq!(out.done().1, &FinishReason::ToolCalls);
    assert_eq!(
        out.usage(),
        Some(Usage::new(30, 49).with_reasoning_tokens(40))
    );

    let body = server.requests()[0].json();
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["name"],
        "get_weather"
    );
    assert_eq!(body["tools"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn gemini_parallel_calls_without_ids_and_a_call_without_args() {
    let (out, _server) = stream(
        Reply::sse(transcript!("parallel_calls.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let calls = out.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(args(&calls[0]), json!({ "path": "notes/\"draft\".txt" }));
    assert_eq!(calls[1].name, "current_time");
    assert_eq!(calls[1].arguments, "{}");
    assert_ne!(calls[0].id, calls[1].id);
    assert_eq!(out.ended_calls(), calls);
}

#[tokio::test]
async fn gemini_multi_step_sends_results_in_order_with_the_signature() {
    let server = Server::start(vec![
        Reply::sse(transcript!("function_call.sse")),
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
    assert_eq!(second.done().0, &Message::assistant("It is 18°C in Paris."));

    let body = server.requests()[1].json();
    let signature = call.provider_metadata.as_ref().unwrap()["thoughtSignature"].clone();
    assert_eq!(
        body["contents"][1],
        json!({
            "role": "model",
            "parts": [{
                "functionCall": { "name": "get_weather", "args": { "city": "Paris" } },
                "thoughtSignature": signature
            }]
        })
    );
    assert_eq!(
        body["contents"][2],
        json!({
            "role": "user",
            "parts": [{
                "functionResponse": { "name": "get_weather", "response": { "result": "18°C, sunny" } }
            }]
        })
    );
}

#[tokio::test]
async fn gemini_call_ids_are_echoed_in_the_function_responses() {
    let server = Server::start(vec![
        Reply::sse(transcript!("calls_with_ids.sse")),
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
    let calls = first.calls();
    assert_eq!(
        calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["fc-1", "fc-2"]
    );
    messages.push(first.done().0.clone());
    messages.push(Message::tool_result("fc-1", "get_weather", "cold"));
    messages.push(Message::tool_result("fc-2", "get_weather", "warm"));
    Collected::from(model.stream(ChatRequest::new(messages)).await.unwrap())
        .await
        .done();

    let body = server.requests()[1].json();
    assert_eq!(
        body["contents"][1]["parts"][0]["functionCall"]["id"],
        "fc-1"
    );
    assert_eq!(
        body["contents"][1]["parts"][1]["functionCall"]["id"],
        "fc-2"
    );
    assert_eq!(
        body["contents"][2],
        json!({
            "role": "user",
            "parts": [
                { "functionResponse": { "id": "fc-1", "name": "get_weather", "response": { "result": "cold" } } },
                { "functionResponse": { "id": "fc-2", "name": "get_weather", "response": { "result": "warm" } } }
            ]
        })
    );
    assert!(body.get("tools").is_none(), "{body}");
}

#[tokio::test]
async fn gemini_stream_without_finish_reason_is_truncated() {
    let (out, _server) = stream(
        Reply::sse(transcript!("truncated.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Once upon a time");
    let error = out.error.expect("the stream ended early");
    assert_eq!(
        error.to_string(),
        "the gemini stream ended early after 320 bytes and 2 events"
    );
    assert!(
        matches!(
            error,
            ProviderError::Truncated {
                provider: Provider::Gemini,
                bytes: Some(320),
                events: 2,
                incomplete_call: None,
                cause: None,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn gemini_raw_json_error_mid_stream_carries_the_provider_message() {
    let (out, _server) = stream(
        Reply::sse(transcript!("error_mid_stream.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "First second ");
    let (status, code, message) = api_error(Provider::Gemini, out.error);
    assert_eq!(status, None);
    assert_eq!(code.as_deref(), Some("UNAVAILABLE"));
    assert_eq!(message, "The model is overloaded. Please try again later.");
}

#[tokio::test]
async fn gemini_error_event_mid_stream_carries_the_provider_message() {
    let (out, _server) = stream(
        Reply::sse(transcript!("error_event.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Partial");
    let (_, code, message) = api_error(Provider::Gemini, out.error);
    assert_eq!(code.as_deref(), Some("INTERNAL"));
    assert_eq!(message, "Internal error encountered.");
}

#[tokio::test]
async fn gemini_safety_finish_reason() {
    let (out, _server) = stream(
        Reply::sse(transcript!("safety.sse")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("I can't"));
    assert_eq!(out.done().1, &FinishReason::ContentFilter);
}

#[tokio::test]
async fn gemini_streamed_partial_args_are_assembled() {
    let (out, _server) = stream(
        Reply::sse(transcript!("partial_args.sse")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let calls = out.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "read_screen");
    assert_eq!(args(&calls[0]), json!({ "id": "screen-A", "zoom": 2 }));
    assert_eq!(calls[1].name, "write_items");
    assert_eq!(
        args(&calls[1]),
        json!({ "items": [{ "name": "apple" }, { "name": "pear" }] })
    );
    assert_eq!(out.ended_calls(), calls);
}

#[tokio::test]
async fn gemini_quota_error_then_success_honours_retry_after() {
    let server = Server::start(vec![
        Reply::error(429, transcript!("error_quota.json")).header("retry-after", "1"),
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
    assert_eq!(out.text(), "The capital of France is Paris.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn gemini_invalid_key_error_is_typed() {
    let server = Server::start(vec![Reply::error(
        400,
        transcript!("error_invalid_key.json"),
    )])
    .await;
    let error = client(&server)
        .stream(ChatRequest::new(question()))
        .await
        .err()
        .expect("a 400 is an error");
    let (status, code, message) = api_error(Provider::Gemini, Some(error));
    assert_eq!(status, Some(400));
    assert_eq!(code.as_deref(), Some("INVALID_ARGUMENT"));
    assert_eq!(message, "API key not valid. Please pass a valid API key.");
}

#[tokio::test]
async fn gemini_chat_reads_unary_function_calls() {
    let server = Server::start(vec![Reply::json(transcript!("unary_function_calls.json"))]).await;
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
    assert_eq!(content, "Adding them up.");
    assert_eq!(tool_calls.len(), 2);
    assert_eq!(args(&tool_calls[0]), json!({ "x": 1, "y": 2 }));
    assert_eq!(
        (
            tool_calls[1].name.as_str(),
            tool_calls[1].arguments.as_str()
        ),
        ("current_time", "{}")
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Some(Usage::new(20, 10)));
    assert_eq!(
        server.requests()[0].uri,
        "/v1beta/models/gemini-test:generateContent"
    );
}

#[tokio::test]
async fn gemini_slow_chunked_stream_gives_the_same_events() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let (whole, _a) = stream(
        Reply::sse(transcript!("function_call.sse")),
        request.clone(),
    )
    .await;
    let slow = Reply::sse(transcript!("function_call.sse")).chunked(3, Duration::from_millis(1));
    let (chunked, _b) = stream(slow, request).await;
    // The generated call ids differ; everything else is the same.
    assert_eq!(chunked.events.len(), whole.events.len());
    assert_eq!(chunked.calls()[0].arguments, whole.calls()[0].arguments);
    assert_eq!(
        chunked.calls()[0].provider_metadata,
        whole.calls()[0].provider_metadata
    );
}

#[test]
fn gemini_client_needs_an_api_key() {
    let error = GeminiClient::new(GeminiConfig::default()).unwrap_err();
    assert!(matches!(error, ProviderError::Config(message) if message.contains("GEMINI_API_KEY")));
}

#[tokio::test]
async fn gemini_five_megabyte_argument_in_one_event_arrives_whole() {
    let content = big_content();
    let args = json!({ "path": "big.txt", "content": content });
    let response = json!({ "candidates": [{ "content": { "role": "model", "parts": [
            { "functionCall": { "name": "write_file", "args": args } }] },
        "finishReason": "STOP", "index": 0 }], "modelVersion": "gemini-2.5-flash" });
    let body = format!("data: {response}\r\n\r\n");
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
    assert_eq!(calls[0].arguments, args.to_string());
}
