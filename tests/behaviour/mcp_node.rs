//! The `mcp_server` example driven by the official MCP TypeScript SDK client
//! (`@modelcontextprotocol/sdk` from npm; `tests/mcp_node/client.mjs` prints what it saw, in
//! the shape the Python test's report has, so both are checked by the same code).
//!
//! The SDK comes from `TOOL_CORE_MCP_NODE_SDK` (its package folder; `.ci/run` sets it). Without
//! it the test installs the pinned version itself under the target folder with npm (and
//! installs Node with apt-get when it is missing and we are root). It is skipped, with a message
//! saying so, only when that is impossible.
//!
//! SDK 1.32.2 speaks 2025-11-25 and older, through `initialize`; it has no `server/discover`, so
//! a session asking for 2026-07-28 is answered with 2025-11-25 (checked below).

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
    time::Duration,
};

use serde_json::Value;

use crate::mcp_python::{ExampleServer, SERVER, VERSIONS, check_report, check_toggle, json_report};
use crate::npm_support::NpmPackage;
use crate::proxy_support::RoundRobin;

/// The SDK version `.ci/run` installs too.
const VERSION: &str = "1.32.2";
const PACKAGE: &str = "@modelcontextprotocol/sdk@1.32.2";
const PACKAGE_DIR: &str = "node_modules/@modelcontextprotocol/sdk";

/// The versions SDK 1.32.2 can be asked for.
const NODE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

#[test]
fn typescript_sdk_drives_the_example_over_stdio_at_every_version_it_has() {
    let Some(sdk) = sdk() else { return };
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().to_str().unwrap();
    for version in NODE_VERSIONS {
        let report = run_client(
            sdk,
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
fn typescript_sdk_asking_for_2026_07_28_gets_2025_11_25() {
    let Some(sdk) = sdk() else { return };
    assert_eq!(VERSIONS[0], "2026-07-28");
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().to_str().unwrap();
    let report = run_client(
        sdk,
        &[
            "--version",
            "2026-07-28",
            "stdio",
            SERVER,
            "--root",
            root_arg,
        ],
    );
    check_report(&report, "2025-11-25");
}

#[test]
fn typescript_sdk_drives_the_example_over_http() {
    let Some(sdk) = sdk() else { return };
    let root = tempfile::tempdir().unwrap();
    let server = ExampleServer::start(root.path(), false);
    let report = run_client(sdk, &["--toggle", "http", &server.url]);
    check_report(&report, "2025-11-25");
    check_toggle(&report);
}

#[test]
fn typescript_sdk_is_served_by_two_stateless_processes_in_turn() {
    let Some(sdk) = sdk() else { return };
    let root = tempfile::tempdir().unwrap();
    let first = ExampleServer::start(root.path(), true);
    let second = ExampleServer::start(root.path(), true);
    for version in NODE_VERSIONS {
        let proxy = RoundRobin::start([first.url.clone(), second.url.clone()]);
        let report = run_client(sdk, &["--version", version, "http", &proxy.url]);
        check_report(&report, version);
        proxy.check_both_answered();
    }
}

/// Runs `client.mjs` with `args` and parses its JSON report.
fn run_client(sdk: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_node/client.mjs");
    let mut command = Command::new("node");
    command.arg(&script).arg(sdk).args(args);
    json_report(command, Duration::from_secs(120))
}

/// The SDK's package folder, or `None` after saying the test is skipped. server-everything,
/// installed in the same place, brings an SDK of its own choosing: only the pinned version is
/// taken.
pub(crate) fn sdk() -> Option<&'static Path> {
    static SDK: OnceLock<Option<PathBuf>> = OnceLock::new();
    SDK.get_or_init(|| {
        NpmPackage {
            tests: "the MCP TypeScript SDK tests",
            spec: PACKAGE,
            env: "TOOL_CORE_MCP_NODE_SDK",
            path: PACKAGE_DIR,
            ready: |package| installed_version(package).as_deref() == Some(VERSION),
        }
        .find()
    })
    .as_deref()
}

/// The `version` in the package folder's `package.json`.
pub(crate) fn installed_version(package: &Path) -> Option<String> {
    let manifest = std::fs::read_to_string(package.join("package.json")).ok()?;
    let manifest: Value = serde_json::from_str(&manifest).ok()?;
    manifest["version"].as_str().map(str::to_owned)
}
