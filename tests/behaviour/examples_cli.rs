//! The examples' command lines: `--help` lists every flag and the environment, an unknown or
//! misspelt flag is a usage error (exit code 2) with a suggestion, and a provider configuration
//! that cannot be used stops the agent example instead of falling back to the offline model.

use std::process::{Command, Output, Stdio};

use crate::agent_example::spawn;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn mcp_server(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp_server_example"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the mcp_server example runs")
}

#[test]
fn agent_help_lists_every_flag_and_the_provider_variables() {
    let output = spawn(&["--help"], "", &[]);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout);
    for expected in [
        "--root <DIR>",
        "--tools-config <FILE>",
        "--prefs <FILE>",
        "--session <FILE>",
        "--state <DIR>",
        "[env: TOOL_CORE_AGENT_STATE",
        "--stdin",
        "[PROMPT]...",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OLLAMA_HOST",
        "TOOL_CORE_PROVIDER",
        "[env: TOOL_CORE_AGENT_ROOT",
    ] {
        assert!(help.contains(expected), "no {expected:?} in:\n{help}");
    }
}

#[test]
fn a_misspelt_agent_flag_is_a_usage_error_with_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let output = spawn(
        &["--root", &root, "--tools-confg", "x.toml", "hello"],
        "",
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("unexpected argument '--tools-confg'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("a similar argument exists: '--tools-config'"),
        "{stderr}"
    );
    // Nothing ran: the prompt was not sent and no session was written.
    assert_eq!(text(&output.stdout), "");
    assert!(!dir.path().join("session.json").exists());
}

#[test]
fn an_unknown_agent_flag_is_not_taken_as_part_of_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let output = spawn(&["--root", &root, "--mpc", "x", "hello"], "", &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("unexpected argument '--mpc'"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(text(&output.stdout), "");
}

#[test]
fn an_unknown_provider_name_stops_the_agent_instead_of_running_offline() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let output = spawn(
        &["--root", &root, "hello"],
        "",
        &[("TOOL_CORE_PROVIDER", "opneai")],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr).trim_end(),
        "the model provider configured in the environment cannot be used: unsupported \
         provider `opneai`; expected one of: openai, ollama, gemini, anthropic"
    );
    assert!(!text(&output.stdout).contains("offline test model"));
}

#[test]
fn mcp_server_help_and_usage_errors() {
    let help = mcp_server(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let help = text(&help.stdout);
    for expected in ["--http [<ADDR>]", "--root <DIR>", "RUST_LOG"] {
        assert!(help.contains(expected), "no {expected:?} in:\n{help}");
    }
    let misspelt = mcp_server(&["--htp"]);
    assert_eq!(misspelt.status.code(), Some(2));
    let stderr = text(&misspelt.stderr);
    assert!(
        stderr.contains("a similar argument exists: '--http'"),
        "{stderr}"
    );
}
