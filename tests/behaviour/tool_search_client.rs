//! The providers' client-side search forms (`NativeSearch::Client`), over real HTTP on the
//! loopback server: the agent's own search ranks, and the provider loads what it found.
//!
//! Anthropic (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool>,
//! "custom tool search implementation"): the deferred tools go with `"defer_loading": true`
//! beside `search_tools`, under the `advanced-tool-use-2025-11-20` beta, and the result of a
//! `search_tools` call is a `tool_result` whose content is `tool_reference` blocks. OpenAI
//! Responses (<https://developers.openai.com/api/docs/guides/tools-tool-search>, "client-executed
//! tool search"): `{"type": "tool_search", "execution": "client", "description", "parameters"}`
//! in the place of `search_tools`; the model's `tool_search_call` item is run as a call of
//! `search_tools`, and answered with a `tool_search_output` item holding the found tools'
//! definitions. The conversation keeps the found tools as typed references, so it is saved and
//! resumed whole, and read as plain text on the wires without such a form.

use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{
    Agent, AgentOptions, Provider, ToolContext,
    context::SavedConversation,
    model::{Message, NativeSearch},
    store::ConversationKey,
};

use crate::{
    loopback::{Reply, Server},
    store_support::{Backend, Stores},
    tool_choice::link,
    tool_search::{registry, result_of},
    tool_search_support::{
        anthropic, first_tools, fresh_context, input_kinds, offered, responses, run, tools_text,
        transcript, weather_found, weather_turn,
    },
};

/// What the agent's search answers for "weather forecast" over the test registry.
const LISTING: &str = "Loaded; call them like any other tool:\n- weather_forecast: The weather \
                       forecast for a city.";

/// The agent of a conversation on `context` with the client-side search.
fn client_agent(
    model: std::sync::Arc<dyn tool_core::model::ChatModel>,
    context: ToolContext,
) -> Agent {
    Agent::with_model(
        model,
        AgentOptions::new()
            .registry(registry())
            .context(context)
            .native_search(NativeSearch::Client),
    )
}

/// A conversation of its own with what `context` holds now.
fn fork(context: &ToolContext) -> ToolContext {
    let copy = fresh_context();
    copy.replace(context.session_context());
    copy
}

/// The search result the conversation holds for the call `id`.
fn search_result(agent: &Agent, id: &str) -> Message {
    agent
        .messages()
        .into_iter()
        .find(|message| matches!(message, Message::Tool { tool_call_id, .. } if tool_call_id == id))
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// Runs the Anthropic conversation: `search_tools("weather forecast")`, the forecast call,
/// the answer.
async fn anthropic_conversation(context: ToolContext) -> (Agent, Server) {
    weather_turn(
        anthropic,
        vec![
            Reply::json(transcript!("anthropic/message_search_tools_call.json")),
            Reply::json(transcript!("anthropic/message_weather_call.json")),
            Reply::json(transcript!("anthropic/message_cache_write.json")),
        ],
        AgentOptions::new()
            .context(context)
            .native_search(NativeSearch::Client),
    )
    .await
}

#[tokio::test]
async fn anthropic_client_search_answers_with_tool_references_and_defers_the_rest() {
    let (agent, server) = anthropic_conversation(fresh_context()).await;
    let registry = registry();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);

    // The first request: the eager tool and `search_tools` in full, every deferred tool marked
    // `defer_loading`, no search tool of Anthropic's, and the beta header.
    let first = requests[0].json();
    let search_tools = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "search_tools")
        .expect("search_tools is offered")
        .clone();
    assert_eq!(
        first["tools"],
        first_tools(&registry, Provider::Anthropic, search_tools)
    );
    assert_eq!(
        first["tools"][1]["input_schema"]["required"],
        json!(["query"])
    );
    assert_eq!(
        requests[0].header("anthropic-beta"),
        Some("advanced-tool-use-2025-11-20")
    );

    // The agent's own search ran and loaded the tool; the call that followed ran.
    assert_eq!(agent.loaded_tools(), ["weather_forecast"]);
    assert_eq!(result_of(&agent, "toolu_01C"), LISTING);
    assert_eq!(
        search_result(&agent, "toolu_01C").tool_references(),
        ["weather_forecast"]
    );
    assert_eq!(result_of(&agent, "toolu_01D"), "sunny in Paris");

    // The search's result goes back as references Anthropic expands itself.
    let second = requests[1].json();
    assert_eq!(
        second["messages"][2],
        json!({
            "role": "user",
            "content": [{
                "type": "tool_result",
                "tool_use_id": "toolu_01C",
                "content": [{ "type": "tool_reference", "tool_name": "weather_forecast" }],
            }],
        })
    );
    // The tools stay the same, byte for byte, in every request: the loaded tool stays
    // deferred, loaded by the reference.
    assert_eq!(tools_text(&requests[1]), tools_text(&requests[0]));
    assert_eq!(tools_text(&requests[2]), tools_text(&requests[0]));
    assert_eq!(
        requests[1].header("anthropic-beta"),
        Some("advanced-tool-use-2025-11-20")
    );
    let third = requests[2].json();
    assert_eq!(third["messages"][2], second["messages"][2]);
    assert_eq!(
        third["messages"][4]["content"][0],
        json!({ "type": "tool_result", "tool_use_id": "toolu_01D", "content": "sunny in Paris" })
    );
}

