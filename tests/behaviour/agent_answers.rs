//! Answers that don't mislead: a turn that waits for approval is not an empty answer, a turn
//! continued after approval counts as one turn, and a tool the provider cannot take is never
//! left out of a request unnoticed.

use futures::StreamExt as _;
use schemars::JsonSchema;
use serde::Deserialize;
use tool_core::{
    Agent, AgentError, AgentEvent, AgentOptions, CallContext, Provider,
    agent::ApprovalDecision,
    model::{Message, ScriptedModel, ScriptedResponse, ToolCall, Usage},
    tool,
};

use crate::agent_support::{Echo, Log, tool_results};

/// Delete a note for good.
#[tool(needs_approval, destructive)]
async fn delete_note(#[context] log: &Log, name: String) -> String {
    log.push(format!("deleted {name}"));
    "deleted".to_owned()
}

/// Say which step and turn this call belongs to.
#[tool(needs_approval)]
async fn stamp(call: &CallContext) -> String {
    format!("step {} of turn {}", call.step(), call.turn())
}

/// A node of a tree of numbers.
#[derive(Deserialize, JsonSchema)]
struct Node {
    value: i64,
    children: Vec<Node>,
}

fn total(node: &Node) -> i64 {
    node.value + node.children.iter().map(total).sum::<i64>()
}

/// Sum the values of a tree.
#[tool]
async fn sum_tree(root: Node) -> String {
    total(&root).to_string()
}

fn agent(model: &ScriptedModel, dir: &std::path::Path) -> Agent {
    Agent::new(model.clone(), AgentOptions::new().root_dir(dir))
}

#[tokio::test]
async fn a_turn_waiting_for_approval_is_an_error_naming_the_calls_not_an_empty_answer() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "delete_note", r#"{"name": "old"}"#),
        ScriptedResponse::tool_call("c2", "delete_note", r#"{"name": "older"}"#),
        ScriptedResponse::text("Both notes are gone."),
    ]);
    let agent = agent(&model, dir.path());
    agent.add_tool(DeleteNote::new(log.clone())).unwrap();

    let error = agent.chat("delete my old notes").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the turn stopped before its answer: tool calls wait for approval: c1 (`delete_note`); \
         answer them with `continue_with`"
    );
    let AgentError::AwaitingApproval { requests } = error else {
        panic!("expected AwaitingApproval, got {error:?}");
    };
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].call.id, "c1");
    assert_eq!(requests[0].arguments.as_ref().unwrap()["name"], "old");
    assert_eq!(agent.pending_approvals(), requests);
    assert!(log.entries().is_empty());

    // The continuation may stop at another approval, told the same way.
    let error = agent
        .continue_with([("c1", ApprovalDecision::approve())])
        .await
        .unwrap_err();
    match error {
        AgentError::AwaitingApproval { requests } => assert_eq!(requests[0].call.id, "c2"),
        other => panic!("expected AwaitingApproval, got {other:?}"),
    }
    let reply = agent
        .continue_with([("c2", ApprovalDecision::approve())])
        .await
        .unwrap();
    assert_eq!(reply.text, "Both notes are gone.");
    assert!(reply.pending_approvals.is_empty());
    assert_eq!(log.entries(), ["deleted old", "deleted older"]);
}

