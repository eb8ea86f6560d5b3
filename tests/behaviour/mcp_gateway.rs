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
use crate::mcp_python::{json_report, listening_url, python};

const GATEWAY: &str = env!("CARGO_BIN_EXE_mcp_gateway_example");
pub(crate) const ALICE: &str = "alice-token-0123456789";
pub(crate) const BOB: &str = "bob-token-9876543210";
pub(crate) const ADMIN: &str = "admin-token-abcdef";
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// The `[gateway]` table with its SQLite store in `dir` and `gateway_extra`, the two users
/// every test has, then `servers` (TOML).
pub(crate) fn config_text(dir: &Path, gateway_extra: &str, servers: &str) -> String {
    format!(
        "[gateway]\nstore = \"sqlite://{store}\"\nadmin_token_sha256 = \"{admin}\"\n{gateway_extra}\n\
         [[users]]\nname = \"alice\"\ntoken_sha256 = \"{alice}\"\n\n\
         [[users]]\nname = \"bob\"\ntoken_sha256 = \"{bob}\"\n\n{servers}",
        store = dir.join("switches.db").display(),
        admin = hash_token(ADMIN),
        alice = hash_token(ALICE),
        bob = hash_token(BOB),
    )
}

/// [`config_text`] written to `gateway.toml` in `dir`; its path.
pub(crate) fn config(dir: &Path, gateway_extra: &str, servers: &str) -> PathBuf {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config_text(dir, gateway_extra, servers)).unwrap();
    path
}

/// The configuration at `path` with its store at `url` (so several processes share it).
pub(crate) fn with_store(path: &Path, url: &str) -> PathBuf {
    let text = std::fs::read_to_string(path).unwrap();
    let store = text
        .lines()
        .find(|line| line.starts_with("store = "))
        .unwrap();
    std::fs::write(path, text.replace(store, &format!("store = {url:?}"))).unwrap();
    path.to_owned()
}

/// A `[[servers]]` entry `name` running the Python script `script` (in `tests/mcp_python`)
/// with `args`, then the lines `toml`.
pub(crate) fn python_server(
    python: &Path,
    script: &str,
    name: &str,
    toml: &str,
    args: &[&str],
) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("mcp_python")
        .join(script);
    let args: Vec<String> = std::iter::once(script.display().to_string())
        .chain(args.iter().map(|arg| (*arg).to_owned()))
        .map(|arg| format!("{arg:?}"))
        .collect();
    format!(
        "[[servers]]\nname = \"{name}\"\ncommand = {python:?}\nargs = [{args}]\n{toml}\n\n",
        python = python.display().to_string(),
        args = args.join(", "),
    )
}

/// A `[[servers]]` entry for the Python upstream, with `args`.
pub(crate) fn python_upstream(python: &Path, name: &str, prefix: &str, args: &[&str]) -> String {
    let prefix = format!("prefix = \"{prefix}\"");
    python_server(python, "gateway_upstream.py", name, &prefix, args)
}

/// The Python upstream as most tests have it: server `python`, prefix `py`.
fn py_upstream(python: &Path) -> String {
    python_upstream(python, "python", "py", &[])
}

/// The gateway program serving HTTP on a free loopback port; its stderr is kept for the
/// tests to read; killed on drop (then its folder, if it has one of its own, is removed).
pub(crate) struct Gateway {
    child: Child,
    pub(crate) url: String,
    base: String,
    log: Arc<Mutex<String>>,
    folder: Option<tempfile::TempDir>,
}

impl Gateway {
    pub(crate) fn start(config: &Path) -> Self {
        Self::start_with(config, &[], &[])
    }

    /// The gateway in front of the Python upstream, with `gateway_extra` in its `[gateway]`
    /// table, its configuration and SQLite store in a folder of its own.
    pub(crate) fn with_python(python: &Path, gateway_extra: &str) -> Self {
        Self::in_folder(python, gateway_extra, None)
    }

    /// Like [`with_python`](Self::with_python), with the store at `store` (so several
    /// processes share it).
    pub(crate) fn with_python_store(python: &Path, gateway_extra: &str, store: &str) -> Self {
        Self::in_folder(python, gateway_extra, Some(store))
    }

    fn in_folder(python: &Path, gateway_extra: &str, store: Option<&str>) -> Self {
        let folder = tempfile::tempdir().unwrap();
        let mut path = config(folder.path(), gateway_extra, &py_upstream(python));
        if let Some(store) = store {
            path = with_store(&path, store);
        }
        let mut gateway = Self::start(&path);
        gateway.folder = Some(folder);
        gateway
    }

    /// Two gateways in front of the Python upstream (each its own), with `gateway_extra`,
    /// sharing a new PostgreSQL database; its URL. `None` (the test skips) without PostgreSQL.
    pub(crate) fn two_sharing_postgres(
        python: &Path,
        gateway_extra: &str,
    ) -> Option<(String, [Self; 2])> {
        let postgres = crate::store_support::postgres()?;
        let (url, _) = runtime().block_on(postgres.create_database());
        let start = || Self::with_python_store(python, gateway_extra, &url);
        let gateways = [start(), start()];
        Some((url, gateways))
    }

