//! Typed output: `Agent::chat_output` ends a turn with a value of a Rust type, given through
//! the output tool, validated, retried within a budget and checked by the application.

use serde::Deserialize;
use tool_core::{
    Agent, AgentError, AgentOptions,
    agent::{OUTPUT_TOOL, OutputOptions},
    model::{Message, ScriptedResponse, TestModel},
    schemars::JsonSchema,
};

use crate::agent_support::{
    Echo, assert_every_call_answered, offered, scripted_agent, scripted_agent_with, tool_results,
};

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Invoice {
    number: String,
    total: f64,
    lines: Vec<Line>,
    note: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Line {
    item: String,
    quantity: u32,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
#[serde(rename_all = "lowercase")]
enum Mood {
    Happy,
    Sad,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

fn test_agent(dir: &std::path::Path, model: TestModel) -> Agent {
    Agent::new(
        model,
        AgentOptions::new()
            .root_dir(dir)
            .session_context_file_path(dir.join("session.json")),
    )
}

fn output_call(id: &str, arguments: &str) -> ScriptedResponse {
    ScriptedResponse::tool_call(id, OUTPUT_TOOL, arguments)
}

#[tokio::test]
async fn test_model_gives_a_valid_struct_output() {
    let dir = tempfile::tempdir().unwrap();
    let agent = test_agent(dir.path(), TestModel::new().call_tools([OUTPUT_TOOL]));

    let result = agent.chat_output::<Invoice>("bill me").await.unwrap();

    assert_eq!(result.response.steps, 1);
    assert_eq!(result.response.tool_calls, 0);
    assert_eq!(result.output_retries, 0);
    let messages = agent.messages();
    assert_every_call_answered(&messages);
    assert_eq!(
        tool_results(&messages),
        vec![(
            "test_call_0".to_owned(),
            "Final result accepted.".to_owned()
        )]
    );
}

#[tokio::test]
async fn test_model_gives_a_valid_enum_output() {
    let dir = tempfile::tempdir().unwrap();
    let agent = test_agent(dir.path(), TestModel::new().call_tools([OUTPUT_TOOL]));
    let mood = agent.chat_output::<Mood>("how are you").await.unwrap();
    assert!(matches!(mood.output, Mood::Happy | Mood::Sad));
    // An enum of variants with data has an output tool per variant; the test model calls
    // both, and the first is the output.
    let agent = test_agent(
        dir.path(),
        TestModel::new().call_tools(["final_result_Square", "final_result_Circle"]),
    );
    let shape = agent.chat_output::<Shape>("draw").await.unwrap();
    assert!(matches!(shape.output, Shape::Circle { .. }), "{shape:?}");
    assert_eq!(shape.output_retries, 0);
    assert_eq!(
        tool_results(&agent.messages()),
        [
            (
                "test_call_0".to_owned(),
                "Final result accepted.".to_owned()
            ),
            (
                "test_call_1".to_owned(),
                "Error: not used; an earlier final result was accepted".to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn test_model_gives_a_valid_plain_output() {
    let dir = tempfile::tempdir().unwrap();
    let agent = test_agent(dir.path(), TestModel::new().call_tools([OUTPUT_TOOL]));
    let number = agent.chat_output::<u32>("count").await.unwrap();
    assert_eq!(number.output_retries, 0);
    // A list of structs: its `$defs` move to the wrapper's root.
    let words = agent.chat_output::<Vec<Line>>("list").await.unwrap();
    assert_eq!(words.output_retries, 0);
}

#[tokio::test]
async fn a_plain_output_is_wrapped_in_a_value_object() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(dir.path(), [output_call("c1", r#"{"value": 7}"#)]);

    let result = agent.chat_output::<u32>("count").await.unwrap();

    assert_eq!(result.output, 7);
    let request = model.last_request().unwrap();
    let tool = request
        .tools
        .definitions()
        .iter()
        .find(|tool| tool.name() == OUTPUT_TOOL)
        .unwrap()
        .clone();
    assert_eq!(
        tool.parameters(),
        &serde_json::json!({
            "type": "object",
            "properties": { "value": { "type": "integer", "format": "uint32", "minimum": 0 } },
            "required": ["value"],
            "additionalProperties": false
        })
    );
}

#[tokio::test]
async fn an_invalid_output_is_retried_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            output_call("c1", r#"{"number": 5, "total": 10.5, "lines": []}"#),
            output_call("c2", r#"{"number": "A-1", "total": 10.5, "lines": []}"#),
        ],
    );

    let result = agent.chat_output::<Invoice>("bill me").await.unwrap();

    assert_eq!(
        result.output,
        Invoice {
            number: "A-1".to_owned(),
            total: 10.5,
            lines: Vec::new(),
            note: None,
        }
    );
    assert_eq!(result.output_retries, 1);
    assert_eq!(result.response.steps, 2);
    assert_eq!(model.requests().len(), 2);
    let messages = agent.messages();
    assert_every_call_answered(&messages);
    assert_eq!(
        tool_results(&messages),
        vec![
            (
                "c1".to_owned(),
                "Error: invalid arguments for final_result: at /number: expected a string, got \
                 5; call final_result again with a corrected value"
                    .to_owned()
            ),
            ("c2".to_owned(), "Final result accepted.".to_owned()),
        ]
    );
}

#[tokio::test]
async fn an_output_outside_an_enum_is_refused_with_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            output_call("c1", r#"{"value": "angry"}"#),
            output_call("c2", r#"{"value": "sad"}"#),
        ],
    );

    let result = agent.chat_output::<Mood>("how are you").await.unwrap();

    assert_eq!(result.output, Mood::Sad);
    let results = tool_results(&agent.messages());
    assert_eq!(
        results[0].1,
        "Error: invalid arguments for final_result: at /value: expected one of \"happy\", \
         \"sad\", got \"angry\"; call final_result again with a corrected value"
    );
}

#[tokio::test]
async fn a_type_error_the_schema_misses_is_described_by_serde() {
    let dir = tempfile::tempdir().unwrap();
    // JSON Schema counts 3.0 as an integer; serde does not.
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            output_call("c1", r#"{"value": 3.0}"#),
            output_call("c2", r#"{"value": 3}"#),
        ],
    );

    let result = agent.chat_output::<u32>("count").await.unwrap();

    assert_eq!(result.output, 3);
    assert_eq!(
        tool_results(&agent.messages())[0].1,
        "Error: invalid arguments for final_result: at /value: expected an integer from 0 to \
         4294967295, got 3.0; call final_result again with a corrected value"
    );
}

#[tokio::test]
async fn an_exhausted_budget_fails_with_the_raw_output() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            output_call("c1", r#"{"total": 1}"#),
            output_call("c2", r#"{"total": "lots"}"#),
            output_call(
                "c3",
                r#"{"number": "never asked", "total": 1, "lines": []}"#,
            ),
        ],
    );

    let error = agent.chat_output::<Invoice>("bill me").await.unwrap_err();

    let AgentError::OutputRetriesExhausted {
        failures,
        last_output,
        last_error,
    } = error
    else {
        panic!("expected OutputRetriesExhausted, got {error:?}");
    };
    assert_eq!(failures, 2);
    assert_eq!(last_output, r#"{"total": "lots"}"#);
    assert!(
        last_error.starts_with("Error: invalid arguments for final_result: "),
        "{last_error}"
    );
    assert!(
        last_error.contains("at /total: expected a number"),
        "{last_error}"
    );
    assert_eq!(model.remaining(), 1);
    assert_every_call_answered(&agent.messages());
}

#[tokio::test]
async fn the_budget_is_set_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            output_call("c1", r#"{"value": -1}"#),
            output_call("c2", r#"{"value": 3}"#),
        ],
    );

    let error = agent
        .chat_output_with::<u32>("count", OutputOptions::new().max_retries(0))
        .await
        .unwrap_err();

    assert!(
        matches!(
            &error,
            AgentError::OutputRetriesExhausted { failures: 1, last_output, .. }
                if last_output == r#"{"value": -1}"#
        ),
        "{error:?}"
    );
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn a_validator_rejects_a_value_with_a_message_for_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            output_call("c1", r#"{"number": "A-1", "total": -3, "lines": []}"#),
            output_call("c2", r#"{"number": "A-1", "total": 3, "lines": []}"#),
        ],
    );
    let options = OutputOptions::new().validator(|invoice: &Invoice| {
        if invoice.total < 0.0 {
            Err(format!("the total {} is negative", invoice.total))
        } else {
            Ok(())
        }
    });

    let result = agent
        .chat_output_with::<Invoice>("bill me", options)
        .await
        .unwrap();

    assert_eq!(result.output.total, 3.0);
    assert_eq!(result.output_retries, 1);
    assert_eq!(
        tool_results(&agent.messages())[0].1,
        "Error: final_result asks you to try again: the total -3 is negative; call \
         final_result again with a corrected value"
    );
}

#[tokio::test]
async fn a_validator_rejection_uses_the_same_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            output_call("c1", r#"{"value": 0}"#),
            output_call("c2", r#"{"value": 0}"#),
        ],
    );
    let options = OutputOptions::new().validator(|n: &u32| {
        if *n == 0 {
            Err("zero is not a count".to_owned())
        } else {
            Ok(())
        }
    });

    let error = agent
        .chat_output_with::<u32>("count", options)
        .await
        .unwrap_err();

    assert!(
        matches!(
            &error,
            AgentError::OutputRetriesExhausted { failures: 2, last_error, .. }
                if last_error.contains("zero is not a count")
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_text_answer_counts_as_an_invalid_output() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::text("It is 7."),
            output_call("c1", r#"{"value": 7}"#),
        ],
    );

    let result = agent.chat_output::<u32>("count").await.unwrap();

    assert_eq!(result.output, 7);
    assert_eq!(result.output_retries, 1);
    let second = &model.requests()[1];
    assert_eq!(
        second.messages.last(),
        Some(&Message::user(
            "Error: a plain text answer is not accepted here; give the result by calling \
             final_result"
        ))
    );
}

#[tokio::test]
async fn text_answers_exhaust_the_budget_with_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::text("It is 7."),
            ScriptedResponse::text("Seven."),
        ],
    );

    let error = agent.chat_output::<u32>("count").await.unwrap_err();

    assert!(
        matches!(
            &error,
            AgentError::OutputRetriesExhausted { failures: 2, last_output, .. }
                if last_output == "Seven."
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_output_comes_after_tool_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call("e1", "echo", r#"{"text": "hi"}"#),
            output_call("c1", r#"{"value": 2}"#),
        ],
    );
    agent.add_tool(Echo).unwrap();

    let result = agent.chat_output::<u32>("count").await.unwrap();

    assert_eq!(result.output, 2);
    assert_eq!(result.response.steps, 2);
    assert_eq!(result.response.tool_calls, 1);
    let names = offered(&model.requests()[0]);
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some(OUTPUT_TOOL));
    assert_eq!(
        tool_results(&agent.messages()),
        vec![
            ("e1".to_owned(), "hi".to_owned()),
            ("c1".to_owned(), "Final result accepted.".to_owned()),
        ]
    );
}

#[tokio::test]
async fn other_calls_of_the_output_step_run_first() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new(),
        dir.path(),
        [ScriptedResponse::tool_calls([
            tool_core::ToolCall::new("e1", "echo", r#"{"text": "ran"}"#),
            tool_core::ToolCall::new("c1", OUTPUT_TOOL, r#"{"value": 5}"#),
        ])],
    );
    agent.add_tool(Echo).unwrap();

    let result = agent.chat_output::<u32>("count").await.unwrap();

    assert_eq!(result.output, 5);
    assert_eq!(result.response.steps, 1);
    assert_eq!(result.response.tool_calls, 1);
    assert_eq!(model.requests().len(), 1);
    let messages = agent.messages();
    assert_every_call_answered(&messages);
    assert_eq!(
        tool_results(&messages),
        vec![
            ("e1".to_owned(), "ran".to_owned()),
            ("c1".to_owned(), "Final result accepted.".to_owned()),
        ]
    );
}

#[tokio::test]
async fn the_test_model_calls_tools_and_gives_the_output_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let agent = test_agent(
        dir.path(),
        TestModel::new().call_tools(["echo", OUTPUT_TOOL]),
    );
    agent.add_tool(Echo).unwrap();

    let result = agent.chat_output::<Mood>("how are you").await.unwrap();

    assert!(matches!(result.output, Mood::Happy | Mood::Sad));
    assert_eq!(result.response.tool_calls, 1);
    assert_every_call_answered(&agent.messages());
}

#[tokio::test]
async fn an_invalid_output_at_the_last_step_ends_at_the_step_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().max_steps(1),
        dir.path(),
        [output_call("c1", r#"{"value": "many"}"#)],
    );

    let error = agent.chat_output::<u32>("count").await.unwrap_err();

    assert!(
        matches!(error, AgentError::MaxSteps { steps: 1 }),
        "{error:?}"
    );
    let messages = agent.messages();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_every_call_answered(&messages);
}

/// `{"city": …}`: the arguments of the OpenAI and Anthropic recordings' call.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct City {
    city: String,
}

/// `{"x": …, "y": …}`: the arguments of the Gemini recording's first call.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Sum {
    x: i64,
    y: i64,
}

/// `{"format": …, "location": …}`: the arguments of the Ollama recording's call.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Forecast {
    format: String,
    location: String,
}

