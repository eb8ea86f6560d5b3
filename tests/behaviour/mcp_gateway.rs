//! The `mcp_gateway` example in front of real MCP servers (the reference server
//! `@modelcontextprotocol/server-everything` and a server written with the official Python SDK,
//! `tests/mcp_python/gateway_upstream.py`), driven by the official Python SDK's client
//! (`tests/mcp_python/gateway_client.py`) and by plain HTTP requests.

use std::{
    io::{BufRead, BufReader, Read as _},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tool_core::gateway::hash_token;

use crate::mcp_client_everything::everything;
use crate::mcp_python::{json_report, python};

const GATEWAY: &str = env!("CARGO_BIN_EXE_mcp_gateway_example");
pub(crate) const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-9876543210";
const ADMIN: &str = "admin-token-abcdef";
const LIMIT: Duration = Duration::from_secs(60);

fn upstream_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/gateway_upstream.py")
}

/// The `[gateway]` table and the two users every test has, then `servers` (TOML).
pub(crate) fn config(dir: &Path, gateway_extra: &str, servers: &str) -> PathBuf {
    let text = format!(
        "[gateway]\nstore = \"sqlite://{store}\"\nadmin_token_sha256 = \"{admin}\"\n{gateway_extra}\n\
         [[users]]\nname = \"alice\"\ntoken_sha256 = \"{alice}\"\n\n\
         [[users]]\nname = \"bob\"\ntoken_sha256 = \"{bob}\"\n\n{servers}",
        store = dir.join("switches.db").display(),
        admin = hash_token(ADMIN),
        alice = hash_token(ALICE),
        bob = hash_token(BOB),
    );
    let path = dir.join("gateway.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A `[[servers]]` entry for the Python upstream.
fn python_upstream(python: &Path, name: &str, prefix: &str, extra: &str) -> String {
    format!(
        "[[servers]]\nname = \"{name}\"\nprefix = \"{prefix}\"\ncommand = {python:?}\nargs = [{script:?}{extra}]\n\n",
        python = python.display().to_string(),
        script = upstream_script().display().to_string(),
    )
}

/// The gateway program serving HTTP on a free loopback port; its stderr is kept for the
/// tests to read; killed on drop.
pub(crate) struct Gateway {
    child: Child,
    pub(crate) url: String,
    base: String,
    log: Arc<Mutex<String>>,
}

impl Gateway {
    fn start(config: &Path) -> Self {
        Self::start_with(config, &[], &[])
    }

    /// Like [`start`](Self::start), with more arguments and environment variables.
    pub(crate) fn start_with(config: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(GATEWAY)
            .arg("--config")
            .arg(config)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "warn,rmcp=error")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn({
            let log = log.clone();
            move || {
                let mut buffer = [0u8; 4096];
                while let Ok(read) = stderr.read(&mut buffer) {
                    if read == 0 {
                        return;
                    }
                    log.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buffer[..read]));
                }
            }
        });
        let mut first_line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first_line)
            .unwrap();
        let url = first_line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line from the gateway: {first_line:?}\n{}",
                    log.lock().unwrap()
                )
            })
            .to_owned();
        let base = url.trim_end_matches("/mcp").to_owned();
        Self {
            child,
            url,
            base,
            log,
        }
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn admin(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        runtime().block_on(async move {
            let mut request = crate::http_client::client()
                .request(method, url)
                .bearer_auth(ADMIN)
                .timeout(LIMIT);
            if let Some(body) = body {
                request = request.json(&body);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json().await.unwrap_or(Value::Null))
        })
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn gateway_client(
    python: &Path,
    gateway: &Gateway,
    version: &str,
    tool: &str,
    args: &Value,
) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/gateway_client.py");
    let mut command = Command::new(python);
    command
        .arg(script)
        .args(["--version", version, &gateway.url, ALICE, BOB, tool])
        .arg(args.to_string());
    json_report(command, Duration::from_secs(120))
}

