//! Typed output on each of the five wires (OpenAI Chat Completions, OpenAI Responses, Anthropic,
//! Gemini, Ollama), over real HTTP on the loopback server: the output tool in each provider's
//! form, a valid output, an invalid one retried, a budget used up, a validator's rejection, the
//! output after another tool's call, a turn waiting for approval resumed by a new agent, and
//! the output streamed as it arrives.
//!
//! The whole answers are the recordings of `tests/transcripts/` (see its README for their
//! sources: `openai/completion_tool_call.json`, `responses/response_tool_call.json`,
//! `anthropic/message_tool_use.json`, `gemini/unary_function_calls.json`,
//! `ollama/chat_tool_call.json`) with their calls set to the ones a case needs; the streamed
//! ones are each wire's tool-call and text recordings with the call renamed or the text
//! replaced.

use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentError, AgentOptions,
    agent::{
        ApprovalDecision, ApprovalPolicy, OUTPUT_TOOL, OutputEvent, OutputMode, OutputOptions,
    },
    schemars::JsonSchema,
};

use crate::{
    agent_support::{Echo, assert_every_call_answered, tool_results},
    loopback::{Reply, Server, fast_retries},
    provider_wires::{self, Wire},
};

/// The five wires, by the names the helpers below take.
const WIRES: [&str; 5] = ["openai", "responses", "anthropic", "gemini", "ollama"];

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Stay {
    city: String,
    nights: u32,
}

/// An output the schema refuses: `nights` is missing.
const INVALID: &str = r#"{"city":"Lyon"}"#;
/// What the model reads after [`INVALID`] in tool mode.
const INVALID_RESULT: &str = "Error: invalid arguments for final_result: missing required \
                              argument 'nights'; call final_result again with a corrected value";
/// An output the type accepts.
const VALID: &str = r#"{"city":"Lyon","nights":2}"#;

fn lyon() -> Stay {
    Stay {
        city: "Lyon".to_owned(),
        nights: 2,
    }
}

fn wire_of(kind: &str) -> Wire {
    match kind {
        "openai" => provider_wires::openai(),
        "responses" => provider_wires::responses(),
        "anthropic" => provider_wires::anthropic(),
        "gemini" => provider_wires::gemini(),
        "ollama" => provider_wires::ollama(),
        other => panic!("no wire {other}"),
    }
}

