//! The application's control over each call: the per-call context (ids, conversation,
//! dependencies, cancellation, progress), approval before a tool runs, retry budgets, and the
//! order of a streamed turn's events.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use tool_core::{
    Agent, AgentError, AgentEvent, AgentOptions, CallContext, Deps, ToolContext,
    ToolContextOptions, ToolError, ToolRegistry,
    agent::{ApprovalDecision, ApprovalPolicy, ToolResultKind, TurnOptions},
    context::SavedConversation,
    create_default_tool_registry,
    model::{Message, ScriptedModel, ScriptedResponse, ToolCall},
    tool,
};

use crate::agent_support::{
    Echo, Log, assert_every_call_answered, scripted_agent_with, tool_results,
};

/// The user a chat belongs to: an application dependency, never in a schema.
struct User(&'static str);

/// Say who is asking, and which call this is.
#[tool]
async fn whoami(call: &CallContext, greeting: String) -> Result<String, ToolError> {
    let user: &User = call.dep()?;
    Ok(format!(
        "{greeting} {}: call {} of {} at step {} of turn {}, after {} messages",
        user.0,
        call.call_id(),
        call.tool_name(),
        call.step(),
        call.turn(),
        call.messages().len()
    ))
}

/// Work in two halves, saying how far it got.
#[tool]
async fn halves(call: &CallContext) -> String {
    call.report_progress(0.5, Some("half way"));
    call.report_progress(7.0, None);
    "done".to_owned()
}

/// Write a note somewhere that matters.
#[tool(needs_approval, destructive)]
async fn publish(#[context] log: &Log, text: String) -> String {
    log.push(format!("published {text}"));
    "published".to_owned()
}

/// Ask for a retry until the number is even.
#[tool(max_retries = 1)]
async fn even(number: i64) -> Result<String, ToolError> {
    if number % 2 == 0 {
        Ok(format!("{number} is even"))
    } else {
        Err(ToolError::retry(format!(
            "{number} is odd; pick an even number"
        )))
    }
}

#[tokio::test]
async fn a_tool_sees_its_call_the_conversation_and_the_applications_deps() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new().deps(Deps::new().with(User("Ada"))),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "whoami", r#"{"greeting": "Hello"}"#),
            ScriptedResponse::text("first"),
            ScriptedResponse::tool_call("c2", "whoami", r#"{"greeting": "Hi"}"#),
            ScriptedResponse::text("second"),
        ],
    );
    agent.add_tool(Whoami).unwrap();

    agent.chat("who am I?").await.unwrap();
    // A turn's own dependencies replace the agent's of the same type.
    agent
        .chat_with(
            "and now?",
            TurnOptions::new().deps(Deps::new().with(User("Grace"))),
        )
        .await
        .unwrap();

    let results = tool_results(&agent.messages());
    assert_eq!(
        results,
        [
            (
                "c1".to_owned(),
                "Hello Ada: call c1 of whoami at step 1 of turn 1, after 2 messages".to_owned()
            ),
            (
                "c2".to_owned(),
                "Hi Grace: call c2 of whoami at step 1 of turn 2, after 6 messages".to_owned()
            ),
        ]
    );
    // The dependency is in no schema.
    let requests = model.requests();
    let offered = &requests[0].tools.definitions()[3];
    assert_eq!(
        *offered.function.parameters,
        serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"greeting": {"type": "string"}},
            "required": ["greeting"]
        })
    );
}

#[tokio::test]
async fn a_missing_dependency_is_an_error_for_the_model_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "whoami", r#"{"greeting": "Hello"}"#),
            ScriptedResponse::text("ok"),
        ],
    );
    agent.add_tool(Whoami).unwrap();
    agent.chat("who am I?").await.unwrap();
    assert_eq!(
        tool_results(&agent.messages())[0].1,
        "Error executing whoami: the application gave this tool no \
         `behaviour::agent_control::User`"
    );
}

