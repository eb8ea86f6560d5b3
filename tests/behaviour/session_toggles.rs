//! Per-session tool toggles over a shared registry (seed 004).

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{
    JsonObject, Provider, ToolContext, ToolRegistry,
    config::{HandlerTable, ToolConfig},
    create_default_tool_registry,
    session::{ChatSession, MemoryPreferenceStore, SessionError},
};

fn registry() -> Arc<ToolRegistry> {
    Arc::new(create_default_tool_registry(ToolContext::default()))
}

fn openai_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn toggle_tool_off_omits_it_from_requests() {
    let session = ChatSession::new(registry());
    assert!(session.is_tool_enabled("write_file"));

    session.disable_tool("write_file").await.unwrap();

    assert!(!session.is_tool_enabled("write_file"));
    assert!(!session.snapshot().is_enabled("write_file"));
    assert_eq!(
        openai_names(&session.tools_for_provider(Provider::OpenAi, None)),
        ["read_file", "save_session_context"]
    );
    let names: Vec<String> = session
        .definitions()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(names, ["read_file", "save_session_context"]);
    assert_eq!(
        session.enabled_tool_names(),
        ["read_file", "save_session_context"]
    );
    let gemini = session.tools_for_provider(Provider::Gemini, None);
    assert_eq!(gemini["functionDeclarations"].as_array().unwrap().len(), 2);
    let refused = session
        .execute(
            "write_file",
            serde_json::from_value(json!({ "path": "x", "content": "y" })).unwrap(),
        )
        .await;
    assert_eq!(
        refused,
        "Error: tool 'write_file' is not available (it is disabled)"
    );

    // Until it is turned on again.
    session.enable_tool("write_file").await.unwrap();
    assert_eq!(
        openai_names(&session.tools_for_provider(Provider::OpenAi, None)),
        ["read_file", "write_file", "save_session_context"]
    );
}

#[tokio::test]
async fn two_sessions_with_different_toggles_in_one_process() {
    let registry = registry();
    let first = ChatSession::new(registry.clone());
    let second = ChatSession::new(registry.clone());

    first.disable_tool("write_file").await.unwrap();
    second.disable_tool("read_file").await.unwrap();

    assert_eq!(
        first.enabled_tool_names(),
        ["read_file", "save_session_context"]
    );
    assert_eq!(
        second.enabled_tool_names(),
        ["write_file", "save_session_context"]
    );
    // The registry's defaults are untouched.
    assert!(registry.is_tool_enabled("read_file"));
    assert!(registry.is_tool_enabled("write_file"));
    assert_eq!(registry.get_enabled_schemas().len(), 3);
    // A third session starts from the registry.
    assert_eq!(ChatSession::new(registry).enabled_tool_names().len(), 3);
}

#[tokio::test]
async fn list_tools_shows_metadata_and_the_session_state() {
    let registry = registry();
    let config = ToolConfig::from_value(json!([{
        "name": "get_weather",
        "description": "Get the weather.",
        "type": "function",
        "handler": "get_weather",
        "parameters": { "type": "object" },
        "implementation": { "type": "mock", "mock_response": "sunny" },
        "metadata": {
            "icon": "https://example.com/sun.svg",
            "category": "weather",
            "default_enabled": false
        }
    }]))
    .unwrap();
    assert!(config.register(&registry, &HandlerTable::new()).is_clean());
    let session = ChatSession::new(registry.clone());

    let before = session.list_tools();
    assert_eq!(before.len(), 4, "every tool is listed, enabled or not");
    let weather = before
        .iter()
        .find(|tool| tool.name == "get_weather")
        .unwrap();
    assert_eq!(weather.description, "Get the weather.");
    assert_eq!(weather.icon.as_deref(), Some("https://example.com/sun.svg"));
    assert_eq!(weather.category.as_deref(), Some("weather"));
    assert!(!weather.default_enabled);
    assert!(!weather.enabled);
    let read_file = before.iter().find(|tool| tool.name == "read_file").unwrap();
    assert_eq!(read_file.category.as_deref(), Some("files"));
    assert!(read_file.enabled);

    session.enable_tool("get_weather").await.unwrap();
    session.disable_tool("read_file").await.unwrap();

    let after = session.list_tools();
    let state = |name: &str| after.iter().find(|tool| tool.name == name).unwrap().enabled;
    assert!(state("get_weather"));
    assert!(!state("read_file"));
    assert!(
        !after
            .iter()
            .find(|tool| tool.name == "get_weather")
            .unwrap()
            .default_enabled
    );
    // The registry's listing still shows the defaults.
    let shared = registry.list_tools();
    assert!(
        !shared
            .iter()
            .find(|tool| tool.name == "get_weather")
            .unwrap()
            .enabled
    );
    assert!(
        shared
            .iter()
            .find(|tool| tool.name == "read_file")
            .unwrap()
            .enabled
    );
    assert_eq!(
        session.execute("get_weather", JsonObject::new()).await,
        "sunny"
    );
}

