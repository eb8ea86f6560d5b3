//! The table of wire protocols: one row per provider client, with its recordings
//! (`tests/transcripts/<wire>/`) and what each must decode to and send. The scenarios in
//! `provider_scenarios` run against every row, so a new provider gets the whole suite by adding
//! a row here (and its name to the list there).

use serde_json::{Value, json};
use tool_core::{
    Provider,
    model::{
        AnthropicClient, AnthropicConfig, ChatModel, Endpoint, FinishReason, GeminiClient,
        GeminiConfig, HttpOptions, OllamaClient, OllamaConfig, OpenAiClient, OpenAiConfig,
        ProviderError, ResponsesClient, ResponsesConfig, Usage,
    },
};

use crate::loopback::{Reply, Server, fast_retries};

/// A recording of `tests/transcripts/`, by its path there.
macro_rules! recording {
    ($path:literal) => {
        include_bytes!(concat!("../transcripts/", $path))
    };
}

/// One wire protocol and its client.
pub(crate) struct Wire {
    pub(crate) provider: Provider,
    /// Its client against a loopback server.
    connect: Connect,
    /// How its streamed answers are served: `text/event-stream` or NDJSON.
    pub(crate) streamed: fn(&'static [u8]) -> Reply,
    /// How it sends the API key.
    pub(crate) key: Key,
    /// A plain text answer, and the request that asked for it.
    pub(crate) text: Text,
    /// One tool call.
    pub(crate) tool_call: Calls,
    /// Two tool calls in one answer, with arguments that need escaping.
    pub(crate) parallel_calls: Calls,
    /// A tool call, its result sent back, and the final answer.
    pub(crate) multi_step: MultiStep,
    /// A stream that stops before its end.
    pub(crate) truncated: Truncated,
    /// Streams that fail with the provider's error after some text.
    pub(crate) stream_errors: Vec<StreamError>,
    /// The wire's "busy" error (a 429 or 5xx), retried.
    pub(crate) busy: Busy,
    /// An error that is not retried (bad key, unknown model).
    pub(crate) rejected: Rejected,
    /// Non-streamed answers.
    pub(crate) whole: Vec<Whole>,
    /// Where a non-streamed request goes and what it says.
    pub(crate) whole_request: Sent,
    /// Answers that end for a reason other than a finished text.
    pub(crate) finishes: Vec<Finish>,
    /// Token counts, with caches and reasoning where the wire reports them.
    pub(crate) usage: Vec<Counted>,
    /// How the results of a succeeded and a failed call are sent back (see
    /// `provider_scenarios::one_ok_one_failed`).
    pub(crate) failed_results: Tail,
    /// A streamed answer with one `write_file` call whose arguments are the given JSON text,
    /// in one event.
    pub(crate) big_call: fn(&str) -> String,
}

/// Builds a wire's client against a loopback server.
type Connect = fn(&Server, Setup) -> Result<Box<dyn ChatModel>, ProviderError>;

/// How a test client is set up.
pub(crate) struct Setup {
    pub(crate) http: HttpOptions,
    /// Whether the client gets the row's test key.
    pub(crate) key: bool,
    /// Extra headers for every request.
    pub(crate) headers: Vec<(&'static str, &'static str)>,
}

impl Setup {
    /// Sets `endpoint` up for a test: `base_url`, `model`, `key` if the setup has a key, and
    /// the setup's headers, timeouts and retries.
    fn apply(self, endpoint: &mut Endpoint, base_url: String, model: &str, key: &str) {
        endpoint.base_url = base_url;
        endpoint.model = model.to_owned();
        endpoint.api_key = self.key.then(|| key.to_owned());
        endpoint.headers = self
            .headers
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        endpoint.http = self.http;
    }

