//! Provider-native tool search, over real HTTP on the loopback server: Anthropic's tool search
//! tool (deferred tools sent with `defer_loading`, the search tool in the place of
//! `search_tools`, the beta header, `server_tool_use` and `tool_search_tool_result` blocks read
//! and sent back) and OpenAI Responses' hosted `tool_search` (`tool_search_call` and
//! `tool_search_output` items); the loaded set they leave, carried to another wire; and the
//! option that keeps the local search everywhere.
//!
//! The transcripts follow Anthropic's tool search tool documentation
//! (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool>: the
//! request's `tools`, the `anthropic-beta: advanced-tool-use-2025-11-20` header, and the
//! response's `server_tool_use` / `tool_search_tool_result` blocks with a
//! `tool_search_tool_search_result` of `tool_reference`s, streamed as content blocks like any
//! other) and OpenAI's (<https://developers.openai.com/api/docs/guides/tools-tool-search>:
//! `{"type": "tool_search"}` beside functions with `"defer_loading": true`, and the
//! `tool_search_call` / `tool_search_output` output items of a hosted search).

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{
    Agent, AgentEvent, AgentOptions, Provider, ToolRegistry,
    model::{ChatModel, NativeSearch, ScriptedModel, ScriptedResponse, ToolChoice},
};

use crate::{
    loopback::{Reply, Server},
    tool_search::{names, registry, result_of},
    tool_search_support::{
        DEFERRED, anthropic, first_tools, fresh_context, input_kinds, offered, responses, run,
        tool_names, tools_text, transcript, weather_found, weather_turn,
    },
};

#[tokio::test]
async fn anthropic_native_search_sends_deferred_tools_and_replays_the_search_blocks() {
    for (streamed, search, reply, search_tool, query) in [
        (
            true,
            NativeSearch::Bm25,
            Reply::sse(transcript!("anthropic/tool_search.sse")),
            json!({ "type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25" }),
            "weather forecast",
        ),
        (
            false,
            NativeSearch::Regex,
            Reply::json(transcript!("anthropic/message_tool_search.json")),
            json!({ "type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex" }),
            "weather",
        ),
    ] {
        let final_answer = if streamed {
            Reply::sse(transcript!("anthropic/final_answer.sse"))
        } else {
            Reply::json(transcript!("anthropic/message_cache_write.json"))
        };
        let server = Server::start(vec![reply, final_answer]).await;
        let registry = registry();
        let agent = Agent::with_model(
            anthropic(&server),
            AgentOptions::new()
                .registry(registry.clone())
                .native_search(search),
        );
        let events = run(&agent, "Weather in Paris?", streamed).await;

        let requests = server.requests();
        assert_eq!(requests.len(), 2, "streamed={streamed}");
        // The first request: the eager tool, Anthropic's search tool in the place of
        // `search_tools`, every deferred tool marked `defer_loading`, and the beta header.
        let first = requests[0].json();
        assert_eq!(
            first["tools"],
            first_tools(&registry, Provider::Anthropic, search_tool.clone()),
            "streamed={streamed}"
        );
        assert_eq!(
            requests[0].header("anthropic-beta"),
            Some("advanced-tool-use-2025-11-20")
        );

        // The search loaded the tool it referenced, and the call that followed ran.
        assert_eq!(agent.loaded_tools(), ["weather_forecast"]);
        let call = if streamed { "toolu_01F" } else { "toolu_01G" };
        assert_eq!(result_of(&agent, call), "sunny in Paris");
        if streamed {
            assert!(events.contains(&weather_found(query)), "{events:?}");
            assert!(
                !events
                    .iter()
                    .any(|event| matches!(event, AgentEvent::DeferredToolCalled { .. })),
                "a tool the search loaded is not an unsearched call"
            );
        }

        // The follow-up: the same tools, byte for byte, the loaded tool still deferred (the
        // search's reference in the history loads it); and the assistant message sends the
        // search's blocks back before the call.
        let second = requests[1].json();
        assert_eq!(tools_text(&requests[1]), tools_text(&requests[0]));
        let server_id = if streamed {
            "srvtoolu_01S"
        } else {
            "srvtoolu_01R"
        };
        let search_name = search_tool["name"].clone();
        assert_eq!(
            second["messages"][1],
            json!({
                "role": "assistant",
                "content": [
                    { "type": "text", "text": "Let me find a weather tool." },
                    {
                        "type": "server_tool_use",
                        "id": server_id,
                        "name": search_name,
                        "input": { "query": query },
                    },
                    {
                        "type": "tool_search_tool_result",
                        "tool_use_id": server_id,
                        "content": {
                            "type": "tool_search_tool_search_result",
                            "tool_references": [
                                { "type": "tool_reference", "tool_name": "weather_forecast" }
                            ],
                        },
                    },
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "weather_forecast",
                        "input": { "city": "Paris" },
                    },
                ],
            })
        );
        assert_eq!(
            second["messages"][2]["content"][0]["tool_use_id"],
            json!(call)
        );
        assert_eq!(
            requests[1].header("anthropic-beta"),
            Some("advanced-tool-use-2025-11-20")
        );
    }
}

