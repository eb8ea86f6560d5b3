//! The MCP client against the reference server `@modelcontextprotocol/server-everything`
//! (npm), over stdio and over streamable HTTP.
//!
//! The server comes from `TOOL_CORE_MCP_EVERYTHING` (the path of its `dist/index.js`; `.ci/run`
//! sets it). Without it the test installs the package with `npm install --prefix` under the
//! target folder (and, as root without Node, Node itself with `apt-get`). It is skipped, with
//! a message saying so, only when that install is impossible.

use std::{
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use serde_json::json;
use tool_core::{
    JsonObject, ToolRegistry,
    mcp::{McpClient, McpServerConfig, McpStatus, ReconnectPolicy},
};

use crate::mcp_client::{args, eventually};
use crate::npm_support::NpmPackage;

/// The version `.ci/run` installs too; pinned so the exact answers below stay true.
const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";
const INDEX: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const LIMIT: Duration = Duration::from_secs(60);

/// `dist/index.js` of the installed server, or `None` after saying the test is skipped.
pub(crate) fn everything() -> Option<&'static Path> {
    static INDEX_JS: OnceLock<Option<PathBuf>> = OnceLock::new();
    INDEX_JS
        .get_or_init(|| {
            NpmPackage {
                tests: "the server-everything tests",
                spec: PACKAGE,
                env: "TOOL_CORE_MCP_EVERYTHING",
                path: INDEX,
                ready: Path::is_file,
            }
            .find()
        })
        .as_deref()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_stdio() {
    let Some(index) = everything() else { return };
    let config = McpServerConfig::command("node", [index.to_string_lossy(), "stdio".into()])
        .env("TOOL_CORE_MCP_TEST", "42")
        .prefix("everything")
        .connect_timeout(LIMIT);
    let client = McpClient::connect(config).await.unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    check_tools(&registry, &registration.tool_names()).await;

    let env = registry
        .execute("everything_get-env", JsonObject::new())
        .await;
    assert!(env.contains(r#""TOOL_CORE_MCP_TEST": "42""#), "{env}");

    assert_eq!(
        registry
            .execute(
                "everything_trigger-long-running-operation",
                args(json!({"duration": 0.3, "steps": 3}))
            )
            .await,
        "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
    );
}

/// What both transports must show.
async fn check_tools(registry: &ToolRegistry, names: &[String]) {
    for name in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-tiny-image",
        "everything_get-structured-content",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
    assert_eq!(
        registry
            .execute("everything_get-sum", args(json!({"a": 2, "b": 3})))
            .await,
        "The sum of 2 and 3 is 5."
    );
    assert_eq!(
        registry
            .execute("everything_echo", args(json!({"message": "hi"})))
            .await,
        "Echo: hi"
    );
    let image = registry
        .execute("everything_get-tiny-image", JsonObject::new())
        .await;
    let lines: Vec<&str> = image.lines().collect();
    assert_eq!(lines.len(), 3, "{image}");
    assert_eq!(lines[0], "Here's the image you requested:");
    assert!(
        lines[1].starts_with("[image omitted: image/png, ") && lines[1].ends_with(" bytes]"),
        "{image}"
    );
    assert_eq!(lines[2], "The image above is the MCP logo.");
    // The registry checks arguments against the server's own schema.
    assert_eq!(
        registry
            .execute("everything_get-sum", args(json!({"a": "two", "b": 3})))
            .await,
        "Error: invalid arguments for everything_get-sum: at /a: expected a number, got \"two\""
    );
}

/// A node process, killed on drop.
struct NodeServer(Child);

impl Drop for NodeServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts server-everything in streamable HTTP mode on `port` and waits until it accepts.
fn start_http(index: &Path, port: u16) -> NodeServer {
    let child = Command::new("node")
        .arg(index)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = NodeServer(child);
    let deadline = Instant::now() + LIMIT;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_http_and_back_after_a_restart() {
    let Some(index) = everything() else { return };
    // The server takes its port from PORT (and listens on every interface: it has no host
    // setting); a port the OS just handed out is free.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = start_http(index, port);
    let config = McpServerConfig::url(format!("http://127.0.0.1:{port}/mcp"))
        .header("x-client", "tool-core-tests")
        .prefix("everything")
        .connect_timeout(LIMIT)
        .reconnect(
            ReconnectPolicy::new()
                .initial_delay(Duration::from_millis(50))
                .max_delay(Duration::from_millis(300)),
        );
    let client = McpClient::connect(config).await.unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    check_tools(&registry, &registration.tool_names()).await;

    drop(server);
    let answer = registry
        .execute("everything_get-sum", args(json!({"a": 1, "b": 1})))
        .await;
    assert!(
        answer.starts_with(
            "Error executing everything_get-sum: the MCP server 'everything' is not connected: "
        ),
        "{answer}"
    );
    assert!(
        eventually(|| matches!(client.status(), McpStatus::Disconnected { .. })).await,
        "{:?}",
        client.status()
    );

    let _server = start_http(index, port);
    assert!(
        eventually(|| matches!(client.status(), McpStatus::Connected { .. })).await,
        "{:?}",
        client.status()
    );
    assert_eq!(
        registry
            .execute("everything_get-sum", args(json!({"a": 1, "b": 1})))
            .await,
        "The sum of 1 and 1 is 2."
    );
}
