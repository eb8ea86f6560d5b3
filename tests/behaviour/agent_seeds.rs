//! The `Agent`'s contract: the default registry, the tool-call loop through it, saving the
//! session, and adding, removing, enabling and disabling tools at run time.

use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use serde_json::json;
use tool_core::{
    Agent, AgentEvent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError,
    model::{Message, ScriptedModel, ScriptedResponse},
};

use crate::agent_support::{Echo, offered, scripted_agent, tool_results};

const BUILTINS: [&str; 3] = ["read_file", "write_file", "save_session_context"];

fn names(tools: &[ChatTool]) -> Vec<&str> {
    tools.iter().map(ChatTool::name).collect()
}

#[tokio::test]
async fn new_builds_the_default_registry_with_every_builtin_enabled() {
    let agent = Agent::new(ScriptedModel::new([]), AgentOptions::default());
    assert_eq!(agent.registry().get_tool_names(), BUILTINS);
    for name in BUILTINS {
        assert!(agent.registry().is_tool_enabled(name));
    }
    // A shared model works the same way.
    let shared: Arc<dyn tool_core::model::ChatModel> = Arc::new(ScriptedModel::new([]));
    let agent = Agent::new(shared, AgentOptions::default());
    assert_eq!(names(&agent.get_tools()), BUILTINS);
}

#[tokio::test]
async fn get_tools_lists_the_enabled_tools_in_registration_order() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(dir.path(), []);
    assert_eq!(names(&agent.get_tools()), BUILTINS);
    assert_eq!(agent.get_tools(), agent.registry().get_enabled_schemas());

    assert!(agent.disable_tool("write_file"));

    assert_eq!(
        names(&agent.get_tools()),
        ["read_file", "save_session_context"]
    );
}

#[tokio::test]
async fn chat_returns_after_the_tool_has_run_and_its_result_was_sent_back() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call(
                "call_w",
                "write_file",
                r#"{"path": "out.txt", "content": "written"}"#,
            ),
            ScriptedResponse::text("wrote it"),
        ],
    );

    let reply = agent.chat("write out.txt").await.unwrap();

    assert_eq!(reply.text, "wrote it");
    // By the time chat returns, the tool has finished and its result is in the conversation.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "written"
    );
    let results = tool_results(&model.requests()[1].messages);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "call_w");
}

#[tokio::test]
async fn stream_chat_runs_the_tool_and_sends_its_result_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "from disk").unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("call_r", "read_file", r#"{"path": "in.txt"}"#),
            ScriptedResponse::text("read it"),
        ],
    );

    let events: Vec<AgentEvent> = agent
        .stream_chat("read in.txt")
        .map(Result::unwrap)
        .collect()
        .await;

    assert!(events.contains(&AgentEvent::ToolResult {
        id: "call_r".to_owned(),
        name: "read_file".to_owned(),
        content: "from disk".to_owned(),
        is_error: false,
        kind: tool_core::agent::ToolResultKind::Success,
    }));
    assert_eq!(
        tool_results(&model.requests()[1].messages),
        [("call_r".to_owned(), "from disk".to_owned())]
    );
}

#[tokio::test]
async fn save_context_writes_the_session_only_when_awaited() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(dir.path(), []);
    let path = dir.path().join("session.json");

    let saving = agent.save_context("before lunch");
    assert!(
        !path.exists(),
        "nothing is written before the future is awaited"
    );
    let result: String = saving.await;

    assert_eq!(
        result,
        format!("Session context saved to {}", path.display())
    );
    assert!(path.exists());
}

/// A `save_session_context` that records the reasons it was given.
struct RecordingSave(Arc<Mutex<Vec<String>>>);

