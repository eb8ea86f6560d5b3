//! The `mcp_server` example driven by a client nobody here wrote: the official MCP Python SDK,
//! over stdio and over streamable HTTP (`tests/mcp_python/client.py` prints what it saw), at
//! every protocol version (2026-07-28 through `server/discover`), including a session that two
//! stateless server processes answer in turn behind a round-robin proxy.
//!
//! The Python comes from `TOOL_CORE_MCP_PYTHON` (`.ci/run` sets it to a venv with `mcp`
//! installed). Without it the test makes that venv itself under the target folder with
//! `python3 -m venv` and `pip install`. It is skipped, with a message saying so, only when there
//! is no `python3` at all.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::proxy_support::RoundRobin;

/// The SDK version `.ci/run` installs too.
const MCP_PACKAGE: &str = "mcp==2.3.0";

/// The example's code, built as a binary of this package so the test can find it.
pub(crate) const SERVER: &str = env!("CARGO_BIN_EXE_mcp_server_example");

/// Every protocol version the server speaks, newest first.
pub(crate) const VERSIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

#[test]
fn python_sdk_drives_the_example_over_stdio_at_every_version() {
    let Some(python) = python() else { return };
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().to_str().unwrap();
    for version in VERSIONS {
        let report = run_client(
            python,
            &[
                "--version",
                version,
                "--toggle",
                "stdio",
                SERVER,
                "--root",
                root_arg,
            ],
        );
        check_report(&report, version);
        check_toggle(&report);
    }
}

#[test]
fn python_sdk_drives_the_example_over_http() {
    let Some(python) = python() else { return };
    let root = tempfile::tempdir().unwrap();
    let server = ExampleServer::start(root.path(), false);
    for version in ["2026-07-28", "2025-11-25"] {
        let report = run_client(
            python,
            &["--version", version, "--toggle", "http", &server.url],
        );
        check_report(&report, version);
        check_toggle(&report);
    }
}

#[test]
fn python_sdk_is_served_by_two_stateless_processes_in_turn() {
    let Some(python) = python() else { return };
    let root = tempfile::tempdir().unwrap();
    let first = ExampleServer::start(root.path(), true);
    let second = ExampleServer::start(root.path(), true);
    for version in VERSIONS {
        let proxy = RoundRobin::start([first.url.clone(), second.url.clone()]);
        let report = run_client(python, &["--version", version, "http", &proxy.url]);
        check_report(&report, version);
        proxy.check_both_answered();
    }
}

/// Checks the report `client.py` (or `client.mjs`) printed for a session at `version`: each
/// version gets the fields it defines and none it does not.
pub(crate) fn check_report(report: &Value, version: &str) {
    assert_eq!(report["protocol_version"], version, "{report}");
    assert_eq!(report["server_name"], "tool-core-example");
    assert_eq!(report["tools_list_changed"], true);
    let at_least = |since: &str| version >= since;

    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOLS, "{version}");
    let add = &tools[3];
    assert_eq!(add["description"], "Add two integers.");
    // No Rust-only `format: int64`.
    assert_eq!(
        add["inputSchema"]["properties"]["a"],
        json!({"type": "integer", "description": "The first addend."})
    );
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    if at_least("2025-06-18") {
        assert_eq!(add["title"], "Add", "{version}");
    } else {
        assert!(add.get("title").is_none(), "{version}: {add}");
    }
    if at_least("2025-03-26") {
        assert_eq!(add["annotations"]["readOnlyHint"], true);
        assert_eq!(add["annotations"]["idempotentHint"], true);
        assert_eq!(add["annotations"]["openWorldHint"], false);
        assert_eq!(tools[1]["annotations"]["destructiveHint"], true);
    } else {
        assert!(add.get("annotations").is_none(), "{version}: {add}");
    }
    let divide_integers = &tools[5];
    if at_least("2025-06-18") {
        assert_eq!(
            divide_integers["outputSchema"],
            json!({
                "type": "object",
                "description": "The quotient and remainder of an integer division.",
                "properties": {
                    "quotient": {"type": "integer", "description": "The quotient, rounded toward zero."},
                    "remainder": {"type": "integer", "description": "What is left: `dividend - quotient * divisor`."}
                },
                "required": ["quotient", "remainder"]
            }),
            "{version}"
        );
    } else {
        assert!(divide_integers.get("outputSchema").is_none(), "{version}");
    }
    let now = &tools[6];
    assert_eq!(
        now["inputSchema"],
        json!({ "type": "object", "additionalProperties": false })
    );
    if at_least("2025-11-25") {
        assert_eq!(now["icons"][0]["mimeType"], "image/svg+xml");
    } else {
        assert!(now.get("icons").is_none(), "{version}");
    }

    let calls = &report["calls"];
    assert_eq!(calls["add_ok"], json!({ "is_error": false, "text": "5" }));
    assert_eq!(
        calls["add_bad_type"],
        json!({
            "is_error": true,
            "text": "Error: invalid arguments for add: at /a: expected an integer, got \"two\""
        })
    );
    assert_eq!(
        calls["add_missing"],
        json!({
            "is_error": true,
            "text": "Error: invalid arguments for add: missing required argument 'b'"
        })
    );
    assert_eq!(
        calls["divide_by_zero"],
        json!({ "is_error": true, "text": "Error executing divide: cannot divide by zero" })
    );
    let mut division = json!({ "is_error": false, "text": r#"{"quotient":3,"remainder":1}"# });
    if at_least("2025-06-18") {
        division["structured"] = json!({"quotient": 3, "remainder": 1});
    }
    assert_eq!(calls["divide_integers"], division, "{version}");
    assert_eq!(calls["now"]["is_error"], false);
    let seconds: u64 = calls["now"]["text"].as_str().unwrap().parse().unwrap();
    assert!(seconds > 1_600_000_000, "{seconds}");
    assert_eq!(calls["unknown_tool"]["error_code"], -32602);
    assert_eq!(
        calls["unknown_tool"]["message"],
        "tool `no_such_tool` not found"
    );
}

/// The example's tools, in order.
const TOOLS: [&str; 8] = [
    "read_file",
    "write_file",
    "save_session_context",
    "add",
    "divide",
    "divide_integers",
    "now",
    "set_tool_enabled",
];

/// Checks the `--toggle` part of a report: `add` switched off, the client told, the list
/// without it, a call to it refused, and `add` back.
pub(crate) fn check_toggle(report: &Value) {
    let without_add: Vec<&str> = TOOLS.into_iter().filter(|name| *name != "add").collect();
    assert_eq!(
        report["toggle"],
        json!({
            "switch_off": {"is_error": false, "text": "add is off"},
            "notified": "ToolsListChanged",
            "tools_while_off": without_add,
            "call_while_off": {"error_code": -32602, "message": "tool `add` is disabled"},
            "switch_on": {"is_error": false, "text": "add is on"},
            "tools_after": TOOLS,
        }),
        "{report}"
    );
}

/// The example serving streamable HTTP on a free loopback port, killed on drop.
pub(crate) struct ExampleServer {
    child: Child,
    pub(crate) url: String,
}

impl ExampleServer {
    pub(crate) fn start(root: &Path, stateless: bool) -> Self {
        Self::start_with_env(root, stateless, &[])
    }

    /// Starts the example with these environment variables set.
    pub(crate) fn start_with_env(root: &Path, stateless: bool, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(SERVER);
        command.args(["--http", "127.0.0.1:0", "--root"]).arg(root);
        command.envs(env.iter().copied());
        if stateless {
            command.arg("--stateless");
        }
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let mut first_line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first_line)
            .unwrap();
        let url = first_line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from the server: {first_line:?}"))
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Self { child, url }
    }
}

