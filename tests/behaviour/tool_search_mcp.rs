//! Deferral per MCP server: every tool an `McpClient` registers is deferred when its
//! `McpServerConfig` says so, except those named to stay eager; a `list_changed` that adds or
//! removes tools changes what a search finds. Over the official Python SDK's server.

use std::time::Duration;

use serde_json::json;
use tool_core::{
    Agent, AgentOptions,
    mcp::McpClient,
    model::{ScriptedModel, ScriptedResponse},
};

use crate::{
    mcp_client::{args, eventually, python_server},
    mcp_python::python,
    tool_search::{names, result_of, search},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_server_offers_its_eager_tools_and_search_finds_the_rest() {
    let Some(python) = python() else { return };
    let config = python_server(python, &[]).defer_loading(true).eager_tools([
        "echo",
        "add_tool",
        "remove_tool",
    ]);
    let client = McpClient::connect(config).await.unwrap();
    let registry = std::sync::Arc::new(tool_core::ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    for eager in ["py_echo", "py_add_tool", "py_remove_tool"] {
        assert!(!registry.is_deferred(eager), "{eager}");
    }
    for deferred in ["py_page_07", "py_env", "py_progress", "py_fail"] {
        assert!(registry.is_deferred(deferred), "{deferred}");
    }

    let model = ScriptedModel::new([
        ScriptedResponse::text("Hello."),
        search("s1", "late"),
        ScriptedResponse::text("Found it."),
        search("s2", "late"),
        ScriptedResponse::text("It is gone."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry.clone()),
    );
    let turn = |text: &'static str| {
        let agent = &agent;
        async move {
            tokio::time::timeout(Duration::from_secs(30), agent.chat(text))
                .await
                .expect("the turn ends")
                .unwrap()
        }
    };
    turn("hello").await;
    assert_eq!(
        names(&model.requests()[0]),
        ["py_echo", "py_add_tool", "py_remove_tool", "search_tools"]
    );

    // The server adds a tool: it is deferred like the others, and a search finds it.
    assert_eq!(
        registry
            .execute("py_add_tool", args(json!({"name": "late"})))
            .await,
        "late added"
    );
    assert!(eventually(|| registry.has_tool("py_late")).await);
    assert!(registry.is_deferred("py_late"));
    turn("find the late tool").await;
    assert_eq!(
        result_of(&agent, "s1"),
        "Loaded; call them like any other tool:\n- py_late: The late tool, added at run time."
    );
    assert_eq!(agent.loaded_tools(), ["py_late"]);
    assert_eq!(
        names(&model.requests()[2]),
        [
            "py_echo",
            "py_add_tool",
            "py_remove_tool",
            "search_tools",
            "py_late"
        ]
    );

    // The server removes it: it is neither offered nor found any more.
    assert_eq!(
        registry
            .execute("py_remove_tool", args(json!({"name": "late"})))
            .await,
        "late removed"
    );
    assert!(eventually(|| !registry.has_tool("py_late")).await);
    turn("find it again").await;
    assert_eq!(
        result_of(&agent, "s2"),
        "No tool matches \"late\". Try other words, or `select:NAME`."
    );
    for request in &model.requests()[3..] {
        assert!(!names(request).contains(&"py_late".to_owned()));
    }
}