#[tokio::test]
async fn called_without_an_agent_a_tool_gets_an_empty_call() {
    let registry = ToolRegistry::new();
    registry.register(Whoami).unwrap();
    let args = serde_json::from_str(r#"{"greeting": "Hey"}"#).unwrap();
    assert_eq!(
        registry.execute("whoami", args).await,
        "Error executing whoami: the application gave this tool no \
         `behaviour::agent_control::User`"
    );
    let args = serde_json::from_str(r#"{"greeting": "Hey"}"#).unwrap();
    let call = CallContext::new("x1", "whoami").with_deps(Deps::new().with(User("Lin")));
    assert_eq!(
        registry.execute_with("whoami", args, call).await,
        "Hey Lin: call x1 of whoami at step 0 of turn 0, after 0 messages"
    );
}

#[tokio::test]
async fn progress_reaches_the_stream_as_events() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "halves", "{}"),
            ScriptedResponse::text("ok"),
        ],
    );
    agent.add_tool(Halves).unwrap();
    let events: Vec<AgentEvent> = agent.stream_chat("go").map(Result::unwrap).collect().await;
    let progress: Vec<(String, f64, Option<String>)> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolProgress(progress) => Some((
                progress.call_id.clone(),
                progress.fraction,
                progress.message.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        progress,
        [
            ("c1".to_owned(), 0.5, Some("half way".to_owned())),
            ("c1".to_owned(), 1.0, None),
        ]
    );
}

/// Signals when it starts, then waits until its turn is cancelled (or for a minute).
struct Waiter {
    started: Arc<tokio::sync::Notify>,
    cancelled: Arc<tokio::sync::Notify>,
}

#[tool_core::async_trait]
impl tool_core::ExecutableTool for Waiter {
    fn name(&self) -> &str {
        "wait"
    }

    fn get_schema(&self) -> tool_core::ChatTool {
        tool_core::ChatTool::new("wait", "Wait.", serde_json::json!({"type": "object"}))
    }

    async fn execute(&self, _args: tool_core::JsonObject) -> Result<String, ToolError> {
        Err(ToolError::new("needs a call"))
    }

    async fn execute_with(
        &self,
        _args: tool_core::JsonObject,
        call: CallContext,
    ) -> Result<String, ToolError> {
        // Watch the signal from a task of its own: the call's future is dropped with the turn.
        let token = call.cancellation().clone();
        let cancelled = self.cancelled.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            cancelled.notify_one();
        });
        self.started.notify_one();
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok("waited".to_owned())
    }
}

#[tokio::test]
async fn dropping_the_stream_fires_the_calls_cancellation_signal() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "wait", "{}"),
            ScriptedResponse::text("never"),
        ],
    );
    let started = Arc::new(tokio::sync::Notify::new());
    let cancelled = Arc::new(tokio::sync::Notify::new());
    agent
        .add_tool(Waiter {
            started: started.clone(),
            cancelled: cancelled.clone(),
        })
        .unwrap();
    let mut stream = agent.stream_chat("wait for it");
    tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            _ = started.notified() => {}
            _ = async { while stream.next().await.is_some() {} } => panic!("the turn ended"),
        }
    })
    .await
    .expect("the tool started");
    drop(stream);
    tokio::time::timeout(Duration::from_secs(30), cancelled.notified())
        .await
        .expect("the cancellation signal fired");
    // The cancelled turn left the conversation as it was.
    assert!(agent.messages().is_empty());
}

#[tokio::test]
async fn save_session_context_saves_the_chat_that_called_it_whichever_registry_it_is_in() {
    let dir = tempfile::tempdir().unwrap();
    // The shared registry's built-ins were made with another context and another file.
    let other = ToolContext::with_options(
        ToolContextOptions::new().session_context_file_path(dir.path().join("other.json")),
    );
    let shared = Arc::new(create_default_tool_registry(other));
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().registry(shared).system_prompt("mine"),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "save_session_context", r#"{"reason": "asked to"}"#),
            ScriptedResponse::text("saved"),
        ],
    );
    agent.chat("save this chat").await.unwrap();
    assert!(!dir.path().join("other.json").exists());
    let saved = SavedConversation::load(dir.path().join("session.json")).unwrap();
    assert_eq!(saved.reason, "asked to");
    assert_eq!(saved.context.system_prompt, "mine");
    assert_eq!(saved.context.messages[0], Message::user("save this chat"));
}

