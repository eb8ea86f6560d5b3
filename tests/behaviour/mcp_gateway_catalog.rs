//! The gateway's catalog and faults, with the `mcp_gateway` example in front of servers written
//! with the official MCP Python SDK (`tests/mcp_python/gateway_catalog_upstream.py`), driven
//! by plain 2026-07-28 HTTP requests: a hung server, deferred servers, session switches without
//! a session, the gateway's own names, names that collide inside one server, and prefixes.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::{Value, json};
use tool_core::gateway::{GatewayConfig, McpGateway};

use crate::mcp_gateway::{
    ALICE, Gateway, config, eventually, python_server, result_text, stateless, tool_names,
};
use crate::mcp_python::python;

/// A `[[servers]]` entry for the catalog upstream, with more `toml` lines and `args`.
fn upstream(python: &Path, name: &str, toml: &str, args: &[&str]) -> String {
    python_server(python, "gateway_catalog_upstream.py", name, toml, args)
}

/// Calls `tool` as Alice; the JSON-RPC answer.
fn call(gateway: &Gateway, tool: &str, arguments: Value) -> Value {
    let params = json!({"name": tool, "arguments": arguments});
    stateless(&gateway.url, ALICE, "tools/call", params)
}

/// The text of a `tools/call` answer and whether it is an error result.
fn outcome(answer: &Value) -> (bool, &str) {
    (answer["result"]["isError"] == true, result_text(answer))
}

/// The tools Alice lists, by name, sorted.
fn tools(gateway: &Gateway) -> Vec<String> {
    tool_names(&stateless(&gateway.url, ALICE, "tools/list", json!({})))
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
    let gateway = Gateway::start(&config(
        dir.path(),
        "stateless = true\nmax_concurrent_calls = 1",
        &servers,
    ));
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
        let health = gateway.health();
        health["status"] == "degraded" && health["servers"]["frozen"]["state"] == "disconnected"
    });
    assert!(
        gateway
            .log()
            .contains("the server did not answer a ping within 3s after a call timed out"),
        "{}",
        gateway.log()
    );
    assert_eq!(gateway.health()["servers"]["healthy"]["state"], "connected");
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
    let gateway = Gateway::start(&config(dir.path(), "stateless = true", &servers));
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
        let gateway = Gateway::start(&config(
            dir.path(),
            gateway_extra,
            &upstream(python, "python", "prefix = \"py\"\nallow = [\"echo\"]", &[]),
        ));
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
    let gateway = Gateway::start(&config(dir.path(), "stateless = true", &servers));
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
    let gateway = Gateway::start(&config(
        dir.path(),
        "stateless = true",
        &server("files.read"),
    ));
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
    let gateway = Gateway::start(&config(
        dir.path(),
        "stateless = true",
        &server(&format!("{remote},files.read")),
    ));
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