#[tokio::test]
async fn responses_hosted_tool_search_sends_deferred_functions_and_replays_the_items() {
    for (streamed, reply) in [
        (true, Reply::sse(transcript!("responses/tool_search.sse"))),
        (
            false,
            Reply::json(transcript!("responses/response_tool_search.json")),
        ),
    ] {
        let final_answer = if streamed {
            Reply::sse(transcript!("responses/final_answer.sse"))
        } else {
            Reply::json(transcript!("responses/response_text.json"))
        };
        let server = Server::start(vec![reply, final_answer]).await;
        let registry = registry();
        let agent = Agent::with_model(
            responses(&server),
            AgentOptions::new().registry(registry.clone()),
        );
        let events = run(&agent, "Weather in Paris?", streamed).await;

        let requests = server.requests();
        assert_eq!(requests.len(), 2, "streamed={streamed}");
        let first = requests[0].json();
        assert_eq!(
            first["tools"],
            first_tools(
                &registry,
                Provider::OpenAi,
                json!({ "type": "tool_search" })
            ),
            "streamed={streamed}"
        );

        assert_eq!(agent.loaded_tools(), ["weather_forecast"]);
        assert_eq!(result_of(&agent, "call_f0r3"), "sunny in Paris");
        if streamed {
            assert!(
                events.contains(&weather_found("weather forecast")),
                "{events:?}"
            );
        }

        // The same tools, byte for byte: the search's output in the history loads the tool.
        let second = requests[1].json();
        assert_eq!(tools_text(&requests[1]), tools_text(&requests[0]));
        // The search's items go back verbatim before the call, then the call's output.
        let recorded: Value = if streamed {
            let body = std::str::from_utf8(transcript!("responses/tool_search.sse")).unwrap();
            let completed = body
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("data: "))
                .unwrap();
            serde_json::from_str::<Value>(completed).unwrap()["response"].clone()
        } else {
            serde_json::from_slice(transcript!("responses/response_tool_search.json")).unwrap()
        };
        let input = second["input"].as_array().unwrap();
        assert_eq!(
            input_kinds(&second),
            [
                "message",
                "tool_search_call",
                "tool_search_output",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(input[1], recorded["output"][0]);
        assert_eq!(input[2], recorded["output"][1]);
        assert_eq!(input[3]["call_id"], "call_f0r3");
        assert_eq!(input[4]["output"], "sunny in Paris");
    }
}

#[tokio::test]
async fn tools_a_native_search_loaded_stay_loaded_on_another_wire() {
    let context = fresh_context();
    let (agent, _server) = weather_turn(
        anthropic,
        vec![
            Reply::json(transcript!("anthropic/message_tool_search.json")),
            Reply::json(transcript!("anthropic/message_cache_write.json")),
        ],
        AgentOptions::new().context(context.clone()),
    )
    .await;
    assert_eq!(agent.loaded_tools(), ["weather_forecast"]);

    // The same conversation goes on with a model without a native search: the local search
    // tool, and the tool Anthropic's search loaded, offered in full.
    let model = ScriptedModel::new([ScriptedResponse::text("Sunny.")]);
    let next = Agent::new(
        model.clone(),
        AgentOptions::new()
            .registry(agent.registry().clone())
            .context(context),
    );
    next.chat("And tomorrow?").await.unwrap();
    assert_eq!(
        names(&model.requests()[0]),
        ["get_time", "search_tools", "weather_forecast"]
    );
}

#[tokio::test]
async fn native_search_off_keeps_the_local_search_tool_on_every_wire() {
    for (model, header) in [("anthropic", true), ("responses", false)] {
        let reply = if header {
            Reply::json(transcript!("anthropic/message_cache_write.json"))
        } else {
            Reply::json(transcript!("responses/response_text.json"))
        };
        let server = Server::start(vec![reply]).await;
        let client = if header {
            anthropic(&server)
        } else {
            responses(&server)
        };
        let agent = Agent::with_model(
            client,
            AgentOptions::new()
                .registry(registry())
                .native_search(NativeSearch::Off),
        );
        run(&agent, "hello", false).await;
        let requests = server.requests();
        let body = requests[0].json();
        assert_eq!(tool_names(&body), ["get_time", "search_tools"], "{model}");
        assert!(!body.to_string().contains("defer_loading"), "{model}");
        assert_eq!(requests[0].header("anthropic-beta"), None, "{model}");
    }
}

#[tokio::test]
async fn a_switched_off_tool_is_not_sent_for_the_native_search_either() {
    let server = Server::start(vec![Reply::json(transcript!(
        "anthropic/message_cache_write.json"
    ))])
    .await;
    let toggles = tool_core::ToolToggles::new();
    toggles.set("send_email", false);
    let agent = Agent::with_model(
        anthropic(&server),
        AgentOptions::new().registry(registry()).toggles(toggles),
    );
    run(&agent, "hello", false).await;
    let body = server.requests()[0].json();
    let tools: Vec<(&str, bool)> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap(),
                tool["defer_loading"] == json!(true),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("get_time", false),
            ("tool_search_tool_bm25", false),
            ("create_directory", true),
            ("weather_forecast", true),
            ("translate_text", true),
        ]
    );
}

