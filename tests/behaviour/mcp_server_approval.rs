//! A tool whose metadata says `needs_approval`, served over MCP: listed with
//! `destructiveHint` and `_meta`, and run only once the client's user approved it through MCP
//! elicitation (an `elicitation/create` request on handshake versions, an `InputRequiredResult`
//! on 2026-07-28); declined, dismissed or with a client that cannot ask, the tool does not run
//! and the client gets a clear error result. Driven by the official MCP Python SDK over
//! streamable HTTP on loopback.

use std::{
    path::Path,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tool_core::{
    ToolMetadata, ToolRegistry,
    mcp::{McpApproval, McpHttpServer, McpOptions, McpServer},
};

use crate::{
    mcp_python::{background_runtime, json_report, python},
    mcp_server_access::Counted,
};

/// The versions with elicitation, and 2026-07-28's way of asking.
const ASKING_VERSIONS: [&str; 3] = ["2026-07-28", "2025-11-25", "2025-06-18"];

/// A loopback MCP server over one tool, `remove_note`, that needs approval and counts its
/// runs.
struct Served {
    http: Option<McpHttpServer>,
    runs: Arc<AtomicUsize>,
    runtime: tokio::runtime::Runtime,
}

impl Served {
    fn start(options: McpOptions) -> Self {
        let runtime = background_runtime();
        let runs = Arc::new(AtomicUsize::new(0));
        let registry = ToolRegistry::new();
        registry
            .register(Counted {
                name: "remove_note",
                runs: runs.clone(),
                metadata: ToolMetadata::new().needs_approval(true),
            })
            .unwrap();
        let server = McpServer::with_options(Arc::new(registry), options);
        let http = runtime.block_on(server.start_http("127.0.0.1:0")).unwrap();
        Self {
            http: Some(http),
            runs,
            runtime,
        }
    }

    fn url(&self) -> String {
        self.http.as_ref().unwrap().url()
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(http) = self.http.take() {
            let _ = self.runtime.block_on(http.shutdown());
        }
    }
}

/// Runs `tests/mcp_python/approval.py` and parses its report.
fn run_client(python: &Path, url: &str, version: &str, elicit: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/approval.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args(["--version", version, "--elicit", elicit, url, "remove_note"]);
    json_report(command, Duration::from_secs(120))
}

/// What the client's user is asked.
fn the_question() -> Value {
    json!([{
        "message": "Run the tool `remove_note` with the arguments {}?",
        "schema": {"type": "object", "properties": {}}
    }])
}

fn refused(text: &str) -> Value {
    json!({"is_error": true, "text": text})
}

#[test]
fn needs_approval_is_listed_as_destructive_with_meta() {
    let Some(python) = python() else { return };
    let served = Served::start(McpOptions::new());
    for version in ASKING_VERSIONS {
        let report = run_client(python, &served.url(), version, "decline");
        let tool = &report["tool"];
        assert_eq!(
            tool["annotations"]["destructiveHint"], true,
            "{version}: {tool}"
        );
        assert_eq!(
            tool["_meta"],
            json!({"tool-core/needsApproval": true}),
            "{version}: {tool}"
        );
    }
    let older = run_client(python, &served.url(), "2025-03-26", "none");
    assert_eq!(older["tool"]["annotations"]["destructiveHint"], true);
    assert!(older["tool"].get("_meta").is_none(), "{older}");
}

#[test]
fn python_sdk_whose_user_accepts_runs_the_tool() {
    let Some(python) = python() else { return };
    let served = Served::start(McpOptions::new());
    for (round, version) in ASKING_VERSIONS.into_iter().enumerate() {
        let report = run_client(python, &served.url(), version, "accept");
        assert_eq!(report["asked"], the_question(), "{version}: {report}");
        assert_eq!(
            report["result"],
            json!({"is_error": false, "text": format!("run {}", round + 1)}),
            "{version}: {report}"
        );
        assert_eq!(served.runs(), round + 1, "{version}");
    }
}

#[test]
fn python_sdk_whose_user_declines_or_dismisses_does_not_run_the_tool() {
    let Some(python) = python() else { return };
    let served = Served::start(McpOptions::new());
    for version in ASKING_VERSIONS {
        let declined = run_client(python, &served.url(), version, "decline");
        assert_eq!(declined["asked"], the_question(), "{version}: {declined}");
        assert_eq!(
            declined["result"],
            refused("Error: the user denied this call of remove_note"),
            "{version}: {declined}"
        );
        let dismissed = run_client(python, &served.url(), version, "cancel");
        assert_eq!(
            dismissed["result"],
            refused(
                "Error: the user denied this call of remove_note: \
                 the approval request was dismissed"
            ),
            "{version}: {dismissed}"
        );
    }
    assert_eq!(served.runs(), 0);
}

#[test]
fn python_sdk_without_elicitation_is_refused_with_a_clear_error() {
    let Some(python) = python() else { return };
    let served = Served::start(McpOptions::new());
    for version in ["2026-07-28", "2025-11-25", "2025-03-26", "2024-11-05"] {
        let report = run_client(python, &served.url(), version, "none");
        assert_eq!(report["asked"], json!([]), "{version}");
        assert_eq!(
            report["result"],
            refused(
                "Error: remove_note needs the user's approval, and this MCP client cannot \
                 ask for it (it does not support elicitation); the call was not run"
            ),
            "{version}: {report}"
        );
    }
    assert_eq!(served.runs(), 0);
}

#[test]
fn stateless_http_cannot_ask_and_refuses() {
    let Some(python) = python() else { return };
    let served = Served::start(McpOptions::new().stateless(true));
    let report = run_client(python, &served.url(), "2025-11-25", "accept");
    assert_eq!(report["asked"], json!([]), "{report}");
    assert_eq!(
        report["result"],
        refused(
            "Error: remove_note needs the user's approval, and a stateless server can ask \
             for it only on protocol 2026-07-28; the call was not run"
        ),
        "{report}"
    );
    // 2026-07-28 asks within the request itself, so stateless servers can.
    let modern = run_client(python, &served.url(), "2026-07-28", "accept");
    assert_eq!(
        modern["result"],
        json!({"is_error": false, "text": "run 1"})
    );
    assert_eq!(served.runs(), 1);
}

#[test]
fn the_application_can_opt_out_of_asking_or_refuse_outright() {
    let Some(python) = python() else { return };
    let allowed = Served::start(McpOptions::new().approval(McpApproval::Allow));
    for version in ["2026-07-28", "2025-11-25"] {
        let report = run_client(python, &allowed.url(), version, "decline");
        assert_eq!(report["asked"], json!([]), "{version}");
        assert_eq!(report["result"]["is_error"], false, "{version}: {report}");
        // Still advertised, so the client can confirm on its own.
        assert_eq!(report["tool"]["annotations"]["destructiveHint"], true);
    }
    assert_eq!(allowed.runs(), 2);

    let refusing = Served::start(McpOptions::new().approval(McpApproval::Refuse));
    let report = run_client(python, &refusing.url(), "2025-11-25", "accept");
    assert_eq!(report["asked"], json!([]));
    assert_eq!(
        report["result"],
        refused(
            "Error: remove_note needs the user's approval, which this server does not ask \
             for over MCP; the call was not run"
        ),
        "{report}"
    );
    assert_eq!(refusing.runs(), 0);
}
