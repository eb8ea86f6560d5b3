//! The gateway's catalog and faults, with the `mcp_gateway` example in front of servers written
//! with the official MCP Python SDK (`tests/mcp_python/gateway_catalog_upstream.py`), driven
//! by plain 2026-07-28 HTTP requests: a hung server, deferred servers, session switches without
//! a session, the gateway's own names, names that collide inside one server, and prefixes.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tool_core::gateway::{GatewayConfig, McpGateway};

use crate::mcp_gateway::{ALICE, Gateway, config};
use crate::mcp_python::python;

const LIMIT: Duration = Duration::from_secs(60);

/// A `[[servers]]` entry for the catalog upstream, with more `toml` lines and `args`.
fn upstream(python: &Path, name: &str, toml: &str, args: &[&str]) -> String {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/gateway_catalog_upstream.py");
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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// One self-contained 2026-07-28 request of `method` as Alice; the JSON-RPC answer.
fn request(gateway: &Gateway, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "catalog-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let request = crate::http_client::client()
        .post(&gateway.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .bearer_auth(ALICE)
        .timeout(LIMIT)
        .body(body.to_string());
    runtime().block_on(async move {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "{text}");
        let json = text
            .lines()
            .find_map(|line| line.strip_prefix("data:"))
            .unwrap_or(&text)
            .trim()
            .to_owned();
        serde_json::from_str(&json).unwrap_or_else(|_| panic!("not JSON: {text}"))
    })
}

/// Calls `tool` as Alice; the JSON-RPC answer.
fn call(gateway: &Gateway, tool: &str, arguments: Value) -> Value {
    request(
        gateway,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The text of a `tools/call` answer and whether it is an error result.
fn outcome(answer: &Value) -> (bool, &str) {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a tool result: {answer}"));
    (answer["result"]["isError"] == true, text)
}

/// The tools Alice lists, by name, sorted.
fn tools(gateway: &Gateway) -> Vec<String> {
    let answer = request(gateway, "tools/list", json!({}));
    let mut names: Vec<String> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

fn health(gateway: &Gateway) -> Value {
    let url = format!("{}/healthz", gateway.url.trim_end_matches("/mcp"));
    runtime().block_on(async {
        crate::http_client::client()
            .get(url)
            .timeout(LIMIT)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    })
}

/// Polls `check` every 50 ms until it holds, for at most `LIMIT`.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the process `pid` is stopped (by a signal).
fn stopped(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('T'))
    })
}

/// Kills the process `pid` on drop if it is still stopped, so a failed test leaves no frozen
/// server behind.
struct Reaper(String);

impl Drop for Reaper {
    fn drop(&mut self) {
        if stopped(&self.0) {
            let _ = Command::new("kill").args(["-9", &self.0]).status();
        }
    }
}

#[test]
fn a_hung_upstream_is_disconnected_and_holds_back_no_other_servers_calls() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let down: PathBuf = dir.path().join("down");
    let down_arg = down.display().to_string();
    let servers = format!(
        "{}{}",
        upstream(
            python,
            "frozen",
            "prefix = \"fz\"\ntimeout_ms = 3000",
            &["--down", &down_arg]
        ),
        upstream(python, "healthy", "prefix = \"ok\"", &[]),
    );
    let gateway = Gateway::start_with(
        &config(
            dir.path(),
            "stateless = true\nmax_concurrent_calls = 1",
            &servers,
        ),
        &[],
        &[],
    );
    let pid = outcome(&call(&gateway, "fz_pid", json!({}))).1.to_owned();
    let _reaper = Reaper(pid.clone());
    // Once frozen, the server is not let back up until the test says so.
    std::fs::write(&down, "").unwrap();
    let frozen = std::thread::scope(|scope| {
        let frozen = scope.spawn(|| call(&gateway, "fz_freeze", json!({})));
        eventually("the server to freeze", || stopped(&pid));
        // The frozen call holds Alice's one running call on its server, none on the others.
        let answer = call(&gateway, "ok_echo", json!({"text": "still here"}));
        assert_eq!(outcome(&answer), (false, "still here"), "{answer}");
        frozen.join().unwrap()
    });
    let (is_error, text) = outcome(&frozen);
    assert!(is_error, "{frozen}");
    assert!(text.contains("did not answer within 3s"), "{frozen}");

    // The server answers no ping either: it hangs, and the gateway says so.
    eventually("the health report to show the hung server", || {
        let health = health(&gateway);
        health["status"] == "degraded" && health["servers"]["frozen"]["state"] == "disconnected"
    });
    assert!(
        gateway
            .log()
            .contains("the server did not answer a ping within 3s after a call timed out"),
        "{}",
        gateway.log()
    );
    assert_eq!(health(&gateway)["servers"]["healthy"]["state"], "connected");
    let answer = call(&gateway, "fz_echo", json!({"text": "hi"}));
    let (is_error, text) = outcome(&answer);
    assert!(
        is_error && text.contains("temporarily unavailable"),
        "{answer}"
    );
    let answer = call(&gateway, "ok_echo", json!({"text": "still here"}));
    assert_eq!(outcome(&answer), (false, "still here"), "{answer}");
    assert!(!stopped(&pid), "the hung process was not ended");

    std::fs::remove_file(&down).unwrap();
    eventually("the server to be back", || {
        outcome(&call(&gateway, "fz_echo", json!({"text": "back"}))) == (false, "back")
    });
}

