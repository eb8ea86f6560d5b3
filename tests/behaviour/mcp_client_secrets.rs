//! The MCP client's secrets (an HTTP server's headers and URL credentials, a child's
//! environment) stay where the application put them: not across a redirect to another origin,
//! not in `Debug`, errors or logs.

use std::time::Duration;

use tool_core::mcp::{McpClient, McpServerConfig, ReconnectPolicy};

use crate::{
    logs::capture,
    loopback::{Reply, Server, closed_address},
};

/// A server URL that redirects to another origin (another port on loopback) fails the
/// handshake, and the other origin gets nothing: not the headers, not the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_origin_is_refused() {
    let other = Server::start(vec![]).await;
    let location = format!("{}/mcp", other.url());
    let redirect = Reply::error(307, b"").header("location", &location);
    let redirecting = Server::start(vec![redirect; 4]).await;
    let error = McpClient::connect(
        McpServerConfig::url(format!("{}/mcp", redirecting.url()))
            .header("x-api-key", "k-SECRET")
            .prefix("r")
            .connect_timeout(Duration::from_secs(30))
            .reconnect(ReconnectPolicy::never()),
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains(&format!(
            "refused to follow a redirect from {}/mcp to {location}: another origin",
            redirecting.url()
        )),
        "{message}"
    );
    assert!(!redirecting.requests().is_empty());
    assert!(other.requests().is_empty(), "{:?}", other.requests());
}

/// `Debug` shows header and variable names, not their values, and the URL without its
/// password (whatever characters it holds) and query values.
#[test]
fn debug_and_display_hide_headers_the_environment_and_url_credentials() {
    let http = McpServerConfig::url("http://alice:pa#ss/w?rd@127.0.0.1:1/mcp?token=QSECRET")
        .header("authorization", "Bearer HSECRET");
    let shown = [
        format!("{http:?}"),
        format!("{:?}", http.transport()),
        http.transport().to_string(),
        http.display_name(),
    ];
    for text in &shown {
        for secret in ["pa#ss", "w?rd", "QSECRET", "HSECRET"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(
            text.contains("http://***@127.0.0.1:1/mcp?token=***"),
            "{text}"
        );
    }
    assert!(
        shown[0].contains(r#"("authorization", "***")"#),
        "{}",
        shown[0]
    );

    let stdio = McpServerConfig::command("server", ["--port", "1"]).env("API_KEY", "ESECRET");
    let debug = format!("{stdio:?}");
    assert!(!debug.contains("ESECRET"), "{debug}");
    assert!(debug.contains(r#"("API_KEY", "***")"#), "{debug}");
    assert!(debug.contains("--port"), "{debug}");
}

/// The error of a failed connection, and what the client logs meanwhile, quote the URL
/// without its secrets.
#[test]
fn errors_and_logs_leave_the_url_secrets_out() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let port = closed_address().port();
    let url = format!("http://alice:pa%23ss@127.0.0.1:{port}/mcp?token=QSECRET");
    let (error, logs) = capture(|| {
        runtime.block_on(McpClient::connect(
            McpServerConfig::url(&url)
                .header("authorization", "Bearer HSECRET")
                .connect_timeout(Duration::from_secs(30))
                .reconnect(ReconnectPolicy::never()),
        ))
    });
    let error = error.unwrap_err();
    let text = format!("{error}\n{error:?}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    for secret in ["pa%23ss", "pa#ss", "QSECRET", "HSECRET"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let ours: Vec<&str> = logs
        .lines()
        .filter(|line| line.contains("tool_core"))
        .collect();
    for line in ours {
        for secret in ["pa%23ss", "pa#ss", "QSECRET", "HSECRET"] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
    }
}
