//! What only the OpenAI-compatible client does, against Chat Completions transcripts served on
//! loopback: the ways compatible servers differ. What every client does is in
//! `provider_scenarios`.

use std::time::Duration;

use serde_json::json;
use tool_core::model::{
    ChatModel, ChatRequest, FinishReason, Message, OpenAiClient, OpenAiConfig, ToolCall, Usage,
};

use crate::{
    loopback::{
        CUT_CAUSE, Collected, Reply, Server, args, find, question_about, stream_once, tools,
    },
    provider_wires::{self, client},
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/openai/", $name))
    };
}

fn question() -> Vec<Message> {
    question_about("Paris")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client(provider_wires::openai)).await
}

#[tokio::test]
async fn openai_tool_call_index_starting_at_1_with_empty_fragments() {
    let (out, _server) = stream(
        Reply::sse(transcript!("index_starts_at_1.sse")),
        ChatRequest::new(question()).tools(tools()),
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
        ChatRequest::new(question()).tools(tools()),
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
        ChatRequest::new(question()).tools(tools()),
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
        ChatRequest::new(question()).tools(tools()),
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
async fn openai_local_server_without_key_gets_no_authorization_header() {
    let server = Server::start(vec![Reply::sse(transcript!("text.sse"))]).await;
    let config = OpenAiConfig::default()
        .base_url(format!("{}/v1/", server.url()))
        .header("HTTP-Referer", "https://example.com/app")
        .include_usage(false);
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
        ChatRequest::new(question()).tools(tools()),
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