    /// The folder the gateway was given by [`with_python`](Self::with_python).
    fn folder(&self) -> &Path {
        self.folder
            .as_ref()
            .expect("a gateway with a folder")
            .path()
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
        let url = listening_url(child.stdout.take().unwrap()).unwrap_or_else(|line| {
            panic!(
                "unexpected first line from the gateway: {line:?}\n{}",
                log.lock().unwrap()
            )
        });
        let base = url.trim_end_matches("/mcp").to_owned();
        Self {
            child,
            url,
            base,
            log,
            folder: None,
        }
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub(crate) fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
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

    /// Switches `tool` for `user` through the admin API.
    pub(crate) fn switch(&self, user: &str, tool: &str, enabled: bool) {
        let path = format!("/admin/users/{user}/tools/{tool}");
        let (status, answer) = self.admin(
            reqwest::Method::PUT,
            &path,
            Some(json!({"enabled": enabled})),
        );
        assert_eq!(status, 200, "{answer}");
    }

    /// Whether `tool` is on for `user`, as the admin API reports it (`None`: not served).
    pub(crate) fn is_on(&self, user: &str, tool: &str) -> Option<bool> {
        let path = format!("/admin/users/{user}/tools");
        let (status, tools) = self.admin(reqwest::Method::GET, &path, None);
        assert_eq!(status, 200, "{tools}");
        tools["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{tools}"))
            .iter()
            .find(|listed| listed["name"] == tool)
            .and_then(|listed| listed["enabled"].as_bool())
    }

    /// `GET /healthz`.
    pub(crate) fn health(&self) -> Value {
        runtime().block_on(async {
            crate::http_client::client()
                .get(format!("{}/healthz", self.base))
                .timeout(LIMIT)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    }

    /// Calls `tool` with a self-contained 2026-07-28 request as the user of `token`; the
    /// status and the body.
    pub(crate) fn call(&self, token: &str, tool: &str, arguments: Value) -> (u16, String) {
        post_as(&self.url, token, call_request(tool, arguments))
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
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
pub(crate) fn eventually(what: &str, mut check: impl FnMut() -> bool) {
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
        py_upstream(python),
        everything.display().to_string(),
    );
    let gateway = Gateway::start(&config(dir.path(), "", &servers));
    // Bob has ev_echo switched off by an operator; Alice has not.
    gateway.switch("bob", "ev_echo", false);

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
    assert_eq!(gateway.is_on("bob", "ev_echo"), Some(false));
    let health = gateway.health();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["servers"]["everything"]["state"], "connected");
    assert_eq!(health["servers"]["python"]["state"], "connected");
}

/// One MCP request to the gateway over plain HTTP (a stateless 2026-07-28 request, or an
/// `initialize`), with `headers`; the status and the body.
pub(crate) fn post(url: &str, headers: &[(&str, &str)], body: String) -> (u16, String) {
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

/// [`post`] as the user of `token`.
pub(crate) fn post_as(url: &str, token: &str, body: String) -> (u16, String) {
    let authorization = format!("Bearer {token}");
    post(url, &[("authorization", authorization.as_str())], body)
}

/// A self-contained 2026-07-28 request of `method` with `params`.
pub(crate) fn stateless_request(method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// A `tools/call` as a self-contained 2026-07-28 request.
pub(crate) fn call_request(tool: &str, arguments: Value) -> String {
    stateless_request("tools/call", json!({"name": tool, "arguments": arguments}))
}

/// Sends a self-contained 2026-07-28 request of `method` to `url` as the user of `token`,
/// which must be answered `200`; the JSON-RPC answer.
pub(crate) fn stateless(url: &str, token: &str, method: &str, params: Value) -> Value {
    let (status, body) = post_as(url, token, stateless_request(method, params));
    assert_eq!(status, 200, "{body}");
    jsonrpc_answer(&body).unwrap_or_else(|| panic!("no JSON-RPC answer: {body}"))
}

/// The JSON-RPC answer in a body: its JSON, or the first message with an `id` in its event
/// stream.
pub(crate) fn jsonrpc_answer(body: &str) -> Option<Value> {
    serde_json::from_str(body).ok().or_else(|| {
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message.get("id").is_some())
    })
}

/// The names of the tools a `tools/list` answer lists, sorted.
pub(crate) fn tool_names(answer: &Value) -> Vec<String> {
    let mut names: Vec<String> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// A `tools/call` of `set_tool_enabled` switching `tool` off.
pub(crate) fn switch_off_request(tool: &str) -> String {
    call_request("set_tool_enabled", json!({"name": tool, "enabled": false}))
}

/// What a refused request is: a label, its headers, its body and the status expected.
type Refused<'a> = (&'a str, Vec<(&'a str, &'a str)>, String, u16);

#[test]
fn refused_requests_get_their_status_and_change_nothing() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(python, "max_request_bytes = 4096\nstateless = true");
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
    assert_eq!(gateway.is_on("alice", "py_echo"), Some(true));
    // The same request with Alice's token does switch.
    let (status, answer) = post(&gateway.url, &[("authorization", alice.as_str())], switch);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("py_echo is off"), "{answer}");
    assert_eq!(gateway.is_on("alice", "py_echo"), Some(false));
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
        python_upstream(python, "first", "same", &[]),
        python_upstream(python, "second", "same", &[])
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
    let config = config(dir.path(), "stateless = true", &py_upstream(python));
    let call = |gateway: &Gateway, tool: &str, args: Value| gateway.call(ALICE, tool, args);
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
            &["--block", &block.display().to_string()]
        ),
        python_upstream(python, "healthy", "ok", &[])
    );
    let gateway = Gateway::start(&config(dir.path(), "stateless = true", &servers));
    let call = |tool: &str, args: Value| gateway.call(ALICE, tool, args);
    let (_, answer) = call("doomed_pid", json!({}));
    let pid: Value = serde_json::from_str(&answer).unwrap();
    let pid = pid["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(&block, "").unwrap();
    let (status, answer) = std::thread::scope(|scope| {
        let slow = scope.spawn(|| call("doomed_slow", json!({"seconds": 30})));
        std::thread::sleep(Duration::from_millis(500));
        let killed = Command::new("kill").args(["-9", &pid]).status().unwrap();
        assert!(killed.success());
        slow.join().unwrap()
    });
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let (_, answer) = call("ok_echo", json!({"text": "still here"}));
    assert!(answer.contains("still here"), "{answer}");
    eventually("the health report to show the dead server", || {
        let health = gateway.health();
        health["status"] == "degraded" && health["servers"]["doomed"]["state"] == "disconnected"
    });
    // Once its restart has failed too, for a reason that names its command line and its last
    // words on stderr: the caller learns the tool is unavailable, and nothing of that reason
    // (an argument or an error message may hold a secret); the admin's health report has it.
    eventually("the restart to have failed", || {
        gateway.admin(reqwest::Method::GET, "/healthz", None).1["servers"]["doomed"]["error"]
            .as_str()
            .is_some_and(|error| error.contains("blocked by the test"))
    });
    let (_, answer) = call("doomed_echo", json!({"text": "hi"}));
    assert!(answer.contains("temporarily unavailable"), "{answer}");
    for secret in ["blocked by the test", "--block", "gateway_upstream.py"] {
        assert!(!answer.contains(secret), "{secret} in {answer}");
    }
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
    let gateway = Gateway::with_python(python, "calls_per_minute = 2\nstateless = true");
    let echo = |token: &str| gateway.call(token, "py_echo", json!({"text": "hi"}));
    for _ in 0..2 {
        let (status, answer) = echo(ALICE);
        assert_eq!(status, 200);
        assert!(answer.contains("\"hi\""), "{answer}");
    }
    let (status, answer) = echo(ALICE);
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
    let (_, answer) = echo(BOB);
    assert!(answer.contains("\"hi\""), "{answer}");
}

