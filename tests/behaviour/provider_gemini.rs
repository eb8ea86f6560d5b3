//! What only the Gemini client does, against `streamGenerateContent` transcripts served on
//! loopback: call ids echoed in the function responses, and Vertex's streamed partial arguments.
//! What every client does is in `provider_scenarios`.

use serde_json::json;
use tool_core::model::{ChatModel, ChatRequest, Message};

use crate::{
    loopback::{Collected, Reply, Server, args, fast_retries, question_about, stream_once, tools},
    provider_wires::{self, client},
};

macro_rules! transcript {
    ($name:literal) => {
        include_bytes!(concat!("../transcripts/gemini/", $name))
    };
}

fn question() -> Vec<Message> {
    question_about("Paris")
}

async fn stream(reply: Reply, request: ChatRequest) -> (Collected, Server) {
    stream_once(reply, request, client(provider_wires::gemini)).await
}

#[tokio::test]
async fn gemini_call_ids_are_echoed_in_the_function_responses() {
    let server = Server::start(vec![
        Reply::sse(transcript!("calls_with_ids.sse")),
        Reply::sse(transcript!("final_answer.sse")),
    ])
    .await;
    let model = provider_wires::gemini().client(&server, fast_retries());
    let mut messages = question();
    let first = Collected::from(
        model
            .stream(ChatRequest::new(messages.clone()).tools(tools()))
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
async fn gemini_streamed_partial_args_are_assembled() {
    let (out, _server) = stream(
        Reply::sse(transcript!("partial_args.sse")),
        ChatRequest::new(question()).tools(tools()),
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
