//! Our OpenAI-family wires against a real model server: llama.cpp's `llama-server`, which
//! serves Chat Completions, Anthropic Messages and Responses, with a tiny random-weight model
//! (see `tests/llama/` and `llama_server_support`). The transcripts prove our parsers; this
//! proves our requests: the server accepts the bodies we send, a whole agent round trip works
//! on each wire, streamed and not, and a server killed mid-stream gives `Truncated`.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use tool_core::{
    Agent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError,
    model::{
        AnthropicClient, AnthropicConfig, ChatModel, ChatRequest, FinishReason, HttpOptions,
        Message, ModelEvent, ModelSettings, OpenAiClient, OpenAiConfig, ProviderError,
        RequestTools, ResponsesClient, ResponsesConfig, ToolChoice,
    },
};

use crate::{
    agent_support::assert_every_call_answered,
    llama_server_support::{LlamaFiles, LlamaServer, llama_files},
    loopback::Collected,
};

/// The three wires llama-server speaks.
#[derive(Clone, Copy, Debug)]
enum LlamaWire {
    ChatCompletions,
    Messages,
    Responses,
}

const WIRES: [LlamaWire; 3] = [
    LlamaWire::ChatCompletions,
    LlamaWire::Messages,
    LlamaWire::Responses,
];

/// How long one model call may take: a forced call is a few dozen tokens, each a pass of the
/// tool grammar over the whole vocabulary, on shared cores.
const CALL: Duration = Duration::from_secs(120);

/// Timeouts for a server that takes its time on shared cores; no retries, which would hide a
/// failure.
fn patient() -> HttpOptions {
    HttpOptions::default()
        .read_timeout(CALL * 2)
        .request_timeout(CALL * 3)
        .max_retries(0)
}

/// Our client of `wire` against `server`.
fn client(wire: LlamaWire, server: &LlamaServer) -> Arc<dyn ChatModel> {
    let v1 = format!("{}/v1", server.url);
    match wire {
        LlamaWire::ChatCompletions => Arc::new(
            OpenAiClient::new(
                OpenAiConfig::default()
                    .base_url(v1)
                    .model("tiny")
                    .http(patient()),
            )
            .unwrap(),
        ),
        // llama-server checks no key unless started with one; the client wants one anyway.
        LlamaWire::Messages => Arc::new(
            AnthropicClient::new(
                AnthropicConfig::default()
                    .base_url(&server.url)
                    .model("tiny")
                    .api_key("unused")
                    .http(patient()),
            )
            .unwrap(),
        ),
        LlamaWire::Responses => Arc::new(
            ResponsesClient::new(
                ResponsesConfig::default()
                    .base_url(v1)
                    .model("tiny")
                    .http(patient()),
            )
            .unwrap(),
        ),
    }
}

/// `get_weather {city, days, note}`, with the bounds a grammar can enforce (an enum, a bounded
/// integer, a short string), so that a random model finishes its call in a few tokens. It
/// records the arguments of every call.
#[derive(Clone, Default)]
struct Weather {
    calls: Arc<Mutex<Vec<JsonObject>>>,
}

impl Weather {
    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": { "type": "string", "enum": ["Paris", "Lyon", "Nice"] },
                "days": { "type": "integer", "minimum": 1, "maximum": 7 },
                "note": { "type": "string", "maxLength": 4 }
            },
            "required": ["city", "days", "note"],
            "additionalProperties": false
        })
    }

    fn calls(&self) -> Vec<JsonObject> {
        self.calls.lock().unwrap().clone()
    }
}

#[tool_core::async_trait]
impl ExecutableTool for Weather {
    fn name(&self) -> &str {
        "get_weather"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new("get_weather", "Current weather in a city.", Self::schema())
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let city = args["city"].as_str().unwrap_or_default().to_owned();
        self.calls.lock().unwrap().push(args);
        Ok(format!("18°C and sunny in {city}"))
    }
}

/// Asserts that `arguments` are valid for [`Weather::schema`].
fn assert_valid(arguments: &JsonObject) {
    let city = arguments["city"].as_str().unwrap_or_default();
    assert!(["Paris", "Lyon", "Nice"].contains(&city), "{arguments:?}");
    let days = arguments["days"].as_i64().unwrap_or_default();
    assert!((1..=7).contains(&days), "{arguments:?}");
    let note = arguments["note"].as_str().expect("a note");
    assert!(note.chars().count() <= 4, "{arguments:?}");
    assert_eq!(arguments.len(), 3, "{arguments:?}");
}