/// Polls `check` every 50 ms until it holds, for at most `LIMIT`.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_users_see_their_own_tools_and_a_switch_reaches_only_its_user() {
    let Some(python) = python() else { return };
    let Some(everything) = everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let servers = format!(
        "{}[[servers]]\nname = \"everything\"\nprefix = \"ev\"\ncommand = \"node\"\nargs = [{:?}]\nallow = [\"echo\", \"get-sum\"]\n",
        python_upstream(python, "python", "py", ""),
        everything.display().to_string(),
    );
    let gateway = Gateway::start(&config(dir.path(), "", &servers));
    // Bob has ev_echo switched off by an operator; Alice has not.
    let (status, answer) = gateway.admin(
        reqwest::Method::PUT,
        "/admin/users/bob/tools/ev_echo",
        Some(json!({"enabled": false})),
    );
    assert_eq!(status, 200, "{answer}");

    for version in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
        let report = gateway_client(python, &gateway, version, "py_echo", &json!({"text": "hi"}));
        assert_eq!(report["protocol_version"], version, "{report}");
        let every = json!([
            "ev_echo",
            "ev_get-sum",
            "py_echo",
            "py_pid",
            "py_redefine",
            "py_slow",
            "py_weather",
            "set_tool_enabled"
        ]);
        assert_eq!(report["alice_tools"], every, "{report}");
        let mut without_echo = every.as_array().unwrap().clone();
        without_echo.retain(|name| name != "ev_echo");
        assert_eq!(report["bob_tools"], json!(without_echo), "{report}");
        assert_eq!(
            report["alice_call"],
            json!({"is_error": false, "text": "hi"})
        );
        assert_eq!(report["bob_call"], json!({"is_error": false, "text": "hi"}));

        assert_eq!(
            report["switch_off"],
            json!({"is_error": false, "text": "py_echo is off"})
        );
        assert_eq!(report["alice_notified"], true, "{report}");
        assert_eq!(report["bob_notified"], false, "{report}");
        let mut alice_off = every.as_array().unwrap().clone();
        alice_off.retain(|name| name != "py_echo");
        assert_eq!(report["alice_tools_off"], json!(alice_off), "{report}");
        assert_eq!(report["bob_tools_off"], json!(without_echo), "{report}");
        assert_eq!(report["alice_call_off"]["error_code"], -32602, "{report}");
        assert_eq!(
            report["bob_call_off"],
            json!({"is_error": false, "text": "hi"})
        );
        assert_eq!(report["alice_tools_on"], every, "{report}");
    }
    // Bob cannot call the tool his switches hide.
    let (status, tools) = gateway.admin(reqwest::Method::GET, "/admin/users/bob/tools", None);
    assert_eq!(status, 200);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "ev_echo", "enabled": false})),
        "{tools}"
    );
    let health = runtime().block_on(async {
        crate::http_client::client()
            .get(format!("{}/healthz", gateway.base))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    });
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["servers"]["everything"]["state"], "connected");
    assert_eq!(health["servers"]["python"]["state"], "connected");
}

/// One MCP request to the gateway over plain HTTP (a stateless 2026-07-28 request, or an
/// `initialize`), with `headers`; the status and the body.
fn post(url: &str, headers: &[(&str, &str)], body: String) -> (u16, String) {
    // 2026-07-28 repeats the method and the tool's name in headers.
    let message: Value = serde_json::from_str(&body).unwrap();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let name = message["params"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut request = crate::http_client::client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .timeout(LIMIT)
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    runtime().block_on(async move {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    })
}

/// A `tools/call` as a self-contained 2026-07-28 request.
fn call_request(tool: &str, arguments: Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string()
}

/// A `tools/call` of `set_tool_enabled` switching `tool` off.
fn switch_off_request(tool: &str) -> String {
    call_request("set_tool_enabled", json!({"name": tool, "enabled": false}))
}

/// What a refused request is: a label, its headers, its body and the status expected.
type Refused<'a> = (&'a str, Vec<(&'a str, &'a str)>, String, u16);

#[test]
fn refused_requests_get_their_status_and_change_nothing() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&config(
        dir.path(),
        "max_request_bytes = 4096\nstateless = true",
        &python_upstream(python, "python", "py", ""),
    ));
    let switch = switch_off_request("py_echo");
    let alice = format!("Bearer {ALICE}");
    let cases: [Refused<'_>; 4] = [
        ("no credentials", vec![], switch.clone(), 401),
        (
            "a wrong token",
            vec![("authorization", "Bearer not-alices-token")],
            switch.clone(),
            401,
        ),
        (
            "a foreign origin",
            vec![
                ("authorization", alice.as_str()),
                ("origin", "https://evil.example"),
            ],
            switch.clone(),
            403,
        ),
        (
            "an oversized body",
            vec![("authorization", alice.as_str())],
            switch.replace("\"test\"", &format!("\"{}\"", "x".repeat(8192))),
            413,
        ),
    ];
    for (what, headers, body, expected) in cases {
        let (status, answer) = post(&gateway.url, &headers, body);
        assert_eq!(status, expected, "{what}: {answer}");
    }
    let (_, tools) = gateway.admin(reqwest::Method::GET, "/admin/users/alice/tools", None);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "py_echo", "enabled": true})),
        "{tools}"
    );
    // The same request with Alice's token does switch.
    let (status, answer) = post(&gateway.url, &[("authorization", alice.as_str())], switch);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("py_echo is off"), "{answer}");
    let (_, tools) = gateway.admin(reqwest::Method::GET, "/admin/users/alice/tools", None);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "py_echo", "enabled": false})),
        "{tools}"
    );
    // The admin API wants the admin token, not a user's.
    let (status, _) = runtime().block_on(async {
        let response = crate::http_client::client()
            .get(format!("{}/admin/pins", gateway.base))
            .bearer_auth(ALICE)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), ())
    });
    assert_eq!(status, 401);
}