/// A configuration tool `add` (a mock answering 5), so the SDK clients' `--toggle` scripts,
/// which switch `add` off and on, run against the gateway as they do against the example.
pub(crate) const ADD_TOOL: &str = r#"
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
        &format!("{}{ADD_TOOL}", py_upstream(python)),
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
    // With Alice's bearer token the TypeScript SDK is Alice: her switch decides its list.
    gateway.switch("alice", "py_echo", false);
    let mut command = Command::new("node");
    command
        .arg(&script)
        .arg(sdk)
        .args(["--token", ALICE, "http", &gateway.url]);
    let report = json_report(command, Duration::from_secs(120));
    let mut names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add",
            "py_pid",
            "py_redefine",
            "py_slow",
            "py_weather",
            "set_tool_enabled"
        ],
        "{report}"
    );
    assert_eq!(
        report["calls"]["add_ok"],
        json!({"is_error": false, "text": "5"})
    );
    // The anonymous user's list still has it.
    let mut command = Command::new("node");
    command.arg(&script).arg(sdk).args(["http", &gateway.url]);
    let report = json_report(command, Duration::from_secs(120));
    assert!(
        report["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{report}"))
            .iter()
            .any(|tool| tool["name"] == "py_echo"),
        "{report}"
    );
}

#[test]
fn a_switch_made_through_one_gateway_reaches_a_stream_on_another_through_postgres() {
    let Some(python) = python() else { return };
    let Some((_, gateways)) = Gateway::two_sharing_postgres(python, "") else {
        return;
    };
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
    gateways[0].switch("alice", "py_echo", false);
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
    let gateway = Gateway::with_python(python, "tool_search = true\npinned_tools = [\"py_echo\"]");
    gateway.switch("bob", "py_weather", false);
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

/// The protocol version of the session tests (one with HTTP sessions).
pub(crate) const SESSION_VERSION: &str = "2025-06-18";

/// A request of `method` to the MCP endpoint at `url` as the user of `token`, in HTTP session
/// `session` (if any).
fn session_request(
    method: reqwest::Method,
    url: &str,
    token: &str,
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut request = crate::http_client::client()
        .request(method, url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", SESSION_VERSION)
        .bearer_auth(token)
        .timeout(LIMIT);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
}

/// An answer in an HTTP session: the status, the `mcp-session-id` answered, the body as it
/// came, and its JSON-RPC answer (see [`jsonrpc_answer`]).
pub(crate) struct SessionAnswer {
    pub(crate) status: u16,
    pub(crate) session: Option<String>,
    pub(crate) body: String,
    pub(crate) message: Option<Value>,
}

/// Sends `method` to the MCP endpoint as the user of `token`, in `session` (if any), with
/// `headers` and `body`. The answer is read until it holds a JSON-RPC answer or ends, for at
/// most [`LIMIT`]; without a `body` (a `GET`'s stream stays open) for at most 5 s.
pub(crate) async fn session_send(
    method: reqwest::Method,
    url: &str,
    token: &str,
    session: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> SessionAnswer {
    let mut request = session_request(method, url, token, session);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let read_for = if body.is_some() {
        LIMIT
    } else {
        Duration::from_secs(5)
    };
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let mut response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|id| id.to_str().unwrap().to_owned());
    let mut body = String::new();
    let deadline = tokio::time::Instant::now() + read_for;
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, response.chunk()).await {
        body.push_str(&String::from_utf8_lossy(&chunk));
        if body.contains("\"id\":") && body.ends_with("\n\n") {
            break;
        }
    }
    let message = jsonrpc_answer(&body);
    SessionAnswer {
        status,
        session,
        body,
        message,
    }
}

/// Posts one JSON-RPC `message` to the MCP endpoint as the user of `token`, in `session` (if
/// any).
pub(crate) async fn session_message(
    url: &str,
    token: &str,
    session: Option<&str>,
    message: &Value,
) -> SessionAnswer {
    session_send(
        reqwest::Method::POST,
        url,
        token,
        session,
        &[],
        Some(message),
    )
    .await
}

/// [`session_message`] from a test without a runtime: the status, the `mcp-session-id`
/// answered, and the JSON-RPC answer, if any.
pub(crate) fn session_post(
    url: &str,
    token: &str,
    session: Option<&str>,
    message: &Value,
) -> (u16, Option<String>, Option<Value>) {
    let answer = runtime().block_on(session_message(url, token, session, message));
    (answer.status, answer.session, answer.message)
}

/// An `initialize` request at [`SESSION_VERSION`].
pub(crate) fn initialize_request() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": SESSION_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "session-test", "version": "1"}
        }
    })
}

