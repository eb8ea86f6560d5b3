//! The agent's tool-call loop on the scripted model: every call gets exactly one result, in
//! call order, whatever goes wrong.

use std::sync::{Arc, Mutex};

use tool_core::{
    AgentError, AgentOptions, ToolToggles,
    model::{Message, ProviderError, ScriptedResponse, ToolCall},
};

use crate::agent_support::{
    Boom, Echo, Fail, Log, Slow, Stepper, assert_every_call_answered, offered, scripted_agent,
    scripted_agent_with, tool_results,
};

#[tokio::test]
async fn unknown_tool_logs_a_warning_and_lists_the_available_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("call_1", "launch_rocket", "{}"),
            ScriptedResponse::text("sorry"),
        ],
    );
    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || LogWriter(writer.clone()))
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let reply = agent.chat("launch it").await.unwrap();

    assert_eq!(reply.text, "sorry");
    let results = tool_results(&model.requests()[1].messages);
    assert_eq!(
        results,
        [(
            "call_1".to_owned(),
            "Error: tool 'launch_rocket' not found. Available tools: read_file, write_file, \
             save_session_context."
                .to_owned()
        )]
    );
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("WARN"), "{logs}");
    assert!(logs.contains("launch_rocket"), "{logs}");
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn invalid_json_arguments_get_an_error_result_saying_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("call_1", "echo", r#"{"text": "hi"#),
            ScriptedResponse::tool_call("call_2", "echo", r#"["hi"]"#),
            ScriptedResponse::text("ok"),
        ],
    );
    agent.add_tool(Echo).unwrap();

    agent.chat("echo hi").await.unwrap();

    let results = tool_results(&model.requests()[2].messages);
    assert!(
        results[0]
            .1
            .starts_with("Error: invalid arguments for echo: the arguments are not valid JSON"),
        "{results:?}"
    );
    assert!(
        results[1]
            .1
            .starts_with("Error: invalid arguments for echo: the arguments must be a JSON object"),
        "{results:?}"
    );
}

#[tokio::test]
async fn arguments_failing_the_schema_get_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("call_1", "echo", r#"{"text": 5}"#),
            ScriptedResponse::text("ok"),
        ],
    );
    agent.add_tool(Echo).unwrap();

    agent.chat("echo 5").await.unwrap();

    assert_eq!(
        tool_results(&model.requests()[1].messages),
        [(
            "call_1".to_owned(),
            "Error: invalid arguments for echo: at /text: expected a string, got 5".to_owned()
        )]
    );
}

#[tokio::test]
async fn tool_error_panic_and_timeout_become_results_and_the_loop_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("c1", "fail", "{}"),
                ToolCall::new("c2", "boom", "{}"),
                ToolCall::new("c3", "slow", "{}"),
                ToolCall::new("c4", "echo", r#"{"text": "still here"}"#),
            ]),
            ScriptedResponse::text("recovered"),
        ],
    );
    for result in [
        agent.add_tool(Fail),
        agent.add_tool(Boom),
        agent.add_tool(Slow),
        agent.add_tool(Echo),
    ] {
        result.unwrap();
    }

    let reply = agent.chat("try everything").await.unwrap();

    assert_eq!(reply.text, "recovered");
    assert_eq!(reply.tool_calls, 4);
    let contents: Vec<String> = tool_results(&model.requests()[1].messages)
        .into_iter()
        .map(|(_, content)| content)
        .collect();
    assert_eq!(
        contents,
        [
            "Error executing fail: the disk is full",
            "Error executing boom: tool panicked: kaboom",
            "Error executing slow: timed out after 50ms",
            "still here",
        ]
    );
    assert_every_call_answered(&agent.messages());
}

#[tokio::test]
async fn tool_timeout_applies_to_the_agents_calls_on_a_shared_registry() {
    let dir = tempfile::tempdir().unwrap();
    let shared = Arc::new(tool_core::ToolRegistry::new());
    shared.register(crate::agent_support::Forever).unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new()
            .registry(shared.clone())
            .tool_timeout(std::time::Duration::from_millis(40)),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "forever", "{}"),
            ScriptedResponse::text("gave up"),
        ],
    );

    let reply = tokio::time::timeout(std::time::Duration::from_secs(30), agent.chat("wait"))
        .await
        .expect("the agent's timeout stopped the tool")
        .unwrap();

    assert_eq!(reply.text, "gave up");
    assert_eq!(
        tool_results(&model.requests()[1].messages),
        [(
            "c1".to_owned(),
            "Error executing forever: timed out after 40ms".to_owned()
        )]
    );
    // The shared registry's own settings are untouched.
    assert_eq!(shared.options().default_timeout, None);
}