#[tokio::test]
async fn responses_client_tool_search_runs_the_local_search_and_answers_with_its_output() {
    for streamed in [false, true] {
        let replies = if streamed {
            vec![
                Reply::sse(transcript!("responses/client_tool_search.sse")),
                Reply::sse(transcript!("responses/weather_call.sse")),
                Reply::sse(transcript!("responses/final_answer.sse")),
            ]
        } else {
            vec![
                Reply::json(transcript!("responses/response_client_tool_search.json")),
                Reply::json(transcript!("responses/response_weather_call.json")),
                Reply::json(transcript!("responses/response_text.json")),
            ]
        };
        let server = Server::start(replies).await;
        let registry = registry();
        let agent = client_agent(responses(&server), fresh_context());
        let events = run(&agent, "Weather in Paris?", streamed).await;

        let requests = server.requests();
        assert_eq!(requests.len(), 3, "streamed={streamed}");
        // `tool_search` executed by the client, with `search_tools`' description and
        // parameters, in its place; the deferred functions marked `defer_loading`.
        let first = requests[0].json();
        let search = first["tools"][1].clone();
        assert_eq!(search["type"], "tool_search");
        assert_eq!(search["execution"], "client");
        assert!(
            search["description"]
                .as_str()
                .unwrap()
                .starts_with("Find tools that are not loaded yet"),
            "{search}"
        );
        assert_eq!(search["parameters"]["required"], json!(["query"]));
        assert_eq!(
            search["parameters"]["properties"]["query"]["type"],
            "string"
        );
        assert_eq!(search.as_object().unwrap().len(), 4, "{search}");
        assert_eq!(
            first["tools"],
            first_tools(&registry, Provider::OpenAi, search.clone()),
            "streamed={streamed}"
        );

        // The model's `tool_search_call` ran as a call of the local search.
        assert_eq!(agent.loaded_tools(), ["weather_forecast"]);
        assert_eq!(result_of(&agent, "call_s34rch"), LISTING);
        assert_eq!(result_of(&agent, "call_w3ath3r"), "sunny in Paris");
        if streamed {
            assert!(
                events.contains(&weather_found("weather forecast")),
                "{events:?}"
            );
        }

        // The next request: the call item as it came, then the search's output with the found
        // tool's definition; the tools the same, byte for byte, the loaded tool still deferred.
        let recorded: Value =
            serde_json::from_slice(transcript!("responses/response_client_tool_search.json"))
                .unwrap();
        let second = requests[1].json();
        let input = second["input"].as_array().unwrap();
        assert_eq!(input.len(), 3, "{input:?}");
        assert_eq!(input[1], recorded["output"][0]);
        assert_eq!(
            input[2],
            json!({
                "type": "tool_search_output",
                "execution": "client",
                "call_id": "call_s34rch",
                "status": "completed",
                "tools": offered(&registry, Provider::OpenAi, &["weather_forecast"], true),
            })
        );
        assert_eq!(tools_text(&requests[1]), tools_text(&requests[0]));
        assert_eq!(tools_text(&requests[2]), tools_text(&requests[0]));
        let third = requests[2].json();
        assert_eq!(
            input_kinds(&third),
            [
                "message",
                "tool_search_call",
                "tool_search_output",
                "function_call",
                "function_call_output"
            ]
        );
    }
}