#[test]
fn a_name_two_servers_offer_is_served_by_neither() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let servers = format!(
        "{}{}",
        python_upstream(python, "first", "same", ""),
        python_upstream(python, "second", "same", "")
    );
    let gateway = Gateway::start(&config(dir.path(), "", &servers));
    let (status, tools) = gateway.admin(reqwest::Method::GET, "/admin/users/alice/tools", None);
    assert_eq!(status, 200);
    assert_eq!(
        tools,
        json!({"tools": [{"name": "set_tool_enabled", "enabled": true}]})
    );
    let log = gateway.log();
    assert!(
        log.contains("tool name collision: `same_echo` is offered by `first` and `second`"),
        "{log}"
    );
}

#[test]
fn a_changed_definition_is_withheld_until_an_operator_accepts_it() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "stateless = true",
        &python_upstream(python, "python", "py", ""),
    );
    let alice = format!("Bearer {ALICE}");
    let call = |gateway: &Gateway, tool: &str, args: Value| {
        let body = call_request(tool, args);
        post(&gateway.url, &[("authorization", alice.as_str())], body)
    };
    let gateway = Gateway::start(&config);
    let (status, answer) = call(&gateway, "py_weather", json!({"city": "Oslo"}));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("sunny in Oslo"), "{answer}");
    let (_, answer) = call(&gateway, "py_redefine", json!({}));
    assert!(answer.contains("redefined"), "{answer}");
    eventually("the change to be pending", || {
        let (_, pins) = gateway.admin(reqwest::Method::GET, "/admin/pins", None);
        pins["pending"]["py_weather"]["server"] == "python"
    });
    let (_, answer) = call(&gateway, "py_weather", json!({"city": "Oslo"}));
    assert!(answer.contains("-32602"), "withheld: {answer}");
    assert!(
        gateway
            .log()
            .contains("the upstream changed the tool's definition"),
        "{}",
        gateway.log()
    );
    let (status, _) = gateway.admin(reqwest::Method::POST, "/admin/pins/py_weather/accept", None);
    assert_eq!(status, 200);
    let (_, answer) = call(&gateway, "py_weather", json!({"city": "Oslo"}));
    assert!(answer.contains("sunny in Oslo"), "accepted: {answer}");
    drop(gateway);

    // A restart serves the accepted definition; the original one would now be a change.
    let gateway = Gateway::start(&config);
    let (_, pins) = gateway.admin(reqwest::Method::GET, "/admin/pins", None);
    assert_eq!(pins["pending"]["py_weather"]["server"], "python", "{pins}");
    let (_, answer) = call(&gateway, "py_weather", json!({"city": "Oslo"}));
    assert!(answer.contains("-32602"), "{answer}");
}

