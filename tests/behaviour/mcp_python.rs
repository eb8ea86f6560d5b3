//! The `mcp_server` example driven by a client nobody here wrote: the official MCP Python SDK,
//! over stdio and over streamable HTTP (`tests/mcp_python/client.py` prints what it saw).
//!
//! The Python comes from `TOOL_CORE_MCP_PYTHON` (`.ci/run` sets it to a venv with `mcp`
//! installed). Without it the test makes that venv itself under the target folder with
//! `python3 -m venv` and `pip install`. It is skipped, with a message saying so, only when there
//! is no `python3` at all.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// The SDK version `.ci/run` installs too.
const MCP_PACKAGE: &str = "mcp==2.3.0";

/// The example's code, built as a binary of this package so the test can find it.
const SERVER: &str = env!("CARGO_BIN_EXE_mcp_server_example");

#[test]
fn python_sdk_drives_the_example_over_stdio() {
    let Some(python) = python() else { return };
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().to_str().unwrap();
    let report = run_client(python, &["stdio", SERVER, "--root", root_arg]);
    check_report(&report);
}

#[test]
fn python_sdk_drives_the_example_over_http() {
    let Some(python) = python() else { return };
    let root = tempfile::tempdir().unwrap();
    let mut server = Command::new(SERVER)
        .args(["--http", "127.0.0.1:0", "--root"])
        .arg(root.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = KillOnDrop(&mut server);
    let mut first_line = String::new();
    BufReader::new(guard.0.stdout.take().unwrap())
        .read_line(&mut first_line)
        .unwrap();
    let url = first_line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line from the server: {first_line:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let report = run_client(python, &["http", &url]);
    check_report(&report);
}

fn check_report(report: &Value) {
    assert_eq!(report["protocol_version"], "2025-11-25");
    assert_eq!(report["server_name"], "tool-core-example");
    assert_eq!(report["tools_list_changed"], true);

    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "write_file",
            "save_session_context",
            "add",
            "divide",
            "now"
        ]
    );
    let add = &tools[3];
    assert_eq!(add["title"], "Add");
    assert_eq!(add["description"], "Add two integers.");
    assert_eq!(add["inputSchema"]["type"], "object");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(add["annotations"]["readOnlyHint"], true);
    assert_eq!(add["annotations"]["idempotentHint"], true);
    assert_eq!(add["annotations"]["openWorldHint"], false);
    let now = &tools[5];
    assert_eq!(
        now["inputSchema"],
        json!({ "type": "object", "additionalProperties": false })
    );
    assert_eq!(now["icons"][0]["mimeType"], "image/svg+xml");
    let write_file = &tools[1];
    assert_eq!(write_file["annotations"]["destructiveHint"], true);

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
    assert_eq!(calls["now"]["is_error"], false);
    let seconds: u64 = calls["now"]["text"].as_str().unwrap().parse().unwrap();
    assert!(seconds > 1_600_000_000, "{seconds}");
    assert_eq!(calls["unknown_tool"]["error_code"], -32602);
    assert_eq!(
        calls["unknown_tool"]["message"],
        "tool `no_such_tool` not found"
    );
}

/// Runs `client.py` with `args` and parses its JSON report.
fn run_client(python: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/client.py");
    let child = Command::new(python)
        .arg(&script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_bounded(child, Duration::from_secs(180));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed ({}):\n{stderr}\n{stdout}",
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|error| panic!("bad report ({error}):\n{stdout}\n{stderr}"))
}

/// The Python with the MCP SDK, or `None` (after saying the test is skipped) when there is no
/// Python at all.
pub(crate) fn python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    let python = PYTHON.get_or_init(find_or_make_python).as_deref();
    if python.is_none() {
        // Straight to stderr rather than `eprintln!`, which the test harness captures and hides
        // for passing tests.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the MCP Python SDK tests need python3, and there is none on PATH \
             (or set TOOL_CORE_MCP_PYTHON to a Python with `{MCP_PACKAGE}` installed)"
        );
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
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
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
            "the Python client did not finish within {limit:?}:\n{}\n{}",
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

struct KillOnDrop<'a>(&'a mut Child);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