/// The `notifications/initialized` that ends a session's initialization.
pub(crate) fn initialized_notification() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// A `tools/list` request.
fn list_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

/// Sends `initialize` as the user of `token`; the new session's id.
pub(crate) async fn initialize_only(url: &str, token: &str) -> String {
    let answer = session_message(url, token, None, &initialize_request()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.session.expect("an mcp-session-id")
}

/// Begins an HTTP session as the user of `token` (`initialize`, then `initialized`); its id.
pub(crate) async fn begin(url: &str, token: &str) -> String {
    let id = initialize_only(url, token).await;
    let answer = session_message(url, token, Some(&id), &initialized_notification()).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    id
}

/// [`begin`] from a test without a runtime.
pub(crate) fn begin_session(url: &str, token: &str) -> String {
    runtime().block_on(begin(url, token))
}

/// The tools the session lists, by name, sorted; `Err` with the answer when it lists none.
pub(crate) async fn listed_tools(
    url: &str,
    token: &str,
    session: &str,
) -> Result<Vec<String>, String> {
    let answer = session_message(url, token, Some(session), &list_request()).await;
    match &answer.message {
        Some(message) if answer.status == 200 && message["result"]["tools"].is_array() => {
            Ok(tool_names(message))
        }
        _ => Err(format!("{}: {}", answer.status, answer.body)),
    }
}

/// The tools the session lists, by name, sorted.
pub(crate) fn session_tools(url: &str, token: &str, session: &str) -> Vec<String> {
    runtime()
        .block_on(listed_tools(url, token, session))
        .unwrap_or_else(|answer| panic!("{answer}"))
}

/// Calls `tool` in the session; the JSON-RPC answer.
fn session_call(url: &str, token: &str, session: &str, tool: &str, arguments: Value) -> Value {
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    });
    let (status, _, answer) = session_post(url, token, Some(session), &call);
    assert_eq!(status, 200, "{answer:?}");
    answer.unwrap()
}

/// The text of a `tools/call` result.
pub(crate) fn result_text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
}

/// The tools of the Python upstream and the gateway, as listed to everyone.
const PY_TOOLS: [&str; 6] = [
    "py_echo",
    "py_pid",
    "py_redefine",
    "py_slow",
    "py_weather",
    "set_tool_enabled",
];