/// A recording of `tests/transcripts/` as JSON.
fn recorded(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

/// The whole answer of the wire of `kind` that makes `calls` (name, JSON arguments), in order:
/// the wire's tool-call recording with its calls replaced.
pub(crate) fn calls_answer(kind: &str, calls: &[(&str, &str)]) -> String {
    let arguments = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
    let body = match kind {
        "openai" => {
            let mut body = recorded(include_bytes!(
                "../transcripts/openai/completion_tool_call.json"
            ));
            body["choices"][0]["message"]["tool_calls"] = calls
                .iter()
                .enumerate()
                .map(|(at, (name, args))| {
                    json!({ "id": format!("call_{at}"), "type": "function",
                            "function": { "name": name, "arguments": args } })
                })
                .collect();
            body
        }
        "responses" => {
            let mut body = recorded(include_bytes!(
                "../transcripts/responses/response_tool_call.json"
            ));
            body["output"] = calls
                .iter()
                .enumerate()
                .map(|(at, (name, args))| {
                    json!({ "id": format!("fc_{at}"), "type": "function_call",
                            "status": "completed", "arguments": args,
                            "call_id": format!("call_{at}"), "name": name })
                })
                .collect();
            body
        }
        "anthropic" => {
            let mut body = recorded(include_bytes!(
                "../transcripts/anthropic/message_tool_use.json"
            ));
            let blocks = body["content"].as_array_mut().unwrap();
            blocks.truncate(1);
            blocks.extend(calls.iter().enumerate().map(|(at, (name, args))| {
                json!({ "type": "tool_use", "id": format!("toolu_{at}"), "name": name,
                        "input": arguments(args) })
            }));
            body
        }
        "gemini" => {
            let mut body = recorded(include_bytes!(
                "../transcripts/gemini/unary_function_calls.json"
            ));
            let parts = body["candidates"][0]["content"]["parts"]
                .as_array_mut()
                .unwrap();
            parts.truncate(1);
            parts.extend(calls.iter().map(
                |(name, args)| json!({ "functionCall": { "name": name, "args": arguments(args) } }),
            ));
            body
        }
        "ollama" => {
            let mut body = recorded(include_bytes!("../transcripts/ollama/chat_tool_call.json"));
            body["message"]["tool_calls"] = calls
                .iter()
                .map(|(name, args)| {
                    json!({ "function": { "name": name, "arguments": arguments(args) } })
                })
                .collect();
            body
        }
        other => panic!("no wire {other}"),
    };
    body.to_string()
}

/// The whole text answer `text` of the wire of `kind`: its text recording (for Anthropic, its
/// tool-use message with the text block alone, ending the turn) with the text replaced.
pub(crate) fn text_answer(kind: &str, text: &str) -> String {
    if kind == "anthropic" {
        let mut body = recorded(include_bytes!(
            "../transcripts/anthropic/message_tool_use.json"
        ));
        body["content"] = json!([{ "type": "text", "text": text }]);
        body["stop_reason"] = json!("end_turn");
        return body.to_string();
    }
    crate::typed_output_modes::text_answer(kind, text)
}

fn agent_over(kind: &str, server: &Server, dir: &std::path::Path) -> Agent {
    agent_with(kind, server, dir, AgentOptions::new())
}

fn agent_with(kind: &str, server: &Server, dir: &std::path::Path, options: AgentOptions) -> Agent {
    Agent::new(
        wire_of(kind).client(server, fast_retries()),
        options
            .root_dir(dir)
            .session_context_file_path(dir.join("session.json")),
    )
}

/// The output tool as the request body of the wire of `kind` offers it.
fn output_tool_in(kind: &str, body: &Value) -> Value {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let declarations: Vec<Value> = tools
        .iter()
        .flat_map(|tool| {
            tool.get("functionDeclarations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_else(|| vec![tool.clone()])
        })
        .collect();
    let named = |tool: &&Value| {
        tool.pointer("/function/name")
            .or_else(|| tool.get("name"))
            .and_then(Value::as_str)
            == Some(OUTPUT_TOOL)
    };
    let found: Vec<&Value> = declarations.iter().filter(named).collect();
    if std::env::var_os("SHOW_TOOLS").is_some() {
        eprintln!("TOOL {kind}: {}", found[0]);
    }
    assert_eq!(found.len(), 1, "{kind}: {body}");
    assert!(
        declarations.last().is_some_and(|last| named(&last)),
        "{kind}: the output tool is offered last: {body}"
    );
    found[0].clone()
}

/// `Stay`'s schema as the output tool's parameters.
fn stay_schema() -> Value {
    json!({
        "title": "Stay",
        "type": "object",
        "properties": {
            "city": { "type": "string" },
            "nights": { "type": "integer", "format": "uint32", "minimum": 0 }
        },
        "required": ["city", "nights"]
    })
}

const DESCRIPTION: &str = "Give the final result of the task. Call this once, when you have the \
                           answer; its arguments are the result.";

/// `Stay`'s schema as every wire's tool list carries it: no title, and the `uint32` format
/// written as its bounds.
fn stay_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": { "type": "string" },
            "nights": { "type": "integer", "minimum": 0, "maximum": 4_294_967_295_u32 }
        },
        "required": ["city", "nights"]
    })
}

/// The output tool in the exact form of each wire's tool list.
fn expected_output_tool(kind: &str) -> Value {
    match kind {
        "openai" | "ollama" => json!({
            "type": "function",
            "function": {
                "name": OUTPUT_TOOL, "description": DESCRIPTION, "parameters": stay_parameters()
            }
        }),
        "responses" => json!({
            "type": "function", "name": OUTPUT_TOOL, "description": DESCRIPTION,
            "parameters": stay_parameters(), "strict": false
        }),
        "anthropic" => json!({
            "name": OUTPUT_TOOL, "description": DESCRIPTION, "input_schema": stay_parameters()
        }),
        "gemini" => json!({
            "name": OUTPUT_TOOL, "description": DESCRIPTION, "parameters": stay_parameters()
        }),
        other => panic!("no wire {other}"),
    }
}