#[tokio::test]
async fn a_tool_that_needs_approval_waits_and_a_denied_call_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("c1", "echo", r#"{"text": "before"}"#),
                ToolCall::new("c2", "publish", r#"{"text": "draft"}"#),
                ToolCall::new("c3", "echo", r#"{"text": "after"}"#),
            ]),
            ScriptedResponse::text("understood"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    agent.add_tool(Publish::new(log.clone())).unwrap();

    let requests = match agent.chat("publish the draft").await {
        Err(AgentError::AwaitingApproval { requests }) => requests,
        other => panic!("expected AwaitingApproval, got {other:?}"),
    };

    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].call.id, "c2");
    assert_eq!(requests[0].arguments.as_ref().unwrap()["text"], "draft");
    assert_eq!(agent.pending_approvals(), requests);
    assert_eq!(model.requests().len(), 1);
    assert!(log.entries().is_empty());
    // New text waits until the pending call is decided.
    match agent.chat("hello?").await {
        Err(AgentError::ApprovalsPending { call_ids }) => assert_eq!(call_ids, ["c2"]),
        other => panic!("expected ApprovalsPending, got {other:?}"),
    }

    let reply = agent
        .continue_with([("c2", ApprovalDecision::deny_because("not before review"))])
        .await
        .unwrap();

    assert_eq!(reply.text, "understood");
    assert!(reply.pending_approvals.is_empty());
    assert_eq!(reply.tool_calls, 3, "the calls that ran and the denied one");
    assert!(log.entries().is_empty(), "a denied call does not run");
    // Every result, in call order, before the next request.
    assert_eq!(
        tool_results(&model.requests()[1].messages),
        [
            ("c1".to_owned(), "before".to_owned()),
            (
                "c2".to_owned(),
                "Error: the user denied this call of publish: not before review".to_owned()
            ),
            ("c3".to_owned(), "after".to_owned()),
        ]
    );
    assert_every_call_answered(&agent.messages());
    assert!(agent.pending_approvals().is_empty());
}

#[tokio::test]
async fn an_approved_call_runs_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "publish", r#"{"text": "final"}"#),
            ScriptedResponse::text("it is out"),
        ],
    );
    agent.add_tool(Publish::new(log.clone())).unwrap();
    agent.chat("publish").await.unwrap_err();

    // Decisions must name every waiting call, and only those.
    match agent
        .continue_with([("nope", ApprovalDecision::approve())])
        .await
    {
        Err(AgentError::InvalidDecisions { message }) => assert_eq!(
            message,
            "no call `nope` is waiting for approval; waiting: c1"
        ),
        other => panic!("expected InvalidDecisions, got {other:?}"),
    }
    let none: [(&str, ApprovalDecision); 0] = [];
    match agent.continue_with(none).await {
        Err(AgentError::InvalidDecisions { message }) => {
            assert_eq!(message, "no decision for c1");
        }
        other => panic!("expected InvalidDecisions, got {other:?}"),
    }

    let reply = agent
        .continue_with([("c1", ApprovalDecision::approve())])
        .await
        .unwrap();
    assert_eq!(reply.text, "it is out");
    assert_eq!(log.entries(), ["published final"]);
    assert_eq!(
        tool_results(&model.requests()[1].messages),
        [("c1".to_owned(), "published".to_owned())]
    );
}

