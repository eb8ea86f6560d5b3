//! Approval round trips on the five provider wires, over real HTTP on the loopback server: the
//! turn stops at a call that needs approval, the denial goes back to the provider in its own
//! tool-result form, and the turn ends with the provider's answer.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentEvent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata,
    agent::ApprovalDecision,
    model::{ChatModel, HttpOptions},
};

use crate::{
    agent_support::assert_every_call_answered,
    loopback::{Reply, Server, fast_retries},
    provider_wires,
};

/// `get_weather`, which must be approved before it runs (it never does here).
pub(crate) struct GuardedWeather;

#[tool_core::async_trait]
impl ExecutableTool for GuardedWeather {
    fn name(&self) -> &str {
        "get_weather"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "get_weather",
            "Current weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new().needs_approval(true)
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        panic!("a denied call must not run")
    }
}

/// The reply a streamed turn ends with (the transcripts are streams).
pub(crate) async fn done(
    mut events: futures::stream::BoxStream<'static, Result<AgentEvent, tool_core::AgentError>>,
) -> tool_core::AgentResponse {
    while let Some(event) = events.next().await {
        if let AgentEvent::Done(reply) = event.unwrap() {
            return reply;
        }
    }
    panic!("the turn ended without Done")
}

const DENIED: &str = "Error: the user denied this call of get_weather: not now";

type Connect = fn(&Server, HttpOptions) -> Arc<dyn ChatModel>;

/// Where the denial sits in the second request body, per wire.
fn denial_in(provider: &str, body: &Value) -> Value {
    let messages = body
        .get("messages")
        .or_else(|| body.get("contents"))
        .or_else(|| body.get("input"))
        .and_then(Value::as_array)
        .expect("the body has messages");
    let text = |value: &Value| value.to_string().contains(DENIED);
    let message = messages
        .iter()
        .rev()
        .find(|message| text(message))
        .unwrap_or_else(|| panic!("{provider}: no denial in {body}"));
    message.clone()
}

#[tokio::test]
async fn a_denied_call_goes_back_to_every_provider_in_its_own_form() {
    let wires: [(&str, Reply, Reply, Connect); 5] = [
        (
            "openai",
            Reply::sse(include_bytes!("../transcripts/openai/tool_call.sse")),
            Reply::sse(include_bytes!("../transcripts/openai/final_answer.sse")),
            |server, http| Arc::new(provider_wires::openai().client(server, http)),
        ),
        (
            "responses",
            Reply::sse(include_bytes!("../transcripts/responses/tool_call.sse")),
            Reply::sse(include_bytes!("../transcripts/responses/final_answer.sse")),
            |server, http| Arc::new(provider_wires::responses().client(server, http)),
        ),
        (
            "anthropic",
            Reply::sse(include_bytes!("../transcripts/anthropic/tool_use.sse")),
            Reply::sse(include_bytes!("../transcripts/anthropic/final_answer.sse")),
            |server, http| Arc::new(provider_wires::anthropic().client(server, http)),
        ),
        (
            "gemini",
            Reply::sse(include_bytes!("../transcripts/gemini/function_call.sse")),
            Reply::sse(include_bytes!("../transcripts/gemini/final_answer.sse")),
            |server, http| Arc::new(provider_wires::gemini().client(server, http)),
        ),
        (
            "ollama",
            Reply::ndjson(include_bytes!("../transcripts/ollama/tool_call.ndjson")),
            Reply::ndjson(include_bytes!("../transcripts/ollama/final_answer.ndjson")),
            |server, http| Arc::new(provider_wires::ollama().client(server, http)),
        ),
    ];
    for (provider, call, answer, connect) in wires {
        let server = Server::start(vec![call, answer]).await;
        let dir = tempfile::tempdir().unwrap();
        let agent = Agent::new(
            connect(&server, fast_retries()),
            AgentOptions::new()
                .root_dir(dir.path())
                .session_context_file_path(dir.path().join("session.json")),
        );
        agent.add_tool(GuardedWeather).unwrap();

        let reply = done(agent.stream_chat("What is the weather in Paris?")).await;
        assert_eq!(reply.pending_approvals.len(), 1, "{provider}");
        assert_eq!(reply.pending_approvals[0].call.name, "get_weather");
        assert_eq!(server.requests().len(), 1, "{provider}: the turn stopped");
        let id = reply.pending_approvals[0].call.id.clone();

        let reply = done(
            agent.stream_continue_with([(id.clone(), ApprovalDecision::deny_because("not now"))]),
        )
        .await;
        assert!(!reply.text.is_empty(), "{provider}: the model answered");
        assert!(reply.pending_approvals.is_empty());
        assert_every_call_answered(&agent.messages());

        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        let message = denial_in(provider, &requests[1].json());
        match provider {
            "openai" => assert_eq!(
                message,
                json!({"role": "tool", "tool_call_id": id, "content": DENIED})
            ),
            "responses" => assert_eq!(
                message,
                json!({"type": "function_call_output", "call_id": id, "output": DENIED})
            ),
            "anthropic" => assert_eq!(
                message["content"][0],
                json!({"type": "tool_result", "tool_use_id": id, "content": DENIED,
                       "is_error": true})
            ),
            "gemini" => assert_eq!(
                message["parts"][0]["functionResponse"]["response"],
                json!({"error": DENIED})
            ),
            _ => {
                assert_eq!(message["role"], "tool");
                assert_eq!(message["content"], DENIED);
            }
        }
    }
}
