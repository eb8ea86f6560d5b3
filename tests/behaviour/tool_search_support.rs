//! What the tests of the providers' own tool search forms (`tool_search_native`,
//! `tool_search_client`) share: the recorded replies, the loopback clients of the two wires with
//! such a form, a turn run in bounded time, and the tools a request is expected to offer.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentEvent, AgentOptions, Provider, ToolContext, ToolContextOptions, ToolRegistry,
    model::{AnthropicClient, AnthropicConfig, ChatModel, ResponsesClient, ResponsesConfig},
};

use crate::{
    loopback::{Recorded, Reply, Server, fast_retries},
    tool_search::registry,
};

/// The bytes of a recorded reply under `tests/transcripts/`.
macro_rules! transcript {
    ($path:literal) => {
        include_bytes!(concat!("../transcripts/", $path))
    };
}
pub(crate) use transcript;

/// The deferred tools of the test registry (`tool_search::registry`), in its order.
pub(crate) const DEFERRED: [&str; 4] = [
    "create_directory",
    "send_email",
    "weather_forecast",
    "translate_text",
];

/// An Anthropic client of the loopback `server`.
pub(crate) fn anthropic(server: &Server) -> Arc<dyn ChatModel> {
    let config = AnthropicConfig::default()
        .base_url(server.url())
        .model("claude-sonnet-4-5")
        .api_key("sk-ant-test")
        .http(fast_retries());
    Arc::new(AnthropicClient::new(config).unwrap())
}

/// An OpenAI Responses client of the loopback `server`.
pub(crate) fn responses(server: &Server) -> Arc<dyn ChatModel> {
    let config = ResponsesConfig::default()
        .base_url(format!("{}/v1", server.url()))
        .model("gpt-5.4")
        .api_key("sk-test")
        .http(fast_retries());
    Arc::new(ResponsesClient::new(config).unwrap())
}

/// A conversation of its own, empty.
pub(crate) fn fresh_context() -> ToolContext {
    ToolContext::with_options(ToolContextOptions::new())
}

/// Runs a turn, streamed or not, bounded in time, and returns its events (none when not
/// streamed).
pub(crate) async fn run(agent: &Agent, text: &str, streamed: bool) -> Vec<AgentEvent> {
    tokio::time::timeout(Duration::from_secs(20), async {
        if streamed {
            agent
                .stream_chat(text)
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .map(|event| event.expect("the turn succeeds"))
                .collect()
        } else {
            agent.chat(text).await.expect("the turn succeeds");
            Vec::new()
        }
    })
    .await
    .expect("the turn ends")
}

/// A loopback server replaying `replies`, and an agent of it through `model`, with the test
/// registry and `options`, that was asked "Weather in Paris?" (not streamed).
pub(crate) async fn weather_turn(
    model: fn(&Server) -> Arc<dyn ChatModel>,
    replies: Vec<Reply>,
    options: AgentOptions,
) -> (Agent, Server) {
    let server = Server::start(replies).await;
    let agent = Agent::with_model(model(&server), options.registry(registry()));
    run(&agent, "Weather in Paris?", false).await;
    (agent, server)
}

/// The types of the items of a Responses request's `input`; an item without one is a message.
pub(crate) fn input_kinds(body: &Value) -> Vec<&str> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect()
}

/// The definitions of `tools` as `provider`'s wire with a tool search form sends them: in the
/// registry's format (flat, `strict` set, for OpenAI Responses), each marked
/// `"defer_loading": true` when `defer`.
pub(crate) fn offered(
    registry: &ToolRegistry,
    provider: Provider,
    tools: &[&str],
    defer: bool,
) -> Vec<Value> {
    tools
        .iter()
        .map(|name| {
            let tool = &registry.tools_for_provider(provider, Some(&[name]))[0];
            let mut tool = if provider == Provider::OpenAi {
                flat(tool)
            } else {
                tool.clone()
            };
            if defer {
                tool["defer_loading"] = json!(true);
            }
            tool
        })
        .collect()
}

/// The tools of a conversation's first request on `provider`'s wire: the eager tool in full,
/// `search` (the tool that searches), then every deferred tool marked `defer_loading`.
pub(crate) fn first_tools(registry: &ToolRegistry, provider: Provider, search: Value) -> Value {
    let mut tools = offered(registry, provider, &["get_time"], false);
    tools.push(search);
    tools.extend(offered(registry, provider, &DEFERRED, true));
    Value::Array(tools)
}

/// The event of a search for `query` that found `weather_forecast` and loaded it.
pub(crate) fn weather_found(query: &str) -> AgentEvent {
    AgentEvent::ToolSearch {
        query: query.to_owned(),
        matches: vec!["weather_forecast".to_owned()],
        loaded: vec!["weather_forecast".to_owned()],
    }
}

/// A Responses function tool as the client sends it: flat, `strict` set.
fn flat(tool: &Value) -> Value {
    let function = &tool["function"];
    json!({
        "type": "function",
        "name": function["name"],
        "description": function["description"],
        "parameters": function["parameters"],
        "strict": false,
    })
}

/// The `tools` of a request's body as sent, byte for byte.
pub(crate) fn tools_text(request: &Recorded) -> String {
    #[derive(serde::Deserialize)]
    struct Body {
        tools: Box<serde_json::value::RawValue>,
    }
    let body: Body = serde_json::from_slice(&request.body).expect("the request has tools");
    body.tools.get().to_owned()
}

/// The names of the tools a request's body offers.
pub(crate) fn tool_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect()
}
