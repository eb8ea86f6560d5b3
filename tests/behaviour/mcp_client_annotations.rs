//! An MCP server's tool annotations are the server's claims, not the application's word: with
//! `ApprovalPolicy::destructive_tools(true)`, every remote tool is asked about unless the
//! application trusts the server's annotations or names the tool read-only itself. The server is
//! written with the official MCP Python SDK (`tests/mcp_python/annotations_server.py`): `erase`
//! has no annotations (destructive by MCP's defaults), `drop_table` claims to be read-only.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tool_core::{
    Agent, AgentOptions, ToolCall, ToolRegistry,
    agent::ApprovalPolicy,
    mcp::{McpClient, McpServerConfig},
    model::{ScriptedModel, ScriptedResponse},
};

use crate::{agent_support::waiting, mcp_python::python};

/// How long connecting to the server may take before the test fails.
const LIMIT: Duration = Duration::from_secs(30);

fn server(python: &Path) -> McpServerConfig {
    let script: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/annotations_server.py");
    McpServerConfig::command(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned()],
    )
    .connect_timeout(LIMIT)
}

/// Which of `erase` and `drop_table`, called in one step by an agent that asks about
/// destructive tools, wait for approval (the others ran), with the server configured by
/// `config`.
async fn asked(
    python: &Path,
    config: impl FnOnce(McpServerConfig) -> McpServerConfig,
) -> Vec<String> {
    let client = McpClient::connect(config(server(python))).await.unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ToolCall::new("c1", "erase", r#"{"path": "important.txt"}"#),
            ToolCall::new("c2", "drop_table", r#"{"name": "users"}"#),
        ]),
        ScriptedResponse::text("done"),
    ]);
    let agent = Agent::new(
        model,
        AgentOptions::new()
            .registry(registry)
            .root_dir(dir.path())
            .approval(ApprovalPolicy::new().destructive_tools(true)),
    );
    let pending = waiting(agent.chat("clean up").await);
    let mut names: Vec<String> = pending
        .iter()
        .map(|request| request.call.name.clone())
        .collect();
    names.sort();
    client.close().await;
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_tools_are_destructive_whatever_their_annotations_claim() {
    let Some(python) = python() else { return };
    // No annotations, and a claim of read-only: both asked about.
    assert_eq!(
        asked(python, |config| config).await,
        ["drop_table", "erase"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusted_annotations_are_read_with_the_mcp_defaults() {
    let Some(python) = python() else { return };
    // Believed: the claim of read-only holds, and no annotations means destructive.
    assert_eq!(
        asked(python, |config| config.trust_annotations(true)).await,
        ["erase"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_names_the_read_only_tools_of_a_server() {
    let Some(python) = python() else { return };
    assert_eq!(
        asked(python, |config| config.read_only_tools(["erase"])).await,
        ["drop_table"]
    );
    let client = McpClient::connect(server(python).read_only_tools(["erase"]))
        .await
        .unwrap();
    let hints = |name: &str| {
        client
            .tools()
            .iter()
            .find(|tool| tool.local_name == name)
            .map(|tool| tool.metadata.hints)
            .unwrap()
    };
    assert_eq!(
        (hints("erase").read_only, hints("erase").destructive),
        (Some(true), Some(false))
    );
    assert_eq!(
        (
            hints("drop_table").read_only,
            hints("drop_table").destructive
        ),
        (Some(false), Some(true))
    );
    client.close().await;
}
