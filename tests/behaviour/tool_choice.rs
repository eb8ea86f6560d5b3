//! Whether, and which, tool the model must call: [`ToolChoice`] as each provider client sends it
//! over real HTTP (recorded by the loopback server), the errors for choices a request cannot
//! honour, and the offline models.

use std::time::Duration;

use axum::body::Bytes;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_core::{
    Provider, ToolRegistry,
    model::{
        ChatModel, ChatRequest, FinishReason, Message, ModelEvent, ProviderError, RequestTools,
        ScriptedModel, ScriptedResponse, TestModel, ToolCall, ToolChoice,
    },
    tool,
};

use crate::loopback::{Collected, Reply, Server, fast_retries, question_about, tools};

/// One of the four provider clients, streaming or not, connected to a loopback server that
/// answers each request with a successful answer of the right kind.
pub(crate) struct Link {
    provider: Provider,
    streamed: bool,
    pub(crate) server: Server,
    pub(crate) model: Box<dyn ChatModel>,
}

/// More answers than any test sends requests over one link.
const ANSWERS: usize = 16;

pub(crate) async fn link(provider: Provider, streamed: bool) -> Link {
    let wire = match provider {
        Provider::OpenAi => crate::provider_wires::openai(),
        Provider::Anthropic => crate::provider_wires::anthropic(),
        Provider::Gemini => crate::provider_wires::gemini(),
        Provider::Ollama => crate::provider_wires::ollama(),
    };
    let stream_body = (wire.streamed)(wire.text.recording);
    let whole_body = Reply::json(wire.whole[0].recording);
    let reply = if streamed { stream_body } else { whole_body };
    let server = Server::start(vec![reply; ANSWERS]).await;
    let model = wire.client(&server, fast_retries());
    Link {
        provider,
        streamed,
        server,
        model,
    }
}

pub(crate) const ALL: [Provider; 4] = [
    Provider::OpenAi,
    Provider::Anthropic,
    Provider::Gemini,
    Provider::Ollama,
];

/// The question about Paris with the two loopback tools (`get_weather`, `read_file`) and
/// `choice`.
fn asking(choice: ToolChoice) -> ChatRequest {
    ChatRequest::new(question_about("Paris"))
        .tools(tools())
        .tool_choice(choice)
}

