//! What the behaviour tests and the gateway bench (`tests/benches/gateway.rs`, which includes
//! this file) both do: start a program that serves HTTP and prints `listening on URL` first,
//! and open a 2026-07-28 `subscriptions/listen` stream.

use std::{
    io::{BufRead as _, BufReader},
    process::{Child, Command, Stdio},
};

/// A process serving MCP over HTTP at `url`; killed on drop.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) url: String,
}

impl Served {
    /// Starts `command`, which prints `listening on URL` as its first line (its stderr is
    /// dropped).
    pub(crate) fn start(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `url` a 2026-07-28 `subscriptions/listen` request (id 7) for tool list changes as the
/// user of the bearer `token`, with `client`; the answer, whose body is the stream.
pub(crate) async fn open_listen(
    client: &reqwest::Client,
    url: &str,
    token: &str,
) -> reqwest::Result<reqwest::Response> {
    let request = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .bearer_auth(token)
        .body(request.to_string())
        .send()
        .await
}