impl Drop for ExampleServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `client.py` with `args` and parses its JSON report.
fn run_client(python: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/client.py");
    let mut command = Command::new(python);
    command.arg(&script).args(args);
    json_report(command, Duration::from_secs(180))
}

/// Runs a client script's `command` for at most `limit`, checks that it succeeded and parses
/// the JSON report it printed.
pub(crate) fn json_report(mut command: Command, limit: Duration) -> Value {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_bounded(child, limit);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client failed ({}):\n{stderr}\n{stdout}",
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|error| panic!("bad report ({error}):\n{stdout}\n{stderr}"))
}

/// A runtime on a thread of its own, for an in-process server a blocking test talks to.
pub(crate) fn background_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// The Python with the MCP SDK, or `None` (after saying the test is skipped) when there is no
/// Python at all.
pub(crate) fn python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    let python = PYTHON.get_or_init(find_or_make_python).as_deref();
    if python.is_none() {
        crate::real_parts::skip(&format!(
            "SKIPPED: the MCP Python SDK tests need python3, and there is none on PATH \
             (or set TOOL_CORE_MCP_PYTHON to a Python with `{MCP_PACKAGE}` installed)"
        ));
    }
    python
}

fn find_or_make_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("TOOL_CORE_MCP_PYTHON") {
        let python = PathBuf::from(python);
        assert!(
            imports_mcp(&python),
            "TOOL_CORE_MCP_PYTHON={} cannot `import mcp`; install the SDK there ({MCP_PACKAGE})",
            python.display()
        );
        return Some(python);
    }
    let has_python3 = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !has_python3 {
        return None;
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-venv");
    let python = venv.join("bin/python");
    if !imports_mcp(&python) {
        eprintln!("setting up {} with {MCP_PACKAGE}", venv.display());
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(made.success(), "python3 -m venv {} failed", venv.display());
        let installed = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", MCP_PACKAGE])
            .status()
            .unwrap();
        assert!(installed.success(), "pip install {MCP_PACKAGE} failed");
        assert!(imports_mcp(&python), "the new venv cannot `import mcp`");
    }
    Some(python)
}

fn imports_mcp(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Waits for `child` for at most `limit`, so a hung client fails the test instead of the run.
/// Its output is read on threads meanwhile, so a full pipe cannot stall it.
pub(crate) fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    let Some(status) = status else {
        panic!(
            "the client did not finish within {limit:?}:\n{}\n{}",
            String::from_utf8_lossy(&stderr),
            String::from_utf8_lossy(&stdout)
        );
    };
    Output {
        status,
        stdout,
        stderr,
    }
}