#[tokio::test]
async fn max_steps_is_a_clear_error_and_every_call_is_still_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new().max_steps(2),
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": "1"}"#),
            ScriptedResponse::tool_call("c2", "echo", r#"{"text": "2"}"#),
            ScriptedResponse::tool_call("c3", "echo", r#"{"text": "3"}"#),
        ],
    );
    agent.add_tool(Echo).unwrap();

    let error = agent.chat("loop forever").await.unwrap_err();

    assert!(
        matches!(error, AgentError::MaxSteps { steps: 2 }),
        "{error}"
    );
    assert!(error.to_string().contains("max_steps"));
    assert_eq!(model.requests().len(), 2);
    assert_eq!(model.remaining(), 1);
    let messages = agent.messages();
    assert_every_call_answered(&messages);
    assert_eq!(
        tool_results(&messages),
        [
            ("c1".to_owned(), "1".to_owned()),
            (
                "c2".to_owned(),
                "Error: this call was not run because the agent reached its step limit".to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn with_no_tools_enabled_the_request_carries_no_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(dir.path(), [ScriptedResponse::text("hello")]);
    for name in ["read_file", "write_file", "save_session_context"] {
        assert!(agent.disable_tool(name));
    }

    agent.chat("hi").await.unwrap();

    let request = model.last_request().unwrap();
    assert!(request.tools.is_empty());
    assert!(request.tools.definitions().is_empty());
    assert!(agent.get_tools().is_empty());
}

#[tokio::test]
async fn a_tool_disabled_mid_conversation_is_no_longer_offered_nor_run() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": "first"}"#),
            ScriptedResponse::text("one"),
            ScriptedResponse::tool_call("c2", "echo", r#"{"text": "second"}"#),
            ScriptedResponse::text("two"),
        ],
    );
    agent.add_tool(Echo).unwrap();

    agent.chat("first").await.unwrap();
    assert!(agent.disable_tool("echo"));
    agent.chat("second").await.unwrap();

    let requests = model.requests();
    assert!(offered(&requests[0]).contains(&"echo".to_owned()));
    assert!(!offered(&requests[2]).contains(&"echo".to_owned()));
    let results = tool_results(&agent.messages());
    assert_eq!(results[0], ("c1".to_owned(), "first".to_owned()));
    assert!(
        results[1]
            .1
            .starts_with("Error: tool 'echo' is not available (it is disabled)"),
        "{results:?}"
    );
    assert!(agent.registry().has_tool("echo"));
}

#[tokio::test]
async fn per_session_toggles_leave_the_shared_registry_alone() {
    let dir = tempfile::tempdir().unwrap();
    let toggles = ToolToggles::new();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new().toggles(toggles.clone()),
        dir.path(),
        [ScriptedResponse::text("ok")],
    );

    assert!(agent.disable_tool("write_file"));
    agent.chat("hi").await.unwrap();

    assert_eq!(toggles.get("write_file"), Some(false));
    assert!(agent.registry().is_tool_enabled("write_file"));
    assert!(!agent.is_tool_enabled("write_file"));
    assert_eq!(
        offered(&model.last_request().unwrap()),
        ["read_file", "save_session_context"]
    );
    assert!(!agent.disable_tool("no_such_tool"));
}