#[tool_core::async_trait]
impl ExecutableTool for RecordingSave {
    fn name(&self) -> &str {
        "save_session_context"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "save_session_context",
            "Record the reason.",
            json!({"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let reason = args["reason"].as_str().unwrap_or_default().to_owned();
        self.0.lock().unwrap().push(reason);
        Ok("recorded".to_owned())
    }
}

#[tokio::test]
async fn save_context_runs_the_registered_save_session_context_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(dir.path(), []);
    let reasons = Arc::new(Mutex::new(Vec::new()));
    agent.remove_tool("save_session_context");
    agent.add_tool(RecordingSave(reasons.clone())).unwrap();

    assert_eq!(agent.save_context("why not").await, "recorded");
    assert_eq!(*reasons.lock().unwrap(), ["why not"]);
}

#[tokio::test]
async fn an_added_tool_is_offered_and_called_and_a_second_one_of_that_name_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": "custom"}"#),
            ScriptedResponse::text("ok"),
        ],
    );

    agent.add_tool(Echo).unwrap();

    assert!(agent.registry().has_tool("echo"));
    assert!(names(&agent.get_tools()).contains(&"echo"));
    agent.chat("echo").await.unwrap();
    assert!(offered(&model.requests()[0]).contains(&"echo".to_owned()));
    assert_eq!(
        tool_results(&agent.messages()),
        [("c1".to_owned(), "custom".to_owned())]
    );
    // A second tool with the same name is rejected and the first stays.
    assert_eq!(
        agent.add_tool(Echo).unwrap_err().to_string(),
        "a tool named `echo` is already registered"
    );
    assert_eq!(
        agent.registry().get_tool_names(),
        ["read_file", "write_file", "save_session_context", "echo"]
    );
}

#[tokio::test]
async fn a_removed_tool_is_not_offered_and_a_call_to_it_is_answered_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "write_file", r#"{"path": "x", "content": "y"}"#),
            ScriptedResponse::text("ok"),
        ],
    );

    assert!(agent.remove_tool("write_file"));
    assert!(!agent.remove_tool("write_file"));

    assert!(!agent.registry().has_tool("write_file"));
    agent.chat("write").await.unwrap();
    assert!(!offered(&model.requests()[0]).contains(&"write_file".to_owned()));
    assert_eq!(
        tool_results(&agent.messages()),
        [(
            "c1".to_owned(),
            "Error: tool 'write_file' not found. Available tools: read_file, \
             save_session_context."
                .to_owned()
        )]
    );
    assert!(!dir.path().join("x").exists());
}

#[tokio::test]
async fn an_enabled_tool_is_offered_from_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [ScriptedResponse::text("a"), ScriptedResponse::text("b")],
    );
    assert!(agent.disable_tool("read_file"));
    agent.chat("one").await.unwrap();

    assert!(agent.enable_tool("read_file"));
    agent.chat("two").await.unwrap();

    let requests = model.requests();
    assert!(!offered(&requests[0]).contains(&"read_file".to_owned()));
    assert_eq!(offered(&requests[1]), BUILTINS);
    assert!(!agent.enable_tool("no_such_tool"));
}

#[tokio::test]
async fn a_disabled_tool_is_not_offered_but_stays_registered() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(dir.path(), [ScriptedResponse::text("a")]);

    assert!(agent.disable_tool("read_file"));
    agent.chat("one").await.unwrap();

    assert_eq!(
        offered(&model.requests()[0]),
        ["write_file", "save_session_context"]
    );
    assert!(agent.registry().has_tool("read_file"));
}

#[tokio::test]
async fn tool_result_carries_the_provider_call_id() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call(
                "toolu_01A09q90qw90lq917835lq9",
                "echo",
                r#"{"text": "x"}"#,
            ),
            ScriptedResponse::text("ok"),
        ],
    );
    agent.add_tool(Echo).unwrap();

    agent.chat("go").await.unwrap();

    let sent = &model.requests()[1].messages;
    assert!(matches!(
        &sent[2],
        Message::Tool { tool_call_id, name, content, is_error: false, .. }
            if tool_call_id == "toolu_01A09q90qw90lq917835lq9" && name == "echo" && content == "x"
    ));
}
