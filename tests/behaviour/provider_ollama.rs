//! What only the Ollama native client does, against `/api/chat` NDJSON transcripts served on
//! loopback: calls and text in the `done` line, and ids from newer servers. What every client
//! does is in `provider_scenarios`.

use serde_json::json;
use tool_core::model::{ChatRequest, FinishReason, Message, ToolCall};

use crate::{
    loopback::{Collected, Reply, Server, args, question_about, stream_once, tools},
    provider_wires::{self, client},
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/ollama/", $name))
    };
}

fn question() -> Vec<Message> {
    question_about("Tokyo")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client(provider_wires::ollama)).await
}

#[tokio::test]
async fn ollama_call_in_the_done_line() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("call_in_done_line.ndjson")),
        ChatRequest::new(question()).tools(tools()),
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
async fn ollama_call_ids_from_newer_servers_are_kept() {
    let (out, _server) = stream(
        Reply::ndjson(transcript!("calls_with_ids.ndjson")),
        ChatRequest::new(question()).tools(tools()),
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