/// A conversation with a client-side search's references (and a hosted search followed by
/// text alone) is saved and resumed whole on every store, and the resumed agent's request
/// sends them back exactly as the first agent did.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_conversation_with_search_references_is_saved_and_resumed_on_every_store() {
    let context = fresh_context();
    let (first, first_server) = anthropic_conversation(context.clone()).await;
    // The same conversation goes on with Anthropic's own search, which the model follows with
    // text alone.
    let hosted_server = Server::start(vec![
        Reply::json(transcript!("anthropic/message_tool_search_then_text.json")),
        Reply::json(transcript!("anthropic/message_cache_write.json")),
    ])
    .await;
    let hosted = Agent::with_model(
        anthropic(&hosted_server),
        AgentOptions::new()
            .registry(registry())
            .context(context.clone()),
    );
    run(&hosted, "Stock prices?", false).await;
    run(&hosted, "Thanks.", false).await;
    let sent = hosted_server.requests()[1].json()["messages"].clone();
    assert_eq!(
        sent[2]["content"][0]["content"],
        json!([{ "type": "tool_reference", "tool_name": "weather_forecast" }])
    );
    assert_eq!(sent[7]["content"][1]["type"], "server_tool_use", "{sent}");
    drop((first, first_server));

    for backend in [
        Backend::Memory,
        Backend::File,
        Backend::Sqlite,
        Backend::Postgres,
    ] {
        let Some(stores) = Stores::new(backend).await else {
            continue;
        };
        let key = ConversationKey::new("alice", "weather").unwrap();
        let saved = SavedConversation::new("weather", hosted.conversation());
        stores
            .conversations()
            .await
            .save(&key, &saved)
            .await
            .unwrap();
        let loaded = stores
            .conversations()
            .await
            .load(&key)
            .await
            .unwrap()
            .expect("the conversation is stored");
        assert_eq!(loaded, saved, "{backend:?}");
        let messages = &loaded.context.messages;
        assert!(
            messages
                .iter()
                .any(|message| message.tool_references() == ["weather_forecast"]),
            "{backend:?}"
        );
        assert!(
            messages.iter().any(|message| matches!(
                message,
                Message::Assistant {
                    provider_metadata: Some(_),
                    ..
                }
            )),
            "{backend:?}"
        );

        // A restarted process resumes it: the same request as before the save.
        let server = Server::start(vec![Reply::json(transcript!(
            "anthropic/message_cache_write.json"
        ))])
        .await;
        let resumed =
            Agent::with_model(anthropic(&server), AgentOptions::new().registry(registry()));
        resumed.context().replace(loaded.context);
        assert_eq!(resumed.loaded_tools(), ["weather_forecast"], "{backend:?}");
        run(&resumed, "Thanks.", false).await;
        let resent = server.requests()[0].json()["messages"].clone();
        assert_eq!(
            resent.as_array().unwrap()[..sent.as_array().unwrap().len()],
            sent.as_array().unwrap()[..],
            "{backend:?}"
        );
    }
}

