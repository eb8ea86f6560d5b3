//! What an approval decision binds to: the arguments the tool will get (read leniently when the
//! tool is), and one call per call id, so that no decision is taken for another call.

use std::{path::Path, sync::Arc};

use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentError, AgentEvent, AgentOptions, JsonObject,
    agent::{ApprovalDecision, ApprovalPolicy},
    model::{ChatModel, Message, ScriptedModel, ScriptedResponse, ToolCall},
    tool,
};

use crate::{
    agent_support::{Log, assert_every_call_answered, tool_results, waiting},
    loopback::{Reply, Server, fast_retries},
    provider_wires,
};

/// Delete a table's rows; with `force`, its backups too.
#[tool(lenient)]
async fn purge(#[context] log: &Log, table: String, force: bool) -> String {
    log.push(format!("purge {table} force={force}"));
    "purged".to_owned()
}

fn object(value: Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

fn agent_in(dir: &Path, options: AgentOptions, model: &ScriptedModel) -> Agent {
    Agent::new(
        model.clone(),
        options
            .root_dir(dir)
            .session_context_file_path(dir.join("session.json")),
    )
}

/// Asks before a forced purge.
fn ask_before_force() -> ApprovalPolicy {
    ApprovalPolicy::new().when(|_, arguments| {
        arguments.and_then(|args| args.get("force")) == Some(&Value::Bool(true))
    })
}

#[tokio::test]
async fn a_predicate_decides_on_the_arguments_a_lenient_tool_will_get() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let model = ScriptedModel::new([
        // A lenient tool reads "true" as `true`: the predicate must see it so.
        ScriptedResponse::tool_call("c1", "purge", r#"{"table": "users", "force": "true"}"#),
        ScriptedResponse::text("asked"),
        ScriptedResponse::tool_call("c2", "purge", r#"{"table": "logs", "force": "true"}"#),
        ScriptedResponse::text("purged"),
    ]);
    let agent = agent_in(
        dir.path(),
        AgentOptions::new().approval(ask_before_force()),
        &model,
    );
    agent.add_tool(Purge::new(log.clone())).unwrap();

    let pending = waiting(agent.chat("purge the users").await);
    assert!(log.entries().is_empty(), "ran unasked: {:?}", log.entries());
    assert_eq!(pending.len(), 1);
    let expected = object(json!({"table": "users", "force": true}));
    assert_eq!(pending[0].arguments.as_ref(), Some(&expected));
    assert_eq!(
        agent.pending_approvals()[0].arguments.as_ref(),
        Some(&expected)
    );
    let reply = agent
        .continue_with([("c1", ApprovalDecision::deny())])
        .await
        .unwrap();
    assert_eq!(reply.text, "asked");
    assert!(log.entries().is_empty());

    // Approved, the tool gets the object that was approved.
    let pending = waiting(agent.chat("purge the logs").await);
    assert_eq!(pending[0].call.id, "c2");
    let reply = agent
        .continue_with([("c2", ApprovalDecision::approve())])
        .await
        .unwrap();
    assert_eq!(reply.text, "purged");
    assert_eq!(log.entries(), ["purge logs force=true"]);
}

#[tokio::test]
async fn a_streamed_predicate_sees_the_coerced_arguments_too() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "purge", r#"{"table": "users", "force": "true"}"#),
        ScriptedResponse::text("unreachable"),
    ]);
    let agent = agent_in(
        dir.path(),
        AgentOptions::new().approval(ask_before_force()),
        &model,
    );
    agent.add_tool(Purge::new(log.clone())).unwrap();
    let events: Vec<AgentEvent> = agent
        .stream_chat("purge the users")
        .map(Result::unwrap)
        .collect()
        .await;
    let requested: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ApprovalRequested(request) => Some(request.arguments.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        requested,
        [Some(object(json!({"table": "users", "force": true})))]
    );
    assert!(log.entries().is_empty());
}

/// Two `write_file` calls of one step, both with the id `call_1`.
fn same_id_writes() -> ScriptedResponse {
    ScriptedResponse::tool_calls([
        ToolCall::new(
            "call_1",
            "write_file",
            r#"{"path": "denied.txt", "content": "no"}"#,
        ),
        ToolCall::new(
            "call_1",
            "write_file",
            r#"{"path": "approved.txt", "content": "yes"}"#,
        ),
    ])
}

