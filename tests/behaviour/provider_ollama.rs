//! The Ollama native client against `/api/chat` NDJSON transcripts served on loopback.

use std::time::Duration;

use serde_json::json;
use tool_core::{
    Provider,
    model::{
        ChatModel, ChatRequest, FinishReason, HttpOptions, Message, OllamaClient, OllamaConfig,
        ProviderError, ToolCall, Usage,
    },
};

use crate::loopback::{
    Collected, Reply, Server, args, fast_retries, question_about, stream_once, tools,
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/ollama/", $name))
    };
}

pub(crate) fn client_with(server: &Server, http: HttpOptions) -> OllamaClient {
    let config = OllamaConfig::default()
        .with_host(server.url())
        .with_model("llama3.2")
        .with_http(http);
    OllamaClient::new(config).unwrap()
}

pub(crate) fn client(server: &Server) -> OllamaClient {
    client_with(server, fast_retries())
}

fn question() -> Vec<Message> {
    question_about("Tokyo")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client).await
}

#[tokio::test]
async fn ollama_streams_plain_text_and_sends_no_tools() {
    let (out, server) = stream(
        Reply::ndjson(transcript!("text.ndjson")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(
        out.done().0,
        &Message::assistant("The capital of France is Paris.")
    );
    assert_eq!(out.done().1, &FinishReason::Stop);
    assert_eq!(out.usage(), Some(Usage::new(169, 15)));

    let request = &server.requests()[0];
    assert_eq!(request.uri, "/api/chat");
    assert_eq!(request.header("authorization"), None);
    let body = request.json();
    assert_eq!(body["model"], "llama3.2");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"],
        json!([
            { "role": "system", "content": "You are terse." },
            { "role": "user", "content": "What is the weather in Tokyo?" }
        ])
    );
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn ollama_tool_call_with_object_arguments_gets_an_id() {
    let request = ChatRequest::new(question()).with_tools(tools());
    let (out, server) = stream(Reply::ndjson(transcript!("tool_call.ndjson")), request).await;
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(args(&calls[0]), json!({ "city": "Tokyo" }));
    assert!(calls[0].id.starts_with("call_"), "{}", calls[0].id);
    assert_eq!(
        out.starts(),
        vec![(0, calls[0].id.clone(), "get_weather".to_owned())]
    );
    assert_eq!(out.ended_calls(), calls);
    assert_eq!(out.done().1, &FinishReason::ToolCalls);

    let body = server.requests()[0].json();
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
}

#[tokio::test]
async fn ollama_parallel_calls_in_one_line() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("parallel_calls.ndjson")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    let calls = out.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(args(&calls[0]), json!({ "path": "notes/\"draft\".txt" }));
    assert_eq!(args(&calls[1]), json!({ "query": "café", "limit": 3 }));
    assert_ne!(calls[0].id, calls[1].id);
}

#[tokio::test]
async fn ollama_call_in_the_done_line() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("call_in_done_line.ndjson")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    assert_eq!(out.text(), "Checking.");
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(args(&calls[0]), json!({ "city": "Oslo" }));
    assert_eq!(out.done().1, &FinishReason::ToolCalls);
}

#[tokio::test]
async fn ollama_text_in_the_done_line_is_kept() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("content_in_done_line.ndjson")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("That's a good question!"));
}