/// Conversations written before these parts existed load unchanged.
#[test]
fn a_conversation_saved_before_the_search_parts_loads() {
    let old = json!({
        "system_prompt": "",
        "messages": [
            { "role": "user", "content": "Weather?" },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{ "id": "c1", "name": "search_tools", "arguments": "{}" }],
            },
            { "role": "tool", "tool_call_id": "c1", "name": "search_tools", "content": "Loaded" },
        ],
    });
    let conversation: tool_core::Conversation = serde_json::from_value(old.clone()).unwrap();
    assert_eq!(
        conversation.messages[2].tool_references(),
        [] as [String; 0]
    );
    assert!(matches!(
        &conversation.messages[1],
        Message::Assistant { provider_metadata: None, tool_calls, .. } if tool_calls.len() == 1
    ));
    // And they are written as they were.
    let written = serde_json::to_value(&conversation.messages).unwrap();
    assert_eq!(written, old["messages"]);
}

/// The references of a search on one wire: references again on a wire with a client-side form,
/// the text listing on every other wire.
#[tokio::test]
async fn search_references_carry_across_a_provider_switch_and_degrade_to_text() {
    // Anthropic first, then the other wires.
    let context = fresh_context();
    anthropic_conversation(context.clone()).await;
    for provider in [Provider::OpenAi, Provider::Gemini, Provider::Ollama] {
        let link = link(provider, false).await;
        let next = Agent::with_model(
            link.model.into(),
            AgentOptions::new()
                .registry(registry())
                .context(fork(&context))
                .native_search(NativeSearch::Client)
                .max_steps(1),
        );
        assert_eq!(next.loaded_tools(), ["weather_forecast"]);
        // The recorded answer may be a call the single step leaves unanswered: only the
        // request matters here.
        let outcome = tokio::time::timeout(Duration::from_secs(20), next.chat("And tomorrow?"))
            .await
            .expect("an answer in time");
        assert!(
            !matches!(outcome, Err(tool_core::AgentError::Model(_))),
            "{provider}: {outcome:?}"
        );
        let body = link.server.requests()[0].json().to_string();
        assert!(!body.contains("tool_reference"), "{provider}: {body}");
        assert!(!body.contains("defer_loading"), "{provider}: {body}");
        let listing = serde_json::to_string(LISTING).unwrap();
        assert!(
            body.contains(listing.trim_matches('"')),
            "{provider}: {body}"
        );
    }
    // OpenAI Responses: the call came as a `tool_use`, so it goes as a function call whose
    // output is the listing.
    let server = Server::start(vec![Reply::json(transcript!(
        "responses/response_text.json"
    ))])
    .await;
    let next = client_agent(responses(&server), fork(&context));
    run(&next, "And tomorrow?", false).await;
    let body = server.requests()[0].json();
    let input = body["input"].as_array().unwrap();
    let output = input
        .iter()
        .find(|item| item["call_id"] == "toolu_01C" && item["type"] == "function_call_output")
        .expect("the search's result");
    assert_eq!(output["output"], LISTING);
    assert!(!body.to_string().contains("tool_search_output"), "{body}");

    // OpenAI Responses first, then Anthropic: the `tool_search_call` is a call of
    // `search_tools`, its result references again.
    let context = fresh_context();
    let server = Server::start(vec![
        Reply::json(transcript!("responses/response_client_tool_search.json")),
        Reply::json(transcript!("responses/response_weather_call.json")),
        Reply::json(transcript!("responses/response_text.json")),
    ])
    .await;
    run(
        &client_agent(responses(&server), context.clone()),
        "Weather in Paris?",
        false,
    )
    .await;
    let server = Server::start(vec![Reply::json(transcript!(
        "anthropic/message_cache_write.json"
    ))])
    .await;
    let next = client_agent(anthropic(&server), context);
    run(&next, "And tomorrow?", false).await;
    let messages = server.requests()[0].json()["messages"].clone();
    assert_eq!(
        messages[1]["content"][0],
        json!({
            "type": "tool_use",
            "id": "call_s34rch",
            "name": "search_tools",
            "input": { "query": "weather forecast" },
        })
    );
    assert_eq!(
        messages[2]["content"][0],
        json!({
            "type": "tool_result",
            "tool_use_id": "call_s34rch",
            "content": [{ "type": "tool_reference", "tool_name": "weather_forecast" }],
        })
    );
}
