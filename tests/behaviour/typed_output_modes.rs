//! Typed output in native and prompted modes: the request asks for the output in the
//! provider's own structured-output form (or in the instructions, with JSON mode), and the
//! model's text answer is the value, validated and retried like the output tool's arguments.
//!
//! The answers are the whole-answer text transcripts of `tests/transcripts/` (see its README
//! for their sources) with their text replaced by the output; Ollama's is written here from
//! its documented `/api/chat` response
//! (<https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-structured-outputs>).
//! Anthropic's structured-output answers are the example of its structured outputs page
//! (<https://platform.claude.com/docs/en/build-with-claude/structured-outputs>) in the envelope
//! of `anthropic/message_tool_use.json`, and streamed in `anthropic/text.sse`.

use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentError, AgentEvent, AgentOptions,
    agent::{OUTPUT_TOOL, OutputEvent, OutputMode, OutputOptions},
    model::{AnthropicClient, AnthropicConfig, Message},
    schemars::JsonSchema,
};

use crate::{
    agent_support::assert_every_call_answered,
    loopback::{Reply, Server, fast_retries},
    provider_wires::{self, Wire},
};

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Trip {
    city: String,
    nights: Option<u32>,
}

/// An answer without the field `city`: the schema refuses it.
const INVALID: &str = r#"{"town": "Lyon"}"#;
/// What the model reads after [`INVALID`].
const RETRY: &str = "Error: the answer is not a valid output: missing required argument 'city'; \
                     answer again with only the corrected JSON value";
/// An answer the type accepts; OpenAI's strict mode sends `null` for the optional field.
const VALID: &str = r#"{"city": "Lyon", "nights": null}"#;

/// The wire of `kind`: `openai`, `responses`, `gemini`, `ollama` or `anthropic`.
fn wire_of(kind: &str) -> Wire {
    match kind {
        "openai" => provider_wires::openai(),
        "responses" => provider_wires::responses(),
        "gemini" => provider_wires::gemini(),
        "ollama" => provider_wires::ollama(),
        _ => provider_wires::anthropic(),
    }
}

/// The text `answer`, as the whole answer of the wire of `kind`.
pub(crate) fn text_answer(kind: &str, answer: &str) -> String {
    let escaped = serde_json::to_string(answer).unwrap();
    let recording = |bytes: &[u8], text: &str| {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .replacen(&format!("\"{text}\""), &escaped, 1)
    };
    match kind {
        "responses" => recording(
            include_bytes!("../transcripts/responses/response_text.json"),
            "Hello there!",
        ),
        "openai" => recording(
            include_bytes!("../transcripts/openai/completion_text.json"),
            "Hello there!",
        ),
        "gemini" => recording(
            include_bytes!("../transcripts/gemini/unary_cached_content.json"),
            "Lyon.",
        ),
        "ollama" => json!({
            "model": "llama3.2",
            "created_at": "2024-12-06T00:48:09.983619Z",
            "message": { "role": "assistant", "content": answer },
            "done_reason": "stop",
            "done": true,
            "prompt_eval_count": 41,
            "eval_count": 14
        })
        .to_string(),
        other => panic!("no text answer for {other}"),
    }
}

fn agent_over(wire: &Wire, server: &Server, dir: &std::path::Path) -> Agent {
    Agent::new(
        wire.client(server, fast_retries()),
        AgentOptions::new()
            .root_dir(dir)
            .session_context_file_path(dir.join("session.json")),
    )
}

