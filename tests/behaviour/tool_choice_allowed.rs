//! [`ToolChoice::Allowed`]: every offered tool stays in the request and the model may call only
//! some of them, sent in each provider's own form over real HTTP (recorded by the loopback
//! server), refused before anything is sent where a provider has no such form, and honoured by
//! the offline test model.

use serde_json::{Value, json};
use tool_core::model::{ChatModel, ChatRequest, ProviderError, TestModel, ToolChoice};

use crate::{
    loopback::{Collected, Reply, Server, question_about, tools},
    provider_wires::{self, Wire},
};

fn asking(choice: ToolChoice) -> ChatRequest {
    ChatRequest::new(question_about("Paris"))
        .tools(tools())
        .tool_choice(choice)
}

/// The body `wire`'s client sends for `choice`, streamed or not.
async fn body(wire: &Wire, streamed: bool, choice: ToolChoice) -> Value {
    let reply = if streamed {
        (wire.streamed)(wire.text.recording)
    } else {
        Reply::json(wire.whole[0].recording)
    };
    let server = Server::start(vec![reply]).await;
    let model = wire.client(&server, crate::loopback::fast_retries());
    if streamed {
        let out = Collected::from(model.stream(asking(choice)).await.unwrap()).await;
        assert!(out.error.is_none(), "{:?}", out.error);
    } else {
        model.chat(asking(choice)).await.unwrap();
    }
    server.requests()[0].json()
}

#[tokio::test]
async fn allowed_tools_are_sent_in_each_providers_form() {
    let cases = [
        (
            provider_wires::openai(),
            "/tool_choice",
            json!({ "type": "allowed_tools", "allowed_tools": { "mode": "auto",
                "tools": [{ "type": "function", "function": { "name": "read_file" } }] } }),
            json!({ "type": "allowed_tools", "allowed_tools": { "mode": "required",
                "tools": [{ "type": "function", "function": { "name": "read_file" } }] } }),
        ),
        (
            provider_wires::responses(),
            "/tool_choice",
            json!({ "type": "allowed_tools", "mode": "auto",
                "tools": [{ "type": "function", "name": "read_file" }] }),
            json!({ "type": "allowed_tools", "mode": "required",
                "tools": [{ "type": "function", "name": "read_file" }] }),
        ),
        (
            provider_wires::gemini(),
            "/toolConfig/functionCallingConfig",
            json!({ "mode": "VALIDATED", "allowedFunctionNames": ["read_file"] }),
            json!({ "mode": "ANY", "allowedFunctionNames": ["read_file"] }),
        ),
    ];
    for (wire, pointer, allowed, required) in cases {
        for streamed in [true, false] {
            let what = format!("{} streamed={streamed}", wire.provider);
            let sent = body(&wire, streamed, ToolChoice::allowed(["read_file"])).await;
            assert_eq!(sent.pointer(pointer), Some(&allowed), "{what}: {sent}");
            // Both tools are still offered.
            let offered = sent.pointer("/tools").map(Value::to_string);
            for name in ["get_weather", "read_file"] {
                assert!(
                    offered.as_deref().unwrap_or_default().contains(name),
                    "{what}"
                );
            }
            let sent = body(&wire, streamed, ToolChoice::required_one_of(["read_file"])).await;
            assert_eq!(sent.pointer(pointer), Some(&required), "{what}: {sent}");
        }
    }
}

#[tokio::test]
async fn allowed_tools_are_refused_where_the_provider_has_no_such_choice() {
    for (wire, expected) in [
        (
            provider_wires::anthropic(),
            "anthropic has no tool choice that limits the callable tools; offer only the allowed \
             ones instead",
        ),
        (
            provider_wires::ollama(),
            "ollama cannot force a tool call: /api/chat has no tool choice (asked for an \
             allowed-tools list)",
        ),
    ] {
        let server = Server::start(vec![(wire.streamed)(wire.text.recording)]).await;
        let model = wire.client(&server, crate::loopback::fast_retries());
        for streamed in [true, false] {
            let request = asking(ToolChoice::allowed(["read_file"]));
            let error = if streamed {
                model.stream(request).await.err()
            } else {
                model.chat(request).await.err()
            };
            match error {
                Some(ProviderError::Config(message)) => assert_eq!(message, expected),
                other => panic!("{}: {other:?}", wire.provider),
            }
        }
        assert!(server.requests().is_empty(), "{}", wire.provider);
    }
}

#[tokio::test]
async fn allowed_tools_must_name_offered_tools() {
    let wire = provider_wires::openai();
    let server = Server::start(vec![]).await;
    let model = wire.client(&server, crate::loopback::fast_retries());
    let cases = [
        (
            asking(ToolChoice::allowed(["get_time"])),
            "tool choice names `get_time`, which is not among the request's tools (get_weather, \
             read_file)",
        ),
        (
            asking(ToolChoice::allowed(Vec::<String>::new())),
            "tool choice `allowed` names no tools",
        ),
        (
            ChatRequest::new(question_about("Paris"))
                .tool_choice(ToolChoice::required_one_of(["read_file"])),
            "tool choice `allowed` names tools, and the request has none",
        ),
    ];
    for (request, expected) in cases {
        match model.chat(request).await {
            Err(ProviderError::Config(message)) => assert_eq!(message, expected),
            other => panic!("{other:?}"),
        }
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_test_model_calls_only_the_allowed_tools() {
    let answer = TestModel::new()
        .chat(asking(ToolChoice::allowed(["read_file"])))
        .await
        .unwrap();
    let tool_core::model::Message::Assistant { tool_calls, .. } = answer.message else {
        panic!("not an assistant message");
    };
    let names: Vec<&str> = tool_calls.iter().map(|call| call.name.as_str()).collect();
    assert_eq!(names, ["read_file"]);
}