#[tokio::test]
async fn the_policy_asks_for_destructive_tools_and_by_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let policy = ApprovalPolicy::new()
        .destructive_tools(true)
        .when(|call, arguments| {
            call.name == "echo"
                && arguments
                    .and_then(|args| args["text"].as_str())
                    .is_some_and(|text| text.contains("secret"))
        });
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().approval(policy),
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("c1", "echo", r#"{"text": "public"}"#),
                ToolCall::new("c2", "echo", r#"{"text": "a secret"}"#),
                // The built-in write_file says it is destructive.
                ToolCall::new("c3", "write_file", r#"{"path": "a.txt", "content": "x"}"#),
                ToolCall::new("c4", "read_file", r#"{"path": "a.txt"}"#),
            ]),
            ScriptedResponse::text("done"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    let Err(AgentError::AwaitingApproval { requests }) = agent.chat("go").await else {
        panic!("expected AwaitingApproval");
    };
    let waiting: Vec<&str> = requests
        .iter()
        .map(|request| request.call.id.as_str())
        .collect();
    assert_eq!(waiting, ["c2", "c3"]);
    let reply = agent
        .continue_with([
            ("c2", ApprovalDecision::deny()),
            ("c3", ApprovalDecision::deny()),
        ])
        .await
        .unwrap();
    assert_eq!(reply.text, "done");
    assert!(!dir.path().join("a.txt").exists());
    let results = tool_results(&agent.messages());
    assert_eq!(results[1].1, "Error: the user denied this call of echo");
    assert_eq!(
        results[2].1,
        "Error: the user denied this call of write_file"
    );
}

#[tokio::test]
async fn pending_approvals_survive_saving_and_a_new_agent_continues_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [ScriptedResponse::tool_call(
            "c1",
            "publish",
            r#"{"text": "later"}"#,
        )],
    );
    agent.add_tool(Publish::new(log.clone())).unwrap();
    agent.chat("publish later").await.unwrap_err();
    let saved = agent.try_save_context("waiting for a human").await.unwrap();
    assert!(saved.starts_with("Session context saved to "), "{saved}");
    drop(agent);

    // A new process: a new agent loads the session and answers the waiting call.
    let model = ScriptedModel::new([ScriptedResponse::text("published after the restart")]);
    let agent = Agent::resume(
        model.clone(),
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(dir.path().join("session.json")),
        dir.path().join("session.json"),
    )
    .unwrap();
    agent.add_tool(Publish::new(log.clone())).unwrap();
    let waiting = agent.pending_approvals();
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        waiting[0].call,
        ToolCall::new("c1", "publish", r#"{"text": "later"}"#)
    );

    let reply = agent
        .continue_with([("c1", ApprovalDecision::approve())])
        .await
        .unwrap();
    assert_eq!(reply.text, "published after the restart");
    assert_eq!(log.entries(), ["published later"]);
    assert_every_call_answered(&agent.messages());
}

#[tokio::test]
async fn a_streamed_turn_asks_for_approval_after_the_calls_finished_event() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "publish", r#"{"text": "x"}"#),
            ScriptedResponse::text("fine"),
        ],
    );
    agent.add_tool(Publish::new(Log::default())).unwrap();
    let events: Vec<AgentEvent> = agent
        .stream_chat("publish")
        .map(Result::unwrap)
        .collect()
        .await;
    let finished = events
        .iter()
        .position(|event| matches!(event, AgentEvent::ToolCallFinished { .. }))
        .unwrap();
    let asked = events
        .iter()
        .position(|event| matches!(event, AgentEvent::ApprovalRequested(request) if request.call.id == "c1"))
        .unwrap();
    assert!(finished < asked);
    match events.last() {
        Some(AgentEvent::Done(reply)) => assert_eq!(reply.pending_approvals.len(), 1),
        other => panic!("expected Done, got {other:?}"),
    }
    let events: Vec<AgentEvent> = agent
        .stream_continue_with([("c1", ApprovalDecision::deny())])
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(events.iter().any(|event| matches!(
        event,
        AgentEvent::ToolResult { id, kind: ToolResultKind::Denied, is_error: true, .. } if id == "c1"
    )));
}

/// Records when it runs into the log the test's consumer also writes to.
struct Recorder(Log);

#[tool_core::async_trait]
impl tool_core::ExecutableTool for Recorder {
    fn name(&self) -> &str {
        "record"
    }

    fn get_schema(&self) -> tool_core::ChatTool {
        tool_core::ChatTool::new("record", "Record.", serde_json::json!({"type": "object"}))
    }

    async fn execute(&self, _args: tool_core::JsonObject) -> Result<String, ToolError> {
        self.0.push("tool ran");
        Ok("recorded".to_owned())
    }
}

#[tokio::test]
async fn a_calls_finished_event_reaches_the_consumer_before_the_call_runs() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "record", "{}"),
            ScriptedResponse::text("ok"),
        ],
    );
    agent.add_tool(Recorder(log.clone())).unwrap();
    let mut stream = agent.stream_chat("go");
    while let Some(event) = stream.next().await {
        if let AgentEvent::ToolCallFinished { call, .. } = event.unwrap() {
            log.push(format!("consumer saw {}", call.id));
        }
    }
    assert_eq!(log.entries(), ["consumer saw c1", "tool ran"]);
}

