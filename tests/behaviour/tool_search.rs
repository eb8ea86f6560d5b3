//! Tool search: deferred tools stay out of requests until the model's `search_tools` call (or
//! a call by name) loads them; loaded tools are appended after those already offered.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentEvent, AgentOptions, ChatTool, ExecutableTool, HandlerTable, JsonObject,
    RegistryOptions, ToolConfig, ToolError, ToolMetadata, ToolRegistry, ToolToggles, async_trait,
    model::{ChatRequest, Message, ScriptedModel, ScriptedResponse, TestModel, ToolChoice},
    tool,
};

/// The current time, as a fixed string.
#[tool]
async fn get_time() -> String {
    "12:00".to_owned()
}

/// Create a new directory, with its parent directories.
#[tool(defer_loading)]
async fn create_directory(
    /// The directory's path.
    path: String,
) -> String {
    format!("created {path}")
}

/// Send an email message to one recipient.
#[tool(defer_loading, title = "Send an email")]
async fn send_email(
    /// The recipient's address.
    recipient: String,
) -> String {
    format!("sent to {recipient}")
}

/// A hand-written tool deferred through its metadata.
struct Forecast;

#[async_trait]
impl ExecutableTool for Forecast {
    fn name(&self) -> &str {
        "weather_forecast"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "weather_forecast",
            "The weather forecast for a city.",
            json!({
                "type": "object",
                "properties": { "city": { "type": "string", "description": "The city." } },
                "required": ["city"]
            }),
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new().defer_loading(true)
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        Ok(format!("sunny in {}", args["city"].as_str().unwrap_or("?")))
    }
}

/// `get_time` eager; `create_directory`, `send_email` (macro), `weather_forecast` (metadata)
/// and `translate_text` (a configuration entry) deferred.
pub(crate) fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(GetTime).unwrap();
    registry.register(CreateDirectory).unwrap();
    registry.register(SendEmail).unwrap();
    registry.register(Forecast).unwrap();
    let config = ToolConfig::from_value(json!({ "tools": [{
        "name": "translate_text",
        "description": "Translate a text into another language.",
        "type": "function",
        "handler": "translate_text",
        "parameters": { "type": "object", "properties": { "text": { "type": "string" } } },
        "implementation": { "type": "mock", "mock_response": "bonjour" },
        "metadata": { "defer_loading": true }
    }]}))
    .unwrap();
    assert!(config.register(&registry, &HandlerTable::new()).is_clean());
    Arc::new(registry)
}

fn agent(model: &ScriptedModel, registry: Arc<ToolRegistry>) -> Agent {
    Agent::new(model.clone(), AgentOptions::new().registry(registry))
}

pub(crate) fn search(id: &str, query: &str) -> ScriptedResponse {
    ScriptedResponse::tool_call(id, "search_tools", json!({ "query": query }).to_string())
}

