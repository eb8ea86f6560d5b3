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
        "TOOL_CORE_OPENAI_API",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OLLAMA_HOST",
        "TOOL_CORE_AGENT_ROOT",
        "TOOL_CORE_STORE",
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

/// Runs the example on one question against a loopback server that answers with `transcript`,
/// with `env` and `OPENAI_BASE_URL` naming the server; checks that the answer came from the
/// server, and returns its stdout and the one request the server received.
async fn ask_the_server(
    transcript: &'static [u8],
    env: &'static [(&'static str, &'static str)],
) -> (String, crate::loopback::Recorded) {
    let server =
        crate::loopback::Server::start(vec![crate::loopback::Reply::sse(transcript)]).await;
    let base_url = format!("{}/v1", server.url());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = tokio::task::spawn_blocking(move || {
        let mut vars = vec![("OPENAI_BASE_URL", base_url.as_str())];
        vars.extend_from_slice(env);
        run_with_env(
            &["--root", &root, "What is the capital of France?"],
            "",
            &vars,
        )
    })
    .await
    .unwrap();
    assert!(!stdout.contains("offline test model"), "{stdout}");
    assert!(
        stdout.contains("The capital of France is Paris."),
        "{stdout}"
    );
    let mut requests = server.requests();
    assert_eq!(requests.len(), 1);
    (stdout, requests.remove(0))
}

/// The names of the tools a request body offers, found under `key` in each.
fn offered_tools(body: &serde_json::Value, key: &str) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            tool.pointer(key)
                .and_then(|name| name.as_str())
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_uses_the_provider_configured_in_the_environment() {
    let (stdout, request) = ask_the_server(
        include_bytes!("../transcripts/openai/text.sse"),
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_MODEL", "gpt-4o-mini"),
        ],
    )
    .await;
    assert!(stdout.contains("(openai)"), "{stdout}");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    let body = request.json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(
        offered_tools(&body, "/function/name"),
        ["read_file", "write_file", "save_session_context"]
    );
}

/// `TOOL_CORE_OPENAI_API=responses` makes the example speak the Responses API to a compatible
/// server (whose base URL alone would mean Chat Completions): flat tools, `store: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_speaks_the_responses_api_when_the_environment_asks() {
    let (_, request) = ask_the_server(
        include_bytes!("../transcripts/responses/text.sse"),
        &[
            ("OPENAI_MODEL", "gpt-4o-mini"),
            ("TOOL_CORE_OPENAI_API", "responses"),
        ],
    )
    .await;
    assert_eq!(request.uri, "/v1/responses");
    let body = request.json();
    assert_eq!(body["store"], false);
    assert_eq!(
        offered_tools(&body, "/name"),
        ["read_file", "write_file", "save_session_context"]
    );
}

/// The files the example's tools left in `dir`, beside the ones every run writes.
fn written_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            !["notes.txt", "session.json", "tool-preferences.json"].contains(&name.as_str())
        })
        .collect();
    names.sort();
    names
}

#[test]
fn the_example_asks_before_writing_and_a_denied_write_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = run(&["--root", &root, "write something"], "n\n");
    assert!(
        stdout
            .contains(r#"Allow write_file {"content":"example","path":"example"}? [y/N] (denied)"#),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "!! write_file: Error: the user denied this call of write_file: the user said no"
        ),
        "{stdout}"
    );
    assert!(written_files(dir.path()).is_empty());
    // No answer at all (end of input) is a no too.
    let stdout = run(&["--root", &root, "write something"], "");
    assert!(stdout.contains("(denied)"), "{stdout}");
    assert!(written_files(dir.path()).is_empty());
}

#[test]
fn the_example_writes_once_the_user_approves() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = run(&["--root", &root, "write something"], "y\n");
    assert!(
        stdout.contains("<- write_file: Successfully wrote 7 bytes to example"),
        "{stdout}"
    );
    assert_eq!(written_files(dir.path()), ["example"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("example")).unwrap(),
        "example"
    );
}

#[test]
fn with_yes_the_example_approves_without_asking_and_the_repl_reads_answers_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = run(&["--root", &root, "--yes", "write something"], "");
    assert!(!stdout.contains("Allow write_file"), "{stdout}");
    assert!(
        stdout.contains("(approved by --yes) write_file"),
        "{stdout}"
    );
    assert_eq!(written_files(dir.path()), ["example"]);

    // In the REPL the next input line answers; the line after it is a command again.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let stdout = run(
        &["--root", &root, "--stdin"],
        "write it\nno\n/tools\n/quit\n",
    );
    assert!(stdout.contains("(denied)"), "{stdout}");
    assert!(stdout.contains("[on ] write_file"), "{stdout}");
    assert!(written_files(dir.path()).is_empty());
}

#[test]
fn the_example_uses_an_mcp_servers_tools_like_its_own() {
    let Some(everything) = crate::mcp_client_everything::everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let server = format!("node {}", everything.display());
    // Two of the reference server's tools reach outside this machine or take ten seconds.
    let stdout = run(
        &["--root", &root, "--stdin", "--yes", "--mcp", &server],
        "/disable gzip-file-as-resource\n/disable trigger-long-running-operation\n\
         /disable get-env\n/tools\nuse every tool\n/quit\n",
    );
    assert!(stdout.contains("MCP server node "), "{stdout}");
    let listed = |name: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with('[') && line.split_whitespace().any(|word| word == name))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{stdout}"))
            .to_owned()
    };
    assert!(listed("get-sum").starts_with("[on ]"));
    assert!(listed("gzip-file-as-resource").starts_with("[off]"));
    assert!(stdout.contains("-> get-sum({\"a\":1,\"b\":1})"), "{stdout}");
    assert!(
        stdout.contains("<- get-sum: The sum of 1 and 1 is 2."),
        "{stdout}"
    );
    assert!(stdout.contains("<- echo: Echo: example"), "{stdout}");
    assert!(!stdout.contains("-> gzip-file-as-resource"), "{stdout}");
}

#[test]
fn an_mcp_server_that_cannot_start_stops_the_example_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let output = spawn(
        &[
            "--root",
            &root,
            "--mcp",
            "/nonexistent/mcp-server --flag",
            "hi",
        ],
        "",
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot use the MCP server"), "{stderr}");
    let output = spawn(&["--root", &root, "--mcp", "'unclosed", "hi"], "", &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with("--mcp \"'unclosed\": "),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_example_remembers_switches_in_an_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let database = dir.path().join("data").join("prefs.db");
    let url = format!("sqlite://{}", database.display());
    run(
        &["--root", &root, "--stdin", "--store", &url],
        "/disable write_file\n/quit\n",
    );
    assert!(database.is_file());
    assert!(!dir.path().join("tool-preferences.json").exists());
    let stdout = run(
        &["--root", &root, "--stdin", "--store", &url],
        "/tools\n/quit\n",
    );
    assert!(
        tool_line(&stdout, "write_file").contains("[off] write_file"),
        "{stdout}"
    );
    assert!(
        tool_line(&stdout, "read_file").contains("[on ] read_file"),
        "{stdout}"
    );

    let output = spawn(
        &["--root", &root, "--store", "mysql://nowhere/db", "hi"],
        "",
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("cannot open the preference store: "),
        "{stderr}"
    );
}