#[tokio::test]
async fn calls_that_share_an_id_get_ids_of_their_own_and_a_decision_each() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([same_id_writes(), ScriptedResponse::text("one written")]);
    let agent = agent_in(
        dir.path(),
        AgentOptions::new().approval(ApprovalPolicy::new().destructive_tools(true)),
        &model,
    );
    let pending = waiting(agent.chat("write both").await);
    let ids: Vec<&str> = pending
        .iter()
        .map(|request| request.call.id.as_str())
        .collect();
    assert_eq!(ids, ["call_1", "call_1_2"]);
    assert_eq!(
        pending[1].arguments.as_ref().unwrap()["path"],
        "approved.txt"
    );

    // Two answers for one call are refused, whatever they say.
    match agent
        .continue_with([
            ("call_1", ApprovalDecision::deny()),
            ("call_1", ApprovalDecision::approve()),
        ])
        .await
    {
        Err(AgentError::InvalidDecisions { message }) => {
            assert_eq!(message, "more than one decision for call_1");
        }
        other => panic!("expected InvalidDecisions, got {other:?}"),
    }
    let reply = agent
        .continue_with([
            ("call_1", ApprovalDecision::deny()),
            ("call_1_2", ApprovalDecision::approve()),
        ])
        .await
        .unwrap();
    assert_eq!(reply.text, "one written");
    assert!(!dir.path().join("denied.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("approved.txt")).unwrap(),
        "yes"
    );
    // The conversation the provider sees names each call once and answers each.
    let messages = agent.messages();
    let Message::Assistant { tool_calls, .. } = &messages[1] else {
        panic!("no assistant message: {messages:?}");
    };
    let ids: Vec<&str> = tool_calls.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_1_2"]);
    assert_eq!(
        tool_results(&messages),
        [
            (
                "call_1".to_owned(),
                "Error: the user denied this call of write_file".to_owned()
            ),
            (
                "call_1_2".to_owned(),
                "Successfully wrote 3 bytes to approved.txt".to_owned()
            ),
        ]
    );
    assert_every_call_answered(&messages);
    assert_eq!(model.requests()[1].messages, messages[..4]);
}

#[tokio::test]
async fn a_streamed_step_names_calls_that_share_an_id_as_its_answer_does() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ToolCall::new(
                "call_1",
                "write_file",
                r#"{"path": "a.txt", "content": "a"}"#,
            ),
            // Taken by the first renamed call would be `call_1_2`: the model's own id stays.
            ToolCall::new(
                "call_1_2",
                "write_file",
                r#"{"path": "b.txt", "content": "b"}"#,
            ),
            ToolCall::new(
                "call_1",
                "write_file",
                r#"{"path": "c.txt", "content": "c"}"#,
            ),
        ]),
        ScriptedResponse::text("unreachable"),
    ]);
    let agent = agent_in(
        dir.path(),
        AgentOptions::new().approval(ApprovalPolicy::new().destructive_tools(true)),
        &model,
    );
    let events: Vec<AgentEvent> = agent
        .stream_chat("write them")
        .map(Result::unwrap)
        .collect()
        .await;
    let mut started = Vec::new();
    let mut finished = Vec::new();
    let mut requested = Vec::new();
    for event in &events {
        match event {
            AgentEvent::ToolCallStarted(start) => started.push(start.id.clone()),
            AgentEvent::ToolCallFinished { call, .. } => finished.push(call.id.clone()),
            AgentEvent::ApprovalRequested(request) => requested.push(request.call.id.clone()),
            _ => {}
        }
    }
    let expected = ["call_1", "call_1_2", "call_1_3"];
    assert_eq!(finished, expected);
    assert_eq!(requested, expected);
    if !started.is_empty() {
        assert_eq!(started, expected);
    }
    let ids: Vec<String> = agent
        .pending_approvals()
        .into_iter()
        .map(|request| request.call.id)
        .collect();
    assert_eq!(ids, expected);
}

/// `search {query}`: finds nothing.
#[tool]
async fn search(query: String) -> String {
    format!("nothing found for {query}")
}

/// `get_weather {city}`: always mild.
#[tool]
async fn get_weather(city: String) -> String {
    format!("mild in {city}")
}