pub(crate) fn names(request: &ChatRequest) -> Vec<String> {
    request
        .tools
        .names()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The result the conversation holds for the call `id`.
pub(crate) fn result_of(agent: &Agent, id: &str) -> String {
    agent
        .messages()
        .into_iter()
        .find_map(|message| match message {
            Message::Tool {
                tool_call_id,
                content,
                ..
            } if tool_call_id == id => Some(content),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// Runs a streamed turn, bounded in time, and returns its events.
async fn events_of(agent: &Agent, text: &str) -> Vec<AgentEvent> {
    tokio::time::timeout(
        Duration::from_secs(20),
        agent.stream_chat(text).collect::<Vec<_>>(),
    )
    .await
    .expect("the turn ends")
    .into_iter()
    .map(|event| event.expect("the turn succeeds"))
    .collect()
}

#[tokio::test]
async fn each_declaration_defers_a_tool_and_the_search_tool_takes_their_place() {
    let registry = registry();
    for name in [
        "create_directory",
        "send_email",
        "weather_forecast",
        "translate_text",
    ] {
        assert!(registry.is_deferred(name), "{name}");
    }
    assert!(!registry.is_deferred("get_time"));
    let listed: Vec<(String, bool)> = registry
        .list_tools()
        .into_iter()
        .map(|info| (info.name, info.deferred))
        .collect();
    assert_eq!(listed[0], ("get_time".to_owned(), false));
    assert!(listed[1..].iter().all(|(_, deferred)| *deferred));

    let model = ScriptedModel::new([ScriptedResponse::text("It is noon.")]);
    agent(&model, registry).chat("time?").await.unwrap();
    assert_eq!(names(&model.requests()[0]), ["get_time", "search_tools"]);

    // Per registry: every tool deferred, whatever its metadata.
    let registry = ToolRegistry::with_options(RegistryOptions::new().defer_loading(true));
    registry.register(GetTime).unwrap();
    assert!(registry.is_deferred("get_time"));
    let model = ScriptedModel::new([ScriptedResponse::text("I will search.")]);
    agent(&model, Arc::new(registry))
        .chat("time?")
        .await
        .unwrap();
    assert_eq!(names(&model.requests()[0]), ["search_tools"]);

    // Without deferred tools, nothing changes: no search tool.
    let registry = ToolRegistry::new();
    registry.register(GetTime).unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("noon")]);
    agent(&model, Arc::new(registry))
        .chat("time?")
        .await
        .unwrap();
    assert_eq!(names(&model.requests()[0]), ["get_time"]);
}

#[tokio::test]
async fn a_search_loads_the_best_matches_and_answers_in_a_few_lines() {
    let model = ScriptedModel::new([
        search("s1", "make a new directory"),
        ScriptedResponse::tool_call("c1", "create_directory", r#"{"path": "notes"}"#),
        ScriptedResponse::text("Done."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry()).search_results(1),
    );
    let events = events_of(&agent, "make a notes folder").await;

    assert_eq!(
        result_of(&agent, "s1"),
        "Loaded; call them like any other tool:\n\
         - create_directory: Create a new directory, with its parent directories."
    );
    assert_eq!(result_of(&agent, "c1"), "created notes");
    let searches: Vec<&AgentEvent> = events
        .iter()
        .filter(|event| matches!(event, AgentEvent::ToolSearch { .. }))
        .collect();
    assert_eq!(
        searches,
        [&AgentEvent::ToolSearch {
            query: "make a new directory".to_owned(),
            matches: vec!["create_directory".to_owned()],
            loaded: vec!["create_directory".to_owned()],
        }]
    );
    let requests = model.requests();
    assert_eq!(
        names(&requests[1]),
        ["get_time", "search_tools", "create_directory"]
    );
    assert_eq!(agent.loaded_tools(), ["create_directory"]);
    let offered: Vec<String> = agent
        .get_tools()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(offered, ["get_time", "search_tools", "create_directory"]);
}

#[tokio::test]
async fn loaded_tools_are_appended_so_consecutive_requests_share_their_whole_prefix() {
    let model = ScriptedModel::new([
        search("s1", "email"),
        search("s2", "weather forecast city"),
        search("s3", "select:translate_text,create_directory"),
        ScriptedResponse::text("Ready."),
        // A second turn: the loaded tools stay.
        search("s4", "email"),
        ScriptedResponse::text("Still ready."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry()).search_results(1),
    );
    agent.chat("get ready").await.unwrap();
    agent.chat("again").await.unwrap();

    let lists: Vec<Vec<String>> = model.requests().iter().map(names).collect();
    assert_eq!(lists.len(), 6);
    for pair in lists.windows(2) {
        assert!(
            pair[1].starts_with(&pair[0]),
            "{:?} then {:?}",
            pair[0],
            pair[1]
        );
    }
    assert_eq!(
        lists[5],
        [
            "get_time",
            "search_tools",
            "send_email",
            "weather_forecast",
            "translate_text",
            "create_directory"
        ]
    );
    // Searching for a loaded tool again loads nothing new and changes nothing.
    assert_eq!(lists[4], lists[5]);
    assert_eq!(
        result_of(&agent, "s3"),
        "Loaded; call them like any other tool:\n\
         - translate_text: Translate a text into another language.\n\
         - create_directory: Create a new directory, with its parent directories."
    );

    // A new conversation starts with nothing loaded.
    agent.clear_context();
    assert!(agent.loaded_tools().is_empty());
}

#[tokio::test]
async fn a_deferred_tool_called_without_a_search_is_loaded_and_runs() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "weather_forecast", r#"{"city": "Paris"}"#),
        ScriptedResponse::text("Sunny."),
    ]);
    let agent = agent(&model, registry());
    let events = events_of(&agent, "weather in Paris?").await;

    assert_eq!(result_of(&agent, "c1"), "sunny in Paris");
    let called = events
        .iter()
        .position(|event| {
            *event
                == AgentEvent::DeferredToolCalled {
                    id: "c1".to_owned(),
                    name: "weather_forecast".to_owned(),
                }
        })
        .expect("an event says the deferred tool was called");
    let result = events
        .iter()
        .position(|event| matches!(event, AgentEvent::ToolResult { id, .. } if id == "c1"))
        .unwrap();
    assert!(called < result);
    assert_eq!(
        names(&model.requests()[1]),
        ["get_time", "search_tools", "weather_forecast"]
    );
}

#[tokio::test]
async fn an_unknown_tool_is_answered_with_the_tools_that_best_match_its_name() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "create_dir", "{}"),
        ScriptedResponse::text("Sorry."),
    ]);
    let agent = agent(&model, registry());
    agent.chat("make a folder").await.unwrap();
    assert_eq!(
        result_of(&agent, "c1"),
        "Error: tool 'create_dir' not found. Closest tools: create_directory."
    );

    // At most five, the best first, among every enabled tool.
    let registry = crate::tool_search_budget::generated(200);
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "git_commits", "{}"),
        ScriptedResponse::text("Sorry."),
    ]);
    let agent = Agent::new(
        model,
        AgentOptions::new()
            .registry(registry)
            .defer_budget(tool_core::agent::DeferBudget::tools(10)),
    );
    agent.chat("commit").await.unwrap();
    let text = result_of(&agent, "c1");
    let listed = text
        .strip_prefix("Error: tool 'git_commits' not found. Closest tools: ")
        .and_then(|rest| rest.strip_suffix('.'))
        .unwrap_or_else(|| panic!("{text}"));
    let listed: Vec<&str> = listed.split(", ").collect();
    assert_eq!(listed.len(), 5, "{text}");
    assert!(
        listed.iter().all(|name| name.starts_with("git_commit_")),
        "{text}"
    );
}