/// The names of the tools a request body offers, in the provider's form.
fn offered_in(body: &serde_json::Value) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let declarations = tools
        .iter()
        .flat_map(|tool| {
            tool.get("functionDeclarations")
                .and_then(serde_json::Value::as_array)
                .cloned()
                .unwrap_or_else(|| vec![tool.clone()])
        })
        .collect::<Vec<_>>();
    declarations
        .iter()
        .filter_map(|tool| {
            tool.pointer("/function/name")
                .or_else(|| tool.get("name"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// Runs a typed turn against `wire`'s whole-answer recording with its first call renamed to
/// the output tool; a validator rejects the first output, so the recording is served twice and
/// the rejection goes back in the wire's tool-result form.
async fn typed_run_over<T>(wire: crate::provider_wires::Wire, expected: T)
where
    T: JsonSchema + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Send + 'static,
{
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::loopback::{Reply, Server, fast_retries};

    let case = &wire.whole[0];
    let name = case.calls[0].name;
    let recording = String::from_utf8(case.recording.to_vec())
        .unwrap()
        .replacen(&format!("\"{name}\""), &format!("\"{OUTPUT_TOOL}\""), 1);
    let server = Server::start(vec![
        Reply::json_owned(recording.clone()),
        Reply::json_owned(recording),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(
        wire.client(&server, fast_retries()),
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(dir.path().join("session.json")),
    );
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let options = OutputOptions::new().validator(move |_: &T| {
        if counter.fetch_add(1, Ordering::Relaxed) == 0 {
            Err("check it once more".to_owned())
        } else {
            Ok(())
        }
    });

    let result = agent
        .chat_output_with::<T>("What is the weather in Paris?", options)
        .await
        .unwrap();

    assert_eq!(result.output, expected, "{}", wire.provider);
    assert_eq!(result.output_retries, 1, "{}", wire.provider);
    assert_eq!(seen.load(Ordering::Relaxed), 2, "{}", wire.provider);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", wire.provider);
    let offered = offered_in(&requests[0].json());
    assert_eq!(
        offered.last().map(String::as_str),
        Some(OUTPUT_TOOL),
        "{}: {offered:?}",
        wire.provider
    );
    let second = requests[1].json().to_string();
    assert!(
        second.contains("Error: final_result asks you to try again: check it once more"),
        "{}: {second}",
        wire.provider
    );
    assert_every_call_answered(&agent.messages());
}

#[tokio::test]
async fn typed_output_over_openai() {
    let expected = City {
        city: "Lyon".to_owned(),
    };
    typed_run_over(crate::provider_wires::openai(), expected).await;
}

#[tokio::test]
async fn typed_output_over_anthropic() {
    let expected = City {
        city: "Lyon".to_owned(),
    };
    typed_run_over(crate::provider_wires::anthropic(), expected).await;
}

#[tokio::test]
async fn typed_output_over_gemini_after_the_other_call() {
    // The recording's second call (`current_time`) names no tool here: it is answered first.
    typed_run_over(crate::provider_wires::gemini(), Sum { x: 1, y: 2 }).await;
}

#[tokio::test]
async fn typed_output_over_ollama() {
    let expected = Forecast {
        format: "celsius".to_owned(),
        location: "Paris, FR".to_owned(),
    };
    typed_run_over(crate::provider_wires::ollama(), expected).await;
}

#[tokio::test]
async fn an_output_beside_a_call_waiting_for_approval_is_not_judged() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent_with(
        AgentOptions::new()
            .approval(tool_core::agent::ApprovalPolicy::new().when(|call, _| call.name == "echo")),
        dir.path(),
        [
            ScriptedResponse::tool_calls([
                tool_core::ToolCall::new("e1", "echo", r#"{"text": "hi"}"#),
                tool_core::ToolCall::new("c1", OUTPUT_TOOL, r#"{"value": 5}"#),
            ]),
            ScriptedResponse::text("done"),
        ],
    );
    agent.add_tool(Echo).unwrap();

    let error = agent.chat_output::<u32>("count").await.unwrap_err();

    assert!(
        matches!(&error, AgentError::AwaitingApproval { requests } if requests.len() == 1 && requests[0].call.id == "e1"),
        "{error:?}"
    );
    let reply = agent
        .continue_with([("e1", tool_core::agent::ApprovalDecision::deny())])
        .await
        .unwrap();
    assert_eq!(reply.text, "done");
    let messages = agent.messages();
    assert_every_call_answered(&messages);
    assert_eq!(
        tool_results(&messages)[1],
        (
            "c1".to_owned(),
            "Error: not accepted yet; other calls of this step wait for approval. Give the \
             result again once they are answered"
                .to_owned()
        )
    );
    assert_eq!(model.remaining(), 0);
}

/// A registry tool that happens to be named like the output tool.
struct Impostor;

#[tool_core::async_trait]
impl tool_core::ExecutableTool for Impostor {
    fn name(&self) -> &str {
        OUTPUT_TOOL
    }

    fn get_schema(&self) -> tool_core::ChatTool {
        tool_core::ChatTool::new(
            OUTPUT_TOOL,
            "Not the output.",
            serde_json::json!({ "type": "object" }),
        )
    }

    async fn execute(&self, _args: tool_core::JsonObject) -> Result<String, tool_core::ToolError> {
        panic!("the output tool shadows this one")
    }
}

#[tokio::test]
async fn a_registry_tool_named_final_result_is_shadowed() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(dir.path(), [output_call("c1", r#"{"value": 4}"#)]);
    agent.add_tool(Impostor).unwrap();

    let result = agent.chat_output::<u32>("count").await.unwrap();

    assert_eq!(result.output, 4);
    let names = offered(&model.requests()[0]);
    assert_eq!(
        names.iter().filter(|name| *name == OUTPUT_TOOL).count(),
        1,
        "{names:?}"
    );
}

#[tokio::test]
async fn a_typed_turn_waiting_for_approval_resumes_into_its_output() {
    use tool_core::agent::{ApprovalDecision, ApprovalPolicy};

    let dir = tempfile::tempdir().unwrap();
    let script = || {
        [
            ScriptedResponse::tool_call("e1", "echo", r#"{"text": "hi"}"#),
            output_call("c1", r#"{"value": 5}"#),
        ]
    };
    let approval = || ApprovalPolicy::new().when(|call, _| call.name == "echo");
    let (agent, _) = scripted_agent_with(
        AgentOptions::new().approval(approval()),
        dir.path(),
        script(),
    );
    agent.add_tool(Echo).unwrap();

    let error = agent.chat_output::<u32>("count").await.unwrap_err();
    assert!(
        matches!(&error, AgentError::AwaitingApproval { requests } if requests[0].call.id == "e1"),
        "{error:?}"
    );
    assert!(agent.save_context("waiting").await.starts_with("Session"));

    // A new agent over the saved conversation (a new process) resumes the same typed turn.
    let (resumed, model) = scripted_agent_with(
        AgentOptions::new().approval(approval()),
        dir.path(),
        script().into_iter().skip(1),
    );
    resumed.add_tool(Echo).unwrap();
    resumed
        .load_context(dir.path().join("session.json"))
        .unwrap();
    let result = resumed
        .continue_output::<u32, _, _>([("e1", ApprovalDecision::approve())], OutputOptions::new())
        .await
        .unwrap();

    assert_eq!(result.output, 5);
    assert_eq!(result.response.tool_calls, 1);
    assert_eq!(model.remaining(), 0);
    let messages = resumed.messages();
    assert_every_call_answered(&messages);
    assert_eq!(
        tool_results(&messages),
        vec![
            ("e1".to_owned(), "hi".to_owned()),
            ("c1".to_owned(), "Final result accepted.".to_owned())
        ]
    );
}

/// A reply that is one of two types: `Out = Booking | Refusal`.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
enum Reply {
    /// A booking was made.
    Booked(Booking),
    /// Nothing can be booked.
    Refused { reason: String },
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Booking {
    hotel: String,
    nights: u32,
    guest: Guest,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Guest {
    name: String,
}

#[tokio::test]
async fn an_enum_output_is_one_output_tool_per_variant() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::tool_call(
                "c1",
                "final_result_Booked",
                r#"{"hotel": "Ritz", "nights": "two", "guest": {"name": "Ann"}}"#,
            ),
            ScriptedResponse::tool_call(
                "c2",
                "final_result_Booked",
                r#"{"hotel": "Ritz", "nights": 2, "guest": {"name": "Ann"}}"#,
            ),
        ],
    );

    let result = agent.chat_output::<Reply>("book").await.unwrap();

    assert_eq!(
        result.output,
        Reply::Booked(Booking {
            hotel: "Ritz".to_owned(),
            nights: 2,
            guest: Guest {
                name: "Ann".to_owned()
            }
        })
    );
    assert_eq!(result.output_retries, 1);
    let request = model.requests()[0].clone();
    let tools: Vec<(String, String, serde_json::Value)> = request
        .tools
        .definitions()
        .iter()
        .filter(|tool| tool.name().starts_with(OUTPUT_TOOL))
        .map(|tool| {
            (
                tool.name().to_owned(),
                tool.description().to_owned(),
                tool.parameters().clone(),
            )
        })
        .collect();
    let defs = serde_json::json!({
        "Booking": {
            "type": "object",
            "properties": {
                "hotel": { "type": "string" },
                "nights": { "type": "integer", "format": "uint32", "minimum": 0 },
                "guest": { "$ref": "#/$defs/Guest" }
            },
            "required": ["hotel", "nights", "guest"]
        },
        "Guest": {
            "type": "object",
            "properties": { "name": { "type": "string" } },
            "required": ["name"]
        }
    });
    assert_eq!(
        tools,
        vec![
            (
                "final_result_Booked".to_owned(),
                "A booking was made.\n\nGive the final result of the task as a Booked. Call one \
                 final_result tool once, when you have the answer; its arguments are the result."
                    .to_owned(),
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "hotel": { "type": "string" },
                        "nights": { "type": "integer", "format": "uint32", "minimum": 0 },
                        "guest": { "$ref": "#/$defs/Guest" }
                    },
                    "required": ["hotel", "nights", "guest"],
                    "$defs": defs
                })
            ),
            (
                "final_result_Refused".to_owned(),
                "Nothing can be booked.\n\nGive the final result of the task as a Refused. Call \
                 one final_result tool once, when you have the answer; its arguments are the \
                 result."
                    .to_owned(),
                serde_json::json!({
                    "type": "object",
                    "properties": { "reason": { "type": "string" } },
                    "required": ["reason"],
                    "$defs": defs
                })
            ),
        ]
    );
    assert_eq!(
        tool_results(&agent.messages()),
        vec![
            (
                "c1".to_owned(),
                "Error: invalid arguments for final_result_Booked: at /nights: expected an \
                 integer, got \"two\"; call final_result_Booked again with a corrected value, \
                 or another of final_result_Refused"
                    .to_owned()
            ),
            ("c2".to_owned(), "Final result accepted.".to_owned()),
        ]
    );
}

#[tokio::test]
async fn the_other_variant_of_an_enum_output_and_a_text_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [
            ScriptedResponse::text("Sorry, no rooms."),
            ScriptedResponse::tool_call("c1", "final_result_Refused", r#"{"reason": "no rooms"}"#),
        ],
    );

    let result = agent.chat_output::<Reply>("book").await.unwrap();

    assert_eq!(
        result.output,
        Reply::Refused {
            reason: "no rooms".to_owned()
        }
    );
    assert_eq!(
        model.requests()[1].messages.last(),
        Some(&Message::user(
            "Error: a plain text answer is not accepted here; give the result by calling \
             final_result_Booked or final_result_Refused"
        ))
    );
}

#[tokio::test]
async fn an_enum_output_in_native_mode_is_one_schema() {
    use tool_core::agent::OutputMode;

    let dir = tempfile::tempdir().unwrap();
    let (agent, model) = scripted_agent(
        dir.path(),
        [ScriptedResponse::text(
            r#"{"value": {"Refused": {"reason": "full"}}}"#,
        )],
    );

    let result = agent
        .chat_output_with::<Reply>("book", OutputOptions::new().mode(OutputMode::Native))
        .await
        .unwrap();

    assert_eq!(
        result.output,
        Reply::Refused {
            reason: "full".to_owned()
        }
    );
    let request = model.requests()[0].clone();
    assert!(
        request
            .tools
            .definitions()
            .iter()
            .all(|tool| !tool.name().starts_with(OUTPUT_TOOL))
    );
    let Some(tool_core::model::ResponseFormat::JsonSchema { schema, .. }) =
        &request.response_format
    else {
        panic!("{:?}", request.response_format);
    };
    assert_eq!(schema["required"], serde_json::json!(["value"]));
    assert_eq!(
        schema["properties"]["value"]["oneOf"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

/// The most a count may be, given to the validator as the application's dependency.
struct Limit(u32);

#[tokio::test]
async fn a_validator_reads_the_deps_and_the_call() {
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let (agent, _model) = scripted_agent_with(
        AgentOptions::new().deps(tool_core::Deps::new().with(Limit(3))),
        dir.path(),
        [
            output_call("c1", r#"{"value": 5}"#),
            output_call("c2", r#"{"value": 2}"#),
        ],
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options =
        OutputOptions::new().validator_with(move |n: &u32, call: &tool_core::CallContext| {
            log.lock().unwrap().push((
                call.call_id().to_owned(),
                call.tool_name().to_owned(),
                call.step(),
                call.turn(),
            ));
            let Limit(limit) = call.dep::<Limit>().map_err(|missing| missing.to_string())?;
            if n > limit {
                Err(format!("at most {limit}"))
            } else {
                Ok(())
            }
        });

    let result = agent
        .chat_output_with::<u32>("count", options)
        .await
        .unwrap();

    assert_eq!(result.output, 2);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("c1".to_owned(), OUTPUT_TOOL.to_owned(), 1, 1),
            ("c2".to_owned(), OUTPUT_TOOL.to_owned(), 2, 1)
        ]
    );
    assert_eq!(
        tool_results(&agent.messages())[0].1,
        "Error: final_result asks you to try again: at most 3; call final_result again with a \
         corrected value"
    );
}