fn settings() -> ModelSettings {
    let mut settings = ModelSettings::default();
    settings.max_tokens = Some(200);
    settings
}

/// One agent turn on `wire`: the first step must call the tool, the tool runs, its result goes
/// back, and the model answers.
async fn round_trip(server: &LlamaServer, wire: LlamaWire, streamed: bool) {
    let what = format!("{wire:?} streamed={streamed}");
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(
        client(wire, server),
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(dir.path().join("session.json"))
            .tool_choice(ToolChoice::Required)
            .model_settings(settings())
            .max_steps(4),
    );
    let weather = Weather::default();
    agent.add_tool(weather.clone()).unwrap();
    let turn = async {
        if streamed {
            let mut events = agent.stream_chat("What is the weather in Paris?");
            let mut done = None;
            while let Some(event) = futures::StreamExt::next(&mut events).await {
                if let tool_core::AgentEvent::Done(reply) = event.unwrap() {
                    done = Some(reply);
                }
            }
            done.expect("the turn ended with Done")
        } else {
            agent.chat("What is the weather in Paris?").await.unwrap()
        }
    };
    let reply = tokio::time::timeout(CALL * 3, turn)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer in time:\n{}", server.log_tail()));

    let calls = weather.calls();
    assert!(!calls.is_empty(), "{what}: the tool ran");
    calls.iter().for_each(assert_valid);
    assert_eq!(reply.tool_calls, calls.len(), "{what}");
    assert_eq!(reply.steps, 2, "{what}: a call, then the answer");
    assert_eq!(reply.finish_reason, FinishReason::Stop, "{what}");
    let messages = agent.messages();
    assert_every_call_answered(&messages);
    let results: Vec<&str> = messages
        .iter()
        .filter(|message| matches!(message, Message::Tool { .. }))
        .map(Message::content)
        .collect();
    assert_eq!(results.len(), calls.len(), "{what}");
    assert!(
        results
            .iter()
            .all(|result| result.starts_with("18°C and sunny in "))
    );
    // The answer is the last message: text, no calls.
    match messages.last() {
        Some(Message::Assistant {
            content,
            tool_calls,
            ..
        }) => {
            assert!(tool_calls.is_empty(), "{what}");
            assert_eq!(content, &reply.text, "{what}");
        }
        other => panic!("{what}: {other:?}"),
    }
}

#[tokio::test]
async fn an_agent_round_trip_works_on_every_wire_streamed_and_not() {
    let Some(files) = llama_files("an_agent_round_trip_works_on_every_wire_streamed_and_not")
    else {
        return;
    };
    let server = LlamaServer::start(&files, 2).await;
    let mut turns = Vec::new();
    for wire in WIRES {
        for streamed in [true, false] {
            turns.push(round_trip(&server, wire, streamed));
        }
    }
    futures::future::join_all(turns).await;
}

/// The request forms each wire sends, all accepted: every tool choice, sampling settings,
/// and on Responses strict tools, `parallel_tool_calls`, encrypted reasoning asked for and
/// stored responses off.
#[tokio::test]
async fn the_server_accepts_the_bodies_we_send() {
    let Some(files) = llama_files("the_server_accepts_the_bodies_we_send") else {
        return;
    };
    let server = LlamaServer::start(&files, 2).await;
    let tools = RequestTools::from_definitions(vec![Weather::default().get_schema()]);
    let question = vec![
        Message::system("You are terse."),
        Message::user("What is the weather in Paris?"),
    ];
    // A few tokens are enough to show the body was accepted; a whole forced call is the round
    // trip's to prove.
    let mut settings = ModelSettings::default();
    settings.max_tokens = Some(4);
    settings.temperature = Some(0.7);
    let choices = [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::tool("get_weather"),
        ToolChoice::allowed(["get_weather"]),
    ];
    let responses = ResponsesConfig::default()
        .base_url(format!("{}/v1", server.url))
        .model("tiny")
        .http(patient())
        .strict_tools(true)
        .parallel_tool_calls(false)
        .encrypted_reasoning(Some(true));
    let mut models = vec![(
        String::from("Responses, strict"),
        Arc::new(ResponsesClient::new(responses).unwrap()) as Arc<dyn ChatModel>,
    )];
    for wire in WIRES {
        models.push((format!("{wire:?}"), client(wire, &server)));
    }
    for (what, model) in &models {
        for choice in &choices {
            if matches!(choice, ToolChoice::Allowed { .. }) && what == "Messages" {
                continue; // Anthropic has no such choice: refused before sending (tested elsewhere)
            }
            let request = ChatRequest::new(question.clone())
                .tools(tools.clone())
                .tool_choice(choice.clone())
                .settings(settings.clone());
            let answer = tokio::time::timeout(CALL, model.chat(request))
                .await
                .unwrap_or_else(|_| panic!("{what} {choice:?}: no answer in time"));
            // Accepted: an answer (llama-server's Responses API says `completed` even when
            // the token limit cut the answer off, so the finish reason proves nothing here).
            answer.unwrap_or_else(|error| {
                panic!("{what} {choice:?}: {error}\n{}", server.log_tail())
            });
        }
    }
}

