//! One trace across two processes: an agent calls a tool of the `mcp_server` example through
//! `McpClient`, the client carries the trace context in the request's `_meta`, and the server
//! continues the trace. Both processes export over OTLP/HTTP to a receiver this test runs on
//! loopback, which decodes what they send with the `opentelemetry-proto` types.

use std::{sync::Arc, time::Duration};

use serde_json::json;
use tool_core::{
    Agent, AgentOptions, ToolRegistry,
    mcp::{McpClient, McpServerConfig},
    model::{ScriptedModel, ScriptedResponse},
};

use crate::{
    mcp_python::SERVER,
    otel_support::{CLIENT, INTERNAL, SERVER_KIND, attributes, export_to, named, start_receiver},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_covers_the_agent_its_mcp_client_and_the_mcp_server_process() {
    let (url, received) = start_receiver();
    let (provider, guard) = export_to(&url, "test-agent");

    let client = McpClient::connect(McpServerConfig::command(SERVER, ["--otlp", url.as_str()]))
        .await
        .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "add", json!({"a": 2, "b": 3}).to_string()),
        ScriptedResponse::text("5"),
    ]);
    let agent = Agent::new(model, AgentOptions::new().registry(registry.clone()));
    let reply = tokio::time::timeout(Duration::from_secs(30), agent.chat("2 + 3?"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.text, "5");

    // The server exports what is left when its stdin closes.
    registration.close().await;
    client.close().await;
    drop(guard);
    provider.force_flush().unwrap();
    let spans = received
        .wait_for(Duration::from_secs(10), |spans| {
            let services: Vec<&str> = spans.iter().map(|(service, _)| service.as_str()).collect();
            services.contains(&"mcp_server") && services.contains(&"test-agent")
        })
        .await;
    let turn = named(&spans, "test-agent", "invoke_agent");
    let tool = named(&spans, "test-agent", "execute_tool add");
    let call = named(&spans, "test-agent", "tools/call add");
    let served = named(&spans, "mcp_server", "tools/call add");

    for span in [&tool, &call, &served] {
        assert_eq!(
            span.trace_id, turn.trace_id,
            "{} is in the turn's trace",
            span.name
        );
    }
    assert!(turn.parent_span_id.is_empty());
    assert_eq!(tool.parent_span_id, turn.span_id);
    assert_eq!(call.parent_span_id, tool.span_id);
    assert_eq!(
        served.parent_span_id, call.span_id,
        "the server continues the client's span"
    );
    assert_eq!(
        (tool.kind, call.kind, served.kind),
        (INTERNAL, CLIENT, SERVER_KIND)
    );

    let client_side = attributes(&call);
    let server_side = attributes(&served);
    let version = &server_side["mcp.protocol.version"];
    assert!(version.starts_with("20"), "{version}");
    let id = &server_side["jsonrpc.request.id"];
    for (side, transport) in [(&client_side, "pipe"), (&server_side, "pipe")] {
        assert_eq!(side["mcp.method.name"], "tools/call");
        assert_eq!(side["gen_ai.tool.name"], "add");
        assert_eq!(side["gen_ai.operation.name"], "execute_tool");
        assert_eq!(side["mcp.protocol.version"], *version);
        assert_eq!(side["jsonrpc.request.id"], *id);
        assert_eq!(side["network.transport"], transport);
        assert!(!side.contains_key("error.type"), "{side:?}");
    }
}