#[tokio::test]
async fn ollama_multi_step_sends_the_result_with_the_tool_name() {
    let server = Server::start(vec![
        Reply::ndjson(transcript!("tool_call.ndjson")),
        Reply::ndjson(transcript!("final_answer.ndjson")),
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
    messages.push(Message::tool_result(&call.id, &call.name, "22°C"));
    let second = Collected::from(
        model
            .stream(ChatRequest::new(messages).with_tools(tools()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(second.done().0, &Message::assistant("It is 18°C in Tokyo."));

    let body = server.requests()[1].json();
    assert_eq!(
        body["messages"][2],
        json!({
            "role": "assistant",
            "content": "",
            "tool_calls": [{ "function": { "name": "get_weather", "arguments": { "city": "Tokyo" } } }]
        })
    );
    assert_eq!(
        body["messages"][3],
        json!({ "role": "tool", "content": "22°C", "tool_name": "get_weather" })
    );
}

#[tokio::test]
async fn ollama_stream_without_done_line_is_truncated() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("truncated.ndjson")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Once upon a time");
    let error = out.error.expect("the stream ended early");
    assert_eq!(
        error.to_string(),
        "the ollama stream ended early after 334 bytes and 2 events"
    );
    assert!(
        matches!(
            error,
            ProviderError::Truncated {
                provider: Provider::Ollama,
                bytes: Some(334),
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
async fn ollama_error_line_after_200_carries_the_message() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("error_after_200.ndjson")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), "Yes.");
    match out.error {
        Some(ProviderError::Api {
            provider: Provider::Ollama,
            status: None,
            message,
            ..
        }) => assert_eq!(message, "an error was encountered while running the model"),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn ollama_length_done_reason() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("length.ndjson")),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("A very long answer"));
    assert_eq!(out.done().1, &FinishReason::Length);
}

#[tokio::test]
async fn ollama_call_ids_from_newer_servers_are_kept() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("calls_with_ids.ndjson")),
        ChatRequest::new(question()).with_tools(tools()),
    )
    .await;
    assert_eq!(
        out.calls(),
        vec![ToolCall::new(
            "call_x1",
            "get_weather",
            r#"{"city":"Rome"}"#
        )]
    );
}

#[tokio::test]
async fn ollama_busy_then_success_honours_retry_after() {
    let server = Server::start(vec![
        Reply::error(503, br#"{"error":"server busy, please try again"}"#)
            .header("retry-after", "1"),
        Reply::ndjson(transcript!("text.ndjson")),
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
async fn ollama_rate_limit_then_success() {
    let server = Server::start(vec![
        Reply::error(429, br#"{"error":"too many requests"}"#),
        Reply::ndjson(transcript!("text.ndjson")),
    ])
    .await;
    let out = Collected::from(
        client(&server)
            .stream(ChatRequest::new(question()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(out.text(), "The capital of France is Paris.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn ollama_missing_model_error_is_typed() {
    let server = Server::start(vec![Reply::error(
        404,
        transcript!("error_model_not_found.json"),
    )])
    .await;
    let error = client(&server)
        .chat(ChatRequest::new(question()))
        .await
        .unwrap_err();
    match error {
        ProviderError::Api {
            status: Some(404),
            message,
            ..
        } => assert_eq!(message, "model \"llama9\" not found, try pulling it first"),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn ollama_chat_reads_a_non_streamed_tool_call() {
    let server = Server::start(vec![Reply::json(transcript!("chat_tool_call.json"))]).await;
    let response = client(&server)
        .chat(ChatRequest::new(question()).with_tools(tools()))
        .await
        .unwrap();
    let Message::Assistant { tool_calls, .. } = &response.message else {
        panic!("not an assistant message");
    };
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].name, "get_current_weather");
    assert_eq!(
        args(&tool_calls[0]),
        json!({ "format": "celsius", "location": "Paris, FR" })
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Some(Usage::new(122, 33)));
    assert_eq!(server.requests()[0].json()["stream"], false);
}

#[tokio::test]
async fn ollama_slow_chunked_stream_gives_the_same_text() {
    let slow = Reply::ndjson(transcript!("text.ndjson")).chunked(4, Duration::from_millis(1));
    let (out, _server) = stream(slow, ChatRequest::new(question())).await;
    assert_eq!(
        out.done().0,
        &Message::assistant("The capital of France is Paris.")
    );
}

#[tokio::test]
async fn ollama_request_timeout_is_a_transport_error() {
    let server = Server::start(vec![
        Reply::ndjson(transcript!("text.ndjson")).delayed(Duration::from_secs(30)),
    ])
    .await;
    let http = fast_retries().with_request_timeout(Duration::from_millis(200));
    let error = client_with(&server, http)
        .stream(ChatRequest::new(question()))
        .await
        .err()
        .expect("the server never answered in time");
    assert!(
        matches!(
            error,
            ProviderError::Transport {
                provider: Provider::Ollama,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn ollama_stalled_stream_hits_the_read_timeout() {
    let server = Server::start(vec![
        Reply::ndjson(transcript!("text.ndjson")).chunked(64, Duration::from_secs(30)),
    ])
    .await;
    let http = fast_retries().with_read_timeout(Duration::from_millis(200));
    let stream = client_with(&server, http)
        .stream(ChatRequest::new(question()))
        .await
        .unwrap();
    let out = Collected::from(stream).await;
    // The response had started (its headers came at once), so the stall before the first
    // piece of the body cuts the stream off.
    match out.error {
        Some(ProviderError::Truncated {
            provider: Provider::Ollama,
            bytes: Some(0),
            events: 0,
            incomplete_call: None,
            cause: Some(cause),
        }) => assert!(cause.ends_with("(timed out)"), "{cause}"),
        other => panic!("expected a stream that ended early, got {other:?}"),
    }
}