    /// The test key, no extra headers, these timeouts and retries.
    pub(crate) fn with(http: HttpOptions) -> Self {
        Self {
            http,
            key: true,
            headers: Vec::new(),
        }
    }
}

/// How a wire sends its API key.
pub(crate) struct Key {
    /// The header, and its value for the test key.
    pub(crate) header: &'static str,
    pub(crate) value: &'static str,
    /// The variable a client without a key asks for, if the wire needs a key.
    pub(crate) required: Option<&'static str>,
}

/// A streamed plain-text answer and the request that asked for it.
pub(crate) struct Text {
    pub(crate) recording: &'static [u8],
    pub(crate) text: &'static str,
    pub(crate) usage: Usage,
    pub(crate) sent: Sent,
}

/// Where a request went and what its body holds.
pub(crate) struct Sent {
    pub(crate) uri: &'static str,
    /// Headers and their values (`None`: not sent).
    pub(crate) headers: Vec<(&'static str, Option<&'static str>)>,
    /// JSON pointers into the body and their values.
    pub(crate) body: Vec<(&'static str, Value)>,
    /// JSON pointers that are absent from the body.
    pub(crate) absent: Vec<&'static str>,
}

/// An expected tool call.
pub(crate) struct Call {
    /// The provider's id, or `None` when the wire has none and the client makes one up.
    pub(crate) id: Option<&'static str>,
    pub(crate) name: &'static str,
    /// The arguments text, exactly.
    pub(crate) arguments: &'static str,
    /// What the provider asked to have sent back with the call.
    pub(crate) metadata: Option<Value>,
}

/// A streamed answer with tool calls.
pub(crate) struct Calls {
    pub(crate) recording: &'static [u8],
    pub(crate) text: &'static str,
    pub(crate) calls: Vec<Call>,
    pub(crate) usage: Option<Usage>,
}

/// A two-step exchange: the first answer calls tools, each result is sent back as
/// `result of <tool>`, and the second answer is `text`.
pub(crate) struct MultiStep {
    pub(crate) call: &'static [u8],
    pub(crate) answer: &'static [u8],
    pub(crate) text: &'static str,
    /// The assistant's calls and the results, as the second request carries them.
    pub(crate) sent: Tail,
}

/// The end of a request's message list, from `from` on.
pub(crate) struct Tail {
    /// The JSON pointer of the list (`/messages`, `/contents`).
    pub(crate) list: &'static str,
    pub(crate) from: usize,
    pub(crate) messages: Vec<Value>,
}

/// A stream that stops without its terminal event.
pub(crate) struct Truncated {
    pub(crate) recording: &'static [u8],
    pub(crate) text: &'static str,
    pub(crate) bytes: u64,
    pub(crate) events: u64,
}

/// A stream that fails with the provider's error after `text`.
pub(crate) struct StreamError {
    pub(crate) recording: &'static [u8],
    pub(crate) text: &'static str,
    pub(crate) code: Option<&'static str>,
    pub(crate) message: &'static str,
}

/// A busy provider's error response.
pub(crate) struct Busy {
    pub(crate) status: u16,
    pub(crate) body: &'static [u8],
    pub(crate) message: &'static str,
}

/// An error response.
pub(crate) struct Rejected {
    pub(crate) status: u16,
    pub(crate) body: &'static [u8],
    pub(crate) code: Option<&'static str>,
    pub(crate) message: &'static str,
}

/// A non-streamed answer.
pub(crate) struct Whole {
    pub(crate) recording: &'static [u8],
    pub(crate) text: &'static str,
    pub(crate) calls: Vec<Call>,
    pub(crate) finish: FinishReason,
    pub(crate) usage: Option<Usage>,
}

/// A streamed answer that ends for `finish`, with `text`.
pub(crate) struct Finish {
    pub(crate) recording: &'static [u8],
    pub(crate) text: &'static str,
    pub(crate) finish: FinishReason,
}

/// An answer's token counts.
pub(crate) struct Counted {
    pub(crate) recording: &'static [u8],
    pub(crate) streamed: bool,
    /// The answer's text, when the recording is a plain answer.
    pub(crate) text: Option<&'static str>,
    pub(crate) usage: Usage,
    pub(crate) uncached_input: u64,
    pub(crate) total: u64,
}

impl Wire {
    /// The wire's client with `setup` against `server`.
    pub(crate) fn connect(
        &self,
        server: &Server,
        setup: Setup,
    ) -> Result<Box<dyn ChatModel>, ProviderError> {
        (self.connect)(server, setup)
    }