#[tokio::test]
async fn toggling_an_unknown_tool_is_an_error_and_stores_nothing() {
    let store = Arc::new(MemoryPreferenceStore::new());
    let session = ChatSession::open(registry(), store.clone()).await.unwrap();
    let error = session.disable_tool("no_such_tool").await.unwrap_err();
    assert!(matches!(&error, SessionError::UnknownTool { name } if name == "no_such_tool"));
    assert_eq!(
        error.to_string(),
        "no tool named `no_such_tool` is registered"
    );
    use tool_core::session::PreferenceStore as _;
    assert!(store.load().await.unwrap().is_empty());
}

#[tokio::test]
async fn session_toggles_are_shared_with_whoever_holds_them() {
    let registry = registry();
    let session = ChatSession::new(registry.clone());
    let toggles = session.toggles().clone();

    session.disable_tool("save_session_context").await.unwrap();

    // An agent holding the same toggles sees the change in its next snapshot.
    assert!(
        !toggles
            .snapshot(&registry)
            .is_enabled("save_session_context")
    );
    toggles.set("save_session_context", true);
    assert!(session.is_tool_enabled("save_session_context"));
}

#[tokio::test]
async fn reset_tool_forgets_the_session_choice() {
    let store = Arc::new(MemoryPreferenceStore::new());
    let registry = registry();
    let session = ChatSession::open(registry.clone(), store.clone())
        .await
        .unwrap();
    session.disable_tool("read_file").await.unwrap();
    assert!(!session.is_tool_enabled("read_file"));

    session.reset_tool("read_file").await.unwrap();

    assert!(session.is_tool_enabled("read_file"));
    let next = ChatSession::open(registry, store).await.unwrap();
    assert!(next.is_tool_enabled("read_file"));
    assert_eq!(next.toggles().get("read_file"), None);
}

/// A store whose backend is down.
struct Unavailable;

#[tool_core::async_trait]
impl tool_core::session::PreferenceStore for Unavailable {
    async fn load(&self) -> Result<tool_core::Preferences, tool_core::session::PreferenceError> {
        Ok(tool_core::Preferences::from([(
            "read_file".to_owned(),
            false,
        )]))
    }

    async fn set(&self, _: &str, _: bool) -> Result<(), tool_core::session::PreferenceError> {
        Err(tool_core::session::PreferenceError::backend(
            "database is down",
        ))
    }

    async fn remove(&self, _: &str) -> Result<(), tool_core::session::PreferenceError> {
        Err(tool_core::session::PreferenceError::backend(
            "database is down",
        ))
    }
}

#[tokio::test]
async fn an_application_store_is_used_and_its_failures_reported() {
    let session = ChatSession::open(registry(), Arc::new(Unavailable))
        .await
        .unwrap();
    assert!(
        !session.is_tool_enabled("read_file"),
        "hydrated from the store"
    );

    let error = session.disable_tool("write_file").await.unwrap_err();

    assert!(matches!(error, SessionError::Store(_)));
    assert_eq!(
        error.to_string(),
        "tool preference store failed: database is down"
    );
    // The choice still applies to this session.
    assert!(!session.is_tool_enabled("write_file"));
}

/// A tool that only has a name.
struct Named(String);

#[tool_core::async_trait]
impl tool_core::ExecutableTool for Named {
    fn name(&self) -> &str {
        &self.0
    }

    fn get_schema(&self) -> tool_core::ChatTool {
        tool_core::ChatTool::new(&self.0, "A tool.", json!({"type": "object"}))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, tool_core::ToolError> {
        Ok(String::new())
    }
}

#[test]
fn toggles_never_reuse_the_snapshot_of_a_dropped_registry() {
    let toggles = tool_core::ToolToggles::new();
    toggles.set("unrelated", false);
    let mut registry: ToolRegistry;
    for round in 0..4 {
        // Each round drops the registry and builds a new one in the same place, at the same
        // version (one registration): to a cache keyed by address and version they look alike.
        registry = ToolRegistry::new();
        let name = format!("tool_{round}");
        registry.register(Named(name.clone())).unwrap();
        assert_eq!(toggles.snapshot(&registry).enabled_names(), [name.as_str()]);
    }
}