#[tokio::test]
async fn a_valid_output_on_every_wire_with_the_output_tool_in_its_form() {
    for kind in WIRES {
        let server = Server::start(vec![Reply::json_owned(calls_answer(
            kind,
            &[(OUTPUT_TOOL, VALID)],
        ))])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());

        let result = agent.chat_output::<Stay>("Where to?").await.unwrap();

        assert_eq!(result.output, lyon(), "{kind}");
        assert_eq!(result.output_retries, 0, "{kind}");
        assert_eq!(result.response.steps, 1, "{kind}");
        assert_eq!(result.response.tool_calls, 0, "{kind}");
        let body = server.requests()[0].json();
        assert_eq!(
            output_tool_in(kind, &body),
            expected_output_tool(kind),
            "{kind}"
        );
        let messages = agent.messages();
        assert_every_call_answered(&messages);
        assert_eq!(
            tool_results(&messages)
                .last()
                .map(|(_, text)| text.as_str()),
            Some("Final result accepted."),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn an_invalid_output_is_retried_on_every_wire() {
    for kind in WIRES {
        let server = Server::start(vec![
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, INVALID)])),
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, VALID)])),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());

        let result = agent.chat_output::<Stay>("Where to?").await.unwrap();

        assert_eq!(result.output, lyon(), "{kind}");
        assert_eq!(result.output_retries, 1, "{kind}");
        assert_eq!(result.response.steps, 2, "{kind}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{kind}");
        // The correction goes back as the output call's result, in the wire's form.
        let second = requests[1].json().to_string();
        assert!(
            second.contains(&serde_json::to_string(INVALID_RESULT).unwrap()),
            "{kind}: {second}"
        );
        assert_every_call_answered(&agent.messages());
    }
}

#[tokio::test]
async fn an_output_budget_used_up_on_every_wire_carries_the_raw_output() {
    for kind in WIRES {
        let server = Server::start(vec![
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, INVALID)])),
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, r#"{"nights":2}"#)])),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());

        let error = agent.chat_output::<Stay>("Where to?").await.unwrap_err();

        let AgentError::OutputRetriesExhausted {
            failures,
            last_output,
            last_error,
        } = error
        else {
            panic!("{kind}: {error:?}");
        };
        assert_eq!(failures, 2, "{kind}");
        assert_eq!(last_output, r#"{"nights":2}"#, "{kind}");
        assert_eq!(
            last_error,
            "Error: invalid arguments for final_result: missing required argument 'city'; call \
             final_result again with a corrected value",
            "{kind}"
        );
        assert_eq!(server.requests().len(), 2, "{kind}");
        assert_every_call_answered(&agent.messages());
    }
}

#[tokio::test]
async fn a_validator_rejection_on_every_wire_goes_back_to_the_model() {
    const REJECTED: &str = "Error: final_result asks you to try again: not Paris again; call \
                            final_result again with a corrected value";
    for kind in WIRES {
        let server = Server::start(vec![
            Reply::json_owned(calls_answer(
                kind,
                &[(OUTPUT_TOOL, r#"{"city":"Paris","nights":1}"#)],
            )),
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, VALID)])),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());
        let options = OutputOptions::new().validator(|stay: &Stay| {
            if stay.city == "Paris" {
                Err("not Paris again".to_owned())
            } else {
                Ok(())
            }
        });

        let result = agent
            .chat_output_with::<Stay>("Where to?", options)
            .await
            .unwrap();

        assert_eq!(result.output, lyon(), "{kind}");
        assert_eq!(result.output_retries, 1, "{kind}");
        let second = server.requests()[1].json().to_string();
        assert!(
            second.contains(&serde_json::to_string(REJECTED).unwrap()),
            "{kind}: {second}"
        );
        assert_eq!(tool_results(&agent.messages())[0].1, REJECTED, "{kind}");
    }
}

