//! What only the Anthropic Messages client does, against transcripts served on loopback: data-only
//! streams, calls without arguments, server tools, and calls cut off by `max_tokens` or the
//! connection. What every client does is in `provider_scenarios`.

use std::time::Duration;

use tool_core::model::{ChatRequest, FinishReason, Message, ToolCall};

use crate::{
    loopback::{CUT_CAUSE, Collected, Reply, Server, find, question_about, stream_once, tools},
    provider_wires::{self, client},
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/anthropic/", $name))
    };
}

fn question() -> Vec<Message> {
    question_about("Paris")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client(provider_wires::anthropic)).await
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
        ChatRequest::new(question()).tools(tools()),
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
        ChatRequest::new(question()).tools(tools()),
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
        ChatRequest::new(question()).tools(tools()),
    )
    .await;
    let (message, finish) = out.done();
    assert_eq!(message, &Message::assistant("Let me search. Found it."));
    assert_eq!(finish, &FinishReason::Stop);
    assert!(out.starts().is_empty());
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
        ChatRequest::new(question()).tools(tools()),
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
        ChatRequest::new(question()).tools(tools()),
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