#[tokio::test]
async fn without_the_native_search_a_hosted_search_s_items_are_not_sent_back() {
    let context = fresh_context();
    let (agent, server) = weather_turn(
        responses,
        vec![
            Reply::json(transcript!("responses/response_tool_search.json")),
            Reply::json(transcript!("responses/response_text.json")),
            Reply::json(transcript!("responses/response_text.json")),
        ],
        AgentOptions::new().context(context.clone()),
    )
    .await;

    // The same conversation with the local search: no `tool_search` tool, so none of its
    // items either; the call and its output stay.
    let local = Agent::with_model(
        responses(&server),
        AgentOptions::new()
            .registry(agent.registry().clone())
            .context(context)
            .native_search(NativeSearch::Off),
    );
    run(&local, "And tomorrow?", false).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        input_kinds(&requests[1].json())[1..3],
        ["tool_search_call", "tool_search_output"]
    );
    let third = requests[2].json();
    assert_eq!(
        input_kinds(&third),
        [
            "message",
            "function_call",
            "function_call_output",
            "message",
            "message"
        ]
    );
    assert_eq!(
        tool_names(&third),
        ["get_time", "search_tools", "weather_forecast"]
    );
}

/// A native search the model followed with text alone (no call to keep its blocks with) is
/// still part of the conversation: the next request sends it back in its place, on both wires,
/// streamed or not.
#[tokio::test]
async fn a_native_search_followed_by_text_alone_is_sent_back_in_the_next_request() {
    for (streamed, reply, server_id) in [
        (
            false,
            Reply::json(transcript!("anthropic/message_tool_search_then_text.json")),
            "srvtoolu_01T",
        ),
        (
            true,
            Reply::sse(transcript!("anthropic/tool_search_then_text.sse")),
            "srvtoolu_01V",
        ),
    ] {
        let final_answer = if streamed {
            Reply::sse(transcript!("anthropic/final_answer.sse"))
        } else {
            Reply::json(transcript!("anthropic/message_cache_write.json"))
        };
        let server = Server::start(vec![reply, final_answer]).await;
        let agent = Agent::with_model(anthropic(&server), AgentOptions::new().registry(registry()));
        let events = run(&agent, "Stock prices?", streamed).await;
        if streamed {
            assert!(
                events.contains(&AgentEvent::ToolSearch {
                    query: "stock prices".to_owned(),
                    matches: Vec::new(),
                    loaded: Vec::new(),
                }),
                "{events:?}"
            );
        }
        run(&agent, "Thanks.", streamed).await;
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "streamed={streamed}");
        let second = requests[1].json();
        assert_eq!(
            second["messages"][1],
            json!({
                "role": "assistant",
                "content": [
                    { "type": "text", "text": "Let me look for a tool." },
                    {
                        "type": "server_tool_use",
                        "id": server_id,
                        "name": "tool_search_tool_bm25",
                        "input": { "query": "stock prices" },
                    },
                    {
                        "type": "tool_search_tool_result",
                        "tool_use_id": server_id,
                        "content": {
                            "type": "tool_search_tool_search_result",
                            "tool_references": [],
                        },
                    },
                    { "type": "text", "text": " No tool gives stock prices." },
                ],
            }),
            "streamed={streamed}"
        );
        assert_eq!(
            second["messages"][2],
            json!({ "role": "user", "content": [{ "type": "text", "text": "Thanks." }] })
        );
    }

    // OpenAI Responses: the hosted search's items and the message after them go back as they
    // came.
    let server = Server::start(vec![
        Reply::json(transcript!("responses/response_tool_search_then_text.json")),
        Reply::json(transcript!("responses/response_text.json")),
    ])
    .await;
    let agent = Agent::with_model(responses(&server), AgentOptions::new().registry(registry()));
    run(&agent, "Stock prices?", false).await;
    run(&agent, "Thanks.", false).await;
    let requests = server.requests();
    let recorded: Value =
        serde_json::from_slice(transcript!("responses/response_tool_search_then_text.json"))
            .unwrap();
    let input = requests[1].json()["input"].as_array().unwrap().clone();
    assert_eq!(input.len(), 5, "{input:?}");
    assert_eq!(input[1..4], recorded["output"].as_array().unwrap()[..]);
    assert_eq!(input[4]["content"], "Thanks.");
}