/// `PY_TOOLS` without `off`.
pub(crate) fn py_tools_without(off: &[&str]) -> Vec<String> {
    PY_TOOLS
        .iter()
        .filter(|name| !off.contains(name))
        .map(|name| (*name).to_owned())
        .collect()
}

/// How a session's event stream went.
#[derive(Debug, PartialEq, Eq)]
enum Watched {
    /// A `notifications/tools/list_changed` came.
    Notified,
    /// The server ended the stream.
    Ended,
    /// Neither, within 30 s.
    Quiet,
}

/// Opens the session's standalone event stream (HTTP `GET`) on `url` in a thread; the thread
/// sends on `ready` once the stream is open and answers how it went.
fn watch_session(
    url: String,
    token: &'static str,
    session: String,
    ready: std::sync::mpsc::Sender<()>,
) -> std::thread::JoinHandle<Watched> {
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let mut response = crate::http_client::client()
                .get(&url)
                .header("accept", "text/event-stream")
                .header("mcp-protocol-version", SESSION_VERSION)
                .header("mcp-session-id", &session)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 200);
            ready.send(()).unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            let mut seen = String::new();
            loop {
                match tokio::time::timeout_at(deadline, response.chunk()).await {
                    Ok(Ok(Some(chunk))) => {
                        seen.push_str(&String::from_utf8_lossy(&chunk));
                        if seen.contains("notifications/tools/list_changed") {
                            return Watched::Notified;
                        }
                    }
                    Ok(Ok(None) | Err(_)) => return Watched::Ended,
                    Err(_) => return Watched::Quiet,
                }
            }
        })
    })
}

/// The status of an HTTP `method` request (`GET`: for the event stream) in session `session`
/// as the user of `token`; the body is not read.
pub(crate) fn session_status(
    method: reqwest::Method,
    url: &str,
    token: &str,
    session: &str,
) -> u16 {
    let request = session_request(method, url, token, Some(session));
    runtime().block_on(async move { request.send().await.unwrap().status().as_u16() })
}

/// Counts the rows `query` (a `SELECT count(*)` with `$1` bound to `key`) finds in the
/// PostgreSQL database at `url`.
pub(crate) fn pg_count(url: &str, query: &'static str, key: &str) -> i64 {
    use sqlx::Connection as _;
    runtime().block_on(async {
        let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_scalar(query)
            .bind(key)
            .fetch_one(&mut connection)
            .await
            .unwrap()
    })
}