#[tokio::test]
async fn the_output_comes_after_another_call_on_every_wire() {
    for kind in WIRES {
        let server = Server::start(vec![
            Reply::json_owned(calls_answer(
                kind,
                &[("echo", r#"{"text":"Lyon is nice"}"#)],
            )),
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, VALID)])),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());
        agent.add_tool(Echo).unwrap();

        let result = agent.chat_output::<Stay>("Where to?").await.unwrap();

        assert_eq!(result.output, lyon(), "{kind}");
        assert_eq!(result.response.steps, 2, "{kind}");
        assert_eq!(result.response.tool_calls, 1, "{kind}");
        let requests = server.requests();
        // Both requests offer both tools; the second carries the echo's result.
        for body in requests.iter().map(|request| request.json()) {
            assert_eq!(
                output_tool_in(kind, &body),
                expected_output_tool(kind),
                "{kind}"
            );
        }
        let second = requests[1].json().to_string();
        assert!(second.contains("\"Lyon is nice\""), "{kind}: {second}");
        let results = tool_results(&agent.messages());
        assert_eq!(results.len(), 2, "{kind}");
        assert_eq!(results[0].1, "Lyon is nice", "{kind}");
        assert_eq!(results[1].1, "Final result accepted.", "{kind}");
    }
}