#[test]
fn an_upstream_killed_mid_call_fails_the_call_and_the_others_keep_serving() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let block = dir.path().join("block");
    let servers = format!(
        "{}{}",
        python_upstream(
            python,
            "doomed",
            "doomed",
            &format!(", \"--block\", {:?}", block.display().to_string())
        ),
        python_upstream(python, "healthy", "ok", "")
    );
    let gateway = Gateway::start(&config(dir.path(), "stateless = true", &servers));
    let alice = format!("Bearer {ALICE}");
    let call = |tool: &str, args: Value| {
        let body = call_request(tool, args);
        post(&gateway.url, &[("authorization", alice.as_str())], body)
    };
    let (_, answer) = call("doomed_pid", json!({}));
    let pid: Value = serde_json::from_str(&answer).unwrap();
    let pid = pid["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(&block, "").unwrap();
    let slow = std::thread::spawn({
        let url = gateway.url.clone();
        let alice = alice.clone();
        move || {
            let body = call_request("doomed_slow", json!({"seconds": 30}));
            post(&url, &[("authorization", alice.as_str())], body)
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let killed = Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(killed.success());
    let (status, answer) = slow.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let (_, answer) = call("ok_echo", json!({"text": "still here"}));
    assert!(answer.contains("still here"), "{answer}");
    let (_, answer) = call("doomed_echo", json!({"text": "hi"}));
    assert!(answer.contains("temporarily unavailable"), "{answer}");
    eventually("the health report to show the dead server", || {
        let health = runtime().block_on(async {
            crate::http_client::client()
                .get(format!("{}/healthz", gateway.base))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        });
        health["status"] == "degraded" && health["servers"]["doomed"]["state"] == "disconnected"
    });
    std::fs::remove_file(&block).unwrap();
    eventually("the server to be back", || {
        call("doomed_echo", json!({"text": "back"}))
            .1
            .contains("\"back\"")
    });
}

#[test]
fn calls_over_a_users_rate_limit_get_a_json_rpc_error() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&config(
        dir.path(),
        "calls_per_minute = 2\nstateless = true",
        &python_upstream(python, "python", "py", ""),
    ));
    let body = call_request("py_echo", json!({"text": "hi"}));
    let alice = format!("Bearer {ALICE}");
    let bob = format!("Bearer {BOB}");
    for _ in 0..2 {
        let (status, answer) = post(
            &gateway.url,
            &[("authorization", alice.as_str())],
            body.clone(),
        );
        assert_eq!(status, 200);
        assert!(answer.contains("\"hi\""), "{answer}");
    }
    let (status, answer) = post(
        &gateway.url,
        &[("authorization", alice.as_str())],
        body.clone(),
    );
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32003, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("rate limit: at most 2 tool calls per minute"),
        "{answer}"
    );
    // Bob's calls are his own.
    let (_, answer) = post(&gateway.url, &[("authorization", bob.as_str())], body);
    assert!(answer.contains("\"hi\""), "{answer}");
}

/// A configuration tool `add` (a mock answering 5), so the SDK clients' `--toggle` scripts,
/// which switch `add` off and on, run against the gateway as they do against the example.
const ADD_TOOL: &str = r#"
[[tools]]
name = "add"
description = "Add two integers."
type = "function"
handler = "add"
implementation = { type = "mock", mock_response = 5 }
parameters = { type = "object", properties = { a = { type = "integer" }, b = { type = "integer" } }, required = ["a", "b"] }
"#;

/// Checks what an SDK client script (`client.py`, `client.mjs`) saw of the gateway at
/// `version`, with its `--toggle` part.
fn check_sdk_report(report: &Value, version: &str) {
    assert_eq!(report["protocol_version"], version, "{report}");
    assert_eq!(report["server_name"], "tool-core-gateway");
    assert_eq!(report["tools_list_changed"], true);
    let mut names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    let every = [
        "add",
        "py_echo",
        "py_pid",
        "py_redefine",
        "py_slow",
        "py_weather",
        "set_tool_enabled",
    ];
    assert_eq!(names, every, "{report}");
    assert_eq!(
        report["calls"]["add_ok"],
        json!({"is_error": false, "text": "5"})
    );
    assert_eq!(
        report["calls"]["unknown_tool"]["error_code"], -32602,
        "{report}"
    );
    let toggle = &report["toggle"];
    assert_eq!(
        toggle["switch_off"],
        json!({"is_error": false, "text": "add is off"})
    );
    assert_eq!(toggle["notified"], "ToolsListChanged");
    let mut off: Vec<&str> = toggle["tools_while_off"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    off.sort_unstable();
    assert_eq!(off, every[1..], "{report}");
    assert_eq!(toggle["call_while_off"]["error_code"], -32602);
    assert_eq!(
        toggle["switch_on"],
        json!({"is_error": false, "text": "add is on"})
    );
}

#[test]
fn the_sdk_clients_use_the_gateway_over_stdio_and_http() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "anonymous_user = \"local\"",
        &format!("{}{ADD_TOOL}", python_upstream(python, "python", "py", "")),
    );
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/client.py");
    for version in ["2026-07-28", "2025-06-18"] {
        let mut command = Command::new(python);
        command
            .arg(&client)
            .args([
                "--version",
                version,
                "--toggle",
                "stdio",
                GATEWAY,
                "--stdio",
                "--config",
            ])
            .arg(&config);
        check_sdk_report(&json_report(command, Duration::from_secs(120)), version);
    }
    let Some(sdk) = crate::mcp_node::sdk() else {
        return;
    };
    // On loopback with an `anonymous_user`, a client without a token is that user.
    let gateway = Gateway::start(&config);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_node/client.mjs");
    for version in ["2025-11-25", "2025-03-26"] {
        let mut command = Command::new("node");
        command.arg(&script).arg(sdk).args([
            "--version",
            version,
            "--toggle",
            "http",
            &gateway.url,
        ]);
        check_sdk_report(&json_report(command, Duration::from_secs(120)), version);
    }
}