/// A name that matches no tool gets the tools the model is offered.
#[tokio::test]
async fn an_unknown_tool_is_answered_with_the_eager_tools_not_every_deferred_one() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "book_flight", "{}"),
        ScriptedResponse::text("Sorry."),
    ]);
    let agent = agent(&model, registry());
    agent.chat("book a flight").await.unwrap();
    assert_eq!(
        result_of(&agent, "c1"),
        "Error: tool 'book_flight' not found. Available tools: get_time, search_tools."
    );
}

/// A tool choice that forces a deferred tool loads it, so the request can honour the choice.
#[tokio::test]
async fn a_forced_choice_of_a_deferred_tool_loads_it() {
    let agent = Agent::new(
        TestModel::new(),
        AgentOptions::new()
            .registry(registry())
            .tool_choice(ToolChoice::Tool("weather_forecast".to_owned())),
    );
    let reply = tokio::time::timeout(Duration::from_secs(20), agent.chat("weather?"))
        .await
        .expect("the turn ends")
        .unwrap();
    assert_eq!(reply.tool_calls, 1);
    assert_eq!(agent.loaded_tools(), ["weather_forecast"]);
}

#[tokio::test]
async fn a_switched_off_tool_is_neither_offered_nor_found() {
    let registry = registry();
    assert!(registry.disable("send_email"));
    let toggles = ToolToggles::new();
    toggles.set("weather_forecast", false);
    let model = ScriptedModel::new([
        search("s1", "send an email message"),
        search("s2", "select:send_email,weather_forecast"),
        search("s3", "weather forecast"),
        ScriptedResponse::text("Nothing."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry).toggles(toggles),
    );
    agent.chat("email and weather").await.unwrap();

    assert_eq!(
        result_of(&agent, "s1"),
        "No tool matches \"send an email message\". Try other words, or `select:NAME`."
    );
    assert_eq!(
        result_of(&agent, "s2"),
        "No tool matches \"select:send_email,weather_forecast\". Try other words, or \
         `select:NAME`.\nNo deferred tool is named send_email, weather_forecast."
    );
    assert_eq!(
        result_of(&agent, "s3"),
        "No tool matches \"weather forecast\". Try other words, or `select:NAME`."
    );
    assert!(agent.loaded_tools().is_empty());
    for request in model.requests() {
        let offered = names(&request);
        assert!(
            !offered
                .iter()
                .any(|name| name == "send_email" || name == "weather_forecast")
        );
    }
}

#[tokio::test]
async fn hostile_queries_get_a_clear_answer() {
    let huge = "directory ".repeat(100_000);
    let queries = [
        ("h1", String::new()),
        ("h2", "   \t ".to_owned()),
        ("h3", huge),
        ("h4", "\u{0}\u{7}\u{1b}[2J\u{7f}".to_owned()),
        ("h5", "select:".to_owned()),
        ("h6", "the of and".to_owned()),
    ];
    let mut script: Vec<ScriptedResponse> = queries
        .iter()
        .map(|(id, query)| search(id, query))
        .collect();
    script.push(ScriptedResponse::text("Gave up."));
    let model = ScriptedModel::new(script);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry()).max_steps(10),
    );
    let reply = tokio::time::timeout(Duration::from_secs(20), agent.chat("find"))
        .await
        .expect("the turn ends")
        .unwrap();
    assert_eq!(reply.text, "Gave up.");
    assert_eq!(model.requests().len(), queries.len() + 1);

    let empty = "Error executing search_tools: the query is empty; describe the tool you need in \
                 a few words, or write `select:NAME`";
    let no_words = "Error executing search_tools: the query has no words to look for; describe \
                    the tool you need in a few words";
    assert_eq!(result_of(&agent, "h1"), empty);
    assert_eq!(result_of(&agent, "h2"), empty);
    assert_eq!(
        result_of(&agent, "h3"),
        "Error executing search_tools: the query is 1000000 bytes long, over the limit of 1000; \
         use a few words"
    );
    assert_eq!(result_of(&agent, "h4"), no_words);
    assert_eq!(result_of(&agent, "h5"), empty);
    assert_eq!(result_of(&agent, "h6"), no_words);
    assert!(agent.loaded_tools().is_empty());
}