#[test]
fn a_deferred_servers_tools_are_found_by_search_and_called_by_name() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let servers = format!(
        "{}{}",
        upstream(
            python,
            "eager",
            "prefix = \"py\"\nallow = [\"echo\", \"weather\"]",
            &[]
        ),
        upstream(
            python,
            "lazy",
            "prefix = \"lz\"\nallow = [\"echo\", \"weather\"]\ndeferred = true",
            &[]
        ),
    );
    let gateway = Gateway::start_with(&config(dir.path(), "stateless = true", &servers), &[], &[]);
    assert_eq!(
        tools(&gateway),
        ["py_echo", "py_weather", "search_tools", "set_tool_enabled"]
    );
    let answer = call(
        &gateway,
        "search_tools",
        json!({"query": "weather in a city"}),
    );
    let (is_error, text) = outcome(&answer);
    assert!(!is_error, "{answer}");
    let found: Value = serde_json::from_str(text).unwrap();
    let names: Vec<&str> = found["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"lz_weather"), "{found}");
    let answer = call(&gateway, "lz_echo", json!({"text": "by name"}));
    assert_eq!(outcome(&answer), (false, "by name"), "{answer}");

    // With every deferred tool switched off there is nothing to search for.
    for tool in ["lz_echo", "lz_weather"] {
        let answer = call(
            &gateway,
            "set_tool_enabled",
            json!({"name": tool, "enabled": false}),
        );
        assert_eq!(outcome(&answer), (false, &*format!("{tool} is off")));
    }
    assert_eq!(
        tools(&gateway),
        ["py_echo", "py_weather", "set_tool_enabled"]
    );
    let answer = call(&gateway, "search_tools", json!({"query": "weather"}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

#[test]
fn a_session_switch_without_a_session_is_an_error_and_switches_nothing() {
    let Some(python) = python() else { return };
    // A stateless gateway, and one with sessions asked without one (2026-07-28).
    for gateway_extra in ["stateless = true", ""] {
        let dir = tempfile::tempdir().unwrap();
        let gateway = Gateway::start_with(
            &config(
                dir.path(),
                gateway_extra,
                &upstream(python, "python", "prefix = \"py\"\nallow = [\"echo\"]", &[]),
            ),
            &[],
            &[],
        );
        let answer = call(
            &gateway,
            "set_tool_enabled",
            json!({"name": "py_echo", "enabled": false, "scope": "session"}),
        );
        let (is_error, text) = outcome(&answer);
        assert!(is_error, "{gateway_extra}: {answer}");
        assert!(
            text.contains("scope \"session\" needs a session"),
            "{answer}"
        );
        assert_eq!(tools(&gateway), ["py_echo", "set_tool_enabled"]);
        let answer = call(&gateway, "py_echo", json!({"text": "on"}));
        assert_eq!(outcome(&answer), (false, "on"), "{answer}");
    }
}

#[test]
fn an_upstream_cannot_take_the_gateways_own_tool_names() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let servers = format!(
        "{}{}",
        upstream(
            python,
            "rogue",
            "prefix = \"\"\nallow = [\"set_tool_enabled\", \"search_tools\", \"echo\"]",
            &["--tools", "set_tool_enabled,search_tools"]
        ),
        upstream(
            python,
            "set_tool",
            "allow = [\"enabled\"]",
            &["--tools", "enabled"]
        ),
    );
    let gateway = Gateway::start_with(&config(dir.path(), "stateless = true", &servers), &[], &[]);
    assert_eq!(tools(&gateway), ["echo", "set_tool_enabled"]);
    // The gateway's own tool answers.
    let answer = call(
        &gateway,
        "set_tool_enabled",
        json!({"name": "echo", "enabled": false}),
    );
    assert_eq!(outcome(&answer), (false, "echo is off"), "{answer}");
    assert_eq!(tools(&gateway), ["set_tool_enabled"]);
    let answer = call(&gateway, "search_tools", json!({"query": "tool"}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let log = gateway.log();
    for (server, tool) in [
        ("rogue", "set_tool_enabled"),
        ("rogue", "search_tools"),
        ("set_tool", "set_tool_enabled"),
    ] {
        assert!(
            log.contains(&format!(
                "the server `{server}` offers a tool named `{tool}`, a name of the gateway's own tools"
            )),
            "{server} {tool}: {log}"
        );
    }
}

#[test]
fn two_tools_of_one_server_that_map_to_one_name_are_both_refused() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = |names: &str| upstream(python, "files", "prefix = \"p\"", &["--tools", names]);
    let gateway = Gateway::start_with(
        &config(dir.path(), "stateless = true", &server("files.read")),
        &[],
        &[],
    );
    let mapped = tools(&gateway)
        .into_iter()
        .find(|name| name.starts_with("p_files_read_"))
        .expect("files.read is served under a mapped name");
    let answer = call(&gateway, &mapped, json!({}));
    assert_eq!(outcome(&answer), (false, "files.read here"), "{answer}");
    // The server adds a tool whose own name is the mapped one.
    let remote = mapped.strip_prefix("p_").unwrap().to_owned();
    let answer = call(&gateway, "p_add_tool", json!({"name": remote}));
    assert!(!outcome(&answer).0, "{answer}");
    eventually("both tools to be withdrawn", || {
        !tools(&gateway)
            .iter()
            .any(|name| name.starts_with("p_files_read_"))
    });
    assert!(tools(&gateway).contains(&"p_echo".to_owned()));
    let log = gateway.log();
    assert!(
        log.contains(&format!(
            "tool name collision: the MCP server 'files' offers `files.read` and `{remote}` under \
             the one name `{mapped}`; none of them is served"
        )),
        "{log}"
    );
    drop(gateway);

    // After a restart, with the server listing them the other way round: the same.
    let gateway = Gateway::start_with(
        &config(
            dir.path(),
            "stateless = true",
            &server(&format!("{remote},files.read")),
        ),
        &[],
        &[],
    );
    let listed = tools(&gateway);
    assert!(listed.contains(&"p_echo".to_owned()), "{listed:?}");
    assert!(
        !listed.iter().any(|name| name.starts_with("p_files_read_")),
        "{listed:?}"
    );
}

#[tokio::test]
async fn a_server_whose_prefix_is_not_valid_stops_the_gateway_at_start() {
    let start = |servers: &str| {
        let config = GatewayConfig::from_toml(&format!(
            "[gateway]\nstore = \"memory:\"\n\n[[servers]]\ncommand = \"true\"\n{servers}"
        ))
        .unwrap();
        McpGateway::start(config, Vec::new())
    };
    let error = start("name = \"my server\"").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid gateway configuration: server `my server`: invalid mcp tool prefix `my server`: \
         use 1 to 32 ASCII letters, digits, `_` or `-` (the prefix is the server's name unless \
         `prefix` names another)"
    );
    let error = start("name = \"files\"\nprefix = \"f.s\"")
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid gateway configuration: server `files`: invalid mcp tool prefix `f.s`: use 1 \
         to 32 ASCII letters, digits, `_` or `-`"
    );
    // A name that is no prefix is fine with a prefix that is.
    let gateway = start("name = \"my server\"\nprefix = \"mine\"").await;
    assert!(gateway.is_ok(), "{gateway:?}");
}