#[test]
fn a_switch_made_through_one_gateway_reaches_a_stream_on_another_through_postgres() {
    let Some(python) = python() else { return };
    let Some(postgres) = crate::store_support::postgres() else {
        return;
    };
    let (url, _) = runtime().block_on(postgres.create_database());
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let gateways: Vec<Gateway> = dirs
        .iter()
        .map(|dir| {
            let path = config(dir.path(), "", &python_upstream(python, "python", "py", ""));
            // Both processes keep their switches in the same PostgreSQL database.
            let text = std::fs::read_to_string(&path).unwrap();
            let store = text
                .lines()
                .find(|line| line.starts_with("store = "))
                .unwrap();
            std::fs::write(&path, text.replace(store, &format!("store = {url:?}"))).unwrap();
            Gateway::start(&path)
        })
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/gateway_client.py");
    let mut listener = Command::new(python)
        .arg(script)
        .args(["--listen", &gateways[1].url, ALICE])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(listener.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    // The switch goes to the first process; the stream is held by the second.
    let (status, answer) = gateways[0].admin(
        reqwest::Method::PUT,
        "/admin/users/alice/tools/py_echo",
        Some(json!({"enabled": false})),
    );
    assert_eq!(status, 200, "{answer}");
    let mut report = String::new();
    stdout.read_line(&mut report).unwrap();
    let status = listener.wait().unwrap();
    assert!(status.success());
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["notified"], true, "{report}");
    assert!(
        !report["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("py_echo")),
        "{report}"
    );
}

/// The official Python SDK's client of the gateway's tool search, as the user of `token`.
fn search_client(python: &Path, gateway: &Gateway, token: &str, query: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/gateway_search.py");
    let mut command = Command::new(python);
    command.arg(script).args([&gateway.url, token, query]);
    json_report(command, Duration::from_secs(120))
}

#[test]
fn with_tool_search_a_user_sees_search_and_pins_and_never_finds_a_switched_off_tool() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&config(
        dir.path(),
        "tool_search = true\npinned_tools = [\"py_echo\"]",
        &python_upstream(python, "python", "py", ""),
    ));
    let (status, answer) = gateway.admin(
        reqwest::Method::PUT,
        "/admin/users/bob/tools/py_weather",
        Some(json!({"enabled": false})),
    );
    assert_eq!(status, 200, "{answer}");
    let listed = json!(["py_echo", "search_tools", "set_tool_enabled"]);

    let alice = search_client(python, &gateway, ALICE, "weather in a city");
    assert_eq!(alice["tools"], listed, "{alice}");
    let found = &alice["search"]["found"]["tools"];
    assert_eq!(found[0]["name"], "py_weather", "{alice}");
    assert_eq!(found[0]["description"], "The weather in a city.", "{alice}");
    assert_eq!(
        found[0]["inputSchema"]["required"],
        json!(["city"]),
        "{alice}"
    );
    let selected: Vec<&Value> = alice["select"]["found"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["name"])
        .collect();
    assert_eq!(
        selected,
        [&json!("py_weather"), &json!("py_echo")],
        "{alice}"
    );
    assert_eq!(alice["select"]["found"]["missing"], json!([]), "{alice}");
    // A tool found, not listed, is called by its name.
    assert_eq!(
        alice["weather"],
        json!({"is_error": false, "text": "sunny in Oslo"}),
        "{alice}"
    );

    // Bob switched py_weather off: no search finds it, and it cannot be called.
    let bob = search_client(python, &gateway, BOB, "weather in a city");
    assert_eq!(bob["tools"], listed, "{bob}");
    assert!(
        !bob["search"]["found"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "py_weather"),
        "{bob}"
    );
    assert_eq!(
        bob["select"]["found"]["missing"],
        json!(["py_weather"]),
        "{bob}"
    );
    assert_eq!(bob["weather"]["error_code"], -32602, "{bob}");
}