#[tokio::test]
async fn a_search_index_finds_tools_by_name_parts_title_and_parameters() {
    let registry = registry();
    let index = registry.snapshot().search_index();
    assert_eq!(index.len(), 4);
    assert!(!index.contains("get_time"));
    let top = |query: &str| index.search(query, 1).unwrap().hits[0].name.clone();
    assert_eq!(top("createDirectory"), "create_directory");
    assert_eq!(top("directories"), "create_directory");
    assert_eq!(top("send an email"), "send_email");
    assert_eq!(top("recipient address"), "send_email");
    assert_eq!(top("city"), "weather_forecast");
    assert_eq!(top("translating"), "translate_text");
}

/// The tools of the request each provider client sends over real HTTP with the local search:
/// the eager tool and the search tool, never a deferred definition (Anthropic's native form is
/// in `tool_search_native`).
#[tokio::test]
async fn every_wire_sends_the_search_tool_instead_of_the_deferred_definitions() {
    for provider in crate::tool_choice::ALL {
        for streamed in [false, true] {
            let link = crate::tool_choice::link(provider, streamed).await;
            // One step: the loopback's recorded answer may be a tool call, whose turn then ends
            // at the step limit; only the request matters here.
            let agent = Agent::with_model(
                Arc::from(link.model),
                AgentOptions::new()
                    .registry(registry())
                    .max_steps(1)
                    .native_search(tool_core::model::NativeSearch::Off),
            );
            let outcome = tokio::time::timeout(Duration::from_secs(20), async {
                if streamed {
                    let items: Vec<_> = agent.stream_chat("hello").collect().await;
                    items
                        .into_iter()
                        .last()
                        .expect("the stream ends with an item")
                        .map(|_| ())
                } else {
                    agent.chat("hello").await.map(|_| ())
                }
            })
            .await
            .expect("an answer in time");
            assert!(
                !matches!(outcome, Err(tool_core::AgentError::Model(_))),
                "{provider} streamed={streamed}: {outcome:?}"
            );
            let requests = link.server.requests();
            assert_eq!(requests.len(), 1);
            let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
            let text = body.to_string();
            assert!(
                text.contains("\"get_time\"") && text.contains("\"search_tools\""),
                "{text}"
            );
            for deferred in [
                "create_directory",
                "send_email",
                "weather_forecast",
                "translate_text",
            ] {
                assert!(!text.contains(deferred), "{provider}: {deferred} in {text}");
            }
        }
    }
}