#[tokio::test]
async fn a_typed_turn_waiting_for_approval_is_resumed_by_a_new_agent_on_every_wire() {
    for kind in WIRES {
        let server = Server::start(vec![
            Reply::json_owned(calls_answer(kind, &[("echo", r#"{"text":"booked"}"#)])),
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, VALID)])),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let approval = || {
            AgentOptions::new().approval(ApprovalPolicy::new().when(|call, _| call.name == "echo"))
        };
        let first = agent_with(kind, &server, dir.path(), approval());
        first.add_tool(Echo).unwrap();

        let error = first.chat_output::<Stay>("Book Lyon").await.unwrap_err();

        let AgentError::AwaitingApproval { requests } = error else {
            panic!("{kind}: {error:?}");
        };
        assert_eq!(requests.len(), 1, "{kind}");
        assert_eq!(requests[0].call.name, "echo", "{kind}");
        let id = requests[0].call.id.clone();
        assert!(
            first.save_context("waiting").await.starts_with("Session"),
            "{kind}"
        );
        drop(first);

        // A new agent (as in a new process) loads the conversation and resumes the turn.
        let resumed = agent_with(kind, &server, dir.path(), approval());
        resumed.add_tool(Echo).unwrap();
        resumed
            .load_context(dir.path().join("session.json"))
            .unwrap();
        let result = resumed
            .continue_output::<Stay, _, _>(
                [(id, ApprovalDecision::approve())],
                OutputOptions::new(),
            )
            .await
            .unwrap();

        assert_eq!(result.output, lyon(), "{kind}");
        assert_eq!(result.response.tool_calls, 1, "{kind}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{kind}");
        let second = requests[1].json();
        assert_eq!(
            output_tool_in(kind, &second),
            expected_output_tool(kind),
            "{kind}"
        );
        assert!(
            second.to_string().contains("\"booked\""),
            "{kind}: {second}"
        );
        let messages = resumed.messages();
        assert_every_call_answered(&messages);
        let results = tool_results(&messages);
        assert_eq!(results.len(), 2, "{kind}");
        assert_eq!(results[0].1, "booked", "{kind}");
        assert_eq!(results[1].1, "Final result accepted.", "{kind}");
    }
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Place {
    city: String,
    unit: Option<String>,
}

/// The partial views and the last item of a typed stream.
async fn partials_and_done<T: std::fmt::Debug>(
    mut events: futures::stream::BoxStream<'static, Result<OutputEvent<T>, AgentError>>,
) -> (Vec<Value>, T) {
    use futures::StreamExt as _;

    let mut partials = Vec::new();
    // Bounded: the replies are finite, so the stream ends.
    for _ in 0..1000 {
        match events.next().await {
            Some(Ok(OutputEvent::Partial(value))) => partials.push(value),
            Some(Ok(OutputEvent::Done(done))) => {
                assert!(events.next().await.is_none(), "Done is the last item");
                return (partials, done.output);
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => panic!("{error}"),
            None => panic!("the stream ended without its output"),
        }
    }
    panic!("the stream did not end");
}

#[tokio::test]
async fn a_streamed_output_call_is_seen_as_it_arrives_on_every_wire() {
    // Each wire's streamed tool-call recording, its call renamed to the output tool, and the
    // views its argument deltas give: Gemini and Ollama send the arguments whole.
    let cases = [
        (
            "openai",
            vec![
                json!({}),
                json!({ "city": "" }),
                json!({ "city": "Paris" }),
                json!({ "city": "Paris", "unit": "cel" }),
                json!({ "city": "Paris", "unit": "celsius" }),
            ],
            Some("celsius"),
        ),
        (
            "responses",
            vec![
                json!({}),
                json!({ "city": "" }),
                json!({ "city": "Paris" }),
                json!({ "city": "Paris", "unit": "" }),
                json!({ "city": "Paris", "unit": "celsius" }),
            ],
            Some("celsius"),
        ),
        (
            "anthropic",
            vec![
                json!({}),
                json!({ "city": "Par" }),
                json!({ "city": "Paris" }),
            ],
            None,
        ),
        ("gemini", vec![json!({ "city": "Paris" })], None),
        ("ollama", vec![json!({ "city": "Tokyo" })], None),
    ];
    for (kind, expected, unit) in cases {
        let wire = wire_of(kind);
        let name = wire.tool_call.calls[0].name;
        let recording = String::from_utf8(wire.tool_call.recording.to_vec())
            .unwrap()
            .replace(&format!("\"{name}\""), &format!("\"{OUTPUT_TOOL}\""));
        let server = Server::start(vec![(wire.streamed)(b"").body(recording)]).await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());

        let (partials, output) = partials_and_done(agent.stream_output::<Place>("Weather?")).await;

        assert_eq!(partials, expected, "{kind}");
        let city = expected.last().unwrap()["city"].as_str().unwrap();
        assert_eq!(
            output,
            Place {
                city: city.to_owned(),
                unit: unit.map(str::to_owned)
            },
            "{kind}"
        );
        assert_eq!(server.requests().len(), 1, "{kind}");
    }
}

/// `recording` with each `(old, new)` text replaced in order, the texts as JSON strings.
fn with_texts(recording: &[u8], replacements: &[(&str, &str)]) -> String {
    let mut text = String::from_utf8(recording.to_vec()).unwrap();
    for (old, new) in replacements {
        let old = serde_json::to_string(old).unwrap();
        assert!(text.contains(&old), "{old} is not in the recording");
        text = text.replacen(&old, &serde_json::to_string(new).unwrap(), 1);
    }
    text
}

/// A wire, the mode of its run, the (recorded, output) text pieces, and the views they give.
type TextCase = (
    &'static str,
    OutputMode,
    Vec<(&'static str, &'static str)>,
    Vec<Value>,
);

#[tokio::test]
async fn a_streamed_text_output_is_seen_as_it_arrives_on_every_wire() {
    const WHOLE: &str = r#"{"city": "Lyon", "nights": 2}"#;
    let three = |a: &'static str, b: &'static str, c: &'static str| {
        vec![
            (a, r#"{"city": "Ly"#),
            (b, r#"on", "nigh"#),
            (c, r#"ts": 2}"#),
        ]
    };
    let views_of_three = vec![
        json!({ "city": "Ly" }),
        json!({ "city": "Lyon" }),
        json!({ "city": "Lyon", "nights": 2 }),
    ];
    // Each wire's streamed text recording, its text deltas replaced by pieces of the output
    // (Responses repeats the whole text in its `done` events). Anthropic's native mode needs
    // structured outputs turned on in its client (see `typed_output_modes`), so its run here
    // is in prompted mode.
    let mut responses = vec![("The capital of France is Paris.", WHOLE); 4];
    responses.extend([
        ("The", r#"{"ci"#),
        (" capital", r#"ty": ""#),
        (" of", "Ly"),
        (" France", r#"on""#),
        (" is", r#", "nights""#),
        (" Paris", ": 2"),
        (".", "}"),
    ]);
    let cases: Vec<TextCase> = vec![
        (
            "openai",
            OutputMode::Native,
            three("The capital", " of France", " is Paris."),
            views_of_three.clone(),
        ),
        (
            "responses",
            OutputMode::Native,
            responses,
            vec![
                json!({}),
                json!({ "city": "" }),
                json!({ "city": "Ly" }),
                json!({ "city": "Lyon" }),
                json!({ "city": "Lyon", "nights": 2 }),
            ],
        ),
        (
            "anthropic",
            OutputMode::Prompted,
            three("Hello", ", how can", " I help?"),
            views_of_three.clone(),
        ),
        (
            "gemini",
            OutputMode::Native,
            vec![
                ("The capital of France", r#"{"city": "Ly"#),
                (" is Paris.", r#"on", "nights": 2}"#),
            ],
            vec![
                json!({ "city": "Ly" }),
                json!({ "city": "Lyon", "nights": 2 }),
            ],
        ),
        (
            "ollama",
            OutputMode::Native,
            three("The capital", " of France", " is Paris."),
            views_of_three.clone(),
        ),
    ];
    for (kind, mode, replacements, expected) in cases {
        let wire = wire_of(kind);
        let recording = with_texts(wire.text.recording, &replacements);
        let server = Server::start(vec![(wire.streamed)(b"").body(recording)]).await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());

        let (partials, output) = partials_and_done(
            agent.stream_output_with::<Stay>("Where to?", OutputOptions::new().mode(mode)),
        )
        .await;

        assert_eq!(partials, expected, "{kind}");
        assert_eq!(output, lyon(), "{kind}");
        let body = server.requests()[0].json();
        assert!(
            !body["tools"].to_string().contains(OUTPUT_TOOL),
            "{kind}: {body}"
        );
    }
}

#[tokio::test]
async fn prompted_mode_over_anthropic_puts_the_schema_in_the_system_prompt() {
    let server = Server::start(vec![
        Reply::json_owned(text_answer("anthropic", "Lyon, surely.")),
        Reply::json_owned(text_answer(
            "anthropic",
            "```json\n{\"city\": \"Lyon\", \"nights\": 2}\n```",
        )),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_with(
        "anthropic",
        &server,
        dir.path(),
        AgentOptions::new().system_prompt("You plan trips."),
    );

    let result = agent
        .chat_output_with::<Stay>("Where to?", OutputOptions::new().mode(OutputMode::Prompted))
        .await
        .unwrap();

    assert_eq!(result.output, lyon());
    assert_eq!(result.output_retries, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for body in requests.iter().map(|request| request.json()) {
        let system = body["system"].as_str().unwrap();
        let schema = system
            .strip_prefix(
                "You plan trips.\n\nAlways respond with a JSON value that matches this JSON \
                 Schema, and nothing else (no prose, no code fence):\n",
            )
            .unwrap_or_else(|| panic!("{system}"));
        assert_eq!(
            serde_json::from_str::<Value>(schema).unwrap(),
            stay_schema()
        );
        // The Messages API has no JSON mode: nothing else asks for the form.
        assert!(!body["tools"].to_string().contains(OUTPUT_TOOL), "{body}");
        assert!(body.get("output_format").is_none(), "{body}");
        assert!(body.get("output_config").is_none(), "{body}");
        assert_eq!(body["messages"][0]["content"][0]["text"], "Where to?");
    }
    let second = requests[1].json().to_string();
    assert!(
        second.contains("Error: the answer is not JSON (expected value at line 1 column 1)"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_tool_runs_before_the_output_on_every_wire() {
    use std::sync::Arc;

    use tool_core::{ToolRegistry, mcp::McpClient};

    // The official MCP Python SDK's server (`tests/mcp_python/server.py`), its tools prefixed
    // `py`.
    let Some(python) = crate::mcp_python::python() else {
        return;
    };
    let client = McpClient::connect(crate::mcp_client::python_server(python, &[]))
        .await
        .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    for kind in WIRES {
        let server = Server::start(vec![
            Reply::json_owned(calls_answer(kind, &[("py_echo", r#"{"text":"from mcp"}"#)])),
            Reply::json_owned(calls_answer(kind, &[(OUTPUT_TOOL, VALID)])),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_with(
            kind,
            &server,
            dir.path(),
            AgentOptions::new().registry(registry.clone()),
        );

        let result = agent.chat_output::<Stay>("Where to?").await.unwrap();

        assert_eq!(result.output, lyon(), "{kind}");
        assert_eq!(result.response.tool_calls, 1, "{kind}");
        let requests = server.requests();
        let first = requests[0].json();
        assert_eq!(
            output_tool_in(kind, &first),
            expected_output_tool(kind),
            "{kind}"
        );
        assert!(
            first["tools"].to_string().contains("py_echo"),
            "{kind}: {first}"
        );
        let second = requests[1].json().to_string();
        assert!(second.contains("\"from mcp\""), "{kind}: {second}");
        let results = tool_results(&agent.messages());
        assert_eq!(results[0].1, "from mcp", "{kind}");
        assert_eq!(results[1].1, "Final result accepted.", "{kind}");
    }
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
enum Answer {
    Found(Place),
    Unknown { reason: String },
}

#[tokio::test]
async fn a_streamed_variant_output_is_seen_as_the_enum() {
    let wire = wire_of("openai");
    let recording = String::from_utf8(wire.tool_call.recording.to_vec())
        .unwrap()
        .replace("\"get_weather\"", "\"final_result_Found\"");
    let server = Server::start(vec![Reply::sse_owned(recording)]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_over("openai", &server, dir.path());

    let (partials, output) = partials_and_done(agent.stream_output::<Answer>("Weather?")).await;

    assert_eq!(
        partials,
        vec![
            json!({ "Found": {} }),
            json!({ "Found": { "city": "" } }),
            json!({ "Found": { "city": "Paris" } }),
            json!({ "Found": { "city": "Paris", "unit": "cel" } }),
            json!({ "Found": { "city": "Paris", "unit": "celsius" } }),
        ]
    );
    assert_eq!(
        output,
        Answer::Found(Place {
            city: "Paris".to_owned(),
            unit: Some("celsius".to_owned())
        })
    );
    let tools: Vec<String> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .filter(|name| name.starts_with(OUTPUT_TOOL))
        .collect();
    assert_eq!(tools, ["final_result_Found", "final_result_Unknown"]);
}

#[tokio::test]
async fn an_allowed_tools_choice_keeps_the_output_tool_callable() {
    use tool_core::{agent::TurnOptions, model::ToolChoice};

    let cases = [
        (
            "openai",
            "/tool_choice",
            json!({ "type": "allowed_tools", "allowed_tools": { "mode": "required", "tools": [
                { "type": "function", "function": { "name": "echo" } },
                { "type": "function", "function": { "name": OUTPUT_TOOL } }
            ] } }),
        ),
        (
            "responses",
            "/tool_choice",
            json!({ "type": "allowed_tools", "mode": "required", "tools": [
                { "type": "function", "name": "echo" },
                { "type": "function", "name": OUTPUT_TOOL }
            ] }),
        ),
        (
            "gemini",
            "/toolConfig/functionCallingConfig",
            json!({ "mode": "ANY", "allowedFunctionNames": ["echo", OUTPUT_TOOL] }),
        ),
    ];
    for (kind, pointer, expected) in cases {
        let server = Server::start(vec![Reply::json_owned(calls_answer(
            kind,
            &[(OUTPUT_TOOL, VALID)],
        ))])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(kind, &server, dir.path());
        agent.add_tool(Echo).unwrap();
        let options = OutputOptions::new()
            .turn(TurnOptions::new().tool_choice(ToolChoice::required_one_of(["echo"])));

        let result = agent
            .chat_output_with::<Stay>("Where to?", options)
            .await
            .unwrap();

        assert_eq!(result.output, lyon(), "{kind}");
        let body = server.requests()[0].json();
        assert_eq!(body.pointer(pointer), Some(&expected), "{kind}: {body}");
    }
}