    /// The wire's client with the test key and `http` against `server`.
    pub(crate) fn client(&self, server: &Server, http: HttpOptions) -> Box<dyn ChatModel> {
        self.connect(server, Setup::with(http))
            .expect("a client with a key")
    }
}

/// The wire's client with quick retries against `server`.
pub(crate) fn client(wire: fn() -> Wire) -> impl Fn(&Server) -> Box<dyn ChatModel> {
    move |server| wire().client(server, fast_retries())
}

/// Every row.
pub(crate) fn all() -> [Wire; 5] {
    [openai(), responses(), anthropic(), gemini(), ollama()]
}

/// The conversation every row's request bodies are written for: see
/// `loopback::question_about("Paris")`.
const QUESTION: &str = "What is the weather in Paris?";

/// OpenAI-compatible Chat Completions.
pub(crate) fn openai() -> Wire {
    Wire {
        provider: Provider::OpenAi,
        connect: |server, setup| {
            let mut config = OpenAiConfig::default();
            let base_url = format!("{}/v1", server.url());
            setup.apply(&mut config.endpoint, base_url, "gpt-4o-mini", "sk-test");
            Ok(Box::new(OpenAiClient::new(config)?))
        },
        streamed: Reply::sse,
        key: Key {
            header: "authorization",
            value: "Bearer sk-test",
            required: None,
        },
        text: Text {
            recording: recording!("openai/text.sse"),
            text: "The capital of France is Paris.",
            usage: Usage::new(21, 8),
            sent: Sent {
                uri: "/v1/chat/completions",
                headers: vec![
                    ("authorization", Some("Bearer sk-test")),
                    ("accept", Some("text/event-stream")),
                ],
                body: vec![
                    ("/model", json!("gpt-4o-mini")),
                    ("/stream", json!(true)),
                    ("/stream_options", json!({ "include_usage": true })),
                    (
                        "/messages",
                        json!([
                            { "role": "system", "content": "You are terse." },
                            { "role": "user", "content": QUESTION }
                        ]),
                    ),
                ],
                absent: vec![],
            },
        },
        tool_call: Calls {
            recording: recording!("openai/tool_call.sse"),
            text: "",
            calls: vec![Call {
                id: Some("call_w3aTq1"),
                name: "get_weather",
                arguments: r#"{"city": "Paris", "unit": "celsius"}"#,
                metadata: None,
            }],
            usage: Some(Usage::new(64, 19)),
        },
        parallel_calls: Calls {
            recording: recording!("openai/parallel_tool_calls.sse"),
            text: "",
            calls: vec![
                Call {
                    id: Some("call_p0"),
                    name: "read_file",
                    arguments: r#"{"path": "notes/\"draft\".txt"}"#,
                    metadata: None,
                },
                Call {
                    id: Some("call_p1"),
                    name: "search",
                    // The recording escapes `é`; the text is kept as sent.
                    arguments: r#"{"query": "caf\u00e9 near \"Gare du Nord\""}"#,
                    metadata: None,
                },
            ],
            usage: Some(Usage::new(88, 41)),
        },
        multi_step: MultiStep {
            call: recording!("openai/tool_call.sse"),
            answer: recording!("openai/final_answer.sse"),
            text: "It is 18°C in Paris.",
            sent: Tail {
                list: "/messages",
                from: 2,
                messages: vec![
                    json!({
                        "role": "assistant",
                        "content": null,
                        "tool_calls": [{
                            "id": "call_w3aTq1",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": r#"{"city": "Paris", "unit": "celsius"}"#
                            }
                        }]
                    }),
                    json!({
                        "role": "tool", "tool_call_id": "call_w3aTq1",
                        "content": "result of get_weather"
                    }),
                ],
            },
        },
        truncated: Truncated {
            recording: recording!("openai/truncated.sse"),
            text: "Let me think",
            bytes: 888,
            events: 3,
        },
        stream_errors: vec![
            StreamError {
                recording: recording!("openai/error_mid_stream.sse"),
                text: "Partial",
                code: Some("server_error"),
                message: "The server had an error while processing your request. Sorry about that!",
            },
            StreamError {
                recording: recording!("openai/error_event.sse"),
                text: "",
                code: Some("context_length_exceeded"),
                message: "context length exceeded",
            },
        ],
        busy: Busy {
            status: 429,
            body: recording!("openai/error_rate_limit.json"),
            message: "Rate limit reached for gpt-4o-mini in organization org-test on requests per \
                      min (RPM): Limit 3, Used 3, Requested 1.",
        },
        rejected: Rejected {
            status: 401,
            body: recording!("openai/error_invalid_key.json"),
            code: Some("invalid_api_key"),
            message: "Incorrect API key provided: sk-test. You can find your API key at \
                      https://platform.openai.com/account/api-keys.",
        },
        whole: vec![
            Whole {
                recording: recording!("openai/completion_tool_call.json"),
                text: "",
                calls: vec![Call {
                    id: Some("call_n1"),
                    name: "get_weather",
                    arguments: r#"{"city":"Lyon"}"#,
                    metadata: None,
                }],
                finish: FinishReason::ToolCalls,
                usage: Some(Usage::new(70, 15)),
            },
            Whole {
                recording: recording!("openai/completion_text.json"),
                text: "Hello there!",
                calls: vec![],
                finish: FinishReason::Stop,
                usage: Some(Usage::new(9, 3)),
            },
        ],
        whole_request: Sent {
            uri: "/v1/chat/completions",
            headers: vec![("accept", Some("*/*"))],
            body: vec![("/stream", json!(false))],
            absent: vec!["/stream_options"],
        },
        finishes: vec![
            Finish {
                recording: recording!("openai/length.sse"),
                text: "{\"",
                finish: FinishReason::Length,
            },
            Finish {
                recording: recording!("openai/refusal.sse"),
                text: "I can't help with that.",
                finish: FinishReason::ContentFilter,
            },
        ],
        usage: vec![
            // OpenAI's prompt count already includes the cached tokens, and its completion
            // count the reasoning tokens.
            Counted {
                recording: recording!("openai/cached_reasoning.sse"),
                streamed: true,
                text: Some("Paris."),
                usage: Usage::new(1250, 340)
                    .cache_read_tokens(1152)
                    .reasoning_tokens(256),
                uncached_input: 98,
                total: 1590,
            },
            Counted {
                recording: recording!("openai/completion_cached_reasoning.json"),
                streamed: false,
                text: None,
                usage: Usage::new(2006, 150)
                    .cache_read_tokens(1920)
                    .reasoning_tokens(128),
                uncached_input: 86,
                total: 2156,
            },
            // total_tokens 150 = 90 prompt + 12 completion + 48 reasoning: a compatible server
            // counted the reasoning outside `completion_tokens`, and the output includes it.
            Counted {
                recording: recording!("openai/reasoning_beside_completion.sse"),
                streamed: true,
                text: Some("Paris."),
                usage: Usage::new(90, 60)
                    .cache_read_tokens(64)
                    .reasoning_tokens(48),
                uncached_input: 26,
                total: 150,
            },
        ],
        // A tool message has no error flag: the failure is the content alone.
        failed_results: Tail {
            list: "/messages",
            from: 3,
            messages: vec![
                json!({ "role": "tool", "tool_call_id": "call_1", "content": "18°C" }),
                json!({ "role": "tool", "tool_call_id": "call_2", "content": FAILURE }),
            ],
        },
        big_call: |arguments| {
            let chunk = |delta: Value, finish: Value| {
                let event = json!({ "id": "c", "object": "chat.completion.chunk", "created": 1,
                    "model": "m", "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
                format!("data: {event}\n\n")
            };
            chunk(
                json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": "call_big",
                    "type": "function", "function": { "name": "write_file", "arguments": arguments } }] }),
                Value::Null,
            ) + &chunk(json!({}), json!("tool_calls"))
                + "data: [DONE]\n\n"
        },
    }
}