/// A wire with a native search, the provider whose format its tools take, and the
/// replies to a deferred tool's call without a search and to its result.
struct NativeWire {
    name: &'static str,
    model: fn(&Server) -> Arc<dyn ChatModel>,
    provider: Provider,
    call: &'static [u8],
    answer: &'static [u8],
}

const NATIVE_WIRES: [NativeWire; 2] = [
    NativeWire {
        name: "anthropic",
        model: anthropic,
        provider: Provider::Anthropic,
        call: transcript!("anthropic/message_weather_call.json"),
        answer: transcript!("anthropic/message_cache_write.json"),
    },
    NativeWire {
        name: "responses",
        model: responses,
        provider: Provider::OpenAi,
        call: transcript!("responses/response_weather_call.json"),
        answer: transcript!("responses/response_text.json"),
    },
];

impl NativeWire {
    /// The call of a deferred tool without a search and its answer replayed on this wire (see
    /// [`weather_turn`]).
    async fn weather_turn(&self, options: AgentOptions) -> (Agent, Server) {
        weather_turn(
            self.model,
            vec![Reply::json(self.call), Reply::json(self.answer)],
            options,
        )
        .await
    }

    /// The deferred tools as this wire sends them once `weather_forecast` is offered in full:
    /// that tool in full, then the others, still deferred.
    fn weather_in_full(&self, registry: &ToolRegistry) -> Vec<Value> {
        let mut tools = offered(registry, self.provider, &["weather_forecast"], false);
        tools.extend(offered(
            registry,
            self.provider,
            &["create_directory", "send_email", "translate_text"],
            true,
        ));
        tools
    }
}

