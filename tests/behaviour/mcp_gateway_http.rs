//! The `mcp_gateway` example in front of upstream servers over streamable HTTP, whose calls it
//! sends with requests of its own beside `rmcp`'s client: the official Python SDK's server
//! (`tests/mcp_python/server.py http`: a session, answers as SSE streams, a bearer token) and
//! the `mcp_server` example (stateless, JSON answers), reached by this crate's `McpClient`.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::Duration,
};

use serde_json::json;
use tool_core::{
    ToolRegistry,
    mcp::{McpClient, McpServerConfig},
};

use crate::{
    mcp_client::start_python_http,
    mcp_gateway::{ALICE, Gateway, config},
    mcp_python::{SERVER, python},
};

const LIMIT: Duration = Duration::from_secs(30);

/// The `mcp_server` example serving stateless streamable HTTP; killed on drop.
struct Example {
    child: Child,
    url: String,
}

impl Example {
    fn start() -> Self {
        let mut child = Command::new(SERVER)
            .args(["--http", "127.0.0.1:0", "--stateless"])
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

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn args(value: serde_json::Value) -> tool_core::JsonObject {
    value.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_reach_http_upstreams_with_their_session_and_progress_comes_back() {
    let Some(python) = python() else { return };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/server.py");
    let sdk = start_python_http(python, &script, &["http", "--token", "up-secret"]);
    let example = Example::start();
    let dir = tempfile::tempdir().unwrap();
    let servers = format!(
        "[[servers]]\nname = \"python\"\nprefix = \"py\"\nurl = {:?}\n\
         headers = {{ Authorization = \"Bearer up-secret\" }}\n\n\
         [[servers]]\nname = \"example\"\nprefix = \"ex\"\nurl = {:?}\n\n",
        sdk.url, example.url
    );
    let gateway = Gateway::start_with(&config(dir.path(), "", &servers), &[], &[]);

    let client = McpClient::connect(
        McpServerConfig::url(gateway.url.clone())
            .header("Authorization", format!("Bearer {ALICE}")),
    )
    .await
    .unwrap();
    let mut progress = client.subscribe_progress();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    let call = |tool: &'static str, arguments: serde_json::Value| {
        let registry = registry.clone();
        async move {
            tokio::time::timeout(LIMIT, registry.execute(tool, args(arguments)))
                .await
                .expect("the call answered")
        }
    };

    // The Python server keeps a session and answers on SSE streams, behind a bearer token.
    let echoed = call("py_echo", json!({"text": "through the gateway"})).await;
    assert_eq!(echoed, "through the gateway", "{}", gateway.log());
    let failed = call("py_fail", json!({"message": "it broke"})).await;
    assert!(failed.contains("it broke"), "{failed}");
    // The example answers JSON, without a session.
    assert_eq!(call("ex_add", json!({"a": 2, "b": 3})).await, "5");

    // The upstream's progress reaches the gateway's client, in order, before the answer.
    assert_eq!(call("py_progress", json!({"steps": 3})).await, "done");
    let mut seen = Vec::new();
    while let Ok(Ok(report)) = tokio::time::timeout(Duration::from_secs(5), progress.recv()).await
    {
        seen.push((report.tool, report.progress, report.total, report.message));
        if seen.len() == 3 {
            break;
        }
    }
    let step = |n: u32| {
        (
            "py_progress".to_owned(),
            f64::from(n) / 3.0,
            Some(1.0),
            Some(format!("step {n}")),
        )
    };
    assert_eq!(seen, [step(1), step(2), step(3)], "{}", gateway.log());
    client.close().await;
}