#[test]
fn a_sessions_switches_follow_it_to_another_gateway_through_postgres_and_end_with_it() {
    let Some(python) = python() else { return };
    let Some((url, gateways)) = Gateway::two_sharing_postgres(python, "") else {
        return;
    };
    let (first, second) = (&gateways[0].url, &gateways[1].url);

    // Alice begins a session on the first process and switches py_echo off in it only.
    let session = begin_session(first, ALICE);
    let answer = session_call(
        first,
        ALICE,
        &session,
        "set_tool_enabled",
        json!({"name": "py_echo", "enabled": false, "scope": "session"}),
    );
    assert_eq!(result_text(&answer), "py_echo is off", "{answer}");
    assert_eq!(
        session_tools(first, ALICE, &session),
        py_tools_without(&["py_echo"])
    );

    // The second process, which never saw the session, serves it with its switch.
    assert_eq!(
        session_tools(second, ALICE, &session),
        py_tools_without(&["py_echo"])
    );
    let answer = session_call(second, ALICE, &session, "py_echo", json!({"text": "hi"}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // Alice's other sessions, and her user's switches, are untouched.
    let other = begin_session(second, ALICE);
    assert_eq!(session_tools(second, ALICE, &other), py_tools_without(&[]));
    assert_eq!(gateways[1].is_on("alice", "py_echo"), Some(true));

    // A switch made in the session on the second process reaches the session's stream on the
    // first, and the first process's view.
    let (ready, opened) = std::sync::mpsc::channel();
    let watcher = watch_session(first.clone(), ALICE, session.clone(), ready);
    opened.recv_timeout(LIMIT).unwrap();
    let answer = session_call(
        second,
        ALICE,
        &session,
        "set_tool_enabled",
        json!({"name": "py_weather", "enabled": false, "scope": "session"}),
    );
    assert_eq!(result_text(&answer), "py_weather is off", "{answer}");
    assert_eq!(
        watcher.join().unwrap(),
        Watched::Notified,
        "no list_changed on the first process's stream"
    );
    assert_eq!(
        session_tools(first, ALICE, &session),
        py_tools_without(&["py_echo", "py_weather"])
    );
    let scope = format!("gateway-session.alice.{session}");
    let switches = "SELECT count(*) FROM tool_preferences WHERE scope = $1";
    assert_eq!(pg_count(&url, switches, &scope), 2);

    // Ending the session (through either process) removes it and its switches from the store.
    assert_eq!(
        session_status(reqwest::Method::DELETE, second, ALICE, &session),
        202
    );
    assert_eq!(pg_count(&url, switches, &scope), 0);
    let rows = "SELECT count(*) FROM tool_gateway_sessions WHERE id = $1";
    assert_eq!(pg_count(&url, rows, &session), 0);
}

#[test]
fn another_users_or_an_unknown_session_id_gets_the_same_answer_from_every_gateway() {
    let Some(python) = python() else { return };
    let Some((url, gateways)) = Gateway::two_sharing_postgres(python, "") else {
        return;
    };
    let (first, second) = (&gateways[0].url, &gateways[1].url);
    let alices = begin_session(first, ALICE);
    let list = list_request();
    let sessions = "SELECT count(*) FROM tool_gateway_sessions WHERE id <> $1";
    let owned = "SELECT count(*) FROM tool_gateway_sessions WHERE id = $1 AND owner = 'alice'";
    let unknown = "6f1c2a40-0000-4000-8000-000000000000";
    // Bob presents Alice's session to the process holding it, to one that does not, and to
    // that one again once Alice's own request made it hold the session too: to him it is an
    // unknown session.
    for (what, gateway) in [
        ("holding", first),
        ("not holding", second),
        ("holding since", second),
    ] {
        let foreign = session_post(gateway, BOB, Some(&alices), &list);
        assert_eq!(foreign.0, 404, "{what}: {foreign:?}");
        assert_eq!(
            foreign,
            session_post(gateway, BOB, Some(unknown), &list),
            "{what}"
        );
        for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
            assert_eq!(
                session_status(method.clone(), gateway, BOB, &alices),
                404,
                "{what}: {method}"
            );
        }
        // Nothing changed: Alice's session is hers and serves her, and Bob got none.
        assert_eq!(pg_count(&url, owned, &alices), 1, "{what}");
        assert_eq!(pg_count(&url, sessions, &alices), 0, "{what}");
        assert_eq!(
            session_tools(gateway, ALICE, &alices),
            py_tools_without(&[])
        );
    }
    // An id no process knows, one no server would make, and an over-long one: not found.
    let long = "a".repeat(10_000);
    for unknown in [unknown, "x' OR '1'='1", &long] {
        for gateway in [first, second] {
            let (status, _, answer) = session_post(gateway, ALICE, Some(unknown), &list);
            assert_eq!(status, 404, "{answer:?}");
            assert_eq!(
                session_status(reqwest::Method::GET, gateway, ALICE, unknown),
                404
            );
        }
    }
    assert_eq!(pg_count(&url, sessions, &alices), 0);
    for gateway in &gateways {
        let log = gateway.log();
        assert!(!log.contains("panicked"), "{log}");
    }
}

#[test]
fn with_the_store_in_memory_a_session_is_its_users_alone_too() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python_store(python, "", "memory:");
    let alices = begin_session(&gateway.url, ALICE);
    let list = list_request();
    // To Bob, Alice's session is an unknown one.
    let (status, _, answer) = session_post(&gateway.url, BOB, Some(&alices), &list);
    assert_eq!(status, 404, "{answer:?}");
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        assert_eq!(
            session_status(method.clone(), &gateway.url, BOB, &alices),
            404,
            "{method}"
        );
    }
    assert_eq!(
        session_tools(&gateway.url, ALICE, &alices),
        py_tools_without(&[])
    );
}

#[test]
fn a_session_ended_through_one_gateway_ends_on_the_others_with_their_streams() {
    let Some(python) = python() else { return };
    let Some((_, gateways)) = Gateway::two_sharing_postgres(python, "") else {
        return;
    };
    let (first, second) = (&gateways[0].url, &gateways[1].url);
    // Alice's session, begun on the first process, is held by the second too, with a stream.
    let session = begin_session(first, ALICE);
    assert_eq!(
        session_tools(second, ALICE, &session),
        py_tools_without(&[])
    );
    let (ready, opened) = std::sync::mpsc::channel();
    let watcher = watch_session(second.clone(), ALICE, session.clone(), ready);
    opened.recv_timeout(LIMIT).unwrap();
    // She ends it through the first.
    assert_eq!(
        session_status(reqwest::Method::DELETE, first, ALICE, &session),
        202
    );
    assert_eq!(watcher.join().unwrap(), Watched::Ended);
    let list = list_request();
    for gateway in [first, second] {
        let (status, _, answer) = session_post(gateway, ALICE, Some(&session), &list);
        assert_eq!(status, 404, "{answer:?}");
    }
    // Her other sessions go on.
    let other = begin_session(second, ALICE);
    assert_eq!(session_tools(first, ALICE, &other), py_tools_without(&[]));
}

