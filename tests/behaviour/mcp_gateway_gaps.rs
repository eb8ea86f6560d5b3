//! The gateway's smaller promises: a stdio client that lists its tools and opens a
//! 2026-07-28 `subscriptions/listen` stream later learns at once of a change in between.

use std::{
    io::{BufRead as _, BufReader, Write as _},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::mcp_gateway::{ADD_TOOL, LIMIT, config, stateless_request, tool_names};

/// How long a stream is watched for a notification that must not come.
const QUIET: Duration = Duration::from_secs(2);

/// The gateway program serving one client on stdin and stdout, spoken to in raw JSON-RPC lines;
/// killed on drop.
struct StdioGateway {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    _folder: tempfile::TempDir,
}

impl StdioGateway {
    fn start() -> Self {
        let folder = tempfile::tempdir().unwrap();
        let config = config(folder.path(), "", ADD_TOOL);
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp_gateway_example"))
            .arg("--config")
            .arg(&config)
            .arg("--stdio")
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    panic!("not JSON on the gateway's stdout: {line}");
                };
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
            _folder: folder,
        }
    }

    /// Sends a 2026-07-28 request of `method` with `params` and the JSON-RPC `id`.
    fn send(&mut self, id: u64, method: &str, params: Value) {
        let mut request: Value = serde_json::from_str(&stateless_request(method, params)).unwrap();
        request["id"] = json!(id);
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message within `wait`, if one came.
    fn next_within(&self, wait: Duration) -> Option<Value> {
        self.lines.recv_timeout(wait).ok()
    }

    /// Sends a request and waits for its answer; the notifications that came before it are
    /// returned with it.
    fn request(&mut self, id: u64, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.send(id, method, params);
        let deadline = Instant::now() + LIMIT;
        let mut notifications = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .next_within(left)
                .unwrap_or_else(|| panic!("no answer to {method}; before it: {notifications:?}"));
            if message["id"] == id && message.get("method").is_none() {
                return (message, notifications);
            }
            notifications.push(message);
        }
    }

    /// The names of the tools a `tools/list` answers, sorted.
    fn list(&mut self, id: u64) -> Vec<String> {
        let (answer, _) = self.request(id, "tools/list", json!({}));
        tool_names(&answer)
    }

    /// Opens a `subscriptions/listen` stream for tool list changes with request `id` and waits
    /// for its acknowledgement.
    fn listen(&mut self, id: u64) {
        self.send(
            id,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        let acknowledged = self.next_within(LIMIT).expect("an acknowledgement");
        assert_eq!(
            acknowledged["method"], "notifications/subscriptions/acknowledged",
            "{acknowledged}"
        );
    }

    /// The `notifications/tools/list_changed` of subscription `id` that come within `wait`.
    fn list_changes_within(&self, id: u64, wait: Duration) -> usize {
        let deadline = Instant::now() + wait;
        let mut seen = 0;
        while let Some(message) =
            self.next_within(deadline.saturating_duration_since(Instant::now()))
        {
            assert_list_changed(&message, id);
            seen += 1;
        }
        seen
    }

    /// Waits for one `notifications/tools/list_changed` of subscription `id`.
    fn list_changed(&self, id: u64) {
        let message = self
            .next_within(LIMIT)
            .expect("a list_changed notification");
        assert_list_changed(&message, id);
    }
}

/// Checks that `message` is a `notifications/tools/list_changed` of subscription `id`.
fn assert_list_changed(message: &Value, id: u64) {
    assert_eq!(
        message["method"], "notifications/tools/list_changed",
        "{message}"
    );
    assert_eq!(
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], id,
        "{message}"
    );
}

impl Drop for StdioGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Switches `tool` off for the connection's user with `set_tool_enabled` (request `id`).
fn switch_off(gateway: &mut StdioGateway, id: u64, tool: &str) {
    let (answer, notifications) = gateway.request(
        id,
        "tools/call",
        json!({"name": "set_tool_enabled", "arguments": {"name": tool, "enabled": false}}),
    );
    assert_eq!(
        answer["result"]["content"][0]["text"],
        format!("{tool} is off"),
        "{answer}"
    );
    assert_eq!(notifications, Vec::<Value>::new());
}

#[test]
fn a_listen_stream_opened_after_a_change_tells_of_it_at_once() {
    let mut gateway = StdioGateway::start();
    assert_eq!(gateway.list(1), ["add", "set_tool_enabled"]);
    // The user switches `add` off while no stream is open…
    switch_off(&mut gateway, 2, "add");
    // …and the stream opened next tells the client that its list is stale.
    gateway.listen(3);
    gateway.list_changed(3);
    assert_eq!(gateway.list(4), ["set_tool_enabled"]);
    // Told once: the list the client now has is the current one.
    assert_eq!(gateway.list_changes_within(3, QUIET), 0);
}

#[test]
fn a_listen_stream_opened_with_nothing_changed_stays_quiet_until_a_change() {
    let mut gateway = StdioGateway::start();
    assert_eq!(gateway.list(1), ["add", "set_tool_enabled"]);
    gateway.listen(2);
    assert_eq!(gateway.list_changes_within(2, QUIET), 0);
    // The stream is open and told of the next change.
    gateway.send(
        3,
        "tools/call",
        json!({"name": "set_tool_enabled", "arguments": {"name": "add", "enabled": false}}),
    );
    let mut told = 0;
    let mut answered = false;
    let deadline = Instant::now() + LIMIT;
    while (told == 0 || !answered) && Instant::now() < deadline {
        let Some(message) = gateway.next_within(deadline.saturating_duration_since(Instant::now()))
        else {
            break;
        };
        if message["id"] == 3 {
            answered = true;
        } else {
            assert_list_changed(&message, 2);
            told += 1;
        }
    }
    assert!(answered, "no answer to the switch");
    assert_eq!(told, 1);
}