#[tokio::test]
async fn a_continued_turn_numbers_its_steps_and_counts_its_calls_turn_wide() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "echo", r#"{"text": "one"}"#).usage(Usage::new(10, 1)),
        ScriptedResponse::tool_calls([
            ToolCall::new("c2", "stamp", "{}"),
            ToolCall::new("c3", "echo", r#"{"text": "three"}"#),
        ])
        .usage(Usage::new(20, 2)),
        ScriptedResponse::text("done").usage(Usage::new(30, 3)),
        ScriptedResponse::tool_call("c4", "stamp", "{}"),
        ScriptedResponse::text("stamped"),
    ]);
    let agent = agent(&model, dir.path());
    agent.add_tool(Echo).unwrap();
    agent.add_tool(Stamp).unwrap();

    let steps = |events: &[AgentEvent]| -> Vec<(usize, usize)> {
        events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::StepFinished {
                    step, tool_calls, ..
                } => Some((*step, *tool_calls)),
                _ => None,
            })
            .collect()
    };
    let events: Vec<AgentEvent> = agent.stream_chat("go").map(Result::unwrap).collect().await;
    assert_eq!(steps(&events), [(1, 1), (2, 1)]);

    let events: Vec<AgentEvent> = agent
        .stream_continue_with([("c2", ApprovalDecision::approve())])
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(steps(&events), [(3, 0)]);
    let Some(AgentEvent::Done(reply)) = events.last() else {
        panic!("expected Done, got {:?}", events.last());
    };
    assert_eq!(reply.text, "done");
    assert_eq!(reply.steps, 3, "every model call of the turn");
    assert_eq!(reply.tool_calls, 3, "every tool call of the turn");
    assert_eq!(reply.usage, Some(Usage::new(60, 6)));
    // The approved call runs as part of the step and turn that made it.
    assert_eq!(
        tool_results(&agent.messages())[1],
        ("c2".to_owned(), "step 2 of turn 1".to_owned())
    );

    // The next turn starts again from step 1, as turn 2.
    assert!(agent.chat("again").await.is_err());
    let reply = agent
        .continue_with([("c4", ApprovalDecision::approve())])
        .await
        .unwrap();
    assert_eq!((reply.steps, reply.tool_calls), (2, 1));
    assert_eq!(
        tool_results(&agent.messages()).last().unwrap().1,
        "step 1 of turn 2"
    );
}

#[tokio::test]
async fn a_tool_the_provider_cannot_take_fails_the_turn_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::with_provider(Provider::Gemini, [ScriptedResponse::text("hi")]);
    let agent = agent(&model, dir.path());
    agent.add_tool(SumTree).unwrap();

    let error = agent.chat("sum my tree").await.unwrap_err();
    let AgentError::UnsupportedTools(check) = &error else {
        panic!("expected UnsupportedTools, got {error:?}");
    };
    assert_eq!(check.errors.len(), 1);
    assert_eq!(check.errors[0].tool, "sum_tree");
    assert_eq!(check.errors[0].provider, Provider::Gemini);
    let message = error.to_string();
    assert!(
        message.starts_with("tool `sum_tree` cannot be sent to gemini: ")
            && message.contains("recursive")
            && message.ends_with(
                "; fix or disable the tool, or let the agent skip it with \
                 `AgentOptions::skip_unsupported_tools`"
            ),
        "{message}"
    );
    // Nothing was sent, and the conversation is as it was.
    assert!(model.requests().is_empty());
    assert!(agent.messages().is_empty());

    // Disabled, the tool is not sent, so it is not in the way.
    assert!(agent.disable_tool("sum_tree"));
    let reply = agent.chat("sum my tree").await.unwrap();
    assert_eq!(reply.text, "hi");
}

#[tokio::test]
async fn an_agent_told_to_skip_a_tool_the_provider_cannot_take_says_so_in_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::with_provider(
        Provider::Gemini,
        [
            ScriptedResponse::tool_call(
                "c1",
                "sum_tree",
                r#"{"root": {"value": 1, "children": []}}"#,
            ),
            ScriptedResponse::text("I cannot sum trees here."),
        ],
    );
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .root_dir(dir.path())
            .skip_unsupported_tools(true),
    );
    agent.add_tool(SumTree).unwrap();
    agent.add_tool(Echo).unwrap();

    let events: Vec<AgentEvent> = agent
        .stream_chat("sum my tree")
        .map(Result::unwrap)
        .collect()
        .await;
    let skipped: Vec<(&str, Provider)> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolsSkipped(check) => Some(check),
            _ => None,
        })
        .flat_map(|check| &check.errors)
        .map(|error| (error.tool.as_str(), error.provider))
        .collect();
    assert_eq!(skipped, [("sum_tree", Provider::Gemini)], "once per turn");
    // No request offered the tool, and a call of it is refused like a disabled tool's.
    for request in model.requests() {
        let names: Vec<String> = request
            .tools
            .definitions()
            .iter()
            .map(|tool| tool.name().to_owned())
            .collect();
        assert!(names.contains(&"echo".to_owned()), "{names:?}");
        assert!(!names.contains(&"sum_tree".to_owned()), "{names:?}");
    }
    let results = tool_results(&agent.messages());
    assert_eq!(results.len(), 1);
    assert!(
        results[0].1.starts_with("Error: "),
        "a skipped tool does not run: {}",
        results[0].1
    );
    assert!(matches!(
        agent.messages().last(),
        Some(Message::Assistant { content, .. }) if content == "I cannot sum trees here."
    ));
}