#[test]
fn an_idle_session_ends_with_its_switches_and_not_while_used() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(python, "session_idle_timeout_secs = 3");
    let session = begin_session(&gateway.url, ALICE);
    let answer = session_call(
        &gateway.url,
        ALICE,
        &session,
        "set_tool_enabled",
        json!({"name": "py_echo", "enabled": false, "scope": "session"}),
    );
    assert_eq!(result_text(&answer), "py_echo is off", "{answer}");
    let database = format!(
        "sqlite://{}",
        gateway.folder().join("switches.db").display()
    );
    let count = |query: &'static str, key: &str| -> i64 {
        use sqlx::Connection as _;
        runtime().block_on(async {
            let mut connection = sqlx::SqliteConnection::connect(&database).await.unwrap();
            sqlx::query_scalar(query)
                .bind(key)
                .fetch_one(&mut connection)
                .await
                .unwrap()
        })
    };
    let scope = format!("gateway-session.alice.{session}");
    let switches = || {
        count(
            "SELECT count(*) FROM tool_preferences WHERE scope = $1",
            &scope,
        )
    };
    let rows = || {
        count(
            "SELECT count(*) FROM tool_gateway_sessions WHERE id = $1",
            &session,
        )
    };
    // Used for twice its idle timeout, the session lasts.
    let used = Instant::now();
    while used.elapsed() < Duration::from_secs(6) {
        assert_eq!(
            session_tools(&gateway.url, ALICE, &session),
            py_tools_without(&["py_echo"])
        );
        std::thread::sleep(Duration::from_millis(400));
    }
    assert_eq!(switches(), 1);
    assert_eq!(rows(), 1);
    // Left alone, it ends, and its switches go with it.
    eventually("the idle session to end", || switches() == 0 && rows() == 0);
    let list = list_request();
    let (status, _, _) = session_post(&gateway.url, ALICE, Some(&session), &list);
    assert_eq!(status, 404);
}

#[test]
fn an_accepted_definition_is_served_by_every_gateway_sharing_postgres() {
    let Some(python) = python() else { return };
    let Some((url, gateways)) = Gateway::two_sharing_postgres(python, "stateless = true") else {
        return;
    };
    let call = |gateway: &Gateway, tool: &str, args: Value| gateway.call(ALICE, tool, args).1;
    // One pin per tool, shared.
    let pins = "SELECT count(*) FROM tool_gateway_pins WHERE tool LIKE $1";
    assert_eq!(
        pg_count(&url, pins, "py_%"),
        5,
        "py_echo, py_pid, py_redefine, py_slow, py_weather"
    );
    // Each process has its own upstream; both change the weather tool.
    for gateway in &gateways {
        assert!(call(gateway, "py_weather", json!({"city": "Oslo"})).contains("sunny in Oslo"));
        assert!(call(gateway, "py_redefine", json!({})).contains("redefined"));
        eventually("the change to be withheld", || {
            call(gateway, "py_weather", json!({"city": "Oslo"})).contains("-32602")
        });
        let (_, pins) = gateway.admin(reqwest::Method::GET, "/admin/pins", None);
        assert_eq!(pins["pending"]["py_weather"]["server"], "python", "{pins}");
    }
    // An operator accepts it through the first process; the second serves it too.
    let (status, _) =
        gateways[0].admin(reqwest::Method::POST, "/admin/pins/py_weather/accept", None);
    assert_eq!(status, 200);
    assert!(call(&gateways[0], "py_weather", json!({"city": "Oslo"})).contains("sunny in Oslo"));
    eventually(
        "the second process to serve the accepted definition",
        || call(&gateways[1], "py_weather", json!({"city": "Oslo"})).contains("sunny in Oslo"),
    );
    let (_, pins) = gateways[1].admin(reqwest::Method::GET, "/admin/pins", None);
    assert_eq!(pins, json!({"pending": {}}));
}

#[test]
fn corrupt_stored_pins_are_kept_aside_and_their_tools_withheld() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let servers = py_upstream(python);

    // A pins file that does not parse is moved aside, never written over.
    let pins = dir.path().join("pins.json");
    std::fs::write(&pins, b"{ not json").unwrap();
    let gateway = Gateway::start(&config(dir.path(), "pins_file = \"pins.json\"", &servers));
    let kept = dir.path().join("pins.json.corrupt");
    assert_eq!(std::fs::read(&kept).unwrap(), b"{ not json");
    let log = gateway.log();
    assert!(
        log.contains("the gateway's pins file is not valid"),
        "{log}"
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&pins).unwrap()).unwrap();
    assert_eq!(saved["tools"]["py_weather"]["server"], "python", "{saved}");
    drop(gateway);

    // A stored pin that is not a SHA-256 is kept, and its tool withheld until accepted.
    let database = format!("sqlite://{}", dir.path().join("switches.db").display());
    let run = |query: &'static str| {
        use sqlx::Connection as _;
        let database = database.clone();
        runtime().block_on(async move {
            let mut connection = sqlx::SqliteConnection::connect(&database).await.unwrap();
            sqlx::query_scalar::<_, String>(query)
                .fetch_optional(&mut connection)
                .await
                .unwrap()
        })
    };
    let gateway = Gateway::start(&config(dir.path(), "stateless = true", &servers));
    drop(gateway);
    run("UPDATE tool_gateway_pins SET sha256 = 'garbled' WHERE tool = 'py_weather' RETURNING tool");
    let gateway = Gateway::start(&config(dir.path(), "stateless = true", &servers));
    let weather = || gateway.call(ALICE, "py_weather", json!({"city": "Oslo"})).1;
    assert!(weather().contains("-32602"));
    let (_, pending) = gateway.admin(reqwest::Method::GET, "/admin/pins", None);
    assert_eq!(
        pending["pending"]["py_weather"]["pinned"], "garbled",
        "{pending}"
    );
    let log = gateway.log();
    assert!(
        log.contains("the stored pin of the tool is not a SHA-256"),
        "{log}"
    );
    assert_eq!(
        run("SELECT sha256 FROM tool_gateway_pins WHERE tool = 'py_weather'").as_deref(),
        Some("garbled")
    );
    let (status, _) = gateway.admin(reqwest::Method::POST, "/admin/pins/py_weather/accept", None);
    assert_eq!(status, 200);
    assert!(weather().contains("sunny in Oslo"));
    assert_eq!(
        run("SELECT sha256 FROM tool_gateway_pins WHERE tool = 'py_weather'"),
        pending["pending"]["py_weather"]["offered"]
            .as_str()
            .map(str::to_owned)
    );
}