/// A conversation the Chat Completions client began goes on on the Responses client and on
/// Anthropic Messages, and back, against the real server.
#[tokio::test]
async fn a_conversation_moves_between_the_wires() {
    let Some(files) = llama_files("a_conversation_moves_between_the_wires") else {
        return;
    };
    let server = LlamaServer::start(&files, 1).await;
    let tools = RequestTools::from_definitions(vec![Weather::default().get_schema()]);
    let mut messages = vec![Message::user("What is the weather in Paris?")];
    let forced = ChatRequest::new(messages.clone())
        .tools(tools.clone())
        .tool_choice(ToolChoice::Required)
        .settings(settings());
    let first = tokio::time::timeout(
        CALL,
        client(LlamaWire::ChatCompletions, &server).chat(forced),
    )
    .await
    .expect("an answer in time")
    .unwrap();
    let Message::Assistant { tool_calls, .. } = &first.message else {
        panic!("not an assistant message");
    };
    let results: Vec<Message> = tool_calls
        .iter()
        .map(|call| Message::tool_result(&call.id, &call.name, "18°C"))
        .collect();
    messages.push(first.message.clone());
    messages.extend(results);
    // Saved and loaded, as a stored conversation is.
    let messages: Vec<Message> =
        serde_json::from_str(&serde_json::to_string(&messages).unwrap()).unwrap();
    for wire in [
        LlamaWire::Responses,
        LlamaWire::Messages,
        LlamaWire::ChatCompletions,
    ] {
        let request = ChatRequest::new(messages.clone())
            .tools(tools.clone())
            .settings(settings());
        let answer = tokio::time::timeout(CALL, client(wire, &server).chat(request))
            .await
            .expect("an answer in time")
            .unwrap_or_else(|error| panic!("{wire:?}: {error}\n{}", server.log_tail()));
        assert_eq!(answer.finish_reason, FinishReason::Stop, "{wire:?}");
    }
}

/// The server is killed while it streams a forced call: the stream ends with `Truncated`
/// naming the call, on every wire (each with a server of its own, all at once).
#[tokio::test]
async fn a_server_killed_mid_stream_gives_truncated() {
    let Some(files) = llama_files("a_server_killed_mid_stream_gives_truncated") else {
        return;
    };
    futures::future::join_all(WIRES.map(|wire| killed_mid_stream(&files, wire))).await;
}

async fn killed_mid_stream(files: &LlamaFiles, wire: LlamaWire) {
    let tools = RequestTools::from_definitions(vec![Weather::default().get_schema()]);
    let mut server = LlamaServer::start(files, 1).await;
    let request = ChatRequest::new(vec![Message::user("What is the weather in Paris?")])
        .tools(tools)
        .tool_choice(ToolChoice::Required)
        .settings(settings());
    let mut stream = tokio::time::timeout(CALL, client(wire, &server).stream(request))
        .await
        .expect("the stream started in time")
        .unwrap();
    // The call has begun: the grammar still has its arguments to write, a token at a time.
    let started = tokio::time::timeout(CALL, async {
        while let Some(event) = futures::StreamExt::next(&mut stream).await {
            if let Ok(ModelEvent::ToolCallStarted(start)) = event {
                return start;
            }
        }
        panic!("{wire:?}: the stream ended before the call began");
    })
    .await
    .expect("the call began in time");
    server.kill();
    let rest = tokio::time::timeout(CALL, Collected::from(stream))
        .await
        .expect("the stream ended after the kill");
    assert!(
        !rest
            .events
            .iter()
            .any(|e| matches!(e, ModelEvent::Done { .. })),
        "{wire:?}: {:?}",
        rest.events
    );
    match rest.error {
        Some(ProviderError::Truncated {
            incomplete_call, ..
        }) => assert_eq!(
            incomplete_call.as_deref(),
            Some(started.name.as_str()),
            "{wire:?}"
        ),
        other => panic!("{wire:?}: expected Truncated, got {other:?}"),
    }
}
