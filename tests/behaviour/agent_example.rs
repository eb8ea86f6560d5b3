//! The main example, run as a program: offline by default, tools from a configuration file, and
//! `/enable` / `/disable` remembered across runs.

use std::{
    io::Write as _,
    path::Path,
    process::{Command, Stdio},
};

/// Runs the agent example with `args`, feeding `input` on stdin; returns its stdout.
fn run(args: &[&str], input: &str) -> String {
    run_with_env(args, input, &[])
}

/// Like [`run`], with environment variables set for the example.
fn run_with_env(args: &[&str], input: &str, env: &[(&str, &str)]) -> String {
    let output = spawn(args, input, env);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Runs the agent example to its end, offline unless `env` configures a provider.
pub(crate) fn spawn(args: &[&str], input: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent_example"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Offline on purpose, whatever the machine running the tests has configured.
    for variable in [
        "TOOL_CORE_PROVIDER",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OLLAMA_HOST",
        "TOOL_CORE_AGENT_ROOT",
    ] {
        command.env_remove(variable);
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().expect("the agent example starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("the example reads its input");
    child.wait_with_output().expect("the example finishes")
}

fn tool_line<'a>(listing: &'a str, name: &str) -> &'a str {
    listing
        .lines()
        .find(|line| line.split_whitespace().any(|word| word == name))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{listing}"))
}

#[test]
fn the_example_runs_offline_on_the_test_model() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = run(&["--root", &root, "What can you do?"], "");
    assert!(stdout.contains("offline test model"), "{stdout}");
    assert!(stdout.contains("-> read_file("), "{stdout}");
    assert!(
        stdout.contains("<- save_session_context: Session context saved"),
        "{stdout}"
    );
    assert!(dir.path().join("session.json").exists());
}

#[test]
fn the_example_remembers_enable_and_disable_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = run(
        &["--root", &root, "--stdin"],
        "/disable write_file\n/tools\n/quit\n",
    );
    assert!(stdout.contains("write_file is off"), "{stdout}");

    // A new process: the switch comes back from the preferences file.
    let stdout = run(&["--root", &root, "--stdin"], "/tools\n");
    assert!(
        tool_line(&stdout, "write_file").contains("[off]"),
        "{stdout}"
    );
    assert!(
        tool_line(&stdout, "read_file").contains("[on ]"),
        "{stdout}"
    );

    let stdout = run(&["--root", &root, "--stdin"], "/enable write_file\n");
    assert!(stdout.contains("write_file is on"), "{stdout}");
    let stdout = run(&["--root", &root, "--stdin"], "/tools\n");
    assert!(
        tool_line(&stdout, "write_file").contains("[on ]"),
        "{stdout}"
    );
}

#[test]
fn the_example_loads_tools_from_a_configuration_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tools.toml");
    let config = config.display().to_string();
    let stdout = run(
        &["--root", &root, "--tools-config", &config, "--stdin"],
        "/tools\n",
    );
    assert!(stdout.contains("tool(s) loaded from"), "{stdout}");
    assert!(
        tool_line(&stdout, "get_weather").contains("[on ]"),
        "{stdout}"
    );
    assert!(
        tool_line(&stdout, "company_faq").contains("[off]"),
        "default_enabled = false in the file: {stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_uses_the_provider_configured_in_the_environment() {
    let server = crate::loopback::Server::start(vec![crate::loopback::Reply::sse(include_bytes!(
        "../transcripts/openai/text.sse"
    ))])
    .await;
    let base_url = format!("{}/v1", server.url());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = tokio::task::spawn_blocking(move || {
        run_with_env(
            &["--root", &root, "What is the capital of France?"],
            "",
            &[
                ("OPENAI_API_KEY", "sk-test"),
                ("OPENAI_BASE_URL", &base_url),
                ("OPENAI_MODEL", "gpt-4o-mini"),
            ],
        )
    })
    .await
    .unwrap();
    assert!(!stdout.contains("offline test model"), "{stdout}");
    assert!(stdout.contains("(openai)"), "{stdout}");
    assert!(
        stdout.contains("The capital of France is Paris."),
        "{stdout}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    let body = requests[0].json();
    assert_eq!(body["model"], "gpt-4o-mini");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "write_file", "save_session_context"]);
}