/// The Inspector version `.ci/run` installs too; pinned so its flags and output stay as used.
const INSPECTOR_VERSION: &str = "2.12.0";

/// The installed `@modelcontextprotocol/inspector` package folder, or `None` after saying the
/// test is skipped.
fn inspector() -> Option<&'static Path> {
    static INSPECTOR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    INSPECTOR
        .get_or_init(|| {
            crate::npm_support::NpmPackage {
                tests: "the MCP Inspector CLI test",
                spec: "@modelcontextprotocol/inspector@2.12.0",
                env: "TOOL_CORE_MCP_INSPECTOR",
                path: "node_modules/@modelcontextprotocol/inspector",
                ready: |package| {
                    crate::mcp_node::installed_version(package).as_deref()
                        == Some(INSPECTOR_VERSION)
                },
            }
            .find()
        })
        .as_deref()
}

/// Runs the Inspector's CLI against the gateway at `url` as the user of `token`, in protocol
/// era `era`, with `args` (`--method …`); its exit success, its stdout as JSON (or `Null`) and
/// its stderr.
fn inspect(
    package: &Path,
    url: &str,
    token: &str,
    era: &str,
    args: &[&str],
) -> (bool, Value, String) {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new("node")
        .arg(package.join("clients/launcher/build/index.js"))
        .args(["--cli", url, "--transport", "http", "--protocol-era", era])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(["--format", "json", "--quiet"])
        .args(args)
        // Its catalog and secrets would go under HOME.
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the Inspector CLI did not finish within 120 s: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (
        output.status.success(),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stderr,
    )
}

#[test]
fn the_inspector_cli_sees_each_users_tools_and_calls_them() {
    let Some(python) = python() else { return };
    let Some(package) = inspector() else { return };
    let gateway = Gateway::with_python(python, "");
    gateway.switch("bob", "py_echo", false);
    for era in ["legacy", "modern"] {
        let (ok, listed, stderr) = inspect(
            package,
            &gateway.url,
            ALICE,
            era,
            &["--method", "tools/list"],
        );
        assert!(ok, "{era}: {stderr}");
        assert_eq!(tool_names(&listed), py_tools_without(&[]), "{era}");
        let (ok, listed, stderr) =
            inspect(package, &gateway.url, BOB, era, &["--method", "tools/list"]);
        assert!(ok, "{era}: {stderr}");
        assert_eq!(tool_names(&listed), py_tools_without(&["py_echo"]), "{era}");

        let call = [
            "--method",
            "tools/call",
            "--tool-name",
            "py_echo",
            "--tool-arg",
            "text=hi",
        ];
        let (ok, called, stderr) = inspect(package, &gateway.url, ALICE, era, &call);
        assert!(ok, "{era}: {stderr}");
        assert_eq!(
            called["result"]["content"],
            json!([{"type": "text", "text": "hi"}])
        );
        assert_eq!(called["result"]["isError"], false);
        // Bob's list lacks the tool, so the Inspector does not find it to call (the gateway's
        // own refusal of such a call is checked with the SDK clients).
        let (ok, called, stderr) = inspect(package, &gateway.url, BOB, era, &call);
        assert!(
            !ok,
            "{era}: Bob called a tool switched off for him: {called}"
        );
        let refusal: Value =
            serde_json::from_str(stderr.trim()).unwrap_or_else(|_| panic!("{era}: {stderr}"));
        assert_eq!(
            refusal,
            json!({"error": {"code": "tool_not_found", "message": "Tool 'py_echo' not found on server."}}),
            "{era}"
        );
    }
    // A wrong token gets nothing.
    let (ok, listed, _) = inspect(
        package,
        &gateway.url,
        "not-a-token",
        "legacy",
        &["--method", "tools/list"],
    );
    assert!(!ok);
    assert_eq!(listed, Value::Null);
}
