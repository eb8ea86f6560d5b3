//! The offline test model exercises every enabled tool with schema-valid arguments.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::json;
use tool_core::{
    Agent, AgentEvent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError, ToolRegistry,
    model::{Message, TestModel, generate_arguments},
    tool,
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
    std::fs::write(dir.path().join("notes.txt"), "Buy milk.\n").unwrap();
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
    // `read_file` reads the file its schema's example names, which the examples create.
    let read = messages.iter().find_map(|message| match message {
        Message::Tool { name, content, .. } if name == "read_file" => Some(content.as_str()),
        _ => None,
    });
    assert_eq!(read, Some("Buy milk.\n"));
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

#[test]
fn test_model_prefers_the_values_a_schema_offers() {
    let args = generate_arguments(&json!({
        "type": "object",
        "properties": {
            "city": { "type": "string", "examples": ["Paris", "Tokyo"] },
            "days": { "type": "integer", "default": 3, "minimum": 1 },
            "unit": { "enum": ["celsius", "fahrenheit"], "examples": ["fahrenheit"] },
            "level": { "enum": ["low", "high"] },
            "kind": { "const": "forecast" },
            "when": { "type": "string", "format": "date" },
            "contact": { "type": "string", "format": "email" },
            "id": { "type": "string", "format": "uuid" },
            "home": { "type": "string", "format": "uri" },
            "at": { "type": "string", "format": "date-time" },
            "nickname": { "type": ["string", "null"], "examples": ["Ada"] },
            "plain": { "type": "string" }
        },
        "required": [
            "city", "days", "unit", "level", "kind", "when", "contact", "id", "home", "at",
            "nickname", "plain"
        ]
    }));
    assert_eq!(
        serde_json::Value::Object(args),
        json!({
            "city": "Paris",
            "days": 3,
            "unit": "fahrenheit",
            "level": "low",
            "kind": "forecast",
            "when": "2024-01-01",
            "contact": "user0@example.com",
            "id": "00000000-0000-4000-8000-000000000000",
            "home": "https://example.com/0",
            "at": "2024-01-01T00:00:00Z",
            "nickname": "Ada",
            "plain": "example"
        })
    );
}

#[test]
fn test_model_skips_an_offered_value_the_schema_rejects() {
    let args = generate_arguments(&json!({
        "type": "object",
        "properties": {
            "days": { "type": "integer", "minimum": 1, "maximum": 7, "examples": [30], "default": 0 },
            "code": { "type": "string", "maxLength": 3, "examples": ["toolong", "abc"] },
            "tags": {
                "type": "array",
                "minItems": 3,
                "uniqueItems": true,
                "items": { "type": "integer", "examples": [2] }
            },
            "to": { "$ref": "#/$defs/Airport", "examples": ["OSL"] }
        },
        "required": ["days", "code", "tags", "to"],
        "$defs": { "Airport": { "type": "string", "minLength": 3, "maxLength": 3 } }
    }));
    assert_eq!(args["days"], 1);
    // The first example the schema accepts.
    assert_eq!(args["code"], "abc");
    assert_eq!(args["to"], "OSL");
    let tags = args["tags"].as_array().unwrap();
    assert_eq!(tags.len(), 3);
    for (index, tag) in tags.iter().enumerate() {
        assert!(!tags[..index].contains(tag), "{tags:?} repeats {tag}");
    }
}

/// Add two integers.
#[tool]
async fn add(
    /// The first addend.
    #[schemars(example = 2)]
    a: i64,
    /// The second addend.
    #[schemars(example = 3)]
    b: i64,
) -> i64 {
    a + b
}

#[tokio::test]
async fn test_model_calls_a_tool_with_its_parameters_examples() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Add).unwrap();
    let agent = Agent::new(TestModel::new(), AgentOptions::new().registry(registry));
    let reply = agent.chat("What is 2 + 3?").await.unwrap();
    assert_eq!(reply.tool_calls, 1);
    assert_eq!(reply.text, "(test model) I called 1 tool(s):\n- add: 5");
}