#[tokio::test]
async fn concurrent_calls_run_together_and_results_keep_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("a", "step", r#"{"label": "a", "yields": 5}"#),
                ToolCall::new("b", "step", r#"{"label": "b", "yields": 0}"#),
            ]),
            ScriptedResponse::text("done"),
        ],
    );
    agent
        .add_tool(Stepper {
            name: "step",
            log: log.clone(),
            sequential: false,
        })
        .unwrap();

    agent.chat("go").await.unwrap();

    // `b` started before `a` ended, and ended first ...
    assert_eq!(log.entries(), ["start:a", "start:b", "end:b", "end:a"]);
    // ... yet the results follow the calls' order.
    assert_eq!(
        tool_results(&model.requests()[1].messages),
        [
            ("a".to_owned(), "done:a".to_owned()),
            ("b".to_owned(), "done:b".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_sequential_tool_runs_alone_in_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("1", "step", r#"{"label": "p1", "yields": 3}"#),
                ToolCall::new("2", "step", r#"{"label": "p2", "yields": 0}"#),
                ToolCall::new("3", "ordered", r#"{"label": "s", "yields": 3}"#),
                ToolCall::new("4", "step", r#"{"label": "p3", "yields": 0}"#),
            ]),
            ScriptedResponse::text("done"),
        ],
    );
    for (name, sequential) in [("step", false), ("ordered", true)] {
        agent
            .add_tool(Stepper {
                name,
                log: log.clone(),
                sequential,
            })
            .unwrap();
    }

    agent.chat("go").await.unwrap();

    assert_eq!(
        log.entries(),
        [
            "start:p1", "start:p2", "end:p2", "end:p1", // concurrent
            "start:s", "end:s", // alone
            "start:p3", "end:p3",
        ]
    );
}

#[tokio::test]
async fn the_sequential_option_runs_every_call_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().sequential_tools(true),
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                ToolCall::new("a", "step", r#"{"label": "a", "yields": 5}"#),
                ToolCall::new("b", "step", r#"{"label": "b", "yields": 0}"#),
            ]),
            ScriptedResponse::text("done"),
        ],
    );
    agent
        .add_tool(Stepper {
            name: "step",
            log: log.clone(),
            sequential: false,
        })
        .unwrap();

    agent.chat("go").await.unwrap();

    assert_eq!(log.entries(), ["start:a", "end:a", "start:b", "end:b"]);
}

#[tokio::test]
async fn a_provider_failure_mid_turn_rolls_the_turn_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::text("first answer"),
            ScriptedResponse::tool_call("c1", "step", r#"{"label": "x", "yields": 0}"#),
            ScriptedResponse::error(ProviderError::Config("no key".to_owned())),
            ScriptedResponse::text("after the failure"),
        ],
    );
    agent
        .add_tool(Stepper {
            name: "step",
            log: log.clone(),
            sequential: false,
        })
        .unwrap();
    agent.chat("one").await.unwrap();
    let before = agent.messages();

    let error = agent.chat("two").await.unwrap_err();

    assert!(matches!(error, AgentError::Model(_)), "{error}");
    assert_eq!(error.to_string(), "no key");
    // The tool ran, but the conversation is as it was before the failed turn.
    assert_eq!(log.entries(), ["start:x", "end:x"]);
    assert_eq!(agent.messages(), before);
    let reply = agent.chat("three").await.unwrap();
    assert_eq!(reply.text, "after the failure");
    let last = model.last_request().unwrap();
    assert_eq!(
        last.messages,
        [
            Message::user("one"),
            Message::assistant("first answer"),
            Message::user("three")
        ]
    );
}

#[tokio::test]
async fn the_system_prompt_leads_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new().system_prompt("Be brief."),
        dir.path(),
        [
            ScriptedResponse::text("a"),
            ScriptedResponse::text("b"),
            ScriptedResponse::text("c"),
        ],
    );
    agent.chat("one").await.unwrap();
    agent.set_system_prompt("Be thorough.");
    agent.chat("two").await.unwrap();
    agent.set_system_prompt("");
    agent.chat("three").await.unwrap();

    let requests = model.requests();
    assert_eq!(requests[0].messages[0], Message::system("Be brief."));
    assert_eq!(requests[1].messages[0], Message::system("Be thorough."));
    assert_eq!(requests[2].messages[0], Message::user("one"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_can_run_on_spawned_tasks_and_wait_for_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("c1", "echo", r#"{"text": "x"}"#),
            ScriptedResponse::text("first"),
            ScriptedResponse::text("second"),
        ],
    );
    agent.add_tool(Echo).unwrap();
    let agent = Arc::new(agent);

    let first = tokio::spawn({
        let agent = agent.clone();
        async move { agent.chat("one").await.map(|reply| reply.text) }
    });
    let second = tokio::spawn({
        let agent = agent.clone();
        async move {
            let mut events = agent.stream_chat("two");
            let mut last = None;
            while let Some(event) = futures::StreamExt::next(&mut events).await {
                last = Some(event.unwrap());
            }
            last
        }
    });
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();

    // The two turns did not interleave: each request saw a complete conversation.
    let messages = agent.messages();
    assert_eq!(messages.len(), 6);
    assert_every_call_answered(&messages);
    assert_eq!(model.requests().len(), 3);
}
