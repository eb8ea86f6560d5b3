//! One trace from an agent through the `mcp_gateway` example to the MCP servers behind it: the
//! agent's `McpClient` sends the trace context in `_meta`, the gateway's `tools/call {tool}`
//! span continues it and its call to the upstream sends it on. The agent (this process), the
//! gateway and the `mcp_server` example behind it export over OTLP/HTTP to the receiver of
//! [`otel_support`](crate::otel_support); a server written with the official MCP Python SDK
//! (`tests/mcp_python/meta_upstream.py`) answers with the `_meta` it got, so the test also reads
//! the `traceparent` the gateway put on the wire.

use std::{sync::Arc, time::Duration};

use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentOptions, ToolRegistry,
    mcp::{McpClient, McpServerConfig},
    model::{ScriptedModel, ScriptedResponse, ToolCall},
};

use crate::{
    agent_support::tool_result,
    mcp_gateway::{ALICE, Gateway, config, python_server},
    mcp_python::{SERVER, python},
    otel_support::{
        CLIENT, INTERNAL, SERVER_KIND, attributes, export_to, named, only_child, start_receiver,
    },
};

/// Hex, as W3C `traceparent` writes ids.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_runs_from_the_agent_through_the_gateway_to_its_upstream_servers() {
    let (url, received) = start_receiver();
    let dir = tempfile::tempdir().unwrap();
    let mut servers = format!(
        "[[servers]]\nname = \"example\"\nprefix = \"ex\"\ncommand = {SERVER:?}\n\
         args = [\"--otlp\", {url:?}]\n\n"
    );
    // The Python SDK's server, when there is a Python to run it.
    let python = python();
    if let Some(python) = python {
        let prefix = "prefix = \"py\"";
        servers.push_str(&python_server(
            python,
            "meta_upstream.py",
            "python",
            prefix,
            &[],
        ));
    }
    let config = config(dir.path(), "", &servers);
    // The gateway and the server it starts export every 100 ms, as they are never stopped
    // but killed.
    let gateway = Gateway::start_with(
        &config,
        &["--otlp", url.as_str()],
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );

    let (provider, guard) = export_to(&url, "test-agent");
    let client = McpClient::connect(
        McpServerConfig::url(gateway.url.clone())
            .header("Authorization", format!("Bearer {ALICE}")),
    )
    .await
    .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    let mut calls = vec![ToolCall::new(
        "c1",
        "ex_add",
        json!({"a": 2, "b": 3}).to_string(),
    )];
    if python.is_some() {
        calls.push(ToolCall::new("c2", "py_meta", "{}"));
    }
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls(calls),
        ScriptedResponse::text("done"),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry.clone()),
    );
    let reply = tokio::time::timeout(Duration::from_secs(60), agent.chat("go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.text, "done");
    assert_eq!(tool_result(&model, "c1"), "5", "{}", gateway.log());

    registration.close().await;
    client.close().await;
    drop(guard);
    provider.force_flush().unwrap();
    // The agent's 3 spans and 2 a call, the gateway's 3 a call, the example server's 1.
    let calls = if python.is_some() { 2 } else { 1 };
    let spans = received
        .wait_for(Duration::from_secs(30), |spans| {
            let from = |service: &str| spans.iter().filter(|(s, _)| s == service).count();
            from("test-agent") >= 3 + 2 * calls
                && from("mcp_gateway") >= 3 * calls
                && from("mcp_server") >= 1
        })
        .await;

    let turn = named(&spans, "test-agent", "invoke_agent");
    assert!(turn.parent_span_id.is_empty());
    for (service, span) in &spans {
        assert_eq!(
            span.trace_id, turn.trace_id,
            "{service}'s {} is in the turn's trace: {spans:#?}",
            span.name
        );
    }

    // agent: execute_tool ex_add -> tools/call ex_add (CLIENT)
    // gateway: tools/call ex_add (SERVER) -> gateway_call -> tools/call add (CLIENT)
    // example server: tools/call add (SERVER)
    let chain = |tool: &str, remote: &str| -> Vec<(String, Span)> {
        let execute = named(&spans, "test-agent", &format!("execute_tool {tool}"));
        assert_eq!(execute.parent_span_id, turn.span_id);
        let mut chain = vec![("test-agent".to_owned(), execute)];
        for name in [
            format!("tools/call {tool}"),
            format!("tools/call {tool}"),
            "gateway_call".to_owned(),
            format!("tools/call {remote}"),
        ] {
            let parent = &chain.last().unwrap().1;
            chain.push(only_child(&spans, parent, &name));
        }
        chain
    };
    let add = chain("ex_add", "add");
    let served = only_child(&spans, &add[4].1, "tools/call add");
    assert_eq!(
        children_of(&spans, &served.1),
        0,
        "the example server's span ends the chain"
    );
    let add: Vec<(String, Span)> = add.into_iter().chain([served]).collect();
    let sides: Vec<(&str, &str, i32)> = add
        .iter()
        .map(|(service, span)| (service.as_str(), span.name.as_str(), span.kind))
        .collect();
    assert_eq!(
        sides,
        [
            ("test-agent", "execute_tool ex_add", INTERNAL),
            ("test-agent", "tools/call ex_add", CLIENT),
            ("mcp_gateway", "tools/call ex_add", SERVER_KIND),
            ("mcp_gateway", "gateway_call", INTERNAL),
            ("mcp_gateway", "tools/call add", CLIENT),
            ("mcp_server", "tools/call add", SERVER_KIND),
        ]
    );

    // Each hop's two sides agree on the request; the agent reaches the gateway over HTTP, the
    // gateway its upstream over stdio.
    let attributes: Vec<_> = add.iter().map(|(_, span)| attributes(span)).collect();
    for (client, server, tool, transport) in [(1, 2, "ex_add", "tcp"), (4, 5, "add", "pipe")] {
        for side in [&attributes[client], &attributes[server]] {
            assert_eq!(side["mcp.method.name"], "tools/call");
            assert_eq!(side["gen_ai.tool.name"], tool);
            assert_eq!(side["network.transport"], transport);
            assert!(!side.contains_key("error.type"), "{side:?}");
        }
        assert_eq!(
            attributes[client]["jsonrpc.request.id"],
            attributes[server]["jsonrpc.request.id"]
        );
        assert_eq!(
            attributes[client]["mcp.protocol.version"],
            attributes[server]["mcp.protocol.version"]
        );
    }
    assert_eq!(attributes[3]["user"], "alice");
    assert_eq!(attributes[3]["server"], "example");

    if python.is_some() {
        let meta = chain("py_meta", "meta");
        let upstream_call = &meta[4].1;
        assert_eq!(upstream_call.kind, CLIENT);
        // What the Python server got in `params._meta`: the gateway's client span as parent.
        let seen: Value = serde_json::from_str(&tool_result(&model, "c2")).unwrap();
        assert_eq!(
            seen["traceparent"],
            format!(
                "00-{}-{}-01",
                hex(&turn.trace_id),
                hex(&upstream_call.span_id)
            ),
            "{seen}"
        );
    }
    drop(gateway);
}

/// How many spans have `parent` as their parent.
fn children_of(spans: &[(String, Span)], parent: &Span) -> usize {
    spans
        .iter()
        .filter(|(_, span)| span.parent_span_id == parent.span_id)
        .count()
}
