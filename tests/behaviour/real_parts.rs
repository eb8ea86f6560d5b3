//! What a test does when a real part it needs (the MCP Python SDK, an npm package, PostgreSQL,
//! Chromium, llama-server) cannot be had: it says so loudly and is skipped, unless
//! `TOOL_CORE_REQUIRE_REAL_PARTS` is set (as `.ci/run` sets it), and then it fails, so that a
//! passing run shows that every such test ran.

use std::io::Write;

/// The variable that turns a missing part from a skip into a failure.
pub(crate) const REQUIRE: &str = "TOOL_CORE_REQUIRE_REAL_PARTS";

/// Whether a missing part fails the test (`TOOL_CORE_REQUIRE_REAL_PARTS` set, and not to `0`).
pub(crate) fn required() -> bool {
    std::env::var_os(REQUIRE).is_some_and(|value| !value.is_empty() && value != "0")
}

/// Says `message` (why a test is skipped) loudly, or, when parts are [`required`], fails the
/// test with it.
pub(crate) fn skip(message: &str) {
    assert!(
        !required(),
        "{message}\n({REQUIRE} is set: a missing part fails the test)"
    );
    // Straight to stderr: the harness hides `eprintln!` of passing tests.
    let _ = writeln!(std::io::stderr(), "{message}");
}
