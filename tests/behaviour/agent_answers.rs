//! Answers that don't mislead: a turn that waits for approval is not an empty answer.

use tool_core::{
    Agent, AgentError, AgentOptions,
    agent::ApprovalDecision,
    model::{ScriptedModel, ScriptedResponse},
    tool,
};

use crate::agent_support::Log;

/// Delete a note for good.
#[tool(needs_approval, destructive)]
async fn delete_note(#[context] log: &Log, name: String) -> String {
    log.push(format!("deleted {name}"));
    "deleted".to_owned()
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