#[tokio::test]
async fn a_tool_that_keeps_asking_for_retries_ends_the_turn_after_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "even", r#"{"number": 3}"#),
            ScriptedResponse::tool_call("c2", "even", r#"{"number": 5}"#),
            ScriptedResponse::text("unreachable"),
        ],
    );
    agent.add_tool(Even).unwrap();
    let mut stream = agent.stream_chat("an even number, please");
    let mut kinds = Vec::new();
    let outcome = loop {
        match stream.next().await {
            Some(Ok(AgentEvent::ToolResult { kind, .. })) => kinds.push(kind),
            Some(Ok(_)) => {}
            Some(Err(error)) => break error,
            None => panic!("the turn ended without an error"),
        }
    };
    assert_eq!(
        kinds,
        [
            ToolResultKind::RetryRequested,
            ToolResultKind::RetryRequested
        ]
    );
    match outcome {
        AgentError::ToolRetriesExhausted {
            tool,
            failures,
            last_error,
        } => {
            assert_eq!(tool, "even");
            assert_eq!(failures, 2);
            assert_eq!(
                last_error,
                "Error: even asks you to try again: 5 is odd; pick an even number"
            );
        }
        other => panic!("expected ToolRetriesExhausted, got {other:?}"),
    }
    // The conversation is kept and valid.
    assert_every_call_answered(&agent.messages());
    assert_eq!(agent.messages().len(), 5);
}

