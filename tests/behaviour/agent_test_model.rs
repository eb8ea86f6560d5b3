//! The offline test model exercises every enabled tool with schema-valid arguments.

use futures::StreamExt as _;
use serde_json::json;
use tool_core::{
    Agent, AgentEvent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError,
    model::{Message, TestModel},
};

use crate::agent_support::{assert_every_call_answered, tool_results};

/// A tool with a demanding schema: nested objects, enums, bounds, arrays and a `$ref`.
struct Book;

#[tool_core::async_trait]
impl ExecutableTool for Book {
    fn name(&self) -> &str {
        "book_flight"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "book_flight",
            "Book a flight.",
            json!({
                "type": "object",
                "properties": {
                    "from": { "type": "string", "minLength": 3, "maxLength": 3 },
                    "to": { "type": "string", "minLength": 3, "maxLength": 3 },
                    "class": { "enum": ["economy", "business"] },
                    "passengers": {
                        "type": "array",
                        "minItems": 1,
                        "items": { "$ref": "#/$defs/Passenger" }
                    },
                    "bags": { "type": "integer", "minimum": 0, "maximum": 3 }
                },
                "required": ["from", "to", "class", "passengers", "bags"],
                "additionalProperties": false,
                "$defs": {
                    "Passenger": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string", "minLength": 1 },
                            "age": { "type": "integer", "exclusiveMinimum": 0, "maximum": 130 }
                        },
                        "required": ["name", "age"]
                    }
                }
            }),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        Ok(format!("booked {}", serde_json::Value::Object(args)))
    }
}

#[tokio::test]
async fn test_model_exercises_every_default_tool() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(
        TestModel::new(),
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(dir.path().join("session.json")),
    );
    agent.add_tool(Book).unwrap();

    let reply = agent.chat("use every tool").await.unwrap();

    let messages = agent.messages();
    assert_every_call_answered(&messages);
    let called: Vec<String> = messages
        .iter()
        .filter_map(|message| match message {
            Message::Tool { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        called,
        [
            "read_file",
            "write_file",
            "save_session_context",
            "book_flight"
        ]
    );
    // No argument was rejected by the registry's schema validation.
    for (_, content) in tool_results(&messages) {
        assert!(
            !content.starts_with("Error: invalid arguments"),
            "{content}"
        );
        assert!(!content.starts_with("Error: tool"), "{content}");
        assert!(
            reply.text.contains(&content),
            "{} lacks {content}",
            reply.text
        );
    }
    assert!(dir.path().join("session.json").exists());
    assert_eq!(reply.steps, 2);
    assert!(reply.usage.is_some());
}

#[tokio::test]
async fn test_model_streams_the_same_turn() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(TestModel::new(), AgentOptions::new().root_dir(dir.path()));
    assert!(agent.disable_tool("save_session_context"));

    let events: Vec<AgentEvent> = agent.stream_chat("go").map(Result::unwrap).collect().await;

    let started: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolCallStarted(start) => Some(start.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["read_file", "write_file"]);
    assert!(events.iter().all(|event| !matches!(
        event,
        AgentEvent::ToolCallFinished {
            arguments: None,
            ..
        }
    )));
    assert!(
        matches!(events.last(), Some(AgentEvent::Done(reply)) if reply.text.contains("write_file"))
    );
}

#[tokio::test]
async fn test_model_without_tools_answers_in_text() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(TestModel::new(), AgentOptions::new().root_dir(dir.path()));
    for name in ["read_file", "write_file", "save_session_context"] {
        assert!(agent.disable_tool(name));
    }

    let reply = agent.chat("hello there").await.unwrap();

    assert_eq!(reply.steps, 1);
    assert!(reply.text.contains("hello there"), "{}", reply.text);
}