/// Anthropic Messages.
pub(crate) fn anthropic() -> Wire {
    Wire {
        provider: Provider::Anthropic,
        connect: |server, setup| {
            let mut config = AnthropicConfig::default();
            let base_url = server.url().to_owned();
            setup.apply(&mut config.endpoint, base_url, "claude-test", "sk-ant-test");
            Ok(Box::new(AnthropicClient::new(config)?))
        },
        streamed: Reply::sse,
        key: Key {
            header: "x-api-key",
            value: "sk-ant-test",
            required: Some("ANTHROPIC_API_KEY"),
        },
        text: Text {
            recording: recording!("anthropic/text.sse"),
            text: "Hello, how can I help?",
            usage: Usage::new(25, 12),
            sent: Sent {
                uri: "/v1/messages",
                headers: vec![
                    ("x-api-key", Some("sk-ant-test")),
                    ("anthropic-version", Some("2023-06-01")),
                    ("anthropic-beta", None),
                    ("authorization", None),
                    ("accept", Some("text/event-stream")),
                ],
                body: vec![
                    ("/model", json!("claude-test")),
                    ("/max_tokens", json!(4096)),
                    ("/stream", json!(true)),
                    ("/system", json!("You are terse.")),
                    (
                        "/messages",
                        json!([{ "role": "user", "content": [{ "type": "text", "text": QUESTION }] }]),
                    ),
                ],
                absent: vec![],
            },
        },
        tool_call: Calls {
            // Ends with `message_stop` and no blank line: the last event is flushed.
            recording: recording!("anthropic/tool_use.sse"),
            text: "I'll check the weather.",
            calls: vec![Call {
                id: Some("toolu_01W"),
                name: "get_weather",
                arguments: r#"{"city": "Paris"}"#,
                metadata: None,
            }],
            usage: Some(Usage::new(25, 54)),
        },
        parallel_calls: Calls {
            recording: recording!("anthropic/parallel_tool_use.sse"),
            text: "",
            calls: vec![
                Call {
                    id: Some("toolu_01A"),
                    name: "read_file",
                    arguments: r#"{"path": "notes/\"draft\".txt"}"#,
                    metadata: None,
                },
                Call {
                    id: Some("toolu_01B"),
                    name: "search",
                    arguments: r#"{"query": "caf\u00e9 \n"}"#,
                    metadata: None,
                },
            ],
            usage: Some(Usage::new(25, 77)),
        },
        // The results of parallel calls go back merged in one user message.
        multi_step: MultiStep {
            call: recording!("anthropic/parallel_tool_use.sse"),
            answer: recording!("anthropic/final_answer.sse"),
            text: "It is 18°C in Paris.",
            sent: Tail {
                list: "/messages",
                from: 1,
                messages: vec![
                    json!({
                        "role": "assistant",
                        "content": [
                            { "type": "tool_use", "id": "toolu_01A", "name": "read_file",
                              "input": { "path": "notes/\"draft\".txt" } },
                            { "type": "tool_use", "id": "toolu_01B", "name": "search",
                              "input": { "query": "café \n" } }
                        ]
                    }),
                    json!({
                        "role": "user",
                        "content": [
                            { "type": "tool_result", "tool_use_id": "toolu_01A",
                              "content": "result of read_file" },
                            { "type": "tool_result", "tool_use_id": "toolu_01B",
                              "content": "result of search" }
                        ]
                    }),
                ],
            },
        },
        truncated: Truncated {
            recording: recording!("anthropic/truncated.sse"),
            text: "Once upon",
            bytes: 668,
            events: 3,
        },
        stream_errors: vec![
            StreamError {
                recording: recording!("anthropic/error_mid_stream.sse"),
                text: "Partial",
                code: Some("overloaded_error"),
                message: "Overloaded",
            },
            // No `event:` lines: the error is known by its JSON `type`.
            StreamError {
                recording: recording!("anthropic/data_only_error.sse"),
                text: "",
                code: Some("api_error"),
                message: "Internal server error",
            },
        ],
        busy: Busy {
            status: 529,
            body: recording!("anthropic/error_overloaded.json"),
            message: "Overloaded",
        },
        rejected: Rejected {
            status: 401,
            body: recording!("anthropic/error_invalid_key.json"),
            code: Some("authentication_error"),
            message: "invalid x-api-key",
        },
        whole: vec![Whole {
            recording: recording!("anthropic/message_tool_use.json"),
            text: "Let me look that up.",
            calls: vec![Call {
                id: Some("toolu_01U"),
                name: "get_weather",
                arguments: r#"{"city":"Lyon"}"#,
                metadata: None,
            }],
            finish: FinishReason::ToolCalls,
            usage: Some(Usage::new(50, 20)),
        }],
        whole_request: Sent {
            uri: "/v1/messages",
            headers: vec![("accept", Some("*/*"))],
            body: vec![("/stream", json!(false))],
            absent: vec![],
        },
        finishes: vec![Finish {
            recording: recording!("anthropic/refusal.sse"),
            text: "",
            finish: FinishReason::ContentFilter,
        }],
        usage: vec![
            // 3 uncached input tokens, 412 read from the cache; `message_delta` repeats the
            // input counts beside the final output count.
            Counted {
                recording: recording!("anthropic/cached_tool_use.sse"),
                streamed: true,
                text: None,
                usage: Usage::new(415, 48).cache_read_tokens(412),
                uncached_input: 3,
                total: 463,
            },
            // The start's cache counts stay when the delta has only the output count.
            Counted {
                recording: recording!("anthropic/cached_final_answer.sse"),
                streamed: true,
                text: Some("That file does not exist."),
                usage: Usage::new(475, 20)
                    .cache_read_tokens(412)
                    .cache_write_tokens(61),
                uncached_input: 2,
                total: 495,
            },
            // Cache writes count in the input too.
            Counted {
                recording: recording!("anthropic/message_cache_write.json"),
                streamed: false,
                text: None,
                usage: Usage::new(1204, 35).cache_write_tokens(1200),
                uncached_input: 4,
                total: 1239,
            },
        ],
        // `tool_result` blocks in one user message; a failure carries `is_error`.
        failed_results: Tail {
            list: "/messages",
            from: 2,
            messages: vec![json!({
                "role": "user",
                "content": [
                    { "type": "tool_result", "tool_use_id": "call_1", "content": "18°C" },
                    { "type": "tool_result", "tool_use_id": "call_2", "content": FAILURE,
                      "is_error": true }
                ]
            })],
        },
        big_call: |input| {
            let event = |data: Value| {
                format!(
                    "event: {}\ndata: {data}\n\n",
                    data["type"].as_str().unwrap_or_default()
                )
            };
            [
                event(
                    json!({ "type": "message_start", "message": { "id": "msg_big", "type": "message",
                    "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                    "usage": { "input_tokens": 10, "output_tokens": 1 } } }),
                ),
                event(
                    json!({ "type": "content_block_start", "index": 0, "content_block":
                    { "type": "tool_use", "id": "toolu_big", "name": "write_file", "input": {} } }),
                ),
                event(json!({ "type": "content_block_delta", "index": 0,
                    "delta": { "type": "input_json_delta", "partial_json": input } })),
                event(json!({ "type": "content_block_stop", "index": 0 })),
                event(
                    json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" },
                    "usage": { "output_tokens": 99 } }),
                ),
                event(json!({ "type": "message_stop" })),
            ]
            .concat()
        },
    }
}

/// The `thoughtSignature` of `gemini/function_call.sse`.
const SIGNATURE: &str = "CiQBcsjafQ2ReVx4lWfK0sg7Lx7Eb7bAmiR3Nf4cwWLxJ2Ws2r0SVQFyyNp9z9tpfDgq/\
                         Zc8dYW6DRr8kYjDZvnd+fDvVUm0Co1S0M2K1z06D0gr8=";

/// Google Gemini.
pub(crate) fn gemini() -> Wire {
    Wire {
        provider: Provider::Gemini,
        connect: |server, setup| {
            let mut config = GeminiConfig::default();
            let base_url = format!("{}/v1beta", server.url());
            setup.apply(&mut config.endpoint, base_url, "gemini-test", "gm-test");
            Ok(Box::new(GeminiClient::new(config)?))
        },
        // CRLF framing.
        streamed: Reply::sse,
        key: Key {
            header: "x-goog-api-key",
            value: "gm-test",
            required: Some("GEMINI_API_KEY"),
        },
        text: Text {
            recording: recording!("gemini/text.sse"),
            text: "The capital of France is Paris.",
            usage: Usage::new(8, 7),
            sent: Sent {
                uri: "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
                headers: vec![
                    ("x-goog-api-key", Some("gm-test")),
                    ("authorization", None),
                    ("accept", Some("*/*")),
                ],
                body: vec![
                    (
                        "/systemInstruction",
                        json!({ "parts": [{ "text": "You are terse." }] }),
                    ),
                    (
                        "/contents",
                        json!([{ "role": "user", "parts": [{ "text": QUESTION }] }]),
                    ),
                ],
                absent: vec![],
            },
        },
        // The thought summary is not part of the answer; the finish reason comes in a later
        // chunk than the call.
        tool_call: Calls {
            recording: recording!("gemini/function_call.sse"),
            text: "",
            calls: vec![Call {
                id: None,
                name: "get_weather",
                arguments: r#"{"city": "Paris"}"#,
                metadata: Some(json!({ "thoughtSignature": SIGNATURE })),
            }],
            usage: Some(Usage::new(30, 49).reasoning_tokens(40)),
        },
        // No ids, and a call without `args`.
        parallel_calls: Calls {
            recording: recording!("gemini/parallel_calls.sse"),
            text: "",
            calls: vec![
                Call {
                    id: None,
                    name: "read_file",
                    arguments: r#"{"path": "notes/\"draft\".txt"}"#,
                    metadata: None,
                },
                Call {
                    id: None,
                    name: "current_time",
                    arguments: "{}",
                    metadata: None,
                },
            ],
            usage: Some(Usage::new(44, 12)),
        },
        // Results go back in call order, and the call with its signature.
        multi_step: MultiStep {
            call: recording!("gemini/function_call.sse"),
            answer: recording!("gemini/final_answer.sse"),
            text: "It is 18°C in Paris.",
            sent: Tail {
                list: "/contents",
                from: 1,
                messages: vec![
                    json!({
                        "role": "model",
                        "parts": [{
                            "functionCall": { "name": "get_weather", "args": { "city": "Paris" } },
                            "thoughtSignature": SIGNATURE
                        }]
                    }),
                    json!({
                        "role": "user",
                        "parts": [{
                            "functionResponse": {
                                "name": "get_weather",
                                "response": { "result": "result of get_weather" }
                            }
                        }]
                    }),
                ],
            },
        },
        // No finish reason: the body ended early.
        truncated: Truncated {
            recording: recording!("gemini/truncated.sse"),
            text: "Once upon a time",
            bytes: 320,
            events: 2,
        },
        stream_errors: vec![
            // A raw JSON object without `data:`.
            StreamError {
                recording: recording!("gemini/error_mid_stream.sse"),
                text: "First second ",
                code: Some("UNAVAILABLE"),
                message: "The model is overloaded. Please try again later.",
            },
            StreamError {
                recording: recording!("gemini/error_event.sse"),
                text: "Partial",
                code: Some("INTERNAL"),
                message: "Internal error encountered.",
            },
        ],
        busy: Busy {
            status: 429,
            body: recording!("gemini/error_quota.json"),
            message: "Resource has been exhausted (e.g. check quota).",
        },
        rejected: Rejected {
            status: 400,
            body: recording!("gemini/error_invalid_key.json"),
            code: Some("INVALID_ARGUMENT"),
            message: "API key not valid. Please pass a valid API key.",
        },
        whole: vec![Whole {
            recording: recording!("gemini/unary_function_calls.json"),
            text: "Adding them up.",
            calls: vec![
                Call {
                    id: None,
                    name: "sum",
                    // The `args` object as the recording has it, whitespace and all.
                    arguments: "{\n                \"x\": 1,\n                \"y\": 2\n              }",
                    metadata: None,
                },
                Call {
                    id: None,
                    name: "current_time",
                    arguments: "{}",
                    metadata: None,
                },
            ],
            finish: FinishReason::ToolCalls,
            usage: Some(Usage::new(20, 10)),
        }],
        whole_request: Sent {
            uri: "/v1beta/models/gemini-test:generateContent",
            headers: vec![("accept", Some("*/*"))],
            body: vec![],
            absent: vec!["/stream"],
        },
        finishes: vec![Finish {
            recording: recording!("gemini/safety.sse"),
            text: "I can't",
            finish: FinishReason::ContentFilter,
        }],
        // 12 answer tokens and 85 thought tokens are the output; the thoughts are its
        // reasoning.
        usage: vec![
            Counted {
                recording: recording!("gemini/cached_thoughts.sse"),
                streamed: true,
                text: Some("Paris."),
                usage: Usage::new(2100, 97)
                    .cache_read_tokens(2048)
                    .reasoning_tokens(85),
                uncached_input: 52,
                total: 2197,
            },
            Counted {
                recording: recording!("gemini/unary_cached_content.json"),
                streamed: false,
                text: None,
                usage: Usage::new(4120, 43)
                    .cache_read_tokens(4096)
                    .reasoning_tokens(40),
                uncached_input: 24,
                total: 4163,
            },
        ],
        // A failure goes in the `error` key of the function response.
        failed_results: Tail {
            list: "/contents",
            from: 2,
            messages: vec![json!({
                "role": "user",
                "parts": [
                    { "functionResponse": { "name": "get_weather", "response": { "result": "18°C" } } },
                    { "functionResponse": { "name": "read_file", "response": { "error": FAILURE } } }
                ]
            })],
        },
        big_call: |arguments| {
            let args: Value = serde_json::from_str(arguments).expect("JSON arguments");
            let response = json!({ "candidates": [{ "content": { "role": "model", "parts": [
                    { "functionCall": { "name": "write_file", "args": args } }] },
                "finishReason": "STOP", "index": 0 }], "modelVersion": "gemini-2.5-flash" });
            format!("data: {response}\r\n\r\n")
        },
    }
}

/// Ollama's native `/api/chat`.
pub(crate) fn ollama() -> Wire {
    Wire {
        provider: Provider::Ollama,
        connect: |server, setup| {
            let mut config = OllamaConfig::default();
            let base_url = server.url().to_owned();
            setup.apply(&mut config.endpoint, base_url, "llama3.2", "ol-test");
            Ok(Box::new(OllamaClient::new(config)?))
        },
        streamed: Reply::ndjson,
        key: Key {
            header: "authorization",
            value: "Bearer ol-test",
            required: None,
        },
        text: Text {
            recording: recording!("ollama/text.ndjson"),
            text: "The capital of France is Paris.",
            usage: Usage::new(169, 15),
            sent: Sent {
                uri: "/api/chat",
                headers: vec![
                    ("authorization", Some("Bearer ol-test")),
                    ("accept", Some("*/*")),
                ],
                body: vec![
                    ("/model", json!("llama3.2")),
                    ("/stream", json!(true)),
                    (
                        "/messages",
                        json!([
                            { "role": "system", "content": "You are terse." },
                            { "role": "user", "content": QUESTION }
                        ]),
                    ),
                ],
                absent: vec![],
            },
        },
        // Arguments come as an object, and the call has no id: one is made up.
        tool_call: Calls {
            recording: recording!("ollama/tool_call.ndjson"),
            text: "",
            calls: vec![Call {
                id: None,
                name: "get_weather",
                arguments: r#"{"city":"Tokyo"}"#,
                metadata: None,
            }],
            usage: Some(Usage::new(169, 15)),
        },
        // Both calls in one line.
        parallel_calls: Calls {
            recording: recording!("ollama/parallel_calls.ndjson"),
            text: "",
            calls: vec![
                Call {
                    id: None,
                    name: "read_file",
                    arguments: r#"{"path":"notes/\"draft\".txt"}"#,
                    metadata: None,
                },
                Call {
                    id: None,
                    name: "search",
                    // The object's text as the server wrote it, key order kept.
                    arguments: r#"{"query":"café","limit":3}"#,
                    metadata: None,
                },
            ],
            usage: Some(Usage::new(169, 15)),
        },
        // The result goes back with the tool's name.
        multi_step: MultiStep {
            call: recording!("ollama/tool_call.ndjson"),
            answer: recording!("ollama/final_answer.ndjson"),
            text: "It is 18°C in Tokyo.",
            sent: Tail {
                list: "/messages",
                from: 2,
                messages: vec![
                    json!({
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{ "function": {
                            "name": "get_weather", "arguments": { "city": "Tokyo" }
                        } }]
                    }),
                    json!({
                        "role": "tool", "content": "result of get_weather",
                        "tool_name": "get_weather"
                    }),
                ],
            },
        },
        // No `done: true` line.
        truncated: Truncated {
            recording: recording!("ollama/truncated.ndjson"),
            text: "Once upon a time",
            bytes: 334,
            events: 2,
        },
        // An `{"error": ...}` line after a 200 status.
        stream_errors: vec![StreamError {
            recording: recording!("ollama/error_after_200.ndjson"),
            text: "Yes.",
            code: None,
            message: "an error was encountered while running the model",
        }],
        busy: Busy {
            status: 503,
            body: br#"{"error":"server busy, please try again"}"#,
            message: "server busy, please try again",
        },
        rejected: Rejected {
            status: 404,
            body: recording!("ollama/error_model_not_found.json"),
            code: None,
            message: "model \"llama9\" not found, try pulling it first",
        },
        whole: vec![Whole {
            recording: recording!("ollama/chat_tool_call.json"),
            text: "",
            calls: vec![Call {
                id: None,
                name: "get_current_weather",
                // The object's text as the recording has it, indentation included.
                arguments: "{\n            \"format\": \"celsius\",\n            \"location\": \"Paris, FR\"\n          }",
                metadata: None,
            }],
            finish: FinishReason::ToolCalls,
            usage: Some(Usage::new(122, 33)),
        }],
        whole_request: Sent {
            uri: "/api/chat",
            headers: vec![("accept", Some("*/*"))],
            body: vec![("/stream", json!(false))],
            absent: vec![],
        },
        finishes: vec![Finish {
            recording: recording!("ollama/length.ndjson"),
            text: "A very long answer",
            finish: FinishReason::Length,
        }],
        usage: vec![
            Counted {
                recording: recording!("ollama/text.ndjson"),
                streamed: true,
                text: Some("The capital of France is Paris."),
                usage: Usage::new(169, 15),
                uncached_input: 169,
                total: 184,
            },
            Counted {
                recording: recording!("ollama/chat_tool_call.json"),
                streamed: false,
                text: None,
                usage: Usage::new(122, 33),
                uncached_input: 122,
                total: 155,
            },
        ],
        // A tool message has no error flag: the failure is the content alone.
        failed_results: Tail {
            list: "/messages",
            from: 3,
            messages: vec![
                json!({ "role": "tool", "content": "18°C", "tool_name": "get_weather" }),
                json!({ "role": "tool", "content": FAILURE, "tool_name": "read_file" }),
            ],
        },
        big_call: |arguments| {
            let args: Value = serde_json::from_str(arguments).expect("JSON arguments");
            let line = |message: Value, done: bool| {
                let mut line = json!({ "model": "llama3.2", "created_at": "2025-07-07T20:22:19Z",
                    "message": message, "done": done });
                if done {
                    line["done_reason"] = json!("stop");
                }
                format!("{line}\n")
            };
            line(
                json!({ "role": "assistant", "content": "", "tool_calls": [
                    { "function": { "name": "write_file", "arguments": args } }] }),
                false,
            ) + &line(json!({ "role": "assistant", "content": "" }), true)
        },
    }
}

