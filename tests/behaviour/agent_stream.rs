//! `Agent::stream_chat`: the events of a turn, in order, and cancellation by dropping the
//! stream.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::Poll,
};

use futures::StreamExt as _;
use serde_json::json;
use tool_core::{
    AgentError, AgentEvent, ChatTool, ExecutableTool, JsonObject, ToolError,
    model::{FinishReason, ProviderError, ScriptedResponse, ToolCall, Usage},
};

use crate::agent_support::{Echo, scripted_agent, tool_results};

fn label(event: &AgentEvent) -> &'static str {
    match event {
        AgentEvent::TextDelta(_) => "text",
        AgentEvent::ToolCallStarted(_) => "call-start",
        AgentEvent::ToolCallDelta { .. } => "call-delta",
        AgentEvent::ToolCallFinished { .. } => "call-end",
        AgentEvent::ToolResult { .. } => "result",
        AgentEvent::Usage(_) => "usage",
        AgentEvent::StepFinished { .. } => "step",
        AgentEvent::Done(_) => "done",
        _ => "other",
    }
}

#[tokio::test]
async fn stream_events_come_in_the_order_things_happen() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("c1", "echo", r#"{"text": "one"}"#),
                ToolCall::new("c2", "echo", r#"{"text": "two"}"#),
            ])
            .with_text("Let me check.")
            .usage(Usage::new(10, 5)),
            ScriptedResponse::text("All done here.").usage(Usage::new(20, 3)),
        ],
    );
    agent.add_tool(Echo).unwrap();

    let events: Vec<AgentEvent> = agent
        .stream_chat("echo twice")
        .map(Result::unwrap)
        .collect()
        .await;

    let mut labels: Vec<&str> = events.iter().map(label).collect();
    labels.dedup();
    assert_eq!(
        labels,
        [
            "text",
            "call-start",
            "call-delta",
            "call-end",
            "call-start",
            "call-delta",
            "call-end",
            "usage",
            "result",
            "step",
            "text",
            "usage",
            "step",
            "done"
        ]
    );
    let text: String = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me check.All done here.");
    let finished: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolCallFinished { call, arguments } => {
                Some((call.id.clone(), arguments.clone()))
            }
            _ => None,
        })
        .collect();
    let expected_args = |text: &str| {
        let mut args = JsonObject::new();
        args.insert("text".to_owned(), json!(text));
        Some(args)
    };
    assert_eq!(
        finished,
        [
            ("c1".to_owned(), expected_args("one")),
            ("c2".to_owned(), expected_args("two"))
        ]
    );
    let results: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolResult {
                id,
                content,
                is_error,
                ..
            } => Some((id.as_str(), content.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results, [("c1", "one", false), ("c2", "two", false)]);
    assert!(matches!(
        &events[events.len() - 2],
        AgentEvent::StepFinished {
            step: 2,
            finish_reason: FinishReason::Stop,
            tool_calls: 0
        }
    ));
    let AgentEvent::Done(response) = events.last().unwrap() else {
        panic!("the last event is not Done: {events:?}");
    };
    assert_eq!(response.text, "All done here.");
    assert_eq!(response.steps, 2);
    assert_eq!(response.usage, Some(Usage::new(30, 8)));
}

#[tokio::test]
async fn a_stream_failing_mid_answer_ends_with_an_error_and_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [ScriptedResponse::FailMidStream {
            text: "I will".to_owned(),
            tool_calls: vec![ToolCall::new("c1", "echo", r#"{"text": "x"}"#)],
            error: ProviderError::Config("connection reset".to_owned()),
        }],
    );
    agent.add_tool(Echo).unwrap();

    let items: Vec<Result<AgentEvent, AgentError>> = agent.stream_chat("go").collect().await;

    assert!(matches!(items.first(), Some(Ok(AgentEvent::TextDelta(_)))));
    assert!(
        matches!(items.last(), Some(Err(AgentError::Model(_)))),
        "{items:?}"
    );
    assert!(
        !items
            .iter()
            .any(|item| matches!(item, Ok(AgentEvent::ToolResult { .. })))
    );
    assert!(agent.messages().is_empty());
}

#[tokio::test]
async fn max_steps_in_a_stream_is_an_error_item_after_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = crate::agent_support::scripted_agent_with(
        tool_core::AgentOptions::new().max_steps(1),
        dir.path(),
        [ScriptedResponse::tool_call(
            "c1",
            "echo",
            r#"{"text": "x"}"#,
        )],
    );
    agent.add_tool(Echo).unwrap();

    let items: Vec<Result<AgentEvent, AgentError>> = agent.stream_chat("go").collect().await;

    assert!(matches!(
        items.last(),
        Some(Err(AgentError::MaxSteps { steps: 1 }))
    ));
    assert_eq!(tool_results(&agent.messages()).len(), 1);
}

/// Blocks until cancelled; records that it started and that its future was dropped.
struct Hang {
    started: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tool_core::async_trait]
impl ExecutableTool for Hang {
    fn name(&self) -> &str {
        "hang"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new("hang", "Never returns.", json!({ "type": "object" }))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        let _guard = SetOnDrop(self.dropped.clone());
        self.started.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
        Ok(String::new())
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "hang", "{}"),
            ScriptedResponse::text("next turn"),
        ],
    );
    let started = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    agent
        .add_tool(Hang {
            started: started.clone(),
            dropped: dropped.clone(),
        })
        .unwrap();

    let mut stream = agent.stream_chat("hang");
    for _ in 0..100 {
        if started.load(Ordering::SeqCst) {
            break;
        }
        if let Poll::Ready(None) = futures::poll!(stream.next()) {
            break;
        }
    }
    assert!(started.load(Ordering::SeqCst));
    assert!(!dropped.load(Ordering::SeqCst));

    drop(stream);

    assert!(dropped.load(Ordering::SeqCst));
    assert!(agent.messages().is_empty());
    // The agent is free for the next turn.
    let reply = agent.chat("again").await.unwrap();
    assert_eq!(reply.text, "next turn");
}
