//! Tools and helpers shared by the agent tests.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::json;
use tool_core::{
    Agent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata,
    model::{Message, ScriptedModel, ScriptedResponse},
};

/// A shared log of what tools did, in order.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub(crate) fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub(crate) fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// `echo {text}`: returns the text.
pub(crate) struct Echo;

#[tool_core::async_trait]
impl ExecutableTool for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "echo",
            "Repeat the text back.",
            json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            }),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        Ok(args["text"].as_str().unwrap_or_default().to_owned())
    }
}

/// `{name} {label, yields}`: logs `start:{label}`, yields to the scheduler `yields` times, logs
/// `end:{label}` and returns `done:{label}`. Calls that run concurrently interleave their log
/// entries; calls that run one at a time do not.
pub(crate) struct Stepper {
    pub(crate) name: &'static str,
    pub(crate) log: Log,
    pub(crate) sequential: bool,
}

#[tool_core::async_trait]
impl ExecutableTool for Stepper {
    fn name(&self) -> &str {
        self.name
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            self.name,
            "Log a start, yield a few times, log an end.",
            json!({
                "type": "object",
                "properties": {
                    "label": { "type": "string" },
                    "yields": { "type": "integer", "minimum": 0 }
                },
                "required": ["label", "yields"]
            }),
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new().sequential(self.sequential)
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let label = args["label"].as_str().unwrap_or_default().to_owned();
        self.log.push(format!("start:{label}"));
        for _ in 0..args["yields"].as_u64().unwrap_or(0) {
            tokio::task::yield_now().await;
        }
        self.log.push(format!("end:{label}"));
        Ok(format!("done:{label}"))
    }
}

/// `fail`: returns a tool error.
pub(crate) struct Fail;

#[tool_core::async_trait]
impl ExecutableTool for Fail {
    fn name(&self) -> &str {
        "fail"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new("fail", "Always fails.", json!({ "type": "object" }))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        Err(ToolError::new("the disk is full"))
    }
}

/// `boom`: panics.
pub(crate) struct Boom;

#[tool_core::async_trait]
impl ExecutableTool for Boom {
    fn name(&self) -> &str {
        "boom"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new("boom", "Always panics.", json!({ "type": "object" }))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        panic!("kaboom")
    }
}

/// `slow`: never finishes on its own; times out after 50 ms.
pub(crate) struct Slow;

#[tool_core::async_trait]
impl ExecutableTool for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new("slow", "Takes forever.", json!({ "type": "object" }))
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new().timeout(Duration::from_millis(50))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        std::future::pending::<()>().await;
        Ok(String::new())
    }
}

/// `forever`: never finishes, and sets no timeout of its own.
pub(crate) struct Forever;

#[tool_core::async_trait]
impl ExecutableTool for Forever {
    fn name(&self) -> &str {
        "forever"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new("forever", "Never answers.", json!({ "type": "object" }))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        std::future::pending::<()>().await;
        Ok(String::new())
    }
}

/// An agent over the scripted model, with its file tools confined to `dir`.
pub(crate) fn scripted_agent(
    dir: &std::path::Path,
    script: impl IntoIterator<Item = ScriptedResponse>,
) -> (Agent, ScriptedModel) {
    scripted_agent_with(AgentOptions::new(), dir, script)
}

/// Like [`scripted_agent`], with options.
pub(crate) fn scripted_agent_with(
    options: AgentOptions,
    dir: &std::path::Path,
    script: impl IntoIterator<Item = ScriptedResponse>,
) -> (Agent, ScriptedModel) {
    let model = ScriptedModel::new(script);
    let options = options
        .root_dir(dir)
        .session_context_file_path(dir.join("session.json"));
    (Agent::new(model.clone(), options), model)
}

/// The tool results of a conversation, as (call id, content).
pub(crate) fn tool_results(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => Some((tool_call_id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

/// The tool message the model got for call `id` in its last request.
pub(crate) fn tool_result(model: &ScriptedModel, id: &str) -> String {
    let request = model.last_request().expect("the model was asked");
    tool_results(&request.messages)
        .into_iter()
        .find_map(|(call, content)| (call == id).then_some(content))
        .expect("the call was answered")
}

/// The names of the tools a request offered.
pub(crate) fn offered(request: &tool_core::model::ChatRequest) -> Vec<String> {
    request
        .tools
        .definitions()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect()
}

/// Every tool call in the conversation has exactly one result, right after its step.
pub(crate) fn assert_every_call_answered(messages: &[Message]) {
    for (position, message) in messages.iter().enumerate() {
        if let Message::Assistant { tool_calls, .. } = message {
            let results: Vec<&str> = messages[position + 1..]
                .iter()
                .map_while(|message| match message {
                    Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                    _ => None,
                })
                .collect();
            let ids: Vec<&str> = tool_calls.iter().map(|call| call.id.as_str()).collect();
            assert_eq!(results, ids, "calls and results differ in {messages:#?}");
        }
    }
}

/// The calls a turn stopped for: `chat` and `continue_with` answer
/// `AgentError::AwaitingApproval` while calls wait, never an `Ok`.
pub(crate) fn waiting(
    result: Result<tool_core::AgentResponse, tool_core::AgentError>,
) -> Vec<tool_core::agent::ApprovalRequest> {
    match result {
        Err(tool_core::AgentError::AwaitingApproval { requests }) => requests,
        other => panic!("expected calls waiting for approval, got {other:?}"),
    }
}