#[tokio::test]
async fn invalid_arguments_count_against_the_agents_budget_and_a_success_resets_it() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().max_tool_retries(1),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": 1}"#),
            ScriptedResponse::tool_call("c2", "echo", r#"{"text": "fixed"}"#),
            ScriptedResponse::tool_call("c3", "echo", r#"{"text": 2}"#),
            ScriptedResponse::text("done"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    let reply = agent.chat("echo").await.unwrap();
    assert_eq!(reply.text, "done");
    // Two calls had to be made again; the turn still ended well.
    assert_eq!((reply.tool_calls, reply.retried_calls), (3, 2));

    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().max_tool_retries(1),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": 1}"#),
            ScriptedResponse::tool_call("c2", "echo", "not json"),
            ScriptedResponse::text("unreachable"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    match agent.chat("echo").await {
        Err(AgentError::ToolRetriesExhausted { tool, failures, .. }) => {
            assert_eq!((tool.as_str(), failures), ("echo", 2));
        }
        other => panic!("expected ToolRetriesExhausted, got {other:?}"),
    }
}

#[tokio::test]
async fn the_retry_budget_counts_failing_steps_not_the_calls_of_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |id: &str| ToolCall::new(id, "echo", r#"{"text": 1}"#);
    let five_bad = || ScriptedResponse::tool_calls(["c1", "c2", "c3", "c4", "c5"].map(bad));
    // Five bad calls in one step are one failed attempt: the model sees the five errors and
    // fixes them in the next step.
    let (agent, model) = scripted_agent_with(
        AgentOptions::new().max_tool_retries(1),
        dir.path(),
        [
            five_bad(),
            ScriptedResponse::tool_call("c6", "echo", r#"{"text": "fixed"}"#),
            ScriptedResponse::text("done"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    let reply = agent.chat("echo").await.unwrap();
    assert_eq!(reply.text, "done");
    assert_eq!((reply.tool_calls, reply.retried_calls), (6, 5));
    let second = &model.requests()[1];
    let errors: Vec<(String, String)> = tool_results(&second.messages);
    assert_eq!(
        errors.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["c1", "c2", "c3", "c4", "c5"]
    );
    assert!(
        errors
            .iter()
            .all(|(_, text)| text.starts_with("Error: invalid arguments for echo")),
        "{errors:?}"
    );

    // Failing steps in a row end the turn once they pass the budget.
    let (agent, model) = scripted_agent_with(
        AgentOptions::new().max_tool_retries(1),
        dir.path(),
        [
            five_bad(),
            ScriptedResponse::tool_calls(["c6", "c7"].map(bad)),
            ScriptedResponse::text("unreachable"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    match agent.chat("echo").await {
        Err(AgentError::ToolRetriesExhausted { tool, failures, .. }) => {
            assert_eq!((tool.as_str(), failures), ("echo", 2));
        }
        other => panic!("expected ToolRetriesExhausted, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 2);
    assert_every_call_answered(&agent.messages());
}

#[tokio::test]
async fn a_forced_tool_choice_applies_to_the_first_step_only_unless_asked() {
    use tool_core::model::ToolChoice;

    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new().tool_choice(ToolChoice::tool("echo")),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": "hi"}"#),
            ScriptedResponse::text("done"),
            ScriptedResponse::text("plain"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    agent.chat("echo hi").await.unwrap();
    // A turn's own choice replaces the agent's.
    agent
        .chat_with(
            "no tools now",
            TurnOptions::new().tool_choice(ToolChoice::None),
        )
        .await
        .unwrap();
    let choices: Vec<ToolChoice> = model
        .requests()
        .iter()
        .map(|request| request.tool_choice.clone())
        .collect();
    assert_eq!(
        choices,
        [ToolChoice::tool("echo"), ToolChoice::Auto, ToolChoice::None]
    );

    let (agent, model) = scripted_agent_with(
        AgentOptions::new()
            .tool_choice(ToolChoice::Required)
            .tool_choice_every_step(true)
            .max_steps(2),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": "1"}"#),
            ScriptedResponse::tool_call("c2", "echo", r#"{"text": "2"}"#),
        ],
    );
    agent.add_tool(Echo).unwrap();
    assert!(matches!(
        agent.chat("loop").await,
        Err(AgentError::MaxSteps { steps: 2 })
    ));
    let choices: Vec<ToolChoice> = model
        .requests()
        .iter()
        .map(|request| request.tool_choice.clone())
        .collect();
    assert_eq!(choices, [ToolChoice::Required, ToolChoice::Required]);
}

#[tokio::test]
async fn active_tools_narrow_the_enabled_set_for_one_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [ScriptedResponse::text("one"), ScriptedResponse::text("two")],
    );
    agent.add_tool(Echo).unwrap();
    assert!(agent.disable_tool("write_file"));
    agent
        .chat_with(
            "only these",
            TurnOptions::new().active_tools(["echo", "write_file", "missing"]),
        )
        .await
        .unwrap();
    agent.chat("all of them").await.unwrap();
    let offered: Vec<Vec<String>> = model
        .requests()
        .iter()
        .map(|request| {
            request
                .tools
                .definitions()
                .iter()
                .map(|tool| tool.function.name.to_string())
                .collect()
        })
        .collect();
    assert_eq!(
        offered,
        [
            vec!["echo".to_owned()],
            vec![
                "read_file".to_owned(),
                "save_session_context".to_owned(),
                "echo".to_owned()
            ]
        ]
    );
}

/// Add days to a count, reading drifted types.
#[tool(lenient)]
async fn add_days(days: i64, extra: Vec<i64>) -> i64 {
    days + extra.iter().sum::<i64>()
}

#[tokio::test]
async fn a_lenient_tools_coercions_are_events_before_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "add_days", r#"{"days": "30", "extra": 2}"#),
            ScriptedResponse::text("32"),
        ],
    );
    agent.add_tool(AddDays).unwrap();
    let events: Vec<AgentEvent> = agent.stream_chat("add").map(Result::unwrap).collect().await;
    let coerced = events
        .iter()
        .position(|event| matches!(event, AgentEvent::ArgumentsCoerced { .. }))
        .expect("the coercions are reported");
    match &events[coerced] {
        AgentEvent::ArgumentsCoerced { id, coercions, .. } => {
            assert_eq!(id, "c1");
            let texts: Vec<String> = coercions.iter().map(ToString::to_string).collect();
            assert_eq!(
                texts,
                [
                    r#"at /days: "30" read as the integer 30"#,
                    "at /extra: 2 read as a one-element array"
                ]
            );
        }
        _ => unreachable!(),
    }
    let result = events
        .iter()
        .position(
            |event| matches!(event, AgentEvent::ToolResult { content, .. } if content == "32"),
        )
        .expect("the call ran with the coerced arguments");
    assert!(coerced < result);
}
