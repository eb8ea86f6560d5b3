//! A tool's progress reports reach an MCP client as `notifications/progress`, and the client's
//! cancellation reaches the tool.

use std::{sync::Arc, time::Duration};

use tool_core::{
    CallContext, ToolRegistry,
    mcp::{McpClient, McpServer, McpServerConfig},
    tool,
};

use crate::mcp_client::args;

/// Count to three, saying how far it got.
#[tool]
async fn count(call: &CallContext) -> String {
    for step in 1..=3 {
        call.report_progress(f64::from(step) / 3.0, Some(&format!("step {step}")));
        // Give each notification time to go out before the result does.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    format!("counted (call {})", call.call_id())
}

#[tokio::test]
async fn progress_reports_reach_the_mcp_client_in_order() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Count).unwrap();
    let http = McpServer::new(registry)
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = McpClient::connect(McpServerConfig::url(http.url()))
        .await
        .unwrap();
    let mut progress = client.subscribe_progress();
    let local = Arc::new(ToolRegistry::new());
    let _tools = client.register_into(&local).await.unwrap();

    let text = tokio::time::timeout(
        Duration::from_secs(30),
        local.execute("count", args(serde_json::json!({}))),
    )
    .await
    .expect("the call answered");
    assert!(text.starts_with("counted (call "), "{text}");

    let mut seen = Vec::new();
    while let Ok(Ok(report)) = tokio::time::timeout(Duration::from_secs(5), progress.recv()).await {
        seen.push((report.tool, report.progress, report.total, report.message));
        if seen.len() == 3 {
            break;
        }
    }
    let step = |n: u32| {
        (
            "count".to_owned(),
            f64::from(n) / 3.0,
            Some(1.0),
            Some(format!("step {n}")),
        )
    };
    assert_eq!(seen, [step(1), step(2), step(3)]);
    client.close().await;
    http.shutdown().await.unwrap();
}