/// The error text of the failed call in `provider_scenarios::one_ok_one_failed`.
pub(crate) const FAILURE: &str = "Error executing read_file: missing.txt does not exist";

/// The id of the responses in the Responses transcripts.
const RESPONSE_ID: &str = "resp_67ccd2bed1ec8190b14f964abc054267";

/// What the Responses client keeps with a call: the call item's id and the response's id.
fn kept(item_id: &str) -> Option<Value> {
    Some(json!({ "openai_responses": { "id": item_id, "response_id": RESPONSE_ID } }))
}

/// OpenAI Responses (`tests/transcripts/responses/`).
pub(crate) fn responses() -> Wire {
    Wire {
        provider: Provider::OpenAi,
        connect: |server, setup| {
            let mut config = ResponsesConfig::default();
            let base_url = format!("{}/v1", server.url());
            setup.apply(&mut config.endpoint, base_url, "gpt-4o-mini", "sk-test");
            Ok(Box::new(ResponsesClient::new(config)?))
        },
        streamed: Reply::sse,
        key: Key {
            header: "authorization",
            value: "Bearer sk-test",
            required: None,
        },
        text: Text {
            recording: recording!("responses/text.sse"),
            text: "The capital of France is Paris.",
            usage: Usage::new(21, 8),
            sent: Sent {
                uri: "/v1/responses",
                headers: vec![
                    ("authorization", Some("Bearer sk-test")),
                    ("accept", Some("text/event-stream")),
                ],
                body: vec![
                    ("/model", json!("gpt-4o-mini")),
                    ("/stream", json!(true)),
                    ("/store", json!(false)),
                    ("/instructions", json!("You are terse.")),
                    (
                        "/input",
                        json!([{ "type": "message", "role": "user", "content": QUESTION }]),
                    ),
                ],
                // Not a reasoning model: no encrypted reasoning asked for.
                absent: vec!["/include", "/previous_response_id", "/messages"],
            },
        },
        tool_call: Calls {
            recording: recording!("responses/tool_call.sse"),
            text: "",
            calls: vec![Call {
                id: Some("call_w3aTq1"),
                name: "get_weather",
                arguments: r#"{"city": "Paris", "unit": "celsius"}"#,
                metadata: kept("fc_67ccd2c0a5f88190b4a1ea3ef3d2c1a3"),
            }],
            usage: Some(Usage::new(64, 19)),
        },
        parallel_calls: Calls {
            recording: recording!("responses/parallel_tool_calls.sse"),
            text: "",
            calls: vec![
                Call {
                    id: Some("call_p0"),
                    name: "read_file",
                    arguments: r#"{"path": "notes/\"draft\".txt"}"#,
                    metadata: kept("fc_67ccd2c1b0048190a3d5f0b2e9e7a001"),
                },
                Call {
                    id: Some("call_p1"),
                    name: "search",
                    arguments: r#"{"query": "caf\u00e9 near \"Gare du Nord\""}"#,
                    metadata: kept("fc_67ccd2c1b0048190a3d5f0b2e9e7a002"),
                },
            ],
            usage: Some(Usage::new(88, 41)),
        },
        multi_step: MultiStep {
            call: recording!("responses/tool_call.sse"),
            answer: recording!("responses/final_answer.sse"),
            text: "It is 18°C in Paris.",
            sent: Tail {
                list: "/input",
                from: 1,
                messages: vec![
                    // No reasoning came with the call, so its item id is not sent either.
                    json!({
                        "type": "function_call",
                        "call_id": "call_w3aTq1",
                        "name": "get_weather",
                        "arguments": r#"{"city": "Paris", "unit": "celsius"}"#
                    }),
                    json!({
                        "type": "function_call_output", "call_id": "call_w3aTq1",
                        "output": "result of get_weather"
                    }),
                ],
            },
        },
        truncated: Truncated {
            recording: recording!("responses/truncated.sse"),
            text: "Let me think",
            bytes: 2317,
            events: 7,
        },
        stream_errors: vec![
            StreamError {
                recording: recording!("responses/error_mid_stream.sse"),
                text: "Partial",
                code: Some("server_error"),
                message: "The server had an error while processing your request. Sorry about that!",
            },
            StreamError {
                recording: recording!("responses/failed.sse"),
                text: "",
                code: Some("rate_limit_exceeded"),
                message: "Request too large for gpt-4o-mini in organization org-test on tokens per \
                          min (TPM): Limit 30000, Requested 41250.",
            },
        ],
        // The Responses API reports errors as Chat Completions does.
        busy: Busy {
            status: 429,
            body: recording!("openai/error_rate_limit.json"),
            message: "Rate limit reached for gpt-4o-mini in organization org-test on requests per \
                      min (RPM): Limit 3, Used 3, Requested 1.",
        },
        rejected: Rejected {
            status: 401,
            body: recording!("openai/error_invalid_key.json"),
            code: Some("invalid_api_key"),
            message: "Incorrect API key provided: sk-test. You can find your API key at \
                      https://platform.openai.com/account/api-keys.",
        },
        whole: vec![
            Whole {
                recording: recording!("responses/response_tool_call.json"),
                text: "",
                calls: vec![Call {
                    id: Some("call_n1"),
                    name: "get_weather",
                    arguments: r#"{"city":"Lyon"}"#,
                    metadata: Some(json!({ "openai_responses": {
                        "id": "fc_67ccd2cdd8508190ab1c27faee1d300c",
                        "response_id": "resp_67ccd2cdd3f08190a6b8e2b2d2c1d00c"
                    } })),
                }],
                finish: FinishReason::ToolCalls,
                usage: Some(Usage::new(70, 15)),
            },
            Whole {
                recording: recording!("responses/response_text.json"),
                text: "Hello there!",
                calls: vec![],
                finish: FinishReason::Stop,
                usage: Some(Usage::new(9, 3)),
            },
            Whole {
                recording: recording!("responses/response_incomplete.json"),
                text: "The answer is",
                calls: vec![],
                finish: FinishReason::Length,
                usage: Some(Usage::new(30, 3)),
            },
        ],
        whole_request: Sent {
            uri: "/v1/responses",
            headers: vec![("accept", Some("*/*"))],
            body: vec![("/stream", json!(false)), ("/store", json!(false))],
            absent: vec!["/include"],
        },
        finishes: vec![
            Finish {
                recording: recording!("responses/incomplete.sse"),
                text: "The answer is",
                finish: FinishReason::Length,
            },
            Finish {
                recording: recording!("responses/content_filter.sse"),
                text: "Here is",
                finish: FinishReason::ContentFilter,
            },
            Finish {
                recording: recording!("responses/refusal.sse"),
                text: "I can't help with that.",
                finish: FinishReason::ContentFilter,
            },
        ],
        usage: vec![
            // `input_tokens` already includes the cached tokens, and `output_tokens` the
            // reasoning tokens.
            Counted {
                recording: recording!("responses/cached_reasoning.sse"),
                streamed: true,
                text: Some("Paris."),
                usage: Usage::new(1250, 340)
                    .cache_read_tokens(1152)
                    .reasoning_tokens(256),
                uncached_input: 98,
                total: 1590,
            },
            Counted {
                recording: recording!("responses/response_cached_reasoning.json"),
                streamed: false,
                text: None,
                usage: Usage::new(2006, 150)
                    .cache_read_tokens(1920)
                    .reasoning_tokens(128),
                uncached_input: 86,
                total: 2156,
            },
        ],
        // A `function_call_output` has no error flag: the failure is the output alone.
        failed_results: Tail {
            list: "/input",
            from: 3,
            messages: vec![
                json!({ "type": "function_call_output", "call_id": "call_1", "output": "18°C" }),
                json!({ "type": "function_call_output", "call_id": "call_2", "output": FAILURE }),
            ],
        },
        big_call: |arguments| {
            let event = |data: Value| {
                let kind = data["type"].as_str().unwrap_or_default().to_owned();
                format!("event: {kind}\ndata: {data}\n\n")
            };
            let item = |arguments: &str, status: &str| {
                json!({ "id": "fc_big", "type": "function_call", "status": status,
                        "arguments": arguments, "call_id": "call_big", "name": "write_file" })
            };
            event(
                json!({ "type": "response.output_item.added", "output_index": 0,
                          "item": item("", "in_progress") }),
            ) + &event(json!({ "type": "response.function_call_arguments.delta",
                                 "item_id": "fc_big", "output_index": 0, "delta": arguments }))
                + &event(json!({ "type": "response.function_call_arguments.done",
                                 "item_id": "fc_big", "output_index": 0, "arguments": arguments }))
                + &event(
                    json!({ "type": "response.output_item.done", "output_index": 0,
                                 "item": item(arguments, "completed") }),
                )
                + &event(json!({ "type": "response.completed", "response": {
                    "id": "resp_big", "status": "completed", "output": [item(arguments, "completed")],
                    "usage": { "input_tokens": 10, "output_tokens": 10 } } }))
        },
    }
}