/// Runs a typed turn in `mode` over `wire` whose model answers [`INVALID`] then `valid`; returns
/// the two request bodies.
async fn run_in_mode(name: &str, mode: OutputMode, valid: &str) -> Vec<Value> {
    let server = Server::start(vec![
        Reply::json_owned(text_answer(name, INVALID)),
        Reply::json_owned(text_answer(name, valid)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_over(&wire_of(name), &server, dir.path());

    let result = agent
        .chat_output_with::<Trip>("Where to?", OutputOptions::new().mode(mode))
        .await
        .unwrap();

    assert_eq!(
        result.output,
        Trip {
            city: "Lyon".to_owned(),
            nights: None
        },
        "{name}"
    );
    assert_eq!(result.output_retries, 1, "{name}");
    assert_eq!(result.response.steps, 2, "{name}");
    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(requests.len(), 2, "{name}");
    let messages = agent.messages();
    assert_eq!(messages[messages.len() - 2], Message::user(RETRY), "{name}");
    let second = requests[1].to_string();
    assert!(second.contains(RETRY), "{name}: {second}");
    assert_every_call_answered(&messages);
    requests
}

/// Whether a request body offers the output tool.
fn offers_output_tool(body: &Value) -> bool {
    body["tools"]
        .to_string()
        .contains(&format!("\"{OUTPUT_TOOL}\""))
}

/// `Trip`'s schema as the output's schema: its title kept, `nights` optional.
fn trip_schema() -> Value {
    json!({
        "title": "Trip",
        "type": "object",
        "properties": {
            "city": { "type": "string" },
            "nights": { "type": ["integer", "null"], "format": "uint32", "minimum": 0 }
        },
        "required": ["city"]
    })
}

#[tokio::test]
async fn native_mode_over_openai_sends_a_strict_json_schema() {
    let requests = run_in_mode("openai", OutputMode::Native, VALID).await;
    for body in &requests {
        assert_eq!(
            body["response_format"],
            json!({
                "type": "json_schema",
                "json_schema": {
                    "name": OUTPUT_TOOL,
                    "strict": true,
                    "schema": {
                        "type": "object",
                        "properties": {
                            "city": { "type": "string" },
                            "nights": {
                                "type": ["integer", "null"],
                                "minimum": 0,
                                "maximum": 4_294_967_295_u32
                            }
                        },
                        "required": ["city", "nights"],
                        "additionalProperties": false
                    }
                }
            })
        );
        assert!(!offers_output_tool(body), "{body}");
    }
}

#[tokio::test]
async fn native_mode_over_responses_sends_a_text_format() {
    let requests = run_in_mode("responses", OutputMode::Native, VALID).await;
    for body in &requests {
        // The same strict schema as on Chat Completions, flat in `text.format`.
        assert_eq!(
            body["text"],
            json!({
                "format": {
                    "type": "json_schema",
                    "name": OUTPUT_TOOL,
                    "strict": true,
                    "schema": {
                        "type": "object",
                        "properties": {
                            "city": { "type": "string" },
                            "nights": {
                                "type": ["integer", "null"],
                                "minimum": 0,
                                "maximum": 4_294_967_295_u32
                            }
                        },
                        "required": ["city", "nights"],
                        "additionalProperties": false
                    }
                }
            })
        );
        assert!(!offers_output_tool(body), "{body}");
    }
}

#[tokio::test]
async fn native_mode_over_gemini_sends_a_response_json_schema() {
    let requests = run_in_mode("gemini", OutputMode::Native, VALID).await;
    for body in &requests {
        assert_eq!(
            body["generationConfig"],
            json!({
                "responseMimeType": "application/json",
                "responseJsonSchema": trip_schema()
            })
        );
    }
}

#[tokio::test]
async fn native_mode_over_ollama_sends_the_schema_as_format() {
    let requests = run_in_mode("ollama", OutputMode::Native, VALID).await;
    for body in &requests {
        assert_eq!(body["format"], trip_schema());
        assert!(!offers_output_tool(body), "{body}");
    }
}

#[tokio::test]
async fn native_mode_over_anthropic_is_the_tool_mode() {
    let wire = provider_wires::anthropic();
    let case = &wire.whole[0];
    let recording = String::from_utf8(case.recording.to_vec())
        .unwrap()
        .replacen("\"get_weather\"", &format!("\"{OUTPUT_TOOL}\""), 1)
        .replacen(r#"{"city":"Lyon"}"#, r#"{"city":"Lyon","nights":2}"#, 1);
    let server = Server::start(vec![Reply::json_owned(recording)]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_over(&wire, &server, dir.path());

    let result = agent
        .chat_output_with::<Trip>("Where to?", OutputOptions::new().mode(OutputMode::Native))
        .await
        .unwrap();

    assert_eq!(result.output.city, "Lyon");
    let body = server.requests()[0].json();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(tools.last(), Some(&OUTPUT_TOOL), "{tools:?}");
}

#[tokio::test]
async fn native_mode_text_that_stays_invalid_exhausts_the_budget() {
    let wire = provider_wires::openai();
    let server = Server::start(vec![
        Reply::json_owned(text_answer("openai", "Lyon, I think.")),
        Reply::json_owned(text_answer("openai", INVALID)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_over(&wire, &server, dir.path());

    let error = agent
        .chat_output_with::<Trip>("Where to?", OutputOptions::new().mode(OutputMode::Native))
        .await
        .unwrap_err();

    let AgentError::OutputRetriesExhausted {
        failures,
        last_output,
        last_error,
    } = error
    else {
        panic!("{error:?}");
    };
    assert_eq!(failures, 2);
    assert_eq!(last_output, INVALID);
    assert!(
        last_error.starts_with("Error: the answer is not a valid output: "),
        "{last_error}"
    );
    let first_retry = server.requests()[1].json().to_string();
    assert!(
        first_retry.contains("Error: the answer is not JSON (expected value at line 1 column 1); answer with only a JSON value that matches the schema"),
        "{first_retry}"
    );
}

#[tokio::test]
async fn native_mode_validator_rejection_goes_back_as_a_user_message() {
    let wire = provider_wires::openai();
    let server = Server::start(vec![
        Reply::json_owned(text_answer(
            "openai",
            r#"{"city": "Paris", "nights": null}"#,
        )),
        Reply::json_owned(text_answer("openai", VALID)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_over(&wire, &server, dir.path());
    let options = OutputOptions::new()
        .mode(OutputMode::Native)
        .validator(|trip: &Trip| {
            if trip.city == "Paris" {
                Err("not Paris again".to_owned())
            } else {
                Ok(())
            }
        });

    let result = agent
        .chat_output_with::<Trip>("Where to?", options)
        .await
        .unwrap();

    assert_eq!(result.output.city, "Lyon");
    let messages = agent.messages();
    assert!(messages.contains(&Message::user(
        "Error: the output was rejected: not Paris again; answer again with only the corrected \
         JSON value"
    )));
}

#[tokio::test]
async fn test_model_answers_a_native_request_with_a_schema_valid_value() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(
        tool_core::model::TestModel::new().call_tools(Vec::<String>::new()),
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(dir.path().join("session.json")),
    );

    let result = agent
        .chat_output_with::<Trip>("Where to?", OutputOptions::new().mode(OutputMode::Native))
        .await
        .unwrap();

    assert_eq!(result.output_retries, 0);
    assert_eq!(result.response.steps, 1);
    assert_eq!(result.response.tool_calls, 0);
}

/// The instructions a prompted run adds, and the schema they carry.
fn prompted_schema(instructions: &str) -> Value {
    let schema = instructions
        .strip_prefix(
            "Always respond with a JSON value that matches this JSON Schema, and nothing else \
             (no prose, no code fence):\n",
        )
        .unwrap_or_else(|| panic!("not the output's instructions: {instructions}"));
    serde_json::from_str(schema).unwrap()
}

/// A valid answer in a Markdown code fence, as models in JSON-by-instruction often give it.
const FENCED: &str = "```json\n{\"city\": \"Lyon\"}\n```";

#[tokio::test]
async fn prompted_mode_over_openai_sends_json_mode_and_the_schema_as_instructions() {
    let requests = run_in_mode("openai", OutputMode::Prompted, FENCED).await;
    for body in &requests {
        assert_eq!(body["response_format"], json!({ "type": "json_object" }));
        assert_eq!(body["messages"][0]["role"], "system");
        let instructions = body["messages"][0]["content"].as_str().unwrap();
        assert_eq!(prompted_schema(instructions), trip_schema());
        assert_eq!(
            body["messages"][1],
            json!({ "role": "user", "content": "Where to?" })
        );
        assert!(!offers_output_tool(body), "{body}");
    }
}

#[tokio::test]
async fn prompted_mode_over_responses_sends_a_json_object_text_format() {
    let requests = run_in_mode("responses", OutputMode::Prompted, FENCED).await;
    assert_eq!(
        requests[0]["text"],
        json!({ "format": { "type": "json_object" } })
    );
    let instructions = requests[0]["instructions"].as_str().unwrap();
    assert_eq!(prompted_schema(instructions), trip_schema());
}

#[tokio::test]
async fn prompted_mode_over_gemini_sends_a_json_mime_type_without_a_schema() {
    let requests = run_in_mode("gemini", OutputMode::Prompted, FENCED).await;
    for body in &requests {
        assert_eq!(
            body["generationConfig"],
            json!({ "responseMimeType": "application/json" })
        );
        let instructions = body["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .unwrap();
        assert_eq!(prompted_schema(instructions), trip_schema());
    }
}

#[tokio::test]
async fn prompted_mode_over_ollama_sends_format_json() {
    let requests = run_in_mode("ollama", OutputMode::Prompted, FENCED).await;
    for body in &requests {
        assert_eq!(body["format"], "json");
        assert_eq!(body["messages"][0]["role"], "system");
    }
}

#[tokio::test]
async fn prompted_mode_adds_to_the_system_prompt_without_keeping_it() {
    let wire = wire_of("openai");
    let server = Server::start(vec![Reply::json_owned(text_answer("openai", VALID))]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(
        wire.client(&server, fast_retries()),
        AgentOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(dir.path().join("session.json"))
            .system_prompt("You plan trips."),
    );

    let result = agent
        .chat_output_with::<Trip>("Where to?", OutputOptions::new().mode(OutputMode::Prompted))
        .await
        .unwrap();

    assert_eq!(result.output.city, "Lyon");
    let body = server.requests()[0].json();
    let system = body["messages"][0]["content"].as_str().unwrap();
    let instructions = system
        .strip_prefix("You plan trips.\n\n")
        .unwrap_or_else(|| panic!("{system}"));
    assert_eq!(prompted_schema(instructions), trip_schema());
    // The instructions are the request's alone: the conversation and system prompt stay.
    assert_eq!(agent.system_prompt(), "You plan trips.");
    assert!(
        agent
            .messages()
            .iter()
            .all(|message| !message.content().contains("JSON Schema")),
        "{:?}",
        agent.messages()
    );
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Weather {
    city: String,
    unit: String,
}

/// The partial views and the final item of a typed stream.
async fn partials_and_output<T: std::fmt::Debug>(
    mut events: futures::stream::BoxStream<'static, Result<OutputEvent<T>, AgentError>>,
) -> (Vec<Value>, Vec<OutputEvent<T>>) {
    use futures::StreamExt as _;

    let mut partials = Vec::new();
    let mut rest = Vec::new();
    // Bounded: the replies are finite, so the stream ends.
    for _ in 0..1000 {
        match events.next().await {
            Some(Ok(OutputEvent::Partial(value))) => partials.push(value),
            Some(Ok(event)) => rest.push(event),
            Some(Err(error)) => panic!("{error}"),
            None => return (partials, rest),
        }
    }
    panic!("the stream did not end");
}

#[tokio::test]
async fn a_streamed_output_tool_call_is_seen_as_its_arguments_arrive() {
    // The recording's call, renamed to the output tool; its arguments come in eight pieces.
    let recording =
        String::from_utf8(include_bytes!("../transcripts/openai/tool_call.sse").to_vec())
            .unwrap()
            .replacen("\"get_weather\"", &format!("\"{OUTPUT_TOOL}\""), 1);
    let server = Server::start(vec![Reply::sse_owned(recording)]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_over(&wire_of("openai"), &server, dir.path());

    let (partials, rest) =
        partials_and_output(agent.stream_output_with::<Weather>("Weather?", OutputOptions::new()))
            .await;

    assert_eq!(
        partials,
        vec![
            json!({}),
            json!({ "city": "" }),
            json!({ "city": "Paris" }),
            json!({ "city": "Paris", "unit": "cel" }),
            json!({ "city": "Paris", "unit": "celsius" }),
        ]
    );
    let Some(OutputEvent::Done(done)) = rest.last() else {
        panic!("{rest:?}");
    };
    assert_eq!(
        done.output,
        Weather {
            city: "Paris".to_owned(),
            unit: "celsius".to_owned()
        }
    );
    assert!(
        rest.iter()
            .any(|event| matches!(event, OutputEvent::Agent(AgentEvent::StepFinished { .. })))
    );
}

#[tokio::test]
async fn a_streamed_native_output_is_seen_as_its_text_arrives() {
    let recording = String::from_utf8(include_bytes!("../transcripts/openai/text.sse").to_vec())
        .unwrap()
        .replacen(r#""The capital""#, r#""{\"city\": \"Ly""#, 1)
        .replacen(r#"" of France""#, r#""on\", \"nigh""#, 1)
        .replacen(r#"" is Paris.""#, r#""ts\": 2}""#, 1);
    let server = Server::start(vec![Reply::sse_owned(recording)]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_over(&wire_of("openai"), &server, dir.path());

    let (partials, rest) = partials_and_output(
        agent
            .stream_output_with::<Trip>("Where to?", OutputOptions::new().mode(OutputMode::Native)),
    )
    .await;

    assert_eq!(
        partials,
        vec![
            json!({ "city": "Ly" }),
            json!({ "city": "Lyon" }),
            json!({ "city": "Lyon", "nights": 2 }),
        ]
    );
    let Some(OutputEvent::Done(done)) = rest.last() else {
        panic!("{rest:?}");
    };
    assert_eq!(
        done.output,
        Trip {
            city: "Lyon".to_owned(),
            nights: Some(2)
        }
    );
    let body = server.requests()[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["response_format"]["type"], "json_schema");
}

/// Counts by name: a map, which OpenAI's strict mode cannot express (its objects are closed).
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Tally {
    counts: std::collections::BTreeMap<String, u32>,
}

#[tokio::test]
async fn native_mode_sends_a_schema_strict_mode_cannot_take_as_not_strict() {
    let answer = r#"{"counts": {"Lyon": 2}}"#;
    for kind in ["openai", "responses"] {
        let server = Server::start(vec![Reply::json_owned(text_answer(kind, answer))]).await;
        let dir = tempfile::tempdir().unwrap();
        let agent = agent_over(&wire_of(kind), &server, dir.path());

        let result = agent
            .chat_output_with::<Tally>("Count", OutputOptions::new().mode(OutputMode::Native))
            .await
            .unwrap();

        assert_eq!(result.output.counts["Lyon"], 2, "{kind}");
        let body = server.requests()[0].json();
        let format = match kind {
            "openai" => &body["response_format"]["json_schema"],
            _ => &body["text"]["format"],
        };
        assert_eq!(format["strict"], false, "{kind}: {body}");
        assert_eq!(
            format["schema"],
            json!({
                "description": "Counts by name: a map, which OpenAI's strict mode cannot \
                                express (its objects are closed).",
                "type": "object",
                "properties": {
                    "counts": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": 4_294_967_295_u32
                        }
                    }
                },
                "required": ["counts"]
            }),
            "{kind}"
        );
    }
}

// The output of the example on Anthropic's structured outputs page
// (<https://platform.claude.com/docs/en/build-with-claude/structured-outputs>), with a bound
// Anthropic's structured outputs do not take: `plan_interest` is at most 10 characters. (A
// comment, not a doc comment, which would be the schema's description.)
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Contact {
    name: String,
    email: String,
    #[schemars(length(max = 10))]
    plan_interest: String,
    demo_requested: bool,
}

/// The page's example answer: its JSON in the text block of a Messages response.
const CONTACT: &str = r#"{"name": "John Smith", "email": "john@example.com", "plan_interest": "Enterprise", "demo_requested": true}"#;

/// `text` as a whole Messages answer: the envelope of `anthropic/message_tool_use.json`
/// (<https://docs.anthropic.com/en/api/messages>) with one text block, the structured outputs
/// page's form of an answer ("valid JSON matching your schema in `content[0].text`").
fn anthropic_text(text: &str) -> String {
    json!({
        "id": "msg_01U",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{ "type": "text", "text": text }],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": { "input_tokens": 50, "output_tokens": 20 }
    })
    .to_string()
}

/// An Anthropic client against `server`, with structured outputs on or off.
fn anthropic_client(server: &Server, structured_outputs: bool) -> AnthropicClient {
    AnthropicClient::new(
        AnthropicConfig::default()
            .base_url(server.url())
            .api_key("sk-ant-test")
            .model("claude-sonnet-4-5")
            .http(fast_retries())
            .structured_outputs(structured_outputs),
    )
    .unwrap()
}

/// An agent over [`anthropic_client`] with no tools of its own, so that a request body holds
/// only what typed output adds.
fn anthropic_agent(server: &Server, structured_outputs: bool, dir: &std::path::Path) -> Agent {
    Agent::new(
        anthropic_client(server, structured_outputs),
        AgentOptions::new()
            .root_dir(dir)
            .registry(std::sync::Arc::new(tool_core::ToolRegistry::new())),
    )
}

/// `Contact`'s schema as Anthropic's structured outputs take it: closed, the length bound a
/// note in the description.
fn contact_output_config() -> Value {
    json!({
        "format": {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "properties": {
                    "name": { "type": "string" },
                    "email": { "type": "string" },
                    "plan_interest": { "type": "string", "description": "at most 10 characters" },
                    "demo_requested": { "type": "boolean" }
                },
                "required": ["name", "email", "plan_interest", "demo_requested"],
                "additionalProperties": false
            }
        }
    })
}

fn john() -> Contact {
    Contact {
        name: "John Smith".to_owned(),
        email: "john@example.com".to_owned(),
        plan_interest: "Enterprise".to_owned(),
        demo_requested: true,
    }
}

#[tokio::test]
async fn native_mode_over_anthropic_with_structured_outputs_sends_output_config() {
    let server = Server::start(vec![Reply::json_owned(anthropic_text(CONTACT))]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, true, dir.path());

    let result = agent
        .chat_output_with::<Contact>(
            "Extract the key information from this email: John Smith (john@example.com) is \
             interested in our Enterprise plan and wants to schedule a demo for next Tuesday \
             at 2pm.",
            OutputOptions::new().mode(OutputMode::Native),
        )
        .await
        .unwrap();

    assert_eq!(result.output, john());
    assert_eq!(result.output_retries, 0);
    assert_eq!(result.response.text, CONTACT);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": false,
            "messages": [{
                "role": "user",
                "content": [{
                    "type": "text",
                    "text": "Extract the key information from this email: John Smith \
                             (john@example.com) is interested in our Enterprise plan and \
                             wants to schedule a demo for next Tuesday at 2pm."
                }]
            }],
            "output_config": contact_output_config()
        })
    );
    // Generally available: no beta header.
    assert_eq!(requests[0].header("anthropic-beta"), None);
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn a_bound_anthropic_cannot_enforce_is_still_checked_and_retried() {
    let too_long = CONTACT.replace("\"Enterprise\"", "\"Enterprise plan\"");
    let server = Server::start(vec![
        Reply::json_owned(anthropic_text(&too_long)),
        Reply::json_owned(anthropic_text(CONTACT)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, true, dir.path());

    let result = agent
        .chat_output_with::<Contact>("Extract.", OutputOptions::new().mode(OutputMode::Native))
        .await
        .unwrap();

    assert_eq!(result.output, john());
    assert_eq!(result.output_retries, 1);
    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(requests.len(), 2);
    for body in &requests {
        assert_eq!(body["output_config"], contact_output_config());
        assert!(body.get("tools").is_none(), "{body}");
    }
    let retry = "Error: the answer is not a valid output: at /plan_interest: \
                 \"Enterprise plan\" is longer than 10 characters; answer again with only the \
                 corrected JSON value";
    assert_eq!(
        requests[1]["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "Extract." }] },
            { "role": "assistant", "content": [{ "type": "text", "text": too_long }] },
            { "role": "user", "content": [{ "type": "text", "text": retry }] }
        ])
    );
    assert_every_call_answered(&agent.messages());
}

#[tokio::test]
async fn a_streamed_native_output_over_anthropic_is_seen_as_it_arrives() {
    use futures::StreamExt as _;

    // `anthropic/text.sse` with its three text deltas replaced by pieces of the output.
    let recording =
        String::from_utf8(include_bytes!("../transcripts/anthropic/text.sse").to_vec()).unwrap();
    let mut recording = recording;
    for (old, new) in [
        ("Hello", r#"{"name": "John Smith", "email": "jo"#),
        (", how can", r#"hn@example.com", "plan_interest": "Enter"#),
        (" I help?", r#"prise", "demo_requested": true}"#),
    ] {
        let old = serde_json::to_string(old).unwrap();
        assert!(recording.contains(&old), "{old}");
        recording = recording.replacen(&old, &serde_json::to_string(new).unwrap(), 1);
    }
    let server = Server::start(vec![Reply::sse_owned(recording)]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, true, dir.path());

    let mut events = agent
        .stream_output_with::<Contact>("Extract.", OutputOptions::new().mode(OutputMode::Native));
    let mut partials = Vec::new();
    let mut output = None;
    let mut count = 0;
    while let Some(event) = events.next().await {
        count += 1;
        assert!(count < 1000, "the stream does not end");
        match event.unwrap() {
            OutputEvent::Partial(partial) => partials.push(partial),
            OutputEvent::Done(done) => output = Some(done.output),
            _ => {}
        }
    }

    assert_eq!(
        partials,
        vec![
            json!({ "name": "John Smith", "email": "jo" }),
            json!({ "name": "John Smith", "email": "john@example.com", "plan_interest": "Enter" }),
            json!({
                "name": "John Smith",
                "email": "john@example.com",
                "plan_interest": "Enterprise",
                "demo_requested": true
            }),
        ]
    );
    assert_eq!(output, Some(john()));
    let body = server.requests()[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["output_config"], contact_output_config());
    assert!(body.get("tools").is_none(), "{body}");
}

#[tokio::test]
async fn native_mode_over_anthropic_without_structured_outputs_is_the_tool_mode() {
    let recording = String::from_utf8(
        include_bytes!("../transcripts/anthropic/message_tool_use.json").to_vec(),
    )
    .unwrap()
    .replacen("\"get_weather\"", &format!("\"{OUTPUT_TOOL}\""), 1)
    .replacen(
        r#""input": {
        "city": "Lyon"
      }"#,
        &format!(r#""input": {CONTACT}"#),
        1,
    );
    let server = Server::start(vec![Reply::json_owned(recording)]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, false, dir.path());

    let result = agent
        .chat_output_with::<Contact>("Extract.", OutputOptions::new().mode(OutputMode::Native))
        .await
        .unwrap();

    assert_eq!(result.output, john());
    let body = server.requests()[0].json();
    assert!(body.get("output_config").is_none(), "{body}");
    let output_tool = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == OUTPUT_TOOL)
        .unwrap_or_else(|| panic!("{body}"));
    // The tool keeps the full schema, bound included.
    assert_eq!(
        output_tool["input_schema"]["properties"]["plan_interest"],
        json!({ "type": "string", "maxLength": 10 })
    );
}

#[tokio::test]
async fn prompted_mode_over_anthropic_with_structured_outputs_sends_no_output_config() {
    let server = Server::start(vec![Reply::json_owned(anthropic_text(CONTACT))]).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, true, dir.path());

    let result = agent
        .chat_output_with::<Contact>("Extract.", OutputOptions::new().mode(OutputMode::Prompted))
        .await
        .unwrap();

    assert_eq!(result.output, john());
    let body = server.requests()[0].json();
    // The Messages API has no JSON mode: the schema is in the system prompt only.
    assert!(body.get("output_config").is_none(), "{body}");
    assert!(
        body["system"].as_str().unwrap().contains("plan_interest"),
        "{body}"
    );
}