/// Sends `request` over `link` and returns the request body the server received.
async fn sent(link: &Link, request: ChatRequest) -> Bytes {
    let what = format!("{} streamed={}", link.provider, link.streamed);
    let before = link.server.requests().len();
    tokio::time::timeout(Duration::from_secs(20), async {
        if link.streamed {
            let stream = match link.model.stream(request).await {
                Ok(stream) => stream,
                Err(error) => panic!("{what}: {error}"),
            };
            let collected = Collected::from(stream).await;
            assert!(collected.error.is_none(), "{what}: {:?}", collected.error);
        } else {
            link.model.chat(request).await.expect(&what);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: no answer in time"));
    let requests = link.server.requests();
    assert_eq!(requests.len(), before + 1, "{what}");
    requests[before].body.clone()
}

/// The error `request` fails with over `link`, asserting that nothing reached the server.
async fn refused(link: &Link, request: ChatRequest) -> ProviderError {
    let what = format!("{} streamed={}", link.provider, link.streamed);
    let before = link.server.requests().len();
    let error = tokio::time::timeout(Duration::from_secs(20), async {
        if link.streamed {
            link.model.stream(request).await.err()
        } else {
            link.model.chat(request).await.err()
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: no answer in time"))
    .unwrap_or_else(|| panic!("{what}: the request was accepted"));
    assert_eq!(
        link.server.requests().len(),
        before,
        "{what}: a request was sent"
    );
    error
}

fn json_of(body: &Bytes) -> Value {
    serde_json::from_slice(body).expect("the request body is JSON")
}

fn config_message(error: ProviderError) -> String {
    match error {
        ProviderError::Config(message) => message,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[tokio::test]
async fn each_choice_is_sent_in_the_providers_own_form() {
    let cases = [
        (
            Provider::OpenAi,
            "tool_choice",
            [
                json!("none"),
                json!("required"),
                json!({ "type": "function", "function": { "name": "read_file" } }),
            ],
        ),
        (
            Provider::Anthropic,
            "tool_choice",
            [
                json!({ "type": "none" }),
                json!({ "type": "any" }),
                json!({ "type": "tool", "name": "read_file" }),
            ],
        ),
        (
            Provider::Gemini,
            "toolConfig",
            [
                json!({ "functionCallingConfig": { "mode": "NONE" } }),
                json!({ "functionCallingConfig": { "mode": "ANY" } }),
                json!({
                    "functionCallingConfig": {
                        "mode": "ANY",
                        "allowedFunctionNames": ["read_file"]
                    }
                }),
            ],
        ),
    ];
    let choices = [
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::tool("read_file"),
    ];
    for (provider, key, expected) in cases {
        for streamed in [true, false] {
            let link = link(provider, streamed).await;
            let what = format!("{provider} streamed={streamed}");
            let auto = json_of(&sent(&link, asking(ToolChoice::Auto)).await);
            assert!(auto.get(key).is_none(), "{what}: {auto}");
            assert!(auto.get("tools").is_some(), "{what}: {auto}");
            for (choice, expected) in choices.iter().zip(&expected) {
                let body = json_of(&sent(&link, asking(choice.clone())).await);
                assert_eq!(&body[key], expected, "{what} {choice:?}");
                // The choice is the only difference from the `Auto` body.
                let mut rest = body.clone();
                rest.as_object_mut().unwrap().remove(key);
                assert_eq!(rest, auto, "{what} {choice:?}");
            }
        }
    }
}

/// `Auto` is every provider's default, so it adds nothing: the bodies have exactly the fields
/// they had before there was a tool choice.
#[tokio::test]
async fn auto_sends_no_choice_on_any_wire() {
    let fields = |provider: Provider, streamed: bool, with_tools: bool| -> Vec<&'static str> {
        let mut fields = match provider {
            Provider::OpenAi if streamed => vec!["messages", "model", "stream", "stream_options"],
            Provider::OpenAi | Provider::Ollama => vec!["messages", "model", "stream"],
            Provider::Anthropic => vec!["max_tokens", "messages", "model", "stream", "system"],
            Provider::Gemini => vec!["contents", "systemInstruction"],
        };
        if with_tools {
            fields.push("tools");
        }
        fields.sort_unstable();
        fields
    };
    for provider in ALL {
        for streamed in [true, false] {
            let link = link(provider, streamed).await;
            for with_tools in [false, true] {
                let tools = if with_tools {
                    tools()
                } else {
                    RequestTools::default()
                };
                let request = ChatRequest::new(question_about("Paris"))
                    .tools(tools)
                    .tool_choice(ToolChoice::Auto);
                let body = json_of(&sent(&link, request).await);
                let mut sent_fields: Vec<&str> = body
                    .as_object()
                    .unwrap()
                    .keys()
                    .map(String::as_str)
                    .collect();
                sent_fields.sort_unstable();
                assert_eq!(
                    sent_fields,
                    fields(provider, streamed, with_tools),
                    "{provider} streamed={streamed} tools={with_tools}"
                );
            }
        }
    }
}

#[tokio::test]
async fn without_tools_none_sends_neither_tools_nor_a_choice() {
    for provider in ALL {
        for streamed in [true, false] {
            let link = link(provider, streamed).await;
            let plain = ChatRequest::new(question_about("Paris"));
            let none = plain.clone().tool_choice(ToolChoice::None);
            let body = sent(&link, none).await;
            let what = format!("{provider} streamed={streamed}");
            for key in ["tools", "tool_choice", "toolConfig"] {
                assert!(json_of(&body).get(key).is_none(), "{what}: {key}");
            }
            assert_eq!(body, sent(&link, plain).await, "{what}");
        }
    }
}

#[tokio::test]
async fn ollama_sends_none_as_a_request_without_tools() {
    for streamed in [true, false] {
        let link = link(Provider::Ollama, streamed).await;
        let body = sent(&link, asking(ToolChoice::None)).await;
        let without_tools = sent(&link, ChatRequest::new(question_about("Paris"))).await;
        assert_eq!(body, without_tools, "streamed={streamed}");
        let json = json_of(&body);
        assert!(json.get("tools").is_none(), "{json}");
        assert!(json.get("tool_choice").is_none(), "{json}");
        // `Auto` still offers the tools.
        let auto = json_of(&sent(&link, asking(ToolChoice::Auto)).await);
        assert_eq!(auto["tools"][1]["function"]["name"], "read_file");
    }
}

#[tokio::test]
async fn ollama_refuses_to_force_a_tool_call_before_sending() {
    for streamed in [true, false] {
        let link = link(Provider::Ollama, streamed).await;
        let cases = [
            (
                asking(ToolChoice::Required),
                "ollama cannot force a tool call: /api/chat has no tool choice (asked for `required`)",
            ),
            (
                asking(ToolChoice::tool("get_weather")),
                "ollama cannot force a tool call: /api/chat has no tool choice (asked for tool `get_weather`)",
            ),
            // Without tools the request could not be honoured anywhere, but the reason that
            // holds whatever the tools is the one given.
            (
                ChatRequest::new(question_about("Paris")).tool_choice(ToolChoice::Required),
                "ollama cannot force a tool call: /api/chat has no tool choice (asked for `required`)",
            ),
        ];
        for (request, expected) in cases {
            let error = refused(&link, request).await;
            assert_eq!(config_message(error), expected, "streamed={streamed}");
        }
    }
}

#[tokio::test]
async fn a_forced_call_the_tools_cannot_satisfy_fails_before_sending() {
    let no_tools = || ChatRequest::new(question_about("Paris"));
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        for streamed in [true, false] {
            let link = link(provider, streamed).await;
            let cases = [
                (
                    no_tools().tool_choice(ToolChoice::Required),
                    "tool choice `required` needs tools, and the request has none",
                ),
                (
                    no_tools().tool_choice(ToolChoice::tool("get_weather")),
                    "tool choice names `get_weather`, and the request has no tools",
                ),
                (
                    asking(ToolChoice::tool("get_time")),
                    "tool choice names `get_time`, which is not among the request's tools \
                     (get_weather, read_file)",
                ),
            ];
            for (request, expected) in cases {
                let error = refused(&link, request).await;
                let what = format!("{provider} streamed={streamed}");
                assert_eq!(config_message(error), expected, "{what}");
            }
        }
    }
}

/// Current weather in a city.
#[tool]
async fn get_weather(city: String) -> String {
    format!("sunny in {city}")
}

/// Read the notes.
#[tool]
async fn read_notes() -> &'static str {
    "nothing yet"
}

#[tokio::test]
async fn a_named_tool_must_be_enabled_in_the_snapshot_sent() {
    let registry = ToolRegistry::new();
    registry.register(GetWeather).unwrap();
    registry.register(ReadNotes).unwrap();
    assert!(registry.disable("read_notes"));
    let snapshot_request = |choice: ToolChoice| {
        ChatRequest::new(question_about("Paris"))
            .tools(RequestTools::from_snapshot(registry.snapshot()))
            .tool_choice(choice)
    };
    let link = link(Provider::OpenAi, false).await;
    let error = refused(&link, snapshot_request(ToolChoice::tool("read_notes"))).await;
    assert_eq!(
        config_message(error),
        "tool choice names `read_notes`, which is not among the request's tools (get_weather)"
    );
    let body = json_of(&sent(&link, snapshot_request(ToolChoice::tool("get_weather"))).await);
    assert_eq!(
        body["tool_choice"],
        json!({ "type": "function", "function": { "name": "get_weather" } })
    );
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(1), "{body}");
}

#[test]
fn tool_choice_is_saved_as_plain_json() {
    let cases = [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
        (
            ToolChoice::tool("get_weather"),
            json!({ "tool": "get_weather" }),
        ),
    ];
    for (choice, saved) in cases {
        assert_eq!(serde_json::to_value(&choice).unwrap(), saved);
        assert_eq!(serde_json::from_value::<ToolChoice>(saved).unwrap(), choice);
    }
    assert_eq!(ToolChoice::default(), ToolChoice::Auto);
    assert_eq!(
        ChatRequest::new(Vec::new()).tool_choice,
        ToolChoice::Auto,
        "a new request leaves the choice to the model"
    );
    assert_eq!(
        serde_json::from_value::<ToolChoice>(json!("any"))
            .unwrap_err()
            .to_string(),
        "unknown variant `any`, expected one of `auto`, `none`, `required`, `tool`, `allowed`"
    );
}

fn calls_of(message: &Message) -> Vec<ToolCall> {
    match message {
        Message::Assistant { tool_calls, .. } => tool_calls.clone(),
        other => panic!("not an assistant message: {other:?}"),
    }
}

#[tokio::test]
async fn test_model_answers_with_text_only_when_the_choice_is_none() {
    let model = TestModel::new();
    let response = model.chat(asking(ToolChoice::None)).await.unwrap();
    assert_eq!(
        response.message,
        Message::assistant(
            "(test model) Tool calls are turned off for this request, so I call none. \
             You said: What is the weather in Paris?"
        )
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);

    let events: Vec<ModelEvent> = model
        .stream(asking(ToolChoice::None))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ModelEvent::ToolCallStarted(_))),
        "{events:?}"
    );
    assert!(
        matches!(
            events.last(),
            Some(ModelEvent::Done {
                finish_reason: FinishReason::Stop,
                ..
            })
        ),
        "{events:?}"
    );
}

#[tokio::test]
async fn test_model_calls_only_the_named_tool() {
    // `call_tools` says what the model would pick; the request's choice overrides it.
    let model = TestModel::new().call_tools(["get_weather"]);
    let response = model
        .chat(asking(ToolChoice::tool("read_file")))
        .await
        .unwrap();
    assert_eq!(
        calls_of(&response.message),
        vec![ToolCall::new(
            "test_call_0",
            "read_file",
            r#"{"path":"example"}"#
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);

    let events: Vec<ModelEvent> = model
        .stream(asking(ToolChoice::tool("get_weather")))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    let started: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallStarted(start) => Some(start.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["get_weather"]);

    // Once the forced call is answered, the model answers with text instead of calling again.
    let mut messages = question_about("Paris");
    messages.push(Message::assistant_with_calls(
        "",
        calls_of(&response.message),
    ));
    messages.push(Message::tool_result("test_call_0", "read_file", "empty"));
    let answer = model
        .chat(
            ChatRequest::new(messages)
                .tools(tools())
                .tool_choice(ToolChoice::tool("read_file")),
        )
        .await
        .unwrap();
    assert_eq!(
        answer.message,
        Message::assistant("(test model) I called 1 tool(s):\n- read_file: empty")
    );
}

#[tokio::test]
async fn test_model_calls_every_tool_when_a_call_is_required_and_checks_like_a_provider() {
    let response = TestModel::new()
        .chat(asking(ToolChoice::Required))
        .await
        .unwrap();
    let names: Vec<String> = calls_of(&response.message)
        .into_iter()
        .map(|call| call.name)
        .collect();
    assert_eq!(names, ["get_weather", "read_file"]);

    let error = TestModel::new()
        .chat(ChatRequest::new(question_about("Paris")).tool_choice(ToolChoice::Required))
        .await
        .unwrap_err();
    assert_eq!(
        config_message(error),
        "tool choice `required` needs tools, and the request has none"
    );
    let Err(error) = TestModel::new()
        .stream(asking(ToolChoice::tool("get_time")))
        .await
    else {
        panic!("a tool that is not offered cannot be forced");
    };
    assert_eq!(
        config_message(error),
        "tool choice names `get_time`, which is not among the request's tools (get_weather, read_file)"
    );
}

#[tokio::test]
async fn scripted_model_records_the_choice() {
    let model = ScriptedModel::new([ScriptedResponse::text("ok")]);
    model
        .chat(asking(ToolChoice::tool("get_weather")))
        .await
        .unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tool_choice, ToolChoice::tool("get_weather"));
}