/// The reply a streamed turn ends with (the transcripts are streams).
async fn done(
    events: futures::stream::BoxStream<'static, Result<AgentEvent, tool_core::AgentError>>,
) -> tool_core::AgentResponse {
    let events: Vec<AgentEvent> = events.map(Result::unwrap).collect().await;
    match events.last() {
        Some(AgentEvent::Done(reply)) => reply.clone(),
        other => panic!("the turn ended without Done: {other:?}"),
    }
}

type Connect = fn(&Server, tool_core::model::HttpOptions) -> Arc<dyn ChatModel>;

/// The call ids of a provider's follow-up request: those of the assistant's calls and those its
/// results answer, per wire.
fn ids_in(provider: &str, body: &Value) -> (Vec<String>, Vec<String>) {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    match provider {
        "openai" => {
            for message in body["messages"].as_array().unwrap() {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    calls.push(text(&call["id"]));
                }
                if message["role"] == "tool" {
                    results.push(text(&message["tool_call_id"]));
                }
            }
        }
        "anthropic" => {
            for message in body["messages"].as_array().unwrap() {
                for block in message["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("tool_use") => calls.push(text(&block["id"])),
                        Some("tool_result") => results.push(text(&block["tool_use_id"])),
                        _ => {}
                    }
                }
            }
        }
        _ => {
            for content in body["contents"].as_array().unwrap() {
                for part in content["parts"].as_array().into_iter().flatten() {
                    if let Some(call) = part.get("functionCall") {
                        calls.push(text(&call["id"]));
                    }
                    if let Some(response) = part.get("functionResponse") {
                        results.push(text(&response["id"]));
                    }
                }
            }
        }
    }
    (calls, results)
}

#[tokio::test]
async fn calls_that_share_an_id_go_back_to_every_provider_in_a_form_it_accepts() {
    let same_ids = |bytes: &[u8], first: &str, second: &str| {
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        Reply::sse_owned(text.replace(second, first))
    };
    let wires: [(&str, Reply, Reply, Connect); 3] = [
        (
            "openai",
            same_ids(
                include_bytes!("../transcripts/openai/parallel_tool_calls.sse"),
                "call_p0",
                "call_p1",
            ),
            Reply::sse(include_bytes!("../transcripts/openai/final_answer.sse")),
            |server, http| Arc::new(provider_wires::openai().client(server, http)),
        ),
        (
            "anthropic",
            same_ids(
                include_bytes!("../transcripts/anthropic/parallel_tool_use.sse"),
                "toolu_01A",
                "toolu_01B",
            ),
            Reply::sse(include_bytes!("../transcripts/anthropic/final_answer.sse")),
            |server, http| Arc::new(provider_wires::anthropic().client(server, http)),
        ),
        (
            "gemini",
            same_ids(
                include_bytes!("../transcripts/gemini/calls_with_ids.sse"),
                "fc-1",
                "fc-2",
            ),
            Reply::sse(include_bytes!("../transcripts/gemini/final_answer.sse")),
            |server, http| Arc::new(provider_wires::gemini().client(server, http)),
        ),
    ];
    // Anthropic's pattern for a `tool_use` id; OpenAI and Gemini take any string.
    let accepted = |id: &str| {
        !id.is_empty()
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    for (provider, calls, answer, connect) in wires {
        let server = Server::start(vec![calls, answer]).await;
        let dir = tempfile::tempdir().unwrap();
        let agent = Agent::new(
            connect(&server, fast_retries()),
            AgentOptions::new()
                .root_dir(dir.path())
                .session_context_file_path(dir.path().join("session.json")),
        );
        agent.add_tool(Search).unwrap();
        agent.add_tool(GetWeather).unwrap();
        let reply = done(agent.stream_chat("go")).await;
        assert!(!reply.text.is_empty(), "{provider}: the model answered");
        assert_eq!(reply.tool_calls, 2, "{provider}");
        assert_every_call_answered(&agent.messages());

        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        let (calls, results) = ids_in(provider, &requests[1].json());
        assert_eq!(calls, results, "{provider}: each call answered by its id");
        match provider {
            "openai" => assert_eq!(calls, ["call_p0", "call_p0_2"]),
            "anthropic" => assert_eq!(calls, ["toolu_01A", "toolu_01A_2"]),
            // Gemini gets back the ids it gave, which pair its calls and responses in order.
            _ => assert_eq!(calls, ["fc-1", "fc-1"]),
        }
        assert!(calls.iter().all(|id| accepted(id)), "{provider}: {calls:?}");
    }
}