#[tokio::test]
async fn a_deferred_tool_called_without_a_search_is_sent_in_full_after_the_offered_tools() {
    // Nothing in the history references the tool: kept deferred, the provider could not load
    // it, and would refuse the call in the history.
    for wire in &NATIVE_WIRES {
        for search in [NativeSearch::Bm25, NativeSearch::Client] {
            let (agent, server) = wire
                .weather_turn(AgentOptions::new().native_search(search))
                .await;
            let registry = agent.registry();
            let label = format!("{} {search:?}", wire.name);

            assert_eq!(agent.loaded_tools(), ["weather_forecast"], "{label}");
            let requests = server.requests();
            assert_eq!(requests.len(), 2, "{label}");
            let (first, second) = (requests[0].json(), requests[1].json());
            let first_tools = first["tools"].as_array().unwrap();
            // The first request: the eager tool, the search tool, every deferred tool deferred.
            assert_eq!(
                first_tools[2..],
                offered(registry, wire.provider, &DEFERRED, true)[..],
                "{label}"
            );
            // The next: the same eager and search tools, then the called tool in full, then
            // the other deferred tools, still deferred.
            let mut expected = first_tools[..2].to_vec();
            expected.extend(wire.weather_in_full(registry));
            assert_eq!(second["tools"], Value::Array(expected), "{label}");
            // The conversation sent before is sent again as it was, the call and its result
            // after it.
            let history = if wire.provider == Provider::OpenAi {
                "input"
            } else {
                "messages"
            };
            let before = first[history].as_array().unwrap();
            let after = second[history].as_array().unwrap();
            assert_eq!(after[..before.len()], before[..], "{label}");
            assert_eq!(after.len(), before.len() + 2, "{label}");
        }
    }
}

#[tokio::test]
async fn a_deferred_tool_a_tool_choice_forces_is_sent_in_full_on_a_native_wire() {
    for wire in &NATIVE_WIRES {
        for search in [NativeSearch::Bm25, NativeSearch::Client] {
            let (agent, server) = wire
                .weather_turn(
                    AgentOptions::new()
                        .native_search(search)
                        .tool_choice(ToolChoice::Tool("weather_forecast".to_owned())),
                )
                .await;
            let registry = agent.registry();
            let label = format!("{} {search:?}", wire.name);

            let requests = server.requests();
            assert_eq!(requests.len(), 2, "{label}");
            let first = requests[0].json();
            assert_eq!(first["tool_choice"]["name"], "weather_forecast", "{label}");
            let tools = first["tools"].as_array().unwrap();
            assert_eq!(
                tools[1..],
                {
                    let mut expected = vec![tools[1].clone()];
                    expected.extend(wire.weather_in_full(registry));
                    expected
                }[..],
                "{label}"
            );
            assert_eq!(
                tools[0],
                offered(registry, wire.provider, &["get_time"], false)[0],
                "{label}"
            );
            // Still unreferenced on the next step: the same tools, byte for byte.
            assert_eq!(
                tools_text(&requests[1]),
                tools_text(&requests[0]),
                "{label}"
            );
        }
    }
}
